/* SPDX-License-Identifier: MIT */
/* parse.c - reading a lesson and checking all of it before anything runs.
 *
 * In order: the bytes (size, line length, UTF-8, no control characters),
 * logical lines (a command in column 1, indented continuation lines, #
 * comments), the label index, every command and its parameters (blocks
 * closed by `end`), jump and menu targets, and then the flow of the whole
 * lesson: every line reachable, no loop without a learner in it, every
 * figure given a value by a run on every path that reaches it, every run
 * valid for the engine.  Errors read "file:line: message". */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse_internal.h"
#include "prog.h"
#include "units.h"

static int is_block_kw(int kw)
{
	return kw >= KW_END;
}

void lp_diag(struct parser *P, int line, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (P->nerr == 0)
		sl_fail(P->err, SL_EINVAL, "%s:%d: %s", P->file, line, msg);
	if (P->d) {
		if (P->d->n < SL_LESSON_MAX_DIAGS) {
			/* Escaped as sl_fail does: a message may quote the lesson. */
			char raw[sizeof P->d->msg[0]];
			snprintf(raw, sizeof raw, "%s:%d: %s", P->file, line, msg);
			sl_escape_controls(P->d->msg[P->d->n++], sizeof P->d->msg[0], raw);
		} else
			P->d->more = 1;
	}
	P->nerr++;
}

char *lp_strndup(const char *s, size_t n)
{
	char *r = malloc(n + 1);
	if (r) {
		memcpy(r, s, n);
		r[n] = 0;
	}
	return r;
}

static char *xstrdup(const char *s)
{
	return lp_strndup(s, strlen(s));
}

/* ---- names: labels, runs, lets ---- */

/* A lesson may hold tens of thousands of labels: look names up by hash,
 * not by a scan per lookup (which made checking quadratic). */
static size_t name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

static int name_find(const sl_lesson *l, const char *s)
{
	if (!l->hcap)
		return -1;
	size_t mask = (size_t)l->hcap - 1;
	for (size_t i = name_hash(s) & mask;; i = (i + 1) & mask) {
		int k = l->hidx[i];
		if (k == 0)
			return -1;
		if (strcmp(l->names[k - 1].s, s) == 0)
			return k - 1;
	}
}

static void hash_put(sl_lesson *l, int ni)
{
	size_t mask = (size_t)l->hcap - 1;
	size_t i = name_hash(l->names[ni].s) & mask;
	while (l->hidx[i])
		i = (i + 1) & mask;
	l->hidx[i] = ni + 1;
}

static int name_add(sl_lesson *l, const char *s, sl_name_kind k, int line)
{
	if (l->nnames == l->capnames) {
		int cap = l->capnames ? l->capnames * 2 : 64;
		sl_name *n = realloc(l->names, (size_t)cap * sizeof *n);
		if (!n)
			return -1;
		l->names = n;
		l->capnames = cap;
	}
	if (2 * (l->nnames + 1) > l->hcap) {
		int cap = l->hcap ? l->hcap * 2 : 128;
		int *h = calloc((size_t)cap, sizeof *h);
		if (!h)
			return -1;
		free(l->hidx);
		l->hidx = h;
		l->hcap = cap;
		for (int i = 0; i < l->nnames; i++)
			hash_put(l, i);
	}
	sl_name *n = &l->names[l->nnames];
	memset(n, 0, sizeof *n);
	n->s = xstrdup(s);
	n->kind = k;
	n->line = line;
	n->pos = -1;
	n->bit = -1;
	if (!n->s)
		return -1;
	hash_put(l, l->nnames);
	return l->nnames++;
}

static int valid_name(const char *s, int label)
{
	size_t n = strlen(s);
	if (n == 0 || n > MAX_NAME)
		return 0;
	if (!islower((unsigned char)s[0]) && !(label && isdigit((unsigned char)s[0])) &&
	    s[0] != '_')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '_' &&
		    !(label && s[i] == '-'))
			return 0;
	return 1;
}

static int reserved(const char *s)
{
	static const char *const r[] = {"yes", "no",  "and", "or", "within", "min",
	                                "max", "abs", "if",  "as", NULL};
	for (int i = 0; r[i]; i++)
		if (strcmp(s, r[i]) == 0)
			return 1;
	return 0;
}

