/* SPDX-License-Identifier: MIT */
/* trace.c - per-device event lists, snapshots and the Chrome trace export. */
#include "trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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
	                                            "fc2", "dP",  "dV",     "dQ", "dK"};
	return p >= 0 && p < SL_PART_N ? tags[p] : "";
}

const char *sl_ev_kind_name(sl_ev_kind k)
{
	static const char *const names[SL_EV_NKINDS] = {"compute", "send", "recv", "reduce", "wait",
							    "write", "read"};
	return k >= 0 && k < SL_EV_NKINDS ? names[k] : "?";
}

/* Tracks: pid 1 holds the devices (tid = device), pid 2 the links
 * (tid = src * ndev + dst). */
int sl_trace_write_chrome(const sl_snapshot *s, FILE *f, sl_err *err)
{
	json_t *root = json_object();
	json_t *evs = json_array();
	json_object_set_new(root, "traceEvents", evs);
	json_object_set_new(root, "displayTimeUnit", json_string("ns"));

	json_array_append_new(evs, json_pack("{s:s, s:s, s:i, s:{s:s}}", "ph", "M", "name", "process_name",
					     "pid", 1, "args", "name", "devices"));
	json_array_append_new(evs, json_pack("{s:s, s:s, s:i, s:{s:s}}", "ph", "M", "name", "process_name",
					     "pid", 2, "args", "name", "links"));
	for (int d = 0; d < s->ndev; d++) {
		char name[32];
		snprintf(name, sizeof name, "device %d", d);
		json_array_append_new(evs, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "ph", "M", "name",
						     "thread_name", "pid", 1, "tid", d, "args", "name", name));
	}
	char *seen = calloc((size_t)s->ndev * s->ndev, 1);
	for (size_t i = 0; i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		if (e->kind == SL_EV_WAIT)
			continue;
		json_t *args = json_pack("{s:s, s:I, s:f, s:f, s:f}", "kind", sl_ev_kind_name(e->kind),
					 "bytes", (json_int_t)e->bytes, "flops", e->flops, "wall_start_s",
					 e->w0, "wall_end_s", e->w1);
		if (e->peer >= 0)
			json_object_set_new(args, "peer", json_integer(e->peer));
		if (e->mb >= 0)
			json_object_set_new(args, "microbatch", json_integer(e->mb));
		char name[64];
		if (e->mb >= 0)
			snprintf(name, sizeof name, "%s mb%d", e->label, e->mb);
		else
			snprintf(name, sizeof name, "%s", e->label[0] ? e->label : sl_ev_kind_name(e->kind));
		json_array_append_new(evs, json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:o}", "ph", "X",
						     "name", name, "cat", sl_ev_kind_name(e->kind), "pid", 1,
						     "tid", e->dev, "ts", e->t0 * 1e6, "dur",
						     (e->t1 - e->t0) * 1e6, "args", json_deep_copy(args)));
		if (e->kind == SL_EV_SEND) {
			int tid = e->dev * s->ndev + e->peer;
			if (seen && !seen[tid]) {
				seen[tid] = 1;
				char ln[48];
				snprintf(ln, sizeof ln, "link %d->%d", e->dev, e->peer);
				json_array_append_new(evs, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "ph", "M",
								     "name", "thread_name", "pid", 2, "tid",
								     tid, "args", "name", ln));
			}
			json_array_append_new(evs, json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:o}", "ph",
							     "X", "name", name, "cat", "link", "pid", 2,
							     "tid", tid, "ts", e->t0 * 1e6, "dur",
							     (e->t1 - e->t0) * 1e6, "args", args));
		} else {
			json_decref(args);
		}
	}
	free(seen);
	int rc = json_dumpf(root, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF ? SL_OK : SL_ESYS;
	json_decref(root);
	if (rc)
		return sl_fail(err, SL_ESYS, "cannot write the trace");
	return SL_OK;
}
