/* SPDX-License-Identifier: MIT */
/* sandbox.c - the sandbox: its views, its keys' handlers, and its place in the
 * one loop (loop.c: wait, handle, tick, draw once).
 *
 * Handlers change state and return what changed (flags); the loop draws at
 * most once per pass from a scene built for that pass. */
#include "tui.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "draw.h"
#include "keys.h"
#include "layout.h"
#include "loop.h"
#include "scene.h"
#include "play.h"
#include "plantable.h"
#include "hwfile.h"
#include "preset.h"
#include "sweep.h"
#include "term.h"
#include "theme.h"
#include "train.h"
#include "units.h"

enum {
	F_DRAW = SL_LOOP_DRAW,
	F_LAYOUT = SL_LOOP_LAYOUT,
	F_CLEAR = SL_LOOP_CLEAR,
	F_QUIT = SL_LOOP_QUIT,
};

struct sl_sandbox {
	struct sl_tui_options opt;
	sl_theme th;
	sl_play *play;
	sl_sweep *sweep;
	sl_plantable *pv;
	int orphans; /* a replaced run's thread was still computing: leave with _exit */
	int to_menu; /* q in a sandbox opened from the lesson menu */
	sl_screen_layout lay;
	sl_scene *m;
	sl_selection sel;
	int knob_inter;
	sl_keymode mode; /* the view shown (under the help, when open) */
	sl_loop_help help;
	int plot_kind;
	char msg[200];
	FILE *stats; /* SHARDLAB_TUI_STATS: timings for the benchmark */
	double t_start;
	long frames;
};

void sl_tui_options_default(struct sl_tui_options *o)
{
	memset(o, 0, sizeof *o);
	o->fps = SL_TUI_DEFAULT_FPS;
}

/* ---- the scene for this tick ---- */

static void build_scene(struct sl_sandbox *a)
{
	sl_scene_build_play(a->play, a->m);
}

static sl_view make_view(const struct sl_sandbox *a)
{
	const sl_scenario *sc = sl_play_scenario(a->play);
	sl_view v = {
	    .th = &a->th,
	    .m = a->m,
	    .sc = sc,
	    .lay = &a->lay,
	    .sel = a->sel,
	    .knob_inter = a->knob_inter,
	    .multi_node = sc->cluster.devices_per_node > 0 &&
	                  sc->cluster.devices_per_node < sl_play_devices(a->play),
	    .slowdown = sl_play_slowdown(a->play),
	    .auto_speed = sl_play_auto(a->play),
	    .playing = sl_play_playing(a->play),
	    .planning = sl_play_planning(a->play),
	    .stale = sl_play_stale(a->play),
	    .live = sl_play_live_started(a->play),
	    .help_scroll = a->help.scroll,
	    .plot_kind = a->plot_kind,
	    .sweep = a->sweep,
	    .plan = a->pv,
	    .msg = a->msg,
	    .mode = a->help.open ? SL_MODE_HELP : a->mode,
	    .help_of = a->help.of,
	    .from_menu = a->opt.from_menu,
	};
	return v;
}

/* Seconds since this process was started (exec), from its start time in
 * clock ticks since boot; -1 if unknown.  For the benchmark. */
static double since_exec(void)
{
	FILE *f = fopen("/proc/self/stat", "r");
	if (!f)
		return -1;
	char buf[1024];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	/* Field 22, counted after the command name's closing parenthesis. */
	char *p = strrchr(buf, ')');
	unsigned long long start = 0;
	for (int field = 2; p && *p; p++)
		if (*p == ' ' && ++field == 22) {
			start = strtoull(p + 1, NULL, 10);
			break;
		}
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);
	if (!start || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - (double)start / (double)hz;
}

