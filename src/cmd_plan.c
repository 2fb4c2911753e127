/* SPDX-License-Identifier: MIT */
/* cmd_plan.c - `shardlab plan`: every valid layout of a model on a cluster,
 * ranked by step time, with the reasons the rejected ones do not fit and an
 * explanation of the winner. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "device.h"
#include "cliprogress.h"
#include "hwfile.h"
#include "plan.h"
#include "report.h"
#include "units.h"
#include "textwrap.h"

#define DEFAULT_TOP 20

struct pargs {
	sl_train_opts t; /* the model */
	int top;
	int no_sp, no_zero1; /* --no-sequence-parallel, --no-zero1 */
};

static void plan_help(void)
{
	printf("Usage: shardlab plan [--devices=N] [--devices-per-node=G]\n"
	       "                     [--preset=NAME|--hardware=FILE] [link options]\n"
	       "                     [--model=NAME|FILE] [--layers=L] [--hidden=H] [--ffn=F]\n"
	       "                     [--heads=A] [--seq=S] [--batch=B] [model options]\n"
	       "                     [--memory=SIZE] [--top=K] [--format=text|json|csv]\n\n"
	       "Enumerates every valid layout of the model on the devices (tp, pp, dp, micro-\n"
	       "batches, schedule and its chunks, sequence parallelism, ZeRO stage, mesh order),\n"
	       "times each one's training step with the timing-only engine's analytic twin\n"
	       "(the same step functions recorded and replayed, proven equal to a run),\n"
	       "rejects those that do not fit in device memory, and prints them ranked by step\n"
	       "time, with the best explained (the table times only the layouts that can rank\n"
	       "in its --top rows; JSON and CSV time them all).  Splits are even: dp divides\n"
	       "the batch and the micro-batch count each replica's share; the layers fall\n"
	       "evenly on the stages and, where they do not divide, also fewer on the first\n"
	       "and last (--stage-layers=ends).  Exit status: 0, 2 for a bad command line or\n"
	       "when no layout is valid or none fits.\n\n"
	       "Each layout option, unset by default, makes the plan keep to that value; a\n"
	       "model takes 16 bytes a parameter: bf16 weights and gradients with fp32 master\n"
	       "weights and Adam moments, or fp32 weights, gradients and moments;\n"
	       "--recompute is the least activation recomputation every layout uses (more is\n"
	       "turned on, selective then full, only for a layout that does not fit).\n\n");
	sl_opts_help(stdout, SL_CMD_PLAN, SL_KG_MODEL, 1);
	putchar('\n');
	sl_opts_help(stdout, SL_CMD_PLAN, SL_KG_LAYOUT, 1);
	sl_opts_help(stdout, SL_CMD_PLAN, SL_KG_PLAN, 0);
	putchar('\n');
	sl_cli_help_cluster(SL_CMD_PLAN);
	printf("  (plan: up to %d devices; JSON and CSV list every layout)\n", SL_MAX_PLAN_DEVICES);
}

static int own_option(void *ctx, int code, const char *arg, sl_err *err)
{
	struct pargs *a = ctx;
	if (code == SL_OPT_NO_SP || code == SL_OPT_NO_ZERO1) {
		*(code == SL_OPT_NO_SP ? &a->no_sp : &a->no_zero1) = 1;
		return SL_OK;
	}
	sl_knob_val v;
	if (code == SL_OPT_TOP) {
		int rc = sl_knob_parse(sl_knob_of(code), "--", arg, &v, err);
		a->top = (int)v.d;
		return rc;
	}
	return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
}

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What planning took: wall seconds, and CPU seconds of every thread. */
struct took {
	double wall, cpu;
};

static int nodes_of(const sl_cluster_config *cfg)
{
	return cfg->devices_per_node > 0 ? cfg->devices / cfg->devices_per_node : 1;
}

static const char *fb(double v, char *b, size_t n)
{
	return sl_fmt_bytes(v, b, n);
}

