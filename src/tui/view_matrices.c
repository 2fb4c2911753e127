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

/* A size abbreviated honestly: 8192 is 8k (only when 1024 divides it
 * exactly); never cut to "409". */
static void short_dim(char *b, size_t n, int d)
{
	if (d >= 1024 && d % 1024 == 0)
		snprintf(b, n, "%dk", d / 1024);
	else
		snprintf(b, n, "%d", d);
}

/* "W 8192×4096" when it fits w columns, else "W 8k×4k", else "W". */
static void dims_label(char *lab, size_t n, const char *name, int r, int c, const char *times,
                       int w)
{
	snprintf(lab, n, "%s %d%s%d", name, r, times, c);
	if (sl_cols(lab) <= w)
		return;
	char a[16], b[16];
	short_dim(a, sizeof a, r);
	short_dim(b, sizeof b, c);
	snprintf(lab, n, "%s %s%s%s", name, a, times, b);
	if (sl_cols(lab) > w)
		snprintf(lab, n, "%s", name);
}

/* Y's block b as a whole: the most complete copy of it on any device. */
static void y_cell(const sl_view *v, int y, int x, int b, int first)
{
	const sl_scene *m = v->m;
	const sl_scene_blocks *B = &m->blk;
	const sl_glyphs *g = v->th->g;
	if (!B->valid) {
		sl_put(y, x, 1, sl_theme_role(v->th, SL_ROLE_DIM), g->unknown);
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
				       v->th->g->replica);
			else
				cell(v, y + r, x + c, b,
				     first && (split != 1 || c == 0 ||
				               block_of((c - 0.5) / gw, off, p) != b));
		}
}

/* A training layout: the Megatron split of a block over the TP group, the
 * pipeline's stages and the data-parallel replicas, as the layout has them.
 * The lines come in three densities: full (each stage on its line, its
 * devices in their colours), packed (stages side by side) and terse (the
 * Megatron split on one line); the panel takes the first that fits, and
 * says how many lines it could not show on its bottom border. */
#define TRAIN_LINES 40
struct tline {
	sl_role role;
	int stage; /* >= 0: its devices are drawn after the text, coloured */
	char s[160];
};

