#!/bin/sh
# SPDX-License-Identifier: MIT
# The progress line on a terminal, seen through tmux: `train` shows "train:
# N of M steps, P%, about T left" on stderr while it runs, prints each step's
# row as the step ends (some rows are on the screen before the last step),
# and clears the line at the end; `plan` shows "plan: N of M layout shapes
# timed"; with stderr not a terminal there is no such line at all.
# Environment: SHARDLAB (the program); make check sets it.  Without tmux
# the test is skipped (exit 77).
set -u

here=$(cd "$(dirname "$0")" && pwd)
harness=progress
# shellcheck source=tests/screen/harness.sh
. "$here/harness.sh"

start() { # NAME COMMAND-ARGS: the program, then "EXIT-STATUS n" when it ends
	tm new-session -d -s "$1" -x 120 -y 40 \
		"env TERM=tmux-256color LANG=C.UTF-8 OPENBLAS_NUM_THREADS=1 \
		OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto} $SHARDLAB $2; echo EXIT-STATUS \$?; sleep 60"
}
capture() { tm capture-pane -p -t "$1"; }

# watch NAME PATTERN: poll the screen every 0.1 s until PATTERN shows (0)
# or the program has ended without it (1); at most 120 s.
watch() {
	n=0
	while [ $n -lt 1200 ]; do
		capture "$1" >"$work/$1.screen"
		grep -Eq "$2" "$work/$1.screen" && return 0
		grep -q "EXIT-STATUS" "$work/$1.screen" && return 1
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
ended() { # NAME: wait for the end (at most 300 s); 0 if it exited 0
	n=0
	while [ $n -lt 3000 ] && ! capture "$1" | grep -q "EXIT-STATUS"; do
		sleep 0.1
		n=$((n + 1))
	done
	capture "$1" >"$work/$1.screen"
	grep -q "EXIT-STATUS 0" "$work/$1.screen"
}

# train: 8 steps paced to about 0.8 s each (--slowdown), so the line and
# the rows of the steps done can be seen while the others run.
cases=$((cases + 1))
start train "train --devices=4 --tp=2 --dp=2 --steps=8 --slowdown=2000"
# The line, and with it the rows of the steps already done (not all 8).
shown=0
n=0
while [ $n -lt 3000 ]; do
	capture train >"$work/train.screen"
	rows=$(grep -Ec '^ +[1-8] +[0-9]+\.[0-9]{9} +[0-9]+\.[0-9]{9} ' "$work/train.screen")
	if grep -Eq '^train: [0-9]+ of 8 steps, [0-9]+%, (about [0-9.]+ s left|[0-9.]+ s so far)' \
		"$work/train.screen" && [ "$rows" -ge 1 ] && [ "$rows" -lt 8 ]; then
		shown=1
		break
	fi
	grep -q "EXIT-STATUS" "$work/train.screen" && break
	sleep 0.1
	n=$((n + 1))
done
if [ $shown = 1 ]; then
	pass "train-progress ($rows of 8 step rows shown with the line)"
else
	fail train-progress "never the line with some of the step rows while it ran:"
	cat "$work/train.screen"
fi
cases=$((cases + 1))
if ended train && [ "$(grep -Ec '^ +[1-8] +[0-9]+\.[0-9]{9} ' "$work/train.screen")" = 8 ] &&
	! grep -q '^train: ' "$work/train.screen"; then
	pass "train-end (8 rows, the line cleared)"
else
	fail train-end "want 8 step rows and no progress line at the end:"
	cat "$work/train.screen"
fi

# plan: 1,024 devices, a few seconds of layouts (256 under a sanitizer,
# which makes that a minute).
cases=$((cases + 1))
n=1024 b=256
[ -n "${SHARDLAB_SAN_CFLAGS:-}" ] && n=256 b=64
start plan "plan --devices=$n --devices-per-node=8 --layers=32 --hidden=4096 --ffn=16384 \
--heads=32 --seq=2048 --batch=$b --top=1"
if watch plan '^plan: [0-9]+ of [0-9]+ layout shapes timed'; then
	pass plan-progress
else
	fail plan-progress "no progress line while it planned:"
	cat "$work/plan.screen"
fi
cases=$((cases + 1))
if ended plan && grep -q '^Best: ' "$work/plan.screen" && ! grep -q '^plan: ' "$work/plan.screen"; then
	pass plan-end
else
	fail plan-end "want the plan and no progress line at the end:"
	cat "$work/plan.screen"
fi

# stderr to a file: no progress line in it (the run lasts over a second,
# where a terminal would have had the line after half of one).
cases=$((cases + 1))
start quiet "train --devices=2 --tp=2 --steps=3 --slowdown=1000 2>$work/quiet.err"
if ended quiet && [ ! -s "$work/quiet.err" ]; then
	pass "no-terminal (stderr empty)"
else
	fail no-terminal "stderr to a file got: $(cat "$work/quiet.err")"
fi

finish
