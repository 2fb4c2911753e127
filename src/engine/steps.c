/* SPDX-License-Identifier: MIT */
/* steps.c - the step model (see steps.h). */
#include "steps.h"

#include <stdlib.h>
#include <string.h>

enum { K_COLL = 1, K_PHASE = 2, K_WORK = 3, K_P2P = 4, K_IO = 5, K_END = 6 };

struct key {
	int type;
	long a, b, c; /* coll: leader, seq, step; phase: collectives before; p2p: step, kind and
	                 chunk, micro-batch; io: kind, chunk id; end: group */
	size_t ev;
};

static int cmp_key(const void *x, const void *y)
{
	const struct key *p = x, *q = y;
	if (p->type != q->type)
		return p->type - q->type;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	if (p->c != q->c)
		return p->c < q->c ? -1 : 1;
	return p->ev < q->ev ? -1 : p->ev > q->ev;
}

static int same_group(const struct key *p, const struct key *q)
{
	return p->type == q->type && p->a == q->a && p->b == q->b && p->c == q->c;
}

static int counts(const sl_event *e)
{
	return e->kind != SL_EV_WAIT && e->t1 > e->t0;
}

static int near(double a, double b)
{
	double m = a > b ? a : b;
	return a == b || (a > b ? a - b : b - a) <= 1e-12 * m;
}

struct endref {
	double t1;
	size_t k; /* index into keys */
};

static int cmp_end(const void *x, const void *y)
{
	const struct endref *p = x, *q = y;
	return (p->t1 > q->t1) - (p->t1 < q->t1);
}

/* Two steps are the same logical one: a collective's of the same kind,
 * phase and step (run by different groups), or the same GEMM of the same
 * operation (replicas), or work timed by its end on both sides.  A
 * pipeline message or a checkpoint chunk is a step of its own: its key
 * names it already, across every device that moves it. */
static int same_logical(const sl_snapshot *s, const sl_opstep *a, const sl_opstep *b)
{
	const sl_event *ea = &s->ev[a->rep], *eb = &s->ev[b->rep];
	if (ea->p2p.kind != SL_P2P_NONE || eb->p2p.kind != SL_P2P_NONE ||
	    ea->io.kind != SL_IO_NONE || eb->io.kind != SL_IO_NONE)
		return 0;
	const sl_ev_coll *x = &ea->coll, *y = &eb->coll;
	if ((x->op >= 0) != (y->op >= 0))
		return 0;
	if (x->op >= 0)
		return x->op == y->op && x->phase == y->phase && x->step == y->step &&
		       x->nsteps == y->nsteps;
	const sl_ev_work *u = &ea->work, *v = &eb->work;
	if ((u->pass != SL_PASS_NONE) != (v->pass != SL_PASS_NONE))
		return 0;
	return u->pass == SL_PASS_NONE ||
	       (ea->op == eb->op && u->pass == v->pass && u->part == v->part &&
	        u->grad == v->grad && u->block == v->block && u->head == v->head);
}

struct tagged {
	sl_opstep st;
	size_t old;
	long coll; /* the collective (leader, seq) of a collective's step, else -1 */
	int lstep; /* its logical step */
};

/* A collective's steps together in logical order; the rest after, as found. */
static int cmp_logical(const void *x, const void *y)
{
	const struct tagged *p = x, *q = y;
	if ((p->coll >= 0) != (q->coll >= 0))
		return p->coll >= 0 ? -1 : 1;
	if (p->coll != q->coll)
		return p->coll < q->coll ? -1 : 1;
	if (p->lstep != q->lstep)
		return p->lstep < q->lstep ? -1 : 1;
	return (p->old > q->old) - (p->old < q->old);
}

/* By stop; steps of one collective that stop together in their logical
 * order; then by end, start, and as found (stable). */
static int cmp_tagged(const void *x, const void *y)
{
	const struct tagged *p = x, *q = y;
	if (!near(p->st.t_stop, q->st.t_stop))
		return p->st.t_stop < q->st.t_stop ? -1 : 1;
	if (p->coll >= 0 && p->coll == q->coll && p->lstep != q->lstep)
		return p->lstep < q->lstep ? -1 : 1;
	if (p->st.t1 != q->st.t1)
		return p->st.t1 < q->st.t1 ? -1 : 1;
	if (p->st.t0 != q->st.t0)
		return p->st.t0 < q->st.t0 ? -1 : 1;
	return (p->old > q->old) - (p->old < q->old);
}

