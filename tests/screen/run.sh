#!/bin/sh
# SPDX-License-Identifier: MIT
# Screen tests: shardlab's terminal view driven through tmux.
#
# Each case starts `shardlab sandbox` in a detached tmux session of a fixed
# size (TERM=tmux-256color, a UTF-8 locale), sends keys, waits until the
# screen settles (unchanged for a few polls, paused, nothing planning) and
# compares the pane's text with tests/golden/NAME.txt.  Figures on screen
# are emulated (model timing), so they are the same on every machine.
#
#   GENERATE=1 tests/screen/run.sh     rewrite the golden files
#
# Environment: SHARDLAB (the program), SHARDLAB_GOLDEN (the golden
# directory), SHARDLAB_SIGTHREAD (tests/sigthread, which sends a signal to
# one thread) and SHARDLAB_SAN_CFLAGS (a sanitizer build's flags); make
# check sets them all.  Without tmux the tests are skipped (exit 77).
set -u

here=$(cd "$(dirname "$0")" && pwd)
harness=screen
# shellcheck source=tests/screen/harness.sh
. "$here/harness.sh"

# The environment every case runs in (OpenBLAS as make check sets it).
run_env="TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 OPENBLAS_NUM_THREADS=1"
run_env="$run_env OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto}"

# start NAME COLS ROWS COMMAND: a session running COMMAND (a shell line).
start() {
	tm new-session -d -s "$1" -x "$2" -y "$3" "$4"
	tm set-option -t "$1" remain-on-exit on >/dev/null
}

capture() { tm capture-pane -p -t "$1"; }

# Wait until the view is at rest: its first line says paused (not playing,
# not planning) and two captures in a row are the same; a screen without the
# title (too small) needs three.  Give up after 60 s (a loaded machine plans
# slowly).  The view draws nothing while at rest, so this is final.
settle() {
	name=$1
	prev=""
	same=0
	start_s=$(date +%s)
	while [ $(($(date +%s) - start_s)) -lt 60 ]; do
		cur=$(capture "$name")
		if [ "$cur" = "$prev" ]; then
			same=$((same + 1))
		else
			same=0
		fi
		prev=$cur
		need=2
		case "$(printf '%s\n' "$cur" | head -n 1)" in
		shardlab*paused*) ;;
		"shardlab compare: "*) ;; # side by side: nothing moves
		shardlab*) same=0 ;;
		*) need=3 ;;
		esac
		case "$cur" in
		*measuring*) same=0 ;; # the plot's points still coming
		*planning:*) same=0 ;; # the plan view's layouts still coming
		esac
		[ $same -ge $need ] && return 0
		sleep 0.05
	done
	return 1
}

# check NAME: compare the settled pane of session NAME with its golden file.
check() {
	name=$1
	cases=$((cases + 1))
	if ! settle "$name"; then
		fail "$name" "the screen did not settle"
		capture "$name"
		return
	fi
	capture "$name" >"$work/$name.txt"
	compare_golden "$name" "$work/$name.txt"
}

# keys NAME KEY...: send each key, wait for the screen to react, then for it
# to settle (a step animates to its end) before the next key.
keys() {
	s=$1
	shift
	for k in "$@"; do
		before=$(capture "$s")
		tm send-keys -t "$s" "$k"
		n=0
		while [ "$(capture "$s")" = "$before" ] && [ $n -lt 50 ]; do
			sleep 0.05
			n=$((n + 1))
		done
		settle "$s" || true
	done
}

sb="$SHARDLAB sandbox"
small="--m=256 --k=1024 --n=1024"
fast="--slowdown=20000"

