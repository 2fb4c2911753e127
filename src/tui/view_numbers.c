/* SPDX-License-Identifier: MIT */
/* view_numbers.c - the figures: time, compute against communication,
 * speedup, bytes, bus bandwidth, prediction, the correctness check, and the
 * selected device or link. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "units.h"

static void line(const sl_view *v, sl_rect in, int *row, attr_t a, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A line of figures, wrapped at spaces onto the rows below when the panel is
 * narrow (a figure is never cut in the middle: "dp_al" read as a name), but
 * never at \x1f, which keeps a word with its figure ("loss 0.19": the
 * screen tests mask the loss after its word).
 * What does not fit says so on the panel's bottom border. */
static void line(const sl_view *v, sl_rect in, int *row, attr_t a, const char *fmt, ...)
{
	char buf[320];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	int w = in.w - 1;
	const char *s = buf;
	while (*s) {
		if (*row >= in.h) {
			sl_put(in.y + in.h, in.x + in.w - 9, 8, sl_theme_role(v->th, SL_ROLE_DIM),
			       " more ");
			return;
		}
		int len = (int)strlen(s), cut = len;
		int ww = s == buf ? w : w - 2; /* continuation rows are indented */
		if (sl_cols(s) > ww) {
			int cols = 0;
			cut = 0;
			for (int i = 0; s[i] && cols <= ww; i++) {
				if (((unsigned char)s[i] & 0xc0) != 0x80)
					cols++;
				if (s[i] == ' ' && cols <= ww)
					cut = i;
			}
			if (cut == 0)
				cut = len;
		}
		char part[320];
		snprintf(part, sizeof part, "%s%.*s", s == buf ? "" : "  ", cut, s);
		for (char *c = part; *c; c++) /* \x1f: a space the line never breaks at */
			if (*c == '\x1f')
				*c = ' ';
		sl_put(in.y + *row, in.x + 1, w, a, part);
		(*row)++;
		s += cut;
		while (*s == ' ')
			s++;
	}
}

/* " (25.37 us exposed)" after a figure of communication when the run has
 * side streams (else all of it is exposed, and nothing is said), kept on
 * one row (\x1f). */
static void exposed_words(const sl_scene *m, double exposed, char *out, size_t n)
{
	out[0] = 0;
	if (!m->side_streams)
		return;
	char a[32];
	sl_fmt_time(exposed, a, sizeof a);
	for (char *c = a; *c; c++)
		if (*c == ' ')
			*c = '\x1f';
	snprintf(out, n, " (%s%cexposed)", a, '\x1f');
}

static void selection(const sl_view *v, sl_rect in, int *row)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	attr_t sel = sl_theme_role(v->th, SL_ROLE_KEY), norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
	char a[32], b[32], c[32], d[32];
	if (v->sel.kind == SL_SEL_DEVICE && v->sel.dev < m->ndev) {
		const sl_scene_dev *dv = &m->dev[v->sel.dev];
		int node = v->sc->cluster.devices_per_node > 0
		               ? v->sel.dev / v->sc->cluster.devices_per_node
		               : 0;
		sl_fmt_bytes((double)dv->mem, a, sizeof a);
		sl_fmt_bytes((double)v->sc->cluster.memory, b, sizeof b);
		line(v, in, row, sel, "device %d (node %d): %s, holds %s of %s (%.2g%%)",
		     v->sel.dev, node, sl_dstate_name(dv->state), a, b,
		     v->sc->cluster.memory ? 100.0 * (double)dv->mem / (double)v->sc->cluster.memory
		                           : 0);
		sl_fmt_time(dv->compute_s, a, sizeof a);
		sl_fmt_time(dv->comm_s, b, sizeof b);
		sl_fmt_bytes((double)dv->sent, c, sizeof c);
		sl_fmt_bytes((double)dv->received, d, sizeof d);
		char ex[48];
		exposed_words(m, dv->exposed_s, ex, sizeof ex);
		line(v, in, row, norm, "  compute %s %s comm %s%s %s sent %s %s received %s", a,
		     g->dot, b, ex, g->dot, c, g->dot, d);
		if (m->split == SL_SPLIT_COL)
			line(v, in, row, norm, "  shard: W[:, %lld:%lld], all of X, then all of Y",
			     (long long)dv->lo, (long long)dv->hi);
		else if (m->split == SL_SPLIT_ROW)
			line(v, in, row, norm,
			     "  shard: X[:, %lld:%lld] and W[%lld:%lld, :], a partial Y",
			     (long long)dv->lo, (long long)dv->hi, (long long)dv->lo,
			     (long long)dv->hi);
	} else if (v->sel.kind == SL_SEL_LINK) {
		const sl_scene_link *l = NULL;
		for (int i = 0; i < m->nlinks; i++)
			if (m->link[i].src == v->sel.src && m->link[i].dst == v->sel.dst)
				l = &m->link[i];
		if (!l)
			return;
		sl_fmt_rate(l->bandwidth, a, sizeof a);
		sl_fmt_time(l->latency, b, sizeof b);
		line(v, in, row, sel, "link %d%s%d (%s-node): %s, latency %s", l->src, g->arrow,
		     l->dst, l->inter ? "inter" : "intra", a, b);
		sl_fmt_bytes((double)l->moved, a, sizeof a);
		sl_fmt_bytes((double)l->total, b, sizeof b);
		if (l->fill >= 0) {
			sl_fmt_bytes((double)l->inflight, c, sizeof c);
			line(v, in, row, norm, "  delivered %s of %s; in flight: %s, %d%%", a, b, c,
			     (int)(l->fill * 100));
		} else {
			line(v, in, row, norm, "  delivered %s of %s; idle", a, b);
		}
	}
}