/* The first word of s into w; returns the rest (spaces skipped). */
static const char *word(const char *s, char *w, size_t n)
{
	size_t i = 0;
	while (*s && *s != ' ' && *s != '\t') {
		if (i + 1 < n)
			w[i++] = *s;
		s++;
	}
	w[i] = 0;
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* ---- expressions: the resolver ---- */

static int resolve(void *ctx, const char *prefix, const char *name, sl_node *node, sl_err *err)
{
	struct parser *P = ctx;
	sl_lesson *l = P->l;
	if (prefix) {
		int ni = name_find(l, prefix);
		if (ni < 0 || l->names[ni].kind != NAME_RUN)
			return sl_fail(err, SL_EINVAL,
			               "'%s.%s': there is no run named '%s' (name one with "
			               "run KIND as %s)",
			               prefix, name, prefix, prefix);
		int f = sl_fig_find(name);
		if (f < 0)
			return sl_fail(err, SL_EINVAL, "'%s.%s': unknown figure '%s'", prefix, name,
			               name);
		const sl_figdef *fd = sl_fig(f);
		if (!(fd->from & (SL_FIG_SETUP | SL_FIG_KIND(l->names[ni].run))))
			return sl_fail(err, SL_EINVAL, "'%s.%s': a %s run has no figure '%s'",
			               prefix, name, sl_run_kind_name(l->names[ni].run), name);
		node->op = SL_N_REF;
		node->ref.name = ni;
		node->ref.fig = f;
		node->dim = fd->dim;
		node->flag = fd->flag;
		return SL_OK;
	}
	int f = sl_fig_find(name);
	if (f >= 0) {
		node->op = SL_N_REF;
		node->ref.name = -1;
		node->ref.fig = f;
		node->dim = sl_fig(f)->dim;
		node->flag = sl_fig(f)->flag;
		return SL_OK;
	}
	int ni = name_find(l, name);
	if (ni >= 0 && l->names[ni].kind == NAME_LET) {
		if (l->names[ni].pos < 0)
			return sl_fail(err, SL_EINVAL, "'%s' is used before its let at line %d",
			               name, l->names[ni].line);
		node->op = SL_N_LET;
		node->ref.name = ni;
		node->dim = l->names[ni].dim;
		node->flag = l->names[ni].flag;
		return SL_OK;
	}
	if (ni >= 0 && l->names[ni].kind == NAME_RUN)
		return sl_fail(err, SL_EINVAL,
		               "'%s' is a run: name one of its figures, e.g. %s.time", name, name);
	const char *cands[64];
	int nc = 0;
	for (int i = 0; i < sl_fig_count() && nc < 64; i++)
		cands[nc++] = sl_fig(i)->name;
	const char *near = P->nerr < SL_LESSON_MAX_DIAGS ? sl_closest(name, cands, nc) : NULL;
	/* Past the kept messages a suggestion is never shown: do not scan every
	 * name for each of thousands of errors. */
	for (int i = 0; i < l->nnames && !near && P->nerr < SL_LESSON_MAX_DIAGS; i++)
		if (l->names[i].kind == NAME_LET && sl_edit_distance(name, l->names[i].s) < 3)
			near = l->names[i].s;
	if (near)
		return sl_fail(err, SL_EINVAL, "unknown figure '%s' (did you mean '%s'?)", name,
		               near);
	return sl_fail(err, SL_EINVAL, "unknown figure '%s' (see FIGURES in shardlab-lesson(5))",
	               name);
}

static int expr(struct parser *P, int line, const char *s, size_t n, int cond)
{
	sl_err e = {0};
	P->op_line = line;
	int r = sl_expr_parse(&P->l->pool, s, n, cond, resolve, P, &e);
	if (r < 0)
		lp_diag(P, line, "%s", e.msg);
	return r;
}

/* ---- text: interpolations and figures typed by hand ---- */

static int unit_word(const char *s, size_t *len)
{
	static const char *const units[] = {
	    "GB/s", "MB/s", "KB/s", "TB/s", "GiB/s", "MiB/s", "Gb/s", "Gbps", "TFLOP/s", "GFLOP/s",
	    "PFLOP/s", "FLOP/s", "TFLOPS", "GFLOPS", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB",
	    "TB", "ms", "us", "\xc2\xb5s", "ns", "s", "B", "%", "x",
	    /* counts and amounts in words: "6.5 billion parameters", "16 bytes" */
	    "PFLOP", "TFLOP", "GFLOP", "MFLOP", "FLOP", "PB", "kB", "bytes", "byte", "bits",
	    "seconds", "second", "milliseconds", "microseconds", "nanoseconds", "trillion",
	    "billion", "million", "thousand", "times", NULL};
	for (int i = 0; units[i]; i++) {
		size_t ul = strlen(units[i]);
		if (strncmp(s, units[i], ul) == 0 && !isalnum((unsigned char)s[ul]) &&
		    s[ul] != '/') {
			*len = ul;
			return 1;
		}
	}
	return 0;
}

/* A number with a unit written into the text ("450 GB/s", "2.5x", "12 us")
 * states a figure the engine did not produce: the lesson would go stale. */
static void lint_typed_figures(struct parser *P, int line, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '`') { /* a `code` span holds a formula, not a figure */
			const char *e = memchr(s + i + 1, '`', n - i - 1);
			if (e) {
				i = (size_t)(e - s);
				continue;
			}
		}
		if (!isdigit((unsigned char)s[i]) ||
		    (i > 0 &&
		     (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_' || s[i - 1] == '.')))
			continue;
		size_t j = i;
		while (j < n && (isdigit((unsigned char)s[j]) || s[j] == '.' || s[j] == ','))
			j++;
		if (s[j - 1] == '.' || s[j - 1] == ',')
			j--;
		size_t k = j;
		if (k < n && s[k] == ' ')
			k++;
		size_t ul;
		if (k < n && unit_word(s + k, &ul)) {
			if (s[k] == 'x' && k != j) /* "2 x 3" is arithmetic, "2x" is a figure */
				continue;
			lp_diag(P, line,
			        "'%.*s' is a figure typed into the text: let the engine produce it "
			        "and interpolate it, e.g. {time} or {bandwidth}",
			        (int)(k + ul - i), s + i);
			return;
		}
		i = j;
	}
}

/* A sentence of narration that states an ordering ("beats", "faster",
 * "fewer", ...) is a claim: it carries {? CONDITION}, which the lesson
 * checks when it shows the sentence, or {?} when it speaks of no run
 * (lesson 10 once said TP across nodes lost to layouts that its own runs
 * showed slower).  Sentences end at . ; : ? ! followed by a space. */
static void lint_orderings(struct parser *P, int line, const char *s)
{
	static const char *const words[] = {
	    "beat",        "beats",  "faster", "slower",  "more than", "less than", "fewer",
	    "cheaper",     "win",    "wins",   "lose",    "loses",     "exceed",    "exceeds",
	    "higher",      "lower",  "larger", "smaller", "longer",    "shorter",   "outperform",
	    "outperforms", "better", "worse",  NULL};
	size_t n = strlen(s);
	for (size_t a = 0; a < n;) {
		size_t b = a;
		while (b < n && !(strchr(".;:?!", s[b]) && (b + 1 == n || s[b + 1] == ' ')))
			b++;
		/* the sentence s[a..b]: claimed? */
		int claimed = 0;
		for (size_t k = a; k + 1 <= b && k + 1 < n; k++)
			if (s[k] == '{' && s[k + 1] == '?')
				claimed = 1;
		if (!claimed && b + 2 < n && s[b + 1] == '{' && s[b + 2] == '?')
			claimed = 1;
		for (int w = 0; words[w] && !claimed; w++) {
			size_t wl = strlen(words[w]);
			for (size_t k = a; k + wl <= b; k++) {
				if (strncasecmp(s + k, words[w], wl) != 0 ||
				    (k > 0 && isalpha((unsigned char)s[k - 1])) ||
				    (k + wl < n && isalpha((unsigned char)s[k + wl])))
					continue;
				lp_diag(P, line,
				        "'%s' states an ordering: back the sentence with {? "
				        "CONDITION}, "
				        "checked when it is shown, or mark it {?} if it speaks of "
				        "no run",
				        words[w]);
				claimed = 1;
				break;
			}
		}
		a = b + 1;
		while (a < n && s[a] == ' ')
			a++;
	}
}

static int text(struct parser *P, int line, const char *s, sl_text *t)
{
	memset(t, 0, sizeof *t);
	t->s = xstrdup(s);
	if (!t->s)
		return -1;
	size_t n = strlen(s), lit = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '}') {
			if (i + 1 < n && s[i + 1] == '}') {
				i++;
				continue;
			}
			lp_diag(P, line, "a '}' without its '{': write }} for a brace");
			return -1;
		}
		if (s[i] != '{')
			continue;
		if (i + 1 < n && s[i + 1] == '{') {
			i++;
			continue;
		}
		lint_typed_figures(P, line, s + lit, i - lit);
		size_t j = i + 1;
		while (j < n && s[j] != '}' && s[j] != '{')
			j++;
		if (j >= n || s[j] != '}') {
			lp_diag(P, line, "a '{' is not closed: write {figure}, or {{ for a brace");
			return -1;
		}
		size_t en = j - i - 1;
		int pct = 0;
		if (en >= 1 && s[i + 1] == '?') {
			/* {? CONDITION}: a claim the sentence makes, checked when it
			 * is shown (SL_TEXT_CLAIM); {?}: a sentence of no run. */
			size_t k = i + 2;
			while (k < j && s[k] == ' ')
				k++;
			if (k == j) {
				i = j;
				lit = j + 1;
				continue;
			}
			pct = SL_TEXT_CLAIM;
			i = k - 1;
			en = j - k;
		} else if (en >= 2 && s[i + en - 1] == ':' && s[i + en] == '%') {
			pct = 1;
			en -= 2;
		}
		int node = expr(P, line, s + i + 1, en, pct == SL_TEXT_CLAIM);
		if (node < 0)
			return -1;
		int *nn = realloc(t->nodes, (size_t)(t->n + 1) * sizeof *nn);
		if (nn)
			t->nodes = nn;
		unsigned char *np = nn ? realloc(t->pct, (size_t)(t->n + 1)) : NULL;
		if (!nn || !np) {
			lp_diag(P, line, "out of memory");
			return -1;
		}
		t->nodes = nn;
		t->pct = np;
		t->nodes[t->n] = node;
		t->pct[t->n++] = (unsigned char)pct;
		i = j;
		lit = j + 1;
	}
	lint_typed_figures(P, line, s + lit, n - lit);
	return 0;
}

