/* SPDX-License-Identifier: MIT */
/* theme.c - colour pairs for the roles, and the choice of glyph table
 * (the tables and their legend: glyphs.c). */
#include "theme.h"

#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int sl_theme_want_mono(const char *env, int opt)
{
	/* no-color.org: present and not empty. */
	return opt || (env && *env);
}

int sl_theme_want_ascii(const char *codeset, int opt)
{
	if (opt || !codeset)
		return 1;
	return !(strcasecmp(codeset, "UTF-8") == 0 || strcasecmp(codeset, "utf8") == 0);
}

char sl_dev_char(int d)
{
	static const char digits[] =
	    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	return d >= 0 && d < (int)sizeof digits - 1 ? digits[d] : '*';
}

/* Okabe-Ito (orange, sky blue, bluish green, yellow, blue, vermillion,
 * reddish purple, grey) in the 256-colour cube; 8-colour fallbacks. */
static const short dev256[SL_THEME_NDEV] = {214, 74, 36, 227, 32, 166, 175, 250};
static const short dev8[SL_THEME_NDEV] = {COLOR_YELLOW, COLOR_CYAN, COLOR_GREEN,   COLOR_WHITE,
                                          COLOR_BLUE,   COLOR_RED,  COLOR_MAGENTA, COLOR_WHITE};
static const short devhc[SL_THEME_NDEV] = {11, 14, 10, 15, 12, 9, 13, 208};

static void pairs(sl_theme *th)
{
	int c256 = COLORS >= 256, hc = th->high_contrast;
	short bg = hc ? COLOR_BLACK : -1;
	/* Roles that are colours: fg of each. */
	struct {
		sl_role r;
		short c256, c8, chc;
		attr_t extra;
	} roles[] = {
	    {SL_ROLE_TITLE, 231, COLOR_WHITE, 15, A_BOLD},
	    {SL_ROLE_BORDER, 244, COLOR_BLUE, 15, 0},
	    {SL_ROLE_HEAD, 111, COLOR_CYAN, 14, A_BOLD},
	    {SL_ROLE_STATUS, 252, COLOR_WHITE, 15, 0},
	    {SL_ROLE_KEY, 214, COLOR_YELLOW, 11, A_BOLD},
	    {SL_ROLE_CURSOR, 231, COLOR_WHITE, 15, A_BOLD},
	    {SL_ROLE_PASS, 41, COLOR_GREEN, 10, A_BOLD},
	    {SL_ROLE_FAIL, 196, COLOR_RED, 9, A_BOLD},
	    {SL_ROLE_WARN, 214, COLOR_YELLOW, 11, A_BOLD},
	    {SL_ROLE_INTRA, 74, COLOR_CYAN, 14, 0},
	    {SL_ROLE_INTER, 214, COLOR_YELLOW, 11, 0},
	    {SL_ROLE_DIM, 242, COLOR_WHITE, 250, 0},
	    /* states: idle, compute, send, recv, reduce, wait, busy, write, read */
	    {SL_ROLE_STATE0 + SL_DS_IDLE, 242, COLOR_WHITE, 250, 0},
	    {SL_ROLE_STATE0 + SL_DS_COMPUTE, 41, COLOR_GREEN, 10, A_BOLD},
	    /* Backward work in other colours than forward (green): orange for
	     * input gradients, red-purple for weight gradients. */
	    {SL_ROLE_BWD, 208, COLOR_YELLOW, 208, A_BOLD},
	    {SL_ROLE_WGRAD, 175, COLOR_MAGENTA, 13, 0},
	    {SL_ROLE_STATE0 + SL_DS_SEND, 75, COLOR_BLUE, 12, A_BOLD},
	    {SL_ROLE_STATE0 + SL_DS_RECV, 44, COLOR_CYAN, 14, A_BOLD},
	    {SL_ROLE_STATE0 + SL_DS_REDUCE, 170, COLOR_MAGENTA, 13, A_BOLD},
	    {SL_ROLE_STATE0 + SL_DS_WAIT, 221, COLOR_YELLOW, 11, 0},
	    {SL_ROLE_STATE0 + SL_DS_BUSY, 252, COLOR_WHITE, 15, 0},
	    {SL_ROLE_STATE0 + SL_DS_WRITE, 203, COLOR_RED, 9, A_BOLD},
	    {SL_ROLE_STATE0 + SL_DS_READ, 105, COLOR_BLUE, 12, A_BOLD},
	};
	short next = 1;
	for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
		short fg = hc ? roles[i].chc : c256 ? roles[i].c256 : roles[i].c8;
		if (fg >= COLORS)
			fg = roles[i].c8;
		init_pair(next, fg, bg);
		th->attr[roles[i].r] = COLOR_PAIR(next) | roles[i].extra | (hc ? A_BOLD : 0);
		next++;
	}
	for (int d = 0; d < SL_THEME_NDEV; d++) {
		short fg = hc ? devhc[d] : c256 ? dev256[d] : dev8[d];
		if (fg >= COLORS)
			fg = dev8[d];
		init_pair(next, fg, bg);
		th->attr[SL_ROLE_DEV0 + d] = COLOR_PAIR(next) | A_BOLD;
		next++;
		init_pair(next, COLOR_BLACK, fg);
		th->attr[SL_ROLE_DEVBG0 + d] = COLOR_PAIR(next);
		next++;
	}
	th->attr[SL_ROLE_NORMAL] = 0;
	th->attr[SL_ROLE_SELECT] = A_REVERSE | A_BOLD;
	if (hc) {
		init_pair(next, 15, COLOR_BLACK);
		th->attr[SL_ROLE_NORMAL] = COLOR_PAIR(next) | A_BOLD;
		th->attr[SL_ROLE_STATUS] = COLOR_PAIR(next) | A_BOLD;
		next++;
	}
}

