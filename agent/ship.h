/*
 * ship.h - the agent's connection to the collector: TCP, mutual TLS, the
 * HELLO/WELCOME handshake, control messages and page frames out, and the
 * BYE/DONE close. One connection carries every CPU's pages (stream =
 * CPU), or, with traceagent --connections per-cpu, one of these per CPU
 * carries that CPU's pages next to the control connection.
 */
#ifndef AGENT_SHIP_H
#define AGENT_SHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"
#include "proto/tls.h"

struct ship;			/* opaque: one connection */

#define SHIP_HOST_MAX	256
#define SHIP_PORT_MAX	32

/*
 * ship_parse_hostport - split "HOST:PORT", "[IPV6]:PORT" or "IPV4:PORT"
 * into @host and @port (a number 1..65535).
 *
 * Return: 0; TC_ERR_SYNTAX for a missing or empty part, a bad port, or an
 * unbracketed IPv6 address; TC_ERR_TOO_LONG when a part does not fit.
 * @host and @port are written only on success.
 */
int ship_parse_hostport(const char *s, char host[SHIP_HOST_MAX],
			char port[SHIP_PORT_MAX]);

/*
 * ship_connect - connect to @host:@port (every address getaddrinfo() gives,
 * IPv4 or IPv6, 10 s each) and complete a TLS handshake as a client with
 * the context made from @files. The server's certificate must match @host:
 * its IP address for a literal address, else its DNS name (also sent as SNI).
 * @files NULL: plain TCP, without TLS: no authentication, no encryption
 * (--insecure-plain, for tests and benchmarks on one host); every address
 * @host resolves to must then be a loopback one (127.0.0.0/8, ::1).
 *
 * Return: 0 and *@out; -errno from the socket calls (-ECONNREFUSED, ...);
 * TC_ERR_TIMEOUT; TC_ERR_TLS with @err telling OpenSSL's reasons; a
 * getaddrinfo failure is -EHOSTUNREACH with @err saying why; plain: -EINVAL
 * for a non-loopback @host. @err always gets a one-line reason on failure.
 * *@out only on success.
 */
int ship_connect(const char *host, const char *port,
		 const struct tls_files *files, struct ship **out,
		 char *err, size_t errlen);

/*
 * ship_can_splice - whether bytes written to the socket directly reach the
 * collector as payload: kernel TLS took over encryption after the
 * handshake (ship_connect() sets SSL_OP_ENABLE_KTLS and checks
 * BIO_get_ktls_send(); without kernel TLS it logs that once per process),
 * or the connection is plain.
 */
bool ship_can_splice(const struct ship *s);

/*
 * ship_page_splice - ship_page() of a page whose @len payload bytes wait
 * in the pipe @pipe_fd: the frame header is written, then the payload is
 * spliced from the pipe into the socket, so the kernel (kTLS, or TCP)
 * takes the page itself and nothing is copied or encrypted in user space.
 * Only when ship_can_splice(). After a failure the pipe may hold what was
 * not sent.
 *
 * Return: 0; -EINVAL when splicing is not possible or @len is too big;
 * TC_ERR_TLS (also for a write timeout); TC_ERR_PEER_CLOSED.
 */
int ship_page_splice(struct ship *s, uint16_t cpu, uint64_t seq,
		     uint8_t flags, int pipe_fd, size_t len);

/*
 * ship_last_error - a one-line reason for the last failure of ship_msg(),
 * ship_page() or ship_check() on @s ("" when none). Owned by @s.
 */
const char *ship_last_error(struct ship *s);

/*
 * ship_set_io_timeout - give up a blocking write (or read) that makes no
 * progress for @ms milliseconds (default 30 s): the connection then fails
 * with TC_ERR_TLS, as after a silent network cut.
 */
void ship_set_io_timeout(struct ship *s, int ms);

/* ship_close - shut TLS down, close the socket, free @s. Safe with NULL. */
void ship_close(struct ship *s);