static void draw(void *ctx)
{
	struct sl_sandbox *a = ctx;
	a->help.rows = a->lay.r[SL_PANEL_BODY].h;
	a->help.cols = a->lay.r[SL_PANEL_BODY].w;
	build_scene(a);
	sl_view v = make_view(a);
	const sl_screen_layout *L = &a->lay;
	/* The high-contrast theme paints the whole screen, not only text. */
	bkgdset(' ' | sl_theme_role(&a->th, SL_ROLE_NORMAL));
	erase();
	if (L->too_small) {
		sl_draw_too_small(&v, L->rows, L->cols);
	} else {
		sl_draw_title(&v, L->r[SL_PANEL_TITLE]);
		if (a->help.open) {
			sl_draw_help(&v, L->r[SL_PANEL_BODY]);
		} else if (a->mode == SL_MODE_PLOT) {
			sl_draw_plot(&v, L->r[SL_PANEL_BODY]);
		} else if (a->mode == SL_MODE_PLAN) {
			sl_draw_plan(&v, L->r[SL_PANEL_BODY]);
		} else {
			sl_draw_devices(&v, L->r[SL_PANEL_DEVICES]);
			sl_draw_links(&v, L->r[SL_PANEL_LINKS]);
			sl_draw_matrices(&v, L->r[SL_PANEL_MATRICES]);
			sl_draw_numbers(&v, L->r[SL_PANEL_NUMBERS]);
			sl_draw_timeline(&v, L->r[SL_PANEL_TIMELINE]);
		}
		sl_draw_sentence(&v, L->r[SL_PANEL_SENTENCE]);
		sl_draw_status(&v, L->r[SL_PANEL_STATUS]);
	}
	sl_term_show();
	if (a->frames++ == 0 && a->stats) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		fprintf(a->stats, "first_frame_realtime %.6f\nfirst_frame_after_main_s %.6f\n",
		        (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9, sl_loop_now() - a->t_start);
		double since = since_exec();
		if (since >= 0)
			fprintf(a->stats, "first_frame_since_exec_s %.3f\n", since);
		fflush(a->stats);
	}
}

static void relayout(void *ctx)
{
	struct sl_sandbox *a = ctx;
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	sl_screen_layout_compute(rows, cols, sl_play_devices(a->play), &a->lay);
}

/* ---- scenario changes ---- */

static int host_fits(const sl_scenario *sc, char *why, size_t n)
{
	double m = sc->gemm.m, k = sc->gemm.k, nn = sc->gemm.n;
	int t = sc->gemm.split == SL_SPLIT_SINGLE ? 1 : sc->cluster.devices;
	/* The host's matrices and reference, and every device's buffers; the
	 * plan and the live run may hold them at once. */
	double per_dev = sc->gemm.split == SL_SPLIT_ROW ? m * k / t + k * nn / t + m * nn
	                                                : m * k + k * nn / t + m * nn;
	double bytes = 2 * 4 * (m * k + k * nn + 2 * m * nn + t * per_dev);
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || psize <= 0)
		return 1;
	double limit = (double)pages * (double)psize / 2;
	if (bytes <= limit)
		return 1;
	char a[32], b[32];
	snprintf(why, n, "that would take %s of host memory (limit %s)",
	         sl_fmt_bytes(bytes, a, sizeof a), sl_fmt_bytes(limit, b, sizeof b));
	return 0;
}

static int scenario_ok(const sl_scenario *sc, char *why, size_t n)
{
	sl_err err = {0};
	if (sl_cluster_config_check(&sc->cluster, &err) == SL_OK &&
	    sl_gemm_check(&sc->gemm, sc->gemm.split == SL_SPLIT_SINGLE ? 1 : sc->cluster.devices,
	                  &err) == SL_OK)
		return host_fits(sc, why, n);
	snprintf(why, n, "%s", err.msg);
	return 0;
}

static unsigned rerun(struct sl_sandbox *a, const sl_scenario *sc, const char *what)
{
	char why[160];
	if (sl_play_workload(a->play)->kind != SL_WL_PRODUCT) {
		snprintf(a->msg, sizeof a->msg,
		         "a training layout: P plans its model on these devices and opens another");
		return F_DRAW;
	}
	if (!scenario_ok(sc, why, sizeof why)) {
		snprintf(a->msg, sizeof a->msg, "cannot: %s", why);
		return F_DRAW;
	}
	sl_play_set_scenario(a->play, sc);
	snprintf(a->msg, sizeof a->msg, "%s", what);
	if (a->sel.kind == SL_SEL_DEVICE && a->sel.dev >= sl_play_devices(a->play))
		a->sel.kind = SL_SEL_NONE;
	if (a->sel.kind == SL_SEL_LINK)
		a->sel.kind = SL_SEL_NONE;
	return F_DRAW | F_LAYOUT;
}

