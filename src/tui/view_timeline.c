/* SPDX-License-Identifier: MIT */
/* view_timeline.c - one row per device over emulated time: compute,
 * communication and waiting by colour and glyph, a cursor at the current
 * time, a time scale, micro-batch numbers where there are some.  A training
 * step's forward work, backward work (input gradients) and weight gradients
 * differ in colour and in glyph, so GPipe's and 1F1B's orders read off it
 * also in monochrome.  A run with side streams (cluster.h's Streams: the
 * gradient buckets, ZeRO's collectives beside the compute) gives each
 * device a lane per stream, its communication under its compute, so the
 * overlap shows; a run without draws a row per device as before. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw.h"
#include "units.h"

#define MAX_COLS 512

static sl_dstate ev_state(sl_ev_kind k);

/* What a cell shows: a device state, or a backward pass's compute. */
/* An interleaved schedule's second model chunk (and later ones) has
 * glyphs of its own for forward, backward and weight gradients. */
enum { CAT_BWD = SL_DS_COUNT, CAT_WGRAD, CAT_FWD2, CAT_BWD2, CAT_WGRAD2, NCAT };

/* Is a training block in a device's later model chunk?  The layers are
 * cut into pp x v chunks in order, chunk c on stage c mod pp, so every
 * stage's first chunk comes before later_from, the first block of stage
 * 0's second chunk (sl_layout_blocks; 0 when the schedule has one chunk a
 * device). */
static int later_chunk(const sl_event *e, int later_from)
{
	return later_from > 0 && e->work.block >= later_from;
}

static int ev_cat(const sl_event *e, int later_from)
{
	int later =
	    e->kind == SL_EV_COMPUTE && e->work.pass != SL_PASS_NONE && later_chunk(e, later_from);
	if (e->kind == SL_EV_COMPUTE && e->work.pass == SL_PASS_BWD)
		return e->work.grad == SL_GRAD_W ? (later ? CAT_WGRAD2 : CAT_WGRAD)
		                                 : (later ? CAT_BWD2 : CAT_BWD);
	if (later)
		return CAT_FWD2;
	return (int)ev_state(e->kind);
}

static attr_t cat_attr(const sl_view *v, int cat)
{
	if (cat == CAT_BWD || cat == CAT_BWD2)
		return sl_theme_role(v->th, SL_ROLE_BWD);
	if (cat == CAT_WGRAD || cat == CAT_WGRAD2)
		return sl_theme_role(v->th, SL_ROLE_WGRAD);
	if (cat == CAT_FWD2)
		return sl_theme_state(v->th, SL_DS_COMPUTE);
	return sl_theme_state(v->th, (sl_dstate)cat);
}

static const char *cat_glyph(const sl_glyphs *g, int cat)
{
	switch (cat) {
	case CAT_BWD:
		return g->bwd;
	case CAT_WGRAD:
		return g->wgrad;
	case CAT_FWD2:
		return g->fwd2;
	case CAT_BWD2:
		return g->bwd2;
	case CAT_WGRAD2:
		return g->wgrad2;
	default:
		return g->state[cat];
	}
}

/* A reshard's devices read and write storage, and compute nothing: its
 * legend names those; another kind's its compute and transfers. */
static const int storage[SL_WL_KINDS] = {[SL_WL_RESHARD] = 1};

/* The title with as much of the legend as fits in w columns, whole items
 * only, and "(? help)" when some are left out. */
/* The legend names the glyphs the timeline draws (present: a bit per
 * category seen; 0 before anything has run: all of them), so the few that
 * fit at 80 columns are the ones on screen. */
