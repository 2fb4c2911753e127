/* SPDX-License-Identifier: MIT */
/* plantable.c - the plan view's background planner and its sorted table. */
#include "plantable.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sl_plantable {
	int wake_fd;
	pthread_mutex_t mu;
	pthread_t th;
	int joinable;
	atomic_int cancel; /* stops the planner between layouts */
	/* the job (mu): what was asked, and what came back */
	sl_plan_spec spec;
	int asked, fresh;
	int rc;
	sl_err err;
	sl_plan result;
	/* the UI thread's copy */
	sl_plan plan;
	int state;
	sl_err ui_err;
	/* the table */
	const sl_plan *src;
	int *order, n;
	sl_pt_col col;
	int reverse, sel, top;
};

static const char *const col_names[SL_PT_NCOLS] = {"step time", "tokens/s", "peak memory",
                                                   "comm",      "bubble",   "tp*pp"};

const char *sl_pt_col_name(sl_pt_col c)
{
	return c >= 0 && c < SL_PT_NCOLS ? col_names[c] : "?";
}

sl_plantable *sl_plantable_create(int wake_fd)
{
	sl_plantable *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->wake_fd = wake_fd;
	atomic_init(&v->cancel, 0);
	pthread_mutex_init(&v->mu, NULL);
	return v;
}

void sl_plantable_destroy(sl_plantable *v)
{
	if (!v)
		return;
	if (v->joinable) {
		atomic_store(&v->cancel, 1);
		pthread_join(v->th, NULL);
	}
	pthread_mutex_destroy(&v->mu);
	sl_plan_free(&v->result);
	sl_plan_free(&v->plan);
	free(v->order);
	free(v);
}

static void *job(void *arg)
{
	sl_plantable *v = arg;
	pthread_mutex_lock(&v->mu);
	sl_plan_spec spec = v->spec;
	pthread_mutex_unlock(&v->mu);
	sl_plan p;
	sl_err err = {0};
	int rc = sl_plan_run(&spec, &p, &err);
	pthread_mutex_lock(&v->mu);
	sl_plan_free(&v->result);
	v->result = p;
	v->rc = rc;
	v->err = err;
	v->fresh = 1;
	pthread_mutex_unlock(&v->mu);
	if (v->wake_fd >= 0) {
		char b = 'p';
		ssize_t r = write(v->wake_fd, &b, 1);
		(void)r;
	}
	return NULL;
}

/* Byte for byte: a copy that differs only in padding plans again, which
 * costs time, not correctness. */
static int same_spec(const sl_plan_spec *a, const sl_model_spec *m, const sl_cluster_config *c,
                     sl_attention attn, sl_recompute rc)
{
	return memcmp(&a->model, m, sizeof *m) == 0 && memcmp(&a->cluster, c, sizeof *c) == 0 &&
	       a->attention == attn && a->min_recompute == rc;
}

int sl_plantable_start(sl_plantable *v, const sl_model_spec *m, const sl_cluster_config *cfg,
                       sl_attention attn, sl_recompute rc, sl_err *err)
{
	pthread_mutex_lock(&v->mu);
	int keep = v->asked && v->state != 0 && same_spec(&v->spec, m, cfg, attn, rc);
	pthread_mutex_unlock(&v->mu);
	if (keep)
		return SL_OK;
	/* Another model or cluster: the plan in progress is of no use. */
	if (v->joinable) {
		atomic_store(&v->cancel, 1);
		pthread_join(v->th, NULL);
		v->joinable = 0;
		atomic_store(&v->cancel, 0);
	}
	pthread_mutex_lock(&v->mu);
	sl_plan_free(&v->result);
	memset(&v->spec, 0, sizeof v->spec);
	v->spec.model = *m;
	v->spec.cluster = *cfg;
	v->spec.attention = attn;
	v->spec.min_recompute = rc;
	v->spec.cancel = &v->cancel;
	v->asked = 1;
	v->fresh = 0;
	v->state = 1;
	pthread_mutex_unlock(&v->mu);
	if (pthread_create(&v->th, NULL, job, v) != 0) {
		pthread_mutex_lock(&v->mu);
		v->state = 0;
		pthread_mutex_unlock(&v->mu);
		return sl_fail(err, SL_ESYS, "cannot start the planner's thread");
	}
	v->joinable = 1;
	return SL_OK;
}

