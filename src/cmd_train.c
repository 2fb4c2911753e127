/* SPDX-License-Identifier: MIT */
/* cmd_train.c - `shardlab train` (the model trained under one layout, with
 * its accounting) and `shardlab compare` (the same model under several
 * layouts, one table). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckpt.h"
#include "cli.h"
#include "cliprogress.h"
#include "hwfile.h"
#include "report.h"
#include "train.h"
#include "units.h"
#include "textwrap.h"

/* compare's --layouts. */
static int own_option(void *ctx, int code, const char *arg, sl_err *err)
{
	sl_train_opts *a = ctx;
	if (code == SL_OPT_LAYOUTS) {
		a->layouts = arg;
		return SL_OK;
	}
	return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
}

/* train's checkpoint, trace and report options. */
struct train_args {
	sl_train_opts *t;
	const char *save, *load;
	int save_every;
	int per_device;       /* every device's row, however many */
	sl_record_filter rec; /* --trace-steps, --trace-devices */
};

/* "A" or "A-B": whole numbers from lo to hi, the first no more than the
 * last. */
static int parse_range(const char *arg, long lo, long hi, const char *what, int out[2],
		       sl_err *err)
{
	char *end;
	long a = strtol(arg, &end, 10), b = a;
	if (end != arg && *end == '-' && end[1])
		b = strtol(end + 1, &end, 10);
	if (!*arg || *end || a < lo || b > hi || a > b)
		return sl_fail(err, SL_EINVAL, "%s '%s': not N or N-M, whole numbers from %ld to %ld, "
			       "the first no more than the last", what, arg, lo, hi);
	out[0] = (int)a;
	out[1] = (int)b;
	return SL_OK;
}

/* --trace-devices=LIST: ranges "A" or "A-B" separated by commas. */
static int parse_devices(const char *arg, sl_record_filter *f, sl_err *err)
{
	char buf[256];
	if (strlen(arg) >= sizeof buf)
		return sl_fail(err, SL_EINVAL, "--trace-devices: too long");
	snprintf(buf, sizeof buf, "%s", arg);
	f->nranges = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (f->nranges == SL_RECORD_RANGES)
			return sl_fail(err, SL_EINVAL, "--trace-devices '%s': at most %d ranges", arg,
				       SL_RECORD_RANGES);
		if (parse_range(tok, 0, SL_MAX_DEVICES - 1, "--trace-devices", f->ranges[f->nranges],
				err))
			return SL_EINVAL;
		f->nranges++;
	}
	if (!f->nranges)
		return sl_fail(err, SL_EINVAL, "--trace-devices: empty list");
	return SL_OK;
}

static int train_option(void *ctx, int code, const char *arg, sl_err *err)
{
	struct train_args *a = ctx;
	sl_knob_val v;
	const sl_knob *k = sl_knob_of(code);
	if (k && sl_knob_parse(k, "--", arg, &v, err))
		return SL_EINVAL;
	switch (code) {
	case SL_OPT_SAVE:
	case SL_OPT_LOAD:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--%s: empty directory name",
			               code == SL_OPT_SAVE ? "save" : "load");
		*(code == SL_OPT_SAVE ? &a->save : &a->load) = arg;
		return SL_OK;
	case SL_OPT_SAVE_EVERY:
		a->save_every = (int)v.d;
		return SL_OK;
	case SL_OPT_PER_DEVICE:
		a->per_device = 1;
		return SL_OK;
	case SL_OPT_TRACE_STEPS: {
		int r[2];
		if (parse_range(arg, 1, 1000000, "--trace-steps", r, err))
			return SL_EINVAL;
		a->rec.step_lo = r[0];
		a->rec.step_hi = r[1];
		return SL_OK;
	}
	case SL_OPT_TRACE_DEVICES:
		return parse_devices(arg, &a->rec, err);
	default:
		return own_option(a->t, code, arg, err);
	}
}

/* ---- running one layout ---- */

struct outcome {
	sl_layout l;
	char name[48];
	sl_cluster *c;
	sl_train_report rep;
	sl_train_prediction pred;
	double single_s;
	int single_est;
	double wall_s;
	double max_rel; /* losses against the reference */
	sl_train_step_fn on_step; /* set by the caller: each step as it ends */
	void *on_step_arg;
};

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The cluster of the run: the scenario's hardware, as many devices as the
 * layout uses, in nodes of the scenario's size. */
static int layout_cluster(const sl_cluster_config *base, int n, sl_cluster **out, sl_err *err)
{
	sl_cluster_config cfg;
	if (sl_train_cluster_config(base, n, &cfg, err))
		return err->code;
	*out = sl_cluster_create(&cfg, err);
	return *out ? SL_OK : err->code;
}

/* train's checkpoints: load before the steps, save after (and every N). */
struct ckpt_io {
	const sl_ckpt *load;
	const char *save;
	int every;
};

static int run_layout(const sl_cluster_config *base, const sl_model_spec *m, const sl_layout *l,
                      int steps, const double *ref, const struct ckpt_io *io, struct outcome *r,
                      sl_err *err)
{
	int n = l->tp * l->pp * l->dp;
	r->l = *l;
	int rc = layout_cluster(base, n, &r->c, err);
	if (rc)
		return rc;
	/* A timing-only run holds no values: a model of any size. */
	sl_train *tr = sl_cluster_config_of(r->c)->timing_only
	                   ? sl_train_create_timing_only(m, l, n, err)
	                   : sl_train_create(m, l, n, err);
	if (!tr)
		return err->code;
	if (r->on_step)
		sl_train_on_step(tr, r->on_step, r->on_step_arg);
	double w0 = wall_now();
	if (io && io->load)
		rc = sl_ckpt_load(tr, r->c, io->load, NULL, err);
	if (rc == SL_OK && io && io->save)
		rc = sl_ckpt_train_run(tr, r->c, steps, io->save, io->every, NULL, &r->rep, err);
	else if (rc == SL_OK)
		rc = sl_train_run(tr, r->c, steps, &r->rep, err);
	r->wall_s = wall_now() - w0;
	if (rc == SL_OK)
		rc = sl_train_predict(tr, r->c, &r->pred, err);
	if (rc == SL_OK)
		rc = sl_train_single_step_s(m, sl_train_layout(tr), sl_cluster_config_of(r->c),
					    &r->single_s, &r->single_est, err);
	sl_train_destroy(tr);
	if (rc == SL_OK && ref)
		for (int s = 0; s < steps; s++) {
			double d = fabs(r->rep.losses[s] - ref[s]) / fabs(ref[s]);
			if (!(d <= r->max_rel))
				r->max_rel = d;
		}
	return rc;
}

static void outcome_free(struct outcome *r)
{
	sl_train_report_free(&r->rep);
	sl_cluster_destroy(r->c);
	r->c = NULL;
}

#define LOSS_TOLERANCE 1e-5

