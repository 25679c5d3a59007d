/*
 * clockprobe.h - the collector's side of the clock exchange with one agent
 * (PROTOCOL.md, "Clock measurement"): bursts of MSG_CLOCK_PROBE, one out
 * at a time, and of their MSG_CLOCK_ECHOes the one with the shortest
 * round trip, as a MSG_CLOCK_MEASURE for the decoder.
 *
 * NTP's four timestamps (RFC 5905, section 8): t1 our realtime when the
 * probe left, t2 and t3 the agent's trace clock when it read the probe
 * and wrote the echo, t4 our realtime when the echo arrived. The round
 * trip less the agent's hold, delay = (t4 - t1) - (t3 - t2), bounds the
 * error of the point ((t2 + t3) / 2, (t1 + t4) / 2) to delay / 2 whatever
 * the two directions' shares were: that is the uncertainty. Probes queue
 * behind page frames on a busy link, so the shortest of a burst wins.
 * Elapsed times are measured on CLOCK_MONOTONIC, so a step of our own
 * realtime inside a round trip does not show as delay.
 *
 * Pure state: conn.c sends the probes, reads the clocks and keeps the
 * timer. Context: the event loop.
 */
#ifndef SERVER_CONN_CLOCKPROBE_H
#define SERVER_CONN_CLOCKPROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/msg.h"

#define CLOCKPROBE_CONNECT	8	/* probes right after WELCOME */
#define CLOCKPROBE_PERIODIC	4	/* probes per later burst */
#define CLOCKPROBE_INTERVAL_MS	5000	/* between bursts; an echo later than
					 * this is given up */

struct clockprobe {
	uint64_t last_id;	/* of the latest probe sent */
	bool out;		/* its echo is awaited */
	int64_t t1_rt, t1_mono;	/* when it left */
	unsigned left;		/* probes of the burst not sent yet */
	uint64_t answers;	/* echoes taken in this burst */
	uint64_t best_delay;	/* UINT64_MAX: none yet */
	struct proto_clock_measure best;
};

/* clockprobe_burst - begin a burst of @n probes (what was measured so far is dropped). */
void clockprobe_burst(struct clockprobe *p, unsigned n);

/*
 * clockprobe_next - the burst's next probe into *@out, leaving at our
 * realtime @rt and monotonic @mono (ns). Return: true; false when the
 * burst has sent all its probes (then clockprobe_result()).
 */
bool clockprobe_next(struct clockprobe *p, int64_t rt, int64_t mono,
		     struct proto_clock_probe *out);

/*
 * clockprobe_echo - the agent's echo @e, arrived at @mono (ns). Return:
 * 0 taken (send the next probe); 1 not the probe out (late, given up:
 * ignored); -1 an echo whose hold is longer than the round trip (the
 * agent's clock cannot be read so: ignored, the probe given up).
 */
int clockprobe_echo(struct clockprobe *p, const struct proto_clock_echo *e, int64_t mono);

/* clockprobe_waiting - whether a probe's echo is awaited. */
bool clockprobe_waiting(const struct clockprobe *p);

/*
 * clockprobe_result - end the burst (a probe still out is given up): its
 * best answer into *@out. Return: true; false when no echo was taken.
 */
bool clockprobe_result(struct clockprobe *p, struct proto_clock_measure *out);

#endif
