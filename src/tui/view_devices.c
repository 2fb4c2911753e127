/* SPDX-License-Identifier: MIT */
/* view_devices.c - the devices panel and the links panel. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "units.h"

/* ---- devices ---- */

static void link_bar(const sl_view *v, int y, int x, int w, const sl_scene_link *l);

/* The first device row shown: keep the selection in view. */
/* What device d holds, in the words of the workload's kind: its rank in a
 * lone collective, its place in a layout's mesh, its shard of W. */
static void rank_words(const sl_scene *m, int d, char *b, size_t n)
{
	(void)m;
	snprintf(b, n, " rank %d", d);
}

static void mesh_words(const sl_scene *m, int d, char *b, size_t n)
{
	int ct, cp, cd, c = m->wl->l.cp;
	sl_mesh_coords(&m->wl->l, d, &ct, &cp, &cd);
	if (c > 1) /* the place on the dp axis: replica cd / c, context rank cd % c */
		snprintf(b, n, " tp%d pp%d dp%d cp%d", ct, cp, cd / c, cd % c);
	else
		snprintf(b, n, " tp%d pp%d dp%d", ct, cp, cd);
}

static void shard_words(const sl_scene *m, int d, char *b, size_t n)
{
	const sl_scene_dev *dv = &m->dev[d];
	if (m->split == SL_SPLIT_ROW)
		snprintf(b, n, " W[%lld:%lld,:]", (long long)dv->lo, (long long)dv->hi);
	else if (m->split == SL_SPLIT_COL)
		snprintf(b, n, " W[:,%lld:%lld]", (long long)dv->lo, (long long)dv->hi);
	else
		snprintf(b, n, " all of W");
}

static void (*const shard_of[SL_WL_KINDS])(const sl_scene *m, int d, char *b, size_t n) = {
    [SL_WL_PRODUCT] = shard_words,
    [SL_WL_COLLECTIVE] = rank_words,
    [SL_WL_TRAIN] = mesh_words,
    [SL_WL_RESHARD] = mesh_words,
};

static int dev_scroll(const sl_view *v, int rows)
{
	int n = v->m->ndev;
	if (n <= rows || v->sel.kind != SL_SEL_DEVICE)
		return 0;
	int s = v->sel.dev - rows + 1;
	return s < 0 ? 0 : s > n - rows ? n - rows : s;
}

static int folded(const sl_view *v, int rows);

int sl_devices_row_item(const sl_view *v, sl_rect r, int y)
{
	int rows = r.h - 2, i = y - (r.y + 1);
	if (i < 0 || i >= rows || folded(v, rows))
		return -1;
	i += dev_scroll(v, rows);
	return i < v->m->ndev ? i : -1;
}

/* "recv<-3->1", "compute", "done". */
static void state_text(const sl_view *v, const sl_scene_dev *d, char *b, size_t n)
{
	const sl_glyphs *g = v->th->g;
	if (d->finished && (d->state == SL_DS_IDLE || d->state == SL_DS_WAIT)) {
		snprintf(b, n, "done");
		return;
	}
	size_t len = (size_t)snprintf(b, n, "%s", sl_dstate_name(d->state));
	if (d->recv_from >= 0 && len < n)
		len += (size_t)snprintf(b + len, n - len, "%s%d", g->larrow, d->recv_from);
	if (d->send_to >= 0 && len < n)
		snprintf(b + len, n - len, "%s%d", g->arrow, d->send_to);
}

/* A bar of w cells for a fraction, in eighths. */
static void bar(const sl_view *v, int y, int x, int w, double frac, attr_t a)
{
	const sl_glyphs *g = v->th->g;
	if (!(frac >= 0))
		frac = 0;
	if (frac > 1)
		frac = 1;
	int eighths = (int)lround(frac * w * 8);
	if (frac > 0 && eighths == 0)
		eighths = 1; /* something held is never drawn as nothing */
	for (int i = 0; i < w; i++) {
		int e = eighths - i * 8;
		e = e < 0 ? 0 : e > 8 ? 8 : e;
		sl_rep(y, x + i, 1, a, g->bar[e]);
	}
}

