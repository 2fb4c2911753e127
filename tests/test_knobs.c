/* SPDX-License-Identifier: MIT */
/* The knob table (src/engine/knobs.h) and everything made from it:
 * - every word's choices are the engine's own names, in its enum's order
 *   (the engine's name functions are the reference);
 * - every lesson setup key is tried in a lesson: a good value is taken, a
 *   bad one refused with the command line's own message (the program run
 *   as a user runs it);
 * - every command's --help lists exactly the rows it takes;
 * - shardlab(1)'s option sections and shardlab-lesson(5)'s SETUP KEYS are
 *   what the table generates (GENERATE=1 rewrites them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clirun.h"
#include "coll.h"
#include "device.h"
#include "gemm.h"
#include "knobs.h"
#include "lesson.h"
#include "model.h"
#include "opts.h"
#include "schedule.h"
#include "train.h"

/* ---- choices ---- */

typedef const char *(*name_fn)(int);
static const char *n_topo(int i)
{
	return i == SL_TOPO_FULL ? "full" : i == SL_TOPO_RING ? "ring" : NULL;
}
static const char *n_timing(int i)
{
	return i == SL_TIMING_MODEL ? "model" : i == SL_TIMING_MEASURED ? "measured" : NULL;
}
static const char *n_prec(int i)
{
	return i < SL_PREC_N ? sl_precision_name((sl_precision)i) : NULL;
}
static const char *n_eff(int i)
{
	return i < SL_EFF_N ? sl_efficiency_name((sl_efficiency)i) : NULL;
}
static const char *n_algo(int i)
{
	return i < SL_ALGO_NALGOS ? sl_algo_name((sl_algo)i) : NULL;
}
static const char *n_split(int i)
{
	return i < SL_SPLIT_N ? sl_split_name((sl_split)i) : NULL;
}
static const char *n_sched(int i)
{
	return i < SL_SCHED_N ? sl_sched_name((sl_sched)i) : NULL;
}
static const char *n_recomp(int i)
{
	return i < SL_RECOMPUTE_N ? sl_recompute_name((sl_recompute)i) : NULL;
}
static const char *n_overlap(int i)
{
	return i < SL_OVERLAP_N ? sl_overlap_name(i) : NULL;
}
static const char *n_attn(int i)
{
	return i < SL_ATTN_N ? sl_attention_name((sl_attention)i) : NULL;
}
static const char *n_ffn(int i)
{
	return i < SL_FFN_N ? sl_ffn_kind_name(i) : NULL;
}
static const char *n_norm(int i)
{
	return i < SL_NORM_N ? sl_norm_name(i) : NULL;
}
static const char *n_pos(int i)
{
	return i < SL_POS_N ? sl_pos_name(i) : NULL;
}
static const char *n_mask(int i)
{
	return i < SL_MASK_N ? sl_mask_name(i) : NULL;
}
static const char *n_gacc(int i)
{
	return i < SL_GACC_N ? sl_grad_accum_name(i) : NULL;
}
static const char *n_op(int i)
{
	return i < SL_COLL_NOPS ? sl_coll_op_name((sl_coll_op)i) : NULL;
}
static const char *n_format(int i)
{
	static const char *const f[] = {"text", "json", "csv"};
	return i < 3 ? f[i] : NULL;
}

static const char *n_reshard(int i)
{
	return i < 2 ? sl_reshard_fwd_name(i) : NULL;
}

static const char *n_cpcomm(int i)
{
	return i < SL_CP_N ? sl_cp_comm_name(i) : NULL;
}

