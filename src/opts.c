/* SPDX-License-Identifier: MIT */
/* opts.c - the command line's options, from the knob table. */
#include "opts.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "hwfile.h"
#include "preset.h"
#include "units.h"

void sl_opts_init(sl_opts *o)
{
	assert(sl_knob_count() <= SL_KNOBS_MAX); /* a value and a bit per row */
	memset(o, 0, sizeof *o);
	sl_scenario_default(&o->sc);
	o->format = SL_FORMAT_TEXT;
}

static int given_row(const sl_opts *o, int i)
{
	return i >= 0 && i < SL_KNOBS_MAX && (o->given[i / 64] >> (i % 64) & 1);
}

int sl_opts_given(const sl_opts *o, int code)
{
	const sl_knob *k = sl_knob_of(code);
	if (!k)
		return 0;
	/* A name may have a row per command (--load): any of them. */
	for (int i = 0; i < sl_knob_count(); i++)
		if (sl_knobs()[i].code == code && given_row(o, i))
			return 1;
	return 0;
}

int sl_opts_given_group(const sl_opts *o, sl_knob_group g)
{
	for (int i = 0; i < sl_knob_count(); i++)
		if (sl_knobs()[i].group == g && given_row(o, i))
			return 1;
	return 0;
}

const char *sl_opts_name(int code)
{
	const sl_knob *k = sl_knob_of(code);
	return k ? k->name : NULL;
}

/* The row of code that o's command takes, or NULL. */
static const sl_knob *row_of(const sl_opts *o, int code)
{
	for (int i = 0; i < sl_knob_count(); i++) {
		const sl_knob *k = &sl_knobs()[i];
		if (k->code == code && (k->cmds & o->cmd))
			return k;
	}
	return NULL;
}

size_t sl_opts_getopt(unsigned cmd, struct option *out)
{
	size_t n = 0;
	for (int i = 0; i < sl_knob_count(); i++) {
		const sl_knob *k = &sl_knobs()[i];
		if (!(k->cmds & cmd))
			continue;
		assert(n + 2 < SL_OPTS_MAX);
		out[n].name = k->name;
		out[n].has_arg = k->type == SL_KT_FLAG ? no_argument : required_argument;
		out[n].flag = NULL;
		out[n].val = k->code;
		n++;
	}
	out[n].name = "help";
	out[n].has_arg = no_argument;
	out[n].flag = NULL;
	out[n].val = 'h';
	n++;
	memset(&out[n], 0, sizeof out[n]);
	return n;
}

void sl_opts_help(FILE *f, unsigned cmd, sl_knob_group g, int title)
{
	int any = 0;
	for (int i = 0; i < sl_knob_count(); i++) {
		const sl_knob *k = &sl_knobs()[i];
		if (k->group != g || !(k->cmds & cmd))
			continue;
		if (!any && title)
			fprintf(f, "%s\n", sl_knob_group_title(g));
		any = 1;
		char col[96];
		sl_knob_column(k, col, sizeof col);
		/* The format's csv only where the command has a table to plot. */
		if (k->code == SL_OPT_FORMAT &&
		    !(cmd & (SL_CMD_COLL | SL_CMD_COMPARE | SL_CMD_PLAN)))
			snprintf(col, sizeof col, "--format=text|json");
		size_t len = strlen(col);
		if (len <= 23)
			fprintf(f, "  %-24s", col);
		else
			fprintf(f, "  %s\n%26s", col, "");
		for (const char *h = k->help; *h;) {
			const char *e = strchr(h, '\n');
			size_t l = e ? (size_t)(e - h) : strlen(h);
			fprintf(f, "%.*s\n", (int)l, h);
			h += l;
			if (*h == '\n') {
				h++;
				fprintf(f, "%26s", "");
			}
		}
	}
}

/* A row whose value the options keep even without a place: the preset,
 * a hardware or model file, the mesh order, the stages' layers, the
 * format, the trace. */
static int kept_here(int code)
{
	return code == SL_OPT_PRESET || code == SL_OPT_HARDWARE || code == SL_OPT_MODEL ||
	       code == SL_OPT_ORDER || code == SL_OPT_STAGE_LAYERS || code == SL_OPT_FORMAT ||
	       code == SL_OPT_TRACE;
}