/* A lone collective: bytes over the links so far, and once it is over its
 * time, algbw and busbw (as nccl-tests count them). */
static void coll_numbers(const sl_view *v, sl_rect in, int *row)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
	char a[32], b[32], c[32];
	sl_fmt_bytes((double)m->wl->count * sizeof(float), a, sizeof a);
	line(v, in, row, norm, "%s of %s per device %s %s", sl_coll_op_name(m->wl->op), a, g->dot,
	     sl_algo_name(m->wl->algo));
	sl_fmt_bytes((double)m->moved, a, sizeof a);
	sl_fmt_bytes((double)m->moved_total, b, sizeof b);
	line(v, in, row, norm, "sent over links %s of %s", a, b);
	if (m->coll_state == 2) {
		sl_fmt_time(m->coll_time, a, sizeof a);
		sl_fmt_rate(m->algbw, b, sizeof b);
		sl_fmt_rate(m->busbw, c, sizeof c);
		line(v, in, row, norm, "time %s %s algbw %s %s busbw %s", a, g->dot, b, g->dot, c);
	}
}

/* A training step: the engine's accounting (sl_train_report) once the run
 * is known: bubble, idle, bytes per collective kind, memory by category. */
static void train_numbers(const sl_view *v, sl_rect in, int *row)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL), dim = sl_theme_role(v->th, SL_ROLE_DIM);
	char a[32], b[32], c[32], d[32];
	if (m->failed) {
		line(v, in, row, sl_theme_role(v->th, SL_ROLE_FAIL), "%s", m->error);
		return;
	}
	if (!m->have_report) {
		line(v, in, row, dim, "accounting: once the step has run");
		return;
	}
	const sl_train_report *p = m->trep;
	sl_fmt_time(p->step_s, a, sizeof a);
	/* Rounding leaves -1e-17 where nothing idles: never print "-0.0%". */
	double bubble = p->bubble_fraction > 0 ? p->bubble_fraction : 0;
	double idle = p->idle_fraction > 0 ? p->idle_fraction : 0;
	if (v->sc->cluster.timing_only)
		line(v, in, row, norm,
		     "step %s %s bubble %.4f %s idle %.1f%% %s no loss: timing only", a, g->dot,
		     bubble, g->dot, 100 * idle, g->dot);
	else
		line(v, in, row, norm, "step %s %s bubble %.4f %s idle %.1f%% %s loss\x1f%.6f", a,
		     g->dot, bubble, g->dot, 100 * idle, g->dot, m->loss);
	char buf[200];
	int len = snprintf(buf, sizeof buf, "sent:");
	for (int k = 0; k < SL_TR_NKINDS; k++) {
		uint64_t t = 0;
		for (int i = 0; i < p->ndev; i++)
			t += p->dev[i].sent[k];
		if (t && len < (int)sizeof buf)
			len += snprintf(buf + len, sizeof buf - (size_t)len, " %s %s",
			                sl_traffic_name((sl_traffic_kind)k),
			                sl_fmt_bytes((double)t, a, sizeof a));
	}
	line(v, in, row, norm, "%s", len > 5 ? buf : "sent: nothing (one device)");
	int dv = v->sel.kind == SL_SEL_DEVICE && v->sel.dev < p->ndev ? v->sel.dev : 0;
	const sl_train_dev *x = &p->dev[dv];
	sl_fmt_bytes((double)x->params_bytes, a, sizeof a);
	sl_fmt_bytes((double)x->grads_bytes, b, sizeof b);
	sl_fmt_bytes((double)x->optimizer_bytes, c, sizeof c);
	sl_fmt_bytes((double)x->act_peak_bytes, d, sizeof d);
	line(v, in, row, norm,
	     "dev %d (tp%d pp%d dp%d): params %s %s grads %s %s adam %s %s act peak %s", dv, x->tp,
	     x->pp, x->dp, a, g->dot, b, g->dot, c, g->dot, d);
}

