/* SPDX-License-Identifier: MIT */
/* scene.c - deriving the picture at time t from the events (see scene.h). */
#include "device.h"
#include "scene.h"

#include "steps.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "cost.h"
#include "units.h"

static const char *const state_names[SL_DS_COUNT] = {"idle", "compute", "send",  "recv", "reduce",
                                                     "wait", "busy",    "write", "read"};

const char *sl_dstate_name(sl_dstate s)
{
	return s >= 0 && s < SL_DS_COUNT ? state_names[s] : "?";
}

static double clamp01(double v)
{
	return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* Priority when several things happen at once: what the device does
 * with its data first. */
static int state_rank(sl_dstate s)
{
	static const int rank[SL_DS_COUNT] = {0, 6, 3, 4, 5, 2, 1, 6, 6};
	return rank[s];
}

static sl_dstate kind_state(sl_ev_kind k)
{
	switch (k) {
	case SL_EV_COMPUTE:
		return SL_DS_COMPUTE;
	case SL_EV_SEND:
		return SL_DS_SEND;
	case SL_EV_RECV:
		return SL_DS_RECV;
	case SL_EV_REDUCE:
		return SL_DS_REDUCE;
	case SL_EV_WAIT:
		return SL_DS_WAIT;
	case SL_EV_WRITE:
		return SL_DS_WRITE;
	case SL_EV_READ:
		return SL_DS_READ;
	default:
		return SL_DS_IDLE;
	}
}

/* Does event e cover time t?  An operation that ends at t is over. */
static int covers(const sl_event *e, double t)
{
	return e->t0 <= t && t < e->t1;
}

sl_dstate sl_scene_state_at(const sl_snapshot *s, int d, double t, int *send_to, int *recv_from)
{
	sl_dstate st = SL_DS_IDLE;
	if (send_to)
		*send_to = -1;
	if (recv_from)
		*recv_from = -1;
	for (size_t i = 0; i < s->n && s->ev[i].t0 <= t; i++) {
		const sl_event *e = &s->ev[i];
		if (e->dev != d || !covers(e, t))
			continue;
		sl_dstate k = kind_state(e->kind);
		if (e->kind == SL_EV_SEND && send_to)
			*send_to = e->peer;
		if ((e->kind == SL_EV_RECV || e->kind == SL_EV_REDUCE) && recv_from)
			*recv_from = e->peer;
		if (state_rank(k) > state_rank(st))
			st = k;
	}
	return st;
}

/* ---- shards and block sizes ---- */

static void shard_offsets(const sl_scenario *sc, int p, size_t *off)
{
	size_t dim = (size_t)(sc->gemm.split == SL_SPLIT_ROW ? sc->gemm.k : sc->gemm.n);
	sl_block_offsets(dim, p, NULL, off);
}

/* The blocks [first, first+count) (wrapping) an event moves, from the fields
 * the engine gave it; -1 when it moves no whole blocks of a group of p. */
static int event_blocks(const sl_event *e, int p, int *first, int *count)
{
	if (e->coll.op < 0 || e->coll.count <= 0 || e->coll.p != p)
		return -1;
	*first = e->coll.first;
	*count = e->coll.count;
	return 0;
}

/* The events keep() takes, in order of end (then device, then place:
 * sl_step_index's order), into order (s->n of room): from the caller's
 * index when there is one, else one made here.  Returns how many. */
static size_t events_by_end(const sl_snapshot *s, const size_t *by_end,
                            int (*keep)(const sl_event *e, double t), double t,
                            const sl_event **order)
{
	size_t *own = by_end ? NULL : sl_snapshot_by_end(s), n = 0;
	const size_t *x = by_end ? by_end : own;
	for (size_t i = 0; x && i < s->n; i++) {
		const sl_event *e = &s->ev[x[i]];
		if (keep(e, t))
			order[n++] = e;
	}
	free(own);
	return n;
}

/* What the product's block picture replays at t: compute and arrivals
 * begun by t. */
static int block_event(const sl_event *e, double t)
{
	return e->t0 <= t &&
	       (e->kind == SL_EV_COMPUTE || e->kind == SL_EV_RECV || e->kind == SL_EV_REDUCE);
}

static void build_blocks(const sl_scene_in *in, sl_scene *m)
{
	sl_scene_blocks *B = &m->blk;
	int p = m->ndev;
	const sl_snapshot *s = in->ev;
	memset(B, 0, sizeof *B);
	B->p = p;
	B->full = p >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << p) - 1);
	for (int d = 0; d < p; d++)
		for (int b = 0; b < p; b++)
			B->incoming[d][b] = -1;
	B->valid = 1;
	/* Apply what has happened in order of completion. */
	const sl_event **order = malloc((s->n ? s->n : 1) * sizeof *order);
	if (!order) {
		B->valid = 0;
		return;
	}
	size_t n =
	    events_by_end(s, in->steps ? in->steps->by_end : NULL, block_event, in->t, order);
	int row = in->sc->gemm.split == SL_SPLIT_ROW;
	for (size_t i = 0; i < n && B->valid; i++) {
		const sl_event *e = order[i];
		int d = e->dev;
		int done = e->t1 <= in->t;
		double fill = e->t1 > e->t0 ? clamp01((in->t - e->t0) / (e->t1 - e->t0)) : 1;
		if (e->kind == SL_EV_COMPUTE) {
			if (e->op >= 0 || e->coll.op >= 0) /* not the product's */
				continue;
			for (int b = 0; b < p; b++) {
				if (!row && b != d)
					continue;
				if (done)
					B->have[d][b] = row ? (uint64_t)1 << d : B->full;
				else if (in->t > e->t0)
					B->incoming[d][b] = (float)fill; /* being computed */
			}
			continue;
		}
		int first, count;
		if (event_blocks(e, p, &first, &count)) {
			B->valid = 0;
			break;
		}
		for (int i2 = 0; i2 < count; i2++) {
			int b = (first + i2) % p;
			if (!done)
				B->incoming[d][b] = (float)fill;
			else if (e->kind == SL_EV_REDUCE)
				B->have[d][b] |= B->have[e->peer][b];
			else
				B->have[d][b] = B->have[e->peer][b];
		}
	}
	free(order);
}