# Every view starts at once (they plan while the others are checked).
start first 100 30 "$run_env $sb $small"
start colwise 100 30 "$run_env $sb $small $fast"
start rowwise 100 30 "$run_env $sb --strategy=rowwise $small $fast"
start help 100 30 "$run_env $sb $small"
start bandwidth 100 30 "$run_env $sb $small $fast"
start small 70 20 "$run_env $sb $small"
start mono 100 30 "$run_env $sb $small $fast --no-color"
start nocolor 100 30 "NO_COLOR=1 $run_env $sb $small $fast"
start ascii 100 30 "$run_env $sb $small $fast --ascii"
start select 100 30 "$run_env $sb $small $fast"
start plot 100 30 "$run_env $sb --m=64 --k=256 --n=256 --flops=100GFLOP/s --bandwidth=10GB/s"
train="--tp=2 --pp=2 --dp=2 --layers=8 --preset=h100 --devices-per-node=4"
start plan 100 30 "$run_env $sb $train"
start plan-open 100 30 "$run_env $sb $train"
two_nodes="--devices=8 --devices-per-node=4 --m=256 --k=2048 --n=2048"
start rowwise-2nodes-end 120 36 "$run_env $sb --strategy=rowwise $two_nodes"
start tree-phases 120 36 "$run_env $sb --strategy=rowwise --algorithm=tree --devices=8 $small $fast"
start plot-80x24 80 24 "$run_env $sb --strategy=rowwise $small"
start matrices-16 120 36 "$run_env $sb --devices=16 --devices-per-node=8 --preset=a100 --m=256 --k=8192 --n=4096 $fast"
# Communication beside compute: two stages of two replicas, the last
# micro-batch's gradient buckets all-reduced on the communication stream
# during the backward pass (links slow enough that the reductions show).
overlap="--dp=2 --pp=2 --microbatches=4 --overlap=on --bucket=64KiB --bandwidth=20GB/s --heads=0"
start overlap-80x24 80 24 "$run_env $sb $overlap"
start overlap-100x30-ascii 100 30 "$run_env $sb $overlap --ascii"
# tp, pp and dp over 4 devices side by side (one step: the figures are
# emulated, no loss is shown); it quits with q.
start side-by-side 100 30 "$run_env $SHARDLAB compare --side-by-side --steps=1; echo \$? >$work/sbs-status"

# The first screen: paused at time zero, the plan done.
check first

# Two steps into a column-wise split: the shards computed, one ring step of
# the all-gather done.
settle colwise
keys colwise Right Right
check colwise

# Four steps into a row-wise split: partial sums combining chunk by chunk.
settle rowwise
keys rowwise Right Right Right Right
check rowwise

# The help, generated from the key table.
settle help
keys help '?'
check help

# Halve the bandwidth before the run, then go to the end: the numbers are
# those of the run with that bandwidth, as `shardlab run` reports them.
settle bandwidth
keys bandwidth '[' End
check bandwidth
cases=$((cases + 1))
# Half the preset's link as the run takes it (its achievable share).
half=$(env $run_env $SHARDLAB run $small --format=json |
	sed -n 's/.*"bandwidth_bytes_per_s": *\([0-9.e+]*\).*/\1/p' | head -n 1 | awk '{ printf "%.17g", $1 / 2 }')
want=$(env $run_env $SHARDLAB run $small --bandwidth="${half}B/s" |
	sed -n 's/^  emulated time *\([0-9.]* [a-z]*s\) .*/\1/p')
shown=$(capture bandwidth | head -n 1 | sed -n 's/.*t \([0-9.]* [a-z]*s\) \/ .*/\1/p')
if [ -n "$want" ] && [ "$want" = "$shown" ]; then
	pass "bandwidth-equals-run ($shown)"
else
	fail "bandwidth-equals-run" "screen shows '$shown', shardlab run reports '$want'"
fi

# Three layouts on one time axis, then its help, then q: the help
# closes, q quits with status 0.  Its three runs come before the screen
# (minutes under a sanitizer): wait for the figure before any key.
n=0
while [ $n -lt 3000 ] && ! capture side-by-side | grep -q 'side by side, one training step'; do
	sleep 0.1
	n=$((n + 1))
