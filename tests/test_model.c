/* SPDX-License-Identifier: MIT */
/* test_model.c - the model's tensors, data and single-device reference.
 *
 * The reference is what every layout is compared with, so it is checked
 * here on its own: its gradient against central finite differences of its
 * loss, and Adam against the formula written out in double. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static void tiny(sl_model_spec *m, int heads)
{
	sl_model_default(m);
	m->layers = 2;
	m->hidden = 4;
	m->ffn = 6;
	m->heads = heads;
	m->seq = heads ? 3 : 1;
	m->batch = 2;
	m->seed = 7;
}

static void test_tensors_tile_the_vector(void **state)
{
	(void)state;
	for (int heads = 0; heads <= 2; heads += 2) {
		sl_model_spec m;
		tiny(&m, heads);
		size_t next = 0;
		int n = sl_model_ntensors(&m);
		assert_int_equal(n, m.layers * (heads ? 7 : 4));
		for (int i = 0; i < n; i++) {
			sl_tensor_info t;
			assert_int_equal(sl_model_tensor(&m, i, &t), SL_OK);
			assert_int_equal(t.offset, next);
			assert_int_equal(t.count, (size_t)t.rows * t.cols);
			next += t.count;
		}
		assert_int_equal(next, sl_model_nparams(&m));
	}
}

/* Every TP split cuts whole units and the shards tile the split axis. */
static void test_shards_tile_each_axis(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	m.ffn = 7;
	for (int i = 0; i < sl_model_ntensors(&m); i++) {
		sl_tensor_info ti;
		sl_model_tensor(&m, i, &ti);
		for (int t = 1; t <= 2; t++) {
			int next = 0;
			for (int r = 0; r < t; r++) {
				int start, len;
				sl_tensor_shard(&ti, t, r, &start, &len);
				if (ti.axis < 0) {
					assert_int_equal(start, 0);
					assert_int_equal(len, ti.rows);
					continue;
				}
				assert_int_equal(start, next);
				assert_int_equal(start % ti.unit, 0);
				assert_int_equal(len % ti.unit, 0);
				next += len;
			}
			if (ti.axis >= 0)
				assert_int_equal(next, ti.axis ? ti.cols : ti.rows);
		}
	}
	sl_tensor_info q;
	sl_model_tensor(&m, 0, &q);
	assert_string_equal(q.name, "block0.attn.qkv.weight");
	assert_int_equal(q.split, SL_TS_HEADS);
	assert_int_equal(q.unit, 3 * (m.hidden / m.heads));
}

/* Any slice of a step's batch is the same rows as the whole batch. */
static void test_data_by_row(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	int R = m.batch * m.seq, h = m.hidden;
	float *x = malloc(sizeof(float) * R * h), *y = malloc(sizeof(float) * R * h);
	float xs[64], ys[64];
	sl_model_data(&m, 3, 0, R, x, y);
	sl_model_data(&m, 3, 2, 3, xs, ys);
	assert_memory_equal(xs, x + 2 * h, sizeof(float) * 3 * h);
	assert_memory_equal(ys, y + 2 * h, sizeof(float) * 3 * h);
	sl_model_data(&m, 4, 2, 3, xs, ys);
	assert_memory_not_equal(xs, x + 2 * h, sizeof(float) * 3 * h);
	free(x);
	free(y);
}

static double loss_at(const sl_model_spec *m, const float *p, float *g)
{
	double loss;
	sl_err err;
	assert_int_equal(sl_ref_grad(m, p, 0, g, &loss, &err), SL_OK);
	return loss;
}

