#!/usr/bin/env python3
# tests/tcp_relay.py TARGET (reset|close) N...: a TCP relay for the tests.
# Listens on a free loopback port (printed first, on its own line) and
# forwards each connection to TARGET (HOST:PORT), but for the connections
# numbered N... (counting from 1): "reset" drops them with an RST (SO_LINGER
# 0), as a full handshake pool gives one up; "close" closes them at once.
import socket
import struct
import sys
import threading

host, port = sys.argv[1].rsplit(":", 1)
how = sys.argv[2]
cut = {int(n) for n in sys.argv[3:]}
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(16)
print(lst.getsockname()[1], flush=True)


def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


n = 0
while True:
    c, _ = lst.accept()
    n += 1
    if n in cut:
        if how == "reset":
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        continue
    u = socket.create_connection((host, int(port)))
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