static unsigned change_devices(struct sl_sandbox *a, int dir)
{
	sl_scenario sc = *sl_play_scenario(a->play);
	if (sc.gemm.split == SL_SPLIT_SINGLE) {
		snprintf(a->msg, sizeof a->msg,
		         "the single strategy has one device: press s first");
		return F_DRAW;
	}
	char why[120] = "";
	for (int n = sc.cluster.devices + dir; n >= 1 && n <= 16; n += dir) {
		sl_scenario t = sc;
		t.cluster.devices = n;
		if (scenario_ok(&t, why, sizeof why)) {
			char msg[64];
			snprintf(msg, sizeof msg, "%d device%s", n, n == 1 ? "" : "s");
			return rerun(a, &t, msg);
		}
	}
	snprintf(a->msg, sizeof a->msg, "no valid device count %s %d%s%s",
	         dir > 0 ? "above" : "below", sc.cluster.devices, why[0] ? ": " : "", why);
	return F_DRAW;
}

static unsigned next_preset(struct sl_sandbox *a)
{
	sl_scenario sc = *sl_play_scenario(a->play);
	/* Every preset --list-presets shows, the user's own too. */
	const sl_preset **ps = NULL;
	int n = 0;
	sl_err err = {0};
	/* Files that cannot be read are left out: the key cycles through the
	 * presets that are fine (--list-presets names the others). */
	if (sl_hw_list(&ps, &n, NULL, NULL, &err) != SL_OK || n == 0) {
		snprintf(a->msg, sizeof a->msg, "%.199s",
			 err.code ? err.msg : "no preset can be read (see shardlab --list-presets)");
		free(ps);
		return F_DRAW;
	}
	const sl_preset *next = ps[0];
	for (int i = 0; i < n; i++)
		if (strcmp(ps[i]->name, sc.preset) == 0)
			next = ps[(i + 1) % n];
	free(ps);
	sl_preset_apply(next, &sc.cluster);
	snprintf(sc.preset, sizeof sc.preset, "%s", next->name);
	char msg[160];
	snprintf(msg, sizeof msg, "preset %s: %s", next->name, next->title);
	return rerun(a, &sc, msg);
}

static unsigned scale_size(struct sl_sandbox *a, int up)
{
	sl_scenario sc = *sl_play_scenario(a->play);
	int *d[3] = {&sc.gemm.m, &sc.gemm.k, &sc.gemm.n};
	for (int i = 0; i < 3; i++) {
		*d[i] = up ? *d[i] * 2 : *d[i] / 2;
		if (*d[i] < 1)
			*d[i] = 1;
	}
	char msg[64];
	snprintf(msg, sizeof msg, "m=%d k=%d n=%d", sc.gemm.m, sc.gemm.k, sc.gemm.n);
	return rerun(a, &sc, msg);
}

/* ---- knobs ---- */

static double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static double turn_latency(double lat, double f)
{
	if (f > 1)
		return lat <= 0 ? 1e-6 : clampd(lat * f, 0, 10);
	return lat * f < 1e-9 ? 0 : lat * f;
}

static unsigned knob(struct sl_sandbox *a, double fb, double fl)
{
	char was[32], now[32];
	const sl_scenario *sc = sl_play_scenario(a->play);
	if (a->sel.kind == SL_SEL_LINK) {
		sl_link_spec s = sl_play_link(a->play, a->sel.src, a->sel.dst);
		double bw = clampd(s.bandwidth * fb, 1e3, 1e15), lat = turn_latency(s.latency, fl);
		sl_play_set_link(a->play, a->sel.src, a->sel.dst, bw, lat);
		if (fb != 1)
			snprintf(a->msg, sizeof a->msg, "link %d%s%d: %s %s %s", a->sel.src,
			         a->th.g->arrow, a->sel.dst,
			         sl_fmt_rate(s.bandwidth, was, sizeof was), a->th.g->arrow,
			         sl_fmt_rate(bw, now, sizeof now));
		else
			snprintf(a->msg, sizeof a->msg, "link %d%s%d latency: %s %s %s", a->sel.src,
			         a->th.g->arrow, a->sel.dst,
			         sl_fmt_time(s.latency, was, sizeof was), a->th.g->arrow,
			         sl_fmt_time(lat, now, sizeof now));
		return F_DRAW;
	}
	const sl_link_spec *s = a->knob_inter ? &sc->cluster.inter : &sc->cluster.intra;
	double bw = clampd(s->bandwidth * fb, 1e3, 1e15), lat = turn_latency(s->latency, fl);
	double old_bw = s->bandwidth, old_lat = s->latency;
	sl_play_set_class(a->play, a->knob_inter, bw, lat);
	const char *cls = a->knob_inter ? "inter-node" : "intra-node";
	if (fb != 1)
		snprintf(a->msg, sizeof a->msg, "%s bandwidth %s %s %s", cls,
		         sl_fmt_rate(old_bw, was, sizeof was), a->th.g->arrow,
		         sl_fmt_rate(bw, now, sizeof now));
	else
		snprintf(a->msg, sizeof a->msg, "%s latency %s %s %s", cls,
		         sl_fmt_time(old_lat, was, sizeof was), a->th.g->arrow,
		         sl_fmt_time(lat, now, sizeof now));
	return F_DRAW;
}

