/* SPDX-License-Identifier: MIT */
/* view_matrices.c - X . W = Y, each block in the colour (and digit) of the
 * device that owns it.
 *
 * Column-wise: X is replicated, W is cut into column blocks, and Y's column
 * blocks appear as each device finishes its product (then the all-gather
 * copies them everywhere: see each device's Y in the devices panel).
 * Row-wise: X's column blocks meet W's row blocks; every device makes a
 * full-size partial Y, and Y's chunks fill in as the all-reduce sums them. */
#include <stdio.h>
#include <string.h>

#include "coll.h"
#include "draw.h"

/* The block (device) that element index i of a dimension of size dim
 * belongs to, for p even-ish blocks. */
static int block_of(double frac, const size_t *off, int p)
{
	double c = frac * (double)off[p];
	for (int b = 0; b < p; b++)
		if (c < (double)off[b + 1])
			return b;
	return p - 1;
}

/* What a cell of a matrix shows. */
enum cell { CELL_ALL, CELL_OWNED, CELL_Y };

static void cell(const sl_view *v, int y, int x, int dev, int first_row_of_block)
{
	char c[2] = {sl_dev_char(dev), 0};
	/* In colour the background says which device; a digit on the block's
	 * first row names it.  Without colour, every cell carries the digit. */
	const char *s = (!v->th->color || first_row_of_block) ? c : " ";
	sl_put(y, x, 1, sl_theme_devbg(v->th, dev), s);
}

/* Y's block b as a whole: the most complete copy of it on any device. */
static void y_cell(const sl_view *v, int y, int x, int b, int first)
{
	const sl_scene *m = v->m;
	const sl_scene_blocks *B = &m->blk;
	const sl_glyphs *g = v->th->g;
	if (!B->valid) {
		sl_put(y, x, 1, sl_theme_role(v->th, SL_ROLE_DIM), "?");
		return;
	}
	int best = 0;
	float incoming = -1;
	for (int d = 0; d < B->p; d++) {
		int k = __builtin_popcountll(B->have[d][b]);
		if (B->have[d][b] == B->full)
			k = B->p;
		if (k > best)
			best = k;
		if (B->incoming[d][b] > incoming)
			incoming = B->incoming[d][b];
	}
	if (best == B->p || (m->split != SL_SPLIT_ROW && best > 0)) {
		cell(v, y, x, b, first);
		return;
	}
	if (best == 0 && incoming >= 0) {
		sl_put(y, x, 1, sl_theme_dev(v->th, b), g->incoming);
		return;
	}
	if (best == 0) {
		sl_put(y, x, 1, sl_theme_role(v->th, SL_ROLE_DIM), g->level[0]);
		return;
	}
	int lvl = 1 + (best - 1) * 3 / (B->p > 1 ? B->p - 1 : 1);
	sl_put(y, x, 1, sl_theme_dev(v->th, b), g->level[lvl > 3 ? 3 : lvl]);
}

/* Draw one matrix of gh x gw cells.  split: 0 none (replicated), 1 by
 * columns, 2 by rows; off: block boundaries along the split dimension. */
static void matrix(const sl_view *v, int y, int x, int gh, int gw, int split, const size_t *off,
                   int p, int is_y)
{
	for (int r = 0; r < gh; r++)
		for (int c = 0; c < gw; c++) {
			int b = 0, first = 0;
			if (split == 1) {
				b = block_of((c + 0.5) / gw, off, p);
				first = r == 0;
			} else if (split == 2) {
				b = block_of((r + 0.5) / gh, off, p);
				first = r == 0 || block_of((r - 0.5) / gh, off, p) != b;
				first = first && c == 0;
			}
			if (is_y)
				y_cell(v, y + r, x + c, b,
				       first && (split != 1 || c == 0 ||
				                 block_of((c - 0.5) / gw, off, p) != b));
			else if (split == 0)
				sl_put(y + r, x + c, 1, sl_theme_role(v->th, SL_ROLE_DIM),
				       v->th->g->level[1]);
			else
				cell(v, y + r, x + c, b,
				     first && (split != 1 || c == 0 ||
				               block_of((c - 0.5) / gw, off, p) != b));
		}
}

/* A training layout: the Megatron split of a block over the TP group, the
 * pipeline's stages and the data-parallel replicas, as the layout has them. */
