/* SPDX-License-Identifier: MIT */
/* plan.c - the layout planner: enumerate, estimate, rank, explain. */
#include "plan.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "units.h"

static const sl_axis orders[6][SL_NAXES] = {
    {SL_AXIS_TP, SL_AXIS_DP, SL_AXIS_PP}, /* Megatron-LM's: TP inside, then DP, PP outermost */
    {SL_AXIS_TP, SL_AXIS_PP, SL_AXIS_DP}, {SL_AXIS_DP, SL_AXIS_TP, SL_AXIS_PP},
    {SL_AXIS_PP, SL_AXIS_TP, SL_AXIS_DP}, {SL_AXIS_DP, SL_AXIS_PP, SL_AXIS_TP},
    {SL_AXIS_PP, SL_AXIS_DP, SL_AXIS_TP},
};

char *sl_plan_across(const sl_plan_row *r, char *buf, size_t n)
{
	const sl_plan_path *p[3] = {&r->tp, &r->pp, &r->dp};
	const char *names[3] = {"tp", "pp", "dp"};
	size_t len = 0;
	buf[0] = 0;
	for (int k = 0; k < 3; k++)
		if (p[k]->used && p[k]->inter && len < n)
			len +=
			    (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", names[k]);
	if (!len)
		snprintf(buf, n, "-");
	return buf;
}

static char *layout_name(const sl_layout *l, int brief, char *buf, size_t n)
{
	static const char *const zname[4] = {"", " z1", " z2", " z3"};
	char ord[16], sch[32];
	if (l->schedule == SL_SCHED_INTERLEAVED)
		snprintf(sch, sizeof sch, "%sv=%d", brief ? "" : "interleaved ", l->chunks);
	else
		snprintf(sch, sizeof sch, "%s", sl_sched_name(l->schedule));
	if (l->stages != SL_STAGES_EVEN) {
		size_t len = strlen(sch);
		char st[8 * SL_MAX_STAGE_LIST];
		sl_stage_layers_name(l, st, sizeof st);
		if (l->stages == SL_STAGES_ENDS)
			snprintf(sch + len, sizeof sch - len, " ends");
		else
			snprintf(sch + len, sizeof sch - len, " sl=%.*s",
			         (int)(sizeof sch - len - 5), st);
	}
	char cps[32] = "";
	if (l->cp > 1)
		snprintf(cps, sizeof cps, " cp=%d%s", l->cp,
		         l->cp_comm == SL_CP_ALLGATHER ? " allgather" : "");
	/* overlap and the bucket when given, or chosen by refine() */
	char ov[48] = "";
	if (l->overlap != SL_OVERLAP_AUTO || l->bucket_bytes > 0) {
		char b[32] = "";
		if (l->bucket_bytes > 0) {
			/* "6.25MiB": one token in the name */
			char f[32];
			sl_fmt_bytes(l->bucket_bytes, f, sizeof f);
			for (size_t i = 0, j = 0; f[i] && j + 1 < sizeof b; i++)
				if (f[i] != ' ')
					b[j++] = f[i], b[j] = 0;
		}
		snprintf(ov, sizeof ov, "%s%s%s%s", l->overlap != SL_OVERLAP_AUTO ? " ov=" : "",
		         l->overlap != SL_OVERLAP_AUTO ? sl_overlap_name(l->overlap) : "",
		         b[0] ? " bk=" : "", b);
	}
	snprintf(buf, n, "tp=%d pp=%d dp=%d%s %s m=%d%s%s%s%s %s", l->tp, l->pp, l->dp, cps, sch,
	         l->microbatches, l->seq_parallel ? " sp" : "", zname[l->zero],
	         l->recompute == SL_RECOMPUTE_FULL        ? " rc=full"
	         : l->recompute == SL_RECOMPUTE_SELECTIVE ? " rc=sel"
	                                                  : "",
	         ov, sl_mesh_order_name(l->order, ord, sizeof ord));
	return buf;
}

char *sl_plan_layout_name(const sl_layout *l, char *buf, size_t n)
{
	return layout_name(l, 0, buf, n);
}

char *sl_plan_layout_brief(const sl_layout *l, char *buf, size_t n)
{
	return layout_name(l, 1, buf, n);
}

int sl_plan_crosses(const sl_plan_row *r)
{
	const sl_plan_path *p[3] = {&r->tp, &r->pp, &r->dp};
	for (int k = 0; k < 3; k++)
		if (p[k]->used && p[k]->inter)
			return 1;
	return 0;
}

/* ---- what each group's traffic crosses ---- */

/* stripes: the factor NCCL's channels give a ring's hop (1: none) */
static void path_add(sl_plan_path *p, const sl_cluster_config *cfg, int a, int b, double stripes)
{
	sl_link_spec s = sl_cluster_config_link(cfg, a, b);
	s.bandwidth *= stripes;
	int g = cfg->devices_per_node;
	if (g > 0 && a / g != b / g)
		p->inter = 1;
	if (!p->used || s.bandwidth < p->slowest.bandwidth ||
	    (s.bandwidth == p->slowest.bandwidth && s.latency > p->slowest.latency))
		p->slowest = s;
	p->used = 1;
}

static void paths(const sl_layout *l, const sl_cluster_config *cfg, sl_plan_row *r)
{
	memset(&r->tp, 0, sizeof r->tp);
	memset(&r->pp, 0, sizeof r->pp);
	memset(&r->dp, 0, sizeof r->dp);
	int dpc = sl_layout_dpc(l);
	for (int t = 0; t < l->tp; t++)
		for (int s = 0; s < l->pp; s++)
			for (int d = 0; d < dpc; d++) {
				int me = sl_mesh_device(l, t, s, d);
				if (l->tp > 1)
					path_add(&r->tp, cfg, me,
					         sl_mesh_device(l, (t + 1) % l->tp, s, d),
					         sl_mesh_ring_stripes(l, cfg, me, 0));
				if (dpc > 1)
					path_add(&r->dp, cfg, me,
					         sl_mesh_device(l, t, s, (d + 1) % dpc),
					         sl_mesh_ring_stripes(l, cfg, me, 1));
				if (l->pp > 1 && (s + 1 < l->pp || l->chunks > 1))
					path_add(&r->pp, cfg, me,
					         sl_mesh_device(l, t, (s + 1) % l->pp, d), 1);
			}
}

/* Two mesh orders that put every device, by its mesh coordinates, on the
 * same kinds of links give the same figures: keep the first. */
/* links a device's signature holds: its TP, CP, pipeline (both ways) and DP hops */
#define SIG 5
static sl_link_spec *signature(const sl_layout *l, const sl_cluster_config *cfg)
{
	int n = sl_layout_devices(l), k = 0, dpc = sl_layout_dpc(l);
	sl_link_spec *sig = malloc(SIG * (size_t)n * sizeof *sig);
	if (!sig)
		return NULL;
	for (int t = 0; t < l->tp; t++)
		for (int s = 0; s < l->pp; s++)
			for (int d = 0; d < dpc; d++) {
				int me = sl_mesh_device(l, t, s, d), c0 = d - d % l->cp;
				sig[k++] = sl_cluster_config_link(
				    cfg, me, sl_mesh_device(l, t, s, c0 + (d - c0 + 1) % l->cp));
				sig[k++] = sl_cluster_config_link(
				    cfg, me, sl_mesh_device(l, (t + 1) % l->tp, s, d));
				sig[k++] = sl_cluster_config_link(
				    cfg, me, sl_mesh_device(l, t, (s + 1) % l->pp, d));
				sig[k++] = sl_cluster_config_link(
				    cfg, me, sl_mesh_device(l, t, (s + l->pp - 1) % l->pp, d));
				sig[k++] = sl_cluster_config_link(
				    cfg, me, sl_mesh_device(l, t, s, (d + 1) % dpc));
			}
	return sig;
}

/* ---- enumeration ---- */

struct cands {
	sl_plan_row *rows;
	int n, cap;
};

static int push(struct cands *c, const sl_plan_row *r)
{
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 256;
		sl_plan_row *p = realloc(c->rows, (size_t)cap * sizeof *p);
		if (!p)
			return SL_ENOMEM;
		c->rows = p;
		c->cap = cap;
	}
	c->rows[c->n++] = *r;
	return SL_OK;
}

