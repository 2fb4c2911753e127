/* SPDX-License-Identifier: MIT */
/* lesson_ui.c - the lesson menu and a lesson's screen.
 *
 * They run in the sandbox's loop (loop.c: wait, handle, tick, draw once),
 * their keys in keys.c's tables.  The vm
 * yields steps; narration and prompts go to a transcript drawn in the lesson
 * panel; a matmul run is animated by the sandbox's playback and views in the
 * part of the screen above the panel (or on a key, when the terminal is too
 * short for both).  Nothing here decides anything about the lesson: the vm
 * does, and the figures are its own. */
#include "lesson_ui.h"

#include <ctype.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "scene.h"
#include "setup.h"
#include "term.h"
#include "theme.h"

enum { F_DRAW = SL_LOOP_DRAW, F_LAYOUT = SL_LOOP_LAYOUT, F_CLEAR = SL_LOOP_CLEAR, F_QUIT = SL_LOOP_QUIT };

enum role { R_SAY, R_INFO, R_PASS, R_FAIL, R_PROMPT, R_CHOICE, R_ANSWER, R_RIGHT, R_WRONG };

#define TRANSCRIPT 300
#define PANEL_MIN 7   /* rows of the lesson panel below the scenario view */
#define PANEL_MAX 14

struct entry {
	int role;
	int indent;
	char *text;
};

struct lui {
	struct sl_tui_options opt;
	sl_theme th;
	sl_lshow sv; /* the scenario view: the playback of the lesson's last run */
	sl_scene *m;
	int rows, cols;
	sl_screen_layout lay; /* the scenario view (the top part when split) */
	int split, top_rows, show_view;
	/* the menu */
	int in_menu, from_menu, want_sandbox;
	sl_catalog_entry *cat;
	int ncat, sel;
	/* the lesson */
	sl_lesson *l;
	sl_vm *vm;
	sl_step st;
	char id[64];
	sl_progress prog;
	int base_asked, base_right;
	int waiting, hold, ended, tries;
	char input[160];
	size_t ninput;
	struct entry tr[TRANSCRIPT];
	int ntr;
	char msg[320];
	sl_loop_help help; /* over any of the screens */
};

/* The lesson chosen in the menu, kept when the menu comes back (after the
 * sandbox opened from it). */
