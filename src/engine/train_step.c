/* SPDX-License-Identifier: MIT */
/* train_step.c - one device's training step.
 *
 * The step is written once, as block functions that do all their work
 * through a handful of wrappers (k_gemm, k_coll, k_alloc, the ew_* element-
 * wise kernels).  Run on a device they do the arithmetic and the engine
 * calls; with no device (k->d == NULL) they only record the work (FLOPs and
 * collectives), which is what the prediction replays (train_est.c).  The
 * same split is where a timing-only mode plugs in: skip the arithmetic, keep
 * the calls. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "device.h"
#include "train_internal.h"
#include "xfer.h"

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

int trn_rec_mark(struct kctx *k, int type)
{
	struct pop o;
	memset(&o, 0, sizeof o);
	o.type = type;
	return rec_op(k, &o);
}

double trn_param_elem_bytes(const sl_cluster_config *hw)
{
	return hw && hw->precision == SL_PREC_BF16 ? 2.0 : 4.0;
}

double trn_opt_elem_bytes(const sl_cluster_config *hw)
{
	return hw && hw->precision == SL_PREC_BF16 ? 12.0 : 8.0;
}

void trn_set_hw(struct kctx *k, const sl_cluster_config *hw)
{
	k->hw = hw;
	k->realistic = hw && hw->efficiency == SL_EFF_REALISTIC;
	k->eb = hw ? sl_elem_bytes(hw) : 4.0;
	k->batch = 1;
}

/* Back-to-back compute is one piece: the clock adds it up the same way. */
static int rec_compute(struct kctx *k, double flops, double sec)
{
	struct plist *pl = k->pl;
	if (pl->n > 0 && pl->op[pl->n - 1].type == PO_COMPUTE &&
	    pl->op[pl->n - 1].stream == k->stream) {
		pl->op[pl->n - 1].flops += flops;
		pl->op[pl->n - 1].sec += sec;
		return SL_OK;
	}
	struct pop o;
	memset(&o, 0, sizeof o);
	o.type = PO_COMPUTE;
	o.flops = flops;
	o.sec = sec;
	o.stream = k->stream;
	return rec_op(k, &o);
}

/* The layout's overlap on this machine (SL_OVERLAP_AUTO: when realistic). */
static int overlap_on(const struct kctx *k)
{
	int o = k->tr->l.overlap;
	return o == SL_OVERLAP_ON || (o == SL_OVERLAP_AUTO && k->realistic);
}

/* The next operations on stream s (sl_dev_stream); recording, their ops
 * carry it. */
static void k_stream(struct kctx *k, int s)
{
	if (k->d)
		sl_dev_stream(k->d, s);
	k->stream = s;
}

/* Recording: a PO_WAIT or PO_MARK of stream s and event slot. */
static int rec_stream_op(struct kctx *k, int type, int s, int slot)
{
	struct pop o;
	memset(&o, 0, sizeof o);
	o.type = type;
	o.stream = s;
	o.slot = slot;
	return rec_op(k, &o);
}

/* The compute stream waits for stream s's work so far (slot -1), or for
 * what it had when event `slot` was marked on it. */
static int k_wait_ev(struct kctx *k, int s, int slot)
{
	if (!k->d)
		return rec_stream_op(k, PO_WAIT, s, slot);
	if (slot < 0)
		sl_dev_stream_wait(k->d, s);
	else
		sl_dev_wait_event(k->d, k->ev[slot]);
	return SL_OK;
}

static int k_wait(struct kctx *k, int s)
{
	return k_wait_ev(k, s, -1);
}

static int k_mark(struct kctx *k, int s, int slot)
{
	if (!k->d)
		return rec_stream_op(k, PO_MARK, s, slot);
	k->ev[slot] = sl_dev_stream_now(k->d, s);
	return SL_OK;
}

static int k_gemm(struct kctx *k, int ta, int tb, int M, int N, int K, float alpha, const float *a,
                  size_t ao, int lda, const float *b, size_t bo, int ldb, float beta, float *c,
                  size_t co, int ldc, const char *label)
{
	if (!k->d) {
		double fl = 2.0 * M * N * K * k->times;
		if (k->fused) {
			fl *= k->share;
			return rec_compute(k, fl, k->realistic ? sl_attn_s(k->hw, fl) : 0);
		}
		return rec_compute(k, fl, k->realistic ? sl_gemm_s(k->hw, M, N, K, k->times) : 0);
	}
	/* The event says what it is in fields too (WORK set them). */
	sl_dev_set_work(k->d, &k->work);
	sl_dev_set_batch(k->d, k->batch);
	int rc;
	if (k->dry)
		rc = sl_dev_sgemm(k->d, ta, tb, M, N, K, alpha, NULL, lda, NULL, ldb, beta, NULL,
		                  ldc, label, k->err);
	else
		rc = sl_dev_sgemm(k->d, ta, tb, M, N, K, alpha, a + ao, lda, b + bo, ldb, beta,
		                  c + co, ldc, label, k->err);
	sl_dev_set_work(k->d, NULL);
	sl_dev_set_batch(k->d, 1);
	return rc;
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

/* real 0: a handle only, whatever the device (memory the step accounts for
 * but keeps elsewhere, as ZeRO-3's gathered parameters in P). */
static int k_alloc_as(struct kctx *k, float **out, size_t nf, int cat, const char *what, int real)
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
	/* The device holds the precision's bytes; the host, fp32 values. */
	size_t bytes = (size_t)((double)nf * k->eb);
	if (!k->d || k->dry || !real) {
		/* A handle, never read: the step's control flow only asks which
		 * buffer goes where and whether one exists. */
		int rc = k->d ? sl_dev_reserve(k->d, bytes, what, k->err) : SL_OK;
		if (rc)
			return rc;
		*out = (float *)(++dr->handles << 4);
	} else {
		int rc = sl_dev_reserve(k->d, bytes, what, k->err);
		if (rc)
			return rc;
		if (!(*out = malloc(nf ? nf * FL : 1))) {
			sl_dev_release(k->d, bytes);
			return sl_fail(k->err, SL_ENOMEM, "device %d: the host cannot allocate %s",
			               sl_dev_id(k->d), what);
		}
	}
	dr->live[dr->nlive++] = (struct alloc){*out, bytes, cat, k->d && !k->dry && real};
	mem_track(dr, (int64_t)bytes, cat);
	return SL_OK;
}

static int k_alloc(struct kctx *k, float **out, size_t nf, int cat, const char *what)
{
	return k_alloc_as(k, out, nf, cat, what, 1);
}

