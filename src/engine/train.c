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
	sl_group tpg, dpg;
	struct blk *blk;
	int cfirst[MAX_CHUNKS + 1]; /* local chunk c's blocks: blk[cfirst[c] .. cfirst[c+1]) */
	size_t n, opt_lo, opt_hi;
	size_t rep_lo, rep_n; /* the replicated biases, kept together at the end */
	size_t zoff[SL_MAX_DEVICES + 1]; /* ZeRO-1 slices of the DP ranks */
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
	ds->tpg.n = l->tp;
	for (int i = 0; i < l->tp; i++)
		ds->tpg.ranks[i] = sl_mesh_device(l, i, ds->pp, ds->dp);
	ds->dpg.n = l->dp;
	for (int i = 0; i < l->dp; i++)
		ds->dpg.ranks[i] = sl_mesh_device(l, ds->tp, ds->pp, i);

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

static int simulate(const sl_train *tr, const sl_cluster *c, sl_train_prediction *out,
		    sl_err *err);

void sl_train_destroy(sl_train *tr)
{
	if (!tr)
		return;
	for (int i = 0; tr->dev && i < tr->ndev; i++) {
		struct dstate *ds = &tr->dev[i];
		free(ds->blk);
		free(ds->shards);
		free(ds->acts);
		free(ds->P);
		free(ds->G);
		free(ds->M);
		free(ds->V);
	}
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
	if (sl_layout_check(m, l, ndev, err))
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
	if (simulate(tr, NULL, NULL, err)) {
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
		const struct dstate *o = &tr->dev[ds->dpg.ranks[q]];
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
	uint64_t sent[SL_TR_NKINDS], recv[SL_TR_NKINDS];
	uint64_t reserved;
	uintptr_t handles;  /* timing-only: buffers handed out */
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

/* A piece of recorded work. */
struct seg {
	int coll;
	double flops;
	sl_coll_op op;
	int dp_group;
	size_t count;
	int has_counts;
	size_t counts[SL_MAX_DEVICES];
};

struct rec {
	struct seg *s;
	int n, cap;
	int floor; /* pieces below it are taken: never merge into them */
};

struct kctx {
	sl_dev *d;        /* NULL: record the work instead of doing it */
	struct rec *rec;
	const sl_train *tr;
	struct dstate *ds;
	struct drun *dr;
	int measured;
	int dry;          /* timing-only cluster: account everything, compute nothing */
	long step;        /* the batch index */
	int ks;           /* the step's index in this run */
	sl_err *err;
};

static int rec_add(struct kctx *k, const struct seg *s)
{
	struct rec *r = k->rec;
	if (!s->coll && r->n > r->floor && !r->s[r->n - 1].coll) {
		r->s[r->n - 1].flops += s->flops;
		return SL_OK;
	}
	if (r->n == r->cap) {
		int cap = r->cap ? r->cap * 2 : 16;
		struct seg *p = realloc(r->s, (size_t)cap * sizeof *p);
		if (!p)
			return sl_fail(k->err, SL_ENOMEM, "out of host memory");
		r->s = p;
		r->cap = cap;
	}
	r->s[r->n++] = *s;
	return SL_OK;
}

static int k_gemm(struct kctx *k, int ta, int tb, int M, int N, int K, float alpha, const float *a,
		  size_t ao, int lda, const float *b, size_t bo, int ldb, float beta, float *c, size_t co,
		  int ldc, const char *label)
{
	if (!k->d) {
		struct seg s;
		memset(&s, 0, sizeof s);
		s.flops = 2.0 * M * N * K;
		return rec_add(k, &s);
	}
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
}

static int k_alloc(struct kctx *k, float **out, size_t nf, int cat, const char *what)
{
	*out = NULL;
	if (!k->d)
		return SL_OK;
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
	if (k->dry) {
		/* A handle, never read: the step's control flow only asks which
		 * buffer goes where and whether one exists. */
		int rc = sl_dev_reserve(k->d, bytes, what, k->err);
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
	if (k->d && *p) {
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
	if (!k->d || !p)
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
		struct seg s;
		memset(&s, 0, sizeof s);
		s.coll = 1;
		s.op = op;
		s.dp_group = g == &k->ds->dpg;
		s.count = count;
		if (counts) {
			s.has_counts = 1;
			memcpy(s.counts, counts, (size_t)g->n * sizeof *counts);
		}
		return rec_add(k, &s);
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
	return k_coll(k, SL_TR_TP_ALLGATHER, &k->ds->tpg, SL_COLL_ALLGATHER, *full, 0, n, g->cnt);
}

/* The row-parallel product's partial sums yf (r x h) become the sub-block's
 * output: reduced over the TP group, plus bias, plus the residual x.  *y is
 * yf itself or (sequence parallel) the device's rows of it. */
static int reduce_output(struct kctx *k, const struct mbgeo *g, float *yf, const float *bias,
			 const float *x, float **y)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (g->sp) {
		TRY(k_coll(k, SL_TR_TP_REDUCESCATTER, &k->ds->tpg, SL_COLL_REDUCESCATTER, yf, 0, n,
			   g->cnt));
		TRY(k_alloc(k, y, (size_t)g->rl * h, CAT_WS, "sub-block output"));
		TRY(ew_copy(k, *y, 0, yf, (size_t)g->r0 * h, (size_t)g->rl * h));
		k_free(k, &yf);
	} else {
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, &k->ds->tpg, SL_COLL_ALLREDUCE, yf, 0, n, NULL));
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
	return k_coll(k, SL_TR_TP_ALLGATHER, &k->ds->tpg, SL_COLL_ALLGATHER, *full, 0, n, g->cnt);
}

/* dxp (r x h partial input gradients) reduced over the TP group, plus the
 * residual's dy, becomes *dx; dy and the gathered copy are freed. */
static int reduce_grad(struct kctx *k, const struct mbgeo *g, float *dxp, float *dy, float *dyf,
		       float **dx)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (g->sp) {
		k_free(k, &dyf);
		TRY(k_coll(k, SL_TR_TP_REDUCESCATTER, &k->ds->tpg, SL_COLL_REDUCESCATTER, dxp, 0, n,
			   g->cnt));
		TRY(k_alloc(k, dx, (size_t)g->rl * h, CAT_WS, "input gradient"));
		TRY(ew_copy(k, *dx, 0, dxp, (size_t)g->r0 * h, (size_t)g->rl * h));
		k_free(k, &dxp);
	} else {
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, &k->ds->tpg, SL_COLL_ALLREDUCE, dxp, 0, n, NULL));
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
	snprintf(lb, sizeof lb, "F b%d fc1", b->index);
	TRY(k_gemm(k, 0, 0, r, ft, h, 1, st->xm, 0, h, par(k, b, SL_T_FC1_W), 0, ft, 0, st->z, 0, ft,
		   lb));
	TRY(ew_bias(k, st->z, (size_t)r, (size_t)ft, par(k, b, SL_T_FC1_B)));
	TRY(k_alloc(k, &st->a, (size_t)r * ft, CAT_ACT, "activations (GeLU output)"));
	TRY(ew_gelu(k, st->z, st->a, (size_t)r * ft));
	TRY(k_alloc(k, &yf, (size_t)r * h, CAT_WS, "fc2 partial sums"));
	snprintf(lb, sizeof lb, "F b%d fc2", b->index);
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
	snprintf(lb, sizeof lb, "B b%d fc2 dW", b->index);
	TRY(k_gemm(k, 1, 0, ft, h, r, 1, st->a, 0, ft, dyf, 0, h, 1, grd(k, b, SL_T_FC2_W), 0, h, lb));
	TRY(k_alloc(k, &da, (size_t)r * ft, CAT_WS, "fc1 output gradient"));
	snprintf(lb, sizeof lb, "B b%d fc2 dX", b->index);
	TRY(k_gemm(k, 0, 1, r, ft, h, 1, dyf, 0, h, par(k, b, SL_T_FC2_W), 0, h, 0, da, 0, ft, lb));
	TRY(ew_gelu_grad(k, st->z, da, (size_t)r * ft));
	TRY(ew_colsum(k, grd(k, b, SL_T_FC1_B), da, (size_t)r, (size_t)ft));
	snprintf(lb, sizeof lb, "B b%d fc1 dW", b->index);
	TRY(k_gemm(k, 1, 0, h, ft, r, 1, st->xm, 0, h, da, 0, ft, 1, grd(k, b, SL_T_FC1_W), 0, ft, lb));
	TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "input gradient partial sums"));
	snprintf(lb, sizeof lb, "B b%d fc1 dX", b->index);
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
	snprintf(lb, sizeof lb, "F b%d qkv", b->index);
	TRY(k_gemm(k, 0, 0, r, qc, h, 1, st->xa, 0, h, par(k, b, SL_T_QKV_W), 0, qc, 0, st->qkv, 0, qc,
		   lb));
	TRY(k_alloc(k, &st->p, (size_t)g->nb * ah * s * s, CAT_ACT, "activations (attention probabilities)"));
	TRY(k_alloc(k, &st->o, (size_t)r * oc, CAT_ACT, "activations (heads' outputs)"));
	for (int n = 0; n < g->nb; n++)
		for (int j = 0; j < ah; j++) {
			size_t q = (size_t)n * s * qc + (size_t)j * 3 * d, po = ((size_t)n * ah + j) * s * s;
			snprintf(lb, sizeof lb, "F b%d scores h%d", b->index, j);
			TRY(k_gemm(k, 0, 1, s, s, d, scale, st->qkv, q, qc, st->qkv, q + d, qc, 0, st->p, po,
				   s, lb));
			TRY(ew_softmax(k, st->p, po, s));
			snprintf(lb, sizeof lb, "F b%d PV h%d", b->index, j);
			TRY(k_gemm(k, 0, 0, s, d, s, 1, st->p, po, s, st->qkv, q + 2 * d, qc, 0, st->o,
				   (size_t)n * s * oc + (size_t)j * d, oc, lb));
		}
	TRY(k_alloc(k, &yf, (size_t)r * h, CAT_WS, "projection partial sums"));
	snprintf(lb, sizeof lb, "F b%d proj", b->index);
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
	snprintf(lb, sizeof lb, "B b%d proj dW", b->index);
	TRY(k_gemm(k, 1, 0, oc, h, r, 1, st->o, 0, oc, dyf, 0, h, 1, grd(k, b, SL_T_OUT_W), 0, h, lb));
	TRY(k_alloc(k, &dO, (size_t)r * oc, CAT_WS, "heads' output gradient"));
	snprintf(lb, sizeof lb, "B b%d proj dX", b->index);
	TRY(k_gemm(k, 0, 1, r, oc, h, 1, dyf, 0, h, par(k, b, SL_T_OUT_W), 0, h, 0, dO, 0, oc, lb));
	TRY(k_alloc(k, &dqkv, (size_t)r * qc, CAT_WS, "Q, K, V gradient"));
	TRY(k_alloc(k, &dp, (size_t)s * s, CAT_WS, "attention score gradient"));
	for (int n = 0; n < g->nb; n++)
		for (int j = 0; j < ah; j++) {
			size_t q = (size_t)n * s * qc + (size_t)j * 3 * d, po = ((size_t)n * ah + j) * s * s;
			size_t oo = (size_t)n * s * oc + (size_t)j * d;
			snprintf(lb, sizeof lb, "B b%d dP h%d", b->index, j);
			TRY(k_gemm(k, 0, 1, s, s, d, 1, dO, oo, oc, st->qkv, q + 2 * d, qc, 0, dp, 0, s, lb));
			snprintf(lb, sizeof lb, "B b%d dV h%d", b->index, j);
			TRY(k_gemm(k, 1, 0, s, d, s, 1, st->p, po, s, dO, oo, oc, 0, dqkv, q + 2 * d, qc, lb));
			TRY(ew_softmax_grad(k, st->p, po, dp, s, scale));
			snprintf(lb, sizeof lb, "B b%d dQ h%d", b->index, j);
			TRY(k_gemm(k, 0, 0, s, d, s, 1, dp, 0, s, st->qkv, q + d, qc, 0, dqkv, q, qc, lb));
			snprintf(lb, sizeof lb, "B b%d dK h%d", b->index, j);
			TRY(k_gemm(k, 1, 0, s, d, s, 1, dp, 0, s, st->qkv, q, qc, 0, dqkv, q + d, qc, lb));
		}
	k_free(k, &dp);
	k_free(k, &dO);
	snprintf(lb, sizeof lb, "B b%d qkv dW", b->index);
	TRY(k_gemm(k, 1, 0, h, qc, r, 1, st->xa, 0, h, dqkv, 0, qc, 1, grd(k, b, SL_T_QKV_W), 0, qc,
		   lb));
	TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "input gradient partial sums"));
	snprintf(lb, sizeof lb, "B b%d qkv dX", b->index);
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
	if (!k->d)
		return SL_OK;
	if (k->dry) {
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

/* A message of the pipeline: peer, size, which tensor, and its buffer. */
struct pmsg {
	int peer;
	size_t n;
	int key;
	float *buf;
};

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

#define MAX_UNIT_MSGS 4

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
	sl_cluster *c = sl_dev_cluster(k->d);
	int id = sl_dev_id(k->d);
	for (;;) {
		next_round(s, ns, sdone, r, nr, rdone, si, &nsi, ri, &nri);
		if (nsi == 0 && nri == 0)
			return SL_OK;
		sl_msg sm[MAX_UNIT_MSGS], rm[MAX_UNIT_MSGS];
		for (int i = 0; i < nsi; i++)
			sm[i] = sl_msg1(s[si[i]].peer, s[si[i]].buf, 0, s[si[i]].n * FL);
		for (int i = 0; i < nri; i++)
			rm[i] = sl_msg1(r[ri[i]].peer, r[ri[i]].buf, 0, r[ri[i]].n * FL);
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
			sl_dev_set_op(k->d, op_id(k, a), a->mb);
			if (!a->bwd) {
				if (!x) {
					struct mbgeo g;
					mb_geo(k, a->mb, &g);
					TRY(k_alloc(k, &x, (size_t)g.rl * m->hidden, CAT_WS, "input batch"));
					if (!k->dry)
						sl_model_data(m, k->step, g.row0 + g.r0, g.rl, x, NULL);
				}
				TRY(chunk_fwd(k, a->chunk, a->mb, &x, cs));
			} else {
				TRY(chunk_bwd(k, a->chunk, a->mb, &x, cs));
			}
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
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, &ds->tpg, SL_COLL_ALLREDUCE, G, ds->rep_lo, ds->rep_n,
			   NULL));
	if (l->zero1)
		TRY(k_coll(k, SL_TR_DP_REDUCESCATTER, &ds->dpg, SL_COLL_REDUCESCATTER, G, 0, ds->n,
			   NULL));
	else
		TRY(k_coll(k, SL_TR_DP_ALLREDUCE, &ds->dpg, SL_COLL_ALLREDUCE, G, 0, ds->n, NULL));
	if (k->d && !k->dry) {
		double mark = sl_dev_cpu_mark();
		sl_adam(&k->tr->m, k->step + 1, ds->P + ds->opt_lo, ds->G + ds->opt_lo, ds->M, ds->V,
			ds->opt_hi - ds->opt_lo);
		TRY(ew_done(k, mark, "adam"));
	}
	if (l->zero1)
		TRY(k_coll(k, SL_TR_DP_ALLGATHER, &ds->dpg, SL_COLL_ALLGATHER, P, 0, ds->n, NULL));
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
	if ((rc = reserve(&k, ds->n * FL, "its parameters")) ||
	    (rc = reserve(&k, ds->n * FL, "its gradients")) ||
	    (rc = reserve(&k, 2 * (ds->opt_hi - ds->opt_lo) * FL, "its Adam moments")))
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

