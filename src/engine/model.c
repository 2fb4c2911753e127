/* SPDX-License-Identifier: MIT */
/* model.c - the model's tensors, initial values, data, kernels and the
 * single-device reference step. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "units.h"

#define MAX_DIM SL_MODEL_MAX_DIM

void sl_model_default(sl_model_spec *m)
{
	memset(m, 0, sizeof *m);
	m->layers = 4;
	m->hidden = 64;
	m->ffn = 256;
	m->heads = 0;
	m->seq = 1;
	m->batch = 16;
	m->seed = 1;
	m->lr = 1e-3f;
	m->beta1 = 0.9f;
	m->beta2 = 0.999f;
	m->eps = 1e-8f;
}

/* *out = the index of s among the n names, or SL_EINVAL. */
static int name_index(const char *const *names, int n, const char *s, int *out)
{
	int k = sl_name_index(names, n, s);
	if (k < 0)
		return SL_EINVAL;
	*out = k;
	return SL_OK;
}

static const char *const ffn_names[SL_FFN_N] = {"gelu", "swiglu"};

const char *sl_ffn_kind_name(int k)
{
	return k >= 0 && k < SL_FFN_N ? ffn_names[k] : "?";
}

int sl_ffn_kind_parse(const char *s, int *out)
{
	return name_index(ffn_names, SL_FFN_N, s, out);
}

static const char *const norm_names[SL_NORM_N] = {"none", "layernorm", "rmsnorm"};

const char *sl_norm_name(int k)
{
	return k >= 0 && k < SL_NORM_N ? norm_names[k] : "?";
}

int sl_norm_parse(const char *s, int *out)
{
	return name_index(norm_names, SL_NORM_N, s, out);
}

static const char *const pos_names[SL_POS_N] = {"learned", "rope"};

const char *sl_pos_name(int k)
{
	return k >= 0 && k < SL_POS_N ? pos_names[k] : "?";
}

int sl_pos_parse(const char *s, int *out)
{
	return name_index(pos_names, SL_POS_N, s, out);
}

static const char *const mask_names[SL_MASK_N] = {"causal", "full"};

const char *sl_mask_name(int k)
{
	return k >= 0 && k < SL_MASK_N ? mask_names[k] : "?";
}

int sl_mask_parse(const char *s, int *out)
{
	return name_index(mask_names, SL_MASK_N, s, out);
}

double sl_attn_tile_share(const sl_model_spec *m)
{
	return m->mask == SL_MASK_CAUSAL ? sl_attn_tile_share_n(m->seq) : 1;
}

double sl_attn_tile_share_n(int n)
{
	double s = n, b = SL_ATTN_TILE, done = 0;
	if (n < 1)
		return 1;
	/* row tile I (rows [I b, min(s, (I + 1) b))) runs column tiles 0..I,
	 * the columns [0, min(s, (I + 1) b)) */
	for (double r0 = 0; r0 < s; r0 += b) {
		double end = r0 + b < s ? r0 + b : s;
		done += (end - r0) * end;
	}
	return done / (s * s);
}

static const char *const gacc_names[SL_GACC_N] = {"fused", "separate"};

const char *sl_grad_accum_name(int k)
{
	return k >= 0 && k < SL_GACC_N ? gacc_names[k] : "?";
}

int sl_grad_accum_parse(const char *s, int *out)
{
	return name_index(gacc_names, SL_GACC_N, s, out);
}

size_t sl_model_embed_params(const sl_model_spec *m)
{
	if (m->vocab <= 0)
		return 0;
	size_t h = (size_t)m->hidden, V = (size_t)m->vocab;
	return (m->untie ? 2 : 1) * V * h + (m->pos_emb == SL_POS_LEARNED ? (size_t)m->seq * h : 0);
}

size_t sl_model_total_params(const sl_model_spec *m)
{
	return sl_model_nparams(m) + sl_model_embed_params(m);
}

int sl_model_vocab_shard(const sl_model_spec *m, int tp)
{
	return tp > 0 ? (m->vocab + tp - 1) / tp : m->vocab;
}

#define NORM_EPS 1e-5

/* Row statistics in double: the mean (0 for RMS) and 1/sqrt(var + eps). */
static void norm_stats(int kind, const float *x, size_t h, double *mu, double *rs)
{
	double s = 0, q = 0;
	if (kind == SL_NORM_LAYER) {
		for (size_t j = 0; j < h; j++)
			s += x[j];
		s /= (double)h;
	}
	for (size_t j = 0; j < h; j++) {
		double c = x[j] - s;
		q += c * c;
	}
	*mu = s;
	*rs = 1.0 / sqrt(q / (double)h + NORM_EPS);
}

void sl_norm_rows(int kind, const float *x, float *y, size_t rows, size_t h)
{
	for (size_t i = 0; i < rows; i++) {
		double mu, rs;
		norm_stats(kind, x + i * h, h, &mu, &rs);
		for (size_t j = 0; j < h; j++)
			y[i * h + j] = (float)((x[i * h + j] - mu) * rs);
	}
}

