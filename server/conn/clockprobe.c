/*
 * clockprobe.c - bursts of clock probes, the best round trip of each
 * (see clockprobe.h for the algorithm, NTP's on-wire exchange).
 */
#include "config.h"

#include "server/conn/clockprobe.h"

void clockprobe_burst(struct clockprobe *p, unsigned n)
{
	p->left = n;
	p->out = false;
	p->answers = 0;
	p->best_delay = UINT64_MAX;
}

bool clockprobe_next(struct clockprobe *p, int64_t rt, int64_t mono,
		     struct proto_clock_probe *out)
{
	if (!p->left)
		return false;
	p->left--;
	p->out = true;
	p->t1_rt = rt;
	p->t1_mono = mono;
	out->id = ++p->last_id;
	return true;
}

bool clockprobe_waiting(const struct clockprobe *p)
{
	return p->out;
}

int clockprobe_echo(struct clockprobe *p, const struct proto_clock_echo *e, int64_t mono)
{
	uint64_t rtt, hold = e->send_ns - e->recv_ns, delay;

	if (!p->out || e->id != p->last_id)
		return 1;
	p->out = false;
	rtt = mono > p->t1_mono ? (uint64_t)(mono - p->t1_mono) : 0;
	if (e->send_ns < e->recv_ns || hold > rtt || e->recv_ns > INT64_MAX - hold)
		return -1;
	delay = rtt - hold;
	p->answers++;
	if (delay < p->best_delay) {
		p->best_delay = delay;
		p->best = (struct proto_clock_measure){
			.trace_ns = e->recv_ns + hold / 2,
			.realtime_ns = p->t1_rt + (int64_t)(rtt / 2),
			.uncertainty_ns = delay / 2 + (delay & 1),
		};
	}
	return 0;
}

bool clockprobe_result(struct clockprobe *p, struct proto_clock_measure *out)
{
	bool any = p->answers != 0;

	if (any) {
		*out = p->best;
		out->probes = p->answers;
	}
	p->out = false;
	p->left = 0;
	p->answers = 0;
	p->best_delay = UINT64_MAX;
	return any;
}
