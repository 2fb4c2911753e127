/* SPDX-License-Identifier: MIT */
/* test_train_cli.c - `shardlab train` and `shardlab compare` from the
 * outside: JSON fields, losses against the reference, one-line refusals,
 * out of memory, the trace's micro-batches, compare's table. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "testutil.h"

#include "clirun.h"

#define SMALL "--layers=4 --hidden=16 --ffn=32 --heads=4 --seq=4 --batch=8"

static void test_train_json(void **state)
{
	(void)state;
	json_t *j =
	    tu_run_json("train --tp=2 --pp=2 --microbatches=4 --sequence-parallel --steps=3 "
	                "--format=json " SMALL);
	assert_int_equal(tu_num(j, "tp"), 2);
	assert_int_equal(tu_num(j, "pp"), 2);
	assert_int_equal(tu_num(j, "dp"), 1);
	assert_int_equal(tu_num(j, "microbatches"), 4);
	assert_int_equal(tu_num(j, "devices"), 4);
	assert_string_equal(json_string_value(json_object_get(j, "schedule")), "1f1b");
	json_t *loss = json_object_get(j, "losses"), *ref = json_object_get(j, "reference_losses");
	assert_int_equal(json_array_size(loss), 3);
	assert_int_equal(json_array_size(ref), 3);
	for (size_t s = 0; s < 3; s++) {
		double a = json_real_value(json_array_get(loss, s)),
		       b = json_real_value(json_array_get(ref, s));
		assert_true(fabs(a - b) <= 1e-5 * b);
	}
	/* model timing: the prediction is the emulation */
	assert_true(fabs(tu_num(j, "predicted_step_s") - tu_num(j, "step_time_s")) <=
	            1e-9 * tu_num(j, "step_time_s"));
	assert_true(tu_num(j, "bubble_fraction") >= 0);
	assert_true(tu_num(j, "idle_fraction") >= 0 && tu_num(j, "idle_fraction") < 1);
	json_t *devs = json_object_get(j, "per_device");
	assert_int_equal(json_array_size(devs), 4);
	const char *mem[] = {"memory_params_bytes", "memory_grads_bytes", "memory_optimizer_bytes",
	                     "memory_activations_peak_bytes"};
	for (size_t i = 0; i < 4; i++) {
		json_t *d = json_array_get(devs, i);
		for (int k = 0; k < 4; k++)
			assert_true(tu_num(d, mem[k]) > 0);
		/* bf16 (the preset's): 12 bytes of fp32 master weights and moments
		 * per element against 2 of bf16 weights */
		assert_true(tu_num(d, "memory_optimizer_bytes") ==
		            6 * tu_num(d, "memory_params_bytes"));
		json_t *tr = json_object_get(d, "traffic");
		assert_true(tu_num(json_object_get(tr, "tp_allgather"), "sent_bytes") > 0);
		assert_true(tu_num(json_object_get(tr, "pp_sendrecv"), "sent_bytes") > 0);
		assert_true(tu_num(json_object_get(tr, "dp_allreduce"), "sent_bytes") == 0);
	}
	json_t *tr = json_object_get(j, "traffic");
	const char *kinds[] = {"tp_allreduce", "tp_allgather", "tp_reducescatter",
	                       "pp_sendrecv",  "dp_allreduce", "dp_reducescatter",
	                       "dp_allgather"};
	for (int k = 0; k < 7; k++)
		assert_non_null(json_object_get(tr, kinds[k]));
	json_decref(j);
}

/* Binomial trees for any group size, on full links and on a ring: the
 * emulation takes a device's receives within a collective in turn, as the
 * trees' closed forms count them, so the prediction is the run. */