int sl_opts_handle(sl_opts *o, int code, const char *arg, sl_err *err)
{
	const sl_knob *k = row_of(o, code);
	if (!k)
		return SL_OPTS_NOT_MINE;
	int train_row = k->place == SL_KP_MODEL || k->place == SL_KP_LAYOUT ||
	                k->place == SL_KP_STEPS || code == SL_OPT_MODEL || code == SL_OPT_ORDER ||
	                code == SL_OPT_STAGE_LAYERS;
	if ((k->place == SL_KP_NONE && !kept_here(code)) || (train_row && !o->train))
		return SL_OPTS_NOT_MINE;
	int i = sl_knob_index(k);
	assert(i < SL_KNOBS_MAX);
	sl_knob_val v;
	if (code == SL_OPT_FORMAT && arg && strcmp(arg, "csv") == 0 && !o->csv_ok)
		return sl_fail(err, SL_EINVAL,
		               "--format=csv is for the tables of coll, compare and plan "
		               "(here one of: text, json)");
	int rc = sl_knob_parse(k, "--", arg, &v, err);
	if (rc)
		return rc;
	switch (code) {
	case SL_OPT_PRESET: {
		sl_err e = {0};
		const char *from = "";
		const sl_preset *p = sl_hw_find(arg, &from, &e);
		/* A file that is not right says so itself ("FILE: FIELD: ..."). */
		if (!p)
			return from ? sl_fail(err, e.code, "%s", e.msg)
			            : sl_fail(err, e.code, "--preset: %s", e.msg);
		o->hw = p;
		break;
	}
	case SL_OPT_HARDWARE: {
		const sl_preset *p = sl_hw_load(arg, err);
		if (!p)
			return err ? err->code : SL_EINVAL;
		o->hw = p;
		break;
	}
	case SL_OPT_MODEL: {
		sl_model_file mf;
		sl_err e = {0};
		if (sl_model_file_find(arg, &mf, &e))
			return sl_fail(err, e.code, "--model: %s", e.msg);
		break;
	}
	case SL_OPT_ORDER:
		if (sl_mesh_order_parse(arg, o->order))
			return sl_fail(
			    err, SL_EINVAL,
			    "--mesh-order: '%s' is not an order of tp, pp and dp (as in tp-dp-pp)",
			    arg);
		break;
	case SL_OPT_STAGE_LAYERS: {
		sl_err e = {0};
		if (sl_stage_layers_parse(arg, &o->stages, &e))
			return sl_fail(err, SL_EINVAL, "--stage-layers: %s", e.msg);
		break;
	}
	case SL_OPT_FORMAT:
		o->format = (sl_format)v.d;
		break;
	case SL_OPT_TRACE:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--trace: empty file name");
		o->trace = arg;
		break;
	default:
		break;
	}
	o->val[i] = v;
	/* The last of two options of one field wins (--tie-embeddings,
	 * --untie-embeddings): the other is no longer given. */
	for (int j = 0; j < sl_knob_count() && k->place != SL_KP_NONE; j++) {
		const sl_knob *r = &sl_knobs()[j];
		if (j != i && r->place == k->place && r->off == k->off)
			o->given[j / 64] &= ~((uint64_t)1 << (j % 64));
	}
	o->given[i / 64] |= (uint64_t)1 << (i % 64);
	return SL_OK;
}

/* Note an explicit option that replaced one of the preset's figures. */
static void note_override(sl_opts *o, const sl_knob *k)
{
	size_t len = strlen(o->overrides);
	snprintf(o->overrides + len, sizeof o->overrides - len, "%s%s", len ? ", " : "", k->name);
}

