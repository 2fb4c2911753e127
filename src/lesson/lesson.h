/* SPDX-License-Identifier: MIT */
/* lesson.h - the lesson language: load and check a lesson, then interpret it.
 *
 * A lesson is untrusted text.  sl_lesson_load() reads it with limits (size,
 * line length, encoding) and checks the whole file before anything runs:
 * every command, parameter, label, jump, menu target and figure is resolved,
 * and errors read "file:line: message".  The interpreter (sl_vm) then yields
 * one step at a time; it never draws and never reads the terminal.  A front
 * end (the headless runner, the TUI) shows each step and answers the
 * interactive ones.  The language itself is documented in shardlab-lesson(5).
 *
 * No curses, no printing, no exit(): errors come back in an sl_err. */
#ifndef SL_LESSON_H
#define SL_LESSON_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "scenario.h"
#include "status.h"
#include "trace.h"

struct sl_lsetup;
struct sl_wl_result;

/* Limits on untrusted lessons. */
#define SL_LESSON_MAX_BYTES (1 << 20) /* file size */
#define SL_LESSON_MAX_LINE 1000       /* bytes per physical line */
#define SL_LESSON_MAX_TEXT 8000       /* bytes of one command with its continuations */
#define SL_LESSON_MAX_STEPS 10000     /* commands executed without a step to show */
#define SL_LESSON_MAX_RUNS 1000       /* engine runs in one session */
#define SL_LESSON_MAX_DIAGS 20        /* errors reported by one check */

typedef struct sl_lesson sl_lesson;

/* Every error a check found (the first also goes to err). */
typedef struct sl_lesson_diags {
	int n;
	int more; /* errors past SL_LESSON_MAX_DIAGS were dropped */
	char msg[SL_LESSON_MAX_DIAGS][320];
} sl_lesson_diags;

/* Read and check a lesson file.  name is what messages call the file (its
 * path as given).  diags may be NULL.  Returns SL_OK with *out set, or an
 * error with err holding the first "file:line: message". */
int sl_lesson_load(const char *path, sl_lesson **out, sl_lesson_diags *diags, sl_err *err);
/* The same from memory (tests, the TUI's editor); buf need not be
 * NUL-terminated. */
int sl_lesson_parse(const char *name, const char *buf, size_t len, sl_lesson **out,
                    sl_lesson_diags *diags, sl_err *err);
void sl_lesson_free(sl_lesson *l);
/* The checker's rules for questions, which `shardlab check` adds to the
 * load's (a lesson that breaks them still loads and plays, so an author can
 * try a draft): a numeric question names at least two mistakes, and no
 * multiple-choice question is answered by the text shown since the
 * question before it (shardlab-lesson(5), QUESTIONS THAT TEST).  Returns
 * how many it found, each "file:line: message" in diags (may be NULL). */
int sl_lesson_lint(const sl_lesson *l, sl_lesson_diags *diags);

const char *sl_lesson_name(const sl_lesson *l); /* as given to load */
const char *sl_lesson_title(const sl_lesson *l);
const char *sl_lesson_about(const sl_lesson *l); /* "" if none */
int sl_lesson_minutes(const sl_lesson *l);
/* Whether the lesson is part of the 90-minute class (`track class`), an
 * optional addition to it (`track optional`), or neither. */
typedef enum sl_track { SL_TRACK_NONE, SL_TRACK_CLASS, SL_TRACK_OPTIONAL } sl_track;
sl_track sl_lesson_track(const sl_lesson *l);
/* The class's length the menu promises: the `track class` lessons' minutes
 * add up to this at most (tests/test_course.c holds the course to it). */
#define SL_TRACK_CLASS_MINUTES 90
/* A 64-bit hash of the file's bytes: progress saved for another version of
 * the lesson is not resumed. */
uint64_t sl_lesson_hash(const sl_lesson *l);
/* Number of commands (positions run 0 .. n-1). */
int sl_lesson_length(const sl_lesson *l);
/* The position of a label, or of the first command at or after a line
 * number given as digits; -1 (with err filled) if there is none. */
int sl_lesson_locate(const sl_lesson *l, const char *label_or_line, sl_err *err);
int sl_lesson_line_at(const sl_lesson *l, int pos);

/* A lesson's sections, for a presenter's list of them: its start, then
 * each label in the order of the file, titled by the first words of the
 * first narration after it ({figures} shown as "..."), or by the label's
 * name when none comes before the next label. */
typedef struct sl_section {
	int pos;           /* where it starts: sl_vm_start_at(pos) */
	int line;          /* the label's line (1 for the start) */
	const char *label; /* its label, or NULL for the lesson's start */
	char title[100];
} sl_section;
/* Fills up to max sections; returns how many the lesson has. */
int sl_lesson_sections(const sl_lesson *l, sl_section *out, int max);

/* ---- the interpreter ---- */