static void model_line(const sl_model_spec *m, char *buf, size_t n)
{
	int len = sl_model_describe(m, buf, n);
	if (len < 0 || (size_t)len >= n)
		return;
	snprintf(buf + len, n - (size_t)len, ", %d sequence%s of %d token%s a step", m->batch,
	         m->batch == 1 ? "" : "s", m->seq, m->seq == 1 ? "" : "s");
}

/* What the plan was kept to (--tp ... --no-zero1), as " of tp=8 pp=16,
 * without sequence parallelism or ZeRO-1", or "". */
static void constraints_text(const sl_plan_spec *s, char *buf, size_t n)
{
	size_t w = 0;
	const int v[] = {s->fix_tp, s->fix_pp, s->fix_dp, s->fix_microbatches};
	const char *k[] = {"tp", "pp", "dp", "microbatches"};
	buf[0] = 0;
	for (int i = 0; i < 4; i++)
		if (v[i] > 0 && w < n)
			w += (size_t)snprintf(buf + w, n - w, "%s%s=%d", w ? " " : " of ", k[i],
			                      v[i]);
	if (s->fix_schedule && w < n)
		w += (size_t)snprintf(buf + w, n - w, "%sschedule=%s", w ? " " : " of ",
		                      sl_sched_name(s->schedule));
	if (s->fix_chunks > 0 && w < n)
		w += (size_t)snprintf(buf + w, n - w, "%schunks=%d", w ? " " : " of ",
		                      s->fix_chunks);
	if (s->fix_stages && w < n) {
		char st[8 * SL_MAX_STAGE_LIST];
		w += (size_t)snprintf(buf + w, n - w, "%sstage-layers=%s", w ? " " : " of ",
		                      sl_stage_layers_name(&s->stages_of, st, sizeof st));
	}
	if (s->fix_zero && w < n)
		w += (size_t)snprintf(buf + w, n - w, "%szero=%d", w ? " " : " of ", s->zero);
	if (s->cp > 1 && w < n)
		w += (size_t)snprintf(buf + w, n - w, "%scp=%d", w ? " " : " of ", s->cp);
	if ((s->no_sp || s->no_zero1) && w < n)
		snprintf(buf + w, n - w, "%swithout %s", w ? ", " : " ",
		         s->no_sp && s->no_zero1 ? "sequence parallelism or ZeRO"
		         : s->no_sp              ? "sequence parallelism"
		                                 : "ZeRO");
}

/* "st", "nd", "rd" or "th" after k */
static const char *ordinal(int k)
{
	int t = k % 100, u = k % 10;
	return t >= 11 && t <= 13 ? "th" : u == 1 ? "st" : u == 2 ? "nd" : u == 3 ? "rd" : "th";
}

