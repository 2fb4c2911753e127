/* SPDX-License-Identifier: MIT */
/* text.c - the one rule for text read from a file (text.h). */
#include "text.h"

int sl_text_refused(const char *str, size_t n, unsigned *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	if (n == 0)
		return 0;
	if (s[0] < 0x20 || s[0] == 0x7f) {
		*cp = s[0];
		return 1;
	}
	/* C1 controls: a terminal takes U+009B as ESC [, so it starts a
	 * sequence just as a raw escape does. */
	if (n >= 2 && s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
		*cp = s[1];
		return 2;
	}
	/* Overrides and isolates reorder what follows them on the line, so a
	 * title could show text other than what it holds. */
	if (n >= 3 && s[0] == 0xe2 &&
	    ((s[1] == 0x80 && s[2] >= 0xaa && s[2] <= 0xae) ||
	     (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9))) {
		*cp = 0x2000u | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
		return 3;
	}
	return 0;
}

size_t sl_text_check(const char *s, size_t n, unsigned *cp)
{
	for (size_t i = 0; i < n; i++)
		if (sl_text_refused(s + i, n - i, cp))
			return i;
	return n;
}

const char *sl_text_what(unsigned cp)
{
	if (cp >= 0x202a && cp <= 0x202e)
		return "bidirectional override";
	if (cp >= 0x2066 && cp <= 0x2069)
		return "bidirectional isolate";
	return "control character";
}
