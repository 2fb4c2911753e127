#!/bin/sh
# SPDX-License-Identifier: MIT
# The lesson screens at 120x36 and at a projector's 80x24 and 100x30: the
# wide part of lessons.sh, a test of its own so that make check runs it
# beside the rest.
LESSONS_PART=wide exec sh "$(dirname "$0")/lessons.sh"