/* One device's losses over the steps: from step 0, or resumed from ck. */
static int reference(const char *cmd, const sl_model_spec *m, const sl_ckpt *ck, int steps,
                     double *out)
{
	sl_ref r;
	sl_err err = {0};
	if (!ck && sl_ref_init(&r, m, &err))
		return sl_cli_fail(cmd, &err);
	/* A damaged checkpoint is the run's failure (1), as when loading it. */
	if (ck && sl_ckpt_ref_init(&r, ck, m, &err)) {
		sl_cli_error("%s: %s", cmd, err.msg);
		return SL_EXIT_FAIL;
	}
	for (int s = 0; s < steps; s++)
		if (sl_ref_step(&r, &out[s], &err)) {
			sl_ref_free(&r);
			return sl_cli_fail(cmd, &err);
		}
	sl_ref_free(&r);
	return SL_EXIT_OK;
}

/* ---- reports ---- */

static const char *fmt_t(double s, char *b)
{
	return sl_fmt_time(s, b, 32);
}

static const char *fmt_b(double v, char *b)
{
	return sl_fmt_bytes(v, b, 32);
}

static uint64_t dev_sent(const sl_train_dev *d)
{
	uint64_t s = 0;
	for (int k = 0; k < SL_TR_NKINDS; k++)
		s += d->sent[k];
	return s;
}

/* The largest peak memory and bytes sent of any device in a step. */
static void dev_peaks(const sl_train_report *p, uint64_t *mem, uint64_t *sent)
{
	*mem = *sent = 0;
	for (int d = 0; d < p->ndev; d++) {
		if (p->dev[d].mem_peak_bytes > *mem)
			*mem = p->dev[d].mem_peak_bytes;
		if (dev_sent(&p->dev[d]) > *sent)
			*sent = dev_sent(&p->dev[d]);
	}
}

/* The header's note of how the attention core runs (none without it). */
static const char *attention_words(const sl_model_spec *m, const sl_layout *l)
{
	if (m->heads == 0)
		return "";
	return l->attention == SL_ATTN_FLASH ? "; fused (flash) attention" : "; materialized attention";
}

static void layout_words(const sl_layout *l, char *buf, size_t n)
{
	char ord[16];
	int len = snprintf(buf, n, "tp=%d pp=%d dp=%d", l->tp, l->pp, l->dp);
	if (l->pp > 1)
		len += snprintf(buf + len, n - (size_t)len, ", %s", sl_sched_name(l->schedule));
	if (l->chunks > 1)
		len += snprintf(buf + len, n - (size_t)len, " with %d chunks", l->chunks);
	len += snprintf(buf + len, n - (size_t)len, ", %d micro-batch%s", l->microbatches,
			l->microbatches == 1 ? "" : "es");
	if (l->seq_parallel)
		len += snprintf(buf + len, n - (size_t)len, ", sequence parallel");
	if (l->zero1)
		len += snprintf(buf + len, n - (size_t)len, ", ZeRO-1");
	snprintf(buf + len, n - (size_t)len, ", mesh %s",
		 sl_mesh_order_name(l->order, ord, sizeof ord));
}

static void model_words(const sl_model_spec *m, char *buf, size_t n)
{
	int len = sl_model_describe(m, buf, n);
	if (len < 0 || (size_t)len >= n)
		return;
	snprintf(buf + len, n - (size_t)len, "; %zu parameters", sl_model_total_params(m));
}

static void data_words(const sl_model_spec *m, char *buf, size_t n)
{
	snprintf(buf, n, "%d sequence%s of %d token%s per step, seed %llu; Adam lr %g", m->batch,
		 m->batch == 1 ? "" : "s", m->seq, m->seq == 1 ? "" : "s",
		 (unsigned long long)m->seed, (double)m->lr);
}

/* The report's head: what runs, and the step table's names (or what a dry
 * run has instead), printed before the first step ends. */
/* Throughput as plan gives it and Megatron-LM's logs show it: the
 * batch's tokens over the step, the model's FLOPs (sl_model_step_flops:
 * forward and backward, what MFU counts) and every FLOP the run did
 * (recomputation included: HFU) per device and second, over the peak. */
struct rates {
	double tokens_s, dev_tokens_s, dev_model, dev_hw, mfu, hfu;
};

static struct rates rates_of(const struct outcome *r, const sl_model_spec *m)
{
	struct rates x = {0};
	const sl_train_report *p = &r->rep;
	double peak = sl_cluster_config_of(r->c)->flops;
	if (!(p->step_s > 0) || p->ndev < 1)
		return x;
	x.tokens_s = (double)m->batch * m->seq / p->step_s;
	x.dev_tokens_s = x.tokens_s / p->ndev;
	x.dev_model = sl_model_step_flops(m) / p->step_s / p->ndev;
	x.dev_hw = p->flops_per_step / p->step_s / p->ndev;
	x.mfu = x.dev_model / peak;
	x.hfu = x.dev_hw / peak;
	return x;
}

static void train_text_head(FILE *f, const sl_opts *o, const sl_model_spec *m, const double *ref,
			    const struct outcome *r)
{
	const sl_cluster_config *cfg = sl_cluster_config_of(r->c);
	char words[320];
	layout_words(&r->l, words, sizeof words);
	fprintf(f, "# shardlab train: %s\n", words);
	model_words(m, words, sizeof words);
	fprintf(f, "# model: %s%s\n", words, attention_words(m, &r->l));
	data_words(m, words, sizeof words);
	fprintf(f, "# data: %s\n", words);
	sl_report_hardware_text(f, "# ", cfg, o->sc.preset, o->overrides);
	if (ref)
		fprintf(f, "\n%6s %14s %14s %11s\n", "step", "loss", "reference", "rel. diff");
	else
		fprintf(f, "\ndry run: timing only, no arithmetic: no losses; memory counted, not held\n");
}

static int step_row(char *b, size_t n, long step, double loss, double ref)
{
	return snprintf(b, n, "%6ld %14.9f %14.9f %11.2e\n", step + 1, loss, ref,
			fabs(loss - ref) / fabs(ref));
}

/* Rows of identical figures (all but the device's number and mesh
 * coordinates) fold into one beyond this many devices, unless
 * --per-device. */
#define FOLD_DEVICES 32

/* Print the rows figs[i] (the figures after the device's columns),
 * folding runs of equal figures into one ("  8-15" in the device column;
 * a mesh coordinate the run's devices do not share shows as '*').  co:
 * each device's (tp, pp, dp) ranks, or NULL for no such columns. */