static void test_tree_prediction(void **state)
{
	(void)state;
	const char *cases[] = {"--tp=3",
	                       "--tp=4",
	                       "--tp=6",
	                       "--tp=8",
	                       "--dp=3",
	                       "--tp=2 --dp=3",
	                       "--tp=3 --topology=ring",
	                       "--tp=6 --topology=ring",
	                       "--tp=2 --dp=3 --devices-per-node=2"};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char args[300];
		snprintf(
		    args, sizeof args,
		    "train --algorithm=tree %s --preset=h100 --layers=2 --hidden=240 --ffn=960 "
		    "--heads=0 --batch=12 --seq=16 --format=json",
		    cases[i]);
		json_t *j = tu_run_json(args);
		double t = tu_num(j, "step_time_s"), p = tu_num(j, "predicted_step_s");
		if (!(fabs(p - t) <= 1e-9 * t))
			fail_msg("%s: predicted %.12g s, emulated %.12g s", cases[i], p, t);
		json_decref(j);
	}
}

static void expect_refusal(const char *args, int status, const char *msg)
{
	tu_result r;
	tu_run(args, &r);
	if (r.status != status || !strstr(r.err, msg))
		fail_msg("'%s': exit %d, stderr '%s'; wanted exit %d and '%s'", args, r.status,
		         r.err, status, msg);
	int lines = 0;
	for (const char *p = r.err; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 1);
	assert_string_equal(r.out, "");
	tu_result_free(&r);
}

static void test_refusals(void **state)
{
	(void)state;
	expect_refusal("train --tp=3 " SMALL, 2, "4 heads do not split over tp=3");
	expect_refusal("train --tp=2 --devices=8 " SMALL, 2,
	               "tp*pp*dp = 2*1*1 = 2 but there are 8 devices");
	expect_refusal("train --pp=2 --schedule=interleaved --microbatches=3 " SMALL, 2,
	               "3 is not a multiple of 2");
	expect_refusal("train --pp=2 --stage-layers=1,2 " SMALL, 2,
	               "--stage-layers adds up to 3 layers but the model has 4");
	expect_refusal("train --pp=2 --stage-layers=2,x " SMALL, 2,
	               "--stage-layers: '2,x': count 2 is not a whole number");
	expect_refusal(
	    "train --pp=4 --schedule=interleaved --microbatches=4 --stage-layers=ends " SMALL
	    " --layers=9",
	    2, "--stage-layers=ends gives stage 0 1 layer, fewer than its 2 model");
	expect_refusal("train --zero1 " SMALL, 2, "it needs --dp of 2 or more");
	expect_refusal("train --schedule=zigzag", 2, "--schedule: unknown value 'zigzag'");
	expect_refusal("train --tp=2 --memory=64KiB " SMALL, 1, "device 0 is out of memory");
	expect_refusal("compare --layouts=2x2 " SMALL, 2, "is not TxPxD");
	expect_refusal("compare --layouts=3x1x1 " SMALL, 2, "tp=3: 4 heads do not split over tp=3");
	expect_refusal("compare --trace=x.json " SMALL, 2, "unknown option '--trace'");
}

static void test_train_trace(void **state)
{
	(void)state;
	const char *dir = getenv("TMPDIR");
	char path[512], args[800];
	snprintf(path, sizeof path, "%s/test_train_cli_trace.%d.json", dir && *dir ? dir : "/tmp",
	         (int)getpid());
	snprintf(args, sizeof args, "train --pp=2 --microbatches=4 --steps=1 --trace=%s " SMALL,
	         path);
	tu_result r;
	tu_run(args, &r);
	assert_int_equal(r.status, 0);
	tu_result_free(&r);
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr);
	unlink(path);
	assert_non_null(j);
	json_t *ev = json_object_get(j, "traceEvents");
	int seen[2][4] = {{0}};
	for (size_t i = 0; i < json_array_size(ev); i++) {
		json_t *a = json_object_get(json_array_get(ev, i), "args");
		json_t *mb = a ? json_object_get(a, "microbatch") : NULL;
		json_t *dev = a ? json_object_get(a, "device") : NULL;
		if (mb && json_integer_value(dev) < 2)
			seen[json_integer_value(dev)][json_integer_value(mb)] = 1;
	}
	for (int d = 0; d < 2; d++)
		for (int m = 0; m < 4; m++)
			assert_true(seen[d][m]);
	json_decref(j);
}

/* --trace-steps and --trace-devices keep what they name and nothing else;
 * without --trace they are refused. */
