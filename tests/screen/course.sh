#!/bin/sh
# SPDX-License-Identifier: MIT
# Every lesson of the course played to its end on the terminal screen, at a
# projector's 80x24, through tmux: each question answered wrong once (the
# screen must explain and ask again, or, for two choices, give the answer),
# then right; each menu's first item;
# each explore's demo.  A lesson passes when its last screen says every
# check held and no check FAILED on the way.
#
# The answers are the lesson's own, taken from `shardlab lesson --headless
# --demo` (the same vm, so the same figures), never typed into this script.
#
# Environment: SHARDLAB (the program), SHARDLAB_LESSON_PATH (the course);
# make check sets them.  COURSE_ONLY=NN plays one lesson.  COURSE_PART=K/N
# plays the Kth of N shares (the lessons in order, dealt out in turn), so
# that N tests, course-1.sh to course-N.sh, play the course side by side.
# Without tmux the test is skipped (exit 77).
set -u

here=$(cd "$(dirname "$0")" && pwd)
LESSONS=${SHARDLAB_LESSON_PATH:-$here/../../lessons}
harness=course
# shellcheck source=tests/screen/harness.sh
. "$here/harness.sh"

capture() { tm capture-pane -p -t "$1"; }
status_line() { capture "$1" | tail -n 1; }

# wait_change NAME BEFORE: until the screen differs from BEFORE and the
# lesson is not working (an engine run holds the screen meanwhile); 120 s
# at most (the planner of lesson 12 on a loaded machine).
wait_change() {
	n=0
	while [ $n -lt 1200 ]; do
		cur=$(capture "$1")
		if [ "$cur" != "$2" ] && ! printf '%s\n' "$cur" | tail -n 1 | grep -q 'working\.\.\.'; then
			# and settled: the same twice in a row
			sleep 0.1
			[ "$(capture "$1")" = "$cur" ] && return 0
		fi
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}

# send NAME KEYS...: type them (literally, then Enter when the last is
# Enter) and wait for the screen to take them.
send() {
	name=$1
	shift
	before=$(capture "$name")
	for k in "$@"; do
		if [ "$k" = Enter ]; then
			tm send-keys -t "$name" Enter
		else
			tm send-keys -t "$name" -l "$k"
		fi
	done
	wait_change "$name" "$before"
}

# A wrong answer for a right one: another letter, or the number with a 9
# before it (ten times too much at least).
wrong_for() {
	case $1 in
	a) echo b ;;
	[b-z]) echo a ;;
	*) echo "9$1" ;;
	esac
}