/* dL/dp against (L(p+e) - L(p-e)) / 2e for every parameter. */
static void check_gradient_step(const sl_model_spec *mp, float e)
{
	sl_model_spec m = *mp;
	size_t n = sl_model_nparams(&m);
	float *p = malloc(n * sizeof *p), *g = malloc(n * sizeof *g),
	      *scratch = malloc(n * sizeof *g);
	sl_model_init(&m, p);
	loss_at(&m, p, g);
	double worst = 0, gmax = 0;
	for (size_t i = 0; i < n; i++) {
		float keep = p[i];
		p[i] = keep + e;
		double lp = loss_at(&m, p, scratch);
		p[i] = keep - e;
		double lm = loss_at(&m, p, scratch);
		p[i] = keep;
		double fd = (lp - lm) / (2.0 * e);
		if (fabs(fd - g[i]) > worst)
			worst = fabs(fd - g[i]);
		if (fabs(g[i]) > gmax)
			gmax = fabs(g[i]);
	}
	/* Float forward passes: the difference quotient carries ~1e-5 of noise
	 * and e^2 of truncation; the gradients themselves are ~1e-1. */
	assert_true(gmax > 1e-2);
	assert_true(worst < 2e-3 * gmax);
	free(p);
	free(g);
	free(scratch);
}

static void check_gradient_of(const sl_model_spec *mp)
{
	check_gradient_step(mp, 1e-2f);
}

static void check_gradient(int heads)
{
	sl_model_spec m;
	tiny(&m, heads);
	check_gradient_of(&m);
}

static void test_gradient_mlp(void **state)
{
	(void)state;
	check_gradient(0);
}

static void test_gradient_attention(void **state)
{
	(void)state;
	check_gradient(2);
}

/* Llama's kinds: a SwiGLU MLP, and 4 query heads in 2 groups (so a
 * shared key and value head gets its gradient from two queries). */
static void test_gradient_swiglu_gqa(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 4);
	m.hidden = 8;
	m.kv_heads = 2;
	m.ffn_kind = SL_FFN_SWIGLU;
	check_gradient_of(&m);
	m.heads = 0;
	m.kv_heads = 0;
	m.seq = 1;
	check_gradient_of(&m);
}

/* With attention dropout: the masks are fixed for a step, so the loss is
 * still smooth in the parameters and its gradient goes through them. */
static void test_gradient_attention_dropout(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	m.attn_dropout = 0.3f;
	check_gradient_of(&m);
	m.kv_heads = 1;
	check_gradient_of(&m);
}

/* Hidden dropout: its masks too are fixed for a step; in the attention
 * model, the MLP-only one and Llama's kinds. */
static void test_gradient_hidden_dropout(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	m.hidden_dropout = 0.3f;
	check_gradient_of(&m);
	m.attn_dropout = 0.2f;
	m.kv_heads = 1;
	m.ffn_kind = SL_FFN_SWIGLU;
	check_gradient_of(&m);
	tiny(&m, 0);
	m.hidden_dropout = 0.3f;
	check_gradient_of(&m);
}

/* Pre-norms, layer and RMS, in the attention model, Llama's kinds and the
 * MLP-only one: the gradient through them against finite differences. */
static void test_gradient_norms(void **state)
{
	(void)state;
	for (int nk = SL_NORM_LAYER; nk <= SL_NORM_RMS; nk++) {
		sl_model_spec m;
		tiny(&m, 2);
		m.norm = nk;
		/* a norm of 4 values is sharply curved: a smaller step keeps the
		 * quotient's e^2 truncation (measured: 11x less for 3.3x less e,
		 * so truncation, not a wrong gradient) under the bound */
		check_gradient_step(&m, 2e-3f);
		m.kv_heads = 1;
		m.ffn_kind = SL_FFN_SWIGLU;
		m.hidden_dropout = 0.2f;
		check_gradient_step(&m, 2e-3f);
		tiny(&m, 0);
		m.norm = nk;
		check_gradient_step(&m, 2e-3f);
	}
}

/* The norms' rows against their definitions, in double here: a layer
 * norm's row has mean 0 and mean square var / (var + eps); an RMS norm's
 * is x / sqrt(mean(x^2) + eps). */
/* The forward pass's last-block outputs of inputs x (R rows of h). */
static void forward_of(const sl_model_spec *m, const float *p, const float *x, float *out)
{
	sl_err err;
	assert_int_equal(sl_ref_forward(m, p, 0, x, out, &err), SL_OK);
}

