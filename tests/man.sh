#!/bin/sh
# SPDX-License-Identifier: MIT
# The generated man pages lint clean and render examples whole:
# - mandoc -Tlint reports nothing at WARNING level or above (STYLE notes,
#   such as the KEYS section's long generated lines, are let be);
# - groff -ww warns of nothing;
# - at 80 columns groff hyphenates no word (a line ending in U+2010, the
#   hyphen groff adds), and no line ends inside an option at one of its own
#   hyphens ("--inter-" then "bandwidth=..."), so copied commands work.
# make check sets $SHARDLAB_BUILDDIR; the pages are in its man/.
set -u
mandir=${SHARDLAB_BUILDDIR:?}/man
command -v mandoc >/dev/null || { echo "SKIP: no mandoc (Debian package mandoc)"; exit 77; }
command -v groff >/dev/null || { echo "SKIP: no groff"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
# A signal ends the script through exit, so the EXIT trap still cleans up.
trap 'exit 1' HUP INT PIPE TERM
# Bytes, whatever the locale: U+2010 in UTF-8.
LC_ALL=C
export LC_ALL
hy=$(printf '\342\200\220')
fails=0

for page in shardlab.1 shardlab-lesson.5 shardlab-hardware.5; do
	f=$mandir/$page
	[ -f "$f" ] || { echo "FAIL: $f: not made"; fails=$((fails + 1)); continue; }

	mandoc -Tlint -W warning "$f" >"$dir/lint" 2>&1
	if [ -s "$dir/lint" ]; then
		echo "FAIL: mandoc -Tlint $page:"
		cat "$dir/lint"
		fails=$((fails + 1))
	fi

	groff -man -ww -z "$f" >"$dir/warn" 2>&1
	if [ -s "$dir/warn" ]; then
		echo "FAIL: groff -man -ww $page:"
		cat "$dir/warn"
		fails=$((fails + 1))
	fi

	# Plain text: no SGR, no overstriking.
	if ! groff -man -Tutf8 -rLL=80n -P-c -P-b -P-o -P-u "$f" >"$dir/out" 2>/dev/null; then
		echo "FAIL: groff -Tutf8 $page"
		fails=$((fails + 1))
		continue
	fi
	# A broken line and the next, as the reader sees them.
	awk -v hy="$hy" '
	prev != "" { print prev; print "  | " $0; prev = "" }
	substr($0, length($0) - length(hy) + 1) == hy ||
	$0 ~ /(^|[ \t])--?[A-Za-z0-9][^ \t]*-$/ { prev = NR ": " $0 }
	END { if (prev != "") print prev }' "$dir/out" >"$dir/broken"
	if [ -s "$dir/broken" ]; then
		echo "FAIL: $page at 80 columns breaks a word or an option:"
		cat "$dir/broken"
		fails=$((fails + 1))
	else
		echo "ok: $page: lints clean, $(wc -l <"$dir/out") lines at 80 columns, none broken"
	fi
done
[ "$fails" = 0 ]
