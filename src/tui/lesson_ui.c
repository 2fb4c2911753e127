/* SPDX-License-Identifier: MIT */
/* lesson_ui.c - the lesson menu and a lesson's screen.
 *
 * They run in the sandbox's loop (loop.c: wait, handle, tick, draw once),
 * their keys in keys.c's tables.  The vm
 * yields steps; narration and prompts go to a transcript drawn in the lesson
 * panel; a matmul run is animated by the sandbox's playback and views in the
 * part of the screen above the panel; on a terminal too short for that (a
 * projector's 80x24 or 100x30) a compact figure, the devices and the
 * timeline, sits above the narration instead, and v shows the full view.  Nothing here decides
 * anything about the lesson: the vm does, and the figures are its own. */
#include "lesson_ui.h"

#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "draw.h"
#include "keys.h"
#include "layout.h"
#include "lesson.h"
#include "lesson_show.h"
#include "loop.h"
#include "play.h"
#include "progress.h"
#include "sbs.h"
#include "scene.h"
#include "setup.h"
#include "term.h"
#include "theme.h"

enum {
	F_DRAW = SL_LOOP_DRAW,
	F_LAYOUT = SL_LOOP_LAYOUT,
	F_CLEAR = SL_LOOP_CLEAR,
	F_QUIT = SL_LOOP_QUIT
};

enum role { R_SAY, R_INFO, R_PASS, R_FAIL, R_PROMPT, R_CHOICE, R_ANSWER, R_RIGHT, R_WRONG };

#define TRANSCRIPT 300
#define SECTIONS 40 /* sections listed (g); a lesson with more lists its first */
#define PANEL_MIN 7 /* rows of the lesson panel below the scenario view */
#define PANEL_MAX 14

struct entry {
	int role;
	int indent;
	char *text;
	int log; /* setup, run, result or a check that holds: presenter mode hides it */
};

/* A lesson's run on a worker thread (sl_vm_execute_into), so the screen
 * keeps answering keys while it computes.  While it runs the vm and the
 * lesson are the worker's alone; leaving abandons the job: its cluster is
 * cancelled (every blocking call returns SL_ECANCEL) and the worker frees
 * the vm and the lesson when it returns. */
struct ljob {
	pthread_mutex_t mu;
	sl_vm *vm;
	sl_lesson *l;
	sl_cluster *c;
	sl_wl_result eng;
	int done, abandoned; /* (mu) */
	int rc;              /* (mu) */
	sl_err err;          /* (mu) */
	int explore;         /* an explore's knob asked for the run */
};

static atomic_int jobs_alive; /* workers not yet returned (abandoned or not) */

struct lui {
	struct sl_tui_options opt;
	sl_theme th;
	sl_lshow sv; /* the scenario view: the playback of the lesson's last run */
	/* A show's figure (runs side by side) in the view's place, until
	 * the next run, step or show. */
	sl_sbs sbs;
	int sbs_on;
	sl_scene *m;
	int rows, cols;
	sl_screen_layout lay;  /* the scenario view (the top part when split) */
	sl_screen_layout clay; /* the compact figure, when not split */
	sl_rect narr;          /* the narration under the compact figure */
	int split, top_rows, show_view;
	/* the menu */
	int in_menu, from_menu;
	int confirm_forget; /* R asked: y forgets every lesson's progress */
	sl_sandbox *sb;     /* the sandbox opened from the menu: the screen shown, or NULL */
	int sb_orphans;     /* a closed sandbox's thread was still computing: leave with _exit */
	sl_catalog_entry *cat;
	int ncat, sel;
	/* the lesson */
	sl_lesson *l;
	sl_vm *vm;
	char path[1024]; /* the lesson's file, to open it again at a section */
	/* The list of its sections (g), open or not, and the one chosen. */
	sl_section sections[SECTIONS];
	int nsections, sections_open, section_sel;
	struct ljob *job; /* the run computing, or NULL */
	double job_t0;    /* when it started (sl_loop_now) */
	int job_shown;    /* the whole seconds "working..." shows */
	int working;      /* the status line says the run computes (msg is "working...") */
	int presenter;    /* the projected screen: no log lines, no scores */
	int scroll;       /* narration lines scrolled back from the newest */
	int nruns;        /* runs the lesson asked for (SHARDLAB_TUI_STATS) */
	/* The last run on the worker: when it started, and when the screen
	 * after it was drawn (CLOCK_REALTIME, for a test to set against when
	 * the terminal showed it). */
	struct timespec run_started, run_shown;
	sl_step st;
	char id[64];
	sl_progress prog;
	int base_asked, base_right;
	int waiting, hold, ended, tries;
	int at_pause; /* held at a pause: "press a key", so any key unbound goes on */
	char input[160];
	size_t ninput;
	struct entry tr[TRANSCRIPT];
	int ntr;
	char msg[320];     /* the status line's message: set_msg, clear_msg */
	sl_loop_help help; /* over any of the screens */
};

/* A message on the status line, in place of "working..." too (busy). */
static void set_msg(struct lui *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msg(struct lui *u, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->msg, sizeof u->msg, fmt, ap);
	va_end(ap);
	u->working = 0;
}

static void clear_msg(struct lui *u)
{
	u->msg[0] = 0;
	u->working = 0;
}

/* The lesson chosen in the menu, kept when the menu comes back (after the
 * sandbox opened from it). */
static int menu_sel = -1;

/* ---- the transcript ---- */

static void add(struct lui *u, int role, int indent, const char *text)
{
	if (u->ntr == TRANSCRIPT) {
		free(u->tr[0].text);
		memmove(u->tr, u->tr + 1, sizeof u->tr[0] * (TRANSCRIPT - 1));
		u->ntr--;
	}
	char *t = strdup(text ? text : "");
	if (!t)
		return;
	u->tr[u->ntr++] = (struct entry){role, indent, t, 0};
	u->scroll = 0; /* what is new is shown */
}

/* The entry just added is a log line (presenter mode hides it). */
static void logged(struct lui *u)
{
	if (u->ntr > 0)
		u->tr[u->ntr - 1].log = 1;
}