static void drop(struct kctx *k, const struct alloc *a)
{
	if (!k->d)
		return;
	if (a->real)
		free(a->p);
	sl_dev_release(k->d, a->bytes);
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

void trn_free_all(struct kctx *k)
{
	struct drun *dr = k->dr;
	while (dr->nlive > 0) {
		struct alloc a = dr->live[--dr->nlive];
		drop(k, &a);
		mem_track(dr, -(int64_t)a.bytes, a.cat);
	}
}

static int k_coll(struct kctx *k, sl_traffic_kind kind, const sl_group *g, sl_coll_op op,
                  float *buf, size_t off, size_t count, const size_t *counts)
{
	if (g->n < 2)
		return SL_OK;
	if (!k->d) {
		struct pop o;
		memset(&o, 0, sizeof o);
		o.type = PO_COLL;
		o.op = op;
		o.stream = k->stream;
		o.dp_group = g == k->ds->dpg;
		o.cp_group = g == k->ds->cpg;
		o.kind = kind;
		o.count = count;
		/* Uneven counts only come from sequence parallelism, which deals
		 * whole rows of h values (mb_geo); scatter/gather's gathers pass
		 * none and take sl_block_offsets()'s blocks. */
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

/* ---- element-wise work: done on a device and charged in measured timing
 * or realistic model timing; recorded with its realistic time ---- */

/* elems: the elements the kernel reads and writes, counted once each. */
static int ew_done(struct kctx *k, double mark, double elems, const char *label)
{
	return sl_dev_ew(k->d, elems * k->eb, mark, label, k->err);
}

/* Recording: the kernel's time on a realistic machine (k->times copies,
 * fused); on a timing-only device, the same charged without the work. */
static int ew_skip(struct kctx *k, double elems, const char *label)
{
	if (!k->d) {
		if (k->fused || !k->realistic)
			return SL_OK; /* fused: on chip */
		return rec_compute(k, 0, sl_mem_s(k->hw, elems * k->eb * k->times));
	}
	sl_dev_set_batch(k->d, k->batch);
	int rc = sl_dev_ew(k->d, elems * k->eb, sl_dev_cpu_mark(), label, k->err);
	sl_dev_set_batch(k->d, 1);
	return rc;
}

#define EW_BEGIN(elems, label)                                                                     \
	if (!k->d || k->dry)                                                                       \
		return ew_skip(k, (double)(elems), label);                                         \
	double mark = sl_dev_cpu_mark()
#define EW_END(elems, label)                                                                       \
	do {                                                                                       \
		sl_dev_set_batch(k->d, k->batch);                                                  \
		int rc_ = ew_done(k, mark, (double)(elems), label);                                \
		sl_dev_set_batch(k->d, 1);                                                         \
		return rc_;                                                                        \
	} while (0)

/* y[rows x cols] += b (broadcast over rows) */
static int ew_bias(struct kctx *k, float *y, size_t rows, size_t cols, const float *b)
{
	EW_BEGIN(2 * rows * cols + cols, "bias");
	sl_add_bias(y, b, rows, cols);
	EW_END(2 * rows * cols + cols, "bias");
}

static int ew_add(struct kctx *k, float *y, const float *x, size_t n, const char *label)
{
	EW_BEGIN(3 * n, label);
	for (size_t i = 0; i < n; i++)
		y[i] += x[i];
	EW_END(3 * n, label);
}

static int ew_copy(struct kctx *k, float *dst, size_t doff, const float *src, size_t soff, size_t n)
{
	EW_BEGIN(2 * n, "copy");
	memcpy(dst + doff, src + soff, n * FL);
	EW_END(2 * n, "copy");
}

static int ew_colsum(struct kctx *k, float *g, const float *dy, size_t rows, size_t cols)
{
	EW_BEGIN(rows * cols + 2 * cols, "bias grad");
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j++)
			g[j] += dy[i * cols + j];
	EW_END(rows * cols + 2 * cols, "bias grad");
}

/* The MLP's activation on r rows of f (fc1 output z: r x f, or r x 2f
 * for SwiGLU's gate and up pairs). */
static int ew_act(struct kctx *k, const float *z, float *a, size_t r, size_t f)
{
	int kind = k->tr->m.ffn_kind;
	const char *label = kind == SL_FFN_SWIGLU ? "swiglu" : "gelu";
	size_t elems = (kind == SL_FFN_SWIGLU ? 3 : 2) * r * f;
	EW_BEGIN(elems, label);
	sl_ffn_act(kind, z, a, r, f);
	EW_END(elems, label);
}

/* dz from da; GeLU's works in place (dz == da). */
static int ew_act_grad(struct kctx *k, const float *z, const float *da, float *dz, size_t r,
                       size_t f)
{
	int kind = k->tr->m.ffn_kind;
	const char *label = kind == SL_FFN_SWIGLU ? "swiglu grad" : "gelu grad";
	size_t elems = (kind == SL_FFN_SWIGLU ? 5 : 3) * r * f;
	EW_BEGIN(elems, label);
	sl_ffn_act_grad(kind, z, da, dz, r, f);
	EW_END(elems, label);
}

/* The pre-norm of r rows of h: reads x, writes y; its backward reads x
 * and the gradient and writes the gradient (the statistics made again
 * from x). */
static int ew_norm(struct kctx *k, const float *x, float *y, size_t r, size_t h)
{
	EW_BEGIN(2 * r * h, "norm");
	sl_norm_rows(k->tr->m.norm, x, y, r, h);
	EW_END(2 * r * h, "norm");
}

static int ew_norm_grad(struct kctx *k, const float *x, float *d, size_t r, size_t h)
{
	EW_BEGIN(3 * r * h, "norm grad");
	sl_norm_grad_rows(k->tr->m.norm, x, d, r, h);
	EW_END(3 * r * h, "norm grad");
}

/* Under a causal mask, as Megatron-LM's fused scale-mask-softmax: it reads
 * and writes the whole s x s, zeros above the diagonal. */
static int ew_softmax(struct kctx *k, float *p, size_t off, int s)
{
	EW_BEGIN(2 * (size_t)s * s, "softmax");
	sl_softmax_masked(p + off, s, k->tr->m.mask);
	EW_END(2 * (size_t)s * s, "softmax");
}

static int ew_softmax_grad(struct kctx *k, const float *p, size_t off, float *dp, int s,
                           float scale)
{
	EW_BEGIN(3 * (size_t)s * s, "softmax grad");
	sl_softmax_grad_rows(p + off, dp, s, s, s, scale);
	EW_END(3 * (size_t)s * s, "softmax grad");
}

/* A fused attention kernel (FlashAttention) begins or ends: its one launch
 * (shared by the heads, k->batch), then products at the fused rate and
 * element-wise work on chip.  Under a causal mask it skips the tiles above
 * the diagonal: each product executes sl_attn_tile_share of its FLOPs. */
static void fuse(struct kctx *k, int on)
{
	k->fused = on;
	k->share = on ? sl_attn_tile_share(&k->tr->m) : 1;
	if (k->d)
		sl_dev_set_fused(k->d, on, k->share);
}

static int fused_begin(struct kctx *k, const char *label)
{
	int rc = SL_OK;
	if (!k->d)
		rc = k->realistic ? rec_compute(k, 0, sl_mem_s(k->hw, 0)) : SL_OK;
	else
		rc = sl_dev_ew(k->d, 0, sl_dev_cpu_mark(), label, k->err); /* one launch for all */
	fuse(k, 1);
	return rc;
}

/* The host's scratch for one head's s x s scores under fused attention: on
 * the device they live in on-chip tiles, so no device memory is charged. */
static int scratch(struct kctx *k, float **p, size_t n)
{
	*p = NULL;
	if (!k->d || k->dry)
		return SL_OK;
	if (!(*p = malloc(n * FL)))
		return sl_fail(k->err, SL_ENOMEM, "out of host memory");
	return SL_OK;
}

/* ---- a micro-batch's shape on this device ---- */

struct mbgeo {
	int nb;                     /* sequences */
	long row0;                  /* its first row (token) in the global batch */
	int r;                      /* rows */
	int sp;                     /* sequence parallel: the residual stream is split by rows */
	int r0, rl;                 /* the rows of the residual stream this device holds */
	size_t cnt[SL_MAX_DEVICES]; /* sequence parallel: rows*h of every TP rank */
	/* context parallelism: cp ranks share each sequence; this one (ci)
	 * holds chunks ci and 2 cp - 1 - ci of cs tokens each, its sl = 2 cs
	 * rows a sequence in that order */
	int cp, ci, cs, sl;
};

/* Local row lr of the micro-batch as a row of the global batch, and how
 * many rows from it (up to end) follow on in the global batch too. */
static long mb_row(const struct mbgeo *g, int seq, long lr, long end, long *len)
{
	if (g->cp == 1) {
		*len = end - lr;
		return g->row0 + lr;
	}
	long n = lr / g->sl, u = lr % g->sl, c = u / g->cs;
	long chunk = c == 0 ? g->ci : 2 * g->cp - 1 - g->ci;
	long stop = n * g->sl + (c + 1) * g->cs;
	*len = (end < stop ? end : stop) - lr;
	return g->row0 + n * seq + chunk * g->cs + u % g->cs;
}

static void mb_geo(const struct kctx *k, int mb, struct mbgeo *g)
{
	const sl_model_spec *m = &k->tr->m;
	const sl_layout *l = &k->tr->l;
	int first, count;
	sl_layout_microbatch(m, l, k->ds->dp / l->cp, mb, &first, &count);
	g->nb = count;
	g->cp = l->cp;
	g->ci = k->ds->cp;
	g->sl = m->seq / l->cp;
	g->cs = l->cp > 1 ? m->seq / (2 * l->cp) : m->seq;
	g->r = count * g->sl;
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

/* Attention dropout on head j of sequence n of the micro-batch: p (at po)
 * into out (at oo), or (grad) a gradient in place.  The forward reads the
 * probabilities and writes the dropped ones and the mask (a byte each);
 * the backward reads the gradient and the mask and writes the gradient.
 * Inside a fused kernel, all on chip. */
static int ew_dropout(struct kctx *k, const struct blk *b, const struct mbgeo *g, int n, int j,
                      const float *p, size_t po, float *out, size_t oo, int s, int grad)
{
	/* two values and a byte each */
	double elems = (2.0 + 1.0 / k->eb) * (double)s * s;
	const char *label = grad ? "attention dropout grad" : "attention dropout";
	EW_BEGIN(elems, label);
	const sl_model_spec *m = &k->tr->m;
	sl_attn_dropout(m, k->step, b->index, g->row0 / m->seq + n, b->h0 + j, p + po, out + oo, s);
	EW_END(elems, label);
}

/* The hidden dropout of sub-block sub on the device's rows, as the
 * reference drops them in the global batch. */
static void hdropout(struct kctx *k, const struct blk *b, const struct mbgeo *g, int sub,
                     const float *in, float *out)
{
	size_t h = (size_t)k->tr->m.hidden;
	long len;
	for (long lr = g->r0; lr < g->r0 + g->rl; lr += len) {
		long gr = mb_row(g, k->tr->m.seq, lr, g->r0 + g->rl, &len);
		size_t o = (size_t)(lr - g->r0) * h;
		sl_hidden_dropout(&k->tr->m, k->step, b->index, sub, gr, (size_t)len, in + o,
		                  out + o);
	}
}

/* The data loader's inputs and targets of the device's rows. */
static void mb_data(const struct kctx *k, const struct mbgeo *g, float *x, float *y)
{
	size_t h = (size_t)k->tr->m.hidden;
	long len;
	for (long lr = g->r0; lr < g->r0 + g->rl; lr += len) {
		long gr = mb_row(g, k->tr->m.seq, lr, g->r0 + g->rl, &len);
		size_t o = (size_t)(lr - g->r0) * h;
		sl_model_data(&k->tr->m, k->step, gr, (int)len, x ? x + o : NULL, y ? y + o : NULL);
	}
}

/* The backward of sub-block sub's hidden dropout (0 attention, 1 MLP) on
 * the device's rows: reads the gradient and the mask (a byte each),
 * writes the dropped gradient. */
static int ew_hdropout_grad(struct kctx *k, const struct blk *b, const struct mbgeo *g, int sub,
                            const float *in, float *out)
{
	size_t n = (size_t)g->rl * (size_t)k->tr->m.hidden;
	double elems = (2.0 + 1.0 / k->eb) * (double)n;
	EW_BEGIN(elems, "hidden dropout grad");
	hdropout(k, b, g, sub, in, out);
	EW_END(elems, "hidden dropout grad");
}

/* A sub-block's output y (the device's rows) plus its bias, through the
 * hidden dropout when there is one, plus the residual x: one fused kernel,
 * as Megatron-LM's bias_dropout_add, that reads y, x and the bias and
 * writes y (and the mask, a byte an element). */
static int ew_bias_dropout_add(struct kctx *k, const struct blk *b, const struct mbgeo *g, int sub,
                               float *y, const float *bias, const float *x)
{
	size_t h = (size_t)k->tr->m.hidden, rows = (size_t)g->rl, n = rows * h;
	int drop = k->tr->m.hidden_dropout > 0;
	double elems = 3.0 * (double)n + (double)h + (drop ? (double)n / k->eb : 0);
	const char *label = drop ? "bias, dropout, residual" : "bias, residual";
	EW_BEGIN(elems, label);
	sl_add_bias(y, bias, rows, h);
	if (drop)
		hdropout(k, b, g, sub, y, y);
	for (size_t i = 0; i < n; i++)
		y[i] += x[i];
	EW_END(elems, label);
}

/* Events are named on a device; a recording has none to name. */
/* The next GEMM: its fields, and its label ("F b1 fc1", "B b0 qkv dW",
 * "F b2 scores h3") made from them. */
static void work_set(struct kctx *k, char *lb, size_t n, sl_work_pass pass, int block,
                     sl_work_part part, sl_work_grad grad, int head)
{
	k->work = (sl_ev_work){.pass = (signed char)pass,
	                       .part = (signed char)part,
	                       .grad = (signed char)grad,
	                       .block = (short)block,
	                       .head = (short)head};
	char tail[16] = "";
	if (grad != SL_GRAD_NONE)
		snprintf(tail, sizeof tail, " %s", grad == SL_GRAD_W ? "dW" : "dX");
	else if (head >= 0)
		snprintf(tail, sizeof tail, " h%d", head);
	snprintf(lb, n, "%c b%d %s%s", pass == SL_PASS_FWD ? 'F' : 'B', block,
	         sl_work_part_tag(part), tail);
}
#define WORK(pass, block, part, grad, head)                                                        \
	(k->d ? work_set(k, lb, sizeof lb, pass, block, part, grad, head) : (void)0)

#define TRY(x)                                                                                     \
	do {                                                                                       \
		int rc_ = (x);                                                                     \
		if (rc_)                                                                           \
			return rc_;                                                                \
	} while (0)

/* After a weight-gradient product of rows x cols: with separate gradient
 * accumulation (model.h), the product wrote a fresh gradient into a
 * transient buffer, and a kernel adds it into the gradient array: it reads
 * both and writes the array, three values an element (a gradient element
 * is an activation's size at either precision).  Fused: nothing, the
 * product added into the array. */
static int wgrad_add(struct kctx *k, size_t rows, size_t cols)
{
	if (k->tr->m.grad_accum != SL_GACC_SEPARATE)
		return SL_OK;
	float *g = NULL;
	TRY(k_alloc(k, &g, rows * cols, CAT_WS, "weight gradient (accumulated separately)"));
	int rc = ew_skip(k, 3.0 * (double)rows * (double)cols, "gradient accumulation");
	k_free(k, &g);
	return rc;
}

/* The input of a sub-block as the whole micro-batch: with sequence
 * parallelism the gathered rows (a new buffer, for the forward's product
 * only), else x itself (which becomes an activation). */
static int gather_input(struct kctx *k, const struct mbgeo *g, float *x, float **full)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (!g->sp) {
		*full = x;
		k_recat(k, x, CAT_ACT);
		return SL_OK;
	}
	/* Workspace: only the device's rows are kept (keep_rows). */
	TRY(k_alloc(k, full, n, CAT_WS, "gathered input"));
	TRY(ew_copy(k, *full, (size_t)g->r0 * h, x, 0, (size_t)g->rl * h));
	return k_coll(k, SL_TR_TP_ALLGATHER, k->ds->tpg, SL_COLL_ALLGATHER, *full, 0, n, g->cnt);
}

/* Pre-norm: a sub-block reads its input x (the device's rows) through the
 * norm: *xl keeps x (an activation: the backward's norm reads it) and *xn
 * is the norm's output, a new buffer; without a norm *xn is x. */
static int norm_in(struct kctx *k, const struct mbgeo *g, float *x, float **xl, float **xn)
{
	size_t h = (size_t)k->tr->m.hidden;
	if (k->tr->m.norm == SL_NORM_NONE) {
		*xn = x;
		return SL_OK;
	}
	*xl = x;
	k_recat(k, x, CAT_ACT);
	TRY(k_alloc(k, xn, (size_t)g->rl * h, CAT_WS, "norm output"));
	return ew_norm(k, x, *xn, (size_t)g->rl, h);
}

/* The row-parallel product's partial sums yf (r x h) become the output of
 * sub-block sub (0 attention, 1 MLP): reduced over the TP group, plus bias,
 * through the hidden dropout (its mask kept in st), plus the residual x.
 * *y is yf itself or (sequence parallel) the device's rows of it. */
static int reduce_output(struct kctx *k, const struct blk *b, int sub, struct bstash *st,
                         const struct mbgeo *g, float *yf, const float *bias, const float *x,
                         float **y)
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
	if (k->tr->m.hidden_dropout > 0)
		TRY(k_alloc(k, &st->hmask[sub], (size_t)ceil((double)g->rl * h / k->eb), CAT_ACT,
		            "activations (hidden dropout mask)"));
	return ew_bias_dropout_add(k, b, g, sub, *y, bias, x);
}

/* The backward's start: the gradient dy (the device's rows) through the
 * hidden dropout of sub-block sub into *dm (a new buffer), or dy itself
 * without one; the mask is then done with. */
static int drop_grad(struct kctx *k, const struct blk *b, int sub, struct bstash *st,
                     const struct mbgeo *g, float *dy, float **dm)
{
	*dm = dy;
	if (!(k->tr->m.hidden_dropout > 0))
		return SL_OK;
	TRY(k_alloc(k, dm, (size_t)g->rl * k->tr->m.hidden, CAT_WS, "dropped output gradient"));
	TRY(ew_hdropout_grad(k, b, g, sub, dy, *dm));
	k_free(k, &st->hmask[sub]);
	return SL_OK;
}

/* Sequence parallelism keeps a sub-block's input as the device's rows
 * (Korthikanti et al. 2022: every per-layer activation divided by t): once
 * the forward's product has used the gathered input, it is dropped and the
 * local rows x are kept instead; the backward gathers them again. */
static void keep_rows(struct kctx *k, const struct mbgeo *g, float **full, float **x)
{
	if (!g->sp)
		return;
	k_free(k, full);
	*full = *x;
	*x = NULL;
	k_recat(k, *full, CAT_ACT);
}

/* The device's rows of a product's input gathered whole into *full (else,
 * without sequence parallelism, *full is rows); side: the all-gather on the
 * model-parallel stream, event slot 3 (gather_begin). */
static int gather_rows(struct kctx *k, const struct mbgeo *g, const float *rows, float **full,
                       int side)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (!g->sp) {
		*full = (float *)rows;
		return SL_OK;
	}
	TRY(k_alloc(k, full, n, CAT_WS, "input gathered again"));
	TRY(ew_copy(k, *full, (size_t)g->r0 * h, rows, 0, (size_t)g->rl * h));
	if (side)
		k_stream(k, SL_STREAM_MP);
	int rc = k_coll(k, SL_TR_TP_ALLGATHER, k->ds->tpg, SL_COLL_ALLGATHER, *full, 0, n, g->cnt);
	if (side) {
		if (rc == SL_OK)
			rc = k_mark(k, SL_STREAM_MP, 3);
		k_stream(k, SL_STREAM_COMPUTE);
	}
	return rc;
}