static int train_lines(const sl_view *v, int density, int w, struct tline *L)
{
	const sl_scene *m = v->m;
	const sl_layout *l = &m->wl->l;
	const sl_model_spec *ms = &m->wl->m;
	const sl_glyphs *g = v->th->g;
	int n = 0;
#define LINE(r, ...)                                                                               \
	do {                                                                                       \
		if (n < TRAIN_LINES) {                                                             \
			L[n].role = (r), L[n].stage = -1;                                          \
			snprintf(L[n].s, sizeof L[n].s, __VA_ARGS__);                              \
			n++;                                                                       \
		}                                                                                  \
	} while (0)
	char ord[16];
	char cpw[24] = "";
	if (l->cp > 1)
		snprintf(cpw, sizeof cpw, " cp=%d", l->cp);
	LINE(SL_ROLE_HEAD, "tp=%d%s pp=%d dp=%d %s mesh %s %s %d micro-batch%s", l->tp, cpw, l->pp,
	     l->dp, g->dot, sl_mesh_order_name(l->order, ord, sizeof ord), g->dot, l->microbatches,
	     l->microbatches == 1 ? "" : "es");
	if (l->tp > 1) {
		int f = ms->ffn, h = ms->hidden, t = l->tp;
		const char *coll = l->seq_parallel
		                       ? "reduce-scatter + all-gather instead of all-reduce"
		                       : "one all-reduce forward, one of dX backward";
		int f1 = sl_model_fc1_cols(ms);
		const char *act = ms->ffn_kind == SL_FFN_SWIGLU ? "SwiGLU" : "GeLU";
		if (density == 0) {
			LINE(SL_ROLE_NORMAL, "MLP over %d devices (Megatron):", t);
			LINE(SL_ROLE_NORMAL, " fc1 %dx%d column-parallel: %dx%d each, %s local", h,
			     f1, h, f1 / t, act);
			LINE(SL_ROLE_NORMAL, " fc2 %dx%d row-parallel: %dx%d each, partial sums", f,
			     h, f / t, h);
			LINE(SL_ROLE_NORMAL, " %s", coll);
		} else if (density == 1) {
			LINE(SL_ROLE_NORMAL,
			     "MLP over %d (Megatron): fc1 %dx%d by columns, fc2 by rows", t, h, f);
			LINE(SL_ROLE_NORMAL, " %dx%d each; %s", h, f / t, coll);
		} else {
			LINE(SL_ROLE_NORMAL, "MLP over %d (Megatron): fc1 by columns, fc2 by rows",
			     t);
		}
		if (ms->heads > 0 && sl_model_kv_heads(ms) != ms->heads)
			LINE(SL_ROLE_NORMAL,
			     " attention: %d of %d heads (%d of %d key/value) each, proj "
			     "row-parallel",
			     ms->heads / t, ms->heads, sl_model_kv_heads(ms) / t,
			     sl_model_kv_heads(ms));
		else if (ms->heads > 0)
			LINE(SL_ROLE_NORMAL, " attention: %d of %d heads each, proj row-parallel",
			     ms->heads / t, ms->heads);
	}
	if (l->cp > 1) {
		/* which chunks of a sequence each context rank holds, and why two */
		int c = l->cp, cs = ms->seq / (2 * c);
		LINE(SL_ROLE_NORMAL, "context parallel over %d: each sequence in %d chunks of %d",
		     c, 2 * c, cs);
		char seg[160];
		int len = 0;
		for (int i = 0; i < c && (size_t)len + 20 < sizeof seg; i++)
			len += snprintf(seg + len, sizeof seg - (size_t)len, " cp%d:%d+%d", i, i,
			                2 * c - 1 - i);
		LINE(SL_ROLE_NORMAL, "%s", seg);
		if (density == 0)
			LINE(SL_ROLE_NORMAL,
			     " an early and a late chunk each: the causal work is even");
		LINE(SL_ROLE_NORMAL, " keys and values: %s",
		     l->cp_comm == SL_CP_RING ? "a ring of hops beside the attention"
		                              : "all-gathered before the attention");
	}
	if (l->pp > 1) {
		LINE(SL_ROLE_NORMAL, "pipeline: %d stages, %s%s", l->pp, sl_sched_name(l->schedule),
		     l->chunks > 1 ? " (interleaved chunks)" : "");
		char seg[160];
		for (int st = 0; st < l->pp; st++) {
			int len = snprintf(seg, sizeof seg, " stage %d:", st);
			/* (many chunks: as many as the line holds) */
			for (int c = 0; c < l->chunks && (size_t)len + 24 < sizeof seg; c++) {
				int first, count;
				sl_layout_blocks(ms, l, st, c, &first, &count);
				len += snprintf(seg + len, sizeof seg - (size_t)len,
				                " blocks %d-%d", first, first + count - 1);
			}
			/* where a vocabulary's table and head live */
			if (ms->vocab > 0 && (size_t)len + 24 < sizeof seg)
				len += snprintf(seg + len, sizeof seg - (size_t)len, "%s%s",
				                st == 0 ? " +embedding" : "",
				                st == l->pp - 1 ? " +LM head" : "");
			if (density == 0) {
				snprintf(seg + len, sizeof seg - (size_t)len, " %s devices",
				         g->dot);
				LINE(SL_ROLE_NORMAL, "%s", seg);
				L[n - 1].stage = st;
				continue;
			}
			/* The stage's devices as text, and the stage beside the
			 * previous one when both fit. */
			len += snprintf(seg + len, sizeof seg - (size_t)len, " on");
			for (int d = 0; d < m->ndev; d++) {
				int ct, cp, cd;
				sl_mesh_coords(l, d, &ct, &cp, &cd);
				if (cp == st)
					len +=
					    snprintf(seg + len, sizeof seg - (size_t)len, " %d", d);
			}
			if (st > 0 && L[n - 1].stage == -2 &&
			    sl_cols(L[n - 1].s) + 1 + sl_cols(seg) <= w) {
				size_t k = strlen(L[n - 1].s);
				snprintf(L[n - 1].s + k, sizeof L[n - 1].s - k, " %s", seg);
			} else {
				LINE(SL_ROLE_NORMAL, "%s", seg);
				L[n - 1].stage = -2; /* a packed line of stages */
			}
		}
		/* what each TP rank sends the next stage (train_step.c) */
		if (l->tp > 1)
			LINE(SL_ROLE_NORMAL, " each TP rank passes 1/%d on%s", l->tp,
			     l->seq_parallel ? " (its rows)" : "; the next stage gathers it");
	}
	if (l->dp > 1)
		LINE(SL_ROLE_NORMAL, "data parallel: %d replicas, %d sequences each; gradients %s",
		     l->dp, ms->batch / l->dp,
		     l->zero == 3   ? "reduce-scattered, parameters gathered (ZeRO-3)"
		     : l->zero == 2 ? "reduce-scattered by layer (ZeRO-2)"
		     : l->zero == 1 ? "reduce-scattered (ZeRO-1)"
		                    : "all-reduced");
	if (l->tp * l->pp * l->dp == 1)
		LINE(SL_ROLE_NORMAL, "one device: the whole model");
	/* as train and plan describe it, the norm and the dropouts too,
	 * wrapped at its commas to the panel's width */
	char words[240];
	sl_model_describe(ms, words, sizeof words);
	{
		int start = n;
		for (char *seg = words, *next; seg; seg = next) {
			if ((next = strchr(seg, ',')) != NULL)
				*next++ = 0;
			seg += seg[0] == ' ';
			size_t have = n > start ? strlen(L[n - 1].s) : 0;
			if (n > start && sl_cols(L[n - 1].s) + 2 + sl_cols(seg) <= w &&
			    have + 2 + strlen(seg) < sizeof L[n - 1].s)
				snprintf(L[n - 1].s + have, sizeof L[n - 1].s - have, ", %s", seg);
			else if (n > start)
				LINE(SL_ROLE_DIM, "  %s", seg);
			else
				LINE(SL_ROLE_DIM, "model: %s", seg);
		}
	}
#undef LINE
	return n;
}