static void print_rows(FILE *f, int n, char (*figs)[256], const int (*co)[3], int fold)
{
	for (int i = 0; i < n;) {
		int j = i + 1;
		while (fold && j < n && strcmp(figs[j], figs[i]) == 0)
			j++;
		char dev[32], c[3][16];
		if (j - i > 1)
			snprintf(dev, sizeof dev, "%d-%d", i, j - 1);
		else
			snprintf(dev, sizeof dev, "%d", i);
		fprintf(f, "%6s", dev);
		for (int x = 0; co && x < 3; x++) {
			int same = 1;
			for (int k = i + 1; k < j; k++)
				same &= co[k][x] == co[i][x];
			if (same)
				snprintf(c[x], sizeof c[x], "%d", co[i][x]);
			else
				snprintf(c[x], sizeof c[x], "*");
			fprintf(f, " %3s", c[x]);
		}
		fprintf(f, "%s\n", figs[i]);
		i = j;
	}
}

static void train_text(FILE *f, const sl_opts *o, const sl_model_spec *m, int steps,
		       const double *ref, const struct outcome *r, int head_done, int per_device)
{
	const sl_train_report *p = &r->rep;
	char a[32], b[32], c[32];
	if (!head_done) {
		train_text_head(f, o, m, ref, r);
		for (int s = 0; ref && s < steps; s++) {
			char row[128];
			step_row(row, sizeof row, p->first_step + s, p->losses[s], ref[s]);
			fputs(row, f);
		}
	}
	double speedup = p->step_s > 0 ? r->single_s / p->step_s : 0;
	fprintf(f, "\nstep time    %s emulated, %s predicted\n", fmt_t(p->step_s, a),
		fmt_t(r->pred.step_s, b));
	fprintf(f, "speedup      %.3g over one device (%s%s), efficiency %.1f%%\n", speedup,
		fmt_t(r->single_s, c), r->single_est ? ", estimated: the model does not fit one" : "",
		100 * speedup / p->ndev);
	struct rates x = rates_of(r, m);
	char tk[32], dtk[32];
	fprintf(f, "throughput   %s tokens/s, %s per device\n", sl_fmt_count(x.tokens_s, tk, sizeof tk),
		sl_fmt_count(x.dev_tokens_s, dtk, sizeof dtk));
	fprintf(f, "FLOP rate    %.4g TFLOP/s of the model per device: MFU %.1f%% (HFU %.1f%%)\n",
		x.dev_model / 1e12, 100 * x.mfu, 100 * x.hfu);
	fprintf(f, "bubble       %.4f of the ideal time (%.4f predicted)\n", p->bubble_fraction,
		r->pred.bubble_fraction);
	fprintf(f, "idle         %.1f%% of all devices' time\n", 100 * p->idle_fraction);
	if (ref)
		fprintf(f, "check        losses equal one device's to %.2g (tolerance %g): %s\n",
			r->max_rel, LOSS_TOLERANCE, r->max_rel <= LOSS_TOLERANCE ? "pass" : "FAIL");
	else
		fprintf(f, "check        none: a timing-only run computes no loss\n");
	fprintf(f, "wall         %.2f s\n\n", r->wall_s);

	int fold = !per_device && p->ndev > FOLD_DEVICES;
	char(*figs)[256] = calloc((size_t)p->ndev, sizeof *figs);
	int(*coords)[3] = calloc((size_t)p->ndev, sizeof *coords);
	if (!figs || !coords) {
		free(figs);
		free(coords);
		fprintf(f, "(out of host memory for the per-device table)\n");
		return;
	}
	fprintf(f, "%6s %3s %3s %3s %10s %10s %10s %10s %10s %10s %10s %10s\n", "device", "tp", "pp",
		"dp", "compute", "comm", "idle", "params", "grads", "optimizer", "act. peak", "mem peak");
	for (int i = 0; i < p->ndev; i++) {
		const sl_train_dev *d = &p->dev[i];
		char t1[32], t2[32], t3[32], m1[32], m2[32], m3[32], m4[32], m5[32];
		coords[i][0] = d->tp;
		coords[i][1] = d->pp;
		coords[i][2] = d->dp;
		snprintf(figs[i], sizeof figs[i], " %10s %10s %10s %10s %10s %10s %10s %10s",
			 fmt_t(d->compute_s, t1), fmt_t(d->comm_s, t2), fmt_t(d->idle_s, t3),
			 fmt_b((double)d->params_bytes, m1), fmt_b((double)d->grads_bytes, m2),
			 fmt_b((double)d->optimizer_bytes, m3), fmt_b((double)d->act_peak_bytes, m4),
			 fmt_b((double)d->mem_peak_bytes, m5));
	}
	print_rows(f, p->ndev, figs, (const int(*)[3])coords, fold);
	int used[SL_TR_NKINDS], nused = 0;
	for (int k = 0; k < SL_TR_NKINDS; k++) {
		uint64_t t = 0;
		for (int i = 0; i < p->ndev; i++)
			t += p->dev[i].sent[k];
		if (t)
			used[nused++] = k;
	}
	if (nused > 0) {
		fprintf(f, "\nbytes sent per step\n%6s", "device");
		for (int k = 0; k < nused; k++)
			fprintf(f, " %16s", sl_traffic_name((sl_traffic_kind)used[k]));
		fputc('\n', f);
		for (int i = 0; i < p->ndev; i++) {
			int len = 0;
			for (int k = 0; k < nused && len < (int)sizeof figs[i]; k++)
				len += snprintf(figs[i] + len, sizeof figs[i] - (size_t)len, " %16s",
						fmt_b((double)p->dev[i].sent[used[k]], a));
		}
		print_rows(f, p->ndev, figs, NULL, fold);
	}
	if (fold)
		fprintf(f, "\n(devices with the same figures share a row: --per-device lists each)\n");
	free(figs);
	free(coords);
}

static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *traffic_json(const uint64_t *sent, const uint64_t *recv)
{
	json_t *t = json_object();
	for (int k = 0; k < SL_TR_NKINDS; k++)
		json_object_set_new(t, sl_traffic_name((sl_traffic_kind)k),
				    json_pack("{s:I, s:I}", "sent_bytes", (json_int_t)sent[k],
					      "received_bytes", (json_int_t)recv[k]));
	return t;
}

static void model_json(json_t *o, const sl_model_spec *m)
{
	json_object_set_new(o, "model",
			    json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:f, s:I}", "layers",
				      m->layers, "hidden", m->hidden, "ffn", m->ffn, "heads", m->heads,
				      "seq", m->seq, "batch", m->batch, "seed", (json_int_t)m->seed,
				      "lr", (double)m->lr, "parameters",
				      (json_int_t)sl_model_total_params(m)));
	sl_model_json_kinds(json_object_get(o, "model"), m);
}

static json_t *losses_json(const double *v, int n)
{
	json_t *a = json_array();
	for (int s = 0; s < n; s++)
		json_array_append_new(a, jreal(v[s]));
	return a;
}

