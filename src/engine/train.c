/* SPDX-License-Identifier: MIT */
/* train.c - the model's training step under TP, PP and DP on the engine's
 * devices, its accounting, and its analytic prediction.
 *
 * The step is written once, as block functions that do all their work
 * through a handful of wrappers (k_gemm, k_coll, k_alloc, the ew_* element-
 * wise kernels).  Run on a device they do the arithmetic and the engine
 * calls; with no device (k->d == NULL) they only record the work (FLOPs and
 * collectives), which is what the prediction replays.  The same split is
 * where a timing-only mode plugs in: skip the arithmetic, keep the calls. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "xfer.h"

#define FL sizeof(float)

/* ---- layouts and the mesh ---- */

static const char *const axis_names[SL_NAXES] = {"tp", "pp", "dp"};

#define MAX_CHUNKS 64

void sl_layout_default(sl_layout *l)
{
	memset(l, 0, sizeof *l);
	l->tp = l->pp = l->dp = 1;
	l->schedule = SL_SCHED_1F1B;
	l->chunks = 1;
	l->microbatches = 1;
	l->order[0] = SL_AXIS_TP;
	l->order[1] = SL_AXIS_DP;
	l->order[2] = SL_AXIS_PP;
	l->algo = SL_ALGO_RING;
}

int sl_mesh_order_parse(const char *s, sl_axis order[SL_NAXES])
{
	if (strlen(s) != 8 || s[2] != '-' || s[5] != '-')
		return SL_EINVAL;
	int seen = 0;
	for (int i = 0; i < SL_NAXES; i++) {
		int k = -1;
		for (int a = 0; a < SL_NAXES; a++)
			if (strncmp(s + 3 * i, axis_names[a], 2) == 0)
				k = a;
		if (k < 0 || (seen >> k) & 1)
			return SL_EINVAL;
		seen |= 1 << k;
		order[i] = (sl_axis)k;
	}
	return SL_OK;
}

const char *sl_mesh_order_name(const sl_axis order[SL_NAXES], char *buf, size_t n)
{
	snprintf(buf, n, "%s-%s-%s", axis_names[order[0] % SL_NAXES], axis_names[order[1] % SL_NAXES],
		 axis_names[order[2] % SL_NAXES]);
	return buf;
}

static int axis_size(const sl_layout *l, sl_axis a)
{
	return a == SL_AXIS_TP ? l->tp : a == SL_AXIS_PP ? l->pp : l->dp;
}

int sl_mesh_device(const sl_layout *l, int tp, int pp, int dp)
{
	int c[SL_NAXES] = {tp, pp, dp};
	int id = 0;
	for (int i = SL_NAXES - 1; i >= 0; i--)
		id = id * axis_size(l, l->order[i]) + c[l->order[i]];
	return id;
}

void sl_mesh_coords(const sl_layout *l, int dev, int *tp, int *pp, int *dp)
{
	int c[SL_NAXES];
	for (int i = 0; i < SL_NAXES; i++) {
		int n = axis_size(l, l->order[i]);
		c[l->order[i]] = dev % n;
		dev /= n;
	}
	*tp = c[SL_AXIS_TP];
	*pp = c[SL_AXIS_PP];
	*dp = c[SL_AXIS_DP];
}

static void split(int n, int p, int r, int *first, int *count)
{
	int base = n / p, extra = n % p;
	*first = r * base + (r < extra ? r : extra);
	*count = base + (r < extra);
}

void sl_layout_blocks(const sl_model_spec *m, const sl_layout *l, int s, int c, int *first,
		      int *count)
{
	if (l->chunks <= 1) {
		split(m->layers, l->pp, s, first, count);
		return;
	}
	int per = m->layers / (l->pp * l->chunks);
	*first = (c * l->pp + s) * per;
	*count = per;
}

void sl_layout_microbatch(const sl_model_spec *m, const sl_layout *l, int r, int j, int *first,
			  int *count)
{
	int r0, nr, j0, nj;
	split(m->batch, l->dp, r, &r0, &nr);
	split(nr, l->microbatches, j, &j0, &nj);
	*first = r0 + j0;
	*count = nj;
}

int sl_layout_check(const sl_model_spec *m, const sl_layout *l, int ndev, sl_err *err)
{
	int rc = sl_model_check(m, err);
	if (rc)
		return rc;
	if (l->tp < 1 || l->pp < 1 || l->dp < 1)
		return sl_fail(err, SL_EINVAL, "--tp, --pp and --dp must each be at least 1");
	if ((long)l->tp * l->pp * l->dp != ndev)
		return sl_fail(err, SL_EINVAL,
			       "tp*pp*dp = %d*%d*%d = %ld but there are %d devices: make the product equal the device count",
			       l->tp, l->pp, l->dp, (long)l->tp * l->pp * l->dp, ndev);
	int seen = 0;
	for (int i = 0; i < SL_NAXES; i++) {
		if (l->order[i] < 0 || l->order[i] >= SL_NAXES || (seen >> l->order[i]) & 1)
			return sl_fail(err, SL_EINVAL,
				       "the mesh order must name tp, pp and dp once each (as in tp-dp-pp)");
		seen |= 1 << l->order[i];
	}
	if (l->algo < 0 || l->algo >= SL_ALGO_NALGOS)
		return sl_fail(err, SL_EINVAL, "unknown collective algorithm");
	if (l->microbatches < 1 || l->microbatches > 4096)
		return sl_fail(err, SL_EINVAL, "--microbatches=%d is out of range (1 to 4096)",
			       l->microbatches);
	if (l->chunks < 1 || l->chunks > MAX_CHUNKS)
		return sl_fail(err, SL_EINVAL, "--chunks=%d is out of range (1 to %d)", l->chunks,
			       MAX_CHUNKS);
	if ((rc = sl_pp_check(l->schedule, l->pp, l->microbatches, l->chunks, err)))
		return rc;
	if (m->heads > 0 && m->heads % l->tp != 0)
		return sl_fail(err, SL_EINVAL,
			       "%d heads do not split over tp=%d: tp must divide --heads (attention is split by whole heads)",
			       m->heads, l->tp);
	if (m->ffn < l->tp)
		return sl_fail(err, SL_EINVAL,
			       "--ffn=%d cannot be split over tp=%d: every device needs at least one fc1 column",
			       m->ffn, l->tp);
	int v = l->chunks;
	if (l->pp * v > m->layers)
		return sl_fail(err, SL_EINVAL,
			       "%d layers cannot fill pp*chunks = %d*%d = %d model chunks: every chunk needs a layer; lower --pp or --chunks",
			       m->layers, l->pp, v, l->pp * v);
	if (v > 1 && m->layers % (l->pp * v) != 0)
		return sl_fail(err, SL_EINVAL,
			       "--layers=%d does not split into pp*chunks = %d*%d = %d equal model chunks: make the layer count a multiple of %d",
			       m->layers, l->pp, v, l->pp * v, l->pp * v);
	if ((long)l->dp * l->microbatches > m->batch)
		return sl_fail(err, SL_EINVAL,
			       "a batch of %d sequences cannot fill dp*microbatches = %d*%d = %d micro-batches: raise --batch or lower --microbatches",
			       m->batch, l->dp, l->microbatches, l->dp * l->microbatches);
	if (l->seq_parallel && l->tp < 2)
		return sl_fail(err, SL_EINVAL,
			       "--sequence-parallel splits the sequence inside a TP group: it needs --tp of 2 or more");
	if (l->seq_parallel) {
		long tokens = (long)(m->batch / l->dp / l->microbatches) * m->seq;
		if (tokens < l->tp)
			return sl_fail(err, SL_EINVAL,
				       "sequence parallelism splits a micro-batch's %ld tokens over tp=%d: every device needs a token; raise --batch or --seq, or lower --microbatches",
				       tokens, l->tp);
	}
	if (l->zero1 && l->dp < 2)
		return sl_fail(err, SL_EINVAL,
			       "--zero1 shards the optimizer over data-parallel replicas: it needs --dp of 2 or more");
	return SL_OK;
}

static const char *const traffic_names[SL_TR_NKINDS] = {
	"tp_allreduce", "tp_allgather",     "tp_reducescatter", "pp_sendrecv",
	"dp_allreduce", "dp_reducescatter", "dp_allgather"};

const char *sl_traffic_name(sl_traffic_kind k)
{
	return k >= 0 && k < SL_TR_NKINDS ? traffic_names[k] : "?";
}

/* ---- the state each device holds ---- */

struct blk {
	int index;        /* global block */
	int ah, qc;       /* local heads, local QKV columns (3 d ah) */
	int ft;           /* local fc1 columns */
	size_t w[SL_T_PER_BLOCK]; /* where each tensor's shard starts in the flat arrays */
};

struct dstate {
	int id, tp, pp, dp;
	int built;
	sl_group *tpg, *dpg;
	struct blk *blk;
	int cfirst[MAX_CHUNKS + 1]; /* local chunk c's blocks: blk[cfirst[c] .. cfirst[c+1]) */
	size_t n, opt_lo, opt_hi;
	size_t rep_lo, rep_n; /* the replicated biases, kept together at the end */
	size_t *zoff;         /* dp + 1: ZeRO-1 slices of the DP ranks */
	float *P, *G, *M, *V;
	sl_shard *shards;
	int nshards;
	sl_pp_action *acts;
	int nacts;
};

struct sl_train {
	sl_model_spec m;
	sl_layout l;
	int ndev, v, nchunks;
	int values;         /* 0: shapes only (sl_train_create_timing_only) */
	long step;
	struct dstate *dev; /* ndev */
};

static int build_dev(sl_train *tr, struct dstate *ds, sl_err *err)
{
	const sl_model_spec *m = &tr->m;
	const sl_layout *l = &tr->l;
	sl_mesh_coords(l, ds->id, &ds->tp, &ds->pp, &ds->dp);
	ds->built = 1;
	ds->tpg = malloc(2 * sizeof *ds->tpg);
	ds->zoff = malloc(((size_t)l->dp + 1) * sizeof *ds->zoff);
	if (!ds->tpg || !ds->zoff)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	ds->dpg = ds->tpg + 1;
	ds->tpg->n = l->tp;
	for (int i = 0; i < l->tp; i++)
		ds->tpg->ranks[i] = sl_mesh_device(l, i, ds->pp, ds->dp);
	ds->dpg->n = l->dp;
	for (int i = 0; i < l->dp; i++)
		ds->dpg->ranks[i] = sl_mesh_device(l, ds->tp, ds->pp, i);

	int nb = 0;
	for (int c = 0; c < tr->v; c++) {
		int first, count;
		sl_layout_blocks(m, l, ds->pp, c, &first, &count);
		ds->cfirst[c] = nb;
		nb += count;
	}
	ds->cfirst[tr->v] = nb;
	int per = sl_model_ntensors(m) / m->layers;
	int k0 = m->heads > 0 ? 0 : SL_T_FC1_W;
	ds->blk = calloc((size_t)nb, sizeof *ds->blk);
	ds->shards = calloc((size_t)nb * per, sizeof *ds->shards);
	ds->nacts = 2 * l->microbatches * tr->v;
	ds->acts = malloc((size_t)ds->nacts * sizeof *ds->acts);
	if (!ds->blk || !ds->shards || !ds->acts)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	int rc = sl_pp_schedule(l->schedule, l->pp, l->microbatches, tr->v, ds->pp, ds->acts, err);
	if (rc)
		return rc;

	/* Flat layout: the split tensors block by block in model order, then
	 * the replicated ones, so sequence parallelism can all-reduce their
	 * gradients in one call. */
	size_t off = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			ds->rep_lo = off;
		int i = 0;
		for (int c = 0; c < tr->v; c++) {
			int first, count;
			sl_layout_blocks(m, l, ds->pp, c, &first, &count);
			for (int b = first; b < first + count; b++, i++) {
				struct blk *bk = &ds->blk[i];
				bk->index = b;
				for (int kind = k0; kind < SL_T_PER_BLOCK; kind++) {
					sl_tensor_info ti;
					int t = b * per + (kind - k0);
					sl_model_tensor(m, t, &ti);
					if ((ti.split == SL_TS_REPLICATED) != pass)
						continue;
					int start, len;
					sl_tensor_shard(&ti, l->tp, ds->tp, &start, &len);
					size_t cnt = ti.axis == 1   ? (size_t)ti.rows * len
						     : ti.axis == 0 ? (size_t)len * ti.cols
								    : ti.count;
					sl_shard *sh = &ds->shards[ds->nshards++];
					sh->tensor = t;
					sh->start = start;
					sh->len = len;
					sh->offset = off;
					sh->count = cnt;
					sh->primary = ds->dp == 0 && (ti.axis >= 0 || ds->tp == 0);
					bk->w[kind] = off;
					off += cnt;
					if (kind == SL_T_FC1_W)
						bk->ft = len;
					if (kind == SL_T_QKV_W) {
						bk->qc = len;
						bk->ah = len / (3 * (m->hidden / m->heads));
					}
				}
			}
		}
	}
	ds->n = off;
	ds->rep_n = off - ds->rep_lo;
	sl_block_offsets(ds->n, l->dp, NULL, ds->zoff);
	ds->opt_lo = l->zero1 ? ds->zoff[ds->dp] : 0;
	ds->opt_hi = l->zero1 ? ds->zoff[ds->dp + 1] : ds->n;
	size_t no = ds->opt_hi - ds->opt_lo;
	if (!tr->values)
		return SL_OK;
	ds->P = malloc((ds->n ? ds->n : 1) * FL);
	ds->G = calloc(ds->n ? ds->n : 1, FL);
	ds->M = calloc(no ? no : 1, FL);
	ds->V = calloc(no ? no : 1, FL);
	if (!ds->P || !ds->G || !ds->M || !ds->V)
		return sl_fail(err, SL_ENOMEM, "the host cannot hold device %d's parameters", ds->id);
	return SL_OK;
}

static void free_dev(struct dstate *ds)
{
	free(ds->tpg);
	free(ds->zoff);
	free(ds->blk);
	free(ds->shards);
	free(ds->acts);
	free(ds->P);
	free(ds->G);
	free(ds->M);
	free(ds->V);
}

struct linksrc;
static int check_plan(const sl_train *tr, sl_err *err);

void sl_train_destroy(sl_train *tr)
{
	if (!tr)
		return;
	for (int i = 0; tr->dev && i < tr->ndev; i++)
		free_dev(&tr->dev[i]);
	free(tr->dev);
	free(tr);
}

static sl_train *create(const sl_model_spec *m, const sl_layout *l, int ndev, int values,
			sl_err *err)
{
	if (ndev < 1 || ndev > SL_MAX_DEVICES) {
		sl_fail(err, SL_EINVAL, "device count %d is out of range (1 to %d)", ndev, SL_MAX_DEVICES);
		return NULL;
	}
	if (sl_layout_check(m, l, ndev, err) || (values && sl_model_check_values(m, err)))
		return NULL;
	sl_train *tr = calloc(1, sizeof *tr);
	if (!tr) {
		sl_fail(err, SL_ENOMEM, "out of host memory");
		return NULL;
	}
	tr->m = *m;
	tr->l = *l;
	tr->ndev = ndev;
	tr->v = l->chunks;
	tr->nchunks = l->pp * l->chunks;
	tr->values = values;
	if (!(tr->dev = calloc((size_t)ndev, sizeof *tr->dev))) {
		sl_fail(err, SL_ENOMEM, "out of host memory");
		sl_train_destroy(tr);
		return NULL;
	}
	for (int i = 0; i < ndev; i++) {
		tr->dev[i].id = i;
		if (build_dev(tr, &tr->dev[i], err)) {
			sl_train_destroy(tr);
			return NULL;
		}
	}
	float *init = values ? malloc(sl_model_nparams(m) * FL) : NULL;
	if (values && !init) {
		sl_fail(err, SL_ENOMEM, "the host cannot hold the model's %zu parameters",
			sl_model_nparams(m));
		sl_train_destroy(tr);
		return NULL;
	}
	if (values) {
		sl_model_init(m, init);
		sl_train_scatter(tr, init, NULL, NULL);
		free(init);
	}
	/* Rendezvous sends must never wait on each other, and every receive
	 * must meet the tensor it expects: check the whole plan once. */
	if (check_plan(tr, err)) {
		sl_train_destroy(tr);
		return NULL;
	}
	return tr;
}