void sl_norm_grad_rows(int kind, const float *x, float *d, size_t rows, size_t h)
{
	for (size_t i = 0; i < rows; i++) {
		const float *xr = x + i * h;
		float *dr = d + i * h;
		double mu, rs, md = 0, mdx = 0;
		norm_stats(kind, xr, h, &mu, &rs);
		/* dx = rs (dy - mean(dy) - xhat mean(dy xhat)); RMS: no mean(dy) */
		for (size_t j = 0; j < h; j++) {
			md += dr[j];
			mdx += dr[j] * (xr[j] - mu) * rs;
		}
		md = kind == SL_NORM_LAYER ? md / (double)h : 0;
		mdx /= (double)h;
		for (size_t j = 0; j < h; j++)
			dr[j] = (float)(rs * (dr[j] - md - (xr[j] - mu) * rs * mdx));
	}
}

int sl_model_kv_heads(const sl_model_spec *m)
{
	return m->heads <= 0 ? 0 : m->kv_heads > 0 ? m->kv_heads : m->heads;
}

int sl_model_qkv_cols(const sl_model_spec *m)
{
	if (m->heads <= 0)
		return 0;
	return (m->heads + 2 * sl_model_kv_heads(m)) * (m->hidden / m->heads);
}

int sl_model_fc1_cols(const sl_model_spec *m)
{
	return m->ffn_kind == SL_FFN_SWIGLU ? 2 * m->ffn : m->ffn;
}

int sl_model_describe(const sl_model_spec *m, char *buf, size_t n)
{
	int len = snprintf(buf, n, "%d block%s of width %d, %sffn %d", m->layers,
	                   m->layers == 1 ? "" : "s", m->hidden,
	                   m->ffn_kind == SL_FFN_SWIGLU ? "SwiGLU " : "", m->ffn);
	if (m->norm != SL_NORM_NONE && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", %s",
		                m->norm == SL_NORM_RMS ? "RMS norms" : "layer norms");
	if (m->heads > 0 && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", %d heads", m->heads);
	if (m->kv_heads > 0 && m->kv_heads != m->heads && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, " (%d key/value)", m->kv_heads);
	if (m->attn_dropout > 0 && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", attention dropout %g",
		                (double)m->attn_dropout);
	if (m->hidden_dropout > 0 && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", hidden dropout %g",
		                (double)m->hidden_dropout);
	if (m->grad_accum == SL_GACC_SEPARATE && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", gradients accumulated separately");
	if (m->vocab > 0 && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", vocabulary %d (%s, %s positions)",
		                m->vocab, m->untie ? "untied" : "tied",
		                m->pos_emb == SL_POS_ROPE ? "rotary" : "learned");
	return len;
}

int sl_model_check(const sl_model_spec *m, sl_err *err)
{
	const struct {
		int v, lo, hi;
		const char *name;
	} dims[] = {
	    {m->layers, 1, SL_MODEL_MAX_LAYERS, "--layers"},
	    {m->hidden, 1, MAX_DIM, "--hidden"},
	    {m->ffn, 1, SL_MODEL_MAX_FFN, "--ffn"},
	    {m->heads, 0, MAX_DIM, "--heads"},
	    {m->seq, 1, SL_MODEL_MAX_SEQ, "--seq"},
	    {m->batch, 1, SL_MODEL_MAX_BATCH, "--batch"},
	};
	for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
		if (dims[i].v < dims[i].lo || dims[i].v > dims[i].hi)
			return sl_fail(err, SL_EINVAL, "%s=%d is out of range (%d to %d)",
			               dims[i].name, dims[i].v, dims[i].lo, dims[i].hi);
	if (m->mask < 0 || m->mask >= SL_MASK_N)
		return sl_fail(err, SL_EINVAL, "--mask must be causal or full");
	if (m->heads > 0 && m->hidden % m->heads != 0)
		return sl_fail(err, SL_EINVAL,
		               "--hidden=%d does not split into %d heads: the head count must "
		               "divide the width",
		               m->hidden, m->heads);
	if (m->kv_heads < 0 || (m->kv_heads > 0 && m->heads == 0))
		return sl_fail(err, SL_EINVAL,
		               "--kv-heads=%d needs attention: set --heads too (or --kv-heads=0)",
		               m->kv_heads);
	if (m->kv_heads > 0 && (m->kv_heads > m->heads || m->heads % m->kv_heads != 0))
		return sl_fail(
		    err, SL_EINVAL,
		    "--kv-heads=%d does not group %d query heads: it must divide --heads",
		    m->kv_heads, m->heads);
	if (!(m->attn_dropout >= 0 && m->attn_dropout <= 0.9f))
		return sl_fail(err, SL_EINVAL, "--attention-dropout=%g is out of range (0 to 0.9)",
		               (double)m->attn_dropout);
	if (m->attn_dropout > 0 && m->heads == 0)
		return sl_fail(err, SL_EINVAL,
		               "--attention-dropout needs attention: set --heads above 0");
	if (!(m->hidden_dropout >= 0 && m->hidden_dropout <= 0.9f))
		return sl_fail(err, SL_EINVAL, "--hidden-dropout=%g is out of range (0 to 0.9)",
		               (double)m->hidden_dropout);
	if (m->ffn_kind < 0 || m->ffn_kind >= SL_FFN_N)
		return sl_fail(err, SL_EINVAL, "--ffn-kind must be gelu or swiglu");
	if (m->norm < 0 || m->norm >= SL_NORM_N)
		return sl_fail(err, SL_EINVAL, "--norm must be none, layernorm or rmsnorm");
	if (m->vocab < 0 || m->vocab > SL_MODEL_MAX_VOCAB)
		return sl_fail(err, SL_EINVAL, "--vocab=%d is out of range (0 to %d)", m->vocab,
		               SL_MODEL_MAX_VOCAB);
	if (m->pos_emb < 0 || m->pos_emb >= SL_POS_N)
		return sl_fail(err, SL_EINVAL, "--position-embedding must be learned or rope");
	if (m->grad_accum < 0 || m->grad_accum >= SL_GACC_N)
		return sl_fail(err, SL_EINVAL, "--grad-accumulation must be fused or separate");
	/* Rows of a batch are counted in int. */
	if ((double)m->batch * m->seq > 2147483647.0)
		return sl_fail(
		    err, SL_EINVAL,
		    "--batch=%d sequences of --seq=%d tokens are over 2^31 tokens: lower one",
		    m->batch, m->seq);
	if (!(m->lr > 0) || !(m->beta1 >= 0 && m->beta1 < 1) || !(m->beta2 >= 0 && m->beta2 < 1) ||
	    !(m->eps > 0))
		return sl_fail(err, SL_EINVAL,
		               "Adam needs lr > 0, 0 <= beta1, beta2 < 1 and eps > 0");
	return SL_OK;
}

