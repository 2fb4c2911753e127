/* SPDX-License-Identifier: MIT */
/* cmd_compare.c - `shardlab compare`: the same model trained under several
 * layouts, one table (each layout run as train runs it: trainrun.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"
#include "cli.h"
#include "cliprogress.h"
#include "hwfile.h"
#include "report.h"
#include "train.h"
#include "sbs.h"
#include "trainrun.h"
#include "tui.h"
#include "units.h"
#include "textwrap.h"

/* What compare reads itself: the layouts and the side-by-side screen's. */
struct cargs {
	sl_train_opts *a;
	int side_by_side;
	struct sl_tui_options t;
};

static int own_option(void *ctx, int code, const char *arg, sl_err *err)
{
	struct cargs *c = ctx;
	switch (code) {
	case SL_OPT_LAYOUTS:
		c->a->layouts = arg;
		return SL_OK;
	case SL_OPT_SIDE_BY_SIDE:
		c->side_by_side = 1;
		return SL_OK;
	case SL_OPT_NO_COLOR:
		c->t.no_color = 1;
		return SL_OK;
	case SL_OPT_ASCII:
		c->t.ascii = 1;
		return SL_OK;
	case SL_OPT_HIGH_CONTRAST:
		c->t.high_contrast = 1;
		return SL_OK;
	case SL_OPT_SNAPSHOT:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--snapshot: empty file name");
		c->t.snapshot = arg;
		return SL_OK;
	default:
		return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	}
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
	putchar('\n');
	sl_opts_help(stdout, SL_CMD_COMPARE, SL_KG_DISPLAY, 1);
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
			return sl_fail(
			    err, SL_EINVAL,
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
		else if (strncmp(rest, "zero", 4) == 0 && rest[4] >= '1' && rest[4] <= '3' &&
		         !rest[5])
			l->zero = rest[4] - '0';
		else
			return sl_fail(err, SL_EINVAL,
			               "--layouts: unknown '%s' in '%.*s' (one of: gpipe, 1f1b, "
			               "interleaved, sp, zero1, zero2, zero3)",
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
			len += snprintf(buf + len, n - (size_t)len, "%s%s=%d", len ? " x " : "",
			                nm[i], size[i]);
	if (l->pp > 1)
		len += snprintf(buf + len, n - (size_t)len, " %s", sl_sched_name(l->schedule));
	if (l->seq_parallel)
		len += snprintf(buf + len, n - (size_t)len, " sp");
	if (l->zero > 0)
		snprintf(buf + len, n - (size_t)len, " zero%d", l->zero);
}

/* The sentence under compare's table: the fastest layout, and when no
 * split beats one device, why (its step is mostly communication). */
static void compare_verdict(const struct outcome *res, char (*skip)[sizeof((sl_err){0}).msg],
                            int nc)
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
		         res[best].name, speedup, sl_tr_fmt_t(comm, t1),
		         sl_tr_fmt_t(p->step_s, t2));
	else
		snprintf(
		    words, sizeof words,
		    "No split beats one device here: one device computes the step in %s, and "
		    "the fastest split, %s, spends %s of its %s step communicating. The model "
		    "is too small for these links; try a larger --hidden or --batch, or slower "
		    "devices (--flops).",
		    sl_tr_fmt_t(res[best].single_s, t1), res[best].name, sl_tr_fmt_t(comm, t2),
		    sl_tr_fmt_t(p->step_s, t3));
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
		sl_tr_dev_peaks(p, &mem, &sent);
		/* The name holds no comma or quote ("tp=2 x dp=2 sp"). */
		printf("%s,%d,%d,%d,%d,%.9g,%.9g,%llu,%llu,%.9g,%.9g,%s\n", res[i].name, cand[i].tp,
		       cand[i].pp, cand[i].dp, p->ndev, p->step_s, res[i].single_s / p->step_s,
		       (unsigned long long)mem, (unsigned long long)sent, p->bubble_fraction,
		       p->losses[steps - 1], res[i].max_rel <= LOSS_TOLERANCE ? "pass" : "fail");
	}
}

/* The side-by-side screen of the layouts run: their figures and the
 * events of their last step (taken out of the runs' traces). */
