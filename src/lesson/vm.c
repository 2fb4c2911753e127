/* SPDX-License-Identifier: MIT */
/* vm.c - the lesson interpreter: yields steps, never draws.
 *
 * The vm walks the checked program.  Narration, set-ups, results and checks
 * are yielded and the walk goes on at the next call; questions, menus and
 * explores wait until the front end passes the learner's input.  Runs go to
 * the engine through lrun.c, either on a cluster the front end built (to
 * animate it) or headless. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prog.h"
#include "steps.h"
#include "units.h"

#define MAX_OUT 32768 /* bytes of one interpolated text */

/* A training run a show names: its devices' figures and its last step's
 * events, which the runrec's figures do not hold (kept for those runs
 * only: a lesson's other runs keep no events past the next run). */
struct kept {
	sl_train_dev *dev;
	int ndev; /* 0: nothing to show (the run did not fit) */
	double step_s;
	sl_event *ev;
	size_t nev;
};

static void kept_free(struct kept *k)
{
	free(k->dev);
	free(k->ev);
	memset(k, 0, sizeof *k);
}

/* Keep what a show needs of a training run that has just run: rep's
 * devices and the events of its last step in snap (by start time). */
static int keep_shown(struct kept *k, const sl_train_report *rep, const sl_snapshot *snap)
{
	kept_free(k);
	if (rep->ndev <= 0 || rep->steps <= 0)
		return SL_OK;
	size_t n = 0;
	for (size_t i = 0; i < snap->n; i++)
		n += snap->ev[i].step == rep->steps;
	k->dev = malloc((size_t)rep->ndev * sizeof *k->dev);
	k->ev = malloc((n ? n : 1) * sizeof *k->ev);
	if (!k->dev || !k->ev) {
		kept_free(k);
		return SL_ENOMEM;
	}
	memcpy(k->dev, rep->dev, (size_t)rep->ndev * sizeof *k->dev);
	for (size_t i = 0; i < snap->n; i++)
		if (snap->ev[i].step == rep->steps)
			k->ev[k->nev++] = snap->ev[i];
	k->ndev = rep->ndev;
	k->step_s = rep->step_s;
	return SL_OK;
}

struct sl_vm {
	const sl_lesson *l;
	int pc;
	int position;
	sl_lsetup setup;
	sl_runrec last;
	sl_runrec *named; /* by name index */
	double *lets;     /* by name index; NaN: not set */
	/* a run waiting to be executed */
	int pending;
	sl_run_kind pend_kind;
	int pend_name, pend_line;
	int result_ready;
	/* the learner's turn */
	int waiting; /* 0, or the op kind waited on */
	int explore_runs, explore_met;
	/* the last run's cluster and its events by end time, for step N */
	sl_cluster *cluster;
	sl_event *ev;
	size_t nev;
	double *ends; /* where its steps end (sl_step_ends) */
	size_t nends;
	double horizon;
	/* counters */
	long steps; /* commands executed since something was yielded */
	int runs;
	int asked, right, checks_failed;
	/* Checks that held, shown only after the learner's next answer, before
	 * the next run, or at the end: a check printed just before a question
	 * would answer it.  A check that fails speaks at once. */
	struct held {
		int line, pos;
		const char *src;
		char *detail;
	} held[16];
	int nheld, release;
	int tries;       /* wrong answers to the question waiting */
	int mis_checked; /* 1 + the position whose mistakes were held against its answer */
	/* strings handed out with the current step */
	char **strs;
	int nstrs, capstrs;
	const char **arr; /* choices or knobs */
	char result[sizeof((sl_runrec *)0)->summary];
	/* What a show draws of the runs it names, by name index (see keep). */
	struct kept *kept;
	sl_shown_run shows[SL_SHOW_MAX];
};