static void text_free(sl_text *t)
{
	free(t->s);
	free(t->nodes);
	free(t->pct);
	memset(t, 0, sizeof *t);
}

/* ---- stage 3: commands ---- */

static sl_op *new_op(struct parser *P, sl_op_kind k, int line)
{
	sl_lesson *l = P->l;
	if (l->nops == l->capops) { /* doubling: a realloc per op is quadratic at worst */
		int cap = l->capops ? l->capops * 2 : 64;
		sl_op *o = realloc(l->ops, (size_t)cap * sizeof *o);
		if (!o)
			return NULL;
		l->ops = o;
		l->capops = cap;
	}
	sl_op *o = &l->ops[l->nops++];
	memset(o, 0, sizeof *o);
	o->kind = k;
	o->line = line;
	o->name = o->expr = o->target = -1;
	return o;
}

/* usage: what the command needs, e.g. "a label: jump LABEL". */
static int need_text(struct parser *P, const struct lline *L, const char *usage)
{
	if (*L->rest)
		return 1;
	if (strcmp(usage, "text") == 0)
		lp_diag(P, L->no, "%s needs a text: %s TEXT", lp_kw_names[L->kw],
		        lp_kw_names[L->kw]);
	else
		lp_diag(P, L->no, "%s needs %s", lp_kw_names[L->kw], usage);
	return 0;
}

static int add_choice(sl_op *o, sl_choice **last)
{
	sl_choice *c = realloc(o->ch, (size_t)(o->nch + 1) * sizeof *c);
	if (!c)
		return -1;
	o->ch = c;
	memset(&c[o->nch], 0, sizeof *c);
	c[o->nch].target = -1;
	*last = &c[o->nch++];
	return 0;
}

/* Split "EXPR within TOL" at its last "within". */
static const char *find_within(const char *s)
{
	const char *hit = NULL;
	for (const char *p = s; (p = strstr(p, "within")); p++)
		if ((p == s || p[-1] == ' ') && (p[6] == ' ' || p[6] == 0))
			hit = p;
	return hit;
}

static void unknown_key(struct parser *P, int line, const char *what, const char *k)
{
	const char *cands[64];
	int nc = 0;
	for (int i = 0; sl_setup_key_name(i)[0] != '?' && nc < 64; i++)
		cands[nc++] = sl_setup_key_name(i);
	const char *near = sl_closest(k, cands, nc);
	if (near)
		lp_diag(P, line, "%sunknown setup key '%s' (did you mean '%s'?)", what, k, near);
	else
		lp_diag(P, line, "%sunknown setup key '%s' (see SETUP KEYS in shardlab-lesson(5))",
		        what, k);
}

/* key=value pairs of a setup (or an explore's demo) into o->set. */
static int settings(struct parser *P, sl_op *o, const struct lline *L)
{
	sl_lsetup scratch;
	sl_lsetup_default(&scratch);
	const char *r = L->rest;
	const char *cmd = lp_kw_names[L->kw];
	while (*r) {
		char kv[200];
		r = word(r, kv, sizeof kv);
		char *eq = strchr(kv, '=');
		if (!eq) {
			int k = sl_setup_key(kv);
			if (k >= 0 && *r)
				lp_diag(P, L->no, "%s takes key=value pairs: write %s=%.40s", cmd,
				        kv, r);
			else
				lp_diag(P, L->no, "%s takes key=value pairs, found '%s'", cmd, kv);
			break;
		}
		*eq = 0;
		sl_err e = {0};
		if (sl_setup_key(kv) < 0) {
			unknown_key(P, L->no, "", kv);
			continue;
		}
		if (sl_lsetup_set(&scratch, kv, eq + 1, &e)) {
			lp_diag(P, L->no, "%s", e.msg);
			continue;
		}
		sl_setting *s = realloc(o->set, (size_t)(o->nset + 1) * sizeof *s);
		if (!s)
			return -1;
		o->set = s;
		s[o->nset].key = sl_setup_key(kv);
		if (!(s[o->nset].value = xstrdup(eq + 1)))
			return -1;
		o->nset++;
	}
	return 0;
}

/* "within TOL" at w: a relative (5%) or an absolute tolerance of the
 * dimension of the value at node. */
static void tolerance(struct parser *P, int line, const char *w, int node, double *tol, int *rel)
{
	char tw[48];
	const char *after = word(w + 6 + (w[6] == ' '), tw, sizeof tw);
	double v;
	sl_dim dim;
	sl_err e = {0};
	if (!tw[0] || *after) {
		lp_diag(P, line, "within needs one tolerance: within 5%% or within 2us");
	} else if (sl_literal_parse(tw, &v, &dim, &e)) {
		lp_diag(P, line, "within: %s", e.msg);
	} else {
		*tol = v;
		*rel = strchr(tw, '%') != NULL;
		if (!*rel && node >= 0 && !sl_dim_eq(dim, P->l->pool.n[node].dim))
			lp_diag(P, line, "the tolerance %s is %s but the answer is %s", tw,
			        sl_dim_name(dim), sl_dim_name(P->l->pool.n[node].dim));
	}
}

/* An expression as written, its spaces dropped: two that read the same. */
static void squeeze(const char *s, size_t n, char *out, size_t cap)
{
	size_t j = 0;
	for (size_t i = 0; i < n && j + 1 < cap; i++)
		if (s[i] != ' ' && s[i] != '\t')
			out[j++] = s[i];
	out[j] = 0;
}

