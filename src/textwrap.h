/* SPDX-License-Identifier: MIT */
/* textwrap.h - long sentences for a terminal: the command line's text
 * (lessons run headless, plan's and compare's explanations). */
#ifndef SL_TEXTWRAP_H
#define SL_TEXTWRAP_H

#include <stdio.h>

/* Print s wrapped at width columns: the first line starts with indent
 * spaces and first, the others are indented to match; a final newline. */
void sl_print_wrapped(FILE *out, const char *s, int indent, const char *first, int width);

#endif
