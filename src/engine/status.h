/* SPDX-License-Identifier: MIT */
/* status.h - error values returned by the engine.
 *
 * The engine never prints or exits: a call that fails returns a non-zero
 * code and fills an sl_err with one human-readable line.  The front end
 * decides what to do with it. */
#ifndef SL_STATUS_H
#define SL_STATUS_H

#include <stddef.h>

enum sl_code {
	SL_OK = 0,
	SL_EINVAL,  /* bad argument or configuration */
	SL_EDEVMEM, /* an emulated device ran out of memory */
	SL_ENOMEM,  /* the host ran out of memory */
	SL_ECANCEL, /* the run was cancelled (another device failed, or quit) */
	SL_ESYS,    /* an operating-system call failed */
};

typedef struct sl_err {
	int code;
	char msg[256];
} sl_err;

/* Copy src to dst (n bytes with the NUL), with control characters and
 * invisible format characters escaped (\t, \x1b, \u009b, \ufeff): a
 * message stays one visible line whatever it quotes. */
void sl_escape_controls(char *dst, size_t n, const char *src);

/* Fill err (if not NULL) with code and a printf-style message, escaped as
 * by sl_escape_controls; returns code. */
int sl_fail(sl_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* s made safe to print into out (n bytes): control characters and bytes
 * outside ASCII become \xNN, so a string read from a file (a manifest's
 * names) cannot send escape sequences to a terminal.  Returns out. */
const char *sl_escape(const char *s, char *out, size_t n);

#endif
