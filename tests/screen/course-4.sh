#!/bin/sh
# SPDX-License-Identifier: MIT
# course.sh's fourth share of five (lessons 04, 09, 14): a test of its own, so
# that make check-long plays the shares side by side.
COURSE_PART=4/5 exec sh "$(dirname "$0")/course.sh"