done
check side-by-side
keys side-by-side '?'
capture side-by-side >"$work/sbs-help.txt"
cases=$((cases + 1))
if grep -q "Side by side (shardlab compare --side-by-side)" "$work/sbs-help.txt"; then
	pass "side-by-side-help"
else
	fail "side-by-side-help" "? did not open the side-by-side screen's help"
	cat "$work/sbs-help.txt"
fi
keys side-by-side q
tm send-keys -t side-by-side q
cases=$((cases + 1))
n=0
while [ ! -s "$work/sbs-status" ] && [ $n -lt 100 ]; do
	sleep 0.05
	n=$((n + 1))
done
st=$(cat "$work/sbs-status" 2>/dev/null)
if [ "$st" = 0 ]; then
	pass "side-by-side-quit"
else
	fail "side-by-side-quit" "after q the exit status is '$st', want 0"
fi

# Overlap at 80x24, eleven steps back from the end: a bucket's all-reduce
# beside the backward of block 0.  Each device's communication stream is a
# lane under its compute lane; four devices' lanes do not fit, so the
# replicas (whose lanes look the same) share rows.  The lane is there with
# transfers on it, and the sentence names the stream and what it ran beside.
settle overlap-80x24
keys overlap-80x24 End Left Left Left Left Left Left Left Left Left Left Left
check overlap-80x24
cases=$((cases + 1))
if capture overlap-80x24 | grep -Eq '^│ +↳ +(░|▒|▓)' &&
	capture overlap-80x24 | grep -q '^│0,1 ' &&
	capture overlap-80x24 | grep -q '↳ comm lane'; then
	pass "overlap-lane"
else
	fail "overlap-lane" "no communication lane under the replicas' compute lane:"
	capture overlap-80x24
fi
cases=$((cases + 1))
if capture overlap-80x24 | tr '\n' ' ' |
	grep -q 'all-reduce of [0-9.]* [KM]iB on the communication *stream, beside the backward of block 0; none exposed'; then
	pass "overlap-sentence"
else
	fail "overlap-sentence" "the step does not say what the all-reduce ran beside"
fi
# The same at 100x30 in ASCII: the lane's mark has its ASCII glyph.
settle overlap-100x30-ascii
keys overlap-100x30-ascii End Left Left Left Left Left Left Left Left Left Left Left
check overlap-100x30-ascii
cases=$((cases + 1))
if LC_ALL=C grep -q "$(printf '[\200-\377]')" "$work/overlap-100x30-ascii.txt"; then
	fail "overlap-ascii-only" "--ascii draws non-ASCII characters"
elif ! grep -Eq '^\| +\\ +[<>+]' "$work/overlap-100x30-ascii.txt"; then
	fail "overlap-ascii-lane" "no communication lane in ASCII"
else
	pass "overlap-ascii-lane"
fi

# Below 80x24: a clear message instead of a garbled screen.
check small

# Monochrome: --no-color, and NO_COLOR; glyphs and digits carry the meaning.
settle mono
keys mono Right Right
check mono
cases=$((cases + 1))
# Any colour but the terminal's default: 30-37, 40-47, 38;5;N, 48;5;N.
colour_sgr="$(printf '\033')\\[([0-9]+;)*(3[0-7]|4[0-7]|38;5;[0-9]+|48;5;[0-9]+)(;[0-9]+)*m"
if tm capture-pane -p -e -t mono | grep -Eq "$colour_sgr"; then
	fail "mono-no-colour" "--no-color still draws in colour"
else
	pass "mono-no-colour"
fi
settle nocolor
keys nocolor Right Right
cases=$((cases + 1))
if capture nocolor | diff -q - "$work/mono.txt" >/dev/null &&
	! tm capture-pane -p -e -t nocolor | grep -Eq "$colour_sgr"; then
	pass "NO_COLOR"
else
	fail "NO_COLOR" "NO_COLOR=1 does not give the --no-color screen"
