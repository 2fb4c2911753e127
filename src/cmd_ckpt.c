/* SPDX-License-Identifier: MIT */
/* cmd_ckpt.c - `shardlab ckpt inspect|verify|reshard DIR`: look into a
 * sharded checkpoint, check it, or rewrite it offline for another layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "cli.h"
#include "report.h"
#include "trace.h"
#include "units.h"

/* The subcommands and their command bits (the knob table's). */
static const struct {
	const char *name;
	unsigned bit;
} subs[] = {{"inspect", SL_CMD_INSPECT}, {"verify", SL_CMD_VERIFY}, {"reshard", SL_CMD_RESHARD}};
#define SUB_LIST "inspect, verify, reshard"

static void ckpt_help(void)
{
	printf("Usage: shardlab ckpt inspect DIR [--format=text|json]\n"
	       "       shardlab ckpt verify DIR [--format=text|json]\n"
	       "       shardlab ckpt reshard DIR [--tp=T] [--pp=P] [--dp=D] --out=DIR2\n"
	       "                             [--mesh-order=ORDER] [--stage-layers=LIST]\n"
	       "                             [--storage-bandwidth=RATE] [--trace=FILE]\n\n"
	       "A checkpoint is a directory that `shardlab train --save=DIR` writes: a\n"
	       "manifest (manifest.json) and one data file per writing device.\n\n"
	       "  inspect   the manifest, readably: model, layout at save, training state,\n"
	       "            files, and every tensor's split and chunks (--format=json: the\n"
	       "            manifest itself)\n"
	       "  verify    read every chunk and check its checksum, and that the chunks\n"
	       "            tile every tensor exactly\n"
	       "  reshard   rewrite the checkpoint for another layout into DIR2, on emulated\n"
	       "            devices: each new device reads the stored chunks its new shards\n"
	       "            overlap, then writes its own\n\n");
	sl_opts_help(stdout, SL_CMD_RESHARD, SL_KG_RESHARD, 1);
	sl_opts_help(stdout, SL_CMD_RESHARD, SL_KG_LAYOUT, 0);
	sl_opts_help(stdout, SL_CMD_RESHARD, SL_KG_OUTPUT, 0);
	printf("  (--tp, --pp, --dp, --mesh-order and --stage-layers: the new layout; each\n"
	       "  defaults to the saved one, a saved list of stage layers to even on another\n"
	       "  pp)\n\n"
	       "Exit status: 0; 1 if the checkpoint is missing or damaged or writing fails;\n"
	       "2 for a bad command line (--out a file or a non-checkpoint directory\n"
	       "included) or a layout it cannot be resharded to.\n"
	       "See shardlab(1).\n");
}

struct ckpt_args {
	int tp, pp, dp;
	const char *out;
	int mesh_given;
	sl_axis order[SL_NAXES];
	int stages_given;
	sl_layout stages; /* --stage-layers's */
	double storage_bw;
};

static int ckpt_option(void *ctx, int code, const char *arg, sl_err *err)
{
	struct ckpt_args *a = ctx;
	sl_knob_val v;
	const sl_knob *k = sl_knob_of(code);
	if (!k)
		return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	if (sl_knob_parse(k, "--", arg, &v, err))
		return SL_EINVAL;
	switch (code) {
	case SL_OPT_TP:
	case SL_OPT_PP:
	case SL_OPT_DP:
		*(code == SL_OPT_TP ? &a->tp : code == SL_OPT_PP ? &a->pp : &a->dp) = (int)v.d;
		return SL_OK;
	case SL_OPT_OUT:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--out: empty directory name");
		a->out = arg;
		return SL_OK;
	case SL_OPT_ORDER:
		if (sl_mesh_order_parse(arg, a->order))
			return sl_fail(
			    err, SL_EINVAL,
			    "--mesh-order: '%s' must name tp, pp and dp once each, as tp-dp-pp",
			    arg);
		a->mesh_given = 1;
		return SL_OK;
	case SL_OPT_STAGE_LAYERS: {
		sl_err e = {0};
		if (sl_stage_layers_parse(arg, &a->stages, &e))
			return sl_fail(err, SL_EINVAL, "--stage-layers: %s", e.msg);
		a->stages_given = 1;
		return SL_OK;
	}
	case SL_OPT_STORAGE_BW:
		a->storage_bw = v.d;
		return SL_OK;
	default:
		return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	}
}

