/* SPDX-License-Identifier: MIT */
/* ckpt_commit.c - where a save goes and how it commits: the target
 * directory (a new one beside, or an existing checkpoint or empty
 * directory in place, under its flock), the temporary manifest, the
 * rename, the old generation's removal, and the clean-up of what killed
 * saves left (see ckpt.h). */
#include "ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int ckpt_sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

/* ---- saving: the directory dance ---- */

/* The generation of the manifest in dir, if it is a shardlab checkpoint's
 * (read as sl_ckpt_open reads it: no link, no FIFO); anything else named
 * manifest.json (a web project's, say) is refused, never replaced. */
static int manifest_gen(const char *dir, long *gen, sl_err *err)
{
	char *text;
	size_t len;
	int rc = ckpt_read_manifest(dir, &text, &len, err);
	if (rc)
		return rc;
	json_t *root = json_loadb(text, len, 0, NULL);
	free(text);
	json_t *f = json_is_object(root) ? json_object_get(root, "format") : NULL;
	if (!json_is_string(f) || strcmp(json_string_value(f), SL_CKPT_FORMAT) != 0) {
		json_decref(root);
		return sl_fail(err, SL_EINVAL,
		               "%s holds a %s that is not a shardlab checkpoint's: refusing to "
		               "write into it",
		               dir, MANIFEST);
	}
	json_t *g = json_object_get(root, "generation");
	*gen = json_is_integer(g) && json_integer_value(g) >= 0 && json_integer_value(g) < 100000000
	           ? (long)json_integer_value(g)
	           : 0;
	json_decref(root);
	return SL_OK;
}

void ckpt_parent_of(const char *path, char *out)
{
	snprintf(out, PATHLEN, "%s", path);
	char *s = strrchr(out, '/');
	if (!s)
		snprintf(out, PATHLEN, ".");
	else if (s == out)
		s[1] = '\0';
	else
		*s = '\0';
}

/* Where a save to dir goes, without touching anything: t->final, whether
 * the checkpoint is new (t->fresh: dir is missing, built beside and
 * renamed in), its generation.  An existing directory is written in place:
 * a checkpoint (its manifest a shardlab one), an empty directory, or one
 * holding only what a killed save left (data files, a temporary manifest);
 * in place, so that "." works and a directory keeps its identity. */
static int examine_target(const char *dir, struct ckpt_target *t, sl_err *err)
{
	memset(t, 0, sizeof *t);
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0)
		return sl_fail(err, SL_EINVAL, "empty checkpoint path");
	if (len >= sizeof t->final)
		return sl_fail(err, SL_EINVAL, "%s: path too long", dir);
	memcpy(t->final, dir, len);
	t->final[len] = '\0';
	struct stat st;
	int exists = stat(t->final, &st) == 0;
	if (!exists && errno != ENOENT)
		return sl_fail(err, SL_ESYS, "%s: %s", t->final, strerror(errno));
	if (exists && !S_ISDIR(st.st_mode))
		return sl_fail(err, SL_EINVAL,
		               "%s is a file, not a checkpoint directory: refusing to replace it",
		               t->final);
	if (exists) {
		int has_manifest = 0, others = 0;
		long maxgen = 0;
		DIR *dp = opendir(t->final);
		if (!dp)
			return sl_fail(err, SL_ESYS, "%s: %s", t->final, strerror(errno));
		struct dirent *e;
		while ((e = readdir(dp))) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			long g = ckpt_data_file_gen(e->d_name);
			if (strcmp(e->d_name, MANIFEST) == 0)
				has_manifest = 1;
			else if (g > maxgen)
				maxgen = g;
			others += !ckpt_own_name(e->d_name);
		}
		closedir(dp);
		long g = 0;
		if (has_manifest) {
			int rc = manifest_gen(t->final, &g, err);
			if (rc)
				return rc;
		} else if (others) {
			return sl_fail(err, SL_EINVAL,
			               "%s is a directory that holds no checkpoint (no %s) and is "
			               "not empty: refusing to write into it",
			               t->final, MANIFEST);
		}
		t->gen = (g > maxgen ? g : maxgen) + 1;
		snprintf(t->work, sizeof t->work, "%s", t->final);
		return SL_OK;
	}
	/* A new checkpoint: built beside, renamed in. */
	t->fresh = 1;
	t->gen = 1;
	char parent[PATHLEN];
	ckpt_parent_of(t->final, parent);
	if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
		return sl_fail(err, SL_EINVAL, "%s: no directory %s to create it in", t->final,
		               parent);
	if (access(parent, W_OK) != 0)
		return sl_fail(err, SL_EINVAL, "%s: cannot write into %s", t->final, parent);
	return SL_OK;
}

