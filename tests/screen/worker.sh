#!/bin/sh
# SPDX-License-Identifier: MIT
# A lesson's run on its screen: executed once (the screen animates the trace
# of the lesson's own run, it does not run it again), on a worker thread, so
# q answers while it computes and cancels it.
#
# The program reports, under SHARDLAB_TUI_STATS, how many runs the lesson
# asked for and how many runs the engine started (sl_cluster_runs_started):
# one product is one run.  The latency case times q against the product's
# own computing time, measured in the same test, with a wide margin (the
# machine is shared): the exit must come well before the run would have
# finished.  The measured latency is printed.
#
# Environment: SHARDLAB (the program); without tmux the tests are skipped
# (exit 77).
set -u

here=$(cd "$(dirname "$0")" && pwd)
harness=worker
# shellcheck source=tests/screen/harness.sh
. "$here/harness.sh"

start() { # NAME LESSON
	mkdir -p "$work/state-$1"
	tm new-session -d -s "$1" -x 100 -y 32 \
		"trap '' INT; env TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 OPENBLAS_NUM_THREADS=1 \
		OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto} XDG_STATE_HOME=$work/state-$1 \
		SHARDLAB_TUI_STATS=$work/$1.stats $SHARDLAB lesson $2; echo EXIT-STATUS \$?; sleep 60"
	tm set-option -t "$1" remain-on-exit on >/dev/null
}
capture() { tm capture-pane -p -t "$1"; }
now() { date +%s.%N; }
# wait_for NAME PATTERN [TENTHS]: the screen shows PATTERN within TENTHS/10 s.
wait_for() {
	n=0
	while ! capture "$1" | grep -q -e "$2" && [ $n -lt "${3:-600}" ]; do
		sleep 0.1
		n=$((n + 1))
	done
	capture "$1" | grep -q -e "$2"
}
# wait_gone NAME PATTERN: the screen no longer shows PATTERN (polled every
# 10 ms, for timing), within 300 s (a shared machine can be slow: the
# status line counts the seconds meanwhile); sets gone_at, the first
# capture without it.  A capture can land in the middle of a frame that
# repaints the whole screen, rows not yet drawn: so PATTERN must still be
# absent a moment later.  (Taking one such half-drawn capture for the end,
# then failing on the next, was worker.sh's "still working after 300 s",
# said 4 s into a run that had ended.)
wait_gone() {
	end=$(($(date +%s) + 300))
	while [ "$(date +%s)" -lt $end ]; do
		if ! capture "$1" | grep -q -e "$2"; then
			gone_at=$(now)
			sleep 0.3
			capture "$1" | grep -q -e "$2" || return 0
		fi
		sleep 0.01
	done
	return 1
}
stat_of() { sed -n "s/^$2 //p" "$work/$1.stats" 2>/dev/null; }
# diagnose NAME: when a case times out, what the program was doing: its
# screen, then each thread's state and, with gdb, its stack.
diagnose() {
	capture "$1"
	shell=$(tm list-panes -t "$1" -F '#{pane_pid}' 2>/dev/null)
	for pid in $(pgrep -P "$shell" 2>/dev/null); do
		echo "-- process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
		for t in /proc/"$pid"/task/*; do
			echo "thread ${t##*/}: $(cut -d' ' -f3 "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
		done
		# The loop's own count of frames, and when it drew the last
		# one (CLOCK_MONOTONIC, as the line after it).
		command -v gdb >/dev/null 2>&1 &&
			timeout 60 gdb -p "$pid" -batch -ex 'thread apply all bt' \
				-ex 'print sl_loop_stat' 2>/dev/null |
			grep -E '^(Thread|#|\$)'
		command -v python3 >/dev/null 2>&1 &&
			python3 -c 'import time; print("monotonic now", time.monotonic())'
		echo "bytes the program wrote: $(sed -n 's/^wchar: //p' "/proc/$pid/io" 2>/dev/null)"
	done
	# Output the program wrote that tmux has not read (a stale screen
	# with bytes waiting is tmux's or the kernel's, not the program's).
	spid=$(tm display -p -t "$1" '#{pid}' 2>/dev/null)
	pts=$(tm display -p -t "$1" '#{pane_tty}' 2>/dev/null)
	command -v python3 >/dev/null 2>&1 && [ -n "$spid" ] && [ -n "$pts" ] &&
		python3 - "$spid" "${pts##*/}" <<'EOF' 2>&1
import array, ctypes, fcntl, os, sys, termios
spid, idx = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
for fd in os.listdir(f"/proc/{spid}/fd"):
    try:
        if not os.readlink(f"/proc/{spid}/fd/{fd}").endswith("ptmx"):
            continue
        if f"tty-index:\t{idx}\n" not in open(f"/proc/{spid}/fdinfo/{fd}").read():
            continue
    except OSError:
        continue
    pidfd = libc.syscall(434, spid, 0)  # pidfd_open
    mine = libc.syscall(438, pidfd, int(fd), 0) if pidfd >= 0 else -1  # pidfd_getfd
    if mine < 0:
        print("tmux's side of the pane:", os.strerror(ctypes.get_errno()))
        break
    n = array.array("i", [0])
    fcntl.ioctl(mine, termios.FIONREAD, n)
    print(f"at least {n[0]} bytes written to the pane and not read by tmux")
EOF
	# A stale screen or a stuck program: Ctrl-L redraws what the program
	# holds.
	tm send-keys -t "$1" C-l
	sleep 2
	echo "-- after Ctrl-L:"
	capture "$1" | tail -n 6
}
# stats NAME: what the program said of itself on the way out.
stats() {
	tm send-keys -t "$1" q q 2>/dev/null
	n=0
	while [ ! -s "$work/$1.stats" ] && [ $n -lt 50 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	echo "-- $1.stats:"
	cat "$work/$1.stats" 2>/dev/null
}

lesson() { # FILE SIZE: a pause, one product of SIZE^3 on 2 devices, a pause
	cat >"$1" <<EOF
title   One run
minutes 1
about   A product, run once.
setup preset=h100 devices=2 strategy=colwise m=$2 k=$2 n=$2
pause Press a key to run the product.
run matmul
pause The run is over: press a key.
EOF
}

# One product: the lesson asks for one run and the engine starts one.
lesson "$work/small.lesson" 256
cases=$((cases + 1))
start small "$work/small.lesson"
if wait_for small 'Press a key to run' && tm send-keys -t small Enter &&
	wait_for small 'The run is over' && sleep 0.5 && tm send-keys -t small q &&
	wait_for small '^EXIT-STATUS 0'; then
	runs=$(stat_of small lesson_runs)
	engine=$(stat_of small cluster_runs)
	if [ "$runs" = 1 ] && [ "$engine" = 1 ]; then
		pass "one-run (the lesson asked for $runs run, the engine started $engine)"
	else
		fail one-run "the lesson asked for '$runs' run(s), the engine started '$engine'"
	fi
else
	fail one-run "the lesson did not run to its end"
	capture small
fi

# A big product: how long its run computes, from the moment the screen says
# "working..." to the moment it stops.
lesson "$work/big.lesson" 4096
cases=$((cases + 1))
start full "$work/big.lesson"
compute=""
if wait_for full 'Press a key to run' && tm send-keys -t full Enter &&
	wait_for full 'working\.\.\.' 100; then
	t0=$(now)
	if wait_gone full 'working\.\.\.'; then
		seen=$gone_at
		compute=$(awk -v a="$t0" -v b="$seen" 'BEGIN { printf "%.2f", b - a }')
		# The program's own times: when the run started and when its
		# end went to the screen.  A screen that showed the end much
		# later is a terminal that fell behind: the latency cases then
		# compare with the program's computing time, not the screen's.
		tm send-keys -t full q q 2>/dev/null
		n=0
		while [ -z "$(stat_of full run_shown_realtime)" ] && [ $n -lt 100 ]; do
			sleep 0.1
			n=$((n + 1))
		done
		ran=$(awk -v a="$(stat_of full run_started_realtime)" -v b="$(stat_of full run_shown_realtime)" \
			'BEGIN { if (a > 0 && b > a) printf "%.2f", b - a }')
		late=$(awk -v s="$seen" -v b="$(stat_of full run_shown_realtime)" \
			'BEGIN { if (b > 0) printf "%.2f", s - b }')
		if [ -n "$late" ] && awk -v l="$late" 'BEGIN { exit !(l > 1) }'; then
			echo "note big-run: the screen showed the run's end $late s after the program drew it"
			[ -n "$ran" ] && compute=$ran
		fi
		pass "big-run (computes for $compute s; the program says ${ran:-?} s)"
	else
		fail big-run "still working after 300 s"
		diagnose full
		stats full
	fi
else
	fail big-run "the run did not start"
	capture full
fi
tm send-keys -t full q q 2>/dev/null

# interrupt NAME KEY: start the big lesson in session NAME, run it, and
# well inside its computation send KEY; then wait (polling every 10 ms)
# until the shell says the program ended.  Sets t0 (when KEY went), took
# (seconds to the end) and ms; returns 1 if the run did not start.
interrupt() {
	start "$1" "$work/big.lesson"
	wait_for "$1" 'Press a key to run' && tm send-keys -t "$1" Enter &&
		wait_for "$1" 'working\.\.\.' 100 || return 1
	sleep 0.5
	t0=$(now)
	tm send-keys -t "$1" "$2"
	n=0
	while ! capture "$1" | grep -q -e '^EXIT-STATUS' -e 'Pane is dead' && [ $n -lt 12000 ]; do
		sleep 0.01
		n=$((n + 1))
	done
	t1=$(now)
	took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }')
}
# before_run: took is under a quarter of the run's computing time.
before_run() { awk -v t="$took" -v c="$compute" 'BEGIN { exit !(t * 4 < c) }'; }