/* ---- speed ---- */

/* The 1-2-5 values around s. */
static double speed_step(double s, int slower)
{
	double best = slower ? 1e300 : 0;
	for (double p = 1; p <= 1e6; p *= 10)
		for (int i = 0; i < 3; i++) {
			double v = p * (i == 0 ? 1 : i == 1 ? 2 : 5);
			if (v > 1e6)
				continue;
			if (slower && v > s * 1.0001 && v < best)
				best = v;
			if (!slower && v < s * 0.9999 && v > best)
				best = v;
		}
	if (slower && best > 1e300 / 2)
		return s;
	if (!slower && best <= 0)
		return s;
	return best;
}

static void speed_msg(struct sl_sandbox *a)
{
	double s = sl_play_slowdown(a->play);
	if (s <= 1)
		snprintf(a->msg, sizeof a->msg, "speed: real time");
	else
		snprintf(a->msg, sizeof a->msg, "speed: %.3g%s times slower than real time%s",
		         s >= 1e6 ? s / 1e6 : s >= 1e4 ? s / 1e3 : s,
		         s >= 1e6 ? " million" : s >= 1e4 ? " thousand" : "",
		         sl_play_auto(a->play) ? " (auto)" : "");
}

/* ---- selection ---- */

static void select_step(struct sl_sandbox *a, int dir)
{
	const sl_scene *m = a->m;
	int nd = m->ndev, nl = m->nlinks, total = nd + nl + 1;
	int cur = 0; /* 0 none, 1..nd devices, then links */
	if (a->sel.kind == SL_SEL_DEVICE)
		cur = 1 + a->sel.dev;
	else if (a->sel.kind == SL_SEL_LINK)
		for (int i = 0; i < nl; i++)
			if (m->link[i].src == a->sel.src && m->link[i].dst == a->sel.dst)
				cur = 1 + nd + i;
	cur = ((cur + dir) % total + total) % total;
	if (cur == 0) {
		a->sel.kind = SL_SEL_NONE;
	} else if (cur <= nd) {
		a->sel.kind = SL_SEL_DEVICE;
		a->sel.dev = cur - 1;
	} else {
		a->sel.kind = SL_SEL_LINK;
		a->sel.src = m->link[cur - 1 - nd].src;
		a->sel.dst = m->link[cur - 1 - nd].dst;
	}
}

static int in_rect(sl_rect r, int y, int x)
{
	return y >= r.y && y < r.y + r.h && x >= r.x && x < r.x + r.w;
}

static unsigned click(struct sl_sandbox *a)
{
	MEVENT ev;
	if (getmouse(&ev) != OK || a->mode != SL_MODE_MAIN || a->lay.too_small)
		return 0;
	sl_view v = make_view(a);
	const sl_screen_layout *L = &a->lay;
	if (in_rect(L->r[SL_PANEL_DEVICES], ev.y, ev.x)) {
		int d = sl_devices_row_item(&v, L->r[SL_PANEL_DEVICES], ev.y);
		if (d >= 0) {
			a->sel.kind = SL_SEL_DEVICE;
			a->sel.dev = d;
		}
	} else if (in_rect(L->r[SL_PANEL_LINKS], ev.y, ev.x)) {
		int i = sl_links_row_item(&v, L->r[SL_PANEL_LINKS], ev.y);
		if (i >= 0) {
			a->sel.kind = SL_SEL_LINK;
			a->sel.src = a->m->link[i].src;
			a->sel.dst = a->m->link[i].dst;
		}
	}
	return F_DRAW;
}

/* ---- the plot ---- */

