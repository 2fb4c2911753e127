/* SPDX-License-Identifier: MIT */
/* headless.c - `shardlab lesson --headless`: the headless runner (the
 * command line is cmd_lesson.c's).
 *
 * The front end of src/lesson without curses: it prints the steps the
 * interpreter yields and reads the learner's answers, one per line, from
 * standard input. */
#include "headless.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "lesson.h"
#include "lesson_ui.h"
#include "progress.h"
#include "report.h"
#include "lesson_show.h"
#include "units.h"
#include "textwrap.h"

#define WIDTH 78
#define HINT_AFTER 3 /* tries in an explore before its hint */
/* A demo answers by itself: a loop back to a question is checked (it has a
 * learner in it) but, answered the same way each time, would never end. */
#define DEMO_MAX_LEARNER 1000

/* ---- printing ---- */

static void wrap(FILE *out, const char *s, int indent, const char *first)
{
	sl_print_wrapped(out, s, indent, first, WIDTH);
}

static void print_ops(FILE *out, const sl_step *st)
{
	char a[32], b[32], c[32];
	if (!st->ops) {
		fprintf(out, "[ops] %s\n", st->text);
		return;
	}
	fprintf(out, "[ops] %d operation%s, %s .. %s:\n", st->ops, st->ops == 1 ? "" : "s",
	        sl_fmt_time(st->t_from, a, sizeof a), sl_fmt_time(st->t_to, b, sizeof b));
	for (size_t i = 0; i < st->nev; i++) {
		const sl_event *e = &st->ev[i];
		fprintf(out, "  %10s .. %-10s dev %-2d %-7s", sl_fmt_time(e->t0, a, sizeof a),
		        sl_fmt_time(e->t1, b, sizeof b), e->dev, sl_ev_kind_name(e->kind));
		if (e->peer >= 0)
			fprintf(out, " %s dev %d", e->kind == SL_EV_SEND ? "to" : "from", e->peer);
		if (e->bytes)
			fprintf(out, " %s", sl_fmt_bytes((double)e->bytes, c, sizeof c));
		fprintf(out, "  %s\n", e->label);
	}
}

/* show side-by-side: a line per run, the figures its band shows on the
 * screen (the most of any device: its peak memory, the bytes it sent in
 * the step); with JSON, the same in the step's object j. */
static int print_show(FILE *out, const sl_step *st, json_t *j)
{
	sl_sbs s;
	if (sl_sbs_from_lesson(&s, st->shows, st->nshows))
		return SL_ENOMEM;
	json_t *runs = j ? json_array() : NULL;
	fprintf(out, "[show] %s, the last training step of each:\n", st->text);
	int w = 0;
	for (int i = 0; i < s.n; i++)
		w = (int)strlen(s.band[i].name) > w ? (int)strlen(s.band[i].name) : w;
	for (int i = 0; i < s.n; i++) {
		const sl_sbs_band *b = &s.band[i];
		char t[32], m[32], x[32];
		fprintf(out, "  %-*s  %s a step; per device: peak %s, sent %s\n", w, b->name,
		        sl_fmt_time(b->step_s, t, sizeof t),
		        sl_fmt_bytes((double)b->mem_peak, m, sizeof m),
		        sl_fmt_bytes((double)b->sent, x, sizeof x));
		if (runs) {
			json_t *r = json_object();
			json_object_set_new(r, "name", json_string(st->shows[i].name));
			json_object_set_new(r, "layout",
			                    json_string(b->name + strlen(st->shows[i].name) + 2));
			json_object_set_new(r, "devices", json_integer(b->ndev));
			json_object_set_new(r, "step_s", json_real(b->step_s));
			json_object_set_new(r, "mem_peak_bytes",
			                    json_integer((json_int_t)b->mem_peak));
			json_object_set_new(r, "sent_bytes", json_integer((json_int_t)b->sent));
			json_array_append_new(runs, r);
		}
	}
	if (j) {
		json_object_set_new(j, "figure", json_string(st->text));
		json_object_set_new(j, "runs", runs);
	}
	sl_sbs_free(&s);
	return SL_OK;
}

/* ---- reading the learner ---- */

/* One line of input without its newline; 0 at end of input.  Overlong lines
 * are cut (the rest is dropped). */