static void legend_title(const sl_view *v, int w, int train, unsigned present, char *out, size_t n)
{
	const sl_glyphs *g = v->th->g;
	const sl_scene *m = v->m;
	struct item {
		const char *glyph, *word;
		int cat;
	} all[12], it[12];
	int na = 0, k = 0;
	if (storage[m->kind]) {
		all[na++] = (struct item){g->state[SL_DS_READ], "read a chunk", SL_DS_READ};
		all[na++] = (struct item){g->state[SL_DS_WRITE], "write a chunk", SL_DS_WRITE};
		all[na++] = (struct item){g->state[SL_DS_SEND], "send", SL_DS_SEND};
		all[na++] = (struct item){g->state[SL_DS_WAIT], "wait", SL_DS_WAIT};
	} else {
		all[na++] = (struct item){g->state[SL_DS_COMPUTE], train ? "forward" : "compute",
		                          SL_DS_COMPUTE};
		if (train) {
			all[na++] = (struct item){g->bwd, "backward", CAT_BWD};
			all[na++] = (struct item){g->wgrad, "weight grad", CAT_WGRAD};
			all[na++] = (struct item){g->fwd2, "chunk 2 fwd", CAT_FWD2};
			all[na++] = (struct item){g->bwd2, "bwd", CAT_BWD2};
			all[na++] = (struct item){g->wgrad2, "wgrad", CAT_WGRAD2};
		}
		/* Lanes of side streams: named whenever they are drawn. */
		if (m->side_streams)
			all[na++] = (struct item){g->lane, "comm lane", -1};
		all[na++] = (struct item){g->state[SL_DS_RECV], "recv", SL_DS_RECV};
		all[na++] = (struct item){g->state[SL_DS_REDUCE], "reduce", SL_DS_REDUCE};
		all[na++] = (struct item){g->state[SL_DS_SEND], "send", SL_DS_SEND};
		all[na++] = (struct item){g->state[SL_DS_WAIT], "wait", SL_DS_WAIT};
	}
	int later = all[0].cat == SL_DS_COMPUTE && m->wl && m->wl->kind == SL_WL_TRAIN &&
	            m->wl->l.chunks > 1;
	for (int i = 0; i < na; i++) {
		int chunk2 = all[i].cat >= CAT_FWD2;
		if (all[i].cat < 0 || (present ? present >> all[i].cat & 1 : !chunk2 || later))
			it[k++] = all[i];
	}
	size_t len = (size_t)snprintf(out, n, "Timeline");
	int cols = 8, cut = 0;
	for (int i = 0; i < k; i++) {
		char piece[64];
		snprintf(piece, sizeof piece, "  %s %s", it[i].glyph, it[i].word);
		int pw = sl_cols(piece);
		/* room for " (? help)" after it when more follow */
		if (cols + pw + (i + 1 < k ? 9 : 0) > w) {
			cut = 1;
			break;
		}
		len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s", piece);
		cols += pw;
	}
	if (cut && cols + 9 <= w)
		snprintf(out + len, len < n ? n - len : 0, " (? help)");
}

static sl_dstate ev_state(sl_ev_kind k)
{
	switch (k) {
	case SL_EV_COMPUTE:
		return SL_DS_COMPUTE;
	case SL_EV_SEND:
		return SL_DS_SEND;
	case SL_EV_RECV:
		return SL_DS_RECV;
	case SL_EV_REDUCE:
		return SL_DS_REDUCE;
	case SL_EV_WRITE:
		return SL_DS_WRITE;
	case SL_EV_READ:
		return SL_DS_READ;
	default:
		return SL_DS_WAIT;
	}
}

/* A tick step of 1, 2 or 5 times a power of ten giving about n ticks. */
static double nice_step(double span, int n)
{
	double raw = span / (n > 0 ? n : 1);
	double p = pow(10, floor(log10(raw)));
	double f = raw / p;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* A lane: one device's events on one of its streams (stream -1: all of
 * them, a run with no side streams; LANE_SIDE: every side stream's, when
 * a lane each does not fit), as cells of dt seconds up to `upto`:
 * the category that fills each most, and the micro-batch digits. */
enum { LANE_SIDE = -2 };
struct lane {
	signed char cell[MAX_COLS];
	signed char mbcat[MAX_COLS], more[MAX_COLS];
	int mb[MAX_COLS];
};

