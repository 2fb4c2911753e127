/* SPDX-License-Identifier: MIT */
/* report.c - text and JSON reports of the headless commands. */
#include "config.h"

#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "hwfile.h"
#include "preset.h"
#include "device.h"
#include "trace.h"
#include "units.h"

/* Formatted figures for one printf: a small ring of buffers, so a line can
 * hold several.  The front end is single-threaded. */
#define SLOTS 24
#define SLOT_LEN 40
static char *slot(void)
{
	static char bufs[SLOTS][SLOT_LEN];
	static int next;
	next = (next + 1) % SLOTS;
	return bufs[next];
}

static const char *ft(double s)
{
	return sl_fmt_time(s, slot(), SLOT_LEN);
}

static const char *fb(double bytes)
{
	return sl_fmt_bytes(bytes, slot(), SLOT_LEN);
}

static const char *fr(double bps)
{
	return sl_fmt_rate(bps, slot(), SLOT_LEN);
}

static const char *ff(double flops_per_s)
{
	return sl_fmt_flops(flops_per_s, slot(), SLOT_LEN);
}

/* A count of floating-point operations: "8.59 GFLOP". */
static const char *fcount(double flops)
{
	char *s = sl_fmt_flops(flops, slot(), SLOT_LEN);
	size_t n = strlen(s);
	if (n > 2 && strcmp(s + n - 2, "/s") == 0)
		s[n - 2] = '\0';
	return s;
}

/* Print text from column indent, wrapped before width. */
static void wrap(FILE *f, const char *text, int indent, int width)
{
	int col = indent;
	fprintf(f, "%*s", indent, "");
	while (*text) {
		size_t w = strcspn(text, " ");
		if (col > indent && col + 1 + (int)w > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)w, text);
		col += (int)w;
		text += w;
		while (*text == ' ')
			text++;
	}
	fputc('\n', f);
}

int sl_report_presets(FILE *f, int json, sl_err **bad, int *nbad, sl_err *err)
{
	const sl_preset **list;
	int n;
	int rc = sl_hw_list(&list, &n, bad, nbad, err);
	if (rc)
		return rc;
	if (json) {
		/* The report's versions; each entry of presets is a hardware file
		 * (shardlab-hardware(5)) as it is; unreadable: what could not be
		 * read, and why. */
		json_t *o = json_object(), *a = json_array(), *u = json_array();
		json_object_set_new(o, "shardlab_version", json_string(PACKAGE_VERSION));
		json_object_set_new(o, "format_version", json_integer(SL_JSON_FORMAT_VERSION));
		for (int i = 0; i < n; i++)
			json_array_append_new(a, sl_hw_to_json(list[i]));
		for (int i = 0; bad && i < *nbad; i++)
			json_array_append_new(u, json_string((*bad)[i].msg));
		json_object_set_new(o, "presets", a);
		json_object_set_new(o, "unreadable", u);
		char *s = sl_json_dump_exact(o);
		json_decref(o);
		free(list);
		if (!s)
			return sl_fail(err, SL_ENOMEM, "out of memory");
		fputs(s, f);
		free(s);
		return SL_OK;
	}
	for (int i = 0; i < n; i++) {
		const sl_preset *p = list[i];
		int def = strcmp(p->name, SL_PRESET_DEFAULT) == 0;
		fprintf(f, "%-10s %s%s\n", p->name, p->title, def ? " (the default)" : "");
		double flops = p->flops > 0 ? p->flops : sl_host_flops();
		if (p->flops > 0)
			fprintf(f, "%11s%s BF16, %s FP32", "", ff(flops), ff(p->flops_fp32));
		else
			fprintf(f, "%11s%s (measured now)", "", ff(flops));
		fprintf(f, " per device, %s of memory", fb(p->memory));
		if (p->devices_per_node > 0)
			fprintf(f, ", %d devices per node\n", p->devices_per_node);
		else
			fprintf(f, ", any number of devices per node\n");
		fprintf(f, "%11slinks %s, %s inside a node; %s, %s between nodes\n", "",
		        fr(p->intra.bandwidth), ft(p->intra.latency), fr(p->inter.bandwidth),
		        ft(p->inter.latency));
		if (p->dm.mem_bw > 0) {
			if (p->dm.mem_frac > 0)
				fprintf(f,
				        "%11smemory %s, of which a measured copy reaches %.1f%%\n",
				        "", fr(p->dm.mem_bw), 100 * p->dm.mem_frac);
			else
				fprintf(f,
				        "%11smemory %s, all of it taken as reached (no copy "
				        "measured)\n",
				        "", fr(p->dm.mem_bw));
			fprintf(f, "%11sbest GEMM %.1f%% of peak on %d units; a kernel launch %s\n",
			        "", 100 * p->dm.gemm_frac, p->dm.units, ft(p->dm.launch_s));
			fprintf(f,
			        "%11scollectives reach %.0f%% of the links inside a node, %.0f%% "
			        "between;"
			        " default %s, %s\n",
			        "", 100 * p->intra_frac, 100 * p->inter_frac,
			        sl_precision_name(p->precision), sl_efficiency_name(p->efficiency));
		} else
			fprintf(f, "%11sdefault %s, %s\n", "", sl_precision_name(p->precision),
			        sl_efficiency_name(p->efficiency));
		char src[2048]; /* a source is up to 1023 bytes (shardlab-hardware(5)) */
		snprintf(src, sizeof src, "source: %s", p->source);
		wrap(f, src, 11, 79);
		/* Where it was found (shardlab-hardware(5)'s lookup order). */
		const char *from = "";
		sl_hw_find(p->name, &from, NULL);
		/* A path is not wrapped: it is one word to copy. */
		fprintf(f, "%11sfile: %s\n", "",
		        from && *from ? from : "none (the built-in table)");
	}
	free(list);
	return SL_OK;
}