static void test_choices_are_the_engines(void **state)
{
	(void)state;
	static const struct {
		int code;
		name_fn fn;
	} refs[] = {
	    {SL_OPT_TOPOLOGY, n_topo},       {SL_OPT_TIMING, n_timing},
	    {SL_OPT_PRECISION, n_prec},      {SL_OPT_EFFICIENCY, n_eff},
	    {SL_OPT_ALGORITHM, n_algo},      {SL_OPT_STRATEGY, n_split},
	    {SL_OPT_SCHEDULE, n_sched},      {SL_OPT_RECOMPUTE, n_recomp},
	    {SL_OPT_ATTENTION, n_attn},      {SL_OPT_FFN_KIND, n_ffn},
	    {SL_OPT_NORM, n_norm},           {SL_OPT_POS_EMB, n_pos},
	    {SL_OPT_GRAD_ACCUM, n_gacc},     {SL_OPT_OP, n_op},
	    {SL_OPT_FORMAT, n_format},       {SL_OPT_OVERLAP, n_overlap},
	    {SL_OPT_MASK, n_mask},           {SL_OPT_CP_COMM, n_cpcomm},
	    {SL_OPT_RESHARD_FWD, n_reshard},
	};
	int words = 0;
	for (int r = 0; r < sl_knob_count(); r++)
		words += sl_knobs()[r].type == SL_KT_WORD;
	assert_int_equal(words, (int)(sizeof refs / sizeof *refs));
	for (size_t i = 0; i < sizeof refs / sizeof *refs; i++) {
		const sl_knob *k = sl_knob_of(refs[i].code);
		assert_non_null(k);
		char want[256] = "";
		size_t len = 0;
		for (int j = 0; refs[i].fn(j); j++)
			len += (size_t)snprintf(want + len, sizeof want - len, "%s%s",
			                        j ? ", " : "", refs[i].fn(j));
		if (strcmp(sl_knob_choices(k), want) != 0)
			fail_msg("--%s: the table's choices '%s', the engine's '%s'", k->name,
			         sl_knob_choices(k), want);
	}
}

/* ---- every setup key in a lesson ---- */

/* A value the key takes, and one it refuses (NULL: none to try). */
static void values(const sl_knob *k, char *good, char *bad, size_t n)
{
	bad[0] = '\0';
	switch (k->type) {
	case SL_KT_FLAG:
		snprintf(good, n, "yes");
		snprintf(bad, n, "maybe");
		return;
	case SL_KT_WORD: {
		const char *w = sl_knob_choices(k), *c = strchr(w, ',');
		snprintf(good, n, "%.*s", c ? (int)(c - w) : (int)strlen(w), w);
		snprintf(bad, n, "nonsense");
		return;
	}
	case SL_KT_INT:
		snprintf(good, n, "%.0f", k->lo > 1 ? k->lo : k->hi >= 1 ? 1 : k->lo);
		snprintf(bad, n, "%.0f", k->hi + 1);
		return;
	case SL_KT_REAL:
		snprintf(good, n, "%g", (k->lo + k->hi) / 2);
		snprintf(bad, n, "%g", k->hi + 1);
		return;
	case SL_KT_RATE:
		snprintf(good, n, "100GB/s");
		snprintf(bad, n, "20PB/s");
		return;
	case SL_KT_TIME:
		snprintf(good, n, "2us");
		snprintf(bad, n, "11s");
		return;
	case SL_KT_BYTES:
		snprintf(good, n, "64MiB");
		snprintf(bad, n, "2PiB");
		return;
	case SL_KT_FLOPS:
		snprintf(good, n, "100TFLOP/s");
		snprintf(bad, n, "2000PFLOP/s");
		return;
	case SL_KT_TEXT:
		break;
	}
	static const struct {
		int code;
		const char *good, *bad;
	} text[] = {
	    {SL_OPT_PRESET, "h100", "h1000"},
	    {SL_OPT_HARDWARE, SHARDLAB_SRCDIR "/data/hardware/a100.json", NULL},
	    {SL_OPT_MODEL, "llama-3-8b", "llama-9"},
	    {SL_OPT_ORDER, "tp-pp-dp", "tp-tp-dp"},
	    {SL_OPT_STAGE_LAYERS, "ends", "7,x"},
	    {SL_OPT_BYTES, "1MiB", "2PiB"},
	};
	for (size_t i = 0; i < sizeof text / sizeof *text; i++)
		if (text[i].code == k->code) {
			snprintf(good, n, "%s", text[i].good);
			snprintf(bad, n, "%s", text[i].bad ? text[i].bad : "");
			return;
		}
	fail_msg("setup key '%s': the test has no value for it", k->name);
}