fi
# And colour is really there otherwise.
cases=$((cases + 1))
if tm capture-pane -p -e -t colwise | grep -Eq "$colour_sgr"; then
	pass "colour"
else
	fail "colour" "the default screen has no colour"
fi

# The plot at 80x24: an axis label that does not fit inside the frame is
# left out (it was cut to "3.70 TB/" and wrapped over the border).
settle plot-80x24
keys plot-80x24 g
check plot-80x24
cases=$((cases + 1))
if capture plot-80x24 | sed -n 2,21p | grep -q '^[^│┌└]'; then
	fail plot-80x24-frame "a line of the plot starts outside its frame:"
	capture plot-80x24
else
	pass plot-80x24-frame
fi

# Sixteen devices on two nodes at 120x36: the matrices drawn with a cell
# per device's block (it said "too narrow for the matrices").
settle matrices-16
keys matrices-16 End
check matrices-16
cases=$((cases + 1))
if capture matrices-16 | grep -q 'too narrow'; then
	fail matrices-16-drawn "16 devices at 120x36 still too narrow for the matrices"
else
	pass matrices-16-drawn
fi

# ASCII glyphs.
settle ascii
keys ascii Right Right
check ascii
cases=$((cases + 1))
if LC_ALL=C grep -q "$(printf '[\200-\377]')" "$work/ascii.txt"; then
	fail "ascii-only" "--ascii draws non-ASCII characters"
else
	pass "ascii-only"
fi

# Select the first link (after the four devices) and double its bandwidth
# alone: its details, and a plan where the ring steps no longer line up.
settle select
keys select Tab Tab Tab Tab Tab ']'
check select

# The plot of speedup against bandwidth: the model's curve, the engine's
# points (all measured before the screen settles), the step times.
settle plot
keys plot g
check plot

# The plan of the training model shown (P): every layout on these 8 devices
# in two nodes, ranked; sorting by peak memory puts the leanest first.
settle plan
keys plan P
check plan
keys plan s s
cases=$((cases + 1))
# The first row's peak memory is the least of the rows shown.
leanest() {
	awk '/^│ +[0-9]+ tp=/ && match($0, /[0-9.]+ [KMG]iB/) {
		split(substr($0, RSTART, RLENGTH), f, " ")
		v = f[1] * (f[2] == "GiB" ? 1073741824 : f[2] == "MiB" ? 1048576 : 1024)
		if (n++ == 0) first = v
		else if (v < first) bad = 1
	} END { exit !(n > 1 && !bad) }'
}
if capture plan | grep -q 'by peak memory' && capture plan | leanest; then
	pass "plan-sorted"
else
	fail "plan-sorted" "s s does not sort by peak memory"
fi
# A row-wise product over two nodes, at its end: the ring's devices fell
# out of step (the inter-node hop is slower), and still every device holds
# all of Y, summed, as the engine's buffers do.
settle rowwise-2nodes-end
keys rowwise-2nodes-end End
check rowwise-2nodes-end

# A binomial-tree all-reduce: after the compute and two levels of the
# reduce, the sentence names the phase and counts its levels.
settle tree-phases
keys tree-phases Right Right Right
check tree-phases

# The third layout opened (Enter): the main view runs one step of it, in
# the time the plan gave it.
settle plan-open
keys plan-open P Down Down
row=$(capture plan-open | sed -n 's/^│ *3 .* \([0-9.]* [a-z]*s\) .*/\1/p')
keys plan-open Enter
check plan-open
cases=$((cases + 1))
shown=$(capture plan-open | head -n 1 | sed -n 's/.*t 0 s \/ \([0-9.]* [a-z]*s\) .*/\1/p')
if [ -n "$row" ] && [ "$row" = "$shown" ]; then
	pass "plan-open-equals-plan ($shown)"
else
	fail "plan-open-equals-plan" "the plan gave '$row', the opened layout takes '$shown'"