static int compile_question(struct parser *P, sl_op *o, int from, int to)
{
	sl_choice *last = NULL;
	sl_mistake *lastm = NULL;
	int answers = 0, options = 0, correct = 0, unit_line = 0, ans_line = 0;
	char unit[16] = "", ans_src[128] = "";
	for (int i = from; i < to; i++) {
		const struct lline *L = &P->ll[i];
		switch (L->kw) {
		case KW_OPTION:
		case KW_CORRECT:
			if (!need_text(P, L, "text"))
				break;
			if (options >= MAX_CHOICES) {
				lp_diag(P, L->no, "a question has at most %d choices", MAX_CHOICES);
				break;
			}
			if (add_choice(o, &last))
				return -1;
			lastm = NULL;
			last->correct = L->kw == KW_CORRECT;
			options++;
			correct += last->correct;
			text(P, L->no, L->rest, &last->text);
			break;
		case KW_EXPLAIN:
			if (!need_text(P, L, "text"))
				break;
			if (lastm) {
				if (lastm->explain.s)
					lp_diag(P, L->no,
					        "this mistake already has an explanation (line "
					        "above): join them");
				else
					text(P, L->no, L->rest, &lastm->explain);
				break;
			}
			if (last && last->explain.s) {
				lp_diag(P, L->no,
				        "this choice already has an explanation (line above): join "
				        "them");
				break;
			}
			if (!last && o->explain.s) {
				lp_diag(P, L->no, "the question already has an explanation");
				break;
			}
			text(P, L->no, L->rest, last ? &last->explain : &o->explain);
			break;
		case KW_MISTAKE: {
			if (!need_text(P, L, "a figure: mistake FIGURE [within 5%]"))
				break;
			sl_mistake *m = realloc(o->mis, (size_t)(o->nmis + 1) * sizeof *m);
			if (!m)
				return -1;
			o->mis = m;
			lastm = &m[o->nmis++];
			memset(lastm, 0, sizeof *lastm);
			lastm->line = L->no;
			lastm->tol = -1; /* the answer's, once it is known */
			last = NULL;
			const char *w = find_within(L->rest);
			size_t en = w ? (size_t)(w - L->rest) : strlen(L->rest);
			while (en > 0 && L->rest[en - 1] == ' ')
				en--;
			lastm->expr = expr(P, L->no, L->rest, en, 0);
			if (!(lastm->src = lp_strndup(L->rest, en)))
				return -1;
			if (w)
				tolerance(P, L->no, w, lastm->expr, &lastm->tol, &lastm->tol_rel);
			break;
		}
		case KW_ANSWER: {
			if (!need_text(P, L, "a figure: answer FIGURE [within 5%]"))
				break;
			lastm = NULL;
			if (answers++) {
				lp_diag(P, L->no, "a question has one answer");
				break;
			}
			const char *w = find_within(L->rest);
			size_t en = w ? (size_t)(w - L->rest) : strlen(L->rest);
			while (en > 0 && L->rest[en - 1] == ' ')
				en--;
			o->expr = expr(P, L->no, L->rest, en, 0);
			squeeze(L->rest, en, ans_src, sizeof ans_src);
			ans_line = L->no;
			o->tol = 0.05;
			o->tol_rel = 1;
			if (w)
				tolerance(P, L->no, w, o->expr, &o->tol, &o->tol_rel);
			if (o->expr >= 0 && P->l->pool.n[o->expr].flag)
				lp_diag(P, L->no,
				        "a yes/no figure makes a multiple-choice question, not a "
				        "numeric one");
			break;
		}
		case KW_UNIT: {
			lastm = NULL;
			char uw[16];
			const char *after = word(L->rest, uw, sizeof uw);
			if (!uw[0] || *after) {
				lp_diag(P, L->no,
				        "unit needs one unit: unit us, unit MiB, unit GB/s");
				break;
			}
			snprintf(unit, sizeof unit, "%s", uw);
			unit_line = L->no;
			break;
		}
		case KW_RIGHT:
		case KW_WRONG:
			lastm = NULL;
			if (!need_text(P, L, "text"))
				break;
			if ((L->kw == KW_RIGHT ? o->right.s : o->wrong.s)) {
				lp_diag(P, L->no, "the question already has a '%s' text",
				        lp_kw_names[L->kw]);
				break;
			}
			text(P, L->no, L->rest, L->kw == KW_RIGHT ? &o->right : &o->wrong);
			break;
		default:
			lp_diag(P, L->no,
			        "'%s' does not belong in a question (a question holds option, "
			        "correct, explain, or answer, mistake, unit, right, wrong)",
			        lp_kw_names[L->kw]);
		}
	}
	int line = o->line;
	if (answers && options)
		lp_diag(P, line,
		        "a question is either multiple choice (option, correct) or numeric "
		        "(answer), not both");
	else if (!answers && !options)
		lp_diag(P, line,
		        "the question has no choices and no answer: add 'correct TEXT' and "
		        "'option TEXT' lines, or 'answer FIGURE' (block lines start in column 1)");
	else if (options) {
		o->numeric = 0;
		if (options < 2)
			lp_diag(P, line, "a multiple-choice question needs at least two choices");
		if (!correct)
			lp_diag(P, line,
			        "no choice is marked right: write 'correct' instead of 'option' "
			        "for it");
		if (o->right.s || o->wrong.s)
			lp_diag(P, line,
			        "right and wrong texts are for numeric questions: give each choice "
			        "its own 'explain'");
		if (unit[0])
			lp_diag(P, unit_line, "'unit' is for numeric questions");
		if (o->nmis)
			lp_diag(P, o->mis[0].line,
			        "'mistake' is for numeric questions: give each choice its own "
			        "'explain'");
	} else {
		o->numeric = 1;
		snprintf(o->unit, sizeof o->unit, "%s", unit);
		if (unit[0] && o->expr >= 0) {
			char lit[24];
			double v;
			sl_dim dim;
			sl_err e = {0};
			snprintf(lit, sizeof lit, "1%s", unit);
			if (sl_literal_parse(lit, &v, &dim, &e))
				lp_diag(P, unit_line, "unit: %s", e.msg);
			else if (!sl_dim_eq(dim, P->l->pool.n[o->expr].dim))
				lp_diag(P, unit_line, "unit %s is %s but the answer is %s", unit,
				        sl_dim_name(dim), sl_dim_name(P->l->pool.n[o->expr].dim));
		}
		for (int i = 0; i < o->nmis; i++) {
			sl_mistake *m = &o->mis[i];
			char msrc[128];
			if (m->tol < 0) {
				m->tol = o->tol;
				m->tol_rel = o->tol_rel;
			}
			if (!m->explain.s)
				lp_diag(
				    P, m->line,
				    "the mistake needs an 'explain' line after it: what a learner "
				    "who gives this answer has confused");
			if (m->expr >= 0 && o->expr >= 0 &&
			    !sl_dim_eq(P->l->pool.n[m->expr].dim, P->l->pool.n[o->expr].dim))
				lp_diag(P, m->line, "the mistake is %s but the answer is %s",
				        sl_dim_name(P->l->pool.n[m->expr].dim),
				        sl_dim_name(P->l->pool.n[o->expr].dim));
			else if (m->expr >= 0 && o->expr >= 0 &&
			         (squeeze(m->src, strlen(m->src), msrc, sizeof msrc),
			          strcmp(msrc, ans_src) == 0))
				lp_diag(
				    P, m->line,
				    "the mistake is the answer itself (line %d): a right answer "
				    "is never a mistake",
				    ans_line);
		}
	}
	return 0;
}

