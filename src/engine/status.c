/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Characters a terminal would act on or hide: C0 and C1 controls, DEL, and
 * the invisible format characters (byte-order mark, zero-width spaces and
 * joiners, bidirectional marks and overrides).  Messages echo what a user
 * or a lesson file wrote; these are shown escaped, never sent raw. */
static unsigned hidden_cp(const unsigned char *s, int *len)
{
	if (s[0] < 0x20 || s[0] == 0x7f) {
		*len = 1;
		return s[0];
	}
	if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
		*len = 2;
		return s[1];
	}
	if (s[0] == 0xe2 && s[1] && s[2]) {
		unsigned cp = 0x2000u | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
		if ((s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 &&
		    ((cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
		     (cp >= 0x2060 && cp <= 0x2069))) {
			*len = 3;
			return cp;
		}
	}
	if (s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf) {
		*len = 3;
		return 0xfeff;
	}
	*len = 0;
	return 0;
}

void sl_escape_controls(char *dst, size_t n, const char *src)
{
	if (!n)
		return;
	size_t o = 0;
	const unsigned char *s = (const unsigned char *)src;
	while (*s) {
		int len;
		unsigned cp = hidden_cp(s, &len);
		char esc[12];
		const char *put;
		size_t pl;
		if (len) {
			if (cp == '\t')
				snprintf(esc, sizeof esc, "\\t");
			else if (cp == '\n')
				snprintf(esc, sizeof esc, "\\n");
			else if (cp < 0x80)
				snprintf(esc, sizeof esc, "\\x%02x", cp);
			else
				snprintf(esc, sizeof esc, "\\u%04x", cp);
			put = esc;
			pl = strlen(esc);
			s += len;
		} else {
			put = (const char *)s;
			pl = 1;
			s++;
		}
		if (o + pl >= n)
			break;
		memcpy(dst + o, put, pl);
		o += pl;
	}
	dst[o] = 0;
}

int sl_fail(sl_err *err, int code, const char *fmt, ...)
{
	if (err) {
		char raw[sizeof err->msg];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(raw, sizeof raw, fmt, ap);
		va_end(ap);
		sl_escape_controls(err->msg, sizeof err->msg, raw);
		err->code = code;
	}
	return code;
}

const char *sl_escape(const char *s, char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t w = 0;
	if (n == 0)
		return out;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		int plain = *p >= 0x20 && *p < 0x7f;
		if (w + (plain ? 1 : 4) >= n)
			break;
		if (plain) {
			out[w++] = (char)*p;
		} else {
			out[w++] = '\\';
			out[w++] = 'x';
			out[w++] = hex[*p >> 4];
			out[w++] = hex[*p & 15];
		}
	}
	out[w] = '\0';
	return out;
}
