#!/bin/sh
# SPDX-License-Identifier: MIT
# --snapshot: the first screen drawn off screen (no terminal) and written as
# SVG and text.  An independent parser (Python's xml.etree) reads the SVG
# and finds the figure's labels in its text elements, in the cells'
# colours; the text file is the same screen.  Skipped without python3.
# make check sets $SHARDLAB.
set -u
bin=${SHARDLAB:?}
command -v python3 >/dev/null 2>&1 || {
	echo "SKIP: python3 is not installed (Debian package python3); this test parses the SVG with it"
	exit 77
}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0
fail() {
	echo "FAIL $1"
	fails=$((fails + 1))
}
# A fixed size, the locale of the screen tests, no learner's state touched.
export LINES=30 COLUMNS=100 LANG=C.UTF-8 LC_ALL=C.UTF-8
export XDG_STATE_HOME="$dir/state" HOME="$dir/home"
mkdir -p "$HOME"

# svg_has FILE [--colour RRGGBB GLYPH] WORD...: the SVG parses, its root
# is <svg>, and every WORD is in one of its <text> elements (and, with
# --colour, some text element of that fill holds GLYPH).
svg_has() {
	python3 - "$@" <<'EOF'
import sys
import xml.etree.ElementTree as ET

path, args = sys.argv[1], sys.argv[2:]
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(path).getroot()
if root.tag != ns + "svg":
    sys.exit("%s: the root is %s, not svg" % (path, root.tag))
texts = [(t.get("fill"), "".join(t.itertext())) for t in root.iter(ns + "text")]
if args[:1] == ["--colour"]:
    fill, glyph, args = "#" + args[1], args[2], args[3:]
    if not any(f == fill and glyph in s for f, s in texts):
        sys.exit("%s: no text of fill %s holds %r" % (path, fill, glyph))
for word in args:
    if not any(word in s for _, s in texts):
        sys.exit("%s: no text element holds %r" % (path, word))
EOF
}

# compare's side-by-side screen: the devices' labels of three layouts, the
# compute glyph in compute's colour (xterm colour 41).  Each layout runs
# communication on a lane of its own under the compute's (overlap is on by
# default), so at 30 lines the rows sum two devices each.
if "$bin" compare --side-by-side --steps=1 --snapshot="$dir/sbs.svg" >"$dir/out" 2>"$dir/err"; then
	svg_has "$dir/sbs.svg" --colour 00d75f "█" "dev 0-1" "dev 2-3" "↳" tp=4 pp=4 dp=4 \
		"memory per device" || fail "compare --side-by-side --snapshot: the SVG"
	[ "$(wc -l <"$dir/sbs.svg.txt")" -eq 30 ] || fail "the text snapshot is not 30 lines"
	grep -q "^dev 2-3 " "$dir/sbs.svg.txt" || fail "the text snapshot has no 'dev 2-3' row"
	[ -s "$dir/out" ] && fail "--snapshot printed on stdout: $(cat "$dir/out")"
else
	fail "compare --side-by-side --snapshot: status $?: $(cat "$dir/err")"
fi

# Monochrome: the same labels, no colour of compute's.
if "$bin" compare --side-by-side --steps=1 --no-color --snapshot="$dir/mono.svg" 2>"$dir/err"; then
	svg_has "$dir/mono.svg" "dev 0" tp=4 || fail "--no-color: the SVG"
	grep -q '#00d75f' "$dir/mono.svg" && fail "--no-color: the SVG has compute's colour"
else
	fail "compare --no-color --snapshot: $(cat "$dir/err")"
fi

# A name ending in .txt: the text only.
if "$bin" compare --side-by-side --steps=1 --snapshot="$dir/only.txt" 2>"$dir/err"; then
	grep -q "^dev 0-1 " "$dir/only.txt" || fail "--snapshot=only.txt: no 'dev 0-1' row"
	[ -e "$dir/only.txt.txt" ] && fail "--snapshot=only.txt also wrote only.txt.txt"
else
	fail "compare --snapshot=only.txt: $(cat "$dir/err")"
fi

# The sandbox's first screen: its devices panel and timeline.
if "$bin" sandbox --m=256 --k=1024 --n=1024 --snapshot="$dir/sandbox.svg" 2>"$dir/err"; then
	svg_has "$dir/sandbox.svg" "Devices (4)" "Timeline" "compute" || fail "sandbox --snapshot"
else
	fail "sandbox --snapshot: $(cat "$dir/err")"
fi

# A lesson's first screen, and the learner's place left alone.
if "$bin" lesson 01 --snapshot="$dir/lesson.svg" 2>"$dir/err"; then
	svg_has "$dir/lesson.svg" "One device, one matrix multiply" || fail "lesson --snapshot"
	[ -n "$(find "$dir/state" "$HOME" -type f 2>/dev/null)" ] &&
		fail "lesson --snapshot kept progress: $(find "$dir/state" "$HOME" -type f)"
else
	fail "lesson --snapshot: $(cat "$dir/err")"
fi

# A file that cannot be written: status 1 and one line saying so.
"$bin" compare --side-by-side --steps=1 --snapshot="$dir/none/x.svg" >/dev/null 2>"$dir/err"
st=$?
if [ $st -ne 1 ] || [ "$(wc -l <"$dir/err")" -ne 1 ] || ! grep -q "cannot write the snapshot" "$dir/err"; then
	fail "an unwritable snapshot: status $st, stderr: $(cat "$dir/err")"
fi
# --snapshot is for the side-by-side screen, not compare's table.
"$bin" compare --snapshot="$dir/t.svg" >/dev/null 2>"$dir/err"
[ $? -eq 2 ] || fail "compare --snapshot without --side-by-side is no usage error"

[ $fails -eq 0 ] && echo "ok: snapshots parse and hold their labels"
[ $fails -eq 0 ]