static int side_by_side(const sl_opts *o, const sl_train_opts *a, struct outcome *res,
                        char (*skip)[sizeof((sl_err){0}).msg], int nc,
                        const struct sl_tui_options *t)
{
	static sl_sbs s;
	memset(&s, 0, sizeof s);
	char words[320];
	sl_tr_model_words(&a->m, words, sizeof words);
	snprintf(s.model, sizeof s.model, "%s%s", words, sl_tr_attention_words(&a->m, &a->l));
	/* The hardware as the table's header says it, on one line. */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f) {
		sl_report_hardware_text(f, "", &o->sc.cluster, o->sc.preset, o->overrides);
		fclose(f);
		/* Its first two lines' figures, after their heading words. */
		size_t at = 0;
		const char *p = buf;
		for (int k = 0; k < 2 && p && *p; k++) {
			p += strcspn(p, " ");
			p += strspn(p, " ");
			int n = (int)strcspn(p, "\n");
			at += (size_t)snprintf(s.machine + at, sizeof s.machine - at, "%s%.*s",
			                       k ? "; " : "", n, p);
			if (at >= sizeof s.machine)
				break;
			p = p[n] ? p + n + 1 : NULL;
		}
	}
	free(buf);
	for (int i = 0; i < nc; i++) {
		if (skip[i][0]) {
			sl_cli_error("compare: skipped %s: %s", res[i].name, skip[i]);
			continue;
		}
		sl_sbs_band *b = &s.band[s.n];
		const sl_train_report *p = &res[i].rep;
		snprintf(b->name, sizeof b->name, "%s", res[i].name);
		b->ndev = p->ndev;
		b->step_s = p->step_s;
		sl_tr_dev_peaks(p, &b->mem_peak, &b->sent);
		b->dev = malloc((size_t)p->ndev * sizeof *b->dev);
		if (!b->dev || sl_trace_take(sl_cluster_trace(res[i].c), &b->ev)) {
			free(b->dev);
			sl_sbs_free(&s);
			sl_cli_error("compare: out of host memory");
			return SL_EXIT_FAIL;
		}
		s.n++;
		memcpy(b->dev, p->dev, (size_t)p->ndev * sizeof *b->dev);
		sl_sbs_band_span(b);
	}
	int st = sl_sbs_main(&s, t);
	sl_sbs_free(&s);
	return st;
}

