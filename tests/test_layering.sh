#!/bin/bash
# The folders are the architecture (shared DESIGN.md): agent/ and server/
# never include each other, common/ includes only common/, proto/ only
# common/ and proto/, arch/ nothing of ours, lib/ (the function-tracer
# runtime in libtracecollect) common/ and arch/ only, traceq/ (the client)
# only common/ and proto/. Nothing but traceq/ itself (and its tests)
# includes traceq/. Outside server/store/, the storage layer is reached
# only through "server/store/store.h" and the types it shares,
# "server/store/store_types.h" (the backends sit behind its ops tables);
# inside it, the SQLite backend (sqlite*) includes of the folder only its
# own headers and the contract (store_ops.h, store_types.h), never the
# callers' store.h, and the folder's includes form no circle. Outside
# proto/ nobody includes proto/msgpack_dec.h, proto's private msgpack
# readers.
#
# server/ has rooms by role, each reached from outside through its one
# public header: query/ (queryd.h: the query endpoint; metrics.h), ingest/ (ingest.h:
# the worker, journal, decoding), conn/ (conn.h: agent connections). query/
# and ingest/ never include each other (the daemon, tracecollectd.c, hands
# the query endpoint what it needs of the ingest as function pointers);
# neither includes conn/, and the store includes none of them. Inside
# query/, the TLS query port (queryd_tls.c) is a front that calls the
# endpoint's interface: queryd.c does not include its header.
#
# traceq's modes (traceq/mode_*.c, a file each) are picked by traceq.c's
# table: traceq/modes.h, which declares their entries, is included only
# there and by the modes themselves, no file includes a mode file, and no
# mode calls another mode's entry (mode_X_run).
#
#   test_layering.sh [ROOT]    check the tree at ROOT (default: $top_srcdir,
#                              else the tree this script is in)
#
# Each rule is one check; all are run, every violation is listed, and the
# exit status is 1 if any rule failed. An include is taken as the compiler
# would find it: a quoted include names the file beside the includer if
# there is one ("store/x.h" from server/), else the path from the top
# (AM_CPPFLAGS is -I$(top_srcdir)); "../" is resolved; <...> counts too.
# tests/test_layering_planted.sh plants a violation of each rule in a copy
# of the tree and expects this script to catch it.
set -u
root=${1:-${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}}
cd "$root" || exit 1
passed=0
failed=0

# edges: every #include of our C, header and assembler files, one per line
# as FILE:LINE<TAB>TARGET, TARGET being the included file's path from the
# top (or the system header's name, for those not in the tree).
edges() {
	local file line kind target path dir

	grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' . \
		--include='*.c' --include='*.h' --include='*.S' --exclude-dir=.git 2>/dev/null |
	sed -nE 's|^\./([^:]*):([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*(["<])([^">]*)[">].*|\1	\2	\3	\4|p' |
	while IFS='	' read -r file line kind target; do
		path=$target
		dir=${file%/*}
		[ "$dir" = "$file" ] && dir=.
		if [ "$kind" = '"' ] && [ -e "$dir/$target" ]; then
			path=$dir/$target
		fi
		case "/$path/" in
		*/./* | */../*) path=$(realpath -ms --relative-to=. "$path") ;;
		esac
		printf '%s:%s\t%s\n' "$file" "$line" "$path"
	done
}
all_edges=$(edges)

# report NAME HITS: one check passes when HITS is empty.
report() {
	if [ -n "$2" ]; then
		echo "FAIL: $1:"
		printf '%s\n' "$2" | sed 's/	/: includes /; s/^/    /'
		failed=$((failed + 1))
	else
		echo "ok: $1"
		passed=$((passed + 1))
	fi
}

# from FOLDER: the edges whose including file is under FOLDER/.
from() {
	printf '%s\n' "$all_edges" | grep -E "^$1/" || true
}

# forbid FOLDER PATTERN: nothing under FOLDER includes a file under PATTERN/.
forbid() {
	report "$1 does not include ${2//|/\/, }/" \
		"$(from "$1" | grep -E "	($2)/" || true)"
}

# only FOLDER PATTERN: what FOLDER includes from the tree's folders is
# under PATTERN/ (system headers and "config.h" are not in a folder of ours).
only() {
	local ours

	ours=$(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '%f|')
	report "$1 includes only ${2//|/\/, }/ (and its own files)" \
		"$(from "$1" | grep -E "	(${ours%|})/" | grep -vE "	($1|$2)/" || true)"
}

# only_through FOLDER HEADER...: outside FOLDER/, of FOLDER's files only
# the HEADERs are included (holds while FOLDER does not exist). tests/
# and bench/ are exempt: white-box tests and benchmarks include private
# headers.
only_through() {
	local dir=$1 names

	shift
	names=$(printf "$dir/%s, " "$@")
	report "outside $dir/, only ${names%, } are included from $dir/" \
		"$(printf '%s\n' "$all_edges" | grep -vE "^($dir|tests|bench)/" |
		   grep -E "	$dir/" | grep -vE "	$dir/($(IFS='|'; echo "$*"))\$" || true)"
}

# glob_re GLOB: GLOB (a file name, * for any part of it) as an ERE.
glob_re() {
	printf '%s' "$1" | sed 's/\./\\./g; s/\*/[^\/:]*/g'
}

# only_within FOLDER GLOB ALLOWED...: FOLDER's files named GLOB include,
# of FOLDER's files, only those named ALLOWED (globs too); what they
# include from elsewhere is the other rules' business.
only_within() {
	local dir=$1 glob=$2 allowed="" a

	shift 2
	for a in "$@"; do
		allowed+="$(glob_re "$a")|"
	done
	report "$dir/$glob include of $dir/ only $*" \
		"$(printf '%s\n' "$all_edges" | grep -E "^$dir/$(glob_re "$glob"):" |
		   grep -E "	$dir/" | grep -vE "	$dir/(${allowed%|})\$" || true)"
}

