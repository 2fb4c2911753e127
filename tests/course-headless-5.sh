#!/bin/sh
# SPDX-License-Identifier: MIT
# test_course's fifth share of five (lessons 05, 10, and the tests of the
# course as a whole): a test of its own, so that make check runs the
# shares beside the other tests.
COURSE_PART=5/5 exec "${SHARDLAB_BUILDDIR:-.}/tests/test_course"
