/* SPDX-License-Identifier: MIT */
/* cmd_run.c - `shardlab run`: one sharded matrix multiply, headless. */
#include <stdio.h>
#include <time.h>

#include "cli.h"
#include "report.h"

static void run_help(void)
{
	printf("Usage: shardlab run [--strategy=single|colwise|rowwise] [--devices=N]\n"
	       "                    [--m=M --k=K --n=N] [OPTION...]\n\n"
	       "Multiplies Y = X W split over N emulated devices: each device runs one real\n"
	       "sgemm on its shard and the devices exchange their results over the links;\n"
	       "reports the emulated time, the prediction of the alpha-beta model, speedup\n"
	       "over one device, bytes moved, per-device figures, and the error against a\n"
	       "single sgemm.  Exit status: 0, 1 if the run failed (a device out of memory,\n"
	       "a wrong result), 2 for a bad command line.\n\n");
	sl_opts_help(stdout, SL_CMD_RUN, SL_KG_WORKLOAD, 1);
	sl_opts_help(stdout, SL_CMD_RUN, SL_KG_DRY_RUN, 0);
	putchar('\n');
	sl_cli_help_cluster(SL_CMD_RUN);
	printf("\nUnits: sizes 4096, 64KiB, 1.5GB; rates 450GB/s, 25GiB/s, 400Gb/s (bits);\n"
	       "times 2us, 1.5ms, 0; compute 989TFLOP/s, 30GFLOPS.  See shardlab(1).\n");
}

int sl_cmd_run(int argc, char **argv)
{
	sl_opts o;
	sl_opts_init(&o);
	int rc = sl_cli_parse("run", SL_CMD_RUN, argc, argv, &o, NULL, NULL, run_help);
	if (rc != SL_CLI_GO)
		return rc;
	return sl_run_and_report("run", &o);
}

/* Bytes the host holds for a run: the engine's X, W, Y and the reference
 * (gemm.c), plus every device's buffers, which live in host memory too. */
static double host_bytes(const sl_gemm_spec *g, int t)
{
	double m = g->m, k = g->k, n = g->n, dev;
	if (g->split == SL_SPLIT_ROW)
		dev = m * k + k * n + t * m * n;
	else /* each device: all of X, its W columns, the gathered Y */
		dev = t * m * k + k * n + t * m * n;
	return sizeof(float) * (m * k + k * n + 2 * m * n + dev);
}

/* The result check: fp32 sums of k products in another order differ by a
 * few ulps times about sqrt(k); relative to the largest |Y|, which also grows
 * like sqrt(k), that stays near FLT_EPSILON.  1e-5 leaves a wide margin. */
#define TOLERANCE 1e-5

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int sl_run_and_report(const char *cmd, const sl_opts *o)
{
	/* Without --trace nothing reads the run's events: keep none. */
	sl_scenario run_sc = o->sc;
	run_sc.cluster.record.off = !o->trace;
	const sl_scenario *sc = &run_sc;
	int t = sc->gemm.split == SL_SPLIT_SINGLE ? 1 : sc->cluster.devices;
	sl_err err = {0};
	if (sl_gemm_check(&sc->gemm, t, &err))
		return sl_cli_usage(cmd, "%s", err.msg);
	char what[96];
	snprintf(what, sizeof what, "m=%d k=%d n=%d on %d device%s", sc->gemm.m, sc->gemm.k,
	         sc->gemm.n, t, t == 1 ? "" : "s");
	/* A timing-only run holds no matrices. */
	int rc = sc->cluster.timing_only
	             ? 0
	             : sl_cli_host_fits_or_dry(cmd, host_bytes(&sc->gemm, t), what);
	if (rc)
		return rc;
	if (o->trace && (rc = sl_cli_check_output(cmd, o->trace)))
		return rc;

	sl_cluster *c = NULL;
	sl_gemm_result res;
	double w0 = wall_now();
	rc = sl_scenario_run(sc, &c, &res, &err);
	double wall = wall_now() - w0;
	if (rc) {
		sl_cluster_destroy(c);
		/* The configuration was checked: whatever fails now is the run. */
		sl_cli_error("%s: %s", cmd, err.msg[0] ? err.msg : "the run failed");
		return SL_EXIT_FAIL;
	}
	sl_run_report r = {
	    .sc = sc,
	    .overrides = o->overrides,
	    .cluster = c,
	    .res = &res,
	    .tolerance = TOLERANCE,
	    .pass = !res.checked || res.max_rel_error <= TOLERANCE,
	    .wall_s = wall,
	};
	int status = SL_EXIT_OK;
	if (o->trace && sl_report_trace(c, o->trace, &err)) {
		sl_cli_error("%s: %s", cmd, err.msg);
		status = SL_EXIT_FAIL;
	}
	if (status == SL_EXIT_OK) {
		FILE *out = sl_cli_report_stream(o->trace);
		if (o->format == SL_FORMAT_JSON) {
			if (sl_report_json_print(out, sl_report_run_json(&r)))
				status = SL_EXIT_FAIL;
		} else {
			sl_report_run_text(out, &r);
		}
		status = sl_cli_flush(status);
	}
	if (status == SL_EXIT_OK && !r.pass) {
		sl_cli_error("%s: wrong result: max relative error %.3g exceeds %.3g", cmd,
		             res.max_rel_error, TOLERANCE);
		status = SL_EXIT_FAIL;
	}
	sl_cluster_destroy(c);
	return status;
}