/* The causal mask: perturbing the tokens after position q of every
 * sequence leaves the outputs at positions 0..q as they were (each
 * position's output depends on it and the ones before it only), and moves
 * the later ones; without a mask it moves them all.  With layer norms and
 * both dropouts, which act row by row or element by element. */
static void test_causal_mask_hides_later_tokens(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	m.seq = 7;
	m.norm = SL_NORM_LAYER;
	m.attn_dropout = 0.2f;
	m.hidden_dropout = 0.1f;
	const int q = 3; /* positions 0..3 kept, 4..6 perturbed */
	size_t R = (size_t)m.batch * m.seq, h = (size_t)m.hidden, n = sl_model_nparams(&m);
	float *p = malloc(n * sizeof *p), *x = malloc(R * h * sizeof *x),
	      *y = malloc(R * h * sizeof *y), *x2 = malloc(R * h * sizeof *x2),
	      *o1 = malloc(R * h * sizeof *o1), *o2 = malloc(R * h * sizeof *o2);
	assert_non_null(p && x && y && x2 && o1 && o2);
	sl_model_init(&m, p);
	sl_model_data(&m, 0, 0, (int)R, x, y);
	memcpy(x2, x, R * h * sizeof *x);
	for (size_t r = 0; r < R; r++)
		if ((int)(r % (size_t)m.seq) > q)
			for (size_t c = 0; c < h; c++)
				x2[r * h + c] += 0.5f + 0.25f * (float)c;
	for (int mask = 0; mask < SL_MASK_N; mask++) {
		m.mask = mask;
		forward_of(&m, p, x, o1);
		forward_of(&m, p, x2, o2);
		double early = 0, late = 0, size = 0;
		for (size_t r = 0; r < R; r++)
			for (size_t c = 0; c < h; c++) {
				double dlt = fabs((double)o2[r * h + c] - o1[r * h + c]);
				if ((int)(r % (size_t)m.seq) <= q)
					early = fmax(early, dlt);
				else
					late = fmax(late, dlt);
				size = fmax(size, fabs((double)o1[r * h + c]));
			}
		assert_true(size > 0.1);
		assert_true(late > 1e-2 * size);
		if (mask == SL_MASK_CAUSAL)
			assert_true(early <= 1e-6 * size);
		else
			assert_true(early > 1e-3 * size);
	}
	free(p);
	free(x);
	free(y);
	free(x2);
	free(o1);
	free(o2);
}

/* The gradient through the masked softmax, without a mask too. */
static void test_gradient_masks(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	m.seq = 4;
	for (int mask = 0; mask < SL_MASK_N; mask++) {
		m.mask = mask;
		check_gradient_of(&m);
	}
}

/* A fused kernel's share of a causal head's s x s products, tile by tile
 * (tiles of 128 a side): with n = s / 128 whole tiles a side it executes
 * n (n + 1) / 2 of n^2, half of full plus the diagonal tiles' share
 * 1/(2n); a partial last tile of k rows runs k of them on n + 1 column
 * tiles' worth of columns, s in all. */
static void test_tile_share(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	const int whole[] = {1, 2, 3, 4, 16, 64};
	for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
		double nt = whole[i];
		m.seq = 128 * whole[i];
		m.mask = SL_MASK_CAUSAL;
		assert_true(fabs(sl_attn_tile_share(&m) - (0.5 + 1 / (2 * nt))) < 1e-15);
		m.mask = SL_MASK_FULL;
		assert_true(sl_attn_tile_share(&m) == 1.0);
	}
	m.mask = SL_MASK_CAUSAL;
	m.seq = 100; /* one partial tile: all of it */
	assert_true(sl_attn_tile_share(&m) == 1.0);
	/* s = 320: tiles of 128, 128 and 64 rows; row tile I runs the columns
	 * up to the end of tile I: 128 * 128 + 128 * 256 + 64 * 320 */
	m.seq = 320;
	assert_true(fabs(sl_attn_tile_share(&m) - (16384.0 + 32768 + 20480) / (320.0 * 320)) <
	            1e-15);
}

