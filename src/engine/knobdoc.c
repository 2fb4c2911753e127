/* SPDX-License-Identifier: MIT */
/* knobdoc.c - the manual's sections that come from the knob table: the
 * OPTIONS of shardlab(1) and the SETUP KEYS of shardlab-lesson(5).
 * tests/test_knobs.c regenerates both and fails when a page differs. */
#include "knobs.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Text for roff: '-' as \-, a leading '.' or '\'' kept as text. */
static void roff(FILE *f, const char *s, size_t n)
{
	if (n && (s[0] == '.' || s[0] == '\''))
		fputs("\\&", f);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '-')
			fputs("\\-", f);
		else if (s[i] == '\\')
			fputs("\\e", f);
		else
			fputc(s[i], f);
	}
}

static void roffs(FILE *f, const char *s)
{
	roff(f, s, strlen(s));
}

/* The help's lines, one roff line each. */
static void help_lines(FILE *f, const char *h)
{
	while (*h) {
		const char *e = strchr(h, '\n');
		size_t l = e ? (size_t)(e - h) : strlen(h);
		roff(f, h, l);
		fputc('\n', f);
		h += l + (e != NULL);
	}
}

/* The help's lines as a sentence: a capital first, a full stop last. */
static void help_sentence(FILE *f, const char *h)
{
	size_t n = strlen(h);
	if (!n)
		return;
	char first[2] = {(char)toupper((unsigned char)h[0]), 0};
	if (first[0] == '.' || first[0] == '\'')
		fputs("\\&", f);
	fputs(first, f);
	const char *rest = h + 1;
	while (*rest) {
		const char *e = strchr(rest, '\n');
		size_t l = e ? (size_t)(e - rest) : strlen(rest);
		roff(f, rest, l);
		rest += l;
		if (*rest == '\n') {
			fputc('\n', f);
			rest++;
		}
	}
	fputs(h[n - 1] == '.' ? "\n" : ".\n", f);
}

/* The tag line: the name in bold, the value's name in italics, or the
 * choices in bold between plain bars.  prefix is "\-\-" or "". */
static void tag(FILE *f, const sl_knob *k, const char *prefix)
{
	if (k->shortopt) { /* -b SIZE, --minbytes=SIZE */
		fprintf(f, ".BI \\-%c \" %s\\fR, \" %s", k->shortopt, k->meta, prefix);
		roffs(f, k->name);
		fprintf(f, "= %s\n", k->meta);
		return;
	}
	if (k->type == SL_KT_FLAG && *prefix) {
		fprintf(f, ".B %s", prefix);
		roffs(f, k->name);
		fputc('\n', f);
		return;
	}
	const char *words = k->type == SL_KT_FLAG               ? "yes, no"
	                    : k->type == SL_KT_WORD && !k->meta ? sl_knob_choices(k)
	                                                        : NULL;
	if (words) {
		fprintf(f, ".BR %s", prefix);
		roffs(f, k->name);
		fputc('=', f);
		for (const char *p = words; *p;) {
			const char *e = strchr(p, ',');
			size_t l = e ? (size_t)(e - p) : strlen(p);
			fputc(' ', f);
			roff(f, p, l);
			if (!e)
				break;
			fputs(" |", f);
			p = e + 1;
			while (*p == ' ')
				p++;
		}
		fputc('\n', f);
		return;
	}
	fprintf(f, ".BI %s", prefix);
	roffs(f, k->name);
	fputs("= ", f);
	roffs(f, k->meta ? k->meta : "VALUE");
	fputc('\n', f);
}

/* "1 to 64." from the row's range, for numbers. */
static void range(FILE *f, const sl_knob *k)
{
	if (k->type == SL_KT_WORD || k->type == SL_KT_FLAG || k->type == SL_KT_TEXT)
		return;
	fputs("Range: ", f);
	if (k->range)
		roffs(f, k->range);
	else
		fprintf(f, "%.0f to %.0f", k->lo, k->hi);
	fputs(".\n", f);
}

static const struct {
	unsigned bit;
	const char *name;
} cmd_names[] = {
    {SL_CMD_RUN, "run"},
    {SL_CMD_COLL, "coll"},
    {SL_CMD_TRAIN, "train"},
    {SL_CMD_COMPARE, "compare"},
    {SL_CMD_PLAN, "plan"},
    {SL_CMD_SANDBOX, "sandbox"},
    {SL_CMD_LESSON, "lesson"},
    {SL_CMD_CHECK, "check"},
    {SL_CMD_INSPECT, "ckpt inspect"},
    {SL_CMD_VERIFY, "ckpt verify"},
    {SL_CMD_RESHARD, "ckpt reshard"},
};

