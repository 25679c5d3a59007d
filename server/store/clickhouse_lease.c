/*
 * clickhouse_lease.c - the retention lease (clickhouse_lease.h): a lease
 * held by insert-then-read-back on ClickHouse 18.16, which has neither
 * transactions nor a compare-and-set (sql/clickhouse/0010-retain-lease.sql
 * holds the rows).
 *
 * The lease is a sequence of terms. A row (term, nonce, collector,
 * expires) is a claim of term `term` by the collector whose random nonce
 * it carries, good until `expires`, in seconds of the ClickHouse server's
 * own clock (now(), in the INSERT itself: no two collectors' clocks are
 * compared). A collector that wants the lease:
 *  1. reads the highest term T and its latest expiry; if that is still to
 *     come, the lease is taken: it skips retention until then;
 *  2. else inserts its claim of T + 1 (expires = now() + the lease) and,
 *     once that INSERT is acknowledged, reads the claims of T + 1 back;
 *  3. holds term T + 1 iff its nonce is the only one it reads there.
 * At most one collector holds a term: of two claims A and B of one term,
 * one was acknowledged first, say A's; B's read-back starts after B's
 * INSERT was acknowledged, so after A's, and an acknowledged MergeTree
 * INSERT is visible to every later SELECT on that server: B reads A's claim
 * and does not hold. (Both may lose: the term then has no holder and runs
 * out, and the next claim is of T + 2.) Nobody claims T + 1 while T's holder
 * holds it, since its claim row's expiry is T's latest one until it ran out.
 *
 * The holder renews by inserting rows of its own term and nonce with later
 * expiries, when half its lease is gone; it counts itself the holder only
 * until (the monotonic time it sent its last acknowledged row) + lease -
 * 1 s (now() truncates to seconds) - CH_LEASE_MARGIN_S, which is before the
 * server's clock passes that row's expiry, as long as the two clocks run
 * at one rate. It checks before each retention round (clickhouse_retain.c);
 * a round that starts in time ends well within the margin, unless the
 * process is stopped for longer than the margin in between, the limit of
 * every lease without fencing, said in tracecollectd(8).
 *
 * All collectors must reach one server for this table (a single server, as
 * the fleet runs today); on replicas an INSERT acknowledged by one is not
 * yet visible on another, and step 3 would not hold.
 */
#include "config.h"

#define LOG_PREFIX "clickhouse"

#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/clickhouse_lease.h"
#include "server/store/clickhouse_util.h"

#define CH_LEASE_MARGIN_S	2	/* the holder stops this long before its expiry */

/* The highest term, its latest expiry and that row's collector, and the server's now(). */
static int ch_lease_read(struct ch_store *s, uint64_t *term, int64_t *expires,
			 int64_t *now, char *who, size_t wholen)
{
	struct ch_reply r;
	int ret = ch_query_text(s, "SELECT term, max(expires), argMax(collector, expires),"
				" toInt64(now()) FROM retain_lease GROUP BY term ORDER BY term DESC"
				" LIMIT 1", &r);

	if (ret < 0)
		return ret;
	*term = 0;
	*expires = INT64_MIN;
	who[0] = 0;
	if (r.nrows && (ch_reply_u64(&r, 0, 0, term) < 0 || ch_reply_i64(&r, 0, 1, expires) < 0 ||
			ch_reply_i64(&r, 0, 3, now) < 0))
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered retain_lease oddly");
	else if (r.nrows)
		snprintf(who, wholen, "%s", ch_reply_cell(&r, 0, 2));
	ch_reply_free(&r);
	if (ret == 0 && !r.nrows) {
		struct ch_sql q;

		ch_sql_init(&q, 0);
		ch_sql_raw(&q, "SELECT toInt64(now())");
		ret = ch_query_u64(s, &q, (uint64_t *)now);
		ch_sql_free(&q);
	}
	return ret;
}

