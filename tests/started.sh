#!/bin/sh
# SPDX-License-Identifier: MIT
# started.sh DRIVER... -- the automake test driver of the test scripts
# (SH_LOG_DRIVER), after a line saying that the script has started (a
# screen test prints nothing for a minute or so until it ends).
name=
prev=
for a in "$@"; do
	[ "$prev" = --test-name ] && name=$a
	[ "$a" = -- ] && break
	prev=$a
done
echo "START: $name"
exec "$@"