int sl_model_check_values(const sl_model_spec *m, sl_err *err)
{
	int rc = sl_model_check(m, err);
	if (rc)
		return rc;
	if (m->vocab > 0)
		return sl_fail(err, SL_EINVAL,
		               "a vocabulary (--vocab, or the model file's): the embeddings and "
		               "the LM head are timed, not computed, and this run computes values "
		               "(--vocab=0 drops them; plan and --dry-run time them)");
	/* The host holds every value of a run that computes. */
	double rows = (double)m->batch * m->seq;
	double f1 = sl_model_fc1_cols(m);
	if (rows * m->hidden > 1e9 || rows * f1 > 1e9 || (double)m->hidden * f1 > 1e9 ||
	    3.0 * m->hidden * m->hidden > 1e9)
		return sl_fail(err, SL_EINVAL,
		               "the model is too large for this emulator (a matrix of over 10^9 "
		               "values); a timing-only run (--dry-run) holds no values");
	return SL_OK;
}

/* ---- tensors ---- */

static const char *const split_names[SL_TS_N] = {"replicated", "column", "row", "heads"};

const char *sl_tsplit_name(sl_tsplit s)
{
	return s >= 0 && s < SL_TS_N ? split_names[s] : "?";
}

static int kinds_per_block(const sl_model_spec *m)
{
	return m->heads > 0 ? SL_T_PER_BLOCK : SL_T_PER_BLOCK - SL_T_FC1_W;
}

static size_t block_params(const sl_model_spec *m)
{
	size_t h = (size_t)m->hidden, f = (size_t)m->ffn, f1 = (size_t)sl_model_fc1_cols(m);
	size_t mlp = h * f1 + f1 + f * h + h;
	return m->heads > 0 ? mlp + h * (size_t)sl_model_qkv_cols(m) + h * h + h : mlp;
}

int sl_model_ntensors(const sl_model_spec *m)
{
	return m->layers * kinds_per_block(m);
}

size_t sl_model_nparams(const sl_model_spec *m)
{
	return (size_t)m->layers * block_params(m);
}

int sl_model_tensor(const sl_model_spec *m, int i, sl_tensor_info *t)
{
	int per = kinds_per_block(m);
	if (i < 0 || i >= m->layers * per)
		return SL_EINVAL;
	memset(t, 0, sizeof *t);
	int h = m->hidden, f = m->ffn, d = m->heads > 0 ? h / m->heads : 1;
	int G = sl_model_kv_heads(m), qpg = G > 0 ? m->heads / G : 1;
	int f1 = sl_model_fc1_cols(m), pair = f1 / f;
	t->block = i / per;
	t->kind = i % per + (m->heads > 0 ? 0 : SL_T_FC1_W);
	size_t off = (size_t)t->block * block_params(m);
	static const char *const names[SL_T_PER_BLOCK] = {
	    "attn.qkv.weight", "attn.out.weight", "attn.out.bias", "mlp.fc1.weight",
	    "mlp.fc1.bias",    "mlp.fc2.weight",  "mlp.fc2.bias"};
	const struct {
		int rows, cols;
		sl_tsplit split;
		int axis, unit;
	} shape[SL_T_PER_BLOCK] = {
	    {h, sl_model_qkv_cols(m), SL_TS_HEADS, 1, (qpg + 2) * d},
	    {h, h, SL_TS_ROW, 0, qpg * d},
	    {1, h, SL_TS_REPLICATED, -1, 1},
	    {h, f1, SL_TS_COLUMN, 1, pair},
	    {1, f1, SL_TS_COLUMN, 1, pair},
	    {f, h, SL_TS_ROW, 0, 1},
	    {1, h, SL_TS_REPLICATED, -1, 1},
	};
	for (int k = m->heads > 0 ? 0 : SL_T_FC1_W; k < t->kind; k++)
		off += (size_t)shape[k].rows * shape[k].cols;
	t->rows = shape[t->kind].rows;
	t->cols = shape[t->kind].cols;
	t->split = shape[t->kind].split;
	t->axis = shape[t->kind].axis;
	t->unit = shape[t->kind].unit;
	t->offset = off;
	t->count = (size_t)t->rows * t->cols;
	/* "block%d.%s" by hand: the planner asks for every tensor of every
	 * layout it records, and snprintf was a tenth of its time. */
	char digits[12];
	int nd = 0;
	for (int b = t->block; nd == 0 || b > 0; b /= 10)
		digits[nd++] = (char)('0' + b % 10);
	char *o = t->name;
	memcpy(o, "block", 5);
	o += 5;
	while (nd > 0)
		*o++ = digits[--nd];
	*o++ = '.';
	size_t len = strlen(names[t->kind]);
	memcpy(o, names[t->kind], len + 1);
	return SL_OK;
}