static void lane_cells(const sl_scene *m, int d, int stream, double upto, double dt, int w,
                       int later_from, struct lane *ln)
{
	const sl_snapshot *s = m->ev;
	/* Per column: time spent in each state, up to t. */
	static double occ[MAX_COLS][NCAT];
	enum { MAX_STARTS = 4096 };
	static struct start {
		int c, mb, cat;
	} starts[MAX_STARTS];
	int nstarts = 0;
	memset(occ, 0, sizeof occ);
	for (int c = 0; c < w; c++)
		ln->mb[c] = -1, ln->more[c] = 0;
	/* A micro-batch's digit where its pass starts on the device, not at
	 * each of its kernels (a realistic step launches dozens). */
	int last_mb = -1, last_cat = -1; /* last_cat: the pass */
	for (size_t i = 0; i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		if (e->dev != d || e->t0 >= upto || (stream >= 0 && e->stream != stream) ||
		    (stream == LANE_SIDE && e->stream == 0))
			continue;
		double a = e->t0, b = e->t1 < upto ? e->t1 : upto;
		int c0 = (int)floor(a / dt), c1 = (int)floor(b / dt);
		if (c1 >= w)
			c1 = w - 1;
		int st = ev_cat(e, later_from);
		for (int c = c0; c <= c1 && c >= 0; c++) {
			double lo = c * dt > a ? c * dt : a,
			       hi = (c + 1) * dt < b ? (c + 1) * dt : b;
			if (hi > lo)
				occ[c][st] += hi - lo;
		}
		/* Element-wise kernels (softmax, norms) name no pass: they
		 * neither start one nor end it. */
		if (e->mb >= 0 && e->kind == SL_EV_COMPUTE && e->work.pass != SL_PASS_NONE) {
			int pass = e->work.pass; /* forward, or backward (both grads) */
			if ((e->mb != last_mb || pass != last_cat) && c0 >= 0 && c0 < w &&
			    nstarts < MAX_STARTS)
				starts[nstarts++] = (struct start){c0, e->mb, st};
			last_mb = e->mb;
			last_cat = pass;
		}
	}
	/* Every pass's digit, in order: where starts crowd a column, each
	 * takes the next column its kind of work still fills, so a run of
	 * short passes reads 0123... (never 0 2 5...).  Where the work runs
	 * out of columns first, its last digit becomes the mark that more
	 * passes started there than the columns can name. */
	for (int i = 0, prev = -1; i < nstarts; i++) {
		int pos = starts[i].c > prev ? starts[i].c : prev + 1;
		if (pos < w && occ[pos][starts[i].cat] > 0) {
			ln->mb[pos] = starts[i].mb;
			ln->mbcat[pos] = (signed char)starts[i].cat;
			prev = pos;
		} else if (prev >= 0 && prev >= starts[i].c - 1) {
			ln->more[prev] = 1;
		}
	}
	/* The state that fills the column most; on a tie (a ring step sends
	 * and receives at once) what happens to the device's own data:
	 * reduce, then receive, then send. */
	static const int tie[NCAT] = {0, 6, 3, 4, 5, 2, 1, 0, 0, 6, 6, 6, 6, 6};
	for (int c = 0; c < w; c++) {
		int best = SL_DS_IDLE;
		double bt = 0;
		for (int st = 1; st < NCAT; st++) {
			double sc = occ[c][st] * (1 + 1e-9 * tie[st]);
			if (occ[c][st] > 0 && sc > bt) {
				bt = sc;
				best = st;
			}
		}
		ln->cell[c] = (signed char)best;
	}
}

/* Two devices' lanes look the same: every cell and digit. */
static int lanes_equal(const struct lane *a, const struct lane *b, int w)
{
	for (int c = 0; c < w; c++)
		if (a->cell[c] != b->cell[c] || a->mb[c] != b->mb[c] || a->more[c] != b->more[c] ||
		    (a->mb[c] >= 0 && a->mbcat[c] != b->mbcat[c]))
			return 0;
	return 1;
}

static void draw_lane(const sl_view *v, int y, int x0, int w, int cur, double dt,
                      const struct lane *ln)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
	for (int c = 0; c < w; c++) {
		int best = ln->cell[c];
		/* Columns past the cursor are the future: blank. */
		if (c * dt >= m->t) {
			sl_put(y, x0 + c, 1, norm, " ");
			if (c == cur)
				sl_put(y, x0 + c, 1, sl_theme_role(v->th, SL_ROLE_CURSOR), g->v);
			continue;
		}
		attr_t a = cat_attr(v, best);
		if (c == cur)
			a |= A_REVERSE;
		if (ln->mb[c] >= 0) {
			/* The micro-batch's digit in its pass's colour, and
			 * underlined for a backward one, which monochrome keeps. */
			int mc = ln->mbcat[c];
			char dig[2] = {sl_dev_char(ln->mb[c] % 36), 0};
			attr_t da = cat_attr(v, mc) | (c == cur ? A_REVERSE : 0);
			if (mc == CAT_BWD || mc == CAT_WGRAD || mc == CAT_BWD2 || mc == CAT_WGRAD2)
				da |= A_UNDERLINE;
			sl_put(y, x0 + c, 1, da | A_BOLD, ln->more[c] ? g->more : dig);
		} else {
			sl_put(y, x0 + c, 1, a, cat_glyph(g, best));
		}
	}
}