static void print_text(const sl_plan *p, const sl_opts *o, int top, struct took t)
{
	const sl_cluster_config *cfg = &p->spec.cluster;
	const sl_model_spec *m = &p->spec.model;
	char a[32], b[32], c[32], d[32], line[320];
	model_line(m, line, sizeof line);
	printf("shardlab plan: %s, on %d device%s\n", line, cfg->devices,
	       cfg->devices == 1 ? "" : "s");
	/* billions for a real model; a small one's count as it is */
	double np = (double)sl_model_total_params(m);
	char count[40];
	if (np >= 1e8)
		snprintf(count, sizeof count, "%.4g billion", np / 1e9);
	else
		snprintf(count, sizeof count, "%.0f", np);
	printf("  parameters  %s (%s of parameters, gradients and Adam state: %s)\n", count,
	       fb(16.0 * np, a, sizeof a),
	       cfg->precision == SL_PREC_BF16
	           ? "bf16 weights and gradients, fp32 master weights and moments"
	           : "fp32 weights, gradients and moments");
	printf("  hardware    %s %s per device, %s of memory (%s preset%s%s)\n",
	       sl_fmt_flops(cfg->flops, a, sizeof a), sl_precision_name(cfg->precision),
	       fb((double)cfg->memory, b, sizeof b), o->sc.preset, o->overrides[0] ? "; set: " : "",
	       o->overrides);
	printf("  efficiency  %s\n",
	       cfg->efficiency == SL_EFF_REALISTIC
	           ? "realistic: GEMMs at their shapes' achievable rates, element-wise work at "
	             "memory speed, a launch per kernel"
	           : "ideal: every GEMM at peak, element-wise work and launches free");
	if (m->heads > 0)
		printf("  attention   %s; %s\n",
		       p->spec.attention == SL_ATTN_FLASH
		           ? "flash: one fused kernel a pass, no s x s matrix kept"
		           : "materialized: every head's scores and probabilities in device memory",
		       m->mask == SL_MASK_FULL ? "no mask"
		       : p->spec.attention == SL_ATTN_FLASH
		           ? "causal, the tiles above the diagonal skipped"
		           : "causal, the whole s x s computed");
	printf("  links       %s, %s inside a node", sl_fmt_rate(cfg->intra.bandwidth, a, sizeof a),
	       sl_fmt_time(cfg->intra.latency, b, sizeof b));
	if (nodes_of(cfg) > 1)
		printf("; %s, %s between nodes", sl_fmt_rate(cfg->inter.bandwidth, c, sizeof c),
		       sl_fmt_time(cfg->inter.latency, d, sizeof d));
	printf("\n  nodes       %d of %d device%s\n", nodes_of(cfg),
	       cfg->devices_per_node > 0 ? cfg->devices_per_node : cfg->devices,
	       (cfg->devices_per_node > 0 ? cfg->devices_per_node : cfg->devices) == 1 ? "" : "s");
	char only[160];
	constraints_text(&p->spec, only, sizeof only);
	printf("  candidates  %d layouts%s: %d fit, %d do not fit in %s per device (%s to plan, "
	       "%s of CPU)\n",
	       p->n, only, p->nfit, p->n - p->nfit, fb((double)cfg->memory, a, sizeof a),
	       sl_fmt_time(t.wall, b, sizeof b), sl_fmt_time(t.cpu, c, sizeof c));
	if (p->nuntimed > 0)
		printf("  (%d that fit were not timed: their compute alone (the pipeline's fill "
		       "and drain included) takes longer than the %d%s fastest step timed; "
		       "--format=json times them all)\n",
		       p->nuntimed, top < 3 ? 3 : top, ordinal(top < 3 ? 3 : top));
	printf("\n");

	int shown = top > 0 && top < p->nfit ? top : p->nfit;
	int w = 6;
	for (int i = 0; i < shown; i++) {
		char name[96];
		int len = (int)strlen(sl_plan_layout_name(&p->rows[i].layout, name, sizeof name));
		w = len > w ? len : w;
	}
	printf("  %4s  %-*s %10s %8s %7s %5s %10s %6s %7s %6s %7s\n", "rank", w, "layout", "step",
	       "tokens/s", "TFLOP/s", "MFU", "peak mem", "comm", "exposed", "bubble", "across");
	for (int i = 0; i < shown; i++) {
		const sl_plan_row *r = &p->rows[i];
		char name[96], x[16], tk[16];
		printf("  %4d  %-*s %10s %8s %7.0f %4.0f%% %10s %5.1f%% %6.1f%% %5.1f%% %7s\n",
		       i + 1, w, sl_plan_layout_name(&r->layout, name, sizeof name),
		       sl_fmt_time(r->est.step_s, a, sizeof a),
		       sl_fmt_count(r->tokens_per_s, tk, sizeof tk), r->model_flops_per_dev / 1e12,
		       100 * r->mfu, fb((double)r->est.mem_peak_bytes, b, sizeof b),
		       100 * r->comm_share, 100 * r->exposed_share, 100 * r->est.bubble_fraction,
		       sl_plan_across(r, x, sizeof x));
	}
	if (shown < p->nfit)
		printf("  ... %d more that fit (--top=0 shows them all)\n", p->nfit - shown);
	printf(
	    "  (TFLOP/s: the model's FLOPs per device and second; MFU: that over the peak rate;\n"
	    "  comm: mean share of the step in communication; exposed: of it, what the compute\n"
	    "  waited for, not hidden beside it (--overlap); bubble: pipeline idle time over the\n"
	    "  ideal; across: groups whose traffic crosses nodes)\n");

	if (p->n > p->nfit) {
		int rej = p->n - p->nfit, show = rej < 5 ? rej : 5;
		printf("\n  Do not fit, closest first (%d of %d):\n", show, rej);
		for (int i = p->nfit; i < p->nfit + show; i++) {
			const sl_plan_row *r = &p->rows[i];
			char name[96], e[32], f[32];
			/* when the need rounds to the capacity, by how much it is over */
			char need[80], cap[32], over[32];
			fb((double)r->est.mem_peak_bytes, need, sizeof need);
			fb((double)cfg->memory, cap, sizeof cap);
			if (!strcmp(need, cap) && r->est.mem_peak_bytes > cfg->memory) {
				fb((double)(r->est.mem_peak_bytes - cfg->memory), over,
				   sizeof over);
				snprintf(need + strlen(need), sizeof need - strlen(need),
				         " (%s over)", over);
			}
			printf("    %s: needs %s on device %d: parameters %s, gradients %s, "
			       "optimizer %s, "
			       "activations %s, workspace %s\n",
			       sl_plan_layout_name(&r->layout, name, sizeof name), need,
			       r->est.peak_dev, fb((double)r->est.params_bytes, b, sizeof b),
			       fb((double)r->est.grads_bytes, c, sizeof c),
			       fb((double)r->est.optimizer_bytes, d, sizeof d),
			       fb((double)r->est.act_peak_bytes, e, sizeof e),
			       fb((double)r->est.workspace_peak_bytes, f, sizeof f));
		}
	}
	char expl[2048];
	sl_plan_explain(p, expl, sizeof expl);
	putchar('\n');
	sl_print_wrapped(stdout, expl, 0, "", 100);
}

