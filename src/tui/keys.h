/* SPDX-License-Identifier: MIT */
/* keys.h - the key bindings as data.
 *
 * One table per mode of {key, action, note}: the sandbox's views, the
 * lesson menu, the lesson screen and its answer line.  A mode also takes
 * its parent's keys (a view takes the sandbox's, every mode the ones that
 * work everywhere), and never rebinds them.  The help screens, the status
 * lines and the KEYS section of man/shardlab.1 are all generated from the
 * tables, so they cannot disagree with what the keys do.  No curses calls
 * here (only its KEY_* constants), so tests link it without a terminal. */
#ifndef SL_TUI_KEYS_H
#define SL_TUI_KEYS_H

#include <stddef.h>
#include <stdio.h>

typedef enum sl_action {
	SL_A_NONE,
	/* everywhere */
	SL_A_QUIT,  /* the program, from any screen (F10) */
	SL_A_LEAVE, /* this screen: back where it was opened from, or quit (q) */
	SL_A_HELP,
	SL_A_CONTRAST,
	SL_A_REDRAW,
	SL_A_SNAPSHOT, /* the screen to an SVG and a text file */
	/* playback */
	SL_A_PLAY,
	SL_A_STEP,
	SL_A_BACK,
	SL_A_RESTART,
	SL_A_END,
	SL_A_SLOWER,
	SL_A_FASTER,
	SL_A_AUTOSPEED,
	/* link knobs */
	SL_A_BW_DOWN,
	SL_A_BW_UP,
	SL_A_LAT_DOWN,
	SL_A_LAT_UP,
	SL_A_KNOB_CLASS,
	/* selection */
	SL_A_SEL_NEXT,
	SL_A_SEL_PREV,
	SL_A_SEL_CLICK,
	SL_A_SEL_NONE,
	/* the scenario */
	SL_A_PRESET,
	SL_A_TOPOLOGY,
	SL_A_DEV_DOWN,
	SL_A_DEV_UP,
	SL_A_STRATEGY,
	SL_A_ALGO,
	SL_A_SIZE_DOWN,
	SL_A_SIZE_UP,
	/* views */
	SL_A_PLOT,
	SL_A_CLOSE,
	SL_A_SCROLL_UP,
	SL_A_SCROLL_DOWN,
	/* the plan view */
	SL_A_PLAN,
	SL_A_ROW_UP,
	SL_A_ROW_DOWN,
	SL_A_PAGE_UP,
	SL_A_PAGE_DOWN,
	SL_A_SORT,
	SL_A_SORT_REVERSE,
	SL_A_OPEN,
	/* the lesson menu */
	SL_A_FRESH,
	SL_A_SANDBOX,
	SL_A_FORGET_ALL, /* every lesson's progress, after a y */
	/* the lesson screen */
	SL_A_GO_ON,
	SL_A_VIEW,
	SL_A_PRESENTER,
	SL_A_PHASE_NEXT, /* the scenario to the end of its phase (see sl_phase_stops) */
	SL_A_PHASE_PREV,
	SL_A_SECTIONS, /* the list of the lesson's sections, to jump to one */
	/* its answer line */
	SL_A_SUBMIT,
	SL_A_ERASE,
	SL_A_CANCEL,
	SL_A_COUNT
} sl_action;

typedef enum sl_keymode {
	SL_MODE_ANY,      /* bindings that work in every mode, also while typing */
	SL_MODE_SANDBOX,  /* bindings that work in every view of the sandbox */
	SL_MODE_MAIN,     /* the animated main view */
	SL_MODE_PLOT,     /* the speedup plots */
	SL_MODE_PLAN,     /* the planner's layouts of the training model */
	SL_MODE_MENU,     /* the lesson menu */
	SL_MODE_LESSON,   /* a lesson's screen: narration and the scenario shown */
	SL_MODE_INPUT,    /* a lesson's answer or knob line being typed */
	SL_MODE_SECTIONS, /* a lesson's list of sections (g), to jump to one */
	SL_MODE_SBS,      /* layouts side by side (compare --side-by-side) */
	SL_MODE_HELP,     /* a help screen */
	SL_MODE_COUNT
} sl_keymode;

typedef struct sl_keybind {
	int key; /* a character or a curses KEY_* code */
	sl_action action;
	const char *note; /* what it does, for the help and the man page */
} sl_keybind;

/* The bindings of a mode, terminated by {0, SL_A_NONE, NULL}. */
const sl_keybind *sl_keys_of(sl_keymode mode);
const char *sl_keymode_title(sl_keymode mode);
/* The mode whose keys mode also takes (SL_MODE_ANY's own: SL_MODE_COUNT). */
sl_keymode sl_keymode_parent(sl_keymode mode);
/* The modes one help screen lists, from where it was opened: that mode,
 * the modes it inherits from (up to SL_MODE_ANY), the other screens of the
 * same front end (the sandbox's views, or the lessons'), and the help's
 * own.  Fills out (up to max); returns how many. */
int sl_keys_help_modes(sl_keymode from, sl_keymode *out, int max);

/* The action for a key in a mode: the mode's own table first, then its
 * parent's, up to the bindings that work everywhere.  SL_A_NONE if
 * unbound. */
sl_action sl_keys_lookup(sl_keymode mode, int key);
/* A key the answer line types rather than looks up: printable, and not
 * bound in SL_MODE_INPUT (only ?, and only while nothing is typed). */
int sl_keys_typed(int key, size_t typed);

/* A key's printed name: "q", "Space", "Right", "PgDn", "F1", "Ctrl-L". */
const char *sl_key_name(int key, char *buf, size_t n);
/* The short word for an action on the status line ("step", "quit"). */
const char *sl_action_word(sl_action a);
/* The first key bound to a in mode (or its parents), or -1. */
int sl_keys_first(sl_keymode mode, sl_action a);

/* The help, one entry per action: the names of its keys joined ("Right,
 * PgDn, l") and its note.  Calls fn for every entry of the mode, in table
 * order; returns the number of entries. */
typedef void (*sl_keys_entry_fn)(void *ctx, const char *keys, const char *note);
int sl_keys_help(sl_keymode mode, sl_keys_entry_fn fn, void *ctx);

/* The KEYS section of man/shardlab.1 (from ".SH KEYS" to the end of the
 * section), in roff. */
void sl_keys_write_man(FILE *f);

#endif