sl_train *sl_train_create(const sl_model_spec *m, const sl_layout *l, int ndev, sl_err *err)
{
	return create(m, l, ndev, 1, err);
}

sl_train *sl_train_create_timing_only(const sl_model_spec *m, const sl_layout *l, int ndev,
				      sl_err *err)
{
	return create(m, l, ndev, 0, err);
}

double sl_train_host_bytes(const sl_model_spec *m, const sl_layout *l)
{
	double n = (double)sl_model_nparams(m), R = (double)m->batch * m->seq;
	double h = m->hidden, f = m->ffn;
	double acts = 4.0 * m->layers *
	              (R * (6 * h + 2 * f) + (double)m->batch * m->heads * m->seq * m->seq);
	return 16 * n * (1 + l->dp) + acts * (1 + l->tp);
}

int sl_train_has_values(const sl_train *tr)
{
	return tr->values;
}

const sl_model_spec *sl_train_model(const sl_train *tr)
{
	return &tr->m;
}

const sl_layout *sl_train_layout(const sl_train *tr)
{
	return &tr->l;
}

long sl_train_step(const sl_train *tr)
{
	return tr->step;
}

void sl_train_set_step(sl_train *tr, long step)
{
	tr->step = step;
}

sl_dev_state sl_train_dev_state(sl_train *tr, int dev)
{
	sl_dev_state s;
	memset(&s, 0, sizeof s);
	if (dev < 0 || dev >= tr->ndev)
		return s;
	struct dstate *ds = &tr->dev[dev];
	s.params = ds->P;
	s.grads = ds->G;
	s.mom = ds->M;
	s.var = ds->V;
	s.n = ds->n;
	s.opt_lo = ds->opt_lo;
	s.opt_hi = ds->opt_hi;
	s.shards = ds->shards;
	s.nshards = ds->nshards;
	return s;
}

/* Copy one shard between a device's flat array and the canonical vector. */
static void shard_copy(const sl_model_spec *m, const sl_shard *sh, float *flat, float *global,
		       int to_global)
{
	sl_tensor_info ti;
	sl_model_tensor(m, sh->tensor, &ti);
	float *g = global + ti.offset, *f = flat + sh->offset;
	if (ti.axis == 1) {
		for (int r = 0; r < ti.rows; r++) {
			float *gr = g + (size_t)r * ti.cols + sh->start, *fr = f + (size_t)r * sh->len;
			if (to_global)
				memcpy(gr, fr, (size_t)sh->len * FL);
			else
				memcpy(fr, gr, (size_t)sh->len * FL);
		}
		return;
	}
	size_t o = ti.axis == 0 ? (size_t)sh->start * ti.cols : 0;
	if (to_global)
		memcpy(g + o, f, sh->count * FL);
	else
		memcpy(f, g + o, sh->count * FL);
}

/* A device's full-length moment array, assembled from its DP group's
 * ZeRO-1 slices (or its own array without ZeRO-1). */
static void moments_full(const sl_train *tr, const struct dstate *ds, int which, float *out)
{
	if (!tr->l.zero1) {
		memcpy(out, which ? ds->V : ds->M, ds->n * FL);
		return;
	}
	for (int q = 0; q < tr->l.dp; q++) {
		const struct dstate *o = &tr->dev[ds->dpg->ranks[q]];
		memcpy(out + o->opt_lo, which ? o->V : o->M, (o->opt_hi - o->opt_lo) * FL);
	}
}

int sl_train_gather(const sl_train *tr, float *params, float *mom, float *var)
{
	if (!tr->values)
		return SL_EINVAL;
	float *tmp = NULL;
	for (int i = 0; i < tr->ndev; i++) {
		const struct dstate *ds = &tr->dev[i];
		if (ds->dp != 0)
			continue;
		if ((mom || var) && !(tmp = realloc(tmp, (ds->n ? ds->n : 1) * FL)))
			return SL_ENOMEM;
		for (int w = 0; w < 3; w++) {
			float *dst = w == 0 ? params : w == 1 ? mom : var;
			if (!dst)
				continue;
			float *src = ds->P;
			if (w > 0) {
				moments_full(tr, ds, w - 1, tmp);
				src = tmp;
			}
			for (int s = 0; s < ds->nshards; s++)
				if (ds->shards[s].primary)
					shard_copy(&tr->m, &ds->shards[s], src, dst, 1);
		}
	}
	free(tmp);
	return SL_OK;
}

int sl_train_scatter(sl_train *tr, const float *params, const float *mom, const float *var)
{
	if (!tr->values)
		return SL_EINVAL;
	float *tmp = NULL;
	for (int i = 0; i < tr->ndev; i++) {
		struct dstate *ds = &tr->dev[i];
		if (params)
			for (int s = 0; s < ds->nshards; s++)
				shard_copy(&tr->m, &ds->shards[s], ds->P, (float *)params, 0);
		memset(ds->G, 0, ds->n * FL);
		for (int w = 0; w < 2; w++) {
			const float *src = w ? var : mom;
			float *dst = w ? ds->V : ds->M;
			size_t no = ds->opt_hi - ds->opt_lo;
			if (!src) {
				if (params)
					memset(dst, 0, no * FL);
				continue;
			}
			if (!(tmp = realloc(tmp, (ds->n ? ds->n : 1) * FL)))
				return SL_ENOMEM;
			for (int s = 0; s < ds->nshards; s++)
				shard_copy(&tr->m, &ds->shards[s], tmp, (float *)src, 0);
			memcpy(dst, tmp + ds->opt_lo, no * FL);
		}
	}
	free(tmp);
	return SL_OK;
}

/* ---- one run ---- */

struct bstash {
	float *xa, *qkv, *p, *o; /* attention: input, Q K V, probabilities, heads' outputs */
	float *xm, *z, *a;       /* MLP: input, fc1 output, GeLU output */
};

struct cstash {
	struct bstash *b;
	float *dyl; /* the loss gradient, on the last chunk */
};

struct alloc {
	float *p;
	size_t bytes;
	int cat;
};

enum { CAT_ACT, CAT_WS };

struct drun {
	struct cstash *st;  /* m * v */
	struct bstash *bst; /* backing store of st[].b */
	struct alloc *live; /* every buffer held, so a failed run frees them all */
	int nlive, caplive;
	uint64_t act_cur, act_peak, ws_cur, ws_peak;
	uint64_t live_cur, live_peak; /* both together: what the engine's peak adds up */
	uint64_t sent[SL_TR_NKINDS], recv[SL_TR_NKINDS];
	uint64_t reserved;
	uintptr_t handles;  /* timing-only and recording: buffers handed out */
	double *loss;       /* per step: this device's sum of squared errors */
	/* per step */
	double *t0, *pipe_end, *pipe_busy, *t_end, *compute, *comm, *flops;
};

struct run {
	sl_train *tr;
	sl_cluster *c;
	int steps;
	double clk[SL_MAX_DEVICES];
	struct drun dr[SL_MAX_DEVICES];
};

/* A message of the pipeline: peer, size, which tensor, and its buffer. */
struct pmsg {
	int peer;
	size_t n;
	int key;
	float *buf;
};

#define MAX_UNIT_MSGS 4

/* The recording of one device's step, which the prediction replays: the
 * same step functions run with no device and append what they would do. */
enum { PO_COMPUTE, PO_COLL, PO_XFER, PO_PIPE_END, PO_BARRIER, PO_ACTION };

struct pop {
	int type;
	double flops;          /* PO_COMPUTE */
	sl_coll_op op;         /* PO_COLL: the collective, its group, kind and size */
	int dp_group;
	sl_traffic_kind kind;
	size_t count;
	int rows;              /* > 0: blocks of whole rows of h (sequence parallelism) */
	int m0, ns, nr;        /* PO_XFER: its sends msg[m0..m0+ns), then its receives */
	int tm;                /* PO_ACTION: the template it runs */
};

/* A message of a recorded exchange: the peer by its pipeline stage (it
 * has the same TP and DP ranks), so a recording holds for any mesh order. */
struct xmsg {
	int stage, key;
	size_t n;
};

struct plist {
	struct pop *op;
	int n, cap;
	struct xmsg *msg;
	int nmsg, capmsg;
};

/* Every micro-batch of one shape does the same work in a chunk: the
 * forward (or backward) of chunk c for micro-batches of nb sequences is
 * recorded once, alone, as a template: its computes and collectives, and
 * what it does to the memory held (by category: activations, workspace,
 * and both), measured from its start with its input buffer held. */
enum { MEM_ACT, MEM_WS, MEM_LIVE };

struct tmpl {
	int bwd, chunk, nb;
	struct plist pl;
	int64_t net[3];   /* held at its end, less at its start */
	uint64_t up[3];   /* the most held above the start at any point */
	size_t out;       /* floats of the buffer it hands on (workspace), 0: none */
	double flops;
};

struct tstore {
	struct tmpl *t;
	int n, cap;
};

struct kctx {
	sl_dev *d;        /* NULL: record the work into pl instead of doing it */
	struct plist *pl;
	struct tstore *ts; /* recording with templates (NULL: every micro-batch in full) */
	double times;     /* recording: how many identical copies the next GEMMs stand for */
	const sl_train *tr;
	struct dstate *ds;
	struct drun *dr;
	int measured;
	int dry;          /* timing-only cluster: account everything, compute nothing */
	long step;        /* the batch index */
	int ks;           /* the step's index in this run */
	sl_err *err;
};

static int pl_push(struct plist *pl, const struct pop *o)
{
	if (pl->n == pl->cap) {
		int cap = pl->cap ? pl->cap * 2 : 64;
		struct pop *p = realloc(pl->op, (size_t)cap * sizeof *p);
		if (!p)
			return SL_ENOMEM;
		pl->op = p;
		pl->cap = cap;
	}
	pl->op[pl->n++] = *o;
	return SL_OK;
}

static int pl_msg(struct plist *pl, const sl_layout *l, const struct pmsg *m)
{
	int tp, pp, dp;
	sl_mesh_coords(l, m->peer, &tp, &pp, &dp);
	if (pl->nmsg == pl->capmsg) {
		int cap = pl->capmsg ? pl->capmsg * 2 : 64;
		struct xmsg *p = realloc(pl->msg, (size_t)cap * sizeof *p);
		if (!p)
			return SL_ENOMEM;
		pl->msg = p;
		pl->capmsg = cap;
	}
	pl->msg[pl->nmsg++] = (struct xmsg){pp, m->key, m->n};
	return SL_OK;
}

static int rec_op(struct kctx *k, const struct pop *o)
{
	return pl_push(k->pl, o) ? sl_fail(k->err, SL_ENOMEM, "out of host memory") : SL_OK;
}

static int rec_mark(struct kctx *k, int type)
{
	struct pop o;
	memset(&o, 0, sizeof o);
	o.type = type;
	return rec_op(k, &o);
}

/* Back-to-back compute is one piece: the clock adds it up the same way. */
static int rec_compute(struct kctx *k, double flops)
{
	struct plist *pl = k->pl;
	if (pl->n > 0 && pl->op[pl->n - 1].type == PO_COMPUTE) {
		pl->op[pl->n - 1].flops += flops;
		return SL_OK;
	}
	struct pop o;
	memset(&o, 0, sizeof o);
	o.type = PO_COMPUTE;
	o.flops = flops;
	return rec_op(k, &o);
}

static int k_gemm(struct kctx *k, int ta, int tb, int M, int N, int K, float alpha, const float *a,
		  size_t ao, int lda, const float *b, size_t bo, int ldb, float beta, float *c, size_t co,
		  int ldc, const char *label)
{
	if (!k->d)
		return rec_compute(k, 2.0 * M * N * K * k->times);
	if (k->dry)
		return sl_dev_sgemm(k->d, ta, tb, M, N, K, alpha, NULL, lda, NULL, ldb, beta, NULL, ldc,
				    label, k->err);
	return sl_dev_sgemm(k->d, ta, tb, M, N, K, alpha, a + ao, lda, b + bo, ldb, beta, c + co, ldc,
			    label, k->err);
}

static void mem_track(struct drun *dr, int64_t bytes, int cat)
{
	uint64_t *cur = cat == CAT_ACT ? &dr->act_cur : &dr->ws_cur;
	uint64_t *peak = cat == CAT_ACT ? &dr->act_peak : &dr->ws_peak;
	*cur = (uint64_t)((int64_t)*cur + bytes);
	if (*cur > *peak)
		*peak = *cur;
	dr->live_cur = (uint64_t)((int64_t)dr->live_cur + bytes);
	if (dr->live_cur > dr->live_peak)
		dr->live_peak = dr->live_cur;
}

static int k_alloc(struct kctx *k, float **out, size_t nf, int cat, const char *what)
{
	*out = NULL;
	struct drun *dr = k->dr;
	if (dr->nlive == dr->caplive) {
		int cap = dr->caplive ? dr->caplive * 2 : 64;
		struct alloc *p = realloc(dr->live, (size_t)cap * sizeof *p);
		if (!p)
			return sl_fail(k->err, SL_ENOMEM, "out of host memory");
		dr->live = p;
		dr->caplive = cap;
	}
	size_t bytes = nf * FL;
	if (!k->d || k->dry) {
		/* A handle, never read: the step's control flow only asks which
		 * buffer goes where and whether one exists. */
		int rc = k->d ? sl_dev_reserve(k->d, bytes, what, k->err) : SL_OK;
		if (rc)
			return rc;
		*out = (float *)(++dr->handles << 4);
	} else if (!(*out = sl_dev_alloc(k->d, bytes, what, k->err))) {
		return k->err->code ? k->err->code : SL_ENOMEM;
	}
	dr->live[dr->nlive++] = (struct alloc){*out, bytes, cat};
	mem_track(dr, (int64_t)bytes, cat);
	return SL_OK;
}

static void drop(struct kctx *k, const struct alloc *a)
{
	if (!k->d)
		return;
	if (k->dry)
		sl_dev_release(k->d, a->bytes);
	else
		sl_dev_free(k->d, a->p, a->bytes);
}

static struct alloc *find_live(struct drun *dr, const float *p)
{
	for (int i = dr->nlive - 1; i >= 0; i--)
		if (dr->live[i].p == p)
			return &dr->live[i];
	return NULL;
}

static void k_free(struct kctx *k, float **p)
{
	if (*p) {
		struct drun *dr = k->dr;
		struct alloc *a = find_live(dr, *p);
		if (a) {
			drop(k, a);
			mem_track(dr, -(int64_t)a->bytes, a->cat);
			*a = dr->live[--dr->nlive];
		}
	}
	*p = NULL;
}

/* A buffer changes category: workspace kept for the backward pass, or back. */
static void k_recat(struct kctx *k, float *p, int cat)
{
	if (!p)
		return;
	struct alloc *a = find_live(k->dr, p);
	if (a && a->cat != cat) {
		mem_track(k->dr, -(int64_t)a->bytes, a->cat);
		mem_track(k->dr, (int64_t)a->bytes, cat);
		a->cat = cat;
	}
}

static void free_all(struct kctx *k)
{
	struct drun *dr = k->dr;
	while (dr->nlive > 0) {
		struct alloc a = dr->live[--dr->nlive];
		drop(k, &a);
		mem_track(dr, -(int64_t)a.bytes, a.cat);
	}
}

