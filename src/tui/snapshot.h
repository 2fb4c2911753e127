/* SPDX-License-Identifier: MIT */
/* snapshot.h - the screen as a figure: SVG (monospace text in the cells'
 * colours, readable at projector size) and plain text.
 *
 * The screen is read back from curses cell by cell into a grid; writing the
 * grid needs no terminal, so tests build one by hand. */
#ifndef SL_TUI_SNAPSHOT_H
#define SL_TUI_SNAPSHOT_H

#include <stdint.h>
#include <stdio.h>

#include "status.h"

enum {
	SL_CELL_BOLD = 1,
	SL_CELL_DIM = 2,
	SL_CELL_UNDERLINE = 4,
};

typedef struct sl_cell {
	char ch[8];      /* the character, UTF-8 ("" after a wide one) */
	uint32_t fg, bg; /* 0xRRGGBB, reverse video already applied */
	unsigned flags;  /* SL_CELL_* */
} sl_cell;

typedef struct sl_grid {
	int rows, cols;
	sl_cell *cell; /* rows * cols, row by row */
} sl_grid;

/* The colours of cells drawn in the terminal's own colours. */
#define SL_SNAP_FG 0xd0d0d0u
#define SL_SNAP_BG 0x1c1c1cu

/* xterm's 256-colour palette: colour n as 0xRRGGBB (n < 0: the default fg
 * or bg, as fg says). */
uint32_t sl_snap_rgb(int n, int fg);

/* The grid as SVG: a background, a rectangle per run of a background
 * colour, a <text> element per run of one style (xml:space="preserve", each
 * run pinned to its cells' width).  Returns 0, or -1 on a write error. */
int sl_grid_write_svg(FILE *f, const sl_grid *g);
/* The grid as lines of text, trailing blanks dropped. */
int sl_grid_write_text(FILE *f, const sl_grid *g);

/* Read stdscr into g (curses started); free with sl_grid_free. */
int sl_grid_from_screen(sl_grid *g, sl_err *err);
void sl_grid_free(sl_grid *g);

/* Write the screen to path: plain text when path ends in .txt, else SVG
 * to path and the text beside it as path.txt. */
int sl_snapshot_write(const char *path, sl_err *err);
/* A name for the snapshot key: shardlab-N.svg in the working directory,
 * the first N not taken. */
void sl_snapshot_name(char *buf, size_t n);

#endif
