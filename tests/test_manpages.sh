#!/bin/bash
# tests/test_manpages.sh - the man pages, the example configs and --help say
# the same thing, so that a changed option cannot leave its page behind:
#  * every long option a program's --help lists is a term of its man page's
#    OPTIONS (with its short form when it has one), and every option the
#    page names (its terms and its text, but for options it names of another
#    program: "traceq --drops") is in --help;
#  * the collector's and the agent's config keys are their long options
#    minus the command-line-only ones below: each is a key of their .conf(5)
#    page and of the example config in contrib/ (as "key =" or "#key ="),
#    and neither names a key that is not one; the .conf(5) page names the
#    command-line-only options as such;
#  * every signal, environment variable and exit status --help names is in
#    the man page.
# Needs only the built programs; no root, no daemons.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
failed=0
man=$top_srcdir/man
contrib=$top_srcdir/contrib

# The options that are not config keys (the programs refuse them in a file).
collector_cli_only="config insecure-plain verbose help version"
agent_cli_only="config insecure-plain help version"

# help_longs PROG: the long options --help defines (its option lines), one a line.
help_longs() {
	"$1" --help | sed -n 's/^ \{1,8\}\(-[A-Za-z0-9], \)\{0,1\}--\([a-z][a-z0-9-]*\).*/\2/p' |
		sort -u
}

# help_pairs PROG: "S LONG" for each option with a short form.
help_pairs() {
	"$1" --help | sed -n 's/^ \{1,8\}-\([A-Za-z0-9]\), --\([a-z][a-z0-9-]*\).*/\1 \2/p'
}

# page_terms PAGE: the long options its definition-list terms (lines that
# start with *-) define.
page_terms() {
	grep '^\*-' "$1" | grep -o -- '\*--[a-z][a-z0-9-]*\*' | tr -d '*' | sed 's/^--//' |
		sort -u
}