static int k_coll(struct kctx *k, sl_traffic_kind kind, const sl_group *g, sl_coll_op op, float *buf,
		  size_t off, size_t count, const size_t *counts)
{
	if (g->n < 2)
		return SL_OK;
	if (!k->d) {
		struct pop o;
		memset(&o, 0, sizeof o);
		o.type = PO_COLL;
		o.op = op;
		o.dp_group = g == k->ds->dpg;
		o.kind = kind;
		o.count = count;
		/* Uneven blocks only come from sequence parallelism, which deals
		 * whole rows of h values (mb_geo). */
		o.rows = counts ? (int)(count / (size_t)k->tr->m.hidden) : 0;
		return rec_op(k, &o);
	}
	sl_cluster *c = sl_dev_cluster(k->d);
	int id = sl_dev_id(k->d);
	sl_dev_stats a = sl_cluster_dev_stats(c, id);
	sl_algo algo = k->tr->l.algo;
	float *b = k->dry ? NULL : buf + off;
	int rc;
	switch (op) {
	case SL_COLL_ALLREDUCE:
		rc = sl_allreduce(k->d, g, b, count, algo, k->err);
		break;
	case SL_COLL_ALLGATHER:
		rc = sl_allgather(k->d, g, b, count, counts, algo, k->err);
		break;
	case SL_COLL_REDUCESCATTER:
		rc = sl_reducescatter(k->d, g, b, count, counts, algo, k->err);
		break;
	default:
		return sl_fail(k->err, SL_EINVAL, "unexpected collective");
	}
	sl_dev_stats z = sl_cluster_dev_stats(c, id);
	k->dr->sent[kind] += z.bytes_sent - a.bytes_sent;
	k->dr->recv[kind] += z.bytes_received - a.bytes_received;
	return rc;
}

/* ---- element-wise work: done and (in measured timing) charged on a
 * device, skipped when recording ---- */

static int ew_done(struct kctx *k, double mark, const char *label)
{
	return k->measured ? sl_dev_compute(k->d, 0, mark, label, k->err) : SL_OK;
}

#define EW_BEGIN                                                                                  \
	if (!k->d || k->dry)                                                                      \
		return SL_OK;                                                                     \
	double mark = sl_dev_cpu_mark()

/* y[rows x cols] += b (broadcast over rows) */
static int ew_bias(struct kctx *k, float *y, size_t rows, size_t cols, const float *b)
{
	EW_BEGIN;
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j++)
			y[i * cols + j] += b[j];
	return ew_done(k, mark, "bias");
}

static int ew_add(struct kctx *k, float *y, const float *x, size_t n, const char *label)
{
	EW_BEGIN;
	for (size_t i = 0; i < n; i++)
		y[i] += x[i];
	return ew_done(k, mark, label);
}

static int ew_copy(struct kctx *k, float *dst, size_t doff, const float *src, size_t soff, size_t n)
{
	EW_BEGIN;
	memcpy(dst + doff, src + soff, n * FL);
	return ew_done(k, mark, "copy");
}

static int ew_colsum(struct kctx *k, float *g, const float *dy, size_t rows, size_t cols)
{
	EW_BEGIN;
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j++)
			g[j] += dy[i * cols + j];
	return ew_done(k, mark, "bias grad");
}

static int ew_gelu(struct kctx *k, const float *z, float *a, size_t n)
{
	EW_BEGIN;
	sl_gelu(z, a, n);
	return ew_done(k, mark, "gelu");
}

static int ew_gelu_grad(struct kctx *k, const float *z, float *da, size_t n)
{
	EW_BEGIN;
	sl_gelu_grad(z, da, da, n);
	return ew_done(k, mark, "gelu grad");
}

static int ew_softmax(struct kctx *k, float *p, size_t off, int s)
{
	EW_BEGIN;
	sl_softmax_rows(p + off, s, s, s);
	return ew_done(k, mark, "softmax");
}

static int ew_softmax_grad(struct kctx *k, const float *p, size_t off, float *dp, int s, float scale)
{
	EW_BEGIN;
	sl_softmax_grad_rows(p + off, dp, s, s, s, scale);
	return ew_done(k, mark, "softmax grad");
}

/* ---- a micro-batch's shape on this device ---- */

struct mbgeo {
	int nb;        /* sequences */
	long row0;     /* its first row (token) in the global batch */
	int r;         /* rows */
	int sp;        /* sequence parallel: the residual stream is split by rows */
	int r0, rl;    /* the rows of the residual stream this device holds */
	size_t cnt[SL_MAX_DEVICES]; /* sequence parallel: rows*h of every TP rank */
};

static void mb_geo(const struct kctx *k, int mb, struct mbgeo *g)
{
	const sl_model_spec *m = &k->tr->m;
	const sl_layout *l = &k->tr->l;
	int first, count;
	sl_layout_microbatch(m, l, k->ds->dp, mb, &first, &count);
	g->nb = count;
	g->r = count * m->seq;
	g->row0 = (long)first * m->seq;
	g->sp = l->seq_parallel && l->tp > 1;
	if (g->sp) {
		size_t off[SL_MAX_DEVICES + 1];
		sl_block_offsets((size_t)g->r, l->tp, NULL, off);
		for (int i = 0; i < l->tp; i++)
			g->cnt[i] = (off[i + 1] - off[i]) * (size_t)m->hidden;
		g->r0 = (int)off[k->ds->tp];
		g->rl = (int)(off[k->ds->tp + 1] - off[k->ds->tp]);
	} else {
		g->r0 = 0;
		g->rl = g->r;
	}
}

/* Events are named on a device; a recording has none to name. */
#define LABEL(...) (k->d ? (void)snprintf(lb, sizeof lb, __VA_ARGS__) : (void)0)

#define TRY(x)                                                                                    \
	do {                                                                                      \
		int rc_ = (x);                                                                    \
		if (rc_)                                                                          \
			return rc_;                                                               \
	} while (0)

/* The input of a sub-block as the whole micro-batch: with sequence
 * parallelism the gathered rows (a new buffer, kept for backward), else x
 * itself (which becomes an activation). */
static int gather_input(struct kctx *k, const struct mbgeo *g, float *x, float **full)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (!g->sp) {
		*full = x;
		k_recat(k, x, CAT_ACT);
		return SL_OK;
	}
	TRY(k_alloc(k, full, n, CAT_ACT, "activations (gathered input)"));
	TRY(ew_copy(k, *full, (size_t)g->r0 * h, x, 0, (size_t)g->rl * h));
	return k_coll(k, SL_TR_TP_ALLGATHER, k->ds->tpg, SL_COLL_ALLGATHER, *full, 0, n, g->cnt);
}

/* The row-parallel product's partial sums yf (r x h) become the sub-block's
 * output: reduced over the TP group, plus bias, plus the residual x.  *y is
 * yf itself or (sequence parallel) the device's rows of it. */
static int reduce_output(struct kctx *k, const struct mbgeo *g, float *yf, const float *bias,
			 const float *x, float **y)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (g->sp) {
		TRY(k_coll(k, SL_TR_TP_REDUCESCATTER, k->ds->tpg, SL_COLL_REDUCESCATTER, yf, 0, n,
			   g->cnt));
		TRY(k_alloc(k, y, (size_t)g->rl * h, CAT_WS, "sub-block output"));
		TRY(ew_copy(k, *y, 0, yf, (size_t)g->r0 * h, (size_t)g->rl * h));
		k_free(k, &yf);
	} else {
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, k->ds->tpg, SL_COLL_ALLREDUCE, yf, 0, n, NULL));
		*y = yf;
	}
	TRY(ew_bias(k, *y, (size_t)g->rl, h, bias));
	return ew_add(k, *y, x, (size_t)g->rl * h, "residual");
}

/* Backward counterpart: dy (the device's rows) as the whole micro-batch. */
static int gather_grad(struct kctx *k, const struct mbgeo *g, float *dy, float **full)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (!g->sp) {
		*full = dy;
		return SL_OK;
	}
	TRY(k_alloc(k, full, n, CAT_WS, "gathered output gradient"));
	TRY(ew_copy(k, *full, (size_t)g->r0 * h, dy, 0, (size_t)g->rl * h));
	return k_coll(k, SL_TR_TP_ALLGATHER, k->ds->tpg, SL_COLL_ALLGATHER, *full, 0, n, g->cnt);
}

/* dxp (r x h partial input gradients) reduced over the TP group, plus the
 * residual's dy, becomes *dx; dy and the gathered copy are freed. */
static int reduce_grad(struct kctx *k, const struct mbgeo *g, float *dxp, float *dy, float *dyf,
		       float **dx)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (g->sp) {
		k_free(k, &dyf);
		TRY(k_coll(k, SL_TR_TP_REDUCESCATTER, k->ds->tpg, SL_COLL_REDUCESCATTER, dxp, 0, n,
			   g->cnt));
		TRY(k_alloc(k, dx, (size_t)g->rl * h, CAT_WS, "input gradient"));
		TRY(ew_copy(k, *dx, 0, dxp, (size_t)g->r0 * h, (size_t)g->rl * h));
		k_free(k, &dxp);
	} else {
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, k->ds->tpg, SL_COLL_ALLREDUCE, dxp, 0, n, NULL));
		*dx = dxp;
	}
	TRY(ew_add(k, *dx, dy, (size_t)g->rl * h, "residual grad"));
	k_free(k, &dy);
	return SL_OK;
}

static const float *par(const struct kctx *k, const struct blk *b, int kind)
{
	return k->d && !k->dry ? k->ds->P + b->w[kind] : NULL;
}

static float *grd(const struct kctx *k, const struct blk *b, int kind)
{
	return k->d && !k->dry ? k->ds->G + b->w[kind] : NULL;
}

static int mlp_fwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
		   float **xio)
{
	int h = k->tr->m.hidden, r = g->r, ft = b->ft;
	float *x = *xio, *yf = NULL;
	char lb[40];
	*xio = NULL;
	TRY(gather_input(k, g, x, &st->xm));
	TRY(k_alloc(k, &st->z, (size_t)r * ft, CAT_ACT, "activations (fc1 output)"));
	LABEL("F b%d fc1", b->index);
	TRY(k_gemm(k, 0, 0, r, ft, h, 1, st->xm, 0, h, par(k, b, SL_T_FC1_W), 0, ft, 0, st->z, 0, ft,
		   lb));
	TRY(ew_bias(k, st->z, (size_t)r, (size_t)ft, par(k, b, SL_T_FC1_B)));
	TRY(k_alloc(k, &st->a, (size_t)r * ft, CAT_ACT, "activations (GeLU output)"));
	TRY(ew_gelu(k, st->z, st->a, (size_t)r * ft));
	TRY(k_alloc(k, &yf, (size_t)r * h, CAT_WS, "fc2 partial sums"));
	LABEL("F b%d fc2", b->index);
	TRY(k_gemm(k, 0, 0, r, h, ft, 1, st->a, 0, ft, par(k, b, SL_T_FC2_W), 0, h, 0, yf, 0, h, lb));
	TRY(reduce_output(k, g, yf, par(k, b, SL_T_FC2_B), x, xio));
	if (g->sp)
		k_free(k, &x);
	return SL_OK;
}

static int mlp_bwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
		   float **dio)
{
	int h = k->tr->m.hidden, r = g->r, ft = b->ft;
	float *dy = *dio, *dyf = NULL, *da = NULL, *dxp = NULL;
	char lb[40];
	*dio = NULL;
	TRY(gather_grad(k, g, dy, &dyf));
	TRY(ew_colsum(k, grd(k, b, SL_T_FC2_B), dy, (size_t)g->rl, (size_t)h));
	LABEL("B b%d fc2 dW", b->index);
	TRY(k_gemm(k, 1, 0, ft, h, r, 1, st->a, 0, ft, dyf, 0, h, 1, grd(k, b, SL_T_FC2_W), 0, h, lb));
	TRY(k_alloc(k, &da, (size_t)r * ft, CAT_WS, "fc1 output gradient"));
	LABEL("B b%d fc2 dX", b->index);
	TRY(k_gemm(k, 0, 1, r, ft, h, 1, dyf, 0, h, par(k, b, SL_T_FC2_W), 0, h, 0, da, 0, ft, lb));
	TRY(ew_gelu_grad(k, st->z, da, (size_t)r * ft));
	TRY(ew_colsum(k, grd(k, b, SL_T_FC1_B), da, (size_t)r, (size_t)ft));
	LABEL("B b%d fc1 dW", b->index);
	TRY(k_gemm(k, 1, 0, h, ft, r, 1, st->xm, 0, h, da, 0, ft, 1, grd(k, b, SL_T_FC1_W), 0, ft, lb));
	TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "input gradient partial sums"));
	LABEL("B b%d fc1 dX", b->index);
	TRY(k_gemm(k, 0, 1, r, h, ft, 1, da, 0, ft, par(k, b, SL_T_FC1_W), 0, ft, 0, dxp, 0, h, lb));
	k_free(k, &da);
	k_free(k, &st->z);
	k_free(k, &st->a);
	k_free(k, &st->xm);
	return reduce_grad(k, g, dxp, dy, dyf, dio);
}

static int attn_fwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
		    float **xio)
{
	const sl_model_spec *m = &k->tr->m;
	int h = m->hidden, r = g->r, s = m->seq, d = h / m->heads, ah = b->ah, qc = b->qc;
	int oc = d * ah;
	float scale = 1.0f / sqrtf((float)d);
	float *x = *xio, *yf = NULL;
	char lb[40];
	*xio = NULL;
	TRY(gather_input(k, g, x, &st->xa));
	TRY(k_alloc(k, &st->qkv, (size_t)r * qc, CAT_ACT, "activations (Q, K, V)"));
	LABEL("F b%d qkv", b->index);
	TRY(k_gemm(k, 0, 0, r, qc, h, 1, st->xa, 0, h, par(k, b, SL_T_QKV_W), 0, qc, 0, st->qkv, 0, qc,
		   lb));
	TRY(k_alloc(k, &st->p, (size_t)g->nb * ah * s * s, CAT_ACT, "activations (attention probabilities)"));
	TRY(k_alloc(k, &st->o, (size_t)r * oc, CAT_ACT, "activations (heads' outputs)"));
	/* Recording, every head of every sequence is the same work: one stands
	 * for all. */
	int nseq = k->d ? g->nb : 1, nhead = k->d ? ah : 1;
	k->times = k->d ? 1 : (double)g->nb * ah;
	for (int n = 0; n < nseq; n++)
		for (int j = 0; j < nhead; j++) {
			size_t q = (size_t)n * s * qc + (size_t)j * 3 * d, po = ((size_t)n * ah + j) * s * s;
			LABEL("F b%d scores h%d", b->index, j);
			TRY(k_gemm(k, 0, 1, s, s, d, scale, st->qkv, q, qc, st->qkv, q + d, qc, 0, st->p, po,
				   s, lb));
			TRY(ew_softmax(k, st->p, po, s));
			LABEL("F b%d PV h%d", b->index, j);
			TRY(k_gemm(k, 0, 0, s, d, s, 1, st->p, po, s, st->qkv, q + 2 * d, qc, 0, st->o,
				   (size_t)n * s * oc + (size_t)j * d, oc, lb));
		}
	k->times = 1;
	TRY(k_alloc(k, &yf, (size_t)r * h, CAT_WS, "projection partial sums"));
	LABEL("F b%d proj", b->index);
	TRY(k_gemm(k, 0, 0, r, h, oc, 1, st->o, 0, oc, par(k, b, SL_T_OUT_W), 0, h, 0, yf, 0, h, lb));
	TRY(reduce_output(k, g, yf, par(k, b, SL_T_OUT_B), x, xio));
	if (g->sp)
		k_free(k, &x);
	return SL_OK;
}