/* --model: the file's shape where no option gives a field. */
static void apply_model_file(sl_opts *o, const char *arg)
{
	sl_train_opts *a = o->train;
	sl_model_file mf;
	if (sl_model_file_find(arg, &mf, NULL))
		return; /* found and checked while parsing */
	sl_model_spec f = a->m;
	f.layers = mf.layers;
	f.hidden = mf.hidden;
	f.ffn = mf.ffn;
	f.heads = mf.heads;
	f.seq = mf.seq;
	f.batch = mf.batch;
	f.kv_heads = mf.kv_heads;
	f.ffn_kind = mf.ffn_kind;
	f.norm = mf.norm;
	f.vocab = mf.vocab;
	f.untie = mf.untie;
	f.pos_emb = mf.pos_emb;
	const sl_knob_dest from = {.model = &f}, to = {.model = &a->m};
	for (int i = 0; i < sl_knob_count(); i++) {
		const sl_knob *k = &sl_knobs()[i];
		if (!(k->flags & SL_KF_SHAPE) || sl_train_opts_model_given(a, k->code))
			continue;
		/* Copy the field: read it as a value, store it. */
		sl_knob_val v = {0};
		const char *src = (const char *)from.model + k->off;
		v.d = k->ctype == SL_KC_INT ? *(const int *)src : *(const float *)src;
		if (k->type == SL_KT_FLAG)
			v.d = v.d == k->hi; /* the stored value means yes */
		sl_knob_store(k, &v, &to);
	}
}

int sl_opts_finish(sl_opts *o, sl_err *err)
{
	sl_scenario *s = &o->sc;
	sl_cluster_config *cfg = &s->cluster;
	sl_train_opts *a = o->train;
	if (sl_opts_given(o, SL_OPT_PRESET) && sl_opts_given(o, SL_OPT_HARDWARE))
		return sl_fail(err, SL_EINVAL,
		               "--preset and --hardware both choose the hardware: give one");
	/* The default preset is found as --preset would find it: a user's
	 * file, a shipped one, or the built-in table. */
	const sl_preset *p = o->hw;
	if (!p && !(p = sl_hw_find(s->preset[0] ? s->preset : SL_PRESET_DEFAULT, NULL, err)))
		return err ? err->code : SL_EINVAL;
	/* The preset first, at the precision chosen (its rate)... */
	const sl_knob *kp = sl_knob_of(SL_OPT_PRECISION), *ke = sl_knob_of(SL_OPT_EFFICIENCY);
	cfg->precision = given_row(o, sl_knob_index(kp)) ? (sl_precision)o->val[sl_knob_index(kp)].d
	                                                 : p->precision;
	cfg->efficiency = given_row(o, sl_knob_index(ke))
	                      ? (sl_efficiency)o->val[sl_knob_index(ke)].d
	                      : p->efficiency;
	sl_preset_apply(p, cfg);
	snprintf(s->preset, sizeof s->preset, "%s", p->name);
	/* ...then a model file... */
	if (a && sl_opts_given(o, SL_OPT_MODEL))
		apply_model_file(o, o->val[sl_knob_index(sl_knob_of(SL_OPT_MODEL))].s);

	/* ...then every explicit option over them, in the table's order. */
	o->overrides[0] = '\0';
	const sl_knob_dest d = {.cluster = cfg,
	                        .gemm = &s->gemm,
	                        .model = a ? &a->m : NULL,
	                        .layout = a ? &a->l : NULL,
	                        .steps = a ? &a->steps : NULL};
	for (int i = 0; i < sl_knob_count(); i++) {
		const sl_knob *k = &sl_knobs()[i];
		if (!given_row(o, i))
			continue;
		sl_knob_store(k, &o->val[i], &d);
		if (k->flags & SL_KF_FIGURE)
			note_override(o, k);
	}
	if (a && sl_opts_given(o, SL_OPT_ORDER))
		memcpy(a->l.order, o->order, sizeof o->order);
	if (a && sl_opts_given(o, SL_OPT_STAGE_LAYERS))
		sl_layout_copy_stages(&a->l, &o->stages);
	if (a) {
		a->given_m = sl_opts_given(o, SL_OPT_MICROBATCHES);
		a->given_zero = sl_opts_given(o, SL_OPT_ZERO) || sl_opts_given(o, SL_OPT_ZERO1);
		a->given_v = sl_opts_given(o, SL_OPT_CHUNKS);
		a->given_steps = sl_opts_given(o, SL_OPT_STEPS);
		a->given_sched = sl_opts_given(o, SL_OPT_SCHEDULE);
		a->given_seq = sl_opts_given(o, SL_OPT_SEQ) || sl_opts_given(o, SL_OPT_MODEL);
		/* The device count follows the layout unless --devices says
		 * otherwise. */
		if (a->devices_follow && !sl_opts_given(o, SL_OPT_DEVICES) &&
		    (sl_opts_given_group(o, SL_KG_LAYOUT) || sl_opts_given_group(o, SL_KG_MODEL)))
			cfg->devices = sl_layout_devices(&a->l);
	}
	if (cfg->timing_only && cfg->timing == SL_TIMING_MEASURED)
		return sl_fail(err, SL_EINVAL,
		               "--dry-run computes nothing to measure: drop --timing=measured");

	/* Nodes: as given; else the preset's node size when the devices do not
	 * fit one of its nodes and it divides them; else a single node. */
	if (!sl_opts_given(o, SL_OPT_DEVICES_PER_NODE)) {
		if (cfg->topology == SL_TOPO_FULL && p->devices_per_node > 0 &&
		    cfg->devices > p->devices_per_node && cfg->devices % p->devices_per_node == 0)
			cfg->devices_per_node = p->devices_per_node;
		else
			cfg->devices_per_node = 0;
	}
	if (cfg->devices_per_node > cfg->devices)
		return sl_fail(err, SL_EINVAL, "--devices-per-node=%d exceeds --devices=%d",
		               cfg->devices_per_node, cfg->devices);
	if (cfg->devices_per_node > 0 && cfg->devices % cfg->devices_per_node != 0)
		return sl_fail(err, SL_EINVAL,
		               "--devices-per-node=%d does not divide --devices=%d: "
		               "every node holds the same number of devices",
		               cfg->devices_per_node, cfg->devices);
	if (cfg->topology == SL_TOPO_RING && cfg->devices_per_node > 0 &&
	    cfg->devices_per_node != cfg->devices)
		return sl_fail(err, SL_EINVAL,
		               "--topology=ring is a single node: "
		               "drop --devices-per-node or use --topology=full");
	return o->max_devices > SL_MAX_DEVICES ? sl_cluster_config_check_plan(cfg, err)
	                                       : sl_cluster_config_check(cfg, err);
}

