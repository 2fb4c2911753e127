/* SPDX-License-Identifier: MIT */
/* loop.c - the one terminal event loop (see loop.h). */
#include "loop.h"

#include <curses.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "draw.h"
#include "snapshot.h"
#include "term.h"

double sl_loop_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned help_key(sl_loop_help *h, sl_action a)
{
	int page = h->rows - 2, max = sl_help_lines(h->of, h->cols) - page;
	switch (a) {
	case SL_A_HELP:
	case SL_A_CLOSE:
		h->open = 0;
		return SL_LOOP_DRAW | SL_LOOP_LAYOUT;
	case SL_A_SCROLL_UP:
	case SL_A_SCROLL_DOWN:
		h->scroll += a == SL_A_SCROLL_DOWN ? page / 2 : -page / 2;
		if (h->scroll > max)
			h->scroll = max;
		if (h->scroll < 0)
			h->scroll = 0;
		return SL_LOOP_DRAW;
	default:
		return 0;
	}
}

unsigned sl_loop_dispatch(const sl_loop_mode *m, void *ctx, int ch, double now)
{
	if (ch == KEY_RESIZE)
		return SL_LOOP_DRAW | SL_LOOP_LAYOUT | SL_LOOP_CLEAR;
	sl_loop_help *h = m->help(ctx);
	sl_keymode mode = h->open ? SL_MODE_HELP : m->keys(ctx);
	if (mode == SL_MODE_INPUT && m->typed && sl_keys_typed(ch, m->typed(ctx)))
		return m->key(ctx, ch, SL_A_NONE, now);
	sl_action a = sl_keys_lookup(mode, ch);
	if (a == SL_A_QUIT)
		return SL_LOOP_QUIT;
	if (a == SL_A_REDRAW) /* a full redraw: laid out again, every cell repainted */
		return SL_LOOP_DRAW | SL_LOOP_LAYOUT | SL_LOOP_CLEAR;
	if (a == SL_A_SNAPSHOT) /* of the screen as it is, the help too */
		return SL_LOOP_DRAW | SL_LOOP_SNAP;
	if (h->open)
		return help_key(h, a);
	if (a == SL_A_HELP) {
		h->open = 1;
		h->of = mode;
		h->scroll = 0;
		return SL_LOOP_DRAW;
	}
	return m->key(ctx, ch, a, now);
}

int sl_loop_passes(const sl_loop_mode *m, void *ctx, int ch)
{
	if (ch == KEY_RESIZE)
		return 1;
	sl_loop_help *h = m->help(ctx);
	if (h->open)
		return 1;
	sl_keymode mode = m->keys(ctx);
	if (mode == SL_MODE_INPUT && m->typed && sl_keys_typed(ch, m->typed(ctx)))
		return 0;
	sl_action a = sl_keys_lookup(mode, ch);
	return a == SL_A_QUIT || a == SL_A_REDRAW || a == SL_A_HELP || a == SL_A_LEAVE ||
	       a == SL_A_CANCEL || a == SL_A_SNAPSHOT;
}

int sl_loop_timeout(unsigned pending, int animating, double next_frame, double now)
{
	if (!(pending & SL_LOOP_DRAW) && !animating)
		return -1;
	double wait = next_frame - now;
	return wait > 0 ? (int)ceil(wait * 1000) : 0;
}

static sl_loop_counts sl_loop_stat;

const sl_loop_counts *sl_loop_counters(void)
{
	return &sl_loop_stat;
}

static const char *snap_once;
static sl_err snap_err;

void sl_loop_snapshot_once(const char *path)
{
	snap_once = path;
	if (path) {
		int rows, cols;
		sl_term_offscreen_size(&rows, &cols);
		sl_term_offscreen(rows, cols);
	}
}

const char *sl_loop_snapshot_error(void)
{
	return snap_err.msg;
}

/* The snapshot key: the screen just drawn to a new file, and a line over
 * the screen's last saying where (until the next draw). */
