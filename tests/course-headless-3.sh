#!/bin/sh
# SPDX-License-Identifier: MIT
# test_course's third share of five (lessons 03, 08, 13): a test of
# its own, so that make check runs the shares beside the other tests.
COURSE_PART=3/5 exec "${SHARDLAB_BUILDDIR:-.}/tests/test_course"