/* ---- the prediction ---- */

enum { PO_COMPUTE, PO_COLL, PO_XFER, PO_PIPE_END, PO_BARRIER };

struct pop {
	int type;
	double flops;
	int seg;      /* PO_COLL: index into the device's recording */
	int ns, nr;   /* PO_XFER: the exchange's messages */
	struct pmsg s[MAX_UNIT_MSGS], r[MAX_UNIT_MSGS];
};

struct plist {
	struct pop *op;
	int n, cap;
	struct rec rec; /* the recorded collectives the ops point into */
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

/* Turn the recording since `from` into ops. */
static int pl_take(struct plist *pl, int from)
{
	for (int i = from; i < pl->rec.n; i++) {
		struct pop o;
		memset(&o, 0, sizeof o);
		o.type = pl->rec.s[i].coll ? PO_COLL : PO_COMPUTE;
		o.flops = pl->rec.s[i].flops;
		o.seg = i;
		if (pl_push(pl, &o))
			return SL_ENOMEM;
	}
	pl->rec.floor = pl->rec.n;
	return SL_OK;
}

/* A unit's exchange as ops, split as exchange() splits it. */
static int pl_exchange(struct plist *pl, const struct pmsg *s, int ns, const struct pmsg *r, int nr)
{
	int sdone[MAX_UNIT_MSGS] = {0}, rdone[MAX_UNIT_MSGS] = {0};
	int si[MAX_UNIT_MSGS], ri[MAX_UNIT_MSGS], nsi, nri;
	for (;;) {
		next_round(s, ns, sdone, r, nr, rdone, si, &nsi, ri, &nri);
		if (nsi == 0 && nri == 0)
			return SL_OK;
		struct pop o;
		memset(&o, 0, sizeof o);
		o.type = PO_XFER;
		o.ns = nsi;
		o.nr = nri;
		for (int i = 0; i < nsi; i++)
			o.s[i] = s[si[i]];
		for (int i = 0; i < nri; i++)
			o.r[i] = r[ri[i]];
		if (pl_push(pl, &o))
			return SL_ENOMEM;
	}
}

/* One device's step as ops: the same block functions, recording. */
static int pred_build(const sl_train *tr, struct dstate *ds, struct plist *pl, sl_err *err)
{
	struct kctx k;
	memset(&k, 0, sizeof k);
	k.rec = &pl->rec;
	k.tr = tr;
	k.ds = ds;
	k.err = err;
	int nb = 0;
	for (int c = 0; c < tr->v; c++)
		if (ds->cfirst[c + 1] - ds->cfirst[c] > nb)
			nb = ds->cfirst[c + 1] - ds->cfirst[c];
	struct bstash *bs = calloc((size_t)(nb ? nb : 1), sizeof *bs);
	if (!bs)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	struct cstash cs = {bs, NULL};
	struct pmsg pend[MAX_UNIT_MSGS];
	int npend = 0, rc = SL_OK;
	for (int i = 0; i < ds->nacts && rc == SL_OK;) {
		int j = unit_end(ds, i);
		struct pmsg in[MAX_UNIT_MSGS];
		int nin = 0;
		for (int u = i; u < j; u++) {
			struct pmsg msg = action_input(&k, &ds->acts[u], stream_floats(&k, ds->acts[u].mb));
			if (msg.peer >= 0)
				in[nin++] = msg;
		}
		rc = pl_exchange(pl, pend, npend, in, nin);
		npend = 0;
		for (int u = i; u < j && rc == SL_OK; u++) {
			const sl_pp_action *a = &ds->acts[u];
			float *x = NULL;
			int r0 = pl->rec.n;
			rc = a->bwd ? chunk_bwd(&k, a->chunk, a->mb, &x, &cs)
				    : chunk_fwd(&k, a->chunk, a->mb, &x, &cs);
			if (rc == SL_OK)
				rc = pl_take(pl, r0);
			struct pmsg out = action_output(&k, a, stream_floats(&k, a->mb));
			if (out.peer >= 0)
				pend[npend++] = out;
		}
		i = j;
	}
	free(bs);
	if (rc == SL_OK)
		rc = pl_exchange(pl, pend, npend, NULL, 0);
	struct pop pe = {.type = PO_PIPE_END};
	if (rc == SL_OK)
		rc = pl_push(pl, &pe);
	int r0 = pl->rec.n;
	if (rc == SL_OK)
		rc = sync_and_update(&k);
	if (rc == SL_OK)
		rc = pl_take(pl, r0);
	struct pop bar = {.type = PO_BARRIER};
	if (rc == SL_OK)
		rc = pl_push(pl, &bar);
	if (rc == SL_ENOMEM)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	return rc;
}

struct pdev {
	double clock, compute, comm, pipe_end, pipe_busy;
	int pc, xphase, ri;
	double sp[2 * MAX_UNIT_MSGS][2];
	int nsp;
};

/* The simulation.  Without a cluster (c == NULL) it only checks the plan:
 * nominal costs, same dependencies. */
struct psim {
	const sl_cluster *c;
	int n;
	double rate;
	struct pdev d[SL_MAX_DEVICES];
	/* per link src*n+dst: when it is free, and the message posted on it
	 * (at most one: a sender waits until its message is taken) */
	double free_at[SL_MAX_DEVICES * SL_MAX_DEVICES];
	int posted[SL_MAX_DEVICES * SL_MAX_DEVICES], key[SL_MAX_DEVICES * SL_MAX_DEVICES];
	double pt0[SL_MAX_DEVICES * SL_MAX_DEVICES], pt1[SL_MAX_DEVICES * SL_MAX_DEVICES];
	int crossed; /* a receiver met another tensor than it expected */
};

static sl_link_spec sim_link(const struct psim *S, int src, int dst)
{
	if (!S->c) {
		sl_link_spec l = {1e9, 1e-6};
		return l;
	}
	return sl_cluster_link(S->c, src, dst);
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

/* A message src->dst posted at the sender's clock t: its span. */
static void post(struct psim *S, int src, int dst, double t, double bytes, double *t0, double *t1)
{
	sl_link_spec ln = sim_link(S, src, dst);
	int li = src * S->n + dst;
	double start = t > S->free_at[li] ? t : S->free_at[li];
	*t0 = start;
	*t1 = start + ln.latency + bytes / ln.bandwidth;
	S->free_at[li] = *t1;
}

/* A collective over ranks[] with every member present: the exchanges of
 * the ring algorithm, step by step; trees by their closed form. */
static void sim_coll(struct psim *S, const sl_group *g, const struct seg *sg, sl_algo algo)
{
	int p = g->n;
	size_t off[SL_MAX_DEVICES + 1];
	sl_block_offsets(sg->count, p, sg->has_counts ? sg->counts : NULL, off);
	if (algo != SL_ALGO_RING) {
		double mx = 0, lat = 0, bw = INFINITY;
		for (int r = 0; r < p; r++) {
			struct pdev *d = &S->d[g->ranks[r]];
			if (d->clock > mx)
				mx = d->clock;
			sl_link_spec ln = sim_link(S, g->ranks[r], g->ranks[(r + 1) % p]);
			if (ln.latency > lat)
				lat = ln.latency;
			if (ln.bandwidth < bw)
				bw = ln.bandwidth;
		}
		double t = sl_cost_coll(sg->op, algo, p, (double)sg->count * FL, lat, bw);
		for (int r = 0; r < p; r++) {
			struct pdev *d = &S->d[g->ranks[r]];
			d->comm += t;
			d->clock = mx + t;
		}
		return;
	}
	int phases[2], np = 0;
	if (sg->op == SL_COLL_ALLREDUCE || sg->op == SL_COLL_REDUCESCATTER)
		phases[np++] = 0;
	if (sg->op == SL_COLL_ALLREDUCE || sg->op == SL_COLL_ALLGATHER)
		phases[np++] = 1;
	for (int ph = 0; ph < np; ph++)
		for (int s = 0; s < p - 1; s++) {
			double t0[SL_MAX_DEVICES], t1[SL_MAX_DEVICES];
			for (int r = 0; r < p; r++) {
				int blk = phases[ph] == 0 ? ((r - s - 1) % p + p) % p : ((r - s) % p + p) % p;
				double bytes = (double)(off[blk + 1] - off[blk]) * FL;
				post(S, g->ranks[r], g->ranks[(r + 1) % p], S->d[g->ranks[r]].clock, bytes,
				     &t0[r], &t1[r]);
			}
			for (int r = 0; r < p; r++) {
				int prev = (r + p - 1) % p;
				double sp[2][2] = {{t0[r], t1[r]}, {t0[prev], t1[prev]}};
				settle(&S->d[g->ranks[r]], sp, 2);
			}
		}
}

static const struct seg *op_seg(const struct plist *pl, const struct pop *o)
{
	return &pl->rec.s[o->seg];
}

/* Advance device i by one op if it can; 0 when it must wait.  Exchanges
 * follow the engine: post every send, take the receives in order (each
 * once its sender has posted), then wait until every send is taken. */
static int sim_advance(struct psim *S, const sl_train *tr, struct plist *pl, int i)
{
	struct pdev *d = &S->d[i];
	if (d->pc >= pl[i].n)
		return 0;
	const struct pop *o = &pl[i].op[d->pc];
	switch (o->type) {
	case PO_COMPUTE:
		d->clock += o->flops / S->rate;
		d->compute += o->flops / S->rate;
		d->pc++;
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
				int li = i * S->n + o->s[m].peer;
				post(S, i, o->s[m].peer, d->clock, (double)o->s[m].n * FL, &S->pt0[li],
				     &S->pt1[li]);
				S->posted[li] = 1;
				S->key[li] = o->s[m].key;
				d->sp[d->nsp][0] = S->pt0[li];
				d->sp[d->nsp][1] = S->pt1[li];
				d->nsp++;
			}
			d->xphase = 1;
			d->ri = 0;
		}
		if (d->xphase == 1) {
			for (; d->ri < o->nr; d->ri++) {
				int li = o->r[d->ri].peer * S->n + i;
				if (!S->posted[li])
					return 0;
				if (S->key[li] != o->r[d->ri].key)
					S->crossed = 1;
				S->posted[li] = 0;
				d->sp[d->nsp][0] = S->pt0[li];
				d->sp[d->nsp][1] = S->pt1[li];
				d->nsp++;
			}
			d->xphase = 2;
		}
		for (int m = 0; m < o->ns; m++)
			if (S->posted[i * S->n + o->s[m].peer])
				return 0;
		settle(d, d->sp, d->nsp);
		d->xphase = 0;
		d->pc++;
		return 1;
	case PO_COLL: {
		const struct seg *sg = op_seg(&pl[i], o);
		const sl_group *g = sg->dp_group ? &tr->dev[i].dpg : &tr->dev[i].tpg;
		for (int r = 0; r < g->n; r++) {
			int j = g->ranks[r];
			if (S->d[j].pc >= pl[j].n)
				return 0;
			const struct pop *oj = &pl[j].op[S->d[j].pc];
			if (oj->type != PO_COLL || op_seg(&pl[j], oj)->dp_group != sg->dp_group)
				return 0;
		}
		sim_coll(S, g, sg, tr->l.algo);
		for (int r = 0; r < g->n; r++)
			S->d[g->ranks[r]].pc++;
		return 1;
	}
	case PO_BARRIER: {
		double mx = 0;
		for (int j = 0; j < S->n; j++) {
			if (S->d[j].pc >= pl[j].n || pl[j].op[S->d[j].pc].type != PO_BARRIER)
				return 0;
			if (S->d[j].clock > mx)
				mx = S->d[j].clock;
		}
		for (int j = 0; j < S->n; j++) {
			S->d[j].clock = mx;
			S->d[j].pc++;
		}
		return 1;
	}
	}
	return 0;
}