static int regather(struct kctx *k, const struct mbgeo *g, const float *rows, float **full)
{
	return gather_rows(k, g, rows, full, 0);
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

/* dxp (r x h partial sums) reduced over the TP group into *dx, the
 * device's rows: dxp itself, or (sequence parallel) a new buffer. */
static int reduce_rows(struct kctx *k, const struct mbgeo *g, float *dxp, float **dx)
{
	size_t h = (size_t)k->tr->m.hidden, n = (size_t)g->r * h;
	if (!g->sp) {
		*dx = dxp;
		return k_coll(k, SL_TR_TP_ALLREDUCE, k->ds->tpg, SL_COLL_ALLREDUCE, dxp, 0, n,
		              NULL);
	}
	TRY(k_coll(k, SL_TR_TP_REDUCESCATTER, k->ds->tpg, SL_COLL_REDUCESCATTER, dxp, 0, n,
	           g->cnt));
	TRY(k_alloc(k, dx, (size_t)g->rl * h, CAT_WS, "input gradient"));
	TRY(ew_copy(k, *dx, 0, dxp, (size_t)g->r0 * h, (size_t)g->rl * h));
	k_free(k, &dxp);
	return SL_OK;
}

/* dxp (r x h partial input gradients) reduced over the TP group, through
 * the pre-norm (its input xl, or NULL without one), plus the residual's
 * dy, becomes *dx; dy and the gathered copy are freed. */
static int reduce_grad(struct kctx *k, const struct mbgeo *g, float *dxp, float *dy, float *dyf,
                       const float *xl, float **dx)
{
	size_t h = (size_t)k->tr->m.hidden;
	/* (without sequence parallelism dyf is dy, or the dropped gradient) */
	if (dyf != dy)
		k_free(k, &dyf);
	TRY(reduce_rows(k, g, dxp, dx));
	if (xl)
		TRY(ew_norm_grad(k, xl, *dx, (size_t)g->rl, h));
	TRY(ew_add(k, *dx, dy, (size_t)g->rl * h, "residual grad"));
	k_free(k, &dy);
	return SL_OK;
}

/* Overlap with TP: the input gradient's all-reduce (with sequence
 * parallelism, its reduce-scatter) on the model-parallel stream beside the
 * weight gradient's product, as Megatron-LM's asynchronous all-reduce of
 * dX runs it; with sequence parallelism the input's all-gather for that
 * product also goes beside the input gradient's (Megatron-LM's
 * LinearWithGradAccumulationAndAsyncCommunication). */
static int tp_overlap(const struct kctx *k, const struct mbgeo *g)
{
	(void)g;
	return overlap_on(k) && k->tr->l.tp > 1;
}

/* Sequence parallel: the input's all-gather beside what follows. */
static int gather_begin(struct kctx *k, const struct mbgeo *g, const float *rows, float **full)
{
	return gather_rows(k, g, rows, full, 1);
}

static int gather_end(struct kctx *k, const struct mbgeo *g)
{
	return g->sp ? k_wait_ev(k, SL_STREAM_MP, 3) : SL_OK;
}

/* dxp's all-reduce (sequence parallel: reduce-scatter) issued on the
 * model-parallel stream (event slot 2). */
static int dx_reduce_begin(struct kctx *k, const struct mbgeo *g, float *dxp, size_t n)
{
	k_stream(k, SL_STREAM_MP);
	int rc =
	    g->sp ? k_coll(k, SL_TR_TP_REDUCESCATTER, k->ds->tpg, SL_COLL_REDUCESCATTER, dxp, 0, n,
	                   g->cnt)
	          : k_coll(k, SL_TR_TP_ALLREDUCE, k->ds->tpg, SL_COLL_ALLREDUCE, dxp, 0, n, NULL);
	if (rc == SL_OK)
		rc = k_mark(k, SL_STREAM_MP, 2);
	k_stream(k, SL_STREAM_COMPUTE);
	return rc;
}

/* ... and, once the weight gradient is done, waited for: then the rest of
 * reduce_grad (the device's rows, the norm's gradient, the residual's). */
static int dx_reduce_end(struct kctx *k, const struct mbgeo *g, float *dxp, float *dy,
                         const float *xl, float **dx)
{
	size_t h = (size_t)k->tr->m.hidden;
	TRY(k_wait_ev(k, SL_STREAM_MP, 2));
	if (g->sp) {
		TRY(k_alloc(k, dx, (size_t)g->rl * h, CAT_WS, "input gradient"));
		TRY(ew_copy(k, *dx, 0, dxp, (size_t)g->r0 * h, (size_t)g->rl * h));
		k_free(k, &dxp);
	} else {
		*dx = dxp;
	}
	if (xl)
		TRY(ew_norm_grad(k, xl, *dx, (size_t)g->rl, h));
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
	int h = k->tr->m.hidden, r = g->r, ft = b->ft, zc = b->zc;
	int swiglu = zc != ft;
	float *x = *xio, *xn = NULL, *yf = NULL;
	char lb[40];
	*xio = NULL;
	TRY(norm_in(k, g, x, &st->xlm, &xn));
	TRY(gather_input(k, g, xn, &st->xm));
	TRY(k_alloc(k, &st->z, (size_t)r * zc, CAT_ACT, "activations (fc1 output)"));
	WORK(SL_PASS_FWD, b->index, SL_PART_FC1, SL_GRAD_NONE, -1);
	TRY(k_gemm(k, 0, 0, r, zc, h, 1, st->xm, 0, h, par(k, b, SL_T_FC1_W), 0, zc, 0, st->z, 0,
	           zc, lb));
	TRY(ew_bias(k, st->z, (size_t)r, (size_t)zc, par(k, b, SL_T_FC1_B)));
	TRY(k_alloc(k, &st->a, (size_t)r * ft, CAT_ACT,
	            swiglu ? "activations (SwiGLU output)" : "activations (GeLU output)"));
	TRY(ew_act(k, st->z, st->a, (size_t)r, (size_t)ft));
	TRY(k_alloc(k, &yf, (size_t)r * h, CAT_WS, "fc2 partial sums"));
	WORK(SL_PASS_FWD, b->index, SL_PART_FC2, SL_GRAD_NONE, -1);
	TRY(k_gemm(k, 0, 0, r, h, ft, 1, st->a, 0, ft, par(k, b, SL_T_FC2_W), 0, h, 0, yf, 0, h,
	           lb));
	TRY(reduce_output(k, b, 1, st, g, yf, par(k, b, SL_T_FC2_B), x, xio));
	keep_rows(k, g, &st->xm, &xn);
	return SL_OK;
}

static int mlp_bwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
                   float **dio)
{
	int h = k->tr->m.hidden, r = g->r, ft = b->ft, zc = b->zc;
	float *dy = *dio, *dm = NULL, *dyf = NULL, *da = NULL, *dz = NULL, *dxp = NULL;
	char lb[40];
	*dio = NULL;
	TRY(drop_grad(k, b, 1, st, g, dy, &dm));
	TRY(gather_grad(k, g, dm, &dyf));
	TRY(ew_colsum(k, grd(k, b, SL_T_FC2_B), dm, (size_t)g->rl, (size_t)h));
	if (dm != dy && dyf != dm)
		k_free(k, &dm); /* gathered */
	WORK(SL_PASS_BWD, b->index, SL_PART_FC2, SL_GRAD_W, -1);
	TRY(k_gemm(k, 1, 0, ft, h, r, 1, st->a, 0, ft, dyf, 0, h, 1, grd(k, b, SL_T_FC2_W), 0, h,
	           lb));
	TRY(wgrad_add(k, (size_t)ft, (size_t)h));
	TRY(k_alloc(k, &da, (size_t)r * ft, CAT_WS,
	            zc == ft ? "fc1 output gradient" : "activation gradient"));
	WORK(SL_PASS_BWD, b->index, SL_PART_FC2, SL_GRAD_X, -1);
	TRY(k_gemm(k, 0, 1, r, ft, h, 1, dyf, 0, h, par(k, b, SL_T_FC2_W), 0, h, 0, da, 0, ft, lb));
	/* GeLU's gradient overwrites da; SwiGLU's has twice its columns. */
	if (zc == ft)
		dz = da;
	else
		TRY(k_alloc(k, &dz, (size_t)r * zc, CAT_WS, "fc1 output gradient"));
	TRY(ew_act_grad(k, st->z, da, dz, (size_t)r, (size_t)ft));
	if (dz != da)
		k_free(k, &da);
	TRY(ew_colsum(k, grd(k, b, SL_T_FC1_B), dz, (size_t)r, (size_t)zc));
	if (tp_overlap(k, g)) {
		/* dX first, reduced beside dW's product (the input gathered
		 * beside dX's) */
		float *xf = NULL;
		TRY(gather_begin(k, g, st->xm, &xf));
		TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "input gradient partial sums"));
		WORK(SL_PASS_BWD, b->index, SL_PART_FC1, SL_GRAD_X, -1);
		TRY(k_gemm(k, 0, 1, r, h, zc, 1, dz, 0, zc, par(k, b, SL_T_FC1_W), 0, zc, 0, dxp, 0,
		           h, lb));
		if (dyf != dy)
			k_free(k, &dyf);
		TRY(dx_reduce_begin(k, g, dxp, (size_t)r * h));
		TRY(gather_end(k, g));
		WORK(SL_PASS_BWD, b->index, SL_PART_FC1, SL_GRAD_W, -1);
		TRY(k_gemm(k, 1, 0, h, zc, r, 1, xf, 0, h, dz, 0, zc, 1, grd(k, b, SL_T_FC1_W), 0,
		           zc, lb));
		TRY(wgrad_add(k, (size_t)h, (size_t)zc));
		if (g->sp)
			k_free(k, &xf);
		k_free(k, &dz);
		k_free(k, &st->z);
		k_free(k, &st->a);
		k_free(k, &st->xm);
		int rc0 = dx_reduce_end(k, g, dxp, dy, st->xlm, dio);
		k_free(k, &st->xlm);
		return rc0;
	}
	WORK(SL_PASS_BWD, b->index, SL_PART_FC1, SL_GRAD_W, -1);
	float *xf = NULL;
	TRY(regather(k, g, st->xm, &xf));
	TRY(k_gemm(k, 1, 0, h, zc, r, 1, xf, 0, h, dz, 0, zc, 1, grd(k, b, SL_T_FC1_W), 0, zc, lb));
	TRY(wgrad_add(k, (size_t)h, (size_t)zc));
	if (g->sp)
		k_free(k, &xf);
	TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "input gradient partial sums"));
	WORK(SL_PASS_BWD, b->index, SL_PART_FC1, SL_GRAD_X, -1);
	TRY(k_gemm(k, 0, 1, r, h, zc, 1, dz, 0, zc, par(k, b, SL_T_FC1_W), 0, zc, 0, dxp, 0, h,
	           lb));
	k_free(k, &dz);
	k_free(k, &st->z);
	k_free(k, &st->a);
	k_free(k, &st->xm);
	int rc = reduce_grad(k, g, dxp, dy, dyf, st->xlm, dio);
	k_free(k, &st->xlm);
	return rc;
}

/* ---- context parallelism: ring attention, or its all-gather variant ----
 *
 * Each of the cp ranks holds chunks ci and 2 cp - 1 - ci of every sequence
 * (its sl rows a sequence); attention needs every chunk's keys and values.
 * Ring (Liu et al. 2023, as Megatron-Core and TransformerEngine run it):
 * the forward takes cp steps, the block of rank ci - t in step t; the
 * block of the next step arrives from the previous rank (a hop on the
 * model-parallel stream) while this one is computed, into the buffer the
 * step before freed (two buffers).  Its backward passes the blocks round
 * again, and each block's key and value gradients travel behind it,
 * gathering every rank's share, to arrive home after cp - 1 hops.
 * All-gather (Llama 3's long-context stage): the blocks all-gathered
 * before the forward and again before the backward, the gradients
 * reduce-scattered after it, none of it beside compute.  Either way a
 * device moves (cp - 1) blocks of keys and values in the forward and as
 * many blocks and gradient blocks in the backward.  The kernel is fused
 * (FlashAttention-2's, one a step): an online softmax in the forward, the
 * rows' log-sum-exp kept for the backward; under a causal mask each pair
 * of chunks runs whole below the diagonal, not at all above it, and its
 * tiles on it. */

struct cpatt {
	int cp, ci, sl, s, d, qpg, ng, ah, qc, u, oc;
	size_t kvc, blk; /* a row's keys and values (ng groups of 2 d), a rank's block */
	float *kv;       /* host: block i rank i's keys and values (values only) */
	float *dkv;      /* host: key and value gradients, block i rank i's; block cp arriving */
	float *acct[2];  /* what the device holds for them (accounted handles) */
	float *sc, *dsc; /* host: one head's scores (probabilities) and their gradient, sl x sl */
	float *st;       /* host: per query row, the running maximum and sum (forward) or D */
};

static int cp_pos(const struct mbgeo *g, int rank, int w)
{
	int c = w / g->cs;
	return (c == 0 ? rank : 2 * g->cp - 1 - rank) * g->cs + w % g->cs;
}

/* The share of the product of this rank's queries with rank bi's keys a
 * causal kernel runs: each of the four pairs of chunks whole below the
 * diagonal, not at all above it, its tiles on it. */
static double cp_share(const struct kctx *k, const struct mbgeo *g, int bi)
{
	if (k->tr->m.mask != SL_MASK_CAUSAL)
		return 1;
	int q[2] = {g->ci, 2 * g->cp - 1 - g->ci}, c[2] = {bi, 2 * g->cp - 1 - bi};
	double diag = sl_attn_tile_share_n(g->cs), sum = 0;
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			sum += c[b] < q[a] ? 1 : c[b] > q[a] ? 0 : diag;
	return sum / 4;
}

static void cp_free(struct kctx *k, struct cpatt *a)
{
	free(a->kv);
	free(a->dkv);
	free(a->sc);
	free(a->dsc);
	free(a->st);
	a->kv = a->dkv = a->sc = a->dsc = a->st = NULL;
	k_free(k, &a->acct[0]);
	k_free(k, &a->acct[1]);
}

