/* SPDX-License-Identifier: MIT */
/* trainrun.c - what train and compare share: one layout's run on its
 * cluster (with the one-device reference its losses are checked against)
 * and the words, rows and JSON of its report. */
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
#include "trainrun.h"
#include "units.h"
#include "textwrap.h"

/* ---- running one layout ---- */

double sl_tr_wall_now(void)
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

int sl_tr_run_layout(const sl_cluster_config *base, const sl_model_spec *m, const sl_layout *l,
                     int steps, const double *ref, const struct ckpt_io *io, struct outcome *r,
                     sl_err *err)
{
	int n = sl_layout_devices(l);
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
	double w0 = sl_tr_wall_now();
	if (io && io->load)
		rc = sl_ckpt_load(tr, r->c, io->load, NULL, err);
	if (rc == SL_OK && io && io->save)
		rc = sl_ckpt_train_run(tr, r->c, steps, io->save, io->every, NULL, &r->rep, err);
	else if (rc == SL_OK)
		rc = sl_train_run(tr, r->c, steps, &r->rep, err);
	r->wall_s = sl_tr_wall_now() - w0;
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

void sl_tr_outcome_free(struct outcome *r)
{
	sl_train_report_free(&r->rep);
	sl_cluster_destroy(r->c);
	r->c = NULL;
}

/* One device's losses over the steps: from step 0, or resumed from ck. */
int sl_tr_reference(const char *cmd, const sl_model_spec *m, const sl_ckpt *ck, int steps,
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

const char *sl_tr_fmt_t(double s, char *b)
{
	return sl_fmt_time(s, b, 32);
}

const char *sl_tr_fmt_b(double v, char *b)
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
void sl_tr_dev_peaks(const sl_train_report *p, uint64_t *mem, uint64_t *sent)
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
const char *sl_tr_attention_words(const sl_model_spec *m, const sl_layout *l)
{
	if (m->heads == 0)
		return "";
	/* causal is the default and goes unsaid */
	if (m->mask == SL_MASK_FULL)
		return l->attention == SL_ATTN_FLASH ? "; fused (flash) attention, no mask"
		                                     : "; materialized attention, no mask";
	return l->attention == SL_ATTN_FLASH ? "; fused (flash) attention"
	                                     : "; materialized attention";
}

static void layout_words(const sl_layout *l, char *buf, size_t n)
{
	char ord[16];
	int len = snprintf(buf, n, "tp=%d pp=%d dp=%d", l->tp, l->pp, l->dp);
	if (l->cp > 1)
		len += snprintf(buf + len, n - (size_t)len, " cp=%d (%s)", l->cp,
		                sl_cp_comm_name(l->cp_comm));
	if (l->pp > 1)
		len += snprintf(buf + len, n - (size_t)len, ", %s", sl_sched_name(l->schedule));
	if (l->chunks > 1)
		len += snprintf(buf + len, n - (size_t)len, " with %d chunks", l->chunks);
	if (l->stages != SL_STAGES_EVEN && (size_t)len < n) {
		char st[8 * SL_MAX_STAGE_LIST];
		len += snprintf(buf + len, n - (size_t)len, ", stage layers %s",
		                sl_stage_layers_name(l, st, sizeof st));
	}
	if ((size_t)len >= n)
		return;
	len += snprintf(buf + len, n - (size_t)len, ", %d micro-batch%s", l->microbatches,
	                l->microbatches == 1 ? "" : "es");
	if (l->seq_parallel)
		len += snprintf(buf + len, n - (size_t)len, ", sequence parallel");
	if (l->zero > 0)
		len += snprintf(buf + len, n - (size_t)len, ", ZeRO-%d%s", l->zero,
		                l->zero_keep ? " (gathered parameters kept for the backward)" : "");
	snprintf(buf + len, n - (size_t)len, ", mesh %s",
	         sl_mesh_order_name(l->order, ord, sizeof ord));
}

void sl_tr_model_words(const sl_model_spec *m, char *buf, size_t n)
{
	int len = sl_model_describe(m, buf, n);
	if (len < 0 || (size_t)len >= n)
		return;
	snprintf(buf + len, n - (size_t)len, "; %zu parameters", sl_model_total_params(m));
}

void sl_tr_data_words(const sl_model_spec *m, char *buf, size_t n)
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

void sl_tr_train_text_head(FILE *f, const sl_opts *o, const sl_model_spec *m, const double *ref,
                           const struct outcome *r)
{
	const sl_cluster_config *cfg = sl_cluster_config_of(r->c);
	char words[320];
	layout_words(&r->l, words, sizeof words);
	fprintf(f, "# shardlab train: %s\n", words);
	sl_tr_model_words(m, words, sizeof words);
	fprintf(f, "# model: %s%s\n", words, sl_tr_attention_words(m, &r->l));
	sl_tr_data_words(m, words, sizeof words);
	fprintf(f, "# data: %s\n", words);
	sl_report_hardware_text(f, "# ", cfg, o->sc.preset, o->overrides);
	if (ref)
		fprintf(f, "\n%6s %14s %14s %11s\n", "step", "loss", "reference", "rel. diff");
	else
		fprintf(
		    f,
		    "\ndry run: timing only, no arithmetic: no losses; memory counted, not held\n");
}

int sl_tr_step_row(char *b, size_t n, long step, double loss, double ref)
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

void sl_tr_train_text(FILE *f, const sl_opts *o, const sl_model_spec *m, int steps,
                      const double *ref, const struct outcome *r, int head_done, int per_device)
{
	const sl_train_report *p = &r->rep;
	char a[32], b[32], c[32];
	if (!head_done) {
		sl_tr_train_text_head(f, o, m, ref, r);
		for (int s = 0; ref && s < steps; s++) {
			char row[128];
			sl_tr_step_row(row, sizeof row, p->first_step + s, p->losses[s], ref[s]);
			fputs(row, f);
		}
	}
	double speedup = p->step_s > 0 ? r->single_s / p->step_s : 0;
	if (isfinite(r->pred.step_s))
		fprintf(f, "\nstep time    %s emulated, %s predicted\n", sl_tr_fmt_t(p->step_s, a),
		        sl_tr_fmt_t(r->pred.step_s, b));
	else
		fprintf(f, "\nstep time    %s emulated (no prediction)\n",
		        sl_tr_fmt_t(p->step_s, a));
	fprintf(f, "speedup      %.3g over one device (%s%s), efficiency %.1f%%\n", speedup,
	        sl_tr_fmt_t(r->single_s, c),
	        r->single_est ? ", estimated: the model does not fit one" : "",
	        100 * speedup / p->ndev);
	struct rates x = rates_of(r, m);
	char tk[32], dtk[32];
	fprintf(f, "throughput   %s tokens/s, %s per device\n",
	        sl_fmt_count(x.tokens_s, tk, sizeof tk),
	        sl_fmt_count(x.dev_tokens_s, dtk, sizeof dtk));
	fprintf(f, "FLOP rate    %.4g TFLOP/s of the model per device: MFU %.1f%% (HFU %.1f%%)\n",
	        x.dev_model / 1e12, 100 * x.mfu, 100 * x.hfu);
	if (isfinite(r->pred.bubble_fraction))
		fprintf(f, "bubble       %.4f of the ideal time (%.4f predicted)\n",
		        p->bubble_fraction, r->pred.bubble_fraction);
	else
		fprintf(f, "bubble       %.4f of the ideal time\n", p->bubble_fraction);
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
	/* communication hidden beside the compute: its exposed part too */
	int hid = 0;
	for (int i = 0; i < p->ndev; i++)
		hid |= p->dev[i].comm_exposed_s < p->dev[i].comm_s * (1 - 1e-9);
	/* with context parallelism, the place on the dp axis: replica x cp + rank */
	int ncp = 1;
	for (int i = 0; i < p->ndev; i++)
		ncp = p->dev[i].cp + 1 > ncp ? p->dev[i].cp + 1 : ncp;
	if (ncp > 1)
		fprintf(f, "(dpc: replica dpc / %d, context rank dpc %% %d)\n", ncp, ncp);
	fprintf(f, "%6s %3s %3s %3s %10s %10s%s %10s %10s %10s %10s %10s %10s\n", "device", "tp",
	        "pp", ncp > 1 ? "dpc" : "dp", "compute", "comm", hid ? "    exposed" : "", "idle",
	        "params", "grads", "optimizer", "act. peak", "mem peak");
	for (int i = 0; i < p->ndev; i++) {
		const sl_train_dev *d = &p->dev[i];
		char t1[32], t2[32], t3[32], m1[32], m2[32], m3[32], m4[32], m5[32], ex[40] = "";
		coords[i][0] = d->tp;
		coords[i][1] = d->pp;
		coords[i][2] = d->dp * ncp + d->cp;
		if (hid) {
			char te[32];
			snprintf(ex, sizeof ex, " %10s", sl_tr_fmt_t(d->comm_exposed_s, te));
		}
		snprintf(figs[i], sizeof figs[i], " %10s %10s%s %10s %10s %10s %10s %10s %10s",
		         sl_tr_fmt_t(d->compute_s, t1), sl_tr_fmt_t(d->comm_s, t2), ex,
		         sl_tr_fmt_t(d->idle_s, t3), sl_tr_fmt_b((double)d->params_bytes, m1),
		         sl_tr_fmt_b((double)d->grads_bytes, m2),
		         sl_tr_fmt_b((double)d->optimizer_bytes, m3),
		         sl_tr_fmt_b((double)d->act_peak_bytes, m4),
		         sl_tr_fmt_b((double)d->mem_peak_bytes, m5));
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
				len +=
				    snprintf(figs[i] + len, sizeof figs[i] - (size_t)len, " %16s",
				             sl_tr_fmt_b((double)p->dev[i].sent[used[k]], a));
		}
		print_rows(f, p->ndev, figs, NULL, fold);
	}
	if (fold)
		fprintf(f,
		        "\n(devices with the same figures share a row: --per-device lists each)\n");
	free(figs);
	free(coords);
}

json_t *sl_tr_jreal(double v)
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

void sl_tr_model_json(json_t *o, const sl_model_spec *m)
{
	json_object_set_new(o, "model",
	                    json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:f, s:I}", "layers",
	                              m->layers, "hidden", m->hidden, "ffn", m->ffn, "heads",
	                              m->heads, "seq", m->seq, "batch", m->batch, "seed",
	                              (json_int_t)m->seed, "lr", (double)m->lr, "parameters",
	                              (json_int_t)sl_model_total_params(m)));
	sl_model_json_kinds(json_object_get(o, "model"), m);
}

