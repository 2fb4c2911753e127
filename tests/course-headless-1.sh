#!/bin/sh
# SPDX-License-Identifier: MIT
# test_course's first share of five (lessons 01, 06, 11): a test of
# its own, so that make check runs the shares beside the other tests.
COURSE_PART=1/5 exec "${SHARDLAB_BUILDDIR:-.}/tests/test_course"
