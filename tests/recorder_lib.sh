# tests/recorder_lib.sh - the snapshot table as the recorder tests read it
# (test_recorder.sh, test_freeze_group.sh, test_recorder_oracle.sh), sourced
# after lib.sh by a script that defines tq_root (traceq as root, --sync).

# snaps_json [ID]: --snapshots -f json (of snapshot ID; none or 0: all) into $tmp/snaps.json
snaps_json() {
	if [ "${1:-0}" = 0 ]; then tq_root --snapshots -f json; else
		tq_root --snapshots --snapshot-id "$1" -f json; fi > "$tmp/snaps.json"
}
# snap_field ID HOST KEY: that row's KEY ("" when absent)
snap_field() {
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    if str(r.get("id")) == sys.argv[2] and r.get("host") == sys.argv[3]:
        v = r.get(sys.argv[4]); print("" if v is None else v); break' "$tmp/snaps.json" "$@"
}
# snap_of REASON [AFTER]: the id of the snapshot of that reason, past id
# AFTER ("" when none)
snap_of() {
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    if r.get("reason") == sys.argv[2] and int(r["id"]) > int(sys.argv[3]):
        print(r["id"]); break' "$tmp/snaps.json" "$1" "${2:-0}"
}
