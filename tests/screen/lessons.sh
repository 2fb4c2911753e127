#!/bin/sh
# SPDX-License-Identifier: MIT
# Screen tests of the lessons: the menu (shardlab with no command) and the
# first steps of lesson 2, driven through tmux and compared with
# tests/golden/lesson-*.txt.  Figures on screen are emulated (model timing),
# so they are the same on every machine.
#
#   GENERATE=1 tests/screen/lessons.sh     rewrite the golden files
#
# Environment: SHARDLAB (the program), SHARDLAB_GOLDEN (the golden
# directory), SHARDLAB_LESSON_PATH (the course); make check sets them.
# LESSONS_PART: core (the default: the menu, lesson 2's first steps, the
# help, the keys), wide (the panels at 120x36 and the projector's sizes,
# which tests/screen/lessons-wide.sh runs beside it), or all.
# Without tmux the tests are skipped (exit 77).
set -u
part=${LESSONS_PART:-core}

here=$(cd "$(dirname "$0")" && pwd)
LESSONS=${SHARDLAB_LESSON_PATH:-$here/../../lessons}
harness=lessons-$part
# shellcheck source=tests/screen/harness.sh
. "$here/harness.sh"

# Every case gets its own state directory: no progress, no resume.
# With COLS and ROWS, the shell around the program then prints its exit
# status (see ended).
start() { # NAME COMMAND-ARGS [COLS ROWS]
	mkdir -p "$work/state-$1"
	after=""
	[ $# -gt 2 ] && after="; echo EXIT-STATUS \$?; sleep 60"
	tm new-session -d -s "$1" -x "${3:-100}" -y "${4:-32}" \
		"env TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 OPENBLAS_NUM_THREADS=1 \
		OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto} XDG_STATE_HOME=$work/state-$1 \
		SHARDLAB_LESSON_PATH=$LESSONS $SHARDLAB $2$after"
	tm set-option -t "$1" remain-on-exit on >/dev/null
}

capture() { tm capture-pane -p -t "$1"; }

# At rest: alike for 0.6 s (seven captures 0.1 s apart), the scenario
# view (when shown) neither playing nor planning, and the lesson not
# working (its engine runs hold the screen, which says "working..."
# meanwhile).  Give up after 90 s: a loaded machine plans slowly.
settle() {
	prev=""
	same=0
	i=0
	while [ $i -lt 900 ]; do
		cur=$(capture "$1")
		if [ -n "$cur" ] && [ "$cur" = "$prev" ] &&
			! printf '%s\n' "$cur" | head -n 1 | grep -q -e playing -e planning &&
			! printf '%s\n' "$cur" | tail -n 1 | grep -q 'working\.\.\.'; then
			same=$((same + 1))
			[ $same -ge 6 ] && return 0
		else
			same=0
		fi
		prev=$cur
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

check() { # NAME GOLDEN
	cases=$((cases + 1))
	if ! settle "$1"; then
		fail "$2" "the screen did not settle"
		capture "$1"
		return
	fi
	capture "$1" >"$work/$2.txt"
	compare_golden "$2" "$work/$2.txt"
}

# ended NAME: the program in session NAME (started with a size) ended
# within 5 s with status 0, and the shell's screen is back.
ended() {
	n=0
	while ! capture "$1" | grep -q '^EXIT-STATUS' && [ $n -lt 300 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	capture "$1" | grep -q '^EXIT-STATUS 0$'
}

# keys NAME KEY...: one key at a time, each given time to take effect:
# until the screen shows a change, 0.3 s at most (a key may change nothing).
keys() {
	name=$1
	shift
	for k in "$@"; do
		before=$(capture "$name")
		tm send-keys -t "$name" "$k"
		n=0
		while [ $n -lt 15 ] && [ "$(capture "$name")" = "$before" ]; do
			sleep 0.02
			n=$((n + 1))
		done
	done
}

if [ "$part" != wide ]; then
# The front door: the lesson menu, then the second lesson's description.
start menu ""
check menu lesson-menu
keys menu Down
check menu lesson-menu-02

# Lesson 2 from the menu: its first narration.
keys menu Enter
check menu lesson-02-open
# A paragraph later, the first prediction, before anything runs.
keys menu Enter Enter
check menu lesson-02-predict
# Answered (b, the right choice): the next question asks for the
# collective before the lesson names it.
keys menu b Enter
check menu lesson-02-question
# Answered (b), the pause, then the run to `step 1`: the scenario view
# stops after the devices' products.
keys menu b Enter Enter
check menu lesson-02-step1
# Two paragraphs, then `step 3`: the all-gather's three ring steps.
keys menu Enter Enter Enter
check menu lesson-02-step3

# q goes back to the menu, which now shows lesson 2 started.
keys menu q
check menu lesson-menu-started

# Presenter mode at a projector's 80x24: lesson 2 after its run, without
# the run and result lines; then Up scrolls the narration back to the
# lesson's first line, which the burst had pushed off the panel.
start pres "lesson --presenter $LESSONS/02-colwise.lesson" 80 24
settle pres
keys pres Enter Enter b Enter b Enter Enter
check pres lesson-02-presenter
keys pres Up Up Up Up Up Up Up Up Up Up Up Up Up Up Up Up
check pres lesson-02-scrollback
cases=$((cases + 1))
if capture pres | grep -q 'Column-wise split (10 minutes)'; then
	pass scrollback-first-line
else
	fail scrollback-first-line "Up did not bring back the lesson's first line:"
	capture pres
fi

# The menu in presenter mode: a lesson done, its score not shown.
mkdir -p "$work/state-pmenu/shardlab/progress"
printf 'shardlab-progress 1\ndone 1\nscore 0 3\n' \
	>"$work/state-pmenu/shardlab/progress/06-when-tp-does-not-pay"
tm new-session -d -s pmenu -x 80 -y 24 \
	"env TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_STATE_HOME=$work/state-pmenu \
	SHARDLAB_LESSON_PATH=$LESSONS $SHARDLAB --presenter"
tm set-option -t pmenu remain-on-exit on >/dev/null
settle pmenu
cases=$((cases + 1))
if capture pmenu | grep -q 'does not pay  *15 min [*+ ] done$' && ! capture pmenu | grep -q 'right'; then
	pass menu-presenter-no-score
else
	fail menu-presenter-no-score "the presenter's menu shows a score:"
	capture pmenu
fi

# A lone collective on the lesson screen: lesson 4's all-gather played to
# its end, every device's buffer holding every block.
start l4 "lesson $LESSONS/04-collectives.lesson"
keys l4 Enter Enter Enter
check l4 lesson-04-allgather

# An instructor's --start: the runs before the label ran silently, and the
# screen shows the last of them (lesson 4's all-reduce) again.
start l4s "lesson --start=latency $LESSONS/04-collectives.lesson"
check l4s lesson-04-start

# A phase at a time: lesson 4's all-reduce from its start, n plays it to
# the end of its reduce-scatter (each device holds its block summed), n
# again to the end of the all-gather, N back to the end of the
# reduce-scatter.
keys l4s Home n
check l4s lesson-04-phase
keys l4s n
settle l4s
cases=$((cases + 1))
if capture l4s | head -n 1 | grep -q 't 93.24 us / 93.24 us'; then
	pass phase-to-end
else
	fail phase-to-end "n after the reduce-scatter did not play to the all-reduce's end:"
	capture l4s
fi
keys l4s N
settle l4s
cases=$((cases + 1))
if [ "$(capture l4s | head -n 1)" = "$(head -n 1 "$GOLDEN/lesson-04-phase.txt")" ]; then
	pass phase-back
else
	fail phase-back "N did not go back to the end of the reduce-scatter:"
	capture l4s
fi

# The sections of lesson 8 at a projector's 80x24 (g): its start and its
# three labels, each titled by its first words; Down twice and Enter go
# to the third, as --start=one-f-one-b would; g and Esc close the list.
start sec "lesson $LESSONS/08-pipeline.lesson" 80 24
settle sec
keys sec g
check sec lesson-08-80x24-sections
keys sec Escape
cases=$((cases + 1))
if settle sec && ! capture sec | grep -q 'sections: Enter goes there'; then
	pass sections-close
else
	fail sections-close "Esc did not close the list of sections:"
	capture sec
fi
keys sec g Down Down Enter
cases=$((cases + 1))
l1f1b=$(grep -n '^label one-f-one-b' "$LESSONS/08-pipeline.lesson" | cut -d: -f1)
if settle sec && capture sec | grep -q "From line $l1f1b; the runs before it ran unseen" &&
	capture sec | grep -q '1F1B'; then
	pass sections-go
else
	fail sections-go "Enter in the list did not go to the section one-f-one-b:"
	capture sec
fi

# Forgetting every lesson's progress (R in the menu): n keeps it; y
# forgets it, the menu then shows no lesson done, and a file beside the
# progress that is not shardlab's stays.
mkdir -p "$work/state-forget/shardlab/progress"
printf 'shardlab-progress 1\ndone 1\nscore 2 3\n' \
	>"$work/state-forget/shardlab/progress/02-colwise"
printf 'shardlab-progress 1\ndone 0\nscore 0 0\nresume 5 0 0 1\n' \
	>"$work/state-forget/shardlab/progress/03-rowwise"
printf 'not ours\n' >"$work/state-forget/shardlab/progress/notes"
tm new-session -d -s forget -x 80 -y 24 \
	"env TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_STATE_HOME=$work/state-forget \
	SHARDLAB_LESSON_PATH=$LESSONS $SHARDLAB"
tm set-option -t forget remain-on-exit on >/dev/null
settle forget
keys forget R
cases=$((cases + 1))
if settle forget && capture forget | tail -n 1 | grep -q 'forget the progress and score of every lesson? y'; then
	pass forget-asks
else
	fail forget-asks "R did not ask before forgetting:"
	capture forget
fi
keys forget n
cases=$((cases + 1))
if settle forget && capture forget | tail -n 1 | grep -q 'nothing forgotten' &&
	[ -f "$work/state-forget/shardlab/progress/02-colwise" ] &&
	capture forget | grep -q 'done, 2/3 right'; then
	pass forget-n-keeps
else
	fail forget-n-keeps "n after R did not keep the progress:"
	capture forget
fi
keys forget R y
cases=$((cases + 1))
if settle forget && capture forget | tail -n 1 | grep -q 'forgot the progress of 2 lessons' &&
	[ ! -e "$work/state-forget/shardlab/progress/02-colwise" ] &&
	[ ! -e "$work/state-forget/shardlab/progress/03-rowwise" ] &&
	[ -f "$work/state-forget/shardlab/progress/notes" ] &&
	! capture forget | grep -q -e 'done' -e 'started'; then
	pass forget-y
else
	fail forget-y "R y did not forget every lesson's progress, or touched another file:"
	capture forget
	ls -la "$work/state-forget/shardlab/progress"
fi

# A training run on the lesson screen: lesson 8's GPipe step, animated as
# the sandbox shows it, then `step 3` stops it after stage 0's first work.
# The bubble is asked for before that run: answered wrong twice (the
# second time the lesson gives the answer and goes on).
start l8 "lesson $LESSONS/08-pipeline.lesson"
keys l8 Enter Enter Enter Enter Enter 1 Enter 1 Enter
check l8 lesson-08-step3

# A reshard on the lesson screen: lesson 11 from its label 'save', its
# 'run reshard' animated (the new layout's devices reading the stored
# chunks), then `step 3` and the question after it answered.
start l11 "lesson --start=save $LESSONS/11-checkpoints.lesson"
keys l11 Enter Enter Enter Enter Enter 4 Enter
check l11 lesson-11-step3

# The help of the menu and of a lesson (? opens it on every screen), at
# 100x30: generated from the screen's key table, with its legend.
start help "" 100 30
settle help
keys help '?'
check help lesson-menu-help
keys help Escape Down Enter
keys help '?'
check help lesson-help
# Esc closes it; F10 quits from the lesson (q would go back to the menu).
keys help Escape F10
cases=$((cases + 1))
if ended help; then
	pass quit-f10
else
	fail quit-f10 "F10 on the lesson screen did not quit with status 0"
	capture help
fi

fi
if [ "$part" != core ]; then
# Panels at 120x36 that used to cut their contents without a word: lesson
# 4's buffers (all 8 devices), the layout panel of lessons 5 (attention's
# heads), 8 (every stage) and 10 (the replicas, and each device's tp/pp/dp
# where the lesson is about mesh order), lesson 11's reshard (the
# row-parallel tensor by its row shards).  Each run played to its end.
wide() { # NAME ARGS KEYS...
	w_name=$1 w_args=$2
	shift 2
	start "$w_name" "$w_args" 120 36
	settle "$w_name"
	for k in "$@"; do
		keys "$w_name" "$k"
		settle "$w_name"
	done
	check "$w_name" "$w_name"
}
wide lesson-04-120x36 "lesson $LESSONS/04-collectives.lesson" Enter Enter Enter End
wide lesson-05-120x36 "lesson --start=attention $LESSONS/05-megatron-mlp.lesson" Enter End a Enter
wide lesson-08-120x36 "lesson --start=one-f-one-b $LESSONS/08-pipeline.lesson" End
wide lesson-10-120x36 "lesson --start=placement $LESSONS/10-combining.lesson" Enter Enter Enter End
wide lesson-11-120x36 "lesson --start=save $LESSONS/11-checkpoints.lesson" Enter Enter Enter Enter End
cases=$((cases + 1))
if capture lesson-04-120x36 | grep -q ' 7 [0-7]\{8\}\| 7 0 1 2 3 4 5 6 7'; then
	pass lesson-04-every-device
else
	fail lesson-04-every-device "the buffers panel does not show device 7:"
	capture lesson-04-120x36
fi
cases=$((cases + 1))
if capture lesson-10-120x36 | grep -c 'tp[0-3] pp0 dp[01]' | grep -q '^6$'; then
	pass lesson-10-mesh-labels
else
	fail lesson-10-mesh-labels "the device rows lost their tp/pp/dp labels:"
	capture lesson-10-120x36
fi

# The point of lessons 7 and 8 at 80x24 without colour: lesson 7's two
# nodes folded a row each, with the links between them named (16 devices
# in 6 rows); lesson 8's GPipe run of 8 micro-batches on the timeline,
# which takes the figure's whole width, every micro-batch of stage 0 in
# order, forward then backward, told apart by glyph.
sized() { # NAME COLS ROWS ARGS KEYS...
	s_name=$1 s_cols=$2 s_rows=$3 s_args=$4
	shift 4
	start "$s_name" "$s_args" "$s_cols" "$s_rows"
	settle "$s_name"
	for k in "$@"; do
		keys "$s_name" "$k"
		settle "$s_name"
	done
	check "$s_name" "$s_name"
}
sized lesson-07-80x24-nodes 80 24 "lesson --no-color --start=two-nodes $LESSONS/07-nodes.lesson" End
cases=$((cases + 1))
if capture lesson-07-80x24-nodes | grep -q ' n1  8-15 ' &&
	capture lesson-07-80x24-nodes | grep -q 'inter-node 25.0 GB/s' &&
	capture lesson-07-80x24-nodes | grep -q '7→8  n0→n1'; then
	pass lesson-07-node-1
else
	fail lesson-07-node-1 "node 1 or the link between the nodes is not on the screen:"
	capture lesson-07-80x24-nodes
fi
sized lesson-08-80x24-gpipe 80 24 "lesson --no-color --start=bubble $LESSONS/08-pipeline.lesson" \
	Enter 3/8 Enter Enter End
cases=$((cases + 1))
# Stage 0's row, its digits only: each micro-batch's forward, then each
# one's backward, in order.
s0=$(capture lesson-08-80x24-gpipe | grep -m 1 '│  0 ' | sed 's/^│  0 //; s/[^0-9a-z]//g')
if [ "$s0" = 0123456701234567 ]; then
	pass lesson-08-stage-0-in-order
else
	fail lesson-08-stage-0-in-order "stage 0 reads '$s0', not 0123456701234567:"
	capture lesson-08-80x24-gpipe
fi

# Lesson 4 at 80x24: the collective's buffers take the devices' place,
# every device's blocks in view (device 7's too).
sized lesson-04-80x24-buffers 80 24 "lesson $LESSONS/04-collectives.lesson" Enter Enter End
cases=$((cases + 1))
if capture lesson-04-80x24-buffers | grep -q ' 7 01234567 '; then
	pass lesson-04-80x24-every-device
else
	fail lesson-04-80x24-every-device "device 7's blocks are not on the screen:"
	capture lesson-04-80x24-buffers
fi

# A formula in the narration is never cut mid-expression: lesson 6's
# derivation at 80x24 stands whole on a line of its own.
start formula "lesson --start=batch $LESSONS/06-when-tp-does-not-pay.lesson" 80 24
settle formula
cases=$((cases + 1))
if capture formula | grep -q '^│   2 m k n / F \* (1 - 1/p)  >  4 m n / B \* (p-1)/p,  *│$'; then
	pass formula-displayed
else
	fail formula-displayed "lesson 6's formula is not a displayed line:"
	capture formula
fi

# A projector's terminal (80x24, 100x30): the narration and a compact
# figure (devices, timeline, the step's sentence on two lines) together, at
# a step and at a question, in lessons 2, 3 and 8.  At the question the
# figure still steps (Right), since the keys that step type nothing.
compact() { # LESSON NAME COLS ROWS KEYS-TO-STEP -- KEYS-TO-QUESTION
	c_lesson=$1 c_golden=$2 c_cols=$3 c_rows=$4
	c_s=$c_golden-$c_cols
	shift 4
	start "$c_s" "lesson $LESSONS/$c_lesson.lesson" "$c_cols" "$c_rows"
	settle "$c_s"
	while [ "$1" != -- ]; do
		keys "$c_s" "$1"
		shift
	done
	shift
	check "$c_s" "$c_golden-${c_cols}x$c_rows-step"
	keys "$c_s" "$@"
	check "$c_s" "$c_golden-${c_cols}x$c_rows-question"
}
for size in "80 24" "100 30"; do
	# shellcheck disable=SC2086 # two words: columns and rows
	compact 02-colwise lesson-02 $size Enter Enter b Enter b Enter Enter -- Enter Enter Right
	# shellcheck disable=SC2086
	compact 03-rowwise lesson-03 $size Enter Enter Enter -- Enter Enter Right
	# Lesson 8's first run (one micro-batch) at its end, stepped back once
	# while the bubble question waits.
	# shellcheck disable=SC2086
	compact 08-pipeline lesson-08 $size Enter Enter -- Enter Enter Enter Left
done
# Lesson 12's three layouts side by side (show side-by-side) at 100x30:
# the compact figure above the narration, a band for each run.
sized lesson-12-100x30-sbs 100 30 "lesson --start=time $LESSONS/12-side-by-side.lesson"
cases=$((cases + 1))
if capture lesson-12-100x30-sbs | grep -q '^tpl: tp=4 ' &&
	capture lesson-12-100x30-sbs | grep -q '^ppl: pp=4 1f1b ' &&
	capture lesson-12-100x30-sbs | grep -q '^dpl: dp=4 '; then
	pass lesson-12-three-bands
else
	fail lesson-12-three-bands "the three runs are not side by side:"
	capture lesson-12-100x30-sbs
fi

# Lessons 13, 14 and 15 at a projector's 80x24, each from a label whose runs
# before it ran unseen: the run shown is one whose communication went beside
# its compute (lesson 13's gradient buckets during the backward pass, lesson
# 14's ZeRO-3 with each block's weights gathered while the one before
# computes, lesson 15's ring of keys and values beside the attention), with
# the narration under it.
sized lesson-13-80x24-overlap 80 24 "lesson --start=buckets $LESSONS/13-hiding-communication.lesson"
sized lesson-14-80x24-zero3 80 24 "lesson --start=fit $LESSONS/14-sharded-data-parallel.lesson"
sized lesson-15-80x24-ring 80 24 "lesson --start=allgather $LESSONS/15-long-sequences.lesson"
for g in lesson-13-80x24-overlap lesson-14-80x24-zero3 lesson-15-80x24-ring; do
	cases=$((cases + 1))
	if capture "$g" | head -n 1 | grep -q ' / .* paused ' && ! capture "$g" | grep -q 'check FAILED'; then
		pass "$g-run-shown"
	else
		fail "$g-run-shown" "the run before the label is not on the screen:"
		capture "$g"
	fi
done

# Lesson 3's full view at 80x24 (v), its run at the end: sizes abbreviated
# honestly ("W 8k×4k", never "W 8192×409"), the title in whole words, and
# the sentence that overflows its two rows ends in "...", never in "46.7".
start full80 "lesson $LESSONS/03-rowwise.lesson" 80 24
settle full80
keys full80 Enter Enter Enter
settle full80
keys full80 End v
check full80 lesson-03-80x24-full

# The help of a lesson at 80x24, over a run shown.
start help80 "lesson $LESSONS/02-colwise.lesson" 80 24
keys help80 Enter Enter b Enter b Enter Enter '?'
check help80 lesson-help-80x24

fi
if [ "$part" != wide ]; then
# The sandbox opened from the menu (s): q there comes back to the menu,
# where F10 quits.
start sb "" 100 30
settle sb
keys sb s
cases=$((cases + 1))
n=0
# (Slow machines and sanitizer builds plan for a while: wait for the
# screens rather than for a fixed time.)
while ! capture sb | head -n 1 | grep -q 'paused' && [ $n -lt 900 ]; do
	sleep 0.1
	n=$((n + 1))
done
keys sb q
n=0
while ! capture sb | head -n 1 | grep -q 'guided lessons' && [ $n -lt 300 ]; do
	sleep 0.1
	n=$((n + 1))
done
if capture sb | head -n 1 | grep -q 'guided lessons'; then
	pass sandbox-q-menu
else
	fail sandbox-q-menu "q in the sandbox opened from the menu did not come back to it"
	capture sb
fi
keys sb F10
cases=$((cases + 1))
if ended sb; then
	pass menu-f10
else
	fail menu-f10 "F10 in the menu did not quit with status 0"
	capture sb
fi

# Typing an answer: ? and q are typed once something is (the status line
# then offers F1 for the help); Esc clears the line, then leaves the lesson,
# which quits when the lesson was opened by itself.
start typing "lesson $LESSONS/02-colwise.lesson" 100 32
keys typing Enter Enter
settle typing
keys typing x '?' q
cases=$((cases + 1))
if settle typing && capture typing | grep -q 'answer> x?q' &&
	capture typing | tail -n 1 | grep -q 'F1 help'; then
	pass typed-keys
else
	fail typed-keys "? and q were not typed into the answer:"
	capture typing
fi
keys typing Escape
cases=$((cases + 1))
if capture typing | grep -q 'answer> *│' && capture typing | tail -n 1 | grep -q 'Esc back'; then
	pass esc-clears
else
	fail esc-clears "Esc did not clear the answer line:"
	capture typing
fi
keys typing Escape
cases=$((cases + 1))
if ended typing; then
	pass esc-leaves
else
	fail esc-leaves "Esc on an empty answer line did not leave the lesson"
	capture typing
fi

# A lesson opened right after another from the menu lays out its own
# devices: lesson 3 after a lesson whose last run was on one device (as
# lesson 2's is) showed that one device's layout, its devices box collapsed
# and six empty link rows, until the terminal was resized.
mkdir -p "$work/pair"
cat >"$work/pair/02-single.lesson" <<'LESSON'
title   One device first
minutes 1
about   Lesson 2's last run: the product on one device.
setup preset=a100 devices=4 strategy=colwise m=256 k=8192 n=4096
setup strategy=single
say One device.
run matmul as single
say Done.
LESSON
cp "$LESSONS/03-rowwise.lesson" "$work/pair/"
mkdir -p "$work/state-pair"
tm new-session -d -s pair -x 100 -y 32 \
	"env TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 OPENBLAS_NUM_THREADS=1 \
	OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto} XDG_STATE_HOME=$work/state-pair \
	SHARDLAB_LESSON_PATH=$work/pair $SHARDLAB"
tm set-option -t pair remain-on-exit on >/dev/null
settle pair
keys pair Enter Enter
settle pair
keys pair q
settle pair
keys pair Down Enter Enter Enter Enter
settle pair
cases=$((cases + 1))
scr=$(capture pair)
if printf '%s\n' "$scr" | grep -q 'Devices (4)' &&
	printf '%s\n' "$scr" | grep -q 'split by rows of W' &&
	[ "$(printf '%s\n' "$scr" | grep -c '^│ [0-3] [^→]')" -eq 4 ]; then
	pass lesson-after-lesson
else
	fail lesson-after-lesson "lesson 3 after a one-device lesson did not show its 4 devices:"
	printf '%s\n' "$scr"
fi

# The menu at 80x24 with a lesson done: its state whole ("done, 0/3 r"
# was what fitted).
mkdir -p "$work/state-done80/shardlab/progress"
printf 'shardlab-progress 1\ndone 1\nscore 0 3\n' \
	>"$work/state-done80/shardlab/progress/06-when-tp-does-not-pay"
tm new-session -d -s done80 -x 80 -y 24 \
	"env TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_STATE_HOME=$work/state-done80 \
	SHARDLAB_LESSON_PATH=$LESSONS $SHARDLAB"
tm set-option -t done80 remain-on-exit on >/dev/null
settle done80
cases=$((cases + 1))
if capture done80 | grep -q 'When tensor parallelism does not pay  *15 min [*+ ] done, 0/3 right'; then
	pass menu-80x24-state
else
	fail menu-80x24-state "the menu at 80x24 cut a lesson's state or title:"
	capture done80
fi

# "Press a key to run it" means any key: x, which the lesson screen does
# not bind, goes on and runs the product.
start anykey "lesson $LESSONS/03-rowwise.lesson" 100 32
settle anykey
keys anykey Enter Enter
settle anykey
cases=$((cases + 1))
if ! capture anykey | grep -q 'Press a key to run it'; then
	fail any-key "lesson 3 did not reach its pause:"
	capture anykey
else
	keys anykey x
	settle anykey
	if capture anykey | grep -q 'result: 4 devices, rowwise'; then
		pass any-key
	else
		fail any-key "x at 'Press a key' did not go on:"
		capture anykey
	fi
fi

# A lesson that does not load: its file:line on the shell, status 2.
cases=$((cases + 1))
printf 'title T\nminutes 5\nsya x\n' >"$work/bad.lesson"
out=$(env TERM=tmux-256color "$SHARDLAB" lesson "$work/bad.lesson" </dev/null 2>&1)
st=$?
if [ $st -ne 1 ] || ! printf '%s' "$out" | grep -q "lessons need a terminal"; then
	fail no-terminal "status $st: $out"
else
	pass no-terminal
fi
cases=$((cases + 1))
tm new-session -d -s bad -x 100 -y 32 "env TERM=tmux-256color $SHARDLAB lesson $work/bad.lesson; echo status \$?; sleep 30"
tm set-option -t bad remain-on-exit on >/dev/null
n=0
while ! capture bad | grep -q '^status ' && [ $n -lt 100 ]; do
	sleep 0.05
	n=$((n + 1))
done
if capture bad | grep -q "bad.lesson:3: unknown command 'sya' (did you mean 'say'?)" &&
	capture bad | grep -q "status 2"; then
	pass bad-lesson
else
	fail bad-lesson "the error did not show:"
	capture bad
fi

fi
finish
