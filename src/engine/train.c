/* SPDX-License-Identifier: MIT */
/* train.c - a training run under TP, PP and DP on the engine's devices: each
 * device's state (its shards, optimizer slices, schedule), gathering and
 * scattering the canonical parameters, and the run with its accounting.
 * One device's step is train_step.c's; the prediction train_est.c's; the
 * mesh train_mesh.c's. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "train_internal.h"
#include "xfer.h"

/* ---- the state each device holds ---- */

int trn_build_dev(sl_train *tr, struct dstate *ds, sl_err *err)
{
	const sl_model_spec *m = &tr->m;
	const sl_layout *l = &tr->l;
	sl_mesh_coords(l, ds->id, &ds->tp, &ds->pp, &ds->dp);
	ds->built = 1;
	ds->cp = ds->dp % l->cp;
	ds->tpg = malloc(3 * sizeof *ds->tpg);
	if (!ds->tpg)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	ds->dpg = ds->tpg + 1;
	ds->cpg = ds->tpg + 2;
	ds->tpg->n = l->tp;
	for (int i = 0; i < l->tp; i++)
		ds->tpg->ranks[i] = sl_mesh_device(l, i, ds->pp, ds->dp);
	ds->dpg->n = sl_layout_dpc(l);
	for (int i = 0; i < ds->dpg->n; i++)
		ds->dpg->ranks[i] = sl_mesh_device(l, ds->tp, ds->pp, i);
	ds->cpg->n = l->cp;
	for (int i = 0; i < l->cp; i++)
		ds->cpg->ranks[i] = sl_mesh_device(l, ds->tp, ds->pp, ds->dp - ds->cp + i);

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
	/* ulo, uown and blo (nb + 2 each) in one block */
	ds->ulo = calloc(3 * ((size_t)nb + 2), sizeof *ds->ulo);
	if (!ds->blk || !ds->shards || !ds->acts || !ds->ulo)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	ds->uown = ds->ulo + nb + 2;
	ds->blo = ds->uown + nb + 2;
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
				if (pass == 0) {
					ds->blo[i] = off;
					if (l->zero >= 2)
						ds->ulo[i] = off;
				}
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
					if (kind == SL_T_FC1_W) {
						bk->zc = len;
						bk->ft = len / ti.unit;
					}
					if (kind == SL_T_QKV_W) {
						bk->qc = len;
						bk->ah = len / ti.unit *
						         (m->heads / sl_model_kv_heads(m));
						bk->h0 = start / ti.unit *
						         (m->heads / sl_model_kv_heads(m));
					}
				}
			}
		}
		/* The embedding table's V/t rows on the first stage, the LM head's
		 * on the last (its own weights, or the tied table's copy, as
		 * Megatron-LM keeps one on each end of a pipeline), split; the
		 * learned positions whole on every TP rank.  Memory, traffic and
		 * the update only: a run with a vocabulary computes no values. */
		if (pass == 0) {
			ds->blo[nb] = off;
			if (l->zero >= 2)
				ds->ulo[nb] = off;
		}
		if (m->vocab > 0) {
			size_t vh = (size_t)sl_model_vocab_shard(m, l->tp) * (size_t)m->hidden;
			int first = ds->pp == 0, last = ds->pp == l->pp - 1;
			/* (the positions' gradient is whole on every TP rank: not
			 * with the replicated tensors, whose gradients sequence
			 * parallelism all-reduces) */
			if (pass == 0)
				off += (first ? vh : 0) + (last && (m->untie || !first) ? vh : 0) +
				       (first && m->pos_emb == SL_POS_LEARNED
				            ? (size_t)m->seq * (size_t)m->hidden
				            : 0);
		}
	}
	ds->n = off;
	ds->rep_n = off - ds->rep_lo;
	/* ZeRO's units: the whole array, or (stages 2 and 3) block by block
	 * and the root, [ulo[nb], n). */
	ds->nunit = l->zero >= 2 ? nb + 1 : 1;
	if (l->zero < 2)
		ds->ulo[1] = ds->n;
	else
		ds->ulo[nb + 1] = ds->n;
	ds->uown[0] = 0;
	for (int u = 0; u < ds->nunit; u++) {
		size_t lo, cnt;
		trn_own_slice(tr, ds, u, &lo, &cnt);
		ds->uown[u + 1] = ds->uown[u] + cnt;
	}
	size_t no = ds->uown[ds->nunit];
	if (!tr->values)
		return SL_OK;
	ds->P = malloc((ds->n ? ds->n : 1) * FL);
	ds->G = calloc(ds->n ? ds->n : 1, FL);
	ds->M = calloc(no ? no : 1, FL);
	ds->V = calloc(no ? no : 1, FL);
	ds->GS = l->zero >= 2 ? calloc(no ? no : 1, FL) : NULL;
	if (!ds->P || !ds->G || !ds->M || !ds->V || (l->zero >= 2 && !ds->GS))
		return sl_fail(err, SL_ENOMEM, "the host cannot hold device %d's parameters",
		               ds->id);
	return SL_OK;
}

