/* SPDX-License-Identifier: MIT */
/* text.h - the one rule for text read from a file (a lesson, a hardware or
 * model file, a checkpoint's manifest) that may reach a terminal. */
#ifndef SL_TEXT_H
#define SL_TEXT_H

#include <stddef.h>

/* A character the rule refuses: a C0 control, DEL, a C1 control (U+0080 to
 * U+009F, the 8-bit CSI U+009B among them) or a bidirectional override or
 * isolate (U+202A to U+202E, U+2066 to U+2069).  Its length in bytes at s
 * (n bytes there, UTF-8) with its code point in *cp, or 0 if it may stay.
 * A format that needs tab or newline lets them through before asking. */
int sl_text_refused(const char *s, size_t n, unsigned *cp);

/* The offset of the first refused character in s (n bytes), with its code
 * point in *cp; n if there is none. */
size_t sl_text_check(const char *s, size_t n, unsigned *cp);

/* What a refused code point is, for a message: "control character",
 * "bidirectional override" or "bidirectional isolate". */
const char *sl_text_what(unsigned cp);

#endif