/* One cell of a device's copy of Y: its colour is the block's owner's, its
 * glyph how many partial sums it holds. */
void sl_draw_block_cell(const sl_view *v, int y, int x, int dev, int b);
void sl_draw_block_cell(const sl_view *v, int y, int x, int dev, int b)
{
	const sl_scene_blocks *B = &v->m->blk;
	const sl_glyphs *g = v->th->g;
	uint64_t have = B->have[dev][b];
	if (B->incoming[dev][b] >= 0 && have != B->full) {
		sl_rep(y, x, 1, sl_theme_dev(v->th, b), g->incoming);
		return;
	}
	if (have == 0) {
		sl_rep(y, x, 1, sl_theme_role(v->th, SL_ROLE_DIM), g->level[0]);
		return;
	}
	if (have == B->full) {
		char c[2] = {sl_dev_char(b), 0};
		sl_put(y, x, 1, sl_theme_devbg(v->th, b), v->th->color ? c : g->level[4]);
		return;
	}
	int k = __builtin_popcountll(have), p = B->p;
	int lvl = 1 + (k - 1) * 3 / (p > 1 ? p - 1 : 1);
	if (lvl > 3)
		lvl = 3;
	sl_rep(y, x, 1, sl_theme_dev(v->th, b), g->level[lvl]);
}

/* Devices of several nodes that do not fit a row each: a row per node,
 * a state glyph per device, then the links between the nodes with their
 * transfers, so every device and the node boundary stay in view. */
static int per_node(const sl_view *v)
{
	int pn = v->sc->cluster.devices_per_node;
	return pn > 0 && pn < v->m->ndev ? pn : v->m->ndev;
}

/* Folded when a row each would hide a node entirely: lesson 7's 16
 * devices in 6 rows, not lesson 10's 8 (a device of each node shows, with
 * its place in the mesh). */
static int folded(const sl_view *v, int rows)
{
	return v->multi_node && v->m->ndev > rows && v->m->ndev - per_node(v) >= rows;
}

