/* SPDX-License-Identifier: MIT */
/* cmd_sandbox.c - `shardlab sandbox`: the terminal interface on a scenario
 * given by the same options as `shardlab run`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "cli.h"
#include "tui.h"
#include "units.h"

static void sandbox_help(void)
{
	printf("Usage: shardlab sandbox [--strategy=single|colwise|rowwise] [--devices=N]\n"
	       "                        [--m=M --k=K --n=N] [OPTION...]\n"
	       "       shardlab sandbox --tp=T --pp=P --dp=D [training options] [OPTION...]\n\n"
	       "Opens the interactive view on the scenario: the devices and the links between\n"
	       "them, X, W and Y in the colours of the devices that own their blocks, a timeline\n"
	       "per device, and the figures.  Space plays, Right steps one operation, Left steps\n"
	       "back; [ and ] halve and double the link bandwidth, also mid-transfer; ? lists\n"
	       "every key; q quits.  It starts paused at time zero, at a speed that makes the\n"
	       "scenario last a few seconds (--slowdown sets another).  Without --m, --k or\n"
	       "--n on the realistic machine the product is 1024x4096x16384, where a split\n"
	       "over four pays (run's 1024x4096x4096 gives each of four H100s less than one\n"
	       "wave of output tiles, as long as the whole takes).\n\n");
	sl_opts_help(stdout, SL_CMD_SANDBOX, SL_KG_WORKLOAD, 1);
	putchar('\n');
	printf("With any layout or model option, the view shows one training step of that\n"
	       "layout, as 'shardlab train --steps=1' runs it: devices by their (tp, pp, dp)\n"
	       "coordinates, forward and backward by micro-batch on the timeline, the engine's\n"
	       "accounting, and the Megatron split or the pipeline stages (--seed seeds the\n"
	       "model too; the plots are for the product).\n\n");
	sl_opts_help(stdout, SL_CMD_SANDBOX, SL_KG_LAYOUT, 1);
	putchar('\n');
	sl_opts_help(stdout, SL_CMD_SANDBOX, SL_KG_MODEL, 1);
	putchar('\n');
	sl_opts_help(stdout, SL_CMD_SANDBOX, SL_KG_LOAD, 1);
	putchar('\n');
	sl_cli_help_cluster(SL_CMD_SANDBOX);
	printf("  (sandbox: --trace writes the trace of the run shown, on quitting; --format,\n"
	       "   or no terminal, prints the scenario's report as run does instead of the\n"
	       "   view: a product's, not a training layout's)\n");
	sl_opts_help(stdout, SL_CMD_SANDBOX, SL_KG_DRY_RUN, 0);
	printf("  (sandbox: up to %d devices; the title says 'dry run')\n", SL_MAX_FULL_DEVICES);
	sl_opts_help(stdout, SL_CMD_SANDBOX, SL_KG_DISPLAY, 1);
}

struct sargs {
	struct sl_tui_options t;
	sl_train_opts tr;
	int train;       /* a training option was given */
	int layout_axes; /* bits 0-2: --tp, --pp, --dp given */
	int model_given; /* a model option was given */
	const char *load;
};

static int own(void *ctx, int code, const char *arg, sl_err *err)
{
	struct sargs *sa = ctx;
	struct sl_tui_options *t = &sa->t;
	sl_knob_val v;
	const sl_knob *k = sl_knob_of(code);
	if (k && sl_knob_parse(k, "--", arg, &v, err))
		return SL_EINVAL;
	switch (code) {
	case SL_OPT_NO_COLOR:
		t->no_color = 1;
		return SL_OK;
	case SL_OPT_ASCII:
		t->ascii = 1;
		return SL_OK;
	case SL_OPT_HIGH_CONTRAST:
		t->high_contrast = 1;
		return SL_OK;
	case SL_OPT_NO_MOUSE:
		t->no_mouse = 1;
		return SL_OK;
	case SL_OPT_PLAY:
		t->play = 1;
		return SL_OK;
	case SL_OPT_LOAD:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--load: empty directory name");
		sa->load = arg;
		return SL_OK;
	case SL_OPT_FPS:
		t->fps = v.d;
		return SL_OK;
	case SL_OPT_SNAPSHOT:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--snapshot: empty file name");
		t->snapshot = arg;
		return SL_OK;
	default:
		return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	}
}

/* The view of a scenario, after the command line has been checked. */
static int open_view(const sl_opts *o, const struct sl_tui_options *t)
{
	int status = sl_tui_main(&o->sc, t);
	fflush(stdout);
	return status;
}

/* One training step of the layout the options give, as `shardlab train`
 * checks and runs it (--seed is the gemm group's, which comes first). */