static int compile_menu(struct parser *P, sl_op *o, int from, int to)
{
	for (int i = from; i < to; i++) {
		const struct lline *L = &P->ll[i];
		if (L->kw != KW_ITEM) {
			lp_diag(
			    P, L->no,
			    "'%s' does not belong in a menu (a menu holds item LABEL TEXT lines)",
			    lp_kw_names[L->kw]);
			continue;
		}
		char lab[64];
		const char *rest = word(L->rest, lab, sizeof lab);
		if (!lab[0] || !*rest) {
			lp_diag(P, L->no, "item needs a label and a text: item LABEL TEXT");
			continue;
		}
		if (o->nch >= MAX_CHOICES) {
			lp_diag(P, L->no, "a menu has at most %d items", MAX_CHOICES);
			continue;
		}
		sl_choice *c;
		if (add_choice(o, &c))
			return -1;
		c->line = L->no;
		int ni = name_find(P->l, lab);
		if (ni < 0 || P->l->names[ni].kind != NAME_LABEL) {
			lp_diag(P, L->no, "item goes to unknown label '%s'", lab);
			c->target = -1;
		} else {
			c->target = ni; /* a name for now; positions once all ops exist */
		}
		text(P, L->no, rest, &c->text);
	}
	if (o->nch == 0)
		lp_diag(P, o->line,
		        "the menu has no items: add 'item LABEL TEXT' lines (in column 1)");
	return 0;
}

static int compile_explore(struct parser *P, sl_op *o, int from, int to)
{
	int untils = 0, demo_line = 0;
	const char *until = NULL;
	int until_line = 0;
	for (int i = from; i < to; i++) {
		const struct lline *L = &P->ll[i];
		switch (L->kw) {
		case KW_KNOB: {
			const char *r = L->rest;
			if (!*r)
				lp_diag(P, L->no,
				        "knob needs the setup keys the learner may change: knob "
				        "bandwidth");
			while (*r) {
				char k[32];
				r = word(r, k, sizeof k);
				int key = sl_setup_key(k);
				if (key < 0) {
					unknown_key(P, L->no, "knob: ", k);
					continue;
				}
				int *kn = realloc(o->knobs, (size_t)(o->nknobs + 1) * sizeof *kn);
				if (!kn)
					return -1;
				o->knobs = kn;
				o->knobs[o->nknobs++] = key;
			}
			break;
		}
		case KW_UNTIL:
			if (untils++) {
				lp_diag(
				    P, L->no,
				    "an explore has one 'until' condition (join them with and/or)");
				break;
			}
			until = L->rest;
			until_line = L->no;
			break;
		case KW_DEMO:
			if (!need_text(
			        P, L,
			        "the knob settings that meet the condition: demo bandwidth=1GB/s"))
				break;
			if (o->nset) {
				lp_diag(P, L->no, "the explore already has a demo");
				break;
			}
			if (settings(P, o, L))
				return -1;
			demo_line = L->no;
			break;
		case KW_HINT:
			if (!need_text(P, L, "text"))
				break;
			if (o->hint.s) {
				lp_diag(P, L->no, "the explore already has a hint");
				break;
			}
			text(P, L->no, L->rest, &o->hint);
			break;
		default:
			lp_diag(P, L->no,
			        "'%s' does not belong in an explore (it holds knob, until, hint, "
			        "demo)",
			        lp_kw_names[L->kw]);
		}
	}
	for (int i = 0; i < o->nset; i++) {
		int ok = 0;
		for (int k = 0; k < o->nknobs; k++)
			ok |= o->knobs[k] == o->set[i].key;
		if (!ok)
			lp_diag(P, demo_line,
			        "demo sets '%s', which is not one of the explore's knobs",
			        sl_setup_key_name(o->set[i].key));
	}
	if (!o->nknobs)
		lp_diag(P, o->line,
		        "the explore gives the learner no knob: add 'knob bandwidth' (or another "
		        "setup key) in column 1");
	if (!until) {
		lp_diag(P, o->line,
		        "the explore has no 'until CONDITION': say when the lesson goes on");
	} else {
		/* The condition is about the learner's runs: parse it as if the
		 * explore's kind had just run (the flow analysis knows). */
		o->expr = expr(P, until_line, until, strlen(until), 1);
		o->src = xstrdup(until);
	}
	return 0;
}

/* show side-by-side A B [C]: two or three training runs named above it
 * (flow.c checks that every path to it passes them). */
static int compile_show(struct parser *P, const struct lline *L)
{
	sl_lesson *l = P->l;
	static const char usage[] =
	    "show side-by-side RUN RUN [RUN] (runs named by run train as RUN)";
	char w[64];
	if (!need_text(P, L, usage + 5))
		return 0;
	const char *after = word(L->rest, w, sizeof w);
	if (strcmp(w, "side-by-side") != 0) {
		lp_diag(P, L->no, "show: unknown figure '%s' (figures: side-by-side)", w);
		return 0;
	}
	int n = 0;
	for (const char *p = after; *p; n++) {
		char nm[64];
		p = word(p, nm, sizeof nm);
	}
	if (n < 2 || n > SL_SHOW_MAX) {
		lp_diag(P, L->no, "show side-by-side takes two or three runs, not %d: %s", n,
		        usage);
		return 0;
	}
	int show[SL_SHOW_MAX], ok = 1;
	for (int i = 0; i < n; i++) {
		char nm[64];
		after = word(after, nm, sizeof nm);
		int ni = name_find(l, nm);
		if (ni < 0 || l->names[ni].kind != NAME_RUN) {
			lp_diag(P, L->no,
			        "show side-by-side: no run above this line is named '%s' (name one "
			        "with run train as %s)",
			        nm, nm);
			ok = 0;
			continue;
		}
		if (l->names[ni].run != SL_RUN_TRAIN) {
			lp_diag(P, L->no,
			        "show side-by-side: '%s' is a %s run (line %d); it shows training "
			        "runs (run train as %s)",
			        nm, sl_run_kind_name(l->names[ni].run), l->names[ni].line, nm);
			ok = 0;
			continue;
		}
		for (int j = 0; j < i; j++)
			if (show[j] == ni) {
				lp_diag(P, L->no, "show side-by-side: '%s' is named twice", nm);
				ok = 0;
			}
		show[i] = ni;
	}
	if (!ok)
		return 0;
	sl_op *o = new_op(P, OP_SHOW, L->no);
	if (!o)
		return -1;
	for (int i = 0; i < n; i++) {
		o->show[i] = show[i];
		l->names[show[i]].shown = 1;
	}
	o->nshow = n;
	return 0;
}