static int read_line(FILE *in, char *buf, size_t n)
{
	if (!fgets(buf, (int)n, in))
		return 0;
	size_t l = strlen(buf);
	if (l && buf[l - 1] == '\n')
		buf[--l] = 0;
	else {
		int c;
		while ((c = fgetc(in)) != EOF && c != '\n')
			;
	}
	if (l && buf[l - 1] == '\r')
		buf[--l] = 0;
	return 1;
}

static int prompt(FILE *in, FILE *out, const char *p, char *buf, size_t n, int echo)
{
	fprintf(out, "%s", p);
	fflush(out);
	if (!read_line(in, buf, n)) {
		fputc('\n', out);
		return 0;
	}
	if (echo)
		fprintf(out, "%s\n", buf);
	return 1;
}

/* ---- the runner ---- */

struct session {
	const sl_headless_opts *o;
	char id[64];
	sl_progress prog;
	const sl_lesson *l;
	sl_vm *vm;
	int base_asked, base_right; /* score carried over from a resumed session */
	FILE *err;
	json_t *steps; /* --format=json: the steps, as they come */
};

/* A step of the JSON report: its kind, line and text (NULL: no text); the
 * object, to add to, or NULL without JSON. */
static json_t *jstep(struct session *s, const char *kind, int line, const char *text)
{
	if (!s->steps)
		return NULL;
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(kind));
	json_object_set_new(o, "line", json_integer(line));
	if (text)
		json_object_set_new(o, "text", json_string(text));
	json_array_append_new(s->steps, o);
	return o;
}

static void save(struct session *s, int finished)
{
	if (!s->o->save)
		return;
	int asked, right;
	sl_vm_score(s->vm, &asked, &right, NULL);
	asked += s->base_asked;
	right += s->base_right;
	if (finished) {
		s->prog.done = 1;
		s->prog.asked = asked;
		s->prog.right = right;
		s->prog.position = -1;
	} else {
		s->prog.position = sl_vm_position(s->vm);
		s->prog.now_asked = asked;
		s->prog.now_right = right;
		s->prog.hash = sl_lesson_hash(s->l);
	}
	sl_err e = {0};
	if (sl_progress_save(s->id, &s->prog, &e))
		fprintf(s->err, "shardlab: progress not saved: %s\n", e.msg);
}

static int run_explore(struct session *s, const sl_step *st, FILE *in, FILE *out, sl_err *err)
{
	char buf[1024];
	int tries = 0;
	wrap(out, st->text, 0, "[explore] ");
	fprintf(out, "  knobs:");
	for (int i = 0; i < st->nknobs; i++)
		fprintf(out, " %s", st->knobs[i]);
	fprintf(out, "; the lesson goes on when %s (type KNOB VALUE, demo, or skip)\n", st->detail);
	for (;;) {
		if (s->o->autoplay) {
			if (tries)
				return sl_fail(err, SL_EINVAL,
				               "%s:%d: the explore's demo does not meet its "
				               "condition",
				               sl_lesson_name(s->l), st->line);
			fprintf(out, "knob> demo\n");
			snprintf(buf, sizeof buf, "demo");
		} else if (!prompt(in, out, "knob> ", buf, sizeof buf, s->o->echo))
			return sl_fail(err, SL_EINVAL,
			               "%s:%d: standard input ended during the explore",
			               sl_lesson_name(s->l), st->line);
		if (strcmp(buf, "skip") == 0) {
			fprintf(out, "  skipped\n");
			return sl_vm_skip(s->vm, err);
		}
		sl_err e = {0};
		if (strcmp(buf, "demo") == 0 ? sl_vm_demo(s->vm, &e) : sl_vm_knob(s->vm, buf, &e)) {
			if (s->o->autoplay)
				return sl_fail(err, SL_EINVAL, "%s:%d: %s", sl_lesson_name(s->l),
				               st->line, e.msg);
			fprintf(out, "  %s\n", e.msg);
			continue;
		}
		const char *detail;
		int met = sl_vm_explore_met(s->vm, &detail, err);
		if (met < 0)
			return err ? err->code : SL_EINVAL;
		wrap(out, sl_vm_last_result(s->vm), 2, "[result] ");
		char words[700];
		if (met) {
			snprintf(words, sizeof words, "yes: now %s (%s)", st->detail, detail);
			wrap(out, words, 2, "  ");
			return SL_OK;
		}
		snprintf(words, sizeof words,
		         "not yet: the lesson goes on when %s, and this run "
		         "gives %s",
		         st->detail, detail);
		wrap(out, words, 2, "  ");
		if (++tries == HINT_AFTER && st->hint[0])
			wrap(out, st->hint, 2, "[hint] ");
	}
}