/* The (tp, pp, dp) splits of the devices that the model allows. */
static int split_ok(const sl_model_spec *m, int n, int tp, int pp, int cp)
{
	if (n % tp || (n / tp) % (pp * cp))
		return 0;
	int dp = n / tp / pp / cp;
	if (m->heads > 0 && sl_model_kv_heads(m) % tp)
		return 0;
	/* (a group's ranks are an array of SL_MAX_DEVICES: dp x cp share one) */
	if (tp > SL_MAX_DEVICES || pp > SL_MAX_DEVICES || dp * cp > SL_MAX_DEVICES)
		return 0;
	return tp <= m->ffn && pp <= m->layers && m->batch % dp == 0;
}

/* No split at all: say what limits each axis. */
static int no_split(const sl_model_spec *m, int n, sl_err *err)
{
	char tps[128] = "";
	size_t len = 0;
	int most = 0;
	for (int tp = 1; tp <= n && tp <= SL_MAX_DEVICES; tp++) {
		if (n % tp || (m->heads > 0 && sl_model_kv_heads(m) % tp) || tp > m->ffn)
			continue;
		if (len < sizeof tps - 16)
			len += (size_t)snprintf(tps + len, sizeof tps - len, "%s%d",
			                        len ? ", " : "", tp);
		for (int pp = 1; pp <= n / tp && pp <= SL_MAX_DEVICES; pp++) {
			if ((n / tp) % pp || pp > m->layers)
				continue;
			int rest = n / tp / pp, dp = 1;
			for (int d = 1; d <= rest && d <= SL_MAX_DEVICES; d++)
				if (rest % d == 0 && m->batch % d == 0)
					dp = d;
			if (tp * pp * dp > most)
				most = tp * pp * dp;
		}
	}
	return sl_fail(err, SL_EINVAL,
	               "no layout fills %d devices: tp can be %s (dividing the devices%s), pp at "
	               "most --layers=%d, dp a divisor of --batch=%d, each at most %d; the most "
	               "that fit is %d device%s: lower --devices or raise --layers, --batch%s",
	               n, tps,
	               m->heads == 0     ? ""
	               : m->kv_heads > 0 ? " and --kv-heads"
	                                 : " and --heads",
	               m->layers, m->batch, SL_MAX_DEVICES, most, most == 1 ? "" : "s",
	               m->heads == 0     ? ""
	               : m->kv_heads > 0 ? " or --kv-heads"
	                                 : " or --heads");
}

/* The splits of the layers over pp stages the plan tries: the one named,
 * or even, and ends where the layers do not divide (balanced for the
 * embedding and the head on the end stages; the same as even otherwise). */
static int stage_splits(const sl_model_spec *m, const sl_plan_spec *s, int pp, sl_layout *out)
{
	sl_layout_default(&out[0]);
	if (s->fix_stages) {
		if (s->stages_of.stages == SL_STAGES_LIST && s->stages_of.stage_n != pp)
			return 0;
		sl_layout_copy_stages(&out[0], &s->stages_of);
		return 1;
	}
	if (pp < 2 || m->layers % pp == 0)
		return 1;
	sl_layout_default(&out[1]);
	out[1].stages = SL_STAGES_ENDS;
	return 2;
}

