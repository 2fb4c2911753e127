/* SPDX-License-Identifier: MIT */
/* expr.c - parsing, checking and evaluating expressions over figures. */
#include "expr.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

#define MAX_EXPR 400     /* bytes of one expression */
#define MAX_NODES 100000 /* per lesson: a file of 1 MiB cannot need more */
#define MAX_DEPTH 40     /* parentheses and unary minus nesting */

int sl_dim_eq(sl_dim a, sl_dim b)
{
	return a.b == b.b && a.s == b.s && a.f == b.f;
}

const char *sl_dim_name(sl_dim d)
{
	if (sl_dim_eq(d, SL_DIM_NONE))
		return "a plain number";
	if (sl_dim_eq(d, SL_DIM_TIME))
		return "a time";
	if (sl_dim_eq(d, SL_DIM_BYTES))
		return "a size in bytes";
	if (sl_dim_eq(d, SL_DIM_RATE))
		return "a bandwidth";
	if (sl_dim_eq(d, SL_DIM_FLOPS))
		return "a compute rate";
	if (sl_dim_eq(d, SL_DIM_WORK))
		return "an amount of work in FLOP";
	return "a mixed quantity";
}

void sl_pool_free(sl_pool *p)
{
	free(p->n);
	p->n = NULL;
	p->len = p->cap = 0;
}

static int pool_add(sl_pool *p, sl_node nd, sl_err *err)
{
	if (p->len == p->cap) {
		if (p->cap >= MAX_NODES) {
			sl_fail(err, SL_EINVAL, "too many expressions in one lesson");
			return -1;
		}
		int cap = p->cap ? p->cap * 2 : 64;
		sl_node *n = realloc(p->n, (size_t)cap * sizeof *n);
		if (!n) {
			sl_fail(err, SL_ENOMEM, "out of memory");
			return -1;
		}
		p->n = n;
		p->cap = cap;
	}
	p->n[p->len] = nd;
	return p->len++;
}

static sl_node node0(sl_node_op op)
{
	sl_node n;
	memset(&n, 0, sizeof n);
	n.op = op;
	n.a = n.b = n.tol = -1;
	n.ref.name = n.ref.fig = -1;
	return n;
}

/* ---- literals: the engine's unit parsers decide the value ---- */

static int is_unit_char(const char *s)
{
	unsigned char c = (unsigned char)*s;
	if (isalpha(c) || c == '%')
		return 1;
	if (c == 0xc2 && (unsigned char)s[1] == 0xb5) /* micro sign */
		return 2;
	if (c == '/' && isalpha((unsigned char)s[1]))
		return 1;
	return 0;
}

static int in_list(const char *u, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(u, *list) == 0)
			return 1;
	return 0;
}

int sl_literal_parse(const char *s, double *v, sl_dim *d, sl_err *err)
{
	static const char *const times[] = {"s", "ms", "us", "\xc2\xb5s", "ns", NULL};
	static const char *const sizes[] = {"B",   "KB",  "MB",  "GB",  "TB",
	                                    "KiB", "MiB", "GiB", "TiB", NULL};
	double x;
	size_t nl = sl_scan_number(s, &x);
	const char *u = s + nl;
	if (!nl || !isfinite(x) || (nl == 1 && *s == '0' && (*u == 'x' || *u == 'X')))
		return sl_fail(err, SL_EINVAL,
		               "'%s' is not a decimal number (as in 2.5, 1e9 or 64MiB; "
		               "no hexadecimal, inf or nan)",
		               s);
	if (!*u) {
		*v = x;
		*d = SL_DIM_NONE;
		return SL_OK;
	}
	if (strcmp(u, "%") == 0) {
		*v = x / 100;
		*d = SL_DIM_NONE;
		return SL_OK;
	}
	size_t ul = strlen(u);
	int rc;
	if (strlen(s) > 40)
		return sl_fail(err, SL_EINVAL, "'%.40s...' is too long for a number", s);
	if (strstr(u, "FLOP") && !strstr(u, "/s") && strcmp(u + ul - 1, "S") != 0) {
		/* An amount of work: the rate parser reads it with "/s" added. */
		char r[64];
		snprintf(r, sizeof r, "%s/s", s);
		*d = SL_DIM_WORK;
		rc = sl_parse_flops(r, v, err);
	} else if (strstr(u, "FLOP")) {
		*d = SL_DIM_FLOPS;
		rc = sl_parse_flops(s, v, err);
	} else if ((ul > 2 && strcmp(u + ul - 2, "/s") == 0) ||
	           (ul >= 3 &&
	            (strcmp(u + ul - 3, "bps") == 0 || strcmp(u + ul - 3, "Bps") == 0))) {
		*d = SL_DIM_RATE;
		rc = sl_parse_rate(s, v, err);
	} else if (in_list(u, times)) {
		*d = SL_DIM_TIME;
		rc = sl_parse_time(s, v, err);
	} else if (in_list(u, sizes)) {
		*d = SL_DIM_BYTES;
		rc = sl_parse_bytes(s, v, err);
	} else {
		return sl_fail(
		    err, SL_EINVAL,
		    "unknown unit '%s' in '%s' (units: s ms us ns, B KiB MiB GiB KB MB GB, "
		    "GB/s GBps MB/s Gb/s Gbps, GFLOP TFLOP/s, %%)",
		    u, s);
	}
	return rc;
}