/* The buffers of a pass (bwd: with the gradients' too). */
static int cp_init(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct cpatt *a,
                   int bwd)
{
	const sl_model_spec *m = &k->tr->m;
	memset(a, 0, sizeof *a);
	a->cp = g->cp;
	a->ci = g->ci;
	a->sl = g->sl;
	a->s = m->seq;
	a->d = m->hidden / m->heads;
	a->qpg = m->heads / sl_model_kv_heads(m);
	a->ah = b->ah;
	a->ng = b->ah / a->qpg;
	a->qc = b->qc;
	a->u = (a->qpg + 2) * a->d;
	a->oc = a->d * b->ah;
	a->kvc = (size_t)a->ng * 2 * a->d;
	a->blk = (size_t)g->r * a->kvc;
	int ring = k->tr->l.cp_comm == SL_CP_RING;
	size_t rows = (size_t)g->nb * b->ah * a->sl;
	int rc = scratch(k, &a->kv, a->cp * a->blk);
	if (rc == SL_OK)
		rc = scratch(k, &a->sc, (size_t)a->sl * a->sl);
	if (rc == SL_OK)
		rc = scratch(k, &a->st, 2 * rows);
	/* (blocks cp and cp + 1: the arriving own sum, a step's partial one) */
	if (rc == SL_OK && bwd)
		rc = scratch(k, &a->dkv, (a->cp + 2) * a->blk);
	if (rc == SL_OK && bwd)
		rc = scratch(k, &a->dsc, (size_t)a->sl * a->sl);
	if (rc == SL_OK)
		rc = k_alloc_as(k, &a->acct[0], (ring ? 2 : a->cp) * a->blk, CAT_WS,
		                ring ? "keys and values (the held and the arriving blocks)"
		                     : "keys and values of the whole sequence",
		                0);
	if (rc == SL_OK && bwd)
		rc = k_alloc_as(k, &a->acct[1], (ring ? 4 : a->cp) * a->blk, CAT_WS,
		                ring ? "key and value gradients (own, a step's, held and arriving)"
		                     : "key and value gradients of the whole sequence",
		                0);
	if (rc)
		cp_free(k, a);
	return rc;
}

/* Out of place to the next rank, from the previous: block so of buf to
 * the next, block ro from the previous (cp - 1 of them make a ring). */
static int k_sendrecv(struct kctx *k, const sl_group *g, float *buf, size_t so, size_t ro,
                      size_t count)
{
	if (g->n < 2)
		return SL_OK;
	if (!k->d) {
		struct pop o;
		memset(&o, 0, sizeof o);
		o.type = PO_COLL;
		o.op = SL_COLL_SENDRECV;
		o.cp_group = 1;
		o.stream = k->stream;
		o.kind = SL_TR_CP_KV;
		o.count = count;
		return rec_op(k, &o);
	}
	sl_cluster *c = sl_dev_cluster(k->d);
	int id = sl_dev_id(k->d);
	sl_dev_stats s0 = sl_cluster_dev_stats(c, id);
	int real = !k->dry && buf;
	int rc =
	    sl_sendrecv(k->d, g, real ? buf + so : NULL, real ? buf + ro : NULL, count, k->err);
	sl_dev_stats s1 = sl_cluster_dev_stats(c, id);
	k->dr->sent[SL_TR_CP_KV] += s1.bytes_sent - s0.bytes_sent;
	k->dr->recv[SL_TR_CP_KV] += s1.bytes_received - s0.bytes_received;
	return rc;
}

/* A hop of the ring on the model-parallel stream, and an event after it
 * in slot 2 + (hop & 1). */
static int cp_hop(struct kctx *k, float *buf, size_t so, size_t ro, size_t count, int hop)
{
	k_stream(k, SL_STREAM_MP);
	int rc = k_sendrecv(k, k->ds->cpg, buf, so, ro, count);
	if (rc == SL_OK)
		rc = k_mark(k, SL_STREAM_MP, 2 + (hop & 1));
	k_stream(k, SL_STREAM_COMPUTE);
	return rc;
}

/* This rank's keys and values out of Q, K, V (or their gradients back in):
 * a copy of the host's, which the kernels would read in place. */
static void cp_pack(const struct cpatt *a, float *qkv, float *kv, int in)
{
	if (!qkv || !kv)
		return;
	size_t rows = a->blk / a->kvc, n2 = 2 * (size_t)a->d;
	for (size_t t = 0; t < rows; t++)
		for (int gi = 0; gi < a->ng; gi++) {
			float *q = qkv + t * a->qc + (size_t)gi * a->u + (size_t)a->qpg * a->d;
			float *v = kv + t * a->kvc + gi * n2;
			memcpy(in ? q : v, in ? v : q, n2 * FL);
		}
}

/* The masked online softmax of one head's scores against block bi (rows
 * of the sequence's sl, st its running maximum and sum), rescaling its
 * output so far; the scores become the block's unnormalised
 * probabilities.  On chip in the fused kernel. */
static int ew_cp_online(struct kctx *k, const struct mbgeo *g, const struct cpatt *a, int bi,
                        float *sc, float *st, float *o, int first)
{
	double elems = 3.0 * a->sl * a->sl;
	EW_BEGIN(elems, "online softmax");
	int causal = k->tr->m.mask == SL_MASK_CAUSAL;
	for (int q = 0; q < a->sl; q++) {
		float *row = sc + (size_t)q * a->sl;
		int qp = cp_pos(g, g->ci, q);
		float mx = -INFINITY;
		for (int w = 0; w < a->sl; w++) {
			if (causal && cp_pos(g, bi, w) > qp)
				row[w] = -INFINITY;
			mx = row[w] > mx ? row[w] : mx;
		}
		float m0 = first ? -INFINITY : st[2 * q], m1 = mx > m0 ? mx : m0;
		float sum = 0;
		for (int w = 0; w < a->sl; w++) {
			row[w] = m1 == -INFINITY ? 0 : expf(row[w] - m1);
			sum += row[w];
		}
		float corr = m0 == -INFINITY ? 0 : expf(m0 - m1);
		st[2 * q] = m1;
		st[2 * q + 1] = (first ? 0 : st[2 * q + 1] * corr) + sum;
		if (!first)
			for (int e = 0; e < a->d; e++)
				o[(size_t)q * a->oc + e] *= corr;
	}
	EW_END(elems, "online softmax");
}

/* The output's rows divided by their sums; the log-sum-exp kept. */
static int ew_cp_final(struct kctx *k, const struct cpatt *a, const float *st, float *o, float *lse)
{
	double elems = 2.0 * a->sl * a->d;
	EW_BEGIN(elems, "softmax normalisation");
	for (int q = 0; q < a->sl; q++) {
		float l = st[2 * q + 1];
		for (int e = 0; e < a->d; e++)
			o[(size_t)q * a->oc + e] /= l;
		lse[q] = st[2 * q] + logf(l);
	}
	EW_END(elems, "softmax normalisation");
}

/* One step's fused kernel begins: on block bi, one for every head of
 * every sequence. */
static int cp_kernel(struct kctx *k, const struct mbgeo *g, const struct cpatt *a, int bi,
                     const char *label)
{
	int rc = fused_begin(k, label);
	k->share = cp_share(k, g, bi);
	if (k->d)
		sl_dev_set_fused(k->d, 1, k->share);
	k->times = k->d ? 1 : (double)g->nb * a->ah;
	k->batch = g->nb * a->ah;
	return rc;
}

/* Head j of sequence n: its query's columns in Q, K, V; its group's keys
 * (values d further) in the block at `base` of a rank's keys and values. */
static size_t cp_q(const struct cpatt *a, int n, int j)
{
	return (size_t)n * a->sl * a->qc + (size_t)(j / a->qpg) * a->u +
	       (size_t)(j % a->qpg) * a->d;
}

static size_t cp_k(const struct cpatt *a, size_t base, int n, int j)
{
	return base + (size_t)n * a->sl * a->kvc + (size_t)(j / a->qpg) * 2 * a->d;
}

static int cp_fwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
                  float scale)
{
	struct cpatt a;
	TRY(cp_init(k, b, g, &a, 0));
	int ring = k->tr->l.cp_comm == SL_CP_RING, cp = a.cp, ci = a.ci, sl = a.sl;
	size_t rows = (size_t)g->nb * a.ah * sl;
	int rc = k_alloc(k, &st->lse, rows, CAT_ACT, "activations (softmax log-sum-exp)");
	int real = k->d && !k->dry;
	if (real)
		cp_pack(&a, st->qkv, a.kv + ci * a.blk, 0);
	if (rc == SL_OK && !ring)
		rc = k_coll(k, SL_TR_CP_KV, k->ds->cpg, SL_COLL_ALLGATHER, a.kv, 0, cp * a.blk,
		            NULL);
	if (rc == SL_OK && ring)
		rc = cp_hop(k, a.kv, ci * a.blk, (size_t)((ci + cp - 1) % cp) * a.blk, a.blk, 1);
	int nseq = k->d ? g->nb : 1, nhead = k->d ? a.ah : 1;
	char lb[40];
	for (int t = 0; rc == SL_OK && t < cp; t++) {
		int bi = (ci - t + cp) % cp;
		if (ring && t >= 1) {
			/* the next block into the buffer the last step freed */
			if (t + 1 < cp)
				rc = cp_hop(k, a.kv, (size_t)bi * a.blk,
				            (size_t)((bi + cp - 1) % cp) * a.blk, a.blk, t + 1);
			if (rc == SL_OK)
				rc = k_wait_ev(k, SL_STREAM_MP, 2 + (t & 1));
		}
		if (rc == SL_OK)
			rc = cp_kernel(k, g, &a, bi, "attention kernel");
		for (int n = 0; rc == SL_OK && n < nseq; n++)
			for (int j = 0; rc == SL_OK && j < nhead; j++) {
				size_t q = cp_q(&a, n, j), kv = cp_k(&a, (size_t)bi * a.blk, n, j);
				size_t oo = (size_t)n * sl * a.oc + (size_t)j * a.d;
				float *sv = a.st ? a.st + 2 * (((size_t)n * a.ah + j) * sl) : NULL;
				WORK(SL_PASS_FWD, b->index, SL_PART_SCORES, SL_GRAD_NONE, j);
				rc = k_gemm(k, 0, 1, sl, sl, a.d, scale, st->qkv, q, a.qc, a.kv, kv,
				            (int)a.kvc, 0, a.sc, 0, sl, lb);
				if (rc == SL_OK)
					rc = ew_cp_online(k, g, &a, bi, a.sc, sv,
					                  real ? st->o + oo : NULL, t == 0);
				WORK(SL_PASS_FWD, b->index, SL_PART_PV, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 0, 0, sl, a.d, sl, 1, a.sc, 0, sl, a.kv,
					            kv + a.d, (int)a.kvc, t == 0 ? 0 : 1, st->o, oo,
					            a.oc, lb);
				if (rc == SL_OK && t == cp - 1)
					rc = ew_cp_final(
					    k, &a, sv, real ? st->o + oo : NULL,
					    real ? st->lse + ((size_t)n * a.ah + j) * sl : NULL);
			}
		fuse(k, 0);
		k->times = 1;
		k->batch = 1;
	}
	cp_free(k, &a);
	return rc;
}

/* D = the rows' dot product of dO and O (FlashAttention-2's backward). */
static int ew_cp_dot(struct kctx *k, const struct cpatt *a, const float *dO, const float *o,
                     float *dd)
{
	double elems = 2.0 * a->sl * a->d;
	EW_BEGIN(elems, "attention backward rows");
	for (int q = 0; q < a->sl; q++) {
		float s = 0;
		for (int e = 0; e < a->d; e++)
			s += dO[(size_t)q * a->oc + e] * o[(size_t)q * a->oc + e];
		dd[q] = s;
	}
	EW_END(elems, "attention backward rows");
}

/* The block's probabilities again from the scores and the log-sum-exp
 * (masked); with dp (dO V^T) the scores' gradient, scale P (dP - D). */
static int ew_cp_probs(struct kctx *k, const struct mbgeo *g, const struct cpatt *a, int bi,
                       float *sc, const float *lse, float *dp, const float *dd, float scale)
{
	double elems = (dp ? 3.0 : 2.0) * a->sl * a->sl;
	EW_BEGIN(elems, dp ? "softmax grad" : "softmax");
	int causal = k->tr->m.mask == SL_MASK_CAUSAL;
	for (int q = 0; q < a->sl; q++) {
		int qp = cp_pos(g, g->ci, q);
		float *row = sc + (size_t)q * a->sl;
		for (int w = 0; w < a->sl; w++) {
			if (!dp)
				row[w] =
				    causal && cp_pos(g, bi, w) > qp ? 0 : expf(row[w] - lse[q]);
			else
				dp[(size_t)q * a->sl + w] =
				    scale * row[w] * (dp[(size_t)q * a->sl + w] - dd[q]);
		}
	}
	EW_END(elems, dp ? "softmax grad" : "softmax");
}

