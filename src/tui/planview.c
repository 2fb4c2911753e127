/* SPDX-License-Identifier: MIT */
/* planview.c - the plan view's background job and its table. */
#include "planview.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sl_planview {
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
	sl_pv_col col;
	int reverse, sel, top;
};

static const char *const col_names[SL_PV_NCOLS] = {"step time", "tokens/s", "peak memory",
                                                   "comm",      "bubble",   "tp*pp"};

const char *sl_pv_col_name(sl_pv_col c)
{
	return c >= 0 && c < SL_PV_NCOLS ? col_names[c] : "?";
}

sl_planview *sl_planview_create(int wake_fd)
{
	sl_planview *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->wake_fd = wake_fd;
	atomic_init(&v->cancel, 0);
	pthread_mutex_init(&v->mu, NULL);
	return v;
}

void sl_planview_destroy(sl_planview *v)
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
	sl_planview *v = arg;
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

int sl_planview_start(sl_planview *v, const sl_model_spec *m, const sl_cluster_config *cfg,
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

int sl_planview_collect(sl_planview *v)
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
		sl_pv_reset(v, &v->plan);
	return fresh;
}

int sl_planview_state(const sl_planview *v, const sl_err **err)
{
	if (err)
		*err = &v->ui_err;
	return v->state;
}

const sl_plan *sl_planview_plan(const sl_planview *v)
{
	return v->state == 2 ? &v->plan : NULL;
}

/* ---- the table ---- */

void sl_pv_reset(sl_planview *v, const sl_plan *p)
{
	v->src = p;
	v->n = 0;
	free(v->order);
	v->order = NULL;
	v->col = SL_PV_STEP;
	v->reverse = v->sel = v->top = 0;
	if (!p || p->nfit <= 0 || !(v->order = malloc((size_t)p->nfit * sizeof *v->order)))
		return;
	for (int i = 0; i < p->nfit; i++)
		v->order[i] = i;
	v->n = p->nfit;
}

static double key_of(const sl_plan_row *r, sl_pv_col c)
{
	switch (c) {
	case SL_PV_STEP:
		return sl_plan_time_key(r->est.step_s);
	case SL_PV_TOKENS:
		return -r->tokens_per_s;
	case SL_PV_MEM:
		return (double)r->est.mem_peak_bytes;
	case SL_PV_COMM:
		return r->comm_share;
	case SL_PV_BUBBLE:
		return r->est.bubble_fraction;
	case SL_PV_MP:
		return r->layout.tp * r->layout.pp;
	default:
		return 0;
	}
}

/* qsort has no context: the sort runs on one thread at a time (the UI's). */
static const sl_planview *sorting;

static int by_col(const void *a, const void *b)
{
	int i = *(const int *)a, j = *(const int *)b;
	double x = key_of(&sorting->src->rows[i], sorting->col);
	double y = key_of(&sorting->src->rows[j], sorting->col);
	if (x != y)
		return (x < y ? -1 : 1) * (sorting->reverse ? -1 : 1);
	return i - j;
}

void sl_pv_sort(sl_planview *v, sl_pv_col col, int reverse)
{
	if (col < 0 || col >= SL_PV_NCOLS)
		col = SL_PV_STEP;
	v->col = col;
	v->reverse = reverse;
	sorting = v;
	if (v->n > 1)
		qsort(v->order, (size_t)v->n, sizeof *v->order, by_col);
	sorting = NULL;
	v->sel = v->top = 0;
}

sl_pv_col sl_pv_sorted_by(const sl_planview *v, int *reverse)
{
	if (reverse)
		*reverse = v->reverse;
	return v->col;
}

int sl_pv_count(const sl_planview *v)
{
	return v->n;
}

const sl_plan_row *sl_pv_row(const sl_planview *v, int i)
{
	return i >= 0 && i < v->n ? &v->src->rows[v->order[i]] : NULL;
}

int sl_pv_rank(const sl_planview *v, int i)
{
	return i >= 0 && i < v->n ? v->order[i] + 1 : 0;
}

void sl_pv_move(sl_planview *v, int delta)
{
	if (v->n == 0)
		return;
	long s = (long)v->sel + delta;
	v->sel = s < 0 ? 0 : s >= v->n ? v->n - 1 : (int)s;
}

int sl_pv_selected(const sl_planview *v)
{
	return v->sel;
}

int sl_pv_top(sl_planview *v, int height)
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
