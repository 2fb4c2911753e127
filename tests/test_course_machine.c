/* SPDX-License-Identifier: MIT */
/* test_course_machine.c - the machine every lesson names is the machine it
 * runs: each setup line's rate is its device's published peak for the
 * precision it names, and the runs are timed at that rate with that
 * precision's elements.
 *
 * Every lesson of lessons/ is played as a user plays it (`shardlab lesson
 * --headless --demo --format=json`); the test reads what the learner reads,
 * the setup and result lines, and checks them against the datasheets'
 * figures typed below, not against the program's preset table:
 *   NVIDIA H100 Tensor Core GPU datasheet (SXM5): FP32 67 TFLOPS, BF16 Tensor
 *   Core 1,979 TFLOPS with sparsity, 989.5 dense;
 *   NVIDIA A100 Tensor Core GPU datasheet (SXM): FP32 19.5 TFLOPS, BF16
 *   Tensor Core 312 TFLOPS dense. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clirun.h"

#ifndef LESSONS_DIR
#error "LESSONS_DIR must name the lessons directory of the source tree"
#endif

static const struct {
	const char *device;
	double bf16, fp32; /* FLOP/s, dense */
} datasheet[] = {
    {"h100", 989.5e12, 67e12},
    {"a100", 312e12, 19.5e12},
};

static double published(const char *device, const char *prec)
{
	for (size_t i = 0; i < sizeof datasheet / sizeof datasheet[0]; i++)
		if (strcmp(device, datasheet[i].device) == 0)
			return strcmp(prec, "bf16") == 0 ? datasheet[i].bf16 : datasheet[i].fp32;
	fail_msg("no datasheet figure for a device like '%s': add it to the test", device);
	return NAN;
}

/* "881.02 us", "67.0 TFLOP/s", "300 GB/s": a figure with its unit, in
 * seconds, FLOP/s or bytes a second; NAN if s does not start with one. */
