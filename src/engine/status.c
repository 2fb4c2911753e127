/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

int sl_fail(sl_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
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
