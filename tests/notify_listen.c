/*
 * notify_listen - the service manager's end of sd_notify() for tests:
 *
 *   notify_listen SOCKET OUT
 *
 * binds a datagram socket at SOCKET (mode 0666, so a service started as
 * another user can send), then appends each datagram it receives to OUT as
 * its lines ("READY=1", "STATUS=...", "WATCHDOG=1", "STOPPING=1"), flushed
 * at once, until SIGTERM. tests/test_service.sh hands SOCKET to the
 * collector as $NOTIFY_SOCKET, as systemd does for Type=notify.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static volatile sig_atomic_t done;

static void on_term(int sig)
{
	done = 1;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sigaction act = { .sa_handler = on_term };
	char buf[4096];
	FILE *out;
	ssize_t n;
	int fd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: notify_listen SOCKET OUT\n");
		return 2;
	}
	sigaction(SIGTERM, &act, NULL);
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	out = fopen(argv[2], "a");
	if (fd < 0 || !out || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(argv[1], 0666) < 0) {
		fprintf(stderr, "notify_listen: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while (!done) {
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		buf[n] = 0;
		fprintf(out, "%s%s", buf, n && buf[n - 1] == '\n' ? "" : "\n");
		fflush(out);
	}
	unlink(argv[1]);
	return 0;
}
