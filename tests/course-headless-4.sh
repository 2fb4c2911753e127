#!/bin/sh
# SPDX-License-Identifier: MIT
# test_course's fourth share of five (lessons 04, 09, 14): a test of
# its own, so that make check runs the shares beside the other tests.
COURSE_PART=4/5 exec "${SHARDLAB_BUILDDIR:-.}/tests/test_course"
