/* SPDX-License-Identifier: MIT */
/* lines.c - the lesson parser's first stages: the bytes (size, line
 * length, UTF-8, no control characters) and the logical lines (a command
 * in column 1, indented continuation lines, # comments). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_internal.h"
#include "text.h"
#include "units.h"

const char *const lp_kw_names[KW_N] = {
    "title",   "minutes", "about", "track",  "say",     "setup",   "run",      "step",
    "pause",   "check",   "let",   "label",  "jump",    "finish",  "question", "menu",
    "explore", "show",    "end",   "option", "correct", "explain", "answer",   "unit",
    "right",   "wrong",   "item",  "knob",   "until",   "hint",    "demo",     "mistake",
};

/* ---- stage 1: bytes ---- */

/* Length of a valid UTF-8 sequence at s (at most n bytes), or 0. */
static int utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	int len;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if ((size_t)len > n)
		return 0;
	unsigned cp = c & (0x3f >> (len - 1));
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Check every byte and every line's length.  truncated: the buffer is the
 * first SL_LESSON_MAX_BYTES of a larger file. */
int lp_check_bytes(struct parser *P, const char *buf, size_t len, int truncated)
{
	const unsigned char *s = (const unsigned char *)buf;
	int line = 1;
	size_t col = 0;
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		if (c == '\n') {
			line++;
			col = 0;
			i++;
			continue;
		}
		if (++col > SL_LESSON_MAX_LINE) {
			lp_diag(P, line,
			        "line longer than %d bytes: a lesson line holds one command; "
			        "continue long text on indented lines",
			        SL_LESSON_MAX_LINE);
			return -1;
		}
		if (c == '\r' && i + 1 < len && s[i + 1] != '\n') {
			lp_diag(P, line,
			        "not text: a carriage return inside the line at column %zu", col);
			return -1;
		}
		/* The rule for any file's text (text.h), but for the tab and the
		 * carriage return of a CRLF line, which the grammar reads. */
		unsigned cp;
		if (c != '\t' && c != '\r' && sl_text_refused(buf + i, len - i, &cp)) {
			if (cp < 0x20 || cp == 0x7f)
				lp_diag(
				    P, line,
				    "not text: byte 0x%02x at column %zu (a lesson is UTF-8 text)",
				    c, col);
			else
				lp_diag(
				    P, line,
				    "not text: %s U+%04X at column %zu (a lesson is UTF-8 text)",
				    sl_text_what(cp), cp, col);
			return -1;
		}
		int w = utf8_len(s + i, len - i);
		if (w == 0) {
			if (truncated && len - i < 4)
				break;
			lp_diag(P, line, "not UTF-8 text: byte 0x%02x at column %zu", c, col);
			return -1;
		}
		i += (size_t)w;
	}
	if (truncated) {
		lp_diag(P, line, "the lesson is larger than %d KiB: a lesson is a short text file",
		        SL_LESSON_MAX_BYTES / 1024);
		return -1;
	}
	return 0;
}

/* ---- stage 2: logical lines ---- */

static int kw_find(const char *w)
{
	for (int i = 0; i < KW_N; i++)
		if (strcmp(w, lp_kw_names[i]) == 0)
			return i;
	return -1;
}

static int add_lline(struct parser *P, int no, int kw, const char *rest, size_t n)
{
	if (P->nll == P->capll) {
		int cap = P->capll ? P->capll * 2 : 64;
		struct lline *ll = realloc(P->ll, (size_t)cap * sizeof *ll);
		if (!ll)
			return -1;
		P->ll = ll;
		P->capll = cap;
	}
	char *r = lp_strndup(rest, n);
	if (!r)
		return -1;
	P->ll[P->nll++] = (struct lline){no, kw, r, n};
	return 0;
}

int lp_split_lines(struct parser *P, const char *buf, size_t len)
{
	int line = 0, open = 0; /* a command that continuation lines may extend */
	for (size_t i = 0; i < len;) {
		size_t e = i;
		while (e < len && buf[e] != '\n')
			e++;
		line++;
		size_t end = e;
		while (end > i &&
		       (buf[end - 1] == '\r' || buf[end - 1] == ' ' || buf[end - 1] == '\t'))
			end--;
		const char *s = buf + i;
		size_t n = end - i;
		i = e + 1;
		size_t lead = 0;
		while (lead < n && (s[lead] == ' ' || s[lead] == '\t'))
			lead++;
		if (lead == n) { /* blank: ends the command */
			open = 0;
			continue;
		}
		if (s[lead] == '#')
			continue;
		if (lead > 0) {
			const char *t = s + lead;
			size_t tn = n - lead;
			if (!open) {
				lp_diag(
				    P, line,
				    "an indented line continues the command above it, but there is "
				    "none "
				    "(commands start in column 1; a blank line ends a command)");
				continue;
			}
			struct lline *L = &P->ll[P->nll - 1];
			size_t ol = L->len;
			if (ol + 1 + tn > SL_LESSON_MAX_TEXT) {
				lp_diag(P, line,
				        "the command from line %d is longer than %d bytes with its "
				        "continuation lines",
				        L->no, SL_LESSON_MAX_TEXT);
				open = 0;
				continue;
			}
			char *r = realloc(L->rest, ol + tn + 2);
			if (!r)
				return -1;
			if (ol)
				r[ol++] = ' ';
			memcpy(r + ol, t, tn);
			r[ol + tn] = 0;
			L->rest = r;
			L->len = ol + tn;
			continue;
		}
		size_t wl = 0;
		while (wl < n && (islower((unsigned char)s[wl]) || s[wl] == '-'))
			wl++;
		if (wl == 0 || (wl < n && s[wl] != ' ' && s[wl] != '\t')) {
			size_t show = 0;
			while (show < n && show < 20 && s[show] != ' ' && s[show] != '\t')
				show++;
			lp_diag(
			    P, line,
			    "expected a command such as say, setup, run or check at the start of "
			    "the line, found '%.*s'",
			    (int)show, s);
			open = 0;
			continue;
		}
		char w[32];
		if (wl >= sizeof w) {
			lp_diag(P, line, "unknown command '%.20s...'", s);
			open = 0;
			continue;
		}
		memcpy(w, s, wl);
		w[wl] = 0;
		int kw = kw_find(w);
		if (kw < 0) {
			const char *near = sl_closest(w, lp_kw_names, KW_N);
			if (near)
				lp_diag(P, line, "unknown command '%s' (did you mean '%s'?)", w,
				        near);
			else
				lp_diag(
				    P, line,
				    "unknown command '%s' (commands: title minutes about say setup "
				    "run "
				    "step pause check let label jump finish question menu explore "
				    "show)",
				    w);
			open = 0;
			continue;
		}
		size_t r = wl;
		while (r < n && (s[r] == ' ' || s[r] == '\t'))
			r++;
		if (add_lline(P, line, kw, s + r, n - r))
			return -1;
		open = 1;
	}
	return 0;
}