/* A row of @term under our nonce, good for the lease from the server's now(). */
static int ch_lease_row(struct ch_store *s, uint64_t term)
{
	int64_t t0 = util_now_ms();
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "INSERT INTO retain_lease (term, nonce, collector, slot, expires, ts)"
		    " SELECT %llu, %llu, ", (unsigned long long)term,
		    (unsigned long long)s->lease_nonce);
	ch_sql_cstr(&q, s->collector);
	ch_sql_addf(&q, ", %u, toInt64(now()) + %u, %lld", s->slot, s->lease_s,
		    (long long)ch_now_ns());
	ret = ch_exec(s, &q);
	ch_sql_free(&q);
	if (ret == 0)
		s->lease_until = t0 + ((int64_t)s->lease_s - 1 - CH_LEASE_MARGIN_S) * 1000;
	return ret;
}

/* Step 3: whether our claim of @term is the only one. */
static int ch_lease_won(struct ch_store *s, uint64_t term, bool *won)
{
	struct ch_reply r;
	struct ch_sql q;
	uint64_t n = 0, nonce = 0;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT uniqExact(nonce), any(nonce) FROM retain_lease WHERE term = %llu",
		    (unsigned long long)term);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	if (r.nrows < 1 || ch_reply_u64(&r, 0, 0, &n) < 0 || ch_reply_u64(&r, 0, 1, &nonce) < 0)
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered retain_lease oddly");
	else
		*won = n == 1 && nonce == s->lease_nonce;
	ch_reply_free(&r);
	return ret;
}

/* Steps 2 and 3: claim @term. */
static int ch_lease_claim(struct ch_store *s, uint64_t term, bool *won)
{
	int ret;

	if (getrandom(&s->lease_nonce, sizeof(s->lease_nonce), 0) != sizeof(s->lease_nonce))
		s->lease_nonce = (uint64_t)ch_now_ns() * 64 + s->slot;
	s->lease_nonce |= 1;	/* never 0, the nonce of no row */
	ret = ch_lease_row(s, term) ?: ch_lease_won(s, term, won);
	if (ret == 0 && *won) {
		s->lease_term = term;
		log_info("retention: this collector holds the retention lease (term %llu, %u s,"
			 " renewed while it runs): it runs retention for the database",
			 (unsigned long long)term, s->lease_s);
	}
	return ret;
}

/* Not holding: say once who does, and when to look again. */
static void ch_lease_skip(struct ch_store *s, const char *who, int64_t wait_s)
{
	char esc[LOG_ESC_LEN];

	if (!s->lease_skipping && who)
		log_info("retention: collector '%s' holds the retention lease: not running"
			 " retention here while it does", log_escape(who, esc, sizeof(esc)));
	else if (!s->lease_skipping)
		log_info("retention: another collector claimed the retention lease at the same"
			 " time: not running retention here until that claim runs out");
	s->lease_skipping = true;
	s->lease_next = util_now_ms() + (wait_s > 0 ? wait_s : 1) * 1000;
}

int ch_lease_hold(struct ch_store *s, bool *held, bool *fresh)
{
	int64_t now_ms = util_now_ms(), expires = 0, now = 0;
	char who[256];
	uint64_t term = 0;
	bool won = false;
	int ret;

	if (s->lease_term && now_ms < s->lease_until) {
		/* ours: renew when half is gone */
		ret = 0;
		if (s->lease_until - now_ms < (int64_t)s->lease_s * 500)
			ret = ch_lease_row(s, s->lease_term);
		*held = true;
		*fresh = false;
		return ret == 0 || now_ms < s->lease_until ? 0 : ret;
	}
	if (s->lease_term)
		log_warn("retention: the retention lease (term %llu) ran out before this collector"
			 " renewed it; taking it again when free", (unsigned long long)s->lease_term);
	s->lease_term = 0;
	*held = *fresh = false;
	if (now_ms < s->lease_next)
		return 0;
	ret = ch_lease_read(s, &term, &expires, &now, who, sizeof(who));
	if (ret < 0)
		return ret;
	if (expires >= now) {
		ch_lease_skip(s, who, expires - now + 1);
		return 0;
	}
	ret = ch_lease_claim(s, term + 1, &won);
	if (ret < 0)
		return ret;
	if (!won) {
		ch_lease_skip(s, NULL, (int64_t)s->lease_s + 1);
		return 0;
	}
	s->lease_skipping = false;
	*held = *fresh = true;
	return 0;
}
