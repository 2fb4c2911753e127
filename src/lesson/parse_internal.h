/* SPDX-License-Identifier: MIT */
/* parse_internal.h - what the lesson parser's files share: parse.c
 * (names, commands), lines.c (bytes and logical lines) and flow.c (targets and the flow of the
 * whole lesson), and quiz.c, the checker's rules for questions, which walks that flow.  Nobody
 * else sees it. */
#ifndef SL_PARSE_INTERNAL_H
#define SL_PARSE_INTERNAL_H

#include <stddef.h>

#include "prog.h"

#define MAX_NAME 40
#define MAX_NAMES_FLOW 64 /* run and let names: one bit each in the flow analysis */
#define MAX_STEP_OPS 1000
#define MAX_CHOICES 26

enum kw {
	KW_TITLE,
	KW_MINUTES,
	KW_ABOUT,
	KW_TRACK,
	KW_SAY,
	KW_SETUP,
	KW_RUN,
	KW_STEP,
	KW_PAUSE,
	KW_CHECK,
	KW_LET,
	KW_LABEL,
	KW_JUMP,
	KW_FINISH,
	KW_QUESTION,
	KW_MENU,
	KW_EXPLORE,
	KW_SHOW,
	/* inside blocks */
	KW_END,
	KW_OPTION,
	KW_CORRECT,
	KW_EXPLAIN,
	KW_ANSWER,
	KW_UNIT,
	KW_RIGHT,
	KW_WRONG,
	KW_ITEM,
	KW_KNOB,
	KW_UNTIL,
	KW_HINT,
	KW_DEMO,
	KW_MISTAKE,
	KW_N
};
extern const char *const lp_kw_names[KW_N];

/* A command with its continuation lines joined. */
struct lline {
	int no;
	int kw;
	char *rest;
	size_t len; /* strlen(rest), kept as continuation lines are joined */
};

struct parser {
	const char *file;
	sl_lesson *l;
	sl_lesson_diags *d;
	sl_err *err;
	int nerr;
	struct lline *ll;
	int nll, capll;
	int op_line; /* for the resolver's messages */
	int cur_op;  /* the position being compiled */
};

/* lines.c: the bytes checked, then cut into logical lines; */
int lp_check_bytes(struct parser *P, const char *buf, size_t len, int truncated);
int lp_split_lines(struct parser *P, const char *buf, size_t len);
/* parse.c: a copy of s[0..n) (NULL: out of memory); */
char *lp_strndup(const char *s, size_t n);
/* "file:line: message" into the diagnostics (parse.c). */
void lp_diag(struct parser *P, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* flow.c: the position a jump to name ni lands on, or -1 (reported); */
int lp_label_target(struct parser *P, const unsigned char *leads, int ni, int line,
                    const char *how);
/* the whole lesson's flow; */
int lp_flow(struct parser *P);
/* the positions that may follow position p (at most MAX_CHOICES + 2) into out; */
int lp_succ(const sl_lesson *l, int p, int *out);
/* every run valid for the engine. */
void lp_check_runs(struct parser *P);

#endif