/* ---- the tokenizer ---- */

enum tok {
	T_END,
	T_NUM,
	T_NAME,
	T_LP,
	T_RP,
	T_COMMA,
	T_PLUS,
	T_MINUS,
	T_STAR,
	T_SLASH,
	T_LT,
	T_LE,
	T_GT,
	T_GE,
	T_EQ,
	T_NE,
	T_BAD
};

struct lexer {
	const char *s; /* NUL-terminated copy */
	size_t i;
	enum tok t;
	char text[MAX_EXPR + 1];
	sl_pool *p;
	sl_resolve_fn res;
	void *ctx;
	sl_err *err;
	int depth;
};

static void next(struct lexer *lx)
{
	const char *s = lx->s;
	while (s[lx->i] == ' ' || s[lx->i] == '\t')
		lx->i++;
	size_t st = lx->i;
	char c = s[st];
	lx->text[0] = 0;
	if (!c) {
		lx->t = T_END;
		return;
	}
	if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)s[st + 1]))) {
		double x;
		size_t i = st + sl_scan_number(s + st, &x);
		int w;
		/* The unit, and any letters or digits run into it ("0x10"), so
		 * that the literal's message shows all of it. */
		while ((w = is_unit_char(s + i)) > 0 || isalnum((unsigned char)s[i]))
			i += w > 0 ? (size_t)w : 1;
		lx->i = i;
		lx->t = T_NUM;
	} else if (islower((unsigned char)c) || c == '_') {
		size_t i = st;
		while (islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) ||
		       s[i] == '_' ||
		       (s[i] == '.' && (islower((unsigned char)s[i + 1]) || s[i + 1] == '_')))
			i++;
		lx->i = i;
		lx->t = T_NAME;
	} else {
		lx->i = st + 1;
		switch (c) {
		case '(':
			lx->t = T_LP;
			break;
		case ')':
			lx->t = T_RP;
			break;
		case ',':
			lx->t = T_COMMA;
			break;
		case '+':
			lx->t = T_PLUS;
			break;
		case '-':
			lx->t = T_MINUS;
			break;
		case '*':
			lx->t = T_STAR;
			break;
		case '/':
			lx->t = T_SLASH;
			break;
		case '<':
		case '>':
		case '=':
		case '!':
			if (s[st + 1] == '=') {
				lx->i = st + 2;
				lx->t = c == '<' ? T_LE : c == '>' ? T_GE : c == '=' ? T_EQ : T_NE;
			} else if (c == '<' || c == '>') {
				lx->t = c == '<' ? T_LT : T_GT;
			} else {
				lx->t = T_BAD;
			}
			break;
		default:
			lx->t = T_BAD;
			/* Take a whole word so the message shows what was written. */
			while (s[lx->i] && s[lx->i] != ' ' && s[lx->i] != '\t')
				lx->i++;
		}
	}
	size_t n = lx->i - st;
	memcpy(lx->text, s + st, n);
	lx->text[n] = 0;
}

