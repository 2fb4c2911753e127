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

/* Put a run of n events in cmp_event order, stably (events that compare
 * equal keep the order they were recorded in): a natural merge sort, so a
 * run in order already costs one pass and no memory.  A device records
 * most operations as its clock moves, but not all (a receive it posted
 * before it computed is recorded when it lands).  Temporary room: the
 * run's size, one device's share.  -1: no memory. */
static int sort_run(sl_event *ev, size_t n)
{
	size_t runs = 1;
	for (size_t k = 1; k < n; k++)
		runs += cmp_event(&ev[k - 1], &ev[k]) > 0;
	if (runs <= 1)
		return 0;
	sl_event *tmp = malloc(n * sizeof *tmp), *src = ev, *dst = tmp;
	if (!tmp)
		return -1;
	while (runs > 1) {
		runs = 0;
		for (size_t i = 0; i < n;) {
			size_t mid = i + 1;
			while (mid < n && cmp_event(&src[mid - 1], &src[mid]) <= 0)
				mid++;
			size_t end = mid;
			if (end < n) {
				end++;
				while (end < n && cmp_event(&src[end - 1], &src[end]) <= 0)
					end++;
			}
			size_t x = i, y = mid, o = i;
			while (x < mid && y < end)
				dst[o++] = cmp_event(&src[y], &src[x]) < 0 ? src[y++] : src[x++];
			while (x < mid)
				dst[o++] = src[x++];
			while (y < end)
				dst[o++] = src[y++];
			runs++;
			i = end;
		}
		sl_event *t = src;
		src = dst;
		dst = t;
	}
	if (src != ev)
		memcpy(ev, src, n * sizeof *src);
	free(tmp);
	return 0;
}

/* The devices' logs laid end to end in ev (log d from off[d] to
 * off[d + 1]) put in cmp_event order: each log sorted (sort_run), then
 * merged through the order of their positions (a word per event, never a
 * second copy of the events: glibc's qsort of them took one), applied in
 * place a cycle at a time.  No lock is held: the events are the caller's.
 * -1: no memory. */
static int put_in_order(sl_event *ev, const size_t *off, int ndev)
{
	size_t n = off[ndev];
	for (int d = 0; d < ndev; d++)
		if (sort_run(ev + off[d], off[d + 1] - off[d]))
			return -1;
	size_t *ord = malloc((n ? n : 1) * sizeof *ord), *at = calloc((size_t)ndev, sizeof *at);
	int *heap = malloc(((size_t)ndev + 1) * sizeof *heap);
	if (!ord || !at || !heap) {
		free(ord);
		free(at);
		free(heap);
		return -1;
	}
	for (int d = 0; d < ndev; d++)
		at[d] = off[d];
		/* A min-heap of the logs by their next event (ties: the lower device). */
#define HEAD(d) (&ev[at[d]])
#define LESS(a, b)                                                                                 \
	(cmp_event(HEAD(a), HEAD(b)) < 0 || (cmp_event(HEAD(a), HEAD(b)) == 0 && (a) < (b)))
	int h = 0;
	for (int d = 0; d < ndev; d++) {
		if (at[d] == off[d + 1])
			continue;
		int i = h++;
		while (i > 0 && LESS(d, heap[(i - 1) / 2])) {
			heap[i] = heap[(i - 1) / 2];
			i = (i - 1) / 2;
		}
		heap[i] = d;
	}
	for (size_t k = 0; k < n; k++) {
		int d = heap[0];
		ord[k] = at[d]++;
		if (at[d] == off[d + 1])
			d = heap[--h];
		/* Sift d down from the root. */
		int i = 0;
		for (;;) {
			int c = 2 * i + 1;
			if (c >= h)
				break;
			if (c + 1 < h && LESS(heap[c + 1], heap[c]))
				c++;
			if (!LESS(heap[c], d))
				break;
			heap[i] = heap[c];
			i = c;
		}
		if (h)
			heap[i] = d;
	}
#undef LESS
#undef HEAD
	/* ev[k] takes the event at ord[k]; ord[k] = k marks k done. */
	for (size_t k = 0; k < n; k++) {
		if (ord[k] == k)
			continue;
		sl_event tmp = ev[k];
		size_t j = k;
		while (ord[j] != k) {
			size_t from = ord[j];
			ev[j] = ev[from];
			ord[j] = j;
			j = from;
		}
		ev[j] = tmp;
		ord[j] = j;
	}
	free(ord);
	free(at);
	free(heap);
	return 0;
}

