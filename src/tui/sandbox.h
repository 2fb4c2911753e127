/* SPDX-License-Identifier: MIT */
/* sandbox.h - the sandbox's insides, for its views: its state, and the row
 * each view is in the one table of views (sandbox.c's `views`, after tmux's
 * window modes).  Nobody but the sandbox and its views (view_*.c) sees it.
 *
 * A view is a row: the key table it takes (its index, an sl_keymode of
 * keys.c), its panels, its status line, its sentence, what it collects in
 * the background, how it opens, and its own actions.  The sandbox holds no
 * view's state and tests no view's mode: adding a view is its file, its row
 * in `views`, and its keys (keys.h, keys.c). */
#ifndef SL_TUI_SANDBOX_H
#define SL_TUI_SANDBOX_H

#include <stdio.h>

#include "draw.h"
#include "keys.h"
#include "layout.h"
#include "loop.h"
#include "play.h"
#include "scene.h"
#include "theme.h"
#include "tui.h"

struct sl_sandbox {
	struct sl_tui_options opt;
	sl_theme th;
	sl_play *play;
	void *own[SL_MODE_COUNT]; /* each view's own state (its row's make), or NULL */
	int orphans; /* a replaced run's thread was still computing: leave with _exit */
	int to_menu; /* q in a sandbox opened from the lesson menu */
	sl_screen_layout lay;
	sl_scene *m;
	sl_selection sel;
	int knob_inter;
	sl_keymode mode; /* the view shown (under the help, when open) */
	sl_loop_help help;
	char msg[200];
	FILE *stats; /* SHARDLAB_TUI_STATS: timings for the benchmark */
	double t_start;
	long frames;
};

/* A view's action handler's answer for an action that is not its own: the
 * sandbox's handlers take it (the playback, the knobs, the scenario). */
#define SL_VIEW_PASS 0x10000u

typedef struct sl_view_row {
	/* Its own state, made when the sandbox opens (wake_fd: the loop's
	 * wake-up pipe, for its background thread), or NULL when out of
	 * memory; freed when it closes, waiting up to wait seconds for its
	 * thread (returns whether it went).  NULL: no state. */
	void *(*make)(int wake_fd);
	int (*free)(void *own, double wait);
	/* Its panels in L (the title is the sandbox's), its sentence in r, and
	 * its status line in r: the keys that matter there. */
	void (*draw)(const sl_view *v, const sl_screen_layout *L);
	void (*sentence)(const sl_view *v, sl_rect r);
	void (*status)(const sl_view *v, sl_rect r);
	/* Its background thread's news, after a wake: nonzero when what it
	 * draws changed (NULL: no thread). */
	int (*collect)(void *own);
	/* The action that opens it from the main view, and opening it (it may
	 * refuse with a message): SL_LOOP_* flags.  SL_A_NONE: not opened by a
	 * key. */
	sl_action opener;
	unsigned (*open)(sl_sandbox *a);
	/* Its own actions while shown: flags, or SL_VIEW_PASS (NULL: none). */
	unsigned (*act)(sl_sandbox *a, sl_action ac, double now);
	/* After each action handled while it is shown (NULL: nothing). */
	void (*after)(sl_sandbox *a);
	/* Going back to the main view (NULL: nothing to stop). */
	void (*leave)(sl_sandbox *a);
} sl_view_row;

/* Show the view of mode: the one shown leaves first. */
void sl_sandbox_show(sl_sandbox *a, sl_keymode mode);

#endif
