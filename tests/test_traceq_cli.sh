#!/bin/bash
# traceq's command line against a real collector (issue 17, "Errors and one
# command line"). Two agents (hosts cli-a, cli-b) record sched events into
# one collector. Asserts:
#  - --stats honours --host (-H, repeatable) and --cpu, prints a total line
#    per host (cpu=all, the sum of that host's CPU rows), and --format json
#    gives one JSON object per row (totals: "cpu":"all");
#  - the errors a person can act on: an unknown event names the closest
#    stored ones, '=' says '==', an unknown field names the closest fields,
#    "prev_comm == 5" is an error (exit 2), not an empty answer;
#  - -s HOST:PORT reaches the TLS query port as tls://HOST:PORT does, and
#    TRACEQ_SERVER is the default -s;
#  - bash completion completes event names (traceq --events) for the query
#    and, after "where", the event's field names (traceq --fields), from the
#    collector -s or TRACEQ_SERVER names; and nothing, quietly, when no
#    collector answers.
set -u

. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

tc_need_tracefs
tc_lock
tc_setup traceq_cli agent workload collector_pid

tc_certs
tc_certs_run client cli-reader > /dev/null || { echo "FAIL: certificate helper"; exit 1; }
tc_start_collector --query-tls 127.0.0.1:0 --scope 'cert:cli-reader cli-*'
qtls=$(sed -n 's/^query_tls=//p' "$tmp/ready")
tq="$top_builddir/traceq/traceq"

( while :; do sleep 0.001; done ) &
workload=$!
for h in cli-a cli-b; do
	tc_run_agent "agent-$h" -e sched --duration 1 --name "$h" --instance "tc-tqcli-$$" \
		--spool-dir "$tmp/spool"
	rc=$?
	check "agent $h exits 0" '[ "$rc" = 0 ] || { cat "$tmp/agent-$h.err"; false; }'
done
kill "$workload"; wait "$workload" 2>/dev/null
workload=
check "both hosts stored sched_switch" \
	'[ "$(traceq --count -H cli-a sched_switch)" -gt 0 ] &&
	 [ "$(traceq --count -H cli-b sched_switch)" -gt 0 ]'

# ---- --stats ----
traceq --stats > "$tmp/stats" 2>&1
traceq --stats -H cli-a > "$tmp/stats-a" 2>&1
check "--stats -H cli-a: only cli-a's rows ($(wc -l < "$tmp/stats-a") of $(wc -l < "$tmp/stats"))" \
	'[ -s "$tmp/stats-a" ] && ! grep -v "^host=cli-a " "$tmp/stats-a" | grep -q . &&
	 grep -q "^host=cli-b " "$tmp/stats"'
traceq --stats -H cli-a -H cli-b > "$tmp/stats-ab" 2>&1
check "--stats -H cli-a -H cli-b: the rows of both" \
	'[ "$(grep -c "^host=cli-[ab] " "$tmp/stats-ab")" = "$(grep -c "^host=cli-[ab] " "$tmp/stats")" ]'
# total HOST KEY FILE: the sum of KEY over HOST's CPU rows; and its cpu=all line's
sum() { awk -v h="$1" -v k="$2" '$1 == "host=" h && $2 != "cpu=all" {
	for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) s += substr($i, length(k) + 2) }
	END { print s + 0 }' "$3"; }
