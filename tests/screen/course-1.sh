#!/bin/sh
# SPDX-License-Identifier: MIT
# course.sh's first share of five (lessons 01, 06, 11): a test of its own, so
# that make check-long plays the shares side by side.
COURSE_PART=1/5 exec sh "$(dirname "$0")/course.sh"