static int attn_bwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
		    float **dio)
{
	const sl_model_spec *m = &k->tr->m;
	int h = m->hidden, r = g->r, s = m->seq, d = h / m->heads, ah = b->ah, qc = b->qc;
	int oc = d * ah;
	float scale = 1.0f / sqrtf((float)d);
	float *dy = *dio, *dyf = NULL, *dO = NULL, *dqkv = NULL, *dp = NULL, *dxp = NULL;
	char lb[40];
	*dio = NULL;
	TRY(gather_grad(k, g, dy, &dyf));
	TRY(ew_colsum(k, grd(k, b, SL_T_OUT_B), dy, (size_t)g->rl, (size_t)h));
	LABEL("B b%d proj dW", b->index);
	TRY(k_gemm(k, 1, 0, oc, h, r, 1, st->o, 0, oc, dyf, 0, h, 1, grd(k, b, SL_T_OUT_W), 0, h, lb));
	TRY(k_alloc(k, &dO, (size_t)r * oc, CAT_WS, "heads' output gradient"));
	LABEL("B b%d proj dX", b->index);
	TRY(k_gemm(k, 0, 1, r, oc, h, 1, dyf, 0, h, par(k, b, SL_T_OUT_W), 0, h, 0, dO, 0, oc, lb));
	TRY(k_alloc(k, &dqkv, (size_t)r * qc, CAT_WS, "Q, K, V gradient"));
	TRY(k_alloc(k, &dp, (size_t)s * s, CAT_WS, "attention score gradient"));
	int nseq = k->d ? g->nb : 1, nhead = k->d ? ah : 1;
	k->times = k->d ? 1 : (double)g->nb * ah;
	for (int n = 0; n < nseq; n++)
		for (int j = 0; j < nhead; j++) {
			size_t q = (size_t)n * s * qc + (size_t)j * 3 * d, po = ((size_t)n * ah + j) * s * s;
			size_t oo = (size_t)n * s * oc + (size_t)j * d;
			LABEL("B b%d dP h%d", b->index, j);
			TRY(k_gemm(k, 0, 1, s, s, d, 1, dO, oo, oc, st->qkv, q + 2 * d, qc, 0, dp, 0, s, lb));
			LABEL("B b%d dV h%d", b->index, j);
			TRY(k_gemm(k, 1, 0, s, d, s, 1, st->p, po, s, dO, oo, oc, 0, dqkv, q + 2 * d, qc, lb));
			TRY(ew_softmax_grad(k, st->p, po, dp, s, scale));
			LABEL("B b%d dQ h%d", b->index, j);
			TRY(k_gemm(k, 0, 0, s, d, s, 1, dp, 0, s, st->qkv, q + d, qc, 0, dqkv, q, qc, lb));
			LABEL("B b%d dK h%d", b->index, j);
			TRY(k_gemm(k, 1, 0, s, d, s, 1, dp, 0, s, st->qkv, q, qc, 0, dqkv, q + d, qc, lb));
		}
	k->times = 1;
	k_free(k, &dp);
	k_free(k, &dO);
	LABEL("B b%d qkv dW", b->index);
	TRY(k_gemm(k, 1, 0, h, qc, r, 1, st->xa, 0, h, dqkv, 0, qc, 1, grd(k, b, SL_T_QKV_W), 0, qc,
		   lb));
	TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "input gradient partial sums"));
	LABEL("B b%d qkv dX", b->index);
	TRY(k_gemm(k, 0, 1, r, h, qc, 1, dqkv, 0, qc, par(k, b, SL_T_QKV_W), 0, qc, 0, dxp, 0, h, lb));
	k_free(k, &dqkv);
	k_free(k, &st->xa);
	k_free(k, &st->qkv);
	k_free(k, &st->p);
	k_free(k, &st->o);
	return reduce_grad(k, g, dxp, dy, dyf, dio);
}

static int is_last_chunk(const struct kctx *k, int c)
{
	return c * k->tr->l.pp + k->ds->pp == k->tr->nchunks - 1;
}

/* The loss on the last chunk: its sum of squared errors goes to the step's
 * loss, its gradient is kept for the backward pass. */
static int loss_fwd(struct kctx *k, const struct mbgeo *g, float *y, struct cstash *cs)
{
	const sl_model_spec *m = &k->tr->m;
	size_t h = (size_t)m->hidden, n = (size_t)g->rl * h;
	float *tgt = NULL;
	TRY(k_alloc(k, &tgt, n, CAT_WS, "targets"));
	TRY(k_alloc(k, &cs->dyl, n, CAT_ACT, "activations (loss gradient)"));
	if (!k->d || k->dry) {
		k_free(k, &tgt);
		return SL_OK;
	}
	/* The data loader works on the host; only the targets land on the device. */
	float *xs = malloc((n ? n : 1) * FL);
	if (!xs)
		return sl_fail(k->err, SL_ENOMEM, "out of host memory");
	sl_model_data(m, k->step, g->row0 + g->r0, g->rl, xs, tgt);
	free(xs);
	double mark = sl_dev_cpu_mark();
	double sum = 0, norm = (double)m->batch * m->seq * h;
	for (size_t i = 0; i < n; i++) {
		double e = (double)y[i] - tgt[i];
		sum += e * e;
		cs->dyl[i] = (float)(2.0 * e / norm);
	}
	/* Without sequence parallelism every TP rank holds the same output:
	 * count it once. */
	if (g->sp || k->ds->tp == 0)
		k->dr->loss[k->ks] += sum;
	k_free(k, &tgt);
	return ew_done(k, mark, "loss");
}

static int chunk_fwd(struct kctx *k, int c, int mb, float **xio, struct cstash *cs)
{
	struct dstate *ds = k->ds;
	struct mbgeo g;
	mb_geo(k, mb, &g);
	for (int i = ds->cfirst[c]; i < ds->cfirst[c + 1]; i++) {
		struct bstash *bs = &cs->b[i - ds->cfirst[c]];
		if (k->tr->m.heads > 0)
			TRY(attn_fwd(k, &ds->blk[i], &g, bs, xio));
		TRY(mlp_fwd(k, &ds->blk[i], &g, bs, xio));
	}
	if (is_last_chunk(k, c)) {
		TRY(loss_fwd(k, &g, *xio, cs));
		k_free(k, xio);
	}
	return SL_OK;
}

static int chunk_bwd(struct kctx *k, int c, int mb, float **dio, struct cstash *cs)
{
	struct dstate *ds = k->ds;
	struct mbgeo g;
	mb_geo(k, mb, &g);
	if (is_last_chunk(k, c)) {
		*dio = cs->dyl;
		cs->dyl = NULL;
		k_recat(k, *dio, CAT_WS);
	}
	for (int i = ds->cfirst[c + 1] - 1; i >= ds->cfirst[c]; i--) {
		struct bstash *bs = &cs->b[i - ds->cfirst[c]];
		TRY(mlp_bwd(k, &ds->blk[i], &g, bs, dio));
		if (k->tr->m.heads > 0)
			TRY(attn_bwd(k, &ds->blk[i], &g, bs, dio));
	}
	if (c == 0 && ds->pp == 0)
		k_free(k, dio);
	return SL_OK;
}

/* The device a chunk's neighbour lives on (same TP and DP rank). */
static int chunk_dev(const struct kctx *k, int gchunk)
{
	return sl_mesh_device(&k->tr->l, k->ds->tp, gchunk % k->tr->l.pp, k->ds->dp);
}

/* Which tensor a message carries: the result of (direction, micro-batch,
 * global chunk).  The plan check compares them end to end. */
static int msg_key(const struct kctx *k, int bwd, int mb, int gchunk)
{
	return (bwd * k->tr->nchunks + gchunk) * k->tr->l.microbatches + mb;
}

/* What action a must receive first (peer -1: nothing). */
static struct pmsg action_input(const struct kctx *k, const sl_pp_action *a, size_t n)
{
	int g = a->chunk * k->tr->l.pp + k->ds->pp;
	struct pmsg m = {-1, n, -1, NULL};
	if (!a->bwd && g > 0)
		m.peer = chunk_dev(k, g - 1), m.key = msg_key(k, 0, a->mb, g - 1);
	if (a->bwd && g < k->tr->nchunks - 1)
		m.peer = chunk_dev(k, g + 1), m.key = msg_key(k, 1, a->mb, g + 1);
	return m;
}

/* Where action a's result goes (peer -1: nowhere). */
static struct pmsg action_output(const struct kctx *k, const sl_pp_action *a, size_t n)
{
	int g = a->chunk * k->tr->l.pp + k->ds->pp;
	struct pmsg m = {-1, n, msg_key(k, a->bwd, a->mb, g), NULL};
	if (!a->bwd && g < k->tr->nchunks - 1)
		m.peer = chunk_dev(k, g + 1);
	if (a->bwd && g > 0)
		m.peer = chunk_dev(k, g - 1);
	return m;
}

/* The actions from i up to the next exchange: one, or an F+B pair. */
static int unit_end(const struct dstate *ds, int i)
{
	int j = i + 1;
	while (j < ds->nacts && ds->acts[j].joined)
		j++;
	return j;
}

/* The engine has one channel per ordered pair, so an exchange carries at
 * most one message each way per peer: take the first not yet sent (and the
 * first not yet received) for every peer, in list order. */
static void next_round(const struct pmsg *s, int ns, int *sdone, const struct pmsg *r, int nr,
		       int *rdone, int *si, int *nsi, int *ri, int *nri)
{
	*nsi = *nri = 0;
	for (int i = 0; i < ns; i++) {
		int clash = 0;
		for (int j = 0; j < *nsi; j++)
			clash |= s[si[j]].peer == s[i].peer;
		if (!sdone[i] && !clash) {
			sdone[i] = 1;
			si[(*nsi)++] = i;
		}
	}
	for (int i = 0; i < nr; i++) {
		int clash = 0;
		for (int j = 0; j < *nri; j++)
			clash |= r[ri[j]].peer == r[i].peer;
		if (!rdone[i] && !clash) {
			rdone[i] = 1;
			ri[(*nri)++] = i;
		}
	}
}

static int exchange(struct kctx *k, const struct pmsg *s, int ns, const struct pmsg *r, int nr)
{
	int sdone[MAX_UNIT_MSGS] = {0}, rdone[MAX_UNIT_MSGS] = {0};
	int si[MAX_UNIT_MSGS], ri[MAX_UNIT_MSGS], nsi, nri;
	sl_cluster *c = k->d ? sl_dev_cluster(k->d) : NULL;
	int id = k->d ? sl_dev_id(k->d) : -1;
	for (;;) {
		next_round(s, ns, sdone, r, nr, rdone, si, &nsi, ri, &nri);
		if (nsi == 0 && nri == 0)
			return SL_OK;
		if (!k->d) {
			struct pop o;
			memset(&o, 0, sizeof o);
			o.type = PO_XFER;
			o.m0 = k->pl->nmsg;
			o.ns = nsi;
			o.nr = nri;
			int bad = 0;
			for (int i = 0; i < nsi; i++)
				bad |= pl_msg(k->pl, &k->tr->l, &s[si[i]]);
			for (int i = 0; i < nri; i++)
				bad |= pl_msg(k->pl, &k->tr->l, &r[ri[i]]);
			if (bad)
				return sl_fail(k->err, SL_ENOMEM, "out of host memory");
			TRY(rec_op(k, &o));
			continue;
		}
		sl_msg sm[MAX_UNIT_MSGS], rm[MAX_UNIT_MSGS];
		for (int i = 0; i < nsi; i++)
			sm[i] = sl_msg1(s[si[i]].peer, k->dry ? NULL : s[si[i]].buf, 0, s[si[i]].n * FL);
		for (int i = 0; i < nri; i++)
			rm[i] = sl_msg1(r[ri[i]].peer, k->dry ? NULL : r[ri[i]].buf, 0, r[ri[i]].n * FL);
		sl_dev_stats a = sl_cluster_dev_stats(c, id);
		int rc = sl_xfer(k->d, sm, nsi, rm, nri, SL_XCOPY, "pipeline p2p", k->err);
		sl_dev_stats z = sl_cluster_dev_stats(c, id);
		k->dr->sent[SL_TR_PP_SENDRECV] += z.bytes_sent - a.bytes_sent;
		k->dr->recv[SL_TR_PP_SENDRECV] += z.bytes_received - a.bytes_received;
		if (rc)
			return rc;
	}
}

static int op_id(const struct kctx *k, const sl_pp_action *a)
{
	const sl_layout *l = &k->tr->l;
	int per = 2 * l->microbatches * k->tr->v + 1;
	if (!a)
		return k->ks * per + per - 1;
	return k->ks * per + (a->bwd * k->tr->v + a->chunk) * l->microbatches + a->mb;
}

static size_t stream_floats(const struct kctx *k, int mb)
{
	struct mbgeo g;
	mb_geo(k, mb, &g);
	return (size_t)g.rl * k->tr->m.hidden;
}

/* ---- templates (recording) ---- */

static void mem_snapshot(const struct drun *dr, uint64_t cur[3])
{
	cur[MEM_ACT] = dr->act_cur;
	cur[MEM_WS] = dr->ws_cur;
	cur[MEM_LIVE] = dr->live_cur;
}

/* Record the forward and the backward of chunk c for micro-batch mb's
 * shape alone, as pipeline() runs them: the forward's input held (received
 * activations or the input batch), its output freed once sent; the
 * backward's input (a received gradient) held unless it is the last chunk
 * (the loss gradient, kept by the forward). */
static int build_tmpls(struct kctx *k, int c, int mb, int nb)
{
	struct tstore *ts = k->ts;
	if (ts->n + 2 > ts->cap) {
		int cap = ts->cap ? 2 * ts->cap : 8;
		struct tmpl *p = realloc(ts->t, (size_t)cap * sizeof *p);
		if (!p)
			return sl_fail(k->err, SL_ENOMEM, "out of host memory");
		ts->t = p;
		ts->cap = cap;
	}
	struct dstate *ds = k->ds;
	int nblk = ds->cfirst[c + 1] - ds->cfirst[c];
	struct bstash *bs = calloc((size_t)(nblk ? nblk : 1), sizeof *bs);
	if (!bs)
		return sl_fail(k->err, SL_ENOMEM, "out of host memory");
	struct cstash cs = {bs, NULL};
	struct drun dr;
	memset(&dr, 0, sizeof dr);
	struct kctx k2 = *k;
	k2.dr = &dr;
	k2.ts = NULL;
	size_t n = stream_floats(k, mb);
	int rc = SL_OK, g = c * k->tr->l.pp + ds->pp;
	for (int bwd = 0; bwd < 2 && rc == SL_OK; bwd++) {
		struct tmpl *t = &ts->t[ts->n + bwd];
		memset(t, 0, sizeof *t);
		t->bwd = bwd;
		t->chunk = c;
		t->nb = nb;
		k2.pl = &t->pl;
		float *x = NULL;
		if (!bwd || g < k->tr->nchunks - 1)
			rc = k_alloc(&k2, &x, n, CAT_WS, "input");
		uint64_t start[3];
		mem_snapshot(&dr, start);
		dr.act_peak = dr.act_cur;
		dr.ws_peak = dr.ws_cur;
		dr.live_peak = dr.live_cur;
		if (rc == SL_OK)
			rc = bwd ? chunk_bwd(&k2, c, mb, &x, &cs) : chunk_fwd(&k2, c, mb, &x, &cs);
		uint64_t end[3], peak[3] = {dr.act_peak, dr.ws_peak, dr.live_peak};
		mem_snapshot(&dr, end);
		for (int q = 0; q < 3; q++) {
			t->net[q] = (int64_t)end[q] - (int64_t)start[q];
			t->up[q] = peak[q] - start[q];
		}
		t->out = x ? n : 0;
		k_free(&k2, &x);
		for (int i = 0; i < t->pl.n; i++)
			if (t->pl.op[i].type == PO_COMPUTE)
				t->flops += t->pl.op[i].flops;
	}
	free_all(&k2);
	free(dr.live);
	free(bs);
	if (rc) {
		free(ts->t[ts->n].pl.op);
		free(ts->t[ts->n + 1].pl.op);
		return rc;
	}
	ts->n += 2;
	return SL_OK;
}

