#!/bin/sh
# SPDX-License-Identifier: MIT
# Under an address-space limit (ulimit -v) the program fails with one
# "out of memory" line instead of spinning in OpenBLAS's allocator (64
# devices at 100-400 MB) or dying by the SIGINT OpenBLAS raised at load (50
# MB, when OPENBLAS_NUM_THREADS was unset).  Every run is bounded by timeout,
# so a regression fails instead of hanging.  make check sets $SHARDLAB.
set -u
bin=${SHARDLAB:?}
# Sanitizers reserve terabytes of shadow memory: no address-space limit fits.
if [ -n "${SHARDLAB_SAN_CFLAGS:-}" ]; then
	echo "SKIP: sanitized build"
	exit 77
fi
command -v timeout >/dev/null || { echo "SKIP: no timeout(1)"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0

# limited KB WANT-STATUS WORDS...: run under `ulimit -v KB`; stderr is empty
# for status 0, else exactly one line starting "shardlab: ... out of memory".
# WANT-STATUS "0|1": a limit near what the run needs, which depends on the
# machine (its libraries' mappings, OpenBLAS's kernel): either outcome, but
# one of the two, never a hang or a signal.
limited() {
	kb=$1 want=$2
	shift 2
	timeout "${LIMITS_TIMEOUT:-120}" sh -c 'ulimit -v "$0" && exec "$@"' "$kb" "$bin" "$@" >"$dir/out" 2>"$dir/err"
	got=$?
	lines=$(wc -l <"$dir/err")
	ok=1
	[ "$want" = "0|1" ] && [ "$got" = 0 ] && want=0
	[ "$want" = "0|1" ] && want=1
	[ "$got" = "$want" ] || ok=0
	if [ "$want" = 0 ]; then
		[ "$lines" = 0 ] || ok=0
	else
		[ "$lines" = 1 ] && grep -q '^shardlab: .*out of memory' "$dir/err" || ok=0
	fi
	if [ $ok = 0 ]; then
		echo "FAIL: ulimit -v $kb; shardlab $*: status $got (want $want), stderr:"
		sed 's/^/  /' "$dir/err"
		fails=$((fails + 1))
	else
		echo "ok: ulimit -v $kb; shardlab $*: status $got $(cat "$dir/err")"
	fi
}

run64="run --devices=64 --m=64 --k=256 --n=256"
for kb in 100000 150000 200000; do
	limited $kb 1 $run64
done
# OpenBLAS's 160 MiB buffer and 64 threads' stacks: 250 MB is about enough.
limited 250000 "0|1" $run64
limited 250000 1 train --tp=4 --pp=4 --dp=4 --steps=1
# With room, a limit changes nothing but the order of BLAS calls.
limited 1000000 0 $run64
limited 1000000 0 train --tp=4 --pp=4 --dp=4 --steps=1

# At 50 MB, with OpenBLAS's variables unset: OpenBLAS used to start its own
# threads at load and raise SIGINT; now the program starts and says what a
# run lacks.
unset OPENBLAS_NUM_THREADS OPENBLAS_CORETYPE
limited 50000 0 --version
limited 50000 0 check "${SHARDLAB_LESSON_PATH:-lessons}/02-colwise.lesson"
limited 50000 1 run --devices=2 --m=8 --k=8 --n=8

[ $fails = 0 ] || exit 1
echo "all passed"
