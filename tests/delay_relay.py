#!/usr/bin/env python3
# tests/delay_relay.py TARGET UP_MS DOWN_MS: a TCP relay for the clock tests
# (test_clocks.sh): an asymmetric link, since netem is not available.
# Listens on a free loopback port (printed first, on its own line) and
# forwards each connection to TARGET (HOST:PORT), holding every chunk that
# goes towards TARGET for UP_MS ms and every chunk coming back for DOWN_MS
# ms (from when it was read), in order.
import collections
import socket
import sys
import threading
import time

host, port = sys.argv[1].rsplit(":", 1)
delay = {"up": float(sys.argv[2]) / 1000, "down": float(sys.argv[3]) / 1000}
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(16)
print(lst.getsockname()[1], flush=True)


def shut(*socks):
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def pipe(a, b, hold):
    q = collections.deque()
    cv = threading.Condition()

    def writer():
        while True:
            with cv:
                while not q:
                    cv.wait()
                due, d = q.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not d:
                break
            try:
                b.sendall(d)
            except OSError:
                break
        shut(a, b)

    threading.Thread(target=writer, daemon=True).start()
    while True:
        try:
            d = a.recv(65536)
        except OSError:
            d = b""
        with cv:
            q.append((time.monotonic() + hold, d))
            cv.notify()
        if not d:
            break


while True:
    c, _ = lst.accept()
    u = socket.create_connection((host, int(port)))
    for s in (c, u):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=pipe, args=(c, u, delay["up"]), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c, delay["down"]), daemon=True).start()