int sl_ckpt_check_dest(const char *dir, sl_err *err)
{
	struct ckpt_target t;
	return examine_target(dir, &t, err);
}

/* Take the save lock of an existing directory: flock on the directory
 * itself (nothing to create, nothing a link could redirect), held until
 * the save ends.  A second save into it meanwhile fails at once. */
static int lock_dir(const char *dir, int *fd, sl_err *err)
{
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return sl_fail(err, SL_ESYS, "cannot open %s: %s", dir, strerror(errno));
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return SL_OK;
	int e = errno;
	close(*fd);
	*fd = -1;
	if (e == EWOULDBLOCK)
		return sl_fail(err, SL_ESYS,
		               "%s: another save into this checkpoint is running (it holds the "
		               "directory's lock): nothing was changed",
		               dir);
	return sl_fail(err, SL_ESYS, "cannot lock %s: %s", dir, strerror(e));
}

/* Where this save writes: a new directory beside a missing dir; else dir
 * itself, locked (*lock), looked at again under the lock. */
int ckpt_prepare_target(const char *dir, struct ckpt_target *t, int *lock, sl_err *err)
{
	*lock = -1;
	int rc = examine_target(dir, t, err);
	if (rc)
		return rc;
	if (!t->fresh) {
		if ((rc = lock_dir(t->final, lock, err)))
			return rc;
		/* Another save may have committed between the look and the lock. */
		if ((rc = examine_target(dir, t, err)) || t->fresh) {
			close(*lock);
			*lock = -1;
			return rc ? rc : sl_fail(err, SL_ESYS, "%s disappeared while saving", dir);
		}
		return SL_OK;
	}
	/* mkdir rather than mkdtemp: the directory gets the usual permissions. */
	for (int i = 0; i < 1000; i++) {
		snprintf(t->work, sizeof t->work, "%s.tmp-%ld-%d", t->final, (long)getpid(), i);
		if (mkdir(t->work, 0777) == 0)
			return SL_OK;
		if (errno != EEXIST)
			break;
	}
	return sl_fail(err, SL_ESYS, "cannot create a directory beside %s: %s", t->final,
	               strerror(errno));
}

/* Remove temporary directory `name` of parent (fd pfd) if it holds only
 * a checkpoint's files, each a regular file; never following a link. */
static int remove_stale(int pfd, const char *name)
{
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* a link, or not a directory: not a save's */
	int dfd = dup(fd);
	DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!dp) {
		if (dfd >= 0)
			close(dfd);
		close(fd);
		return 0;
	}
	int ok = 1;
	struct dirent *e;
	while (ok && (e = readdir(dp))) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		ok = ckpt_own_name(e->d_name) &&
		     fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	}
	if (ok) {
		rewinddir(dp);
		while ((e = readdir(dp)))
			if (ckpt_own_name(e->d_name))
				unlinkat(fd, e->d_name, 0);
	}
	closedir(dp);
	close(fd);
	return ok && unlinkat(pfd, name, AT_REMOVEDIR) == 0;
}

int sl_ckpt_clean_stale(const char *dir)
{
	char final[PATHLEN], parent[PATHLEN];
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0 || len >= sizeof final - 64)
		return 0;
	memcpy(final, dir, len);
	final[len] = '\0';
	const char *base = strrchr(final, '/');
	base = base ? base + 1 : final;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return 0;
	ckpt_parent_of(final, parent);
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return 0;
	int dfd = dup(pfd);
	DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!dp) {
		if (dfd >= 0)
			close(dfd);
		close(pfd);
		return 0;
	}
	size_t bl = strlen(base);
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(dp))) {
		const char *n = e->d_name;
		long pid = 0;
		int k = -1;
		char want[PATHLEN];
		/* exactly NAME.tmp-PID-N, as prepare_target makes them */
		if (strncmp(n, base, bl) != 0 || strncmp(n + bl, ".tmp-", 5) != 0 ||
		    sscanf(n + bl + 5, "%ld-%d", &pid, &k) != 2 || pid <= 0 || k < 0)
			continue;
		snprintf(want, sizeof want, "%s.tmp-%ld-%d", base, pid, k);
		if (strcmp(want, n) != 0 || pid == (long)getpid())
			continue;
		/* only a dead process's: its save can never finish */
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		removed += remove_stale(pfd, n);
	}
	closedir(dp);
	close(pfd);
	return removed;
}