static void snapshot_key(void)
{
	char name[64], msg[sizeof((sl_err){0}).msg + 160];
	sl_err err = {0};
	sl_snapshot_name(name, sizeof name);
	if (sl_snapshot_write(name, &err) == SL_OK)
		snprintf(msg, sizeof msg, " snapshot: %s and %s.txt ", name, name);
	else
		snprintf(msg, sizeof msg, " %s ", err.msg);
	int y = getmaxy(stdscr) - 1;
	move(y, 0);
	clrtoeol();
	attron(A_REVERSE);
	mvaddnstr(y, 0, msg, getmaxx(stdscr));
	attroff(A_REVERSE);
	sl_term_show();
}

static int settled(const sl_loop_mode *m, void *ctx)
{
	return (!m->settled || m->settled(ctx)) && !(m->busy && m->busy(ctx));
}

int sl_loop_run(const sl_loop_mode *m, void *ctx, double fps)
{
	int drawn = 0;
	double frame = 1.0 / (fps > 0 ? fps : 25), next_frame = 0;
	/* Input draws at once; the clock and background news at most once
	 * per frame interval. */
	unsigned pending = SL_LOOP_DRAW | SL_LOOP_NOW;
	int held[64]; /* keys waiting while the front end is busy */
	int nheld = 0;
	for (;;) {
		double now = sl_loop_now();
		if (pending & SL_LOOP_LAYOUT)
			m->layout(ctx);
		if (pending & SL_LOOP_CLEAR)
			clearok(curscr, TRUE);
		pending &= ~(unsigned)(SL_LOOP_LAYOUT | SL_LOOP_CLEAR);
		if ((pending & SL_LOOP_DRAW) && ((pending & SL_LOOP_NOW) || now >= next_frame)) {
			m->draw(ctx);
			sl_loop_stat.draws++;
			sl_loop_stat.last_draw = now;
			next_frame = now + frame;
			if (pending & SL_LOOP_SNAP)
				snapshot_key();
			pending = 0;
			drawn = 1;
		}
		/* --snapshot: the first settled screen, drawn, then leave. */
		if (snap_once && drawn && !(pending & SL_LOOP_DRAW) && settled(m, ctx)) {
			if (sl_snapshot_write(snap_once, &snap_err) != SL_OK && !snap_err.msg[0])
				sl_fail(&snap_err, SL_ESYS, "cannot write the snapshot");
			return 0;
		}
		int bits = sl_term_wait(
		    sl_loop_timeout(pending, m->animating(ctx), next_frame, sl_loop_now()));
		now = sl_loop_now();
		if (bits & (SL_TERM_SIGNAL | SL_TERM_HANGUP))
			return sl_term_quit_signal();
		if ((bits & SL_TERM_WAKE) && m->wake)
			pending |= m->wake(ctx);
		unsigned f = 0;
		/* Keys held while busy, in order, until it is busy again. */
		int k = 0;
		while (k < nheld && !(m->busy && m->busy(ctx)) && !(f & SL_LOOP_QUIT))
			f |= sl_loop_dispatch(m, ctx, held[k++], now);
		memmove(held, held + k, sizeof held[0] * (size_t)(nheld - k));
		nheld -= k;
		if (bits & SL_TERM_INPUT) {
			int ch;
			while ((ch = getch()) != ERR) {
				if (m->busy && m->busy(ctx) && !sl_loop_passes(m, ctx, ch)) {
					if (nheld < (int)(sizeof held / sizeof held[0]))
						held[nheld++] = ch;
					continue;
				}
				f |= sl_loop_dispatch(m, ctx, ch, now);
			}
		}
		if (f & SL_LOOP_QUIT)
			return 0;
		if (f)
			pending |= f | SL_LOOP_NOW;
		if (m->tick)
			pending |= m->tick(ctx, now);
		/* A frame's tick that changed nothing: the next tick comes a
		 * frame later (else the timeout stays 0 until the next draw,
		 * and an animation that draws less often than it ticks spins). */
		if (!(pending & SL_LOOP_DRAW) && now >= next_frame)
			next_frame = now + frame;
	}
}
