#!/bin/sh
# SPDX-License-Identifier: MIT
# started.sh DRIVER... -- the automake test driver, after a line saying that
# a test script has started (a screen test prints nothing for a minute or
# so until it ends; a unit test program, ending in seconds, says nothing).
name=
prev=
for a in "$@"; do
	[ "$prev" = --test-name ] && name=$a
	[ "$a" = -- ] && break
	prev=$a
done
case $name in
*.sh) echo "START: $name" ;;
esac
exec "$@"