/*
 * ship_hello - send @hello and wait up to @timeout_ms for the answer.
 *
 * Return: 0 and *@welcome; TC_ERR_PROTO_STATE when the collector answered
 * MSG_ERROR (its text goes to @err) or anything but WELCOME;
 * TC_ERR_PEER_CLOSED; TC_ERR_TIMEOUT; TC_ERR_TLS; frame/msg decode errors.
 * @err is filled on every failure.
 */
int ship_hello(struct ship *s, const struct proto_hello *hello,
	       int timeout_ms, struct proto_welcome *welcome,
	       char *err, size_t errlen);

/*
 * ship_welcome_probes - after ship_hello(): the WELCOME's clock_probes
 * (when @hello said clock_probe and a clock fn is set), answered one by
 * one before anything else is sent. Separate from ship_hello() so that a
 * connection that fails here was still WELCOMEd (the caller retries it
 * as any lost connection). Return: 0; ship_hello()'s errors.
 */
int ship_welcome_probes(struct ship *s, const struct proto_hello *hello,
			const struct proto_welcome *welcome, int timeout_ms, char *err,
			size_t errlen);

/*
 * ship_msg - send one control message (written out at once when the
 * socket has room, see ship_flush()).
 *
 * Return: 0; TC_ERR_TLS / TC_ERR_PEER_CLOSED when the write fails; the
 * encoder's errors (-ENOMEM, TC_ERR_TOO_LONG, TC_ERR_MSG_UNKNOWN).
 */
int ship_msg(struct ship *s, const struct proto_msg *m);

/*
 * ship_would_block - whether sending a frame of about @len bytes now could
 * wait for the collector: it does not fit in the write buffer and the
 * socket does not poll writable. The agent then keeps the page in its
 * spool and reads on, so a slow collector does not stall the ring buffers.
 */
bool ship_would_block(struct ship *s, size_t len);

/*
 * ship_flush - write out what ship_page() left buffered. Without kernel
 * TLS the records of page frames are gathered in a buffer of 256 KiB and
 * written when it fills, by this call, by ship_hello() and ship_bye()
 * (before waiting for the answer), and by ship_msg() and ship_check()
 * when the socket has room for all of it at once (else they leave it
 * for a later call rather than wait for the collector).
 *
 * Return: 0; TC_ERR_TLS (also for a write timeout); TC_ERR_PEER_CLOSED.
 */
int ship_flush(struct ship *s);

/*
 * ship_page - send one FRAME_PAGE frame: stream @cpu, sequence @seq, flags
 * @flags (FRAME_F_*), and as payload @head_len bytes of @head (may be 0)
 * followed by @len bytes of @page. The frame header and @head go out as
 * one small TLS write, @page as a second one that OpenSSL encrypts
 * straight from where it lies (a mapped ring-buffer page): the page is
 * never copied in user space. The records may wait in the write buffer
 * (see ship_flush()).
 *
 * Return: 0; -EINVAL when the payload exceeds FRAME_MAX_PAYLOAD or
 * @head_len exceeds 64; TC_ERR_TLS; TC_ERR_PEER_CLOSED.
 */
int ship_page(struct ship *s, uint16_t cpu, uint64_t seq, uint8_t flags,
	      const void *head, size_t head_len, const void *page, size_t len);

/*
 * ship_frames - send @len bytes of whole frames laid out by the caller
 * (headers packed with frame_hdr_pack()) with one TLS write: one record
 * per 16 KiB instead of two per page. The agent sends its spooled page
 * frames this way. The records may wait in the write buffer (see
 * ship_flush()).
 *
 * Return: 0; TC_ERR_TLS (also for a write timeout); TC_ERR_PEER_CLOSED.
 */
int ship_frames(struct ship *s, const void *frames, size_t len);

/*
 * ship_ack_fn - receives each MSG_ACK the collector sends: every page of
 * @stream up to @seq is stored.
 */