/* One action of the schedule: its chunk's forward or backward, or, when
 * recording with templates, its template's work and memory. */
static int run_action(struct kctx *k, const sl_pp_action *a, float **x, struct cstash *cs)
{
	if (k->d || !k->ts)
		return a->bwd ? chunk_bwd(k, a->chunk, a->mb, x, cs)
		              : chunk_fwd(k, a->chunk, a->mb, x, cs);
	struct mbgeo g;
	mb_geo(k, a->mb, &g);
	struct tstore *ts = k->ts;
	int ti = -1;
	for (int i = 0; i < ts->n && ti < 0; i++)
		if (ts->t[i].bwd == a->bwd && ts->t[i].chunk == a->chunk && ts->t[i].nb == g.nb)
			ti = i;
	if (ti < 0) {
		TRY(build_tmpls(k, a->chunk, a->mb, g.nb));
		ti = ts->n - 2 + a->bwd;
	}
	const struct tmpl *t = &ts->t[ti];
	struct drun *dr = k->dr;
	/* The input buffer's fate is in the template's figures. */
	if (*x) {
		struct alloc *al = find_live(dr, *x);
		if (al)
			*al = dr->live[--dr->nlive];
		*x = NULL;
	}
	uint64_t *cur[3] = {&dr->act_cur, &dr->ws_cur, &dr->live_cur};
	uint64_t *peak[3] = {&dr->act_peak, &dr->ws_peak, &dr->live_peak};
	for (int q = 0; q < 3; q++) {
		if (*cur[q] + t->up[q] > *peak[q])
			*peak[q] = *cur[q] + t->up[q];
		*cur[q] = (uint64_t)((int64_t)*cur[q] + t->net[q]);
	}
	if (t->out) {
		/* Its output is held already (net): only its handle is new. */
		TRY(k_alloc(k, x, 0, CAT_WS, "output"));
		find_live(dr, *x)->bytes = t->out * FL;
	}
	struct pop o;
	memset(&o, 0, sizeof o);
	o.type = PO_ACTION;
	o.tm = ti;
	o.flops = t->flops;
	return rec_op(k, &o);
}

/* The pipeline phase of a step: the schedule's actions, unit by unit.
 * Before a unit, one exchange sends the results still waiting and receives
 * what the unit needs, as Megatron-LM's send_forward_recv_backward and its
 * kin do; with rendezvous sends this is what keeps neighbours from waiting
 * on each other. */
static int pipeline(struct kctx *k)
{
	struct dstate *ds = k->ds;
	const sl_model_spec *m = &k->tr->m;
	int v = k->tr->v;
	struct pmsg pend[MAX_UNIT_MSGS] = {{0}};
	int npend = 0;
	for (int i = 0; i < ds->nacts;) {
		int j = unit_end(ds, i);
		struct pmsg in[MAX_UNIT_MSGS];
		int nin = 0;
		float *inbuf[MAX_UNIT_MSGS] = {NULL};
		if (k->d)
			sl_dev_set_op(k->d, op_id(k, &ds->acts[i]), ds->acts[i].mb);
		for (int u = i; u < j; u++) {
			struct pmsg msg = action_input(k, &ds->acts[u], stream_floats(k, ds->acts[u].mb));
			if (msg.peer < 0)
				continue;
			const char *what = ds->acts[u].bwd ? "received gradient" : "received activations";
			TRY(k_alloc(k, &msg.buf, msg.n, CAT_WS, what));
			inbuf[u - i] = msg.buf;
			in[nin++] = msg;
		}
		TRY(exchange(k, pend, npend, in, nin));
		for (int u = 0; u < npend; u++)
			k_free(k, &pend[u].buf);
		npend = 0;
		for (int u = i; u < j; u++) {
			const sl_pp_action *a = &ds->acts[u];
			struct cstash *cs = &k->dr->st[a->mb * v + a->chunk];
			float *x = inbuf[u - i];
			if (k->d)
				sl_dev_set_op(k->d, op_id(k, a), a->mb);
			if (!a->bwd && !x) {
				struct mbgeo g;
				mb_geo(k, a->mb, &g);
				TRY(k_alloc(k, &x, (size_t)g.rl * m->hidden, CAT_WS, "input batch"));
				if (k->d && !k->dry)
					sl_model_data(m, k->step, g.row0 + g.r0, g.rl, x, NULL);
			}
			TRY(run_action(k, a, &x, cs));
			if (x) {
				pend[npend] = action_output(k, a, stream_floats(k, a->mb));
				pend[npend++].buf = x;
			}
		}
		i = j;
	}
	TRY(exchange(k, pend, npend, NULL, 0));
	for (int u = 0; u < npend; u++)
		k_free(k, &pend[u].buf);
	return SL_OK;
}

/* After the pipeline: gradients made whole, then Adam on what this device
 * owns. */
static int sync_and_update(struct kctx *k)
{
	struct dstate *ds = k->ds;
	const sl_layout *l = &k->tr->l;
	float *G = k->d && !k->dry ? ds->G : NULL, *P = k->d && !k->dry ? ds->P : NULL;
	if (l->seq_parallel && ds->rep_n > 0)
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, ds->tpg, SL_COLL_ALLREDUCE, G, ds->rep_lo, ds->rep_n,
			   NULL));
	if (l->zero1)
		TRY(k_coll(k, SL_TR_DP_REDUCESCATTER, ds->dpg, SL_COLL_REDUCESCATTER, G, 0, ds->n,
			   NULL));
	else
		TRY(k_coll(k, SL_TR_DP_ALLREDUCE, ds->dpg, SL_COLL_ALLREDUCE, G, 0, ds->n, NULL));
	if (k->d && !k->dry) {
		double mark = sl_dev_cpu_mark();
		sl_adam(&k->tr->m, k->step + 1, ds->P + ds->opt_lo, ds->G + ds->opt_lo, ds->M, ds->V,
			ds->opt_hi - ds->opt_lo);
		TRY(ew_done(k, mark, "adam"));
	}
	if (l->zero1)
		TRY(k_coll(k, SL_TR_DP_ALLGATHER, ds->dpg, SL_COLL_ALLGATHER, P, 0, ds->n, NULL));
	return SL_OK;
}

/* Every device waits for the slowest: the step ends when all are done. */
static int step_barrier(struct kctx *k, struct run *R)
{
	int id = sl_dev_id(k->d);
	R->clk[id] = sl_dev_clock(k->d);
	if (sl_dev_wall_barrier(k->d))
		return sl_fail(k->err, SL_ECANCEL, "cancelled");
	double mx = 0;
	for (int i = 0; i < k->tr->ndev; i++)
		if (R->clk[i] > mx)
			mx = R->clk[i];
	if (sl_dev_wall_barrier(k->d))
		return sl_fail(k->err, SL_ECANCEL, "cancelled");
	sl_dev_wait_until(k->d, mx);
	return SL_OK;
}

static int one_step(struct kctx *k, struct run *R)
{
	struct dstate *ds = k->ds;
	struct drun *dr = k->dr;
	sl_cluster *c = sl_dev_cluster(k->d);
	int id = sl_dev_id(k->d), ks = k->ks;
	sl_dev_stats s0 = sl_cluster_dev_stats(c, id);
	dr->t0[ks] = sl_dev_clock(k->d);
	if (!k->dry)
		memset(ds->G, 0, ds->n * FL);
	TRY(pipeline(k));
	sl_dev_stats s1 = sl_cluster_dev_stats(c, id);
	dr->pipe_end[ks] = sl_dev_clock(k->d);
	dr->pipe_busy[ks] = (s1.compute_s + s1.comm_s) - (s0.compute_s + s0.comm_s);
	sl_dev_set_op(k->d, op_id(k, NULL), -1);
	TRY(sync_and_update(k));
	TRY(step_barrier(k, R));
	sl_dev_stats s2 = sl_cluster_dev_stats(c, id);
	dr->t_end[ks] = sl_dev_clock(k->d);
	dr->compute[ks] = s2.compute_s - s0.compute_s;
	dr->comm[ks] = s2.comm_s - s0.comm_s;
	dr->flops[ks] = s2.flops - s0.flops;
	return SL_OK;
}

static int reserve(struct kctx *k, uint64_t bytes, const char *what)
{
	TRY(sl_dev_reserve(k->d, bytes, what, k->err));
	k->dr->reserved += bytes;
	return SL_OK;
}

static int train_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct run *R = arg;
	int id = sl_dev_id(d);
	struct kctx k;
	memset(&k, 0, sizeof k);
	k.d = d;
	k.tr = R->tr;
	k.ds = &R->tr->dev[id];
	k.dr = &R->dr[id];
	k.err = err;
	k.measured = sl_cluster_config_of(R->c)->timing == SL_TIMING_MEASURED;
	k.dry = sl_cluster_config_of(R->c)->timing_only;
	struct dstate *ds = k.ds;
	int rc = SL_OK;
	if ((rc = reserve(&k, ds->n * FL, "its parameter array")) ||
	    (rc = reserve(&k, ds->n * FL, "its gradient array")) ||
	    (rc = reserve(&k, 2 * (ds->opt_hi - ds->opt_lo) * FL, "its Adam state")))
		goto out;
	for (int s = 0; s < R->steps && rc == SL_OK; s++) {
		k.ks = s;
		k.step = R->tr->step + s;
		rc = one_step(&k, R);
	}
out:
	free_all(&k);
	sl_dev_release(d, k.dr->reserved);
	return rc;
}

void sl_train_report_free(sl_train_report *r)
{
	free(r->losses);
	r->losses = NULL;
}

static void run_free(struct run *R)
{
	if (!R)
		return;
	for (int i = 0; i < SL_MAX_DEVICES; i++) {
		struct drun *dr = &R->dr[i];
		free(dr->st);
		free(dr->bst);
		free(dr->live);
		free(dr->loss);
		free(dr->t0);
	}
	free(R);
}

static int run_alloc(sl_train *tr, sl_cluster *c, int steps, struct run **out, sl_err *err)
{
	struct run *R = calloc(1, sizeof *R);
	*out = R;
	if (!R)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	R->tr = tr;
	R->c = c;
	R->steps = steps;
	int mv = tr->l.microbatches * tr->v;
	for (int i = 0; i < tr->ndev; i++) {
		struct drun *dr = &R->dr[i];
		int nb = tr->dev[i].cfirst[tr->v];
		dr->st = calloc((size_t)mv, sizeof *dr->st);
		dr->bst = calloc((size_t)tr->l.microbatches * (nb ? nb : 1), sizeof *dr->bst);
		dr->loss = calloc((size_t)steps, sizeof *dr->loss);
		dr->t0 = calloc((size_t)steps * 7, sizeof *dr->t0);
		if (!dr->st || !dr->bst || !dr->loss || !dr->t0)
			return sl_fail(err, SL_ENOMEM, "out of host memory");
		dr->pipe_end = dr->t0 + steps;
		dr->pipe_busy = dr->t0 + 2 * steps;
		dr->t_end = dr->t0 + 3 * steps;
		dr->compute = dr->t0 + 4 * steps;
		dr->comm = dr->t0 + 5 * steps;
		dr->flops = dr->t0 + 6 * steps;
		for (int mb = 0; mb < tr->l.microbatches; mb++)
			for (int ch = 0; ch < tr->v; ch++)
				dr->st[mb * tr->v + ch].b =
					dr->bst + (size_t)mb * nb + tr->dev[i].cfirst[ch];
	}
	return SL_OK;
}

