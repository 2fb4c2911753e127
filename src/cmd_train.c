/* SPDX-License-Identifier: MIT */
/* cmd_train.c - `shardlab train`: the model trained under one layout, with
 * its accounting (the runner and reports it shares with compare:
 * trainrun.c). */
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
static int parse_range(const char *arg, long lo, long hi, const char *what, int out[2], sl_err *err)
{
	char *end;
	long a = strtol(arg, &end, 10), b = a;
	if (end != arg && *end == '-' && end[1])
		b = strtol(end + 1, &end, 10);
	if (!*arg || *end || a < lo || b > hi || a > b)
		return sl_fail(err, SL_EINVAL,
		               "%s '%s': not N or N-M, whole numbers from %ld to %ld, "
		               "the first no more than the last",
		               what, arg, lo, hi);
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
			return sl_fail(err, SL_EINVAL, "--trace-devices '%s': at most %d ranges",
			               arg, SL_RECORD_RANGES);
		if (parse_range(tok, 0, SL_MAX_DEVICES - 1, "--trace-devices",
		                f->ranges[f->nranges], err))
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
		return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	}
}

/* ---- train ---- */

static void train_help(void)
{
	printf("Usage: shardlab train [--tp=T] [--pp=P] [--dp=D] [--schedule=S] [--chunks=V]\n"
	       "                      [--microbatches=M] [--sequence-parallel] [--zero1]\n"
	       "                      [--layers=L --hidden=H --ffn=F --heads=A --seq=S]\n"
	       "                      [--batch=B] [--steps=N] [OPTION...]\n\n"
	       "Trains a small transformer-style model (MSE loss, Adam; computed in fp32,\n"
	       "timed and held at --precision's element size) for N steps on\n"
	       "tp*cp*pp*dp emulated devices: tensor parallel in Megatron style, a pipeline of\n"
	       "stages with micro-batches, data-parallel replicas, sequences split over\n"
	       "context-parallel devices, or their combination.\n"
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
	FROM(SL_OPT_MASK, mask)
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
	if (m->mask != c->mask && m->heads > 0 && w < sizeof was)
		w += (size_t)snprintf(was + w, sizeof was - w, " --mask=%s", sl_mask_name(c->mask));
	if (w)
		return sl_fail(
		    err, SL_EINVAL,
		    "%s was trained with%s: resuming exactly needs the same data, learning "
		    "rate, dropout and mask (drop the option, or give it that value)",
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
			sl_tr_train_text_head(mf, lv->o, lv->m, lv->ref, lv->r);
			fclose(mf);
		}
		if (!head)
			return; /* out of memory: the report prints it all at the end */
		lv->head_done = 1;
	}
	if (lv->ref)
		sl_tr_step_row(row, sizeof row, step, loss, lv->ref[step - lv->first]);
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
		rc = sl_cli_usage("train",
		                  "--trace-%s chooses what the trace keeps: it needs "
		                  "--trace=FILE",
		                  ta.rec.step_hi ? "steps" : "devices");
	if (rc == SL_EXIT_OK && ta.rec.step_hi && ta.save)
		rc = sl_cli_usage("train",
		                  "--trace-steps: with --save the trace holds the final save, "
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
		if ((rc = sl_tr_reference("train", &a.m, ck, a.steps, ref0))) {
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
	struct live lv = {.out = sl_cli_report_stream(o.trace),
	                  .o = &o,
	                  .m = &a.m,
	                  .ref = ref,
	                  .r = &r,
	                  .first = first,
	                  .text = o.format == SL_FORMAT_TEXT,
	                  .prog = sl_cliprog_start("train", "steps", a.steps)};
	r.on_step = live_step;
	r.on_step_arg = &lv;
	/* What the run's trace keeps: nothing without --trace (no memory per
	 * event), else the steps and devices asked for. */
	sl_cluster_config run_cfg = o.sc.cluster;
	run_cfg.record = ta.rec;
	run_cfg.record.off = !o.trace;
	rc = sl_tr_run_layout(&run_cfg, &a.m, &a.l, a.steps, ref, &io, &r, &err);
	sl_cliprog_stop(lv.prog);
	if (rc) {
		sl_tr_outcome_free(&r);
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
			sl_tr_outcome_json(j, &r, &a.m, a.steps);
			json_object_set_new(j, "reference_losses",
			                    ref ? sl_tr_losses_json(ref, a.steps) : json_null());
			sl_tr_model_json(j, &a.m);
			json_object_set_new(j, "algorithm", json_string(sl_algo_name(a.l.algo)));
			if (ta.load || ta.save)
				json_object_set_new(
				    j, "checkpoint",
				    json_pack("{s:s?, s:I, s:s?, s:i}", "loaded_from", ta.load,
				              "loaded_step", (json_int_t)first, "saved_to", ta.save,
				              "save_every", ta.save_every));
			sl_report_cluster_json(j, sl_cluster_config_of(r.c), o.sc.preset,
			                       o.overrides);
			if (sl_report_json_print(out, j))
				status = SL_EXIT_FAIL;
		} else {
			sl_tr_train_text(out, &o, &a.m, a.steps, ref, &r, lv.head_done,
			                 ta.per_device);
			if (ta.load)
				fprintf(out,
				        "\nresumed      from %s at step %ld (saved at tp=%d pp=%d "
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
		sl_cli_error("train: wrong result: the losses differ from one device's by %.3g "
		             "(tolerance %g)",
		             r.max_rel, LOSS_TOLERANCE);
		status = SL_EXIT_FAIL;
	}
	sl_tr_outcome_free(&r);
	free(ref0);
	sl_ckpt_close(ck);
	return status;
}
