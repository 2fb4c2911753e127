/* SPDX-License-Identifier: MIT */
/* train_mesh.c - layouts of a training run and the device mesh they span
 * (see train.h). */
#include "train.h"
#include "units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "train_internal.h"
#include "xfer.h"

/* ---- layouts and the mesh ---- */

static const char *const axis_names[SL_NAXES] = {"tp", "pp", "dp"};

void sl_layout_default(sl_layout *l)
{
	memset(l, 0, sizeof *l);
	l->tp = l->pp = l->dp = l->cp = 1;
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
	snprintf(buf, n, "%s-%s-%s", axis_names[order[0] % SL_NAXES],
	         axis_names[order[1] % SL_NAXES], axis_names[order[2] % SL_NAXES]);
	return buf;
}

int sl_mesh_device(const sl_layout *l, int tp, int pp, int dp)
{
	/* The planner's replay asks for this in its inner loops: no loop. */
	const int c[SL_NAXES] = {tp, pp, dp}, n[SL_NAXES] = {l->tp, l->pp, l->dp * l->cp};
	int a0 = l->order[0], a1 = l->order[1], a2 = l->order[2];
	return (c[a2] * n[a1] + c[a1]) * n[a0] + c[a0];
}

void sl_mesh_coords(const sl_layout *l, int dev, int *tp, int *pp, int *dp)
{
	const int n[SL_NAXES] = {l->tp, l->pp, l->dp * l->cp};
	int c[SL_NAXES];
	int a0 = l->order[0], a1 = l->order[1], a2 = l->order[2];
	c[a0] = dev % n[a0];
	dev /= n[a0];
	c[a1] = dev % n[a1];
	c[a2] = dev / n[a1] % n[a2];
	*tp = c[SL_AXIS_TP];
	*pp = c[SL_AXIS_PP];
	*dp = c[SL_AXIS_DP];
}

double sl_mesh_ring_stripes(const sl_layout *l, const sl_cluster_config *cfg, int dev, int axis)
{
	int n = axis == 1 ? sl_layout_dpc(l) : axis == 2 ? l->cp : l->tp;
	int g = cfg->devices_per_node;
	if (!sl_coll_channels(SL_COLL_ALLREDUCE, l->algo) || g < 2 ||
	    sl_ring_stripes_runs(cfg, n, 2, 2) == 1)
		return 1;
	int tp, pp, dp;
	sl_mesh_coords(l, dev, &tp, &pp, &dp);
	int c0 = dp - dp % l->cp; /* the context-parallel group's first place */
	int r = axis == 1 ? dp : axis == 2 ? dp - c0 : tp;
#define MEMBER(i)                                                                                  \
	(axis == 1   ? sl_mesh_device(l, tp, pp, (i))                                              \
	 : axis == 2 ? sl_mesh_device(l, tp, pp, c0 + (i))                                         \
	             : sl_mesh_device(l, (i), pp, dp))
	int nxt = MEMBER((r + 1) % n), ka = 1, kb = 1;
	if (dev / g == nxt / g)
		return 1;
	for (int i = r - 1; i >= 0 && MEMBER(i) / g == dev / g; i--)
		ka++;
	for (int i = (r + 2) % n; i != r && MEMBER(i) / g == nxt / g; i = (i + 1) % n)
		kb++;
#undef MEMBER
	return sl_ring_stripes_runs(cfg, n, ka, kb);
}

static void split(int n, int p, int r, int *first, int *count)
{
	int base = n / p, extra = n % p;
	*first = r * base + (r < extra ? r : extra);
	*count = base + (r < extra);
}

static const char *const stage_rule_names[] = {"even", "ends"};