static int nodes_of(const sl_cluster_config *cfg)
{
	return cfg->devices_per_node > 0 ? cfg->devices / cfg->devices_per_node : 1;
}

static const char *topo_name(sl_topo t)
{
	return t == SL_TOPO_RING ? "ring" : "full";
}

/* The hardware, links and layout lines, each line starting with lead. */
static void print_hardware(FILE *f, const char *lead, const sl_cluster_config *cfg,
                           const char *preset, const char *overrides)
{
	int given = overrides && *overrides;
	fprintf(f, "%shardware    %s %s per device, %s of memory (%s preset%s%s), %s efficiency\n",
	        lead, ff(cfg->flops), sl_precision_name(cfg->precision), fb((double)cfg->memory),
	        preset, given ? "; given: " : "", given ? overrides : "",
	        sl_efficiency_name(cfg->efficiency));
	fprintf(f, "%slinks       %s, %s inside a node", lead, fr(cfg->intra.bandwidth),
	        ft(cfg->intra.latency));
	if (nodes_of(cfg) > 1)
		fprintf(f, "; %s, %s between nodes", fr(cfg->inter.bandwidth),
		        ft(cfg->inter.latency));
	fputc('\n', f);
	if (cfg->devices == 1)
		fprintf(f, "%slayout      one device\n", lead);
	else if (nodes_of(cfg) > 1)
		fprintf(f, "%slayout      %d nodes of %d devices, %s\n", lead, nodes_of(cfg),
		        cfg->devices_per_node,
		        cfg->topology == SL_TOPO_RING ? "ring" : "all pairs linked");
	else
		fprintf(f, "%slayout      one node of %d device%s, %s\n", lead, cfg->devices,
		        cfg->devices == 1 ? "" : "s",
		        cfg->topology == SL_TOPO_RING ? "ring (other pairs pay a latency per hop)"
		                                      : "all pairs linked");
}