/* Build every device's ops and run them; c == NULL checks the plan only. */
static int simulate(const sl_train *tr, const sl_cluster *c, sl_train_prediction *out,
		    sl_err *err)
{
	struct plist *pl = calloc((size_t)tr->ndev, sizeof *pl);
	struct psim *S = calloc(1, sizeof *S);
	int rc = pl && S ? SL_OK : sl_fail(err, SL_ENOMEM, "out of host memory");
	for (int i = 0; i < tr->ndev && rc == SL_OK; i++)
		rc = pred_build(tr, (struct dstate *)&tr->dev[i], &pl[i], err);
	if (rc == SL_OK) {
		S->c = c;
		S->n = tr->ndev;
		S->rate = c ? sl_cluster_config_of(c)->flops : 1e12;
		for (;;) {
			int progress = 0, done = 1;
			for (int i = 0; i < S->n; i++) {
				while (sim_advance(S, tr, pl, i))
					progress = 1;
				if (S->d[i].pc < pl[i].n)
					done = 0;
			}
			if (done)
				break;
			if (!progress) {
				rc = sl_fail(err, SL_EINVAL,
					     "this schedule would deadlock on %s with p=%d, m=%d, v=%d (a bug in shardlab)",
					     sl_sched_name(tr->l.schedule), tr->l.pp, tr->l.microbatches, tr->v);
				break;
			}
		}
		if (rc == SL_OK && S->crossed)
			rc = sl_fail(err, SL_EINVAL,
				     "this schedule's messages would cross on a link with p=%d, m=%d, v=%d (a bug in shardlab)",
				     tr->l.pp, tr->l.microbatches, tr->v);
	}
	if (rc == SL_OK && out) {
		memset(out, 0, sizeof *out);
		for (int i = 0; i < S->n; i++) {
			struct pdev *d = &S->d[i];
			out->step_s = d->clock;
			if (d->pipe_end > out->pipeline_s)
				out->pipeline_s = d->pipe_end;
			if (d->pipe_busy > out->ideal_s)
				out->ideal_s = d->pipe_busy;
			out->compute_s[i] = d->compute;
			out->comm_s[i] = d->comm;
		}
		out->bubble_fraction =
			out->ideal_s > 0 ? (out->pipeline_s - out->ideal_s) / out->ideal_s : 0;
	}
	for (int i = 0; pl && i < tr->ndev; i++) {
		free(pl[i].op);
		free(pl[i].rec.s);
	}
	free(pl);
	free(S);
	return rc;
}

int sl_train_predict(const sl_train *tr, const sl_cluster *c, sl_train_prediction *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	if (sl_cluster_devices(c) != tr->ndev)
		return sl_fail(err, SL_EINVAL, "the layout needs %d devices but the cluster has %d",
			       tr->ndev, sl_cluster_devices(c));
	return simulate(tr, c, out, err);
}