int sl_stage_layers_parse(const char *s, sl_layout *l, sl_err *err)
{
	for (int r = 0; r < 2; r++)
		if (strcmp(s, stage_rule_names[r]) == 0) {
			l->stages = (sl_stage_rule)r;
			l->stage_n = 0;
			return SL_OK;
		}
	int n = 0;
	for (const char *p = s;;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || (*end && *end != ',') || !isdigit((unsigned char)*p))
			return sl_fail(err, SL_EINVAL,
			               "'%s': count %d is not a whole number (give even, ends or "
			               "one count a stage, as 7,8,8,7)",
			               s, n + 1);
		if (v < 1 || v > SL_MODEL_MAX_LAYERS)
			return sl_fail(
			    err, SL_EINVAL,
			    "'%s': count %d is %ld, but every stage holds 1 to %d layers", s, n + 1,
			    v, SL_MODEL_MAX_LAYERS);
		if (n == SL_MAX_STAGE_LIST)
			return sl_fail(err, SL_EINVAL,
			               "'%s' names more than %d stages: a list covers at most %d "
			               "(even and ends cover any)",
			               s, SL_MAX_STAGE_LIST, SL_MAX_STAGE_LIST);
		l->stage_list[n++] = (unsigned short)v;
		if (!*end)
			break;
		p = end + 1;
	}
	l->stages = SL_STAGES_LIST;
	l->stage_n = n;
	return SL_OK;
}

void sl_layout_copy_stages(sl_layout *dst, const sl_layout *src)
{
	dst->stages = src->stages;
	dst->stage_n = src->stage_n;
	memcpy(dst->stage_list, src->stage_list, sizeof dst->stage_list);
}

const char *sl_stage_layers_name(const sl_layout *l, char *buf, size_t n)
{
	if (l->stages != SL_STAGES_LIST) {
		snprintf(buf, n, "%s", stage_rule_names[l->stages == SL_STAGES_ENDS]);
		return buf;
	}
	size_t len = 0;
	buf[0] = 0;
	for (int s = 0; s < l->stage_n && len < n; s++)
		len += (size_t)snprintf(buf + len, n - len, "%s%d", s ? "," : "", l->stage_list[s]);
	return buf;
}

int sl_layout_stage_layers(const sl_model_spec *m, const sl_layout *l, int s)
{
	int L = m->layers, p = l->pp;
	if (l->stages == SL_STAGES_LIST)
		return s < l->stage_n ? l->stage_list[s] : 0;
	if (l->stages == SL_STAGES_ENDS && p > 1) {
		int ceil = (L + p - 1) / p, d = p * ceil - L;
		return s == 0 ? ceil - (d + 1) / 2 : s == p - 1 ? ceil - d / 2 : ceil;
	}
	return L / p + (s < L % p);
}

int sl_layout_stages_even(const sl_model_spec *m, const sl_layout *l)
{
	int n0 = sl_layout_stage_layers(m, l, 0);
	for (int s = 1; s < l->pp; s++)
		if (sl_layout_stage_layers(m, l, s) != n0)
			return 0;
	return 1;
}

