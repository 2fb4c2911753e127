/* SPDX-License-Identifier: MIT */
/* cmd_coll.c - `shardlab coll`: one collective over one size or a range of
 * sizes, reported like nccl-tests (size, time, algbw, busbw) with the
 * alpha-beta model's prediction beside each measurement. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cost.h"
#include "report.h"
#include "units.h"

enum { OPT_OP = SL_OPT_USER, OPT_BYTES };

/* One size per doubling from 4 B to 1 PiB at most. */
#define MAX_ROWS 64
#define MAX_BYTES 1125899906842624.0

struct coll_args {
	sl_coll_op op;
	const char *bytes_arg;
	double min, max;  /* as given */
};

static void coll_help(void)
{
	printf("Usage: shardlab coll [--op=OP] [--devices=N] [--bytes=SIZE|MIN:MAX] [OPTION...]\n\n"
	       "Runs one collective over the emulated devices and reports, per size, the\n"
	       "emulated time (the slowest device's clock), the alpha-beta prediction,\n"
	       "algbw = size / time and busbw = algbw x the NCCL-tests factor, and how many\n"
	       "elements came out wrong.  Each device holds a buffer of SIZE bytes of fp32\n"
	       "(SIZE is rounded down to whole elements).\n\n"
	       "  --op=OP                 allreduce (default), allgather, reducescatter,\n"
	       "                          broadcast, reduce, gather, scatter (root: device 0)\n"
	       "  --bytes=SIZE|MIN:MAX    one size, or MIN, 2 MIN, 4 MIN ... up to MAX\n"
	       "                          (default 1MiB:64MiB)\n\n");
	fputs(sl_opts_cluster_help, stdout);
	printf("  (--flops and --timing do not change a collective; with a range, --trace\n"
	       "  holds the last size.)\n\nSee shardlab(1).\n");
}

/* One size of --bytes=arg: part is all of it, or which = "MIN" or "MAX". */
static int parse_size(const char *arg, const char *part, const char *which, double *out,
		      sl_err *err)
{
	if (sl_parse_bytes(part, out, err)) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		return sl_fail(err, SL_EINVAL, "--bytes '%s': %s%s%s", arg, which,
			       *which ? ": " : "", msg);
	}
	if (*out < 4)
		return sl_fail(err, SL_EINVAL,
			       "--bytes '%s': %s%s%s is less than one fp32 element (4 B)", arg,
			       which, *which ? " " : "", part);
	if (*out > MAX_BYTES)
		return sl_fail(err, SL_EINVAL, "--bytes '%s' is out of range (4 B to 1 PiB)", arg);
	return SL_OK;
}

static int coll_option(void *ctx, int code, const char *arg, sl_err *err)
{
	struct coll_args *a = ctx;
	if (code == OPT_OP) {
		if (sl_coll_op_parse(arg, &a->op))
			return sl_fail(err, SL_EINVAL,
				       "--op: unknown collective '%s' (one of: allreduce, "
				       "allgather, reducescatter, broadcast, reduce, gather, "
				       "scatter)",
				       arg);
		return SL_OK;
	}
	if (code != OPT_BYTES)
		return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	a->bytes_arg = arg;
	const char *colon = strchr(arg, ':');
	if (!colon) {
		int rc = parse_size(arg, arg, "", &a->min, err);
		a->max = a->min;
		return rc;
	}
	char lo[64];
	if ((size_t)(colon - arg) >= sizeof lo)
		return sl_fail(err, SL_EINVAL, "--bytes '%s': not a size", arg);
	memcpy(lo, arg, (size_t)(colon - arg));
	lo[colon - arg] = '\0';
	if (parse_size(arg, lo, "MIN", &a->min, err) ||
	    parse_size(arg, colon + 1, "MAX", &a->max, err))
		return SL_EINVAL;
	if (a->min > a->max)
		return sl_fail(err, SL_EINVAL, "--bytes '%s': MIN exceeds MAX", arg);
	return SL_OK;
}

/* Test data that sums exactly in fp32 (small integers, |sum| <= 8 * 64), and
 * depends on the index only through i % 17, so expected values are cheap. */
static float val(int rank, size_t i)
{
	return (float)((int)(((i % 17) * 7 + (size_t)rank * 13) % 17) - 8);
}

