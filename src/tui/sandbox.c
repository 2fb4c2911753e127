/* SPDX-License-Identifier: MIT */
/* sandbox.c - the sandbox: its views, its keys' handlers, and its place in the
 * one loop (loop.c: wait, handle, tick, draw once).
 *
 * Handlers change state and return what changed (flags); the loop draws at
 * most once per pass from a scene built for that pass. */
#include "tui.h"
#include "sandbox.h"

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
#include "coll_algo.h"
#include "hwfile.h"
#include "knobs.h"
#include "preset.h"
#include "term.h"
#include "theme.h"
#include "units.h"

enum {
	F_DRAW = SL_LOOP_DRAW,
	F_LAYOUT = SL_LOOP_LAYOUT,
	F_CLEAR = SL_LOOP_CLEAR,
	F_QUIT = SL_LOOP_QUIT,
};

/* The views, one row each (sandbox.h), by the key table they take: the
 * main view and the help here, the others in their files (view_*.c). */
extern const sl_view_row sl_view_plot, sl_view_plan;
static const sl_view_row view_main, view_help;
static const sl_view_row *const views[SL_MODE_COUNT] = {
    [SL_MODE_MAIN] = &view_main,
    [SL_MODE_PLOT] = &sl_view_plot,
    [SL_MODE_PLAN] = &sl_view_plan,
    [SL_MODE_HELP] = &view_help,
};

void sl_tui_options_default(struct sl_tui_options *o)
{
	memset(o, 0, sizeof *o);
	o->fps = SL_TUI_DEFAULT_FPS;
}

int sl_tui_begin(struct sl_tui_options *o, const struct sl_tui_options *opt, const char *no_tty)
{
	sl_tui_options_default(o);
	if (opt)
		*o = *opt;
	setlocale(LC_ALL, "");
	/* The locale is for the terminal's characters; numbers are printed
	 * (and parsed) with a decimal point whatever the locale says. */
	setlocale(LC_NUMERIC, "C");
	if (o->snapshot)
		sl_loop_snapshot_once(o->snapshot);
	else if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "shardlab: %s\n", no_tty);
		return 1;
	}
	return 0;
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
	    .own = a->help.open ? NULL : a->own[a->mode],
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

/* ---- the main view and the help: their rows ---- */

static void draw_main(const sl_view *v, const sl_screen_layout *L)
{
	sl_draw_devices(v, L->r[SL_PANEL_DEVICES]);
	sl_draw_links(v, L->r[SL_PANEL_LINKS]);
	sl_draw_matrices(v, L->r[SL_PANEL_MATRICES]);
	sl_draw_numbers(v, L->r[SL_PANEL_NUMBERS]);
	sl_draw_timeline(v, L->r[SL_PANEL_TIMELINE]);
}

/* The main view's status line names the other view the workload has: the
 * plots run the product; a training step (and a lone collective) names the
 * plan instead. */
static void status_main(const sl_view *v, sl_rect r)
{
	static const sl_action product[] = {SL_A_PLAY,    SL_A_STEP,  SL_A_BACK,
	                                    SL_A_BW_DOWN, SL_A_BW_UP, SL_A_SEL_NEXT,
	                                    SL_A_PLOT,    SL_A_HELP,  SL_A_LEAVE};
	static const sl_action training[] = {SL_A_PLAY,    SL_A_STEP,  SL_A_BACK,
	                                     SL_A_BW_DOWN, SL_A_BW_UP, SL_A_SEL_NEXT,
	                                     SL_A_PLAN,    SL_A_HELP,  SL_A_LEAVE};
	static const sl_action *const of_kind[SL_WL_KINDS] = {
	    [SL_WL_PRODUCT] = product,
	    [SL_WL_COLLECTIVE] = training,
	    [SL_WL_TRAIN] = training,
	    [SL_WL_RESHARD] = product,
	};
	sl_draw_status(v, r, of_kind[v->m->kind], sizeof product / sizeof product[0]);
}

static const sl_view_row view_main = {
    .draw = draw_main,
    .sentence = sl_draw_sentence,
    .status = status_main,
};