# page_names PAGE SELF: every --option the page names, but for those named
# after another program's name on the same line (traceq --drops, traceagent
# --no-pushdown): a word that is a program name switches the owner of the
# options that follow it until the end of its *...* span; so do "collector's"
# and "agent's" (the collector's *--query-tls*).
page_names() {
	sed -e 's/\\-/-/g' "$1" | awk -v self="$2" '
	{
		n = split($0, w, /[ \t(),;]+/)
		owner = self
		for (i = 1; i <= n; i++) {
			t = w[i]
			bare = t; gsub(/[*_`]/, "", bare)
			if (bare ~ /^(traceq|traceagent|tracecollectd|tracecollect-certs)$/)
				owner = bare
			if (bare ~ /^collector.s$/) owner = "tracecollectd"
			if (bare ~ /^agent.s$/) owner = "traceagent"
			if (bare ~ /^--[a-z][a-z0-9-]*/ && owner == self) {
				sub(/^--/, "", bare); sub(/[^a-z0-9-].*$/, "", bare)
				sub(/-+$/, "", bare)
				if (bare != "") print bare
			}
			if (t ~ /[a-z0-9]\*$/ || t ~ /\*[.:]?$/) owner = self
		}
	}' | sort -u
}

# conf_page_keys PAGE: the keys its terms define (*key* = ...).
conf_page_keys() {
	grep '^\*[a-z]' "$1" | grep -o '\*[a-z][a-z0-9-]*\* =' | tr -d '*=' | tr -d ' ' | sort -u
}

# conf_file_keys FILE: the keys an example config sets or shows commented out.
conf_file_keys() {
	sed -n 's/^#\{0,1\}\([a-z][a-z0-9-]*\) = .*/\1/p' "$1" | sort -u
}

# same WHAT WANT GOT: each of WANT is in GOT and the other way round.
same() {
	local missing extra
	missing=$(comm -23 <(echo "$2" | sort -u) <(echo "$3" | sort -u) | tr '\n' ' ')
	extra=$(comm -13 <(echo "$2" | sort -u) <(echo "$3" | sort -u) | tr '\n' ' ')
	check "$1: none missing${missing:+ (missing: $missing)}" '[ -z "$missing" ]'
	check "$1: none unknown${extra:+ (unknown: $extra)}" '[ -z "$extra" ]'
}

# within WHAT WANT GOT: each of WANT is in GOT.
within() {
	local missing
	missing=$(comm -23 <(echo "$2" | sort -u) <(echo "$3" | sort -u) | tr '\n' ' ')
	check "$1${missing:+ (missing: $missing)}" '[ -z "$missing" ]'
}

# check_program NAME BINARY: the man page NAME.N.scd against BINARY --help.
check_program() {
	local prog=$1 bin=$2 page longs terms names pairs s l sigs envs st
	page=$(ls "$man/$prog".[18].scd)
	"$bin" --help >/dev/null || { fail "$prog --help"; return; }
	longs=$(help_longs "$bin")
	terms=$(page_terms "$page")
	names=$(page_names "$page" "$prog")
	check "$prog --help lists options" '[ "$(echo "$longs" | wc -l)" -gt 5 ]'
	same "$prog: --help's options are ${page##*/}'s OPTIONS" "$longs" "$terms"
	within "$prog: every option ${page##*/} names is in --help" "$names" "$longs"
	pairs=$(help_pairs "$bin" | while read -r s l; do
		grep -q "^\*-$s\*, \*--$l\*" "$page" || echo "-$s/--$l"; done)
	check "$prog: short forms as in --help${pairs:+ (not so: $pairs)}" '[ -z "$pairs" ]'
	sigs=$("$bin" --help | grep -o 'SIG[A-Z0-9]*' | sort -u)
	within "$prog: the signals --help names are in ${page##*/}" "$sigs" \
		"$(grep -o 'SIG[A-Z0-9]*' "$page" | sort -u)"
	envs=$("$bin" --help | grep -o '\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b' |
		grep -v '^SCHED_\|^CLOCK_' | sort -u)
	within "$prog: the environment --help names is in ${page##*/}" "$envs" \
		"$(sed 's/\\_/_/g' "$page" | grep -o '\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b' | sort -u)"
	for st in 0 1 2; do
		check "$prog: exit status $st in ${page##*/}" \
			"sed -n '/^# EXIT STATUS/,/^# /p' '$page' | grep -q '^\*$st\*'"
	done
}

# check_conf NAME BINARY CLI_ONLY: NAME.conf.5.scd and contrib/NAME.conf.
check_conf() {
	local prog=$1 bin=$2 keys o page=$man/$1.conf.5.scd
	keys=$(help_longs "$bin" | grep -vxF -f <(tr ' ' '\n' <<< "$3"))
	same "$prog: config keys are ${page##*/}'s KEYS" "$keys" "$(conf_page_keys "$page")"
	same "$prog: config keys are in contrib/$prog.conf" "$keys" \
		"$(conf_file_keys "$contrib/$prog.conf")"
	for o in $3; do
		check "$prog: ${page##*/} names --$o as command line only" \
			"grep -q -- '\*--$o\*\|\*$o\*' '$page'"
	done
}

[ "${1:-}" = names ] && { page_names "$2" "$3"; exit; }
check_program tracecollectd "$top_builddir/tracecollectd"
check_program traceagent "$top_builddir/traceagent"
check_program traceq "$top_builddir/traceq/traceq"
check_conf tracecollectd "$top_builddir/tracecollectd" "$collector_cli_only"
check_conf traceagent "$top_builddir/traceagent" "$agent_cli_only"

# The checker itself: a page that lacks an option, and one that names an
# option that does not exist, must fail it.
probe=$(mktemp -d /tmp/tc-manprobe.XXXXXX)
trap 'rm -rf "$probe"' EXIT
grep -v '^\*--listen\*' "$man/tracecollectd.8.scd" > "$probe/tracecollectd.8.scd"
check "checker: a page without --listen misses it" \
	"page_terms '$probe/tracecollectd.8.scd' | grep -vqx listen && \
	 ! page_terms '$probe/tracecollectd.8.scd' | grep -qx listen"
printf '*--no-such-option*\n\tx\n\nSee *traceq --drops*.\n' > "$probe/x.8.scd"
check "checker: a page naming --no-such-option is caught, traceq --drops is not its" \
	"[ \"\$(page_names '$probe/x.8.scd' tracecollectd)\" = no-such-option ]"

[ "$failed" = 0 ] && echo PASS || echo FAIL
exit "$failed"