static json_t *jlink(sl_link_spec s)
{
	return json_pack("{s:f, s:f}", "bandwidth_bytes_per_s", s.bandwidth, "latency_s",
	                 s.latency);
}

static json_t *jpath(const sl_plan_path *p)
{
	if (!p->used)
		return json_null();
	json_t *o = jlink(p->slowest);
	json_object_set_new(o, "crosses_nodes", json_boolean(p->inter));
	return o;
}

static json_t *jrow(const sl_plan_row *r, int rank, const sl_cluster_config *cfg)
{
	const sl_layout *l = &r->layout;
	json_t *o = json_object();
	json_object_set_new(o, "rank", rank > 0 ? json_integer(rank) : json_null());
	sl_report_layout_json(o, l);
	int real = cfg->efficiency == SL_EFF_REALISTIC;
	int on = l->overlap == SL_OVERLAP_ON || (l->overlap == SL_OVERLAP_AUTO && real);
	json_object_set_new(o, "overlap", json_string(on ? "on" : "off"));
	json_object_set_new(o, "bucket_bytes",
	                    json_real(l->bucket_bytes > 0 ? l->bucket_bytes : SL_BUCKET_DEFAULT));
	json_object_set_new(o, "fits", json_boolean(r->fits));
	json_object_set_new(o, "memory_peak_bytes",
	                    json_integer((json_int_t)r->est.mem_peak_bytes));
	json_object_set_new(o, "peak_device", json_integer(r->est.peak_dev));
	json_object_set_new(o, "memory_params_bytes",
	                    json_integer((json_int_t)r->est.params_bytes));
	json_object_set_new(o, "memory_grads_bytes", json_integer((json_int_t)r->est.grads_bytes));
	json_object_set_new(o, "memory_optimizer_bytes",
	                    json_integer((json_int_t)r->est.optimizer_bytes));
	json_object_set_new(o, "memory_activations_peak_bytes",
	                    json_integer((json_int_t)r->est.act_peak_bytes));
	json_object_set_new(o, "memory_workspace_peak_bytes",
	                    json_integer((json_int_t)r->est.workspace_peak_bytes));
	if (!r->fits) {
		char need[32], have[32], msg[128];
		snprintf(msg, sizeof msg, "needs %s on device %d, more than its %s",
		         sl_fmt_bytes((double)r->est.mem_peak_bytes, need, sizeof need),
		         r->est.peak_dev, sl_fmt_bytes((double)cfg->memory, have, sizeof have));
		json_object_set_new(o, "rejected", json_string(msg));
		return o;
	}
	json_object_set_new(o, "step_time_s", json_real(r->est.step_s));
	json_object_set_new(o, "tokens_per_s", json_real(r->tokens_per_s));
	json_object_set_new(o, "device_model_flop_per_s", json_real(r->model_flops_per_dev));
	json_object_set_new(o, "device_hardware_flop_per_s", json_real(r->hw_flops_per_dev));
	json_object_set_new(o, "mfu", json_real(r->mfu));
	json_object_set_new(o, "hfu", json_real(r->hfu));
	json_object_set_new(o, "comm_fraction", json_real(r->comm_share));
	json_object_set_new(o, "comm_exposed_fraction", json_real(r->exposed_share));
	json_object_set_new(o, "bubble_fraction", json_real(r->est.bubble_fraction));
	json_object_set_new(o, "idle_fraction", json_real(r->est.idle_fraction));
	json_object_set_new(o, "compute_s", json_real(r->est.compute_s));
	json_object_set_new(o, "comm_s", json_real(r->est.comm_s));
	json_t *tr = json_object();
	for (int k = 0; k < SL_TR_NKINDS; k++)
		if (r->est.sent[k])
			json_object_set_new(tr, sl_traffic_name((sl_traffic_kind)k),
			                    json_integer((json_int_t)r->est.sent[k]));
	json_object_set_new(o, "max_sent_bytes", tr);
	json_object_set_new(o, "tp_link", jpath(&r->tp));
	json_object_set_new(o, "pp_link", jpath(&r->pp));
	json_object_set_new(o, "dp_link", jpath(&r->dp));
	return o;
}