static int run_session(struct session *s, FILE *in, FILE *out, sl_err *err)
{
	sl_step st;
	char buf[1024];
	int rc, learner = 0;
	while ((rc = sl_vm_next(s->vm, &st, err)) == SL_OK) {
		if (s->o->autoplay &&
		    (st.kind == SL_STEP_QUESTION || st.kind == SL_STEP_MENU ||
		     st.kind == SL_STEP_EXPLORE) &&
		    ++learner > DEMO_MAX_LEARNER)
			return sl_fail(
			    err, SL_EINVAL,
			    "%s:%d: the demo has answered %d questions, menus and "
			    "explores without reaching the end: the lesson loops when answered "
			    "right and given each menu's first item",
			    sl_lesson_name(s->l), st.line, DEMO_MAX_LEARNER);
		switch (st.kind) {
		case SL_STEP_SAY:
			fputc('\n', out);
			wrap(out, st.text, 0, "");
			jstep(s, "say", st.line, st.text);
			break;
		case SL_STEP_SETUP:
			wrap(out, st.text, 0, "[setup] ");
			jstep(s, "setup", st.line, st.text);
			break;
		case SL_STEP_RUN:
			fprintf(out, "[run] %s\n", st.text);
			jstep(s, "run", st.line, st.text);
			break;
		case SL_STEP_RESULT:
			wrap(out, st.text, 0, "[result] ");
			jstep(s, "result", st.line, st.text);
			break;
		case SL_STEP_OPS:
			print_ops(out, &st);
			break;
		case SL_STEP_SHOW:
			if (print_show(out, &st, jstep(s, "show", st.line, NULL)))
				return sl_fail(err, SL_ENOMEM, "out of memory");
			break;
		case SL_STEP_PAUSE:
			save(s, 0);
			if (s->o->interactive && !s->o->autoplay) {
				fprintf(out, "[pause] %s%s", st.text, st.text[0] ? " " : "");
				if (!prompt(in, out, "(Enter) ", buf, sizeof buf, 0))
					return sl_fail(err, SL_EINVAL,
					               "%s:%d: standard input ended at a pause",
					               sl_lesson_name(s->l), st.line);
			} else {
				fprintf(out, "[pause]%s%s\n", st.text[0] ? " " : "", st.text);
			}
			jstep(s, "pause", st.line, st.text);
			break;
		case SL_STEP_CHECK: {
			json_t *j = jstep(s, "check", st.line, st.text);
			if (j) {
				json_object_set_new(j, "held", json_boolean(st.passed));
				json_object_set_new(j, "detail", json_string(st.detail));
			}
			if (st.passed)
				fprintf(out, "[check] ok: %s (%s)\n", st.text, st.detail);
			else
				fprintf(out, "[check] FAILED at %s:%d: %s (%s)\n",
				        sl_lesson_name(s->l), st.line, st.text, st.detail);
			break;
		}
		case SL_STEP_QUESTION: {
			json_t *jq = jstep(s, "question", st.line, st.text), *tries = NULL;
			if (jq) {
				json_t *ch = json_array();
				for (int i = 0; i < st.nchoices; i++)
					json_array_append_new(ch, json_string(st.choices[i]));
				json_object_set_new(jq, "choices", ch);
				json_object_set_new(jq, "answers", tries = json_array());
			}
			save(s, 0);
			fputc('\n', out);
			wrap(out, st.text, 0, "[question] ");
			for (int i = 0; i < st.nchoices; i++) {
				char lab[8];
				snprintf(lab, sizeof lab, "%c) ", 'a' + i);
				wrap(out, st.choices[i], 2, lab);
			}
			if (st.numeric && st.unit[0])
				fprintf(out, "  (a number in %s, or with its unit)\n", st.unit);
			sl_answer a;
			for (;;) {
				if (s->o->autoplay) {
					if (sl_vm_expected(s->vm, buf, sizeof buf, err))
						return err ? err->code : SL_EINVAL;
					fprintf(out, "answer> %s\n", buf);
				} else if (!prompt(in, out, "answer> ", buf, sizeof buf,
				                   s->o->echo))
					return sl_fail(err, SL_EINVAL,
					               "%s:%d: standard input ended before the "
					               "question was answered",
					               sl_lesson_name(s->l), st.line);
				sl_err e = {0};
				if (sl_vm_answer(s->vm, buf, &a, &e) == SL_OK) {
					if (tries) {
						json_t *t = json_object();
						json_object_set_new(t, "answer", json_string(buf));
						json_object_set_new(t, "verdict",
						                    json_string(a.again ? "again"
						                                : a.correct
						                                    ? "right"
						                                    : "wrong"));
						json_object_set_new(t, "explain",
						                    json_string(a.explain));
						json_array_append_new(tries, t);
					}
					if (!a.again)
						break;
					/* A first wrong answer: why, then another try. */
					if (s->o->autoplay)
						return sl_fail(
						    err, SL_EINVAL,
						    "%s:%d: the lesson's own answer '%s' "
						    "is judged wrong",
						    sl_lesson_name(s->l), st.line, buf);
					wrap(out, a.explain, 0, "[not quite] ");
					fprintf(out, "  try again\n");
					continue;
				}
				if (s->o->autoplay)
					return sl_fail(err, SL_EINVAL, "%s:%d: %s",
					               sl_lesson_name(s->l), st.line, e.msg);
				fprintf(out, "  %s\n", e.msg);
			}
			if (s->o->autoplay && !a.correct)
				return sl_fail(err, SL_EINVAL,
				               "%s:%d: the lesson's own answer '%s' is judged "
				               "wrong (it expects %s)",
				               sl_lesson_name(s->l), st.line, buf, a.expected);
			if (jq)
				json_object_set_new(jq, "expected", json_string(a.expected));
			if (a.correct)
				wrap(out, a.explain, 0, "[right] ");
			else {
				fprintf(out, "[wrong] the answer: %s\n", a.expected);
				if (a.explain[0])
					wrap(out, a.explain, 8, "");
			}
			break;
		}
		case SL_STEP_MENU: {
			json_t *jm = jstep(s, "menu", st.line, st.text);
			save(s, 0);
			fputc('\n', out);
			wrap(out, st.text, 0, "[menu] ");
			for (int i = 0; i < st.nchoices; i++) {
				char lab[16];
				snprintf(lab, sizeof lab, "%d) ", i + 1);
				wrap(out, st.choices[i], 2, lab);
			}
			for (;;) {
				if (s->o->autoplay) /* the first item: the course reads in order */
					fprintf(out, "choice> %s\n", strcpy(buf, "1"));
				else if (!prompt(in, out, "choice> ", buf, sizeof buf, s->o->echo))
					return sl_fail(err, SL_EINVAL,
					               "%s:%d: standard input ended before a menu "
					               "item was chosen",
					               sl_lesson_name(s->l), st.line);
				char *end;
				long k = strtol(buf, &end, 10);
				sl_err e = {0};
				if (end != buf && !*end &&
				    sl_vm_choose(s->vm, (int)k - 1, &e) == SL_OK) {
					if (jm)
						json_object_set_new(jm, "chosen",
						                    json_string(st.choices[k - 1]));
					break;
				}
				fprintf(out, "  choose an item from 1 to %d\n", st.nchoices);
			}
			break;
		}
		case SL_STEP_EXPLORE:
			jstep(s, "explore", st.line, st.text);
			save(s, 0);
			fputc('\n', out);
			if (run_explore(s, &st, in, out, err))
				return err ? err->code : SL_EINVAL;
			break;
		case SL_STEP_END: {
			int total_asked = st.asked + s->base_asked,
			    total_right = st.right + s->base_right;
			save(s, 1);
			json_t *je = jstep(s, "end", st.line, NULL);
			if (je) {
				json_object_set_new(je, "asked", json_integer(total_asked));
				json_object_set_new(je, "right", json_integer(total_right));
				json_object_set_new(je, "checks_failed",
				                    json_integer(st.checks_failed));
			}
			fprintf(out, "\n[end] %s: %d of %d question%s right; ",
			        sl_lesson_title(s->l), total_right, total_asked,
			        total_asked == 1 ? "" : "s");
			if (st.checks_failed)
				fprintf(out, "%d check%s FAILED\n", st.checks_failed,
				        st.checks_failed == 1 ? "" : "s");
			else
				fprintf(out, "every check held\n");
			return SL_OK;
		}
		}
	}
	return rc;
}