static int cp_bwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
                  const float *dO, float *dqkv, float scale)
{
	struct cpatt a;
	TRY(cp_init(k, b, g, &a, 1));
	int ring = k->tr->l.cp_comm == SL_CP_RING, cp = a.cp, ci = a.ci, sl = a.sl;
	int real = k->d && !k->dry;
	size_t B = a.blk;
	if (real)
		cp_pack(&a, st->qkv, a.kv + ci * B, 0);
	int rc = SL_OK;
	if (!ring)
		rc = k_coll(k, SL_TR_CP_KV, k->ds->cpg, SL_COLL_ALLGATHER, a.kv, 0, cp * B, NULL);
	else
		rc = cp_hop(k, a.kv, ci * B, (size_t)((ci + cp - 1) % cp) * B, B, 1);
	int nseq = k->d ? g->nb : 1, nhead = k->d ? a.ah : 1;
	char lb[40];
	/* D for every row */
	k->times = k->d ? 1 : (double)g->nb * a.ah;
	k->batch = g->nb * a.ah;
	for (int n = 0; rc == SL_OK && n < nseq; n++)
		for (int j = 0; rc == SL_OK && j < nhead; j++) {
			size_t oo = (size_t)n * sl * a.oc + (size_t)j * a.d;
			rc = ew_cp_dot(k, &a, real ? dO + oo : NULL, real ? st->o + oo : NULL,
			               a.st ? a.st + ((size_t)n * a.ah + j) * sl : NULL);
		}
	k->times = 1;
	k->batch = 1;
	for (int t = 0; rc == SL_OK && t < cp; t++) {
		int bi = (ci - t + cp) % cp;
		if (ring && t >= 1) {
			if (t + 1 < cp)
				rc = cp_hop(k, a.kv, (size_t)bi * B,
				            (size_t)((bi + cp - 1) % cp) * B, B, t + 1);
			/* the block (its gradients so far are waited for only
			 * to add this step's to them) */
			if (rc == SL_OK)
				rc = k_wait_ev(k, SL_STREAM_MP, 2 + (t & 1));
		}
		/* a fresh sum: this rank's own block, or the first one it gets;
		 * later, this step's share in a block of its own (cp + 1), added
		 * to the arriving sum once both are there */
		int fresh = !ring || t <= 1;
		size_t gb = fresh ? (size_t)bi * B : (size_t)(cp + 1) * B;
		if (rc == SL_OK)
			rc = cp_kernel(k, g, &a, bi, "attention backward kernel");
		for (int n = 0; rc == SL_OK && n < nseq; n++)
			for (int j = 0; rc == SL_OK && j < nhead; j++) {
				size_t q = cp_q(&a, n, j), kv = cp_k(&a, (size_t)bi * B, n, j);
				size_t gk = cp_k(&a, gb, n, j);
				size_t oo = (size_t)n * sl * a.oc + (size_t)j * a.d;
				size_t ro = ((size_t)n * a.ah + j) * sl;
				float acc = j % a.qpg == 0 ? 0.0f : 1.0f;
				WORK(SL_PASS_FWD, b->index, SL_PART_SCORES, SL_GRAD_NONE, j);
				rc = k_gemm(k, 0, 1, sl, sl, a.d, scale, st->qkv, q, a.qc, a.kv, kv,
				            (int)a.kvc, 0, a.sc, 0, sl, lb);
				if (rc == SL_OK)
					rc = ew_cp_probs(k, g, &a, bi, a.sc,
					                 real ? st->lse + ro : NULL, NULL, NULL,
					                 scale);
				WORK(SL_PASS_BWD, b->index, SL_PART_DV, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 1, 0, sl, a.d, sl, 1, a.sc, 0, sl, dO, oo,
					            a.oc, acc, a.dkv, gk + a.d, (int)a.kvc, lb);
				WORK(SL_PASS_BWD, b->index, SL_PART_DP, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 0, 1, sl, sl, a.d, 1, dO, oo, a.oc, a.kv,
					            kv + a.d, (int)a.kvc, 0, a.dsc, 0, sl, lb);
				if (rc == SL_OK)
					rc = ew_cp_probs(k, g, &a, bi, a.sc, NULL, a.dsc,
					                 a.st ? a.st + ro : NULL, scale);
				WORK(SL_PASS_BWD, b->index, SL_PART_DQ, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 0, 0, sl, a.d, sl, 1, a.dsc, 0, sl, a.kv, kv,
					            (int)a.kvc, t == 0 ? 0 : 1, dqkv, q, a.qc, lb);
				WORK(SL_PASS_BWD, b->index, SL_PART_DK, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 1, 0, sl, a.d, sl, 1, a.dsc, 0, sl, st->qkv,
					            q, a.qc, acc, a.dkv, gk, (int)a.kvc, lb);
			}
		fuse(k, 0);
		k->times = 1;
		k->batch = 1;
		/* the arriving sum (the previous step's hop, slot 4 + (t & 1))
		 * plus this step's share */
		if (rc == SL_OK && !fresh)
			rc = k_wait_ev(k, SL_STREAM_MP, 4 + (t & 1));
		if (rc == SL_OK && !fresh)
			rc = ew_add(k, a.dkv ? a.dkv + (size_t)bi * B : NULL,
			            a.dkv ? a.dkv + (size_t)(cp + 1) * B : NULL, B,
			            "key and value gradients");
		/* the block's gradients on to the next rank, beside the next
		 * step's kernel; the next block's (or, last, this rank's own)
		 * from the previous */
		if (rc == SL_OK && ring && t >= 1) {
			k_stream(k, SL_STREAM_MP);
			rc = k_sendrecv(
			    k, k->ds->cpg, a.dkv, (size_t)bi * B,
			    t + 1 < cp ? (size_t)((bi + cp - 1) % cp) * B : (size_t)cp * B, B);
			if (rc == SL_OK)
				rc = k_mark(k, SL_STREAM_MP, 4 + ((t + 1) & 1));
			k_stream(k, SL_STREAM_COMPUTE);
		}
	}
	if (rc == SL_OK && !ring)
		rc = k_coll(k, SL_TR_CP_KV, k->ds->cpg, SL_COLL_REDUCESCATTER, a.dkv, 0, cp * B,
		            NULL);
	if (rc == SL_OK && ring && cp > 1) {
		/* this rank's own share and the others' */
		rc = k_wait_ev(k, SL_STREAM_MP, 4 + (cp & 1));
		if (rc == SL_OK)
			rc = ew_add(k, a.dkv ? a.dkv + ci * B : NULL, a.dkv ? a.dkv + cp * B : NULL,
			            B, "key and value gradients");
	}
	if (rc == SL_OK && real)
		cp_pack(&a, dqkv, a.dkv + ci * B, 1);
	k_free(k, &st->lse);
	cp_free(k, &a);
	return rc;
}

static int attn_fwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
                    float **xio)
{
	const sl_model_spec *m = &k->tr->m;
	int h = m->hidden, r = g->r, s = m->seq, d = h / m->heads, ah = b->ah, qc = b->qc;
	int oc = d * ah, qpg = m->heads / sl_model_kv_heads(m), u = (qpg + 2) * d;
	float scale = 1.0f / sqrtf((float)d);
	float *x = *xio, *xn = NULL, *yf = NULL;
	char lb[40];
	*xio = NULL;
	TRY(norm_in(k, g, x, &st->xla, &xn));
	TRY(gather_input(k, g, xn, &st->xa));
	TRY(k_alloc(k, &st->qkv, (size_t)r * qc, CAT_ACT, "activations (Q, K, V)"));
	WORK(SL_PASS_FWD, b->index, SL_PART_QKV, SL_GRAD_NONE, -1);
	TRY(k_gemm(k, 0, 0, r, qc, h, 1, st->xa, 0, h, par(k, b, SL_T_QKV_W), 0, qc, 0, st->qkv, 0,
	           qc, lb));
	if (g->cp > 1) {
		TRY(k_alloc(k, &st->o, (size_t)r * oc, CAT_ACT, "activations (heads' outputs)"));
		TRY(cp_fwd(k, b, g, st, scale));
	} else {
		/* Fused attention keeps no probabilities: one head's are on chip. */
		int flash = k->tr->l.attention == SL_ATTN_FLASH, drop = m->attn_dropout > 0;
		size_t np = (size_t)g->nb * ah * s * s;
		float *pp = NULL, *pdd = NULL;
		if (flash) {
			TRY(scratch(k, &pp, (size_t)s * s));
			if (drop && scratch(k, &pdd, (size_t)s * s)) {
				free(pp);
				return sl_fail(k->err, SL_ENOMEM, "out of host memory");
			}
		} else {
			TRY(k_alloc(k, &st->p, np, CAT_ACT,
			            "activations (attention probabilities)"));
			/* Megatron keeps both: P for the softmax's gradient, the dropped
			 * ones for V's, and the mask (Korthikanti et al.'s 5as^2 b). */
			if (drop) {
				TRY(k_alloc(k, &st->pd, np, CAT_ACT,
				            "activations (attention dropout output)"));
				TRY(k_alloc(k, &st->mask, (size_t)ceil((double)np / k->eb), CAT_ACT,
				            "activations (attention dropout mask)"));
			}
		}
		int rc =
		    k_alloc(k, &st->o, (size_t)r * oc, CAT_ACT, "activations (heads' outputs)");
		/* Recording, every head of every sequence is the same work: one stands
		 * for all. */
		int nseq = k->d ? g->nb : 1, nhead = k->d ? ah : 1;
		k->times = k->d ? 1 : (double)g->nb * ah;
		k->batch = g->nb * ah;
		if (rc == SL_OK && flash)
			rc = fused_begin(k, "attention kernel");
		for (int n = 0; rc == SL_OK && n < nseq; n++)
			for (int j = 0; rc == SL_OK && j < nhead; j++) {
				/* query j % qpg of local group j / qpg; the group's k, v after its
				 * queries
				 */
				size_t go = (size_t)n * s * qc + (size_t)(j / qpg) * u;
				size_t q = go + (size_t)(j % qpg) * d, kv = go + (size_t)qpg * d;
				size_t po = flash ? 0 : ((size_t)n * ah + j) * s * s;
				float *P = flash ? pp : st->p, *W = P;
				WORK(SL_PASS_FWD, b->index, SL_PART_SCORES, SL_GRAD_NONE, j);
				rc = k_gemm(k, 0, 1, s, s, d, scale, st->qkv, q, qc, st->qkv, kv,
				            qc, 0, P, po, s, lb);
				if (rc == SL_OK)
					rc = ew_softmax(k, P, po, s);
				if (rc == SL_OK && drop) {
					W = flash ? pdd : st->pd;
					rc = ew_dropout(k, b, g, n, j, P, po, W, po, s, 0);
				}
				WORK(SL_PASS_FWD, b->index, SL_PART_PV, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 0, 0, s, d, s, 1, W, po, s, st->qkv, kv + d,
					            qc, 0, st->o,
					            (size_t)n * s * oc + (size_t)j * d, oc, lb);
			}
		fuse(k, 0);
		free(pp);
		free(pdd);
		k->times = 1;
		k->batch = 1;
		if (rc)
			return rc;
		/* Selective recomputation keeps Q, K, V but not the s x s
		 * probabilities: the backward pass makes them again (and drops the
		 * same ones). */
		if (k->tr->l.recompute == SL_RECOMPUTE_SELECTIVE) {
			k_free(k, &st->p);
			k_free(k, &st->pd);
			k_free(k, &st->mask);
		}
	}
	TRY(k_alloc(k, &yf, (size_t)r * h, CAT_WS, "projection partial sums"));
	WORK(SL_PASS_FWD, b->index, SL_PART_PROJ, SL_GRAD_NONE, -1);
	TRY(k_gemm(k, 0, 0, r, h, oc, 1, st->o, 0, oc, par(k, b, SL_T_OUT_W), 0, h, 0, yf, 0, h,
	           lb));
	TRY(reduce_output(k, b, 0, st, g, yf, par(k, b, SL_T_OUT_B), x, xio));
	keep_rows(k, g, &st->xa, &xn);
	return SL_OK;
}

