/* SPDX-License-Identifier: MIT */
/* catalog.c - lesson lookup by name and the list for the menu. */
#include "catalog.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lesson.h"
#include "progress.h"

#ifndef SL_PKGDATADIR
#define SL_PKGDATADIR "/usr/local/share/shardlab"
#endif

#define MAX_DIRS 8
#define MAX_LESSONS 200

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The search path.  $SHARDLAB_LESSON_PATH, when set, is the whole path:
 * a test or an author names exactly the lessons it means, and nothing
 * installed or in a source tree leaks in.  Otherwise a program run from its
 * build tree (not installed) looks first in the source tree's lessons/
 * beside it or one level up, so a developer sees the lessons being edited
 * rather than an older installed copy; then the installed lessons. */
static int dirs(char d[MAX_DIRS][512])
{
	int n = 0;
	const char *env = getenv("SHARDLAB_LESSON_PATH");
	if (env && *env) {
		while (env && n < MAX_DIRS) {
			const char *c = strchr(env, ':');
			size_t len = c ? (size_t)(c - env) : strlen(env);
			if (len > 0 && len < 512) {
				memcpy(d[n], env, len);
				d[n++][len] = 0;
			}
			env = c ? c + 1 : NULL;
		}
		return n;
	}
	char exe[400];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(d[n], 512, "%s/lessons", exe);
			if (is_dir(d[n]))
				n++;
			snprintf(d[n], 512, "%s/../lessons", exe);
			if (is_dir(d[n]))
				n++;
		}
	}
	snprintf(d[n++], 512, "%s/lessons", SL_PKGDATADIR);
	return n;
}

