/* SPDX-License-Identifier: MIT */
/* snapshot.c - the screen as SVG and plain text (see snapshot.h). */
#include "snapshot.h"

#include <curses.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

uint32_t sl_snap_rgb(int n, int fg)
{
	static const uint32_t base[16] = {
	    0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd, 0xe5e5e5,
	    0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff};
	static const uint32_t level[6] = {0, 95, 135, 175, 215, 255};
	if (n < 0 || n > 255)
		return fg ? SL_SNAP_FG : SL_SNAP_BG;
	if (n < 16)
		return base[n];
	if (n < 232) {
		int k = n - 16;
		return level[k / 36] << 16 | level[k / 6 % 6] << 8 | level[k % 6];
	}
	uint32_t v = (uint32_t)(8 + 10 * (n - 232));
	return v << 16 | v << 8 | v;
}

/* Cell size in SVG units: 18-pixel monospace text, a character 0.6 em wide. */
#define FONT 18
#define CW 10.8
#define CH 22.0
#define PAD 8.0

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else
			fputc(*s, f);
	}
}

static const sl_cell *at(const sl_grid *g, int y, int x)
{
	return &g->cell[(size_t)y * (size_t)g->cols + (size_t)x];
}

static int blank(const sl_cell *c)
{
	return c->ch[0] == '\0' || (c->ch[0] == ' ' && c->ch[1] == '\0');
}

static int same_style(const sl_cell *a, const sl_cell *b)
{
	return a->fg == b->fg && a->flags == b->flags;
}

int sl_grid_write_svg(FILE *f, const sl_grid *g)
{
	double w = g->cols * CW + 2 * PAD, h = g->rows * CH + 2 * PAD;
	fprintf(f,
	        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.1f\" height=\"%.1f\" "
	        "viewBox=\"0 0 %.1f %.1f\" font-family=\"'DejaVu Sans Mono', 'Liberation Mono', "
	        "monospace\" font-size=\"%d\">\n"
	        "<rect width=\"100%%\" height=\"100%%\" fill=\"#%06x\"/>\n",
	        w, h, w, h, FONT, (unsigned)SL_SNAP_BG);
	/* Backgrounds: one rectangle per run of a colour other than the page's. */
	for (int y = 0; y < g->rows; y++)
		for (int x = 0; x < g->cols;) {
			uint32_t bg = at(g, y, x)->bg;
			int x1 = x + 1;
			while (x1 < g->cols && at(g, y, x1)->bg == bg)
				x1++;
			if (bg != SL_SNAP_BG)
				fprintf(
				    f,
				    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				    "fill=\"#%06x\"/>\n",
				    PAD + x * CW, PAD + y * CH, (x1 - x) * CW, CH, (unsigned)bg);
			x = x1;
		}
	/* Text: a run of one style, blanks at its ends left out, pinned to its
	 * cells so the columns line up whatever the font. */
	for (int y = 0; y < g->rows; y++)
		for (int x = 0; x < g->cols;) {
			const sl_cell *c = at(g, y, x);
			int x1 = x + 1;
			while (x1 < g->cols && same_style(at(g, y, x1), c))
				x1++;
			int a = x, b = x1;
			while (a < b && blank(at(g, y, a)))
				a++;
			while (b > a && blank(at(g, y, b - 1)))
				b--;
			if (a < b) {
				fprintf(f,
				        "<text x=\"%.1f\" y=\"%.1f\" textLength=\"%.1f\" "
				        "lengthAdjust=\"spacingAndGlyphs\" xml:space=\"preserve\" "
				        "fill=\"#%06x\"%s%s%s>",
				        PAD + a * CW, PAD + y * CH + CH * 0.78, (b - a) * CW,
				        (unsigned)c->fg,
				        c->flags & SL_CELL_BOLD ? " font-weight=\"bold\"" : "",
				        c->flags & SL_CELL_DIM ? " opacity=\"0.7\"" : "",
				        c->flags & SL_CELL_UNDERLINE
				            ? " text-decoration=\"underline\""
				            : "");
				for (int k = a; k < b; k++)
					xml_text(f, at(g, y, k)->ch[0] ? at(g, y, k)->ch : "");
				fputs("</text>\n", f);
			}
			x = x1;
		}
	fputs("</svg>\n", f);
	return ferror(f) ? -1 : 0;
}