static json_t *plan_json(const sl_plan *p, const sl_opts *o, struct took t)
{
	const sl_cluster_config *cfg = &p->spec.cluster;
	const sl_model_spec *m = &p->spec.model;
	json_t *j = json_object();
	json_object_set_new(j, "model",
	                    json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I}", "layers", m->layers,
	                              "hidden", m->hidden, "ffn", m->ffn, "heads", m->heads, "seq",
	                              m->seq, "batch", m->batch, "parameters",
	                              (json_int_t)sl_model_total_params(m)));
	sl_model_json_kinds(json_object_get(j, "model"), m);
	json_t *c = json_object();
	json_object_set_new(c, "devices", json_integer(cfg->devices));
	json_object_set_new(
	    c, "devices_per_node",
	    json_integer(cfg->devices_per_node > 0 ? cfg->devices_per_node : cfg->devices));
	json_object_set_new(c, "nodes", json_integer(nodes_of(cfg)));
	json_object_set_new(c, "preset", json_string(o->sc.preset));
	json_object_set_new(c, "device_flop_per_s", json_real(cfg->flops));
	json_object_set_new(c, "precision", json_string(sl_precision_name(cfg->precision)));
	json_object_set_new(c, "efficiency", json_string(sl_efficiency_name(cfg->efficiency)));
	json_object_set_new(c, "memory_per_device_bytes", json_integer((json_int_t)cfg->memory));
	json_object_set_new(c, "intra", jlink(cfg->intra));
	json_object_set_new(c, "inter", jlink(cfg->inter));
	json_object_set_new(j, "cluster", c);
	json_object_set_new(j, "step_model_flop", json_real(p->model_flops));
	json_object_set_new(j, "candidates", json_integer(p->n));
	/* what the candidates were kept to: null where the plan tried every value */
	const sl_plan_spec *s = &p->spec;
	json_t *k = json_object();
	const int fv[] = {s->fix_tp, s->fix_pp, s->fix_dp, s->fix_microbatches};
	const char *fk[] = {"tp", "pp", "dp", "microbatches"};
	for (int i = 0; i < 4; i++)
		json_object_set_new(k, fk[i], fv[i] > 0 ? json_integer(fv[i]) : json_null());
	json_object_set_new(k, "sequence_parallel", s->no_sp ? json_false() : json_null());
	json_object_set_new(
	    k, "schedule", s->fix_schedule ? json_string(sl_sched_name(s->schedule)) : json_null());
	json_object_set_new(k, "chunks",
	                    s->fix_chunks > 0 ? json_integer(s->fix_chunks) : json_null());
	json_object_set_new(k, "zero1", s->no_zero1 ? json_false() : json_null());
	json_object_set_new(k, "zero", s->fix_zero ? json_integer(s->zero) : json_null());
	if (s->fix_stages) { /* only when given, so that other plans' objects stay as they were */
		char st[8 * SL_MAX_STAGE_LIST];
		json_object_set_new(
		    k, "stage_layers",
		    json_string(sl_stage_layers_name(&s->stages_of, st, sizeof st)));
	}
	json_object_set_new(j, "constraints", k);
	json_object_set_new(j, "fit", json_integer(p->nfit));
	json_object_set_new(j, "wall_s", json_real(t.wall));
	json_object_set_new(j, "cpu_s", json_real(t.cpu));
	char expl[2048];
	sl_plan_explain(p, expl, sizeof expl);
	json_object_set_new(j, "explanation", json_string(expl));
	json_t *rows = json_array();
	for (int i = 0; i < p->n; i++)
		json_array_append_new(rows, jrow(&p->rows[i], p->rows[i].fits ? i + 1 : 0, cfg));
	json_object_set_new(j, "layouts", rows);
	json_object_set_new(j, "best", p->nfit ? jrow(&p->rows[0], 1, cfg) : json_null());
	return j;
}