/* Take DIR, the one argument that is not an option (or an option's value),
 * out of argv; the rest stays for sl_cli_parse.  Returns its index or 0. */
static int take_dir(int argc, char **argv, const struct option *lo)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			return i + 1 < argc ? i + 1 : 0;
		if (a[0] != '-' || a[1] == '\0')
			return i;
		if (strncmp(a, "--", 2) != 0 || strchr(a, '='))
			continue;
		for (int j = 0; lo[j].name; j++)
			if (strcmp(lo[j].name, a + 2) == 0 && lo[j].has_arg == required_argument)
				i++; /* its value */
	}
	return 0;
}

static int open_or_fail(const char *cmd, const char *dir, sl_ckpt **ck)
{
	sl_err err = {0};
	if (sl_ckpt_open(dir, ck, &err)) {
		sl_cli_error("%s: %s", cmd, err.msg);
		return SL_EXIT_FAIL;
	}
	return SL_EXIT_OK;
}

static const char *const zero_words[4] = {"", ", ZeRO-1", ", ZeRO-2", ", ZeRO-3"};

static void print_layout(FILE *f, const sl_layout *l, int devices)
{
	char order[16];
	fprintf(f, "tp=%d pp=%d dp=%d on %d device%s, mesh order %s, schedule %s", l->tp, l->pp,
	        l->dp, devices, devices == 1 ? "" : "s",
	        sl_mesh_order_name(l->order, order, sizeof order), sl_sched_name(l->schedule));
	if (l->chunks > 1)
		fprintf(f, " (%d chunks per device)", l->chunks);
	if (l->stages != SL_STAGES_EVEN) {
		char st[8 * SL_MAX_STAGE_LIST];
		fprintf(f, ", stage layers %s", sl_stage_layers_name(l, st, sizeof st));
	}
	fprintf(f, ", %d micro-batch%s%s%s\n", l->microbatches, l->microbatches == 1 ? "" : "es",
	        l->seq_parallel ? ", sequence parallel" : "",
	        zero_words[l->zero < 4 ? l->zero : 0]);
}