static int menu_sel;

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
	u->tr[u->ntr++] = (struct entry){role, indent, t};
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
		while (i < n && np < 400) {
			if (s[i] == ' ') {
				space = 1;
				i++;
				continue;
			}
			size_t j = i;
			while (j < n && s[j] != ' ')
				j++;
			p[np++] = (struct piece){s + i, j - i, st, space};
			space = 0;
			i = j;
		}
	}
	attr_t emph = base | A_BOLD, code = sl_theme_role(&u->th, SL_ROLE_KEY);
	int line = 0, col = 0;
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
		if (col > 0 && col + need > w) {
			line++;
			col = 0;
			need = ww;
		}
		if (col > 0)
			col++;
		for (int k = i; k < j; k++) {
			snprintf(tmp, sizeof tmp, "%.*s", (int)p[k].n, p[k].s);
			int yy = y + line;
			if (draw && yy >= ylo && yy < yhi && col < w)
				sl_put(yy, x + col, w - col,
				       p[k].style == SL_SPAN_EMPH ? emph : p[k].style == SL_SPAN_CODE ? code : base,
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
	sl_screen_layout_compute(u->top_rows, u->cols, sl_play_devices(u->sv.play), &u->lay);
}

/* The view follows the lesson's run: the playback may have been replaced
 * (another kind of run), the screen then laid out again. */
static void show_run(struct lui *u, const sl_step *st, double now)
{
	sl_lshow_run(&u->sv, st, now);
	if (u->sv.replaced) {
		u->sv.replaced = 0;
		relayout(u);
		clearok(curscr, TRUE);
	}
	if (u->sv.msg[0]) {
		snprintf(u->msg, sizeof u->msg, "%s", u->sv.msg);
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
		snprintf(u->msg, sizeof u->msg, "progress not saved: %s", e.msg);
}

/* ---- stepping ---- */

static void draw(void *ctx);

/* The vm runs the engine on this thread: say so on screen first, since
 * nothing is drawn until it is done (a screen test waits for this to go). */
static void busy(struct lui *u, int on)
{
	if (on) {
		snprintf(u->msg, sizeof u->msg, "working...");
		draw(u);
	} else if (strcmp(u->msg, "working...") == 0) {
		u->msg[0] = 0;
	}
}

static void advance(struct lui *u, double now)
{
	busy(u, 1);
	while (!u->waiting && !u->hold && !u->ended) {
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
			break;
		case SL_STEP_RUN:
			addf(u, R_INFO, 0, "run %s", st->text);
			show_run(u, st, now);
			break;
		case SL_STEP_RESULT:
			addf(u, R_INFO, 0, "result: %s", st->text);
			break;
		case SL_STEP_OPS:
			/* The vm counts operations by end time, as the playback's
			 * steps do: replay the run from its start the first time. */
			if (!u->sv.stepped) {
				sl_play_restart(u->sv.play);
				u->sv.stepped = 1;
			}
			for (int i = 0; i < st->ops; i++)
				sl_play_step(u->sv.play, 1, now);
			addf(u, R_INFO, 0, "%s", st->text);
			u->hold = 1;
			break;
		case SL_STEP_PAUSE:
			add(u, R_PROMPT, 0, st->text[0] ? st->text : "Press Enter to go on.");
			u->hold = 1;
			save(u, 0);
			break;
		case SL_STEP_CHECK:
			addf(u, st->passed ? R_PASS : R_FAIL, 0, "check %s: %s (%s)",
			     st->passed ? "holds" : "FAILED", st->text, st->detail);
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
				snprintf(knobs + strlen(knobs), sizeof knobs - strlen(knobs), "%s%s",
				         i ? ", " : "", st->knobs[i]);
			addf(u, R_INFO, 2, "knobs: %s; goes on when %s. Type KNOB VALUE (or demo, or "
			     "skip), then Enter", knobs, st->detail);
			u->waiting = SL_STEP_EXPLORE;
			u->tries = 0;
			save(u, 0);
			break;
		}
		case SL_STEP_END: {
			int asked = st->asked + u->base_asked, right = st->right + u->base_right;
			addf(u, st->checks_failed ? R_FAIL : R_PASS, 0,
			     "The end: %d of %d question%s right; %s. Press Enter.", right, asked,
			     asked == 1 ? "" : "s",
			     st->checks_failed ? "a check FAILED" : "every check held");
			save(u, 1);
			u->ended = 1;
			break;
		}
		}
	}
	busy(u, 0);
}

static void submit(struct lui *u, double now)
{
	sl_err e = {0};
	const char *in = u->input;
	u->msg[0] = 0;
	if (u->waiting == SL_STEP_QUESTION) {
		sl_answer a;
		if (sl_vm_answer(u->vm, in, &a, &e)) {
			snprintf(u->msg, sizeof u->msg, "%s", e.msg);
			return;
		}
		addf(u, R_ANSWER, 2, "> %s", in);
		if (a.correct) /* the lesson's explanation says it is right */
			add(u, R_RIGHT, 0, a.explain[0] ? a.explain : "Right.");
		else
			addf(u, R_WRONG, 0, "The answer: %s. %s", a.expected, a.explain);
	} else if (u->waiting == SL_STEP_MENU) {
		char *end;
		long k = strtol(in, &end, 10);
		if (end == in || *end || sl_vm_choose(u->vm, (int)k - 1, &e)) {
			snprintf(u->msg, sizeof u->msg, "choose an item by its number");
			return;
		}
		addf(u, R_ANSWER, 2, "> %s", in);
	} else if (u->waiting == SL_STEP_EXPLORE) {
		if (strcmp(in, "skip") == 0) {
			sl_vm_skip(u->vm, &e);
			add(u, R_INFO, 2, "skipped");
		} else {
			int rc = strcmp(in, "demo") == 0 ? sl_vm_demo(u->vm, &e) : sl_vm_knob(u->vm, in, &e);
			if (rc) {
				snprintf(u->msg, sizeof u->msg, "%s", e.msg);
				return;
			}
			addf(u, R_ANSWER, 2, "> %s", in);
			show_run(u, &u->st, now);
			const char *detail;
			busy(u, 1);
			int met = sl_vm_explore_met(u->vm, &detail, &e);
			busy(u, 0);
			if (met < 0) {
				add(u, R_FAIL, 0, e.msg);
				u->ended = 1;
			} else {
				addf(u, R_INFO, 2, "result: %s", sl_vm_last_result(u->vm));
				addf(u, met ? R_RIGHT : R_WRONG, 2, "%s: %s", met ? "yes" : "not yet", detail);
				if (!met) {
					if (++u->tries == 3 && u->st.hint[0])
						addf(u, R_INFO, 2, "hint: %s", u->st.hint);
					u->ninput = 0;
					u->input[0] = 0;
					return;
				}
			}
		}
	}
	u->waiting = 0;
	u->ninput = 0;
	u->input[0] = 0;
	advance(u, now);
}