typedef enum sl_step_kind {
	SL_STEP_SAY,      /* narration: text */
	SL_STEP_SETUP,    /* the scenario changed: text summarises it, scenario points to it */
	SL_STEP_RUN,      /* a run is pending: the front end may execute it (see below) */
	SL_STEP_RESULT,   /* a run finished: text summarises what the engine measured */
	SL_STEP_OPS,      /* show the next operations of the last run: events in (t_from, t_to] */
	SL_STEP_PAUSE,    /* wait for the learner: text is the prompt */
	SL_STEP_CHECK,    /* a check was evaluated: passed, text (source), detail (figures); one
	                   * that fails comes at once, one that holds after the learner's next
	                   * answer, before the next run or menu, or at the end, so it never
	                   * answers the question after it.  A numeric question's mistake
	                   * that the answer's tolerance takes for right fails as a check
	                   * before the question is shown */
	SL_STEP_QUESTION, /* answer with sl_vm_answer() */
	SL_STEP_MENU,     /* choose with sl_vm_choose() */
	SL_STEP_EXPLORE,  /* turn knobs with sl_vm_knob() until sl_vm_explore_met(), or skip */
	SL_STEP_SHOW,     /* a figure of named runs: shows[0 .. nshows), side by side */
	SL_STEP_END,      /* the lesson is over */
} sl_step_kind;

typedef enum sl_run_kind {
	SL_RUN_MATMUL,     /* the sharded GEMM of the scenario */
	SL_RUN_COLLECTIVE, /* one collective over the devices */
	SL_RUN_TRAIN,      /* training steps of the model under a TP/PP/DP layout */
	SL_RUN_RESHARD,    /* train, save a checkpoint, reshard it to another layout, resume */
	SL_RUN_PLAN,       /* every layout of the model on the devices, ranked (the planner) */
	SL_RUN_NKINDS
} sl_run_kind;

const char *sl_run_kind_name(sl_run_kind k);

/* `show side-by-side` takes two or three training runs. */
#define SL_SHOW_MAX 3
struct sl_train_dev;

/* A named training run as a SHOW step draws it: its figures and the
 * events of its last training step, which the vm keeps for the runs a
 * show names (no other run's). */
typedef struct sl_shown_run {
	const char *name;              /* the lesson's name for it */
	const struct sl_lsetup *setup; /* as it ran */
	int ndev;
	double step_s;                  /* emulated time per step */
	const struct sl_train_dev *dev; /* ndev devices' figures */
	const sl_event *ev;             /* the last step's events, by start time */
	size_t nev;
} sl_shown_run;

/* What a step shows.  Pointers stay valid until the next call on the vm. */
typedef struct sl_step {
	sl_step_kind kind;
	int line;                      /* the source line of the command */
	int pos;                       /* its position (for resume and --start) */
	const char *text;              /* narration, prompt, question, summary, check source ... */
	const char *detail;            /* CHECK: "speedup = 0.82 < 1"; EXPLORE: the condition in
	                                * words ("the time is below the time of run 'bad'") */
	int passed;                    /* CHECK */
	sl_run_kind run;               /* RUN, RESULT, EXPLORE */
	const sl_scenario *scenario;   /* SETUP, RUN: the scenario as set up now */
	const struct sl_lsetup *setup; /* SETUP, RUN, EXPLORE: the whole set-up (setup.h) */
	/* OPS: the events of the last run that end in (t_from, t_to]. */
	double t_from, t_to;
	const sl_event *ev;
	size_t nev;
	int ops; /* how many operations that is (may be fewer than asked) */
	/* QUESTION: numeric or multiple choice; MENU: its items. */
	int numeric;
	const char *unit; /* QUESTION numeric: how bare numbers are read ("" if figure's) */
	int nchoices;
	const char *const *choices;
	/* EXPLORE: the knobs the learner may turn, and a hint after a few tries. */
	int nknobs;
	const char *const *knobs;
	const char *hint; /* "" if none */
	/* SHOW: what it shows, and the figure's name ("side-by-side") */
	int nshows;
	const sl_shown_run *shows;
	/* END */
	int asked, right, checks_failed;
} sl_step;

typedef struct sl_vm sl_vm;

sl_vm *sl_vm_create(const sl_lesson *l, sl_err *err);
void sl_vm_destroy(sl_vm *vm);

/* Start at a position other than the top (an instructor's --start, or
 * resuming): the setups, lets and runs before it in the file are replayed
 * silently so that the figures it refers to exist. */
int sl_vm_start_at(sl_vm *vm, int pos, sl_err *err);
/* The same, and what the engine returned for the last of those runs goes
 * to eng (zeroed when none ran), so a screen can show that run whole.
 * Free eng with sl_wl_result_free. */
int sl_vm_start_at_into(sl_vm *vm, int pos, struct sl_wl_result *eng, sl_err *err);

/* Advance to the next step.  Returns SL_OK and fills *st, or an error whose
 * message reads "file:line: message" (a run the engine refused, a figure
 * without a value, a jump loop past SL_LESSON_MAX_STEPS).  Calling it while a
 * question, menu or unmet explore waits is an error. */
int sl_vm_next(sl_vm *vm, sl_step *st, sl_err *err);

