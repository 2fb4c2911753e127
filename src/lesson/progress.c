/* SPDX-License-Identifier: MIT */
/* progress.c - progress files in the XDG state directory, written atomically. */
#include "progress.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sl_state_dir(char *buf, size_t n, sl_err *err)
{
	const char *x = getenv("XDG_STATE_HOME");
	int len;
	/* The XDG spec ignores a relative XDG_STATE_HOME. */
	if (x && x[0] == '/')
		len = snprintf(buf, n, "%s/shardlab", x);
	else {
		const char *home = getenv("HOME");
		if (!home || home[0] != '/')
			return sl_fail(err, SL_EINVAL,
			               "neither XDG_STATE_HOME nor HOME is an absolute path: "
			               "nowhere to keep progress");
		len = snprintf(buf, n, "%s/.local/state/shardlab", home);
	}
	if (len < 0 || (size_t)len >= n)
		return sl_fail(err, SL_EINVAL, "the state directory's path is too long");
	return SL_OK;
}

void sl_progress_id(const char *path, char *id, size_t n)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t len = strlen(b);
	if (len > 7 && strcmp(b + len - 7, ".lesson") == 0)
		len -= 7;
	size_t j = 0;
	for (size_t i = 0; i < len && j + 1 < n; i++) {
		char c = b[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		         (c >= '0' && c <= '9') || c == '-' || c == '_' || (c == '.' && j > 0);
		id[j++] = ok ? c : '_';
	}
	if (j == 0 && n > 1)
		id[j++] = '_';
	if (n)
		id[j] = 0;
}

static int mkdirs(const char *path, sl_err *err)
{
	char p[1024];
	snprintf(p, sizeof p, "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0700) && errno != EEXIST)
			return sl_fail(err, SL_ESYS, "cannot create %s: %s", p, strerror(errno));
		*s = '/';
	}
	if (mkdir(p, 0700) && errno != EEXIST)
		return sl_fail(err, SL_ESYS, "cannot create %s: %s", p, strerror(errno));
	return SL_OK;
}

static int file_of(const char *id, char *buf, size_t n, sl_err *err)
{
	char dir[900];
	if (sl_state_dir(dir, sizeof dir, err))
		return SL_EINVAL;
	if (!id[0] || strchr(id, '/') || id[0] == '.')
		return sl_fail(err, SL_EINVAL, "'%s' is not a lesson id", id);
	int len = snprintf(buf, n, "%s/progress/%s", dir, id);
	if (len < 0 || (size_t)len >= n)
		return sl_fail(err, SL_EINVAL, "the progress file's path is too long");
	return SL_OK;
}

int sl_progress_load(const char *id, sl_progress *p, sl_err *err)
{
	char path[1024], buf[1024];
	memset(p, 0, sizeof *p);
	p->position = -1;
	if (file_of(id, path, sizeof path, err))
		return SL_EINVAL;
	FILE *f = fopen(path, "r");
	if (!f)
		return SL_OK;
	int version = 0;
	while (fgets(buf, sizeof buf, f)) {
		int a, b, c, d;
		uint64_t h;
		if (sscanf(buf, "shardlab-progress %d", &a) == 1)
			version = a;
		else if (sscanf(buf, "done %d", &a) == 1)
			p->done = a != 0;
		else if (sscanf(buf, "score %d %d", &a, &b) == 2 && a >= 0 && b >= a) {
			p->right = a;
			p->asked = b;
		} else if (sscanf(buf, "resume %d %d %d %" SCNx64, &a, &b, &c, &h) == 4 && a >= 0 &&
		           b >= 0 && c >= b) {
			p->position = a;
			p->now_right = b;
			p->now_asked = c;
			p->hash = h;
		}
		(void)d;
	}
	fclose(f);
	if (version != 1) { /* not ours, or from a later version: start afresh */
		memset(p, 0, sizeof *p);
		p->position = -1;
	}
	return SL_OK;
}

int sl_progress_save(const char *id, const sl_progress *p, sl_err *err)
{
	char path[1024], dir[1024], tmp[1100], buf[256];
	if (file_of(id, path, sizeof path, err))
		return SL_EINVAL;
	snprintf(dir, sizeof dir, "%s", path);
	*strrchr(dir, '/') = 0;
	if (mkdirs(dir, err))
		return SL_ESYS;
	int len = snprintf(buf, sizeof buf, "shardlab-progress 1\ndone %d\nscore %d %d\n", p->done,
	                   p->right, p->asked);
	if (p->position >= 0)
		len += snprintf(buf + len, sizeof buf - (size_t)len,
		                "resume %d %d %d %016" PRIx64 "\n", p->position, p->now_right,
		                p->now_asked, p->hash);
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sl_fail(err, SL_ESYS, "cannot write %s: %s", tmp, strerror(errno));
	ssize_t w = write(fd, buf, (size_t)len);
	int e = errno;
	if (w != len || fsync(fd) || close(fd)) {
		if (w == len)
			e = errno;
		unlink(tmp);
		return sl_fail(err, SL_ESYS, "cannot write %s: %s", tmp, strerror(e));
	}
	if (rename(tmp, path)) {
		e = errno;
		unlink(tmp);
		return sl_fail(err, SL_ESYS, "cannot replace %s: %s", path, strerror(e));
	}
	return SL_OK;
}

int sl_progress_forget(const char *id, sl_err *err)
{
	char path[1024];
	if (file_of(id, path, sizeof path, err))
		return SL_EINVAL;
	if (unlink(path) && errno != ENOENT)
		return sl_fail(err, SL_ESYS, "cannot remove %s: %s", path, strerror(errno));
	return SL_OK;
}

/* A progress file of ours: a regular file (not a link) whose first line
 * says so. */
static int ours(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat st;
	char head[32] = "";
	ssize_t n =
	    fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, head, sizeof head - 1) : 0;
	close(fd);
	if (n <= 0)
		return 0;
	head[n] = 0;
	return strncmp(head, "shardlab-progress ", 18) == 0;
}

int sl_progress_forget_all(int *removed, sl_err *err)
{
	char dir[1024], d2[1100];
	if (removed)
		*removed = 0;
	if (sl_state_dir(dir, sizeof dir, err))
		return SL_EINVAL;
	snprintf(d2, sizeof d2, "%s/progress", dir);
	DIR *d = opendir(d2);
	if (!d)
		return errno == ENOENT
		           ? SL_OK
		           : sl_fail(err, SL_ESYS, "cannot read %s: %s", d2, strerror(errno));
	int rc = SL_OK;
	struct dirent *e;
	while ((e = readdir(d))) {
		char id[256];
		/* Only names an id can have: nothing the lessons did not write. */
		sl_progress_id(e->d_name, id, sizeof id);
		if (e->d_name[0] == '.' || strcmp(id, e->d_name) != 0 || !ours(dirfd(d), e->d_name))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) && errno != ENOENT) {
			rc = sl_fail(err, SL_ESYS, "cannot remove %s/%s: %s", d2, e->d_name,
			             strerror(errno));
			break;
		}
		if (removed)
			(*removed)++;
	}
	closedir(d);
	return rc;
}
