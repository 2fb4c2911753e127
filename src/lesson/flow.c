/* SPDX-License-Identifier: MIT */
/* flow.c - the lesson checker's last stage: jump and menu targets, and the
 * flow of the whole lesson (every line reachable, no loop without a learner
 * in it, every figure given a value by a run on every path that reaches it,
 * every run valid for the engine). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_internal.h"

/* ---- stage 4: targets and flow ---- */

/* leads[p]: some command other than a label follows position p (found once,
 * not per jump: a run of labels would make that quadratic). */
int lp_label_target(struct parser *P, const unsigned char *leads, int ni, int line, const char *how)
{
	sl_lesson *l = P->l;
	int pos = l->names[ni].pos;
	if (pos < 0)
		return -1;
	if (leads[pos])
		return pos;
	lp_diag(P, line,
	        "%s '%s' leads nowhere: nothing follows the label at line %d (end the lesson "
	        "with 'finish' instead)",
	        how, l->names[ni].s, l->names[ni].line);
	return -1;
}

int lp_succ(const sl_lesson *l, int p, int *out)
{
	const sl_op *o = &l->ops[p];
	int n = 0;
	switch (o->kind) {
	case OP_FINISH:
		return 0;
	case OP_JUMP:
		if (o->target >= 0)
			out[n++] = o->target;
		if (o->expr >= 0 && p + 1 < l->nops)
			out[n++] = p + 1;
		return n;
	case OP_MENU:
		for (int i = 0; i < o->nch; i++)
			if (o->ch[i].target >= 0)
				out[n++] = o->ch[i].target;
		return n;
	default:
		if (p + 1 < l->nops)
			out[n++] = p + 1;
		return n;
	}
}

static int is_learner(const sl_op *o)
{
	return o->kind == OP_QUESTION || o->kind == OP_MENU || o->kind == OP_EXPLORE;
}

#define KIND_NONE 0x80u

struct flow {
	unsigned char kinds; /* the kinds the latest run may be; KIND_NONE: maybe no run */
	uint64_t def;        /* names surely defined */
};

static void walk_uses(struct parser *P, int node, struct flow f, int line)
{
	const sl_pool *pool = &P->l->pool;
	if (node < 0)
		return;
	const sl_node *n = &pool->n[node];
	if (n->op == SL_N_REF) {
		const sl_figdef *fd = sl_fig(n->ref.fig);
		if (n->ref.name >= 0) {
			const sl_name *nm = &P->l->names[n->ref.name];
			if (!(f.def >> nm->bit & 1))
				lp_diag(P, line,
				        "'%s.%s' may have no value here: no path to this line "
				        "surely passes "
				        "the run named '%s' (line %d)",
				        nm->s, fd->name, nm->s, nm->line);
		} else if (!(fd->from & SL_FIG_SETUP)) {
			if (f.kinds == KIND_NONE) {
				int k = 0;
				while (k < SL_RUN_NKINDS - 1 && !(fd->from & SL_FIG_KIND(k)))
					k++;
				lp_diag(P, line,
				        "'%s' needs a run before it: add 'run %s' above this line",
				        fd->name, sl_run_kind_name((sl_run_kind)k));
			} else if (f.kinds & KIND_NONE)
				lp_diag(
				    P, line,
				    "'%s' may have no value here: a jump or menu reaches this line "
				    "before any run",
				    fd->name);
			else
				for (int k = 0; k < SL_RUN_NKINDS; k++)
					if ((f.kinds >> k & 1) && !(fd->from & SL_FIG_KIND(k))) {
						lp_diag(P, line,
						        "'%s' is not a figure of a %s run, and the "
						        "latest run here "
						        "%s a %s (name the run you mean: run KIND "
						        "as NAME, then "
						        "NAME.%s)",
						        fd->name, sl_run_kind_name((sl_run_kind)k),
						        f.kinds == (1u << k) ? "is" : "may be",
						        sl_run_kind_name((sl_run_kind)k), fd->name);
						break;
					}
		}
		return;
	}
	if (n->op == SL_N_LET) {
		const sl_name *nm = &P->l->names[n->ref.name];
		if (!(f.def >> nm->bit & 1))
			lp_diag(P, line,
			        "'%s' may have no value here: some path reaches this line without "
			        "passing "
			        "its let (line %d)",
			        nm->s, nm->line);
		return;
	}
	walk_uses(P, n->a, f, line);
	walk_uses(P, n->b, f, line);
}

static void text_uses(struct parser *P, const sl_text *t, struct flow f, int line)
{
	for (int i = 0; i < t->n; i++)
		walk_uses(P, t->nodes[i], f, line);
}