static const char *tok_desc(const struct lexer *lx)
{
	return lx->t == T_END ? "the end" : lx->text;
}

static int parse_sum(struct lexer *lx);

static int no_figures(void *ctx, const sl_node *n, double *v, sl_err *err)
{
	(void)ctx, (void)n, (void)v, (void)err;
	return SL_EINVAL;
}

static int binary(struct lexer *lx, sl_node_op op, int a, int b)
{
	sl_node *na = &lx->p->n[a], *nb = &lx->p->n[b];
	if (na->flag || nb->flag) {
		sl_fail(lx->err, SL_EINVAL, "a yes/no figure cannot take part in arithmetic");
		return -1;
	}
	/* A divisor of numbers alone is known now: refuse 0 / 0 at check
	 * time, not as a let without a value at run time.  One that holds a
	 * figure is checked when it runs (sl_expr_eval). */
	double d;
	if (op == SL_N_DIV && sl_expr_eval(lx->p, b, no_figures, NULL, &d, NULL) == SL_OK &&
	    d == 0) {
		sl_fail(lx->err, SL_EINVAL, "division by zero: the divisor is always 0");
		return -1;
	}
	sl_node n = node0(op);
	n.a = a;
	n.b = b;
	switch (op) {
	case SL_N_ADD:
	case SL_N_SUB:
	case SL_N_MIN:
	case SL_N_MAX:
		if (!sl_dim_eq(na->dim, nb->dim)) {
			sl_fail(lx->err, SL_EINVAL, "cannot %s %s and %s",
			        op == SL_N_ADD   ? "add"
			        : op == SL_N_SUB ? "subtract"
			                         : "compare",
			        sl_dim_name(na->dim), sl_dim_name(nb->dim));
			return -1;
		}
		n.dim = na->dim;
		break;
	case SL_N_MUL:
		n.dim = (sl_dim){(signed char)(na->dim.b + nb->dim.b),
		                 (signed char)(na->dim.s + nb->dim.s),
		                 (signed char)(na->dim.f + nb->dim.f)};
		break;
	default:
		n.dim = (sl_dim){(signed char)(na->dim.b - nb->dim.b),
		                 (signed char)(na->dim.s - nb->dim.s),
		                 (signed char)(na->dim.f - nb->dim.f)};
		break;
	}
	return pool_add(lx->p, n, lx->err);
}

