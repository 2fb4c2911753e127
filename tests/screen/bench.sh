#!/bin/sh
# SPDX-License-Identifier: MIT
# The interactive view's costs, measured through tmux (for make bench):
#   - time from launch to the first complete frame (target < 200 ms),
#   - CPU while paused for 10 s, at time zero and in the middle of a live
#     run (target < 1% of a core: it must block on input),
#   - CPU of the UI thread while animating at the default frame rate
#     (target < 10% of a core; device threads, which really compute and
#     copy, are reported apart).
# Usage: tests/screen/bench.sh [SHARDLAB]; prints "name value unit" lines.
set -u
here=$(cd "$(dirname "$0")" && pwd)
SHARDLAB=${1:-${SHARDLAB:-$here/../../shardlab}}
command -v tmux >/dev/null 2>&1 || {
	echo "tui-bench skipped: tmux is not installed"
	exit 0
}
work=$(mktemp -d "${TMPDIR:-/tmp}/shardlab-bench.XXXXXX")
sock="shardlab-bench-$$"
tm() { tmux -L "$sock" -f /dev/null "$@"; }
trap 'tm kill-server >/dev/null 2>&1; rm -rf "$work"' EXIT INT TERM
hz=$(getconf CLK_TCK)
env_="TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 OPENBLAS_NUM_THREADS=1"
env_="$env_ OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto}"

now() { date +%s.%N; }
# CPU ticks (user + system) of a process or of one of its threads.
ticks() { awk '{ print $14 + $15 }' "$1" 2>/dev/null || echo 0; }
pct() { awk -v t="$1" -v s="$2" -v hz="$hz" 'BEGIN { printf "%.2f", 100 * t / hz / s }'; }
at_rest() {
	i=0
	while [ $i -lt 1200 ]; do
		tm capture-pane -p -t "$1" | head -n 1 | grep -q 'paused' && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}
launch() { # NAME ARGS: start the view, wait for its pid
	rm -f "$work/$1.pid" "$work/$1.stats"
	tm new-session -d -s "$1" -x 100 -y 30 \
		"$env_ SHARDLAB_TUI_STATS=$work/$1.stats sh -c 'echo \$\$ >$work/$1.pid; exec $SHARDLAB sandbox $2'"
	while [ ! -s "$work/$1.pid" ]; do sleep 0.01; done
	cat "$work/$1.pid"
}

# First frame: from launching the program (tmux adds a few ms) to the first
# complete frame on screen (it shows the scenario; the plan's figures follow).
best=""
for i in 1 2 3 4 5; do
	t0=$(now)
	launch ff$i "" >/dev/null
	while ! grep -q first_frame_realtime "$work/ff$i.stats" 2>/dev/null; do sleep 0.01; done
	ms=$(awk -v a="$t0" '/first_frame_realtime/ { printf "%.0f", ($2 - a) * 1000 }' "$work/ff$i.stats")
	ex=$(awk '/first_frame_since_exec_s/ { printf "%.0f", $2 * 1000 }' "$work/ff$i.stats")
	echo "tui-first-frame-run$i $ms ms from launch through tmux, $ex ms from exec (10 ms ticks)"
	if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
	tm kill-session -t ff$i
done
echo "tui-first-frame-best $best ms"

# Wait until the process has used no CPU for 2 s in a row (the live run's
# devices, which lag behind the screen while they really compute, caught
# up), at most 60 s.
quiet() {
	i=0
	last=$(ticks /proc/$1/stat)
	calm=0
	while [ $i -lt 60 ] && [ $calm -lt 2 ]; do
		sleep 1
		cur=$(ticks /proc/$1/stat)
		if [ "$cur" = "$last" ]; then calm=$((calm + 1)); else calm=0; fi
		last=$cur
		i=$((i + 1))
	done
}
idle10() { # PID LABEL: CPU of the process and of its UI thread over 10 s
	a=$(ticks /proc/$1/stat)
	u=$(ticks /proc/$1/task/$1/stat)
	sleep 10
	b=$(ticks /proc/$1/stat)
	v=$(ticks /proc/$1/task/$1/stat)
	echo "tui-cpu-$2 $(pct $((b - a)) 10) % (UI thread $(pct $((v - u)) 10) %)"
}
# Paused at time zero, the plan done.
pid=$(launch idle "")
at_rest idle
quiet "$pid"
idle10 "$pid" paused-at-start
# Paused in the middle of the live run (devices held at a breakpoint).
tm send-keys -t idle Right
sleep 0.2
at_rest idle
tm send-keys -t idle Right
sleep 0.2
at_rest idle
quiet "$pid"
idle10 "$pid" paused-mid-run
tm kill-session -t idle

# Animating the default scenario at the automatic speed (about 4 s): the UI
# thread alone, and the whole process (device threads really compute).
pid=$(launch anim "")
at_rest anim
tm send-keys -t anim Space
sleep 0.5
a=$(ticks /proc/$pid/task/$pid/stat)
p=$(ticks /proc/$pid/stat)
sleep 3
b=$(ticks /proc/$pid/task/$pid/stat)
q=$(ticks /proc/$pid/stat)
echo "tui-cpu-animating-ui-thread $(pct $((b - a)) 3) %"
echo "tui-cpu-animating-process $(pct $((q - p)) 3) %"
at_rest anim
tm send-keys -t anim q
sleep 0.5
awk '/^frames/ { print "tui-frames-drawn " $2 " frames" }' "$work/anim.stats"
