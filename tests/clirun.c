/* SPDX-License-Identifier: MIT */
/* clirun.c - running the shardlab program from a test (clirun.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "clirun.h"

#ifndef SHARDLAB_BIN
#error "the Makefile passes -DSHARDLAB_BIN"
#endif

static char *slurp(int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *s = malloc(cap);
	assert_non_null(s);
	lseek(fd, 0, SEEK_SET);
	for (;;) {
		if (n + 4096 > cap) {
			cap *= 2;
			s = realloc(s, cap);
			assert_non_null(s);
		}
		ssize_t k = read(fd, s + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	s[n] = '\0';
	if (len)
		*len = n;
	return s;
}

char *tu_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	char *s = slurp(fd, len);
	close(fd);
	return s;
}

static int temp_fd(void)
{
	const char *dir = getenv("TMPDIR");
	char path[512];
	snprintf(path, sizeof path, "%s/shardlab-test.XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

void tu_run_to(const char *args, const char *out_path, tu_result *r)
{
	char buf[4096];
	char *argv[64];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", args);
	argv[argc++] = (char *)"shardlab";
	for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;

	int fo = out_path ? open(out_path, O_WRONLY) : temp_fd(), fe = temp_fd();
	assert_true(fo >= 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fo, 1);
		dup2(fe, 2);
		alarm(300);
		execv(SHARDLAB_BIN, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	memset(r, 0, sizeof *r);
	r->exited = WIFEXITED(st);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	r->core = WIFSIGNALED(st) && WCOREDUMP(st);
	r->out = out_path ? strdup("") : slurp(fo, NULL);
	r->err = slurp(fe, NULL);
	close(fo);
	close(fe);
}

void tu_run(const char *args, tu_result *r)
{
	tu_run_to(args, NULL, r);
}

void tu_result_free(tu_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof *r);
}

int tu_count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

void tu_expect_one_error(const char *args, int want, const tu_result *r)
{
	if (!r->exited)
		fail_msg("'%s' died of signal %d%s", args, r->signal,
		         r->core ? " (core dumped)" : "");
	if (r->status != want)
		fail_msg("'%s' exited %d, want %d; stderr: %s", args, r->status, want, r->err);
	if (tu_count_lines(r->err) != 1 || strncmp(r->err, "shardlab: ", 10) != 0 ||
	    strlen(r->err) < 14)
		fail_msg("'%s': want one line 'shardlab: ...' on stderr, got: [%s]", args, r->err);
}

json_t *tu_run_json(const char *args)
{
	tu_result r;
	tu_run(args, &r);
	if (r.status != 0)
		fail_msg("'%s' exited %d: %s", args, r.status, r.err);
	json_error_t jerr;
	json_t *j = json_loads(r.out, 0, &jerr);
	if (!j)
		fail_msg("'%s': not JSON: %s", args, jerr.text);
	tu_result_free(&r);
	return j;
}

double tu_num(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_number(v))
		fail_msg("no number '%s'", key);
	return json_number_value(v);
}