/* The first command that takes the row, as the command line names it. */
static const char *a_command(const sl_knob *k)
{
	static const struct {
		unsigned bit;
		const char *name;
	} c[] = {{SL_CMD_TRAIN, "train"},
	         {SL_CMD_RUN, "run"},
	         {SL_CMD_COLL, "coll"},
	         {SL_CMD_PLAN, "plan"},
	         {SL_CMD_COMPARE, "compare"}};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++)
		if (k->cmds & c[i].bit)
			return c[i].name;
	return NULL;
}

static void test_every_setup_key_in_a_lesson(void **state)
{
	(void)state;
	int keys = 0;
	setenv("SHARDLAB_MODEL_PATH", SHARDLAB_SRCDIR "/data/models", 1);
	for (int r = 0; r < sl_knob_count(); r++) {
		const sl_knob *k = &sl_knobs()[r];
		if (!(k->flags & SL_KF_SETUP))
			continue;
		keys++;
		char good[256], bad[256], text[600];
		values(k, good, bad, sizeof good);
		snprintf(text, sizeof text, "title T\nminutes 5\nsetup %s=%s\nsay x\n", k->name,
		         good);
		sl_lesson *l = NULL;
		sl_err err = {0};
		if (sl_lesson_parse("t.lesson", text, strlen(text), &l, NULL, &err))
			fail_msg("setup %s=%s refused: %s", k->name, good, err.msg);
		sl_lesson_free(l);
		if (!bad[0])
			continue;
		snprintf(text, sizeof text, "title T\nminutes 5\nsetup %s=%s\nsay x\n", k->name,
		         bad);
		memset(&err, 0, sizeof err);
		l = NULL;
		if (sl_lesson_parse("t.lesson", text, strlen(text), &l, NULL, &err) == SL_OK)
			fail_msg("setup %s=%s taken", k->name, bad);
		const char *cmd = a_command(k);
		if (!cmd || k->code == SL_OPT_BYTES || k->type == SL_KT_FLAG)
			continue; /* a flag takes no value on the command line */
		/* The command line's message: "shardlab: CMD: --MSG (see ...)". */
		char args[600];
		snprintf(args, sizeof args, "%s --%s=%s", cmd, k->name, bad);
		tu_result res;
		tu_run(args, &res);
		assert_int_equal(res.status, 2);
		char want[600];
		const char *m = strstr(res.err, ": --");
		if (!m)
			fail_msg("'%s': %s", args, res.err);
		snprintf(want, sizeof want, "t.lesson:3: %s", m + 4);
		char *see = strstr(want, " (see 'shardlab");
		if (see)
			*see = '\0';
		if (strcmp(err.msg, want) != 0)
			fail_msg("setup %s=%s:\n  lesson       %s\n  command line %s", k->name, bad,
			         err.msg, want);
		tu_result_free(&res);
	}
	assert_true(keys >= 55);
}

/* ---- --help ---- */

static void test_help_lists_the_rows(void **state)
{
	(void)state;
	static const struct {
		unsigned bit;
		const char *args;
	} cmds[] = {{SL_CMD_RUN, "run --help"},       {SL_CMD_COLL, "coll --help"},
	            {SL_CMD_TRAIN, "train --help"},   {SL_CMD_COMPARE, "compare --help"},
	            {SL_CMD_PLAN, "plan --help"},     {SL_CMD_SANDBOX, "sandbox --help"},
	            {SL_CMD_LESSON, "lesson --help"}, {SL_CMD_CHECK, "check --help"},
	            {SL_CMD_RESHARD, "ckpt --help"}};
	for (size_t c = 0; c < sizeof cmds / sizeof *cmds; c++) {
		tu_result r;
		tu_run(cmds[c].args, &r);
		assert_int_equal(r.status, 0);
		for (int i = 0; i < sl_knob_count(); i++) {
			const sl_knob *k = &sl_knobs()[i];
			char col[128];
			snprintf(col, sizeof col, "  %s--%s", k->shortopt ? "-x, " : "", k->name);
			if (k->shortopt)
				col[3] = k->shortopt;
			int listed = 0;
			size_t cl = strlen(col);
			for (const char *p = strstr(r.out, col); p && !listed;
			     p = strstr(p + 1, col))
				listed = strchr("= \n,", p[cl]) != NULL;
			int taken = 0; /* by any row of the name (--load has two) */
			for (int j = 0; j < sl_knob_count(); j++)
				taken |= strcmp(sl_knobs()[j].name, k->name) == 0 &&
				         (sl_knobs()[j].cmds & cmds[c].bit);
			if (taken != listed)
				fail_msg("'%s' %s --%s", cmds[c].args,
				         listed ? "lists" : "does not list", k->name);
		}
		tu_result_free(&r);
	}
}