/* ---- links ---- */

static int link_index(sl_scene *m, int src, int dst, const sl_scene_in *in)
{
	for (int i = 0; i < m->nlinks; i++)
		if (m->link[i].src == src && m->link[i].dst == dst)
			return i;
	if (m->nlinks == SL_SCENE_MAX_LINKS) {
		m->links_omitted = 1;
		return -1;
	}
	sl_scene_link *l = &m->link[m->nlinks];
	memset(l, 0, sizeof *l);
	l->src = src;
	l->dst = dst;
	l->fill = -1;
	sl_link_spec sp = in->link(in->ctx, src, dst);
	l->bandwidth = sp.bandwidth;
	l->latency = sp.latency;
	l->inter = in->inter(in->ctx, src, dst);
	return m->nlinks++;
}

static int cmp_link(const void *a, const void *b)
{
	const sl_scene_link *x = a, *y = b;
	if (x->src != y->src)
		return x->src - y->src;
	return x->dst - y->dst;
}

/* Progress of a transfer: nothing moves during its latency. */
static double xfer_fill(const sl_event *e, double t, double latency)
{
	double dur = e->t1 - e->t0;
	if (dur <= 0)
		return 1;
	double lat = latency < dur ? latency : 0;
	return clamp01((t - e->t0 - lat) / (dur - lat));
}

double sl_scene_io_fill(const sl_scene *m, int write, int dev, int chunk)
{
	const sl_snapshot *s = m->ev;
	sl_ev_kind k = write ? SL_EV_WRITE : SL_EV_READ;
	for (size_t i = 0; s && i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		if (e->kind != k || e->dev != dev || e->op != chunk)
			continue;
		if (m->t >= e->t1)
			return 1;
		return m->t <= e->t0 ? 0 : xfer_fill(e, m->t, 0);
	}
	return -1;
}

/* ---- what each kind of workload adds ---- */

/* The product: each device's shard of the split dimension, and the memory
 * its buffers will hold, known before the run. */