static int train_view(sl_opts *o, struct sargs *sa)
{
	sl_train_opts *a = &sa->tr;
	static const int product[] = {SL_OPT_STRATEGY, SL_OPT_M, SL_OPT_K, SL_OPT_N};
	for (size_t i = 0; i < sizeof product / sizeof product[0]; i++)
		if (sl_opts_given(o, product[i]))
			return sl_cli_usage(
			    "sandbox", "--%s is for the sharded product, not a training layout",
			    sl_opts_name(product[i]));
	a->l.algo = o->sc.gemm.algo;
	sl_train_layout_defaults(&a->m, &a->l, a->given_m, a->given_v);
	static sl_workload pt;
	pt.kind = SL_WL_TRAIN;
	pt.m = a->m;
	pt.l = a->l;
	sl_err err = {0};
	int rc;
	if (sl_workload_ops_of(pt.kind)->check(&pt, o->sc.cluster.devices, &err))
		return sl_cli_usage("sandbox", "%s", err.msg);
	if (!o->sc.cluster.timing_only &&
	    (rc = sl_model_check_values(&a->m, &err) ? sl_cli_usage("sandbox", "%s", err.msg) : 0))
		return rc;
	if (!o->sc.cluster.timing_only &&
	    (rc = sl_cli_host_fits_or_dry("sandbox", 2 * sl_train_host_bytes(&a->m, &a->l),
	                                  "this model and layout")))
		return rc;
	sl_cluster_config cfg;
	if (sl_train_cluster_config(&o->sc.cluster, o->sc.cluster.devices, &cfg, &err))
		return sl_cli_usage("sandbox", "%s", err.msg);
	o->sc.cluster = cfg;
	if (o->sc.gemm.split == SL_SPLIT_SINGLE)
		o->sc.gemm.split = SL_SPLIT_COL; /* all the devices */
	sa->t.workload = &pt;
	sa->t.trace = o->trace;
	return open_view(o, &sa->t);
}

static int too_many_devices(int devices)
{
	return sl_cli_usage(
	    "sandbox",
	    "%d devices: the sandbox shows up to %d; 'shardlab train --dry-run' and "
	    "'shardlab plan' take up to %d",
	    devices, SL_MAX_FULL_DEVICES, SL_MAX_DEVICES);
}

/* A checkpoint resharded to the layout of the options, on that layout's
 * devices (sl_ckpt_reshard): the plans of reads and writes for the views. */
static int reshard_view(sl_opts *o, struct sargs *sa)
{
	const char *cmd = "sandbox";
	sl_train_opts *a = &sa->tr;
	static const int product[] = {SL_OPT_STRATEGY, SL_OPT_M, SL_OPT_K, SL_OPT_N, SL_OPT_SEED};
	for (size_t i = 0; i < sizeof product / sizeof product[0]; i++)
		if (sl_opts_given(o, product[i]))
			return sl_cli_usage(cmd, "--%s is for the sharded product, not --load",
			                    sl_opts_name(product[i]));
	if (sa->model_given)
		return sl_cli_usage(cmd,
		                    "--load takes the model from the checkpoint: drop the model "
		                    "options");
	static sl_ckpt *ck;
	sl_err err = {0};
	if (sl_ckpt_open(sa->load, &ck, &err)) {
		sl_cli_error("%s: %s", cmd, err.msg);
		return SL_EXIT_FAIL;
	}
	const sl_ckpt_info *ci = sl_ckpt_info_of(ck);
	const sl_layout *saved = &ci->layout;
	sl_layout *l = &a->l;
	if (!(sa->layout_axes & 1))
		l->tp = saved->tp;
	if (!(sa->layout_axes & 2))
		l->pp = saved->pp;
	/* (a checkpoint's replicas are dp x cp devices) */
	if (!(sa->layout_axes & 4))
		l->dp = saved->dp % l->cp == 0 ? saved->dp / l->cp : saved->dp;
	if (!sl_opts_given(o, SL_OPT_DEVICES))
		o->sc.cluster.devices = sl_layout_devices(l);
	if (o->sc.cluster.devices > SL_MAX_FULL_DEVICES) {
		sl_ckpt_close(ck);
		return too_many_devices(o->sc.cluster.devices);
	}
	l->zero = 0; /* a reshard writes from every DP rank 0; nothing to gather */
	l->algo = o->sc.gemm.algo;
	sl_train_layout_defaults(&ci->model, l, a->given_m, a->given_v);
	int rc = SL_EXIT_OK;
	sl_train *tr = NULL;
	static sl_workload pt;
	static sl_ckpt_move *reads, *writes;
	pt.kind = SL_WL_RESHARD;
	pt.m = ci->model;
	pt.l = *l;
	pt.ck = ck;
	if (sl_workload_ops_of(pt.kind)->check(&pt, o->sc.cluster.devices, &err))
		rc = sl_cli_usage(cmd, "%s", err.msg);
	else if ((rc = sl_cli_host_fits(cmd, 16.0 * (double)sl_model_nparams(&ci->model) * l->tp,
	                                "resharding this checkpoint")))
		;
	else if (!(tr = sl_train_create(&ci->model, l, o->sc.cluster.devices, &err)) ||
	         sl_ckpt_read_plan(ck, tr, &reads, &pt.nreads, &err) ||
	         sl_ckpt_write_plan(tr, &writes, &pt.nwrites, &err))
		rc = sl_cli_fail(cmd, &err);
	sl_train_destroy(tr);
	sl_cluster_config cfg;
	if (rc == SL_EXIT_OK &&
	    sl_train_cluster_config(&o->sc.cluster, o->sc.cluster.devices, &cfg, &err))
		rc = sl_cli_usage(cmd, "%s", err.msg);
	if (rc == SL_EXIT_OK) {
		o->sc.cluster = cfg;
		if (o->sc.gemm.split == SL_SPLIT_SINGLE)
			o->sc.gemm.split = SL_SPLIT_COL;
		pt.reads = reads;
		pt.writes = writes;
		sa->t.workload = &pt;
		sa->t.trace = o->trace;
		/* ck and the plans stay: a background thread of the view may still
		 * be reading them when it returns (the process ends next). */
		return open_view(o, &sa->t);
	}
	free(reads);
	free(writes);
	sl_ckpt_close(ck);
	return rc;
}