/* The figures of one layout's run, shared by train's and compare's JSON. */
static void outcome_json(json_t *o, const struct outcome *r, const sl_model_spec *m, int steps)
{
	const sl_train_report *p = &r->rep;
	double speedup = p->step_s > 0 ? r->single_s / p->step_s : 0;
	sl_report_layout_json(o, &r->l);
	json_object_set_new(o, "devices", json_integer(p->ndev));
	json_object_set_new(o, "steps", json_integer(steps));
	json_object_set_new(o, "first_step", json_integer(p->first_step));
	json_object_set_new(o, "losses", losses_json(p->losses, steps));
	int dry = sl_cluster_config_of(r->c)->timing_only;
	json_object_set_new(o, "max_loss_rel_diff", dry ? json_null() : jreal(r->max_rel));
	json_object_set_new(o, "check", json_string(dry			      ? "none"
						    : r->max_rel <= LOSS_TOLERANCE ? "pass"
										   : "fail"));
	json_object_set_new(o, "step_time_s", jreal(p->step_s));
	json_object_set_new(o, "predicted_step_s", jreal(r->pred.step_s));
	json_object_set_new(o, "single_device_step_s", jreal(r->single_s));
	json_object_set_new(o, "single_device_estimated", json_boolean(r->single_est));
	json_object_set_new(o, "speedup", jreal(speedup));
	json_object_set_new(o, "efficiency", jreal(speedup / p->ndev));
	json_object_set_new(o, "pipeline_s", jreal(p->pipeline_s));
	json_object_set_new(o, "ideal_s", jreal(p->ideal_s));
	json_object_set_new(o, "bubble_fraction", jreal(p->bubble_fraction));
	json_object_set_new(o, "predicted_bubble_fraction", jreal(r->pred.bubble_fraction));
	json_object_set_new(o, "idle_fraction", jreal(p->idle_fraction));
	json_object_set_new(o, "step_flop", jreal(p->flops_per_step));
	struct rates x = rates_of(r, m);
	json_object_set_new(o, "tokens_per_s", jreal(x.tokens_s));
	json_object_set_new(o, "device_tokens_per_s", jreal(x.dev_tokens_s));
	json_object_set_new(o, "device_model_flop_per_s", jreal(x.dev_model));
	json_object_set_new(o, "device_hardware_flop_per_s", jreal(x.dev_hw));
	json_object_set_new(o, "mfu", jreal(x.mfu));
	json_object_set_new(o, "hfu", jreal(x.hfu));
	json_object_set_new(o, "wall_s", jreal(r->wall_s));
	uint64_t sent[SL_TR_NKINDS] = {0}, recv[SL_TR_NKINDS] = {0};
	const sl_cluster_config *cfg = sl_cluster_config_of(r->c);
	json_t *devs = json_array();
	for (int i = 0; i < p->ndev; i++) {
		const sl_train_dev *d = &p->dev[i];
		for (int k = 0; k < SL_TR_NKINDS; k++) {
			sent[k] += d->sent[k];
			recv[k] += d->received[k];
		}
		json_t *j = json_object();
		json_object_set_new(j, "id", json_integer(i));
		json_object_set_new(j, "node", json_integer(cfg->devices_per_node > 0
								 ? i / cfg->devices_per_node
								 : 0));
		json_object_set_new(j, "tp", json_integer(d->tp));
		json_object_set_new(j, "pp", json_integer(d->pp));
		json_object_set_new(j, "dp", json_integer(d->dp));
		json_object_set_new(j, "compute_s", jreal(d->compute_s));
		json_object_set_new(j, "comm_s", jreal(d->comm_s));
		json_object_set_new(j, "idle_s", jreal(d->idle_s));
		json_object_set_new(j, "predicted_compute_s", jreal(r->pred.compute_s[i]));
		json_object_set_new(j, "predicted_comm_s", jreal(r->pred.comm_s[i]));
		json_object_set_new(j, "flop", jreal(d->flops));
		json_object_set_new(j, "memory_params_bytes", json_integer((json_int_t)d->params_bytes));
		json_object_set_new(j, "memory_grads_bytes", json_integer((json_int_t)d->grads_bytes));
		json_object_set_new(j, "memory_optimizer_bytes",
				    json_integer((json_int_t)d->optimizer_bytes));
		json_object_set_new(j, "memory_activations_peak_bytes",
				    json_integer((json_int_t)d->act_peak_bytes));
		json_object_set_new(j, "memory_workspace_peak_bytes",
				    json_integer((json_int_t)d->workspace_peak_bytes));
		json_object_set_new(j, "memory_peak_bytes", json_integer((json_int_t)d->mem_peak_bytes));
		json_object_set_new(j, "memory_capacity_bytes", json_integer((json_int_t)cfg->memory));
		json_object_set_new(j, "traffic", traffic_json(d->sent, d->received));
		json_array_append_new(devs, j);
	}
	json_object_set_new(o, "traffic", traffic_json(sent, recv));
	json_object_set_new(o, "per_device", devs);
}

/* ---- train ---- */

static void train_help(void)
{
	printf("Usage: shardlab train [--tp=T] [--pp=P] [--dp=D] [--schedule=S] [--chunks=V]\n"
	       "                      [--microbatches=M] [--sequence-parallel] [--zero1]\n"
	       "                      [--layers=L --hidden=H --ffn=F --heads=A --seq=S]\n"
	       "                      [--batch=B] [--steps=N] [OPTION...]\n\n"
	       "Trains a small transformer-style model (fp32, MSE loss, Adam) for N steps on\n"
	       "tp*pp*dp emulated devices: tensor parallel in Megatron style, a pipeline of\n"
	       "stages with micro-batches, data-parallel replicas, or their combination.\n"
	       "Reports each step's loss next to one device's, the emulated step time and the\n"
	       "analytic prediction, speedup over one device, the pipeline bubble, and per\n"
	       "device its compute, communication and idle time, memory by category and\n"
	       "bytes sent per collective kind.  Exit status: 0, 1 if the run failed (a\n"
	       "device out of memory) or a loss differs from one device's, 2 for a bad\n"
	       "command line or layout.  With --dry-run the same schedule and timeline run\n"
	       "without values (no losses, memory counted): real models on up to 1024\n"
	       "devices.\n\n");
	sl_opts_help(stdout, SL_CMD_TRAIN, SL_KG_LAYOUT, 1);
	putchar('\n');
	sl_opts_help(stdout, SL_CMD_TRAIN, SL_KG_MODEL, 1);
	sl_opts_help(stdout, SL_CMD_TRAIN, SL_KG_WORKLOAD, 0); /* --seed */
	putchar('\n');
	sl_opts_help(stdout, SL_CMD_TRAIN, SL_KG_CKPT, 1);
	printf("  (with --save, --trace holds the final save: which device wrote which chunk)\n\n");
	sl_opts_help(stdout, SL_CMD_TRAIN, SL_KG_TRACE, 1);
	putchar('\n');
	sl_opts_help(stdout, SL_CMD_TRAIN, SL_KG_REPORT, 1);
	printf("  (each step's row is printed as the step ends; on a terminal, stderr shows\n"
	       "  how many steps are done and the time left)\n\n");
	sl_cli_help_cluster(SL_CMD_TRAIN);
	sl_opts_help(stdout, SL_CMD_TRAIN, SL_KG_DRY_RUN, 0);
}