static void lock_all(sl_trace *t)
{
	for (int i = 0; i < t->ndev; i++)
		pthread_mutex_lock(&t->log[i].mu);
}

static void unlock_all(sl_trace *t)
{
	for (int i = t->ndev - 1; i >= 0; i--)
		pthread_mutex_unlock(&t->log[i].mu);
}

/* What a snapshot and a take share: out emptied, every log locked (the
 * caller unlocks), and *off[d] where log d starts when the logs are laid
 * end to end, *off[ndev] the total.  -1 (nothing locked): no memory. */
static int lock_and_lay_out(sl_trace *t, sl_snapshot *out, size_t **off)
{
	out->ndev = t->ndev;
	out->n = 0;
	out->ev = NULL;
	if (!(*off = malloc(((size_t)t->ndev + 1) * sizeof **off)))
		return -1;
	lock_all(t);
	size_t n = 0;
	for (int i = 0; i < t->ndev; i++) {
		(*off)[i] = n;
		n += t->log[i].n;
	}
	(*off)[t->ndev] = n;
	return 0;
}

/* The logs are copied under their locks (a memcpy each, as the devices
 * may be appending) and put in order after. */
int sl_trace_snapshot(sl_trace *t, sl_snapshot *out)
{
	size_t *off;
	if (lock_and_lay_out(t, out, &off))
		return SL_ENOMEM;
	size_t n = off[t->ndev];
	sl_event *ev = malloc((n ? n : 1) * sizeof *ev);
	for (int i = 0; ev && i < t->ndev; i++)
		if (t->log[i].n)
			memcpy(ev + off[i], t->log[i].ev, t->log[i].n * sizeof *ev);
	unlock_all(t);
	if (!ev || put_in_order(ev, off, t->ndev)) {
		free(ev);
		free(off);
		return SL_ENOMEM;
	}
	free(off);
	out->n = n;
	out->ev = ev;
	return SL_OK;
}

int sl_trace_take(sl_trace *t, sl_snapshot *out)
{
	size_t *off;
	if (lock_and_lay_out(t, out, &off))
		return SL_ENOMEM;
	size_t n = off[t->ndev];
	/* The logs moved end to end, each freed once moved: the events are
	 * held once, plus one log (realloc of a large block remaps).  Out of
	 * memory part way, the trace has lost what was moved. */
	sl_event *ev = NULL;
	int rc = SL_OK;
	for (int i = 0; i < t->ndev && rc == SL_OK; i++) {
		sl_event *p = realloc(ev, (off[i] + t->log[i].n + 1) * sizeof *p);
		if (!p) {
			rc = SL_ENOMEM;
			break;
		}
		ev = p;
		if (t->log[i].n)
			memcpy(ev + off[i], t->log[i].ev, t->log[i].n * sizeof *ev);
		free(t->log[i].ev);
		t->log[i].ev = NULL;
		t->log[i].cap = 0;
	}
	for (int i = 0; i < t->ndev; i++)
		t->log[i].n = 0;
	unlock_all(t);
	if (rc == SL_OK && put_in_order(ev, off, t->ndev))
		rc = SL_ENOMEM;
	free(off);
	if (rc) {
		free(ev);
		return rc;
	}
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
	                                            "fc2", "dP",  "dV",     "dQ", "dK",   "head"};
	return p >= 0 && p < SL_PART_N ? tags[p] : "";
}

const char *sl_ev_kind_name(sl_ev_kind k)
{
	static const char *const names[SL_EV_NKINDS] = {"compute", "send",  "recv", "reduce",
	                                                "wait",    "write", "read"};
	return k >= 0 && k < SL_EV_NKINDS ? names[k] : "?";
}