total() { awk -v h="$1" -v k="$2" '$1 == "host=" h && $2 == "cpu=all" {
	for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$3"; }
for h in cli-a cli-b; do
	check "--stats: a total line for $h, its events the sum of its CPUs' ($(sum $h events "$tmp/stats") vs '$(total $h events "$tmp/stats")')" \
		'[ "$(grep -c "^host=$h cpu=all " "$tmp/stats")" = 1 ] &&
		 [ "$(total $h events "$tmp/stats")" = "$(sum $h events "$tmp/stats")" ] &&
		 [ "$(total $h pages "$tmp/stats")" = "$(sum $h pages "$tmp/stats")" ] &&
		 [ "$(sum $h events "$tmp/stats")" -gt 0 ]'
done
traceq --stats --cpu 0 -H cli-a > "$tmp/stats-cpu0" 2>&1
check "--stats --cpu 0: only CPU 0's rows and the total of those" \
	'grep -q "^host=cli-a cpu=0 " "$tmp/stats-cpu0" &&
	 ! grep -v "^host=cli-a cpu=0 \|^host=cli-a cpu=all " "$tmp/stats-cpu0" | grep -q . &&
	 [ "$(total cli-a events "$tmp/stats-cpu0")" = "$(sum cli-a events "$tmp/stats-cpu0")" ]'
traceq --stats --format json -H cli-a > "$tmp/stats.json" 2>&1
check "--stats --format json: one JSON object a row, the total with \"cpu\":\"all\"" \
	'python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cpus = [r for r in rows if r[\"cpu\"] != \"all\"]
tot = [r for r in rows if r[\"cpu\"] == \"all\"]
assert rows and all(r[\"host\"] == \"cli-a\" for r in rows)
assert len(tot) == 1 and tot[0][\"events\"] == sum(r[\"events\"] for r in cpus)
" "$tmp/stats.json" || { head -3 "$tmp/stats.json"; false; }'
traceq --drops --format json > "$tmp/drops.json" 2>&1
check "--drops --format json: JSON objects" \
	'python3 -c "
import json, sys
[json.loads(l) for l in open(sys.argv[1])]
" "$tmp/drops.json" || { head -3 "$tmp/drops.json"; false; }'

# ---- errors a person can act on ----
# err NAME QUERY...: traceq QUERY; its stderr in $tmp/NAME, exit in rc
err() { local n=$1; shift; traceq "$@" > "$tmp/$n.out" 2> "$tmp/$n"; rc=$?; }
err unknown-event sched_swich
check "an unknown event names the closest (exit $rc: $(head -c 300 "$tmp/unknown-event"))" \
	'[ "$rc" = 2 ] && grep -qF "unknown event: sched_swich (did you mean '"'sched_switch'"'?)" "$tmp/unknown-event"'
err eq "sched_switch where prev_pid = 0"
check "'=' says '==' (exit $rc: $(head -c 300 "$tmp/eq"))" \
	'[ "$rc" = 2 ] && grep -qF "(did you mean '"'=='"'?)" "$tmp/eq"'
err unknown-field "sched_switch where next_pd == 0"
check "an unknown field names the closest (exit $rc: $(head -c 300 "$tmp/unknown-field"))" \
	'[ "$rc" = 2 ] && grep -qF "(did you mean '"'next_pid'"'?)" "$tmp/unknown-field"'
err type "sched_switch where prev_comm == 5"
check "prev_comm == 5 is an error, not an empty answer (exit $rc: $(head -c 300 "$tmp/type"))" \
	'[ "$rc" = 2 ] && [ ! -s "$tmp/type.out" ] && grep -q "quote it" "$tmp/type"'

# ---- -s HOST:PORT and TRACEQ_SERVER ----
tls() { "$tq" -t 30000 --cert "$tmp/pki/client-cli-reader.crt" \
	--key "$tmp/pki/client-cli-reader.key" --ca "$tmp/pki/ca.crt" "$@"; }
n_url=$(tls -s "tls://$qtls" --count sched_switch 2>&1)
n_hp=$(tls -s "$qtls" --count sched_switch 2>&1)
check "-s HOST:PORT is the TLS query port as tls://HOST:PORT ($n_hp, $n_url)" \
	'[ "$n_hp" = "$n_url" ] && [ "$n_hp" -gt 0 ] 2>/dev/null'
n_env=$(TRACEQ_SERVER=$query "$tq" --count sched_switch 2>&1)
n_s=$("$tq" -s "$query" --count sched_switch 2>&1)
check "TRACEQ_SERVER is the default -s ($n_env, $n_s)" '[ "$n_env" = "$n_s" ] && [ "$n_s" -gt 0 ]'
n_bad=$(TRACEQ_SERVER=ipc:///nonexistent/q.sock "$tq" -t 2000 -s "$query" --count sched_switch 2>&1)
check "-s wins over TRACEQ_SERVER" '[ "$n_bad" = "$n_s" ]'

# ---- bash completion with names from the collector ----
# complete LINE: the words bash completion offers for LINE (the cursor at its end)
complete_line() {
	bash -c '
		. /usr/share/bash-completion/bash_completion
		. "$1/contrib/bash-completion"
		PATH=$2:$PATH
		COMP_LINE=$3
		COMP_POINT=${#COMP_LINE}
		read -ra COMP_WORDS <<< "${COMP_LINE//:/ : }"	# bash splits at COMP_WORDBREAKS
		[ "${COMP_LINE: -1}" = " " ] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_tracecollect traceq "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		[ ${#COMPREPLY[@]} = 0 ] || printf "%s\n" "${COMPREPLY[@]}"' _ "$top_srcdir" "$top_builddir/traceq" "$1"
}
[ -r /usr/share/bash-completion/bash_completion ] || skip "needs bash-completion"
complete_line "traceq -s $query sched_sw" > "$tmp/c1"
check "completion: an event name from the collector (-s) ($(tr '\n' ' ' < "$tmp/c1"))" \
	'grep -qx "sched_switch" "$tmp/c1"'
TRACEQ_SERVER=$query complete_line "traceq sched:sched_wak" > "$tmp/c2"
# (bash replaces only what follows the word's last ':': "sched_wakeup" completes "sched:sched_wak")
check "completion: SYSTEM:EVENT from the collector (TRACEQ_SERVER) ($(tr '\n' ' ' < "$tmp/c2"))" \
	'grep -qx "sched_wakeup" "$tmp/c2" && ! grep -qv "^sched_wak" "$tmp/c2"'
complete_line "traceq -s $query sched_switch where next_" > "$tmp/c4"
check "completion: the event's field names after where ($(tr '\n' ' ' < "$tmp/c4"))" \
	'grep -qx "next_pid" "$tmp/c4" && grep -qx "next_comm" "$tmp/c4"'
complete_line "traceq -s ipc:///nonexistent/q.sock sched_sw" > "$tmp/c5" 2> "$tmp/c5.err"
check "completion: no collector, no words and nothing said" \
	'[ ! -s "$tmp/c5" ] && [ ! -s "$tmp/c5.err" ]'

exit $failed