/* Did an option give this model field, or --model's file (the shape)? */
static int model_given(const sl_train_opts *t, int code)
{
	return sl_train_opts_model_given(t, code) ||
	       (sl_opts_given(t->o, SL_OPT_MODEL) && (sl_knob_of(code)->flags & SL_KF_SHAPE));
}

/* --load: the model comes from the checkpoint where no option set it; the
 * architecture is then checked by the load, and the data and Adam settings
 * must be the checkpoint's for the resumed run to be exact. */
static int model_from_ckpt(struct train_args *a, const sl_ckpt *ck, sl_err *err)
{
	const sl_model_spec *c = &sl_ckpt_info_of(ck)->model;
	sl_model_spec *m = &a->t->m;
#define FROM(code, field)                                                                          \
	if (!model_given(a->t, code))                                                              \
		m->field = c->field;
	FROM(SL_OPT_LAYERS, layers)
	FROM(SL_OPT_HIDDEN, hidden)
	FROM(SL_OPT_FFN, ffn)
	FROM(SL_OPT_HEADS, heads)
	FROM(SL_OPT_KV_HEADS, kv_heads)
	FROM(SL_OPT_FFN_KIND, ffn_kind)
	FROM(SL_OPT_NORM, norm)
	FROM(SL_OPT_SEQ, seq)
	FROM(SL_OPT_BATCH, batch)
	FROM(SL_OPT_SEED, seed)
	FROM(SL_OPT_LR, lr)
	FROM(SL_OPT_ATTN_DROPOUT, attn_dropout)
	FROM(SL_OPT_HIDDEN_DROPOUT, hidden_dropout)
#undef FROM
	m->beta1 = c->beta1;
	m->beta2 = c->beta2;
	m->eps = c->eps;
	/* Name what differs, as the checkpoint has it. */
	char was[200] = "";
	size_t w = 0;
	if (m->seq != c->seq)
		w += (size_t)snprintf(was + w, sizeof was - w, " --seq=%d", c->seq);
	if (m->batch != c->batch && w < sizeof was)
		w += (size_t)snprintf(was + w, sizeof was - w, " --batch=%d", c->batch);
	if (m->seed != c->seed && w < sizeof was)
		w += (size_t)snprintf(was + w, sizeof was - w, " --seed=%llu",
		                      (unsigned long long)c->seed);
	if (m->lr != c->lr && w < sizeof was)
		w += (size_t)snprintf(was + w, sizeof was - w, " --lr=%g", sl_float_decimal(c->lr));
	if (m->attn_dropout != c->attn_dropout && w < sizeof was)
		w += (size_t)snprintf(was + w, sizeof was - w, " --attention-dropout=%g",
		                      sl_float_decimal(c->attn_dropout));
	if (m->hidden_dropout != c->hidden_dropout && w < sizeof was)
		w += (size_t)snprintf(was + w, sizeof was - w, " --hidden-dropout=%g",
		                      sl_float_decimal(c->hidden_dropout));
	if (w)
		return sl_fail(err, SL_EINVAL,
		               "%s was trained with%s: resuming exactly needs the same data, learning "
		               "rate and dropout (drop the option, or give it that value)",
		               sl_ckpt_dir(ck), was);
	return SL_OK;
}

/* train's steps as they end (sl_train_on_step), on a device thread. */
struct live {
	FILE *out;
	const sl_opts *o;
	const sl_model_spec *m;
	const double *ref;
	const struct outcome *r;
	long first;
	int text, head_done;
	long done;
	sl_cliprog *prog;
};

static void live_step(void *arg, long step, double loss, double step_s)
{
	struct live *lv = arg;
	(void)step_s;
	sl_cliprog_set(lv->prog, ++lv->done);
	if (!lv->text)
		return;
	char *head = NULL, row[128] = "";
	size_t len = 0;
	if (!lv->head_done) {
		FILE *mf = open_memstream(&head, &len);
		if (mf) {
			train_text_head(mf, lv->o, lv->m, lv->ref, lv->r);
			fclose(mf);
		}
		if (!head)
			return; /* out of memory: the report prints it all at the end */
		lv->head_done = 1;
	}
	if (lv->ref)
		step_row(row, sizeof row, step, loss, lv->ref[step - lv->first]);
	sl_cliprog_print(lv->prog, lv->out, "%s%s", head ? head : "", row);
	free(head);
}