static void product_shard(const sl_scene_in *in, int d, const size_t *shard, sl_scene_dev *v)
{
	const sl_scenario *sc = in->sc;
	double mm = sc->gemm.m, kk = sc->gemm.k, nn = sc->gemm.n;
	double part = (double)(shard[d + 1] - shard[d]);
	v->lo = (int64_t)shard[d];
	v->hi = (int64_t)shard[d + 1];
	if (sc->gemm.split == SL_SPLIT_ROW)
		v->mem =
		    (uint64_t)((mm * part + part * nn + mm * nn) * sl_elem_bytes(&sc->cluster));
	else
		v->mem = (uint64_t)((mm * kk + kk * part + mm * nn) * sl_elem_bytes(&sc->cluster));
	v->mem_known = 1;
}

/* The one-device time: the product's from the scenario; another kind's
 * from its run, with the engine's report once the run is known. */
static void product_figures(const sl_scene_in *in, sl_scene *m)
{
	m->single_s = sl_play_single_time(in->sc);
}

static void run_figures(const sl_scene_in *in, sl_scene *m)
{
	const sl_run_info *r = in->result;
	m->single_s = r && r->done && r->rc == SL_OK ? r->single_s : 0;
	m->have_report = r && r->done && r->rc == SL_OK && r->trep.ndev == in->ndev;
	m->trep = m->have_report ? &r->trep : NULL;
	m->loss = m->have_report ? r->loss : 0;
}

/* The bytes of the one collective whose bandwidths the numbers show: the
 * product's Y, a lone collective's buffer. */
static double product_coll_bytes(const sl_scene_in *in)
{
	return (double)in->sc->gemm.m * in->sc->gemm.n * sizeof(float);
}

static double lone_coll_bytes(const sl_scene_in *in)
{
	return (double)in->wl->count * sizeof(float);
}

static int coll_blocks(const sl_scene *m, int dev, int p, int *cnt);

static const struct scene_kind {
	/* A device's shard and memory before the run (NULL: none known). */
	void (*shard)(const sl_scene_in *in, int d, const size_t *shard, sl_scene_dev *v);
	/* The blocks picture of its buffer (NULL: none). */
	void (*blocks)(const sl_scene_in *in, sl_scene *m);
	void (*figures)(const sl_scene_in *in, sl_scene *m);
	/* Its one collective's bytes (NULL: no one collective to measure). */
	double (*coll_bytes)(const sl_scene_in *in);
	/* Its blocks replayed per device (sl_scene_coll_blocks; NULL: none). */
	int (*coll_blocks)(const sl_scene *m, int dev, int p, int *cnt);
	int checked; /* its result is checked against one device's */
} kinds[SL_WL_KINDS] = {
    [SL_WL_PRODUCT] = {product_shard, build_blocks, product_figures, product_coll_bytes, NULL, 1},
    [SL_WL_COLLECTIVE] = {NULL, NULL, run_figures, lone_coll_bytes, coll_blocks, 0},
    [SL_WL_TRAIN] = {NULL, NULL, run_figures, NULL, NULL, 0},
    [SL_WL_RESHARD] = {NULL, NULL, run_figures, NULL, NULL, 0},
};

int sl_scene_coll_blocks(const sl_scene *m, int dev, int p, int *cnt)
{
	const struct scene_kind *K = &kinds[m->kind];
	return K->coll_blocks ? K->coll_blocks(m, dev, p, cnt) : -1;
}

/* ---- everything ---- */

static void scene_build(const sl_scene_in *in, sl_scene *m);

void sl_scene_build(const sl_scene_in *in, sl_scene *m)
{
	if (in->steps) {
		scene_build(in, m);
		m->by_end = in->steps->by_end;
		return;
	}
	/* No index kept by the caller: one for this call (an empty one when
	 * memory ran out, which only leaves the steps unknown). */
	sl_step_index x;
	sl_step_index_build(in->ev, &x);
	sl_scene_in copy = *in;
	copy.steps = &x;
	scene_build(&copy, m);
	m->by_end = NULL;
	sl_step_index_free(&x);
}