static void print_inspect(const sl_ckpt *ck)
{
	const sl_ckpt_info *in = sl_ckpt_info_of(ck);
	const sl_model_spec *m = &in->model;
	char b[32];
	printf("checkpoint  %s (format %d, generation %ld)\n", sl_ckpt_dir(ck), in->format_version,
	       in->generation);
	char words[160];
	sl_model_describe(m, words, sizeof words);
	printf("model       %s v%d: %s (%s), float32\n", SL_CKPT_ARCH_NAME, in->arch_version, words,
	       m->heads > 0 ? "attention + mlp" : "mlp");
	printf("            %zu parameters, each with its two Adam moments\n", sl_model_nparams(m));
	printf("saved at    ");
	print_layout(stdout, &in->layout, in->devices);
	printf("training    step %ld (Adam step %ld, next batch %ld), seed %llu, batch %d x %d "
	       "token%s, Adam lr %g beta1 %g beta2 %g eps %g\n",
	       in->step, in->adam_step, in->next_batch, (unsigned long long)m->seed, m->batch,
	       m->seq, m->seq == 1 ? "" : "s", (double)m->lr, (double)m->beta1, (double)m->beta2,
	       (double)m->eps);
	printf("files       %d, %s\n", in->nfiles,
	       sl_fmt_bytes((double)in->data_bytes, b, sizeof b));
	for (int f = 0; f < in->nfiles; f++)
		printf("  %-22s written by device %-3d %s\n", in->files[f].name,
		       in->files[f].writer, sl_fmt_bytes((double)in->files[f].bytes, b, sizeof b));
	printf("tensors     %d, in %d chunks (each: parameters, then first and second moments)\n",
	       in->ntensors, in->nchunks);
	for (int t = 0; t < in->ntensors; t++) {
		const sl_ckpt_tensor *T = &in->tensors[t];
		char shape[32], split[48];
		snprintf(shape, sizeof shape, "[%d, %d]", T->rows, T->cols);
		if (T->axis < 0)
			snprintf(split, sizeof split, "replicated");
		else if (T->unit > 1)
			snprintf(split, sizeof split, "%s (axis %d, units of %d)",
			         sl_tsplit_name(T->split), T->axis, T->unit);
		else
			snprintf(split, sizeof split, "%s (axis %d)", sl_tsplit_name(T->split),
			         T->axis);
		printf("  %-26s %-11s %-28s %d chunk%s\n", T->name, shape, split, T->nchunks,
		       T->nchunks == 1 ? "" : "s");
		for (int k = 0; k < T->nchunks; k++) {
			const sl_ckpt_chunk *c = &T->chunks[k];
			char rect[64];
			snprintf(rect, sizeof rect, "rows %d-%d, cols %d-%d", c->off[0],
			         c->off[0] + c->shape[0] - 1, c->off[1],
			         c->off[1] + c->shape[1] - 1);
			printf(
			    "    chunk %-4d device %-3d (tp %d pp %d dp %d)  %-24s %s @ %llu, %s, "
			    "crc32 %08x\n",
			    c->id, c->owner, c->tp, c->pp, c->dp, rect, in->files[c->file].name,
			    (unsigned long long)c->byte_offset,
			    sl_fmt_bytes((double)c->byte_length, b, sizeof b), c->crc32);
		}
	}
}

static int cmd_inspect(const char *dir, const sl_opts *o)
{
	sl_ckpt *ck;
	int rc = open_or_fail("ckpt inspect", dir, &ck);
	if (rc)
		return rc;
	int status = SL_EXIT_OK;
	if (o->format == SL_FORMAT_JSON) {
		/* The report's versions, and the manifest as it is on disk. */
		json_t *m = json_loads(sl_ckpt_manifest_text(ck), 0, NULL), *j = json_object();
		if (m && j && json_object_set_new(j, "manifest", m) == 0) {
			m = NULL;
			if (sl_report_json_print(stdout, j))
				status = SL_EXIT_FAIL;
		} else {
			json_decref(m);
			json_decref(j);
			sl_cli_error("ckpt inspect: out of host memory");
			status = SL_EXIT_FAIL;
		}
	} else {
		print_inspect(ck);
	}
	sl_ckpt_close(ck);
	return sl_cli_flush(status);
}

static int cmd_verify(const char *dir, const sl_opts *o)
{
	sl_ckpt *ck;
	int rc = open_or_fail("ckpt verify", dir, &ck);
	if (rc)
		return rc;
	sl_err err = {0};
	if (sl_ckpt_verify(ck, &err)) {
		sl_cli_error("ckpt verify: %s", err.msg);
		sl_ckpt_close(ck);
		return SL_EXIT_FAIL;
	}
	const sl_ckpt_info *in = sl_ckpt_info_of(ck);
	int status = SL_EXIT_OK;
	if (o->format == SL_FORMAT_JSON) {
		/* What the text says, in the report's scheme. */
		json_t *j = json_object();
		json_object_set_new(j, "checkpoint", json_string(dir));
		json_object_set_new(j, "ok", json_true());
		json_object_set_new(j, "tensors", json_integer(in->ntensors));
		json_object_set_new(j, "chunks", json_integer(in->nchunks));
		json_object_set_new(j, "checksums_matched", json_integer(in->nchunks));
		json_object_set_new(j, "files", json_integer(in->nfiles));
		json_object_set_new(j, "data_bytes", json_integer((json_int_t)in->data_bytes));
		json_object_set_new(j, "step", json_integer(in->step));
		if (sl_report_json_print(stdout, j))
			status = SL_EXIT_FAIL;
	} else {
		char b[32];
		printf("%s: ok: %d tensors tiled exactly by %d chunks; all %d checksums match (%d "
		       "file%s, %s); step %ld\n",
		       dir, in->ntensors, in->nchunks, in->nchunks, in->nfiles,
		       in->nfiles == 1 ? "" : "s",
		       sl_fmt_bytes((double)in->data_bytes, b, sizeof b), in->step);
	}
	sl_ckpt_close(ck);
	return sl_cli_flush(status);
}