int sl_cmd_train(int argc, char **argv)
{
	sl_opts o;
	sl_train_opts a;
	sl_train_opts_init(&a, &o, 5);
	struct train_args ta = {.t = &a};
	a.devices_follow = 1;
	o.sc.cluster.devices = 1;
	int rc = sl_cli_parse("train", SL_CMD_TRAIN, argc, argv, &o, train_option, &ta, train_help);
	if (rc != SL_CLI_GO)
		return rc;
	if (ta.save_every && !ta.save)
		return sl_cli_usage("train", "--save-every needs --save=DIR: where to save");
	int dry = o.sc.cluster.timing_only;
	if (dry && (ta.load || ta.save))
		return sl_cli_usage("train", "--dry-run holds no values: nothing to %s",
		                    ta.load ? "load (--load)" : "save (--save)");
	a.l.algo = o.sc.gemm.algo;
	sl_err err = {0};
	sl_ckpt *ck = NULL;
	long first = 0; /* steps done before this run */
	if (ta.load) {
		if (sl_ckpt_open(ta.load, &ck, &err)) {
			sl_cli_error("train: %s", err.msg);
			return SL_EXIT_FAIL;
		}
		first = sl_ckpt_info_of(ck)->step;
		if (model_from_ckpt(&ta, ck, &err)) {
			sl_ckpt_close(ck);
			return sl_cli_usage("train", "%s", err.msg);
		}
	}
	sl_train_opts_model_finish(&a);
	sl_train_layout_defaults(&a.m, &a.l, a.given_m, a.given_v);
	/* With a checkpoint, say why it cannot be resharded to this layout. */
	if ((ck && sl_ckpt_check_target(ck, &a.m, &a.l, o.sc.cluster.devices, &err)) ||
	    sl_layout_check(&a.m, &a.l, o.sc.cluster.devices, &err)) {
		sl_ckpt_close(ck);
		return sl_cli_usage("train", "%s", err.msg);
	}
	if (ta.save && sl_ckpt_check_dest(ta.save, &err)) {
		sl_ckpt_close(ck);
		return sl_cli_usage("train", "--save: %s", err.msg);
	}
	rc = SL_EXIT_OK;
	if (!dry && sl_model_check_values(&a.m, &err))
		rc = sl_cli_usage("train", "%s", err.msg);
	else if (!dry)
		rc = sl_cli_host_fits_or_dry("train", sl_train_host_bytes(&a.m, &a.l),
		                             "this model and layout");
	if (rc == SL_EXIT_OK && !o.trace && (ta.rec.step_hi || ta.rec.nranges))
		rc = sl_cli_usage("train", "--trace-%s chooses what the trace keeps: it needs "
				  "--trace=FILE", ta.rec.step_hi ? "steps" : "devices");
	if (rc == SL_EXIT_OK && ta.rec.step_hi && ta.save)
		rc = sl_cli_usage("train", "--trace-steps: with --save the trace holds the final save, "
				  "not the training steps");
	if (rc == SL_EXIT_OK && ta.rec.step_hi > a.steps)
		rc = sl_cli_usage("train", "--trace-steps=%d-%d: the run has %d step%s",
				  ta.rec.step_lo, ta.rec.step_hi, a.steps, a.steps == 1 ? "" : "s");
	if (rc == SL_EXIT_OK && o.trace)
		rc = sl_cli_check_output("train", o.trace);
	if (rc != SL_EXIT_OK) {
		sl_ckpt_close(ck);
		return rc;
	}
	/* The reference: one device from step 0, or resumed from the same
	 * checkpoint (never a replay of the whole history, which could be any
	 * length).  It computes; a dry run has nothing to compare with it. */
	double *ref0 = NULL, *ref = NULL;
	if (!dry) {
		if (!(ref0 = calloc((size_t)a.steps, sizeof *ref0))) {
			sl_cli_error("train: out of host memory");
			sl_ckpt_close(ck);
			return SL_EXIT_FAIL;
		}
		ref = ref0;
		if ((rc = reference("train", &a.m, ck, a.steps, ref0))) {
			free(ref0);
			sl_ckpt_close(ck);
			return rc;
		}
	}
	struct outcome r;
	memset(&r, 0, sizeof r);
	struct ckpt_io io = {ck, ta.save, ta.save_every};
	/* The steps as they end: a row each in the text report, and the
	 * progress line on a terminal. */
	struct live lv = {.out = sl_cli_report_stream(o.trace), .o = &o, .m = &a.m, .ref = ref,
			  .r = &r, .first = first, .text = o.format == SL_FORMAT_TEXT,
			  .prog = sl_cliprog_start("train", "steps", a.steps)};
	r.on_step = live_step;
	r.on_step_arg = &lv;
	/* What the run's trace keeps: nothing without --trace (no memory per
	 * event), else the steps and devices asked for. */
	sl_cluster_config run_cfg = o.sc.cluster;
	run_cfg.record = ta.rec;
	run_cfg.record.off = !o.trace;
	rc = run_layout(&run_cfg, &a.m, &a.l, a.steps, ref, &io, &r, &err);
	sl_cliprog_stop(lv.prog);
	if (rc) {
		outcome_free(&r);
		free(ref0);
		sl_ckpt_close(ck);
		if (err.code == SL_EDEVMEM)
			/* What to turn, in the same message. */
			sl_cli_error("train: %s; 'shardlab plan' with the same model and cluster "
				     "lists the layouts that fit and what each one needs",
				     err.msg);
		else
			sl_cli_error("train: %s", err.msg);
		/* The command line was checked: a damaged checkpoint or a failed save
		 * is the run's failure. */
		return err.code == SL_EINVAL && !ta.load && !ta.save ? SL_EXIT_USAGE : SL_EXIT_FAIL;
	}
	int status = SL_EXIT_OK;
	if (o.trace && sl_report_trace(r.c, o.trace, &err)) {
		sl_cli_error("train: %s", err.msg);
		status = SL_EXIT_FAIL;
	}
	if (status == SL_EXIT_OK) {
		FILE *out = sl_cli_report_stream(o.trace);
		if (o.format == SL_FORMAT_JSON) {
			json_t *j = json_object();
			outcome_json(j, &r, &a.m, a.steps);
			json_object_set_new(j, "reference_losses",
					    ref ? losses_json(ref, a.steps) : json_null());
			model_json(j, &a.m);
			json_object_set_new(j, "algorithm", json_string(sl_algo_name(a.l.algo)));
			if (ta.load || ta.save)
				json_object_set_new(
				    j, "checkpoint",
				    json_pack("{s:s?, s:I, s:s?, s:i}", "loaded_from", ta.load,
				              "loaded_step", (json_int_t)first, "saved_to", ta.save,
				              "save_every", ta.save_every));
			sl_report_cluster_json(j, sl_cluster_config_of(r.c), o.sc.preset, o.overrides);
			if (sl_report_json_print(out, j))
				status = SL_EXIT_FAIL;
		} else {
			train_text(out, &o, &a.m, a.steps, ref, &r, lv.head_done, ta.per_device);
			if (ta.load)
				fprintf(out, "\nresumed      from %s at step %ld (saved at tp=%d pp=%d "
				       "dp=%d)\n",
				       ta.load, first, sl_ckpt_info_of(ck)->layout.tp,
				       sl_ckpt_info_of(ck)->layout.pp,
				       sl_ckpt_info_of(ck)->layout.dp);
			if (ta.save)
				fprintf(out, "%ssaved        %s at step %ld\n", ta.load ? "" : "\n",
				       ta.save, first + a.steps);
		}
		status = sl_cli_flush(status);
	}
	if (status == SL_EXIT_OK && ref && !(r.max_rel <= LOSS_TOLERANCE)) {
		sl_cli_error("train: wrong result: the losses differ from one device's by %.3g (tolerance %g)",
			     r.max_rel, LOSS_TOLERANCE);
		status = SL_EXIT_FAIL;
	}
	outcome_free(&r);
	free(ref0);
	sl_ckpt_close(ck);
	return status;
}

/* ---- compare ---- */

static void compare_help(void)
{
	printf("Usage: shardlab compare [--layouts=LIST] [--devices=N] [model options]\n"
	       "                        [OPTION...]\n\n"
	       "Trains the same model under several layouts and prints one table: step time,\n"
	       "speedup over one device, peak memory and bytes sent per device, the bubble,\n"
	       "and whether the losses match one device's.  By default the layouts are: one\n"
	       "device, tensor parallel over N, pipeline over N, data parallel over N, and\n"
	       "TP inside a node times DP across (N = --devices, default 4); one that does\n"
	       "not fit the model is skipped with the reason.\n\n");
	sl_opts_help(stdout, SL_CMD_COMPARE, SL_KG_COMPARE, 0);
	sl_opts_help(stdout, SL_CMD_COMPARE, SL_KG_LAYOUT, 0);
	putchar('\n');
	sl_opts_help(stdout, SL_CMD_COMPARE, SL_KG_MODEL, 1);
	sl_opts_help(stdout, SL_CMD_COMPARE, SL_KG_WORKLOAD, 0); /* --seed */
	putchar('\n');
	sl_cli_help_cluster(SL_CMD_COMPARE);
}