/* The rows: a lane per device and stream.  With side streams each device
 * has its compute lane and, under it, a lane per side stream it
 * communicates on, so what overlaps shows.  When those do not fit,
 * devices whose lanes look the same over the whole run (data-parallel
 * replicas in step, a tensor-parallel group) share rows, named "0,1" or
 * "0-3"; then the side streams share one lane; what still does not fit
 * scrolls with the selected device. */
enum { MAX_LANES = 1 + (SL_STREAMS - 1) };
struct rows {
	int nlanes;                     /* lanes a device (or a group of them) has */
	int stream[MAX_LANES];          /* each lane's stream (-1: all, no side streams) */
	int ngroups;                    /* groups of devices, a row set each */
	int first[SL_MAX_FULL_DEVICES]; /* a group's first device (whose lanes are drawn) */
	uint64_t devs[SL_MAX_FULL_DEVICES];
	int grouped; /* some group holds several devices */
};

/* A group's name: its devices as a list of runs ("3", "0,1", "0-3",
 * "0,1,4,5", "8,9,12,13") while that is short; else every k-th device as
 * "0,2..14" (replicas a tensor-parallel group apart), or "0+7" (device 0
 * and 7 others). */
static void group_name(uint64_t devs, char *out, size_t n)
{
	int lo = __builtin_ctzll(devs), hi = 63 - __builtin_clzll(devs);
	int k = __builtin_popcountll(devs);
	char list[64] = "";
	size_t len = 0;
	for (int d = lo; d <= hi && len < sizeof list - 8; d++) {
		if (!(devs >> d & 1))
			continue;
		int e = d;
		while (e < 63 && devs >> (e + 1) & 1)
			e++;
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", len ? "," : "", d);
		if (e - d >= 2)
			len += (size_t)snprintf(list + len, sizeof list - len, "-%d", e);
		else if (e > d)
			len += (size_t)snprintf(list + len, sizeof list - len, ",%d", e);
		d = e;
	}
	int step = k > 1 ? (hi - lo) / (k - 1) : 1, even = k > 2 && (hi - lo) % (k - 1) == 0;
	for (int i = 0; even && i < k; i++)
		even = devs >> (lo + i * step) & 1;
	if (len <= 9)
		snprintf(out, n, "%s", list);
	else if (even)
		snprintf(out, n, "%d,%d..%d", lo, lo + step, hi);
	else
		snprintf(out, n, "%d+%d", lo, k - 1);
}

/* The label's width the groups' names need, with a blank after them. */
static int group_label(const struct rows *R)
{
	int label = 4;
	for (int i = 0; i < R->ngroups; i++) {
		char nm[24];
		group_name(R->devs[i], nm, sizeof nm);
		if (sl_cols(nm) + 1 > label)
			label = sl_cols(nm) + 1;
	}
	return label;
}