void trn_free_dev(struct dstate *ds)
{
	free(ds->tpg);
	free(ds->ulo);
	free(ds->GS);
	free(ds->blk);
	free(ds->shards);
	free(ds->acts);
	free(ds->P);
	free(ds->G);
	free(ds->M);
	free(ds->V);
}

struct linksrc;

void sl_train_destroy(sl_train *tr)
{
	if (!tr)
		return;
	for (int i = 0; tr->dev && i < tr->ndev; i++)
		trn_free_dev(&tr->dev[i]);
	free(tr->dev);
	free(tr);
}

static sl_train *create(const sl_model_spec *m, const sl_layout *l, int ndev, int values,
                        sl_err *err)
{
	if (ndev < 1 || ndev > SL_MAX_DEVICES) {
		sl_fail(err, SL_EINVAL, "device count %d is out of range (1 to %d)", ndev,
		        SL_MAX_DEVICES);
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
	tr->store = *l;
	tr->store.dp = sl_layout_dpc(l);
	tr->store.cp = 1;
	tr->store.cp_comm = SL_CP_RING;
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
		if (trn_build_dev(tr, &tr->dev[i], err)) {
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
	if (trn_check_plan(tr, err)) {
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
	double h = m->hidden, f = m->ffn + sl_model_fc1_cols(m), qc = sl_model_qkv_cols(m);
	/* per block: x twice, Q K V, the heads' output, z and a (and two masks
	 * with hidden dropout); the scores (twice, and a mask, with attention
	 * dropout) */
	double scores =
	    (double)m->batch * m->heads * m->seq * m->seq * (m->attn_dropout > 0 ? 2.5 : 1);
	double masks =
	    m->hidden_dropout > 0 ? h : 0; /* a byte an element, twice (bf16: half a float) */
	double norms = m->norm != SL_NORM_NONE ? 2 * h : 0; /* the norms' inputs */
	double acts = 4.0 * m->layers * (R * (3 * h + qc + f + masks + norms) + scores);
	return 16 * n * (1 + sl_layout_dpc(l)) + acts * (1 + l->tp);
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

const sl_layout *sl_train_store_layout(const sl_train *tr)
{
	return &tr->store;
}

long sl_train_step(const sl_train *tr)
{
	return tr->step;
}

void sl_train_set_step(sl_train *tr, long step)
{
	tr->step = step;
}

void sl_train_unit_slice(const sl_dev_state *st, int u, int r, size_t *lo, size_t *cnt)
{
	size_t a = st->ulo[u], n = st->ulo[u + 1] - a;
	if (st->zero == 0) {
		*lo = a;
		*cnt = n;
		return;
	}
	/* sl_block_offsets()'s blocks, which the collectives deal */
	size_t base = n / (size_t)st->dp, extra = n % (size_t)st->dp, ur = (size_t)r;
	*lo = a + ur * base + (ur < extra ? ur : extra);
	*cnt = base + (ur < extra);
}

void trn_own_slice(const sl_train *tr, const struct dstate *ds, int u, size_t *lo, size_t *cnt)
{
	sl_dev_state st;
	memset(&st, 0, sizeof st);
	st.zero = tr->l.zero;
	st.dp = sl_layout_dpc(&tr->l);
	st.ulo = ds->ulo;
	sl_train_unit_slice(&st, u, ds->dp, lo, cnt);
}

/* Elements of device ds's moments, and of what it holds all step, were
 * it DP rank r. */
static void owned_elems(const sl_train *tr, const struct dstate *ds, int r, size_t *own,
                        size_t *held)
{
	sl_dev_state st;
	memset(&st, 0, sizeof st);
	st.zero = tr->l.zero;
	st.dp = sl_layout_dpc(&tr->l);
	st.ulo = ds->ulo;
	*own = 0;
	size_t lo, cnt = 0;
	for (int u = 0; u < ds->nunit; u++) {
		sl_train_unit_slice(&st, u, r, &lo, &cnt);
		*own += cnt;
	}
	/* the root, the last unit, whole */
	*held = tr->l.zero < 2 ? ds->n : *own - cnt + (ds->n - ds->ulo[ds->nunit - 1]);
}

size_t trn_held(const sl_train *tr, const struct dstate *ds)
{
	size_t own, held;
	owned_elems(tr, ds, ds->dp, &own, &held);
	return held;
}

void trn_state_bytes(const sl_train *tr, const struct dstate *ds, int r,
                     const sl_cluster_config *hw, uint64_t *params, uint64_t *grads, uint64_t *opt)
{
	double pb = trn_param_elem_bytes(hw);
	size_t own, held;
	owned_elems(tr, ds, r, &own, &held);
	*params = (uint64_t)((double)(tr->l.zero >= 3 ? held : ds->n) * pb);
	*grads = (uint64_t)((double)held * pb);
	*opt = (uint64_t)((double)own * trn_opt_elem_bytes(hw));
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
	s.zero = tr->l.zero;
	s.dp = sl_layout_dpc(&tr->l);
	s.dp_rank = ds->dp;
	s.nunit = ds->nunit;
	s.ulo = ds->ulo;
	s.nown = ds->uown[ds->nunit];
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
			float *gr = g + (size_t)r * ti.cols + sh->start,
			      *fr = f + (size_t)r * sh->len;
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

/* A device's full-length array assembled from its DP group's slices:
 * which 0 the parameters (ZeRO-3's are fresh only in their owner's
 * slices), 1 and 2 the moments. */
static void owned_full(const sl_train *tr, const struct dstate *ds, int which, float *out)
{
	if (which == 0 && tr->l.zero < 3) {
		memcpy(out, ds->P, ds->n * FL);
		return;
	}
	if (which > 0 && !tr->l.zero) {
		memcpy(out, which == 2 ? ds->V : ds->M, ds->n * FL);
		return;
	}
	for (int q = 0; q < ds->dpg->n; q++) {
		const struct dstate *o = &tr->dev[ds->dpg->ranks[q]];
		for (int u = 0; u < o->nunit; u++) {
			size_t lo, cnt;
			trn_own_slice(tr, o, u, &lo, &cnt);
			const float *src = which == 0   ? o->P + lo
			                   : which == 1 ? o->M + o->uown[u]
			                                : o->V + o->uown[u];
			memcpy(out + lo, src, cnt * FL);
		}
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
		if (!(tmp = realloc(tmp, (ds->n ? ds->n : 1) * FL)))
			return SL_ENOMEM;
		for (int w = 0; w < 3; w++) {
			float *dst = w == 0 ? params : w == 1 ? mom : var;
			if (!dst)
				continue;
			owned_full(tr, ds, w, tmp);
			float *src = tmp;
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
			size_t no = ds->uown[ds->nunit];
			if (!src) {
				if (params)
					memset(dst, 0, no * FL);
				continue;
			}
			if (!(tmp = realloc(tmp, (ds->n ? ds->n : 1) * FL)))
				return SL_ENOMEM;
			for (int s = 0; s < ds->nshards; s++)
				shard_copy(&tr->m, &ds->shards[s], tmp, (float *)src, 0);
			for (int u = 0; u < ds->nunit; u++) {
				size_t lo, cnt;
				trn_own_slice(tr, ds, u, &lo, &cnt);
				memcpy(dst + ds->uown[u], tmp + lo, cnt * FL);
			}
		}
	}
	free(tmp);
	return SL_OK;
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
	free(R->done);
	pthread_mutex_destroy(&R->mu);
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

void sl_train_on_step(sl_train *tr, sl_train_step_fn fn, void *arg)
{
	tr->on_step = fn;
	tr->on_step_arg = arg;
}

void trn_step_done(struct run *R, int id, int s)
{
	(void)id;
	const sl_train *tr = R->tr;
	if (!tr->on_step || atomic_fetch_add(&R->done[s], 1) + 1 < tr->ndev)
		return;
	/* Every device's figures of step s were written before its count. */
	const sl_model_spec *m = &tr->m;
	double norm = (double)m->batch * m->seq * m->hidden;
	int dry = sl_cluster_config_of(R->c)->timing_only;
	pthread_mutex_lock(&R->mu);
	while (R->next < R->steps && atomic_load(&R->done[R->next]) == tr->ndev) {
		int k = R->next++;
		double sum = 0;
		for (int i = 0; i < tr->ndev; i++)
			sum += R->dr[i].loss[k];
		tr->on_step(tr->on_step_arg, tr->step + k, dry ? NAN : sum / norm,
		            R->dr[0].t_end[k] - R->dr[0].t0[k]);
	}
	pthread_mutex_unlock(&R->mu);
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
	pthread_mutex_init(&R->mu, NULL);
	if (tr->on_step && !(R->done = calloc((size_t)steps, sizeof *R->done)))
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	int mv = tr->l.microbatches * tr->v;
	for (int i = 0; i < tr->ndev; i++) {
		struct drun *dr = &R->dr[i];
		int nb = tr->dev[i].cfirst[tr->v];
		dr->st = calloc((size_t)mv, sizeof *dr->st);
		dr->bst = calloc((size_t)tr->l.microbatches * (nb ? nb : 1), sizeof *dr->bst);
		dr->loss = calloc((size_t)steps, sizeof *dr->loss);
		dr->t0 = calloc((size_t)steps * 9, sizeof *dr->t0);
		if (!dr->st || !dr->bst || !dr->loss || !dr->t0)
			return sl_fail(err, SL_ENOMEM, "out of host memory");
		dr->pipe_end = dr->t0 + steps;
		dr->pipe_busy = dr->t0 + 2 * steps;
		dr->t_end = dr->t0 + 3 * steps;
		dr->compute = dr->t0 + 4 * steps;
		dr->comm = dr->t0 + 5 * steps;
		dr->flops = dr->t0 + 6 * steps;
		dr->exposed = dr->t0 + 7 * steps;
		dr->side = dr->t0 + 8 * steps;
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
		               "a training state without values (timing only) runs only on a "
		               "timing-only cluster");
	struct run *R;
	int rc = run_alloc(tr, c, steps, &R, err);
	if (rc == SL_OK)
		rc = sl_cluster_run(c, trn_train_prog, R, err);
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
			sum_idle += (t1 - t0) - (dr->compute[s] - dr->side[s]) - dr->exposed[s];
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
	if (rep->bubble_fraction <
	    0) /* rounding: the trn_pipeline cannot beat its busiest device */
		rep->bubble_fraction = 0;
	rep->idle_fraction = sum_step > 0 ? sum_idle / (sum_step * tr->ndev) : 0;
	if (rep->idle_fraction < 0) /* rounding: no device is busier than the step */
		rep->idle_fraction = 0;
	for (int i = 0; i < tr->ndev; i++) {
		struct drun *dr = &R->dr[i];
		struct dstate *ds = &tr->dev[i];
		sl_train_dev *o = &rep->dev[i];
		o->tp = ds->tp;
		o->pp = ds->pp;
		o->dp = ds->dp / tr->l.cp;
		o->cp = ds->cp;
		const sl_cluster_config *hw = sl_cluster_config_of(c);
		trn_state_bytes(tr, ds, ds->dp, hw, &o->params_bytes, &o->grads_bytes,
		                &o->optimizer_bytes);
		o->act_peak_bytes = dr->act_peak;
		o->workspace_peak_bytes = dr->ws_peak;
		o->mem_peak_bytes = sl_cluster_dev_stats(c, i).mem_peak;
		double side = 0; /* compute on a side stream: beside, not after, the rest */
		for (int s = 0; s < steps; s++) {
			o->compute_s += dr->compute[s] / steps;
			o->comm_s += dr->comm[s] / steps;
			o->comm_exposed_s += dr->exposed[s] / steps;
			side += dr->side[s] / steps;
			o->flops += dr->flops[s] / steps;
			o->pipe_busy_s += dr->pipe_busy[s] / steps;
		}
		/* hidden communication ran beside the compute: idle is what
		 * neither the compute nor exposed communication filled */
		o->idle_s = rep->step_s - (o->compute_s - side) - o->comm_exposed_s;
		/* A busy device's sums round to a hair over the step: no idle
		 * time, not "-0.0 ns". */
		if (o->idle_s < 0 && o->idle_s > -1e-9 * rep->step_s)
			o->idle_s = 0;
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

int sl_train_single_step_s(const sl_model_spec *m, const sl_layout *like,
                           const sl_cluster_config *cfg, double *out, int *estimated, sl_err *err)
{
	*estimated = 0;
	double flops = sl_model_step_flops(m);
	*out = flops / cfg->flops;
	if (cfg->timing == SL_TIMING_MODEL) {
		/* The same kernels on one device, at their shapes' rates (on the
		 * ideal machine, its executed FLOPs at the peak: under a causal
		 * mask more than the model's, materialized attention doing the
		 * whole s x s work). */
		sl_cluster_config one = *cfg;
		one.devices = 1;
		one.devices_per_node = 0;
		one.record = (sl_record_filter){.off = 1}; /* the run's trace filter is not its */
		sl_layout l;
		sl_layout_default(&l);
		if (like)
			l.attention = like->attention;
		sl_estimate e;
		int rc = sl_train_estimate(m, &l, &one, SL_EST_AUTO, &e, err);
		if (rc == SL_OK)
			*out = e.step_s;
		return rc;
	}
	sl_cluster_config one = *cfg;
	one.devices = 1;
	one.devices_per_node = 0;
	one.slowdown = 0;
	one.record = (sl_record_filter){.off = 1}; /* nobody reads its events */
	sl_layout l;
	sl_layout_default(&l);
	if (like)
		l.attention = like->attention;
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