static void plot_sweep(struct sl_sandbox *a)
{
	sl_sweep_start(a->sweep, sl_play_scenario(a->play),
	               a->plot_kind ? SL_SWEEP_DEVICES : SL_SWEEP_BANDWIDTH, a->knob_inter);
}

/* ---- the plan ---- */

/* Plan the training model on the devices and link classes shown (as the
 * knobs left them). */
static unsigned open_plan(struct sl_sandbox *a)
{
	const sl_workload *tr = sl_play_workload(a->play);
	if (tr->kind != SL_WL_TRAIN) {
		snprintf(a->msg, sizeof a->msg,
		         "the plan is for a training model: run sandbox with model or layout "
		         "options (e.g. --tp=2 --pp=2)");
		return F_DRAW;
	}
	sl_err err = {0};
	if (sl_plantable_start(a->pv, &tr->m, &sl_play_scenario(a->play)->cluster, tr->l.attention,
	                      tr->l.recompute, &err)) {
		snprintf(a->msg, sizeof a->msg, "cannot plan: %.180s", err.msg);
		return F_DRAW;
	}
	a->mode = SL_MODE_PLAN;
	return F_DRAW;
}

/* Would a full run of tr hold on this host (the live run and the one
 * replaced, at most, at once)?  A timing-only run holds no values. */
static int train_host_fits(const sl_scenario *sc, const sl_workload *tr, char *why, size_t n)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	if (sc->cluster.timing_only || pages <= 0 || psize <= 0)
		return 1;
	double bytes = 2 * (double)sl_train_host_bytes(&tr->m, &tr->l);
	double limit = (double)pages * (double)psize / 2;
	if (bytes <= limit)
		return 1;
	char b1[32], b2[32];
	snprintf(why, n, "it would take %s of host memory (limit %s): try sandbox --dry-run",
	         sl_fmt_bytes(bytes, b1, sizeof b1), sl_fmt_bytes(limit, b2, sizeof b2));
	return 0;
}

/* The selected layout in the main view: one training step of it, on the
 * same devices. */
static unsigned open_layout(struct sl_sandbox *a)
{
	const sl_plan *pl = sl_plantable_plan(a->pv);
	int i = sl_pt_selected(a->pv);
	const sl_plan_row *row = pl ? sl_pt_row(a->pv, i) : NULL;
	const sl_workload *cur = sl_play_workload(a->play);
	if (!row || cur->kind != SL_WL_TRAIN) {
		snprintf(a->msg, sizeof a->msg, "no layout to open yet");
		return F_DRAW;
	}
	sl_workload tr = *cur;
	tr.l = row->layout;
	sl_scenario sc = *sl_play_scenario(a->play);
	char why[160];
	if (!train_host_fits(&sc, &tr, why, sizeof why)) {
		snprintf(a->msg, sizeof a->msg, "cannot open: %s", why);
		return F_DRAW;
	}
	sl_err err = {0};
	sl_play *np = sl_play_create_workload(&sc, &tr, sl_term_wake_fd(), &err);
	if (!np) {
		snprintf(a->msg, sizeof a->msg, "cannot open: %.180s", err.msg);
		return F_DRAW;
	}
	if (!sl_play_destroy(a->play, 2.0))
		a->orphans = 1;
	a->play = np;
	a->sel.kind = SL_SEL_NONE;
	a->mode = SL_MODE_MAIN;
	char nm[96];
	snprintf(a->msg, sizeof a->msg, "opened rank %d: %s", sl_pt_rank(a->pv, i),
	         sl_plan_layout_name(&tr.l, nm, sizeof nm));
	return F_DRAW | F_LAYOUT | F_CLEAR;
}

/* ---- actions ---- */