int sl_train_run(sl_train *tr, sl_cluster *c, int steps, sl_train_report *rep, sl_err *err)
{
	memset(rep, 0, sizeof *rep);
	if (sl_cluster_devices(c) != tr->ndev)
		return sl_fail(err, SL_EINVAL, "the layout needs %d devices but the cluster has %d",
			       tr->ndev, sl_cluster_devices(c));
	if (steps < 1 || steps > 1000000)
		return sl_fail(err, SL_EINVAL, "--steps=%d is out of range (1 to 1000000)", steps);
	int dry = sl_cluster_config_of(c)->timing_only;
	if (!tr->values && !dry)
		return sl_fail(err, SL_EINVAL,
			       "a training state without values (timing only) runs only on a timing-only cluster");
	struct run *R;
	int rc = run_alloc(tr, c, steps, &R, err);
	if (rc == SL_OK)
		rc = sl_cluster_run(c, train_prog, R, err);
	if (rc) {
		run_free(R);
		return rc;
	}
	rep->steps = steps;
	rep->first_step = tr->step;
	rep->ndev = tr->ndev;
	rep->losses = calloc((size_t)steps, sizeof *rep->losses);
	if (!rep->losses) {
		run_free(R);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	const sl_model_spec *m = &tr->m;
	double norm = (double)m->batch * m->seq * m->hidden;
	double sum_step = 0, sum_pipe = 0, sum_ideal = 0, sum_idle = 0;
	for (int s = 0; s < steps; s++) {
		double sum = 0, pipe = 0, ideal = 0;
		double t0 = R->dr[0].t0[s], t1 = R->dr[0].t_end[s];
		for (int i = 0; i < tr->ndev; i++) {
			struct drun *dr = &R->dr[i];
			sum += dr->loss[s];
			if (dr->pipe_end[s] - t0 > pipe)
				pipe = dr->pipe_end[s] - t0;
			if (dr->pipe_busy[s] > ideal)
				ideal = dr->pipe_busy[s];
			sum_idle += (t1 - t0) - dr->compute[s] - dr->comm[s];
		}
		rep->losses[s] = dry ? NAN : sum / norm;
		sum_step += t1 - t0;
		sum_pipe += pipe;
		sum_ideal += ideal;
	}
	rep->step_s = sum_step / steps;
	rep->pipeline_s = sum_pipe / steps;
	rep->ideal_s = sum_ideal / steps;
	rep->bubble_fraction = sum_ideal > 0 ? (sum_pipe - sum_ideal) / sum_ideal : 0;
	if (rep->bubble_fraction < 0) /* rounding: the pipeline cannot beat its busiest device */
		rep->bubble_fraction = 0;
	rep->idle_fraction = sum_step > 0 ? sum_idle / (sum_step * tr->ndev) : 0;
	for (int i = 0; i < tr->ndev; i++) {
		struct drun *dr = &R->dr[i];
		struct dstate *ds = &tr->dev[i];
		sl_train_dev *o = &rep->dev[i];
		o->tp = ds->tp;
		o->pp = ds->pp;
		o->dp = ds->dp;
		o->params_bytes = ds->n * FL;
		o->grads_bytes = ds->n * FL;
		o->optimizer_bytes = 2 * (ds->opt_hi - ds->opt_lo) * FL;
		o->act_peak_bytes = dr->act_peak;
		o->workspace_peak_bytes = dr->ws_peak;
		o->mem_peak_bytes = sl_cluster_dev_stats(c, i).mem_peak;
		for (int s = 0; s < steps; s++) {
			o->compute_s += dr->compute[s] / steps;
			o->comm_s += dr->comm[s] / steps;
			o->flops += dr->flops[s] / steps;
			o->pipe_busy_s += dr->pipe_busy[s] / steps;
		}
		o->idle_s = rep->step_s - o->compute_s - o->comm_s;
		for (int kd = 0; kd < SL_TR_NKINDS; kd++) {
			o->sent[kd] = dr->sent[kd] / (uint64_t)steps;
			o->received[kd] = dr->recv[kd] / (uint64_t)steps;
		}
		rep->flops_per_step += o->flops;
	}
	tr->step += steps;
	run_free(R);
	return SL_OK;
}

int sl_train_single_step_s(const sl_model_spec *m, const sl_cluster_config *cfg, double *out,
			   int *estimated, sl_err *err)
{
	*estimated = 0;
	double flops = sl_model_step_flops(m);
	*out = flops / cfg->flops;
	if (cfg->timing == SL_TIMING_MODEL)
		return SL_OK;
	sl_cluster_config one = *cfg;
	one.devices = 1;
	one.devices_per_node = 0;
	one.slowdown = 0;
	sl_layout l;
	sl_layout_default(&l);
	sl_cluster *c = sl_cluster_create(&one, err);
	if (!c)
		return err ? err->code : SL_EINVAL;
	sl_train *tr = sl_train_create(m, &l, 1, err);
	int rc = tr ? SL_OK : (err ? err->code : SL_EINVAL);
	sl_train_report rep;
	if (rc == SL_OK)
		rc = sl_train_run(tr, c, 1, &rep, err);
	if (rc == SL_OK) {
		*out = rep.step_s;
		sl_train_report_free(&rep);
	} else if (rc == SL_EDEVMEM) {
		*estimated = 1;
		rc = SL_OK;
	}
	sl_train_destroy(tr);
	sl_cluster_destroy(c);
	return rc;
}

/* ---- the prediction ----
 *
 * A device's step is recorded by running the very step functions with no
 * device (record()): every GEMM's FLOPs, every collective, every exchange
 * and every buffer, in order.  The recordings are then replayed under the
 * engine's rules: a transfer starts at its sender's clock and lasts
 * a + n/B (a link is never busy then: both ends of an exchange wait for
 * all of its transfers, so the previous one on a link has always ended);
 * an exchange ends at its latest transfer, gaps before are waiting;
 * collectives are their ring's exchanges, step by step.
 *
 * A recording names groups by mesh axis and pipeline peers by stage, so it
 * holds for any mesh order; devices that hold the same shapes (every TP
 * rank of a stage when the splits are even, every replica when the batch
 * splits evenly) share one.  A mesh is mostly copies of one pipeline: when
 * every replica sees the same links, the replicas run the same pipeline
 * phase at the same times and one replica (slice dp=0) is replayed; when
 * in addition the TP ranks of a stage share a recording and every TP ring
 * and pipeline hop of a stage has one kind of link, the ranks stay in
 * lockstep and one device per stage is replayed, its TP collectives as the
 * ring of one member.  The step's end (gradient collectives over TP and DP
 * groups, then the barrier) is then replayed for every device from its
 * copy's clock.  Anything less symmetric replays every device. */

struct linksrc {
	const sl_cluster *c;          /* live links, knobs included; or */
	const sl_cluster_config *cfg; /* the class figures; or neither: nominal */
};

static sl_link_spec link_of(const struct linksrc *L, int src, int dst)
{
	if (L->c)
		return sl_cluster_link(L->c, src, dst);
	if (L->cfg)
		return sl_cluster_config_link(L->cfg, src, dst);
	sl_link_spec nominal = {1e9, 1e-6};
	return nominal;
}

static int same_link(sl_link_spec a, sl_link_spec b)
{
	return a.bandwidth == b.bandwidth && a.latency == b.latency;
}

/* One device's recorded step. */
struct prec {
	struct plist pl;
	struct tstore ts; /* the templates its PO_ACTION ops run */
	int tail;         /* the first op after PO_PIPE_END */
	double flops;     /* all its GEMMs */
	uint64_t live_peak, act_peak, ws_peak;
};

static void prec_free(struct prec *r)
{
	free(r->pl.op);
	free(r->pl.msg);
	for (int i = 0; i < r->ts.n; i++)
		free(r->ts.t[i].pl.op);
	free(r->ts.t);
}

/* literal: every micro-batch's work in full, no templates (the reference
 * the templates are tested against). */
static int record(const sl_train *tr, struct dstate *ds, int literal, struct prec *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	const sl_layout *l = &tr->l;
	int nb = ds->cfirst[tr->v], mv = l->microbatches * tr->v;
	struct drun dr;
	memset(&dr, 0, sizeof dr);
	dr.st = calloc((size_t)mv, sizeof *dr.st);
	dr.bst = calloc((size_t)l->microbatches * (nb ? nb : 1), sizeof *dr.bst);
	struct kctx k;
	memset(&k, 0, sizeof k);
	k.pl = &out->pl;
	k.ts = literal ? NULL : &out->ts;
	k.times = 1;
	k.tr = tr;
	k.ds = ds;
	k.dr = &dr;
	k.err = err;
	int rc = dr.st && dr.bst ? SL_OK : sl_fail(err, SL_ENOMEM, "out of host memory");
	for (int mb = 0; rc == SL_OK && mb < l->microbatches; mb++)
		for (int c = 0; c < tr->v; c++)
			dr.st[mb * tr->v + c].b = dr.bst + (size_t)mb * nb + ds->cfirst[c];
	if (rc == SL_OK)
		rc = pipeline(&k);
	if (rc == SL_OK)
		rc = rec_mark(&k, PO_PIPE_END);
	out->tail = out->pl.n;
	if (rc == SL_OK)
		rc = sync_and_update(&k);
	if (rc == SL_OK)
		rc = rec_mark(&k, PO_BARRIER);
	out->live_peak = dr.live_peak;
	out->act_peak = dr.act_peak;
	out->ws_peak = dr.ws_peak;
	for (int i = 0; i < out->pl.n; i++)
		if (out->pl.op[i].type == PO_COMPUTE || out->pl.op[i].type == PO_ACTION)
			out->flops += out->pl.op[i].flops;
	free_all(&k);
	free(dr.live);
	free(dr.st);
	free(dr.bst);
	return rc;
}

/* ---- recordings of a layout ---- */

enum { REC_STAGE, REC_SLICE, REC_ALL }; /* one recording per stage, per (tp, stage), per device */

struct sl_est_rec {
	sl_train tr; /* the model and layout; only the recorded devices' states are built */
	int gran;
	int nrec;
	struct prec *rec;
	int *dev; /* the device each recording was made on (the layout's own order) */
};

/* Do every TP rank of a stage, and every replica, hold the same shapes? */
static int even_tp(const sl_model_spec *m, const sl_layout *l)
{
	if (m->ffn % l->tp != 0)
		return 0;
	if (l->seq_parallel)
		for (int j = 0; j < l->microbatches; j++) {
			int first, count;
			sl_layout_microbatch(m, l, 0, j, &first, &count);
			if ((long)count * m->seq % l->tp != 0)
				return 0;
		}
	return 1;
}

static int rec_index(const sl_est_rec *R, int tp, int pp, int dp)
{
	const sl_layout *l = &R->tr.l;
	return R->gran == REC_STAGE   ? pp
	       : R->gran == REC_SLICE ? pp * l->tp + tp
	                              : (dp * l->pp + pp) * l->tp + tp;
}

void sl_est_rec_free(sl_est_rec *R)
{
	if (!R)
		return;
	for (int i = 0; R->rec && i < R->nrec; i++)
		prec_free(&R->rec[i]);
	for (int i = 0; R->tr.dev && i < R->tr.ndev; i++)
		if (R->tr.dev[i].built)
			free_dev(&R->tr.dev[i]);
	free(R->tr.dev);
	free(R->rec);
	free(R->dev);
	free(R);
}

static int est_record(const sl_model_spec *m, const sl_layout *l, int ndev, int literal,
                      sl_est_rec **out, sl_err *err)
{
	*out = NULL;
	sl_est_rec *R = calloc(1, sizeof *R);
	if (!R)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	R->tr.m = *m;
	R->tr.l = *l;
	R->tr.ndev = ndev;
	R->tr.v = l->chunks;
	R->tr.nchunks = l->pp * l->chunks;
	R->gran = m->batch % l->dp != 0 ? REC_ALL : even_tp(m, l) ? REC_STAGE : REC_SLICE;
	R->nrec = R->gran == REC_STAGE ? l->pp : R->gran == REC_SLICE ? l->pp * l->tp : ndev;
	R->tr.dev = calloc((size_t)ndev, sizeof *R->tr.dev);
	R->rec = calloc((size_t)R->nrec, sizeof *R->rec);
	R->dev = calloc((size_t)R->nrec, sizeof *R->dev);
	int rc =
	    R->tr.dev && R->rec && R->dev ? SL_OK : sl_fail(err, SL_ENOMEM, "out of host memory");
	for (int dp = 0; dp < (R->gran == REC_ALL ? l->dp : 1) && rc == SL_OK; dp++)
		for (int pp = 0; pp < l->pp && rc == SL_OK; pp++)
			for (int tp = 0; tp < (R->gran == REC_STAGE ? 1 : l->tp) && rc == SL_OK;
			     tp++) {
				int i = rec_index(R, tp, pp, dp),
				    id = sl_mesh_device(l, tp, pp, dp);
				struct dstate *ds = &R->tr.dev[id];
				R->dev[i] = id;
				ds->id = id;
				rc = build_dev(&R->tr, ds, err);
				if (rc == SL_OK)
					rc = record(&R->tr, ds, literal, &R->rec[i], err);
			}
	if (rc) {
		sl_est_rec_free(R);
		return rc;
	}
	*out = R;
	return SL_OK;
}

int sl_est_record(const sl_model_spec *m, const sl_layout *l, int ndev, int literal,
                  sl_est_rec **out, sl_err *err)
{
	*out = NULL;
	if (ndev < 1 || ndev > SL_MAX_DEVICES)
		return sl_fail(err, SL_EINVAL, "device count %d is out of range (1 to %d)", ndev,
		               SL_MAX_DEVICES);
	int rc = sl_layout_check(m, l, ndev, err);
	return rc ? rc : est_record(m, l, ndev, literal, out, err);
}

/* Memory of the device at (tp, pp, dp). */
static void dev_memory(const sl_est_rec *R, int tp, int pp, int dp, uint64_t *params, uint64_t *opt,
                       uint64_t *peak, const struct prec **rp)
{
	int i = rec_index(R, tp, pp, dp);
	const struct dstate *ds = &R->tr.dev[R->dev[i]];
	size_t no = R->tr.l.zero1 ? ds->zoff[dp + 1] - ds->zoff[dp] : ds->n;
	*params = ds->n * FL;
	*opt = 2 * no * FL;
	*peak = 2 * *params + *opt + R->rec[i].live_peak;
	*rp = &R->rec[i];
}

void sl_est_rec_memory(const sl_est_rec *R, sl_estimate *e)
{
	memset(e, 0, sizeof *e);
	const sl_layout *l = &R->tr.l;
	for (int i = 0; i < R->tr.ndev; i++) {
		int tp, pp, dp;
		sl_mesh_coords(l, i, &tp, &pp, &dp);
		uint64_t params, opt, peak;
		const struct prec *r;
		dev_memory(R, tp, pp, dp, &params, &opt, &peak, &r);
		if (peak > e->mem_peak_bytes) {
			e->mem_peak_bytes = peak;
			e->peak_dev = i;
			e->params_bytes = e->grads_bytes = params;
			e->optimizer_bytes = opt;
			e->act_peak_bytes = r->act_peak;
			e->workspace_peak_bytes = r->ws_peak;
		}
	}
}

/* ---- the replay ---- */

struct pdev {
	double clock, compute, comm, pipe_end, pipe_busy;
	int pc, tpc, xphase, ri; /* tpc: the op inside a PO_ACTION's template */
	int waiting;             /* has arrived at a collective */
	double sp[2 * MAX_UNIT_MSGS][2];
	int nsp;
	uint64_t sent[SL_TR_NKINDS], recv[SL_TR_NKINDS];
};

struct psim {
	const sl_train *tr; /* the model, and the layout in the order replayed */
	sl_layout l;
	const struct linksrc *L;
	double rate;
	int method;              /* SL_EST_STAGE, SLICE or FULL */
	int period;              /* TP ranks r and r + period are alike (1: STAGE; tp: none) */
	int N, n;                /* devices in the mesh; devices replayed */
	int *id;                 /* replayed index -> device id */
	int *tp, *pp, *dp;       /* replayed index -> its mesh coordinates */
	int *slot;               /* device id -> replayed index, or -1 */
	const struct prec **rec; /* per replayed device */
	struct pdev *d;          /* per replayed device */
	int *posted, *key;       /* per ordered pair of replayed devices: the message on it */
	double *pt0, *pt1;
	int crossed;       /* a receiver met another tensor than it expected */
	int uneven;        /* a TP collective of uneven blocks: the period does not hold */
	struct pdev **eff; /* SL_EST_STAGE: per replayed device and template, its whole effect */
	/* scratch for collectives */
	int *gids;
	struct pdev **gm;
	size_t *off;
	double *t0, *t1;
	sl_link_spec *ln;
	unsigned char *pat;
	sl_link_spec *glk;
	sl_link_spec *next[2]; /* per replayed device: the link to its TP, DP ring's next */
	int *queue, qh, qn;    /* the devices ready to be tried */
	unsigned char *inq;
	/* per axis (0: TP, 1: DP), the groups of replayed devices: a device's
	 * group, its members by rank, how many have arrived at its collective */
	int *grp[2], *members[2], *arrived[2];
};

/* A transfer posted at the sender's clock t. */
static double span_end(sl_link_spec ln, double t, double bytes)
{
	return t + ln.latency + bytes / ln.bandwidth;
}

/* The engine's clock rule after an exchange: walk the transfer spans in
 * start order; gaps are waiting, covered time is communication. */
static void settle(struct pdev *d, double sp[][2], int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && sp[j][0] < sp[j - 1][0]; j--) {
			double t0 = sp[j][0], t1 = sp[j][1];
			sp[j][0] = sp[j - 1][0];
			sp[j][1] = sp[j - 1][1];
			sp[j - 1][0] = t0;
			sp[j - 1][1] = t1;
		}
	double t = d->clock;
	for (int i = 0; i < n; i++) {
		double a = sp[i][0] > t ? sp[i][0] : t, b = sp[i][1];
		if (b <= t)
			continue;
		d->comm += b - a;
		t = b;
	}
	d->clock = t;
}

static void coll_offsets(const sl_train *tr, const struct pop *o, int p, size_t *off)
{
	if (o->rows > 0) {
		sl_block_offsets((size_t)o->rows, p, NULL, off);
		for (int i = 0; i <= p; i++)
			off[i] *= (size_t)tr->m.hidden;
	} else {
		sl_block_offsets(o->count, p, NULL, off);
	}
}

static int ring_phases(sl_coll_op op, int *ph)
{
	int n = 0;
	if (op == SL_COLL_ALLREDUCE || op == SL_COLL_REDUCESCATTER)
		ph[n++] = 0;
	if (op == SL_COLL_ALLREDUCE || op == SL_COLL_ALLGATHER)
		ph[n++] = 1;
	return n;
}

static int group_member(const sl_layout *l, int tp, int pp, int dp, int dp_group, int r)
{
	return dp_group ? sl_mesh_device(l, tp, pp, r) : sl_mesh_device(l, r, pp, dp);
}

/* The next member of dev's TP or DP ring. */
static int group_next(const sl_layout *l, int dev, int dp_group)
{
	int tp, pp, dp;
	sl_mesh_coords(l, dev, &tp, &pp, &dp);
	return dp_group ? sl_mesh_device(l, tp, pp, (dp + 1) % l->dp)
	                : sl_mesh_device(l, (tp + 1) % l->tp, pp, dp);
}

/* A collective over a ring of `ring` devices of which m[0..p) are
 * replayed: p = ring, or p a period of the ring (rank r is like rank
 * r + p: the same links, the same clock).  ids[] are the replayed
 * members' device ids.  The exchanges of the ring algorithm, step by step:
 * each member's step is settle() of its own send and its receive (the
 * clock bit for bit; the communication time to rounding).  Trees by their
 * closed form (an estimate, not the engine's exchanges).  0 when a period
 * meets uneven blocks. */
