/* SPDX-License-Identifier: MIT */
/* knobs.h - one table of every option: its name, type and unit, range,
 * choices, the commands that take it, whether a lesson's `setup` line may
 * set it, where its value lives, and one line of help.
 *
 * Every command's getopt table and --help option lines (src/cliutil.c,
 * src/opts.c), the lesson setup keys (src/lesson/setup.c), the TUI's clamps
 * and the bash completion's value lists (`shardlab --list-options`) come
 * from this table, so a value is parsed, range-checked and refused with the
 * same words everywhere.  Adding an option is a row here plus the field it
 * fills (place and offset); a row whose place is SL_KP_NONE is the
 * command's own and the command reads it through its code. */
#ifndef SL_KNOBS_H
#define SL_KNOBS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "scenario.h"
#include "status.h"
#include "train.h"

/* Codes: what getopt_long returns for each option.  Letters are short
 * options too (coll's -b, -e, -f, -n). */
enum sl_opt_code {
	SL_OPT_DEVICES = 0x100,
	SL_OPT_DEVICES_PER_NODE,
	SL_OPT_TOPOLOGY,
	SL_OPT_PRESET,
	SL_OPT_BANDWIDTH,
	SL_OPT_LATENCY,
	SL_OPT_INTER_BANDWIDTH,
	SL_OPT_INTER_LATENCY,
	SL_OPT_FLOPS,
	SL_OPT_MEMORY,
	SL_OPT_TIMING,
	SL_OPT_SLOWDOWN,
	SL_OPT_ALGORITHM,
	SL_OPT_FORMAT,
	SL_OPT_TRACE,
	SL_OPT_PRECISION,
	SL_OPT_EFFICIENCY,
	SL_OPT_HARDWARE,
	SL_OPT_STRATEGY,
	SL_OPT_M,
	SL_OPT_K,
	SL_OPT_N,
	SL_OPT_SEED,
	SL_OPT_DRY_RUN,
	SL_OPT_TP,
	SL_OPT_PP,
	SL_OPT_DP,
	SL_OPT_CP,
	SL_OPT_CP_COMM,
	SL_OPT_SCHEDULE,
	SL_OPT_CHUNKS,
	SL_OPT_STAGE_LAYERS,
	SL_OPT_MICROBATCHES,
	SL_OPT_SP,
	SL_OPT_ZERO1,
	SL_OPT_ZERO,
	SL_OPT_OVERLAP,
	SL_OPT_RESHARD_FWD,
	SL_OPT_BUCKET,
	SL_OPT_ORDER,
	SL_OPT_RECOMPUTE,
	SL_OPT_ATTENTION,
	SL_OPT_MODEL,
	SL_OPT_LAYERS,
	SL_OPT_HIDDEN,
	SL_OPT_FFN,
	SL_OPT_HEADS,
	SL_OPT_KV_HEADS,
	SL_OPT_MASK,
	SL_OPT_FFN_KIND,
	SL_OPT_NORM,
	SL_OPT_VOCAB,
	SL_OPT_UNTIE,
	SL_OPT_TIE,
	SL_OPT_POS_EMB,
	SL_OPT_ATTN_DROPOUT,
	SL_OPT_HIDDEN_DROPOUT,
	SL_OPT_GRAD_ACCUM,
	SL_OPT_SEQ,
	SL_OPT_BATCH,
	SL_OPT_STEPS,
	SL_OPT_LR,
	/* collectives (coll, a lesson) */
	SL_OPT_OP,
	SL_OPT_BYTES,
	SL_OPT_HUMAN,
	SL_OPT_PREDICTED,
	/* train's own */
	SL_OPT_SAVE,
	SL_OPT_SAVE_EVERY,
	SL_OPT_LOAD,
	SL_OPT_PER_DEVICE,
	SL_OPT_TRACE_STEPS,
	SL_OPT_TRACE_DEVICES,
	/* compare's and plan's own */
	SL_OPT_LAYOUTS,
	SL_OPT_TOP,
	SL_OPT_NO_SP,
	SL_OPT_NO_ZERO1,
	SL_OPT_SIDE_BY_SIDE,
	/* ckpt reshard's own */
	SL_OPT_OUT,
	SL_OPT_STORAGE_BW,
	/* a lesson's reshard target */
	SL_OPT_TO_TP,
	SL_OPT_TO_PP,
	SL_OPT_TO_DP,
	/* display (sandbox, lesson) */
	SL_OPT_NO_COLOR,
	SL_OPT_ASCII,
	SL_OPT_HIGH_CONTRAST,
	SL_OPT_NO_MOUSE,
	SL_OPT_PLAY,
	SL_OPT_FPS,
	SL_OPT_SNAPSHOT,
	/* lesson's own */
	SL_OPT_HEADLESS,
	SL_OPT_START,
	SL_OPT_RESUME,
	SL_OPT_FRESH,
	SL_OPT_NO_SAVE,
	SL_OPT_DEMO,
	SL_OPT_PRESENTER,
	/* device figures (hardware files too) */
	SL_OPT_MEMORY_BW,
	SL_OPT_KERNEL_LAUNCH,
	/* check's own */
	SL_OPT_CHECK_RUN,
	SL_OPT_NCODES
};