static void test_trace_filters(void **state)
{
	(void)state;
	const char *dir = getenv("TMPDIR");
	char path[512], args[800];
	snprintf(path, sizeof path, "%s/test_train_cli_filter.%d.json", dir && *dir ? dir : "/tmp",
	         (int)getpid());
	snprintf(args, sizeof args,
	         "train --tp=2 --pp=2 --dp=2 --microbatches=2 --steps=3 "
	         "--trace-steps=2 --trace-devices=0-1,6 --trace=%s " SMALL,
	         path);
	tu_result r;
	tu_run(args, &r);
	assert_int_equal(r.status, 0);
	tu_result_free(&r);
	json_t *j = json_load_file(path, 0, NULL);
	unlink(path);
	assert_non_null(j);
	json_t *ev = json_object_get(j, "traceEvents");
	int devs[8] = {0};
	double t0 = 1e300, t1 = 0;
	json_t *starts = json_object(), *ends = json_object();
	for (size_t i = 0; i < json_array_size(ev); i++) {
		json_t *e = json_array_get(ev, i), *a = json_object_get(e, "args");
		const char *ph = json_string_value(json_object_get(e, "ph"));
		if (ph && (ph[0] == 's' || ph[0] == 'f') && !ph[1]) {
			char id[32];
			snprintf(id, sizeof id, "%lld",
			         (long long)json_integer_value(json_object_get(e, "id")));
			json_object_set_new(ph[0] == 's' ? starts : ends, id, json_true());
		}
		json_t *dev = a ? json_object_get(a, "device") : NULL;
		if (!dev)
			continue;
		devs[json_integer_value(dev)]++;
		double ts = json_number_value(json_object_get(e, "ts"));
		t0 = ts < t0 ? ts : t0;
		t1 = ts > t1 ? ts : t1;
	}
	json_decref(j);
	for (int d = 0; d < 8; d++)
		assert_true((devs[d] > 0) == (d <= 1 || d == 6));
	/* Flows only between devices kept: every start ends, every end started. */
	assert_true(json_object_size(starts) > 0);
	assert_true(json_equal(starts, ends));
	json_decref(starts);
	json_decref(ends);
	/* The second of three equal steps: after the first, before the third. */
	json_t *whole = tu_run_json("train --tp=2 --pp=2 --dp=2 --microbatches=2 --steps=3 "
	                            "--format=json " SMALL);
	double step_us = tu_num(whole, "step_time_s") * 1e6;
	json_decref(whole);
	assert_true(t0 >= step_us * 0.999 && t1 <= 2 * step_us * 1.001);
	expect_refusal("train --trace-steps=2 --steps=3 " SMALL, 2, "needs --trace=FILE");
	expect_refusal("train --trace-steps=4 --steps=3 --trace=x.json " SMALL, 2,
	               "the run has 3 steps");
	expect_refusal("train --tp=2 --trace-devices=2 --trace=x.json " SMALL, 2,
	               "device 2 to trace: the run has 2 devices (0 to 1)");
	expect_refusal("train --trace-devices=3-1 --trace=x.json " SMALL, 2, "not N or N-M");
	expect_refusal("train --trace-steps=1 --save=ck --trace=x.json " SMALL, 2,
	               "with --save the trace holds the final save");
}

/* Throughput against Megatron-LM's formulas written here: tokens/s = B s
 * / step; the model's FLOPs a step 72 B s l h^2 (1 + s / 6h) for an MLP of
 * 4h without a vocabulary (Narayanan et al. 2021, appendix); MFU over the
 * H100 preset's 989 TFLOP/s. */