static void draw_train(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_layout *l = &m->train->l;
	const sl_model_spec *ms = &m->train->m;
	const sl_glyphs *g = v->th->g;
	sl_rect in = sl_box(v, r, "Layout: one training step");
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL), head = sl_theme_role(v->th, SL_ROLE_HEAD),
	       dim = sl_theme_role(v->th, SL_ROLE_DIM);
	int row = 0, w = in.w - 1;
#define LINE(a, ...)                                                                          \
	do {                                                                                  \
		if (row < in.h)                                                               \
			sl_putf(in.y + row++, in.x + 1, w, a, __VA_ARGS__);                   \
	} while (0)
	char ord[16];
	LINE(head, "tp=%d pp=%d dp=%d %s mesh %s %s %d micro-batch%s", l->tp, l->pp, l->dp, g->dot,
	     sl_mesh_order_name(l->order, ord, sizeof ord), g->dot, l->microbatches,
	     l->microbatches == 1 ? "" : "es");
	if (l->tp > 1) {
		int f = ms->ffn, h = ms->hidden, t = l->tp;
		LINE(norm, "MLP over %d devices (Megatron):", t);
		LINE(norm, " fc1 %dx%d column-parallel: %dx%d each, GeLU local", h, f, h, f / t);
		LINE(norm, " fc2 %dx%d row-parallel: %dx%d each, partial sums", f, h, f / t, h);
		LINE(norm, " %s", l->seq_parallel ? "reduce-scatter + all-gather instead of all-reduce"
		                                  : "one all-reduce forward, one of dX backward");
		if (ms->heads > 0)
			LINE(norm, " attention: %d of %d heads each, proj row-parallel",
			     ms->heads / t, ms->heads);
	}
	if (l->pp > 1) {
		LINE(norm, "pipeline: %d stages, %s%s", l->pp, sl_sched_name(l->schedule),
		     l->chunks > 1 ? " (interleaved chunks)" : "");
		for (int st = 0; st < l->pp && row < in.h; st++) {
			char buf[160];
			int len = snprintf(buf, sizeof buf, " stage %d:", st);
			for (int c = 0; c < l->chunks; c++) {
				int first, count;
				sl_layout_blocks(ms, l, st, c, &first, &count);
				len += snprintf(buf + len, sizeof buf - (size_t)len, " blocks %d-%d", first,
				                first + count - 1);
			}
			snprintf(buf + len, sizeof buf - (size_t)len, " %s devices", g->dot);
			LINE(norm, "%s", buf);
			int x = in.x + 2 + sl_cols(buf);
			for (int d = 0; d < m->ndev; d++) {
				int ct, cp, cd;
				sl_mesh_coords(l, d, &ct, &cp, &cd);
				if (cp == st && x + 3 < in.x + in.w)
					x += sl_putf(in.y + row - 1, x, 3, sl_theme_dev(v->th, d), "%d ", d);
			}
		}
	}
	if (l->dp > 1)
		LINE(norm, "data parallel: %d replicas, %d sequences each; gradients %s", l->dp,
		     ms->batch / l->dp, l->zero1 ? "reduce-scattered (ZeRO-1)" : "all-reduced");
	if (l->tp * l->pp * l->dp == 1)
		LINE(norm, "one device: the whole model");
	LINE(dim, "model: %d blocks, width %d, ffn %d, %d heads", ms->layers, ms->hidden, ms->ffn,
	     ms->heads);
#undef LINE
}

/* ---- resharding a checkpoint ---- */

/* The move of list mv (n of them) for tensor t and device dev (-1: any)
 * whose rectangle holds element (row, col); NULL if none. */
static const sl_ckpt_move *move_at(const sl_ckpt_move *mv, int n, int t, int dev, int row, int col)
{
	for (int i = 0; i < n; i++)
		if (mv[i].tensor == t && (dev < 0 || mv[i].dev == dev) && row >= mv[i].off[0] &&
		    row < mv[i].off[0] + mv[i].shape[0] && col >= mv[i].off[1] &&
		    col < mv[i].off[1] + mv[i].shape[1])
			return &mv[i];
	return NULL;
}

static const sl_ckpt_chunk *chunk_at(const sl_ckpt_tensor *T, int row, int col)
{
	for (int k = 0; k < T->nchunks; k++) {
		const sl_ckpt_chunk *c = &T->chunks[k];
		if (row >= c->off[0] && row < c->off[0] + c->shape[0] && col >= c->off[1] &&
		    col < c->off[1] + c->shape[1])
			return c;
	}
	return NULL;
}