static unsigned act(struct sl_sandbox *a, sl_action ac, double now)
{
	sl_play *p = a->play;
	sl_scenario sc = *sl_play_scenario(p);
	unsigned f = F_DRAW;
	switch (ac) {
	case SL_A_NONE:
		return 0;
	case SL_A_QUIT:
		return F_QUIT;
	case SL_A_LEAVE: /* from the menu: back to it (F10 quits) */
		a->to_menu = a->opt.from_menu;
		return F_QUIT;
	case SL_A_CLOSE:
		if (a->mode == SL_MODE_PLOT)
			sl_sweep_stop(a->sweep);
		a->mode = SL_MODE_MAIN;
		return F_DRAW;
	case SL_A_CONTRAST:
		if (!a->th.color) {
			snprintf(a->msg, sizeof a->msg,
			         "monochrome: contrast is already the terminal's own");
			return F_DRAW;
		}
		sl_theme_contrast(&a->th, !a->th.high_contrast);
		snprintf(a->msg, sizeof a->msg, "high contrast %s",
		         a->th.high_contrast ? "on" : "off");
		return F_DRAW | F_CLEAR;
	case SL_A_REDRAW:
		return F_DRAW | F_CLEAR;
	case SL_A_PLAY:
		sl_play_toggle(p, now);
		break;
	case SL_A_STEP:
		sl_play_step(p, 1, now);
		break;
	case SL_A_BACK:
		sl_play_step(p, 0, now);
		break;
	case SL_A_RESTART:
		sl_play_restart(p);
		snprintf(a->msg, sizeof a->msg, "restarted");
		break;
	case SL_A_END:
		sl_play_to_end(p, now);
		break;
	case SL_A_SLOWER:
	case SL_A_FASTER:
		sl_play_set_slowdown(p, speed_step(sl_play_slowdown(p), ac == SL_A_SLOWER), now);
		speed_msg(a);
		break;
	case SL_A_AUTOSPEED:
		sl_play_auto_speed(p, now);
		speed_msg(a);
		break;
	case SL_A_BW_DOWN:
		f = knob(a, 0.5, 1);
		break;
	case SL_A_BW_UP:
		f = knob(a, 2, 1);
		break;
	case SL_A_LAT_DOWN:
		f = knob(a, 1, 0.5);
		break;
	case SL_A_LAT_UP:
		f = knob(a, 1, 2);
		break;
	case SL_A_KNOB_CLASS:
		a->knob_inter = !a->knob_inter;
		if (a->sel.kind == SL_SEL_LINK)
			a->sel.kind = SL_SEL_NONE;
		snprintf(a->msg, sizeof a->msg, "knobs turn %s-node links%s",
		         a->knob_inter ? "inter" : "intra",
		         sc.cluster.devices_per_node > 0 &&
		                 sc.cluster.devices_per_node < sc.cluster.devices
		             ? ""
		             : " (one node: no inter-node link is used)");
		break;
	case SL_A_SEL_NEXT:
	case SL_A_SEL_PREV:
		select_step(a, ac == SL_A_SEL_NEXT ? 1 : -1);
		break;
	case SL_A_SEL_CLICK:
		f = click(a);
		break;
	case SL_A_SEL_NONE:
		a->sel.kind = SL_SEL_NONE;
		break;
	case SL_A_PRESET:
		f = next_preset(a);
		break;
	case SL_A_TOPOLOGY:
		sc.cluster.topology =
		    sc.cluster.topology == SL_TOPO_RING ? SL_TOPO_FULL : SL_TOPO_RING;
		if (sc.cluster.topology == SL_TOPO_RING)
			sc.cluster.devices_per_node = 0;
		f = rerun(a, &sc,
		          sc.cluster.topology == SL_TOPO_RING ? "ring topology (one node)"
		                                              : "full topology");
		break;
	case SL_A_DEV_DOWN:
	case SL_A_DEV_UP:
		f = change_devices(a, ac == SL_A_DEV_UP ? 1 : -1);
		break;
	case SL_A_STRATEGY:
		sc.gemm.split = (sl_split)((sc.gemm.split + 1) % SL_SPLIT_N);
		if (sc.gemm.split == SL_SPLIT_SINGLE)
			sc.gemm.split = SL_SPLIT_SINGLE;
		f = rerun(a, &sc, sl_split_name(sc.gemm.split));
		break;
	case SL_A_ALGO:
		sc.gemm.algo = sc.gemm.algo == SL_ALGO_RING ? SL_ALGO_TREE : SL_ALGO_RING;
		f = rerun(a, &sc, sl_algo_name(sc.gemm.algo));
		break;
	case SL_A_SIZE_DOWN:
	case SL_A_SIZE_UP:
		f = scale_size(a, ac == SL_A_SIZE_UP);
		break;
	case SL_A_PLOT:
		if (sl_play_workload(p)->kind != SL_WL_PRODUCT) { /* the sweeps run the product */
			snprintf(a->msg, sizeof a->msg, "the plots are for the sharded product");
			break;
		}
		if (a->mode == SL_MODE_MAIN) {
			a->mode = SL_MODE_PLOT;
			a->plot_kind = 0;
		} else if (a->plot_kind == 0) {
			a->plot_kind = 1;
		} else {
			a->mode = SL_MODE_MAIN;
			sl_sweep_stop(a->sweep);
		}
		break;
	case SL_A_PLAN:
		if (a->mode == SL_MODE_PLAN)
			a->mode = SL_MODE_MAIN;
		else
			f = open_plan(a);
		break;
	case SL_A_ROW_UP:
	case SL_A_ROW_DOWN:
		sl_pt_move(a->pv, ac == SL_A_ROW_DOWN ? 1 : -1);
		break;
	case SL_A_PAGE_UP:
	case SL_A_PAGE_DOWN: {
		int page = a->lay.r[SL_PANEL_BODY].h - 10;
		page = page < 1 ? 1 : page;
		sl_pt_move(a->pv, ac == SL_A_PAGE_DOWN ? page : -page);
		break;
	}
	case SL_A_SORT:
	case SL_A_SORT_REVERSE: {
		int rev;
		sl_pt_col by = sl_pt_sorted_by(a->pv, &rev);
		if (ac == SL_A_SORT)
			sl_pt_sort(a->pv, (sl_pt_col)((by + 1) % SL_PT_NCOLS), 0);
		else
			sl_pt_sort(a->pv, by, !rev);
		by = sl_pt_sorted_by(a->pv, &rev);
		snprintf(a->msg, sizeof a->msg, "sorted by %s, %s first", sl_pt_col_name(by),
		         rev ? "worst" : "best");
		break;
	}
	case SL_A_OPEN:
		f = open_layout(a);
		break;
	default: /* the help's (the loop's) and the lessons' */
		break;
	}
	if (a->mode == SL_MODE_PLOT)
		plot_sweep(a);
	return f;
}