static void scene_build(const sl_scene_in *in, sl_scene *m)
{
	const sl_snapshot *s = in->ev;
	const sl_scenario *sc = in->sc;
	double t = in->t;
	int p = in->ndev;
	sl_wl_kind kind = in->wl ? in->wl->kind : SL_WL_PRODUCT;
	const struct scene_kind *K = &kinds[kind];
	memset(m, 0, sizeof *m);
	m->product = sl_workload_product(&sc->gemm);
	m->t = t;
	m->end = in->end;
	m->exact = in->exact;
	m->ndev = p;
	m->split = sc->gemm.split;
	m->ev = s;

	size_t shard[SL_MAX_DEVICES + 1];
	shard_offsets(sc, p, shard);
	double last_end[SL_MAX_DEVICES] = {0}, covered[SL_MAX_DEVICES] = {0};
	double covered0[SL_MAX_DEVICES] = {0}; /* the same, the compute stream's alone */
	for (int d = 0; d < p; d++) {
		sl_scene_dev *v = &m->dev[d];
		v->send_to = v->recv_from = -1;
		v->label = "";
		if (K->shard)
			K->shard(in, d, shard, v);
		if (in->result && in->result->done && in->result->ndev == p) {
			v->mem = in->result->st[d].mem_peak;
			v->mem_known = 1;
		}
	}

	/* One pass over the events: times, bytes, states, links. */
	for (size_t i = 0; i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		if (e->dev < 0 || e->dev >= p)
			continue;
		sl_scene_dev *v = &m->dev[e->dev];
		if (e->t1 > last_end[e->dev])
			last_end[e->dev] = e->t1;
		if (e->stream > 0 && e->stream < 32)
			m->side_streams |= 1u << e->stream;
		int li = -1;
		if (e->kind == SL_EV_SEND && e->peer >= 0 && e->peer < p) {
			li = link_index(m, e->dev, e->peer, in);
			if (li >= 0)
				m->link[li].total += e->bytes;
		}
		if (e->t0 > t)
			continue;
		double a = e->t0, b = e->t1 < t ? e->t1 : t;
		double part = b > a ? b - a : 0;
		switch (e->kind) {
		case SL_EV_COMPUTE:
			v->compute_s += part;
			break;
		case SL_EV_WAIT:
			/* The compute stream's wait for a side stream is communication
			 * not hidden; a side stream's wait for a peer is inside its
			 * transfers' time.  Only waits for peers on the compute
			 * stream are the device waiting. */
			if (e->waits_stream)
				v->exposed_s += part;
			else if (e->stream == 0)
				v->wait_s += part;
			break;
		case SL_EV_WRITE:
		case SL_EV_READ:
			v->io_s += part;
			break;
		default:
			/* Sends and receives overlap: count their union. */
			if (b > covered[e->dev]) {
				v->comm_s += b - (a > covered[e->dev] ? a : covered[e->dev]);
				covered[e->dev] = b;
			}
			/* On the compute stream, nothing hides them. */
			if (e->stream == 0 && b > covered0[e->dev]) {
				v->exposed_s += b - (a > covered0[e->dev] ? a : covered0[e->dev]);
				covered0[e->dev] = b;
			}
			break;
		}
		int inflight = covers(e, t);
		double lat = li >= 0 ? m->link[li].latency : 0;
		double fill = inflight ? xfer_fill(e, t, e->kind == SL_EV_COMPUTE ? 0 : lat) : 1;
		if (e->kind == SL_EV_RECV || e->kind == SL_EV_REDUCE) {
			sl_link_spec sp = in->link(in->ctx, e->peer, e->dev);
			fill = inflight ? xfer_fill(e, t, sp.latency) : 1;
			v->received += (uint64_t)(fill * (double)e->bytes);
		}
		if (e->kind == SL_EV_SEND) {
			uint64_t done = (uint64_t)(fill * (double)e->bytes);
			v->sent += done;
			if (li >= 0) {
				m->link[li].moved += done;
				if (inflight) {
					m->link[li].fill = fill;
					m->link[li].inflight = e->bytes;
				}
			}
		}
		if (inflight) {
			sl_dstate k = kind_state(e->kind);
			if (e->kind == SL_EV_SEND)
				v->send_to = e->peer;
			if (e->kind == SL_EV_RECV || e->kind == SL_EV_REDUCE)
				v->recv_from = e->peer;
			if (state_rank(k) > state_rank(v->state)) {
				v->state = k;
				v->label = e->label;
				v->fill = e->kind == SL_EV_COMPUTE
				              ? clamp01((t - e->t0) / (e->t1 - e->t0))
				              : fill;
			}
		}
	}

	/* Live transfers the trace does not hold yet. */
	if (in->live && !in->exact) {
		for (int a = 0; a < p; a++)
			for (int b = 0; b < p; b++) {
				if (a == b)
					continue;
				sl_link_state ls = in->live(in->ctx, a, b);
				if (ls.inflight_total == 0)
					continue;
				int li = link_index(m, a, b, in);
				if (li < 0)
					continue;
				m->link[li].fill =
				    (double)ls.inflight_done / (double)ls.inflight_total;
				m->link[li].inflight = ls.inflight_total;
				if (m->dev[a].state == SL_DS_IDLE ||
				    m->dev[a].state == SL_DS_BUSY) {
					m->dev[a].state = SL_DS_SEND;
					m->dev[a].send_to = b;
				}
				if (state_rank(SL_DS_RECV) > state_rank(m->dev[b].state)) {
					m->dev[b].state = SL_DS_RECV;
					m->dev[b].recv_from = a;
				}
			}
	}
	qsort(m->link, (size_t)m->nlinks, sizeof m->link[0], cmp_link);

	/* Finished devices; in the live case, running ones we cannot see. */
	double end = in->end;
	for (int d = 0; d < p; d++) {
		sl_scene_dev *v = &m->dev[d];
		if (in->exact || end >= 0)
			v->finished = t >= last_end[d] && t > 0;
		else if (v->state == SL_DS_IDLE && t > 0)
			v->state = SL_DS_BUSY;
	}

	const sl_run_info *r = in->result;
	m->wl = in->wl ? in->wl : &m->product;
	m->kind = kind;
	if (K->blocks)
		K->blocks(in, m);

	/* Numbers. */
	m->predicted_s = in->predicted_s;
	K->figures(in, m);
	m->total_s = end;
	if (end > 0) {
		m->speedup = m->single_s / end;
		m->efficiency = m->speedup / p;
	}
	int crit = 0;
	for (int d = 1; d < p; d++)
		if (last_end[d] > last_end[crit])
			crit = d;
	m->crit = crit;
	m->crit_compute = m->dev[crit].compute_s;
	m->crit_comm = m->dev[crit].comm_s;
	m->crit_wait = m->dev[crit].wait_s;
	m->crit_exposed = m->dev[crit].exposed_s;
	for (int i = 0; i < m->nlinks; i++) {
		m->moved += m->link[i].moved;
		m->moved_total += m->link[i].total;
	}
	double c0 = INFINITY, c1 = 0;
	int coll_op = -1; /* the first collective's (coll_name) */
	for (size_t i = 0; i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		if (e->kind != SL_EV_SEND)
			continue;
		if (!m->coll_name[0] && e->coll.op >= 0) {
			coll_op = e->coll.op;
			snprintf(m->coll_name, sizeof m->coll_name, "%s",
			         sl_coll_op_name((sl_coll_op)coll_op));
		}
		if (e->t0 < c0)
			c0 = e->t0;
		if (e->t1 > c1)
			c1 = e->t1;
	}
	/* One collective's figures: the product's, or a lone collective's. */
	if (m->coll_name[0] && K->coll_bytes) {
		int complete = in->exact || end >= 0;
		if (complete && t >= c1) {
			m->coll_state = 2;
			m->coll_time = c1 - c0;
			double bytes = K->coll_bytes(in);
			m->algbw = m->coll_time > 0 ? bytes / m->coll_time : 0;
			m->busbw = coll_op < SL_COLL_NOPS
			               ? m->algbw * sl_busbw_factor((sl_coll_op)coll_op, p)
			               : m->algbw;
		} else if (t > c0) {
			m->coll_state = 1;
		}
	}
	if (r && r->done && r->rc != SL_OK && r->rc != SL_ECANCEL) {
		m->failed = 1;
		snprintf(m->error, sizeof m->error, "%s",
		         r->err.msg[0] ? r->err.msg : "the run failed");
	} else if (r && r->done && r->rc == SL_OK && end >= 0 && t >= end && K->checked &&
	           r->res.checked) {
		m->checked = 1;
		m->max_abs_error = r->res.max_abs_error;
		m->max_rel_error = r->res.max_rel_error;
		m->pass = m->max_rel_error <= SL_CHECK_REL_TOL;
	}
	sl_scene_sentence(in, m);
	if (m->failed)
		snprintf(m->sentence, sizeof m->sentence, "Cannot run: %s", m->error);
	else if (end >= 0 && t >= end && end > 0) {
		char a[32];
		size_t len = strlen(m->sentence);
		snprintf(m->sentence + len, sizeof m->sentence - len, " Finished in %s.",
		         sl_fmt_time(end, a, sizeof a));
	}
}