#define MAX_LAYOUTS 16

/* "TxPxD[:opt]..." */
static int parse_layout(const char *item, size_t len, sl_layout *l, sl_err *err)
{
	char buf[64];
	if (len >= sizeof buf)
		return sl_fail(err, SL_EINVAL, "--layouts: '%.*s' is too long", (int)len, item);
	memcpy(buf, item, len);
	buf[len] = '\0';
	char *rest = strchr(buf, ':');
	if (rest)
		*rest++ = '\0';
	/* Three plain decimal sizes, each read by the one integer parser (no
	 * sign, no overflow: sscanf's %d took '+2' and overflowed silently). */
	int *dims[3] = {&l->tp, &l->pp, &l->dp};
	char *p = buf;
	for (int i = 0; i < 3; i++) {
		char *x = i < 2 ? strchr(p, 'x') : NULL;
		if (i < 2 && !x)
			p = NULL;
		if (x)
			*x = '\0';
		long v;
		sl_err e2 = {0};
		if (!p || sl_parse_int(p, 1, SL_MAX_DEVICES, "a size", &v, &e2) != SL_OK) {
			if (x)
				*x = 'x';
			return sl_fail(err, SL_EINVAL,
				       "--layouts: '%.*s' is not TxPxD (three sizes of 1 to %d, as in "
				       "2x1x2)",
				       (int)len, item, SL_MAX_DEVICES);
		}
		*dims[i] = (int)v;
		p = x ? x + 1 : NULL;
	}
	while (rest && *rest) {
		char *next = strchr(rest, ':');
		if (next)
			*next++ = '\0';
		sl_sched k;
		if (sl_sched_parse(rest, &k) == SL_OK)
			l->schedule = k;
		else if (strcmp(rest, "sp") == 0)
			l->seq_parallel = 1;
		else if (strcmp(rest, "zero1") == 0)
			l->zero1 = 1;
		else
			return sl_fail(err, SL_EINVAL,
				       "--layouts: unknown '%s' in '%.*s' (one of: gpipe, 1f1b, interleaved, sp, zero1)",
				       rest, (int)len, item);
		rest = next;
	}
	return SL_OK;
}

static void layout_name(const sl_layout *l, char *buf, size_t n)
{
	if (l->tp * l->pp * l->dp == 1) {
		snprintf(buf, n, "single");
		return;
	}
	int len = 0;
	buf[0] = '\0';
	const int size[3] = {l->tp, l->pp, l->dp};
	const char *nm[3] = {"tp", "pp", "dp"};
	for (int i = 0; i < 3; i++)
		if (size[i] > 1)
			len += snprintf(buf + len, n - (size_t)len, "%s%s=%d", len ? " x " : "", nm[i],
					size[i]);
	if (l->pp > 1)
		len += snprintf(buf + len, n - (size_t)len, " %s", sl_sched_name(l->schedule));
	if (l->seq_parallel)
		len += snprintf(buf + len, n - (size_t)len, " sp");
	if (l->zero1)
		snprintf(buf + len, n - (size_t)len, " zero1");
}

/* The sentence under compare's table: the fastest layout, and when no
 * split beats one device, why (its step is mostly communication). */
static void compare_verdict(const struct outcome *res, char (*skip)[sizeof((sl_err){0}).msg], int nc)
{
	int best = -1;
	for (int i = 0; i < nc; i++)
		if (!skip[i][0] && res[i].rep.ndev > 1 && res[i].rep.step_s > 0 &&
		    (best < 0 || res[i].rep.step_s < res[best].rep.step_s))
			best = i;
	if (best < 0)
		return;
	const sl_train_report *p = &res[best].rep;
	double comm = 0;
	for (int d = 0; d < p->ndev; d++)
		comm = p->dev[d].comm_s > comm ? p->dev[d].comm_s : comm;
	double speedup = res[best].single_s / p->step_s;
	char t1[32], t2[32], t3[32], words[512];
	if (speedup >= 1)
		snprintf(words, sizeof words,
		         "Fastest split: %s, %.3g times one device's speed; its busiest device "
		         "communicates %s of its %s step.",
		         res[best].name, speedup, fmt_t(comm, t1), fmt_t(p->step_s, t2));
	else
		snprintf(words, sizeof words,
		         "No split beats one device here: one device computes the step in %s, and "
		         "the fastest split, %s, spends %s of its %s step communicating. The model "
		         "is too small for these links; try a larger --hidden or --batch, or slower "
		         "devices (--flops).",
		         fmt_t(res[best].single_s, t1), res[best].name, fmt_t(comm, t2),
		         fmt_t(p->step_s, t3));
	putchar('\n');
	sl_print_wrapped(stdout, words, 0, "", 100);
}

/* compare --format=csv: the table's rows (skipped layouts left out) with
 * the JSON report's names, in SI units. */
static void compare_csv(const struct outcome *res, char (*skip)[sizeof((sl_err){0}).msg],
                        const sl_layout *cand, int nc, int steps)
{
	printf("name,tp,pp,dp,devices,step_time_s,speedup,memory_peak_bytes,sent_bytes,"
	       "bubble_fraction,loss,check\n");
	for (int i = 0; i < nc; i++) {
		if (skip[i][0])
			continue;
		const sl_train_report *p = &res[i].rep;
		uint64_t mem, sent;
		dev_peaks(p, &mem, &sent);
		/* The name holds no comma or quote ("tp=2 x dp=2 sp"). */
		printf("%s,%d,%d,%d,%d,%.9g,%.9g,%llu,%llu,%.9g,%.9g,%s\n", res[i].name, cand[i].tp,
		       cand[i].pp, cand[i].dp, p->ndev, p->step_s, res[i].single_s / p->step_s,
		       (unsigned long long)mem, (unsigned long long)sent, p->bubble_fraction,
		       p->losses[steps - 1], res[i].max_rel <= LOSS_TOLERANCE ? "pass" : "fail");
	}
}