/* The model's FLOPs (MFU's): a causal head's six s x s products (two
 * forward, four backward) count s^2 d each, half of full, as
 * FlashAttention's benchmarks count them. */
static void test_model_flops_causal_half(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	m.seq = 256;
	m.mask = SL_MASK_FULL;
	double full = sl_model_step_flops(&m);
	m.mask = SL_MASK_CAUSAL;
	double causal = sl_model_step_flops(&m);
	double L = m.layers, B = m.batch, a = m.heads, s = m.seq, d = (double)m.hidden / m.heads;
	assert_true(full - causal == L * B * a * 6 * s * s * d);
}

static void test_norm_rows(void **state)
{
	(void)state;
	enum { R = 3, H = 7 };
	float x[R * H], y[R * H];
	for (int i = 0; i < R * H; i++)
		x[i] = (float)(0.3 * i - 2.0 + (i % 3) * 0.7);
	sl_norm_rows(SL_NORM_LAYER, x, y, R, H);
	for (int r = 0; r < R; r++) {
		double mu = 0, var = 0, my = 0;
		for (int j = 0; j < H; j++)
			mu += x[r * H + j] / (double)H;
		for (int j = 0; j < H; j++)
			var += (x[r * H + j] - mu) * (x[r * H + j] - mu) / H;
		for (int j = 0; j < H; j++) {
			double want = (x[r * H + j] - mu) / sqrt(var + 1e-5);
			assert_true(fabs(y[r * H + j] - want) <= 1e-6 * (1 + fabs(want)));
			my += y[r * H + j];
		}
		assert_true(fabs(my) < 1e-5);
	}
	sl_norm_rows(SL_NORM_RMS, x, y, R, H);
	for (int r = 0; r < R; r++) {
		double ms = 0;
		for (int j = 0; j < H; j++)
			ms += x[r * H + j] * (double)x[r * H + j] / H;
		for (int j = 0; j < H; j++) {
			double want = x[r * H + j] / sqrt(ms + 1e-5);
			assert_true(fabs(y[r * H + j] - want) <= 1e-6 * (1 + fabs(want)));
		}
	}
}

/* The hidden draws: about r dropped, the rest scaled by 1/(1 - r), by
 * global element: rows 5..9 drawn alone are rows 5..9 of rows 0..9; other
 * for another step, block or sub-block. */
static void test_hidden_dropout_draws(void **state)
{
	(void)state;
	enum { H = 64, R = 1024 };
	sl_model_spec m;
	sl_model_default(&m);
	m.hidden = H;
	m.hidden_dropout = 0.1f;
	static float one[R * H], a[R * H], b[R * H];
	for (int i = 0; i < R * H; i++)
		one[i] = 1.0f;
	sl_hidden_dropout(&m, 3, 1, 0, 0, R, one, a);
	int zeros = 0;
	for (int i = 0; i < R * H; i++) {
		if (a[i] == 0)
			zeros++;
		else
			assert_true(a[i] == 1.0f / (1.0f - 0.1f));
	}
	/* binomial: 65536 draws at 0.1, sd 77 */
	assert_true(abs(zeros - R * H / 10) < 5 * 77);
	sl_hidden_dropout(&m, 3, 1, 0, 5, 5, one, b);
	assert_memory_equal(a + 5 * H, b, 5 * H * sizeof *a);
	const long args[3][3] = {{4, 1, 0}, {3, 2, 0}, {3, 1, 1}};
	for (int k = 0; k < 3; k++) {
		sl_hidden_dropout(&m, args[k][0], (int)args[k][1], (int)args[k][2], 0, R, one, b);
		int same = 0;
		for (int i = 0; i < R * H; i++)
			same += (a[i] == 0) == (b[i] == 0);
		/* independent masks agree on 0.9^2 + 0.1^2 = 82% of the elements */
		assert_true(same < R * H * 85 / 100);
	}
}