/* ---- in the loop ---- */

static sl_keymode keymode(void *ctx)
{
	return ((struct sl_sandbox *)ctx)->mode;
}

static sl_loop_help *help_of(void *ctx)
{
	return &((struct sl_sandbox *)ctx)->help;
}

static unsigned on_key(void *ctx, int ch, sl_action ac, double now)
{
	struct sl_sandbox *a = ctx;
	(void)ch;
	a->msg[0] = 0;
	if (a->lay.too_small && ac != SL_A_LEAVE)
		return F_DRAW;
	return act(a, ac, now) | F_DRAW;
}

static unsigned on_wake(void *ctx)
{
	struct sl_sandbox *a = ctx;
	unsigned f = 0;
	if (sl_play_collect(a->play))
		f |= F_DRAW;
	if (sl_sweep_collect(a->sweep) && a->mode == SL_MODE_PLOT)
		f |= F_DRAW;
	if (sl_plantable_collect(a->pv) && a->mode == SL_MODE_PLAN)
		f |= F_DRAW;
	return f;
}

static unsigned on_tick(void *ctx, double now)
{
	struct sl_sandbox *a = ctx;
	return sl_play_tick(a->play, now) & SL_PLAY_CHANGED ? F_DRAW : 0;
}

static int animating(void *ctx)
{
	return sl_play_animating(((struct sl_sandbox *)ctx)->play);
}

static const sl_loop_mode sandbox_mode = {keymode,  help_of,   NULL,     on_key, on_wake,
                                          on_tick, animating, relayout, draw,
                                          NULL};

/* ---- start and finish ---- */

static int check_scenario(const sl_scenario *sc)
{
	char why[256];
	if (scenario_ok(sc, why, sizeof why))
		return 0;
	fprintf(stderr, "shardlab: sandbox: %s\n", why);
	return 2; /* the scenario is the user's */
}

