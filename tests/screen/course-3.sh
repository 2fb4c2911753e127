#!/bin/sh
# SPDX-License-Identifier: MIT
# course.sh's third share of five (lessons 03, 08, 13): a test of its own, so
# that make check-long plays the shares side by side.
COURSE_PART=3/5 exec sh "$(dirname "$0")/course.sh"