/* Monochrome: attributes only; glyphs and words carry the rest. */
static void mono(sl_theme *th)
{
	memset(th->attr, 0, sizeof th->attr);
	th->attr[SL_ROLE_TITLE] = A_BOLD;
	th->attr[SL_ROLE_HEAD] = A_BOLD;
	th->attr[SL_ROLE_KEY] = A_BOLD;
	th->attr[SL_ROLE_SELECT] = A_REVERSE;
	th->attr[SL_ROLE_CURSOR] = A_REVERSE;
	th->attr[SL_ROLE_PASS] = A_BOLD;
	th->attr[SL_ROLE_FAIL] = A_BOLD | A_REVERSE;
	th->attr[SL_ROLE_WARN] = A_BOLD;
	th->attr[SL_ROLE_DIM] = A_DIM;
	th->attr[SL_ROLE_INTER] = A_BOLD;
	th->attr[SL_ROLE_STATE0 + SL_DS_COMPUTE] = A_BOLD;
	th->attr[SL_ROLE_STATE0 + SL_DS_REDUCE] = A_BOLD;
	/* Monochrome: the passes differ by glyph (theme's bwd, wgrad), and a
	 * backward micro-batch's digit is underlined. */
	th->attr[SL_ROLE_BWD] = A_UNDERLINE;
	th->attr[SL_ROLE_WGRAD] = A_UNDERLINE;
	for (int d = 0; d < SL_THEME_NDEV; d++) {
		th->attr[SL_ROLE_DEV0 + d] = A_BOLD;
		th->attr[SL_ROLE_DEVBG0 + d] = A_REVERSE;
	}
}

void sl_theme_init(sl_theme *th, int no_color, int ascii, int high_contrast)
{
	memset(th, 0, sizeof *th);
	th->g =
	    sl_theme_want_ascii(nl_langinfo(CODESET), ascii) ? &sl_glyphs_ascii : &sl_glyphs_utf8;
	th->color = !sl_theme_want_mono(getenv("NO_COLOR"), no_color) && has_colors();
	if (th->color && start_color() == OK) {
		use_default_colors();
		th->high_contrast = high_contrast;
		pairs(th);
	} else {
		th->color = 0;
		mono(th);
	}
}

void sl_theme_contrast(sl_theme *th, int on)
{
	if (!th->color)
		return;
	th->high_contrast = on;
	pairs(th);
}

attr_t sl_theme_role(const sl_theme *th, sl_role r)
{
	return r >= 0 && r < SL_ROLE_COUNT ? th->attr[r] : 0;
}

attr_t sl_theme_dev(const sl_theme *th, int d)
{
	return th->attr[SL_ROLE_DEV0 + (d % SL_THEME_NDEV)];
}

attr_t sl_theme_devbg(const sl_theme *th, int d)
{
	return th->attr[SL_ROLE_DEVBG0 + (d % SL_THEME_NDEV)];
}

attr_t sl_theme_state(const sl_theme *th, sl_dstate s)
{
	return th->attr[SL_ROLE_STATE0 + s];
}

int sl_theme_contrast_key(sl_theme *th, char *msg, size_t n)
{
	if (!th->color) {
		snprintf(msg, n, "monochrome: contrast is already the terminal's own");
		return 0;
	}
	sl_theme_contrast(th, !th->high_contrast);
	snprintf(msg, n, "high contrast %s", th->high_contrast ? "on" : "off");
	return 1;
}
