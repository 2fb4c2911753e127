/* SPDX-License-Identifier: MIT */
/* cmd_coll.c - `shardlab coll`: one collective over one size or a range of
 * sizes, printed in nccl-tests' layout (size, count, type, redop, root,
 * time, algbw, busbw, #wrong, their footer) with the alpha-beta model's
 * prediction as an extra last column; --human keeps the table in units,
 * --format=json and --format=csv are for scripts. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hwfile.h"
#include "preset.h"
#include "cost.h"
#include "report.h"
#include "units.h"

/* One size per doubling from 4 B to 1 PiB at most. */
#define MAX_ROWS 64

struct coll_args {
	sl_coll_op op;
	const char *bytes_arg;
	double min, max; /* as given */
	int factor;      /* -f: each size is the last times it */
	int iters;       /* -n */
	int human;
	int predicted;
};

static void coll_help(void)
{
	printf("Usage: shardlab coll [--op=OP] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] "
	       "[--predicted]\n"
	       "                     [--human | --format=json|csv] [OPTION...]\n\n"
	       "Runs one collective over the emulated devices and prints, per size, nccl-tests'\n"
	       "13 columns: size (B), count (elements), type, redop, root, then out of place\n"
	       "and again in place (the engine's transfers are the same: both hold the one\n"
	       "run's figures) time (us, the slowest device's emulated clock per iteration),\n"
	       "algbw = size / time and busbw = algbw x the NCCL-tests factor (GB/s) and\n"
	       "#wrong (elements that differ from the expected result); then nccl-tests'\n"
	       "footer.  Each device holds a buffer of SIZE bytes of fp32 (SIZE rounded down\n"
	       "to whole elements; for alltoall to p blocks).\n\n");
	sl_opts_help(stdout, SL_CMD_COLL, SL_KG_COLL, 0);
	sl_opts_help(stdout, SL_CMD_COLL, SL_KG_DRY_RUN, 0);
	printf("                          (validation 0 and #wrong 0: nothing is computed to\n"
	       "                          check)\n\n");
	sl_cli_help_cluster(SL_CMD_COLL);
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
	const sl_knob *k = sl_knob_of('b'); /* the range of a size */
	if (*out > k->hi)
		return sl_fail(err, SL_EINVAL, "--bytes '%s' is out of range (%s)", arg, k->range);
	return SL_OK;
}

