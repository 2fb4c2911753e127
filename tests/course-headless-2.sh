#!/bin/sh
# SPDX-License-Identifier: MIT
# test_course's second share of five (lessons 02, 07, 12): a test of
# its own, so that make check runs the shares beside the other tests.
COURSE_PART=2/5 exec "${SHARDLAB_BUILDDIR:-.}/tests/test_course"