size_t sl_steps_build(const sl_snapshot *s, sl_opstep **out, int **step_of)
{
	*out = NULL;
	if (step_of)
		*step_of = NULL;
	size_t n = s->n;
	struct key *k = malloc((n ? n : 1) * sizeof *k);
	struct endref *er = malloc((n ? n : 1) * sizeof *er);
	int *ndone = calloc((size_t)(s->ndev > 0 ? s->ndev : 1), sizeof *ndone);
	int *of = malloc((n ? n : 1) * sizeof *of);
	sl_opstep *st = malloc((n ? n : 1) * sizeof *st);
	size_t *idx = malloc((n ? n : 1) * sizeof *idx);
	size_t nk = 0, ns = 0, ne = 0;
	if (!k || !er || !ndone || !of || !st || !idx)
		goto fail;
	/* Keys, in the snapshot's order of starts: a device's collectives so
	 * far are known when its compute comes. */
	for (size_t i = 0; i < n; i++) {
		const sl_event *e = &s->ev[i];
		of[i] = -1;
		int d = e->dev >= 0 && e->dev < s->ndev ? e->dev : 0;
		if (e->coll.op >= 0 && ndone[d] < e->coll.seq + 1)
			ndone[d] = e->coll.seq + 1;
		if (!counts(e))
			continue;
		struct key *q = &k[nk];
		memset(q, 0, sizeof *q);
		q->ev = i;
		if (e->coll.op >= 0) {
			q->type = K_COLL;
			q->a = e->coll.leader;
			q->b = e->coll.seq;
			q->c = e->coll.step;
		} else if (e->kind == SL_EV_COMPUTE && e->op < 0) {
			/* A product's compute: one phase between collectives. */
			q->type = K_PHASE;
			q->a = ndone[d];
		} else if (e->kind == SL_EV_COMPUTE && e->work.pass != SL_PASS_NONE) {
			/* A training GEMM: the same work of the same operation (pass,
			 * chunk, micro-batch: the op id) on every device that does
			 * it, i.e. a tensor-parallel group, and its replicas. */
			q->type = K_WORK;
			q->a = e->op;
			q->b = (long)e->work.block * SL_PART_N + e->work.part;
			q->c = (long)e->work.grad * 100000 + e->work.head + 1;
		} else if (e->p2p.kind != SL_P2P_NONE) {
			/* A pipeline message: its send and its receive, on every
			 * tensor-parallel rank and data-parallel replica that moves
			 * the same result (a stage's ranks each send their copy). */
			q->type = K_P2P;
			q->a = e->p2p.iter;
			q->b = (long)e->p2p.kind * 100000 + e->p2p.chunk;
			q->c = e->p2p.mb;
		} else if (e->io.kind != SL_IO_NONE) {
			/* A checkpoint chunk written, or a stored chunk read by
			 * every device whose new shards it overlaps. */
			q->type = K_IO;
			q->a = e->io.kind;
			q->b = e->io.id;
		} else {
			q->type = K_END;
			er[ne++] = (struct endref){e->t1, nk};
		}
		nk++;
	}
	/* Work without fields: one group per distinct end time. */
	qsort(er, ne, sizeof *er, cmp_end);
	long g = -1;
	for (size_t i = 0; i < ne; i++) {
		if (i == 0 || !near(er[i].t1, er[i - 1].t1))
			g++;
		k[er[i].k].a = g;
	}
	qsort(k, nk, sizeof *k, cmp_key);
	for (size_t i = 0; i < nk; i++) {
		const sl_event *e = &s->ev[k[i].ev];
		if (i == 0 || !same_group(&k[i], &k[i - 1])) {
			sl_opstep *o = &st[ns++];
			memset(o, 0, sizeof *o);
			o->t0 = e->t0;
			o->t1 = e->t1;
			o->rep = k[i].ev;
			o->compute = e->kind == SL_EV_COMPUTE;
		}
		sl_opstep *o = &st[ns - 1];
		of[k[i].ev] = (int)(ns - 1);
		if (e->t0 < o->t0)
			o->t0 = e->t0;
		if (e->t1 > o->t1)
			o->t1 = e->t1;
		if (e->t1 - e->t0 > o->slow_s)
			o->slow_s = e->t1 - e->t0;
		if (e->dev >= 0 && e->dev < 64 && !(o->devs >> e->dev & 1)) {
			o->devs |= (uint64_t)1 << e->dev;
			o->ndevs++;
		} else if (e->dev >= 64) {
			o->ndevs++; /* counted, not shown */
		}
		if (e->kind == SL_EV_SEND) {
			o->nxfer++;
			if (e->bytes > o->bytes)
				o->bytes = e->bytes;
		}
		/* The representative: the earliest-starting event, lowest device. */
		const sl_event *r = &s->ev[o->rep];
		if (e->t0 < r->t0 || (e->t0 == r->t0 && e->dev < r->dev))
			o->rep = k[i].ev;
	}
	/* The steps in order of their stops; each event's step follows.  A
	 * step of a collective stops when it and every earlier logical step of
	 * the same collective are over (the running maximum of their ends): a
	 * later level can finish a hair sooner (a binomial tree over 6 devices
	 * with uneven shards), and the counter must not go back. */
	struct tagged *t = malloc((ns ? ns : 1) * sizeof *t);
	if (!t)
		goto fail;
	for (size_t i = 0; i < ns; i++) {
		const sl_ev_coll *c = &s->ev[st[i].rep].coll;
		st[i].t_stop = st[i].t1;
		t[i] =
		    (struct tagged){st[i], i, c->op >= 0 ? (long)c->leader * 1000003L + c->seq : -1,
		                    c->op >= 0 ? c->step : 0};
	}
	qsort(t, ns, sizeof *t, cmp_logical);
	for (size_t i = 1; i < ns; i++)
		if (t[i].coll >= 0 && t[i].coll == t[i - 1].coll &&
		    t[i].st.t_stop < t[i - 1].st.t_stop)
			t[i].st.t_stop = t[i - 1].st.t_stop;
	qsort(t, ns, sizeof *t, cmp_tagged);
	for (size_t i = 0; i < ns; i++) {
		st[i] = t[i].st;
		idx[t[i].old] = i;
	}
	free(t);
	/* Groups that run the same logical step side by side (the tensor-
	 * parallel groups of several replicas, in step) are one step: the same
	 * span, the same kind.  idx maps old steps to the merged ones. */
	size_t *merged = malloc((ns ? ns : 1) * sizeof *merged);
	if (!merged)
		goto fail;
	size_t m = 0;
	for (size_t i = 0; i < ns; i++) {
		if (m > 0 && near(st[i].t0, st[m - 1].t0) && near(st[i].t1, st[m - 1].t1) &&
		    near(st[i].t_stop, st[m - 1].t_stop) && st[i].compute == st[m - 1].compute &&
		    same_logical(s, &st[i], &st[m - 1])) {
			sl_opstep *o = &st[m - 1];
			if (st[i].t0 < o->t0)
				o->t0 = st[i].t0;
			if (st[i].t1 > o->t1)
				o->t1 = st[i].t1;
			if (st[i].t_stop > o->t_stop)
				o->t_stop = st[i].t_stop;
			o->ndevs += st[i].ndevs - __builtin_popcountll(o->devs & st[i].devs);
			o->devs |= st[i].devs;
			o->nxfer += st[i].nxfer;
			if (st[i].bytes > o->bytes)
				o->bytes = st[i].bytes;
			if (st[i].slow_s > o->slow_s)
				o->slow_s = st[i].slow_s;
		} else {
			st[m++] = st[i];
		}
		merged[i] = m - 1;
	}
	ns = m;
	for (size_t i = 0; i < ns; i++) {
		const sl_event *r = &s->ev[st[i].rep];
		st[i].coll = r->coll.op >= 0 ? &r->coll : NULL;
		st[i].p2p = r->p2p.kind != SL_P2P_NONE ? &r->p2p : NULL;
		st[i].io = r->io.kind != SL_IO_NONE ? &r->io : NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (of[i] >= 0)
			of[i] = (int)merged[idx[of[i]]];
	free(merged);
	free(k);
	free(er);
	free(ndone);
	free(idx);
	if (ns == 0) {
		free(st);
		st = NULL;
	}
	*out = st;
	if (step_of)
		*step_of = of;
	else
		free(of);
	return ns;
fail:
	free(k);
	free(er);
	free(ndone);
	free(of);
	free(st);
	free(idx);
	return 0;
}

size_t sl_step_stops(const sl_opstep *st, size_t ns, double **out)
{
	double *v = malloc((ns ? ns : 1) * sizeof *v);
	size_t u = 0;
	for (size_t i = 0; v && i < ns; i++)
		if (u == 0 || !near(st[i].t_stop, v[u - 1]))
			v[u++] = st[i].t_stop;
	*out = v;
	return v ? u : 0;
}

/* A step's kind for phases: compute, pipeline messages, checkpoint
 * writes or reads, other work, or a collective by its operation. */
static int phase_kind(const sl_opstep *o)
{
	if (o->coll)
		return 10 + o->coll->op;
	if (o->p2p)
		return 1;
	if (o->io)
		return o->io->kind == SL_IO_WRITE ? 2 : 3;
	return o->compute ? 0 : 4;
}

int sl_step_phase_break(const sl_opstep *a, const sl_opstep *b)
{
	if (phase_kind(a) != phase_kind(b))
		return 1;
	if (!a->coll)
		return 0;
	const sl_ev_coll *x = a->coll, *y = b->coll;
	int same = x->leader == y->leader && x->seq == y->seq;
	if (same)
		return x->phase != y->phase;
	/* Another collective's first step, unless groups run their first
	 * steps side by side (out of step, they were not merged). */
	return y->step == 0 && (x->step != 0 || x->leader == y->leader);
}

size_t sl_phase_stops(const sl_opstep *st, size_t ns, double **out)
{
	double *v = malloc((ns ? ns : 1) * sizeof *v), stop = 0;
	size_t u = 0;
	for (size_t i = 0; v && i < ns; i++) {
		/* The stop as sl_step_stops has it: the first of those that
		 * come together. */
		if (i == 0 || !near(st[i].t_stop, stop))
			stop = st[i].t_stop;
		if (i + 1 < ns && !sl_step_phase_break(&st[i], &st[i + 1]))
			continue;
		if (u == 0 || v[u - 1] != stop)
			v[u++] = stop;
	}
	*out = v;
	return v ? u : 0;
}

size_t sl_step_ends(const sl_snapshot *s, double **out)
{
	sl_opstep *st = NULL;
	size_t ns = sl_steps_build(s, &st, NULL);
	size_t u = sl_step_stops(st, ns, out);
	free(st);
	return u;
}

struct endkey {
	double t1;
	int dev;
	size_t i;
};

static int cmp_endkey(const void *x, const void *y)
{
	const struct endkey *a = x, *b = y;
	if (a->t1 != b->t1)
		return a->t1 < b->t1 ? -1 : 1;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

size_t *sl_snapshot_by_end(const sl_snapshot *s)
{
	size_t *v = malloc((s->n ? s->n : 1) * sizeof *v);
	struct endkey *k = malloc((s->n ? s->n : 1) * sizeof *k);
	if (!v || !k) {
		free(v);
		free(k);
		return NULL;
	}
	for (size_t i = 0; i < s->n; i++)
		k[i] = (struct endkey){s->ev[i].t1, s->ev[i].dev, i};
	qsort(k, s->n, sizeof *k, cmp_endkey);
	for (size_t i = 0; i < s->n; i++)
		v[i] = k[i].i;
	free(k);
	return v;
}

int sl_step_index_build(const sl_snapshot *s, sl_step_index *x)
{
	memset(x, 0, sizeof *x);
	if (s->n == 0)
		return 0;
	x->ns = sl_steps_build(s, &x->st, &x->of);
	x->by_end = sl_snapshot_by_end(s);
	if (!x->of || !x->by_end || (x->ns > 0 && !x->st)) {
		sl_step_index_free(x);
		return -1;
	}
	return 0;
}

void sl_step_index_free(sl_step_index *x)
{
	free(x->st);
	free(x->of);
	free(x->by_end);
	memset(x, 0, sizeof *x);
}
