#!/bin/sh
# SPDX-License-Identifier: MIT
# One command-line surface, seen on a terminal through tmux: plain
# `shardlab` on a terminal it cannot drive (TERM dumb or unset) prints the
# report as a pipe gets it and says why; the display options go on
# `shardlab` and `lesson`; `lesson` refuses a bad option in the shared
# parser's words.  Environment: SHARDLAB (the program); make check sets
# it.  Without tmux the test is skipped (exit 77).
set -u

here=$(cd "$(dirname "$0")" && pwd)
harness=surface
# shellcheck source=tests/screen/harness.sh
. "$here/harness.sh"

start() { # NAME ENV COMMAND-ARGS: the program, then "EXIT-STATUS n" when it ends
	tm new-session -d -s "$1" -x 120 -y 40 \
		"env $2 LANG=C.UTF-8 OPENBLAS_NUM_THREADS=1 \
		OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto} $SHARDLAB $3; echo EXIT-STATUS \$?; sleep 60"
}
capture() { tm capture-pane -p -J -t "$1"; }
ended() { # NAME: wait for the end (at most 120 s), the screen in $work/NAME.screen
	n=0
	while [ $n -lt 1200 ] && ! capture "$1" | grep -q "EXIT-STATUS"; do
		sleep 0.1
		n=$((n + 1))
	done
	capture "$1" >"$work/$1.screen"
}
expect() { # CASE NAME STATUS PATTERN...: the session's end against them
	case=$1 name=$2 status=$3
	shift 3
	cases=$((cases + 1))
	ended "$name"
	ok=1
	grep -q "EXIT-STATUS $status\$" "$work/$name.screen" || ok=0
	for p in "$@"; do
		grep -Eq "$p" "$work/$name.screen" || ok=0
	done
	if [ $ok = 1 ]; then
		pass "$case"
	else
		fail "$case" "want exit $status and $*:"
		cat "$work/$name.screen"
	fi
}

start dumb "TERM=dumb" ""
expect term-dumb dumb 0 '^shardlab run: ' 'TERM is dumb'
start unset "-u TERM" ""
expect term-unset unset 0 '^shardlab run: ' 'TERM is not set'
start start "TERM=tmux-256color" "lesson --start"
expect lesson-start start 2 "lesson: option '--start' needs a value"
start headless "TERM=tmux-256color" "lesson --headless=yes 01"
expect lesson-headless headless 2 "lesson: option '--headless' takes no value"
# opened CASE NAME PATTERN KEY: the screen shows PATTERN (at most 30 s),
# then KEY leaves with status 0.
opened() {
	n=0 seen=0
	while [ $n -lt 300 ]; do
		if capture "$2" | grep -q "$3"; then
			seen=1
			break
		fi
		sleep 0.1
		n=$((n + 1))
	done
	tm send-keys -t "$2" "$4"
	if [ $seen = 1 ]; then
		expect "$1" "$2" 0
	else
		cases=$((cases + 1))
		fail "$1" "no '$3' on the screen:"
		capture "$2"
	fi
}

# The display options on `shardlab` alone: the menu opens (its first
# lesson shows), q leaves it.
start nocolor "TERM=tmux-256color" "--no-color --ascii"
opened no-color-menu nocolor "01" q
# ... and on `lesson`: its screen opens on the lesson's title; F10 quits.
start lessonnc "TERM=tmux-256color" "lesson --no-color --ascii --high-contrast 01"
opened lesson-display-options lessonnc "One device" F10

finish