static int attn_bwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *st,
                    float **dio)
{
	const sl_model_spec *m = &k->tr->m;
	int h = m->hidden, r = g->r, s = m->seq, d = h / m->heads, ah = b->ah, qc = b->qc;
	int oc = d * ah, qpg = m->heads / sl_model_kv_heads(m), u = (qpg + 2) * d;
	float scale = 1.0f / sqrtf((float)d);
	float *dy = *dio, *dm = NULL, *dyf = NULL, *dO = NULL, *dqkv = NULL, *dp = NULL;
	float *dxp = NULL;
	char lb[40];
	*dio = NULL;
	TRY(drop_grad(k, b, 0, st, g, dy, &dm));
	TRY(gather_grad(k, g, dm, &dyf));
	TRY(ew_colsum(k, grd(k, b, SL_T_OUT_B), dm, (size_t)g->rl, (size_t)h));
	if (dm != dy && dyf != dm)
		k_free(k, &dm); /* gathered */
	WORK(SL_PASS_BWD, b->index, SL_PART_PROJ, SL_GRAD_W, -1);
	TRY(k_gemm(k, 1, 0, oc, h, r, 1, st->o, 0, oc, dyf, 0, h, 1, grd(k, b, SL_T_OUT_W), 0, h,
	           lb));
	TRY(wgrad_add(k, (size_t)oc, (size_t)h));
	TRY(k_alloc(k, &dO, (size_t)r * oc, CAT_WS, "heads' output gradient"));
	WORK(SL_PASS_BWD, b->index, SL_PART_PROJ, SL_GRAD_X, -1);
	TRY(k_gemm(k, 0, 1, r, oc, h, 1, dyf, 0, h, par(k, b, SL_T_OUT_W), 0, h, 0, dO, 0, oc, lb));
	TRY(k_alloc(k, &dqkv, (size_t)r * qc, CAT_WS, "Q, K, V gradient"));
	if (g->cp > 1) {
		TRY(cp_bwd(k, b, g, st, dO, dqkv, scale));
		k_free(k, &dO);
	} else {
		/* Fused attention: the kernel makes a head's scores again on chip. */
		int flash = k->tr->l.attention == SL_ATTN_FLASH, drop = m->attn_dropout > 0;
		int selective = !flash && k->tr->l.recompute == SL_RECOMPUTE_SELECTIVE;
		float *pp = NULL, *pdd = NULL;
		if (flash) {
			TRY(scratch(k, &pp, (size_t)s * s));
			int rc0 = scratch(k, &dp, (size_t)s * s);
			if (rc0 == SL_OK && drop)
				rc0 = scratch(k, &pdd, (size_t)s * s);
			if (rc0) {
				free(pp);
				free(dp);
				return rc0;
			}
		} else {
			TRY(k_alloc(k, &dp, (size_t)s * s, CAT_WS, "attention score gradient"));
			if (selective)
				TRY(k_alloc(k, &st->p, (size_t)g->nb * ah * s * s, CAT_WS,
				            "recomputed attention probabilities"));
			if (selective && drop) {
				TRY(k_alloc(k, &st->pd, (size_t)g->nb * ah * s * s, CAT_WS,
				            "recomputed attention dropout output"));
				TRY(k_alloc(k, &st->mask,
				            (size_t)ceil((double)g->nb * ah * s * s / k->eb),
				            CAT_WS, "recomputed attention dropout mask"));
			}
		}
		/* Selective recomputation runs the attention core's forward again whole,
		 * as Megatron-LM's checkpointed core attention does: the scores,
		 * softmax and dropout, and the product with V, whose output (the
		 * heads' outputs again) autograd holds until the core's backward ends. */
		float *ro = NULL;
		if (selective)
			TRY(k_alloc(k, &ro, (size_t)r * oc, CAT_WS, "recomputed heads' outputs"));
		int nseq = k->d ? g->nb : 1, nhead = k->d ? ah : 1;
		k->times = k->d ? 1 : (double)g->nb * ah;
		k->batch = g->nb * ah;
		int rc = flash ? fused_begin(k, "attention backward kernel") : SL_OK;
		for (int n = 0; rc == SL_OK && n < nseq; n++)
			for (int j = 0; rc == SL_OK && j < nhead; j++) {
				size_t go = (size_t)n * s * qc + (size_t)(j / qpg) * u;
				size_t q = go + (size_t)(j % qpg) * d, kv = go + (size_t)qpg * d;
				size_t po = flash ? 0 : ((size_t)n * ah + j) * s * s;
				size_t oo = (size_t)n * s * oc + (size_t)j * d;
				float *P = flash ? pp : st->p, *W = !drop   ? P
				                                    : flash ? pdd
				                                            : st->pd;
				/* a group's queries add to its shared dK and dV */
				float acc = j % qpg ? 1.0f : 0.0f;
				if (selective || flash) {
					/* The forward's scores and softmax, again. */
					WORK(SL_PASS_FWD, b->index, SL_PART_SCORES, SL_GRAD_NONE,
					     j);
					rc = k_gemm(k, 0, 1, s, s, d, 1.0f / sqrtf((float)d),
					            st->qkv, q, qc, st->qkv, kv, qc, 0, P, po, s,
					            lb);
					if (rc == SL_OK)
						rc = ew_softmax(k, P, po, s);
					if (rc == SL_OK && drop)
						rc = ew_dropout(k, b, g, n, j, P, po, W, po, s, 0);
				}
				if (selective) {
					WORK(SL_PASS_FWD, b->index, SL_PART_PV, SL_GRAD_NONE, j);
					if (rc == SL_OK)
						rc = k_gemm(k, 0, 0, s, d, s, 1, W, po, s, st->qkv,
						            kv + d, qc, 0, ro, oo, oc, lb);
				}
				WORK(SL_PASS_BWD, b->index, SL_PART_DP, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 0, 1, s, s, d, 1, dO, oo, oc, st->qkv,
					            kv + d, qc, 0, dp, 0, s, lb);
				WORK(SL_PASS_BWD, b->index, SL_PART_DV, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 1, 0, s, d, s, 1, W, po, s, dO, oo, oc, acc,
					            dqkv, kv + d, qc, lb);
				if (rc == SL_OK && drop)
					rc = ew_dropout(k, b, g, n, j, dp, 0, dp, 0, s, 1);
				if (rc == SL_OK)
					rc = ew_softmax_grad(k, P, po, dp, s, scale);
				WORK(SL_PASS_BWD, b->index, SL_PART_DQ, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 0, 0, s, d, s, 1, dp, 0, s, st->qkv, kv, qc,
					            0, dqkv, q, qc, lb);
				WORK(SL_PASS_BWD, b->index, SL_PART_DK, SL_GRAD_NONE, j);
				if (rc == SL_OK)
					rc = k_gemm(k, 1, 0, s, d, s, 1, dp, 0, s, st->qkv, q, qc,
					            acc, dqkv, kv, qc, lb);
			}
		fuse(k, 0);
		k->times = 1;
		k->batch = 1;
		if (flash) {
			free(pp);
			free(pdd);
			free(dp);
			dp = NULL;
		}
		if (rc)
			return rc;
		k_free(k, &ro);
		k_free(k, &dp);
		k_free(k, &dO);
	}
	if (tp_overlap(k, g)) {
		/* dX first, reduced beside dW's product (the input gathered
		 * beside dX's) */
		float *xf = NULL;
		TRY(gather_begin(k, g, st->xa, &xf));
		TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "input gradient partial sums"));
		WORK(SL_PASS_BWD, b->index, SL_PART_QKV, SL_GRAD_X, -1);
		TRY(k_gemm(k, 0, 1, r, h, qc, 1, dqkv, 0, qc, par(k, b, SL_T_QKV_W), 0, qc, 0, dxp,
		           0, h, lb));
		if (dyf != dy)
			k_free(k, &dyf);
		TRY(dx_reduce_begin(k, g, dxp, (size_t)r * h));
		TRY(gather_end(k, g));
		WORK(SL_PASS_BWD, b->index, SL_PART_QKV, SL_GRAD_W, -1);
		TRY(k_gemm(k, 1, 0, h, qc, r, 1, xf, 0, h, dqkv, 0, qc, 1, grd(k, b, SL_T_QKV_W), 0,
		           qc, lb));
		TRY(wgrad_add(k, (size_t)h, (size_t)qc));
		if (g->sp)
			k_free(k, &xf);
		k_free(k, &dqkv);
		k_free(k, &st->xa);
		k_free(k, &st->qkv);
		k_free(k, &st->p);
		k_free(k, &st->pd);
		k_free(k, &st->mask);
		k_free(k, &st->o);
		int rc0 = dx_reduce_end(k, g, dxp, dy, st->xla, dio);
		k_free(k, &st->xla);
		return rc0;
	}
	WORK(SL_PASS_BWD, b->index, SL_PART_QKV, SL_GRAD_W, -1);
	float *xf = NULL;
	TRY(regather(k, g, st->xa, &xf));
	TRY(k_gemm(k, 1, 0, h, qc, r, 1, xf, 0, h, dqkv, 0, qc, 1, grd(k, b, SL_T_QKV_W), 0, qc,
	           lb));
	TRY(wgrad_add(k, (size_t)h, (size_t)qc));
	if (g->sp)
		k_free(k, &xf);
	TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "input gradient partial sums"));
	WORK(SL_PASS_BWD, b->index, SL_PART_QKV, SL_GRAD_X, -1);
	TRY(k_gemm(k, 0, 1, r, h, qc, 1, dqkv, 0, qc, par(k, b, SL_T_QKV_W), 0, qc, 0, dxp, 0, h,
	           lb));
	k_free(k, &dqkv);
	k_free(k, &st->xa);
	k_free(k, &st->qkv);
	k_free(k, &st->p);
	k_free(k, &st->pd);
	k_free(k, &st->mask);
	k_free(k, &st->o);
	int rc2 = reduce_grad(k, g, dxp, dy, dyf, st->xla, dio);
	k_free(k, &st->xla);
	return rc2;
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
		return ew_skip(k, 3.0 * (double)n, "loss");
	}
	/* The data loader works on the host; only the targets land on the device. */
	float *xs = malloc((n ? n : 1) * FL);
	if (!xs)
		return sl_fail(k->err, SL_ENOMEM, "out of host memory");
	mb_data(k, g, xs, tgt);
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
	return ew_done(k, mark, 3.0 * (double)n, "loss");
}

/* ---- the embeddings and the LM head: timed and held, never computed
 * (sl_model_check_values refuses a vocabulary, so these run only when
 * recording or on a timing-only device) ---- */

/* The first chunk's input, Megatron-LM's vocabulary-parallel embedding:
 * each TP rank looks the tokens up in its V/t rows of the table (zeros for
 * the others); the TP group sums the results.  With sequence parallelism
 * and rotary positions they are reduce-scattered into the device's rows
 * x; with learned positions (as Megatron-LM's LanguageModelEmbedding) they
 * are all-reduced, the positions added to every row, and the device's
 * rows kept.  Then the embedding dropout (the hidden dropout's rate), its
 * mask kept in cs. */
static int embed_fwd(struct kctx *k, const struct mbgeo *g, float *x, struct cstash *cs)
{
	const sl_model_spec *m = &k->tr->m;
	size_t h = (size_t)m->hidden;
	double n = (double)g->r * (double)h, nl = (double)g->rl * (double)h;
	int learned = m->pos_emb == SL_POS_LEARNED;
	float *e = x;
	if (g->sp)
		TRY(k_alloc(k, &e, (size_t)g->r * h, CAT_WS, "embedding output"));
	/* the lookup writes r h values and reads as many */
	TRY(ew_skip(k, 2 * n, "embedding"));
	if (g->sp && !learned) {
		TRY(k_coll(k, SL_TR_TP_REDUCESCATTER, k->ds->tpg, SL_COLL_REDUCESCATTER, e, 0,
		           (size_t)g->r * h, g->cnt));
	} else {
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, k->ds->tpg, SL_COLL_ALLREDUCE, e, 0,
		           (size_t)g->r * h, NULL));
		/* the positions' add reads two values and writes one */
		if (learned)
			TRY(ew_skip(k, 3 * n, "position embedding"));
	}
	if (g->sp) {
		TRY(ew_copy(k, x, 0, e, (size_t)g->r0 * h, (size_t)g->rl * h));
		k_free(k, &e);
	}
	if (!(m->hidden_dropout > 0))
		return SL_OK;
	/* two values and a mask byte an element */
	TRY(k_alloc(k, &cs->em, (size_t)ceil(nl / k->eb), CAT_ACT,
	            "activations (embedding dropout mask)"));
	return ew_skip(k, 2 * nl + nl / k->eb, "embedding dropout");
}

/* Its backward: the gradient of every row (gathered again with sequence
 * parallelism) added into the table's rows of the tokens, and summed over
 * the sequences into the positions'. */
static int embed_bwd(struct kctx *k, const struct mbgeo *g, float *dy, struct cstash *cs)
{
	const sl_model_spec *m = &k->tr->m;
	double n = (double)g->r * m->hidden, nl = (double)g->rl * m->hidden;
	float *full = NULL;
	if (cs->em) {
		TRY(ew_skip(k, 2 * nl + nl / k->eb, "embedding dropout grad"));
		k_free(k, &cs->em);
	}
	TRY(gather_grad(k, g, dy, &full));
	TRY(ew_skip(k, 3 * n + (m->pos_emb == SL_POS_LEARNED ? 2 * n : 0), "embedding grad"));
	if (full != dy)
		k_free(k, &full);
	return SL_OK;
}

/* The last chunk's end with a vocabulary: the final norm, the LM head's
 * column-parallel product (V/t logits a row on each TP rank) and
 * Megatron-LM's vocabulary-parallel cross entropy, in fp32 (the logits
 * are cast up first), whose rows' maximum, sum of exponentials and target
 * logit are each all-reduced over the TP group; the fp32 softmax is kept
 * for the backward pass.  Takes *xio. */
static int head_fwd(struct kctx *k, const struct mbgeo *g, float **xio, struct cstash *cs)
{
	const sl_model_spec *m = &k->tr->m;
	int h = m->hidden, r = g->r, vp = sl_model_vocab_shard(m, k->tr->l.tp);
	float *x = *xio, *xn = x, *full = NULL;
	char lb[40];
	*xio = NULL;
	if (m->norm != SL_NORM_NONE) {
		cs->hl = x;
		k_recat(k, x, CAT_ACT);
		TRY(k_alloc(k, &xn, (size_t)g->rl * h, CAT_WS, "final norm output"));
		TRY(ew_norm(k, x, xn, (size_t)g->rl, (size_t)h));
	}
	TRY(gather_input(k, g, xn, &full));
	double nv = (double)r * vp, f32 = 4.0 / k->eb; /* an fp32 value in elements */
	float *lo = NULL;
	TRY(k_alloc(k, &lo, (size_t)r * vp, CAT_WS, "logits"));
	WORK(SL_PASS_FWD, m->layers - 1, SL_PART_HEAD, SL_GRAD_NONE, -1);
	TRY(k_gemm(k, 0, 0, r, vp, h, 1, full, 0, h, NULL, 0, vp, 0, lo, 0, vp, lb));
	keep_rows(k, g, &full, &xn);
	cs->hx = full;
	if (k->eb < 4) {
		TRY(k_alloc(k, &cs->lg, (size_t)ceil(nv * f32), CAT_ACT,
		            "activations (LM head softmax, fp32)"));
		TRY(ew_skip(k, nv + nv * f32, "logits to fp32"));
		k_free(k, &lo);
	} else {
		cs->lg = lo;
		k_recat(k, lo, CAT_ACT);
	}
	/* the maximum (a read), the exponentials and their sum (a read and a
	 * write), the softmax (a read and a write): 5 r V/t fp32 values */
	TRY(ew_skip(k, 5.0 * nv * f32, "cross entropy"));
	for (int i = 0; i < 3; i++)
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, k->ds->tpg, SL_COLL_ALLREDUCE, cs->lg, 0,
		           (size_t)ceil(r * f32), NULL));
	return SL_OK;
}

/* Its backward: the softmax less the one-hot targets (in place, fp32,
 * then cast down for the products), the input's and the weights'
 * gradients, the input's summed over the TP group (every rank's product
 * read all of it), then through the final norm: *dio. */
static int head_bwd(struct kctx *k, const struct mbgeo *g, struct cstash *cs, float **dio)
{
	const sl_model_spec *m = &k->tr->m;
	int h = m->hidden, r = g->r, vp = sl_model_vocab_shard(m, k->tr->l.tp);
	float *dl = cs->lg, *full = NULL, *dxp = NULL;
	double nv = (double)r * vp, f32 = 4.0 / k->eb;
	char lb[40];
	cs->lg = NULL;
	k_recat(k, dl, CAT_WS);
	TRY(ew_skip(k, 2.0 * nv * f32, "cross entropy grad"));
	if (k->eb < 4) {
		float *d32 = dl;
		dl = NULL;
		TRY(k_alloc(k, &dl, (size_t)r * vp, CAT_WS, "logits gradient"));
		TRY(ew_skip(k, nv * f32 + nv, "logits gradient from fp32"));
		k_free(k, &d32);
	}
	TRY(regather(k, g, cs->hx, &full));
	TRY(k_alloc(k, &dxp, (size_t)r * h, CAT_WS, "LM head input gradient"));
	WORK(SL_PASS_BWD, m->layers - 1, SL_PART_HEAD, SL_GRAD_X, -1);
	TRY(k_gemm(k, 0, 1, r, h, vp, 1, dl, 0, vp, NULL, 0, vp, 0, dxp, 0, h, lb));
	WORK(SL_PASS_BWD, m->layers - 1, SL_PART_HEAD, SL_GRAD_W, -1);
	TRY(k_gemm(k, 1, 0, vp, h, r, 1, dl, 0, vp, full, 0, h, 1, NULL, 0, h, lb));
	TRY(wgrad_add(k, (size_t)vp, (size_t)h));
	k_free(k, &dl);
	if (full != cs->hx)
		k_free(k, &full);
	k_free(k, &cs->hx);
	TRY(reduce_rows(k, g, dxp, dio));
	if (cs->hl) {
		TRY(ew_norm_grad(k, cs->hl, *dio, (size_t)g->rl, (size_t)h));
		k_free(k, &cs->hl);
	}
	return SL_OK;
}