static void draw_nodes(const sl_view *v, sl_rect in)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
	attr_t dim = sl_theme_role(v->th, SL_ROLE_DIM);
	int pn = per_node(v), nodes = (m->ndev + pn - 1) / pn, end = in.x + in.w;
	/* The links between nodes, at least one row for them and its heading. */
	int ninter = 0;
	for (int i = 0; i < m->nlinks; i++)
		ninter += m->link[i].inter;
	int node_rows = nodes;
	if (node_rows > in.h - 2)
		node_rows = in.h - 2 < 1 ? 1 : in.h - 2;
	int y = in.y;
	for (int nd = 0; nd < node_rows; nd++, y++) {
		int last = nd == node_rows - 1 && node_rows < nodes;
		if (last) {
			sl_putf(y, in.x, in.w, dim, " +%d nodes more", nodes - nd);
			break;
		}
		int lo = nd * pn, hi = lo + pn - 1 < m->ndev ? lo + pn - 1 : m->ndev - 1;
		int x = in.x + sl_putf(y, in.x, in.w, norm, " n%d %2d-%-2d ", nd, lo, hi);
		int done = 1;
		for (int d = lo; d <= hi; d++)
			done &= m->dev[d].finished;
		if (done) {
			sl_put(y, x, end - x, norm, "done");
			continue;
		}
		int step = end - x >= 2 * (hi - lo + 1) ? 2 : 1;
		for (int d = lo; d <= hi && x < end; d++, x += step) {
			const sl_scene_dev *dv = &m->dev[d];
			sl_dstate st =
			    dv->finished && (dv->state == SL_DS_IDLE || dv->state == SL_DS_WAIT)
			        ? SL_DS_IDLE
			        : dv->state;
			int sel = v->sel.kind == SL_SEL_DEVICE && v->sel.dev == d;
			sl_put(y, x, 1,
			       sel ? sl_theme_role(v->th, SL_ROLE_SELECT)
			           : sl_theme_state(v->th, st),
			       g->state[st]);
		}
	}
	if (y >= in.y + in.h || ninter == 0)
		return;
	char bw[24], lat[24];
	sl_fmt_rate(v->sc->cluster.inter.bandwidth, bw, sizeof bw);
	sl_fmt_time(v->sc->cluster.inter.latency, lat, sizeof lat);
	sl_putf(y++, in.x, in.w, sl_theme_role(v->th, SL_ROLE_INTER), "%s inter-node %s %s %s",
	        g->h, bw, lat, g->h);
	int shown = 0;
	for (int i = 0; i < m->nlinks && y < in.y + in.h; i++) {
		const sl_scene_link *l = &m->link[i];
		if (!l->inter)
			continue;
		if (y == in.y + in.h - 1 && ninter - shown > 1) {
			sl_putf(y++, in.x, in.w, dim, " +%d links more", ninter - shown);
			break;
		}
		int x = in.x + sl_putf(y, in.x, in.w, norm, "%2d%s%-2d n%d%sn%d ", l->src, g->arrow,
		                       l->dst, l->src / pn, g->arrow, l->dst / pn);
		int w = end - x - 5;
		if (w >= 4) {
			link_bar(v, y, x, w, l);
			x += w;
			if (l->fill >= 0)
				sl_putf(y, x, end - x, norm, " %3d%%",
				        (int)floor(l->fill * 100 + 1e-9));
		}
		y++;
		shown++;
	}
}

void sl_draw_devices(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	char title[48];
	snprintf(title, sizeof title, "Devices (%d)", m->ndev);
	sl_rect in = sl_box(v, r, title);
	if (folded(v, in.h)) {
		draw_nodes(v, in);
		return;
	}
	int rows = in.h, first = dev_scroll(v, rows);
	for (int i = 0; i < rows && first + i < m->ndev; i++) {
		int d = first + i, y = in.y + i, x = in.x, end = in.x + in.w;
		const sl_scene_dev *dv = &m->dev[d];
		int sel = v->sel.kind == SL_SEL_DEVICE && v->sel.dev == d;
		attr_t norm = sl_theme_role(v->th, sel ? SL_ROLE_SELECT : SL_ROLE_NORMAL);
		if (sel)
			sl_rep(y, in.x, in.w, norm, " ");
		x += sl_putf(y, x, end - x, sel ? norm : sl_theme_dev(v->th, d), "%2d", d);
		if (v->multi_node)
			x += sl_putf(y, x, end - x, norm, " n%d",
			             v->sc->cluster.devices_per_node > 0
			                 ? d / v->sc->cluster.devices_per_node
			                 : 0);
		x += sl_put(y, x, end - x, norm, " ");
		sl_dstate st = dv->finished && dv->state == SL_DS_IDLE ? SL_DS_IDLE : dv->state;
		x += sl_put(y, x, end - x, sl_theme_state(v->th, st), g->state[st]);
		char s[32];
		state_text(v, dv, s, sizeof s);
		/* Pad by columns: the arrows are several bytes. */
		int sw = sl_put(y, x + 1, end - x - 1, sel ? norm : sl_theme_state(v->th, st), s);
		x += 1 + (sw > 11 ? sw : 11) + 1;
		/* Its copy of Y, block by block. */
		if (m->blk.valid && end - x >= m->ndev + 2) {
			x += sl_put(y, x, end - x, norm, "Y");
			for (int b = 0; b < m->ndev; b++)
				sl_draw_block_cell(v, y, x + b, d, b);
			x += m->ndev + 1;
		}
		/* Memory: used of capacity. */
		if (end - x >= 6) {
			double frac = v->sc->cluster.memory
			                  ? (double)dv->mem / (double)v->sc->cluster.memory
			                  : 0;
			sl_put(y, x, 1, sl_theme_role(v->th, SL_ROLE_DIM), g->mem_l);
			bar(v, y, x + 1, 4, frac, sl_theme_dev(v->th, d));
			sl_put(y, x + 5, 1, sl_theme_role(v->th, SL_ROLE_DIM), g->mem_r);
			x += 6;
		}
		char mem[24], shard[40];
		sl_fmt_bytes((double)dv->mem, mem, sizeof mem);
		shard_of[m->kind](m, d, shard, sizeof shard);
		/* Where both do not fit, the shard's name wins over the
		 * memory's figure (its bar stays): lesson 10 is about which
		 * devices make a group. */
		if (end - x >= sl_cols(mem) + 1 &&
		    (end - x >= sl_cols(mem) + 1 + sl_cols(shard) || end - x < sl_cols(shard)))
			x += sl_putf(y, x, end - x, norm, " %s", mem);
		if (end - x >= sl_cols(shard))
			sl_put(y, x, end - x, norm, shard);
	}
	if (m->ndev > rows)
		sl_putf(r.y + r.h - 1, r.x + r.w - 12, 10, sl_theme_role(v->th, SL_ROLE_DIM),
		        " %d-%d ", first, first + rows - 1);
}