void sl_tensor_shard(const sl_tensor_info *ti, int t, int r, int *start, int *len)
{
	if (ti->axis < 0) {
		*start = 0;
		*len = ti->rows;
		return;
	}
	int dim = ti->axis ? ti->cols : ti->rows;
	int units = dim / ti->unit;
	int base = units / t, extra = units % t;
	int u0 = r * base + (r < extra ? r : extra);
	int nu = base + (r < extra);
	*start = u0 * ti->unit;
	*len = nu * ti->unit;
}

/* ---- deterministic values ---- */

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1) from (seed, stream, index), independent of the order
 * values are asked for. */
static float urand(uint64_t seed, uint64_t stream, uint64_t i)
{
	uint64_t z = mix64(mix64(seed ^ (stream * 0xd1b54a32d192ed03ULL)) + i);
	return (float)((double)(z >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

void sl_model_init(const sl_model_spec *m, float *params)
{
	int nt = sl_model_ntensors(m);
	for (int i = 0; i < nt; i++) {
		sl_tensor_info t;
		sl_model_tensor(m, i, &t);
		/* Weights scaled by 1/sqrt(fan-in) keep the residual stream tame;
		 * biases start small but non-zero so their paths are exercised. */
		float scale = t.rows > 1 ? 1.0f / sqrtf((float)t.rows) : 0.1f;
		for (size_t k = 0; k < t.count; k++)
			params[t.offset + k] = scale * urand(m->seed, 1000 + (uint64_t)i, k);
	}
}

void sl_model_data(const sl_model_spec *m, long step, long row0, int nrows, float *x, float *y)
{
	int h = m->hidden;
	uint64_t stream = 0x5eed0000ULL + (uint64_t)step;
	for (int r = 0; r < nrows; r++) {
		uint64_t base = (uint64_t)(row0 + r) * (uint64_t)h;
		float *xr = x + (size_t)r * h;
		for (int j = 0; j < h; j++)
			xr[j] = urand(m->seed, stream, base + (uint64_t)j);
		if (y)
			for (int j = 0; j < h; j++)
				y[(size_t)r * h + j] = tanhf(xr[j] + 0.5f * xr[(j + 1) % h]);
	}
}

double sl_model_step_flops(const sl_model_spec *m)
{
	double R = (double)m->batch * m->seq, h = m->hidden, f = m->ffn;
	double fwd = 2 * R * h * sl_model_fc1_cols(m) + 2 * R * f * h;
	if (m->heads > 0) {
		double d = h / m->heads;
		double core = 2 * (2.0 * m->batch * m->heads * (double)m->seq * m->seq * d);
		fwd += 2 * R * h * sl_model_qkv_cols(m) + 2 * R * h * h +
		       (m->mask == SL_MASK_CAUSAL ? core / 2 : core);
	}
	/* The LM head's product, forward and backward (Narayanan et al.
	 * 2021's 6 B s h V; the embedding is a lookup). */
	return 3 * fwd * m->layers + 6 * R * h * (double)m->vocab;
}

/* ---- kernels ---- */

#define GELU_C 0.7978845608028654f /* sqrt(2/pi) */

void sl_gelu(const float *z, float *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float x = z[i];
		a[i] = 0.5f * x * (1.0f + tanhf(GELU_C * (x + 0.044715f * x * x * x)));
	}
}

void sl_gelu_grad(const float *z, const float *da, float *dz, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float x = z[i];
		float u = GELU_C * (x + 0.044715f * x * x * x);
		float th = tanhf(u);
		float du = GELU_C * (1.0f + 3.0f * 0.044715f * x * x);
		dz[i] = da[i] * (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du);
	}
}

void sl_swiglu(const float *z, float *a, size_t rows, size_t f)
{
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < f; j++) {
			float g = z[(i * f + j) * 2], u = z[(i * f + j) * 2 + 1];
			a[i * f + j] = g / (1.0f + expf(-g)) * u;
		}
}

void sl_swiglu_grad(const float *z, const float *da, float *dz, size_t rows, size_t f)
{
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < f; j++) {
			size_t p = (i * f + j) * 2;
			float g = z[p], u = z[p + 1], sg = 1.0f / (1.0f + expf(-g)),
			      d = da[i * f + j];
			/* silu(g) = g sg; silu'(g) = sg (1 + g (1 - sg)) */
			dz[p] = d * u * sg * (1.0f + g * (1.0f - sg));
			dz[p + 1] = d * g * sg;
		}
}