/* ---- opening and closing a lesson ---- */

static void close_lesson(struct lui *u)
{
	sl_vm_destroy(u->vm);
	sl_lesson_free(u->l);
	u->vm = NULL;
	u->l = NULL;
	transcript_clear(u);
}

static int open_lesson(struct lui *u, const char *path, const char *start, int fresh, sl_err *err)
{
	close_lesson(u);
	u->sv.on = u->show_view = 0;
	if (sl_lesson_load(path, &u->l, NULL, err))
		return SL_EINVAL;
	u->vm = sl_vm_create(u->l, err);
	if (!u->vm)
		return SL_ENOMEM;
	sl_progress_id(path, u->id, sizeof u->id);
	if (fresh)
		sl_progress_forget(u->id, NULL);
	sl_progress_load(u->id, &u->prog, NULL);
	u->waiting = u->hold = u->ended = 0;
	u->base_asked = u->base_right = 0;
	u->ninput = 0;
	u->input[0] = 0;
	u->msg[0] = 0;
	int pos = 0;
	if (start) {
		if ((pos = sl_lesson_locate(u->l, start, err)) < 0)
			return SL_EINVAL;
	} else if (u->prog.position > 0 && u->prog.hash == sl_lesson_hash(u->l)) {
		pos = u->prog.position;
		u->base_asked = u->prog.now_asked;
		u->base_right = u->prog.now_right;
	}
	addf(u, R_PROMPT, 0, "%s (%d minutes)", sl_lesson_title(u->l), sl_lesson_minutes(u->l));
	if (sl_lesson_about(u->l)[0])
		add(u, R_INFO, 0, sl_lesson_about(u->l));
	if (pos > 0) {
		addf(u, R_INFO, 0, "going on at line %d", sl_lesson_line_at(u->l, pos));
		if (sl_vm_start_at(u->vm, pos, err))
			return SL_EINVAL;
		/* The runs before pos ran silently: show the last one again. */
		sl_run_kind k;
		const sl_lsetup *ls = sl_vm_last_run(u->vm, &k);
		if (ls) {
			sl_step st = {.run = k, .scenario = &ls->sc, .setup = ls};
			show_run(u, &st, sl_loop_now());
		}
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
	if (!u->ended && u->vm)
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
	return u->in_menu   ? SL_MODE_MENU
	       : u->waiting ? SL_MODE_INPUT
	                    : SL_MODE_LESSON;
}

static void draw_status(struct lui *u, int y)
{
	static const sl_action menu[] = {SL_A_ROW_DOWN, SL_A_ROW_UP, SL_A_OPEN,  SL_A_FRESH,
	                                  SL_A_SANDBOX,  SL_A_HELP,   SL_A_LEAVE};
	static const sl_action input[] = {SL_A_SUBMIT, SL_A_CANCEL, SL_A_HELP, SL_A_QUIT};
	static const sl_action ended[] = {SL_A_GO_ON, SL_A_HELP, SL_A_QUIT};
	static const sl_action split[] = {SL_A_GO_ON, SL_A_PLAY,  SL_A_STEP, SL_A_BACK,
	                                  SL_A_LEAVE, SL_A_HELP,  SL_A_QUIT};
	static const sl_action shown[] = {SL_A_GO_ON, SL_A_VIEW,  SL_A_PLAY, SL_A_STEP,
	                                  SL_A_LEAVE, SL_A_HELP,  SL_A_QUIT};
	static const sl_action told[] = {SL_A_GO_ON, SL_A_LEAVE, SL_A_HELP, SL_A_QUIT};
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
	} else if (mode == SL_MODE_INPUT) {
		USE(input);
		words[1] = u->ninput ? "clear" : "back";
		keys[2] = u->ninput ? KEY_F(1) : 0; /* ? is typed now */
	} else if (u->ended) {
		USE(ended);
		words[0] = "back";
	} else if (u->split && u->sv.on) {
		USE(split);
	} else if (u->sv.on) {
		USE(shown);
	}
#undef USE
	for (size_t i = 0; i < n; i++) {
		if (acts[i] == SL_A_LEAVE && mode != SL_MODE_MENU)
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
	attr_t norm = sl_theme_role(&u->th, SL_ROLE_NORMAL), title = sl_theme_role(&u->th, SL_ROLE_TITLE);
	attr_t dim = sl_theme_role(&u->th, SL_ROLE_DIM), selr = sl_theme_role(&u->th, SL_ROLE_SELECT);
	sl_put(0, 0, u->cols, title, "shardlab  guided lessons");
	if (!u->ncat) {
		sl_put(2, 2, u->cols - 4, norm,
		       "No lessons are installed. Set SHARDLAB_LESSON_PATH to a directory of .lesson files.");
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
		snprintf(line, sizeof line, "%s %3s  %-48.48s %3d min  %s", i == u->sel ? ">" : " ", num,
		         e->title, e->minutes, state);
		sl_clear_rect((sl_rect){y, 1, 1, u->cols - 2}, a);
		sl_put(y, 2, u->cols - 4, a, line);
	}
	if (u->ncat && !u->cat[u->sel].ok)
		sl_put(u->rows - 2, 2, u->cols - 4, sl_theme_role(&u->th, SL_ROLE_FAIL),
		       u->cat[u->sel].error);
	else if (u->ncat)
		wrap(u, u->cat[u->sel].about, u->rows - 4, 2, u->cols - 4, u->rows - 4, u->rows - 1, dim, 1);
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
	/* Bottom-aligned: the newest entry just above the prompt. */
	int y = yhi;
	for (int i = u->ntr - 1; i >= 0 && y > in.y; i--) {
		const struct entry *e = &u->tr[i];
		int lines = wrap(u, e->text, 0, 0, in.w - e->indent, 0, 0, 0, 0);
		/* Paragraphs of narration stand apart. */
		int gap = e->role == R_SAY && i > 0 ? 1 : 0;
		y -= lines + gap;
		wrap(u, e->text, y + gap, in.x + e->indent, in.w - e->indent, in.y, yhi,
		     role_attr(u, e->role), 1);
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
		int split = u->split && u->sv.on, view = u->sv.on && (split || u->show_view);
		if (view) {
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
			draw_panel(u, (sl_rect){u->top_rows - 1, 0, u->rows - u->top_rows, u->cols}, &v);
		else if (!view)
			draw_panel(u, (sl_rect){1, 0, u->rows - 2, u->cols}, &v);
		draw_status(u, u->rows - 1);
	}
	wnoutrefresh(stdscr);
	doupdate();
}

/* ---- keys ---- */

static unsigned open_chosen(struct lui *u, int fresh)
{
	sl_err err = {0};
	if (!u->ncat)
		return 0;
	if (!u->cat[u->sel].ok) {
		snprintf(u->msg, sizeof u->msg, "this lesson does not load");
	} else if (open_lesson(u, u->cat[u->sel].path, NULL, fresh, &err)) {
		close_lesson(u);
		u->in_menu = 1;
		snprintf(u->msg, sizeof u->msg, "%s", err.msg);
	}
	return F_DRAW | F_LAYOUT;
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
			u->msg[0] = 0;
		}
		return F_DRAW;
	}
	if (ac == SL_A_NONE)
		return 0;
	if (mode != SL_MODE_INPUT)
		u->msg[0] = 0;
	switch (ac) {
	case SL_A_CONTRAST:
		if (u->th.color)
			sl_theme_contrast(&u->th, !u->th.high_contrast);
		return F_DRAW | F_CLEAR;
	case SL_A_LEAVE:
	case SL_A_CANCEL:
		if (mode == SL_MODE_MENU)
			return F_QUIT;
		if (ac == SL_A_CANCEL && u->ninput) {
			u->ninput = 0;
			u->input[0] = 0;
			return F_DRAW;
		}
		return leave_lesson(u);
	case SL_A_ROW_DOWN:
		if (u->sel + 1 < u->ncat)
			u->sel++;
		return F_DRAW;
	case SL_A_ROW_UP:
		if (u->sel > 0)
			u->sel--;
		return F_DRAW;
	case SL_A_OPEN:
	case SL_A_FRESH:
		return open_chosen(u, ac == SL_A_FRESH);
	case SL_A_SANDBOX:
		u->want_sandbox = 1;
		return F_QUIT;
	case SL_A_SUBMIT:
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
		u->hold = 0;
		advance(u, now);
		return F_DRAW;
	case SL_A_VIEW:
		if (!u->split && u->sv.on)
			u->show_view = !u->show_view;
		return F_DRAW;
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
	default:
		return 0;
	}
}