static sl_link_spec cb_link(void *ctx, int s, int d)
{
	return sl_play_link(ctx, s, d);
}

static int cb_inter(void *ctx, int s, int d)
{
	return sl_play_inter(ctx, s, d);
}

static sl_link_state cb_live(void *ctx, int s, int d)
{
	return sl_play_link_state(ctx, s, d);
}

void sl_scene_build_play(sl_play *p, sl_scene *m)
{
	sl_scene_in in = {
	    .ev = sl_play_events(p),
	    .steps = sl_play_steps(p),
	    .t = sl_play_time(p),
	    .end = sl_play_end(p),
	    .exact = sl_play_exact(p),
	    .sc = sl_play_scenario(p),
	    .ndev = sl_play_devices(p),
	    .result = sl_play_result(p),
	    .predicted_s = sl_play_predicted(p),
	    .wl = sl_play_workload(p),
	    .link = cb_link,
	    .inter = cb_inter,
	    .live = sl_play_stale(p) ? cb_live : NULL,
	    .ctx = p,
	};
	sl_scene_build(&in, m);
}

/* Arrivals over by t. */
static int arrived(const sl_event *e, double t)
{
	return (e->kind == SL_EV_RECV || e->kind == SL_EV_REDUCE) && e->t1 <= t;
}