typedef void (*ship_ack_fn)(void *arg, uint32_t stream, uint64_t seq);

/*
 * ship_set_ack_fn - have every MSG_ACK read by ship_check(), ship_bye()
 * (while waiting for DONE) go to @fn. Without one, an ACK is unexpected.
 */
void ship_set_ack_fn(struct ship *s, ship_ack_fn fn, void *arg);

/*
 * ship_filter_fn - receives each MSG_FILTER (filter push-down) the
 * collector sends; @f is valid during the call only. It must not call
 * ship_*() on the connection (queue the answer and send it afterwards).
 * Return: true when it takes no more for now: ship_check() then stops
 * reading, as after ship_hold_reading(@s, true).
 */
typedef bool (*ship_filter_fn)(void *arg, const struct proto_filter *f);

/*
 * ship_hold_reading - with @hold, ship_check() reads nothing from the
 * collector (it still sends what is buffered): the collector's messages
 * wait in the socket and TCP pushes back on it. ship_bye() reads anyway.
 */
void ship_hold_reading(struct ship *s, bool hold);

/*
 * ship_set_filter_fn - have every MSG_FILTER read by ship_check() and
 * ship_bye() go to @fn. Without one, a MSG_FILTER is unexpected (an agent
 * that does not announce "pushdown" in HELLO never gets one).
 */
void ship_set_filter_fn(struct ship *s, ship_filter_fn fn, void *arg);

/*
 * ship_freeze_fn - a MSG_FREEZE the collector sent (the flight recorder:
 * freeze and ship the buffer). @f is valid only during the call.
 */
typedef void (*ship_freeze_fn)(void *arg, const struct proto_freeze *f);

/*
 * ship_set_freeze_fn - have every MSG_FREEZE read by ship_check() and
 * ship_bye() go to @fn. Without one, a MSG_FREEZE is unexpected (an agent
 * whose HELLO lacks "recorder" never gets one).
 */
void ship_set_freeze_fn(struct ship *s, ship_freeze_fn fn, void *arg);

/*
 * ship_clock_fn - the agent's trace clock now, in ns (the domain of its
 * clock samples), for the answers to MSG_CLOCK_PROBE.
 */
typedef uint64_t (*ship_clock_fn)(void *arg);

/*
 * ship_set_clock_fn - answer every MSG_CLOCK_PROBE read by ship_check(),
 * ship_welcome_probes() (the WELCOME's clock_probes)
 * and ship_bye() with a MSG_CLOCK_ECHO: @fn's reading when the probe was
 * read and when the answer is written. Without one, a probe is
 * unexpected (an agent whose HELLO lacks "clock_probe" gets none).
 */
void ship_set_clock_fn(struct ship *s, ship_clock_fn fn, void *arg);

/*
 * ship_wake_fd - the socket to poll for what the collector sends (its clock
 * probes want an answer at once); -1 while reading is held.
 */
int ship_wake_fd(const struct ship *s);

/*
 * ship_check - read, without waiting, what the collector sent during
 * streaming: ACKs go to the ack function, FILTERs to the filter function;
 * anything else means it gives up.
 *
 * Return: 0 when nothing but ACKs arrived; TC_ERR_PROTO_STATE for
 * MSG_ERROR or any other message (@err tells which and the collector's
 * text); TC_ERR_PEER_CLOSED; TC_ERR_TLS.
 */
int ship_check(struct ship *s, char *err, size_t errlen);

/*
 * ship_bye - send @bye and wait up to @timeout_ms for MSG_DONE (passing
 * ACKs that arrive first to the ack function).
 *
 * Return: 0 and *@done; the errors of ship_hello() (MSG_ERROR is
 * TC_ERR_PROTO_STATE with the collector's text in @err).
 */
int ship_bye(struct ship *s, const struct proto_bye *bye, int timeout_ms,
	     struct proto_done *done, char *err, size_t errlen);

#endif