/* "run, coll and train" */
static void commands(FILE *f, unsigned cmds)
{
	int n = 0, total = 0;
	for (size_t i = 0; i < sizeof cmd_names / sizeof *cmd_names; i++)
		total += (cmds & cmd_names[i].bit) != 0;
	for (size_t i = 0; i < sizeof cmd_names / sizeof *cmd_names; i++) {
		if (!(cmds & cmd_names[i].bit))
			continue;
		n++;
		fprintf(f, "%s%s", n == 1 ? "" : n == total ? " and " : ", ", cmd_names[i].name);
	}
}

void sl_knobs_write_setup_man(FILE *f)
{
	fputs(".SH SETUP KEYS\n"
	      "Set with\n"
	      ".BI setup \" KEY=VALUE\"\n"
	      "and turned by the learner in an explore's\n"
	      ".BR knob s.\n"
	      "Each key is the command line's option of the same name, with its range and\n"
	      "its messages (see\n"
	      ".BR shardlab (1),\n"
	      "OPTIONS); a flag takes\n"
	      ".B yes\n"
	      "or\n"
	      ".BR no .\n"
	      "In a lesson, setting\n"
	      ".BR tp ,\n"
	      ".BR cp ,\n"
	      ".B pp\n"
	      "or\n"
	      ".B dp\n"
	      "sets\n"
	      ".B devices\n"
	      "to their product; the elements are fp32, as the host computes them, at\n"
	      "the preset's FP32 rate, unless\n"
	      ".B precision=bf16\n"
	      "is set, which gives 2\\-byte elements at the preset's BF16 rate (a\n"
	      "lesson's set\\-up line names the precision with the rate); every product\n"
	      "runs at that peak unless\n"
	      ".B efficiency=realistic\n"
	      "is set; one training step\n"
	      "runs unless\n"
	      ".B steps\n"
	      "is set; and the attention core is the materialized one (context parallelism,\n"
	      ".BR cp ,\n"
	      "needs\n"
	      ".BR attention=flash ).\n"
	      "With\n"
	      ".BR dry\\-run=yes ,\n"
	      "runs are timed without values, as\n"
	      ".B shardlab train \\-\\-dry\\-run\n"
	      "times them: models far larger than the host could compute, with no\n"
	      "losses or errors among the figures, and no reshard.\n",
	      f);
	for (int i = 0; i < sl_knob_count(); i++) {
		const sl_knob *k = &sl_knobs()[i];
		if (!(k->flags & SL_KF_SETUP))
			continue;
		fputs(".TP\n", f);
		tag(f, k, "");
		help_lines(f, k->help);
		range(f, k);
		if (k->alias) {
			fputs("Also spelled\n.BR ", f);
			roffs(f, k->alias);
			fputs(" .\n", f);
		}
	}
}

/* The manual's subsections, in its order, with what they say first. */
static const struct {
	sl_knob_group g;
	const char *title, *intro;
} sections[] = {
    {SL_KG_CLUSTER, "Cluster options",
     "A preset sets the compute rate, the memory and both link classes; the other\n"
     "options override its figures, whatever their order on the command line.\n"},
    {SL_KG_OUTPUT, "Output options", NULL},
    {SL_KG_DRY_RUN, "Timing\\-only runs", NULL},
    {SL_KG_WORKLOAD, "Workload options", NULL},
    {SL_KG_LAYOUT, "Layout options", NULL},
    {SL_KG_MODEL, "Model options", NULL},
    {SL_KG_REPORT, "Report options (train)", NULL},
    {SL_KG_TRACE, "Trace options (train)", NULL},
    {SL_KG_CKPT, "Checkpoint options (train)", NULL},
    {SL_KG_COMPARE, "Compare options (compare)", NULL},
    {SL_KG_PLAN, "Plan options (plan)", NULL},
    {SL_KG_COLL, "Collective options (coll)", NULL},
    {SL_KG_DISPLAY, "Display options (sandbox and lesson)", NULL},
    {SL_KG_LOAD, "Resharding a checkpoint (sandbox)", NULL},
    {SL_KG_RESHARD, "Reshard options (ckpt reshard)", NULL},
    {SL_KG_LESSON, "Lesson options (lesson)", NULL},
};

void sl_knobs_write_options_man(FILE *f)
{
	for (size_t s = 0; s < sizeof sections / sizeof *sections; s++) {
		fprintf(f, ".SS %s\n", sections[s].title);
		if (sections[s].intro)
			fputs(sections[s].intro, f);
		for (int i = 0; i < sl_knob_count(); i++) {
			const sl_knob *k = &sl_knobs()[i];
			if (k->group != sections[s].g || !k->cmds)
				continue;
			fputs(".TP\n", f);
			tag(f, k, "\\-\\-");
			if (k->man)
				fputs(k->man, f);
			else
				help_sentence(f, k->help);
			range(f, k);
			fputs("Taken by ", f);
			commands(f, k->cmds);
			fputs((k->flags & SL_KF_SETUP) ? "; a lesson's setup key too.\n" : ".\n",
			      f);
		}
	}
}