int sl_lesson_headless(const char *path, const sl_headless_opts *o, FILE *in, FILE *out, FILE *errf)
{
	sl_lesson *l;
	sl_lesson_diags d;
	sl_err err = {0};
	if (sl_lesson_load(path, &l, &d, &err)) {
		fprintf(errf, "%s\n", err.msg);
		for (int k = 1; k < d.n; k++)
			fprintf(errf, "%s\n", d.msg[k]);
		return 2;
	}
	struct session s = {.o = o, .l = l, .err = errf};
	/* JSON: the text goes nowhere, the steps into one report at the end. */
	FILE *text = out;
	if (o->json && (!(s.steps = json_array()) || !(out = fopen("/dev/null", "w")))) {
		fprintf(errf, "shardlab: lesson: cannot make the JSON report\n");
		json_decref(s.steps);
		sl_lesson_free(l);
		return 2;
	}
	sl_progress_id(path, s.id, sizeof s.id);
	s.prog.position = -1;
	if (o->save || o->resume) {
		if (o->fresh)
			sl_progress_forget(s.id, NULL);
		if (sl_progress_load(s.id, &s.prog, &err))
			fprintf(errf, "shardlab: progress not read: %s\n", err.msg);
	}
	s.vm = sl_vm_create(l, &err);
	int start = 0;
	if (s.vm && o->start && (start = sl_lesson_locate(l, o->start, &err)) < 0) {
		fprintf(errf, "shardlab: %s\n", err.msg);
		if (s.steps) {
			fclose(out);
			json_decref(s.steps);
		}
		sl_vm_destroy(s.vm);
		sl_lesson_free(l);
		return 2;
	}
	if (s.vm && !o->start && o->resume) {
		if (s.prog.position < 0)
			fprintf(errf, "shardlab: nothing to resume in %s: starting at the top\n",
			        path);
		else if (s.prog.hash != sl_lesson_hash(l))
			fprintf(errf,
			        "shardlab: %s changed since it was left: starting at the top\n",
			        path);
		else {
			start = s.prog.position;
			s.base_asked = s.prog.now_asked;
			s.base_right = s.prog.now_right;
		}
	}
	fprintf(out, "Lesson: %s (%d minute%s)\n", sl_lesson_title(l), sl_lesson_minutes(l),
	        sl_lesson_minutes(l) == 1 ? "" : "s");
	if (sl_lesson_about(l)[0])
		wrap(out, sl_lesson_about(l), 2, "");
	if (start > 0)
		fprintf(out, "[start] at line %d\n", sl_lesson_line_at(l, start));
	int rc = !s.vm ? SL_ENOMEM : start > 0 ? sl_vm_start_at(s.vm, start, &err) : SL_OK;
	if (rc == SL_OK)
		rc = run_session(&s, in, out, &err);
	int status;
	if (rc) {
		fflush(out);
		fprintf(errf, "%s\n", err.msg);
		status = 2;
	} else {
		int failed;
		sl_vm_score(s.vm, NULL, NULL, &failed);
		status = failed ? 1 : 0;
	}
	fflush(out);
	if (s.steps) {
		fclose(out);
		json_t *j = json_object();
		json_object_set_new(j, "lesson", json_string(path));
		json_object_set_new(j, "title", json_string(sl_lesson_title(l)));
		json_object_set_new(j, "stated_time_s", json_integer(60L * sl_lesson_minutes(l)));
		json_object_set_new(j, "steps", s.steps);
		json_object_set_new(j, "ended", json_boolean(rc == SL_OK));
		json_object_set_new(j, "every_check_held", json_boolean(status == 0));
		if (rc)
			json_object_set_new(j, "error", json_string(err.msg));
		if (sl_report_json_print(text, j) && status == 0)
			status = 2;
		fflush(text);
	}
	sl_vm_destroy(s.vm);
	sl_lesson_free(l);
	return status;
}