static int compile(struct parser *P)
{
	sl_lesson *l = P->l;
	int have_title = 0, have_minutes = 0, have_track = 0;
	/* The label index first, so jumps may go forward. */
	for (int i = 0; i < P->nll; i++) {
		const struct lline *L = &P->ll[i];
		if (L->kw == KW_LET) {
			/* Known before its line, so an early use is named as such. */
			char w[64];
			word(L->rest, w, sizeof w);
			if (valid_name(w, 0) && !reserved(w) && sl_fig_find(w) < 0 &&
			    name_find(l, w) < 0 && name_add(l, w, NAME_LET, L->no) < 0)
				return -1;
			continue;
		}
		if (L->kw != KW_LABEL)
			continue;
		char w[64];
		const char *after = word(L->rest, w, sizeof w);
		if (!w[0]) {
			lp_diag(P, L->no, "label needs a name: label NAME");
			continue;
		}
		if (*after || !valid_name(w, 1)) {
			lp_diag(
			    P, L->no,
			    "'%s%s%s' is not a label name (lowercase letters, digits, - and _, up "
			    "to %d)",
			    w, *after ? " " : "", after, MAX_NAME);
			continue;
		}
		int ni = name_find(l, w);
		if (ni >= 0) {
			lp_diag(P, L->no, "label '%s' is already defined at line %d", w,
			        l->names[ni].line);
			if (l->names[ni].kind != NAME_LABEL)
				lp_diag(P, L->no,
				        "'%s' names a let at line %d; a label needs another name",
				        w, l->names[ni].line);
			continue;
		}
		if (name_add(l, w, NAME_LABEL, L->no) < 0)
			return -1;
	}

	for (int i = 0; i < P->nll; i++) {
		const struct lline *L = &P->ll[i];
		char w[64];
		const char *after;
		sl_op *o;
		switch (L->kw) {
		case KW_TITLE:
		case KW_ABOUT:
			if (!need_text(P, L, "text"))
				break;
			if (L->kw == KW_TITLE ? have_title++ : l->about[0] != 0) {
				lp_diag(P, L->no, "the lesson already has a%s",
				        L->kw == KW_TITLE ? " title" : "n about");
				break;
			}
			if (strchr(L->rest, '{'))
				lp_diag(
				    P, L->no,
				    "%s is shown before anything runs: it cannot hold {figures}",
				    lp_kw_names[L->kw]);
			lint_typed_figures(P, L->no, L->rest, strlen(L->rest));
			if (L->kw == KW_TITLE) {
				free(l->title);
				l->title = xstrdup(L->rest);
			} else {
				free(l->about);
				l->about = xstrdup(L->rest);
				l->about_line = L->no;
			}
			break;
		case KW_MINUTES: {
			long v;
			sl_err e = {0};
			if (!need_text(P, L, "a number: minutes 10"))
				break;
			if (have_minutes++) {
				lp_diag(P, L->no, "the lesson already has a minutes line");
				break;
			}
			if (sl_parse_int(L->rest, 1, 120, "minutes", &v, &e))
				lp_diag(P, L->no, "%s", e.msg);
			else
				l->minutes = (int)v;
			break;
		}
		case KW_TRACK:
			if (!need_text(P, L, "class or optional: track class"))
				break;
			if (have_track++) {
				lp_diag(P, L->no, "the lesson already has a track line");
				break;
			}
			if (strcmp(L->rest, "class") == 0)
				l->track = SL_TRACK_CLASS;
			else if (strcmp(L->rest, "optional") == 0)
				l->track = SL_TRACK_OPTIONAL;
			else
				lp_diag(
				    P, L->no,
				    "track: '%s' is not class or optional (the 90-minute class, or "
				    "an optional addition to it)",
				    L->rest);
			break;
		case KW_SAY:
			if (!need_text(P, L, "text"))
				break;
			if (!(o = new_op(P, OP_SAY, L->no)))
				return -1;
			if (text(P, L->no, L->rest, &o->text) == 0)
				lint_orderings(P, L->no, L->rest);
			break;
		case KW_PAUSE:
			if (!(o = new_op(P, OP_PAUSE, L->no)))
				return -1;
			text(P, L->no, L->rest, &o->text);
			break;
		case KW_SETUP:
			if (!need_text(P, L, "key=value pairs: setup devices=4 bandwidth=100GB/s"))
				break;
			if (!(o = new_op(P, OP_SETUP, L->no)))
				return -1;
			if (settings(P, o, L))
				return -1;
			break;
		case KW_RUN: {
			if (!need_text(P, L,
			               "what to run: run matmul, run collective or run train"))
				break;
			after = word(L->rest, w, sizeof w);
			sl_run_kind k;
			if (sl_run_kind_parse(w, &k)) {
				lp_diag(P, L->no, "run: unknown kind '%s' (kinds: %s)", w,
				        sl_run_kinds());
				break;
			}
			if (!(o = new_op(P, OP_RUN, L->no)))
				return -1;
			o->run = k;
			if (*after) {
				char nm[64];
				after = word(after, w, sizeof w);
				after = word(after, nm, sizeof nm);
				if (strcmp(w, "as") != 0 || !nm[0] || *after) {
					lp_diag(
					    P, L->no,
					    "run takes a kind and an optional name: run %s as NAME",
					    sl_run_kind_name(k));
					break;
				}
				if (!valid_name(nm, 0) || reserved(nm) || sl_fig_find(nm) >= 0) {
					lp_diag(P, L->no,
					        "'%s' cannot name a run (lowercase letters, digits "
					        "and _; not a "
					        "figure's name)",
					        nm);
					break;
				}
				int ni = name_find(l, nm);
				if (ni >= 0 &&
				    (l->names[ni].kind != NAME_RUN || l->names[ni].run != k)) {
					lp_diag(P, L->no, "'%s' already names %s at line %d", nm,
					        l->names[ni].kind == NAME_LABEL ? "a label"
					        : l->names[ni].kind == NAME_LET
					            ? "a let"
					            : "a run of another kind",
					        l->names[ni].line);
					break;
				}
				if (ni < 0) {
					if ((ni = name_add(l, nm, NAME_RUN, L->no)) < 0)
						return -1;
					l->names[ni].run = k;
				}
				o->name = ni;
			}
			break;
		}
		case KW_STEP: {
			long v = 1;
			sl_err e = {0};
			if (*L->rest && sl_parse_int(L->rest, 1, MAX_STEP_OPS, "step", &v, &e)) {
				lp_diag(P, L->no, "%s: step N shows the next N operations", e.msg);
				break;
			}
			if (!(o = new_op(P, OP_STEP, L->no)))
				return -1;
			o->count = (int)v;
			break;
		}
		case KW_CHECK:
			if (!need_text(P, L, "a condition: check speedup < 1"))
				break;
			if (!(o = new_op(P, OP_CHECK, L->no)))
				return -1;
			o->src = xstrdup(L->rest);
			o->expr = expr(P, L->no, L->rest, strlen(L->rest), 1);
			break;
		case KW_LET: {
			if (!need_text(P, L, "a name and a value: let NAME = VALUE"))
				break;
			after = word(L->rest, w, sizeof w);
			if (strncmp(after, "= ", 2) != 0 && strcmp(after, "=") != 0) {
				char *eq = strchr(w, '=');
				if (eq)
					lp_diag(P, L->no, "put spaces around '=': let %.*s = ...",
					        (int)(eq - w), w);
				else
					lp_diag(P, L->no,
					        "let needs a name and a value: let NAME = VALUE");
				break;
			}
			after++;
			while (*after == ' ')
				after++;
			if (!valid_name(w, 0) || reserved(w) || sl_fig_find(w) >= 0) {
				lp_diag(P, L->no,
				        "'%s' cannot name a value (lowercase letters, digits and "
				        "_; not a "
				        "figure's name)",
				        w);
				break;
			}
			int ni = name_find(l, w);
			if (ni >= 0 && l->names[ni].kind != NAME_LET) {
				lp_diag(P, L->no, "'%s' already names %s at line %d", w,
				        l->names[ni].kind == NAME_LABEL ? "a label" : "a run",
				        l->names[ni].line);
				break;
			}
			int e = expr(P, L->no, after, strlen(after), 0);
			if (e < 0)
				break;
			if (ni < 0 && (ni = name_add(l, w, NAME_LET, L->no)) < 0)
				return -1;
			if (l->names[ni].pos <
			    0) { /* its first let: the value's dimension is its own */
				l->names[ni].dim = l->pool.n[e].dim;
				l->names[ni].flag = l->pool.n[e].flag;
				l->names[ni].pos = 0;
			} else if (!sl_dim_eq(l->names[ni].dim, l->pool.n[e].dim)) {
				lp_diag(P, L->no, "'%s' was %s at line %d; here it is %s", w,
				        sl_dim_name(l->names[ni].dim), l->names[ni].line,
				        sl_dim_name(l->pool.n[e].dim));
				break;
			}
			if (!(o = new_op(P, OP_LET, L->no)))
				return -1;
			o->name = ni;
			o->expr = e;
			break;
		}
		case KW_LABEL: {
			word(L->rest, w, sizeof w);
			int ni = name_find(l, w);
			if (ni < 0 || l->names[ni].kind != NAME_LABEL || l->names[ni].line != L->no)
				break; /* reported in the index pass */
			if (!(o = new_op(P, OP_LABEL, L->no)))
				return -1;
			o->name = ni;
			l->names[ni].pos = l->nops - 1;
			break;
		}
		case KW_JUMP: {
			if (!need_text(P, L, "a label: jump LABEL [if CONDITION]"))
				break;
			after = word(L->rest, w, sizeof w);
			int ni = name_find(l, w);
			if (ni < 0 || l->names[ni].kind != NAME_LABEL) {
				const char *cands[256];
				int nc = 0;
				for (int k = 0;
				     k < l->nnames && nc < 256 && P->nerr < SL_LESSON_MAX_DIAGS;
				     k++)
					if (l->names[k].kind == NAME_LABEL)
						cands[nc++] = l->names[k].s;
				const char *near = sl_closest(w, cands, nc);
				if (near)
					lp_diag(P, L->no,
					        "jump to unknown label '%s' (did you mean '%s'?)",
					        w, near);
				else
					lp_diag(P, L->no,
					        "jump to unknown label '%s': add 'label %s' where "
					        "the lesson "
					        "should go on",
					        w, w);
				break;
			}
			if (!(o = new_op(P, OP_JUMP, L->no)))
				return -1;
			o->target = ni;
			if (*after) {
				char ifw[8];
				const char *c = word(after, ifw, sizeof ifw);
				if (strcmp(ifw, "if") != 0 || !*c) {
					lp_diag(P, L->no,
					        "jump takes a label and an optional condition: "
					        "jump %s if "
					        "speedup < 1",
					        w);
					break;
				}
				o->src = xstrdup(c);
				o->expr = expr(P, L->no, c, strlen(c), 1);
			}
			break;
		}
		case KW_FINISH:
			if (*L->rest)
				lp_diag(P, L->no, "finish takes nothing after it");
			if (!new_op(P, OP_FINISH, L->no))
				return -1;
			break;
		case KW_QUESTION:
		case KW_MENU:
		case KW_EXPLORE: {
			int j = i + 1;
			while (j < P->nll && is_block_kw(P->ll[j].kw) && P->ll[j].kw != KW_END)
				j++;
			const char *what = lp_kw_names[L->kw];
			if (j >= P->nll) {
				int last = P->nll ? P->ll[P->nll - 1].no : L->no;
				lp_diag(P, last,
				        "the %s opened at line %d is not closed: add 'end' after "
				        "its last "
				        "line, in column 1",
				        what, L->no);
			} else if (P->ll[j].kw != KW_END) {
				lp_diag(
				    P, P->ll[j].no,
				    "'%s' inside the %s opened at line %d: add 'end' before this "
				    "line to close the %s",
				    lp_kw_names[P->ll[j].kw], what, L->no, what);
			} else if (*P->ll[j].rest) {
				lp_diag(P, P->ll[j].no, "end takes nothing after it");
			}
			sl_op_kind k = L->kw == KW_QUESTION ? OP_QUESTION
			               : L->kw == KW_MENU   ? OP_MENU
			                                    : OP_EXPLORE;
			if (!(o = new_op(P, k, L->no)))
				return -1;
			const char *t = L->rest;
			if (k == OP_EXPLORE) {
				t = word(L->rest, w, sizeof w);
				if (!w[0] || sl_run_kind_parse(w, &o->run)) {
					lp_diag(P, L->no,
					        "explore needs what the learner runs and a text: "
					        "explore "
					        "matmul TEXT (kinds: %s)",
					        sl_run_kinds());
					t = "";
				}
			}
			if (!*t)
				lp_diag(P, L->no, "%s needs a text that says what to do", what);
			else
				text(P, L->no, t, &o->text);
			int rc = k == OP_QUESTION ? compile_question(P, o, i + 1, j)
			         : k == OP_MENU   ? compile_menu(P, o, i + 1, j)
			                          : compile_explore(P, o, i + 1, j);
			if (rc)
				return -1;
			i = j < P->nll && P->ll[j].kw == KW_END ? j : j - 1;
			break;
		}
		case KW_SHOW:
			if (compile_show(P, L) < 0)
				return -1;
			break;
		case KW_END:
			lp_diag(P, L->no, "'end' without a question, menu or explore to close");
			break;
		default:
			lp_diag(P, L->no, "'%s' belongs inside a %s ... end block",
			        lp_kw_names[L->kw],
			        L->kw == KW_ITEM ? "menu"
			        : (L->kw == KW_KNOB || L->kw == KW_UNTIL || L->kw == KW_HINT ||
			           L->kw == KW_DEMO)
			            ? "explore"
			            : "question");
		}
	}
	if (!have_title)
		lp_diag(P, 1, "the lesson has no title: add 'title TEXT' at the top");
	if (!have_minutes)
		lp_diag(P, 1,
		        "the lesson does not say how long it takes: add 'minutes N' at the top");
	return 0;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

void sl_lesson_free(sl_lesson *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->nops; i++) {
		sl_op *o = &l->ops[i];
		text_free(&o->text);
		free(o->src);
		for (int j = 0; j < o->nset; j++)
			free(o->set[j].value);
		free(o->set);
		for (int j = 0; j < o->nch; j++) {
			text_free(&o->ch[j].text);
			text_free(&o->ch[j].explain);
		}
		free(o->ch);
		for (int j = 0; j < o->nmis; j++) {
			text_free(&o->mis[j].explain);
			free(o->mis[j].src);
		}
		free(o->mis);
		text_free(&o->explain);
		text_free(&o->right);
		text_free(&o->wrong);
		free(o->knobs);
		text_free(&o->hint);
	}
	free(l->ops);
	for (int i = 0; i < l->nnames; i++)
		free(l->names[i].s);
	free(l->names);
	free(l->hidx);
	sl_pool_free(&l->pool);
	free(l->name);
	free(l->title);
	free(l->about);
	free(l);
}