/* `steps` ring steps of equal blocks for members at clocks c[0..p)
 * (communication so far comm[]), member r sending to r + 1 over a link of
 * latency lat[r] taking tb[r] for a block; nc and w are scratch.  Each
 * member's step is settle() of its send and its receive: it ends at the
 * later end (a transfer is (t + a) + n/B, as the engine adds it up); a
 * receive that starts after the send ended leaves a gap.
 *
 * Which term wins each member's max (its own send, or its predecessor's)
 * and whether it waits: while that pattern holds, a member's increment is
 * the previous step's increment of the member it follows, so after p steps
 * every member's increment is that of the member its chain starts from,
 * one whose own send wins.  When all of those have the same link, every
 * clock then advances by the same amount each step, their differences
 * stay, so the pattern holds for good and every member's communication
 * grows by its own constant: the rest of the steps are added at once
 * (which changes only the rounding). */
static void ring_even(struct psim *S, double *c, double *comm, double *nc, double *w,
                      const double *lat, const double *tb, int p, int steps)
{
	unsigned char *pat = S->pat;
	double *dc = S->t0 + 6 * (size_t)S->N, *dm = S->t0 + 7 * (size_t)S->N;
	int same = 0;
	for (int k = 0; k < steps; k++) {
		for (int r = 0; r < p; r++)
			w[r] = c[r] + lat[r] + tb[r];
		int changed = 0;
		for (int r = 0; r < p; r++) {
			int q = r ? r - 1 : p - 1;
			double t = w[r] > w[q] ? w[r] : w[q];
			t = t > c[r] ? t : c[r];
			double gap = c[q] - w[r];
			double inc = (t - c[r]) - (gap > 0 ? gap : 0);
			comm[r] += inc;
			unsigned char b = (unsigned char)((w[q] > w[r]) | (gap > 0) << 1);
			changed |= b != pat[r];
			pat[r] = b;
			dc[r] = t - c[r];
			dm[r] = inc;
			nc[r] = t;
		}
		for (int r = 0; r < p; r++)
			c[r] = nc[r];
		same = k > 0 && !changed ? same + 1 : 0;
		if (same > p && k + 1 < steps) {
			int root = -1, one = 1;
			for (int r = 0; r < p && one; r++)
				if (!(pat[r] & 1)) {
					if (root < 0)
						root = r;
					one = lat[r] == lat[root] && tb[r] == tb[root];
				}
			if (root < 0 || !one)
				continue;
			double left = steps - k - 1;
			for (int r = 0; r < p; r++) {
				c[r] += left * dc[r];
				comm[r] += left * dm[r];
			}
			return;
		}
	}
}

static int sim_coll(struct psim *S, const int *ids, struct pdev **m, int p, int ring,
                    const struct pop *o, const sl_link_spec *known)
{
	size_t N = (size_t)S->N;
	double *c = S->t0, *w = S->t0 + N, *comm = S->t0 + 2 * N, *nc = S->t0 + 3 * N;
	double *lat = S->t0 + 4 * N, *tb = S->t0 + 5 * N;
	sl_link_spec *ln = S->ln;
	double lmax = 0, bw = INFINITY, mx = 0;
	for (int r = 0; r < p; r++) {
		ln[r] = known ? known[r]
		              : link_of(S->L, ids[r], group_next(&S->l, ids[r], o->dp_group));
		lmax = ln[r].latency > lmax ? ln[r].latency : lmax;
		bw = ln[r].bandwidth < bw ? ln[r].bandwidth : bw;
		mx = m[r]->clock > mx ? m[r]->clock : mx;
	}
	if (S->l.algo != SL_ALGO_RING) {
		if (p != ring)
			return 0;
		double t = sl_cost_coll(o->op, S->l.algo, p, (double)o->count * FL, lmax, bw);
		for (int r = 0; r < p; r++) {
			m[r]->comm += t;
			m[r]->clock = mx + t;
		}
		return 1;
	}
	size_t unit = o->rows > 0 ? (size_t)o->rows : o->count;
	int even = unit % (size_t)ring == 0;
	if (p != ring && !even)
		return 0;
	size_t *off = S->off;
	if (!even)
		coll_offsets(S->tr, o, ring, off);
	double bytes =
	    (double)(unit / (size_t)ring * (o->rows > 0 ? (size_t)S->tr->m.hidden : 1)) * FL;
	int ph[2], np = ring_phases(o->op, ph);
	for (int r = 0; r < p; r++) {
		c[r] = m[r]->clock;
		comm[r] = m[r]->comm;
		lat[r] = ln[r].latency;
		tb[r] = bytes / ln[r].bandwidth;
	}
	if (even) {
		int steps = np * (ring - 1);
		for (int r = 0; r < p; r++) {
			m[r]->sent[o->kind] += (uint64_t)steps * (uint64_t)bytes;
			m[r]->recv[o->kind] += (uint64_t)steps * (uint64_t)bytes;
		}
		ring_even(S, c, comm, nc, w, lat, tb, p, steps);
		for (int r = 0; r < p; r++) {
			m[r]->clock = c[r];
			m[r]->comm = comm[r];
		}
		return 1;
	}
	for (int h = 0; h < np; h++)
		for (int s = 0; s < ring - 1; s++) {
			int blk = ph[h] == 0 ? ((-s - 1) % ring + ring) % ring
			                     : ((-s) % ring + ring) % ring;
			for (int r = 0; r < p; r++, blk = blk + 1 == ring ? 0 : blk + 1) {
				double b = (double)(off[blk + 1] - off[blk]) * FL;
				w[r] = c[r] + lat[r] + b / ln[r].bandwidth;
				m[r]->sent[o->kind] += (uint64_t)b;
				m[r + 1 == p ? 0 : r + 1]->recv[o->kind] += (uint64_t)b;
			}
			for (int r = 0; r < p; r++) {
				int q = r ? r - 1 : p - 1;
				/* settle() of the spans [c[r], w[r]] and [c[q], w[q]] from
				 * clock c[r]: it ends at the later end; a receive that
				 * starts after the send ended leaves a gap */
				double t = w[r] > w[q] ? w[r] : w[q];
				t = t > c[r] ? t : c[r];
				double gap = c[q] - w[r];
				comm[r] += (t - c[r]) - (gap > 0 ? gap : 0);
				nc[r] = t;
			}
			for (int r = 0; r < p; r++)
				c[r] = nc[r];
		}
	for (int r = 0; r < p; r++) {
		m[r]->clock = c[r];
		m[r]->comm = comm[r];
	}
	return 1;
}

static void wake(struct psim *S, int i)
{
	if (S->inq[i])
		return;
	S->inq[i] = 1;
	int t = S->qh + S->qn;
	S->queue[t >= S->n ? t - S->n : t] = i;
	S->qn++;
}

/* The next op of replayed device i (inside a template when it runs one). */
static void next_op(struct psim *S, int i)
{
	struct pdev *d = &S->d[i];
	const struct prec *r = S->rec[i];
	const struct pop *o = &r->pl.op[d->pc];
	if (o->type == PO_ACTION && ++d->tpc < r->ts.t[o->tm].pl.n)
		return;
	d->tpc = 0;
	d->pc++;
}

/* Advance replayed device i by one op if it can; 0 when it must wait (or
 * has reached `stop`, the end of what this replay covers).  Exchanges
 * follow the engine: post every send, take the receives in order (each
 * once its sender has posted), then wait until every send is taken. */
static int sim_advance(struct psim *S, int i, int stop)
{
	struct pdev *d = &S->d[i];
	const struct plist *pl = &S->rec[i]->pl;
	if (d->pc >= stop)
		return 0;
	const struct pop *o = &pl->op[d->pc];
	const struct plist *src = pl; /* the list o is in: its msg[] holds o's messages */
	if (o->type == PO_ACTION) {
		const struct tmpl *t = &S->rec[i]->ts.t[o->tm];
		if (S->eff && d->tpc == 0) {
			const struct pdev *e = &S->eff[i][o->tm];
			d->clock += e->clock;
			d->compute += e->compute;
			d->comm += e->comm;
			for (int q = 0; q < SL_TR_NKINDS; q++) {
				d->sent[q] += e->sent[q];
				d->recv[q] += e->recv[q];
			}
			d->pc++;
			return 1;
		}
		if (t->pl.n == 0) {
			d->pc++;
			return 1;
		}
		o = &t->pl.op[d->tpc];
		src = &t->pl;
	}
	/* Only an exchange has messages; a list without any has msg == NULL,
	 * and NULL + 0 is undefined. */
	const struct xmsg *snd = NULL, *rcv = NULL;
	if (o->type == PO_XFER) {
		snd = src->msg + o->m0;
		rcv = snd + o->ns;
	}
	int me = S->id[i], n = S->n;
	switch (o->type) {
	case PO_COMPUTE:
		d->clock += o->flops / S->rate;
		d->compute += o->flops / S->rate;
		next_op(S, i);
		return 1;
	case PO_PIPE_END:
		d->pipe_end = d->clock;
		d->pipe_busy = d->compute + d->comm;
		d->pc++;
		return 1;
	case PO_XFER:
		if (d->xphase == 0) {
			d->nsp = 0;
			for (int m = 0; m < o->ns; m++) {
				int peer = sl_mesh_device(&S->l, S->tp[i], snd[m].stage, S->dp[i]);
				size_t li = (size_t)i * n + S->slot[peer];
				double bytes = (double)snd[m].n * FL;
				S->pt0[li] = d->clock;
				S->pt1[li] = span_end(link_of(S->L, me, peer), d->clock, bytes);
				S->posted[li] = 1;
				S->key[li] = snd[m].key;
				wake(S, S->slot[peer]);
				d->sp[d->nsp][0] = S->pt0[li];
				d->sp[d->nsp][1] = S->pt1[li];
				d->nsp++;
				d->sent[SL_TR_PP_SENDRECV] += (uint64_t)bytes;
			}
			d->xphase = 1;
			d->ri = 0;
		}
		if (d->xphase == 1) {
			for (; d->ri < o->nr; d->ri++) {
				int peer =
				    sl_mesh_device(&S->l, S->tp[i], rcv[d->ri].stage, S->dp[i]);
				size_t li = (size_t)S->slot[peer] * n + i;
				if (!S->posted[li])
					return 0;
				if (S->key[li] != rcv[d->ri].key)
					S->crossed = 1;
				S->posted[li] = 0;
				wake(S, S->slot[peer]);
				d->sp[d->nsp][0] = S->pt0[li];
				d->sp[d->nsp][1] = S->pt1[li];
				d->nsp++;
				d->recv[SL_TR_PP_SENDRECV] += (uint64_t)rcv[d->ri].n * FL;
			}
			d->xphase = 2;
		}
		for (int m = 0; m < o->ns; m++) {
			int peer = sl_mesh_device(&S->l, S->tp[i], snd[m].stage, S->dp[i]);
			if (S->posted[(size_t)i * n + S->slot[peer]])
				return 0;
		}
		settle(d, d->sp, d->nsp);
		d->xphase = 0;
		d->pc++;
		return 1;
	case PO_COLL: {
		int ring = o->dp_group ? S->l.dp : S->l.tp;
		int p = o->dp_group ? ring : S->period;
		/* Every member runs the same collectives in the same order: the
		 * last to arrive runs it for all. */
		int g = o->dp_group, grp = S->grp[g][i];
		if (!d->waiting) {
			d->waiting = 1;
			S->arrived[g][grp]++;
		}
		if (S->arrived[g][grp] < p)
			return 0;
		S->arrived[g][grp] = 0;
		int *ids = S->gids;
		struct pdev **m = S->gm;
		sl_link_spec *lk = S->glk;
		const int *mem = S->members[g] + (size_t)grp * p;
		for (int r = 0; r < p; r++) {
			ids[r] = S->id[mem[r]];
			m[r] = &S->d[mem[r]];
			lk[r] = S->next[g][mem[r]];
		}
		if (!sim_coll(S, ids, m, p, ring, o, lk)) {
			S->uneven = 1;
			return 0;
		}
		for (int r = 0; r < p; r++) {
			m[r]->waiting = 0;
			next_op(S, mem[r]);
			wake(S, mem[r]);
		}
		(void)stop;
		return 1;
	}
	case PO_BARRIER: {
		double mx = 0;
		for (int j = 0; j < n; j++) {
			if (S->d[j].pc >= S->rec[j]->pl.n ||
			    S->rec[j]->pl.op[S->d[j].pc].type != PO_BARRIER)
				return 0;
			mx = S->d[j].clock > mx ? S->d[j].clock : mx;
		}
		for (int j = 0; j < n; j++) {
			S->d[j].clock = mx;
			S->d[j].pc++;
			wake(S, j);
		}
		return 1;
	}
	}
	return 0;
}

/* Replay the replayed devices up to their stop. */
static int sim_run(struct psim *S, sl_err *err)
{
	/* A device is tried again only when something it may wait for has
	 * happened (wake()): devices are tried as long as one is ready. */
	for (int i = 0; i < S->n; i++)
		wake(S, i);
	while (S->qn > 0) {
		int i = S->queue[S->qh];
		S->qh = S->qh + 1 == S->n ? 0 : S->qh + 1;
		S->qn--;
		S->inq[i] = 0;
		int stop = S->method == SL_EST_FULL ? S->rec[i]->pl.n : S->rec[i]->tail;
		while (sim_advance(S, i, stop))
			;
		if (S->uneven)
			return SL_OK;
	}
	for (int i = 0; i < S->n; i++)
		if (S->d[i].pc < (S->method == SL_EST_FULL ? S->rec[i]->pl.n : S->rec[i]->tail))
			return sl_fail(err, SL_EINVAL,
			               "this schedule would deadlock on %s with p=%d, m=%d, v=%d "
			               "(a bug in shardlab)",
			               sl_sched_name(S->l.schedule), S->l.pp, S->l.microbatches,
			               S->tr->v);
	if (S->crossed)
		return sl_fail(err, SL_EINVAL,
		               "this schedule's messages would cross on a link with p=%d, m=%d, "
		               "v=%d (a bug in shardlab)",
		               S->l.pp, S->l.microbatches, S->tr->v);
	return SL_OK;
}

/* What a template does to a device that runs it alone from clock 0, its
 * TP collectives as rings in lockstep; 0 when one has uneven blocks. */
static int tmpl_effect(struct psim *S, int i, const struct tmpl *t, struct pdev *e)
{
	memset(e, 0, sizeof *e);
	for (int q = 0; q < t->pl.n; q++) {
		const struct pop *o = &t->pl.op[q];
		if (o->type == PO_COMPUTE) {
			e->clock += o->flops / S->rate;
			e->compute += o->flops / S->rate;
		} else if (o->type == PO_COLL && !o->dp_group) {
			int id = S->id[i];
			struct pdev *m = e;
			if (!sim_coll(S, &id, &m, 1, S->l.tp, o, &S->next[0][i]))
				return 0;
		} else {
			return 0;
		}
	}
	return 1;
}

/* Do the links allow replaying replica 0's TP ranks 0..per-1 only (see
 * above)?  By mesh coordinates, every device's TP ring link to the next
 * rank and its pipeline hops both ways (around the ends when interleaved)
 * must be those of (tp % per, s, 0). */