# q while it computes: the terminal is given back (the program's wall clock
# at that moment, in its stats) and the program gone (the shell's
# EXIT-STATUS on screen) well before the run would have ended.  Both times
# are printed; the first is the program's answer, the second adds the
# process's teardown (its device threads and their matrices) and tmux's
# polling on a shared machine.
cases=$((cases + 1))
if [ -z "$compute" ]; then
	fail q-latency "no computing time to compare with"
elif interrupt quit q; then
	back=$(stat_of quit restored_realtime)
	answer=$(awk -v a="$t0" -v b="${back:-0}" 'BEGIN { printf "%d", (b - a) * 1000 }')
	if ! capture quit | grep -q '^EXIT-STATUS 0$' || [ -z "$back" ]; then
		fail q-latency "no exit status 0 (or no stats) after q"
		capture quit
	elif before_run; then
		pass "q-latency (q to the terminal given back: $answer ms; to the shell: $ms ms; the run computes for $compute s)"
	else
		fail q-latency "q took $took s, the run computes for $compute s"
	fi
else
	fail q-latency "the run did not start"
	capture quit
fi

# Ctrl-C while it computes: the program ends by the signal, the terminal
# restored, as soon.  The shell around it ignores SIGINT (the program sets
# its own handler, then re-raises): a shell that takes the same Ctrl-C
# (dash) may act on it only after its next command, the sleep, which made
# this case fail in about half the runs, 54 s after a program that had
# ended within 100 ms.
cases=$((cases + 1))
if [ -z "$compute" ]; then
	fail ctrl-c "no computing time to compare with"
elif interrupt intr C-c; then
	if ! capture intr | grep -q -e '^EXIT-STATUS 130$'; then
		fail ctrl-c "not ended by the signal after Ctrl-C"
		capture intr
	elif before_run; then
		pass "ctrl-c (Ctrl-C to the shell: $ms ms)"
	else
		fail ctrl-c "Ctrl-C took $took s, the run computes for $compute s"
	fi
else
	fail ctrl-c "the run did not start"
	capture intr
fi

finish