/* The trace of the run shown (the plan, or the live run that replaced it). */
static int write_trace(sl_play *p, const char *path)
{
	const sl_run_info *r = sl_play_result(p);
	if (!r || !r->done || r->rc != SL_OK) {
		fprintf(stderr, "shardlab: sandbox: no complete run to write to %s\n", path);
		return 1;
	}
	FILE *f = fopen(path, "w");
	sl_err err = {0};
	if (!f || sl_trace_write_chrome(&r->snap, f, &err) != SL_OK || fclose(f) != 0) {
		fprintf(stderr, "shardlab: sandbox: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

/* The sandbox on sc, in a terminal already started (its views, its
 * playback, sweeps and planner): for sl_tui_main and for the lesson menu,
 * which runs it as one of its screens in the same loop. */
sl_sandbox *sl_sandbox_open(const sl_scenario *sc, const struct sl_tui_options *opt, sl_err *err)
{
	struct sl_sandbox *a = calloc(1, sizeof *a);
	if (!a) {
		sl_fail(err, SL_ENOMEM, "out of memory");
		return NULL;
	}
	a->t_start = sl_loop_now();
	sl_tui_options_default(&a->opt);
	if (opt)
		a->opt = *opt;
	if (!(a->opt.fps > 0))
		a->opt.fps = SL_TUI_DEFAULT_FPS;
	a->m = calloc(1, sizeof *a->m);
	a->play = a->m ? sl_play_create_workload(sc, a->opt.workload, sl_term_wake_fd(), err) : NULL;
	a->sweep = a->play ? sl_sweep_create(sl_term_wake_fd()) : NULL;
	a->pv = a->sweep ? sl_plantable_create(sl_term_wake_fd()) : NULL;
	if (!a->pv) {
		if (!err->msg[0])
			sl_fail(err, SL_ENOMEM, "out of memory");
		sl_sweep_destroy(a->sweep, 0);
		sl_play_destroy(a->play, 0.5);
		free(a->m);
		free(a);
		return NULL;
	}
	sl_theme_init(&a->th, a->opt.no_color, a->opt.ascii, a->opt.high_contrast);
	a->mode = SL_MODE_MAIN;
	relayout(a);
	if (a->opt.play)
		sl_play_toggle(a->play, sl_loop_now());
	return a;
}

const sl_loop_mode *sl_sandbox_loop(void)
{
	return &sandbox_mode;
}

int sl_sandbox_to_menu(const sl_sandbox *a)
{
	return a->to_menu;
}

/* Threads wake at once when cancelled, unless inside a BLAS call (a large
 * plan's product): wait up to wait seconds for them.  Returns whether they
 * all went (else the process should leave with _exit). */
int sl_sandbox_close(sl_sandbox *a, double wait)
{
	if (!a)
		return 1;
	sl_plantable_destroy(a->pv); /* stops between layouts */
	int clean = sl_sweep_destroy(a->sweep, wait);
	clean = sl_play_destroy(a->play, clean ? wait : 0) && clean && !a->orphans;
	if (a->stats) {
		fprintf(a->stats, "frames %ld\n", a->frames);
		fclose(a->stats);
	}
	free(a->m);
	free(a);
	return clean;
}

int sl_tui_main(const sl_scenario *sc, const struct sl_tui_options *opt)
{
	struct sl_tui_options o;
	sl_tui_options_default(&o);
	if (opt)
		o = *opt;
	setlocale(LC_ALL, "");
	/* The locale is for the terminal's characters; numbers are printed
	 * (and parsed) with a decimal point whatever the locale says. */
	setlocale(LC_NUMERIC, "C");
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr,
		        "shardlab: the interactive view needs a terminal (for a report, use "
		        "'shardlab run')\n");
		return 1;
	}
	if (!o.workload && check_scenario(sc))
		return 2;
	sl_err err = {0};
	if (sl_term_init(&err) != SL_OK) {
		fprintf(stderr, "shardlab: %s\n", err.msg);
		return 1;
	}
	sl_sandbox *a = sl_term_start(o.no_mouse, &err) == SL_OK ? sl_sandbox_open(sc, &o, &err)
	                                                         : NULL;
	if (!a) {
		sl_term_done();
		fprintf(stderr, "shardlab: %s\n", err.msg[0] ? err.msg : "out of memory");
		return 1;
	}
	const char *stats = getenv("SHARDLAB_TUI_STATS");
	if (stats && *stats)
		a->stats = fopen(stats, "w");
	int quit_sig = sl_loop_run(&sandbox_mode, a, a->opt.fps);
	/* The terminal first, so the shell is back at once; then the threads. */
	sl_term_stop();
	int status = 0;
	if (a->opt.trace && !quit_sig)
		status = write_trace(a->play, a->opt.trace);
	/* A quit signal ends the process by it now (see lesson_ui.c). */
	if (quit_sig)
		return sl_term_finish(quit_sig, 0, status);
	/* Quitting does not wait for a thread inside a BLAS call. */
	int clean = sl_sandbox_close(a, 0.3);
	return sl_term_finish(quit_sig, clean, status);
}