static int block_fwd(struct kctx *k, const struct blk *b, const struct mbgeo *g, struct bstash *bs,
                     float **xio)
{
	if (k->tr->m.heads > 0)
		TRY(attn_fwd(k, b, g, bs, xio));
	return mlp_fwd(k, b, g, bs, xio);
}

/* Drop what a block's forward kept (full recomputation makes it again). */
static void stash_free(struct kctx *k, struct bstash *bs)
{
	k_free(k, &bs->xa);
	k_free(k, &bs->qkv);
	k_free(k, &bs->p);
	k_free(k, &bs->pd);
	k_free(k, &bs->mask);
	k_free(k, &bs->hmask[0]);
	k_free(k, &bs->hmask[1]);
	k_free(k, &bs->xla);
	k_free(k, &bs->xlm);
	k_free(k, &bs->o);
	k_free(k, &bs->xm);
	k_free(k, &bs->z);
	k_free(k, &bs->a);
	k_free(k, &bs->lse);
}

/* ---- ZeRO-2 and 3: a unit's parameters gathered, its gradient scattered ---- */

/* ZeRO-3: unit u's parameters all-gathered into P from their owners; *h
 * accounts for them until zero_release. */
static int zero_gather(struct kctx *k, int u, float **h)
{
	struct dstate *ds = k->ds;
	size_t lo = ds->ulo[u], n = ds->ulo[u + 1] - lo;
	TRY(k_alloc_as(k, h, n, CAT_WS, "gathered parameters (ZeRO-3)", 0));
	return k_coll(k, SL_TR_DP_ALLGATHER, ds->dpg, SL_COLL_ALLGATHER,
	              k->d && !k->dry ? ds->P : NULL, lo, n, NULL);
}

/* With overlap, ZeRO-3 gathers on the DP stream one block ahead (FSDP's
 * prefetch): block i's gather was issued before; wait for it (its event),
 * then issue block `next`'s (-1: none) to run beside block i's compute. */
static int zero_prefetch(struct kctx *k, struct cstash *cs, int c, int i, int next, int first)
{
	int f = k->ds->cfirst[c];
	if (first) {
		k_stream(k, SL_STREAM_DP);
		TRY(zero_gather(k, i, &cs->b[i - f].wfull));
		TRY(k_mark(k, SL_STREAM_DP, i & 1));
		k_stream(k, SL_STREAM_COMPUTE);
	}
	TRY(k_wait_ev(k, SL_STREAM_DP, i & 1));
	if (next >= 0) {
		k_stream(k, SL_STREAM_DP);
		TRY(zero_gather(k, next, &cs->b[next - f].wfull));
		TRY(k_mark(k, SL_STREAM_DP, next & 1));
		k_stream(k, SL_STREAM_COMPUTE);
	}
	return SL_OK;
}

/* Before a micro-batch's backward of unit u: its gradient starts from zero
 * in G (held as workspace, *h, until zero_scatter). */
static int zero_grad_begin(struct kctx *k, int u, float **h)
{
	struct dstate *ds = k->ds;
	size_t lo = ds->ulo[u], n = ds->ulo[u + 1] - lo;
	TRY(k_alloc_as(k, h, n, CAT_WS, "a unit's gradient (ZeRO-2)", 0));
	if (k->d && !k->dry)
		memset(ds->G + lo, 0, n * FL);
	return SL_OK;
}

/* After it: the unit's gradient reduce-scattered over the DP group, this
 * device's slice added to its sum over micro-batches (GS), the whole freed. */
static int zero_scatter(struct kctx *k, int u, float **h)
{
	struct dstate *ds = k->ds;
	size_t lo = ds->ulo[u], n = ds->ulo[u + 1] - lo, ol, oc;
	int real = k->d && !k->dry;
	if (overlap_on(k))
		k_stream(k, SL_STREAM_DP);
	TRY(k_coll(k, SL_TR_DP_REDUCESCATTER, ds->dpg, SL_COLL_REDUCESCATTER, real ? ds->G : NULL,
	           lo, n, NULL));
	trn_own_slice(k->tr, ds, u, &ol, &oc);
	/* charged as an even slice, the same on every rank (one recording
	 * stands for them all) */
	double elems = 3.0 * (double)n / (double)sl_layout_dpc(&k->tr->l);
	if (real) {
		double mark = sl_dev_cpu_mark();
		float *s = ds->GS + ds->uown[u];
		const float *g = ds->G + ol;
		for (size_t i = 0; i < oc; i++)
			s[i] += g[i];
		TRY(ew_done(k, mark, elems, "gradient slice sum"));
	} else {
		TRY(ew_skip(k, elems, "gradient slice sum"));
	}
	k_stream(k, SL_STREAM_COMPUTE);
	k_free(k, h);
	return SL_OK;
}

/* Data-parallel buckets (overlap, no ZeRO-2/3): the last micro-batch's
 * backward adds each block's gradient range to the bucket, which is
 * all-reduced on the DP stream once it holds bucket_bytes; a chunk's last
 * bucket goes when its backward ends. */
static int dp_bucket_send(struct kctx *k)
{
	struct dstate *ds = k->ds;
	if (k->bk_hi <= k->bk_lo)
		return SL_OK;
	k_stream(k, SL_STREAM_DP);
	int rc = k_coll(k, SL_TR_DP_ALLREDUCE, ds->dpg, SL_COLL_ALLREDUCE,
	                k->d && !k->dry ? ds->G : NULL, k->bk_lo, k->bk_hi - k->bk_lo, NULL);
	k_stream(k, SL_STREAM_COMPUTE);
	k->bk_lo = k->bk_hi = 0;
	return rc;
}

static int dp_bucket_add(struct kctx *k, int i)
{
	struct dstate *ds = k->ds;
	if (k->bk_hi <= k->bk_lo)
		k->bk_hi = ds->blo[i + 1];
	k->bk_lo = ds->blo[i];
	double cap = k->tr->l.bucket_bytes > 0 ? k->tr->l.bucket_bytes : SL_BUCKET_DEFAULT;
	if ((double)(k->bk_hi - k->bk_lo) * k->eb >= cap)
		return dp_bucket_send(k);
	return SL_OK;
}

/* Buckets run only with overlap, data parallelism, no ZeRO (ZeRO-1 reduce-
 * scatters at the step's end; 2 and 3 block by block), on the last
 * micro-batch (whose backward makes the gradients final). */
static int dp_buckets(const struct kctx *k, int mb)
{
	const sl_layout *l = &k->tr->l;
	return overlap_on(k) && sl_layout_dpc(l) > 1 && l->zero == 0 && mb == l->microbatches - 1;
}

