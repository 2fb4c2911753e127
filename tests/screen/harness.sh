# SPDX-License-Identifier: MIT
# harness.sh - what the screen tests share; sourced (not run) by run.sh and
# lessons.sh after they set `here` (their directory) and `harness` (a word
# naming their scratch directory and tmux server).
#
# It checks for tmux (skipped, exit 77, without it) and for the program;
# makes a scratch directory and a private tmux server (never the user's,
# never another test's), both removed on exit; and gives tm, pass, fail,
# compare_golden and finish.  Environment: SHARDLAB (the program),
# SHARDLAB_GOLDEN (the golden directory), GENERATE=1 to rewrite the goldens.

SHARDLAB=${SHARDLAB:-$here/../../shardlab}
GOLDEN=${SHARDLAB_GOLDEN:-$here/../golden}
GENERATE=${GENERATE:-0}

if ! command -v tmux >/dev/null 2>&1; then
	echo "SKIP: tmux is not installed (Debian package tmux); the screen tests need it"
	exit 77
fi
if [ ! -x "$SHARDLAB" ]; then
	echo "FAIL: no program at $SHARDLAB"
	exit 1
fi

# shellcheck disable=SC2154 # harness: set by the script that sources this
work=$(mktemp -d "${TMPDIR:-/tmp}/shardlab-$harness.XXXXXX")
sock="shardlab-$harness-$$"
tm() { tmux -L "$sock" -f /dev/null "$@"; }
cleanup() {
	tm kill-server >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

failures=0
cases=0
pass() { echo "ok   $1"; }
fail() {
	echo "FAIL $1: $2"
	failures=$((failures + 1))
}

# compare_golden NAME FILE: the captured screen FILE against
# $GOLDEN/NAME.txt (or written there, with GENERATE=1).
compare_golden() {
	golden="$GOLDEN/$1.txt"
	if [ "$GENERATE" = 1 ]; then
		cp "$2" "$golden"
		echo "wrote $golden"
		return
	fi
	if [ ! -f "$golden" ]; then
		fail "$1" "no golden file $golden (GENERATE=1 makes it)"
		return
	fi
	if diff -u "$golden" "$2" >"$2.diff"; then
		pass "$1"
	else
		fail "$1" "the screen differs from $golden:"
		cat "$2.diff"
	fi
}

# finish: the summary line, and the exit status of the whole script.
finish() {
	echo "$cases cases, $failures failed"
	[ $failures -eq 0 ]
}
