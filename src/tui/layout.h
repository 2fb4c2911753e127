/* SPDX-License-Identifier: MIT */
/* layout.h - where each panel of the screen goes: a pure function of the
 * terminal size and the device count, tested without curses. */
#ifndef SL_TUI_LAYOUT_H
#define SL_TUI_LAYOUT_H

/* The smallest terminal the screen is laid out for; below it the TUI asks
 * for a larger one instead of drawing a garbled screen. */
#define SL_LAYOUT_MIN_ROWS 24
#define SL_LAYOUT_MIN_COLS 80

typedef struct sl_rect {
	int y, x, h, w;
} sl_rect;

/* The panels of the main view, in drawing order.  SL_PANEL_BODY is not a
 * panel of the main view: it is the area (everything but the title, the
 * sentence and the status lines) that the full-screen views (help, plot)
 * take instead. */
typedef enum sl_panel {
	SL_PANEL_TITLE,
	SL_PANEL_DEVICES,
	SL_PANEL_LINKS,
	SL_PANEL_MATRICES,
	SL_PANEL_NUMBERS,
	SL_PANEL_TIMELINE,
	SL_PANEL_SENTENCE,
	SL_PANEL_STATUS,
	SL_PANEL_NMAIN, /* the main view's panels are those before */
	SL_PANEL_BODY = SL_PANEL_NMAIN,
	SL_PANEL_COUNT
} sl_panel;

typedef struct sl_screen_layout {
	int rows, cols;
	int too_small; /* below SL_LAYOUT_MIN_*: nothing else is filled */
	sl_rect r[SL_PANEL_COUNT];
} sl_screen_layout;

/* Lay out a rows x cols screen for ndev devices (1 .. SL_MAX_FULL_DEVICES).
 * Panels of the main view never overlap and stay on screen; each is at
 * least 3 rows high (a border and one line) except the one-line title,
 * sentence and status.  Returns out->too_small. */
int sl_screen_layout_compute(int rows, int cols, int ndev, sl_screen_layout *out);

/* The lesson screen keeps the full view above its narration from this many
 * rows; below, it lays out a compact figure instead. */
#define SL_LAYOUT_LESSON_SPLIT 31

/* The lesson screen on a terminal shorter than SL_LAYOUT_LESSON_SPLIT (a
 * projector's 80x24 or 100x30): a compact figure on top (the devices and
 * the timeline side by side, the step's sentence on two lines under them)
 * and the narration below, so both show at once.  Fills the title,
 * devices, timeline, sentence and status; the other panels are empty
 * (h = 0).  *narr gets the narration's box.  Returns out->too_small. */
int sl_lesson_layout_compute(int rows, int cols, int ndev, sl_screen_layout *out, sl_rect *narr);

const char *sl_panel_name(sl_panel p);

/* Do two rectangles share a cell? */
int sl_rect_overlap(sl_rect a, sl_rect b);

#endif