/* plan --format=csv: every row, as the JSON report lists them, with its
 * names; a layout that does not fit has its timing cells empty. */
static void plan_csv(const sl_plan *p)
{
	printf("rank,tp,pp,dp,schedule,chunks,microbatches,sequence_parallel,zero1,recompute,"
	       "attention,mesh_order,fits,memory_peak_bytes,step_time_s,tokens_per_s,device_model_"
	       "flop_per_s,"
	       "comm_fraction,bubble_fraction,idle_fraction,tp_crosses_nodes,pp_crosses_nodes,"
	       "dp_crosses_nodes,zero,comm_exposed_fraction,stage_layers,cp,cp_comm,overlap,"
	       "bucket_bytes\n");
	for (int i = 0; i < p->n; i++) {
		const sl_plan_row *r = &p->rows[i];
		const sl_layout *l = &r->layout;
		char ord[16];
		if (r->fits)
			printf("%d,", i + 1);
		else
			printf(",");
		printf("%d,%d,%d,%s,%d,%d,%s,%s,%s,%s,%s,%s,%llu,", l->tp, l->pp, l->dp,
		       sl_sched_name(l->schedule), l->chunks, l->microbatches,
		       l->seq_parallel ? "true" : "false", l->zero >= 1 ? "true" : "false",
		       sl_recompute_name(l->recompute), sl_attention_name(l->attention),
		       sl_mesh_order_name(l->order, ord, sizeof ord), r->fits ? "true" : "false",
		       (unsigned long long)r->est.mem_peak_bytes);
		/* JSON's tp_link, pp_link, dp_link .crosses_nodes: empty when the
		 * group has one device */
		const sl_plan_path *path[3] = {&r->tp, &r->pp, &r->dp};
		const char *cross[3];
		for (int k = 0; k < 3; k++)
			cross[k] = !path[k]->used ? "" : path[k]->inter ? "true" : "false";
		if (r->fits)
			printf("%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s,%s,%s,%d,%.9g,", r->est.step_s,
			       r->tokens_per_s, r->model_flops_per_dev, r->comm_share,
			       r->est.bubble_fraction, r->est.idle_fraction, cross[0], cross[1],
			       cross[2], l->zero, r->exposed_share);
		else
			printf(",,,,,,,,,%d,,", l->zero);
		/* even, ends, or a list, quoted (its commas) */
		char st[8 * SL_MAX_STAGE_LIST];
		sl_stage_layers_name(l, st, sizeof st);
		printf(l->stages == SL_STAGES_LIST ? "\"%s\"," : "%s,", st);
		int on =
		    l->overlap == SL_OVERLAP_ON || (l->overlap == SL_OVERLAP_AUTO &&
		                                    p->spec.cluster.efficiency == SL_EFF_REALISTIC);
		printf("%d,%s,%s,%.0f\n", l->cp, sl_cp_comm_name(l->cp_comm), on ? "on" : "off",
		       l->bucket_bytes > 0 ? l->bucket_bytes : SL_BUCKET_DEFAULT);
	}
}