int lp_flow(struct parser *P)
{
	sl_lesson *l = P->l;
	int n = l->nops, bits = 0;
	if (n <= 0)
		return 0;
	for (int i = 0; i < l->nnames; i++)
		if (l->names[i].kind != NAME_LABEL) {
			if (bits >= MAX_NAMES_FLOW) {
				lp_diag(P, l->names[i].line,
				        "more than %d run and let names in one lesson",
				        MAX_NAMES_FLOW);
				return 0;
			}
			l->names[i].bit = bits++;
		}
	struct flow *in = malloc((size_t)n * sizeof *in);
	unsigned char *seen = calloc((size_t)n, 1);
	int *work = malloc((size_t)n * sizeof *work);
	int *succ = malloc(sizeof *succ * (MAX_CHOICES + 2));
	if (!in || !seen || !work || !succ) {
		free(in);
		free(seen);
		free(work);
		free(succ);
		return -1;
	}
	/* Reachability and the forward analysis in one worklist. */
	for (int i = 0; i < n; i++)
		in[i] = (struct flow){0, ~(uint64_t)0};
	in[0] = (struct flow){KIND_NONE, 0};
	seen[0] = 1;
	int nw = 0;
	work[nw++] = 0;
	unsigned char *queued = calloc((size_t)n, 1);
	if (!queued) {
		free(in);
		free(seen);
		free(work);
		free(succ);
		return -1;
	}
	queued[0] = 1;
	while (nw) {
		int p = work[--nw];
		queued[p] = 0;
		struct flow out = in[p];
		const sl_op *o = &l->ops[p];
		if (o->kind == OP_RUN)
			out.kinds = (unsigned char)(1u << o->run);
		/* An explore may be skipped before any knob is turned: then its run
		 * never happens and the latest run is still the one before it. */
		if (o->kind == OP_EXPLORE)
			out.kinds = (unsigned char)(out.kinds | 1u << o->run);
		if (o->kind == OP_RUN && o->name >= 0)
			out.def |= (uint64_t)1 << l->names[o->name].bit;
		if (o->kind == OP_LET)
			out.def |= (uint64_t)1 << l->names[o->name].bit;
		int ns = lp_succ(l, p, succ);
		for (int i = 0; i < ns; i++) {
			int q = succ[i];
			struct flow nf = {(unsigned char)(in[q].kinds | out.kinds),
			                  in[q].def & out.def};
			if (!seen[q] || nf.kinds != in[q].kinds || nf.def != in[q].def) {
				seen[q] = 1;
				in[q] = nf;
				if (!queued[q]) {
					queued[q] = 1;
					work[nw++] = q;
				}
			}
		}
	}
	free(queued);
	for (int p = 0; p < n; p++) {
		const sl_op *o = &l->ops[p];
		if (!seen[p]) {
			if (p == 0 || seen[p - 1])
				lp_diag(P, o->line,
				        "this line can never be reached: no jump or menu item "
				        "leads here");
			continue;
		}
		struct flow f = in[p];
		text_uses(P, &o->text, f, o->line);
		switch (o->kind) {
		case OP_CHECK:
		case OP_LET:
		case OP_JUMP:
			walk_uses(P, o->expr, f, o->line);
			break;
		case OP_STEP:
			if (f.kinds & KIND_NONE)
				lp_diag(
				    P, o->line,
				    "step shows the operations of a run: add a 'run' above it%s",
				    f.kinds == KIND_NONE ? "" : " on every path");
			break;
		case OP_QUESTION:
			walk_uses(P, o->expr, f, o->line);
			text_uses(P, &o->explain, f, o->line);
			text_uses(P, &o->right, f, o->line);
			text_uses(P, &o->wrong, f, o->line);
			for (int i = 0; i < o->nch; i++) {
				text_uses(P, &o->ch[i].text, f, o->line);
				text_uses(P, &o->ch[i].explain, f, o->line);
			}
			for (int i = 0; i < o->nmis; i++) {
				walk_uses(P, o->mis[i].expr, f, o->mis[i].line);
				text_uses(P, &o->mis[i].explain, f, o->mis[i].line);
			}
			break;
		case OP_MENU:
			for (int i = 0; i < o->nch; i++)
				text_uses(P, &o->ch[i].text, f, o->line);
			break;
		case OP_SHOW:
			for (int i = 0; i < o->nshow; i++) {
				const sl_name *nm = &l->names[o->show[i]];
				if (!(f.def >> nm->bit & 1))
					lp_diag(P, o->line,
					        "show side-by-side: '%s' may not have run here: no "
					        "path "
					        "to this line surely passes the run named '%s' "
					        "(line %d)",
					        nm->s, nm->s, nm->line);
			}
			break;
		case OP_EXPLORE: {
			/* The condition is read after the learner's runs; the hint is shown
			 * with the step. */
			struct flow after = {(unsigned char)(1u << o->run), f.def};
			walk_uses(P, o->expr, after, o->line);
			text_uses(P, &o->hint, f, o->line);
			break;
		}
		default:
			break;
		}
	}

	/* A loop with no learner in it never ends. */
	unsigned char *color = seen; /* reuse: 0 white, 1 grey, 2 black (only seen ops matter) */
	memset(color, 0, (size_t)n);
	int *stack = work, *iter = malloc((size_t)n * sizeof *iter);
	if (!iter) {
		free(in);
		free(seen);
		free(work);
		free(succ);
		return -1;
	}
	int reported = 0;
	for (int s = 0; s < n && !reported; s++) {
		if (color[s] || is_learner(&l->ops[s]))
			continue;
		int sp = 0;
		stack[sp] = s;
		iter[sp++] = 0;
		color[s] = 1;
		while (sp && !reported) {
			int u = stack[sp - 1];
			int ns = is_learner(&l->ops[u]) ? 0 : lp_succ(l, u, succ);
			if (iter[sp - 1] >= ns) {
				color[u] = 2;
				sp--;
				continue;
			}
			int v = succ[iter[sp - 1]++];
			if (is_learner(&l->ops[v]))
				continue;
			if (color[v] == 1) {
				lp_diag(P, l->ops[u].line,
				        "this jump loops back to line %d with no question, menu or "
				        "explore on the way: the lesson would never end",
				        l->ops[v].line);
				reported = 1;
			} else if (color[v] == 0) {
				color[v] = 1;
				stack[sp] = v;
				iter[sp++] = 0;
			}
		}
	}
	free(iter);
	free(in);
	free(seen);
	free(work);
	free(succ);
	return 0;
}