static int cmd_reshard(const char *dir, const sl_opts *o, const struct ckpt_args *a)
{
	const char *cmd = "ckpt reshard";
	if (!a->out)
		return sl_cli_usage(cmd,
		                    "--out=DIR2 is required: where to write the new checkpoint");
	int rc = SL_OK;
	if (o->trace && (rc = sl_cli_check_output(cmd, o->trace)))
		return rc;
	sl_ckpt *ck;
	if ((rc = open_or_fail(cmd, dir, &ck)))
		return rc;
	const sl_ckpt_info *in = sl_ckpt_info_of(ck);
	/* The new layout: the saved mesh order and algorithm, a plain schedule
	 * (the checkpoint holds no trace of how steps were scheduled). */
	sl_layout l;
	sl_layout_default(&l);
	l.tp = a->tp ? a->tp : in->layout.tp;
	l.pp = a->pp ? a->pp : in->layout.pp;
	l.dp = a->dp ? a->dp : in->layout.dp;
	memcpy(l.order, a->mesh_given ? a->order : in->layout.order, sizeof l.order);
	l.algo = in->layout.algo;
	/* The stages' layers as given; else the saved rule, or the saved list
	 * on as many stages */
	if (a->stages_given)
		sl_layout_copy_stages(&l, &a->stages);
	else if (in->layout.stages != SL_STAGES_LIST || l.pp == in->layout.pp)
		sl_layout_copy_stages(&l, &in->layout);
	int ndev = l.tp * l.pp * l.dp;
	sl_err err = {0};
	if (ndev > SL_MAX_DEVICES || sl_ckpt_check_target(ck, &in->model, &l, ndev, &err)) {
		if (ndev > SL_MAX_DEVICES)
			sl_fail(&err, SL_EINVAL, "tp*pp*dp = %d exceeds %d devices", ndev,
			        SL_MAX_DEVICES);
		sl_ckpt_close(ck);
		return sl_cli_usage(cmd, "%s", err.msg);
	}
	if (sl_ckpt_check_dest(a->out, &err)) {
		sl_ckpt_close(ck);
		return sl_cli_usage(cmd, "--out: %s", err.msg);
	}
	/* A damaged source is a failure (1), found before any writing. */
	if (sl_ckpt_verify(ck, &err)) {
		sl_cli_error("%s: %s", cmd, err.msg);
		sl_ckpt_close(ck);
		return SL_EXIT_FAIL;
	}
	/* Host memory: the new state, its staging, and the write buffers. */
	double params = (double)sl_model_nparams(&in->model) * sizeof(float);
	if ((rc = sl_cli_host_fits(cmd, params * 12.0 * l.tp, "resharding this checkpoint"))) {
		sl_ckpt_close(ck);
		return rc;
	}
	sl_cluster_config cfg = o->sc.cluster;
	cfg.devices = ndev;
	cfg.devices_per_node = 0;
	cfg.slowdown = 0;
	sl_cluster *c = sl_cluster_create(&cfg, &err);
	sl_ckpt_opts co;
	sl_ckpt_opts_default(&co);
	if (a->storage_bw > 0)
		co.storage_bandwidth = a->storage_bw;
	if (!c || sl_ckpt_reshard(ck, &l, c, a->out, &co, &err)) {
		sl_cli_error("%s: %s", cmd, err.msg);
		sl_cluster_destroy(c);
		sl_ckpt_close(ck);
		return SL_EXIT_FAIL;
	}
	int reads = 0, writes = 0;
	uint64_t rbytes = 0, wbytes = 0;
	double t = 0;
	for (int d = 0; d < ndev; d++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, d);
		rbytes += st.bytes_read;
		wbytes += st.bytes_written;
		if (st.clock > t)
			t = st.clock;
	}
	sl_snapshot snap;
	if (sl_trace_snapshot(sl_cluster_trace(c), &snap) == SL_OK) {
		for (size_t i = 0; i < snap.n; i++) {
			reads += snap.ev[i].kind == SL_EV_READ;
			writes += snap.ev[i].kind == SL_EV_WRITE;
		}
		sl_snapshot_free(&snap);
	}
	char rb[32], wb[32], tb[32], bw[32];
	FILE *out = sl_cli_report_stream(o->trace);
	fprintf(out, "resharded %s (tp=%d pp=%d dp=%d, step %ld) into %s:\n  ", dir, in->layout.tp,
	        in->layout.pp, in->layout.dp, in->step, a->out);
	print_layout(out, &l, ndev);
	fprintf(out,
	        "  %d chunk reads (%s), %d chunk writes (%s); emulated time %s at %s per device\n",
	        reads, sl_fmt_bytes((double)rbytes, rb, sizeof rb), writes,
	        sl_fmt_bytes((double)wbytes, wb, sizeof wb), sl_fmt_time(t, tb, sizeof tb),
	        sl_fmt_rate(co.storage_bandwidth, bw, sizeof bw));
	int status = SL_EXIT_OK;
	if (o->trace && sl_report_trace(c, o->trace, &err)) {
		sl_cli_error("%s: %s", cmd, err.msg);
		status = SL_EXIT_FAIL;
	}
	sl_cluster_destroy(c);
	sl_ckpt_close(ck);
	return sl_cli_flush(status);
}