/* The help over the view it was opened from: the loop takes its keys. */
static void draw_help(const sl_view *v, const sl_screen_layout *L)
{
	sl_draw_help(v, L->r[SL_PANEL_BODY]);
}

static void status_help(const sl_view *v, sl_rect r)
{
	static const sl_action acts[] = {SL_A_SCROLL_DOWN, SL_A_CLOSE, SL_A_QUIT};
	sl_draw_status(v, r, acts, sizeof acts / sizeof acts[0]);
}

static const sl_view_row view_help = {
    .draw = draw_help,
    .sentence = sl_draw_sentence,
    .status = status_help,
};

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
		const sl_view_row *row = views[v.mode];
		sl_draw_title(&v, L->r[SL_PANEL_TITLE]);
		row->draw(&v, L);
		row->sentence(&v, L->r[SL_PANEL_SENTENCE]);
		row->status(&v, L->r[SL_PANEL_STATUS]);
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

/* The scenario's keys (preset, topology, devices, strategy, algorithm,
 * size) change the product and run it again; a training layout, a lone
 * collective or a reshard keeps what it runs (the plan view opens another
 * layout). */
static const int reruns[SL_WL_KINDS] = {[SL_WL_PRODUCT] = 1};

static unsigned rerun(struct sl_sandbox *a, const sl_scenario *sc, const char *what)
{
	char why[160];
	if (!reruns[sl_play_workload(a->play)->kind]) {
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
		         err.code ? err.msg
		                  : "no preset can be read (see shardlab --list-presets)");
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

/* The keys keep a link within the options' ranges (knobs.c). */
static double turn_bandwidth(double bw, double f)
{
	const sl_knob *k = sl_knob_of(SL_OPT_BANDWIDTH);
	return clampd(bw * f, k->lo, k->hi);
}

static double turn_latency(double lat, double f)
{
	const sl_knob *k = sl_knob_of(SL_OPT_LATENCY);
	if (f > 1)
		return lat <= 0 ? 1e-6 : clampd(lat * f, k->lo, k->hi);
	return lat * f < 1e-9 ? 0 : lat * f;
}

static unsigned knob(struct sl_sandbox *a, double fb, double fl)
{
	char was[32], now[32];
	const sl_scenario *sc = sl_play_scenario(a->play);
	if (a->sel.kind == SL_SEL_LINK) {
		sl_link_spec s = sl_play_link(a->play, a->sel.src, a->sel.dst);
		double bw = turn_bandwidth(s.bandwidth, fb), lat = turn_latency(s.latency, fl);
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
	double bw = turn_bandwidth(s->bandwidth, fb), lat = turn_latency(s->latency, fl);
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
		         s >= 1e6   ? s / 1e6
		         : s >= 1e4 ? s / 1e3
		                    : s,
		         s >= 1e6   ? " million"
		         : s >= 1e4 ? " thousand"
		                    : "",
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

/* ---- actions ---- */

void sl_sandbox_show(sl_sandbox *a, sl_keymode mode)
{
	if (mode != a->mode && views[a->mode]->leave)
		views[a->mode]->leave(a);
	a->mode = mode;
}

/* The main view's actions, which the other views take too where their key
 * tables bind them: the playback, the knobs, the selection, the scenario;
 * and opening the other views. */
static unsigned main_act(struct sl_sandbox *a, sl_action ac, double now)
{
	sl_play *p = a->play;
	sl_scenario sc = *sl_play_scenario(p);
	unsigned f = F_DRAW;
	switch (ac) {
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
		sc.gemm.algo = sl_algo_next(sc.gemm.algo);
		f = rerun(a, &sc, sl_algo_name(sc.gemm.algo));
		break;
	case SL_A_SIZE_DOWN:
	case SL_A_SIZE_UP:
		f = scale_size(a, ac == SL_A_SIZE_UP);
		break;
	default:
		for (int m = 0; m < SL_MODE_COUNT; m++)
			if (views[m] && views[m]->open && views[m]->opener == ac)
				return views[m]->open(a);
		break; /* the help's (the loop's) and the lessons' */
	}
	return f;
}

/* An action: the sandbox's own first, then the shown view's, then the main
 * view's; the view shown after it then follows what changed. */
static unsigned act(struct sl_sandbox *a, sl_action ac, double now)
{
	switch (ac) {
	case SL_A_NONE:
		return 0;
	case SL_A_QUIT:
		return F_QUIT;
	case SL_A_LEAVE: /* from the menu: back to it (F10 quits) */
		a->to_menu = a->opt.from_menu;
		return F_QUIT;
	case SL_A_CLOSE:
		sl_sandbox_show(a, SL_MODE_MAIN);
		return F_DRAW;
	case SL_A_CONTRAST:
		return sl_theme_contrast_key(&a->th, a->msg, sizeof a->msg) ? F_DRAW | F_CLEAR
		                                                            : F_DRAW;
	case SL_A_REDRAW:
		return F_DRAW | F_CLEAR;
	default:
		break;
	}
	const sl_view_row *row = views[a->mode];
	unsigned f = row->act ? row->act(a, ac, now) : SL_VIEW_PASS;
	if (f == SL_VIEW_PASS)
		f = main_act(a, ac, now);
	row = views[a->mode];
	if (row->after)
		row->after(a);
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
	for (int m = 0; m < SL_MODE_COUNT; m++)
		if (views[m] && views[m]->collect && views[m]->collect(a->own[m]) &&
		    a->mode == (sl_keymode)m)
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

/* Planned: the screen shows the run, not "planning". */
static int settled(void *ctx)
{
	return !sl_play_planning(((struct sl_sandbox *)ctx)->play);
}

static const sl_loop_mode sandbox_mode = {keymode,   help_of,  NULL, on_key, on_wake, on_tick,
                                          animating, relayout, draw, NULL,   settled};

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

/* The views' own states, the last made first; each waits up to wait
 * seconds for its thread while those before went.  Returns whether all
 * went. */
static int free_views(struct sl_sandbox *a, double wait)
{
	int clean = 1;
	for (int m = SL_MODE_COUNT - 1; m >= 0; m--)
		if (a->own[m]) {
			clean = views[m]->free(a->own[m], clean ? wait : 0) && clean;
			a->own[m] = NULL;
		}
	return clean;
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
	a->play =
	    a->m ? sl_play_create_workload(sc, a->opt.workload, sl_term_wake_fd(), err) : NULL;
	int made = a->play != NULL;
	for (int m = 0; m < SL_MODE_COUNT && made; m++)
		if (views[m] && views[m]->make)
			made = (a->own[m] = views[m]->make(sl_term_wake_fd())) != NULL;
	if (!made) {
		if (!err->msg[0])
			sl_fail(err, SL_ENOMEM, "out of memory");
		free_views(a, 0);
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
	int clean = free_views(a, wait);
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
	if (sl_tui_begin(&o, opt,
	                 "the interactive view needs a terminal (for a report, use "
	                 "'shardlab run')"))
		return 1;
	if (!o.workload && check_scenario(sc))
		return 2;
	sl_err err = {0};
	if (sl_term_init(&err) != SL_OK) {
		fprintf(stderr, "shardlab: %s\n", err.msg);
		return 1;
	}
	sl_sandbox *a =
	    sl_term_start(o.no_mouse, &err) == SL_OK ? sl_sandbox_open(sc, &o, &err) : NULL;
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
	if (o.snapshot && sl_loop_snapshot_error()[0]) {
		fprintf(stderr, "shardlab: %s\n", sl_loop_snapshot_error());
		status = 1;
	}
	if (a->opt.trace && !quit_sig && !status)
		status = write_trace(a->play, a->opt.trace);
	/* A quit signal ends the process by it now (see lesson_ui.c). */
	if (quit_sig)
		return sl_term_finish(quit_sig, 0, status);
	/* Quitting does not wait for a thread inside a BLAS call. */
	int clean = sl_sandbox_close(a, 0.3);
	return sl_term_finish(quit_sig, clean, status);
}