int sl_cmd_compare(int argc, char **argv)
{
	sl_opts o;
	sl_train_opts a;
	struct cargs ca = {.a = &a};
	sl_tui_options_default(&ca.t);
	sl_train_opts_init(&a, &o, 3);
	o.sc.cluster.devices = 4;
	o.csv_ok = 1;
	int rc =
	    sl_cli_parse("compare", SL_CMD_COMPARE, argc, argv, &o, own_option, &ca, compare_help);
	if (rc != SL_CLI_GO)
		return rc;
	sl_train_opts_model_finish(&a);
	int N = o.sc.cluster.devices;
	int sbs = ca.side_by_side;
	if (sbs && o.format != SL_FORMAT_TEXT)
		return sl_cli_usage("compare", "--side-by-side draws a screen: drop --format");
	if (!sbs && (ca.t.snapshot || ca.t.no_color || ca.t.ascii || ca.t.high_contrast))
		return sl_cli_usage("compare", "--%s is for --side-by-side",
		                    ca.t.snapshot   ? "snapshot"
		                    : ca.t.no_color ? "no-color"
		                    : ca.t.ascii    ? "ascii"
		                                    : "high-contrast");
	/* compare writes no trace: its runs keep no events, but for the
	 * side-by-side screen's last step. */
	o.sc.cluster.record.off = !sbs;
	o.sc.cluster.record.step_lo = o.sc.cluster.record.step_hi = sbs ? a.steps : 0;
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
				return sl_cli_usage("compare", "--layouts: at most %d layouts",
				                    MAX_LAYOUTS);
			if (len == 0 || parse_layout(p, len, &cand[nc++], &err))
				return sl_cli_usage("compare", "%s",
				                    len ? err.msg : "--layouts: an empty item");
			p += len;
			if (*p == ',')
				p++;
		}
	} else if (sbs) {
		/* The three ways to split over N: tensor, pipeline, data. */
		cand[nc++].tp = N;
		cand[nc++].pp = N;
		cand[nc++].dp = N;
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
	if (sbs && nc > SL_SBS_MAX)
		return sl_cli_usage("compare", "--side-by-side shows up to %d layouts (%d given)",
		                    SL_SBS_MAX, nc);
	double *ref = calloc((size_t)a.steps, sizeof *ref);
	struct outcome *res = calloc((size_t)nc, sizeof *res);
	char(*skip)[sizeof err.msg] = calloc((size_t)nc, sizeof *skip);
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
		} else if ((rc = sl_cli_host_fits("compare", sl_train_host_bytes(&a.m, &cand[i]),
		                                  res[i].name))) {
			status = rc;
			break;
		}
	}
	/* The side-by-side screen comes after its runs: say what runs
	 * meanwhile, on the terminal it will take over. */
	int tell = sbs && !ca.t.snapshot && isatty(STDERR_FILENO);
	if (tell && status == SL_EXIT_OK)
		fprintf(stderr, "compare: running one device, the reference...");
	if (status == SL_EXIT_OK)
		status = sl_tr_reference("compare", &a.m, NULL, a.steps, ref);
	double w0 = sl_tr_wall_now();
	for (int i = 0; i < nc && status == SL_EXIT_OK; i++) {
		if (skip[i][0])
			continue;
		if (tell)
			fprintf(stderr, "\rcompare: running %s (%d of %d)...\033[K", res[i].name,
			        i + 1, nc);
		if (sl_tr_run_layout(base, &a.m, &cand[i], a.steps, ref, NULL, &res[i], &err)) {
			if (err.code == SL_EDEVMEM && !explicit) {
				snprintf(skip[i], sizeof skip[i], "%s", err.msg);
				sl_tr_outcome_free(&res[i]);
				continue;
			}
			status = sl_cli_fail("compare", &err);
		}
	}
	if (tell)
		fprintf(stderr, "\r\033[K");
	double wall = sl_tr_wall_now() - w0;
	int wrong = 0;
	for (int i = 0; i < nc; i++)
		if (res[i].c && !(res[i].max_rel <= LOSS_TOLERANCE))
			wrong = 1;
	if (status == SL_EXIT_OK && sbs) {
		status = side_by_side(&o, &a, res, skip, nc, &ca.t);
	} else if (status == SL_EXIT_OK && o.format == SL_FORMAT_JSON) {
		json_t *j = json_object();
		sl_tr_model_json(j, &a.m);
		json_object_set_new(j, "steps", json_integer(a.steps));
		json_object_set_new(j, "algorithm", json_string(sl_algo_name(o.sc.gemm.algo)));
		sl_report_cluster_json(j, base, o.sc.preset, o.overrides);
		json_object_set_new(j, "reference_losses", sl_tr_losses_json(ref, a.steps));
		json_object_set_new(j, "wall_s", sl_tr_jreal(wall));
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
			sl_tr_outcome_json(x, &res[i], &a.m, a.steps);
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
		sl_tr_model_words(&a.m, words, sizeof words);
		printf("# model: %s%s\n", words, sl_tr_attention_words(&a.m, &a.l));
		sl_tr_data_words(&a.m, words, sizeof words);
		printf("# data: %s\n", words);
		sl_report_hardware_text(stdout, "# ", base, o.sc.preset, o.overrides);
		printf(
		    "# speedup against one device's step; memory and bytes sent: the largest of\n"
		    "# any device, per step; loss: the last step's, checked against one "
		    "device's\n\n");
		printf("%-26s %7s %11s %8s %11s %11s %8s %12s\n", "layout", "devices", "step time",
		       "speedup", "peak mem", "sent", "bubble", "loss");
		for (int i = 0; i < nc; i++) {
			if (skip[i][0])
				continue;
			const sl_train_report *p = &res[i].rep;
			uint64_t mem, sent;
			sl_tr_dev_peaks(p, &mem, &sent);
			printf("%-26s %7d %11s %8.3g %11s %11s %8.4f %10.6f %s\n", res[i].name,
			       p->ndev, sl_tr_fmt_t(p->step_s, t1), res[i].single_s / p->step_s,
			       sl_tr_fmt_b((double)mem, t2), sl_tr_fmt_b((double)sent, t3),
			       p->bubble_fraction, p->losses[a.steps - 1],
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
		sl_tr_outcome_free(&res[i]);
	free(res);
	free(skip);
	free(ref);
	return status;
}