void sl_report_run_text(FILE *f, const sl_run_report *r)
{
	const sl_gemm_spec *g = &r->sc->gemm;
	const sl_gemm_result *res = r->res;
	const sl_cluster_config *cfg = sl_cluster_config_of(r->cluster);
	int t = cfg->devices;

	fprintf(f, "shardlab run: %s Y[%dx%d] = X[%dx%d] W[%dx%d] on %d device%s\n",
	        sl_split_name(g->split), g->m, g->n, g->m, g->k, g->k, g->n, t, t == 1 ? "" : "s");
	print_hardware(f, "  ", cfg, r->sc->preset, r->overrides);
	if (g->split == SL_SPLIT_COL)
		fprintf(f, "  collective  all-gather of Y, %s algorithm\n", sl_algo_name(g->algo));
	else if (g->split == SL_SPLIT_ROW)
		fprintf(f, "  collective  all-reduce of the partial Y, %s algorithm\n",
		        sl_algo_name(g->algo));
	fprintf(f, "  timing      %s\n",
	        cfg->timing == SL_TIMING_MODEL
	            ? "model: compute = flops / device rate"
	            : "measured: compute = each device thread's CPU time");
	if (cfg->timing_only)
		fprintf(
		    f,
		    "  dry run     timing only: no arithmetic, no bytes copied, memory counted\n");
	if (cfg->slowdown > 0)
		fprintf(f, "  paced       %.10gx slower than emulated: %s of wall time\n",
		        cfg->slowdown, ft(r->wall_s));
	fputc('\n', f);

	fprintf(f, "  emulated time   %-12s predicted %s by the alpha-beta model%s\n",
	        ft(res->emulated_time_s), ft(res->predicted_s),
	        cfg->timing == SL_TIMING_MODEL ? "" : " (at the preset's compute rate)");
	fprintf(f, "  one device      %-12s speedup %sx\n", ft(res->single_time_s),
	        sl_fmt_ratio(res->speedup, (char[32]){0}, 32));
	fprintf(f, "  slowest device  %s computing, %s communicating\n", ft(res->compute_s),
	        ft(res->comm_s));
	fprintf(f, "  bytes moved     %s over the links\n", fb((double)res->bytes_moved));
	if (res->checked)
		fprintf(f,
		        "  check           %s  max abs error %.3g, max rel error %.3g (tolerance "
		        "%.3g)\n",
		        r->pass ? "PASS" : "FAIL", res->max_abs_error, res->max_rel_error,
		        r->tolerance);
	else
		fprintf(f, "  check           none: a timing-only run computes no product\n");
	fputc('\n', f);

	fprintf(f, "  %6s %11s %11s %11s %13s %11s %11s %11s\n", "device", "compute", "comm",
	        "idle", "work", "sent", "received", "peak mem");
	for (int i = 0; i < t; i++) {
		sl_dev_stats st = sl_cluster_dev_stats(r->cluster, i);
		double idle = res->emulated_time_s - st.compute_s - st.comm_s;
		/* Sums of the same times in another order leave rounding dust. */
		if (idle < 1e-9 * res->emulated_time_s)
			idle = 0;
		fprintf(f, "  %6d %11s %11s %11s %13s %11s %11s %11s\n", i, ft(st.compute_s),
		        ft(st.comm_s), ft(idle), fcount(st.flops), fb((double)st.bytes_sent),
		        fb((double)st.bytes_received), fb((double)st.mem_peak));
	}
}

/* jansson refuses NaN and infinities: those become null. */
static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jlink(sl_link_spec s)
{
	json_t *o = json_object();
	json_object_set_new(o, "bandwidth_bytes_per_s", jreal(s.bandwidth));
	json_object_set_new(o, "latency_s", jreal(s.latency));
	return o;
}

/* The hardware and layout fields every report carries. */
static void json_cluster(json_t *o, const sl_cluster_config *cfg, const char *preset,
                         const char *overrides)
{
	json_object_set_new(o, "devices", json_integer(cfg->devices));
	int per_node = cfg->devices_per_node > 0 ? cfg->devices_per_node : cfg->devices;
	json_object_set_new(o, "devices_per_node", json_integer(per_node));
	json_object_set_new(o, "nodes", json_integer(nodes_of(cfg)));
	json_object_set_new(o, "topology", json_string(topo_name(cfg->topology)));
	json_object_set_new(o, "preset", json_string(preset));
	json_t *ov = json_array();
	for (const char *p = overrides ? overrides : ""; *p;) {
		size_t n = strcspn(p, ",");
		json_array_append_new(ov, json_stringn(p, n));
		p += n;
		while (*p == ',' || *p == ' ')
			p++;
	}
	json_object_set_new(o, "overrides", ov);
	json_object_set_new(o, "device_flop_per_s", jreal(cfg->flops));
	json_object_set_new(o, "memory_per_device_bytes", json_integer((json_int_t)cfg->memory));
	json_object_set_new(o, "intra", jlink(cfg->intra));
	json_object_set_new(o, "inter", jlink(cfg->inter));
	json_object_set_new(o, "bandwidth_bytes_per_s", jreal(cfg->intra.bandwidth));
	json_object_set_new(o, "latency_s", jreal(cfg->intra.latency));
	json_object_set_new(o, "inter_bandwidth_bytes_per_s", jreal(cfg->inter.bandwidth));
	json_object_set_new(o, "inter_latency_s", jreal(cfg->inter.latency));
	json_object_set_new(o, "timing",
	                    json_string(cfg->timing == SL_TIMING_MODEL ? "model" : "measured"));
	/* Not set: real time is not paced (0 in the config). */
	json_object_set_new(o, "slowdown", cfg->slowdown > 0 ? jreal(cfg->slowdown) : json_null());
	json_object_set_new(o, "timing_only", json_boolean(cfg->timing_only));
}