/* ---- links ---- */

/* Rows of the links panel: the inter-node links first under their
 * heading (they are few, and the point where there are any), then the
 * intra-node ones, under theirs when both kinds are there.  Returns the
 * number of rows; item[i] is a link index, or -1 and -2 for the headings. */
static int link_rows(const sl_view *v, int *item, int cap)
{
	const sl_scene *m = v->m;
	int n = 0, inter = 0;
	for (int pass = 1; pass >= 0; pass--) {
		int head = 0;
		for (int i = 0; i < m->nlinks && n < cap; i++) {
			if (m->link[i].inter != pass)
				continue;
			if (!head && (pass == 1 || inter)) {
				item[n++] = pass == 1 ? -1 : -2;
				head = 1;
				if (n == cap)
					break;
			}
			inter |= pass;
			item[n++] = i;
		}
	}
	return n;
}

static int link_scroll(const sl_view *v, const int *item, int n, int rows)
{
	if (n <= rows || v->sel.kind != SL_SEL_LINK)
		return 0;
	for (int i = 0; i < n; i++)
		if (item[i] >= 0 && v->m->link[item[i]].src == v->sel.src &&
		    v->m->link[item[i]].dst == v->sel.dst) {
			int s = i - rows + 1;
			return s < 0 ? 0 : s > n - rows ? n - rows : s;
		}
	return 0;
}

int sl_links_row_item(const sl_view *v, sl_rect r, int y)
{
	int item[SL_SCENE_MAX_LINKS + 1];
	int n = link_rows(v, item, SL_SCENE_MAX_LINKS + 1), rows = r.h - 2;
	int i = y - (r.y + 1);
	if (i < 0 || i >= rows)
		return -1;
	i += link_scroll(v, item, n, rows);
	return i < n ? item[i] : -1;
}

/* The transfer in flight: delivered, the head, what is still to come. */
static void link_bar(const sl_view *v, int y, int x, int w, const sl_scene_link *l)
{
	const sl_glyphs *g = v->th->g;
	attr_t cls = sl_theme_role(v->th, l->inter ? SL_ROLE_INTER : SL_ROLE_INTRA);
	attr_t dim = sl_theme_role(v->th, SL_ROLE_DIM);
	const char *todo = l->inter ? g->line_inter : g->line_todo;
	if (l->fill < 0) {
		sl_rep(y, x, w, dim, todo);
		return;
	}
	int head = (int)floor(l->fill * (w - 1) + 1e-9);
	sl_rep(y, x, head, cls | A_BOLD, l->inter ? g->line_inter : g->line_done);
	sl_rep(y, x + head, 1, sl_theme_state(v->th, SL_DS_SEND), g->line_head);
	sl_rep(y, x + head + 1, w - head - 1, dim, todo);
}