static int parse_buf(const char *name, const char *buf, size_t len, int truncated, sl_lesson **out,
                     sl_lesson_diags *diags, sl_err *err)
{
	*out = NULL;
	if (diags)
		memset(diags, 0, sizeof *diags);
	struct parser P = {.file = name, .d = diags, .err = err};
	sl_lesson *l = calloc(1, sizeof *l);
	if (!l || !(l->name = xstrdup(name)) || !(l->title = xstrdup("")) ||
	    !(l->about = xstrdup(""))) {
		sl_lesson_free(l);
		return sl_fail(err, SL_ENOMEM, "%s: out of memory", name);
	}
	P.l = l;
	l->hash = fnv1a(buf, len);
	/* rc is for running out of memory only; what is wrong with the lesson
	 * goes to lp_diag() and stops the later stages. */
	int rc = 0, text_ok = lp_check_bytes(&P, buf, len, truncated) == 0;
	if (text_ok)
		rc = lp_split_lines(&P, buf, len);
	if (rc == 0 && P.nerr == 0 && P.nll == 0)
		lp_diag(
		    &P, 1,
		    "the lesson is empty: it needs a 'title' line, a 'minutes' line and at least "
		    "one step");
	if (rc == 0 && text_ok && P.nll > 0) /* report command errors past a bad line too */
		rc = compile(&P);
	if (rc == 0 && P.nerr == 0 && l->nops == 0)
		lp_diag(&P, P.ll[P.nll - 1].no, "the lesson has no steps: add 'say TEXT'");
	if (rc == 0 && P.nerr == 0) {
		/* Menu items and jumps: names to positions. */
		unsigned char *leads = malloc((size_t)l->nops + 1);
		if (!leads)
			rc = -1;
		for (int p = l->nops - 1; leads && p >= 0; p--)
			leads[p] = l->ops[p].kind != OP_LABEL || (p + 1 < l->nops && leads[p + 1]);
		for (int p = 0; leads && p < l->nops; p++) {
			sl_op *o = &l->ops[p];
			if (o->kind == OP_JUMP)
				o->target =
				    lp_label_target(&P, leads, o->target, o->line, "jump to");
			if (o->kind == OP_MENU)
				for (int i = 0; i < o->nch; i++) {
					if (o->ch[i].target >= 0)
						o->ch[i].target =
						    lp_label_target(&P, leads, o->ch[i].target,
						                    o->ch[i].line, "item");
				}
		}
		free(leads);
	}
	if (rc == 0 && P.nerr == 0)
		rc = lp_flow(&P);
	if (rc == 0 && P.nerr == 0)
		lp_check_runs(&P);
	for (int i = 0; i < P.nll; i++)
		free(P.ll[i].rest);
	free(P.ll);
	if (rc) {
		sl_lesson_free(l);
		return sl_fail(err, SL_ENOMEM, "%s: out of memory", name);
	}
	if (P.nerr) {
		sl_lesson_free(l);
		return SL_EINVAL;
	}
	*out = l;
	return SL_OK;
}

