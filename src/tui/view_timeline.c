/* SPDX-License-Identifier: MIT */
/* view_timeline.c - one row per device over emulated time: compute,
 * communication and waiting by colour and glyph, a cursor at the current
 * time, a time scale, micro-batch numbers where there are some.  A training
 * step's forward work, backward work (input gradients) and weight gradients
 * differ in colour and in glyph, so GPipe's and 1F1B's orders read off it
 * also in monochrome. */
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

/* A device's model chunk of a training block: the layers are cut into
 * pp x v chunks in order, chunk c on stage c mod pp (chunk_len blocks
 * each; 0 when the schedule has one chunk a device). */
static int local_chunk(const sl_event *e, int stages, int chunk_len)
{
	if (chunk_len <= 0 || stages <= 0 || e->work.block < 0)
		return 0;
	return e->work.block / chunk_len / stages;
}

static int ev_cat(const sl_event *e, int stages, int chunk_len)
{
	int later = e->kind == SL_EV_COMPUTE && e->work.pass != SL_PASS_NONE &&
	            local_chunk(e, stages, chunk_len) > 0;
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
		all[na++] = (struct item){g->state[SL_DS_RECV], "recv", SL_DS_RECV};
		all[na++] = (struct item){g->state[SL_DS_REDUCE], "reduce", SL_DS_REDUCE};
		all[na++] = (struct item){g->state[SL_DS_SEND], "send", SL_DS_SEND};
		all[na++] = (struct item){g->state[SL_DS_WAIT], "wait", SL_DS_WAIT};
	}
	int later = all[0].cat == SL_DS_COMPUTE && m->wl && m->wl->kind == SL_WL_TRAIN &&
	            m->wl->l.chunks > 1;
	for (int i = 0; i < na; i++) {
		int chunk2 = all[i].cat >= CAT_FWD2;
		if (present ? present >> all[i].cat & 1 : !chunk2 || later)
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

void sl_draw_timeline(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	/* A training step's compute says its pass. */
	int train = 0;
	for (size_t i = 0; i < m->ev->n && !train; i++)
		train =
		    m->ev->ev[i].kind == SL_EV_COMPUTE && m->ev->ev[i].work.pass != SL_PASS_NONE;
	int stages = 0, chunk_len = 0;
	if (m->wl && m->wl->kind == SL_WL_TRAIN && m->wl->l.chunks > 1) {
		stages = m->wl->l.pp;
		chunk_len = m->wl->m.layers / (stages * m->wl->l.chunks);
	}
	unsigned present = 0;
	for (size_t i = 0; i < m->ev->n; i++)
		if (m->ev->ev[i].t0 < m->t || m->t >= m->end)
			present |= 1u << ev_cat(&m->ev->ev[i], stages, chunk_len);
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
	int first = 0, n = m->ndev;
	if (n > rows && v->sel.kind == SL_SEL_DEVICE) {
		first = v->sel.dev - rows + 1;
		first = first < 0 ? 0 : first > n - rows ? n - rows : first;
	}
	int cur = (int)floor(m->t / dt + 1e-9);
	if (cur >= w)
		cur = w - 1;
	/* Per column: time spent in each state, up to t. */
	static double occ[MAX_COLS][NCAT];
	static int mb[MAX_COLS], mbcat[MAX_COLS], more[MAX_COLS];
	enum { MAX_STARTS = 4096 };
	static struct start {
		int c, mb, cat;
	} starts[MAX_STARTS];
	for (int row = 0; row < rows && first + row < n; row++) {
		int d = first + row, y = in.y + row, nstarts = 0;
		memset(occ, 0, sizeof occ);
		for (int c = 0; c < w; c++)
			mb[c] = -1, more[c] = 0;
		/* A micro-batch's digit where its pass starts on the device, not
		 * at each of its kernels (a realistic step launches dozens). */
		int last_mb = -1, last_cat = -1; /* last_cat: the pass */
		for (size_t i = 0; i < s->n; i++) {
			const sl_event *e = &s->ev[i];
			if (e->dev != d || e->t0 >= m->t)
				continue;
			double a = e->t0, b = e->t1 < m->t ? e->t1 : m->t;
			int c0 = (int)floor(a / dt), c1 = (int)floor(b / dt);
			if (c1 >= w)
				c1 = w - 1;
			int st = ev_cat(e, stages, chunk_len);
			for (int c = c0; c <= c1 && c >= 0; c++) {
				double lo = c * dt > a ? c * dt : a,
				       hi = (c + 1) * dt < b ? (c + 1) * dt : b;
				if (hi > lo)
					occ[c][st] += hi - lo;
			}
			/* Element-wise kernels (softmax, norms) name no pass: they
			 * neither start one nor end it. */
			if (e->mb >= 0 && e->kind == SL_EV_COMPUTE &&
			    e->work.pass != SL_PASS_NONE) {
				int pass = e->work.pass; /* forward, or backward (both grads) */
				if ((e->mb != last_mb || pass != last_cat) && c0 >= 0 && c0 < w &&
				    nstarts < MAX_STARTS)
					starts[nstarts++] = (struct start){c0, e->mb, st};
				last_mb = e->mb;
				last_cat = pass;
			}
		}
		/* Every pass's digit, in order: where starts crowd a column, each
		 * takes the next column its kind of work still fills, so a run
		 * of short passes reads 0123... (never 0 2 5...).  Where the work
		 * runs out of columns first, its last digit becomes the mark
		 * that more passes started there than the columns can name. */
		for (int i = 0, prev = -1; i < nstarts; i++) {
			int pos = starts[i].c > prev ? starts[i].c : prev + 1;
			if (pos < w && occ[pos][starts[i].cat] > 0) {
				mb[pos] = starts[i].mb;
				mbcat[pos] = starts[i].cat;
				prev = pos;
			} else if (prev >= 0 && prev >= starts[i].c - 1) {
				more[prev] = 1;
			}
		}
		attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
		int sel = v->sel.kind == SL_SEL_DEVICE && v->sel.dev == d;
		sl_putf(y, in.x, label,
		        sel ? sl_theme_role(v->th, SL_ROLE_SELECT) : sl_theme_dev(v->th, d), "%3d",
		        d);
		int x0 = in.x + label;
		for (int c = 0; c < w; c++) {
			/* The state that fills the column most; on a tie (a ring
			 * step sends and receives at once) what happens to the
			 * device's own data: reduce, then receive, then send. */
			static const int tie[NCAT] = {0, 6, 3, 4, 5, 2, 1, 0, 0, 6, 6, 6, 6, 6};
			int best = SL_DS_IDLE;
			double bt = 0;
			for (int st = 1; st < NCAT; st++) {
				double sc = occ[c][st] * (1 + 1e-9 * tie[st]);
				if (occ[c][st] > 0 && sc > bt) {
					bt = sc;
					best = st;
				}
			}
			/* Columns past the cursor are the future: blank. */
			if (c * dt >= m->t) {
				sl_put(y, x0 + c, 1, norm, c == cur ? " " : " ");
				if (c == cur)
					sl_put(y, x0 + c, 1, sl_theme_role(v->th, SL_ROLE_CURSOR),
					       v->th->g->v);
				continue;
			}
			attr_t a = cat_attr(v, best);
			if (c == cur)
				a |= A_REVERSE;
			if (mb[c] >= 0) {
				/* The micro-batch's digit in its pass's colour, and
				 * underlined for a backward one, which monochrome keeps. */
				char dig[2] = {sl_dev_char(mb[c] % 36), 0};
				attr_t da = cat_attr(v, mbcat[c]) | (c == cur ? A_REVERSE : 0);
				if (mbcat[c] == CAT_BWD || mbcat[c] == CAT_WGRAD ||
				    mbcat[c] == CAT_BWD2 || mbcat[c] == CAT_WGRAD2)
					da |= A_UNDERLINE;
				sl_put(y, x0 + c, 1, da | A_BOLD, more[c] ? g->more : dig);
			} else {
				sl_put(y, x0 + c, 1, a, cat_glyph(g, best));
			}
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
	if (n > rows)
		sl_putf(in.y + in.h - 1, in.x, label, dim, "+%d", n - rows);
}