void sl_ffn_act(int kind, const float *z, float *a, size_t rows, size_t f)
{
	if (kind == SL_FFN_SWIGLU)
		sl_swiglu(z, a, rows, f);
	else
		sl_gelu(z, a, rows * f);
}

void sl_ffn_act_grad(int kind, const float *z, const float *da, float *dz, size_t rows, size_t f)
{
	if (kind == SL_FFN_SWIGLU)
		sl_swiglu_grad(z, da, dz, rows, f);
	else
		sl_gelu_grad(z, da, dz, rows * f);
}

void sl_softmax_rows(float *s, int rows, int cols, int ld)
{
	for (int i = 0; i < rows; i++) {
		float *r = s + (size_t)i * ld;
		float mx = r[0];
		for (int j = 1; j < cols; j++)
			if (r[j] > mx)
				mx = r[j];
		float sum = 0;
		for (int j = 0; j < cols; j++) {
			r[j] = expf(r[j] - mx);
			sum += r[j];
		}
		for (int j = 0; j < cols; j++)
			r[j] /= sum;
	}
}

void sl_softmax_masked(float *p, int s, int mask)
{
	if (mask != SL_MASK_CAUSAL) {
		sl_softmax_rows(p, s, s, s);
		return;
	}
	for (int i = 0; i < s; i++) {
		float *r = p + (size_t)i * s;
		sl_softmax_rows(r, 1, i + 1, s);
		for (int j = i + 1; j < s; j++)
			r[j] = 0;
	}
}

void sl_softmax_grad_rows(const float *p, float *dp, int rows, int cols, int ld, float scale)
{
	for (int i = 0; i < rows; i++) {
		const float *pr = p + (size_t)i * ld;
		float *dr = dp + (size_t)i * ld;
		float dot = 0;
		for (int j = 0; j < cols; j++)
			dot += pr[j] * dr[j];
		for (int j = 0; j < cols; j++)
			dr[j] = scale * pr[j] * (dr[j] - dot);
	}
}

void sl_adam(const sl_model_spec *m, long t, float *p, const float *g, float *mom, float *var,
             size_t n)
{
	float b1 = m->beta1, b2 = m->beta2;
	float c1 = (float)(1.0 / (1.0 - pow(b1, (double)t)));
	float c2 = (float)(1.0 / (1.0 - pow(b2, (double)t)));
	for (size_t i = 0; i < n; i++) {
		mom[i] = b1 * mom[i] + (1.0f - b1) * g[i];
		var[i] = b2 * var[i] + (1.0f - b2) * g[i] * g[i];
		p[i] -= m->lr * (mom[i] * c1) / (sqrtf(var[i] * c2) + m->eps);
	}
}

double sl_float_decimal(float f)
{
	char b[32];
	for (int prec = 6; prec <= 9; prec++) {
		snprintf(b, sizeof b, "%.*g", prec, (double)f);
		double d = strtod(b, NULL);
		if ((float)d == f)
			return d;
	}
	return (double)f;
}

/* Dropout at rate r of n elements whose draws are z + first, z + first +
 * 1, ...: kept (and scaled by 1/(1 - r)) when the draw's top 24 bits reach
 * r 2^24. */
static void drop_apply(float r, uint64_t z, uint64_t first, size_t n, const float *in, float *out)
{
	float keep_scale = 1.0f / (1.0f - r);
	uint64_t cut = (uint64_t)((double)r * (double)(1u << 24) + 0.5);
	for (size_t i = 0; i < n; i++)
		out[i] = (mix64(z + first + i) >> 40) >= cut ? in[i] * keep_scale : 0.0f;
}

void sl_attn_dropout(const sl_model_spec *m, long step, int block, long seq, int head,
                     const float *p, float *out, int s)
{
	uint64_t z = mix64(m->seed ^ 0xd50d0a7d50d0a7ULL);
	z = mix64(z + (uint64_t)step);
	z = mix64(z + (uint64_t)block);
	z = mix64(z + (uint64_t)seq);
	z = mix64(z + (uint64_t)head);
	drop_apply(m->attn_dropout, z, 0, (size_t)s * (size_t)s, p, out);
}

void sl_hidden_dropout(const sl_model_spec *m, long step, int block, int sub, long row0,
                       size_t rows, const float *in, float *out)
{
	uint64_t z = mix64(m->seed ^ 0x41dde7d2097a1cULL);
	z = mix64(z + (uint64_t)step);
	z = mix64(z + (uint64_t)block);
	z = mix64(z + (uint64_t)sub);
	/* element (row, column) of the global batch is draw z + row h + column */
	size_t h = (size_t)m->hidden;
	drop_apply(m->hidden_dropout, z, (uint64_t)row0 * h, rows * h, in, out);
}

/* ---- the reference ---- */

static void gemm(int ta, int tb, int M, int N, int K, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc)
{
	sl_host_sgemm(ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sl_add_bias(float *y, const float *b, size_t rows, size_t cols)
{
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j++)
			y[i * cols + j] += b[j];
}

static void colsum_into(float *db, const float *dy, size_t rows, size_t cols)
{
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j++)
			db[j] += dy[i * cols + j];
}

