#!/bin/sh
# SPDX-License-Identifier: MIT
# `make install` stays in its prefix: installed into a temporary DESTDIR
# with prefix=/home/u/.local (a user's install; the path need not exist),
# every file lies under DESTDIR/home/u/.local, whatever pkg-config says of
# bash-completion or Vim on this machine.  Anything outside is listed.
# make check sets $SHARDLAB_BUILDDIR (the configured build tree) and
# $SHARDLAB_MAKE; the install runs as a make of its own (no MAKEFLAGS from
# make check: no jobserver, no command-line variables), serially.
set -u
builddir=${SHARDLAB_BUILDDIR:?}
make=${SHARDLAB_MAKE:-make}
prefix=/home/u/.local

# A configure that named an absolute directory (--mandir=/usr/share/man,
# --with-vimdir=/etc/vim) chose where those files go; prefix= cannot move them.
config=$("$builddir/config.status" --config) || exit 1
for word in $config; do
	case $word in
	\'--exec-prefix=/* | \'--bindir=/* | \'--datarootdir=/* | \'--datadir=/* | \'--mandir=/* | \
	\'--with-bash-completion-dir=/* | \'--with-vimdir=/*)
		echo "SKIP: configured with $word"
		exit 77
		;;
	esac
done

dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
# A signal ends the script through exit, so the EXIT trap still cleans up.
trap 'exit 1' HUP INT PIPE TERM
dest=$dir/dest
root=$dest$prefix
# DESTDIR and prefix on the command line win over the environment's.
if ! (unset MAKEFLAGS MFLAGS GNUMAKEFLAGS MAKELEVEL
	$make -C "$builddir" install DESTDIR="$dest" prefix="$prefix") >"$dir/log" 2>&1; then
	echo "FAIL: make install DESTDIR=$dest prefix=$prefix:"
	tail -n 30 "$dir/log"
	exit 1
fi

fails=0
files=0
# Every file (and symbolic link) under $root; a directory under $root or
# on the way to it ($dest/home, $dest/home/u).  Outside, a file is named,
# and a directory only when empty (else the files in it say enough).
find "$dest" -mindepth 1 >"$dir/found" || exit 1
while IFS= read -r p; do
	case $p in
	"$root"/*)
		[ -d "$p" ] || files=$((files + 1))
		continue
		;;
	"$root") continue ;;
	esac
	if [ -d "$p" ] && [ ! -L "$p" ]; then
		case $root in
		"$p"/*) continue ;;
		esac
		[ -n "$(ls -A "$p")" ] && continue
	fi
	echo "FAIL: outside the prefix: ${p#"$dest"}"
	fails=$((fails + 1))
done <"$dir/found"

for f in bin/shardlab share/man/man1/shardlab.1; do
	[ -f "$root/$f" ] || { echo "FAIL: $prefix/$f not installed"; fails=$((fails + 1)); }
done
[ "$fails" = 0 ] && echo "ok: $files files, all under $prefix"
[ "$fails" = 0 ]
