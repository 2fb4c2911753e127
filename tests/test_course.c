/* SPDX-License-Identifier: MIT */
/* test_course.c - the course in lessons/: `shardlab check` passes on every
 * lesson, and every lesson runs to its end with every check holding.
 *
 * Each lesson is played through by the headless runner (`shardlab lesson
 * --headless --demo`): the answer it expects to every question and its demo
 * to every explore, typed as a learner would; the runner fails if any of
 * them is judged wrong or a check does not hold.  No question's answer is
 * in the transcript between the learner's previous input and the question,
 * and `shardlab check` holds every question to its rules (test_quiz_lint
 * plants lessons that break them).
 *
 * COURSE_PART=K/N runs the Kth of N shares: every Nth lesson played from
 * the Kth, and the other tests in the last share only; make check runs the
 * N shares as tests of their own (tests/test_course-K.sh), side by side. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "tmputil.h"

#include "cli.h"
#include "catalog.h"
#include "headless.h"
#include "lesson.h"

#ifndef LESSONS_DIR
#error "LESSONS_DIR must name the lessons directory of the source tree"
#endif

static char *files[64];
static int nfiles;
/* This run's share of the course (COURSE_PART=K/N): 1 of 1 unless told. */
static int share = 1, shares = 1;

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_lessons(void)
{
	DIR *d = opendir(LESSONS_DIR);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && nfiles < 64) {
		size_t l = strlen(e->d_name);
		if (l > 7 && strcmp(e->d_name + l - 7, ".lesson") == 0 &&
		    asprintf(&files[nfiles], "%s/%s", LESSONS_DIR, e->d_name) > 0)
			nfiles++;
	}
	closedir(d);
	qsort(files, (size_t)nfiles, sizeof *files, cmp);
}

static void test_check_all(void **state)
{
	(void)state;
	assert_int_equal(nfiles, 15); /* the course the issues list */
	char *argv[66] = {"check"};
	for (int i = 0; i < nfiles; i++)
		argv[i + 1] = files[i];
	/* The very code of `shardlab check`, on every lesson at once. */
	FILE *saved = stdout;
	stdout = fopen("/dev/null", "w");
	int rc = sl_cmd_check(nfiles + 1, argv);
	fclose(stdout);
	stdout = saved;
	assert_int_equal(rc, 0);
	/* And each one's length is in the 5 to 15 minutes the course promises. */
	for (int i = 0; i < nfiles; i++) {
		sl_lesson *l;
		sl_err err = {0};
		assert_int_equal(sl_lesson_load(files[i], &l, NULL, &err), SL_OK);
		assert_in_range(sl_lesson_minutes(l), 5, 15);
		sl_lesson_free(l);
	}
}

/* Count what a lesson holds, from its text: questions and their
 * explanations are the lesson's promise to the learner. */
static void census(const char *path, int *questions, int *checks, int *runs)
{
	FILE *f = fopen(path, "r");
	char line[1200];
	*questions = *checks = *runs = 0;
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		*questions += strncmp(line, "question ", 9) == 0;
		*checks += strncmp(line, "check ", 6) == 0;
		*runs += strncmp(line, "run ", 4) == 0;
	}
	fclose(f);
}

/* ---- no question answered before it is asked ---- */

/* The ways a transcript writes v (in each unit of its kind): "%.3g" and a
 * few fixed precisions, trailing zeros trimmed, two significant digits at
 * least (a lone "2" is any count). */