/* merge: every side stream on one lane (LANE_SIDE). */
static void group_rows(const sl_view *v, int rows, double dt, int w, int later_from, int merge,
                       struct rows *R)
{
	const sl_scene *m = v->m;
	int n = m->ndev < SL_MAX_FULL_DEVICES ? m->ndev : SL_MAX_FULL_DEVICES;
	R->nlanes = 1;
	R->stream[0] = -1;
	R->grouped = 0;
	if (m->side_streams) {
		R->stream[0] = 0;
		for (int s = 1; s < SL_STREAMS; s++)
			if (m->side_streams >> s & 1)
				R->stream[R->nlanes++] = s;
		if (merge && R->nlanes > 2) {
			R->nlanes = 2;
			R->stream[1] = LANE_SIDE;
		}
	}
	R->ngroups = n;
	for (int d = 0; d < n; d++) {
		R->first[d] = d;
		R->devs[d] = (uint64_t)1 << d;
	}
	if (R->nlanes == 1 || n * R->nlanes <= rows)
		return;
	/* The groups depend on the whole run at this width: kept from the
	 * last frame while those are the same (a paused or replayed run). */
	static struct rows_memo {
		const sl_event *ev;
		size_t n;
		int ndev, rows, w;
		double dt;
		struct rows R;
	} memos[2]; /* plan_rows asks for both: one each */
	struct rows_memo *mo = &memos[merge != 0];
	if (mo->ev == m->ev->ev && mo->n == m->ev->n && mo->ndev == n && mo->rows == rows &&
	    mo->w == w && mo->dt == dt) {
		*R = mo->R;
		return;
	}
	struct lane *ln = malloc((size_t)n * (size_t)R->nlanes * sizeof *ln);
	if (!ln)
		return;
	for (int d = 0; d < n; d++)
		for (int k = 0; k < R->nlanes; k++)
			lane_cells(m, d, R->stream[k], INFINITY, dt, w, later_from,
			           &ln[d * R->nlanes + k]);
	R->ngroups = 0;
	for (int d = 0; d < n; d++) {
		int gi = -1;
		for (int i = 0; i < R->ngroups && gi < 0; i++) {
			int f = R->first[i], same = 1;
			for (int k = 0; k < R->nlanes && same; k++)
				same =
				    lanes_equal(&ln[f * R->nlanes + k], &ln[d * R->nlanes + k], w);
			if (same)
				gi = i;
		}
		if (gi < 0) {
			gi = R->ngroups++;
			R->first[gi] = d;
			R->devs[gi] = 0;
		} else {
			R->grouped = 1;
		}
		R->devs[gi] |= (uint64_t)1 << d;
	}
	free(ln);
	mo->ev = m->ev->ev;
	mo->n = m->ev->n;
	mo->ndev = n;
	mo->rows = rows;
	mo->w = w;
	mo->dt = dt;
	mo->R = *R;
}

/* The rows: a lane per side stream while every group's fit; else the side
 * streams share one lane. */
static void plan_rows(const sl_view *v, int rows, double dt, int w, int later_from, struct rows *R)
{
	group_rows(v, rows, dt, w, later_from, 0, R);
	if (R->nlanes > 2 && R->ngroups * R->nlanes > rows)
		group_rows(v, rows, dt, w, later_from, 1, R);
}