static double figure(const char *s)
{
	char unit[16];
	double v;
	if (sscanf(s, "%lf %15[A-Za-z/]", &v, unit) != 2)
		return NAN;
	static const struct {
		const char *unit;
		double scale;
	} units[] = {{"ns", 1e-9},     {"us", 1e-6},      {"ms", 1e-3},      {"s", 1},
	             {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {"MB/s", 1e6},
	             {"GB/s", 1e9},    {"TB/s", 1e12}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(unit, units[i].unit) == 0)
			return v * units[i].scale;
	return NAN;
}

/* The figure just after the first occurrence of key in s. */
static double after(const char *s, const char *key)
{
	const char *p = strstr(s, key);
	return p ? figure(p + strlen(key)) : NAN;
}

typedef struct machine {
	char device[16], prec[8];
	double rate, bw, lat;
	int devices, one_node, colwise, matmul, ideal;
	double m, k, n;
} machine;

/* "4 devices like a100 (19.5 TFLOP/s fp32, 80.0 GiB each) in one node;
 *  links 300 GB/s + 2.00 us; matmul colwise m=256 k=8192 n=4096" */
static void read_setup(const char *file, const char *text, machine *mc)
{
	const char *like = strstr(text, " like ");
	if (like)
		sscanf(like + 6, "%15[a-z0-9]", mc->device);
	if (!mc->device[0])
		fail_msg("%s: the setup names no device: %s", file, text);
	const char *paren = strchr(text, '(');
	char unit[16];
	double v;
	if (!paren || sscanf(paren + 1, "%lf %15s %7[a-z0-9]", &v, unit, mc->prec) != 3)
		fail_msg("%s: no rate and precision in the setup line: %s", file, text);
	if (strcmp(mc->prec, "fp32") != 0 && strcmp(mc->prec, "bf16") != 0)
		fail_msg("%s: the setup names no precision: %s", file, text);
	mc->rate = figure(paren + 1);
	mc->devices = atoi(text);
	mc->one_node = strstr(text, " in one node;") != NULL;
	mc->bw = after(text, "links ");
	const char *plus = strstr(text, "links ");
	plus = plus ? strstr(plus, " + ") : NULL;
	mc->lat = plus ? figure(plus + 3) : NAN;
	mc->ideal = strstr(text, "realistic efficiency") == NULL;
	const char *mm = strstr(text, "; matmul ");
	mc->matmul = mm != NULL;
	mc->colwise = mm && strncmp(mm + 9, "colwise", 7) == 0;
	if (mm && sscanf(strstr(mm, " m="), " m=%lf k=%lf n=%lf", &mc->m, &mc->k, &mc->n) != 3)
		fail_msg("%s: a matmul setup without its sizes: %s", file, text);
}

static int checked_rates, checked_products, checked_gathers;

static void read_lesson(const char *file)
{
	char args[4400];
	snprintf(args, sizeof args, "lesson --headless --demo --no-save --format=json %s", file);
	json_t *j = tu_run_json(args);
	json_t *steps = json_object_get(j, "steps");
	assert_true(json_is_array(steps));
	machine mc = {0};
	int setups = 0;
	size_t i;
	json_t *st;
	json_array_foreach(steps, i, st)
	{
		const char *kind = json_string_value(json_object_get(st, "kind"));
		const char *text = json_string_value(json_object_get(st, "text"));
		if (!kind || !text)
			continue;
		if (strcmp(kind, "setup") == 0) {
			read_setup(file, text, &mc);
			double want = published(mc.device, mc.prec);
			/* The line shows three digits. */
			if (fabs(mc.rate - want) > 0.006 * want)
				fail_msg(
				    "%s: %s at %g FLOP/s, but a %s computes %g FLOP/s in %s: %s",
				    file, mc.prec, mc.rate, mc.device, want, mc.prec, text);
			checked_rates++;
			setups++;
			continue;
		}
		if (strcmp(kind, "result") != 0 || !mc.matmul || !mc.ideal)
			continue;
		/* "4 devices, colwise: 236.74 us (one device: 881.02 us), ...,
		 *  compute 220.25 us, all-gather 16.49 us" */
		double one = after(text, "one device: ");
		if (isnan(one))
			continue;
		double flop = 2 * mc.m * mc.k * mc.n;
		double want = flop / published(mc.device, mc.prec);
		if (fabs(one - want) > 0.006 * want)
			fail_msg("%s: one device took %g s for %g FLOP; at a %s's %s rate it takes "
			         "%g s: "
			         "%s",
			         file, one, flop, mc.device, mc.prec, want, text);
		checked_products++;
		double ag = after(text, "all-gather ");
		if (mc.colwise && mc.one_node && mc.devices > 1 && !isnan(ag)) {
			/* A ring all-gather of Y: p-1 steps of one block each. */
			double elem = strcmp(mc.prec, "bf16") == 0 ? 2 : 4;
			double p = mc.devices;
			double t = (p - 1) * (elem * mc.m * mc.n / p / mc.bw + mc.lat);
			if (fabs(ag - t) > 0.006 * t + 0.01e-6)
				fail_msg("%s: an all-gather of %s Y took %g s; with %g-byte "
				         "elements the "
				         "ring takes %g s: %s",
				         file, mc.prec, ag, elem, t, text);
			checked_gathers++;
		}
	}
	if (setups == 0)
		fail_msg("%s: no setup line", file);
	json_decref(j);
}

static void test_every_lesson(void **state)
{
	(void)state;
	DIR *d = opendir(LESSONS_DIR);
	assert_non_null(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 8 || strcmp(e->d_name + len - 7, ".lesson") != 0)
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", LESSONS_DIR, e->d_name);
		read_lesson(path);
		n++;
	}
	closedir(d);
	assert_true(n >= 12);
	/* The reading found what it reads: a setup line in every lesson and
	 * the products and gathers of the matmul lessons. */
	assert_true(checked_rates >= n);
	assert_true(checked_products >= 10);
	assert_true(checked_gathers >= 5);
	print_message("%d setup lines, %d products, %d all-gathers checked\n", checked_rates,
	              checked_products, checked_gathers);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_lesson),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