static void draw_train(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_layout *l = &m->wl->l;
	sl_rect in = sl_box(v, r, "Layout: one training step");
	int w = in.w - 1;
	struct tline L[TRAIN_LINES];
	int n = 0;
	for (int density = 0; density < 3; density++) {
		n = train_lines(v, density, w, L);
		if (n <= in.h)
			break;
	}
	int shown = n <= in.h ? n : in.h;
	for (int i = 0; i < shown; i++) {
		int y = in.y + i;
		sl_put(y, in.x + 1, w, sl_theme_role(v->th, L[i].role), L[i].s);
		if (L[i].stage < 0)
			continue;
		int x = in.x + 2 + sl_cols(L[i].s);
		for (int d = 0; d < m->ndev; d++) {
			int ct, cp, cd;
			sl_mesh_coords(l, d, &ct, &cp, &cd);
			if (cp == L[i].stage && x + 3 < in.x + in.w)
				x += sl_putf(y, x, 3, sl_theme_dev(v->th, d), "%d ", d);
		}
	}
	if (shown < n)
		sl_putf(in.y + in.h, in.x + in.w - 13, 12, sl_theme_role(v->th, SL_ROLE_DIM),
		        " +%d more ", n - shown);
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

/* The element of tensor T that cell (r, c) of a gh x gw figure shows
 * (-1 for a cell before the first).  A strip (one row of cells) of a
 * row-parallel tensor runs along its rows, so its row shards show. */
static void cell_elem(const sl_ckpt_tensor *T, int gh, int gw, int along_rows, int r, int c,
                      int *row, int *col)
{
	int a = along_rows ? c : r, b = along_rows ? r : c;
	int na = along_rows ? gw : gh, nb = along_rows ? gh : gw;
	*row = a < 0 ? -1 : (int)((a + 0.5) / na * T->rows);
	*col = b < 0 ? -1 : (int)((b + 0.5) / nb * T->cols);
}

/* One tensor, stored (left) and under the new layout (right), gh x gw
 * cells each.  Stored: each chunk in the colour of the device that saved
 * it.  New: each part in the colour of the device that writes it in the
 * new checkpoint: arriving while that device reads it, held once read,
 * solid once written. */
static void ckpt_tensor(const sl_view *v, int y, int x, int gh, int gw, int t, int along_rows)
{
	const sl_scene *m = v->m;
	const sl_workload *tr = m->wl;
	const sl_ckpt_tensor *T = &sl_ckpt_info_of(tr->ck)->tensors[t];
	const sl_glyphs *g = v->th->g;
	attr_t dim = sl_theme_role(v->th, SL_ROLE_DIM);
	/* The cells before this one, above and to the left: a part's digit
	 * goes on its first cell only. */
	for (int r = 0; r < gh; r++)
		for (int c = 0; c < gw; c++) {
			int row, col, ur, uc, lr, lc;
			cell_elem(T, gh, gw, along_rows, r, c, &row, &col);
			cell_elem(T, gh, gw, along_rows, r - 1, c, &ur, &uc);
			cell_elem(T, gh, gw, along_rows, r, c - 1, &lr, &lc);
			int up = ur >= 0 && uc >= 0, left = lr >= 0 && lc >= 0;
			const sl_ckpt_chunk *ch = chunk_at(T, row, col);
			if (ch) {
				int first = (!up || chunk_at(T, ur, uc) != ch) &&
				            (!left || chunk_at(T, lr, lc) != ch);
				cell(v, y + r, x + c, ch->owner, first);
			}
			const sl_ckpt_move *w = move_at(tr->writes, tr->nwrites, t, -1, row, col);
			int nx = x + gw + 3 + c;
			if (!w) {
				sl_put(y + r, nx, 1, dim, g->unknown);
				continue;
			}
			const sl_ckpt_move *rd =
			    move_at(tr->reads, tr->nreads, t, w->dev, row, col);
			double got = rd ? sl_scene_io_fill(m, 0, w->dev, rd->chunk) : -1;
			double put = sl_scene_io_fill(m, 1, w->dev, w->chunk);
			if (put >= 1) {
				int first =
				    (!up || move_at(tr->writes, tr->nwrites, t, -1, ur, uc) != w) &&
				    (!left || move_at(tr->writes, tr->nwrites, t, -1, lr, lc) != w);
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

static const char *split_word(sl_tsplit s, int strip)
{
	return s == SL_TS_HEADS    ? strip ? "by heads" : "by heads (columns)"
	       : s == SL_TS_COLUMN ? strip ? "by columns" : "column-parallel"
	       : s == SL_TS_ROW    ? strip ? "by rows" : "row-parallel"
	                           : "replicated";
}

/* The most parts tensor t is cut in along its rows, stored or new. */
static int row_parts(const sl_workload *tr, const sl_ckpt_tensor *T, int t)
{
	int n = 0, k = 0;
	for (int c = 0; c < T->nchunks; c++)
		n += T->chunks[c].off[1] == 0;
	for (int i = 0; i < tr->nwrites; i++)
		k += tr->writes[i].tensor == t && tr->writes[i].off[1] == 0;
	return n > k ? n : k;
}

static void draw_ckpt(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_workload *tr = m->wl;
	const sl_ckpt_info *ci = sl_ckpt_info_of(tr->ck);
	const sl_layout *s = &ci->layout, *l = &tr->l;
	const sl_glyphs *g = v->th->g;
	char title[160];
	snprintf(title, sizeof title, "Resharding: tp=%d pp=%d dp=%d %s tp=%d pp=%d dp=%d", s->tp,
	         s->pp, s->dp, g->arrow, l->tp, l->pp, l->dp);
	sl_rect in = sl_box(v, r, title);
	attr_t head = sl_theme_role(v->th, SL_ROLE_HEAD), dim = sl_theme_role(v->th, SL_ROLE_DIM),
	       norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
	/* Block 0's tensors that show each kind of split (every block is
	 * alike), the row-parallel one second so a short panel keeps it. */
	static const int kinds[] = {SL_T_FC1_W, SL_T_FC2_W, SL_T_QKV_W, SL_T_FC2_B};
	int pick[4], np = 0;
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		for (int t = 0; t < ci->ntensors; t++) {
			sl_tensor_info ti;
			if (sl_model_tensor(&ci->model, t, &ti) == SL_OK && ti.block == 0 &&
			    ti.kind == kinds[k])
				pick[np++] = t;
		}
	char lab[96];
	/* Grids (a label line, then gh rows) when every tensor gets rows
	 * enough for its row shards; else one strip a tensor, along the axis
	 * its parts are cut on, with its label beside it. */
	int avail = in.h - 2, need = 2;
	for (int i = 0; i < np; i++) {
		const sl_ckpt_tensor *T = &ci->tensors[pick[i]];
		int k = T->split == SL_TS_ROW ? row_parts(tr, T, pick[i]) : 1;
		if (k > need)
			need = k;
	}
	int gh = np > 0 ? avail / np - 1 : 0;
	if (gh > 4)
		gh = 4;
	if (gh < need)
		gh = need;
	int grids = np > 0 && np * (gh + 1) <= avail;
	int labw = grids ? 0 : 31;
	int gw = (in.w - 6 - labw) / 2;
	if (gw > 40)
		gw = 40;
	if (np == 0 || gw < 4 || in.h < 2) {
		sl_put(in.y, in.x, in.w, dim, " (too small for the tensors)");
		return;
	}
	int y = in.y, x = in.x + 1;
	snprintf(lab, sizeof lab, "stored (%d device%s)", ci->devices, ci->devices == 1 ? "" : "s");
	if (sl_cols(lab) > gw + 2)
		snprintf(lab, sizeof lab, "stored (%d)", ci->devices);
	sl_put(y, x, gw + 2, head, lab);
	snprintf(lab, sizeof lab, "new (%d device%s)", m->ndev, m->ndev == 1 ? "" : "s");
	if (sl_cols(lab) > gw + 1)
		snprintf(lab, sizeof lab, "new (%d)", m->ndev);
	sl_put(y++, x + gw + 3, gw + 1, head, lab);
	int rows_left = in.y + in.h - y, shown = 0;
	for (int i = 0; i < np; i++) {
		const sl_ckpt_tensor *T = &ci->tensors[pick[i]];
		if (grids) {
			snprintf(lab, sizeof lab, "%s %d%s%d, %s", T->name, T->rows, g->times,
			         T->cols, split_word(T->split, 0));
			sl_put(y, x, in.w - 1, norm, lab);
			ckpt_tensor(v, y + 1, x, gh, gw, pick[i], 0);
			y += gh + 1;
		} else {
			/* Keep the legend's row once every tensor is drawn. */
			if (rows_left < 1 || (rows_left == 1 && i < np - 1 && shown > 0))
				break;
			ckpt_tensor(v, y, x, 1, gw, pick[i], T->split == SL_TS_ROW);
			const char *nm = strncmp(T->name, "block0.", 7) ? T->name : T->name + 7;
			snprintf(lab, sizeof lab, "%s %d%s%d %s", nm, T->rows, g->times, T->cols,
			         split_word(T->split, 1));
			sl_put(y, x + 2 * gw + 4, in.w - 2 * gw - 5, norm, lab);
			y++;
			rows_left--;
		}
		shown++;
	}
	if (shown < np)
		sl_putf(in.y + in.h, in.x + in.w - 20, 19, dim, " +%d more tensor%s ", np - shown,
		        np - shown == 1 ? "" : "s");
	snprintf(lab, sizeof lab, "digits: the device %s %s reading %s read %s solid: written",
	         g->dot, g->incoming, g->level[3], g->dot);
	if (y < in.y + in.h)
		sl_put(y, x, in.w - 1, dim, lab);
	else if (shown == np)
		sl_putf(in.y + in.h, in.x + 1, in.w - 2, dim, " %s ", lab);
}

/* A lone collective: each device's buffer in p blocks, as the ring leaves
 * them at the cursor.  All-reduce and reduce-scatter: how many devices'
 * data each block sums (a partial sum grows by one a step; "full" when it
 * holds all p); all-gather: whose block is there yet. */
static void draw_coll(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
	const sl_workload *tr = m->wl;
	int p = m->ndev, gather = tr->op == SL_COLL_ALLGATHER;
	char title[120];
	snprintf(title, sizeof title, "Buffers: %s, %s, in %d blocks", sl_coll_op_name(tr->op),
	         sl_algo_name(tr->algo), p);
	if (sl_cols(title) + 6 > r.w) /* a lesson's compact figure */
		snprintf(title, sizeof title, "Buffers (%s, %d blocks)", sl_coll_op_name(tr->op),
		         p);
	sl_rect in = sl_box(v, r, title);
	const sl_glyphs *g = v->th->g;
	attr_t dim = sl_theme_role(v->th, SL_ROLE_DIM), pass = sl_theme_role(v->th, SL_ROLE_PASS),
	       warn = sl_theme_role(v->th, SL_ROLE_WARN);
	int cnt[SL_MAX_FULL_DEVICES];
	if (p > SL_MAX_FULL_DEVICES || p < 1 || sl_scene_coll_blocks(m, 0, p, cnt)) {
		sl_put_wrapped(in.y, in.x + 1, in.w - 2, in.h, dim,
		               "Block by block for ring all-reduce, reduce-scatter and all-gather; "
		               "follow this one on the timeline and the links.");
		return;
	}
	char legbuf[96];
	snprintf(legbuf, sizeof legbuf,
	         gather ? "each block shows whose data it is; %s not here yet"
	                : "each block: how many devices' data it sums; reversed: all of them",
	         g->level[0]);
	if (sl_cols(legbuf) + 2 > in.w - 2)
		snprintf(legbuf, sizeof legbuf,
		         gather ? "a block: whose data; %s not here yet"
		                : "a block: devices summed; reversed: all",
		         g->level[0]);
	const char *legend = legbuf;
	/* Every device's row, in as many columns of rows as it takes: the
	 * widest cells (up to 6) that let all p fit, the legend inside when
	 * there is a row for it, else on the bottom border.  Only when even
	 * the narrowest cells do not fit does a line say how many are not
	 * shown. */
	/* One character a cell needs no gap; a two-digit count that has no
	 * room becomes a level glyph (a partial sum, or full). */
	int digits = !gather && p >= 10 ? 2 : 1, minw = 1;
	int cw = 0, rows = in.h, legend_in = 0;
	for (int inside = 1; inside >= 0 && !cw; inside--)
		for (int w = 6; w >= minw && !cw; w--) {
			int colw = 4 + p * w + 1, nc = (in.w - 1 + 1) / colw;
			int avail = in.h - inside;
			if (nc >= 1 && avail >= 1 && (p + nc - 1) / nc <= avail) {
				cw = w, rows = (p + nc - 1) / nc, legend_in = inside;
			}
		}
	int shown = p;
	if (!cw) { /* the narrowest cells in every column, the last slot a count of the rest */
		cw = minw, legend_in = 0;
		int nc = in.w / (4 + p * cw + 1);
		rows = in.h;
		shown = (nc > 0 ? nc : 1) * rows - 1;
		if (shown < 0)
			shown = 0;
	}
	int colw = 4 + p * cw + 1, levels = (cw > 1 ? cw - 1 : 1) < digits;
	if (levels) {
		snprintf(legbuf, sizeof legbuf, "a block: %s%s%s a partial sum %s %s all %d",
		         g->level[1], g->level[2], g->level[3], g->dot, g->level[4], p);
		legend = legbuf;
	}
	for (int d = 0; d < shown; d++) {
		int y = in.y + d % rows, x = in.x + 1 + (d / rows) * colw;
		sl_putf(y, x, 4, sl_theme_dev(v->th, d), "%3d", d);
		x += 4;
		sl_scene_coll_blocks(m, d, p, cnt);
		for (int b = 0; b < p; b++, x += cw) {
			char cell[16];
			attr_t a;
			if (gather) {
				a = cnt[b] ? sl_theme_devbg(v->th, b) : dim;
				snprintf(cell, sizeof cell, "%c", cnt[b] ? sl_dev_char(b) : 0);
				if (!cnt[b])
					snprintf(cell, sizeof cell, "%s", g->level[0]);
			} else {
				a = cnt[b] == p ? pass | A_REVERSE : cnt[b] > 1 ? warn : dim;
				snprintf(cell, sizeof cell, "%d", cnt[b]);
				if (levels) {
					int lvl = cnt[b] >= p ? 4 : 1 + (cnt[b] - 1) * 3 / (p - 1);
					snprintf(cell, sizeof cell, "%s",
					         g->level[lvl > 4 ? 4 : lvl]);
				}
			}
			/* The cell's text centred in its width, one column apart. */
			int w = cw > 1 ? cw - 1 : 1, pad = (w - sl_cols(cell)) / 2;
			sl_rep(y, x, w, a, " ");
			sl_put(y, x + (pad > 0 ? pad : 0), w, a, cell);
		}
	}
	if (shown < p && rows > 0)
		sl_putf(in.y + shown % rows, in.x + 1 + (shown / rows) * colw,
		        in.x + in.w - 1 - (in.x + 1 + (shown / rows) * colw), dim, "+%d more",
		        p - shown);
	if (legend_in)
		sl_put(in.y + in.h - 1, in.x + 1, in.w - 2, dim, legend);
	else if (in.h >= 1)
		sl_putf(in.y + in.h, in.x + 1, in.w - 2, dim, " %s ", legend);
}

/* The product: X, W and Y with each device's part. */
static void draw_product(const sl_view *v, sl_rect r)
{
	const sl_scene *m = v->m;
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
	/* A cell a block keeps every device's block in sight: what the
	 * minimums add comes out of X (the widest), then out of the narrowest
	 * figure that still shows them, a cell per device; past that blocks
	 * share cells (their digits then stand for ranges). */
	int over = wx + ww + wy + 8 - in.w;
	if (over > 0 && wx > mins) {
		int cut = wx - mins < over ? wx - mins : over;
		wx -= cut, over -= cut;
	}
	for (int *f[] = {&ww, &wy, &wx}, i = 0; over > 0 && i < 3; i++) {
		int cut = *f[i] - 3 < over ? *f[i] - 3 : over;
		if (cut > 0)
			*f[i] -= cut, over -= cut;
	}
	if (over > 0) {
		sl_put(in.y, in.x, in.w, sl_theme_role(v->th, SL_ROLE_DIM),
		       " (too narrow for the matrices)");
		return;
	}
	int x0 = in.x + 1, xw = x0 + wx + 3, xy = xw + ww + 3;
	char lab[48];
	attr_t head = sl_theme_role(v->th, SL_ROLE_HEAD);
	dims_label(lab, sizeof lab, "X", sc->gemm.m, sc->gemm.k, g->times, wx + 2);
	sl_put(in.y, x0, wx + 2, head, lab);
	dims_label(lab, sizeof lab, "W", sc->gemm.k, sc->gemm.n, g->times, ww + 2);
	sl_put(in.y, xw, ww + 2, head, lab);
	dims_label(lab, sizeof lab, "Y", sc->gemm.m, sc->gemm.n, g->times, wy + 1);
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
			         "Y: %s%s%s partial sums %s %s complete %s %s arriving",
			         g->level[1], g->level[2], g->level[3], g->dot, g->level[4], g->dot,
			         g->incoming);
		else
			snprintf(leg, sizeof leg, "one device holds everything");
		sl_put(ly, x0, in.w - 1, sl_theme_role(v->th, SL_ROLE_DIM), leg);
	}
}

/* One panel per kind of workload. */
static void (*const panel[SL_WL_KINDS])(const sl_view *, sl_rect) = {
    [SL_WL_PRODUCT] = draw_product,
    [SL_WL_COLLECTIVE] = draw_coll,
    [SL_WL_TRAIN] = draw_train,
    [SL_WL_RESHARD] = draw_ckpt,
};

void sl_draw_matrices(const sl_view *v, sl_rect r)
{
	panel[v->m->kind](v, r);
}