static int is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lesson file names (without .lesson) in dir, sorted. */
static int scan(const char *dir, char ***out)
{
	*out = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	char **names = calloc(MAX_LESSONS, sizeof *names);
	struct dirent *e;
	while (names && (e = readdir(d)) && n < MAX_LESSONS) {
		size_t l = strlen(e->d_name);
		if (l <= 7 || e->d_name[0] == '.' || strcmp(e->d_name + l - 7, ".lesson") != 0)
			continue;
		if ((names[n] = strndup(e->d_name, l - 7)))
			n++;
	}
	closedir(d);
	if (names)
		qsort(names, (size_t)n, sizeof *names, cmp_str);
	*out = names;
	return n;
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* "02-colwise" matches 02-colwise, 02 and colwise. */
static int matches(const char *file, const char *name)
{
	size_t nl = strlen(name);
	if (strcmp(file, name) == 0)
		return 1;
	if (strncmp(file, name, nl) == 0 && file[nl] == '-')
		return 1;
	const char *dash = strchr(file, '-');
	if (dash && dash > file && strspn(file, "0123456789") == (size_t)(dash - file) &&
	    strcmp(dash + 1, name) == 0)
		return 1;
	return 0;
}

int sl_lesson_find(const char *name, char *path, size_t n, sl_err *err)
{
	if (strchr(name, '/') || is_file(name)) {
		struct stat st;
		if (stat(name, &st) != 0)
			return sl_fail(err, SL_EINVAL, "%s: no such lesson file", name);
		if (S_ISDIR(st.st_mode))
			return sl_fail(err, SL_EINVAL, "%s: is a directory, not a lesson file",
			               name);
		if (!S_ISREG(st.st_mode))
			return sl_fail(err, SL_EINVAL,
			               "%s: not a regular file (a lesson is a text file)", name);
		snprintf(path, n, "%s", name);
		return SL_OK;
	}
	char d[MAX_DIRS][512];
	int nd = dirs(d);
	char known[300] = "";
	for (int i = 0; i < nd; i++) {
		char **names;
		int nn = scan(d[i], &names), hits = 0, hit = -1;
		char list[300] = "";
		for (int j = 0; j < nn; j++) {
			if (!known[0] || strlen(known) + strlen(names[j]) + 2 < sizeof known)
				snprintf(known + strlen(known), sizeof known - strlen(known),
				         "%s%s", known[0] ? " " : "", names[j]);
			if (matches(names[j], name)) {
				hits++;
				hit = j;
				if (strlen(list) + strlen(names[j]) + 2 < sizeof list)
					snprintf(list + strlen(list), sizeof list - strlen(list),
					         "%s%s", list[0] ? " " : "", names[j]);
			}
		}
		if (hits == 1)
			snprintf(path, n, "%s/%s.lesson", d[i], names[hit]);
		free_names(names, nn);
		if (hits == 1)
			return SL_OK;
		if (hits > 1)
			return sl_fail(err, SL_EINVAL, "'%s' names several lessons: %s", name,
			               list);
	}
	if (known[0])
		return sl_fail(err, SL_EINVAL, "no lesson named '%s' (lessons: %s)", name, known);
	return sl_fail(err, SL_EINVAL,
	               "no lesson named '%s', and no lessons installed in %s/lessons", name,
	               SL_PKGDATADIR);
}

int sl_catalog_list(sl_catalog_entry **out, int *count, sl_err *err)
{
	char d[MAX_DIRS][512];
	int nd = dirs(d);
	*out = NULL;
	*count = 0;
	for (int i = 0; i < nd; i++) {
		char **names;
		int nn = scan(d[i], &names);
		if (nn == 0) {
			free_names(names, nn);
			continue;
		}
		sl_catalog_entry *e = calloc((size_t)nn, sizeof *e);
		if (!e) {
			free_names(names, nn);
			return sl_fail(err, SL_ENOMEM, "out of memory");
		}
		for (int j = 0; j < nn; j++) {
			sl_lesson *l;
			sl_err le = {0};
			int len =
			    snprintf(e[j].path, sizeof e[j].path, "%s/%s.lesson", d[i], names[j]);
			if (len < 0 || (size_t)len >= sizeof e[j].path) {
				snprintf(e[j].error, sizeof e[j].error,
				         "the lesson's path is too long");
				continue;
			}
			sl_progress_id(e[j].path, e[j].id, sizeof e[j].id);
			if (sl_lesson_load(e[j].path, &l, NULL, &le) == SL_OK) {
				e[j].ok = 1;
				snprintf(e[j].title, sizeof e[j].title, "%s", sl_lesson_title(l));
				snprintf(e[j].about, sizeof e[j].about, "%s", sl_lesson_about(l));
				e[j].minutes = sl_lesson_minutes(l);
				e[j].track = (int)sl_lesson_track(l);
				sl_lesson_free(l);
			} else {
				snprintf(e[j].title, sizeof e[j].title, "%s", names[j]);
				snprintf(e[j].error, sizeof e[j].error, "%s", le.msg);
			}
		}
		free_names(names, nn);
		*out = e;
		*count = nn;
		return SL_OK;
	}
	return SL_OK;
}

sl_course_time sl_catalog_time(const sl_catalog_entry *cat, int n)
{
	sl_course_time t = {0};
	for (int i = 0; i < n; i++) {
		if (!cat[i].ok)
			continue;
		t.all += cat[i].minutes;
		if (cat[i].track == SL_TRACK_CLASS) {
			t.class_minutes += cat[i].minutes;
			t.nclass++;
		} else if (cat[i].track == SL_TRACK_OPTIONAL) {
			t.optional += cat[i].minutes;
			t.noptional++;
		}
	}
	return t;
}

int sl_catalog_next(const sl_catalog_entry *cat, int n)
{
	int last_done = -1;
	for (int i = 0; i < n; i++) {
		sl_progress p;
		if (!cat[i].ok || sl_progress_load(cat[i].id, &p, NULL) != SL_OK)
			continue;
		if (p.position > 0)
			return i;
		if (p.done)
			last_done = i;
	}
	for (int i = last_done + 1; i < n; i++)
		if (cat[i].ok)
			return i;
	return 0;
}