# acyclic FOLDER: the includes among FOLDER's own files form no circle,
# a file's .c and .h taken as one module (a header declares what its .c
# defines, so who includes whom is who may call whom). The hits are the
# includes on a circle: from module A to B where B leads back to A.
acyclic() {
	local dir=$1

	report "$dir/ includes form no circle (X.c and X.h as one)" \
		"$(printf '%s\n' "$all_edges" | grep -E "^$dir/[^/]*:[0-9]+	$dir/[^/]*\$" |
		   awk -F '\t' '
			function mod(f) { sub(/:[0-9]+$/, "", f); sub(/\.[chS]$/, "", f); return f }
			# reaches(x, y): a path of includes leads from module x to y
			function reaches(x, y,    todo, seen, n, u, v) {
				todo[n = 1] = x
				seen[x] = 1
				while (n > 0) {
					u = todo[n--]
					if (u == y)
						return 1
					for (v in node)
						if ((u, v) in edge && !(v in seen)) {
							seen[v] = 1
							todo[++n] = v
						}
				}
				return 0
			}
			{ a = mod($1); b = mod($2) }
			a != b { edge[a, b] = 1; node[a] = node[b] = 1; hit[++k] = $0; from[k] = a; to[k] = b }
			END { for (i = 1; i <= k; i++) if (reaches(to[i], from[i])) print hit[i] }')"
}

# never_includes FILE HEADER: FILE does not include HEADER (paths from the top).
never_includes() {
	report "$1 does not include $2" \
		"$(printf '%s\n' "$all_edges" | grep -E "^$1:[0-9]+	$2\$" || true)"
}

# private_to FOLDER HEADER: outside FOLDER/, nothing includes FOLDER/HEADER.
private_to() {
	report "$1/$2 is included only from $1/" \
		"$(printf '%s\n' "$all_edges" | grep -vE "^$1/" |
		   grep -E "	$1/$2\$" || true)"
}

# mode_calls: each call of a mode's entry (mode_X_run) from another mode's
# file, as FILE:LINE: calls NAME.
mode_calls() {
	local f

	for f in traceq/mode_*.c; do
		[ -e "$f" ] || continue
		grep -noE 'mode_[a-z0-9_]+_run' "$f" | grep -vE ":$(basename "$f" .c)_run\$" |
			sed "s|^\([0-9]*\):|$f:\1: calls |"
	done
}

forbid agent 'server|traceq'
forbid server 'agent|traceq'
forbid common 'proto|agent|server|sql|arch|lib|traceq'
forbid proto 'agent|server|sql|arch|traceq'
forbid arch 'common|proto|agent|server|sql|lib|traceq'
forbid lib 'proto|agent|server|sql|traceq'
only traceq 'common|proto'
report "traceq/modes.h is included only by traceq/traceq.c and traceq/mode_*.c" \
	"$(printf '%s\n' "$all_edges" | grep -E '	traceq/modes\.h$' |
	   grep -vE '^(traceq/traceq\.c|traceq/mode_[^/:]*\.c|tests/[^:]*|bench/[^:]*):' || true)"
report "nothing includes a traceq/mode_* file" \
	"$(printf '%s\n' "$all_edges" | grep -E '	traceq/mode_[^/]*$' || true)"
report "traceq's modes call no other mode" "$(mode_calls)"
only_through server/store store.h store_types.h
only_within server/store 'sqlite*' 'sqlite*.h' store_ops.h store_types.h
only_within server/store 'clickhouse*' 'clickhouse*.h' store_ops.h store_types.h
acyclic server/store
forbid server/store 'server/query|server/ingest|server/conn'
forbid server/query 'server/ingest|server/conn'
forbid server/ingest 'server/query|server/conn'
forbid server/conn 'server/query'
only_through server/query queryd.h queryd_tls.h metrics.h
never_includes server/query/queryd.c server/query/queryd_tls.h
only_through server/ingest ingest.h
only_through server/conn conn.h
private_to proto msgpack_dec.h
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