void sl_draw_timeline(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	/* A training step's compute says its pass. */
	int train = 0;
	for (size_t i = 0; i < m->ev->n && !train; i++)
		train =
		    m->ev->ev[i].kind == SL_EV_COMPUTE && m->ev->ev[i].work.pass != SL_PASS_NONE;
	int later_from = 0, count;
	if (m->wl && m->wl->kind == SL_WL_TRAIN && m->wl->l.chunks > 1)
		sl_layout_blocks(&m->wl->m, &m->wl->l, 0, 1, &later_from, &count);
	unsigned present = 0;
	for (size_t i = 0; i < m->ev->n; i++)
		if (m->ev->ev[i].t0 < m->t || m->t >= m->end)
			present |= 1u << ev_cat(&m->ev->ev[i], later_from);
	char title[256];
	legend_title(v, r.w - 6, train, present, title, sizeof title);
	sl_rect in = sl_box(v, r, title);
	int label = 4, w = in.w - label - 1;
	int rows = in.h - 1;
	if (w < 4 || rows < 1)
		return;
	if (w > MAX_COLS)
		w = MAX_COLS;
	/* The span: the whole run when it is known. */
	double span = m->end > 0 ? m->end : 0;
	const sl_snapshot *s = m->ev;
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].t1 > span)
			span = s->ev[i].t1;
	if (m->t > span)
		span = m->t;
	if (!(span > 0)) {
		sl_put(in.y, in.x + 1, in.w - 1, sl_theme_role(v->th, SL_ROLE_DIM),
		       "(nothing has run yet)");
		return;
	}
	double dt = span / w;
	static struct rows R;
	plan_rows(v, rows, dt, w, later_from, &R);
	/* Groups' names may need a wider label ("12-15"): the columns, and
	 * so the groups, follow. */
	for (int pass = 0; pass < 2 && R.grouped && group_label(&R) > label; pass++) {
		label = group_label(&R);
		w = in.w - label - 1;
		if (w < 4)
			return;
		if (w > MAX_COLS)
			w = MAX_COLS;
		dt = span / w;
		if (pass == 0)
			plan_rows(v, rows, dt, w, later_from, &R);
	}
	/* Groups shown: as many as have all their lanes room, the selected
	 * device's among them. */
	int shown = rows / R.nlanes, first = 0, n = R.ngroups;
	if (shown < 1)
		shown = 1;
	if (n > shown && v->sel.kind == SL_SEL_DEVICE) {
		int sg = 0;
		for (int i = 0; i < n; i++)
			if (R.devs[i] >> v->sel.dev & 1)
				sg = i;
		first = sg - shown + 1;
		first = first < 0 ? 0 : first > n - shown ? n - shown : first;
	}
	int cur = (int)floor(m->t / dt + 1e-9);
	if (cur >= w)
		cur = w - 1;
	static struct lane ln;
	int y = in.y, hidden = 0;
	for (int i = 0; i < n; i++) {
		int nd = __builtin_popcountll(R.devs[i]);
		if (i < first || i >= first + shown) {
			hidden += nd;
			continue;
		}
		int d = R.first[i];
		int sel = v->sel.kind == SL_SEL_DEVICE && v->sel.dev >= 0 && v->sel.dev < 64 &&
		          (R.devs[i] >> v->sel.dev & 1);
		attr_t la = sel ? sl_theme_role(v->th, SL_ROLE_SELECT) : sl_theme_dev(v->th, d);
		for (int k = 0; k < R.nlanes && y < in.y + rows; k++, y++) {
			if (k == 0 && nd == 1) {
				sl_putf(y, in.x, label, la, "%*d", label - 1, d);
			} else if (k == 0) {
				char nm[24];
				group_name(R.devs[i], nm, sizeof nm);
				sl_putf(y, in.x, label, la, "%*s", label - 1, nm);
			} else {
				/* A side stream's lane: its mark under the device's
				 * name, and the stream's number when there are several. */
				char mk[16];
				snprintf(mk, sizeof mk, "%s", g->lane);
				if (R.nlanes > 2)
					snprintf(mk, sizeof mk, "%s%d", g->lane, R.stream[k]);
				int mw = sl_cols(mk);
				sl_put(y, in.x + (label - 1 - mw > 0 ? label - 1 - mw : 0),
				       label - 1, sl_theme_dev(v->th, d), mk);
			}
			lane_cells(m, d, R.stream[k], m->t, dt, w, later_from, &ln);
			draw_lane(v, y, in.x + label, w, cur, dt, &ln);
		}
	}
	/* The scale: ticks at a round step, the cursor's time under it. */
	int ys = in.y + in.h - 1, x0 = in.x + label;
	attr_t dim = sl_theme_role(v->th, SL_ROLE_DIM);
	sl_rep(ys, x0, w, dim, g->h);
	double step = nice_step(span, w / 12);
	char lab[24];
	int next_free = x0;
	/* A tick never cuts the label before it, and a label the cursor would
	 * cut is left out while the cursor passes it. */
	for (double tk = 0; tk <= span * (1 + 1e-9); tk += step) {
		int c = (int)floor(tk / dt + 1e-9);
		if (c >= w)
			break;
		if (x0 + c < next_free - 1)
			continue;
		sl_put(ys, x0 + c, 1, dim, g->tick);
		sl_fmt_time(tk, lab, sizeof lab);
		int lw = sl_cols(lab);
		int under = cur >= c + 1 && cur < c + 1 + lw;
		if (!under && c + 1 + lw < w) {
			sl_put(ys, x0 + c + 1, lw, dim, lab);
			next_free = x0 + c + 2 + lw;
		}
	}
	sl_put(ys, x0 + cur, 1, sl_theme_role(v->th, SL_ROLE_CURSOR), g->caret);
	if (hidden > 0)
		sl_putf(in.y + in.h - 1, in.x, label, dim, "+%d", hidden);
}