fi

# Quitting: q and F10 mid-transfer, and the signals.  The shell around the program
# records its exit status and the terminal modes before and after.
quit_case() {
	name=$1
	how=$2
	want=$3
	cases=$((cases + 1))
	d="$work/$name"
	mkdir -p "$d"
	# A slow run: one ring step lasts seconds, so q lands mid-transfer.
	start "$name" 100 30 "stty -g >$d/before; $run_env sh -c 'echo \$\$ >$d/pid; exec $sb $small --slowdown=1000000 --play'; echo \$? >$d/status; stty -g >$d/after; echo SHELL-IS-BACK; sleep 30"
	# Wait for a transfer in flight (a device receiving).
	n=0
	while ! capture "$name" | grep -q 'recv'; do
		n=$((n + 1))
		if [ $n -gt 900 ]; then
			fail "$name" "no transfer started"
			return
		fi
		sleep 0.1
	done
	pid=$(cat "$d/pid")
	t0=$(date +%s%N)
	case "$how" in
	q | F10) tm send-keys -t "$name" "$how" ;;
	main-*)
		if ! "$sigthread" "$pid" "${how#main-}"; then
			fail "$name" "$sigthread could not send SIG${how#main-} to $pid"
			return
		fi
		;;
	*) kill -s "$how" "$pid" ;;
	esac
	n=0
	while [ ! -s "$d/after" ]; do
		n=$((n + 1))
		if [ $n -gt 100 ]; then
			fail "$name" "still running 10 s after $how"
			return
		fi
		sleep 0.1
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	status=$(cat "$d/status")
	if [ "$status" != "$want" ]; then
		fail "$name" "exit status $status, want $want"
	elif ! cmp -s "$d/before" "$d/after"; then
		fail "$name" "the terminal modes were not restored"
	elif ! capture "$name" | grep -q SHELL-IS-BACK; then
		fail "$name" "the shell's screen did not come back"
	elif [ $ms -gt "$quit_ms" ]; then
		fail "$name" "took $ms ms to quit (limit $quit_ms ms)"
	else
		pass "$name (exit $status in $ms ms)"
	fi
}
# Prompt: 2 s from the key or signal to the shell's prompt, everything
# included.  Sanitizer builds run several times slower (TSan's own exit
# takes about a second), so they get 10 s.
quit_ms=2000
[ -n "${SHARDLAB_SAN_CFLAGS:-}" ] && quit_ms=10000
quit_case quit-q q 0
quit_case quit-f10 F10 0
quit_case quit-int INT 130
quit_case quit-term TERM 143
# A crash: SIGSEGV sent to the main thread (thread-directed, as a fault
# is), and from kill, to whichever thread the kernel picks, in every build
# but ThreadSanitizer's.  There a process-wide SIGSEGV that landed on a
# thread being started or ended (the sandbox's planner starts and ends a
# cluster's threads while the live run plays) killed the process before
# shardlab's handler ran: 6 of 150 times in a 15-line program that starts
# and joins threads in a loop, none without TSan, none sent to one thread.
if [ -n "${SHARDLAB_SIGTHREAD:-}" ]; then
	sigthread=$SHARDLAB_SIGTHREAD
	quit_case quit-segv-main main-SEGV 139
else
	# run by hand: the in-tree helper if it is built
	sigthread=$here/../sigthread
	if [ -x "$sigthread" ]; then
		quit_case quit-segv-main main-SEGV 139
	else
		echo "skip quit-segv-main: no tests/sigthread (make tests/sigthread builds it)"
	fi
fi
case "${SHARDLAB_SAN_CFLAGS:-}" in
*-fsanitize=thread*)
	echo "skip quit-segv-kill: under ThreadSanitizer a process-wide SIGSEGV can kill the process before its handler runs"
	;;
*) quit_case quit-segv-kill SEGV 139 ;;
esac

finish