/* The commands, as bits of sl_knob.cmds. */
enum sl_cmd_bit {
	SL_CMD_RUN = 1u << 0,
	SL_CMD_COLL = 1u << 1,
	SL_CMD_TRAIN = 1u << 2,
	SL_CMD_COMPARE = 1u << 3,
	SL_CMD_PLAN = 1u << 4,
	SL_CMD_SANDBOX = 1u << 5,
	SL_CMD_LESSON = 1u << 6,
	SL_CMD_CHECK = 1u << 7,
	SL_CMD_INSPECT = 1u << 8,
	SL_CMD_VERIFY = 1u << 9,
	SL_CMD_RESHARD = 1u << 10,
};

typedef enum sl_knob_type {
	SL_KT_FLAG,  /* no value on the command line; yes or no in a lesson */
	SL_KT_INT,   /* a whole number in [lo, hi] */
	SL_KT_REAL,  /* a number without a unit in [lo, hi] */
	SL_KT_RATE,  /* bytes or bits per second (units.h) */
	SL_KT_TIME,  /* seconds, with a unit */
	SL_KT_BYTES, /* a size */
	SL_KT_FLOPS, /* a compute rate */
	SL_KT_WORD,  /* one of choices; the value is its index */
	SL_KT_TEXT,  /* a name, a file or a list the command reads itself */
} sl_knob_type;

/* Where a value lives (sl_knob_dest); NONE: the command reads it. */
typedef enum sl_knob_place {
	SL_KP_NONE,
	SL_KP_CLUSTER, /* sl_cluster_config */
	SL_KP_GEMM,    /* sl_gemm_spec */
	SL_KP_MODEL,   /* sl_model_spec */
	SL_KP_LAYOUT,  /* sl_layout */
	SL_KP_STEPS,   /* the step count */
} sl_knob_place;

typedef enum sl_knob_ctype { SL_KC_INT, SL_KC_DOUBLE, SL_KC_FLOAT, SL_KC_U64 } sl_knob_ctype;

/* sl_knob.flags */
enum {
	SL_KF_SETUP = 1u << 0,  /* a lesson's setup key (and explore knob) */
	SL_KF_FIGURE = 1u << 1, /* one of a preset's figures: given, it replaces the preset's */
	SL_KF_SHAPE = 1u << 2,  /* a model file sets it too (given, it wins over the file) */
	SL_KF_OPEN = 1u << 3,   /* the range excludes its ends */
	SL_KF_TUI = 1u << 4,    /* the sandbox's keys turn it (within the range) */
	SL_KF_HWFILE = 1u << 5, /* a hardware file's "device" key too (sl_knob_json_key); its
	                         * field is in the device model, cfg.dm, which a preset holds */
};