int sl_cmd_compare(int argc, char **argv)
{
	sl_opts o;
	sl_train_opts a;
	sl_train_opts_init(&a, &o, 3);
	o.sc.cluster.devices = 4;
	o.csv_ok = 1;
	int rc = sl_cli_parse("compare", SL_CMD_COMPARE, argc, argv, &o, own_option, &a, compare_help);
	if (rc != SL_CLI_GO)
		return rc;
	sl_train_opts_model_finish(&a);
	int N = o.sc.cluster.devices;
	/* compare writes no trace: its runs keep no events. */
	o.sc.cluster.record.off = 1;
	const sl_cluster_config *base = &o.sc.cluster;
	/* The node size as the preset and options gave it for N devices. */
	int G = base->devices_per_node;

	sl_err err = {0};
	sl_layout cand[MAX_LAYOUTS];
	int nc = 0, explicit = a.layouts != NULL;
	for (int i = 0; i < MAX_LAYOUTS; i++) {
		cand[i] = a.l;
		cand[i].tp = cand[i].pp = cand[i].dp = 1;
	}
	if (explicit) {
		for (const char *p = a.layouts; *p;) {
			size_t len = strcspn(p, ",");
			if (nc == MAX_LAYOUTS)
				return sl_cli_usage("compare", "--layouts: at most %d layouts", MAX_LAYOUTS);
			if (len == 0 || parse_layout(p, len, &cand[nc++], &err))
				return sl_cli_usage("compare", "%s",
						    len ? err.msg : "--layouts: an empty item");
			p += len;
			if (*p == ',')
				p++;
		}
	} else {
		nc = 1; /* single */
		if (N > 1) {
			cand[nc++].tp = N;
			cand[nc++].pp = N;
			cand[nc++].dp = N;
			int t = G > 1 && G < N ? G : N >= 4 && N % 2 == 0 ? 2 : 0;
			if (t) {
				cand[nc].tp = t;
				cand[nc++].dp = N / t;
			}
		}
	}
	double *ref = calloc((size_t)a.steps, sizeof *ref);
	struct outcome *res = calloc((size_t)nc, sizeof *res);
	char (*skip)[sizeof err.msg] = calloc((size_t)nc, sizeof *skip);
	if (!ref || !res || !skip) {
		free(ref);
		free(res);
		free(skip);
		sl_cli_error("compare: out of host memory");
		return SL_EXIT_FAIL;
	}
	int status = SL_EXIT_OK;
	for (int i = 0; i < nc; i++) {
		cand[i].algo = o.sc.gemm.algo;
		sl_train_layout_defaults(&a.m, &cand[i], a.given_m, 0);
		layout_name(&cand[i], res[i].name, sizeof res[i].name);
		if (sl_layout_check(&a.m, &cand[i], cand[i].tp * cand[i].pp * cand[i].dp, &err)) {
			if (explicit) {
				status = sl_cli_usage("compare", "%s: %s", res[i].name, err.msg);
				break;
			}
			snprintf(skip[i], sizeof skip[i], "%s", err.msg);
		} else if ((rc = sl_cli_host_fits("compare", sl_train_host_bytes(&a.m, &cand[i]), res[i].name))) {
			status = rc;
			break;
		}
	}
	if (status == SL_EXIT_OK)
		status = reference("compare", &a.m, NULL, a.steps, ref);
	double w0 = wall_now();
	for (int i = 0; i < nc && status == SL_EXIT_OK; i++) {
		if (skip[i][0])
			continue;
		if (run_layout(base, &a.m, &cand[i], a.steps, ref, NULL, &res[i], &err)) {
			if (err.code == SL_EDEVMEM && !explicit) {
				snprintf(skip[i], sizeof skip[i], "%s", err.msg);
				outcome_free(&res[i]);
				continue;
			}
			status = sl_cli_fail("compare", &err);
		}
	}
	double wall = wall_now() - w0;
	int wrong = 0;
	for (int i = 0; i < nc; i++)
		if (res[i].c && !(res[i].max_rel <= LOSS_TOLERANCE))
			wrong = 1;
	if (status == SL_EXIT_OK && o.format == SL_FORMAT_JSON) {
		json_t *j = json_object();
		model_json(j, &a.m);
		json_object_set_new(j, "steps", json_integer(a.steps));
		json_object_set_new(j, "algorithm", json_string(sl_algo_name(o.sc.gemm.algo)));
		sl_report_cluster_json(j, base, o.sc.preset, o.overrides);
		json_object_set_new(j, "reference_losses", losses_json(ref, a.steps));
		json_object_set_new(j, "wall_s", jreal(wall));
		json_t *arr = json_array(), *sk = json_array();
		for (int i = 0; i < nc; i++) {
			json_t *x = json_object();
			json_object_set_new(x, "name", json_string(res[i].name));
			if (skip[i][0]) {
				sl_report_layout_json(x, &cand[i]);
				json_object_set_new(x, "reason", json_string(skip[i]));
				json_array_append_new(sk, x);
				continue;
			}
			outcome_json(x, &res[i], &a.m, a.steps);
			json_array_append_new(arr, x);
		}
		json_object_set_new(j, "layouts", arr);
		json_object_set_new(j, "skipped", sk);
		if (sl_report_json_print(stdout, j))
			status = SL_EXIT_FAIL;
	} else if (status == SL_EXIT_OK && o.format == SL_FORMAT_CSV) {
		compare_csv(res, skip, cand, nc, a.steps);
	} else if (status == SL_EXIT_OK) {
		char words[320], t1[32], t2[32], t3[32];
		printf("# shardlab compare: %d step%s\n", a.steps, a.steps == 1 ? "" : "s");
		model_words(&a.m, words, sizeof words);
		printf("# model: %s%s\n", words, attention_words(&a.m, &a.l));
		data_words(&a.m, words, sizeof words);
		printf("# data: %s\n", words);
		sl_report_hardware_text(stdout, "# ", base, o.sc.preset, o.overrides);
		printf("# speedup against one device's step; memory and bytes sent: the largest of\n"
		       "# any device, per step; loss: the last step's, checked against one device's\n\n");
		printf("%-26s %7s %11s %8s %11s %11s %8s %12s\n", "layout", "devices", "step time",
		       "speedup", "peak mem", "sent", "bubble", "loss");
		for (int i = 0; i < nc; i++) {
			if (skip[i][0])
				continue;
			const sl_train_report *p = &res[i].rep;
			uint64_t mem, sent;
			dev_peaks(p, &mem, &sent);
			printf("%-26s %7d %11s %8.3g %11s %11s %8.4f %10.6f %s\n", res[i].name, p->ndev,
			       fmt_t(p->step_s, t1), res[i].single_s / p->step_s, fmt_b((double)mem, t2),
			       fmt_b((double)sent, t3), p->bubble_fraction, p->losses[a.steps - 1],
			       res[i].max_rel <= LOSS_TOLERANCE ? "ok" : "WRONG");
		}
		for (int i = 0; i < nc; i++)
			if (skip[i][0])
				printf("skipped %s: %s\n", res[i].name, skip[i]);
		compare_verdict(res, skip, nc);
		printf("\nwall %.2f s\n", wall);
	}
	if (status == SL_EXIT_OK)
		status = sl_cli_flush(status);
	if (status == SL_EXIT_OK && wrong) {
		sl_cli_error("compare: wrong result: a layout's losses differ from one device's");
		status = SL_EXIT_FAIL;
	}
	for (int i = 0; i < nc; i++)
		outcome_free(&res[i]);
	free(res);
	free(skip);
	free(ref);
	return status;
}