struct coll_job {
	sl_coll_op op;
	sl_algo algo;
	int p;
	size_t count;
	float sum[17];                   /* sum over ranks of val(rank, i) by i % 17 */
	uint64_t wrong[SL_MAX_DEVICES];  /* per device */
};

/* The expected contents of a block: the sum (src < 0) or val(src, i). */
static uint64_t count_wrong(const struct coll_job *j, const float *buf, size_t i0, size_t i1,
			    int src)
{
	float want[17];
	for (int q = 0; q < 17; q++)
		want[q] = src < 0 ? j->sum[q] : val(src, (size_t)q);
	uint64_t wrong = 0;
	/* i % 17 kept by a counter: a division per element would cost more
	 * than the collective itself. */
	for (size_t i = i0, q = i0 % 17; i < i1; i++) {
		wrong += buf[i] != want[q];
		if (++q == 17)
			q = 0;
	}
	return wrong;
}

/* Count the elements of rank r's buffer that differ from what op leaves
 * there; blocks that op leaves as scratch are not checked. */
static uint64_t verify(const struct coll_job *j, int r, const float *buf)
{
	size_t off[SL_MAX_DEVICES + 1];
	sl_block_offsets(j->count, j->p, NULL, off);
	uint64_t wrong = 0;
	for (int b = 0; b < j->p; b++) {
		enum { SKIP = -2, SUM = -1 };
		int src = SKIP; /* else the rank whose val() the block holds */
		switch (j->op) {
		case SL_COLL_ALLREDUCE:
			src = SUM;
			break;
		case SL_COLL_ALLGATHER:
			src = b;
			break;
		case SL_COLL_REDUCESCATTER:
			src = b == r ? SUM : SKIP;
			break;
		case SL_COLL_BROADCAST:
			src = 0;
			break;
		case SL_COLL_REDUCE:
			src = r == 0 ? SUM : SKIP;
			break;
		case SL_COLL_GATHER:
			src = r == 0 ? b : SKIP;
			break;
		case SL_COLL_SCATTER:
			src = b == r ? 0 : SKIP;
			break;
		default:
			break;
		}
		if (src != SKIP)
			wrong += count_wrong(j, buf, off[b], off[b + 1], src);
	}
	return wrong;
}

static int coll_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct coll_job *j = arg;
	int r = sl_dev_id(d);
	size_t bytes = j->count * sizeof(float);
	float *buf = sl_dev_alloc(d, bytes, "its collective buffer", err);
	if (!buf)
		return err && err->code ? err->code : SL_EDEVMEM;
	float mine[17];
	for (int q = 0; q < 17; q++)
		mine[q] = val(r, (size_t)q);
	for (size_t i = 0, q = 0; i < j->count; i++) {
		buf[i] = mine[q];
		if (++q == 17)
			q = 0;
	}
	sl_group g = sl_group_all(j->p);
	int rc = sl_coll_run(d, &g, j->op, buf, j->count, j->algo, err);
	if (rc == SL_OK)
		j->wrong[r] = verify(j, r, buf);
	sl_dev_free(d, buf, bytes);
	return rc;
}

static size_t whole_elements(double bytes)
{
	return (size_t)(bytes / sizeof(float));
}