static int parse_primary(struct lexer *lx)
{
	if (++lx->depth > MAX_DEPTH) {
		sl_fail(lx->err, SL_EINVAL, "the expression is nested too deeply");
		return -1;
	}
	int r = -1;
	if (lx->t == T_NUM) {
		sl_node n = node0(SL_N_NUM);
		if (sl_literal_parse(lx->text, &n.v, &n.dim, lx->err))
			return -1;
		next(lx);
		r = pool_add(lx->p, n, lx->err);
	} else if (lx->t == T_MINUS) {
		next(lx);
		int a = parse_primary(lx);
		if (a < 0)
			return -1;
		if (lx->p->n[a].flag) {
			sl_fail(lx->err, SL_EINVAL, "a yes/no figure cannot be negated");
			return -1;
		}
		sl_node n = node0(SL_N_NEG);
		n.a = a;
		n.dim = lx->p->n[a].dim;
		r = pool_add(lx->p, n, lx->err);
	} else if (lx->t == T_LP) {
		next(lx);
		r = parse_sum(lx);
		if (r < 0)
			return -1;
		if (lx->t != T_RP) {
			sl_fail(lx->err, SL_EINVAL, "expected ')' but found %s", tok_desc(lx));
			return -1;
		}
		next(lx);
	} else if (lx->t == T_NAME) {
		char name[MAX_EXPR + 1];
		snprintf(name, sizeof name, "%s", lx->text);
		next(lx);
		int fn = strcmp(name, "min") == 0   ? SL_N_MIN
		         : strcmp(name, "max") == 0 ? SL_N_MAX
		         : strcmp(name, "abs") == 0 ? SL_N_ABS
		                                    : -1;
		if (fn >= 0 && lx->t == T_LP) {
			next(lx);
			int a = parse_sum(lx), b = -1;
			if (a < 0)
				return -1;
			if (fn != SL_N_ABS) {
				if (lx->t != T_COMMA) {
					sl_fail(lx->err, SL_EINVAL, "%s takes two values: %s(a, b)",
					        name, name);
					return -1;
				}
				next(lx);
				if ((b = parse_sum(lx)) < 0)
					return -1;
			}
			if (lx->t != T_RP) {
				sl_fail(lx->err, SL_EINVAL,
				        "expected ')' after the arguments of %s", name);
				return -1;
			}
			next(lx);
			if (fn == SL_N_ABS) {
				sl_node n = node0(SL_N_ABS);
				n.a = a;
				n.dim = lx->p->n[a].dim;
				r = pool_add(lx->p, n, lx->err);
			} else {
				r = binary(lx, (sl_node_op)fn, a, b);
			}
		} else if (strcmp(name, "yes") == 0 || strcmp(name, "no") == 0) {
			sl_node n = node0(SL_N_NUM);
			n.v = name[0] == 'y';
			n.flag = 1;
			r = pool_add(lx->p, n, lx->err);
		} else {
			sl_node n = node0(SL_N_REF);
			char *dot = strchr(name, '.');
			if (dot && strchr(dot + 1, '.')) {
				sl_fail(lx->err, SL_EINVAL, "'%s': a figure is NAME or RUN.NAME",
				        name);
				return -1;
			}
			if (dot)
				*dot = 0;
			if (lx->res(lx->ctx, dot ? name : NULL, dot ? dot + 1 : name, &n, lx->err))
				return -1;
			r = pool_add(lx->p, n, lx->err);
		}
	} else {
		sl_fail(lx->err, SL_EINVAL, "expected a figure or a number but found %s",
		        tok_desc(lx));
		return -1;
	}
	lx->depth--;
	return r;
}

static int parse_term(struct lexer *lx)
{
	int a = parse_primary(lx);
	while (a >= 0 && (lx->t == T_STAR || lx->t == T_SLASH)) {
		sl_node_op op = lx->t == T_STAR ? SL_N_MUL : SL_N_DIV;
		next(lx);
		int b = parse_primary(lx);
		if (b < 0)
			return -1;
		a = binary(lx, op, a, b);
	}
	return a;
}

static int parse_sum(struct lexer *lx)
{
	int a = parse_term(lx);
	while (a >= 0 && (lx->t == T_PLUS || lx->t == T_MINUS)) {
		sl_node_op op = lx->t == T_PLUS ? SL_N_ADD : SL_N_SUB;
		next(lx);
		int b = parse_term(lx);
		if (b < 0)
			return -1;
		a = binary(lx, op, a, b);
	}
	return a;
}