int sl_plantable_collect(sl_plantable *v)
{
	pthread_mutex_lock(&v->mu);
	int fresh = v->fresh;
	if (fresh) {
		sl_plan_free(&v->plan);
		v->plan = v->result;
		memset(&v->result, 0, sizeof v->result);
		v->state = v->rc == SL_OK ? 2 : -1;
		v->ui_err = v->err;
		v->fresh = 0;
	}
	pthread_mutex_unlock(&v->mu);
	if (fresh)
		sl_pt_reset(v, &v->plan);
	return fresh;
}

int sl_plantable_state(const sl_plantable *v, const sl_err **err)
{
	if (err)
		*err = &v->ui_err;
	return v->state;
}

const sl_plan *sl_plantable_plan(const sl_plantable *v)
{
	return v->state == 2 ? &v->plan : NULL;
}

/* ---- the table ---- */

void sl_pt_reset(sl_plantable *v, const sl_plan *p)
{
	v->src = p;
	v->n = 0;
	free(v->order);
	v->order = NULL;
	v->col = SL_PT_STEP;
	v->reverse = v->sel = v->top = 0;
	if (!p || p->nfit <= 0 || !(v->order = malloc((size_t)p->nfit * sizeof *v->order)))
		return;
	for (int i = 0; i < p->nfit; i++)
		v->order[i] = i;
	v->n = p->nfit;
}

static double key_of(const sl_plan_row *r, sl_pt_col c)
{
	switch (c) {
	case SL_PT_STEP:
		return sl_plan_time_key(r->est.step_s);
	case SL_PT_TOKENS:
		return -r->tokens_per_s;
	case SL_PT_MEM:
		return (double)r->est.mem_peak_bytes;
	case SL_PT_COMM:
		return r->comm_share;
	case SL_PT_BUBBLE:
		return r->est.bubble_fraction;
	case SL_PT_MP:
		return r->layout.tp * r->layout.pp;
	default:
		return 0;
	}
}

/* qsort has no context: the sort runs on one thread at a time (the UI's). */
static const sl_plantable *sorting;

static int by_col(const void *a, const void *b)
{
	int i = *(const int *)a, j = *(const int *)b;
	double x = key_of(&sorting->src->rows[i], sorting->col);
	double y = key_of(&sorting->src->rows[j], sorting->col);
	if (x != y)
		return (x < y ? -1 : 1) * (sorting->reverse ? -1 : 1);
	return i - j;
}

void sl_pt_sort(sl_plantable *v, sl_pt_col col, int reverse)
{
	if (col < 0 || col >= SL_PT_NCOLS)
		col = SL_PT_STEP;
	v->col = col;
	v->reverse = reverse;
	sorting = v;
	if (v->n > 1)
		qsort(v->order, (size_t)v->n, sizeof *v->order, by_col);
	sorting = NULL;
	v->sel = v->top = 0;
}

sl_pt_col sl_pt_sorted_by(const sl_plantable *v, int *reverse)
{
	if (reverse)
		*reverse = v->reverse;
	return v->col;
}

int sl_pt_count(const sl_plantable *v)
{
	return v->n;
}

const sl_plan_row *sl_pt_row(const sl_plantable *v, int i)
{
	return i >= 0 && i < v->n ? &v->src->rows[v->order[i]] : NULL;
}

int sl_pt_rank(const sl_plantable *v, int i)
{
	return i >= 0 && i < v->n ? v->order[i] + 1 : 0;
}

void sl_pt_move(sl_plantable *v, int delta)
{
	if (v->n == 0)
		return;
	long s = (long)v->sel + delta;
	v->sel = s < 0 ? 0 : s >= v->n ? v->n - 1 : (int)s;
}

int sl_pt_selected(const sl_plantable *v)
{
	return v->sel;
}

int sl_pt_top(sl_plantable *v, int height)
{
	if (height < 1)
		height = 1;
	if (v->sel < v->top)
		v->top = v->sel;
	if (v->sel >= v->top + height)
		v->top = v->sel - height + 1;
	if (v->top > v->n - height)
		v->top = v->n - height > 0 ? v->n - height : 0;
	return v->top;
}