static int renders(double v, const char *unit, char out[][32], int max)
{
	static const struct {
		const char *u;
		double scale;
		int kind;
	} units[] = {
	    {"s", 1, 1},    {"ms", 1e-3, 1},    {"us", 1e-6, 1},       {"ns", 1e-9, 1},
	    {"B", 1, 2},    {"KiB", 1024.0, 2}, {"MiB", 1048576.0, 2}, {"GiB", 1073741824.0, 2},
	    {"kB", 1e3, 2}, {"MB", 1e6, 2},     {"GB", 1e9, 2}};
	double vals[16];
	int nv = 0, kind = 0;
	double base = v;
	vals[nv++] = v;
	if (strcmp(unit, "%") == 0)
		vals[nv++] = v / 100;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(unit, units[i].u) == 0) {
			kind = units[i].kind;
			base = v * units[i].scale;
		}
	for (size_t i = 0; kind && i < sizeof units / sizeof units[0]; i++)
		if (units[i].kind == kind && nv < 16)
			vals[nv++] = base / units[i].scale;
	int n = 0;
	for (int i = 0; i < nv; i++)
		for (int f = 0; f < 5 && n < max; f++) {
			char b[32];
			/* %.3g, %.4g, %.1f, %.2f, %.3f */
			if (f < 2)
				snprintf(b, sizeof b, "%.*g", f + 3, vals[i]);
			else
				snprintf(b, sizeof b, "%.*f", f - 1, vals[i]);
			if (strchr(b, 'e'))
				continue;
			if (strchr(b, '.')) {
				size_t l = strlen(b);
				while (l && b[l - 1] == '0')
					b[--l] = 0;
				if (l && b[l - 1] == '.')
					b[--l] = 0;
			}
			int sig = 0, lead = 1;
			for (const char *c = b; *c; c++)
				if (*c >= '0' && *c <= '9') {
					if (*c != '0')
						lead = 0;
					sig += !lead;
				}
			int dup = 0;
			for (int k = 0; k < n; k++)
				dup |= strcmp(out[k], b) == 0;
			if (sig >= 2 && !dup)
				snprintf(out[n++], 32, "%s", b);
		}
	return n;
}

/* Is num in text [a, b) as a number of its own (no digit or point
 * around it)? */
static const char *has_number(const char *a, const char *b, const char *num)
{
	size_t l = strlen(num);
	for (const char *p = a; p + l <= b; p++) {
		if (strncmp(p, num, l) != 0)
			continue;
		int before = p > a && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.');
		int after = p + l < b && p[l] >= '0' && p[l] <= '9';
		if (!before && !after)
			return p;
	}
	return NULL;
}

static const char *has_text(const char *a, const char *b, const char *t)
{
	size_t l = strlen(t);
	for (const char *p = a; p + l <= b; p++)
		if (strncasecmp(p, t, l) == 0)
			return p;
	return NULL;
}

/* In a played-through transcript, the text between the learner's last
 * input (or the lesson's first narration) and a question never states
 * that question's answer: not its figure in any usual rendering, not the
 * right choice's words.  Predict first, then observe. */
static void no_answer_before_question(const char *file, const char *out)
{
	const char *seg = strstr(out, "\n\n"); /* after the title and about */
	if (!seg)
		return;
	for (const char *line = seg; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strncmp(line, "answer> ", 8) || !strncmp(line, "choice> ", 8) ||
		    !strncmp(line, "knob> ", 6)) {
			seg = line;
			continue;
		}
		if (strncmp(line, "[question] ", 11) != 0)
			continue;
		const char *ans = strstr(line, "\nanswer> ");
		assert_non_null(ans);
		ans += 9;
		char a[128];
		size_t al = strcspn(ans, "\n");
		snprintf(a, sizeof a, "%.*s", (int)(al < sizeof a ? al : sizeof a - 1), ans);
		char qtext[100];
		snprintf(qtext, sizeof qtext, "%.*s", (int)strcspn(line, "\n"), line);
		if (a[0] >= 'a' && a[0] <= 'z' && !a[1]) {
			char pat[8];
			snprintf(pat, sizeof pat, "\n  %c) ", a[0]);
			const char *c = strstr(line, pat);
			assert_true(c && c < ans);
			c += strlen(pat);
			char choice[200];
			snprintf(choice, sizeof choice, "%.*s", (int)strcspn(c, "\n"), c);
			if (strlen(choice) >= 6 && has_text(seg, line, choice))
				fail_msg("%s: before \"%s\" the transcript says its answer, \"%s\"",
				         file, qtext, choice);
		} else {
			char *unit;
			double v = strtod(a, &unit);
			char r[64][32];
			int n = renders(v, unit, r, 64);
			for (int k = 0; k < n; k++) {
				const char *hit = has_number(seg, line, r[k]);
				if (hit)
					fail_msg("%s: before \"%s\" the transcript states its "
					         "answer %s (as "
					         "%s): ...%.*s...",
					         file, qtext, a, r[k], (int)strcspn(hit, "\n"),
					         hit);
			}
		}
		seg = ans;
	}
}