/* The draws: about r of a large matrix dropped, the rest scaled by exactly
 * 1/(1 - r); a pure function of its arguments, other for any other one. */
static void test_attention_dropout_draws(void **state)
{
	(void)state;
	enum { S = 256 };
	sl_model_spec m;
	sl_model_default(&m);
	m.heads = 4;
	m.attn_dropout = 0.1f;
	static float one[S * S], a[S * S], b[S * S];
	for (int i = 0; i < S * S; i++)
		one[i] = 1.0f;
	sl_attn_dropout(&m, 3, 1, 7, 2, one, a, S);
	int zeros = 0;
	for (int i = 0; i < S * S; i++) {
		if (a[i] == 0)
			zeros++;
		else
			assert_true(a[i] == 1.0f / (1.0f - 0.1f));
	}
	/* binomial: 65536 draws at 0.1, sd 77 */
	assert_true(abs(zeros - S * S / 10) < 5 * 77);
	sl_attn_dropout(&m, 3, 1, 7, 2, one, b, S);
	assert_memory_equal(a, b, sizeof a);
	const long args[4][4] = {{4, 1, 7, 2}, {3, 2, 7, 2}, {3, 1, 8, 2}, {3, 1, 7, 3}};
	for (int k = 0; k < 4; k++) {
		sl_attn_dropout(&m, args[k][0], (int)args[k][1], args[k][2], (int)args[k][3], one,
		                b, S);
		int same = 0;
		for (int i = 0; i < S * S; i++)
			same += (a[i] == 0) == (b[i] == 0);
		/* independent masks agree on 0.9^2 + 0.1^2 = 82% of the elements */
		assert_true(same < S * S * 85 / 100);
	}
}

/* Grouped-query attention is multi-head attention whose heads of a group
 * have equal keys and values: copy each group's K and V columns to every
 * head of the group of an ordinary model, and the loss is the same. */
static void test_gqa_is_shared_keys_and_values(void **state)
{
	(void)state;
	sl_model_spec g, a;
	tiny(&g, 4);
	g.hidden = 8;
	g.kv_heads = 2;
	a = g;
	a.kv_heads = 0;
	int h = g.hidden, d = h / g.heads, qpg = g.heads / g.kv_heads;
	size_t ng = sl_model_nparams(&g), na = sl_model_nparams(&a);
	assert_int_equal(ng + (size_t)g.layers * h * (2 * (g.heads - g.kv_heads) * d), na);
	float *pg = malloc(ng * sizeof *pg), *pa = malloc(na * sizeof *pa);
	float *gg = malloc(ng * sizeof *gg), *ga = malloc(na * sizeof *ga);
	sl_model_init(&g, pg);
	for (int i = 0; i < sl_model_ntensors(&g); i++) {
		sl_tensor_info tg, ta;
		sl_model_tensor(&g, i, &tg);
		sl_model_tensor(&a, i, &ta);
		assert_string_equal(tg.name, ta.name);
		if (tg.kind != SL_T_QKV_W) {
			assert_int_equal(tg.count, ta.count);
			memcpy(pa + ta.offset, pg + tg.offset, tg.count * sizeof *pg);
			continue;
		}
		assert_int_equal(tg.cols, (g.heads + 2 * g.kv_heads) * d);
		assert_int_equal(tg.unit, (qpg + 2) * d);
		/* head j of the plain model: [3dj, 3d(j+1)) = q, k, v; in the
		 * grouped one, group j/qpg's columns hold its queries, then k, v */
		for (int r = 0; r < h; r++)
			for (int j = 0; j < g.heads; j++) {
				const float *grow =
				    pg + tg.offset + (size_t)r * tg.cols + (j / qpg) * tg.unit;
				float *arow = pa + ta.offset + (size_t)r * ta.cols + 3 * d * j;
				memcpy(arow, grow + (j % qpg) * d, d * sizeof *pg);
				memcpy(arow + d, grow + qpg * d, 2 * d * sizeof *pg);
			}
	}
	double lg = loss_at(&g, pg, gg), la = loss_at(&a, pa, ga);
	assert_true(fabs(lg - la) <= 1e-6 * fabs(la));
	/* and a shared key's gradient is the sum of its heads' */
	sl_tensor_info tg, ta;
	sl_model_tensor(&g, 0, &tg);
	sl_model_tensor(&a, 0, &ta);
	double worst = 0, big = 0;
	for (int r = 0; r < h; r++)
		for (int gr = 0; gr < g.kv_heads; gr++)
			for (int c = 0; c < 2 * d; c++) {
				double sum = 0;
				for (int i = 0; i < qpg; i++)
					sum += ga[ta.offset + (size_t)r * ta.cols +
					          3 * d * (gr * qpg + i) + d + c];
				double got = gg[tg.offset + (size_t)r * tg.cols + gr * tg.unit +
				                qpg * d + c];
				worst = fmax(worst, fabs(got - sum));
				big = fmax(big, fabs(sum));
			}
	assert_true(big > 0);
	assert_true(worst <= 1e-5 * big);
	free(pg);
	free(pa);
	free(gg);
	free(ga);
}