/* ---- the training options ---- */

int sl_train_opts_model_given(const sl_train_opts *a, int code)
{
	const sl_knob *k = sl_knob_of(code);
	if (!k)
		return 0;
	/* Either option of one field (--untie-embeddings, --tie-embeddings). */
	for (int i = 0; i < sl_knob_count(); i++) {
		const sl_knob *r = &sl_knobs()[i];
		if (r->place == k->place && r->off == k->off && sl_opts_given(a->o, r->code))
			return 1;
	}
	return 0;
}

void sl_train_opts_init(sl_train_opts *a, sl_opts *o, int steps)
{
	memset(a, 0, sizeof *a);
	a->o = o;
	sl_opts_init(o);
	o->train = a;
	sl_model_default(&a->m);
	a->m.layers = 4;
	a->m.hidden = 128;
	a->m.ffn = 512;
	a->m.heads = 4;
	a->m.seq = 32;
	a->m.batch = 16;
	sl_layout_default(&a->l);
	/* What training runs use today; the engine's default stays the
	 * materialized core that the closed forms describe. */
	a->l.attention = SL_ATTN_FLASH;
	a->steps = steps;
}

void sl_train_opts_model_finish(sl_train_opts *a)
{
	if (a->m.heads == 0 && !a->given_seq)
		a->m.seq = 1;
}

void sl_train_layout_defaults(const sl_model_spec *m, sl_layout *l, int given_m, int given_v)
{
	if (!given_v)
		l->chunks = l->schedule == SL_SCHED_INTERLEAVED ? 2 : 1;
	if (!given_m) {
		int mb = l->pp > 1 ? 2 * l->pp : 1;
		int most = m->batch / l->dp > 0 ? m->batch / l->dp : 1;
		if (mb > most)
			mb = l->schedule == SL_SCHED_INTERLEAVED && most >= l->pp
			         ? most - most % l->pp
			         : most;
		l->microbatches = mb;
	}
}

int sl_train_cluster_config(const sl_cluster_config *base, int n, sl_cluster_config *out,
                            sl_err *err)
{
	*out = *base;
	out->devices = n;
	int g = base->devices_per_node;
	if (g > 0 && n <= g)
		out->devices_per_node = 0;
	else if (g > 0 && n % g != 0)
		return sl_fail(err, SL_EINVAL,
		               "%d devices do not fill nodes of %d: use a multiple of %d", n, g, g);
	return SL_OK;
}
