/* SPDX-License-Identifier: MIT */
/* trace.c - per-device event lists, and snapshots (the Chrome
 * trace export is chrome.c). */
#include "trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct devlog {
	pthread_mutex_t mu;
	sl_event *ev;
	size_t n, cap;
};

struct sl_trace {
	int ndev;
	struct devlog *log;
};

sl_trace *sl_trace_create(int ndev)
{
	sl_trace *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->ndev = ndev;
	t->log = calloc((size_t)ndev, sizeof *t->log);
	if (!t->log) {
		free(t);
		return NULL;
	}
	for (int i = 0; i < ndev; i++)
		pthread_mutex_init(&t->log[i].mu, NULL);
	return t;
}

void sl_trace_destroy(sl_trace *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->ndev; i++) {
		pthread_mutex_destroy(&t->log[i].mu);
		free(t->log[i].ev);
	}
	free(t->log);
	free(t);
}

void sl_trace_clear(sl_trace *t)
{
	for (int i = 0; i < t->ndev; i++) {
		pthread_mutex_lock(&t->log[i].mu);
		t->log[i].n = 0;
		pthread_mutex_unlock(&t->log[i].mu);
	}
}

void sl_trace_add(sl_trace *t, const sl_event *ev)
{
	struct devlog *l = &t->log[ev->dev];
	pthread_mutex_lock(&l->mu);
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		sl_event *p = realloc(l->ev, cap * sizeof *p);
		if (!p) {
			/* Losing a trace event must not stop the run. */
			pthread_mutex_unlock(&l->mu);
			return;
		}
		l->ev = p;
		l->cap = cap;
	}
	l->ev[l->n++] = *ev;
	pthread_mutex_unlock(&l->mu);
}

size_t sl_trace_count(sl_trace *t)
{
	size_t n = 0;
	for (int i = 0; i < t->ndev; i++) {
		pthread_mutex_lock(&t->log[i].mu);
		n += t->log[i].n;
		pthread_mutex_unlock(&t->log[i].mu);
	}
	return n;
}

static int cmp_event(const void *a, const void *b)
{
	const sl_event *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev - y->dev;
	return (x->t1 > y->t1) - (x->t1 < y->t1);
}

int sl_trace_snapshot(sl_trace *t, sl_snapshot *out)
{
	out->ndev = t->ndev;
	out->n = 0;
	out->ev = NULL;
	for (int i = 0; i < t->ndev; i++)
		pthread_mutex_lock(&t->log[i].mu);
	size_t n = 0;
	for (int i = 0; i < t->ndev; i++)
		n += t->log[i].n;
	sl_event *ev = malloc((n ? n : 1) * sizeof *ev);
	if (ev) {
		size_t k = 0;
		for (int i = 0; i < t->ndev; i++) {
			if (t->log[i].n)
				memcpy(ev + k, t->log[i].ev, t->log[i].n * sizeof *ev);
			k += t->log[i].n;
		}
	}
	for (int i = t->ndev - 1; i >= 0; i--)
		pthread_mutex_unlock(&t->log[i].mu);
	if (!ev)
		return SL_ENOMEM;
	/* Stable by construction: device lists are already in time order. */
	qsort(ev, n, sizeof *ev, cmp_event);
	out->n = n;
	out->ev = ev;
	return SL_OK;
}

void sl_snapshot_free(sl_snapshot *s)
{
	free(s->ev);
	s->ev = NULL;
	s->n = 0;
}

const char *sl_work_part_tag(sl_work_part p)
{
	static const char *const tags[SL_PART_N] = {"",    "qkv", "scores", "PV", "proj", "fc1",
	                                            "fc2", "dP",  "dV",     "dQ", "dK", "head"};
	return p >= 0 && p < SL_PART_N ? tags[p] : "";
}

const char *sl_ev_kind_name(sl_ev_kind k)
{
	static const char *const names[SL_EV_NKINDS] = {"compute", "send", "recv", "reduce", "wait",
							    "write", "read"};
	return k >= 0 && k < SL_EV_NKINDS ? names[k] : "?";
}