/* One SwiGLU block written out in double: x + (silu(x Wg + bg) * (x Wu +
 * bu)) W2 + b2, with fc1's columns in gate/up pairs. */
static void test_swiglu_forward(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 0);
	m.layers = 1;
	m.ffn_kind = SL_FFN_SWIGLU;
	int h = m.hidden, f = m.ffn, R = m.batch * m.seq;
	size_t n = sl_model_nparams(&m);
	assert_int_equal(n, (size_t)(h * 2 * f + 2 * f + f * h + h));
	float *p = malloc(n * sizeof *p), *g = malloc(n * sizeof *g);
	float *x = malloc((size_t)R * h * sizeof *x), *y = malloc((size_t)R * h * sizeof *y);
	sl_model_init(&m, p);
	sl_model_data(&m, 0, 0, R, x, y);
	const float *w1 = p, *b1 = w1 + h * 2 * f, *w2 = b1 + 2 * f, *b2 = w2 + f * h;
	double sum = 0;
	for (int r = 0; r < R; r++)
		for (int o = 0; o < h; o++) {
			double out = x[r * h + o] + b2[o];
			for (int j = 0; j < f; j++) {
				double gt = b1[2 * j], up = b1[2 * j + 1];
				for (int i = 0; i < h; i++) {
					gt += (double)x[r * h + i] * w1[i * 2 * f + 2 * j];
					up += (double)x[r * h + i] * w1[i * 2 * f + 2 * j + 1];
				}
				out += gt / (1 + exp(-gt)) * up * w2[j * h + o];
			}
			double e = out - y[r * h + o];
			sum += e * e;
		}
	double want = sum / ((double)R * h), got = loss_at(&m, p, g);
	assert_true(fabs(got - want) <= 1e-5 * want);
	free(p);
	free(g);
	free(x);
	free(y);
}

static void test_adam_formula(void **state)
{
	(void)state;
	sl_model_spec m;
	sl_model_default(&m);
	m.lr = 0.01f;
	float p[3] = {0.5f, -1.0f, 2.0f}, mo[3] = {0}, va[3] = {0};
	const float g1[3] = {0.1f, -0.2f, 0.0f}, g2[3] = {0.3f, 0.1f, -0.5f};
	double P[3] = {0.5, -1.0, 2.0}, M[3] = {0}, V[3] = {0};
	for (int t = 1; t <= 2; t++) {
		const float *g = t == 1 ? g1 : g2;
		sl_adam(&m, t, p, g, mo, va, 3);
		for (int i = 0; i < 3; i++) {
			M[i] = 0.9 * M[i] + 0.1 * g[i];
			V[i] = 0.999 * V[i] + 0.001 * (double)g[i] * g[i];
			double mh = M[i] / (1 - pow(0.9, t)), vh = V[i] / (1 - pow(0.999, t));
			P[i] -= 0.01 * mh / (sqrt(vh) + 1e-8);
		}
	}
	for (int i = 0; i < 3; i++)
		assert_true(fabs(p[i] - P[i]) < 1e-6);
}