void sl_report_hardware_text(FILE *f, const char *lead, const sl_cluster_config *cfg,
                             const char *preset, const char *overrides)
{
	print_hardware(f, lead, cfg, preset, overrides);
}

void sl_report_cluster_json(json_t *o, const sl_cluster_config *cfg, const char *preset,
                            const char *overrides)
{
	json_cluster(o, cfg, preset, overrides);
}

json_t *sl_report_run_json(const sl_run_report *r)
{
	const sl_gemm_spec *g = &r->sc->gemm;
	const sl_gemm_result *res = r->res;
	const sl_cluster_config *cfg = sl_cluster_config_of(r->cluster);
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "strategy", json_string(sl_split_name(g->split)));
	json_object_set_new(o, "m", json_integer(g->m));
	json_object_set_new(o, "k", json_integer(g->k));
	json_object_set_new(o, "n", json_integer(g->n));
	json_object_set_new(o, "algorithm", json_string(sl_algo_name(g->algo)));
	json_object_set_new(o, "seed", json_integer((json_int_t)g->seed));
	json_cluster(o, cfg, r->sc->preset, r->overrides);
	json_object_set_new(o, "emulated_time_s", jreal(res->emulated_time_s));
	json_object_set_new(o, "predicted_s", jreal(res->predicted_s));
	json_object_set_new(o, "single_device_time_s", jreal(res->single_time_s));
	json_object_set_new(o, "speedup", jreal(res->speedup));
	json_object_set_new(o, "compute_s", jreal(res->compute_s));
	json_object_set_new(o, "comm_s", jreal(res->comm_s));
	json_object_set_new(o, "moved_bytes", json_integer((json_int_t)res->bytes_moved));
	json_object_set_new(o, "max_abs_error",
	                    res->checked ? jreal(res->max_abs_error) : json_null());
	json_object_set_new(o, "max_rel_error",
	                    res->checked ? jreal(res->max_rel_error) : json_null());
	json_object_set_new(o, "tolerance", jreal(r->tolerance));
	json_object_set_new(o, "check",
	                    json_string(!res->checked ? "none"
	                                : r->pass     ? "pass"
	                                              : "fail"));
	json_object_set_new(o, "wall_s", jreal(r->wall_s));
	json_t *devs = json_array();
	for (int i = 0; i < cfg->devices; i++) {
		sl_dev_stats st = sl_cluster_dev_stats(r->cluster, i);
		json_t *d = json_object();
		json_object_set_new(d, "id", json_integer(i));
		json_object_set_new(
		    d, "node",
		    json_integer(cfg->devices_per_node > 0 ? i / cfg->devices_per_node : 0));
		json_object_set_new(d, "compute_s", jreal(st.compute_s));
		json_object_set_new(d, "comm_s", jreal(st.comm_s));
		double idle = res->emulated_time_s - st.compute_s - st.comm_s;
		json_object_set_new(d, "idle_s", jreal(idle));
		json_object_set_new(d, "clock_s", jreal(st.clock));
		json_object_set_new(d, "flop", jreal(st.flops));
		json_object_set_new(d, "sent_bytes", json_integer((json_int_t)st.bytes_sent));
		json_object_set_new(d, "received_bytes",
		                    json_integer((json_int_t)st.bytes_received));
		json_object_set_new(d, "memory_peak_bytes", json_integer((json_int_t)st.mem_peak));
		json_array_append_new(devs, d);
	}
	json_object_set_new(o, "per_device", devs);
	return o;
}

