#!/bin/sh
# SPDX-License-Identifier: MIT
# docs/architecture.md stays a five-minute map: fewer than 2,000 words
# (wc -w), and every path it names under src/, tests/, lessons/, man/,
# docs/, contrib/, bench/ or data/ (src/engine/knobs.c, src/tui/,
# src/tui/view_*.c as a pattern) exists in the source tree, so a file that
# is renamed or removed cannot stay on the map.
# make check exports $srcdir (automake's harness; relative in distcheck).
set -u
top=${srcdir:-$(dirname "$0")/..}
doc=$top/docs/architecture.md
[ -f "$doc" ] || { echo "FAIL: no $doc"; exit 1; }
fails=0

words=$(wc -w <"$doc" | tr -d ' ')
if [ "$words" -ge 2000 ]; then
	echo "FAIL: docs/architecture.md has $words words; keep it under 2,000"
	fails=$((fails + 1))
fi

# Every path that starts one of those directories where a word starts (not
# inside another path: share/shardlab/data/... is no path of the tree).  A
# sentence's final '.' is no part of the name.
paths=$(awk '{
	s = $0
	while (match(s, /(^|[^A-Za-z0-9_.\/-])(src|tests|lessons|man|docs|contrib|bench|data)\/[][A-Za-z0-9_.\/*-]*/)) {
		p = substr(s, RSTART, RLENGTH)
		s = substr(s, RSTART + RLENGTH)
		if (p !~ /^(src|tests|lessons|man|docs|contrib|bench|data)\//)
			p = substr(p, 2)
		sub(/\.+$/, "", p)
		print p
	}
}' "$doc" | LC_ALL=C sort -u)

# One name a line; the names are not expanded until they are looked for,
# from the source tree, not from where the test runs.
n=0
nl='
'
IFS=$nl
set -f
for p in $paths; do
	n=$((n + 1))
	# A name with * or [...] is a pattern: at least one file must match.
	found=0
	set +f
	for f in "$top"/$p; do
		[ -e "$f" ] && found=1 && break
	done
	set -f
	if [ "$found" = 0 ]; then
		echo "FAIL: docs/architecture.md names $p, which is not in the source tree"
		fails=$((fails + 1))
	fi
done
set +f
unset IFS

[ "$fails" = 0 ] || exit 1
echo "PASS: docs/architecture.md: $words words, $n paths, each in the tree"