/* A sub-block's output a W + b (a: R x K, W: K x h) added to the residual
 * x, through hidden dropout when there is one (tmp: R x h of scratch). */
static void sub_out(const sl_model_spec *m, long step, size_t l, int sub, const float *a,
                    const float *w, const float *b, int R, int K, float *x, float *tmp)
{
	int h = m->hidden;
	if (!(m->hidden_dropout > 0)) {
		gemm(0, 0, R, h, K, 1, a, K, w, h, 1, x, h);
		sl_add_bias(x, b, (size_t)R, (size_t)h);
		return;
	}
	size_t n = (size_t)R * (size_t)h;
	gemm(0, 0, R, h, K, 1, a, K, w, h, 0, tmp, h);
	sl_add_bias(tmp, b, (size_t)R, (size_t)h);
	sl_hidden_dropout(m, step, (int)l, sub, 0, (size_t)R, tmp, tmp);
	for (size_t i = 0; i < n; i++)
		x[i] += tmp[i];
}

/* What one block keeps for its backward pass. */
struct saved {
	float *xa, *qkv, *p, *o; /* attention */
	float *pd;               /* attention dropout: the dropped probabilities */
	float *xm, *z, *a;       /* MLP */
	float *xla, *xlm;        /* the norms' inputs (xa and xm are their outputs) */
};

/* A sub-block's input: x, or its norm (then x is kept in xl). */
static void sub_in(const sl_model_spec *m, const float *x, float *in, float *xl, size_t R)
{
	size_t n = R * (size_t)m->hidden;
	if (m->norm == SL_NORM_NONE) {
		memcpy(in, x, n * sizeof *x);
		return;
	}
	memcpy(xl, x, n * sizeof *x);
	sl_norm_rows(m->norm, x, in, R, (size_t)m->hidden);
}

/* The backward of a sub-block's input: dn, the gradient of what it read,
 * through the norm (from its input xl) and added to dx. */
static void sub_in_grad(const sl_model_spec *m, const float *xl, float *dn, float *dx, size_t R)
{
	size_t n = R * (size_t)m->hidden;
	sl_norm_grad_rows(m->norm, xl, dn, R, (size_t)m->hidden);
	for (size_t i = 0; i < n; i++)
		dx[i] += dn[i];
}

/* The reference step: on step's data, or (xin) on those inputs; with out,
 * the forward pass alone, its output copied there (G and loss untouched). */