static int parse_cmp(struct lexer *lx)
{
	int a = parse_sum(lx);
	if (a < 0)
		return -1;
	sl_cmp cmp;
	switch (lx->t) {
	case T_LT:
		cmp = SL_LT;
		break;
	case T_LE:
		cmp = SL_LE;
		break;
	case T_GT:
		cmp = SL_GT;
		break;
	case T_GE:
		cmp = SL_GE;
		break;
	case T_EQ:
		cmp = SL_EQ;
		break;
	case T_NE:
		cmp = SL_NE;
		break;
	default:
		sl_fail(lx->err, SL_EINVAL, "expected a comparison (< <= > >= == !=) but found %s",
		        tok_desc(lx));
		return -1;
	}
	next(lx);
	int b = parse_sum(lx);
	if (b < 0)
		return -1;
	sl_node *na = &lx->p->n[a], *nb = &lx->p->n[b];
	if (!sl_dim_eq(na->dim, nb->dim)) {
		sl_fail(lx->err, SL_EINVAL, "cannot compare %s with %s%s", sl_dim_name(na->dim),
		        sl_dim_name(nb->dim),
		        sl_dim_eq(nb->dim, SL_DIM_NONE)
		            ? " (give the number a unit, e.g. 2us or 10GB/s)"
		            : "");
		return -1;
	}
	sl_node n = node0(SL_N_CMP);
	n.a = a;
	n.b = b;
	n.cmp = cmp;
	n.boolean = 1;
	n.dim = na->dim;
	if (lx->t == T_NAME && strcmp(lx->text, "within") == 0) {
		next(lx);
		if (lx->t != T_NUM) {
			sl_fail(lx->err, SL_EINVAL,
			        "'within' needs a tolerance: within 1%% or within 2us");
			return -1;
		}
		sl_node t = node0(SL_N_NUM);
		if (sl_literal_parse(lx->text, &t.v, &t.dim, lx->err))
			return -1;
		n.tol_rel = strchr(lx->text, '%') != NULL;
		if (!n.tol_rel && !sl_dim_eq(t.dim, n.dim)) {
			sl_fail(lx->err, SL_EINVAL,
			        "the tolerance %s is %s but the values compared are %s "
			        "(or write a percentage)",
			        lx->text, sl_dim_name(t.dim), sl_dim_name(n.dim));
			return -1;
		}
		if (!(t.v >= 0)) {
			sl_fail(lx->err, SL_EINVAL, "a tolerance cannot be negative");
			return -1;
		}
		next(lx);
		if ((n.tol = pool_add(lx->p, t, lx->err)) < 0)
			return -1;
	}
	return pool_add(lx->p, n, lx->err);
}

static int parse_cond(struct lexer *lx)
{
	int a = parse_cmp(lx);
	while (a >= 0 && lx->t == T_NAME &&
	       (strcmp(lx->text, "and") == 0 || strcmp(lx->text, "or") == 0)) {
		sl_node n = node0(lx->text[0] == 'a' ? SL_N_AND : SL_N_OR);
		next(lx);
		int b = parse_cmp(lx);
		if (b < 0)
			return -1;
		n.a = a;
		n.b = b;
		n.boolean = 1;
		a = pool_add(lx->p, n, lx->err);
	}
	return a;
}

int sl_expr_parse(sl_pool *p, const char *s, size_t len, int want_cond, sl_resolve_fn res,
                  void *ctx, sl_err *err)
{
	if (len > MAX_EXPR) {
		sl_fail(err, SL_EINVAL, "expression longer than %d characters", MAX_EXPR);
		return -1;
	}
	char buf[MAX_EXPR + 1];
	memcpy(buf, s, len);
	buf[len] = 0;
	struct lexer lx = {.s = buf, .p = p, .res = res, .ctx = ctx, .err = err};
	next(&lx);
	if (lx.t == T_END) {
		sl_fail(err, SL_EINVAL,
		        want_cond ? "a condition is missing (e.g. speedup < 1)"
		                  : "a value is missing (e.g. comm_time / time)");
		return -1;
	}
	int r = want_cond ? parse_cond(&lx) : parse_sum(&lx);
	if (r >= 0 && lx.t != T_END) {
		if (!want_cond && (lx.t >= T_LT && lx.t <= T_NE))
			sl_fail(err, SL_EINVAL, "a value is expected here, not a comparison");
		else
			sl_fail(err, SL_EINVAL, "unexpected %s after the %s", tok_desc(&lx),
			        want_cond ? "condition" : "value");
		return -1;
	}
	return r;
}

/* ---- evaluation ---- */

int sl_expr_eval(const sl_pool *p, int root, sl_lookup_fn look, void *ctx, double *v, sl_err *err)
{
	const sl_node *n = &p->n[root];
	double a = 0, b = 0;
	switch (n->op) {
	case SL_N_NUM:
		*v = n->v;
		return SL_OK;
	case SL_N_REF:
	case SL_N_LET:
		return look(ctx, n, v, err);
	default:
		break;
	}
	if (n->a >= 0 && sl_expr_eval(p, n->a, look, ctx, &a, err))
		return err ? err->code : SL_EINVAL;
	if (n->b >= 0 && sl_expr_eval(p, n->b, look, ctx, &b, err))
		return err ? err->code : SL_EINVAL;
	switch (n->op) {
	case SL_N_NEG:
		*v = -a;
		break;
	case SL_N_ADD:
		*v = a + b;
		break;
	case SL_N_SUB:
		*v = a - b;
		break;
	case SL_N_MUL:
		*v = a * b;
		break;
	case SL_N_DIV:
		/* 0 / 0 would be NaN, which reads as "no value yet" later on. */
		if (b == 0)
			return sl_fail(err, SL_EINVAL, "division by zero");
		*v = a / b;
		break;
	case SL_N_MIN:
		*v = a < b ? a : b;
		break;
	case SL_N_MAX:
		*v = a > b ? a : b;
		break;
	case SL_N_ABS:
		*v = fabs(a);
		break;
	default:
		return sl_fail(err, SL_EINVAL, "a condition is not a value");
	}
	return SL_OK;
}