static void addf(struct lui *u, int role, int indent, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void addf(struct lui *u, int role, int indent, const char *fmt, ...)
{
	char buf[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	add(u, role, indent, buf);
}

static void transcript_clear(struct lui *u)
{
	for (int i = 0; i < u->ntr; i++)
		free(u->tr[i].text);
	u->ntr = 0;
}

/* ---- wrapping with emphasis ---- */

struct piece {
	const char *s;
	size_t n;
	sl_span_style style;
	int space_before;
	int own_line; /* a displayed formula: a line to itself */
};

/* Lay text out in w columns from (y, x); draw only when draw is set and the
 * line is within [ylo, yhi).  Returns the lines it takes.  Breaks only at
 * spaces; a word longer than the line is cut. */
static int wrap(const struct lui *u, const char *text, int y, int x, int w, int ylo, int yhi,
                attr_t base, int draw)
{
	struct piece p[400];
	int np = 0, space = 0;
	const char *cur = text, *s;
	size_t n;
	sl_span_style st;
	while (np < 400 && sl_text_span(&cur, &s, &n, &st)) {
		size_t i = 0;
		/* A formula is never broken: `B > 2 F / k` moves to the next
		 * line whole, and one wider than half the line stands on a line
		 * of its own, as a displayed formula (the review found the
		 * lesson's key derivation cut at "4 m n /"). */
		if (st == SL_SPAN_CODE && n > 0) {
			char tmp[512];
			snprintf(tmp, sizeof tmp, "%.*s", (int)n, s);
			int cw = sl_cols(tmp);
			if (cw <= w) {
				int display = cw > w / 2;
				p[np++] = (struct piece){s, n, st, space || display, display};
				space = 0;
				continue;
			}
		}
		while (i < n && np < 400) {
			if (s[i] == ' ') {
				space = 1;
				i++;
				continue;
			}
			size_t j = i;
			while (j < n && s[j] != ' ')
				j++;
			p[np++] = (struct piece){s + i, j - i, st, space, 0};
			space = 0;
			i = j;
		}
	}
	attr_t emph = base | A_BOLD, code = sl_theme_role(&u->th, SL_ROLE_KEY);
	int line = 0, col = 0, prev_own = 0;
	for (int i = 0; i < np;) {
		/* A word: pieces glued without spaces ("*GeLU*," is one). */
		int j = i + 1, ww = 0;
		char tmp[512];
		while (j < np && !p[j].space_before)
			j++;
		for (int k = i; k < j; k++) {
			snprintf(tmp, sizeof tmp, "%.*s", (int)p[k].n, p[k].s);
			ww += sl_cols(tmp);
		}
		int need = (col > 0 ? 1 : 0) + ww;
		/* A displayed formula starts a line, and the text after it
		 * goes on below it. */
		int own = 0;
		for (int k = i; k < j; k++)
			own |= p[k].own_line;
		int after = prev_own;
		prev_own = own;
		if (col > 0 && (col + need > w || own || after)) {
			line++;
			col = 0;
			need = ww;
		}
		if (own && col == 0 && ww + 2 <= w)
			col = 2; /* displayed, set in */
		else if (col > 0)
			col++;
		for (int k = i; k < j; k++) {
			snprintf(tmp, sizeof tmp, "%.*s", (int)p[k].n, p[k].s);
			int yy = y + line;
			if (draw && yy >= ylo && yy < yhi && col < w)
				sl_put(yy, x + col, w - col,
				       p[k].style == SL_SPAN_EMPH   ? emph
				       : p[k].style == SL_SPAN_CODE ? code
				                                    : base,
				       tmp);
			col += sl_cols(tmp);
		}
		i = j;
	}
	return np ? line + 1 : 1;
}

static attr_t role_attr(const struct lui *u, int role)
{
	switch (role) {
	case R_INFO:
		return sl_theme_role(&u->th, SL_ROLE_DIM);
	case R_PASS:
	case R_RIGHT:
		return sl_theme_role(&u->th, SL_ROLE_PASS);
	case R_FAIL:
		return sl_theme_role(&u->th, SL_ROLE_FAIL);
	case R_WRONG:
		return sl_theme_role(&u->th, SL_ROLE_WARN);
	case R_PROMPT:
		return sl_theme_role(&u->th, SL_ROLE_HEAD);
	case R_ANSWER:
		return sl_theme_role(&u->th, SL_ROLE_KEY);
	default:
		return sl_theme_role(&u->th, SL_ROLE_NORMAL);
	}
}

/* ---- the scenario view (shared with the sandbox) ---- */

static sl_view make_view(struct lui *u)
{
	sl_play *p = u->sv.play;
	sl_scene_build_play(p, u->m);
	const sl_scenario *sc = sl_play_scenario(p);
	sl_view v = {
	    .th = &u->th,
	    .m = u->m,
	    .sc = sc,
	    .lay = &u->lay,
	    .multi_node = sc->cluster.devices_per_node > 0 &&
	                  sc->cluster.devices_per_node < sl_play_devices(p),
	    .slowdown = sl_play_slowdown(p),
	    .auto_speed = sl_play_auto(p),
	    .playing = sl_play_playing(p),
	    .planning = sl_play_planning(p),
	    .stale = sl_play_stale(p),
	    .live = sl_play_live_started(p),
	    .msg = u->msg,
	    .mode = SL_MODE_MAIN,
	    .help_scroll = u->help.scroll,
	    .help_of = u->help.of,
	};
	return v;
}

static void relayout(void *ctx)
{
	struct lui *u = ctx;
	getmaxyx(stdscr, u->rows, u->cols);
	int ph = u->rows - SL_LAYOUT_MIN_ROWS;
	u->split = ph >= PANEL_MIN;
	if (ph > PANEL_MAX)
		ph = PANEL_MAX;
	u->top_rows = u->split ? u->rows - ph : u->rows;
	int ndev = sl_play_devices(u->sv.play);
	sl_screen_layout_compute(u->top_rows, u->cols, ndev, &u->lay);
	/* A show's figure asks for its rows as a device count would (a row
	 * each, and the scale and legend, in place of three and the
	 * sentence's two), within the compact figure's third of the screen. */
	int want = ndev;
	if (u->sbs_on) {
		want = 4 + u->sbs.n - 1 - 5;
		for (int i = 0; i < u->sbs.n; i++)
			want += u->sbs.band[i].ndev * sl_sbs_lanes(&u->sbs.band[i]) + 1;
	}
	sl_lesson_layout_compute(u->rows, u->cols, want, &u->clay, &u->narr);
	/* A pipeline's picture is its timeline: every micro-batch's pass in
	 * order needs every column the screen has, so the compact figure
	 * gives the devices' panel to it (the full view keeps both). */
	const sl_workload *wl = u->sv.play ? sl_play_workload(u->sv.play) : NULL;
	if (wl && wl->kind == SL_WL_TRAIN && wl->l.pp > 1 && !u->clay.too_small) {
		sl_rect *dv = &u->clay.r[SL_PANEL_DEVICES], *tl = &u->clay.r[SL_PANEL_TIMELINE];
		tl->w += tl->x - dv->x;
		tl->x = dv->x;
		dv->w = 0;
	}
}

/* The figure of a show (sbs.h) replaces the view until the next run,
 * step or show. */
static void sbs_off(struct lui *u)
{
	if (!u->sbs_on)
		return;
	sl_sbs_free(&u->sbs);
	u->sbs_on = 0;
	relayout(u);
}

static void sbs_show(struct lui *u, const sl_step *st)
{
	sbs_off(u);
	if (sl_sbs_from_lesson(&u->sbs, st->shows, st->nshows)) {
		set_msg(u, "the runs are not shown side by side: out of memory");
		return;
	}
	u->sbs_on = 1;
	relayout(u);
	clearok(curscr, TRUE);
}

/* The view shows the run that has just happened (eng: what it returned,
 * taken over): the playback may have been replaced (another kind of run) or
 * show another device count (lesson 03 after lesson 02's one-device run),
 * so the screen is laid out again for it. */
static void show_done(struct lui *u, sl_wl_result *eng, double now)
{
	sl_run_kind k;
	const sl_lsetup *s = sl_vm_last_run(u->vm, &k);
	int ndev = sl_play_devices(u->sv.play);
	sbs_off(u);
	if (s)
		sl_lshow_done(&u->sv, k, s, sl_vm_cluster(u->vm), eng, now);
	else if (eng)
		sl_wl_result_free(eng);
	relayout(u);
	if (u->sv.replaced || ndev != sl_play_devices(u->sv.play)) {
		u->sv.replaced = 0;
		clearok(curscr, TRUE);
	}
	if (u->sv.msg[0]) {
		set_msg(u, "%s", u->sv.msg);
		u->sv.msg[0] = 0;
	}
}

/* ---- progress ---- */

static void save(struct lui *u, int finished)
{
	int asked, right;
	sl_vm_score(u->vm, &asked, &right, NULL);
	asked += u->base_asked;
	right += u->base_right;
	if (finished) {
		u->prog.done = 1;
		u->prog.asked = asked;
		u->prog.right = right;
		u->prog.position = -1;
	} else {
		u->prog.position = sl_vm_position(u->vm);
		u->prog.now_asked = asked;
		u->prog.now_right = right;
		u->prog.hash = sl_lesson_hash(u->l);
	}
	sl_err e = {0};
	if (sl_progress_save(u->id, &u->prog, &e))
		set_msg(u, "progress not saved: %s", e.msg);
}

/* ---- stepping ---- */

static void draw(void *ctx);

/* Say on screen that the engine is computing, until it is done (a screen
 * test waits for this to go). */
static void busy(struct lui *u, int on)
{
	if (on) {
		set_msg(u, "working...");
		u->working = 1;
		u->job_t0 = sl_loop_now();
		u->job_shown = 0;
		draw(u);
	} else if (u->working) {
		clear_msg(u);
	}
}

/* While a run computes, the status line counts its seconds (from the
 * second one on), so a long run shows it is alive; and every frame looks
 * whether it is over, so the screen does not rely on the worker's wake-up
 * alone.  Returns nonzero when the screen changed. */
static int busy_tick(struct lui *u, double now)
{
	int s = (int)(now - u->job_t0);
	if (s < 1 || s == u->job_shown || !u->working)
		return 0;
	u->job_shown = s;
	snprintf(u->msg, sizeof u->msg, "working... %d s", s);
	return 1;
}

static void job_free(struct ljob *j)
{
	sl_wl_result_free(&j->eng);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static void *job_main(void *arg)
{
	struct ljob *j = arg;
	sl_err e = {0};
	int rc = sl_vm_execute_into(j->vm, j->c, &j->eng, &e);
	pthread_mutex_lock(&j->mu);
	j->rc = rc;
	j->err = e;
	j->done = 1;
	int gone = j->abandoned;
	pthread_mutex_unlock(&j->mu);
	if (gone) {
		sl_vm_destroy(j->vm);
		sl_lesson_free(j->l);
		job_free(j);
	} else {
		char b = 1;
		if (write(sl_term_wake_fd(), &b, 1) < 0) {
			/* a full pipe is a pending wake-up */
		}
	}
	atomic_fetch_sub(&jobs_alive, 1);
	return NULL;
}

/* Start the pending run on a worker; 0 if it did not start (the vm then
 * runs it, or says why it cannot, at its next step). */
static int job_start(struct lui *u, int explore)
{
	sl_err err = {0};
	sl_cluster *c = sl_vm_make_cluster(u->vm, 0, &err);
	struct ljob *j = c ? calloc(1, sizeof *j) : NULL;
	if (!j) {
		sl_cluster_destroy(c);
		return 0;
	}
	u->nruns++;
	pthread_mutex_init(&j->mu, NULL);
	j->vm = u->vm;
	j->l = u->l;
	j->c = c;
	j->explore = explore;
	pthread_t th;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	atomic_fetch_add(&jobs_alive, 1);
	int rc = pthread_create(&th, &at, job_main, j);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		atomic_fetch_sub(&jobs_alive, 1);
		pthread_mutex_destroy(&j->mu);
		free(j);
		/* On this thread, then: the vm takes c over. */
		sl_wl_result eng;
		memset(&eng, 0, sizeof eng);
		if (sl_vm_execute_into(u->vm, c, &eng, &err) == SL_OK)
			show_done(u, &eng, sl_loop_now());
		else
			sl_wl_result_free(&eng);
		return 0;
	}
	u->job = j;
	clock_gettime(CLOCK_REALTIME, &u->run_started);
	busy(u, 1);
	return 1;
}

/* Leave the run computing to itself: cancel it; the worker frees the vm and
 * the lesson when it returns (at once if it has). */
static void job_abandon(struct lui *u)
{
	struct ljob *j = u->job;
	if (!j)
		return;
	u->job = NULL;
	pthread_mutex_lock(&j->mu);
	int done = j->done;
	if (!done) {
		j->abandoned = 1;
		sl_cluster_cancel(j->c);
	}
	pthread_mutex_unlock(&j->mu);
	if (done) {
		job_free(j); /* the vm and the lesson stay u's */
		return;
	}
	u->vm = NULL;
	u->l = NULL;
}

static void explore_after(struct lui *u, double now);

/* Steps up to the next one that waits (a key, an answer, a run on the
 * worker).  It says "working..." only for a run: each step here is quick,
 * and a "working..." drawn after a run, gone at the next frame, is a false
 * state on screen (and a screen test saw it come back). */
static void advance(struct lui *u, double now)
{
	while (!u->waiting && !u->hold && !u->ended && !u->job) {
		sl_err err = {0};
		sl_step *st = &u->st;
		if (sl_vm_next(u->vm, st, &err)) {
			add(u, R_FAIL, 0, err.msg);
			u->ended = 1;
			break;
		}
		switch (st->kind) {
		case SL_STEP_SAY:
			add(u, R_SAY, 0, st->text);
			u->hold = 1;
			break;
		case SL_STEP_SETUP:
			addf(u, R_INFO, 0, "setup: %s", st->text);
			logged(u);
			break;
		case SL_STEP_RUN:
			addf(u, R_INFO, 0, "run %s", st->text);
			logged(u);
			if (!job_start(u, 0))
				busy(u, 1); /* the vm runs it at the next step, here */
			break;
		case SL_STEP_RESULT:
			addf(u, R_INFO, 0, "result: %s", st->text);
			logged(u);
			break;
		case SL_STEP_SHOW:
			addf(u, R_INFO, 0, "show %s: %s, %s%s%s", st->text, st->shows[0].name,
			     st->shows[1].name, st->nshows > 2 ? ", " : "",
			     st->nshows > 2 ? st->shows[2].name : "");
			logged(u);
			sbs_show(u, st);
			break;
		case SL_STEP_OPS:
			sbs_off(u);
			/* The vm counts operations by end time, as the playback's
			 * steps do: replay the run from its start the first time. */
			if (!u->sv.stepped) {
				sl_play_restart(u->sv.play);
				u->sv.stepped = 1;
			}
			for (int i = 0; i < st->ops; i++)
				sl_play_step(u->sv.play, 1, now);
			/* The figure's sentence says what the step did; the
			 * transcript says only that the run is over, if it is. */
			if (!st->ops)
				addf(u, R_INFO, 0, "%s", st->text);
			u->hold = 1;
			break;
		case SL_STEP_PAUSE:
			add(u, R_PROMPT, 0, st->text[0] ? st->text : "Press Enter to go on.");
			u->hold = u->at_pause = 1;
			save(u, 0);
			break;
		case SL_STEP_CHECK:
			addf(u, st->passed ? R_PASS : R_FAIL, 0, "check %s: %s (%s)",
			     st->passed ? "holds" : "FAILED", st->text, st->detail);
			if (st->passed)
				logged(u); /* a failure stays in sight */
			break;
		case SL_STEP_QUESTION:
		case SL_STEP_MENU:
			add(u, R_PROMPT, 0, st->text);
			for (int i = 0; i < st->nchoices; i++) {
				if (st->kind == SL_STEP_QUESTION)
					addf(u, R_CHOICE, 2, "%c) %s", 'a' + i, st->choices[i]);
				else
					addf(u, R_CHOICE, 2, "%d) %s", i + 1, st->choices[i]);
			}
			if (st->numeric)
				addf(u, R_INFO, 2, "type a number%s%s, then Enter",
				     st->unit[0] ? " in " : "", st->unit);
			u->waiting = st->kind;
			save(u, 0);
			break;
		case SL_STEP_EXPLORE: {
			add(u, R_PROMPT, 0, st->text);
			char knobs[200] = "";
			for (int i = 0; i < st->nknobs; i++)
				snprintf(knobs + strlen(knobs), sizeof knobs - strlen(knobs),
				         "%s%s", i ? ", " : "", st->knobs[i]);
			addf(u, R_INFO, 2,
			     "knobs: %s; goes on when %s. Type KNOB VALUE (or demo, or "
			     "skip), then Enter",
			     knobs, st->detail);
			u->waiting = SL_STEP_EXPLORE;
			u->tries = 0;
			save(u, 0);
			break;
		}
		case SL_STEP_END: {
			int asked = st->asked + u->base_asked, right = st->right + u->base_right;
			if (u->presenter)
				addf(u, st->checks_failed ? R_FAIL : R_PASS, 0,
				     "The end: %s. Press Enter.",
				     st->checks_failed ? "a check FAILED" : "every check held");
			else
				addf(u, st->checks_failed ? R_FAIL : R_PASS, 0,
				     "The end: %d of %d question%s right; %s. Press Enter.", right,
				     asked, asked == 1 ? "" : "s",
				     st->checks_failed ? "a check FAILED" : "every check held");
			save(u, 1);
			u->ended = 1;
			break;
		}
		}
	}
	if (!u->job)
		busy(u, 0);
}

/* The run on the worker is over: show it, then go on where it was asked. */
static void job_finish(struct lui *u, double now)
{
	struct ljob *j = u->job;
	pthread_mutex_lock(&j->mu);
	int done = j->done;
	pthread_mutex_unlock(&j->mu);
	if (!done)
		return;
	u->job = NULL;
	busy(u, 0);
	if (j->rc) {
		add(u, R_FAIL, 0, j->err.msg);
		u->ended = 1;
		u->waiting = 0;
		job_free(j);
		return;
	}
	show_done(u, &j->eng, now);
	int explore = j->explore;
	job_free(j);
	if (explore)
		explore_after(u, now);
	else
		advance(u, now);
	/* Handed to the screen: the loop draws it at its next frame. */
	clock_gettime(CLOCK_REALTIME, &u->run_shown);
}

/* After every answer, taken or refused, the line is empty again: a
 * rejected one is not the start of the next. */
static void clear_input(struct lui *u)
{
	u->ninput = 0;
	u->input[0] = 0;
}

static void submit(struct lui *u, double now)
{
	sl_err e = {0};
	const char *in = u->input;
	clear_msg(u);
	if (u->waiting == SL_STEP_QUESTION) {
		sl_answer a;
		if (sl_vm_answer(u->vm, in, &a, &e)) {
			set_msg(u, "%s", e.msg);
			clear_input(u);
			return;
		}
		addf(u, R_ANSWER, 2, "> %s", in);
		if (a.again) { /* why it is wrong, then another try */
			addf(u, R_WRONG, 0, "Not quite. %s Try again.", a.explain);
			clear_input(u);
			return;
		}
		if (a.correct) /* the lesson's explanation says it is right */
			add(u, R_RIGHT, 0, a.explain[0] ? a.explain : "Right.");
		else
			addf(u, R_WRONG, 0, "The answer: %s. %s", a.expected, a.explain);
	} else if (u->waiting == SL_STEP_MENU) {
		char *end;
		long k = strtol(in, &end, 10);
		if (end == in || *end || sl_vm_choose(u->vm, (int)k - 1, &e)) {
			set_msg(u, "choose an item by its number");
			clear_input(u);
			return;
		}
		addf(u, R_ANSWER, 2, "> %s", in);
	} else if (u->waiting == SL_STEP_EXPLORE) {
		if (strcmp(in, "skip") == 0) {
			sl_vm_skip(u->vm, &e);
			add(u, R_INFO, 2, "skipped");
		} else {
			int rc = strcmp(in, "demo") == 0 ? sl_vm_demo(u->vm, &e)
			                                 : sl_vm_knob(u->vm, in, &e);
			if (rc) {
				set_msg(u, "%s", e.msg);
				clear_input(u);
				return;
			}
			addf(u, R_ANSWER, 2, "> %s", in);
			clear_input(u);
			if (!job_start(u, 1))
				explore_after(u, now);
			return;
		}
	}
	u->waiting = 0;
	u->ninput = 0;
	u->input[0] = 0;
	advance(u, now);
}

/* An explore's run is over (or there was none to make): does its
 * condition hold now? */
static void explore_after(struct lui *u, double now)
{
	sl_err e = {0};
	const char *detail;
	int met = sl_vm_explore_met(u->vm, &detail, &e);
	if (met < 0) {
		add(u, R_FAIL, 0, e.msg);
		u->ended = 1;
	} else {
		addf(u, R_INFO, 2, "result: %s", sl_vm_last_result(u->vm));
		if (met)
			addf(u, R_RIGHT, 2, "Yes: now %s (%s).", u->st.detail, detail);
		else
			addf(u, R_WRONG, 2,
			     "Not yet: the lesson goes on when %s, and "
			     "this run gives %s. Turn a knob again (or type skip).",
			     u->st.detail, detail);
		if (!met) {
			if (++u->tries == 3 && u->st.hint[0])
				addf(u, R_INFO, 2, "hint: %s", u->st.hint);
			clear_input(u);
			return;
		}
	}
	u->waiting = 0;
	clear_input(u);
	advance(u, now);
}

/* ---- opening and closing a lesson ---- */

static void close_lesson(struct lui *u)
{
	job_abandon(u);
	sl_vm_destroy(u->vm);
	sl_lesson_free(u->l);
	u->vm = NULL;
	u->l = NULL;
	transcript_clear(u);
	sl_sbs_free(&u->sbs); /* laid out again when the next screen opens */
	u->sbs_on = 0;
}

static int open_lesson(struct lui *u, const char *path, const char *start, int fresh, sl_err *err)
{
	if (path != u->path)
		snprintf(u->path, sizeof u->path, "%s", path);
	close_lesson(u);
	u->sv.on = u->show_view = 0;
	u->sections_open = 0;
	if (sl_lesson_load(u->path, &u->l, NULL, err))
		return SL_EINVAL;
	u->vm = sl_vm_create(u->l, err);
	if (!u->vm)
		return SL_ENOMEM;
	sl_progress_id(u->path, u->id, sizeof u->id);
	if (fresh)
		sl_progress_forget(u->id, NULL);
	sl_progress_load(u->id, &u->prog, NULL);
	u->waiting = u->hold = u->ended = u->at_pause = 0;
	u->base_asked = u->base_right = 0;
	u->ninput = 0;
	u->input[0] = 0;
	clear_msg(u);
	int pos = 0;
	if (start) {
		if ((pos = sl_lesson_locate(u->l, start, err)) < 0)
			return SL_EINVAL;
	} else if (u->prog.position > 0 && u->prog.hash == sl_lesson_hash(u->l)) {
		pos = u->prog.position;
		u->base_asked = u->prog.now_asked;
		u->base_right = u->prog.now_right;
	}
	addf(u, R_PROMPT, 0, "%s (%d minute%s)", sl_lesson_title(u->l), sl_lesson_minutes(u->l),
	     sl_lesson_minutes(u->l) == 1 ? "" : "s");
	if (sl_lesson_about(u->l)[0])
		add(u, R_INFO, 0, sl_lesson_about(u->l));
	if (pos > 0) {
		if (start)
			addf(u, R_INFO, 0, "From line %d; the runs before it ran unseen.",
			     sl_lesson_line_at(u->l, pos));
		else
			add(u, R_INFO, 0,
			    "Going on where you left off (f in the menu starts afresh).");
		sl_wl_result eng;
		if (sl_vm_start_at_into(u->vm, pos, &eng, err)) {
			sl_wl_result_free(&eng);
			return SL_EINVAL;
		}
		/* The runs before pos ran silently: show the last one, whole. */
		show_done(u, &eng, sl_loop_now());
	}
	u->in_menu = 0;
	advance(u, sl_loop_now());
	return SL_OK;
}

static void load_menu(struct lui *u)
{
	sl_err err = {0};
	free(u->cat);
	u->cat = NULL;
	u->ncat = 0;
	sl_catalog_list(&u->cat, &u->ncat, &err);
	if (u->sel >= u->ncat)
		u->sel = u->ncat ? u->ncat - 1 : 0;
	u->in_menu = 1;
}

static unsigned leave_lesson(struct lui *u)
{
	if (!u->ended && u->vm && !u->job) /* a run computing: where it was saved last */
		save(u, 0);
	close_lesson(u);
	if (!u->from_menu)
		return F_QUIT;
	load_menu(u);
	return F_DRAW | F_LAYOUT;
}

/* ---- drawing ---- */

/* The keys of the screen shown, from its table. */
static sl_keymode keymode(void *ctx)
{
	const struct lui *u = ctx;
	return u->in_menu         ? SL_MODE_MENU
	       : u->sections_open ? SL_MODE_SECTIONS
	       : u->waiting       ? SL_MODE_INPUT
	                          : SL_MODE_LESSON;
}

static void draw_status(struct lui *u, int y)
{
	static const sl_action menu[] = {SL_A_ROW_DOWN, SL_A_ROW_UP, SL_A_OPEN, SL_A_FRESH,
	                                 SL_A_SANDBOX,  SL_A_HELP,   SL_A_LEAVE};
	static const sl_action input[] = {SL_A_SUBMIT, SL_A_CANCEL, SL_A_HELP, SL_A_QUIT};
	static const sl_action input_run[] = {SL_A_SUBMIT, SL_A_CANCEL, SL_A_PLAY, SL_A_STEP,
	                                      SL_A_BACK,   SL_A_HELP,   SL_A_QUIT};
	static const sl_action ended[] = {SL_A_GO_ON, SL_A_HELP, SL_A_QUIT};
	static const sl_action split[] = {SL_A_GO_ON,      SL_A_PLAY,  SL_A_STEP, SL_A_BACK,
	                                  SL_A_PHASE_NEXT, SL_A_LEAVE, SL_A_HELP, SL_A_QUIT};
	static const sl_action shown[] = {SL_A_GO_ON, SL_A_PLAY,  SL_A_STEP, SL_A_BACK,
	                                  SL_A_VIEW,  SL_A_LEAVE, SL_A_HELP, SL_A_QUIT};
	static const sl_action told[] = {SL_A_GO_ON, SL_A_SECTIONS, SL_A_LEAVE, SL_A_HELP,
	                                 SL_A_QUIT};
	static const sl_action sbs[] = {SL_A_GO_ON, SL_A_VIEW, SL_A_LEAVE, SL_A_HELP, SL_A_QUIT};
	static const sl_action sections[] = {SL_A_ROW_DOWN, SL_A_ROW_UP, SL_A_OPEN,
	                                     SL_A_LEAVE,    SL_A_HELP,   SL_A_QUIT};
	static const sl_action help[] = {SL_A_SCROLL_DOWN, SL_A_CLOSE, SL_A_QUIT};
	const sl_action *acts = told;
	size_t n = sizeof told / sizeof told[0];
	const char *words[8] = {0};
	int keys[8] = {0};
#define USE(t) (acts = (t), n = sizeof(t) / sizeof(t)[0])
	sl_keymode mode = u->help.open ? SL_MODE_HELP : keymode(u);
	if (mode == SL_MODE_HELP) {
		USE(help);
	} else if (mode == SL_MODE_MENU) {
		USE(menu);
		words[0] = "choose";
	} else if (mode == SL_MODE_SECTIONS) {
		USE(sections);
		words[0] = "choose";
		words[2] = "go there";
		words[3] = "close";
	} else if (mode == SL_MODE_INPUT && u->sv.on && !u->sbs_on) {
		USE(input_run);
		words[1] = u->ninput ? "clear" : "back";
		keys[5] = u->ninput ? KEY_F(1) : 0; /* ? is typed now */
	} else if (mode == SL_MODE_INPUT) {
		USE(input);
		words[1] = u->ninput ? "clear" : "back";
		keys[2] = u->ninput ? KEY_F(1) : 0; /* ? is typed now */
	} else if (u->ended) {
		USE(ended);
		words[0] = "back";
	} else if (u->sbs_on && !u->split) { /* a show's figure: nothing plays */
		USE(sbs);
		words[1] = u->show_view ? "narration" : "full view";
	} else if (u->sbs_on) {
		USE(told);
	} else if (u->split && u->sv.on) {
		USE(split);
	} else if (u->sv.on) {
		USE(shown);
		words[4] = u->show_view ? "narration" : "full view";
	}
#undef USE
	for (size_t i = 0; i < n; i++) {
		if (acts[i] == SL_A_LEAVE && mode != SL_MODE_MENU && !words[i])
			words[i] = "back";
		if (acts[i] == SL_A_PLAY && sl_play_playing(u->sv.play))
			words[i] = "pause";
	}
	sl_view v = {.th = &u->th, .msg = u->msg};
	sl_draw_keys(&v, (sl_rect){y, 0, 1, u->cols}, mode, acts, keys, words, n);
}

/* The help of the screen it was opened from, over the whole screen. */
static void draw_help(struct lui *u)
{
	sl_view v = make_view(u);
	sl_putf(0, 0, u->cols, sl_theme_role(&u->th, SL_ROLE_TITLE), "shardlab  %s",
	        u->l ? sl_lesson_title(u->l) : "guided lessons");
	u->help.rows = u->rows - 2;
	u->help.cols = u->cols;
	sl_draw_help(&v, (sl_rect){1, 0, u->help.rows, u->help.cols});
	draw_status(u, u->rows - 1);
}

static void draw_menu(struct lui *u)
{
	attr_t norm = sl_theme_role(&u->th, SL_ROLE_NORMAL),
	       title = sl_theme_role(&u->th, SL_ROLE_TITLE);
	attr_t dim = sl_theme_role(&u->th, SL_ROLE_DIM),
	       selr = sl_theme_role(&u->th, SL_ROLE_SELECT);
	sl_put(0, 0, u->cols, title,
	       u->presenter ? "shardlab  guided lessons  (presenter mode)"
	                    : "shardlab  guided lessons");
	if (!u->ncat) {
		sl_put(2, 2, u->cols - 4, norm,
		       "No lessons are installed. Set SHARDLAB_LESSON_PATH to a directory of "
		       ".lesson files.");
	}
	int top = 2, h = u->rows - 7;
	int first = u->sel >= h ? u->sel - h + 1 : 0;
	for (int i = first; i < u->ncat && i - first < h; i++) {
		const sl_catalog_entry *e = &u->cat[i];
		sl_progress p;
		sl_progress_load(e->id, &p, NULL);
		char state[64] = "";
		if (!e->ok)
			snprintf(state, sizeof state, "does not load");
		else if (p.done && u->presenter)
			snprintf(state, sizeof state, "done");
		else if (p.done)
			snprintf(state, sizeof state, "done, %d/%d right", p.right, p.asked);
		else if (p.position > 0)
			snprintf(state, sizeof state, "started");
		int y = top + i - first;
		attr_t a = i == u->sel ? selr : norm;
		char line[256], num[8] = "";
		size_t nd = strspn(e->id, "0123456789");
		if (nd > 0 && nd < sizeof num)
			snprintf(num, sizeof num, "%.*s", (int)nd, e->id);
		/* The title's column gives way to the state ("done, 10/12
		 * right"), which is never cut: 80 columns cut it to "0/3 r". */
		int tw = u->cols - 4 - 17 - 19;
		tw = tw > 48 ? 48 : tw < 20 ? 20 : tw;
		/* The 90-minute class's lessons are marked (the footer says how). */
		const char *mark = e->track == SL_TRACK_CLASS      ? "*"
		                   : e->track == SL_TRACK_OPTIONAL ? "+"
		                                                   : " ";
		snprintf(line, sizeof line, "%s %3s  %-*.*s %3d min %s %s", i == u->sel ? ">" : " ",
		         num, tw, tw, e->title, e->minutes, mark, state);
		sl_clear_rect((sl_rect){y, 1, 1, u->cols - 2}, a);
		sl_put(y, 2, u->cols - 4, a, line);
	}
	/* The course's time, and the class a 90-minute slot holds. */
	sl_course_time ct = sl_catalog_time(u->cat, u->ncat);
	if (u->ncat) {
		char foot[200];
		int len = snprintf(foot, sizeof foot, "%d min in all", ct.all);
		if (ct.nclass && len > 0 && (size_t)len < sizeof foot)
			len += snprintf(foot + len, sizeof foot - (size_t)len,
			                "; * the 90-minute class: %d lessons, %d min", ct.nclass,
			                ct.class_minutes);
		if (ct.noptional && len > 0 && (size_t)len < sizeof foot)
			snprintf(foot + len, sizeof foot - (size_t)len, "; + %d min more",
			         ct.optional);
		sl_put(u->rows - 5, 2, u->cols - 4, dim, foot);
	}
	if (u->ncat && !u->cat[u->sel].ok)
		sl_put(u->rows - 2, 2, u->cols - 4, sl_theme_role(&u->th, SL_ROLE_FAIL),
		       u->cat[u->sel].error);
	else if (u->ncat)
		wrap(u, u->cat[u->sel].about, u->rows - 4, 2, u->cols - 4, u->rows - 4, u->rows - 1,
		     dim, 1);
	draw_status(u, u->rows - 1);
}

static void draw_panel(struct lui *u, sl_rect r, const sl_view *v)
{
	char title[160];
	snprintf(title, sizeof title, "lesson: %s", sl_lesson_title(u->l));
	sl_rect in = sl_box(v, r, title);
	in.x += 1; /* a margin inside the border */
	in.w -= 2;
	attr_t norm = sl_theme_role(&u->th, SL_ROLE_NORMAL);
	int prompt = u->waiting ? 1 : 0;
	int yhi = in.y + in.h - prompt;
	/* Bottom-aligned: the newest entry just above the prompt, or as many
	 * lines lower as the narration is scrolled back (Up), within what
	 * the transcript holds. */
	int total = 0;
	for (int i = u->ntr - 1; i >= 0; i--) {
		const struct entry *e = &u->tr[i];
		if (e->log && u->presenter)
			continue;
		total += wrap(u, e->text, 0, 0, in.w - e->indent, 0, 0, 0, 0) +
		         (e->role == R_SAY && i > 0 ? 1 : 0);
	}
	/* Scrolled back, the bottom row says what lies below, over no text. */
	int room = yhi - in.y - (u->scroll > 0);
	if (u->scroll > total - room)
		u->scroll = total - room > 0 ? total - room : 0;
	int below = u->scroll > 0 ? 1 : 0;
	yhi -= below;
	int y = yhi + u->scroll;
	for (int i = u->ntr - 1; i >= 0 && y > in.y; i--) {
		const struct entry *e = &u->tr[i];
		if (e->log && u->presenter)
			continue;
		int lines = wrap(u, e->text, 0, 0, in.w - e->indent, 0, 0, 0, 0);
		/* Paragraphs of narration stand apart. */
		int gap = e->role == R_SAY && i > 0 ? 1 : 0;
		y -= lines + gap;
		wrap(u, e->text, y + gap, in.x + e->indent, in.w - e->indent, in.y, yhi,
		     role_attr(u, e->role), 1);
	}
	if (below) { /* where the newest lines went */
		char more[64];
		snprintf(more, sizeof more, "%d more line%s below (Down)", u->scroll,
		         u->scroll == 1 ? "" : "s");
		int w = (int)strlen(more);
		if (w < in.w)
			sl_put(yhi, in.x + in.w - w, w, sl_theme_role(&u->th, SL_ROLE_KEY), more);
	}
	if (prompt) {
		int py = in.y + in.h - 1;
		const char *p = u->waiting == SL_STEP_EXPLORE ? "knob> "
		                : u->waiting == SL_STEP_MENU  ? "choice> "
		                                              : "answer> ";
		int x = in.x + sl_put(py, in.x, in.w, sl_theme_role(&u->th, SL_ROLE_KEY), p);
		x += sl_put(py, x, in.x + in.w - x, norm, u->input);
		sl_put(py, x, in.x + in.w - x, norm | A_REVERSE, " ");
	}
}

/* The list of the lesson's sections (g), over the lesson: its label and
 * the first words of its narration; the one the lesson is in marked. */
static void draw_sections(struct lui *u, const sl_view *v)
{
	int w = u->cols - 4 > 96 ? 96 : u->cols - 4;
	int n = u->nsections < SECTIONS ? u->nsections : SECTIONS;
	int h = n + 2 > u->rows - 4 ? u->rows - 4 : n + 2;
	sl_rect r = {(u->rows - 1 - h) / 2, (u->cols - w) / 2, h, w};
	attr_t norm = sl_theme_role(&u->th, SL_ROLE_NORMAL),
	       selr = sl_theme_role(&u->th, SL_ROLE_SELECT),
	       dim = sl_theme_role(&u->th, SL_ROLE_DIM);
	sl_clear_rect(r, norm);
	sl_rect in = sl_box(v, r, "sections: Enter goes there, Esc closes");
	int first = u->section_sel >= in.h ? u->section_sel - in.h + 1 : 0;
	int here = 0;
	for (int i = 0; i < n && u->vm; i++)
		if (u->sections[i].pos <= sl_vm_position(u->vm))
			here = i;
	int lw = 0;
	for (int i = 0; i < n; i++) {
		int l = u->sections[i].label ? (int)strlen(u->sections[i].label) : 7;
		lw = l > lw ? l : lw;
	}
	if (lw > in.w / 3)
		lw = in.w / 3;
	for (int i = first; i < n && i - first < in.h; i++) {
		const sl_section *sec = &u->sections[i];
		int y = in.y + i - first;
		attr_t a = i == u->section_sel ? selr : norm;
		char line[256];
		snprintf(line, sizeof line, "%s%2d %-*.*s  ", i == u->section_sel ? ">" : " ",
		         i + 1, lw, lw, sec->label ? sec->label : "(start)");
		sl_clear_rect((sl_rect){y, in.x, 1, in.w}, a);
		int x = in.x + sl_put(y, in.x, in.w, a, line);
		/* The title cut at a word, never inside one. */
		char t[sizeof sec->title + 4];
		snprintf(t, sizeof t, "%s", sec->title[0] ? sec->title : "the start");
		int room = in.x + in.w - x - 2;
		while (sl_cols(t) > room && room > 3) {
			char *sp = strrchr(t, ' ');
			if (!sp || sp == t) {
				t[0] = 0;
				break;
			}
			while (sp > t && (sp[-1] == ' ' || sp[-1] == '.' || sp[-1] == ','))
				sp--;
			snprintf(sp, sizeof t - (size_t)(sp - t), "...");
		}
		sl_put(y, x, room, i == u->section_sel ? a : dim, t);
		if (i == here)
			sl_put(y, in.x + in.w - 1, 1, a, "*");
	}
}

static void draw(void *ctx)
{
	struct lui *u = ctx;
	bkgdset(' ' | sl_theme_role(&u->th, SL_ROLE_NORMAL));
	erase();
	if (u->rows < SL_LAYOUT_MIN_ROWS || u->cols < SL_LAYOUT_MIN_COLS) {
		sl_view v = make_view(u);
		sl_draw_too_small(&v, u->rows, u->cols);
	} else if (u->help.open) {
		draw_help(u);
	} else if (u->in_menu) {
		draw_menu(u);
	} else {
		sl_view v = make_view(u);
		const sl_screen_layout *L = &u->lay;
		/* While an answer is typed, v is typed too: the narration and
		 * the compact figure then show whatever v said before. */
		int on = u->sv.on || u->sbs_on;
		int split = u->split && on;
		int full = on && !u->split && u->show_view && !u->waiting;
		int compact = on && !u->split && !full;
		int view = split || full;
		if (u->sbs_on) {
			const sl_rect *se = &u->clay.r[SL_PANEL_SENTENCE];
			int h = full ? u->rows - 2 : split ? u->top_rows - 2 : se->y + se->h - 1;
			sl_putf(
			    0, 0, u->cols, sl_theme_role(&u->th, SL_ROLE_TITLE),
			    "shardlab  lesson  %s %s %d runs side by side, a training step each",
			    sl_lesson_title(u->l), u->th.g->dot, u->sbs.n);
			sl_draw_sbs(&u->th, &u->sbs, (sl_rect){1, 0, h, u->cols});
			if (compact)
				draw_panel(u, u->narr, &v);
		} else if (compact) {
			const sl_screen_layout *C = &u->clay;
			v.lay = C;
			sl_draw_title(&v, C->r[SL_PANEL_TITLE]);
			/* A lone collective's point is which blocks each device
			 * holds: its buffers, every device in columns of rows,
			 * take the devices' place. */
			if (C->r[SL_PANEL_DEVICES].w > 0 && v.m->kind == SL_WL_COLLECTIVE)
				sl_draw_matrices(&v, C->r[SL_PANEL_DEVICES]);
			else if (C->r[SL_PANEL_DEVICES].w > 0)
				sl_draw_devices(&v, C->r[SL_PANEL_DEVICES]);
			sl_draw_timeline(&v, C->r[SL_PANEL_TIMELINE]);
			sl_draw_sentence(&v, C->r[SL_PANEL_SENTENCE]);
			draw_panel(u, u->narr, &v);
		} else if (view) {
			sl_draw_title(&v, L->r[SL_PANEL_TITLE]);
			sl_draw_devices(&v, L->r[SL_PANEL_DEVICES]);
			sl_draw_links(&v, L->r[SL_PANEL_LINKS]);
			sl_draw_matrices(&v, L->r[SL_PANEL_MATRICES]);
			sl_draw_numbers(&v, L->r[SL_PANEL_NUMBERS]);
			sl_draw_timeline(&v, L->r[SL_PANEL_TIMELINE]);
			sl_draw_sentence(&v, L->r[SL_PANEL_SENTENCE]);
		} else {
			attr_t t = sl_theme_role(&u->th, SL_ROLE_TITLE);
			sl_putf(0, 0, u->cols, t, "shardlab  lesson  %s", sl_lesson_title(u->l));
		}
		if (split)
			draw_panel(u, (sl_rect){u->top_rows - 1, 0, u->rows - u->top_rows, u->cols},
			           &v);
		else if (!view && !compact)
			draw_panel(u, (sl_rect){1, 0, u->rows - 2, u->cols}, &v);
		if (u->sections_open)
			draw_sections(u, &v);
		draw_status(u, u->rows - 1);
	}
	sl_term_show();
}

/* ---- keys ---- */

static unsigned open_chosen(struct lui *u, int fresh)
{
	sl_err err = {0};
	if (!u->ncat)
		return 0;
	if (!u->cat[u->sel].ok) {
		set_msg(u, "this lesson does not load");
	} else if (open_lesson(u, u->cat[u->sel].path, NULL, fresh, &err)) {
		close_lesson(u);
		u->in_menu = 1;
		set_msg(u, "%s", err.msg);
	}
	return F_DRAW | F_LAYOUT;
}

/* The sandbox, as a screen of this loop: the menu's own keys, drawing and
 * clock give way to it until q brings the menu back. */
static unsigned open_sandbox(struct lui *u)
{
	if (!u->opt.sandbox)
		return 0;
	struct sl_tui_options o;
	sl_tui_options_default(&o);
	o.no_color = u->opt.no_color;
	o.ascii = u->opt.ascii;
	o.high_contrast = u->th.high_contrast;
	o.no_mouse = u->opt.no_mouse;
	o.fps = u->opt.fps;
	o.from_menu = 1;
	sl_err err = {0};
	u->sb = sl_sandbox_open(u->opt.sandbox, &o, &err);
	if (!u->sb)
		set_msg(u, "the sandbox does not open: %.200s", err.msg);
	return F_DRAW | F_LAYOUT | F_CLEAR;
}

/* Back to the menu: its threads stop (a long BLAS call is not waited for
 * past a few seconds; the process then leaves with _exit). */
static unsigned close_sandbox(struct lui *u)
{
	if (!sl_sandbox_close(u->sb, 5.0))
		u->sb_orphans = 1;
	u->sb = NULL;
	relayout(u);
	return F_DRAW | F_LAYOUT | F_CLEAR;
}

/* The list of sections, opened on the one the lesson is in. */
static unsigned open_sections(struct lui *u)
{
	if (!u->l)
		return 0;
	u->nsections = sl_lesson_sections(u->l, u->sections, SECTIONS);
	if (u->nsections < 2) {
		set_msg(u, "this lesson is one section: it has no label to go to");
		return F_DRAW;
	}
	int n = u->nsections < SECTIONS ? u->nsections : SECTIONS;
	u->section_sel = 0;
	for (int i = 0; i < n; i++)
		if (u->vm && u->sections[i].pos <= sl_vm_position(u->vm))
			u->section_sel = i;
	u->sections_open = 1;
	return F_DRAW;
}

/* To the section chosen, as --start=LABEL goes there: the lesson opened
 * again, the runs before it run unseen, and the last of them shown. */
static unsigned go_section(struct lui *u)
{
	const sl_section *sec = &u->sections[u->section_sel];
	char start[80];
	snprintf(start, sizeof start, "%s", sec->label ? sec->label : "1");
	u->sections_open = 0;
	if (!u->ended && u->vm && !u->job)
		save(u, 0);
	set_msg(u, "going to %s: working...", sec->label ? sec->label : "the start");
	u->working = 1; /* a screen test waits for this to go */
	draw(u);
	sl_err err = {0};
	if (open_lesson(u, u->path, start, 0, &err)) {
		add(u, R_FAIL, 0, err.msg);
		u->ended = 1;
	}
	if (u->working)
		clear_msg(u);
	return F_DRAW | F_LAYOUT | F_CLEAR;
}

/* R in the menu asked; y forgets every lesson's progress, any other key
 * keeps it. */
static unsigned forget_all(struct lui *u, int ch)
{
	u->confirm_forget = 0;
	if (ch != 'y' && ch != 'Y') {
		set_msg(u, "nothing forgotten");
		return F_DRAW;
	}
	int n = 0;
	sl_err err = {0};
	if (sl_progress_forget_all(&n, &err))
		set_msg(u, "%s", err.msg);
	else
		set_msg(u, "forgot the progress of %d lesson%s", n, n == 1 ? "" : "s");
	return F_DRAW;
}

/* A key, by its action in the table of the screen shown.  While an answer
 * is typed, printable keys are typed instead (? only once something is). */
static unsigned on_key(void *ctx, int ch, sl_action ac, double now)
{
	struct lui *u = ctx;
	sl_keymode mode = keymode(u);
	if (mode == SL_MODE_INPUT && sl_keys_typed(ch, u->ninput)) {
		if (u->ninput + 1 < sizeof u->input) {
			u->input[u->ninput++] = (char)ch;
			u->input[u->ninput] = 0;
			clear_msg(u);
		}
		u->scroll = 0; /* the question answered is in sight */
		return F_DRAW;
	}
	if (u->confirm_forget && mode == SL_MODE_MENU && ac != SL_A_HELP)
		return forget_all(u, ch);
	if (ac == SL_A_NONE && mode == SL_MODE_LESSON && u->hold && u->at_pause && ch > ' ' &&
	    ch < 127)
		ac = SL_A_GO_ON; /* "Press a key": any key the screen does not bind */
	if (ac == SL_A_NONE)
		return 0;
	/* While a run computes the vm is the worker's: the loop holds the keys
	 * that need it (busy_running); this is the guard behind that. */
	if (u->job && (ac == SL_A_SUBMIT || ac == SL_A_GO_ON || ac == SL_A_OPEN ||
	               ac == SL_A_FRESH || ac == SL_A_SANDBOX))
		return 0;
	if (mode != SL_MODE_INPUT && !u->job)
		clear_msg(u);
	/* A show's figure is no playback: its keys would move one unseen. */
	if (u->sbs_on && (ac == SL_A_PLAY || ac == SL_A_STEP || ac == SL_A_BACK ||
	                  ac == SL_A_RESTART || ac == SL_A_END))
		return 0;
	switch (ac) {
	case SL_A_CONTRAST:
		if (u->th.color)
			sl_theme_contrast(&u->th, !u->th.high_contrast);
		return F_DRAW | F_CLEAR;
	case SL_A_LEAVE:
	case SL_A_CANCEL:
		if (mode == SL_MODE_MENU)
			return F_QUIT;
		if (mode == SL_MODE_SECTIONS) {
			u->sections_open = 0;
			return F_DRAW | F_CLEAR;
		}
		if (ac == SL_A_CANCEL && u->ninput) {
			u->ninput = 0;
			u->input[0] = 0;
			return F_DRAW;
		}
		return leave_lesson(u);
	case SL_A_ROW_DOWN:
		if (mode == SL_MODE_SECTIONS) {
			if (u->section_sel + 1 < u->nsections && u->section_sel + 1 < SECTIONS)
				u->section_sel++;
		} else if (u->sel + 1 < u->ncat) {
			u->sel++;
		}
		return F_DRAW;
	case SL_A_ROW_UP:
		if (mode == SL_MODE_SECTIONS) {
			if (u->section_sel > 0)
				u->section_sel--;
		} else if (u->sel > 0) {
			u->sel--;
		}
		return F_DRAW;
	case SL_A_OPEN:
		if (mode == SL_MODE_SECTIONS)
			return go_section(u);
		return open_chosen(u, 0);
	case SL_A_FRESH:
		return open_chosen(u, 1);
	case SL_A_SECTIONS:
		return open_sections(u);
	case SL_A_FORGET_ALL:
		u->confirm_forget = 1;
		set_msg(u, "forget the progress and score of every lesson? y forgets, any other "
		           "key keeps them");
		return F_DRAW;
	case SL_A_SANDBOX:
		return open_sandbox(u);
	case SL_A_SUBMIT:
		if (u->scroll) { /* show the question before answering it */
			u->scroll = 0;
			return F_DRAW;
		}
		if (u->ninput)
			submit(u, now);
		return F_DRAW;
	case SL_A_ERASE:
		if (u->ninput)
			u->input[--u->ninput] = 0;
		return F_DRAW;
	case SL_A_GO_ON:
		if (u->ended)
			return leave_lesson(u);
		u->hold = u->at_pause = 0;
		advance(u, now);
		return F_DRAW;
	case SL_A_VIEW:
		if (!u->split && (u->sv.on || u->sbs_on))
			u->show_view = !u->show_view;
		return F_DRAW;
	case SL_A_SCROLL_UP: /* draw_panel keeps it within the transcript */
		u->scroll++;
		return F_DRAW;
	case SL_A_SCROLL_DOWN:
		if (u->scroll > 0)
			u->scroll--;
		return F_DRAW;
	case SL_A_PRESENTER:
		u->presenter = !u->presenter;
		set_msg(u, u->presenter ? "presenter mode" : "presenter mode off");
		return F_DRAW | F_CLEAR;
	/* The sandbox's playback on the scenario shown. */
	case SL_A_PLAY:
		sl_play_toggle(u->sv.play, now);
		return F_DRAW;
	case SL_A_STEP:
	case SL_A_BACK:
		sl_play_step(u->sv.play, ac == SL_A_STEP, now);
		return F_DRAW;
	case SL_A_RESTART:
		sl_play_restart(u->sv.play);
		return F_DRAW;
	case SL_A_END:
		sl_play_to_end(u->sv.play, now);
		return F_DRAW;
	case SL_A_PHASE_NEXT:
	case SL_A_PHASE_PREV:
		sl_play_phase(u->sv.play, ac == SL_A_PHASE_NEXT, now);
		return F_DRAW;
	default:
		return 0;
	}
}

static unsigned on_wake(void *ctx)
{
	struct lui *u = ctx;
	unsigned f = 0;
	if (u->job) {
		job_finish(u, sl_loop_now());
		f |= F_DRAW;
	}
	return sl_play_collect(u->sv.play) || f ? F_DRAW : 0;
}

static unsigned on_tick(void *ctx, double now)
{
	struct lui *u = ctx;
	unsigned f = 0;
	if (u->job) {
		job_finish(u, now);
		f = !u->job || busy_tick(u, now) ? F_DRAW : 0;
	}
	return sl_play_tick(u->sv.play, now) & SL_PLAY_CHANGED ? F_DRAW : f;
}

static int animating(void *ctx)
{
	struct lui *u = ctx;
	return u->job || sl_play_animating(u->sv.play);
}

static sl_loop_help *help_of(void *ctx)
{
	return &((struct lui *)ctx)->help;
}

static size_t typed(void *ctx)
{
	return ((struct lui *)ctx)->ninput;
}

/* A run computing on the worker: keys that need the vm wait for it. */
static int busy_running(void *ctx)
{
	return ((struct lui *)ctx)->job != NULL;
}

/* The screens of this loop: the menu and the lesson (the functions above),
 * and the sandbox opened from the menu, whose own table of functions takes
 * over while it is shown.  q there comes back here. */
static sl_keymode s_keys(void *ctx)
{
	struct lui *u = ctx;
	return u->sb ? sl_sandbox_loop()->keys(u->sb) : keymode(u);
}

static sl_loop_help *s_help(void *ctx)
{
	struct lui *u = ctx;
	return u->sb ? sl_sandbox_loop()->help(u->sb) : help_of(u);
}

static size_t s_typed(void *ctx)
{
	struct lui *u = ctx;
	return u->sb ? 0 : typed(u);
}

static unsigned s_key(void *ctx, int ch, sl_action ac, double now)
{
	struct lui *u = ctx;
	if (!u->sb)
		return on_key(u, ch, ac, now);
	unsigned f = sl_sandbox_loop()->key(u->sb, ch, ac, now);
	if ((f & F_QUIT) && sl_sandbox_to_menu(u->sb))
		return close_sandbox(u);
	return f;
}

static unsigned s_wake(void *ctx)
{
	struct lui *u = ctx;
	unsigned f = on_wake(u);
	return u->sb ? f | sl_sandbox_loop()->wake(u->sb) : f;
}

static unsigned s_tick(void *ctx, double now)
{
	struct lui *u = ctx;
	return u->sb ? sl_sandbox_loop()->tick(u->sb, now) : on_tick(u, now);
}

static int s_animating(void *ctx)
{
	struct lui *u = ctx;
	return u->sb ? sl_sandbox_loop()->animating(u->sb) : animating(u);
}

static void s_layout(void *ctx)
{
	struct lui *u = ctx;
	u->sb ? sl_sandbox_loop()->layout(u->sb) : relayout(u);
}

static void s_draw(void *ctx)
{
	struct lui *u = ctx;
	u->sb ? sl_sandbox_loop()->draw(u->sb) : draw(u);
}

static const sl_loop_mode lesson_mode = {s_keys, s_help,       s_typed,     s_key,
                                         s_wake, s_tick,       s_animating, s_layout,
                                         s_draw, busy_running, NULL};

/* ---- the loop ---- */

int sl_tui_lessons(const char *path, const char *start, int fresh, const struct sl_tui_options *opt)
{
	struct lui *u = calloc(1, sizeof *u);
	if (!u) {
		fprintf(stderr, "shardlab: out of memory\n");
		return 1;
	}
	if (sl_tui_begin(&u->opt, opt,
	                 "lessons need a terminal (without one, use 'shardlab lesson "
	                 "--headless')")) {
		free(u);
		return 1;
	}
	u->presenter = u->opt.presenter;
	if (!(u->opt.fps > 0))
		u->opt.fps = SL_TUI_DEFAULT_FPS;
	sl_err err = {0};
	if (path) {
		/* Check it before taking the terminal, so errors go to a shell. */
		sl_lesson *l;
		sl_lesson_diags d;
		if (sl_lesson_load(path, &l, &d, &err)) {
			for (int k = 0; k < (d.n ? d.n : 1); k++)
				fprintf(stderr, "%s\n", d.n ? d.msg[k] : err.msg);
			free(u);
			return 2;
		}
		if (start && sl_lesson_locate(l, start, &err) < 0) {
			fprintf(stderr, "shardlab: lesson: %s\n", err.msg);
			sl_lesson_free(l);
			free(u);
			return 2;
		}
		sl_lesson_free(l);
	}
	u->m = calloc(1, sizeof *u->m);
	sl_scenario sc;
	sl_scenario_default(&sc);
	sc.gemm.m = 256; /* shown by nothing until the lesson runs its own */
	if (!u->m || sl_term_init(&err) != SL_OK) {
		fprintf(stderr, "shardlab: %s\n", u->m ? err.msg : "out of memory");
		free(u->m);
		free(u);
		return 1;
	}
	/* An empty playback, not a run: the view is off until the lesson has
	 * run something, and then plays that run's trace. */
	sl_cluster *none = sl_cluster_create(&sc.cluster, &err);
	u->sv.play =
	    none ? sl_play_create_done(&sc, NULL, none, NULL, sl_term_wake_fd(), &err) : NULL;
	sl_cluster_destroy(none);
	if (!u->sv.play || sl_term_start(u->opt.no_mouse, &err) != SL_OK) {
		sl_play_destroy(u->sv.play, 0.5);
		sl_term_done();
		fprintf(stderr, "shardlab: %s\n", err.msg[0] ? err.msg : "out of memory");
		free(u->m);
		free(u);
		return 1;
	}
	sl_theme_init(&u->th, u->opt.no_color, u->opt.ascii, u->opt.high_contrast);
	relayout(u);
	int status = 0;
	if (path) {
		if (open_lesson(u, path, start, fresh, &err)) {
			add(u, R_FAIL, 0, err.msg);
			u->ended = 1;
			status = 2;
		}
	} else {
		u->from_menu = 1;
		load_menu(u);
		/* The menu opens on the lesson to go on with; back from the
		 * sandbox, on the one chosen before. */
		u->sel = menu_sel >= 0 ? menu_sel : sl_catalog_next(u->cat, u->ncat);
		if (u->sel >= u->ncat)
			u->sel = u->ncat ? u->ncat - 1 : 0;
	}
	int quit_sig = sl_loop_run(&lesson_mode, u, u->opt.fps);
	/* A snapshot is no visit: the learner's place stays where it was. */
	if (u->vm && !u->ended && !u->job && !u->opt.snapshot)
		save(u, 0);
	if (u->opt.snapshot && sl_loop_snapshot_error()[0]) {
		fprintf(stderr, "shardlab: %s\n", sl_loop_snapshot_error());
		status = 1;
	}
	job_abandon(u); /* a run computing is cancelled, not waited for */
	menu_sel = u->sel;
	sl_term_stop();
	/* For tests: how many runs the engine started (each of a lesson's runs
	 * is one execution, whatever the screen showed of it), and when the
	 * terminal was given back (the wall clock, to time q against), and what
	 * the screen did (for a screen test's diagnosis). */
	const char *stats = getenv("SHARDLAB_TUI_STATS");
	FILE *sf = stats && *stats ? fopen(stats, "w") : NULL;
	if (sf) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		const sl_loop_counts *lc = sl_loop_counters();
		fprintf(sf,
		        "lesson_runs %d\ncluster_runs %lu\nrestored_realtime %lld.%09ld\n"
		        "run_started_realtime %lld.%09ld\nrun_shown_realtime %lld.%09ld\n"
		        "loop_draws %lu\nscreen_updates %lu\n",
		        u->nruns, sl_cluster_runs_started(), (long long)ts.tv_sec, ts.tv_nsec,
		        (long long)u->run_started.tv_sec, u->run_started.tv_nsec,
		        (long long)u->run_shown.tv_sec, u->run_shown.tv_nsec, lc->draws,
		        sl_term_shows(NULL));
		fclose(sf);
	}
	/* A quit signal ends the process by that signal now, the terminal
	 * given back: nothing is left to tear down that the end of the
	 * process does not (and no wait on a run's threads). */
	if (quit_sig)
		return sl_term_finish(quit_sig, 0, status);
	/* Quitting does not wait for a thread inside a long BLAS call (the
	 * process ends). */
	int clean = sl_sandbox_close(u->sb, 0.3) && !u->sb_orphans;
	clean = sl_play_destroy(u->sv.play, 0.3) && !u->sv.orphans && clean;
	/* A worker still in the middle of its run (a long BLAS call does not
	 * see the cancel) holds its vm: leave with _exit, as for the play. */
	if (atomic_load(&jobs_alive) > 0)
		clean = 0;
	if (clean)
		sl_lshow_free(&u->sv);
	close_lesson(u);
	free(u->cat);
	free(u->m);
	free(u);
	return sl_term_finish(quit_sig, clean, status);
}