static void test_throughput(void **state)
{
	(void)state;
	json_t *j = tu_run_json("train --dry-run --preset=h100 --tp=2 --pp=2 --layers=4 "
	                        "--hidden=1024 --ffn=4096 --heads=16 --seq=512 --batch=16 "
	                        "--microbatches=4 --steps=1 --format=json");
	/* Narayanan et al. 2021's 72 B s L h^2 (1 + s/6h), the attention
	 * products' s/6h at half under the causal mask (the default), as
	 * FlashAttention's benchmarks count them */
	double B = 16, S = 512, L = 4, H = 1024, step = tu_num(j, "step_time_s");
	double model = 72 * B * S * L * H * H * (1 + S / (12 * H));
	tu_check_close(tu_num(j, "tokens_per_s"), B * S / step, 1e-12, "tokens/s");
	tu_check_close(tu_num(j, "device_tokens_per_s"), B * S / step / 4, 1e-12, "per device");
	tu_check_close(tu_num(j, "device_model_flop_per_s"), model / step / 4, 1e-12,
	               "model FLOP/s");
	tu_check_close(tu_num(j, "mfu"), model / step / 4 / 989e12, 1e-12, "MFU");
	assert_true(tu_num(j, "hfu") >= tu_num(j, "mfu"));
	json_decref(j);
	/* without a mask, the paper's formula whole */
	j = tu_run_json("train --dry-run --preset=h100 --tp=2 --pp=2 --layers=4 --hidden=1024 "
	                "--ffn=4096 --heads=16 --seq=512 --batch=16 --microbatches=4 --steps=1 "
	                "--mask=full --format=json");
	step = tu_num(j, "step_time_s");
	model = 72 * B * S * L * H * H * (1 + S / (6 * H));
	tu_check_close(tu_num(j, "device_model_flop_per_s"), model / step / 4, 1e-12,
	               "model FLOP/s, no mask");
	json_decref(j);
	tu_result r;
	tu_run("train --dry-run --preset=h100 --tp=2 --pp=2 --layers=4 --hidden=1024 --ffn=4096 "
	       "--heads=16 --seq=512 --batch=16 --microbatches=4 --steps=1",
	       &r);
	assert_non_null(strstr(r.out, "tokens/s"));
	assert_non_null(strstr(r.out, "MFU"));
	tu_result_free(&r);
}

static void test_compare(void **state)
{
	(void)state;
	tu_result r;
	tu_run("compare --steps=2 " SMALL, &r);
	assert_int_equal(r.status, 0);
	const char *rows[] = {"\nsingle ", "\ntp=4 ", "\npp=4 1f1b ", "\ndp=4 ", "\ntp=2 x dp=2 "};
	for (int i = 0; i < 5; i++)
		if (!strstr(r.out, rows[i]))
			fail_msg("no row '%s' in:\n%s", rows[i] + 1, r.out);
	assert_null(strstr(r.out, "WRONG"));
	tu_result_free(&r);

	/* three devices: TP over 3 cannot split 4 heads and is skipped, saying why */
	json_t *j = tu_run_json("compare --devices=3 --steps=2 --format=json " SMALL);
	json_t *lay = json_object_get(j, "layouts"), *sk = json_object_get(j, "skipped");
	assert_int_equal(json_array_size(lay), 3);
	assert_int_equal(json_array_size(sk), 1);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(sk, 0), "reason")),
	                       "do not split over tp=3"));
	for (size_t i = 0; i < json_array_size(lay); i++) {
		json_t *x = json_array_get(lay, i);
		assert_string_equal(json_string_value(json_object_get(x, "check")), "pass");
		assert_true(tu_num(x, "speedup") > 0);
		assert_non_null(json_object_get(x, "bubble_fraction"));
	}
	json_decref(j);

	/* The sentence under the table names the fastest split (the smallest
	 * step time among the multi-device layouts of the JSON), and says no
	 * split pays exactly when every speedup is below 1: on fast links
	 * (the default) and on slow devices. */
	const char *cases[] = {"", "--flops=1GFLOP/s "};
	for (int c = 0; c < 2; c++) {
		char args[256];
		snprintf(args, sizeof args, "compare --steps=1 --format=json %s" SMALL, cases[c]);
		j = tu_run_json(args);
		lay = json_object_get(j, "layouts");
		const char *fastest = NULL;
		double best = INFINITY, top = 0;
		for (size_t i = 0; i < json_array_size(lay); i++) {
			json_t *x = json_array_get(lay, i);
			if (tu_num(x, "devices") < 2)
				continue;
			if (tu_num(x, "step_time_s") < best) {
				best = tu_num(x, "step_time_s");
				fastest = json_string_value(json_object_get(x, "name"));
			}
			top = fmax(top, tu_num(x, "speedup"));
		}
		assert_non_null(fastest);
		assert_true(c == 0 ? top < 1 : top >= 1); /* both sentences are seen */
		char want[128];
		snprintf(want, sizeof want,
		         top >= 1 ? "Fastest split: %s," : "the fastest split, %s,", fastest);
		snprintf(args, sizeof args, "compare --steps=1 %s" SMALL, cases[c]);
		tu_run(args, &r);
		/* the sentence is wrapped: compare it with spaces for newlines */
		for (char *p = r.out; *p; p++)
			*p = *p == '\n' ? ' ' : *p;
		if (!strstr(r.out, want) ||
		    !strstr(r.out, top >= 1 ? "Fastest split" : "No split beats one device"))
			fail_msg("no '%s' in:\n%s", want, r.out);
		tu_result_free(&r);
		json_decref(j);
	}

	/* explicit layouts, with options */
	j = tu_run_json(
	    "compare --layouts=1x2x1:gpipe,1x2x1,2x1x2:sp:zero1 --microbatches=4 --steps=2 "
	    "--format=json " SMALL);
	lay = json_object_get(j, "layouts");
	assert_int_equal(json_array_size(lay), 3);
	json_t *g = json_array_get(lay, 0), *o = json_array_get(lay, 1);
	assert_string_equal(json_string_value(json_object_get(g, "schedule")), "gpipe");
	/* 1F1B keeps fewer micro-batches of activations than GPipe on stage 0 */
	double ga = tu_num(json_array_get(json_object_get(g, "per_device"), 0),
	                   "memory_activations_peak_bytes");
	double oa = tu_num(json_array_get(json_object_get(o, "per_device"), 0),
	                   "memory_activations_peak_bytes");
	assert_true(oa < ga);
	json_t *z = json_array_get(lay, 2);
	assert_true(json_is_true(json_object_get(z, "zero1")));
	assert_true(json_is_true(json_object_get(z, "sequence_parallel")));
	json_decref(j);
}

