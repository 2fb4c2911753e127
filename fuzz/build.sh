#!/bin/sh
# SPDX-License-Identifier: MIT
# build.sh - builds the libFuzzer harnesses (make fuzz calls it).
#
#   build.sh SRCDIR OUTDIR
#
# Environment (make fuzz sets it): FUZZ_CC (clang), FUZZ_CPPFLAGS, FUZZ_LIBS,
# FUZZ_CORE (the engine's and the lesson library's sources, relative to
# SRCDIR; headers are skipped).  The core is compiled once with the fuzzer's instrumentation and
# AddressSanitizer + UBSan into OUTDIR/obj (again only when a source is
# newer than its object), and each harness in SRCDIR/fuzz/fuzz_*.c is
# linked against it.
set -eu
src=$1
out=$2
cc=${FUZZ_CC:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "make fuzz: needs clang with libFuzzer (Debian packages clang and libclang-rt-dev)" >&2
	exit 1
fi
flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
mkdir -p "$out/obj"
objs=""
for f in $FUZZ_CORE; do
	case $f in *.c) ;; *) continue ;; esac
	o="$out/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')"
	if [ ! -f "$o" ] || [ "$src/$f" -nt "$o" ] || [ -n "$(find "$src/src" -name '*.h' -newer "$o" | head -n 1)" ]; then
		echo "  FUZZCC   $f"
		# shellcheck disable=SC2086 # flag lists
		$cc $flags $FUZZ_CPPFLAGS -c "$src/$f" -o "$o"
	fi
	objs="$objs $o"
done
for h in "$src"/fuzz/fuzz_*.c; do
	name=$(basename "$h" .c)
	bin="$out/$name"
	# shellcheck disable=SC2086 # object list
	if [ -f "$bin" ] && [ ! "$h" -nt "$bin" ] && [ -z "$(find $objs -newer "$bin" | head -n 1)" ]; then
		continue
	fi
	echo "  FUZZLD   fuzz/$name"
	# shellcheck disable=SC2086
	$cc $flags -fsanitize=fuzzer $FUZZ_CPPFLAGS "$h" $objs $FUZZ_LIBS -o "$bin"
done