static void test_run_all(void **state)
{
	(void)state;
	for (int i = share - 1; i < nfiles; i += shares) {
		char *out = NULL, *errs = NULL;
		size_t ol = 0, el = 0;
		int questions, checks, runs;
		census(files[i], &questions, &checks, &runs);
		if (questions < 2 || checks < 3 || runs < 1)
			fail_msg("%s: %d questions, %d checks, %d runs: a lesson has at least 2, 3 "
			         "and 1",
			         files[i], questions, checks, runs);
		/* Played through: every question answered with the answer the
		 * lesson expects (which must be judged right, so the figure, its
		 * formatting and the tolerance agree), every explore with its demo
		 * (which must meet the condition), every check holding. */
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		FILE *in = fopen("/dev/null", "r");
		FILE *o = open_memstream(&out, &ol);
		FILE *e = open_memstream(&errs, &el);
		sl_headless_opts opts = {.autoplay = 1};
		int rc = sl_lesson_headless(files[i], &opts, in, o, e);
		fclose(in);
		fclose(o);
		fclose(e);
		char want[80];
		snprintf(want, sizeof want, ": %d of %d questions right; every check held",
		         questions, questions);
		if (rc != 0 || !strstr(out, want))
			fail_msg("%s: status %d, stderr: %s\n--- output tail:\n%s", files[i], rc,
			         errs, strlen(out) > 1500 ? out + strlen(out) - 1500 : out);
		no_answer_before_question(strrchr(files[i], '/') + 1, out);
		/* Every answer came with an explanation. */
		for (const char *p = out; (p = strstr(p, "\n[right] ")); p++)
			if (p[9] == '\n')
				fail_msg("%s: an answer without an explanation", files[i]);
		/* How long each took: what balancing the shares goes by. */
		clock_gettime(CLOCK_MONOTONIC, &t1);
		print_message("%s: %d questions right, %d checks held, %d runs (%.1f s)\n",
		              strrchr(files[i], '/') + 1, questions, checks, runs,
		              (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
		free(out);
		free(errs);
	}
}

/* The program itself: the subcommands are in its table, NAME lookup finds
 * the source tree's lessons (the test environment points
 * SHARDLAB_LESSON_PATH there), and the exit statuses are the documented
 * ones. */
static int shell(const char *cmd, char *out, size_t n)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t len = fread(out, 1, n - 1, p);
	out[len] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_program(void **state)
{
	(void)state;
	static char out[1 << 16];
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s check %s/*.lesson 2>&1", SHARDLAB_BIN, LESSONS_DIR);
	assert_int_equal(shell(cmd, out, sizeof out), 0);
	assert_non_null(strstr(out, "02-colwise.lesson: ok: \"Column-wise split\""));

	snprintf(cmd, sizeof cmd, "%s lesson --headless --demo colwise </dev/null 2>&1",
	         SHARDLAB_BIN);
	assert_int_equal(shell(cmd, out, sizeof out), 0);
	assert_non_null(strstr(out, "Lesson: Column-wise split"));
	assert_non_null(strstr(out, "every check held"));

	/* A bad lesson: its file:line on stderr, status 1 for check. */
	char bad[256];
	tu_tmpname(bad, sizeof bad, "sl_bad_XXXXXX");
	int fd = mkstemp(bad);
	assert_true(fd >= 0);
	const char *text = "title T\nminutes 5\nsya x\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof cmd, "%s check %s 2>&1 >/dev/null", SHARDLAB_BIN, bad);
	assert_int_equal(shell(cmd, out, sizeof out), 1);
	char want[512];
	snprintf(want, sizeof want, "%s:3: unknown command 'sya' (did you mean 'say'?)\n", bad);
	assert_string_equal(out, want);
	snprintf(cmd, sizeof cmd, "%s lesson --headless %s </dev/null 2>&1 >/dev/null",
	         SHARDLAB_BIN, bad);
	assert_int_equal(shell(cmd, out, sizeof out), 2);
	assert_string_equal(out, want);
	unlink(bad);

	snprintf(cmd, sizeof cmd, "%s lesson --headless no-such-lesson 2>&1", SHARDLAB_BIN);
	assert_int_equal(shell(cmd, out, sizeof out), 2);
	assert_non_null(
	    strstr(out, "shardlab: lesson: no lesson named 'no-such-lesson' (lessons: 01-"));
	snprintf(cmd, sizeof cmd, "%s lesson --headless --bogus 02 2>&1", SHARDLAB_BIN);
	assert_int_equal(shell(cmd, out, sizeof out), 2);
}

/* Write text to a new temporary lesson; its path goes to path. */
static void plant(char *path, size_t n, const char *text)
{
	tu_tmpname(path, n, "sl_quiz_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* `shardlab check`'s rules for questions, on planted lessons: one the text
 * above gives away, the same with the question asked first, and a numeric
 * question with one mistake; each refused with its one message, the fixed
 * one passed. */
static void test_quiz_lint(void **state)
{
	(void)state;
	static char out[4096];
	char cmd[1200], path[256], want[600];
	/* Key words of the right choice: "slowest" alone (link and crosses are
	 * the wrong choice's too); the say holds it, and not "fastest". */
	const char *given = "title T\nminutes 5\nabout Rings.\n\n"
	                    "say Each step of a ring waits for its slowest link.\n\n"
	                    "question What limits a ring that spans two nodes?\n"
	                    "correct The slowest link it crosses\n"
	                    "explain Right: each step waits for it.\n"
	                    "option  The fastest link it crosses\n"
	                    "explain The fast links finish early and wait.\n"
	                    "end\n";
	plant(path, sizeof path, given);
	snprintf(cmd, sizeof cmd, "%s check %s 2>&1 >/dev/null", SHARDLAB_BIN, path);
	assert_int_equal(shell(cmd, out, sizeof out), 1);
	snprintf(want, sizeof want,
	         "%s:7: question answered by the text above (line 5: \"Each step of a ring "
	         "waits for its slowest link.\")\n",
	         path);
	assert_string_equal(out, want);
	unlink(path);

	/* Predict first: the question before the text passes. */
	const char *fixed = "title T\nminutes 5\nabout Rings.\n\n"
	                    "question What limits a ring that spans two nodes?\n"
	                    "correct The slowest link it crosses\n"
	                    "explain Right: each step waits for it.\n"
	                    "option  The fastest link it crosses\n"
	                    "explain The fast links finish early and wait.\n"
	                    "end\n\n"
	                    "say Each step of a ring waits for its slowest link.\n";
	plant(path, sizeof path, fixed);
	snprintf(cmd, sizeof cmd, "%s check %s 2>&1", SHARDLAB_BIN, path);
	assert_int_equal(shell(cmd, out, sizeof out), 0);
	assert_non_null(strstr(out, ": ok: \"T\""));
	unlink(path);

	/* The about counts before the first question; and a text that names
	 * every choice singles none out. */
	const char *about = "title T\nminutes 5\nabout A ring waits for its slowest link.\n\n"
	                    "question What limits a ring that spans two nodes?\n"
	                    "correct The slowest link it crosses\n"
	                    "option  The fastest link it crosses\n"
	                    "end\n";
	plant(path, sizeof path, about);
	snprintf(cmd, sizeof cmd, "%s check %s 2>&1 >/dev/null", SHARDLAB_BIN, path);
	assert_int_equal(shell(cmd, out, sizeof out), 1);
	snprintf(want, sizeof want,
	         "%s:5: question answered by the text above (line 3: \"A ring waits for its "
	         "slowest link.\")\n",
	         path);
	assert_string_equal(out, want);
	unlink(path);
	const char *both = "title T\nminutes 5\n"
	                   "say Not the fastest link, not the slowest: which?\n"
	                   "question What limits a ring that spans two nodes?\n"
	                   "correct The slowest link it crosses\n"
	                   "option  The fastest link it crosses\n"
	                   "end\n";
	plant(path, sizeof path, both);
	snprintf(cmd, sizeof cmd, "%s check %s 2>&1 >/dev/null", SHARDLAB_BIN, path);
	assert_int_equal(shell(cmd, out, sizeof out), 0);
	unlink(path);

	/* A numeric question with one mistake: it plays, but check refuses it. */
	const char *one = "title T\nminutes 5\nsetup devices=2\nrun collective\n"
	                  "question How long did the all-reduce take?\n"
	                  "answer  time\n"
	                  "mistake 2 * time\n"
	                  "explain Twice.\n"
	                  "end\n";
	plant(path, sizeof path, one);
	snprintf(cmd, sizeof cmd, "%s check %s 2>&1 >/dev/null", SHARDLAB_BIN, path);
	assert_int_equal(shell(cmd, out, sizeof out), 1);
	snprintf(want, sizeof want,
	         "%s:5: a numeric question needs at least two 'mistake' lines, the wrong "
	         "answers a learner is likely to give, each with its 'explain' (this one has 1)\n",
	         path);
	assert_string_equal(out, want);
	snprintf(cmd, sizeof cmd, "%s check --format=json %s 2>/dev/null", SHARDLAB_BIN, path);
	assert_int_equal(shell(cmd, out, sizeof out), 1);
	assert_non_null(strstr(out, "\"ok\": false"));
	assert_non_null(strstr(out, "this one has 1"));
	snprintf(cmd, sizeof cmd, "%s lesson --headless --demo %s </dev/null 2>&1", SHARDLAB_BIN,
	         path);
	assert_int_equal(shell(cmd, out, sizeof out), 0);
	unlink(path);
}

/* check --run plays a lesson and refuses prose its runs contradict: lesson
 * 10 as it once was, "Both still beat tensor parallelism across the
 * nodes" under a run that took longer than tensor parallelism across them,
 * now written as a checked claim; the shipped lesson passes. */
static void test_check_run(void **state)
{
	(void)state;
	char src[1024], path[256], cmd[1400];
	static char out[1 << 14];
	snprintf(src, sizeof src, "%s/10-combining.lesson", LESSONS_DIR);
	FILE *f = fopen(src, "r");
	assert_non_null(f);
	static char text[1 << 16];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = 0;
	const char *old = "save{? tp_pp.time > good.time and tp_pp.time > bad.time}.";
	char *at = strstr(text, old);
	assert_non_null(at);
	/* The claim is the paragraph's: its say's line. */
	int line = 1, say = 1;
	for (const char *p = text; p < at; p++)
		if (*p == '\n' && ++line && strncmp(p + 1, "say ", 4) == 0)
			say = line;
	line = say;
	static char planted[1 << 16];
	snprintf(planted, sizeof planted,
	         "%.*s%s Both still beat tensor parallelism across "
	         "the nodes{? tp_pp.time < bad.time}.%s",
	         (int)(at - text), text, old, at + strlen(old));
	plant(path, sizeof path, planted);
	/* Without --run the lint cannot know (the claim is marked). */
	snprintf(cmd, sizeof cmd, "%s check %s 2>&1 >/dev/null", SHARDLAB_BIN, path);
	assert_int_equal(shell(cmd, out, sizeof out), 0);
	snprintf(cmd, sizeof cmd, "%s check --run %s 2>&1 >/dev/null", SHARDLAB_BIN, path);
	assert_int_equal(shell(cmd, out, sizeof out), 1);
	char want[400];
	snprintf(want, sizeof want,
	         "%s:%d: tp_pp.time < bad.time (the narration's claim at line %d", path, line,
	         line);
	if (!strstr(out, want))
		fail_msg("wanted '%s' in:\n%s", want, out);
	unlink(path);
	snprintf(cmd, sizeof cmd, "%s check --run %s 2>&1", SHARDLAB_BIN, src);
	assert_int_equal(shell(cmd, out, sizeof out), 0);
}

/* The 90-minute class the menu offers: its lessons (track class) add up
 * to 90 minutes at most, read from the lesson files themselves; the
 * checkpoints lesson is an optional one (the class is TP, PP and DP), as
 * are overlap and sharded data parallelism (13 and 14), which the class's
 * minutes have no room for. */
static void test_class_track(void **state)
{
	(void)state;
	setenv("SHARDLAB_LESSON_PATH", LESSONS_DIR, 1);
	sl_catalog_entry *cat = NULL;
	int n = 0;
	sl_err err = {0};
	assert_int_equal(sl_catalog_list(&cat, &n, &err), SL_OK);
	int minutes = 0, nclass = 0, optional_is_11 = 0, noptional = 0;
	for (int i = 0; i < n; i++) {
		assert_true(cat[i].ok);
		sl_lesson *l = NULL;
		assert_int_equal(sl_lesson_load(cat[i].path, &l, NULL, &err), SL_OK);
		if (sl_lesson_track(l) == SL_TRACK_CLASS) {
			minutes += sl_lesson_minutes(l);
			nclass++;
		}
		if (sl_lesson_track(l) == SL_TRACK_OPTIONAL) {
			optional_is_11 |= strncmp(cat[i].id, "11", 2) == 0;
			noptional++;
		}
		sl_lesson_free(l);
	}
	sl_course_time t = sl_catalog_time(cat, n);
	free(cat);
	assert_true(nclass >= 5);
	assert_true(minutes <= SL_TRACK_CLASS_MINUTES);
	assert_int_equal(t.class_minutes, minutes);
	assert_int_equal(t.nclass, nclass);
	assert_int_equal(t.noptional, noptional);
	assert_true(optional_is_11);
}

int main(void)
{
	const char *part = getenv("COURSE_PART");
	if (part && *part) {
		char end;
		if (sscanf(part, "%d/%d%c", &share, &shares, &end) != 2 || share < 1 ||
		    share > shares) {
			fprintf(stderr,
			        "test_course: COURSE_PART=%s is not K/N with K from 1 to N\n",
			        part);
			return 1;
		}
	}
	/* Never touch the user's state directory. */
	char state[256];
	tu_tmpname(state, sizeof state, "sl_course_XXXXXX");
	if (!mkdtemp(state))
		return 1;
	setenv("XDG_STATE_HOME", state, 1);
	list_lessons();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_check_all), cmocka_unit_test(test_run_all),
	    cmocka_unit_test(test_program),   cmocka_unit_test(test_quiz_lint),
	    cmocka_unit_test(test_check_run), cmocka_unit_test(test_class_track),
	};
	/* Every share plays its lessons; the last one runs the rest too. */
	const struct CMUnitTest lessons[] = {cmocka_unit_test(test_run_all)};
	int rc = share == shares ? cmocka_run_group_tests(tests, NULL, NULL)
	                         : cmocka_run_group_tests(lessons, NULL, NULL);
	for (int i = 0; i < nfiles; i++)
		free(files[i]);
	tu_rm_rf(state);
	return rc;
}
