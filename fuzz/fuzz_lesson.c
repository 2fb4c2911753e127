/* SPDX-License-Identifier: MIT */
/* fuzz_lesson.c - libFuzzer harness: the lesson parser and its whole-file
 * check (labels, jumps, parameters, expressions) on arbitrary bytes.  A
 * lesson that loads is also asked for every label and line it names. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lesson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sl_lesson *l = NULL;
	sl_lesson_diags diags = {0};
	sl_err err = {0};
	if (sl_lesson_parse("fuzz.lesson", (const char *)data, size, &l, &diags, &err) == SL_OK) {
		int n = sl_lesson_length(l);
		for (int pos = 0; pos < n && pos < 64; pos++) {
			char line[16];
			snprintf(line, sizeof line, "%d", sl_lesson_line_at(l, pos));
			(void)sl_lesson_locate(l, line, &err);
		}
		(void)sl_lesson_title(l);
		(void)sl_lesson_hash(l);
		sl_lesson_free(l);
	}
	return 0;
}