/* One tensor, stored (left) and under the new layout (right), gh x gw
 * cells each.  Stored: each chunk in the colour of the device that saved
 * it.  New: each part in the colour of the device that writes it in the
 * new checkpoint: arriving while that device reads it, held once read,
 * solid once written. */
static void ckpt_tensor(const sl_view *v, int y, int x, int gh, int gw, int t)
{
	const sl_scene *m = v->m;
	const sl_play_train *tr = m->train;
	const sl_ckpt_tensor *T = &sl_ckpt_info_of(tr->ck)->tensors[t];
	const sl_glyphs *g = v->th->g;
	attr_t dim = sl_theme_role(v->th, SL_ROLE_DIM);
	for (int r = 0; r < gh; r++)
		for (int c = 0; c < gw; c++) {
			int row = (int)((r + 0.5) / gh * T->rows),
			    col = (int)((c + 0.5) / gw * T->cols);
			int up = r > 0 ? (int)((r - 0.5) / gh * T->rows) : -1;
			int left = c > 0 ? (int)((c - 0.5) / gw * T->cols) : -1;
			const sl_ckpt_chunk *ch = chunk_at(T, row, col);
			if (ch) {
				int first = (up < 0 || chunk_at(T, up, col) != ch) &&
				            (left < 0 || chunk_at(T, row, left) != ch);
				cell(v, y + r, x + c, ch->owner, first);
			}
			const sl_ckpt_move *w = move_at(tr->writes, tr->nwrites, t, -1, row, col);
			int nx = x + gw + 3 + c;
			if (!w) {
				sl_put(y + r, nx, 1, dim, "?");
				continue;
			}
			const sl_ckpt_move *rd =
			    move_at(tr->reads, tr->nreads, t, w->dev, row, col);
			double got = rd ? sl_scene_io_fill(m, 0, w->dev, rd->chunk) : -1;
			double put = sl_scene_io_fill(m, 1, w->dev, w->chunk);
			if (put >= 1) {
				int first = (up < 0 || move_at(tr->writes, tr->nwrites, t, -1, up,
				                               col) != w) &&
				            (left < 0 || move_at(tr->writes, tr->nwrites, t, -1,
				                                 row, left) != w);
				cell(v, y + r, nx, w->dev, first);
			} else if (got >= 1) {
				sl_put(y + r, nx, 1, sl_theme_dev(v->th, w->dev), g->level[3]);
			} else if (got > 0) {
				sl_put(y + r, nx, 1, sl_theme_dev(v->th, w->dev), g->incoming);
			} else {
				sl_put(y + r, nx, 1, dim, g->level[0]);
			}
		}
}

static void draw_ckpt(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_play_train *tr = m->train;
	const sl_ckpt_info *ci = sl_ckpt_info_of(tr->ck);
	const sl_layout *s = &ci->layout, *l = &tr->l;
	const sl_glyphs *g = v->th->g;
	char title[160];
	snprintf(title, sizeof title, "Resharding: tp=%d pp=%d dp=%d %s tp=%d pp=%d dp=%d", s->tp,
	         s->pp, s->dp, g->arrow, l->tp, l->pp, l->dp);
	sl_rect in = sl_box(v, r, title);
	attr_t head = sl_theme_role(v->th, SL_ROLE_HEAD), dim = sl_theme_role(v->th, SL_ROLE_DIM),
	       norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
	/* Block 0's tensors that show each kind of split (every block is alike). */
	static const int kinds[] = {SL_T_QKV_W, SL_T_FC1_W, SL_T_FC2_W, SL_T_FC2_B};
	int pick[4], np = 0;
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		for (int t = 0; t < ci->ntensors; t++) {
			sl_tensor_info ti;
			if (sl_model_tensor(&ci->model, t, &ti) == SL_OK && ti.block == 0 &&
			    ti.kind == kinds[k])
				pick[np++] = t;
		}
	int gw = (in.w - 6) / 2, avail = in.h - 2; /* the header and the legend */
	if (gw > 40)
		gw = 40;
	while (np > 0 && avail / np < 2)
		np--;
	if (np == 0 || gw < 4) {
		sl_put(in.y, in.x, in.w, dim, " (too small for the tensors)");
		return;
	}
	int gh = avail / np - 1;
	if (gh > 4)
		gh = 4;
	int y = in.y, x = in.x + 1;
	char lab[96];
	snprintf(lab, sizeof lab, "stored (%d device%s)", ci->devices, ci->devices == 1 ? "" : "s");
	sl_put(y, x, gw + 2, head, lab);
	snprintf(lab, sizeof lab, "new (%d device%s)", m->ndev, m->ndev == 1 ? "" : "s");
	sl_put(y++, x + gw + 3, gw, head, lab);
	for (int i = 0; i < np; i++) {
		const sl_ckpt_tensor *T = &ci->tensors[pick[i]];
		snprintf(lab, sizeof lab, "%s %d%s%d, %s", T->name, T->rows, g->times, T->cols,
		         T->split == SL_TS_HEADS    ? "by heads (columns)"
		         : T->split == SL_TS_COLUMN ? "column-parallel"
		         : T->split == SL_TS_ROW    ? "row-parallel"
		                                    : "replicated");
		sl_put(y, x, in.w - 1, norm, lab);
		ckpt_tensor(v, y + 1, x, gh, gw, pick[i]);
		y += gh + 1;
	}
	if (y < in.y + in.h) {
		snprintf(lab, sizeof lab,
		         "digits: the device %s %s reading %s read %s solid: written", g->dot,
		         g->incoming, g->level[3], g->dot);
		sl_put(y, x, in.w - 1, dim, lab);
	}
}

