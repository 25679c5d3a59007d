/*
 * fake_collector.c - a hostile collector for the agent's tests: it listens
 * on plain TCP (traceagent --insecure-plain), answers the first HELLO with
 * a WELCOME (symbols and printk formats held: none are asked for), and
 * then sends N MSG_FILTER messages, each text different and about LEN
 * bytes long ("prev_pid != I && prev_pid != 0 && ..."), for the events
 * SYSTEM:EVENT... in turn, never reading a byte of what the agent sends
 * back.
 *
 *   fake_collector PORTFILE N LEN SYSTEM:EVENT...
 *
 * Writes "PORT\n" to PORTFILE once listening on 127.0.0.1 (an ephemeral
 * port). Sending stops when all N went out or when one send makes no
 * progress for 3 s (the agent stopped reading: back-pressure); it then
 * prints "fake_collector: sent S of N filters" and holds the connection,
 * reading nothing, until SIGTERM.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "proto/frame.h"
#include "proto/msg.h"

static int read_all(int fd, void *p, size_t len)
{
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			return -1;
		p = (char *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send @b whole; -1 when the peer closed or took nothing for SO_SNDTIMEO. */
static int send_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_msg(int fd, const struct proto_msg *m)
{
	struct proto_buf b;
	int ret;

	proto_buf_init(&b);
	ret = proto_msg_encode(m, &b);
	if (ret == 0)
		ret = send_all(fd, b.data, b.len);
	proto_buf_free(&b);
	return ret;
}

/* Read one frame and drop it; -1 at EOF or on a bad frame. */
static int skip_frame(int fd, struct frame_hdr *h)
{
	uint8_t hdr[FRAME_HDR_SIZE], *payload;
	int ret;

	if (read_all(fd, hdr, sizeof(hdr)) < 0 || frame_hdr_parse(hdr, sizeof(hdr), h) < 0)
		return -1;
	payload = malloc(h->len ? h->len : 1);
	ret = payload ? read_all(fd, payload, h->len) : -1;
	free(payload);
	return ret;
}

static int listen_on(const char *portfile)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	FILE *f;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
		return -1;
	f = fopen(portfile, "w");
	if (!f)
		return -1;
	fprintf(f, "%u\n", ntohs(sa.sin_port));
	fclose(f);
	return fd;
}

int main(int argc, char **argv)
{
	struct proto_msg m = { .type = MSG_WELCOME };
	struct timeval tv = { 3, 0 };
	struct frame_hdr h;
	unsigned long n, sent = 0;
	char text[PROTO_MAX_FILTER];
	size_t len, at;
	int lfd, fd;

	if (argc < 5) {
		fprintf(stderr, "usage: fake_collector PORTFILE N LEN SYSTEM:EVENT...\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 10);
	len = strtoul(argv[3], NULL, 10);
	if (len >= sizeof(text) - 32)
		len = sizeof(text) - 32;
	lfd = listen_on(argv[1]);
	fd = lfd < 0 ? -1 : accept(lfd, NULL, NULL);
	if (fd < 0 || skip_frame(fd, &h) < 0) {	/* HELLO */
		fprintf(stderr, "fake_collector: no agent: %s\n", strerror(errno));
		return 1;
	}
	m.welcome = (struct proto_welcome){ .version = PROTO_VERSION, .host_id = 1,
					    .kallsyms = true, .printk_formats = true };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (send_msg(fd, &m) < 0)
		return 1;
	m = (struct proto_msg){ .type = MSG_FILTER };
	m.filter.text = text;
	for (; sent < n; sent++) {
		char ev[512], *colon;

		snprintf(ev, sizeof(ev), "%s", argv[4 + sent % (unsigned long)(argc - 4)]);
		colon = strchr(ev, ':');
		if (!colon)
			return 2;
		*colon = '\0';
		m.filter.system = ev;
		m.filter.name = colon + 1;
		at = (size_t)snprintf(text, sizeof(text), "prev_pid != %lu", sent);
		while (at < len)
			at += (size_t)snprintf(text + at, sizeof(text) - at, " && prev_pid != 0");
		if (send_msg(fd, &m) < 0)
			break;
	}
	printf("fake_collector: sent %lu of %lu filters\n", sent, n);
	fflush(stdout);
	/* hold the connection, reading nothing, until SIGTERM */
	for (;;)
		pause();
	return 0;
}
