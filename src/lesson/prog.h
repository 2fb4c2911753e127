/* SPDX-License-Identifier: MIT */
/* prog.h - a checked lesson as the interpreter runs it (private to src/lesson). */
#ifndef SL_LESSON_PROG_H
#define SL_LESSON_PROG_H

#include <stdint.h>

#include "expr.h"
#include "lesson.h"
#include "setup.h"

/* Text with {figure} interpolations, parsed at load: the nodes appear in the
 * order of their braces. */
typedef struct sl_text {
	char *s; /* as written ("" if absent) */
	int *nodes;
	unsigned char *pct; /* per node: 1 shown as a percentage; SL_TEXT_CLAIM a claim */
	int n;
} sl_text;

/* A node of a text that is a condition the sentence claims ({? a < b}):
 * shown as nothing, checked when the text is shown. */
#define SL_TEXT_CLAIM 2

typedef enum sl_op_kind {
	OP_SAY,
	OP_SETUP,
	OP_RUN,
	OP_STEP,
	OP_PAUSE,
	OP_CHECK,
	OP_LET,
	OP_LABEL,
	OP_JUMP,
	OP_FINISH,
	OP_QUESTION,
	OP_MENU,
	OP_EXPLORE,
	OP_SHOW
} sl_op_kind;

typedef struct sl_setting {
	int key;
	char *value;
} sl_setting;

typedef struct sl_choice {
	sl_text text;
	sl_text explain;
	int correct;
	int target; /* menu items: the position jumped to */
	int line;
} sl_choice;

/* A numeric question's wrong answer that a known confusion gives (the
 * bus bandwidth for the algorithm bandwidth, the total for one device's
 * share), and what to say to a learner who gives it. */
typedef struct sl_mistake {
	int expr;   /* a node; -1 if it did not parse */
	double tol; /* as the answer's: relative when tol_rel */
	int tol_rel;
	sl_text explain;
	char *src; /* as written */
	int line;
} sl_mistake;

typedef struct sl_op {
	sl_op_kind kind;
	int line;
	sl_text text;    /* SAY, PAUSE, QUESTION, MENU, EXPLORE */
	char *src;       /* CHECK, JUMP's condition, EXPLORE's until: as written */
	sl_setting *set; /* SETUP */
	int nset;
	sl_run_kind run; /* RUN, EXPLORE */
	int name;        /* RUN ... as NAME, LET NAME, LABEL NAME: a name index; else -1 */
	int count;       /* STEP */
	int expr;        /* CHECK, LET, JUMP if, EXPLORE until, QUESTION answer: a node; else -1 */
	int target;      /* JUMP: a position */
	/* QUESTION */
	int numeric;
	sl_choice *ch; /* choices, or MENU items */
	int nch;
	sl_text explain, right, wrong;
	double tol; /* numeric: tolerance, relative when tol_rel */
	int tol_rel;
	char unit[16];   /* numeric: how bare numbers are read; "" for the figure's base unit */
	sl_mistake *mis; /* numeric: checked in order before too high or too low */
	int nmis;
	/* EXPLORE */
	int *knobs;
	int nknobs;
	sl_text hint;
	/* SHOW: the runs it shows (name indices) */
	int show[SL_SHOW_MAX];
	int nshow;
} sl_op;

typedef enum sl_name_kind { NAME_LABEL, NAME_RUN, NAME_LET } sl_name_kind;

typedef struct sl_name {
	char *s;
	sl_name_kind kind;
	sl_run_kind run; /* NAME_RUN */
	int line;        /* first definition */
	int pos;         /* NAME_LABEL: position of the label */
	sl_dim dim;      /* NAME_LET */
	int flag;
	int bit;   /* NAME_RUN, NAME_LET: its bit in the flow analysis */
	int shown; /* NAME_RUN: a show names it, so the vm keeps its step's events */
} sl_name;

struct sl_lesson {
	char *name;
	char *title, *about;
	int about_line; /* 0 if none */
	int minutes;
	sl_track track;
	uint64_t hash;
	sl_op *ops;
	int nops;
	sl_pool pool;
	sl_name *names;
	int nnames, capnames;
	int capops;
	/* The names by hash (open addressing, linear probing): index + 1, or 0
	 * for an empty slot; hcap is a power of two, at most half full. */
	int *hidx;
	int hcap;
};

#endif