/* A lone collective: each device's buffer in p blocks, as the ring leaves
 * them at the cursor.  All-reduce and reduce-scatter: how many devices'
 * data each block sums (a partial sum grows by one a step; "full" when it
 * holds all p); all-gather: whose block is there yet. */
static void draw_coll(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_play_train *tr = m->train;
	int p = m->ndev, gather = tr->op == SL_COLL_ALLGATHER;
	char title[120];
	snprintf(title, sizeof title, "Buffers: %s, %s, in %d blocks", sl_coll_op_name(tr->op),
	         sl_algo_name(tr->algo), p);
	sl_rect in = sl_box(v, r, title);
	attr_t dim = sl_theme_role(v->th, SL_ROLE_DIM), pass = sl_theme_role(v->th, SL_ROLE_PASS),
	       warn = sl_theme_role(v->th, SL_ROLE_WARN);
	int cnt[SL_MAX_FULL_DEVICES];
	int cw = p > 0 ? (in.w - 6) / p : 0;
	if (cw > 6)
		cw = 6;
	if (p > SL_MAX_FULL_DEVICES || sl_scene_coll_blocks(m, 0, p, cnt) || cw < 1) {
		sl_put_wrapped(in.y, in.x + 1, in.w - 2, in.h, dim,
		               "Block by block for ring all-reduce, reduce-scatter and all-gather; "
		               "follow this one on the timeline and the links.");
		return;
	}
	int rows = in.h - 1; /* the legend */
	int shown = p <= rows ? p : rows - 1; /* and a line saying how many more */
	for (int d = 0; d < shown; d++) {
		int y = in.y + d, x = in.x + 1;
		sl_putf(y, x, 4, sl_theme_dev(v->th, d), "%3d", d);
		x += 4;
		sl_scene_coll_blocks(m, d, p, cnt);
		for (int b = 0; b < p; b++, x += cw) {
			char cell[16];
			attr_t a;
			if (gather) {
				a = cnt[b] ? sl_theme_devbg(v->th, b) : dim;
				snprintf(cell, sizeof cell, "%c", cnt[b] ? sl_dev_char(b) : '.');
			} else {
				a = cnt[b] == p ? pass | A_REVERSE : cnt[b] > 1 ? warn : dim;
				snprintf(cell, sizeof cell, "%d", cnt[b]);
			}
			/* The cell's text centred in its width, one column apart. */
			int w = cw > 1 ? cw - 1 : 1, pad = (w - (int)strlen(cell)) / 2;
			sl_rep(y, x, w, a, " ");
			sl_put(y, x + (pad > 0 ? pad : 0), w, a, cell);
		}
	}
	if (shown < p && shown >= 0)
		sl_putf(in.y + shown, in.x + 1, in.w - 2, dim, "... %d more device%s", p - shown,
		        p - shown == 1 ? "" : "s");
	sl_put(in.y + in.h - 1, in.x + 1, in.w - 2, dim,
	       gather ? "each block shows whose data it is; '.' not here yet"
	              : "each block: how many devices' data it sums; reversed: all of them");
}