static int symmetric(const sl_layout *l, int v, const struct linksrc *L, int per)
{
	int t = l->tp, p = l->pp, d = l->dp;
	for (int s = 0; s < p; s++) {
		int nxt[2] = {(s + 1) % p, (s + p - 1) % p};
		for (int k = 0; k < d; k++)
			for (int r = 0; r < t; r++) {
				int rr = r % per;
				if (k == 0 && rr == r)
					continue;
				if (t > 1) {
					sl_link_spec a =
					    link_of(L, sl_mesh_device(l, r, s, k),
					            sl_mesh_device(l, (r + 1) % t, s, k));
					sl_link_spec b =
					    link_of(L, sl_mesh_device(l, rr, s, 0),
					            sl_mesh_device(l, (rr + 1) % t, s, 0));
					if (!same_link(a, b))
						return 0;
				}
				for (int w = 0; w < 2 && p > 1; w++) {
					if (v == 1 &&
					    ((w == 0 && s == p - 1) || (w == 1 && s == 0)))
						continue;
					sl_link_spec a = link_of(L, sl_mesh_device(l, r, s, k),
					                         sl_mesh_device(l, r, nxt[w], k));
					sl_link_spec b = link_of(L, sl_mesh_device(l, rr, s, 0),
					                         sl_mesh_device(l, rr, nxt[w], 0));
					if (!same_link(a, b))
						return 0;
				}
			}
	}
	return 1;
}

/* The replayed device that stands for the device at (tp, pp, dp). */
static int stand_in(const struct psim *S, int tp, int pp, int dp)
{
	if (S->method == SL_EST_FULL)
		return sl_mesh_device(&S->l, tp, pp, dp);
	return sl_mesh_device(&S->l, tp % S->period, pp, 0);
}

struct est_out {
	sl_estimate *est;
	double *compute, *comm; /* per device, or NULL */
};

static void psim_free(struct psim *S)
{
	free(S->rec);
	free(S->d);
	free(S->id);
	free(S->tp);
	free(S->slot);
	free(S->posted);
	free(S->key);
	free(S->pt0);
	for (int i = 0; S->eff && i < S->n; i++)
		free(S->eff[i]);
	free(S->eff);
	free(S->gids);
	free(S->gm);
	free(S->off);
	free(S->t0);
	free(S->ln);
	free(S->pat);
	free(S->glk);
	free(S->next[0]);
	free(S->queue);
	free(S->inq);
	for (int g = 0; g < 2; g++) {
		free(S->grp[g]);
		free(S->members[g]);
		free(S->arrived[g]);
	}
	memset(S, 0, sizeof *S);
}

/* Replay with one method; *fallback = 1 when the method does not apply. */
/* Replay with one method (and period of the TP ranks for STAGE and
 * SLICE); *fallback = 1 when it does not apply. */
static int replay_with(const sl_est_rec *R, const sl_layout *l, const struct linksrc *L, int method,
                       int per, const struct est_out *out, int *fallback, sl_err *err)
{
	int N = R->tr.ndev, t = l->tp, pp_n = l->pp, dp_n = l->dp;
	*fallback = 0;
	/* Ranks stand for others only when they share a recording. */
	if ((method != SL_EST_FULL && per < t && R->gran != REC_STAGE) ||
	    (method != SL_EST_FULL && R->gran == REC_ALL)) {
		*fallback = 1;
		return SL_OK;
	}
	struct psim S;
	memset(&S, 0, sizeof S);
	S.tr = &R->tr;
	S.l = *l;
	S.L = L;
	S.rate = L->c ? sl_cluster_config_of(L->c)->flops : L->cfg ? L->cfg->flops : 1e12;
	S.method = method;
	S.period = method == SL_EST_FULL ? t : per;
	S.N = N;
	if (method != SL_EST_FULL && !symmetric(l, R->tr.v, L, per)) {
		*fallback = 1;
		return SL_OK;
	}
	int nmax = method == SL_EST_FULL ? N : pp_n * per;
	size_t nn = (size_t)nmax * nmax;
	S.slot = malloc((size_t)N * sizeof *S.slot);
	S.id = malloc((size_t)nmax * sizeof *S.id);
	S.tp = malloc(3 * (size_t)nmax * sizeof *S.tp);
	S.pp = S.tp ? S.tp + nmax : NULL;
	S.dp = S.tp ? S.tp + 2 * nmax : NULL;
	S.rec = calloc((size_t)nmax, sizeof *S.rec);
	S.d = calloc((size_t)nmax, sizeof *S.d);
	S.posted = calloc(nn, sizeof *S.posted);
	S.key = calloc(nn, sizeof *S.key);
	S.pt0 = calloc(2 * nn, sizeof *S.pt0);
	S.pt1 = S.pt0 ? S.pt0 + nn : NULL;
	S.gids = malloc((size_t)N * sizeof *S.gids);
	S.gm = malloc((size_t)N * sizeof *S.gm);
	S.off = malloc(((size_t)N + 1) * sizeof *S.off);
	S.t0 = malloc(8 * (size_t)N * sizeof *S.t0);
	S.pat = malloc(2 * (size_t)N);
	S.glk = malloc((size_t)N * sizeof *S.glk);
	S.next[0] = malloc(2 * (size_t)nmax * sizeof *S.next[0]);
	S.next[1] = S.next[0] ? S.next[0] + nmax : NULL;
	S.queue = malloc((size_t)nmax * sizeof *S.queue);
	S.inq = calloc((size_t)nmax, 1);
	int nogroup = 0;
	for (int g = 0; g < 2; g++) {
		S.grp[g] = malloc((size_t)nmax * sizeof *S.grp[g]);
		S.members[g] = malloc((size_t)nmax * sizeof *S.members[g]);
		S.arrived[g] = calloc((size_t)nmax, sizeof *S.arrived[g]);
		nogroup |= !S.grp[g] || !S.members[g] || !S.arrived[g];
	}
	S.t1 = S.t0 ? S.t0 + N : NULL;
	S.ln = malloc((size_t)N * sizeof *S.ln);
	if (!S.slot || !S.id || !S.tp || !S.rec || !S.d || !S.posted || !S.key || !S.pt0 ||
	    !S.gids || !S.gm || !S.off || !S.t0 || !S.ln || !S.pat || !S.glk || !S.next[0] ||
	    !S.queue || !S.inq || nogroup) {
		psim_free(&S);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	for (int i = 0; i < N; i++)
		S.slot[i] = -1;
	for (int dp = 0; dp < (method == SL_EST_FULL ? dp_n : 1); dp++)
		for (int pp = 0; pp < pp_n; pp++)
			for (int tp = 0; tp < S.period; tp++) {
				int id = sl_mesh_device(l, tp, pp, dp);
				S.slot[id] = S.n;
				S.id[S.n] = id;
				S.tp[S.n] = tp;
				S.pp[S.n] = pp;
				S.dp[S.n] = dp;
				S.rec[S.n] = &R->rec[rec_index(R, tp, pp, dp)];
				for (int g = 0; g < 2; g++)
					S.next[g][S.n] = link_of(L, id, group_next(l, id, g));
				/* TP groups: (pp, dp), ranks tp < period; DP groups (every
				 * device replayed): (tp, pp), ranks dp */
				int tg = dp * pp_n + pp, dg = tp * pp_n + pp;
				S.grp[0][S.n] = tg;
				S.members[0][(size_t)tg * S.period + tp] = S.n;
				S.grp[1][S.n] = dg;
				if (method == SL_EST_FULL)
					S.members[1][(size_t)dg * dp_n + dp] = S.n;
				S.n++;
			}
	/* One device per stage: a template always takes the same time (its TP
	 * collectives are rings in lockstep), so it is worked out once. */
	int rc = SL_OK;
	if (method == SL_EST_STAGE) {
		if (!(S.eff = calloc((size_t)S.n, sizeof *S.eff)))
			rc = sl_fail(err, SL_ENOMEM, "out of host memory");
		for (int i = 0; i < S.n && rc == SL_OK && !S.uneven; i++) {
			const struct tstore *ts = &S.rec[i]->ts;
			if (!(S.eff[i] = calloc((size_t)(ts->n ? ts->n : 1), sizeof *S.eff[i]))) {
				rc = sl_fail(err, SL_ENOMEM, "out of host memory");
				break;
			}
			for (int q = 0; q < ts->n && !S.uneven; q++)
				S.uneven = !tmpl_effect(&S, i, &ts->t[q], &S.eff[i][q]);
		}
	}
	if (rc == SL_OK && !S.uneven)
		rc = sim_run(&S, err);
	if (rc == SL_OK && S.uneven) {
		psim_free(&S);
		*fallback = 1;
		return SL_OK;
	}
	if (rc != SL_OK || !out) {
		psim_free(&S);
		return rc;
	}

	/* Every device from its stand-in; then the step's end for all. */
	struct pdev *all = S.method == SL_EST_FULL ? S.d : calloc((size_t)N, sizeof *all);
	const struct prec **arec =
	    S.method == SL_EST_FULL ? S.rec : calloc((size_t)N, sizeof *arec);
	if (!all || !arec) {
		if (all != S.d)
			free(all);
		if (arec != S.rec)
			free(arec);
		psim_free(&S);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	if (S.method != SL_EST_FULL) {
		for (int i = 0; i < N; i++) {
			int tp, pp, dp;
			sl_mesh_coords(l, i, &tp, &pp, &dp);
			int si = S.slot[stand_in(&S, tp, pp, dp)];
			all[i] = S.d[si];
			arec[i] = S.rec[si];
			all[i].pc = arec[i]->tail;
		}
		/* The j-th op of the step's end is the same kind of op on every
		 * device (sync_and_update()). */
		const struct prec *r0 = arec[0];
		for (int j = 0; r0->pl.op[r0->tail + j].type != PO_BARRIER; j++) {
			const struct pop *o0 = &r0->pl.op[r0->tail + j];
			if (o0->type == PO_COMPUTE) {
				for (int i = 0; i < N; i++) {
					double f = arec[i]->pl.op[arec[i]->tail + j].flops;
					all[i].clock += f / S.rate;
					all[i].compute += f / S.rate;
				}
				continue;
			}
			/* Every group once: from the member of rank 0. */
			int p = o0->dp_group ? dp_n : t;
			for (int i = 0; i < N; i++) {
				int tp, pp, dp;
				sl_mesh_coords(l, i, &tp, &pp, &dp);
				if ((o0->dp_group ? dp : tp) != 0)
					continue;
				const struct pop *o = &arec[i]->pl.op[arec[i]->tail + j];
				for (int r = 0; r < p; r++) {
					S.gids[r] = group_member(l, tp, pp, dp, o0->dp_group, r);
					S.gm[r] = &all[S.gids[r]];
				}
				sim_coll(&S, S.gids, S.gm, p, p, o, NULL);
			}
		}
		double mx = 0;
		for (int i = 0; i < N; i++)
			mx = all[i].clock > mx ? all[i].clock : mx;
		for (int i = 0; i < N; i++)
			all[i].clock = mx;
	}

	sl_estimate *e = out->est;
	sl_est_rec_memory(R, e);
	e->method = method;
	e->replayed = S.n;
	e->step_s = all[0].clock;
	double comm_sum = 0, comp_sum = 0;
	for (int i = 0; i < N; i++) {
		const struct pdev *a = &all[i];
		e->pipeline_s = a->pipe_end > e->pipeline_s ? a->pipe_end : e->pipeline_s;
		e->ideal_s = a->pipe_busy > e->ideal_s ? a->pipe_busy : e->ideal_s;
		e->flops_per_step += arec[i]->flops;
		comp_sum += a->compute;
		comm_sum += a->comm;
		e->comm_max_s = a->comm > e->comm_max_s ? a->comm : e->comm_max_s;
		e->idle_fraction += e->step_s - a->compute - a->comm;
		for (int k = 0; k < SL_TR_NKINDS; k++) {
			e->sent[k] = a->sent[k] > e->sent[k] ? a->sent[k] : e->sent[k];
			e->received[k] = a->recv[k] > e->received[k] ? a->recv[k] : e->received[k];
		}
		if (out->compute)
			out->compute[i] = a->compute;
		if (out->comm)
			out->comm[i] = a->comm;
	}
	e->compute_s = comp_sum / N;
	e->comm_s = comm_sum / N;
	e->idle_fraction = e->step_s > 0 ? e->idle_fraction / (e->step_s * N) : 0;
	e->bubble_fraction = e->ideal_s > 0 ? (e->pipeline_s - e->ideal_s) / e->ideal_s : 0;
	if (e->bubble_fraction < 0)
		e->bubble_fraction = 0;
	if (all != S.d)
		free(all);
	if (arec != S.rec)
		free(arec);
	psim_free(&S);
	return SL_OK;
}

/* The cheapest method that applies, from `how` on. */
static int replay(const sl_est_rec *R, const sl_axis *order, const struct linksrc *L,
                  sl_est_method how, const struct est_out *out, sl_err *err)
{
	sl_layout l = R->tr.l;
	if (order)
		memcpy(l.order, order, sizeof l.order);
	for (int m = how == SL_EST_AUTO ? SL_EST_STAGE : how; m <= SL_EST_FULL; m++)
		for (int per = m == SL_EST_STAGE   ? 1
		               : m == SL_EST_SLICE ? 2
		                                   : l.tp;
		     per <= l.tp; per++) {
			if (l.tp % per != 0)
				continue;
			int fallback, rc = replay_with(R, &l, L, m, per, out, &fallback, err);
			if (rc || !fallback)
				return rc;
			if (m == SL_EST_STAGE)
				break;
		}
	return sl_fail(err, SL_EINVAL, "no replay method applies (a bug in shardlab)");
}

int sl_est_replay(const sl_est_rec *R, const sl_axis order[SL_NAXES], const sl_cluster_config *cfg,
                  sl_est_method how, sl_estimate *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	if (cfg->devices != R->tr.ndev)
		return sl_fail(err, SL_EINVAL, "the layout needs %d devices but the cluster has %d",
		               R->tr.ndev, cfg->devices);
	if (!(cfg->flops > 0))
		return sl_fail(err, SL_EINVAL, "device compute rate must be positive");
	sl_layout chk = R->tr.l;
	if (order) {
		memcpy(chk.order, order, sizeof chk.order);
		int rc = sl_layout_check(&R->tr.m, &chk, R->tr.ndev, err);
		if (rc)
			return rc;
	}
	struct linksrc L = {NULL, cfg};
	struct est_out o = {out, NULL, NULL};
	return replay(R, order, &L, how, &o, err);
}

/* Rendezvous sends must never wait on each other, and every receive must
 * meet the tensor it expects: check the whole plan once, at nominal cost. */
static int check_plan(const sl_train *tr, sl_err *err)
{
	sl_est_rec *R;
	int rc = est_record(&tr->m, &tr->l, tr->ndev, 0, &R, err);
	if (rc)
		return rc;
	struct linksrc L = {NULL, NULL};
	rc = replay(R, NULL, &L, SL_EST_AUTO, NULL, err);
	sl_est_rec_free(R);
	return rc;
}

int sl_train_predict(const sl_train *tr, const sl_cluster *c, sl_train_prediction *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	if (sl_cluster_devices(c) != tr->ndev)
		return sl_fail(err, SL_EINVAL, "the layout needs %d devices but the cluster has %d",
		               tr->ndev, sl_cluster_devices(c));
	sl_est_rec *R;
	int rc = est_record(&tr->m, &tr->l, tr->ndev, 0, &R, err);
	if (rc)
		return rc;
	struct linksrc L = {c, NULL};
	sl_estimate e;
	struct est_out o = {&e, out->compute_s, out->comm_s};
	rc = replay(R, NULL, &L, SL_EST_AUTO, &o, err);
	sl_est_rec_free(R);
	if (rc)
		return rc;
	out->step_s = e.step_s;
	out->pipeline_s = e.pipeline_s;
	out->ideal_s = e.ideal_s;
	out->bubble_fraction = e.bubble_fraction;
	return SL_OK;
}

int sl_train_estimate(const sl_model_spec *m, const sl_layout *l, const sl_cluster_config *cfg,
                      sl_est_method how, sl_estimate *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	sl_est_rec *R;
	int rc = sl_est_record(m, l, cfg->devices, how == SL_EST_FULL, &R, err);
	if (rc)
		return rc;
	rc = sl_est_replay(R, NULL, cfg, how, out, err);
	sl_est_rec_free(R);
	return rc;
}
