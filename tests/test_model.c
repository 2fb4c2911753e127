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
static void check_gradient(int heads)
{
	sl_model_spec m;
	tiny(&m, heads);
	size_t n = sl_model_nparams(&m);
	float *p = malloc(n * sizeof *p), *g = malloc(n * sizeof *g), *scratch = malloc(n * sizeof *g);
	sl_model_init(&m, p);
	loss_at(&m, p, g);
	double worst = 0, gmax = 0;
	for (size_t i = 0; i < n; i++) {
		float keep = p[i], e = 1e-2f;
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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tensors_tile_the_vector),
		cmocka_unit_test(test_shards_tile_each_axis),
		cmocka_unit_test(test_data_by_row),
		cmocka_unit_test(test_gradient_mlp),
		cmocka_unit_test(test_gradient_attention),
		cmocka_unit_test(test_adam_formula),
		cmocka_unit_test(test_reference_learns),
		cmocka_unit_test(test_bad_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