void sl_layout_blocks(const sl_model_spec *m, const sl_layout *l, int s, int c, int *first,
                      int *count)
{
	/* Model chunk c*p + s follows every chunk c' < c of every stage and
	 * chunk c of the stages before s. */
	int v = l->chunks > 1 ? l->chunks : 1, f = 0, n = 0;
	for (int t = 0; t < l->pp; t++) {
		int nt = sl_layout_stage_layers(m, l, t), before, cnt;
		split(nt, v, c, &before, &cnt);
		f += before + (t < s ? cnt : 0);
		if (t == s)
			n = cnt;
	}
	*first = f;
	*count = n;
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

static const char *attention_names[SL_ATTN_N] = {"materialized", "flash"};

const char *sl_attention_name(sl_attention a)
{
	return a >= 0 && a < SL_ATTN_N ? attention_names[a] : "?";
}

int sl_attention_parse(const char *s, sl_attention *out)
{
	int i = sl_name_index(attention_names, SL_ATTN_N, s);
	if (i >= 0)
		*out = (sl_attention)i;
	return i < 0 ? -1 : 0;
}

static const char *const cp_comm_names[SL_CP_N] = {"ring", "allgather"};

const char *sl_cp_comm_name(int c)
{
	return c >= 0 && c < SL_CP_N ? cp_comm_names[c] : "?";
}

int sl_cp_comm_parse(const char *s, int *out)
{
	int i = sl_name_index(cp_comm_names, SL_CP_N, s);
	if (i >= 0)
		*out = i;
	return i < 0 ? -1 : 0;
}

const char *sl_reshard_fwd_name(int keep)
{
	return keep == 0 ? "yes" : keep == 1 ? "no" : "?";
}

int sl_layout_dpc(const sl_layout *l)
{
	return l->dp * l->cp;
}

int sl_layout_devices(const sl_layout *l)
{
	return l->tp * l->pp * l->dp * l->cp;
}

static const char *recompute_names[SL_RECOMPUTE_N] = {"none", "selective", "full"};

static const char *const overlap_names[SL_OVERLAP_N] = {"auto", "on", "off"};

const char *sl_overlap_name(int o)
{
	return o >= 0 && o < SL_OVERLAP_N ? overlap_names[o] : "?";
}

const char *sl_recompute_name(sl_recompute r)
{
	return r >= 0 && r < SL_RECOMPUTE_N ? recompute_names[r] : "?";
}

int sl_recompute_parse(const char *s, sl_recompute *out)
{
	int i = sl_name_index(recompute_names, SL_RECOMPUTE_N, s);
	if (i >= 0)
		*out = (sl_recompute)i;
	return i < 0 ? -1 : 0;
}

int sl_layout_check(const sl_model_spec *m, const sl_layout *l, int ndev, sl_err *err)
{
	int rc = sl_model_check(m, err);
	if (rc)
		return rc;
	if (l->tp < 1 || l->pp < 1 || l->dp < 1 || l->cp < 1)
		return sl_fail(err, SL_EINVAL, "--tp, --pp, --dp and --cp must each be at least 1");
	if (l->cp > 1 && (long)l->tp * l->pp * l->dp * l->cp != ndev)
		return sl_fail(err, SL_EINVAL,
		               "tp*cp*pp*dp = %d*%d*%d*%d = %ld but there are %d devices: make "
		               "the product equal the device count",
		               l->tp, l->cp, l->pp, l->dp, (long)l->tp * l->cp * l->pp * l->dp,
		               ndev);
	if ((long)l->tp * l->pp * l->dp * l->cp != ndev)
		return sl_fail(err, SL_EINVAL,
		               "tp*pp*dp = %d*%d*%d = %ld but there are %d devices: make the "
		               "product equal the device count",
		               l->tp, l->pp, l->dp, (long)l->tp * l->pp * l->dp, ndev);
	if (l->cp > 1 && m->heads < 1)
		return sl_fail(err, SL_EINVAL,
		               "--cp=%d splits each sequence's attention: the model needs "
		               "attention heads (--heads)",
		               l->cp);
	if (l->cp > 1 && m->seq % (2 * l->cp) != 0)
		return sl_fail(err, SL_EINVAL,
		               "--cp=%d cuts each sequence into 2*cp = %d equal chunks (two a "
		               "device, to balance the causal mask): --seq=%d does not divide by "
		               "%d",
		               l->cp, 2 * l->cp, m->seq, 2 * l->cp);
	if (l->cp > 1 && l->attention != SL_ATTN_FLASH)
		return sl_fail(err, SL_EINVAL,
		               "--cp=%d runs ring attention as fused kernels, as Megatron-Core "
		               "does: add --attention=flash",
		               l->cp);
	if (l->cp > 1 && m->attn_dropout > 0)
		return sl_fail(
		    err, SL_EINVAL,
		    "--cp=%d with attention dropout (--attention-dropout=%g) is not built: "
		    "set --attention-dropout=0, as long-context trainings do",
		    l->cp, m->attn_dropout);
	if (l->cp_comm < 0 || l->cp_comm >= SL_CP_N)
		return sl_fail(err, SL_EINVAL, "unknown way to move keys and values (--cp-comm)");
	int seen = 0;
	for (int i = 0; i < SL_NAXES; i++) {
		if (l->order[i] < 0 || l->order[i] >= SL_NAXES || (seen >> l->order[i]) & 1)
			return sl_fail(
			    err, SL_EINVAL,
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
	if (m->heads > 0 && m->kv_heads > 0 && m->kv_heads % l->tp != 0)
		return sl_fail(err, SL_EINVAL,
		               "%d key/value heads do not split over tp=%d: tp must divide them "
		               "(--kv-heads; attention is split by whole groups of heads)",
		               m->kv_heads, l->tp);
	if (m->heads > 0 && m->heads % l->tp != 0)
		return sl_fail(err, SL_EINVAL,
		               "%d heads do not split over tp=%d: tp must divide --heads "
		               "(attention is split by whole heads)",
		               m->heads, l->tp);
	if (m->ffn < l->tp)
		return sl_fail(err, SL_EINVAL,
		               "--ffn=%d cannot be split over tp=%d: every device needs at least "
		               "one fc1 column",
		               m->ffn, l->tp);
	int v = l->chunks;
	if (l->pp * v > m->layers)
		return sl_fail(err, SL_EINVAL,
		               "%d layers cannot fill pp*chunks = %d*%d = %d model chunks: every "
		               "chunk needs a layer; lower --pp or --chunks",
		               m->layers, l->pp, v, l->pp * v);
	if (l->stages < 0 || l->stages >= SL_STAGES_N)
		return sl_fail(err, SL_EINVAL, "unknown rule for the stages' layers");
	if (l->stages == SL_STAGES_LIST) {
		if (l->stage_n != l->pp)
			return sl_fail(
			    err, SL_EINVAL,
			    "--stage-layers names %d stage%s but --pp=%d: give one count a "
			    "stage",
			    l->stage_n, l->stage_n == 1 ? "" : "s", l->pp);
		long sum = 0;
		for (int s = 0; s < l->stage_n; s++)
			sum += l->stage_list[s];
		if (sum != m->layers)
			return sl_fail(
			    err, SL_EINVAL,
			    "--stage-layers adds up to %ld layers but the model has %d: make "
			    "the counts sum to --layers",
			    sum, m->layers);
	}
	for (int s = 0; s < l->pp; s++) {
		int n = sl_layout_stage_layers(m, l, s);
		if (n < v)
			return sl_fail(
			    err, SL_EINVAL,
			    "--stage-layers%s gives stage %d %d layer%s, fewer than its %d "
			    "model chunks: every chunk needs a layer; %s",
			    l->stages == SL_STAGES_ENDS ? "=ends" : "", s, n, n == 1 ? "" : "s", v,
			    l->stages == SL_STAGES_ENDS ? "use even, or fewer stages or chunks"
			                                : "move layers to it or lower --chunks");
	}
	if ((long)l->dp * l->microbatches > m->batch)
		return sl_fail(err, SL_EINVAL,
		               "a batch of %d sequences cannot fill dp*microbatches = %d*%d = %d "
		               "micro-batches: raise --batch or lower --microbatches",
		               m->batch, l->dp, l->microbatches, l->dp * l->microbatches);
	if (l->seq_parallel && l->tp < 2)
		return sl_fail(err, SL_EINVAL,
		               "--sequence-parallel splits the sequence inside a TP group: it "
		               "needs --tp of 2 or more");
	if (l->seq_parallel) {
		long tokens = (long)(m->batch / l->dp / l->microbatches) * (m->seq / l->cp);
		if (tokens < l->tp)
			return sl_fail(err, SL_EINVAL,
			               "sequence parallelism splits a micro-batch's %ld tokens "
			               "over tp=%d: every device needs a token; raise --batch or "
			               "--seq, or lower --microbatches",
			               tokens, l->tp);
	}
	if (l->zero < 0 || l->zero > 3)
		return sl_fail(err, SL_EINVAL, "--zero=%d: the ZeRO stages are 0 to 3", l->zero);
	if (l->zero_keep && l->zero != 3)
		return sl_fail(err, SL_EINVAL,
		               "--reshard-after-forward=no keeps ZeRO-3's gathered parameters: it "
		               "needs --zero=3 (--zero=%d)",
		               l->zero);
	if (l->zero > 0 && l->dp * l->cp < 2)
		return sl_fail(err, SL_EINVAL,
		               "ZeRO-%d shards over data-parallel replicas: it needs --dp of 2 or "
		               "more",
		               l->zero);
	return SL_OK;
}

static const char *const traffic_names[SL_TR_NKINDS] = {
    "tp_allreduce", "tp_allgather",     "tp_reducescatter", "pp_sendrecv",
    "dp_allreduce", "dp_reducescatter", "dp_allgather",     "cp_kv"};

const char *sl_traffic_name(sl_traffic_kind k)
{
	return k >= 0 && k < SL_TR_NKINDS ? traffic_names[k] : "?";
}
