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
# The server's socket lives in the scratch directory, so it goes with it.
sock="$work/tmux.sock"
tm() { tmux -S "$sock" -f /dev/null "$@"; }
# Stop the server, wait for the programs it ran to end (they write their
# progress on the way out), then remove the scratch directory.
cleanup() {
	pids=$(tm list-panes -a -F '#{pane_pid}' 2>/dev/null)
	tm kill-server >/dev/null 2>&1
	for pid in $pids; do
		n=0
		while kill -0 "$pid" 2>/dev/null && [ $n -lt 100 ]; do
			sleep 0.05
			n=$((n + 1))
		done
		kill -9 "$pid" 2>/dev/null
	done
	n=0
	while ! rm -rf "$work" 2>/dev/null && [ $n -lt 20 ]; do
		sleep 0.1
		n=$((n + 1))
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0
cases=0
pass() { echo "ok   $1"; }
fail() {
	echo "FAIL $1: $2"
	failures=$((failures + 1))
}

# mask FILE: figures that come out of the arithmetic rather than the
# emulated clock, whose last digits depend on the CPU's BLAS kernel (FMA or
# not, AVX2 or AVX-512), become '#', keeping the screen's width: a check's
# error ("err 1.8e-05 (rel 3.7e-07)"), a loss, and the measured side of a
# check on such a figure ("(2.24e-08 < 1e-05)", scientific notation), and
# any other such small difference in scientific notation (a reshard's
# "resumed losses equal one device's to 2.2e-08").
# Emulated times are the model's and stay.  Goldens are stored masked.
mask() {
	sed -E -e 's/(err|rel) [0-9]\.[0-9]e[-+][0-9][0-9]/\1 #.#e###/g' \
		-e '/check (holds|FAILED)/s/\([0-9]\.[0-9][0-9]e[-+][0-9][0-9] /(#.##e### /g' \
		-e ':e' -e 's/([0-9]\.[0-9]*)[0-9](#*e-[0-9][0-9])/\1#\2/' -e 't e' \
		-e 's/[0-9]\.(#+)e-[0-9][0-9]/#.\1e###/g' \
		-e ':l' -e 's/(loss #*\.?#*)[0-9]/\1#/' -e 't l' \
		-e ':m' -e 's/(loss #*)\./\1#/' -e 't m' "$1" |
		# A loss wrapped onto the next row, away from its word.
		sed -E -e ':a' -e 'N' -e '$!ba' \
			-e ':w' -e 's/(loss *│?\n│? *#*\.?#*)[0-9]/\1#/' -e 't w' \
			-e ':x' -e 's/(loss *│?\n│? *#*)\./\1#/' -e 't x' >"$1.masked" &&
		mv "$1.masked" "$1"
}

# compare_golden NAME FILE: the captured screen FILE, masked, against
# $GOLDEN/NAME.txt (or written there, with GENERATE=1).
compare_golden() {
	golden="$GOLDEN/$1.txt"
	mask "$2"
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