static void test_reference_learns(void **state)
{
	(void)state;
	sl_model_spec m;
	tiny(&m, 2);
	m.lr = 1e-2f;
	sl_ref r;
	sl_err err;
	assert_int_equal(sl_ref_init(&r, &m, &err), SL_OK);
	double first = 0, last = 0;
	for (int s = 0; s < 30; s++) {
		assert_int_equal(sl_ref_step(&r, &last, &err), SL_OK);
		if (s == 0)
			first = last;
	}
	assert_int_equal(r.step, 30);
	assert_true(last < 0.5 * first);
	sl_ref_free(&r);
}

static void test_bad_model(void **state)
{
	(void)state;
	sl_model_spec m;
	sl_model_default(&m);
	sl_err err;
	m.heads = 3;
	assert_int_equal(sl_model_check(&m, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "--hidden=64 does not split into 3 heads"));
	sl_model_default(&m);
	m.layers = 0;
	assert_int_equal(sl_model_check(&m, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "--layers=0 is out of range"));
	sl_model_default(&m);
	m.heads = 4;
	m.kv_heads = 3;
	assert_int_equal(sl_model_check(&m, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "--kv-heads=3 does not group 4 query heads"));
	m.heads = 0;
	m.kv_heads = 2;
	assert_int_equal(sl_model_check(&m, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "--kv-heads=2 needs attention"));
	m.kv_heads = 0;
	m.attn_dropout = 0.1f;
	assert_int_equal(sl_model_check(&m, &err), SL_EINVAL);
	assert_non_null(
	    strstr(err.msg, "--attention-dropout needs attention: set --heads above 0"));
	m.heads = 4;
	m.attn_dropout = 0.95f;
	assert_int_equal(sl_model_check(&m, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "out of range"));
	m.attn_dropout = 0;
	m.hidden_dropout = -0.1f;
	assert_int_equal(sl_model_check(&m, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "--hidden-dropout=-0.1 is out of range (0 to 0.9)"));
	/* A vocabulary is timed, never computed: only a run without values
	 * takes it. */
	m.hidden_dropout = 0;
	m.vocab = 1000;
	assert_int_equal(sl_model_check(&m, &err), SL_OK);
	assert_int_equal(sl_model_check_values(&m, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg,
	                       "a vocabulary (--vocab, or the model file's): the embeddings "
	                       "and the LM head are timed, not computed"));
	m.vocab = SL_MODEL_MAX_VOCAB + 1;
	assert_int_equal(sl_model_check(&m, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "--vocab=4194305 is out of range (0 to 4194304)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tensors_tile_the_vector),
	    cmocka_unit_test(test_shards_tile_each_axis),
	    cmocka_unit_test(test_data_by_row),
	    cmocka_unit_test(test_gradient_mlp),
	    cmocka_unit_test(test_gradient_attention),
	    cmocka_unit_test(test_gradient_swiglu_gqa),
	    cmocka_unit_test(test_gradient_attention_dropout),
	    cmocka_unit_test(test_attention_dropout_draws),
	    cmocka_unit_test(test_gradient_hidden_dropout),
	    cmocka_unit_test(test_gradient_norms),
	    cmocka_unit_test(test_norm_rows),
	    cmocka_unit_test(test_causal_mask_hides_later_tokens),
	    cmocka_unit_test(test_gradient_masks),
	    cmocka_unit_test(test_tile_share),
	    cmocka_unit_test(test_model_flops_causal_half),
	    cmocka_unit_test(test_hidden_dropout_draws),
	    cmocka_unit_test(test_gqa_is_shared_keys_and_values),
	    cmocka_unit_test(test_swiglu_forward),
	    cmocka_unit_test(test_adam_formula),
	    cmocka_unit_test(test_reference_learns),
	    cmocka_unit_test(test_bad_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
