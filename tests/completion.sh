#!/bin/sh
# SPDX-License-Identifier: MIT
# The bash completion, as bash sees it: after sourcing the file,
# `complete -p shardlab` names its function, and the function completes
# commands, each command's options (from its --help), option values and
# lesson names.  Every value it offers is one the program accepts
# (`shardlab CMD --OPT=VALUE --help` exits 0 only when VALUE parses).
# make check sets $SHARDLAB and $SHARDLAB_COMPLETION (the generated file).
set -u
bin=${SHARDLAB:?}
comp=${SHARDLAB_COMPLETION:?}
command -v bash >/dev/null || { echo "SKIP: no bash"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin"
ln -s "$bin" "$dir/bin/shardlab"

bash --norc --noprofile -c '
set -u
. "$1" || exit 1
PATH=$2:$PATH
fails=0
spec=$(complete -p shardlab) || { echo "FAIL: complete -p shardlab: no completion"; exit 1; }
case $spec in
*"-F _shardlab"*) echo "ok: $spec" ;;
*) echo "FAIL: complete -p shardlab says: $spec"; exit 1 ;;
esac
# try WANT WORDS...: complete the last word; WANT (space-separated) must
# all be offered.
try() {
	want=$1
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_shardlab
	got=" ${COMPREPLY[*]} "
	for w in $want; do
		case $got in
		*" $w "*) ;;
		*) echo "FAIL: [$*] offers [${COMPREPLY[*]}], not $w"; fails=$((fails + 1)); return ;;
		esac
	done
	echo "ok: [$*] -> ${COMPREPLY[*]}"
}
try "run coll train compare sandbox check lesson plan ckpt" shardlab ""
try "coll compare" shardlab co
try "--no-color --ascii --high-contrast --list-presets" shardlab --
try "--op= --human --predicted --iters= --minbytes=" shardlab coll --
try "--per-device --schedule= --save=" shardlab train --
try "--top=" shardlab plan --t
try "--headless --start= --demo --no-color" shardlab lesson --
try "--format=" shardlab check --f
try "allreduce alltoall sendrecv" shardlab coll --op = ""
try "gpipe 1f1b interleaved" shardlab train --schedule = ""
try "h100 a100" shardlab train --preset = ""
try "inspect verify reshard" shardlab ckpt ""
try "02-colwise 04-collectives" shardlab lesson 0
try "rowwise" shardlab run --strategy=r
# The short options of nccl-tests; the shipped models by name.
try "-b -e -f -n" shardlab coll -
try "gpt3-175b llama-3-8b llama-3-405b" shardlab train --model = ""
try "llama-3-70b" shardlab plan --model=llama-3-7
# never WORD WORDS...: WORD is not offered (an option the command refuses,
# or a word its --help only mentions).
never() {
	bad=$1
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_shardlab
	case " ${COMPREPLY[*]} " in
	*" $bad "*) echo "FAIL: [$*] offers $bad"; fails=$((fails + 1)) ;;
	*) echo "ok: [$*] does not offer $bad" ;;
	esac
}
never --timing= shardlab plan --
never --trace= shardlab plan --
never --trace= shardlab compare --
never --list-presets shardlab run --
never --tp= shardlab ckpt inspect --
# Every value offered is one the program takes.
# Every word list of the table (shardlab --list-options) is offered whole.
while read -r name kind words; do
	[ "$kind" = word ] || continue
	want=$words
	got=$(_shardlab_values shardlab "$name" | tr "\n" " ")
	if [ "$got" != "$want " ]; then
		echo "FAIL: $name offers [$got], the table has [$want]"
		fails=$((fails + 1))
	fi
done < <(shardlab --list-options)
echo "ok: every word list of --list-options is offered"
for o in "coll op" "train schedule" "run strategy" "run algorithm" "run topology" \
	"run timing" "coll format" "train mesh-order" "train preset" "train norm" \
	"train precision" "train efficiency" "train attention" "train recompute" \
	"train ffn-kind" "train position-embedding" "train grad-accumulation"; do
	set -- $o
	for v in $(_shardlab_values shardlab "--$2"); do
		if ! shardlab "$1" "--$2=$v" --help >/dev/null 2>&1; then
			echo "FAIL: shardlab $1 --$2=$v is refused"
			fails=$((fails + 1))
		fi
	done
	echo "ok: every --$2 value is accepted by $1"
done
exit $((fails > 0))
' sh "$comp" "$dir/bin"