static int ref_run(const sl_model_spec *m, const float *P, long step, const float *xin, float *xout,
                   float *G, double *loss, sl_err *err)
{
	int rc = sl_model_check_values(m, err);
	if (rc)
		return rc;
	size_t R = (size_t)m->batch * m->seq, h = (size_t)m->hidden, f = (size_t)m->ffn;
	size_t L = (size_t)m->layers, s = (size_t)m->seq, B = (size_t)m->batch;
	size_t A = (size_t)m->heads, d = A ? h / A : 1;
	size_t f1 = (size_t)sl_model_fc1_cols(m), qc = (size_t)sl_model_qkv_cols(m);
	/* grouped-query attention: head j is query i = j % qpg of group j / qpg,
	 * whose columns start at (j / qpg) u; its k and v follow the queries */
	size_t Gk = (size_t)sl_model_kv_heads(m), qpg = Gk ? A / Gk : 1, u = (qpg + 2) * d;
	size_t wide = f1 > qc ? f1 : qc;
	if (wide < h)
		wide = h;
	int per = kinds_per_block(m);
	struct saved *sv = calloc(L, sizeof *sv);
	float *x = malloc(R * h * sizeof *x), *tgt = malloc(R * h * sizeof *tgt);
	float *dx = malloc(R * h * sizeof *dx), *tmp = malloc(R * wide * sizeof *tmp);
	float *tmp2 = malloc(R * wide * sizeof *tmp2);
	float *dh = m->hidden_dropout > 0 ? malloc(R * h * sizeof *dh) : NULL;
	int norm = m->norm != SL_NORM_NONE;
	float *dn = norm ? malloc(R * h * sizeof *dn) : NULL;
	int ok = sv && x && tgt && dx && tmp && tmp2 && (dh || !(m->hidden_dropout > 0)) &&
	         (dn || !norm);
	for (size_t l = 0; ok && l < L; l++) {
		if (A) {
			ok &= !!(sv[l].xa = malloc(R * h * sizeof(float)));
			ok &= !!(sv[l].qkv = malloc(R * qc * sizeof(float)));
			ok &= !!(sv[l].p = malloc(B * A * s * s * sizeof(float)));
			if (m->attn_dropout > 0)
				ok &= !!(sv[l].pd = malloc(B * A * s * s * sizeof(float)));
			ok &= !!(sv[l].o = malloc(R * h * sizeof(float)));
			if (norm)
				ok &= !!(sv[l].xla = malloc(R * h * sizeof(float)));
		}
		if (norm)
			ok &= !!(sv[l].xlm = malloc(R * h * sizeof(float)));
		ok &= !!(sv[l].xm = malloc(R * h * sizeof(float)));
		ok &= !!(sv[l].z = malloc(R * f1 * sizeof(float)));
		ok &= !!(sv[l].a = malloc(R * f * sizeof(float)));
	}
	if (!ok) {
		rc = sl_fail(err, SL_ENOMEM,
		             "the host cannot hold the reference model's activations");
		goto out;
	}
	if (G)
		memset(G, 0, sl_model_nparams(m) * sizeof *G);
	sl_model_data(m, step, 0, (int)R, x, tgt);
	if (xin)
		memcpy(x, xin, R * h * sizeof *x);
	float scale = A ? 1.0f / sqrtf((float)d) : 1.0f;
	int Q = (int)qc;

	for (size_t l = 0; l < L; l++) {
		sl_tensor_info ti;
		sl_model_tensor(m, (int)(l * per), &ti);
		const float *bp = P + ti.offset;
		if (A) {
			const float *wqkv = bp, *wo = wqkv + h * qc, *bo = wo + h * h;
			sub_in(m, x, sv[l].xa, sv[l].xla, R);
			gemm(0, 0, (int)R, Q, (int)h, 1, sv[l].xa, (int)h, wqkv, Q, 0, sv[l].qkv,
			     Q);
			for (size_t n = 0; n < B; n++)
				for (size_t j = 0; j < A; j++) {
					const float *qg = sv[l].qkv + n * s * qc + (j / qpg) * u;
					const float *q = qg + (j % qpg) * d, *kk = qg + qpg * d,
					            *v = kk + d;
					float *pm = sv[l].p + (n * A + j) * s * s;
					gemm(0, 1, (int)s, (int)s, (int)d, scale, q, Q, kk, Q, 0,
					     pm, (int)s);
					sl_softmax_masked(pm, (int)s, m->mask);
					if (sv[l].pd) {
						float *pd = sv[l].pd + (n * A + j) * s * s;
						sl_attn_dropout(m, step, (int)l, (long)n, (int)j,
						                pm, pd, (int)s);
						pm = pd;
					}
					gemm(0, 0, (int)s, (int)d, (int)s, 1, pm, (int)s, v, Q, 0,
					     sv[l].o + n * s * h + j * d, (int)h);
				}
			sub_out(m, step, l, 0, sv[l].o, wo, bo, (int)R, (int)h, x, tmp);
			bp = bo + h;
		}
		const float *w1 = bp, *b1 = w1 + h * f1, *w2 = b1 + f1, *b2 = w2 + f * h;
		sub_in(m, x, sv[l].xm, sv[l].xlm, R);
		gemm(0, 0, (int)R, (int)f1, (int)h, 1, sv[l].xm, (int)h, w1, (int)f1, 0, sv[l].z,
		     (int)f1);
		sl_add_bias(sv[l].z, b1, R, f1);
		sl_ffn_act(m->ffn_kind, sv[l].z, sv[l].a, R, f);
		sub_out(m, step, l, 1, sv[l].a, w2, b2, (int)R, (int)f, x, tmp);
	}

	if (xout) {
		memcpy(xout, x, R * h * sizeof *x);
		goto out;
	}
	double sum = 0, vals = (double)R * h;
	for (size_t i = 0; i < R * h; i++) {
		double e = (double)x[i] - tgt[i];
		sum += e * e;
		dx[i] = (float)(2.0 * e / vals);
	}
	*loss = sum / vals;

	for (size_t l = L; l-- > 0;) {
		sl_tensor_info ti;
		sl_model_tensor(m, (int)(l * per), &ti);
		const float *bp = P + ti.offset;
		float *gp = G + ti.offset;
		if (A)
			bp += h * qc + h * h + h, gp += h * qc + h * h + h;
		/* MLP: dY = dx (the residual passes it through unchanged). */
		const float *w1 = bp, *w2 = w1 + h * f1 + f1;
		float *gw1 = gp, *gb1 = gw1 + h * f1, *gw2 = gb1 + f1, *gb2 = gw2 + f * h;
		float *da = tmp, *dz = tmp2;
		/* through the hidden dropout, when there is one */
		const float *dy = dx;
		if (dh) {
			sl_hidden_dropout(m, step, (int)l, 1, 0, R, dx, dh);
			dy = dh;
		}
		colsum_into(gb2, dy, R, h);
		gemm(1, 0, (int)f, (int)h, (int)R, 1, sv[l].a, (int)f, dy, (int)h, 1, gw2, (int)h);
		gemm(0, 1, (int)R, (int)f, (int)h, 1, dy, (int)h, w2, (int)h, 0, da, (int)f);
		sl_ffn_act_grad(m->ffn_kind, sv[l].z, da, dz, R, f);
		colsum_into(gb1, dz, R, f1);
		gemm(1, 0, (int)h, (int)f1, (int)R, 1, sv[l].xm, (int)h, dz, (int)f1, 1, gw1,
		     (int)f1);
		if (norm) {
			gemm(0, 1, (int)R, (int)h, (int)f1, 1, dz, (int)f1, w1, (int)f1, 0, dn,
			     (int)h);
			sub_in_grad(m, sv[l].xlm, dn, dx, R);
		} else {
			gemm(0, 1, (int)R, (int)h, (int)f1, 1, dz, (int)f1, w1, (int)f1, 1, dx,
			     (int)h);
		}
		if (A) {
			const float *wqkv = P + ti.offset, *wo = wqkv + h * qc;
			float *gwqkv = G + ti.offset, *gwo = gwqkv + h * qc, *gbo = gwo + h * h;
			float *dO = tmp, *dqkv = tmp2;
			float *dp = malloc(s * s * sizeof *dp);
			if (!dp) {
				rc = sl_fail(err, SL_ENOMEM, "out of host memory");
				goto out;
			}
			const float *dya = dx;
			if (dh) {
				sl_hidden_dropout(m, step, (int)l, 0, 0, R, dx, dh);
				dya = dh;
			}
			colsum_into(gbo, dya, R, h);
			gemm(1, 0, (int)h, (int)h, (int)R, 1, sv[l].o, (int)h, dya, (int)h, 1, gwo,
			     (int)h);
			gemm(0, 1, (int)R, (int)h, (int)h, 1, dya, (int)h, wo, (int)h, 0, dO,
			     (int)h);
			for (size_t n = 0; n < B; n++)
				for (size_t j = 0; j < A; j++) {
					size_t go = n * s * qc + (j / qpg) * u,
					       qo = go + (j % qpg) * d;
					size_t ko = go + qpg * d, vo = ko + d;
					const float *qkv = sv[l].qkv;
					const float *pm = sv[l].p + (n * A + j) * s * s;
					const float *dob = dO + n * s * h + j * d;
					/* a group's queries add to its shared dK and dV */
					float acc = j % qpg ? 1.0f : 0.0f;
					gemm(0, 1, (int)s, (int)s, (int)d, 1, dob, (int)h, qkv + vo,
					     Q, 0, dp, (int)s);
					/* V was weighed by the dropped probabilities */
					const float *pv =
					    sv[l].pd ? sv[l].pd + (n * A + j) * s * s : pm;
					gemm(1, 0, (int)s, (int)d, (int)s, 1, pv, (int)s, dob,
					     (int)h, acc, dqkv + vo, Q);
					if (sv[l].pd)
						sl_attn_dropout(m, step, (int)l, (long)n, (int)j,
						                dp, dp, (int)s);
					sl_softmax_grad_rows(pm, dp, (int)s, (int)s, (int)s, scale);
					gemm(0, 0, (int)s, (int)d, (int)s, 1, dp, (int)s, qkv + ko,
					     Q, 0, dqkv + qo, Q);
					gemm(1, 0, (int)s, (int)d, (int)s, 1, dp, (int)s, qkv + qo,
					     Q, acc, dqkv + ko, Q);
				}
			free(dp);
			gemm(1, 0, (int)h, Q, (int)R, 1, sv[l].xa, (int)h, dqkv, Q, 1, gwqkv, Q);
			if (norm) {
				gemm(0, 1, (int)R, (int)h, Q, 1, dqkv, Q, wqkv, Q, 0, dn, (int)h);
				sub_in_grad(m, sv[l].xla, dn, dx, R);
			} else {
				gemm(0, 1, (int)R, (int)h, Q, 1, dqkv, Q, wqkv, Q, 1, dx, (int)h);
			}
		}
	}
out:
	if (sv)
		for (size_t l = 0; l < L; l++) {
			free(sv[l].xa);
			free(sv[l].qkv);
			free(sv[l].p);
			free(sv[l].pd);
			free(sv[l].o);
			free(sv[l].xm);
			free(sv[l].xla);
			free(sv[l].xlm);
			free(sv[l].z);
			free(sv[l].a);
		}
	free(sv);
	free(x);
	free(tgt);
	free(dx);
	free(tmp);
	free(tmp2);
	free(dh);
	free(dn);
	return rc;
}