void sl_report_coll_header(FILE *f, const sl_coll_report *r)
{
	const sl_cluster_config *cfg = &r->sc->cluster;
	fprintf(f, "# shardlab coll: %s, %s algorithm, %d device%s\n", sl_coll_op_name(r->op),
	        sl_algo_name(r->algo), cfg->devices, cfg->devices == 1 ? "" : "s");
	print_hardware(f, "# ", cfg, r->sc->preset, r->overrides);
	fprintf(f,
	        "# each device holds a buffer of SIZE bytes (fp32); time is the slowest\n"
	        "# device's emulated clock; predicted from the alpha-beta model on the\n"
	        "# slowest link of the ring (%s, %s); busbw = algbw x %.4g (NCCL-tests)\n",
	        fr(r->bottleneck.bandwidth), ft(r->bottleneck.latency),
	        sl_busbw_factor(r->op, cfg->devices));
	fprintf(f, "#%11s %12s %11s %11s %11s %11s %6s\n", "size", "elements", "time", "predicted",
	        "algbw", "busbw", "wrong");
}

void sl_report_coll_row(FILE *f, const sl_coll_row *row)
{
	fprintf(f, " %11s %12zu %11s %11s %11s %11s %6llu\n", fb(row->bytes), row->count,
	        ft(row->time_s), ft(row->predicted_s), row->time_s > 0 ? fr(row->algbw) : "n/a",
	        row->time_s > 0 ? fr(row->busbw) : "n/a", (unsigned long long)row->wrong);
}

/* ---- the nccl-tests layout ---- */

/* nccl-tests' redop and root columns for op. */
static const char *nccl_redop(sl_coll_op op)
{
	return op == SL_COLL_ALLREDUCE || op == SL_COLL_REDUCESCATTER || op == SL_COLL_REDUCE
	           ? "sum"
	           : "none";
}

static int nccl_root(sl_coll_op op)
{
	return op == SL_COLL_BROADCAST || op == SL_COLL_REDUCE || op == SL_COLL_GATHER ||
	               op == SL_COLL_SCATTER
	           ? 0
	           : -1;
}

