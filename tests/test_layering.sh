#!/bin/bash
# The folders are the architecture (shared DESIGN.md): agent/ and server/
# never include each other, common/ includes only common/, proto/ only
# common/ and proto/, arch/ nothing of ours, lib/ (the function-tracer
# runtime in libtracecollect) common/ and arch/ only. Fails on the first violation.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top_srcdir" || exit 1
bad=0

# forbid FOLDER PATTERN: no quoted include in FOLDER may match PATTERN
forbid() {
	local hits
	hits=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]+\"($2)/" "$1" \
		--include='*.c' --include='*.h' --include='*.S' 2>/dev/null)
	if [ -n "$hits" ]; then
		echo "FAIL: $1 must not include $2/:"
		echo "$hits"
		bad=1
	else
		echo "ok: $1 does not include $2/"
	fi
}

forbid agent 'server'
forbid server 'agent'
forbid common 'proto|agent|server|sql|arch|lib'
forbid proto 'agent|server|sql|arch'
forbid arch 'common|proto|agent|server|sql|lib'
forbid lib 'proto|agent|server|sql'
echo "$( [ $bad = 0 ] && echo 1 || echo 0 ) passed, $bad failed"
exit $bad