static const char *const cmp_text[] = {"<", "<=", ">", ">=", "==", "!="};

static int cmp_holds(const sl_pool *p, const sl_node *n, double a, double b)
{
	if (n->cmp == SL_EQ || n->cmp == SL_NE) {
		double tol;
		if (n->tol >= 0)
			tol = p->n[n->tol].v * (n->tol_rel ? fmax(fabs(a), fabs(b)) : 1);
		else /* exact up to the rounding of sums taken in another order */
			tol = 1e-9 * fmax(fabs(a), fabs(b));
		int eq = fabs(a - b) <= tol;
		return n->cmp == SL_EQ ? eq : !eq;
	}
	switch (n->cmp) {
	case SL_LT:
		return a < b;
	case SL_LE:
		return a <= b;
	case SL_GT:
		return a > b;
	default:
		return a >= b;
	}
}

static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...)
{
	size_t l = strlen(buf);
	if (l + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + l, n - l, fmt, ap);
	va_end(ap);
}

/* v in the unit sl_value_fmt picks for it, to dig significant digits:
 * "280.5430 us" where sl_value_fmt says "280.54 us".  The unit's scale
 * comes from the unit parser, the formatter's inverse. */
static void fmt_digits(double v, sl_dim d, int dig, char *buf, size_t n)
{
	char f[48], lit[40];
	sl_value_fmt(v, d, 0, 0, f, sizeof f);
	const char *unit = strrchr(f, ' ');
	double scale;
	sl_dim ud;
	if (!sl_dim_eq(d, SL_DIM_NONE) && unit && !isnan(v) && !isinf(v) &&
	    snprintf(lit, sizeof lit, "1%s", unit + 1) < (int)sizeof lit &&
	    sl_literal_parse(lit, &scale, &ud, NULL) == SL_OK && sl_dim_eq(ud, d) && scale > 0)
		snprintf(buf, n, "%.*g %s", dig, v / scale, unit + 1);
	else if (sl_dim_eq(d, SL_DIM_NONE))
		snprintf(buf, n, "%.*g", dig, v);
	else
		snprintf(buf, n, "%s", f);
}

/* What a comparison wants, in words: "below 1", "at least 2.00 MiB". */
static const char *const cmp_words[] = {"below",    "at most",  "above",
                                        "at least", "equal to", "other than"};