static int coll_blocks(const sl_scene *m, int dev, int p, int *cnt)
{
	const sl_workload *tr = m->wl;
	if (p < 1 || p > SL_MAX_FULL_DEVICES || dev < 0 || dev >= p ||
	    (tr->op != SL_COLL_ALLREDUCE && tr->op != SL_COLL_REDUCESCATTER &&
	     tr->op != SL_COLL_ALLGATHER))
		return -1;
	/* Replay whose data each block of each device holds, in order of
	 * completion, from the blocks the engine says each message moved. */
	int gather = tr->op == SL_COLL_ALLGATHER;
	uint64_t(*have)[SL_MAX_FULL_DEVICES] = calloc((size_t)p, sizeof *have);
	const sl_snapshot *s = m->ev;
	size_t n = 0, ns = s ? s->n : 0;
	const sl_event **order = malloc((ns ? ns : 1) * sizeof *order);
	if (!have || !order) {
		free(have);
		free(order);
		return -1;
	}
	for (int d = 0; d < p; d++)
		for (int b = 0; b < p; b++)
			have[d][b] = gather && b != d ? 0 : (uint64_t)1 << d;
	if (s)
		n = events_by_end(s, m->by_end, arrived, m->t, order);
	for (size_t i = 0; i < n; i++) {
		const sl_event *e = order[i];
		int first, count;
		if (e->dev < 0 || e->dev >= p || e->peer < 0 || e->peer >= p ||
		    event_blocks(e, p, &first, &count))
			continue;
		for (int k = 0; k < count; k++) {
			int b = (first + k) % p;
			if (e->kind == SL_EV_REDUCE)
				have[e->dev][b] |= have[e->peer][b];
			else
				have[e->dev][b] = have[e->peer][b];
		}
	}
	for (int b = 0; b < p; b++)
		cnt[b] = gather ? have[dev][b] != 0 : __builtin_popcountll(have[dev][b]);
	free(have);
	free(order);
	return 0;
}
