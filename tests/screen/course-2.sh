#!/bin/sh
# SPDX-License-Identifier: MIT
# course.sh's second share of five (lessons 02, 07, 12): a test of its own, so
# that make check-long plays the shares side by side.
COURSE_PART=2/5 exec sh "$(dirname "$0")/course.sh"