/* Microseconds as nccl-tests prints them: fewer decimals as they grow. */
static const char *nccl_us(double s)
{
	char *b = slot();
	double us = s * 1e6;
	snprintf(b, SLOT_LEN, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
	return b;
}

static const char *nccl_gbs(const sl_coll_row *row, double bw)
{
	char *b = slot();
	if (row->time_s > 0)
		snprintf(b, SLOT_LEN, "%6.2f", bw / 1e9);
	else
		snprintf(b, SLOT_LEN, "%6s", "N/A");
	return b;
}

void sl_report_coll_nccl_header(FILE *f, const sl_coll_report *r)
{
	const sl_cluster_config *cfg = &r->sc->cluster;
	double lo = r->nrows ? r->rows[0].bytes : 0,
	       hi = r->nrows ? r->rows[r->nrows - 1].bytes : 0;
	fprintf(f, "# shardlab coll (nccl-tests layout): %s, %s algorithm\n",
	        sl_coll_op_name(r->op), sl_algo_name(r->algo));
	fprintf(f,
	        "# nThread 1 nGpus %d minBytes %.0f maxBytes %.0f step: %g(factor) warmup iters: 0 "
	        "iters: %d agg iters: 1 validation: %d graph: 0\n",
	        cfg->devices, lo, hi, r->factor > 0 ? r->factor : 2, r->iters > 0 ? r->iters : 1,
	        !cfg->timing_only); /* --dry-run computes nothing to validate */
	fprintf(f, "#\n");
	print_hardware(f, "# ", cfg, r->sc->preset, r->overrides);
	fprintf(f,
	        "# time: the slowest device's emulated clock per iteration; predicted (with\n"
	        "# --predicted): the alpha-beta model on the slowest ring link (%s, %s);\n"
	        "# busbw = algbw x %.4g\n#\n",
	        fr(r->bottleneck.bandwidth), ft(r->bottleneck.latency),
	        sl_busbw_factor(r->op, cfg->devices));
	/* nccl-tests' 13 columns: an out-of-place block, then an in-place one.
	 * The engine's transfers are the same either way (it runs alltoall and
	 * sendrecv out of place, the others in place), so both blocks hold the
	 * one run's figures.  The prediction is a 14th column only on request:
	 * parsers of nccl-tests' output count 13. */
	fprintf(f, "#%63s%31s\n", "out-of-place", "in-place");
	fprintf(f, "#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s", "size",
	        "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
	        "algbw", "busbw", "#wrong");
	fprintf(f, r->predicted ? "  %9s\n" : "\n", "predicted");
	fprintf(f, "#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s", "(B)",
	        "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
	        "(GB/s)", "");
	fprintf(f, r->predicted ? "  %9s\n" : "\n", "(us)");
}

void sl_report_coll_nccl_row(FILE *f, const sl_coll_report *r, const sl_coll_row *row)
{
	fprintf(f, "%12.0f  %12zu  %8s  %6s  %6d", row->bytes, row->count, "float",
	        nccl_redop(r->op), nccl_root(r->op));
	for (int place = 0; place < 2; place++)
		fprintf(f, "  %7s  %6s  %6s  %6llu", nccl_us(row->time_s),
		        nccl_gbs(row, row->algbw), nccl_gbs(row, row->busbw),
		        (unsigned long long)row->wrong);
	if (r->predicted)
		fprintf(f, "  %9s", nccl_us(row->predicted_s));
	fputc('\n', f);
}

void sl_report_coll_nccl_footer(FILE *f, const sl_coll_report *r)
{
	uint64_t wrong = 0;
	double sum = 0;
	size_t n = 0;
	for (size_t i = 0; i < r->nrows; i++) {
		wrong += r->rows[i].wrong;
		if (r->rows[i].time_s > 0) {
			sum += r->rows[i].busbw / 1e9;
			n++;
		}
	}
	fprintf(f, "# Out of bounds values : %llu %s\n", (unsigned long long)wrong,
	        wrong ? "FAILED" : "OK");
	fprintf(f, "# Avg bus bandwidth    : %g \n", n ? sum / (double)n : 0.0);
	fprintf(f, "#\n");
}

void sl_report_coll_csv_header(FILE *f)
{
	fprintf(
	    f,
	    "size_bytes,count,type,redop,root,emulated_time_s,algbw_bytes_per_s,busbw_bytes_per_s,"
	    "wrong,predicted_s\n");
}

void sl_report_coll_csv_row(FILE *f, const sl_coll_report *r, const sl_coll_row *row)
{
	fprintf(f, "%.0f,%zu,float,%s,%d,%.9g,", row->bytes, row->count, nccl_redop(r->op),
	        nccl_root(r->op), row->time_s);
	if (row->time_s > 0)
		fprintf(f, "%.9g,%.9g,", row->algbw, row->busbw);
	else
		fprintf(f, ",,");
	fprintf(f, "%llu,%.9g\n", (unsigned long long)row->wrong, row->predicted_s);
}

static void json_coll_row(json_t *o, const sl_coll_row *row)
{
	json_object_set_new(o, "size_bytes", json_integer((json_int_t)row->bytes));
	json_object_set_new(o, "count", json_integer((json_int_t)row->count));
	json_object_set_new(o, "emulated_time_s", jreal(row->time_s));
	json_object_set_new(o, "predicted_s", jreal(row->predicted_s));
	json_object_set_new(o, "algbw_bytes_per_s",
	                    row->time_s > 0 ? jreal(row->algbw) : json_null());
	json_object_set_new(o, "busbw_bytes_per_s",
	                    row->time_s > 0 ? jreal(row->busbw) : json_null());
	json_object_set_new(o, "wrong", json_integer((json_int_t)row->wrong));
}

json_t *sl_report_coll_json(const sl_coll_report *r)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "op", json_string(sl_coll_op_name(r->op)));
	json_object_set_new(o, "algorithm", json_string(sl_algo_name(r->algo)));
	json_cluster(o, &r->sc->cluster, r->sc->preset, r->overrides);
	json_object_set_new(o, "busbw_factor",
	                    jreal(sl_busbw_factor(r->op, r->sc->cluster.devices)));
	json_object_set_new(o, "bottleneck", jlink(r->bottleneck));
	/* The first size at the top level too, so a one-size run reads flat. */
	if (r->nrows > 0)
		json_coll_row(o, &r->rows[0]);
	json_t *rows = json_array();
	for (size_t i = 0; i < r->nrows; i++) {
		json_t *row = json_object();
		json_coll_row(row, &r->rows[i]);
		json_array_append_new(rows, row);
	}
	json_object_set_new(o, "results", rows);
	return o;
}

static int json_printed;

