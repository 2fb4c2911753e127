/* SPDX-License-Identifier: MIT */
/* textwrap.c - long sentences for a terminal (textwrap.h). */
#include "textwrap.h"

#include <string.h>

void sl_print_wrapped(FILE *out, const char *s, int indent, const char *first, int width)
{
	int col = fprintf(out, "%*s%s", indent, "", first);
	int start = col;
	while (*s) {
		while (*s == ' ')
			s++;
		size_t w = strcspn(s, " ");
		if (!w)
			break;
		if (col > start && col + 1 + (int)w > width) {
			fprintf(out, "\n%*s", start, "");
			col = start;
		} else if (col > start) {
			fputc(' ', out);
			col++;
		}
		fwrite(s, 1, w, out);
		col += (int)w;
		s += w;
	}
	fputc('\n', out);
}
