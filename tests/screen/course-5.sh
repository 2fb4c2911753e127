#!/bin/sh
# SPDX-License-Identifier: MIT
# course.sh's fifth share of five (lessons 05, 10): a test of its own, so
# that make check-long plays the shares side by side.
COURSE_PART=5/5 exec sh "$(dirname "$0")/course.sh"