static int chunk_fwd(struct kctx *k, int c, int mb, float **xio, struct cstash *cs)
{
	struct dstate *ds = k->ds;
	struct mbgeo g;
	mb_geo(k, mb, &g);
	int full = k->tr->l.recompute == SL_RECOMPUTE_FULL;
	if (k->tr->m.vocab > 0 && c == 0 && ds->pp == 0)
		TRY(embed_fwd(k, &g, *xio, cs));
	for (int i = ds->cfirst[c]; i < ds->cfirst[c + 1]; i++) {
		struct bstash *bs = &cs->b[i - ds->cfirst[c]];
		if (full) {
			/* Keep the block's input alone; its forward is run again
			 * before its backward. */
			size_t n = (size_t)g.rl * (size_t)k->tr->m.hidden;
			TRY(k_alloc(k, &bs->xin, n, CAT_ACT,
			            "activations (block input, kept to recompute)"));
			TRY(ew_copy(k, bs->xin, 0, *xio, 0, n));
		}
		if (k->tr->l.zero >= 3 && overlap_on(k))
			TRY(zero_prefetch(k, cs, c, i, i + 1 < ds->cfirst[c + 1] ? i + 1 : -1,
			                  i == ds->cfirst[c]));
		else if (k->tr->l.zero >= 3)
			TRY(zero_gather(k, i, &bs->wfull));
		TRY(block_fwd(k, &ds->blk[i], &g, bs, xio));
		/* (kept, with reshard-after-forward off, for the backward) */
		if (!k->tr->l.zero_keep)
			k_free(k, &bs->wfull);
		if (full)
			stash_free(k, bs);
	}
	if (is_last_chunk(k, c) && k->tr->m.vocab > 0)
		return head_fwd(k, &g, xio, cs);
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
	if (is_last_chunk(k, c) && k->tr->m.vocab > 0) {
		TRY(head_bwd(k, &g, cs, dio));
	} else if (is_last_chunk(k, c)) {
		*dio = cs->dyl;
		cs->dyl = NULL;
		k_recat(k, *dio, CAT_WS);
	}
	for (int i = ds->cfirst[c + 1] - 1; i >= ds->cfirst[c]; i--) {
		struct bstash *bs = &cs->b[i - ds->cfirst[c]];
		float *gh = NULL;
		/* (kept from the forward: nothing to gather) */
		int gather = k->tr->l.zero >= 3 && !k->tr->l.zero_keep;
		if (gather && overlap_on(k))
			TRY(zero_prefetch(k, cs, c, i, i > ds->cfirst[c] ? i - 1 : -1,
			                  i == ds->cfirst[c + 1] - 1));
		else if (gather)
			TRY(zero_gather(k, i, &bs->wfull));
		if (k->tr->l.zero >= 2)
			TRY(zero_grad_begin(k, i, &gh));
		if (bs->xin) {
			/* Full recomputation: the block's forward again, from its
			 * kept input, for the activations its backward needs. */
			size_t n = (size_t)g.rl * (size_t)k->tr->m.hidden;
			float *x = NULL;
			TRY(k_alloc(k, &x, n, CAT_WS, "recomputed block input"));
			TRY(ew_copy(k, x, 0, bs->xin, 0, n));
			k_free(k, &bs->xin);
			TRY(block_fwd(k, &ds->blk[i], &g, bs, &x));
			k_free(k, &x);
		}
		TRY(mlp_bwd(k, &ds->blk[i], &g, bs, dio));
		if (k->tr->m.heads > 0)
			TRY(attn_bwd(k, &ds->blk[i], &g, bs, dio));
		k_free(k, &bs->wfull);
		if (gh)
			TRY(zero_scatter(k, i, &gh));
		if (dp_buckets(k, mb))
			TRY(dp_bucket_add(k, i));
	}
	/* a chunk's last bucket goes as its backward ends; the first chunk's,
	 * the last done, waits for the step's end to go with the root */
	if (dp_buckets(k, mb) && c > 0)
		TRY(dp_bucket_send(k));
	k->bk_lo = k->bk_hi = 0;
	if (c == 0 && ds->pp == 0) {
		if (k->tr->m.vocab > 0)
			TRY(embed_bwd(k, &g, *dio, cs));
		k_free(k, dio);
	}
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

/* A message's fields: the result of global chunk `from` (forward
 * activations or a backward gradient) for micro-batch mb, going to the
 * stage of chunk `to`. */
static sl_ev_p2p p2p_info(const struct kctx *k, int bwd, int mb, int from, int to)
{
	int pp = k->tr->l.pp;
	return (sl_ev_p2p){.kind = (signed char)(bwd ? SL_P2P_GRAD : SL_P2P_ACT),
	                   .from = (short)(from % pp),
	                   .to = (short)(to % pp),
	                   .chunk = (short)from,
	                   .mb = (short)mb,
	                   .iter = (short)k->ks};
}

/* Scatter/gather (Narayanan et al. 2021, section 4.1): without sequence
 * parallelism a chunk's output, and the gradient of its input, are whole
 * and the same on every TP rank, so each rank sends only its 1/t of the n
 * floats (the all-gather's block of its rank) and the receiving stage's
 * ranks gather the rest over their TP group's links.  With sequence
 * parallelism each rank's rows are its own already: it sends them all. */
static int scatter_gather(const struct kctx *k)
{
	return k->tr->l.tp > 1 && !k->tr->l.seq_parallel;
}

static void sg_slice(const struct kctx *k, struct pmsg *m)
{
	if (m->peer < 0 || !scatter_gather(k))
		return;
	/* the all-gather's blocks (coll.c), so each slice is the one it expects */
	size_t off[SL_MAX_DEVICES + 1];
	sl_block_offsets(m->n, k->tr->l.tp, NULL, off);
	m->off = off[k->ds->tp];
	m->n = off[k->ds->tp + 1] - off[k->ds->tp];
}

/* What action a must receive first (peer -1: nothing); of n floats, the
 * message's share (sg_slice). */
static struct pmsg action_input(const struct kctx *k, const sl_pp_action *a, size_t n)
{
	int g = a->chunk * k->tr->l.pp + k->ds->pp;
	struct pmsg m = {.peer = -1, .n = n, .key = -1};
	int from = a->bwd ? g + 1 : g - 1;
	if (a->bwd ? g < k->tr->nchunks - 1 : g > 0) {
		m.peer = chunk_dev(k, from);
		m.key = msg_key(k, a->bwd, a->mb, from);
		m.info = p2p_info(k, a->bwd, a->mb, from, g);
	}
	sg_slice(k, &m);
	return m;
}

/* Where action a's result goes (peer -1: nowhere). */
static struct pmsg action_output(const struct kctx *k, const sl_pp_action *a, size_t n)
{
	int g = a->chunk * k->tr->l.pp + k->ds->pp;
	struct pmsg m = {.peer = -1, .n = n, .key = msg_key(k, a->bwd, a->mb, g)};
	int to = a->bwd ? g - 1 : g + 1;
	if (a->bwd ? g > 0 : g < k->tr->nchunks - 1) {
		m.peer = chunk_dev(k, to);
		m.info = p2p_info(k, a->bwd, a->mb, g, to);
	}
	sg_slice(k, &m);
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

static int exchange_rounds(struct kctx *k, const struct pmsg *s, int ns, const struct pmsg *r,
                           int nr);

/* With overlap on, an exchange runs on the pipeline's stream, as
 * Megatron-LM's overlapped p2p communication does: its sends go on beside
 * the compute that follows, which waits only for what it receives
 * (EV_PP_RECV). */
static int exchange(struct kctx *k, const struct pmsg *s, int ns, const struct pmsg *r, int nr)
{
	int side = overlap_on(k);
	if (side)
		k_stream(k, SL_STREAM_PP);
	k->nrsp = 0;
	int rc = exchange_rounds(k, s, ns, r, nr);
	if (side) {
		k_stream(k, SL_STREAM_COMPUTE);
		if (rc == SL_OK && k->d)
			sl_dev_wait_spans(k->d, k->rsp, k->nrsp);
		else if (rc == SL_OK)
			rc = rec_stream_op(k, PO_WAIT, SL_STREAM_PP, EV_PP_RECV);
	}
	return rc;
}

static int exchange_rounds(struct kctx *k, const struct pmsg *s, int ns, const struct pmsg *r,
                           int nr)
{
	int sdone[MAX_UNIT_MSGS] = {0}, rdone[MAX_UNIT_MSGS] = {0};
	int si[MAX_UNIT_MSGS], ri[MAX_UNIT_MSGS], nsi, nri;
	sl_cluster *c = k->d ? sl_dev_cluster(k->d) : NULL;
	int id = k->d ? sl_dev_id(k->d) : -1;
	for (int first = 1;; first = 0) {
		next_round(s, ns, sdone, r, nr, rdone, si, &nsi, ri, &nri);
		if (nsi == 0 && nri == 0)
			return SL_OK;
		if (!k->d) {
			struct pop o;
			memset(&o, 0, sizeof o);
			o.type = PO_XFER;
			o.stream = k->stream;
			o.slot = first;
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
		for (int i = 0; i < nsi; i++) {
			sm[i] = sl_msg1(s[si[i]].peer, k->dry ? NULL : s[si[i]].buf,
			                s[si[i]].off * FL, s[si[i]].n * FL);
			sm[i].p2p = s[si[i]].info;
		}
		for (int i = 0; i < nri; i++) {
			rm[i] = sl_msg1(r[ri[i]].peer, k->dry ? NULL : r[ri[i]].buf,
			                r[ri[i]].off * FL, r[ri[i]].n * FL);
			rm[i].p2p = r[ri[i]].info;
		}
		sl_dev_stats a = sl_cluster_dev_stats(c, id);
		int rc = sl_xfer(k->d, sm, nsi, rm, nri, SL_XCOPY, "trn_pipeline p2p", k->err);
		sl_dev_stats z = sl_cluster_dev_stats(c, id);
		k->dr->sent[SL_TR_PP_SENDRECV] += z.bytes_sent - a.bytes_sent;
		k->dr->recv[SL_TR_PP_SENDRECV] += z.bytes_received - a.bytes_received;
		if (rc)
			return rc;
		k->nrsp += sl_dev_recv_spans(k->d, k->rsp + k->nrsp, MAX_UNIT_MSGS - k->nrsp);
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
 * shape alone, as trn_pipeline() runs them: the forward's input held (received
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
	struct cstash cs = {.b = bs};
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
		t->last = bwd && dp_buckets(k, mb);
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
			if (t->pl.op[i].type == PO_COMPUTE) {
				t->flops += t->pl.op[i].flops;
				t->sec += t->pl.op[i].sec;
			}
	}
	trn_free_all(&k2);
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
	int last = a->bwd && dp_buckets(k, a->mb);
	for (int i = 0; i < ts->n && ti < 0; i++)
		if (ts->t[i].bwd == a->bwd && ts->t[i].chunk == a->chunk && ts->t[i].nb == g.nb &&
		    ts->t[i].last == last)
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
		find_live(dr, *x)->bytes = (size_t)((double)t->out * k->eb);
	}
	struct pop o;
	memset(&o, 0, sizeof o);
	o.type = PO_ACTION;
	o.tm = ti;
	o.flops = t->flops;
	o.sec = t->sec;
	return rec_op(k, &o);
}

/* The trn_pipeline phase of a step: the schedule's actions, unit by unit.
 * Before a unit, one exchange sends the results still waiting and receives
 * what the unit needs, as Megatron-LM's send_forward_recv_backward and its
 * kin do; with rendezvous sends this is what keeps neighbours from waiting
 * on each other. */
int trn_pipeline(struct kctx *k)
{
	struct dstate *ds = k->ds;
	const sl_model_spec *m = &k->tr->m;
	int v = k->tr->v;
	struct pmsg pend[MAX_UNIT_MSGS] = {{0}};
	int npend = 0;
	/* ZeRO-3's root, gathered once and kept for the step (as FSDP2 keeps
	 * its root module's parameters) */
	if (k->tr->l.zero >= 3) {
		int r = ds->nunit - 1;
		TRY(k_coll(k, SL_TR_DP_ALLGATHER, ds->dpg, SL_COLL_ALLGATHER,
		           k->d && !k->dry ? ds->P : NULL, ds->ulo[r], ds->ulo[r + 1] - ds->ulo[r],
		           NULL));
	}
	for (int i = 0; i < ds->nacts;) {
		int j = unit_end(ds, i);
		struct pmsg in[MAX_UNIT_MSGS];
		int nin = 0;
		float *inbuf[MAX_UNIT_MSGS] = {NULL};
		if (k->d)
			sl_dev_set_op(k->d, op_id(k, &ds->acts[i]), ds->acts[i].mb);
		size_t whole[MAX_UNIT_MSGS];
		for (int u = i; u < j; u++) {
			size_t n = stream_floats(k, ds->acts[u].mb);
			struct pmsg msg = action_input(k, &ds->acts[u], n);
			if (msg.peer < 0)
				continue;
			const char *what =
			    ds->acts[u].bwd ? "received gradient" : "received activations";
			TRY(k_alloc(k, &msg.buf, n, CAT_WS, what));
			inbuf[u - i] = msg.buf;
			whole[nin] = n;
			in[nin++] = msg;
		}
		TRY(exchange(k, pend, npend, in, nin));
		/* Scatter/gather's second half: the TP ranks' slices made whole. */
		if (scatter_gather(k))
			for (int u = 0; u < nin; u++)
				TRY(k_coll(k, SL_TR_TP_ALLGATHER, ds->tpg, SL_COLL_ALLGATHER,
				           in[u].buf, 0, whole[u], NULL));
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
				TRY(k_alloc(k, &x, (size_t)g.rl * m->hidden, CAT_WS,
				            "input batch"));
				if (k->d && !k->dry)
					mb_data(k, &g, x, NULL);
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
	/* the pipeline's last sends are the step's too */
	if (overlap_on(k))
		TRY(k_wait(k, SL_STREAM_PP));
	return SL_OK;
}

/* After the trn_pipeline: gradients made whole, then Adam on what this device
 * owns. */
int trn_sync_and_update(struct kctx *k)
{
	struct dstate *ds = k->ds;
	const sl_layout *l = &k->tr->l;
	float *G = k->d && !k->dry ? ds->G : NULL, *P = k->d && !k->dry ? ds->P : NULL;
	if (l->seq_parallel && ds->rep_n > 0)
		TRY(k_coll(k, SL_TR_TP_ALLREDUCE, ds->tpg, SL_COLL_ALLREDUCE, G, ds->rep_lo,
		           ds->rep_n, NULL));
	if (l->zero >= 2) {
		/* the root's gradient, summed over the micro-batches in G */
		float *gh = NULL;
		TRY(k_alloc_as(k, &gh, 0, CAT_WS, "the root's gradient", 0));
		TRY(zero_scatter(k, ds->nunit - 1, &gh));
	} else if (l->zero == 1) {
		TRY(k_coll(k, SL_TR_DP_REDUCESCATTER, ds->dpg, SL_COLL_REDUCESCATTER, G, 0, ds->n,
		           NULL));
	} else if (dp_buckets(k, l->microbatches - 1)) {
		/* The first chunk's blocks its buckets left, [0, hi), as
		 * dp_bucket_add filled them, and the root (the replicated tensors
		 * and embeddings after the blocks): one all-reduce when no bucket
		 * went before (the whole model in one), else two. */
		double cap = l->bucket_bytes > 0 ? l->bucket_bytes : SL_BUCKET_DEFAULT;
		size_t hi = 0, end = ds->blo[ds->cfirst[k->tr->v]];
		int sent = k->tr->v > 1;
		for (int i = ds->cfirst[1] - 1; i >= 0; i--) {
			if (!hi)
				hi = ds->blo[i + 1];
			if ((double)(hi - ds->blo[i]) * k->eb >= cap) {
				hi = 0;
				sent = 1;
			}
		}
		if (!sent) {
			k->bk_lo = 0;
			k->bk_hi = ds->n;
			TRY(dp_bucket_send(k));
		} else {
			k->bk_lo = 0;
			k->bk_hi = hi;
			TRY(dp_bucket_send(k));
			k->bk_lo = end;
			k->bk_hi = ds->n;
			TRY(dp_bucket_send(k));
		}
	} else {
		TRY(k_coll(k, SL_TR_DP_ALLREDUCE, ds->dpg, SL_COLL_ALLREDUCE, G, 0, ds->n, NULL));
	}
	TRY(k_wait(k, SL_STREAM_DP));
	/* Adam reads and writes 28 bytes a parameter at either precision: fp32
	 * weights, moments and gradient; or fp32 master weights and moments, a
	 * bf16 gradient read and bf16 weights written. */
	double adam = (double)ds->uown[ds->nunit] * 28.0 / k->eb;
	if (k->d && !k->dry) {
		double mark = sl_dev_cpu_mark();
		for (int u = 0; u < ds->nunit; u++) {
			size_t lo, cnt;
			trn_own_slice(k->tr, ds, u, &lo, &cnt);
			const float *g = l->zero >= 2 ? ds->GS + ds->uown[u] : ds->G + lo;
			sl_adam(&k->tr->m, k->step + 1, ds->P + lo, g, ds->M + ds->uown[u],
			        ds->V + ds->uown[u], cnt);
		}
		TRY(ew_done(k, mark, adam, "adam"));
	} else {
		TRY(ew_skip(k, adam, "adam"));
	}
	/* ZeRO-1 and 2: every replica's parameters made whole again; ZeRO-3
	 * gathers them unit by unit when next used. */
	if (l->zero == 1 || l->zero == 2)
		for (int u = 0; u < ds->nunit; u++)
			TRY(k_coll(k, SL_TR_DP_ALLGATHER, ds->dpg, SL_COLL_ALLGATHER, P, ds->ulo[u],
			           ds->ulo[u + 1] - ds->ulo[u], NULL));
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
	if (!k->dry) {
		memset(ds->G, 0, ds->n * FL);
		if (ds->GS)
			memset(ds->GS, 0, ds->uown[ds->nunit] * FL);
	}
	TRY(trn_pipeline(k));
	sl_dev_stats s1 = sl_cluster_dev_stats(c, id);
	dr->pipe_end[ks] = sl_dev_clock(k->d);
	/* busy: the compute stream's work and the communication it waited
	 * for, not what went on beside it (with overlap the pipeline's own
	 * messages are mostly there) */
	dr->pipe_busy[ks] =
	    (s1.compute_s - s1.compute_side_s + s1.comm_s - s1.comm_side_s + s1.stream_wait_s) -
	    (s0.compute_s - s0.compute_side_s + s0.comm_s - s0.comm_side_s + s0.stream_wait_s);
	sl_dev_set_op(k->d, op_id(k, NULL), -1);
	TRY(trn_sync_and_update(k));
	TRY(step_barrier(k, R));
	sl_dev_stats s2 = sl_cluster_dev_stats(c, id);
	dr->t_end[ks] = sl_dev_clock(k->d);
	dr->compute[ks] = s2.compute_s - s0.compute_s;
	dr->comm[ks] = s2.comm_s - s0.comm_s;
	dr->exposed[ks] = (s2.comm_s - s2.comm_side_s + s2.stream_wait_s) -
	                  (s0.comm_s - s0.comm_side_s + s0.stream_wait_s);
	dr->side[ks] = s2.compute_side_s - s0.compute_side_s;
	dr->flops[ks] = s2.flops - s0.flops;
	return SL_OK;
}

static int reserve(struct kctx *k, uint64_t bytes, const char *what)
{
	TRY(sl_dev_reserve(k->d, bytes, what, k->err));
	k->dr->reserved += bytes;
	return SL_OK;
}

int trn_train_prog(sl_dev *d, void *arg, sl_err *err)
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
	const sl_cluster_config *hw = sl_cluster_config_of(R->c);
	k.dry = hw->timing_only;
	trn_set_hw(&k, hw);
	struct dstate *ds = k.ds;
	int rc = SL_OK;
	uint64_t pbytes, gbytes, obytes;
	trn_state_bytes(R->tr, ds, ds->dp, hw, &pbytes, &gbytes, &obytes);
	if ((rc = reserve(&k, pbytes, "its parameter array")) ||
	    (rc = reserve(&k, gbytes, "its gradient array")) ||
	    (rc = reserve(&k, obytes, "its Adam state")))
		goto out;
	for (int s = 0; s < R->steps && rc == SL_OK; s++) {
		k.ks = s;
		k.step = R->tr->step + s;
		sl_dev_set_step(d, s + 1);
		if ((rc = one_step(&k, R)) == SL_OK)
			trn_step_done(R, id, s);
	}
	sl_dev_set_step(d, 0);
out:
	trn_free_all(&k);
	sl_dev_release(d, k.dr->reserved);
	return rc;
}