static int cond_eval(const sl_pool *p, int root, sl_lookup_fn look, void *ctx, int *holds,
                     char *detail, size_t dn, int words, sl_err *err)
{
	const sl_node *n = &p->n[root];
	if (n->op == SL_N_AND || n->op == SL_N_OR) {
		int ha, hb;
		if (cond_eval(p, n->a, look, ctx, &ha, detail, dn, words, err))
			return err ? err->code : SL_EINVAL;
		append(detail, dn,
		       n->op == SL_N_AND ? (words ? "; and " : " and ")
		                         : (words ? "; or " : " or "));
		if (cond_eval(p, n->b, look, ctx, &hb, detail, dn, words, err))
			return err ? err->code : SL_EINVAL;
		*holds = n->op == SL_N_AND ? ha && hb : ha || hb;
		return SL_OK;
	}
	double a, b;
	if (sl_expr_eval(p, n->a, look, ctx, &a, err) || sl_expr_eval(p, n->b, look, ctx, &b, err))
		return err ? err->code : SL_EINVAL;
	int flag = p->n[n->a].flag || p->n[n->b].flag;
	char sa[48], sb[48];
	sl_value_fmt(a, n->dim, flag, 0, sa, sizeof sa);
	sl_value_fmt(b, n->dim, flag, 0, sb, sizeof sb);
	if (isnan(a) || isnan(b)) {
		*holds = 0;
		append(detail, dn, "%s %s %s (not a number)", sa, cmp_text[n->cmp], sb);
		return SL_OK;
	}
	*holds = cmp_holds(p, n, a, b);
	/* Show more digits when the formatted values look equal but are not,
	 * and when they look different but are equal within the tolerance
	 * ("0.187 == 0.188 within 0.1%" reads as an error). */
	if (!*holds && strcmp(sa, sb) == 0 && !flag) {
		/* In the figure's unit still ("280.543 us, not below 280.542
		 * us"); equal to nine digits, they read as the same value. */
		char xa[48], xb[48];
		for (int dig = 4; dig <= 9 && strcmp(sa, sb) == 0; dig++) {
			fmt_digits(a, n->dim, dig, xa, sizeof xa);
			fmt_digits(b, n->dim, dig, xb, sizeof xb);
			if (strcmp(xa, xb) != 0) {
				snprintf(sa, sizeof sa, "%s", xa);
				snprintf(sb, sizeof sb, "%s", xb);
			}
		}
	} else if (*holds && !flag && strcmp(sa, sb) != 0 && sl_dim_eq(n->dim, SL_DIM_NONE) &&
	           n->cmp == SL_EQ) {
		for (int dig = 4; dig <= 9 && strcmp(sa, sb) != 0; dig++) {
			snprintf(sa, sizeof sa, "%.*g", dig, a);
			snprintf(sb, sizeof sb, "%.*g", dig, b);
		}
	}
	if (words) {
		append(detail, dn, "%s, %s%s %s", sa, *holds ? "" : "not ", cmp_words[n->cmp], sb);
		return SL_OK;
	}
	append(detail, dn, "%s %s %s", sa, cmp_text[n->cmp], sb);
	if (n->tol >= 0) {
		char st[48];
		if (n->tol_rel)
			snprintf(st, sizeof st, "%g%%", p->n[n->tol].v * 100);
		else
			sl_value_fmt(p->n[n->tol].v, n->dim, 0, 0, st, sizeof st);
		append(detail, dn, " within %s", st);
	}
	return SL_OK;
}

static int compound(const sl_node *n)
{
	return n->op != SL_N_NUM && n->op != SL_N_REF && n->op != SL_N_LET && n->op != SL_N_MIN &&
	       n->op != SL_N_MAX && n->op != SL_N_ABS;
}

static void words(const sl_pool *p, int i, sl_name_fn name, void *ctx, char *buf, size_t n)
{
	static const char *const sym[] = {
	    [SL_N_ADD] = " + ", [SL_N_SUB] = " - ", [SL_N_MUL] = " * ", [SL_N_DIV] = " / "};
	const sl_node *nd = &p->n[i];
	char tmp[64];
	switch (nd->op) {
	case SL_N_NUM:
		append(buf, n, "%s", sl_value_fmt(nd->v, nd->dim, nd->flag, 0, tmp, sizeof tmp));
		return;
	case SL_N_REF:
	case SL_N_LET:
		name(ctx, nd, tmp, sizeof tmp);
		append(buf, n, "%s", tmp);
		return;
	case SL_N_NEG:
		append(buf, n, "minus ");
		words(p, nd->a, name, ctx, buf, n);
		return;
	case SL_N_MIN:
	case SL_N_MAX:
		append(buf, n, "the %s of ", nd->op == SL_N_MIN ? "smaller" : "larger");
		words(p, nd->a, name, ctx, buf, n);
		append(buf, n, " and ");
		words(p, nd->b, name, ctx, buf, n);
		return;
	case SL_N_ABS:
		append(buf, n, "the size of ");
		words(p, nd->a, name, ctx, buf, n);
		return;
	case SL_N_AND:
	case SL_N_OR:
		words(p, nd->a, name, ctx, buf, n);
		append(buf, n, nd->op == SL_N_AND ? ", and " : ", or ");
		words(p, nd->b, name, ctx, buf, n);
		return;
	case SL_N_CMP:
		words(p, nd->a, name, ctx, buf, n);
		append(buf, n, " is %s ", cmp_words[nd->cmp]);
		words(p, nd->b, name, ctx, buf, n);
		if (nd->tol >= 0) {
			if (nd->tol_rel)
				snprintf(tmp, sizeof tmp, "%g%%", p->n[nd->tol].v * 100);
			else
				sl_value_fmt(p->n[nd->tol].v, nd->dim, 0, 0, tmp, sizeof tmp);
			append(buf, n, " within %s", tmp);
		}
		return;
	default: /* arithmetic: its operands in words, grouped */
		for (int k = 0; k < 2; k++) {
			int c = k ? nd->b : nd->a;
			int paren = compound(&p->n[c]);
			append(buf, n, "%s", paren ? "(" : "");
			words(p, c, name, ctx, buf, n);
			append(buf, n, "%s", paren ? ")" : "");
			if (!k)
				append(buf, n, "%s", sym[nd->op]);
		}
		return;
	}
}