void sl_draw_matrices(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	if (m->train && m->train->ck) {
		draw_ckpt(v, r);
		return;
	}
	if (m->train && m->train->coll) {
		draw_coll(v, r);
		return;
	}
	if (m->train) {
		draw_train(v, r);
		return;
	}
	const sl_scenario *sc = v->sc;
	const sl_glyphs *g = v->th->g;
	int row = m->split == SL_SPLIT_ROW;
	sl_rect in = sl_box(v, r,
	                    row                        ? "Matrices: Y = X W, split by rows of W"
	                    : m->split == SL_SPLIT_COL ? "Matrices: Y = X W, split by columns of W"
	                                               : "Matrices: Y = X W on one device");
	int p = m->ndev;
	size_t off[SL_MAX_DEVICES + 1], yoff[SL_MAX_DEVICES + 1];
	size_t dim = (size_t)(row ? sc->gemm.k : sc->gemm.n);
	sl_block_offsets(dim, p, NULL, off);
	/* Y's blocks are the collective's: column shards, or even chunks of
	 * the row-major buffer (row bands). */
	if (row)
		sl_block_offsets((size_t)sc->gemm.m * (size_t)sc->gemm.n, p, NULL, yoff);
	else
		memcpy(yoff, off, sizeof yoff);
	int gh = in.h - 1;
	if (gh < 1)
		return;
	if (gh > 2 * p + 2)
		gh = 2 * p + 2;
	int avail = in.w - 8;
	double k = sc->gemm.k, n = sc->gemm.n;
	int wx = (int)(avail * k / (k + 2 * n)), ww = (avail - wx) / 2, wy = avail - wx - ww;
	int mins = p < 3 ? 3 : p;
	if (wx < mins)
		wx = mins;
	if (ww < mins)
		ww = mins;
	if (wy < mins)
		wy = mins;
	if (wx + ww + wy + 8 > in.w) {
		sl_put(in.y, in.x, in.w, sl_theme_role(v->th, SL_ROLE_DIM),
		       " (too narrow for the matrices)");
		return;
	}
	int x0 = in.x + 1, xw = x0 + wx + 3, xy = xw + ww + 3;
	char lab[48];
	attr_t head = sl_theme_role(v->th, SL_ROLE_HEAD);
	snprintf(lab, sizeof lab, "X %d%s%d", sc->gemm.m, g->times, sc->gemm.k);
	sl_put(in.y, x0, wx + 2, head, lab);
	snprintf(lab, sizeof lab, "W %d%s%d", sc->gemm.k, g->times, sc->gemm.n);
	sl_put(in.y, xw, ww + 2, head, lab);
	snprintf(lab, sizeof lab, "Y %d%s%d", sc->gemm.m, g->times, sc->gemm.n);
	sl_put(in.y, xy, wy + 1, head, lab);
	int y = in.y + 1;
	if (m->split == SL_SPLIT_SINGLE || p == 1) {
		matrix(v, y, x0, gh, wx, 1, off, 1, 0);
		matrix(v, y, xw, gh, ww, 1, off, 1, 0);
	} else if (row) {
		matrix(v, y, x0, gh, wx, 1, off, p, 0); /* X's column blocks */
		matrix(v, y, xw, gh, ww, 2, off, p, 0); /* W's row blocks */
	} else {
		matrix(v, y, x0, gh, wx, 0, off, p, 0); /* X replicated */
		matrix(v, y, xw, gh, ww, 1, off, p, 0); /* W's column blocks */
	}
	matrix(v, y, xy, gh, wy, row ? 2 : 1, yoff, p, 1);
	int mid = y + (gh - 1) / 2;
	sl_put(mid, x0 + wx + 1, 1, sl_theme_role(v->th, SL_ROLE_NORMAL), g->dot);
	sl_put(mid, xw + ww + 1, 1, sl_theme_role(v->th, SL_ROLE_NORMAL), "=");
	/* A legend where there is room. */
	int ly = y + gh;
	if (ly < in.y + in.h) {
		char leg[160];
		if (m->split == SL_SPLIT_COL)
			snprintf(
			    leg, sizeof leg,
			    "X on every device %s digits: the device owning a block %s %s arriving",
			    g->dot, g->dot, g->incoming);
		else if (row)
			snprintf(leg, sizeof leg,
			         "Y: %s%s%s%s partial sums, %s%s%s complete %s %s arriving",
			         g->level[1], g->level[2], g->level[3], "", "", g->dot, "", g->dot,
			         g->incoming);
		else
			snprintf(leg, sizeof leg, "one device holds everything");
		sl_put(ly, x0, in.w - 1, sl_theme_role(v->th, SL_ROLE_DIM), leg);
	}
}