int sl_cmd_ckpt(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		if (argc < 2)
			return sl_cli_usage("ckpt", "which one: inspect, verify or reshard?");
		ckpt_help();
		return sl_cli_flush(SL_EXIT_OK);
	}
	const char *sub = argv[1];
	unsigned bit = 0;
	for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
		if (strcmp(sub, subs[i].name) == 0)
			bit = subs[i].bit;
	char cmd[32];
	char near[16];
	if (!bit && sl_closest_in(sub, SUB_LIST, near, sizeof near))
		return sl_cli_usage(
		    "ckpt", "unknown subcommand '%s': did you mean '%s'? (one of: " SUB_LIST ")",
		    sub, near);
	if (!bit)
		return sl_cli_usage("ckpt", "unknown subcommand '%s' (one of: " SUB_LIST ")", sub);
	struct option lo[SL_OPTS_MAX];
	sl_opts_getopt(bit, lo);
	snprintf(cmd, sizeof cmd, "ckpt %s", sub);
	/* argv[1..] without DIR, for getopt (which skips its first entry). */
	char **args = malloc((size_t)argc * sizeof *args);
	if (!args)
		return SL_EXIT_FAIL;
	int di = take_dir(argc - 1, argv + 1, lo), n = 0;
	for (int i = 1; i < argc; i++)
		if (i - 1 != di || di == 0)
			args[n++] = argv[i];
	args[n] = NULL;
	struct ckpt_args a;
	memset(&a, 0, sizeof a);
	sl_opts o;
	sl_opts_init(&o);
	int rc = sl_cli_parse(cmd, bit, n, args, &o, ckpt_option, &a, ckpt_help);
	if (rc == SL_CLI_GO && di == 0)
		rc =
		    sl_cli_usage(cmd, "which checkpoint? give its directory: shardlab %s DIR", cmd);
	if (rc == SL_CLI_GO) {
		const char *dir = argv[1 + di];
		/* What killed saves left beside it goes first (see ckpt.h). */
		sl_ckpt_clean_stale(dir);
		if (strcmp(sub, "inspect") == 0)
			rc = cmd_inspect(dir, &o);
		else if (strcmp(sub, "verify") == 0)
			rc = cmd_verify(dir, &o);
		else
			rc = cmd_reshard(dir, &o, &a);
	}
	free(args);
	return rc;
}