void sl_draw_links(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	const sl_link_spec *intra = &v->sc->cluster.intra, *inter = &v->sc->cluster.inter;
	char title[96], bw[24], lat[24];
	int wide = r.w - 2 >= 44;
	snprintf(title, sizeof title, "Links");
	if (!wide && m->nlinks > 0) {
		sl_fmt_rate(intra->bandwidth, bw, sizeof bw);
		sl_fmt_time(intra->latency, lat, sizeof lat);
		snprintf(title, sizeof title, "Links %s %s", bw, lat);
	}
	sl_rect in = sl_box(v, r, title);
	int item[SL_SCENE_MAX_LINKS + 1];
	int n = link_rows(v, item, SL_SCENE_MAX_LINKS + 1);
	int first = link_scroll(v, item, n, in.h);
	if (n == 0) {
		sl_put(in.y, in.x, in.w, sl_theme_role(v->th, SL_ROLE_DIM),
		       m->ndev > 1 ? " no transfer yet" : " one device: no links");
		return;
	}
	for (int row = 0; row < in.h && first + row < n; row++) {
		int y = in.y + row, x = in.x, end = in.x + in.w;
		int it = item[first + row];
		if (it < 0) {
			const sl_link_spec *sp = it == -1 ? inter : intra;
			sl_fmt_rate(sp->bandwidth, bw, sizeof bw);
			sl_fmt_time(sp->latency, lat, sizeof lat);
			sl_putf(y, x, in.w,
			        sl_theme_role(v->th, it == -1 ? SL_ROLE_INTER : SL_ROLE_DIM),
			        "%s %s %s %s %s", g->h, it == -1 ? "inter-node" : "in a node", bw,
			        lat, g->h);
			continue;
		}
		const sl_scene_link *l = &m->link[it];
		int sel =
		    v->sel.kind == SL_SEL_LINK && v->sel.src == l->src && v->sel.dst == l->dst;
		attr_t norm = sl_theme_role(v->th, sel ? SL_ROLE_SELECT : SL_ROLE_NORMAL);
		if (sel)
			sl_rep(y, in.x, in.w, norm, " ");
		char lab[24];
		snprintf(lab, sizeof lab, "%2d%s%-2d", l->src, g->arrow, l->dst);
		x += sl_put(y, x, end - x, norm, lab);
		x += sl_put(y, x, end - x, norm, " ");
		const sl_link_spec *cls = l->inter ? inter : intra;
		int custom =
		    l->bandwidth != cls->bandwidth || fabs(l->latency - cls->latency) > 1e-15;
		int tail = 5 + (wide || custom ? 19 : 0);
		int bw_cols = end - x - tail;
		if (bw_cols < 4)
			bw_cols = 4;
		link_bar(v, y, x, bw_cols, l);
		x += bw_cols;
		if (l->fill >= 0)
			x += sl_putf(y, x, end - x, norm, " %3d%%",
			             (int)floor(l->fill * 100 + 1e-9));
		else
			x += sl_put(y, x, end - x, norm, "     ");
		if (wide || custom) {
			sl_fmt_rate(l->bandwidth, bw, sizeof bw);
			sl_fmt_time(l->latency, lat, sizeof lat);
			sl_putf(y, x, end - x, custom ? sl_theme_role(v->th, SL_ROLE_WARN) : norm,
			        " %9s %7s%s", bw, lat, custom ? g->custom : "");
		}
	}
	if (n > in.h)
		sl_putf(r.y + r.h - 1, r.x + r.w - 14, 12, sl_theme_role(v->th, SL_ROLE_DIM),
		        " %d more ", n - in.h);
}