json_t *sl_tr_losses_json(const double *v, int n)
{
	json_t *a = json_array();
	for (int s = 0; s < n; s++)
		json_array_append_new(a, sl_tr_jreal(v[s]));
	return a;
}

/* The figures of one layout's run, shared by train's and compare's JSON. */
void sl_tr_outcome_json(json_t *o, const struct outcome *r, const sl_model_spec *m, int steps)
{
	const sl_train_report *p = &r->rep;
	double speedup = p->step_s > 0 ? r->single_s / p->step_s : 0;
	sl_report_layout_json(o, &r->l);
	json_object_set_new(o, "devices", json_integer(p->ndev));
	json_object_set_new(o, "steps", json_integer(steps));
	json_object_set_new(o, "first_step", json_integer(p->first_step));
	json_object_set_new(o, "losses", sl_tr_losses_json(p->losses, steps));
	int dry = sl_cluster_config_of(r->c)->timing_only;
	json_object_set_new(o, "max_loss_rel_diff", dry ? json_null() : sl_tr_jreal(r->max_rel));
	json_object_set_new(o, "check",
	                    json_string(dry                            ? "none"
	                                : r->max_rel <= LOSS_TOLERANCE ? "pass"
	                                                               : "fail"));
	json_object_set_new(o, "step_time_s", sl_tr_jreal(p->step_s));
	json_object_set_new(o, "predicted_step_s", sl_tr_jreal(r->pred.step_s));
	json_object_set_new(o, "single_device_step_s", sl_tr_jreal(r->single_s));
	json_object_set_new(o, "single_device_estimated", json_boolean(r->single_est));
	json_object_set_new(o, "speedup", sl_tr_jreal(speedup));
	json_object_set_new(o, "efficiency", sl_tr_jreal(speedup / p->ndev));
	json_object_set_new(o, "pipeline_s", sl_tr_jreal(p->pipeline_s));
	json_object_set_new(o, "ideal_s", sl_tr_jreal(p->ideal_s));
	json_object_set_new(o, "bubble_fraction", sl_tr_jreal(p->bubble_fraction));
	json_object_set_new(o, "predicted_bubble_fraction", sl_tr_jreal(r->pred.bubble_fraction));
	json_object_set_new(o, "idle_fraction", sl_tr_jreal(p->idle_fraction));
	json_object_set_new(o, "step_flop", sl_tr_jreal(p->flops_per_step));
	struct rates x = rates_of(r, m);
	json_object_set_new(o, "tokens_per_s", sl_tr_jreal(x.tokens_s));
	json_object_set_new(o, "device_tokens_per_s", sl_tr_jreal(x.dev_tokens_s));
	json_object_set_new(o, "device_model_flop_per_s", sl_tr_jreal(x.dev_model));
	json_object_set_new(o, "device_hardware_flop_per_s", sl_tr_jreal(x.dev_hw));
	json_object_set_new(o, "mfu", sl_tr_jreal(x.mfu));
	json_object_set_new(o, "hfu", sl_tr_jreal(x.hfu));
	json_object_set_new(o, "wall_s", sl_tr_jreal(r->wall_s));
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
		json_object_set_new(
		    j, "node",
		    json_integer(cfg->devices_per_node > 0 ? i / cfg->devices_per_node : 0));
		json_object_set_new(j, "tp", json_integer(d->tp));
		json_object_set_new(j, "pp", json_integer(d->pp));
		json_object_set_new(j, "dp", json_integer(d->dp));
		if (r->l.cp > 1)
			json_object_set_new(j, "cp", json_integer(d->cp));
		json_object_set_new(j, "compute_s", sl_tr_jreal(d->compute_s));
		json_object_set_new(j, "comm_s", sl_tr_jreal(d->comm_s));
		json_object_set_new(j, "comm_exposed_s", sl_tr_jreal(d->comm_exposed_s));
		json_object_set_new(j, "idle_s", sl_tr_jreal(d->idle_s));
		json_object_set_new(j, "predicted_compute_s", sl_tr_jreal(r->pred.compute_s[i]));
		json_object_set_new(j, "predicted_comm_s", sl_tr_jreal(r->pred.comm_s[i]));
		json_object_set_new(j, "flop", sl_tr_jreal(d->flops));
		json_object_set_new(j, "memory_params_bytes",
		                    json_integer((json_int_t)d->params_bytes));
		json_object_set_new(j, "memory_grads_bytes",
		                    json_integer((json_int_t)d->grads_bytes));
		json_object_set_new(j, "memory_optimizer_bytes",
		                    json_integer((json_int_t)d->optimizer_bytes));
		json_object_set_new(j, "memory_activations_peak_bytes",
		                    json_integer((json_int_t)d->act_peak_bytes));
		json_object_set_new(j, "memory_workspace_peak_bytes",
		                    json_integer((json_int_t)d->workspace_peak_bytes));
		json_object_set_new(j, "memory_peak_bytes",
		                    json_integer((json_int_t)d->mem_peak_bytes));
		json_object_set_new(j, "memory_capacity_bytes",
		                    json_integer((json_int_t)cfg->memory));
		json_object_set_new(j, "traffic", traffic_json(d->sent, d->received));
		json_array_append_new(devs, j);
	}
	json_object_set_new(o, "traffic", traffic_json(sent, recv));
	json_object_set_new(o, "per_device", devs);
}