/* ---- the manual ---- */

static char *generated(void (*fn)(FILE *), size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	assert_non_null(f);
	fn(f);
	fclose(f);
	return buf;
}

/* Compare the part of path between start and end (end excluded; NULL: the
 * next .SH) with what fn writes; GENERATE=1 rewrites it. */
static void check_region(const char *path, const char *start, const char *end, void (*fn)(FILE *))
{
	size_t mlen = 0, glen = 0;
	char *man = tu_read_file(path, &mlen);
	if (!man)
		fail_msg("cannot read %s", path);
	char *gen = generated(fn, &glen);
	const char *s = strstr(man, start);
	if (!s)
		fail_msg("%s has no '%s'", path, start);
	size_t a = (size_t)(s - man) + (end ? strlen(start) : 0);
	const char *e = strstr(s + 1, end ? end : "\n.SH ");
	if (!e)
		fail_msg("%s: no end of the region after '%s'", path, start);
	size_t b = (size_t)(e - man) + (end ? 0 : 1);
	const char *regen = getenv("GENERATE");
	if (regen && strcmp(regen, "1") == 0) {
		FILE *f = fopen(path, "wb");
		assert_non_null(f);
		fwrite(man, 1, a, f);
		fwrite(gen, 1, glen, f);
		fputs(man + b, f);
		fclose(f);
		print_message("rewrote %s from the knob table\n", path);
	} else if (b - a != glen || memcmp(man + a, gen, glen) != 0) {
		fail_msg("%s differs from the knob table after '%s' (GENERATE=1 rewrites it)", path,
		         start);
	}
	free(man);
	free(gen);
}

static void test_man_options(void **state)
{
	(void)state;
	check_region(SHARDLAB_SRCDIR "/man/shardlab.1.in",
	             ".\\\" BEGIN OPTIONS FROM THE KNOB TABLE (tests/test_knobs.c)\n",
	             ".\\\" END OPTIONS FROM THE KNOB TABLE\n", sl_knobs_write_options_man);
}

static void test_man_setup_keys(void **state)
{
	(void)state;
	check_region(SHARDLAB_SRCDIR "/man/shardlab-lesson.5.in", ".SH SETUP KEYS\n", NULL,
	             sl_knobs_write_setup_man);
}

/* Names and codes are unique where a command sees them. */
static void test_rows_unique(void **state)
{
	(void)state;
	const sl_knob *t = sl_knobs();
	/* Room for each row's value and bit (opts.h), and for the device
	 * figures a hardware file reads (hwfile.c). */
	assert_true(sl_knob_count() <= SL_KNOBS_MAX);
	int hw = 0;
	for (int i = 0; i < sl_knob_count(); i++)
		hw += (t[i].flags & SL_KF_HWFILE) != 0;
	assert_true(hw <= 16);
	for (int i = 0; i < sl_knob_count(); i++)
		for (int j = i + 1; j < sl_knob_count(); j++) {
			if (!(t[i].cmds & t[j].cmds))
				continue;
			if (strcmp(t[i].name, t[j].name) == 0 || t[i].code == t[j].code)
				fail_msg("--%s and --%s clash in one command", t[i].name,
				         t[j].name);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows_unique),
	    cmocka_unit_test(test_choices_are_the_engines),
	    cmocka_unit_test(test_every_setup_key_in_a_lesson),
	    cmocka_unit_test(test_help_lists_the_rows),
	    cmocka_unit_test(test_man_setup_keys),
	    cmocka_unit_test(test_man_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