/* Help sections, in the order --help prints them. */
typedef enum sl_knob_group {
	SL_KG_LESSON,
	SL_KG_COLL,
	SL_KG_COMPARE,
	SL_KG_WORKLOAD,
	SL_KG_LAYOUT,
	SL_KG_MODEL,
	SL_KG_CKPT,
	SL_KG_TRACE,
	SL_KG_REPORT,
	SL_KG_RESHARD,
	SL_KG_LOAD,
	SL_KG_PLAN,
	SL_KG_CLUSTER,
	SL_KG_OUTPUT,
	SL_KG_DRY_RUN,
	SL_KG_DISPLAY,
	SL_KG_TARGET,
	SL_KG_N
} sl_knob_group;

typedef struct sl_knob {
	const char *name; /* the long option and the lesson key */
	int code;         /* enum sl_opt_code, or a letter */
	sl_knob_type type;
	const char *meta;    /* the value's name in help ("RATE"); words show choices */
	double lo, hi;       /* numbers: the range (a flag: the values stored for no, yes) */
	const char *range;   /* the range in words, for messages and help */
	const char *choices; /* words: "full, ring", in the engine's enum order (or NULL:
	                      * sl_knob_choices finds them) */
	unsigned cmds;       /* SL_CMD_* bits */
	unsigned flags;      /* SL_KF_* */
	sl_knob_group group;
	sl_knob_place place;
	size_t off; /* offset of the field in its place */
	sl_knob_ctype ctype;
	const char *alias; /* an older spelling a lesson may use, or NULL */
	char shortopt;     /* -b, or 0 */
	const char *help;  /* for --help: lines after the option column, '\n' between */
	const char *man;   /* the manual's paragraph (roff), or NULL: the help's */
} sl_knob;

/* The table; sl_knob_count rows. */
const sl_knob *sl_knobs(void);
int sl_knob_count(void);
/* The row of a code, or NULL. */
const sl_knob *sl_knob_of(int code);
/* The row named name (or its alias) that one of cmds takes (0: any), or
 * NULL. */
const sl_knob *sl_knob_named(const char *name, unsigned cmds);
/* The row's index in the table (for bit sets). */
int sl_knob_index(const sl_knob *k);

/* A parsed value. */
typedef struct sl_knob_val {
	double d;      /* numbers; a word's index; a flag's 0 or 1 */
	const char *s; /* the text as given */
} sl_knob_val;

/* Parse arg for k: the unit, the range, the choices.  Messages name the
 * option as prefix + name ("--bandwidth=5x is out of range (...)" on the
 * command line, prefix "--"; "bandwidth=..." in a lesson, prefix "").  A
 * flag takes arg NULL on the command line and yes or no in a lesson. */
int sl_knob_parse(const sl_knob *k, const char *prefix, const char *arg, sl_knob_val *v,
                  sl_err *err);

/* Where values go. */
typedef struct sl_knob_dest {
	sl_cluster_config *cluster;
	sl_gemm_spec *gemm;
	sl_model_spec *model;
	sl_layout *layout;
	int *steps;
} sl_knob_dest;

/* Store v in k's field under d (nothing for SL_KP_NONE or a place d lacks;
 * returns 0 then, 1 when stored). */
int sl_knob_store(const sl_knob *k, const sl_knob_val *v, const sl_knob_dest *d);
/* The value of k's field under d (a flag: 1 when it holds the yes value);
 * NAN for SL_KP_NONE or a place d lacks. */
double sl_knob_load(const sl_knob *k, const sl_knob_dest *d);
/* The key of a hardware file for k: its name in snake case with the unit
 * as a suffix (--memory-bandwidth: memory_bandwidth_bytes_per_s). */
void sl_knob_json_key(const sl_knob *k, char *buf, size_t n);

/* A word's choices, "ring, tree" (a table of the engine's where it has
 * one: the collective algorithms). */
const char *sl_knob_choices(const sl_knob *k);
/* "--name=META" as the help's option column shows it. */
void sl_knob_column(const sl_knob *k, char *buf, size_t n);
/* The heading of a group's help section ("Cluster (...):"). */
const char *sl_knob_group_title(sl_knob_group g);

/* The manual's sections from the table (knobdoc.c): shardlab-lesson(5)'s
 * SETUP KEYS (from .SH to the next section) and shardlab(1)'s option
 * subsections (the region between its GENERATED markers). */
void sl_knobs_write_setup_man(FILE *f);
void sl_knobs_write_options_man(FILE *f);

#endif