/* After SL_STEP_RUN a front end has two ways to animate:
 *  - build the cluster with its own slowdown (sl_vm_make_cluster), run
 *    sl_vm_execute() on a worker thread while drawing snapshots of
 *    sl_cluster_trace(), and call sl_vm_next() afterwards; or
 *  - play step->scenario with its own playback (the TUI's sl_play takes an
 *    sl_scenario) and let the vm run headless for the figures at the next
 *    sl_vm_next(): in model timing both runs give the same times.
 * SL_STEP_OPS then maps to stepping that playback op->ops times.  A front end
 * that does nothing gets a headless run at the next sl_vm_next(). */
sl_cluster *sl_vm_make_cluster(sl_vm *vm, double slowdown, sl_err *err);
/* Run the pending work on c (NULL: a headless cluster of its own).  The vm
 * takes c over and keeps it until the next run, for sl_vm_cluster().  Do not
 * call other sl_vm functions while this runs. */
int sl_vm_execute(sl_vm *vm, sl_cluster *c, sl_err *err);
/* The same, and what the engine returned beside c's trace goes to eng (a
 * front end that shows the run needs no other run of it; see sl_lrun).
 * Free eng with sl_wl_result_free. */
int sl_vm_execute_into(sl_vm *vm, sl_cluster *c, struct sl_wl_result *eng, sl_err *err);
/* The cluster of the last run (its trace and statistics), or NULL. */
sl_cluster *sl_vm_cluster(const sl_vm *vm);

/* The learner's answer to a QUESTION: a letter, number or the text of a
 * choice; a number with an optional unit for numeric questions ("12us",
 * "0.375", "3/8", "37.5%").  An answer that cannot be read returns SL_EINVAL
 * with a message saying what is expected, and the question still waits.
 * A first wrong answer sets again (explain says why; expected is "") and
 * the question waits for another try; a second one gives the answer and
 * goes on.  A wrong pick of two choices gives the answer at once: the
 * other choice is all another try could be.  A wrong number that one of
 * the question's mistakes matches gets that mistake's explanation; another
 * is only too high or too low.  Only a first-try answer counts as right in
 * the score.
 * Checks that held since the last answer are yielded after it (see
 * SL_STEP_CHECK). */
/* Wrong answers a question takes: after the first one it waits again. */
#define SL_VM_TRIES 2
typedef struct sl_answer {
	int correct;
	int again;           /* wrong, and the question waits for another try */
	int pick;            /* a choice's index (0-based) */
	int high;            /* numeric: the answer was above the figure */
	int mistake;         /* numeric: the question's mistake it matched (0-based), or -1 */
	const char *explain; /* what the lesson says to this answer (may be "") */
	const char
	    *expected; /* numeric: the engine's figure, formatted; choice: the right choice */
} sl_answer;
int sl_vm_answer(sl_vm *vm, const char *input, sl_answer *out, sl_err *err);

/* The answer the waiting question expects, as a learner would type it: the
 * letter of the right choice, or the engine's figure with its unit to nine
 * digits.  For an instructor's "show the answer", and for tests. */
int sl_vm_expected(sl_vm *vm, char *buf, size_t n, sl_err *err);

/* Choose item i (0-based) of a MENU. */
int sl_vm_choose(sl_vm *vm, int item, sl_err *err);

/* EXPLORE: set one knob ("bandwidth 10GB/s" or "bandwidth=10GB/s"); only the
 * knobs the step lists are accepted.  A run is then pending, executed as
 * after SL_STEP_RUN (sl_vm_execute, or sl_vm_explore_met runs it headless).
 * sl_vm_explore_met() reports whether the condition now holds and fills
 * detail with the figures in words ("1.4, not below 1"; each comparison's
 * left value, then what it must be). */
int sl_vm_knob(sl_vm *vm, const char *setting, sl_err *err);
int sl_vm_explore_met(sl_vm *vm, const char **detail, sl_err *err);
/* The explore's demonstration (its `demo` line), for an instructor's "show
 * me": sets those knobs and leaves a run pending, as sl_vm_knob does.  Fails
 * if the explore has none. */
int sl_vm_demo(sl_vm *vm, sl_err *err);
/* Give up on an explore (it counts as not done) and go on. */
int sl_vm_skip(sl_vm *vm, sl_err *err);
/* The summary of the last run (after a knob or a RUN), for the front end. */
const char *sl_vm_last_result(const sl_vm *vm);
/* The last run's kind and its set-up as it ran, or NULL before any run
 * (a front end resuming a lesson shows that run again). */
const struct sl_lsetup *sl_vm_last_run(const sl_vm *vm, sl_run_kind *kind);

/* Where to resume: the position of the last label or learner step passed. */
int sl_vm_position(const sl_vm *vm);
void sl_vm_score(const sl_vm *vm, int *asked, int *right, int *checks_failed);

/* Split narration into spans for display: plain text, *emphasis* and
 * `code`.  Returns 0 at the end.  The markers are not part of the span. */
typedef enum sl_span_style { SL_SPAN_PLAIN, SL_SPAN_EMPH, SL_SPAN_CODE } sl_span_style;
int sl_text_span(const char **cursor, const char **start, size_t *len, sl_span_style *style);

#endif