static unsigned on_wake(void *ctx)
{
	return sl_play_collect(((struct lui *)ctx)->sv.play) ? F_DRAW : 0;
}

static unsigned on_tick(void *ctx, double now)
{
	return sl_play_tick(((struct lui *)ctx)->sv.play, now) & SL_PLAY_CHANGED ? F_DRAW : 0;
}

static int animating(void *ctx)
{
	return sl_play_animating(((struct lui *)ctx)->sv.play);
}

static sl_loop_help *help_of(void *ctx)
{
	return &((struct lui *)ctx)->help;
}

static size_t typed(void *ctx)
{
	return ((struct lui *)ctx)->ninput;
}

static const sl_loop_mode lesson_mode = {keymode, help_of,   typed,    on_key, on_wake,
                                         on_tick, animating, relayout, draw};

/* ---- the loop ---- */

int sl_tui_lessons(const char *path, const char *start, int fresh, const struct sl_tui_options *opt)
{
	struct lui *u = calloc(1, sizeof *u);
	if (!u) {
		fprintf(stderr, "shardlab: out of memory\n");
		return 1;
	}
	sl_tui_options_default(&u->opt);
	if (opt)
		u->opt = *opt;
	if (!(u->opt.fps > 0))
		u->opt.fps = SL_TUI_DEFAULT_FPS;
	setlocale(LC_ALL, "");
	/* The locale is for the terminal's characters; numbers are printed
	 * (and parsed) with a decimal point whatever the locale says. */
	setlocale(LC_NUMERIC, "C");
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "shardlab: lessons need a terminal (without one, use 'shardlab lesson "
		                "--headless')\n");
		free(u);
		return 1;
	}
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
	sc.gemm.m = 256; /* a small first plan: the lesson sets its own */
	if (!u->m || sl_term_init(&err) != SL_OK) {
		fprintf(stderr, "shardlab: %s\n", u->m ? err.msg : "out of memory");
		free(u->m);
		free(u);
		return 1;
	}
	u->sv.play = sl_play_create(&sc, sl_term_wake_fd(), &err);
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
		u->sel = menu_sel;
		load_menu(u);
	}
	int quit_sig = sl_loop_run(&lesson_mode, u, u->opt.fps);
	if (u->vm && !u->ended)
		save(u, 0);
	if (u->want_sandbox && !quit_sig)
		status = SL_TUI_LESSONS_SANDBOX;
	menu_sel = u->sel;
	sl_term_stop();
	/* Quitting does not wait for a thread inside a long BLAS call (the
	 * process ends); opening the sandbox goes on in this process, so it
	 * waits for them (a slow machine or a sanitizer build takes seconds). */
	double wait = status == SL_TUI_LESSONS_SANDBOX ? 30.0 : 0.3;
	int clean = sl_play_destroy(u->sv.play, wait) && !u->sv.orphans;
	if (clean)
		sl_lshow_free_ckpt(&u->sv);
	close_lesson(u);
	free(u->cat);
	free(u->m);
	free(u);
	return sl_term_finish(quit_sig, clean, status);
}