int sl_report_json_printed(void)
{
	return json_printed;
}

/* j (stolen) after shardlab_version and format_version; NULL if out of
 * memory or j is not an object. */
static json_t *with_versions(json_t *j)
{
	json_t *o = json_object();
	if (!j || !o || json_object_set_new(o, "shardlab_version", json_string(PACKAGE_VERSION)) ||
	    json_object_set_new(o, "format_version", json_integer(SL_JSON_FORMAT_VERSION)) ||
	    json_object_update(o, j)) {
		json_decref(o);
		o = NULL;
	}
	json_decref(j);
	return o;
}

int sl_report_json_print(FILE *f, json_t *j)
{
	j = with_versions(j);
	if (!j)
		return -1;
	json_printed = 1;
	int rc = json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	json_decref(j);
	if (rc == 0 && fputc('\n', f) == EOF)
		rc = -1;
	return rc;
}

/* "-" is stdout, a name ending in .gz is gzip-compressed; the cluster's
 * configuration names the nodes and says which links cross them. */
int sl_report_trace(sl_cluster *c, const char *path, sl_err *err)
{
	sl_snapshot snap;
	if (sl_trace_take(sl_cluster_trace(c), &snap))
		return sl_fail(err, SL_ENOMEM, "out of host memory sorting the trace");
	sl_trace_opts opt = {.known = 1,
	                     .devices_per_node = sl_cluster_config_of(c)->devices_per_node};
	size_t len = strlen(path);
	int rc;
	if (strcmp(path, "-") == 0) {
		rc = sl_trace_write_chrome_opts(&snap, &opt, stdout, err);
		sl_snapshot_free(&snap);
		return rc;
	}
	if (len > 3 && strcmp(path + len - 3, ".gz") == 0) {
		rc = sl_trace_write_chrome_gz(&snap, &opt, path, err);
		sl_snapshot_free(&snap);
		return rc;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		int e = errno;
		sl_snapshot_free(&snap);
		return sl_fail(err, SL_ESYS, "cannot write the trace to %s: %s", path, strerror(e));
	}
	rc = sl_trace_write_chrome_opts(&snap, &opt, f, err);
	sl_snapshot_free(&snap);
	if (ferror(f) && rc == SL_OK)
		rc = sl_fail(err, SL_ESYS, "writing the trace to %s failed", path);
	if (fclose(f) != 0 && rc == SL_OK)
		rc = sl_fail(err, SL_ESYS, "writing the trace to %s: %s", path, strerror(errno));
	return rc;
}

void sl_report_layout_json(json_t *o, const sl_layout *l)
{
	char ord[16];
	json_object_set_new(o, "tp", json_integer(l->tp));
	json_object_set_new(o, "pp", json_integer(l->pp));
	json_object_set_new(o, "dp", json_integer(l->dp));
	/* only with context parallelism, so that the other layouts' objects stay as they were */
	if (l->cp > 1) {
		json_object_set_new(o, "cp", json_integer(l->cp));
		json_object_set_new(o, "cp_comm", json_string(sl_cp_comm_name(l->cp_comm)));
	}
	json_object_set_new(o, "schedule", json_string(sl_sched_name(l->schedule)));
	json_object_set_new(o, "chunks", json_integer(l->chunks));
	/* only when not even, so that the even layouts' objects stay as they were */
	if (l->stages != SL_STAGES_EVEN) {
		char st[8 * SL_MAX_STAGE_LIST];
		json_object_set_new(o, "stage_layers",
		                    json_string(sl_stage_layers_name(l, st, sizeof st)));
	}
	json_object_set_new(o, "microbatches", json_integer(l->microbatches));
	json_object_set_new(o, "sequence_parallel", json_boolean(l->seq_parallel));
	json_object_set_new(o, "zero1", json_boolean(l->zero >= 1));
	json_object_set_new(o, "zero", json_integer(l->zero));
	/* only when kept, so that the other layouts' objects stay as they were */
	if (l->zero_keep)
		json_object_set_new(o, "reshard_after_forward", json_false());
	json_object_set_new(o, "recompute", json_string(sl_recompute_name(l->recompute)));
	json_object_set_new(o, "attention", json_string(sl_attention_name(l->attention)));
	json_object_set_new(o, "mesh_order",
	                    json_string(sl_mesh_order_name(l->order, ord, sizeof ord)));
}
