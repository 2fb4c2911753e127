/* SPDX-License-Identifier: MIT */
/* tmputil.h - scratch names for the suites: under $TMPDIR when it is set (so
 * a run can be given a directory of its own), else /tmp; and removing a
 * scratch tree whatever a test left in it. */
#ifndef SL_TMPUTIL_H
#define SL_TMPUTIL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

/* "$TMPDIR/NAME" (NAME ends in XXXXXX for mkstemp or mkdtemp) into buf. */
static inline char *tu_tmpname(char *buf, size_t n, const char *name)
{
	const char *dir = getenv("TMPDIR");
	snprintf(buf, n, "%s/%s", dir && *dir ? dir : "/tmp", name);
	return buf;
}

static inline int tu_rm_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
	(void)s;
	(void)flag;
	(void)f;
	return remove(p);
}

/* Remove path and everything below it; links are removed, not followed. */
static inline void tu_rm_rf(const char *path)
{
	nftw(path, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