/* Every layout of one (tp, pp, dp) but the mesh order. */
static int shapes(const sl_model_spec *m, const sl_plan_spec *s, int tp, int pp, int dp,
                  struct cands *out)
{
	int fix_mb = s->fix_microbatches;
	int share = m->batch / dp, cp = s->cp > 1 ? s->cp : 1;
	sl_layout split[2];
	int nsplit = stage_splits(m, s, pp, split);
	/* the fullest stage's layers, which interleaving's chunks divide */
	int most = 0;
	for (int k = 0; k < nsplit; k++) {
		split[k].pp = pp;
		for (int st = 0; st < pp; st++) {
			int n = sl_layout_stage_layers(m, &split[k], st);
			most = n > most ? n : most;
		}
	}
	for (int mb = 1; mb <= share; mb++) {
		if (share % mb || (fix_mb > 0 && mb != fix_mb))
			continue;
		int scheds[2 + MAX_PLAN_CHUNKS][2], ns = 0;
		/* chunk counts 2 to MAX_PLAN_CHUNKS, or the one --chunks names */
		int vlo = s->fix_chunks > 1 ? s->fix_chunks : 2,
		    vhi = s->fix_chunks > 1 ? s->fix_chunks : MAX_PLAN_CHUNKS;
		scheds[ns][0] = SL_SCHED_1F1B, scheds[ns++][1] = 1;
		if (pp > 1) {
			/* with one micro-batch GPipe's actions are 1F1B's: listed
			 * only when asked for by name */
			if (mb > 1 || (s->fix_schedule && s->schedule == SL_SCHED_GPIPE))
				scheds[ns][0] = SL_SCHED_GPIPE, scheds[ns++][1] = 1;
			if (mb % pp == 0)
				for (int v = vlo; v <= vhi && pp * v <= m->layers; v++)
					if (most % v == 0)
						scheds[ns][0] = SL_SCHED_INTERLEAVED,
						scheds[ns++][1] = v;
		}
		for (int k = 0; k < ns; k++) {
			int sk = scheds[k][0], vk = scheds[k][1];
			/* (pp = 1's one row is 1F1B's, of one chunk) */
			if ((s->fix_schedule && sk != (int)s->schedule) ||
			    (s->fix_chunks > 0 && vk != s->fix_chunks))
				continue;
			for (int q = 0; q < nsplit; q++)
				for (int sp = 0; sp <= (tp > 1 && !s->no_sp); sp++)
					for (int z1 = 0;
					     z1 <= (dp * cp > 1 && !s->no_zero1 ? 3 : 0); z1++) {
						if (s->fix_zero && z1 != s->zero)
							continue;
						sl_plan_row r;
						memset(&r, 0, sizeof r);
						sl_layout_default(&r.layout);
						r.layout.tp = tp;
						r.layout.pp = pp;
						r.layout.dp = dp;
						r.layout.microbatches = mb;
						r.layout.schedule = (sl_sched)scheds[k][0];
						r.layout.chunks = scheds[k][1];
						r.layout.seq_parallel = sp;
						r.layout.zero = z1;
						r.layout.cp = cp;
						r.layout.zero_keep = z1 == 3 && s->zero_keep;
						r.layout.cp_comm = s->cp_comm;
						/* (its check needs the attention every row gets) */
						r.layout.attention = s->attention;
						sl_layout_copy_stages(&r.layout, &split[q]);
						if (sl_layout_check(m, &r.layout, tp * pp * dp * cp,
						                    NULL))
							continue;
						if (push(out, &r))
							return SL_ENOMEM;
					}
		}
	}
	return SL_OK;
}

/* ---- ranking ---- */

static int order_index(const sl_layout *l)
{
	for (int o = 0; o < 6; o++)
		if (memcmp(l->order, orders[o], sizeof l->order) == 0)
			return o;
	return 6;
}

double sl_plan_time_key(double t)
{
	if (!(t > 0) || !isfinite(t))
		return t;
	double scale = pow(10, 11 - floor(log10(t)));
	return nearbyint(t * scale) / scale;
}

static int by_rank(const void *a, const void *b)
{
	const sl_plan_row *x = a, *y = b;
	if (x->fits != y->fits)
		return y->fits - x->fits;
	if (x->fits && x->timed != y->timed)
		return y->timed - x->timed;
	/* the untimed by their floors: an order, not a ranking */
	double tx = sl_plan_time_key(x->timed ? x->est.step_s : x->floor_s),
	       ty = sl_plan_time_key(y->timed ? y->est.step_s : y->floor_s);
	if (x->fits && tx != ty)
		return tx < ty ? -1 : 1;
	if (x->est.mem_peak_bytes != y->est.mem_peak_bytes)
		return x->est.mem_peak_bytes < y->est.mem_peak_bytes ? -1 : 1;
	/* Ties: fewer model-parallel devices, fewer micro-batches, simpler;
	 * then the mesh order as listed, so the ranking is one order. */
	const sl_layout *p = &x->layout, *q = &y->layout;
	int k1[] = {p->tp * p->pp,     p->pp,          p->microbatches, p->schedule,
	            p->chunks,         (int)p->stages, p->seq_parallel, p->zero,
	            (int)p->recompute, order_index(p)};
	int k2[] = {q->tp * q->pp,     q->pp,          q->microbatches, q->schedule,
	            q->chunks,         (int)q->stages, q->seq_parallel, q->zero,
	            (int)q->recompute, order_index(q)};
	for (size_t i = 0; i < sizeof k1 / sizeof *k1; i++)
		if (k1[i] != k2[i])
			return k1[i] < k2[i] ? -1 : 1;
	return 0;
}