int sl_cmd_coll(int argc, char **argv)
{
	const char *cmd = "coll";
	struct option lo[SL_OPTS_MAX];
	static const struct option mine[] = {
		{"op", required_argument, NULL, OPT_OP},
		{"bytes", required_argument, NULL, OPT_BYTES},
		{NULL, 0, NULL, 0},
	};
	size_t nlo = sl_opts_append(lo, 0, SL_OPTS_MAX, sl_opts_cluster);
	sl_opts_append(lo, nlo, SL_OPTS_MAX, mine);
	struct coll_args a = {.op = SL_COLL_ALLREDUCE, .min = 1048576, .max = 67108864};
	sl_opts o;
	sl_opts_init(&o);
	int rc = sl_cli_parse(cmd, argc, argv, lo, &o, coll_option, &a, coll_help);
	if (rc != SL_CLI_GO)
		return rc;

	const sl_cluster_config *cfg = &o.sc.cluster;
	int p = cfg->devices;
	size_t cmin = whole_elements(a.min), cmax = whole_elements(a.max);
	if (a.bytes_arg && ((double)cmin * sizeof(float) != a.min ||
			    (double)cmax * sizeof(float) != a.max)) {
		char used[64];
		int len = snprintf(used, sizeof used, "%zu", cmin * sizeof(float));
		if (cmax != cmin)
			snprintf(used + len, sizeof used - (size_t)len, ":%zu",
				 cmax * sizeof(float));
		sl_cli_error("%s: note: --bytes=%s is not whole fp32 elements: using %s B", cmd,
			     a.bytes_arg, used);
	}
	char what[64];
	snprintf(what, sizeof what, "%d buffers of %zu B", p, cmax * sizeof(float));
	if ((rc = sl_cli_host_fits(cmd, (double)p * (double)cmax * sizeof(float), what)))
		return rc;
	if (o.trace && (rc = sl_cli_check_output(cmd, o.trace)))
		return rc;

	sl_err err = {0};
	sl_cluster *c = sl_cluster_create(cfg, &err);
	if (!c)
		return sl_cli_fail(cmd, &err);
	sl_coll_row rows[MAX_ROWS];
	size_t nrows = 0;
	for (size_t n = cmin; n <= cmax && nrows < MAX_ROWS; n *= 2)
		rows[nrows++] = (sl_coll_row){.count = n, .bytes = (double)n * sizeof(float)};
	sl_coll_report rep = {
		.op = a.op,
		.algo = o.sc.gemm.algo,
		.sc = &o.sc,
		.overrides = o.overrides,
		.bottleneck = sl_cost_ring_bottleneck(c, p),
		.nrows = nrows,
		.rows = rows,
	};
	FILE *out = sl_cli_report_stream(o.trace);
	if (o.format == SL_FORMAT_TEXT)
		sl_report_coll_header(out, &rep);

	struct coll_job job = {.op = a.op, .algo = rep.algo, .p = p};
	for (int i = 0; i < 17; i++)
		for (int q = 0; q < p; q++)
			job.sum[i] += val(q, (size_t)i);
	int status = SL_EXIT_OK;
	uint64_t wrong = 0;
	for (size_t i = 0; i < nrows && status == SL_EXIT_OK; i++) {
		sl_coll_row *row = &rows[i];
		job.count = row->count;
		memset(job.wrong, 0, sizeof job.wrong);
		if (sl_cluster_run(c, coll_prog, &job, &err)) {
			sl_cli_error("%s: %s", cmd, err.msg[0] ? err.msg : "the run failed");
			status = SL_EXIT_FAIL;
			break;
		}
		for (int d = 0; d < p; d++) {
			sl_dev_stats st = sl_cluster_dev_stats(c, d);
			if (st.clock > row->time_s)
				row->time_s = st.clock;
			row->wrong += job.wrong[d];
		}
		wrong += row->wrong;
		row->predicted_s = sl_cost_coll(a.op, rep.algo, p, row->bytes,
						rep.bottleneck.latency, rep.bottleneck.bandwidth);
		if (row->time_s > 0) {
			row->algbw = row->bytes / row->time_s;
			row->busbw = row->algbw * sl_busbw_factor(a.op, p);
		}
		if (o.format == SL_FORMAT_TEXT) {
			sl_report_coll_row(out, row);
			fflush(out);
		}
	}
	if (status == SL_EXIT_OK && o.trace && sl_report_trace(c, o.trace, &err)) {
		sl_cli_error("%s: %s", cmd, err.msg);
		status = SL_EXIT_FAIL;
	}
	if (status == SL_EXIT_OK && o.format == SL_FORMAT_JSON &&
	    sl_report_json_print(out, sl_report_coll_json(&rep)))
		status = SL_EXIT_FAIL;
	status = sl_cli_flush(status);
	if (status == SL_EXIT_OK && wrong > 0) {
		sl_cli_error("%s: wrong result: %llu elements differ from the expected %s", cmd,
			     (unsigned long long)wrong, sl_coll_op_name(a.op));
		status = SL_EXIT_FAIL;
	}
	sl_cluster_destroy(c);
	return status;
}