static int coll_option(void *ctx, int code, const char *arg, sl_err *err)
{
	struct coll_args *a = ctx;
	const sl_knob *k = sl_knob_of(code);
	sl_knob_val v;
	if (!k || sl_knob_parse(k, "--", arg, &v, err))
		return k ? SL_EINVAL
		         : sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	switch (code) {
	case SL_OPT_OP:
		a->op = (sl_coll_op)v.d;
		return SL_OK;
	case SL_OPT_HUMAN:
		a->human = 1;
		return SL_OK;
	case SL_OPT_PREDICTED:
		a->predicted = 1;
		return SL_OK;
	case 'b':
	case 'e':
		a->bytes_arg = arg;
		*(code == 'b' ? &a->min : &a->max) = v.d;
		return SL_OK;
	case 'f':
	case 'n':
		*(code == 'f' ? &a->factor : &a->iters) = (int)v.d;
		return SL_OK;
	default:
		break;
	}
	if (code != SL_OPT_BYTES)
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
	int p, iters;
	size_t count;
	float sum[17];                  /* sum over ranks of val(rank, i) by i % 17 */
	uint64_t wrong[SL_MAX_DEVICES]; /* per device */
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

/* Elements of buf[0..n) that are not val(src, first + k). */
static uint64_t count_wrong_from(const float *buf, size_t n, int src, size_t first)
{
	uint64_t wrong = 0;
	for (size_t k = 0, q = first % 17; k < n; k++) {
		wrong += buf[k] != val(src, q);
		if (++q == 17)
			q = 0;
	}
	return wrong;
}

/* Count the elements of rank r's buffer that differ from what op leaves
 * there; blocks that op leaves as scratch are not checked.  For alltoall
 * and sendrecv buf is the receive buffer. */
static uint64_t verify(const struct coll_job *j, int r, const float *buf)
{
	if (j->op == SL_COLL_SENDRECV)
		return count_wrong_from(buf, j->count, (r + j->p - 1) % j->p, 0);
	if (j->op == SL_COLL_ALLTOALL) {
		size_t q = j->count / (size_t)j->p;
		uint64_t wrong = 0;
		for (int b = 0; b < j->p; b++)
			wrong += count_wrong_from(buf + (size_t)b * q, q, b, (size_t)r * q);
		return wrong;
	}
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
	int oop = j->op == SL_COLL_ALLTOALL || j->op == SL_COLL_SENDRECV; /* out of place */
	if (sl_cluster_config_of(sl_dev_cluster(d))->timing_only) {
		/* --dry-run: the collective's timeline with no buffer to check. */
		uint64_t held = 0;
		int rc = sl_dev_reserve(d, bytes, "its collective buffer", err);
		held += rc == SL_OK ? bytes : 0;
		if (rc == SL_OK && oop &&
		    (rc = sl_dev_reserve(d, bytes, "its receive buffer", err)) == SL_OK)
			held += bytes;
		sl_group g = sl_group_all(j->p);
		for (int it = 0; it < j->iters && rc == SL_OK; it++)
			rc = sl_coll_run2(d, &g, j->op, NULL, NULL, j->count, j->algo, err);
		sl_dev_release(d, held);
		return rc;
	}
	float *buf = sl_dev_alloc(d, bytes, "its collective buffer", err);
	if (!buf)
		return err && err->code ? err->code : SL_EDEVMEM;
	float *out = oop ? sl_dev_alloc(d, bytes, "its receive buffer", err) : buf;
	if (!out) {
		sl_dev_free(d, buf, bytes);
		return err && err->code ? err->code : SL_EDEVMEM;
	}
	float mine[17];
	for (int q = 0; q < 17; q++)
		mine[q] = val(r, (size_t)q);
	sl_group g = sl_group_all(j->p);
	int rc = SL_OK;
	/* Every iteration starts from the same data (the in-place reductions
	 * would sum it again); filling is host work, not the device's. */
	for (int it = 0; it < j->iters && rc == SL_OK; it++) {
		for (size_t i = 0, q = 0; i < j->count; i++) {
			buf[i] = mine[q];
			if (++q == 17)
				q = 0;
		}
		rc = sl_coll_run2(d, &g, j->op, buf, out, j->count, j->algo, err);
	}
	if (rc == SL_OK)
		j->wrong[r] = verify(j, r, out);
	if (oop)
		sl_dev_free(d, out, bytes);
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
	struct coll_args a = {
	    .op = SL_COLL_ALLREDUCE, .min = 1048576, .max = 67108864, .factor = 2, .iters = 1};
	sl_opts o;
	sl_opts_init(&o);
	o.csv_ok = 1;
	int rc = sl_cli_parse(cmd, SL_CMD_COLL, argc, argv, &o, coll_option, &a, coll_help);
	if (rc != SL_CLI_GO)
		return rc;
	/* The buffer is SIZE bytes of fp32 elements, whatever the preset
	 * trains in: the bytes on the wire are the ones asked for. */
	o.sc.cluster.precision = SL_PREC_FP32;
	/* ... and the report names the rate of that precision. */
	const sl_preset *pre = o.hw ? o.hw : sl_hw_find(o.sc.preset, NULL, NULL);
	if (pre && pre->flops_fp32 > 0 && !sl_opts_given(&o, SL_OPT_FLOPS))
		o.sc.cluster.flops = pre->flops_fp32;
	if (a.min > a.max)
		return sl_cli_usage(cmd, "the first size (%.0f B) exceeds the last (%.0f B)", a.min,
		                    a.max);
	if (a.human && o.format != SL_FORMAT_TEXT)
		return sl_cli_usage(cmd, "--human is a text table: not with --format=%s",
		                    o.format == SL_FORMAT_JSON ? "json" : "csv");

	/* Without --trace nothing reads the run's events: keep none. */
	o.sc.cluster.record.off = !o.trace;
	const sl_cluster_config *cfg = &o.sc.cluster;
	int p = cfg->devices;
	size_t cmin = whole_elements(a.min), cmax = whole_elements(a.max);
	/* alltoall moves p equal blocks: whole blocks only, as nccl-tests. */
	size_t unit = a.op == SL_COLL_ALLTOALL ? (size_t)p : 1;
	cmin = cmin / unit * unit;
	cmax = cmax / unit * unit;
	if (cmin == 0)
		return sl_cli_usage(cmd,
		                    "alltoall over %d devices needs at least %d fp32 elements "
		                    "(%d B)",
		                    p, p, 4 * p);
	if (a.bytes_arg &&
	    ((double)cmin * sizeof(float) != a.min || (double)cmax * sizeof(float) != a.max)) {
		char used[64];
		int len = snprintf(used, sizeof used, "%zu", cmin * sizeof(float));
		if (cmax != cmin)
			snprintf(used + len, sizeof used - (size_t)len, ":%zu",
			         cmax * sizeof(float));
		sl_cli_error(
		    "%s: note: the sizes are not whole %s: using %s B", cmd,
		    unit > 1 ? "blocks of fp32 elements (one per device)" : "fp32 elements", used);
	}
	char what[64];
	int oop = a.op == SL_COLL_ALLTOALL || a.op == SL_COLL_SENDRECV;
	snprintf(what, sizeof what, "%d buffers of %zu B", p * (oop ? 2 : 1), cmax * sizeof(float));
	if (!cfg->timing_only &&
	    (rc = sl_cli_host_fits_or_dry(
	         cmd, (double)p * (oop ? 2 : 1) * (double)cmax * sizeof(float), what)))
		return rc;
	if (o.trace && (rc = sl_cli_check_output(cmd, o.trace)))
		return rc;

	sl_err err = {0};
	sl_cluster *c = sl_cluster_create(cfg, &err);
	if (!c)
		return sl_cli_fail(cmd, &err);
	sl_coll_row rows[MAX_ROWS];
	size_t nrows = 0;
	for (size_t n = cmin; n <= cmax && nrows < MAX_ROWS; n = n * (size_t)a.factor / unit * unit)
		rows[nrows++] = (sl_coll_row){.count = n, .bytes = (double)n * sizeof(float)};
	sl_coll_report rep = {
	    .op = a.op,
	    .algo = o.sc.gemm.algo,
	    .sc = &o.sc,
	    .overrides = o.overrides,
	    .bottleneck = sl_cost_ring_bottleneck_op(c, p, a.op, o.sc.gemm.algo),
	    .nrows = nrows,
	    .rows = rows,
	    .factor = a.factor,
	    .iters = a.iters,
	    .predicted = a.predicted,
	};
	FILE *out = sl_cli_report_stream(o.trace);
	if (o.format == SL_FORMAT_TEXT && a.human)
		sl_report_coll_header(out, &rep);
	else if (o.format == SL_FORMAT_TEXT)
		sl_report_coll_nccl_header(out, &rep);
	else if (o.format == SL_FORMAT_CSV)
		sl_report_coll_csv_header(out);

	struct coll_job job = {.op = a.op, .algo = rep.algo, .p = p, .iters = a.iters};
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
		row->time_s /= a.iters;
		wrong += row->wrong;
		row->predicted_s = sl_cost_coll_terms(
		    a.op, rep.algo, p, row->bytes, rep.bottleneck.latency, rep.bottleneck.bandwidth,
		    sl_cluster_config_of(c)->topology, NULL, NULL);
		if (row->time_s > 0) {
			row->algbw = row->bytes / row->time_s;
			row->busbw = row->algbw * sl_busbw_factor(a.op, p);
		}
		if (o.format == SL_FORMAT_TEXT && a.human)
			sl_report_coll_row(out, row);
		else if (o.format == SL_FORMAT_TEXT)
			sl_report_coll_nccl_row(out, &rep, row);
		else if (o.format == SL_FORMAT_CSV)
			sl_report_coll_csv_row(out, &rep, row);
		fflush(out);
	}
	rep.nrows = status == SL_EXIT_OK ? nrows : 0;
	if (status == SL_EXIT_OK && o.format == SL_FORMAT_TEXT && !a.human)
		sl_report_coll_nccl_footer(out, &rep);
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