int sl_cmd_plan(int argc, char **argv)
{
	sl_opts o;
	struct pargs a;
	memset(&a, 0, sizeof a);
	sl_train_opts_init(&a.t, &o, 1);
	/* A plan runs nothing: its cluster may be as large as a timing-only one. */
	o.sc.cluster.timing_only = 1;
	a.top = DEFAULT_TOP;
	o.csv_ok = 1;
	o.max_devices = SL_MAX_PLAN_DEVICES;
	/* Unset: any degree; set, the plan keeps to it. */
	a.t.l.tp = a.t.l.pp = a.t.l.dp = 0;
	int rc = sl_cli_parse("plan", SL_CMD_PLAN, argc, argv, &o, own_option, &a, plan_help);
	if (rc != SL_CLI_GO)
		return rc;
	sl_train_opts_model_finish(&a.t);
	sl_model_spec *m = &a.t.m;
	sl_plan_spec spec = {.model = *m,
	                     .cluster = o.sc.cluster,
	                     .min_recompute = a.t.l.recompute,
	                     .attention = a.t.l.attention,
	                     .fix_tp = a.t.l.tp,
	                     .fix_pp = a.t.l.pp,
	                     .fix_dp = a.t.l.dp,
	                     .fix_microbatches = a.t.given_m ? a.t.l.microbatches : 0,
	                     .fix_schedule = a.t.given_sched,
	                     .schedule = a.t.l.schedule,
	                     .fix_chunks = a.t.given_v ? a.t.l.chunks : 0,
	                     .fix_stages = sl_opts_given(&o, SL_OPT_STAGE_LAYERS),
	                     .stages_of = a.t.l,
	                     .no_sp = a.no_sp,
	                     .no_zero1 = a.no_zero1,
	                     .fix_zero = a.t.given_zero,
	                     .zero = a.t.l.zero,
	                     .cp = a.t.l.cp,
	                     .cp_comm = a.t.l.cp_comm,
	                     .zero_keep = a.t.l.zero_keep,
	                     .overlap = a.t.l.overlap,
	                     .bucket_bytes = a.t.l.bucket_bytes,
	                     .fix_bucket = sl_opts_given(&o, SL_OPT_BUCKET),
	                     /* the table shows the first top rows; JSON and
	                      * CSV list every row, timed */
	                     .exact_top = o.format == SL_FORMAT_TEXT ? a.top : 0};
	sl_plan plan;
	sl_err err = {0};
	struct took t = {clock_s(CLOCK_MONOTONIC), clock_s(CLOCK_PROCESS_CPUTIME_ID)};
	atomic_int done = 0, total = 0;
	spec.done = &done;
	spec.total = &total;
	sl_cliprog *prog = sl_cliprog_start("plan", "layout shapes timed", 0);
	sl_cliprog_watch(prog, &done, &total);
	rc = sl_plan_run(&spec, &plan, &err);
	sl_cliprog_stop(prog);
	t.wall = clock_s(CLOCK_MONOTONIC) - t.wall;
	t.cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - t.cpu;
	if (rc) {
		sl_plan_free(&plan);
		return sl_cli_fail("plan", &err);
	}
	int status = SL_EXIT_OK;
	if (o.format == SL_FORMAT_JSON) {
		json_t *j = plan_json(&plan, &o, t);
		if (sl_report_json_print(stdout, j))
			status = SL_EXIT_FAIL;
	} else if (o.format == SL_FORMAT_CSV) {
		plan_csv(&plan);
	} else {
		print_text(&plan, &o, a.top, t);
	}
	sl_plan_free(&plan);
	return sl_cli_flush(status);
}
