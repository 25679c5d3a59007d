#!/bin/bash
# Proof that tests/test_layering.sh can fail: it copies the folders the
# rules speak of into a temporary tree, checks that the copy passes, then
# plants one violation of each rule at a time (a file holding one
# #include, or for traceq's modes one call) and expects the checker to
# fail that rule, and only that rule, naming the planted file. A few planted includes that the rules allow
# must still pass. server/store/ does not exist on every branch: the store
# rules are first checked without it (they hold vacuously), then a stand-in
# server/store/ is created so the rules have something to bite on (one of
# its headers includes another, so a planted include can close a circle).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
checker=$top_srcdir/tests/test_layering.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tc-layering.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/tree
passed=0
failed=0

result() {
	if [ "$1" = 1 ]; then
		echo "ok: $2"
		passed=$((passed + 1))
	else
		echo "FAIL: $2"
		printf '%s\n' "$3" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
}

# plant VERDICT FILE INCLUDE [RULE]: put FILE (relative to the copy)
# holding `#include INCLUDE`, run the checker on the copy, remove FILE.
# VERDICT pass: the checker passes; fail: it fails, and the one failed
# check is RULE (the start of its name) with FILE among the hits.
plant() {
	local verdict=$1 file=$2 inc=$3 rule=${4:-} out rc ok=0

	mkdir -p "$tree/$(dirname "$file")"
	printf '#include %s\n' "$inc" > "$tree/$file"
	out=$(bash "$checker" "$tree" 2>&1)
	rc=$?
	rm -f "$tree/$file"
	if [ "$verdict" = pass ]; then
		[ "$rc" = 0 ] && ok=1
		result "$ok" "allowed: $file including $inc passes" "$out"
		return
	fi
	[ "$rc" != 0 ] && grep -qF "FAIL: $rule" <<< "$out" &&
		grep -qE '^[0-9]+ passed, 1 failed$' <<< "$out" &&
		grep -qF "    $file:1: includes " <<< "$out" && ok=1
	result "$ok" "caught: $file including $inc ($rule)" "$out"
}

# plant_call FILE ENTRY: a mode file whose one line calls another mode's
# ENTRY; the checker fails the rule on mode calls, and only that rule.
plant_call() {
	local file=$1 out ok=0

	printf 'int planted(void) { return %s(0, 0); }\n' "$2" > "$tree/$file"
	out=$(bash "$checker" "$tree" 2>&1)
	rm -f "$tree/$file"
	grep -qF "FAIL: traceq's modes call no other mode" <<< "$out" &&
		grep -qE '^[0-9]+ passed, 1 failed$' <<< "$out" &&
		grep -qF "    $file:1: calls $2" <<< "$out" && ok=1
	result "$ok" "caught: $file calling $2 (traceq's modes call no other mode)" "$out"
}

mkdir -p "$tree"
for d in agent arch common lib proto server sql traceq; do
	[ -d "$top_srcdir/$d" ] && cp -r "$top_srcdir/$d" "$tree/"
done
# clean NAME: the copy as it is passes.
clean() {
	local out ok=0

	out=$(bash "$checker" "$tree" 2>&1) && ok=1
	result "$ok" "$1" "$out"
}

rm -rf "$tree/server/store"
clean "a copy of the tree without server/store/ passes"
mkdir -p "$tree/server/store"
touch "$tree/server/store/store.h" "$tree/server/store/sqlite_int.h"
printf '#include "server/store/sqlite_b.h"\n' > "$tree/server/store/sqlite_a.h"
clean "the copy with a stand-in server/store/ passes"

plant fail agent/planted.c '"server/query/queryd.h"' "agent does not include"
plant fail agent/planted.h '"traceq/graph.h"' "agent does not include"
plant fail server/planted.c '"agent/agent.h"' "server does not include"
plant fail server/planted.c '"traceq/graph.h"' "server does not include"
plant fail common/planted.c '"proto/msg.h"' "common does not include"
plant fail common/planted.h '"traceq/graph.h"' "common does not include"
plant fail proto/planted.c '"server/query/queryd.h"' "proto does not include"
plant fail proto/planted.c '"traceq/graph.h"' "proto does not include"
plant fail arch/x86_64/planted.S '"common/ring.h"' "arch does not include"
plant fail lib/planted.c '"server/ingest/ingest.h"' "lib does not include"
for inc in '"server/x.h"' '"agent/agent.h"' '"sql/schema.h"' '"arch/arch.h"' \
	   '"lib/fgraph.h"' '"../server/query/queryd.h"' '<server/query/queryd.h>'; do
	plant fail traceq/planted.c "$inc" "traceq includes only"
done
plant fail server/planted.c '"server/store/sqlite_int.h"' "outside server/store/"
plant fail server/planted.c '"store/sqlite_int.h"' "outside server/store/"
plant fail server/store/sqlite_planted.c '"server/store/store.h"' "server/store/sqlite* include"
plant fail server/store/sqlite_b.c '"server/store/sqlite_a.h"' "server/store/ includes form no circle"
plant fail server/planted.c '"proto/msgpack_dec.h"' "proto/msgpack_dec.h is included only"
plant fail server/query/planted.c '"server/ingest/ingest.h"' "server/query does not include"
plant fail server/query/planted.c '"server/conn/conn.h"' "server/query does not include"
plant fail server/ingest/planted.c '"server/query/queryd.h"' "server/ingest does not include"
plant fail server/ingest/planted.c '"server/conn/conn.h"' "server/ingest does not include"
plant fail server/conn/planted.c '"server/query/queryd.h"' "server/conn does not include"
plant fail server/planted.c '"server/query/queryd_sel.h"' "outside server/query/"
plant fail server/conn/planted.c '"server/ingest/journal.h"' "outside server/ingest/"
plant fail server/planted.c '"server/conn/hostlimit.h"' "outside server/conn/"
plant fail traceq/planted.c '"traceq/modes.h"' "traceq/modes.h is included only"
plant fail traceq/mode_planted.c '"traceq/mode_count.c"' "nothing includes a traceq/mode_"
plant_call traceq/mode_planted.c mode_count_run
# queryd.c itself: the planted file stands in for it, then the copy's comes back
cp "$tree/server/query/queryd.c" "$tmp/queryd.c"
for inc in '"server/query/queryd_tls.h"' '"queryd_tls.h"'; do
	plant fail server/query/queryd.c "$inc" "server/query/queryd.c does not include"
done
cp "$tmp/queryd.c" "$tree/server/query/queryd.c"

plant pass traceq/planted.c '"proto/msg.h"'
plant pass traceq/planted.c '"common/tc_error.h"'
plant pass traceq/planted.c '<nng/nng.h>'
plant pass server/planted.c '"server/store/store.h"'
plant pass server/planted.c '"server/store/store_types.h"'
plant pass server/store/sqlite_planted.c '"server/store/store_ops.h"'
plant pass server/store/sqlite_b.c '"server/store/sqlite_int.h"'
plant pass server/store/planted.c '"server/store/sqlite_int.h"'
plant pass server/planted.c '"server/query/queryd.h"'
plant pass server/conn/planted.c '"server/ingest/ingest.h"'
plant pass server/query/planted.c '"server/query/queryd_sel.h"'
plant pass server/query/planted.c '"server/query/queryd_tls.h"'
plant pass tests/planted.c '"server/ingest/journal.h"'	# white-box tests
plant pass tests/planted.c '"server/store/sqlite_int.h"'	# white-box tests
plant pass proto/planted.c '"proto/msgpack_dec.h"'
plant pass traceq/mode_planted.c '"traceq/modes.h"'

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