play() { # FILE
	file=$1
	base=$(basename "$file" .lesson)
	cases=$((cases + 1))
	started=$(date +%s)
	inputs="$work/$base.inputs"
	if ! env XDG_STATE_HOME="$work/demo-state" "$SHARDLAB" lesson --headless --demo --no-save \
		"$file" </dev/null >"$work/$base.demo" 2>&1; then
		fail "$base" "the headless demo does not finish:"
		tail -n 5 "$work/$base.demo"
		return
	fi
	sed -n -e 's/^answer> /answer /p' -e 's/^choice> /choice /p' -e 's/^knob> /knob /p' \
		"$work/$base.demo" >"$inputs"
	mkdir -p "$work/state-$base"
	tm new-session -d -s "$base" -x 80 -y 24 \
		"env TERM=tmux-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 OPENBLAS_NUM_THREADS=1 \
		OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto} XDG_STATE_HOME=$work/state-$base \
		$SHARDLAB lesson $file; sleep 600"
	tm set-option -t "$base" remain-on-exit on >/dev/null
	wait_change "$base" ""
	failed_check=0
	wrongs=0
	givens=0
	steps=0
	while [ $steps -lt 400 ]; do
		steps=$((steps + 1))
		screen=$(capture "$base")
		printf '%s\n' "$screen" | grep -q 'check FAILED' && failed_check=1
		if printf '%s\n' "$screen" | grep -q 'The end: .* Press Enter'; then
			break
		fi
		last=$(printf '%s\n' "$screen" | tail -n 1)
		case $last in
		"Enter answer"*) ;;
		*)
			send "$base" Enter || break
			continue
			;;
		esac
		# A prompt: the next of the lesson's own inputs.
		line=$(head -n 1 "$inputs")
		sed -i 1d "$inputs"
		kind=${line%% *}
		value=${line#* }
		if [ -z "$line" ]; then
			fail "$base" "the screen asks for more input than the demo gave:"
			printf '%s\n' "$screen"
			return
		fi
		if [ "$kind" = answer ]; then
			nq=$(capture "$base" | grep -c 'Not quite\.')
			ng=$(capture "$base" | grep -c 'The answer: ')
			before_answer=$(capture "$base")
			send "$base" "$(wrong_for "$value")" Enter || break
			# Under a sanitizer a screen can settle for a moment before
			# the answer is judged: wait for the verdict (120 s at most):
			# another try, or, for a wrong pick of two choices, the answer.
			n=0
			verdict=
			while [ $n -lt 600 ] && [ -z "$verdict" ]; do
				now=$(capture "$base")
				# Another try: a new "Not quite." (an older one may have
				# scrolled away meanwhile: then the last lines say so).
				if [ "$(printf '%s\n' "$now" | grep -c 'Not quite\.')" -gt "$nq" ] ||
					{ [ "$now" != "$before_answer" ] &&
						printf '%s\n' "$now" | tail -n 9 | grep -q 'Try again\.' &&
						printf '%s\n' "$now" | grep -q 'answer> *│'; }; then
					verdict=again
				elif ! status_line "$base" | grep -q '^Enter answer' ||
					[ "$(capture "$base" | grep -c 'The answer: ')" -gt "$ng" ]; then
					# the lesson went on (to the next question, maybe)
					verdict=given
				else
					sleep 0.2
					n=$((n + 1))
				fi
			done
			case $verdict in
			again)
				# The answer line is empty again for the second try.
				if ! capture "$base" | grep -q 'answer> *│'; then
					fail "$base" "the answer line did not clear after a wrong answer:"
					capture "$base"
					return
				fi
				wrongs=$((wrongs + 1))
				;;
			given)
				# Two choices: the other one is all a second try could be.
				case $value in
				[a-b]) givens=$((givens + 1)); continue ;;
				esac
				fail "$base" "a wrong answer to a question of more than two choices got no second try:"
				capture "$base"
				return
				;;
			*)
				fail "$base" "a wrong answer to a question got no verdict:"
				capture "$base"
				return
				;;
			esac
		fi
		send "$base" "$value" Enter || break
		# Taken when the input line no longer holds it: a screen that
		# settled for a moment with the answer typed is not the next
		# prompt (120 s at most; a sanitizer build is slow).
		typed=$(printf '%s' "$value" | sed 's/[][\.*^$+?(){}|/]/\\&/g')
		n=0
		while [ $n -lt 600 ] &&
			capture "$base" | grep -qE "(answer|choice|knob)> $typed *(│|\|)\$"; do
			sleep 0.2
			n=$((n + 1))
		done
	done
	screen=$(capture "$base")
	if [ $failed_check = 1 ]; then
		fail "$base" "a check FAILED on the way:"
		printf '%s\n' "$screen"
	elif ! printf '%s\n' "$screen" | grep -q 'every check held'; then
		fail "$base" "the lesson did not reach its end with every check held:"
		printf '%s\n' "$screen"
	elif [ -s "$inputs" ]; then
		fail "$base" "the lesson ended before the demo's inputs did"
	else
		took=$(($(date +%s) - started))
		pass "$base ($wrongs questions answered wrong once, $givens of two choices given at once; $took s)"
	fi
	tm kill-session -t "$base" 2>/dev/null
}

part=${COURSE_PART:-1/1}
share=${part%/*}
shares=${part#*/}
case $share/$shares in
[1-9]/[1-9] | [1-9]/[1-9][0-9] | [1-9][0-9]/[1-9][0-9]) ;;
*) share=0 ;;
esac
if [ "$share" -lt 1 ] || [ "$share" -gt "$shares" ]; then
	echo "FAIL: COURSE_PART=$part is not K/N with K from 1 to N"
	exit 1
fi
i=0
for f in "$LESSONS"/*.lesson; do
	i=$((i + 1))
	[ $(((i - 1) % shares + 1)) -eq "$share" ] || continue
	case ${COURSE_ONLY:-} in
	"") ;;
	*) case $(basename "$f") in "$COURSE_ONLY"*) ;; *) continue ;; esac ;;
	esac
	play "$f"
done

finish