/* Resharding: chunks read and written so far, bytes, the storage rate. */
static void ckpt_numbers(const sl_view *v, sl_rect in, int *row)
{
	const sl_scene *m = v->m;
	const sl_workload *tr = m->wl;
	const sl_glyphs *g = v->th->g;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL), dim = sl_theme_role(v->th, SL_ROLE_DIM);
	char a[32], b[32], c[32];
	if (m->failed) {
		line(v, in, row, sl_theme_role(v->th, SL_ROLE_FAIL), "%s", m->error);
		return;
	}
	int dv = v->sel.kind == SL_SEL_DEVICE && v->sel.dev < m->ndev ? v->sel.dev : -1;
	int rd = 0, wr = 0;
	uint64_t rb = 0, wb = 0, rtot = 0, wtot = 0;
	for (int i = 0; i < tr->nreads; i++) {
		const sl_ckpt_move *x = &tr->reads[i];
		if (dv >= 0 && x->dev != dv)
			continue;
		rtot += x->bytes;
		if (sl_scene_io_fill(m, 0, x->dev, x->chunk) >= 1) {
			rd++;
			rb += x->bytes;
		}
	}
	for (int i = 0; i < tr->nwrites; i++) {
		const sl_ckpt_move *x = &tr->writes[i];
		if (dv >= 0 && x->dev != dv)
			continue;
		wtot += x->bytes;
		if (sl_scene_io_fill(m, 1, x->dev, x->chunk) >= 1) {
			wr++;
			wb += x->bytes;
		}
	}
	int nr = 0, nw = 0;
	for (int i = 0; i < tr->nreads; i++)
		nr += dv < 0 || tr->reads[i].dev == dv;
	for (int i = 0; i < tr->nwrites; i++)
		nw += dv < 0 || tr->writes[i].dev == dv;
	if (dv >= 0)
		line(v, in, row, sl_theme_role(v->th, SL_ROLE_KEY), "device %d:", dv);
	sl_fmt_bytes((double)rb, a, sizeof a);
	sl_fmt_bytes((double)rtot, b, sizeof b);
	/* Reads, not chunks: a stored chunk that several new shards overlap is
	 * read by each of their devices. */
	line(v, in, row, norm, "reads done %d of %d (%d chunks stored) %s %s of %s", rd, nr,
	     sl_ckpt_info_of(tr->ck)->nchunks, g->dot, a, b);
	sl_fmt_bytes((double)wb, a, sizeof a);
	sl_fmt_bytes((double)wtot, b, sizeof b);
	line(v, in, row, norm, "writes done %d of %d %s %s of %s", wr, nw, g->dot, a, b);
	const sl_ckpt_info *ci = sl_ckpt_info_of(tr->ck);
	sl_fmt_rate(SL_CKPT_STORAGE_BW_DEFAULT, c, sizeof c);
	line(v, in, row, dim, "storage %s per device %s saved at step %ld on %d device%s", c,
	     g->dot, ci->step, ci->devices, ci->devices == 1 ? "" : "s");
}

/* The product's: the bytes moved and its collective's bus bandwidth, the
 * check against one device, the collective's time. */