int sl_cmd_sandbox(int argc, char **argv)
{
	sl_opts o;
	struct sargs sa = {0};
	sl_train_opts_init(&sa.tr, &o, 1);
	sa.tr.devices_follow = 1;
	sl_tui_options_default(&sa.t);
	struct sl_tui_options *tp = &sa.t;
	int rc = sl_cli_parse("sandbox", SL_CMD_SANDBOX, argc, argv, &o, own, &sa, sandbox_help);
	if (rc != SL_CLI_GO)
		return rc;
	sa.model_given = sl_opts_given_group(&o, SL_KG_MODEL);
	sa.train = sa.model_given || sl_opts_given_group(&o, SL_KG_LAYOUT);
	sa.layout_axes = sl_opts_given(&o, SL_OPT_TP) | sl_opts_given(&o, SL_OPT_PP) << 1 |
	                 sl_opts_given(&o, SL_OPT_DP) << 2;
	sl_train_opts_model_finish(&sa.tr);
	/* The screen is stdout; the view writes its trace to a file on quitting. */
	if (o.trace && strcmp(o.trace, "-") == 0)
		return sl_cli_usage("sandbox",
		                    "--trace=- is for run, coll and train: give a file name");
	if (o.trace && (rc = sl_cli_check_output("sandbox", o.trace)))
		return rc;
	/* The views draw every device; more are for train --dry-run and plan. */
	if (o.sc.cluster.devices > SL_MAX_FULL_DEVICES)
		return too_many_devices(o.sc.cluster.devices);
	if (sa.load && o.sc.cluster.timing_only)
		return sl_cli_usage("sandbox", "--dry-run: --load shows stored values being moved");
	/* The first screen must not teach the opposite of lesson 6.  On the
	 * realistic machine run's default product (1024x4096x4096) split four
	 * ways computes no faster per device: a quarter of its 256x128 output
	 * tiles still takes one whole wave of the GPU, so no link makes the
	 * split pay.  Without a shape given, the sandbox's is four times as
	 * wide: one wave a device against four on one, and the crossover
	 * inside the plot's range. */
	if (!sa.train && !sa.load && o.sc.cluster.efficiency == SL_EFF_REALISTIC &&
	    !sl_opts_given(&o, SL_OPT_M) && !sl_opts_given(&o, SL_OPT_K) &&
	    !sl_opts_given(&o, SL_OPT_N))
		o.sc.gemm.n = 16384;
	/* Headless (--format, or no terminal): the product's report, as run
	 * gives it.  A training layout's report is train's; without a
	 * terminal its view checks its options, then says it needs one. */
	int fmt = sl_opts_given(&o, SL_OPT_FORMAT);
	if (fmt && (sa.train || sa.load))
		return sl_cli_usage(
		    "sandbox", "--format is the headless report of a product: for a "
		               "training layout's, use 'shardlab train' with the same options");
	if (fmt && o.format == SL_FORMAT_CSV)
		return sl_cli_usage("sandbox",
		                    "--format=csv is for the tables of coll, compare and plan");
	if (fmt && sa.t.snapshot)
		return sl_cli_usage("sandbox", "--snapshot draws the view: drop --format");
	if (!sa.train && !sa.load && !sa.t.snapshot &&
	    (fmt || !isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		if (!fmt)
			sl_cli_error(
			    "sandbox: no terminal: the scenario's report instead of the view");
		return sl_run_and_report("sandbox", &o);
	}
	if (sa.load)
		return reshard_view(&o, &sa);
	if (sa.train)
		return train_view(&o, &sa);
	struct sl_tui_options t = *tp;
	/* A shape that cannot be split is a usage error, as for run. */
	const sl_scenario *sc = &o.sc;
	sl_err err = {0};
	sl_workload w = sl_workload_product(&sc->gemm);
	const sl_workload_ops *ops = sl_workload_ops_of(w.kind);
	if (ops->check(&w, ops->devices(&w, &sc->cluster), &err))
		return sl_cli_usage("sandbox", "%s", err.msg);
	t.trace = o.trace;
	return open_view(&o, &t);
}

int sl_sandbox_default(sl_scenario *sc)
{
	sl_opts o;
	sl_err err = {0};
	sl_opts_init(&o);
	if (sl_opts_finish(&o, &err))
		return sl_cli_fail("sandbox", &err);
	*sc = o.sc;
	return SL_EXIT_OK;
}
