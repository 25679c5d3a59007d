#!/bin/sh
# ring_spin.sh - model-check spin/ring.pml (the ring buffer's reserve /
# claim / commit / reader-swap protocol) with spin; skipped (77) when
# spin or a C compiler is missing.
command -v spin >/dev/null 2>&1 || exit 77
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || exit 77
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cp "${top_srcdir:-.}/spin/ring.pml" "$dir/" && cd "$dir" || exit 1
spin -a ring.pml >spin.log 2>&1 || { cat spin.log; exit 1; }
"$cc" -O2 -DSAFETY -w -o pan pan.c || exit 1
./pan -m200000 >pan.log 2>&1
cat pan.log
grep -q "errors: 0" pan.log