static void figures(const sl_plan_spec *s, double model_flops, sl_plan_row *r)
{
	const sl_model_spec *m = &s->model;
	double step = r->est.step_s;
	r->fits = r->est.mem_peak_bytes <= s->cluster.memory;
	if (step > 0) {
		r->tokens_per_s = (double)m->batch * m->seq / step;
		r->model_flops_per_dev = model_flops / step / s->cluster.devices;
		r->hw_flops_per_dev = r->est.flops_per_step / step / s->cluster.devices;
		r->mfu = r->model_flops_per_dev / s->cluster.flops;
		r->hfu = r->hw_flops_per_dev / s->cluster.flops;
		r->comm_share = r->est.comm_s / step;
		r->exposed_share = r->est.comm_exposed_s / step;
	}
	paths(&r->layout, &s->cluster, r);
}

/* ---- evaluation, on every core ---- */

struct work {
	const sl_plan_spec *s;
	double model_flops;
	const sl_plan_row *shape; /* the layouts but their mesh order */
	int nshape;
	atomic_int next; /* the next shape to take */
	atomic_int failed;
	/* exact_top: the keep fastest step times timed so far, ascending */
	int keep, nbest;
	double *best;
	pthread_mutex_t mu;
};

/* Can no row of a layout whose compute alone takes floor seconds rank
 * among the first w->keep?  Only when keep rows already timed are faster
 * (by more than the rounding of adding the same times in another order):
 * its step is at least its floor. */
static int ruled_out(struct work *w, double floor)
{
	if (w->keep <= 0)
		return 0;
	pthread_mutex_lock(&w->mu);
	int out = w->nbest == w->keep && floor > w->best[w->keep - 1] * (1 + 1e-9);
	pthread_mutex_unlock(&w->mu);
	return out;
}

static void note_time(struct work *w, double t)
{
	if (w->keep <= 0)
		return;
	pthread_mutex_lock(&w->mu);
	if (w->nbest < w->keep || t < w->best[w->nbest - 1]) {
		int i = w->nbest < w->keep ? w->nbest++ : w->keep - 1;
		for (; i > 0 && w->best[i - 1] > t; i--)
			w->best[i] = w->best[i - 1];
		w->best[i] = t;
	}
	pthread_mutex_unlock(&w->mu);
}

struct worker {
	pthread_t th;
	struct work *w;
	struct cands out;
	int rc;
	sl_err err;
};

/* One shape: record it once; if it fits, replay it for every mesh order
 * that puts its devices on other kinds of links. */