/* Undo a save that failed before its commit. */
void ckpt_abandon(const struct ckpt_target *t, const sl_ckpt *plan, const int *created)
{
	char path[PATHLEN];
	for (int f = 0; f < plan->info.nfiles; f++)
		if (created[plan->files[f].writer] &&
		    ckpt_join(path, t->work, plan->files[f].name, NULL) == 0)
			unlink(path);
	if (ckpt_join(path, t->work, MANIFEST_TMP, NULL) == 0)
		unlink(path);
	if (t->fresh) {
		if (ckpt_join(path, t->work, MANIFEST, NULL) == 0)
			unlink(path);
		rmdir(t->work);
	}
}

int ckpt_write_manifest(const struct ckpt_target *t, const sl_ckpt *plan, const sl_ckpt_opts *o,
                        sl_err *err)
{
	char tmp[PATHLEN], fin[PATHLEN];
	ckpt_join(tmp, t->work, MANIFEST_TMP, NULL);
	ckpt_join(fin, t->work, MANIFEST, NULL);
	/* Under the lock a temporary manifest is a dead save's (or planted):
	 * remove the name (a link goes, not what it points to) and create ours
	 * new, never through a link. */
	if (unlink(tmp) != 0 && errno != ENOENT)
		return sl_fail(err, SL_ESYS, "cannot remove the stale %s: %s", tmp,
		               strerror(errno));
	json_t *root = ckpt_manifest_json(plan);
	if (!root)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		json_decref(root);
		return sl_fail(err, SL_ESYS, "cannot create %s: %s", tmp, strerror(errno));
	}
	char *text = json_dumps(root, JSON_INDENT(2));
	json_decref(root);
	int rc = SL_OK;
	if (!text)
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	else if (ckpt_write_at(fd, (const unsigned char *)text, strlen(text), 0) != 0 ||
	         ckpt_write_at(fd, (const unsigned char *)"\n", 1, strlen(text)) != 0 ||
	         fsync(fd) != 0)
		rc = sl_fail(err, SL_ESYS, "cannot write %s: %s", tmp, strerror(errno));
	free(text);
	if (close(fd) != 0 && !rc)
		rc = sl_fail(err, SL_ESYS, "cannot close %s: %s", tmp, strerror(errno));
	if (!rc)
		rc = ckpt_fault(o, SL_CKPT_AT_MANIFEST, -1, err);
	if (rc || !t->fresh)
		return rc;
	/* In a new directory nothing is live yet: the manifest takes its name now. */
	if (rename(tmp, fin) != 0)
		return sl_fail(err, SL_ESYS, "cannot rename %s: %s", tmp, strerror(errno));
	return SL_OK;
}

/* After the commit: remove the data files no manifest refers to any more
 * (names exactly a save's, so nothing else in the directory). */
int ckpt_remove_old(const struct ckpt_target *t, const sl_ckpt *plan, const sl_ckpt_opts *o,
                    sl_err *err)
{
	DIR *dp = opendir(t->work);
	if (!dp)
		return SL_OK; /* leftovers are harmless; the next save removes them */
	struct dirent *e;
	int rc = SL_OK, removed = 0;
	while (!rc && (e = readdir(dp))) {
		if (ckpt_data_file_gen(e->d_name) < 0)
			continue;
		int live = 0;
		for (int f = 0; f < plan->info.nfiles; f++)
			live |= strcmp(plan->files[f].name, e->d_name) == 0;
		char path[PATHLEN];
		if (live || ckpt_join(path, t->work, e->d_name, NULL))
			continue;
		if (unlink(path) == 0) {
			removed = 1;
			rc = ckpt_fault(o, SL_CKPT_AT_CLEANUP, -1, err);
		}
	}
	closedir(dp);
	if (removed)
		ckpt_sync_dir(t->work);
	return rc;
}
