/* SPDX-License-Identifier: MIT */
/* expr.h - expressions over engine figures: checks, answers, narration.
 *
 * Expressions are parsed once at load into nodes of a pool, with their
 * physical dimension (bytes, seconds, FLOP exponents) worked out, so that a
 * lesson comparing a time with a rate is refused before it runs.  Values come
 * from a lookup callback at evaluation time. */
#ifndef SL_LESSON_EXPR_H
#define SL_LESSON_EXPR_H

#include <stddef.h>

#include "status.h"

/* Exponents of bytes, seconds and FLOP: a rate is {1,-1,0}. */
typedef struct sl_dim {
	signed char b, s, f;
} sl_dim;

#define SL_DIM_NONE ((sl_dim){0, 0, 0})
#define SL_DIM_TIME ((sl_dim){0, 1, 0})
#define SL_DIM_BYTES ((sl_dim){1, 0, 0})
#define SL_DIM_RATE ((sl_dim){1, -1, 0})
#define SL_DIM_FLOPS ((sl_dim){0, -1, 1})
#define SL_DIM_WORK ((sl_dim){0, 0, 1})

int sl_dim_eq(sl_dim a, sl_dim b);
/* "a time", "a size in bytes", "a rate", "a plain number" ... */
const char *sl_dim_name(sl_dim d);

typedef enum sl_node_op {
	SL_N_NUM, /* v */
	SL_N_REF, /* a figure: ref.name (-1: unprefixed) and ref.fig */
	SL_N_LET, /* a let-bound name: ref.name */
	SL_N_NEG,
	SL_N_ADD,
	SL_N_SUB,
	SL_N_MUL,
	SL_N_DIV,
	SL_N_MIN,
	SL_N_MAX,
	SL_N_ABS,
	SL_N_CMP, /* a, b, cmp, tol (node or -1), tol_rel */
	SL_N_AND,
	SL_N_OR,
} sl_node_op;

typedef enum sl_cmp { SL_LT, SL_LE, SL_GT, SL_GE, SL_EQ, SL_NE } sl_cmp;

typedef struct sl_node {
	sl_node_op op;
	sl_dim dim;
	int flag;    /* a yes/no value */
	int boolean; /* a condition */
	double v;
	int a, b;
	sl_cmp cmp;
	int tol;     /* node of the tolerance, -1: exact to rounding */
	int tol_rel; /* tolerance is relative (a percentage) */
	struct {
		int name; /* run or let name index, -1 for the latest run and the setup */
		int fig;  /* figure index */
	} ref;
} sl_node;

typedef struct sl_pool {
	sl_node *n;
	int len, cap;
} sl_pool;

/* The resolver the parser asks about names: returns 0 and fills the node's
 * op/ref/dim/flag, or fills err (no file:line; the caller adds it). */
typedef int (*sl_resolve_fn)(void *ctx, const char *prefix, const char *name, sl_node *node,
                             sl_err *err);

/* Parse a value expression or (want_cond) a condition from s[0..len).  Returns
 * the root node index, or -1 with err filled. */
int sl_expr_parse(sl_pool *p, const char *s, size_t len, int want_cond, sl_resolve_fn res,
                  void *ctx, sl_err *err);
/* Parse "NUMBER[UNIT]" (a literal only) into value and dimension with the
 * engine's unit parsers. */
int sl_literal_parse(const char *s, double *v, sl_dim *d, sl_err *err);

/* The values of references at evaluation time: returns 0 and sets *v, or
 * fills err saying why the figure has no value. */
typedef int (*sl_lookup_fn)(void *ctx, const sl_node *node, double *v, sl_err *err);

int sl_expr_eval(const sl_pool *p, int root, sl_lookup_fn look, void *ctx, double *v, sl_err *err);
/* Evaluate a condition; detail receives the figures, e.g.
 * "speedup = 0.82, needs speedup < 1". src is the condition's source text. */
int sl_cond_eval(const sl_pool *p, int root, sl_lookup_fn look, void *ctx, int *holds, char *detail,
                 size_t n, sl_err *err);
/* The same in words, for a learner: "1.07, not below 1" (each comparison's
 * left value, then what it must be). */
int sl_cond_words(const sl_pool *p, int root, sl_lookup_fn look, void *ctx, int *holds,
                  char *detail, size_t n, sl_err *err);

/* An expression or condition in words, for a learner: "the time is below
 * the time of run 'bad'", "the latency term is above the bandwidth term".
 * name() says a figure or a let-bound name (the pool knows no names);
 * numbers are shown with their unit. */
typedef void (*sl_name_fn)(void *ctx, const sl_node *node, char *buf, size_t n);
void sl_expr_words(const sl_pool *p, int root, sl_name_fn name, void *ctx, char *buf, size_t n);

/* Format a value of a dimension the way narration shows it: "35.2 us",
 * "64.0 MiB", "450 GB/s", "3.71", "yes".  pct: as a percentage. */
char *sl_value_fmt(double v, sl_dim d, int flag, int pct, char *buf, size_t n);

void sl_pool_free(sl_pool *p);

#endif