static int one_shape(struct work *w, const sl_plan_row *shape, struct cands *out, sl_err *err)
{
	const sl_model_spec *m = &w->s->model;
	const sl_cluster_config *cfg = &w->s->cluster;
	int n = cfg->devices;
	sl_plan_row r = *shape;
	r.layout.recompute = w->s->min_recompute;
	r.layout.attention = w->s->attention;
	r.layout.overlap = w->s->overlap;
	r.layout.bucket_bytes = w->s->bucket_bytes;
	sl_est_rec *rec;
	int rc;
	/* ZeRO-2 and 3 only where the stage below does not fit: they save
	 * memory and add traffic (more collectives, ZeRO-3 half again the
	 * bytes), which overlap hides only in part.  A search of every stage
	 * would time twice the layouts. */
	if (r.layout.zero >= 2 && !w->s->fix_zero) {
		sl_layout lower = r.layout;
		lower.zero--;
		if ((rc = sl_est_record(m, &lower, n, 0, &w->s->cluster, &rec, err)))
			return rc;
		sl_estimate e;
		sl_est_rec_memory(rec, &e);
		sl_est_rec_free(rec);
		if (e.mem_peak_bytes <= cfg->memory)
			return SL_OK;
	}
	if ((rc = sl_est_record(m, &r.layout, n, 0, &w->s->cluster, &rec, err)))
		return rc;
	sl_est_rec_memory(rec, &r.est);
	/* A layout that does not fit may with activation recomputation: the
	 * attention core first (when there is attention), then whole blocks,
	 * as Megatron-LM users turn it on. */
	while (r.est.mem_peak_bytes > cfg->memory && r.layout.recompute != SL_RECOMPUTE_FULL) {
		sl_plan_row q = r;
		/* (fused attention keeps no probabilities: selective saves nothing) */
		q.layout.recompute = r.layout.recompute == SL_RECOMPUTE_NONE && m->heads > 0 &&
		                             r.layout.attention != SL_ATTN_FLASH
		                         ? SL_RECOMPUTE_SELECTIVE
		                         : SL_RECOMPUTE_FULL;
		sl_est_rec *rq;
		if ((rc = sl_est_record(m, &q.layout, n, 0, &w->s->cluster, &rq, err))) {
			sl_est_rec_free(rec);
			return rc;
		}
		sl_est_rec_memory(rq, &q.est);
		sl_est_rec_free(rec);
		rec = rq;
		r = q;
	}
	if (r.est.mem_peak_bytes > cfg->memory) {
		/* Memory does not depend on the order: one row says it. */
		sl_est_rec_free(rec);
		figures(w->s, w->model_flops, &r);
		return push(out, &r) ? sl_fail(err, SL_ENOMEM, "out of host memory") : SL_OK;
	}
	/* Every mesh order shares the recording, so the floor rules them all
	 * in or out together. */
	double floor = w->keep > 0 ? sl_est_compute_floor(rec, cfg) : 0;
	int untimed = ruled_out(w, floor);
	sl_link_spec *seen[6] = {NULL};
	int nseen = 0;
	for (int o = 0; o < 6 && rc == SL_OK; o++) {
		sl_plan_row q = r;
		memcpy(q.layout.order, orders[o], sizeof q.layout.order);
		sl_link_spec *sig = signature(&q.layout, cfg);
		if (!sig) {
			rc = sl_fail(err, SL_ENOMEM, "out of host memory");
			break;
		}
		int dup = 0;
		for (int j = 0; j < nseen && !dup; j++)
			dup = memcmp(seen[j], sig, SIG * (size_t)n * sizeof *sig) == 0;
		if (dup) {
			free(sig);
			continue;
		}
		seen[nseen++] = sig;
		q.floor_s = floor;
		if (untimed) {
			figures(w->s, w->model_flops, &q); /* memory, fit and paths only */
			if (push(out, &q))
				rc = sl_fail(err, SL_ENOMEM, "out of host memory");
			continue;
		}
		if ((rc = sl_est_replay(rec, q.layout.order, cfg, SL_EST_AUTO, &q.est, err)))
			break;
		q.timed = 1;
		note_time(w, q.est.step_s);
		figures(w->s, w->model_flops, &q);
		if (push(out, &q))
			rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	for (int j = 0; j < nseen; j++)
		free(seen[j]);
	sl_est_rec_free(rec);
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *k = arg;
	struct work *w = k->w;
	for (;;) {
		int i = atomic_fetch_add(&w->next, 1);
		if (i >= w->nshape || atomic_load(&w->failed))
			break;
		if (w->s->cancel && atomic_load(w->s->cancel)) {
			k->rc = sl_fail(&k->err, SL_ECANCEL, "the plan was cancelled");
			atomic_store(&w->failed, 1);
			break;
		}
		if ((k->rc = one_shape(w, &w->shape[i], &k->out, &k->err))) {
			atomic_store(&w->failed, 1);
			break;
		}
		if (w->s->done)
			atomic_fetch_add(w->s->done, 1);
	}
	return NULL;
}

/* Row r's layout with overlap o and bucket b, timed in its mesh order:
 * replaces *r when it fits and is faster. */
static int try_variant(const sl_plan_spec *s, double model_flops, sl_plan_row *r, int o, double b,
                       sl_err *err)
{
	sl_plan_row q = *r;
	q.layout.overlap = o;
	q.layout.bucket_bytes = b;
	sl_est_rec *rec;
	int rc = sl_est_record(&s->model, &q.layout, s->cluster.devices, 0, &s->cluster, &rec, err);
	if (rc)
		return rc;
	sl_est_rec_memory(rec, &q.est);
	if (q.est.mem_peak_bytes <= s->cluster.memory)
		rc = sl_est_replay(rec, q.layout.order, &s->cluster, SL_EST_AUTO, &q.est, err);
	sl_est_rec_free(rec);
	if (rc || q.est.mem_peak_bytes > s->cluster.memory || !(q.est.step_s < r->est.step_s))
		return rc;
	figures(s, model_flops, &q);
	*r = q;
	return SL_OK;
}

/* Overlap and the gradient bucket, searched around the best REFINE_TOP
 * layouts (ranked): on the realistic machine, where a kernel beside
 * communication runs slower, overlap off against on (auto); then, where
 * overlap puts the replicas' gradients in buckets, a quarter and four
 * times the bucket.  Searching them for every layout would time each
 * three to six times. */
enum { REFINE_TOP = 3 };
static int refine(const sl_plan_spec *s, double model_flops, sl_plan_row *rows, int n, sl_err *err)
{
	int real = s->cluster.efficiency == SL_EFF_REALISTIC, rc = SL_OK;
	for (int i = 0, k = 0; i < n && k < REFINE_TOP && rc == SL_OK; i++) {
		sl_plan_row *r = &rows[i];
		if (!r->fits || !r->timed)
			continue;
		if (s->cancel && atomic_load(s->cancel))
			return sl_fail(err, SL_ECANCEL, "the plan was cancelled");
		k++;
		const sl_layout *l = &r->layout;
		int on = l->overlap == SL_OVERLAP_ON || (l->overlap == SL_OVERLAP_AUTO && real);
		if (real && l->overlap == SL_OVERLAP_AUTO)
			rc = try_variant(s, model_flops, r, on ? SL_OVERLAP_OFF : SL_OVERLAP_ON,
			                 l->bucket_bytes, err);
		on = l->overlap == SL_OVERLAP_ON || (l->overlap == SL_OVERLAP_AUTO && real);
		if (!on || s->fix_bucket || sl_layout_dpc(l) < 2 || l->zero != 0)
			continue;
		double b = l->bucket_bytes > 0 ? l->bucket_bytes : SL_BUCKET_DEFAULT;
		const double f[2] = {0.25, 4};
		for (int j = 0; j < 2 && rc == SL_OK; j++)
			rc = try_variant(s, model_flops, r, l->overlap, b * f[j], err);
	}
	return rc;
}

static int cores(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* The shapes spec s allows on its devices, appended to *out; with first,
 * only until one (tp, pp, dp) gives some.  Nonzero: out of host memory. */
static int enumerate(const sl_plan_spec *s, int first, struct cands *out)
{
	const sl_model_spec *m = &s->model;
	int n = s->cluster.devices;
	int cp = s->cp > 1 ? s->cp : 1;
	for (int tp = 1; tp <= n; tp++)
		for (int pp = 1; pp <= n / tp; pp++) {
			if (first && out->n > 0)
				return 0;
			int dp = n % (tp * pp * cp) ? 0 : n / tp / pp / cp;
			if (dp == 0 || (s->fix_tp > 0 && tp != s->fix_tp) ||
			    (s->fix_pp > 0 && pp != s->fix_pp) ||
			    (s->fix_dp > 0 && dp != s->fix_dp) || !split_ok(m, n, tp, pp, cp))
				continue;
			if (shapes(m, s, tp, pp, dp, out))
				return -1;
		}
	return 0;
}

int sl_plan_run(const sl_plan_spec *s, sl_plan *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	out->spec = *s;
	const sl_model_spec *m = &s->model;
	const sl_cluster_config *cfg = &s->cluster;
	int n = cfg->devices, rc;
	sl_cluster_config chk = *cfg;
	chk.timing_only = 1; /* a plan runs nothing */
	if ((rc = sl_model_check(m, err)) || (rc = sl_cluster_config_check_plan(&chk, err)))
		return rc;
	out->model_flops = sl_model_step_flops(m);
	if (s->cp > 1 && s->attention != SL_ATTN_FLASH)
		return sl_fail(err, SL_EINVAL,
		               "--cp=%d runs ring attention as fused kernels, as Megatron-Core "
		               "does: add --attention=flash",
		               s->cp);
	if (s->cp > 1 && n % s->cp != 0)
		return sl_fail(err, SL_EINVAL, "--cp=%d does not divide the %d devices", s->cp, n);

	struct cands shape = {NULL, 0, 0};
	if (enumerate(s, 0, &shape)) {
		free(shape.rows);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	if (shape.n == 0 && (s->fix_schedule || s->fix_chunks > 0)) {
		/* Only when the degrees alone allow layouts is the schedule to
		 * blame; else the degrees' message below says what is wrong. */
		sl_plan_spec any = *s;
		any.fix_schedule = 0;
		any.fix_chunks = 0;
		struct cands all = {NULL, 0, 0};
		if (enumerate(&any, 1, &all)) {
			free(all.rows);
			return sl_fail(err, SL_ENOMEM, "out of host memory");
		}
		size_t nany = all.n;
		free(all.rows);
		int inter = s->fix_schedule && s->schedule == SL_SCHED_INTERLEAVED;
		const char *why =
		    s->fix_chunks > 1 && s->fix_schedule && !inter
		        ? "only the interleaved schedule has more than one chunk a device"
		    : inter && s->fix_chunks == 1
		        ? "the interleaved schedule has 2 chunks a device or more"
		        : "GPipe and interleaving need pp > 1, interleaving a micro-batch count "
		          "that "
		          "pp divides and v chunks dividing the fullest stage's layers";
		int deg = s->fix_tp > 0 || s->fix_pp > 0 || s->fix_dp > 0,
		    mb = s->fix_microbatches > 0;
		const char *given = deg && mb ? " with the degrees and micro-batches given"
		                    : deg     ? " with the degrees given"
		                    : mb      ? " with the micro-batches given"
		                              : "";
		if (nany > 0)
			return sl_fail(err, SL_EINVAL,
			               "no valid layout of %d devices%s has%s%s%s%.0d: %s", n,
			               given, s->fix_schedule ? " schedule " : "",
			               s->fix_schedule ? sl_sched_name(s->schedule) : "",
			               s->fix_chunks > 0 ? " chunks=" : "",
			               s->fix_chunks > 0 ? s->fix_chunks : 0, why);
	}
	if (shape.n == 0 &&
	    (s->fix_tp > 0 || s->fix_pp > 0 || s->fix_dp > 0 || s->fix_microbatches > 0))
		return sl_fail(
		    err, SL_EINVAL,
		    "no valid layout of %d devices has%s%.0d%s%.0d%s%.0d%s%.0d: tp x pp x dp must "
		    "be the devices (each at most %d), tp divide the heads (or --kv-heads) and "
		    "the ffn, dp the batch, the micro-batches a replica's share",
		    n, s->fix_tp > 0 ? " tp=" : "", s->fix_tp > 0 ? s->fix_tp : 0,
		    s->fix_pp > 0 ? " pp=" : "", s->fix_pp > 0 ? s->fix_pp : 0,
		    s->fix_dp > 0 ? " dp=" : "", s->fix_dp > 0 ? s->fix_dp : 0,
		    s->fix_microbatches > 0 ? " microbatches=" : "",
		    s->fix_microbatches > 0 ? s->fix_microbatches : 0, SL_MAX_DEVICES);
	if (shape.n == 0)
		return no_split(m, n, err);
	if (s->total)
		atomic_store(s->total, (int)shape.n);

	struct work w = {
	    .s = s, .model_flops = out->model_flops, .shape = shape.rows, .nshape = shape.n};
	atomic_init(&w.next, 0);
	atomic_init(&w.failed, 0);
	w.keep = s->exact_top > 0 ? (s->exact_top < 3 ? 3 : s->exact_top) : 0;
	/* A table at least as long as the plan can be (six mesh orders a
	 * shape) needs every row timed anyway. */
	if (w.keep >= 6 * shape.n)
		w.keep = 0;
	if (w.keep > 0 && !(w.best = malloc((size_t)w.keep * sizeof *w.best))) {
		free(shape.rows);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	pthread_mutex_init(&w.mu, NULL);
	int nw = s->threads > 0 ? s->threads : cores();
	nw = nw < 1 ? 1 : nw > MAX_PLAN_THREADS ? MAX_PLAN_THREADS : nw;
	nw = nw > shape.n ? shape.n : nw;
	struct worker wk[MAX_PLAN_THREADS];
	memset(wk, 0, sizeof wk);
	int started = 0;
	for (int i = 0; i < nw; i++) {
		wk[i].w = &w;
		/* The calling thread is worker 0. */
		if (i > 0 && pthread_create(&wk[i].th, NULL, worker_main, &wk[i]) != 0)
			break;
		started = i + 1;
	}
	worker_main(&wk[0]);
	for (int i = 1; i < started; i++)
		pthread_join(wk[i].th, NULL);
	free(shape.rows);
	free(w.best);
	pthread_mutex_destroy(&w.mu);

	struct cands all = {NULL, 0, 0};
	rc = SL_OK;
	for (int i = 0; i < started; i++) {
		if (wk[i].rc && rc == SL_OK) {
			rc = wk[i].rc;
			if (err)
				*err = wk[i].err;
		}
		for (int j = 0; j < wk[i].out.n && rc == SL_OK; j++)
			if (push(&all, &wk[i].out.rows[j]))
				rc = sl_fail(err, SL_ENOMEM, "out of host memory");
		free(wk[i].out.rows);
	}
	if (rc) {
		free(all.rows);
		return rc;
	}
	qsort(all.rows, (size_t)all.n, sizeof *all.rows, by_rank);
	if ((rc = refine(s, out->model_flops, all.rows, all.n, err))) {
		free(all.rows);
		return rc;
	}
	qsort(all.rows, (size_t)all.n, sizeof *all.rows, by_rank);
	out->rows = all.rows;
	out->n = all.n;
	for (int i = 0; i < all.n; i++) {
		out->nfit += all.rows[i].fits;
		out->nuntimed += all.rows[i].fits && !all.rows[i].timed;
	}
	if (out->nfit == 0) {
		char need[32], have[32], name[96], st[32];
		const sl_plan_row *r = &all.rows[0];
		double state = (double)r->est.params_bytes + (double)r->est.grads_bytes +
		               (double)r->est.optimizer_bytes;
		/* When the weights, gradients and Adam state alone do not fit, the
		 * batch and the sequence cannot help. */
		/* ... unless they can be sharded further over the replicas */
		int shard = r->layout.dp > 1 && r->layout.zero < 3 && !s->no_zero1;
		if (state > (double)cfg->memory)
			return sl_fail(
			    err, SL_EINVAL,
			    "no layout fits in %s per device: the smallest peak is %s (%s), "
			    "%s of it weights, gradients and Adam state; %sadd devices or "
			    "memory, or shrink the model (--seq, --batch cannot help)",
			    sl_fmt_bytes((double)cfg->memory, have, sizeof have),
			    sl_fmt_bytes((double)r->est.mem_peak_bytes, need, sizeof need),
			    sl_plan_layout_name(&r->layout, name, sizeof name),
			    sl_fmt_bytes(state, st, sizeof st),
			    shard ? "shard them over the replicas (--zero=3), " : "");
		return sl_fail(err, SL_EINVAL,
		               "no layout fits in %s per device: the smallest peak is %s (%s); add "
		               "devices or memory, or lower --seq, --batch or the model's size",
		               sl_fmt_bytes((double)cfg->memory, have, sizeof have),
		               sl_fmt_bytes((double)r->est.mem_peak_bytes, need, sizeof need),
		               sl_plan_layout_name(&r->layout, name, sizeof name));
	}
	return SL_OK;
}

void sl_plan_free(sl_plan *p)
{
	free(p->rows);
	p->rows = NULL;
	p->n = p->nfit = p->nuntimed = 0;
}

/* ---- explaining ---- */

/* The same layout but for ZeRO-1 (and the mesh order when any_order). */
static int twins(const sl_layout *a, const sl_layout *b, int any_order)
{
	return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && a->cp == b->cp &&
	       a->schedule == b->schedule && a->chunks == b->chunks &&
	       a->microbatches == b->microbatches && a->seq_parallel == b->seq_parallel &&
	       a->stages == b->stages && a->stage_n == b->stage_n &&
	       memcmp(a->stage_list, b->stage_list, sizeof a->stage_list) == 0 &&
	       a->overlap == b->overlap && a->bucket_bytes == b->bucket_bytes &&
	       (any_order || memcmp(a->order, b->order, sizeof a->order) == 0);
}

int sl_plan_tp_moved(const sl_plan *p, int i, int want_inter)
{
	const sl_plan_row *r = &p->rows[i];
	for (int j = 0; j < p->nfit; j++) /* ranked: the first is the fastest */
		/* (rows of the same shape share its recording, so they are all
		 * timed or none: the best's twins always are) */
		if (j != i && p->rows[j].timed && twins(&p->rows[j].layout, &r->layout, 1) &&
		    p->rows[j].layout.zero == r->layout.zero && p->rows[j].tp.used &&
		    p->rows[j].tp.inter == want_inter)
			return j;
	return -1;
}

/* "the inter-node links (50.0 GB/s, 5.00 us), 9.0x slower than ..." */
static size_t say_link(char *buf, size_t n, const char *what, const sl_plan_path *slow,
                       const sl_plan_path *fast)
{
	char a[32], b[32];
	sl_fmt_rate(slow->slowest.bandwidth, a, sizeof a);
	sl_fmt_rate(fast->slowest.bandwidth, b, sizeof b);
	return (size_t)snprintf(
	    buf, n, "its %s cross%s %s links at %s, %.1fx slower than the %s of the best", what,
	    strchr(what, ' ') ? "" : "es", slow->inter ? "inter-node" : "intra-node", a,
	    fast->slowest.bandwidth / slow->slowest.bandwidth, b);
}

static size_t compare(char *buf, size_t n, const sl_plan_row *best, const sl_plan_row *o)
{
	char t[32];
	double d = o->est.step_s / best->est.step_s - 1;
	size_t len = (size_t)snprintf(buf, n, "%s (%+.1f%%)",
	                              sl_fmt_time(o->est.step_s, t, sizeof t), 100 * d);
	if (len >= n)
		return len;
	const sl_plan_path *bp[3] = {&best->tp, &best->pp, &best->dp},
	                   *op[3] = {&o->tp, &o->pp, &o->dp};
	const char *names[3] = {"TP all-reduces", "pipeline sends", "gradient all-reduces"};
	for (int k = 0; k < 3; k++)
		if (op[k]->used && bp[k]->used &&
		    op[k]->slowest.bandwidth < bp[k]->slowest.bandwidth) {
			len += (size_t)snprintf(buf + len, n - len, ": ");
			if (len < n)
				len += say_link(buf + len, n - len, names[k], op[k], bp[k]);
			return len;
		}
	double db = o->est.bubble_fraction - best->est.bubble_fraction;
	double dc = o->est.comm_s - best->est.comm_s;
	if (db > 0.005 && db * best->est.ideal_s >= dc)
		return len + (size_t)snprintf(
		                 buf + len, n - len,
		                 ": its pipeline bubble is %.1f%% of the ideal time against %.1f%%",
		                 100 * o->est.bubble_fraction, 100 * best->est.bubble_fraction);
	if (dc > 0) {
		static const char *const what[SL_TR_NKINDS] = {"TP all-reduces",
		                                               "TP all-gathers",
		                                               "sequence-parallel reduce-scatters",
		                                               "pipeline sends",
		                                               "gradient all-reduces",
		                                               "ZeRO-1 reduce-scatters",
		                                               "ZeRO-1 all-gathers"};
		char a[32], b[32], c[32], e[32];
		int k = 0;
		double most = 0;
		for (int q = 0; q < SL_TR_NKINDS; q++) {
			double more = (double)o->est.sent[q] - (double)best->est.sent[q];
			if (more > most)
				most = more, k = q;
		}
		len += (size_t)snprintf(buf + len, n - len,
		                        ": it communicates %s a step on average against %s",
		                        sl_fmt_time(o->est.comm_s, a, sizeof a),
		                        sl_fmt_time(best->est.comm_s, b, sizeof b));
		if (most > 0 && len < n)
			len += (size_t)snprintf(
			    buf + len, n - len,
			    " (most of the difference: its %s, %s a device against %s)", what[k],
			    sl_fmt_bytes((double)o->est.sent[k], c, sizeof c),
			    sl_fmt_bytes((double)best->est.sent[k], e, sizeof e));
		return len;
	}
	if (d == 0) {
		char a[32], b[32];
		return len + (size_t)snprintf(
		                 buf + len, n - len,
		                 ": as fast, but it needs %s of memory against %s",
		                 sl_fmt_bytes((double)o->est.mem_peak_bytes, a, sizeof a),
		                 sl_fmt_bytes((double)best->est.mem_peak_bytes, b, sizeof b));
	}
	return len;
}

int sl_plan_runner_up(const sl_plan *p)
{
	for (int i = 1; i < p->nfit; i++)
		if (!twins(&p->rows[i].layout, &p->rows[0].layout, 0))
			return i;
	return -1;
}

void sl_plan_explain(const sl_plan *p, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	if (p->nfit == 0 || n == 0)
		return;
	const sl_plan_row *best = &p->rows[0];
	const sl_cluster_config *cfg = &p->spec.cluster;
	char name[96], t[32], mem[32], cap[32];
	len += (size_t)snprintf(buf + len, n - len,
	                        "Best: %s, %s a step, %.0f tokens/s, %.0f TFLOP/s of model work "
	                        "per device (%.0f%% of its %.0f), %s peak memory of %s.",
	                        sl_plan_layout_name(&best->layout, name, sizeof name),
	                        sl_fmt_time(best->est.step_s, t, sizeof t), best->tokens_per_s,
	                        best->model_flops_per_dev / 1e12,
	                        100 * best->model_flops_per_dev / cfg->flops, cfg->flops / 1e12,
	                        sl_fmt_bytes((double)best->est.mem_peak_bytes, mem, sizeof mem),
	                        sl_fmt_bytes((double)cfg->memory, cap, sizeof cap));
	/* ZeRO-1 changes memory, hardly time: said apart from the runner-up. */
	int ru = sl_plan_runner_up(p);
	for (int i = 1; i < (ru > 0 ? ru : p->nfit); i++) {
		const sl_plan_row *r = &p->rows[i];
		if (best->layout.zero > r->layout.zero && len < n)
			len += (size_t)snprintf(
			    buf + len, n - len,
			    " ZeRO-1 (z1) shards Adam's moments over the %d replicas: without it "
			    "the step takes %s and %s of memory.",
			    best->layout.dp, sl_fmt_time(r->est.step_s, t, sizeof t),
			    sl_fmt_bytes((double)r->est.mem_peak_bytes, mem, sizeof mem));
	}
	if (ru > 0 && len < n) {
		len +=
		    (size_t)snprintf(buf + len, n - len, " The runner-up, %s, takes ",
		                     sl_plan_layout_name(&p->rows[ru].layout, name, sizeof name));
		if (len < n)
			len += compare(buf + len, n - len, best, &p->rows[ru]);
		if (len < n)
			len += (size_t)snprintf(buf + len, n - len, ".");
	}
	int moved = best->tp.used ? sl_plan_tp_moved(p, 0, !best->tp.inter) : -1;
	if (moved > 0 && moved != ru && len < n) {
		len += (size_t)snprintf(
		    buf + len, n - len, " With its TP group %s nodes instead (%s) it takes ",
		    best->tp.inter ? "inside" : "across",
		    sl_plan_layout_name(&p->rows[moved].layout, name, sizeof name));
		if (len < n)
			len += compare(buf + len, n - len, best, &p->rows[moved]);
		if (len < n)
			len += (size_t)snprintf(buf + len, n - len, ".");
	}
	if (p->n > p->nfit && len < n)
		snprintf(buf + len, n - len, " %d layout%s do%s not fit in %s per device.",
		         p->n - p->nfit, p->n - p->nfit == 1 ? "" : "s",
		         p->n - p->nfit == 1 ? "es" : "",
		         sl_fmt_bytes((double)cfg->memory, cap, sizeof cap));
}