/* Beyond 32 devices, devices with the same figures share a row; with
 * --per-device each has its own, and the figures are the same. */
static void test_fold_devices(void **state)
{
	(void)state;
	const char *base = "train --dry-run --tp=8 --pp=8 --layers=16 --hidden=1024 --ffn=4096 "
	                   "--heads=16 --seq=512 --batch=32 --microbatches=8 --steps=1";
	char args[512];
	tu_result f, all;
	tu_run(base, &f);
	snprintf(args, sizeof args, "%s --per-device", base);
	tu_run(args, &all);
	assert_int_equal(f.status, 0);
	assert_int_equal(all.status, 0);
	/* tp=8 pp=8: the eight devices of a stage have the same figures. */
	assert_non_null(strstr(f.out, "\n   0-7   *   0   0 "));
	assert_non_null(strstr(f.out, "\n 56-63   *   7   0 "));
	assert_non_null(strstr(f.out, "--per-device lists each"));
	assert_null(strstr(all.out, "0-7"));
	assert_non_null(strstr(all.out, "\n    63   7   7   0 "));
	/* Device 9's figures (all after its mesh columns) are its row's. */
	const char *row9 = strstr(all.out, "\n     9   1   1   0 ");
	const char *run = strstr(f.out, "\n  8-15   *   1   0 ");
	assert_non_null(row9);
	assert_non_null(run);
	assert_memory_equal(row9 + 19, run + 19, strcspn(row9 + 19, "\n"));
	assert_true(tu_count_lines(all.out) - tu_count_lines(f.out) > 64);
	tu_result_free(&f);
	tu_result_free(&all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_train_json),    cmocka_unit_test(test_tree_prediction),
	    cmocka_unit_test(test_refusals),      cmocka_unit_test(test_train_trace),
	    cmocka_unit_test(test_trace_filters), cmocka_unit_test(test_throughput),
	    cmocka_unit_test(test_compare),       cmocka_unit_test(test_fold_devices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