int sl_grid_write_text(FILE *f, const sl_grid *g)
{
	for (int y = 0; y < g->rows; y++) {
		int end = g->cols;
		while (end > 0 && blank(at(g, y, end - 1)))
			end--;
		for (int x = 0; x < end; x++)
			fputs(at(g, y, x)->ch[0] ? at(g, y, x)->ch : "", f);
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}

void sl_grid_free(sl_grid *g)
{
	free(g->cell);
	g->cell = NULL;
	g->rows = g->cols = 0;
}

int sl_grid_from_screen(sl_grid *g, sl_err *err)
{
	int rows = getmaxy(stdscr), cols = getmaxx(stdscr);
	g->cell = calloc((size_t)rows * (size_t)cols, sizeof *g->cell);
	if (!g->cell)
		return sl_fail(err, SL_ENOMEM, "out of memory for the snapshot");
	g->rows = rows;
	g->cols = cols;
	for (int y = 0; y < rows; y++)
		for (int x = 0; x < cols; x++) {
			sl_cell *c = &g->cell[(size_t)y * (size_t)cols + (size_t)x];
			cchar_t cc;
			wchar_t wch[CCHARW_MAX + 1] = {0};
			attr_t attrs = 0;
			short pair = 0;
			c->fg = SL_SNAP_FG;
			c->bg = SL_SNAP_BG;
			if (mvwin_wch(stdscr, y, x, &cc) == ERR ||
			    getcchar(&cc, wch, &attrs, &pair, NULL) == ERR) {
				c->ch[0] = ' ';
				continue;
			}
			mbstate_t st;
			memset(&st, 0, sizeof st);
			size_t n = wch[0] ? wcrtomb(c->ch, wch[0], &st) : 0;
			c->ch[n == (size_t)-1 ? 0 : n] = '\0';
			if (n == (size_t)-1)
				snprintf(c->ch, sizeof c->ch, "?");
			short fg = -1, bg = -1;
			if (pair > 0 && pair_content(pair, &fg, &bg) == ERR)
				fg = bg = -1;
			c->fg = sl_snap_rgb(fg, 1);
			c->bg = sl_snap_rgb(bg, 0);
			if (attrs & A_REVERSE) {
				uint32_t t = c->fg;
				c->fg = c->bg;
				c->bg = t;
			}
			c->flags = (attrs & A_BOLD ? SL_CELL_BOLD : 0) |
			           (attrs & A_DIM ? SL_CELL_DIM : 0) |
			           (attrs & A_UNDERLINE ? SL_CELL_UNDERLINE : 0);
		}
	return SL_OK;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && strcmp(s + n - k, tail) == 0;
}

static int write_one(const char *path, const sl_grid *g, int svg, sl_err *err)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return sl_fail(err, SL_ESYS, "cannot write the snapshot '%s': %s", path,
		               strerror(errno));
	int bad = svg ? sl_grid_write_svg(f, g) : sl_grid_write_text(f, g);
	if (fclose(f) != 0 || bad)
		return sl_fail(err, SL_ESYS, "cannot write the snapshot '%s': %s", path,
		               strerror(errno));
	return SL_OK;
}

int sl_snapshot_write(const char *path, sl_err *err)
{
	sl_grid g = {0};
	if (sl_grid_from_screen(&g, err))
		return err->code;
	int rc;
	if (ends_with(path, ".txt")) {
		rc = write_one(path, &g, 0, err);
	} else {
		char txt[4096];
		if (snprintf(txt, sizeof txt, "%s.txt", path) >= (int)sizeof txt)
			rc = sl_fail(err, SL_EINVAL, "the snapshot's name is too long");
		else if ((rc = write_one(path, &g, 1, err)) == SL_OK)
			rc = write_one(txt, &g, 0, err);
	}
	sl_grid_free(&g);
	return rc;
}

void sl_snapshot_name(char *buf, size_t n)
{
	for (int k = 1; k < 10000; k++) {
		snprintf(buf, n, "shardlab-%d.svg", k);
		if (access(buf, F_OK) != 0)
			return;
	}
}