/* Every run in file order, with the setups before it, must be one the engine
 * accepts within a lesson's limits. */
void lp_check_runs(struct parser *P)
{
	sl_lesson *l = P->l;
	sl_lsetup s;
	sl_lsetup_default(&s);
	for (int p = 0; p < l->nops; p++) {
		const sl_op *o = &l->ops[p];
		sl_err e = {0};
		if (o->kind == OP_SETUP)
			for (int i = 0; i < o->nset; i++)
				sl_lsetup_set(&s, sl_setup_key_name(o->set[i].key), o->set[i].value,
				              NULL);
		if ((o->kind == OP_RUN || o->kind == OP_EXPLORE) && sl_lrun_check(o->run, &s, &e))
			lp_diag(P, o->line, "%s %s: %s", o->kind == OP_RUN ? "run" : "explore",
			        sl_run_kind_name(o->run), e.msg);
	}
}

/* ---- sections ---- */

/* The first words of a narration, plain: no emphasis marks, a figure as
 * "...", spaces single, cut at a word with "..." past n. */
static void title_of(const char *s, char *out, size_t n)
{
	size_t j = 0;
	int space = 0;
	for (; s && *s && j + 4 < n; s++) {
		if (*s == '{') {
			const char *e = strchr(s, '}');
			if (!e)
				break;
			if (s[1] != '?') { /* a claim shows nothing */
				if (space && j)
					out[j++] = ' ';
				memcpy(out + j, "...", 3);
				j += 3;
				space = 0;
			}
			s = e;
			continue;
		}
		if (*s == '*' || *s == '`')
			continue;
		if (*s == ' ' || *s == '\t' || *s == '\n') {
			space = 1;
			continue;
		}
		if (space && j)
			out[j++] = ' ';
		space = 0;
		out[j++] = *s;
	}
	if (s && *s) { /* cut: back to the last whole word */
		while (j > 0 && out[j - 1] != ' ')
			j--;
		while (j > 0 && out[j - 1] == ' ')
			j--;
		memcpy(out + j, "...", 3);
		j += 3;
	}
	out[j < n ? j : n - 1] = 0;
}

int sl_lesson_sections(const sl_lesson *l, sl_section *out, int max)
{
	int n = 0;
	for (int p = 0; p < l->nops; p++) {
		const sl_op *o = &l->ops[p];
		int start = p == 0 && o->kind != OP_LABEL;
		if (!start && o->kind != OP_LABEL)
			continue;
		if (n < max) {
			sl_section *sec = &out[n];
			sec->pos = p;
			sec->line = start ? 1 : o->line;
			sec->label = start ? NULL : l->names[o->name].s;
			snprintf(sec->title, sizeof sec->title, "%s", start ? "" : sec->label);
			for (int q = start ? p : p + 1; q < l->nops && l->ops[q].kind != OP_LABEL;
			     q++)
				if (l->ops[q].kind == OP_SAY) {
					title_of(l->ops[q].text.s, sec->title, sizeof sec->title);
					break;
				}
		}
		n++;
	}
	return n;
}