int sl_ref_grad(const sl_model_spec *m, const float *P, long step, float *G, double *loss,
                sl_err *err)
{
	return ref_run(m, P, step, NULL, NULL, G, loss, err);
}

int sl_ref_forward(const sl_model_spec *m, const float *P, long step, const float *x, float *out,
                   sl_err *err)
{
	return ref_run(m, P, step, x, out, NULL, NULL, err);
}

int sl_ref_init(sl_ref *r, const sl_model_spec *m, sl_err *err)
{
	memset(r, 0, sizeof *r);
	int rc = sl_model_check_values(m, err);
	if (rc == SL_OK)
		rc = sl_host_blas_ready(err);
	if (rc)
		return rc;
	r->m = *m;
	r->n = sl_model_nparams(m);
	r->params = malloc(r->n * sizeof(float));
	r->grad = malloc(r->n * sizeof(float));
	r->mom = calloc(r->n, sizeof(float));
	r->var = calloc(r->n, sizeof(float));
	if (!r->params || !r->grad || !r->mom || !r->var) {
		sl_ref_free(r);
		return sl_fail(err, SL_ENOMEM, "the host cannot hold the reference model");
	}
	sl_model_init(m, r->params);
	return SL_OK;
}

void sl_ref_free(sl_ref *r)
{
	free(r->params);
	free(r->grad);
	free(r->mom);
	free(r->var);
	memset(r, 0, sizeof *r);
}

int sl_ref_step(sl_ref *r, double *loss, sl_err *err)
{
	int rc = sl_ref_grad(&r->m, r->params, r->step, r->grad, loss, err);
	if (rc)
		return rc;
	r->step++;
	sl_adam(&r->m, r->step, r->params, r->grad, r->mom, r->var, r->n);
	return SL_OK;
}