int sl_lesson_parse(const char *name, const char *buf, size_t len, sl_lesson **out,
                    sl_lesson_diags *diags, sl_err *err)
{
	/* Editors on some systems start UTF-8 files with a byte-order mark: it
	 * says nothing in UTF-8, so it is skipped, not refused as a command. */
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) {
		buf += 3;
		len -= 3;
	}
	int truncated = len > SL_LESSON_MAX_BYTES;
	return parse_buf(name, buf, truncated ? SL_LESSON_MAX_BYTES : len, truncated, out, diags,
	                 err);
}

int sl_lesson_load(const char *path, sl_lesson **out, sl_lesson_diags *diags, sl_err *err)
{
	*out = NULL;
	if (diags)
		memset(diags, 0, sizeof *diags);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sl_fail(err, SL_EINVAL, "%s: %s", path, strerror(errno));
	struct stat st = {0};
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int dir = S_ISDIR(st.st_mode);
		close(fd);
		return sl_fail(err, SL_EINVAL, "%s: %s", path,
		               dir ? "is a directory, not a lesson file"
		                   : "not a regular file (a lesson is a text file)");
	}
	/* Read one byte past the limit to know the file is larger. */
	size_t cap = SL_LESSON_MAX_BYTES + 1, len = 0;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return sl_fail(err, SL_ENOMEM, "%s: out of memory", path);
	}
	while (len < cap) {
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return sl_fail(err, SL_EINVAL, "%s: %s", path, strerror(e));
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	int rc = sl_lesson_parse(path, buf, len, out, diags, err);
	free(buf);
	return rc;
}

const char *sl_lesson_name(const sl_lesson *l)
{
	return l->name;
}

const char *sl_lesson_title(const sl_lesson *l)
{
	return l->title;
}

const char *sl_lesson_about(const sl_lesson *l)
{
	return l->about;
}

int sl_lesson_minutes(const sl_lesson *l)
{
	return l->minutes;
}

sl_track sl_lesson_track(const sl_lesson *l)
{
	return l->track;
}

uint64_t sl_lesson_hash(const sl_lesson *l)
{
	return l->hash;
}

int sl_lesson_length(const sl_lesson *l)
{
	return l->nops;
}

int sl_lesson_line_at(const sl_lesson *l, int pos)
{
	return pos >= 0 && pos < l->nops ? l->ops[pos].line : 0;
}

int sl_lesson_locate(const sl_lesson *l, const char *where, sl_err *err)
{
	if (!where || !*where)
		return sl_fail(err, SL_EINVAL, "--start needs a label or a line number"), -1;
	if (isdigit((unsigned char)where[0])) {
		long line;
		if (sl_parse_int(where, 1, 10000000, "line", &line, err))
			return -1;
		for (int p = 0; p < l->nops; p++)
			if (l->ops[p].line >= line)
				return p;
		sl_fail(err, SL_EINVAL, "%s: no step at or after line %ld", l->name, line);
		return -1;
	}
	int ni = name_find(l, where);
	if (ni < 0 || l->names[ni].kind != NAME_LABEL || l->names[ni].pos < 0) {
		char list[200] = "";
		for (int i = 0; i < l->nnames; i++)
			if (l->names[i].kind == NAME_LABEL &&
			    strlen(list) + strlen(l->names[i].s) + 2 < sizeof list)
				snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
				         list[0] ? " " : "", l->names[i].s);
		sl_fail(err, SL_EINVAL, "%s: no label '%s' (labels: %s)", l->name, where,
		        list[0] ? list : "none");
		return -1;
	}
	return l->names[ni].pos;
}