static int vfail(sl_vm *vm, int line, sl_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int vfail(sl_vm *vm, int line, sl_err *err, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sl_fail(err, SL_EINVAL, "%s:%d: %s", vm->l->name, line, msg);
}

static void strs_reset(sl_vm *vm)
{
	for (int i = 0; i < vm->nstrs; i++)
		free(vm->strs[i]);
	vm->nstrs = 0;
	free(vm->arr);
	vm->arr = NULL;
}

static const char *keep(sl_vm *vm, char *s)
{
	if (!s)
		return "";
	if (vm->nstrs == vm->capstrs) {
		int cap = vm->capstrs ? vm->capstrs * 2 : 16;
		char **n = realloc(vm->strs, (size_t)cap * sizeof *n);
		if (!n) {
			free(s);
			return "";
		}
		vm->strs = n;
		vm->capstrs = cap;
	}
	vm->strs[vm->nstrs++] = s;
	return s;
}

sl_vm *sl_vm_create(const sl_lesson *l, sl_err *err)
{
	sl_vm *vm = calloc(1, sizeof *vm);
	if (!vm) {
		sl_fail(err, SL_ENOMEM, "out of memory");
		return NULL;
	}
	vm->l = l;
	vm->named = calloc((size_t)(l->nnames ? l->nnames : 1), sizeof *vm->named);
	vm->kept = calloc((size_t)(l->nnames ? l->nnames : 1), sizeof *vm->kept);
	vm->lets = malloc((size_t)(l->nnames ? l->nnames : 1) * sizeof *vm->lets);
	if (!vm->named || !vm->lets || !vm->kept) {
		free(vm->kept);
		free(vm->named);
		free(vm->lets);
		free(vm);
		sl_fail(err, SL_ENOMEM, "out of memory");
		return NULL;
	}
	for (int i = 0; i < l->nnames; i++)
		vm->lets[i] = NAN;
	sl_lsetup_default(&vm->setup);
	sl_runrec_init(&vm->last);
	return vm;
}

void sl_vm_destroy(sl_vm *vm)
{
	if (!vm)
		return;
	strs_reset(vm);
	for (int i = 0; i < vm->nheld; i++)
		free(vm->held[i].detail);
	free(vm->strs);
	for (int i = 0; i < vm->l->nnames; i++) {
		sl_runrec_free(&vm->named[i]);
		kept_free(&vm->kept[i]);
	}
	free(vm->kept);
	free(vm->named);
	free(vm->lets);
	sl_runrec_free(&vm->last);
	sl_cluster_destroy(vm->cluster);
	free(vm->ev);
	free(vm->ends);
	free(vm);
}

/* ---- figures ---- */

struct lookctx {
	sl_vm *vm;
};

static int look(void *ctx, const sl_node *n, double *v, sl_err *err)
{
	sl_vm *vm = ((struct lookctx *)ctx)->vm;
	const sl_lesson *l = vm->l;
	if (n->op == SL_N_LET) {
		*v = vm->lets[n->ref.name];
		if (isnan(*v))
			return sl_fail(err, SL_EINVAL, "'%s' has no value yet",
			               l->names[n->ref.name].s);
		return SL_OK;
	}
	const sl_figdef *fd = sl_fig(n->ref.fig);
	const sl_runrec *r = n->ref.name >= 0 ? &vm->named[n->ref.name] : &vm->last;
	if (n->ref.name < 0 && (fd->from & SL_FIG_SETUP)) {
		*v = sl_fig_setup_value(n->ref.fig, &vm->setup);
		return SL_OK;
	}
	if (!r->valid) {
		if (n->ref.name >= 0)
			return sl_fail(err, SL_EINVAL,
			               "'%s.%s' has no value: the run named '%s' has not "
			               "happened yet",
			               l->names[n->ref.name].s, fd->name, l->names[n->ref.name].s);
		return sl_fail(err, SL_EINVAL, "'%s' has no value: nothing has run yet", fd->name);
	}
	if (fd->from & SL_FIG_SETUP) {
		*v = sl_fig_setup_value(n->ref.fig, &r->setup);
		return SL_OK;
	}
	if (!(fd->from & SL_FIG_KIND(r->kind)))
		return sl_fail(err, SL_EINVAL, "'%s' is not a figure of a %s run", fd->name,
		               sl_run_kind_name(r->kind));
	*v = r->v[n->ref.fig];
	if (isnan(*v))
		return sl_fail(err, SL_EINVAL, "'%s' has no value: %s", fd->name,
		               r->why[0] ? r->why : "the run did not produce it");
	return SL_OK;
}

static int eval(sl_vm *vm, int node, int line, double *v, sl_err *err)
{
	struct lookctx c = {vm};
	sl_err e = {0};
	if (sl_expr_eval(&vm->l->pool, node, look, &c, v, &e))
		return vfail(vm, line, err, "%s", e.msg);
	return SL_OK;
}

static int cond(sl_vm *vm, int node, int line, int *holds, char *detail, size_t n, sl_err *err)
{
	struct lookctx c = {vm};
	sl_err e = {0};
	detail[0] = 0;
	if (sl_cond_eval(&vm->l->pool, node, look, &c, holds, detail, n, &e))
		return vfail(vm, line, err, "%s", e.msg);
	return SL_OK;
}

/* The same, its figures in words for the learner ("1.07, not below 1"). */
static int cond_words(sl_vm *vm, int node, int line, int *holds, char *detail, size_t n,
                      sl_err *err)
{
	struct lookctx c = {vm};
	sl_err e = {0};
	detail[0] = 0;
	if (sl_cond_words(&vm->l->pool, node, look, &c, holds, detail, n, &e))
		return vfail(vm, line, err, "%s", e.msg);
	return SL_OK;
}

/* A figure or a name in a condition said in words: "the latency term",
 * "the time of run 'bad'". */
static void say_name(void *ctx, const sl_node *n, char *buf, size_t len)
{
	const sl_lesson *l = ctx;
	if (n->op == SL_N_LET) {
		snprintf(buf, len, "%s", l->names[n->ref.name].s);
		return;
	}
	char fig[40];
	snprintf(fig, sizeof fig, "%s", sl_fig(n->ref.fig)->name);
	for (char *c = fig; *c; c++)
		if (*c == '_')
			*c = ' ';
	if (n->ref.name >= 0)
		snprintf(buf, len, "the %s of run '%s'", fig, l->names[n->ref.name].s);
	else
		snprintf(buf, len, "the %s", fig);
}

/* Interpolate {figures} into t; NULL with err on a figure without value. */
static char *interp(sl_vm *vm, const sl_text *t, int line, sl_err *err)
{
	const char *s = t->s ? t->s : "";
	size_t cap = strlen(s) + 64, n = 0;
	char *out = malloc(cap);
	int k = 0;
	if (!out) {
		sl_fail(err, SL_ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; s[i];) {
		char piece[64];
		const char *add = piece;
		size_t alen;
		if ((s[i] == '{' && s[i + 1] == '{') || (s[i] == '}' && s[i + 1] == '}')) {
			piece[0] = s[i];
			alen = 1;
			i += 2;
		} else if (s[i] == '{' && s[i + 1] == '?') {
			/* A claim ({? a < b}, checked before the text is shown) or a
			 * sentence of no run ({?}): nothing to show, nor the space
			 * before it. */
			size_t j = i + 2;
			while (s[j] == ' ')
				j++;
			if (s[j] != '}')
				k++; /* the claim's node */
			while (s[i] && s[i] != '}')
				i++;
			if (s[i])
				i++;
			if (n > 0 && out[n - 1] == ' ')
				n--;
			continue;
		} else if (s[i] == '{' && k < t->n) {
			double v;
			const sl_node *nd = &vm->l->pool.n[t->nodes[k]];
			if (eval(vm, t->nodes[k], line, &v, err)) {
				free(out);
				return NULL;
			}
			sl_value_fmt(v, nd->dim, nd->flag, t->pct[k], piece, sizeof piece);
			alen = strlen(piece);
			k++;
			while (s[i] && s[i] != '}')
				i++;
			if (s[i])
				i++;
		} else {
			size_t j = i;
			while (s[j] && s[j] != '{' && s[j] != '}')
				j++;
			if (j == i)
				j++;
			add = s + i;
			alen = j - i;
			i = j;
		}
		if (n + alen + 1 > cap) {
			if (n + alen + 1 > MAX_OUT)
				break;
			cap = (n + alen + 1) * 2;
			char *o2 = realloc(out, cap);
			if (!o2) {
				free(out);
				sl_fail(err, SL_ENOMEM, "out of memory");
				return NULL;
			}
			out = o2;
		}
		memcpy(out + n, add, alen);
		n += alen;
	}
	out[n] = 0;
	return out;
}

static const char *kinterp(sl_vm *vm, const sl_text *t, int line, sl_err *err, int *rc)
{
	if (!t->s)
		return "";
	char *s = interp(vm, t, line, err);
	if (!s) {
		*rc = err ? err->code : SL_EINVAL;
		return "";
	}
	return keep(vm, s);
}

/* The source of the k-th {? CONDITION} of text s, into buf. */
static const char *claim_src(const char *s, int k, char *buf, size_t n)
{
	int seen = 0;
	buf[0] = 0;
	for (const char *p = s; *p; p++) {
		if (p[0] == '{' && p[1] == '{') {
			p++;
			continue;
		}
		if (p[0] != '{')
			continue;
		const char *e = strchr(p, '}');
		if (!e)
			break;
		const char *q = p + 1;
		int is_claim = *q == '?';
		if (is_claim) {
			q++;
			while (*q == ' ')
				q++;
		}
		if (is_claim && q == e) { /* {?}: no node */
			p = e;
			continue;
		}
		if (is_claim && seen == k) {
			snprintf(buf, n, "%.*s", (int)(e - q), q);
			return buf;
		}
		seen += is_claim;
		p = e;
	}
	return buf;
}

/* Do the claims of a say's text hold?  1 when they all do (or it has
 * none); 0 with st the failed claim as a failed check. */
static int claims_hold(sl_vm *vm, const sl_op *o, sl_step *st, sl_err *err, int *rc)
{
	*rc = SL_OK;
	for (int i = 0, nth = 0; i < o->text.n; i++) {
		if (o->text.pct[i] != SL_TEXT_CLAIM)
			continue;
		int holds;
		char d[400], src[300];
		if (cond_words(vm, o->text.nodes[i], o->line, &holds, d, sizeof d, err)) {
			*rc = err ? err->code : SL_EINVAL;
			return 0;
		}
		claim_src(o->text.s, nth++, src, sizeof src);
		if (holds)
			continue;
		char *text = malloc(400);
		if (!text) {
			*rc = sl_fail(err, SL_ENOMEM, "out of memory");
			return 0;
		}
		snprintf(text, 400, "%s (the narration's claim at line %d, not shown)", src,
		         o->line);
		st->kind = SL_STEP_CHECK;
		st->text = keep(vm, text);
		st->detail = keep(vm, strdup(d));
		st->passed = 0;
		vm->checks_failed++;
		return 0;
	}
	return 1;
}

/* ---- runs ---- */

sl_cluster *sl_vm_make_cluster(sl_vm *vm, double slowdown, sl_err *err)
{
	sl_cluster_config cfg;
	if (!vm->pending) {
		sl_fail(err, SL_EINVAL, "no run is pending");
		return NULL;
	}
	sl_err e = {0};
	if (sl_lrun_config(vm->pend_kind, &vm->setup, slowdown, &cfg, &e)) {
		vfail(vm, vm->pend_line, err, "run %s: %s", sl_run_kind_name(vm->pend_kind), e.msg);
		return NULL;
	}
	sl_cluster *c = sl_cluster_create(&cfg, &e);
	if (!c)
		vfail(vm, vm->pend_line, err, "run %s: %s", sl_run_kind_name(vm->pend_kind), e.msg);
	return c;
}

static int by_end(const void *a, const void *b)
{
	const sl_event *x = a, *y = b;
	if (x->t1 != y->t1)
		return x->t1 < y->t1 ? -1 : 1;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	return x->dev - y->dev;
}

int sl_vm_execute(sl_vm *vm, sl_cluster *c, sl_err *err)
{
	return sl_vm_execute_into(vm, c, NULL, err);
}

int sl_vm_execute_into(sl_vm *vm, sl_cluster *c, sl_wl_result *eng, sl_err *err)
{
	if (!vm->pending) {
		sl_cluster_destroy(c);
		return sl_fail(err, SL_EINVAL, "no run is pending");
	}
	int line = vm->pend_line;
	const char *kind = sl_run_kind_name(vm->pend_kind);
	if (++vm->runs > SL_LESSON_MAX_RUNS) {
		vm->pending = 0;
		sl_cluster_destroy(c);
		return vfail(vm, line, err, "more than %d runs in one session", SL_LESSON_MAX_RUNS);
	}
	if (!c)
		c = sl_vm_make_cluster(vm, 0, err);
	vm->pending = 0;
	if (!c)
		return err ? err->code : SL_EINVAL;
	sl_runrec rec;
	sl_runrec_init(&rec);
	sl_err e = {0};
	/* A run a show names needs the engine's report, asked for or not. */
	int shown = vm->pend_name >= 0 && vm->l->names[vm->pend_name].shown;
	sl_wl_result *mine = shown && !eng ? calloc(1, sizeof *mine) : NULL;
	if (shown && !eng && !mine) {
		sl_cluster_destroy(c);
		return sl_fail(err, SL_ENOMEM, "out of memory");
	}
	if (mine)
		eng = mine;
	int rc = sl_lrun(vm->pend_kind, &vm->setup, c, &rec, eng, &e);
	sl_cluster_destroy(vm->cluster);
	vm->cluster = c;
	free(vm->ev);
	vm->ev = NULL;
	vm->nev = 0;
	free(vm->ends);
	vm->ends = NULL;
	vm->nends = 0;
	vm->horizon = 0;
	if (rc) {
		sl_runrec_free(&rec);
		if (mine)
			sl_wl_result_free(mine);
		free(mine);
		return vfail(vm, line, err, "run %s: %s", kind, e.msg);
	}
	sl_snapshot snap;
	if (sl_trace_snapshot(sl_cluster_trace(c), &snap) == SL_OK) {
		if (shown)
			rc = keep_shown(&vm->kept[vm->pend_name], &eng->trep, &snap);
		vm->nends = sl_step_ends(&snap, &vm->ends);
		vm->ev = snap.ev; /* ours now: sorted by end time for step N */
		vm->nev = snap.n;
		if (vm->nev)
			qsort(vm->ev, vm->nev, sizeof *vm->ev, by_end);
	}
	if (mine)
		sl_wl_result_free(mine);
	free(mine);
	if (rc || sl_runrec_copy(&vm->last, &rec) ||
	    (vm->pend_name >= 0 && sl_runrec_copy(&vm->named[vm->pend_name], &rec))) {
		sl_runrec_free(&rec);
		return sl_fail(err, SL_ENOMEM, "out of memory");
	}
	snprintf(vm->result, sizeof vm->result, "%s", rec.summary);
	sl_runrec_free(&rec);
	vm->result_ready = 1;
	if (vm->waiting == OP_EXPLORE)
		vm->explore_runs++;
	return SL_OK;
}

sl_cluster *sl_vm_cluster(const sl_vm *vm)
{
	return vm->cluster;
}

const char *sl_vm_last_result(const sl_vm *vm)
{
	return vm->result;
}

const struct sl_lsetup *sl_vm_last_run(const sl_vm *vm, sl_run_kind *kind)
{
	if (!vm->last.valid)
		return NULL;
	*kind = vm->last.kind;
	return &vm->last.setup;
}

static int request_run(sl_vm *vm, sl_run_kind k, int name, int line, sl_err *err)
{
	sl_err e = {0};
	if (sl_lrun_check(k, &vm->setup, &e))
		return vfail(vm, line, err, "run %s: %s", sl_run_kind_name(k), e.msg);
	vm->pending = 1;
	vm->pend_kind = k;
	vm->pend_name = name;
	vm->pend_line = line;
	return SL_OK;
}

static void apply_setup(sl_vm *vm, const sl_op *o)
{
	for (int i = 0; i < o->nset; i++)
		sl_lsetup_set(&vm->setup, sl_setup_key_name(o->set[i].key), o->set[i].value, NULL);
}

/* ---- stepping ---- */

static void step_init(sl_vm *vm, sl_step *st, const sl_op *o)
{
	memset(st, 0, sizeof *st);
	st->line = o ? o->line : 0;
	st->pos = vm->pc;
	st->text = st->detail = st->unit = st->hint = "";
	st->scenario = &vm->setup.sc;
	st->setup = &vm->setup;
}

static int ops_step(sl_vm *vm, const sl_op *o, sl_step *st, sl_err *err)
{
	if (!vm->last.valid || !vm->cluster)
		return vfail(vm, o->line, err, "step: nothing has run yet");
	if (isnan(vm->last.v[sl_fig_find("time")]))
		return vfail(vm, o->line, err, "step: the last run did not finish (%s)",
		             vm->last.why);
	/* Operations are the engine's steps (steps.h), as the screen steps
	 * through them: a compute phase, one logical step of a collective. */
	size_t first = 0;
	while (first < vm->nev && vm->ev[first].t1 <= vm->horizon)
		first++;
	size_t j = 0;
	while (j < vm->nends && vm->ends[j] <= vm->horizon)
		j++;
	int ops = 0;
	double t = vm->horizon;
	while (j < vm->nends && ops < o->count) {
		t = vm->ends[j++];
		ops++;
	}
	size_t i = first;
	while (i < vm->nev && vm->ev[i].t1 <= t * (1 + 1e-12))
		i++;
	st->kind = SL_STEP_OPS;
	st->t_from = vm->horizon;
	st->t_to = t;
	st->ev = vm->nev ? vm->ev + first : NULL;
	st->nev = i - first;
	st->ops = ops;
	st->run = vm->last.kind;
	vm->horizon = t;
	char *s = malloc(96);
	if (s)
		snprintf(s, 96,
		         ops ? "%d operation%s of %d asked" : "the run is over: no operation left",
		         ops, ops == 1 ? "" : "s", o->count);
	st->text = keep(vm, s);
	return SL_OK;
}

/* The first of a question's mistakes whose value the answer's tolerance
 * would judge right, as a failed check in st (returns 1), or 0. */
static int mistake_is_answer(sl_vm *vm, const sl_op *o, sl_step *st, sl_err *err, int *rc)
{
	double want;
	if (eval(vm, o->expr, o->line, &want, err)) {
		*rc = err ? err->code : SL_EINVAL;
		return 0;
	}
	sl_dim d = vm->l->pool.n[o->expr].dim;
	double tol = o->tol_rel ? o->tol * fabs(want) : o->tol;
	for (int i = 0; i < o->nmis; i++) {
		double v;
		if (eval(vm, o->mis[i].expr, o->mis[i].line, &v, err)) {
			*rc = err ? err->code : SL_EINVAL;
			return 0;
		}
		if (fabs(v - want) > tol)
			continue;
		char a[64], b[64];
		sl_value_fmt(v, d, 0, 0, a, sizeof a);
		sl_value_fmt(want, d, 0, 0, b, sizeof b);
		char *det = malloc(300);
		if (det)
			snprintf(det, 300,
			         "the mistake gives %s, which the answer, %s, takes for right", a,
			         b);
		st->kind = SL_STEP_CHECK;
		st->line = o->mis[i].line;
		st->text = o->mis[i].src;
		st->detail = keep(vm, det);
		st->passed = 0;
		vm->checks_failed++;
		return 1;
	}
	return 0;
}

/* show side-by-side: the runs it names as they ran last. */
static int show_step(sl_vm *vm, const sl_op *o, sl_step *st, sl_err *err)
{
	for (int i = 0; i < o->nshow; i++) {
		const sl_name *nm = &vm->l->names[o->show[i]];
		const sl_runrec *r = &vm->named[o->show[i]];
		const struct kept *k = &vm->kept[o->show[i]];
		if (!r->valid)
			return vfail(vm, o->line, err,
			             "show side-by-side: the run named '%s' has not happened yet",
			             nm->s);
		if (!k->ndev)
			return vfail(
			    vm, o->line, err,
			    "show side-by-side: the run named '%s' (line %d) has nothing to "
			    "show: %s",
			    nm->s, nm->line, r->why[0] ? r->why : "it did not run to its end");
		vm->shows[i] =
		    (sl_shown_run){nm->s, &r->setup, k->ndev, k->step_s, k->dev, k->ev, k->nev};
	}
	st->kind = SL_STEP_SHOW;
	st->text = "side-by-side";
	st->nshows = o->nshow;
	st->shows = vm->shows;
	return SL_OK;
}

int sl_vm_next(sl_vm *vm, sl_step *st, sl_err *err)
{
	const sl_lesson *l = vm->l;
	int rc = SL_OK;
	strs_reset(vm);
	vm->steps = 0;
	if (vm->waiting) {
		const char *what =
		    vm->waiting == OP_QUESTION ? "the question waits for an answer"
		    : vm->waiting == OP_MENU
		        ? "the menu waits for a choice"
		        : "the explore waits until its condition holds or is skipped";
		return sl_fail(err, SL_EINVAL, "%s", what);
	}
	if (vm->pending && sl_vm_execute(vm, NULL, err))
		return err ? err->code : SL_EINVAL;
	if (vm->result_ready) {
		vm->result_ready = 0;
		step_init(vm, st, NULL);
		st->kind = SL_STEP_RESULT;
		st->line = vm->pend_line;
		st->run = vm->last.kind;
		st->text = vm->result;
		return SL_OK;
	}
	for (;;) {
		/* Held checks speak after an answer, before a run or a menu, and
		 * at the end. */
		if (vm->nheld && !vm->release && vm->pc < l->nops &&
		    (l->ops[vm->pc].kind == OP_RUN || l->ops[vm->pc].kind == OP_MENU))
			vm->release = 1;
		if (vm->nheld && (vm->release || vm->pc >= l->nops)) {
			struct held h = vm->held[0];
			memmove(vm->held, vm->held + 1,
			        sizeof vm->held[0] * (size_t)(vm->nheld - 1));
			if (--vm->nheld == 0)
				vm->release = 0;
			step_init(vm, st, NULL);
			st->kind = SL_STEP_CHECK;
			st->line = h.line;
			st->pos = h.pos;
			st->text = h.src;
			st->detail = keep(vm, h.detail);
			st->passed = 1;
			return SL_OK;
		}
		vm->release = 0;
		if (vm->pc >= l->nops) {
			step_init(vm, st, NULL);
			st->kind = SL_STEP_END;
			st->asked = vm->asked;
			st->right = vm->right;
			st->checks_failed = vm->checks_failed;
			vm->position = l->nops;
			return SL_OK;
		}
		const sl_op *o = &l->ops[vm->pc];
		/* The checker refuses loops without a learner in them; this is the
		 * backstop should one slip through. */
		if (++vm->steps > SL_LESSON_MAX_STEPS)
			return vfail(vm, o->line, err,
			             "%d commands in a row without a step to show: is "
			             "there a jump loop?",
			             SL_LESSON_MAX_STEPS);
		step_init(vm, st, o);
		vm->position = vm->pc;
		switch (o->kind) {
		case OP_SAY: {
			/* Its claims first: a sentence whose claim does not hold is
			 * not shown; the lesson fails there, as a check would. */
			int claim = claims_hold(vm, o, st, err, &rc);
			if (rc)
				return rc;
			vm->pc++;
			if (!claim)
				return SL_OK; /* st holds the failed claim */
			st->kind = SL_STEP_SAY;
			st->text = kinterp(vm, &o->text, o->line, err, &rc);
			return rc;
		}
		case OP_PAUSE:
			st->kind = SL_STEP_PAUSE;
			st->text = o->text.s ? kinterp(vm, &o->text, o->line, err, &rc) : "";
			vm->pc++;
			return rc;
		case OP_SETUP: {
			apply_setup(vm, o);
			char *s = malloc(600);
			if (s)
				sl_lsetup_describe(&vm->setup, s, 600);
			st->kind = SL_STEP_SETUP;
			st->text = keep(vm, s);
			vm->pc++;
			return SL_OK;
		}
		case OP_RUN:
			if ((rc = request_run(vm, o->run, o->name, o->line, err)))
				return rc;
			st->kind = SL_STEP_RUN;
			st->run = o->run;
			st->text = sl_run_kind_name(o->run);
			vm->pc++;
			return SL_OK;
		case OP_STEP:
			vm->pc++;
			return ops_step(vm, o, st, err);
		case OP_CHECK: {
			int holds;
			char *d = malloc(400);
			if (!d)
				return sl_fail(err, SL_ENOMEM, "out of memory");
			if (cond(vm, o->expr, o->line, &holds, d, 400, err)) {
				free(d);
				return err ? err->code : SL_EINVAL;
			}
			if (holds && vm->nheld < (int)(sizeof vm->held / sizeof vm->held[0])) {
				vm->held[vm->nheld++] = (struct held){o->line, vm->pc, o->src, d};
				vm->pc++;
				continue;
			}
			st->kind = SL_STEP_CHECK;
			st->text = o->src;
			st->detail = keep(vm, d);
			st->passed = holds;
			if (!holds)
				vm->checks_failed++;
			vm->pc++;
			return SL_OK;
		}
		case OP_LET: {
			double v;
			if (eval(vm, o->expr, o->line, &v, err))
				return err ? err->code : SL_EINVAL;
			vm->lets[o->name] = v;
			vm->pc++;
			continue;
		}
		case OP_LABEL:
			vm->pc++;
			continue;
		case OP_FINISH:
			vm->pc = l->nops;
			continue;
		case OP_JUMP: {
			int holds = 1;
			char d[400];
			if (o->expr >= 0 && cond(vm, o->expr, o->line, &holds, d, sizeof d, err))
				return err ? err->code : SL_EINVAL;
			vm->pc = holds ? o->target : vm->pc + 1;
			continue;
		}
		case OP_QUESTION:
		case OP_MENU: {
			if (o->kind == OP_QUESTION && o->nmis && vm->mis_checked != vm->pc + 1) {
				/* A mistake the answer's tolerance takes for right would
				 * never be said: the lesson fails there, as a check. */
				vm->mis_checked = vm->pc + 1;
				int bad = mistake_is_answer(vm, o, st, err, &rc);
				if (rc || bad)
					return rc;
			}
			st->kind = o->kind == OP_QUESTION ? SL_STEP_QUESTION : SL_STEP_MENU;
			st->text = kinterp(vm, &o->text, o->line, err, &rc);
			st->numeric = o->numeric;
			st->unit = o->unit;
			vm->arr = calloc((size_t)(o->nch ? o->nch : 1), sizeof *vm->arr);
			if (!vm->arr)
				return sl_fail(err, SL_ENOMEM, "out of memory");
			for (int i = 0; i < o->nch && !rc; i++)
				vm->arr[i] = kinterp(vm, &o->ch[i].text, o->line, err, &rc);
			st->choices = vm->arr;
			st->nchoices = o->nch;
			if (rc)
				return rc;
			vm->waiting = o->kind;
			vm->tries = 0;
			return SL_OK;
		}
		case OP_SHOW:
			if ((rc = show_step(vm, o, st, err)))
				return rc;
			vm->pc++;
			return SL_OK;
		case OP_EXPLORE:
			st->kind = SL_STEP_EXPLORE;
			st->run = o->run;
			st->text = kinterp(vm, &o->text, o->line, err, &rc);
			st->hint = kinterp(vm, &o->hint, o->line, err, &rc);
			char *until = malloc(400);
			if (until)
				sl_expr_words(&l->pool, o->expr, say_name, (void *)l, until, 400);
			st->detail = until ? keep(vm, until) : o->src;
			vm->arr = calloc((size_t)o->nknobs, sizeof *vm->arr);
			if (!vm->arr)
				return sl_fail(err, SL_ENOMEM, "out of memory");
			for (int i = 0; i < o->nknobs; i++)
				vm->arr[i] = sl_setup_key_name(o->knobs[i]);
			st->knobs = vm->arr;
			st->nknobs = o->nknobs;
			if (rc)
				return rc;
			vm->waiting = OP_EXPLORE;
			vm->explore_runs = vm->explore_met = 0;
			return SL_OK;
		}
	}
}

/* ---- the learner's input ---- */

static void learner_acted(sl_vm *vm)
{
	vm->steps = 0;
}

/* The learner answered and the lesson goes on: the checks held back speak. */
static void answered(sl_vm *vm)
{
	if (vm->nheld)
		vm->release = 1;
}

static void trim(const char *in, char *out, size_t n)
{
	while (*in == ' ' || *in == '\t')
		in++;
	snprintf(out, n, "%s", in);
	size_t l = strlen(out);
	while (l > 0 && (out[l - 1] == ' ' || out[l - 1] == '\t' || out[l - 1] == '\n' ||
	                 out[l - 1] == '\r'))
		out[--l] = 0;
}

/* Read a learner's number for a value of dimension d: "12us", "12 us", "12"
 * (in unit, or the base unit), "3/8", "37.5%". */
static int read_number(const char *in, sl_dim d, const char *unit, double *x, sl_err *err)
{
	char s[64], t[64];
	size_t j = 0;
	trim(in, s, sizeof s);
	for (size_t i = 0; s[i] && j + 1 < sizeof t; i++)
		if (s[i] != ' ')
			t[j++] = s[i];
	t[j] = 0;
	if (!t[0])
		return sl_fail(err, SL_EINVAL, "type a number");
	char *slash = strchr(t, '/');
	if (slash && sl_dim_eq(d, SL_DIM_NONE)) {
		*slash = 0;
		double a, b;
		if (sl_parse_double(t, &a, NULL) || sl_parse_double(slash + 1, &b, NULL) || b == 0)
			return sl_fail(err, SL_EINVAL, "'%s' is not a fraction like 3/8", s);
		*x = a / b;
		return SL_OK;
	}
	double v;
	if (sl_parse_double(t, &v, NULL) == SL_OK) { /* a bare number */
		if (unit && *unit) {
			char lit[96];
			sl_dim ud;
			double scale;
			snprintf(lit, sizeof lit, "1%s", unit);
			if (sl_literal_parse(lit, &scale, &ud, NULL) == SL_OK)
				v *= scale;
		}
		*x = v;
		return SL_OK;
	}
	sl_dim got;
	sl_err e = {0};
	if (sl_literal_parse(t, &v, &got, &e))
		return sl_fail(err, SL_EINVAL, "%s", e.msg);
	if (!sl_dim_eq(got, d))
		return sl_fail(err, SL_EINVAL, "'%s' is %s; the answer is %s", s, sl_dim_name(got),
		               sl_dim_name(d));
	*x = v;
	return SL_OK;
}

int sl_vm_answer(sl_vm *vm, const char *input, sl_answer *out, sl_err *err)
{
	if (vm->waiting != OP_QUESTION)
		return sl_fail(err, SL_EINVAL, "no question is waiting for an answer");
	const sl_op *o = &vm->l->ops[vm->pc];
	int rc = SL_OK;
	const char *mistake_why = NULL;
	memset(out, 0, sizeof *out);
	out->explain = out->expected = "";
	out->mistake = -1;
	if (!o->numeric) {
		char s[256];
		trim(input, s, sizeof s);
		int pick = -1;
		if (strlen(s) == 1 && isalpha((unsigned char)s[0]))
			pick = tolower((unsigned char)s[0]) - 'a';
		else if (s[0] && strspn(s, "0123456789") == strlen(s) && strlen(s) < 4)
			pick = atoi(s) - 1;
		else
			for (int i = 0; i < o->nch && pick < 0; i++)
				if (o->ch[i].text.s && strcasecmp(s, o->ch[i].text.s) == 0)
					pick = i;
		if (pick < 0 || pick >= o->nch)
			return sl_fail(err, SL_EINVAL, "answer with a letter from a to %c",
			               'a' + o->nch - 1);
		const sl_choice *c = &o->ch[pick];
		out->correct = c->correct;
		out->pick = pick;
		out->explain = c->explain.s ? kinterp(vm, &c->explain, o->line, err, &rc)
		                            : kinterp(vm, &o->explain, o->line, err, &rc);
		for (int i = 0; i < o->nch; i++)
			if (o->ch[i].correct) {
				char *e = malloc(300);
				if (e) {
					char *t = interp(vm, &o->ch[i].text, o->line, NULL);
					snprintf(e, 300, "%c) %s", 'a' + i, t ? t : "");
					free(t);
				}
				out->expected = keep(vm, e);
				break;
			}
	} else {
		double want = 0, got = 0;
		const sl_node *nd = &vm->l->pool.n[o->expr];
		if (eval(vm, o->expr, o->line, &want, err))
			return err ? err->code : SL_EINVAL;
		if (read_number(input, nd->dim, o->unit, &got, err))
			return err ? err->code : SL_EINVAL;
		double tol = o->tol_rel ? o->tol * fabs(want) : o->tol;
		out->correct = fabs(got - want) <= tol;
		out->high = got > want;
		/* The first mistake that matches says what was confused. */
		for (int i = 0; i < o->nmis && !out->correct && out->mistake < 0; i++) {
			double v;
			if (eval(vm, o->mis[i].expr, o->mis[i].line, &v, err))
				return err ? err->code : SL_EINVAL;
			double mt = o->mis[i].tol_rel ? o->mis[i].tol * fabs(v) : o->mis[i].tol;
			if (fabs(got - v) <= mt)
				out->mistake = i;
		}
		char *e = malloc(64);
		if (e)
			sl_value_fmt(want, nd->dim, 0, 0, e, 64);
		out->expected = keep(vm, e);
		const sl_text *t = out->correct ? &o->right : &o->wrong;
		if (!t->s)
			t = &o->explain;
		out->explain = kinterp(vm, t, o->line, err, &rc);
		if (out->mistake >= 0 && !rc) { /* why this number, then the way to the answer */
			const char *why =
			    kinterp(vm, &o->mis[out->mistake].explain, o->line, err, &rc);
			size_t n = strlen(why) + strlen(out->explain) + 2;
			char *both = malloc(n);
			if (both) {
				snprintf(both, n, "%s%s%s", why, out->explain[0] ? " " : "",
				         out->explain);
				out->explain = keep(vm, both);
			}
			mistake_why = why;
		}
		if (t != &o->explain && o->explain.s && !rc) {
			const char *more = kinterp(vm, &o->explain, o->line, err, &rc);
			size_t n = strlen(out->explain) + strlen(more) + 2;
			char *both = malloc(n);
			if (both) {
				snprintf(both, n, "%s %s", out->explain, more);
				out->explain = keep(vm, both);
			}
		}
	}
	if (rc)
		return rc;
	learner_acted(vm);
	/* A first wrong answer gets its explanation (a choice's) or a word on
	 * its direction (a number's, whose explanation tells the figure) and
	 * the question again; a second one gets the answer. */
	if (!out->correct && vm->tries++ < SL_VM_TRIES - 1 && (o->numeric || o->nch > 2)) {
		out->again = 1;
		out->expected = "";
		if (mistake_why)
			out->explain = mistake_why;
		else if (o->numeric)
			out->explain = out->high ? "That is too high." : "That is too low.";
		return SL_OK;
	}
	vm->asked++;
	vm->right += out->correct && vm->tries == 0;
	vm->waiting = 0;
	vm->pc++;
	answered(vm);
	return SL_OK;
}

int sl_vm_expected(sl_vm *vm, char *buf, size_t n, sl_err *err)
{
	if (vm->waiting != OP_QUESTION)
		return sl_fail(err, SL_EINVAL, "no question is waiting for an answer");
	const sl_op *o = &vm->l->ops[vm->pc];
	if (!o->numeric) {
		for (int i = 0; i < o->nch; i++)
			if (o->ch[i].correct) {
				snprintf(buf, n, "%c", 'a' + i);
				return SL_OK;
			}
		return sl_fail(err, SL_EINVAL, "the question has no right choice");
	}
	double v;
	if (eval(vm, o->expr, o->line, &v, err))
		return err ? err->code : SL_EINVAL;
	sl_dim d = vm->l->pool.n[o->expr].dim;
	const char *unit = sl_dim_eq(d, SL_DIM_TIME)    ? "s"
	                   : sl_dim_eq(d, SL_DIM_BYTES) ? "B"
	                   : sl_dim_eq(d, SL_DIM_RATE)  ? "B/s"
	                   : sl_dim_eq(d, SL_DIM_FLOPS) ? "FLOP/s"
	                                                : "";
	if (!strcmp(o->unit, "%"))
		snprintf(buf, n, "%.9g%%", v * 100);
	else
		snprintf(buf, n, "%.9g%s", v, unit);
	return SL_OK;
}

int sl_vm_choose(sl_vm *vm, int item, sl_err *err)
{
	if (vm->waiting != OP_MENU)
		return sl_fail(err, SL_EINVAL, "no menu is waiting for a choice");
	const sl_op *o = &vm->l->ops[vm->pc];
	if (item < 0 || item >= o->nch)
		return sl_fail(err, SL_EINVAL, "choose an item from 1 to %d", o->nch);
	vm->pc = o->ch[item].target;
	vm->waiting = 0;
	learner_acted(vm);
	answered(vm);
	return SL_OK;
}

int sl_vm_knob(sl_vm *vm, const char *setting, sl_err *err)
{
	if (vm->waiting != OP_EXPLORE)
		return sl_fail(err, SL_EINVAL, "knobs turn during an explore");
	const sl_op *o = &vm->l->ops[vm->pc];
	char s[200], *val;
	trim(setting, s, sizeof s);
	val = strpbrk(s, "= \t");
	if (!val)
		return sl_fail(err, SL_EINVAL, "write a knob and its value, e.g. '%s VALUE'",
		               sl_setup_key_name(o->knobs[0]));
	*val++ = 0;
	while (*val == ' ' || *val == '\t' || *val == '=')
		val++;
	int key = sl_setup_key(s), ok = 0;
	for (int i = 0; i < o->nknobs; i++)
		ok |= o->knobs[i] == key;
	if (!ok) {
		char list[200] = "";
		for (int i = 0; i < o->nknobs; i++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
			         i ? ", " : "", sl_setup_key_name(o->knobs[i]));
		return sl_fail(err, SL_EINVAL, "'%s' is not a knob here; you may turn: %s", s,
		               list);
	}
	sl_lsetup next = vm->setup;
	sl_err e = {0};
	if (sl_lsetup_set(&next, s, val, &e) || sl_lrun_check(o->run, &next, &e))
		return sl_fail(err, SL_EINVAL, "%s", e.msg);
	vm->setup = next;
	learner_acted(vm);
	return request_run(vm, o->run, -1, o->line, err);
}

int sl_vm_demo(sl_vm *vm, sl_err *err)
{
	if (vm->waiting != OP_EXPLORE)
		return sl_fail(err, SL_EINVAL, "a demo is part of an explore");
	const sl_op *o = &vm->l->ops[vm->pc];
	if (!o->nset)
		return sl_fail(err, SL_EINVAL, "this explore has no demo");
	sl_lsetup next = vm->setup;
	sl_err e = {0};
	for (int i = 0; i < o->nset; i++)
		sl_lsetup_set(&next, sl_setup_key_name(o->set[i].key), o->set[i].value, NULL);
	if (sl_lrun_check(o->run, &next, &e))
		return vfail(vm, o->line, err, "demo: %s", e.msg);
	vm->setup = next;
	learner_acted(vm);
	return request_run(vm, o->run, -1, o->line, err);
}

int sl_vm_explore_met(sl_vm *vm, const char **detail, sl_err *err)
{
	static const char none[] = "nothing has run yet: turn a knob";
	*detail = none;
	if (vm->waiting != OP_EXPLORE)
		return sl_fail(err, SL_EINVAL, "no explore is going on");
	const sl_op *o = &vm->l->ops[vm->pc];
	if (vm->pending && sl_vm_execute(vm, NULL, err))
		return -1;
	vm->result_ready = 0; /* shown through sl_vm_last_result() during an explore */
	if (!vm->explore_runs)
		return 0;
	int holds;
	char *d = malloc(400);
	if (!d) {
		sl_fail(err, SL_ENOMEM, "out of memory");
		return -1;
	}
	if (cond_words(vm, o->expr, o->line, &holds, d, 400, err)) {
		free(d);
		return -1;
	}
	*detail = keep(vm, d);
	if (holds) {
		vm->waiting = 0;
		vm->pc++;
		answered(vm);
	}
	return holds;
}

int sl_vm_skip(sl_vm *vm, sl_err *err)
{
	if (vm->waiting != OP_EXPLORE && vm->waiting != OP_QUESTION)
		return sl_fail(err, SL_EINVAL, "nothing to skip");
	if (vm->waiting == OP_QUESTION)
		vm->asked++;
	if (vm->pending) /* a knob turned but not run: forget the run */
		vm->pending = 0;
	vm->waiting = 0;
	vm->pc++;
	learner_acted(vm);
	answered(vm);
	return SL_OK;
}

int sl_vm_position(const sl_vm *vm)
{
	return vm->position;
}

void sl_vm_score(const sl_vm *vm, int *asked, int *right, int *checks_failed)
{
	if (asked)
		*asked = vm->asked;
	if (right)
		*right = vm->right;
	if (checks_failed)
		*checks_failed = vm->checks_failed;
}

int sl_vm_start_at(sl_vm *vm, int pos, sl_err *err)
{
	return sl_vm_start_at_into(vm, pos, NULL, err);
}

int sl_vm_start_at_into(sl_vm *vm, int pos, sl_wl_result *eng, sl_err *err)
{
	const sl_lesson *l = vm->l;
	if (eng)
		memset(eng, 0, sizeof *eng);
	if (pos < 0 || pos > l->nops)
		return sl_fail(err, SL_EINVAL, "%s: no position %d", l->name, pos);
	if (vm->pc != 0 || vm->runs || vm->waiting)
		return sl_fail(err, SL_EINVAL,
		               "start a lesson at a position before its first step");
	/* Replay what the steps before pos set up and measured, silently. */
	for (int p = 0; p < pos; p++) {
		const sl_op *o = &l->ops[p];
		if (o->kind == OP_SETUP) {
			apply_setup(vm, o);
		} else if (o->kind == OP_RUN || o->kind == OP_EXPLORE) {
			if (eng) {
				sl_wl_result_free(eng);
				memset(eng, 0, sizeof *eng);
			}
			if (request_run(vm, o->run, o->kind == OP_RUN ? o->name : -1, o->line,
			                err) ||
			    (eng ? sl_vm_execute_into(vm, NULL, eng, err)
			         : sl_vm_execute(vm, NULL, err)))
				return err ? err->code : SL_EINVAL;
			vm->result_ready = 0;
		} else if (o->kind == OP_LET) {
			double v;
			if (eval(vm, o->expr, o->line, &v, NULL) == SL_OK)
				vm->lets[o->name] = v;
		}
	}
	vm->pc = vm->position = pos;
	vm->steps = 0;
	return SL_OK;
}

int sl_text_span(const char **cursor, const char **start, size_t *len, sl_span_style *style)
{
	const char *s = *cursor;
	if (!*s)
		return 0;
	char mark = *s;
	if ((mark == '*' || mark == '`') && s[1] && s[1] != ' ') {
		const char *e = strchr(s + 1, mark);
		if (e && e[-1] != ' ') {
			*start = s + 1;
			*len = (size_t)(e - s - 1);
			*style = mark == '*' ? SL_SPAN_EMPH : SL_SPAN_CODE;
			*cursor = e + 1;
			return 1;
		}
	}
	const char *e = s + 1;
	while (*e && !((*e == '*' || *e == '`') && e[1] && e[1] != ' ' && strchr(e + 1, *e)))
		e++;
	*start = s;
	*len = (size_t)(e - s);
	*style = SL_SPAN_PLAIN;
	*cursor = e;
	return 1;
}