static void product_numbers(const sl_view *v, sl_rect in, int *row)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
	char a[32], b[32], c[32];
	sl_fmt_bytes((double)m->moved, a, sizeof a);
	sl_fmt_bytes((double)m->moved_total, b, sizeof b);
	if (m->coll_state == 2) {
		sl_fmt_rate(m->busbw, c, sizeof c);
		line(v, in, row, norm, "bytes %s/%s %s busbw %s", a, b, g->dot, c);
	} else {
		line(v, in, row, norm, "bytes %s/%s%s", a, b,
		     m->coll_state == 1 ? " (collective running)" : "");
	}
	if (*row < in.h) {
		int y = in.y + *row, x = in.x + 1, end = in.x + in.w;
		if (m->failed) {
			sl_put(y, x, end - x, sl_theme_role(v->th, SL_ROLE_FAIL), m->error);
		} else if (m->checked) {
			x += sl_putf(y, x, end - x, norm, "check: err %.1e (rel %.1e) ",
			             m->max_abs_error, m->max_rel_error);
			sl_put(y, x, end - x,
			       sl_theme_role(v->th, m->pass ? SL_ROLE_PASS : SL_ROLE_FAIL),
			       m->pass ? g->pass : g->fail);
		} else {
			sl_put(y, x, end - x, sl_theme_role(v->th, SL_ROLE_DIM),
			       v->sc->cluster.timing_only
			           ? "check: none, a dry run computes no values"
			           : "check vs 1 device: at the end");
		}
		(*row)++;
	}
	if (*row < in.h && m->coll_state == 2) {
		sl_fmt_time(m->coll_time, a, sizeof a);
		sl_fmt_rate(m->algbw, b, sizeof b);
		line(v, in, row, sl_theme_role(v->th, SL_ROLE_DIM), "%s took %s %s algbw %s",
		     m->coll_name, a, g->dot, b);
	}
}

/* The lines each kind of workload adds under the clock: its own alone (a
 * reshard's reads and writes, a lone collective's bandwidths), or after
 * the critical device's split and the speedup (a training step's, the
 * product's), with the selection after them. */
static const struct numbers_kind {
	int speedup;
	void (*lines)(const sl_view *v, sl_rect in, int *row);
} kinds[SL_WL_KINDS] = {
    [SL_WL_PRODUCT] = {1, product_numbers},
    [SL_WL_COLLECTIVE] = {0, coll_numbers},
    [SL_WL_TRAIN] = {1, train_numbers},
    [SL_WL_RESHARD] = {0, ckpt_numbers},
};

void sl_draw_numbers(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	sl_rect in = sl_box(v, r, "Numbers (emulated)");
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL),
	       head = sl_theme_role(v->th, SL_ROLE_HEAD);
	char a[32], b[32], c[32];
	int row = 0;
	/* With a selection and little room, the selection goes first. */
	int room = in.h;
	int want_sel = v->sel.kind != SL_SEL_NONE;
	if (want_sel && room < 8) {
		selection(v, in, &row);
		room = in.h - row;
	}
	sl_fmt_time(m->t, a, sizeof a);
	if (m->total_s >= 0)
		sl_fmt_time(m->total_s, b, sizeof b);
	else
		snprintf(b, sizeof b, "?");
	/* A run that failed has no model time (-1) and no one-device time (0):
	 * say so rather than print them. */
	if (m->predicted_s >= 0)
		sl_fmt_time(m->predicted_s, c, sizeof c);
	else
		snprintf(c, sizeof c, "none");
	line(v, in, &row, head, "t %s / %s %s model %s", a, b, g->dot, c);
	const struct numbers_kind *K = &kinds[m->kind];
	if (!K->speedup) {
		K->lines(v, in, &row);
		return;
	}
	sl_fmt_time(m->crit_compute, a, sizeof a);
	sl_fmt_time(m->crit_comm, b, sizeof b);
	sl_fmt_time(m->crit_wait, c, sizeof c);
	/* Beside compute, communication is partly hidden: what of it the
	 * compute stream waited for (the engine's exposed communication). */
	char ex[48] = "";
	exposed_words(m, m->crit_exposed, ex, sizeof ex);
	if (m->crit_wait > 0)
		line(v, in, &row, norm, "compute %s %s comm %s%s %s wait %s", a, g->dot, b, ex,
		     g->dot, c);
	else
		line(v, in, &row, norm, "compute %s %s comm %s%s", a, g->dot, b, ex);
	if (m->single_s > 0)
		sl_fmt_time(m->single_s, a, sizeof a);
	else
		snprintf(a, sizeof a, "none");
	if (m->total_s > 0 && m->single_s > 0)
		line(v, in, &row, norm, "speedup %sx %s eff %.0f%% %s 1 dev %s",
		     sl_fmt_ratio(m->speedup, (char[32]){0}, 32), g->dot, m->efficiency * 100,
		     g->dot, a);
	else
		line(v, in, &row, norm, "speedup ? %s 1 dev %s", g->dot, a);
	K->lines(v, in, &row);
	if (want_sel && room >= 8 && row < in.h)
		selection(v, in, &row);
}