void sl_expr_words(const sl_pool *p, int root, sl_name_fn name, void *ctx, char *buf, size_t n)
{
	if (n)
		buf[0] = 0;
	if (root >= 0 && root < p->len)
		words(p, root, name, ctx, buf, n);
}

int sl_cond_eval(const sl_pool *p, int root, sl_lookup_fn look, void *ctx, int *holds, char *detail,
                 size_t dn, sl_err *err)
{
	return cond_eval(p, root, look, ctx, holds, detail, dn, 0, err);
}

int sl_cond_words(const sl_pool *p, int root, sl_lookup_fn look, void *ctx, int *holds,
                  char *detail, size_t dn, sl_err *err)
{
	return cond_eval(p, root, look, ctx, holds, detail, dn, 1, err);
}

char *sl_value_fmt(double v, sl_dim d, int flag, int pct, char *buf, size_t n)
{
	if (isnan(v)) {
		snprintf(buf, n, "(none)");
		return buf;
	}
	if (isinf(v)) {
		snprintf(buf, n, v > 0 ? "infinity" : "-infinity");
		return buf;
	}
	if (flag) {
		snprintf(buf, n, "%s", v != 0 ? "yes" : "no");
		return buf;
	}
	if (pct) {
		double x = v * 100;
		snprintf(buf, n, fabs(x) >= 10 || x == rint(x) ? "%.0f%%" : "%.1f%%", x);
		return buf;
	}
	if (sl_dim_eq(d, SL_DIM_TIME))
		return sl_fmt_time(v, buf, n);
	if (sl_dim_eq(d, SL_DIM_BYTES))
		return sl_fmt_bytes(v, buf, n);
	if (sl_dim_eq(d, SL_DIM_RATE))
		return sl_fmt_rate(v, buf, n);
	if (sl_dim_eq(d, SL_DIM_FLOPS))
		return sl_fmt_flops(v, buf, n);
	if (sl_dim_eq(d, SL_DIM_WORK))
		return sl_fmt_flop(v, buf, n);
	const char *unit = sl_dim_eq(d, SL_DIM_NONE) ? "" : " (mixed units)";
	/* A count in the millions reads in words ("5.03 billion"), not as ten
	 * digits nobody counts on a projector. */
	if (sl_dim_eq(d, SL_DIM_NONE) && fabs(v) >= 1e6 && fabs(v) < 1e15) {
		int big = fabs(v) >= 1e12 ? 12 : fabs(v) >= 1e9 ? 9 : 6;
		snprintf(buf, n, "%.3g %s", v / pow(10, big),
		         big == 12  ? "trillion"
		         : big == 9 ? "billion"
		                    : "million");
		return buf;
	}
	if (v == rint(v) && fabs(v) < 1e15)
		snprintf(buf, n, "%.0f%s", v, unit);
	else if (fabs(v) >= 100 && fabs(v) < 1e15)
		snprintf(buf, n, "%.0f%s", v, unit);
	else
		snprintf(buf, n, "%.3g%s", v, unit);
	return buf;
}
