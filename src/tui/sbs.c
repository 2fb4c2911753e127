/* SPDX-License-Identifier: MIT */
/* sbs.c - what the side-by-side view's rows show (see sbs.h). */
#include "sbs.h"

#include <stdlib.h>
#include <string.h>

void sl_sbs_free(sl_sbs *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->band[i].dev);
		sl_snapshot_free(&s->band[i].ev);
	}
	memset(s, 0, sizeof *s);
}

void sl_sbs_band_span(sl_sbs_band *b)
{
	double t0 = 0, t1 = 0;
	for (size_t e = 0; e < b->ev.n; e++) {
		if (e == 0 || b->ev.ev[e].t0 < t0)
			t0 = b->ev.ev[e].t0;
		if (e == 0 || b->ev.ev[e].t1 > t1)
			t1 = b->ev.ev[e].t1;
	}
	b->t0 = t0;
	b->span = t1 - t0;
}

double sl_sbs_axis(const sl_sbs *s)
{
	double t = 0;
	for (int i = 0; i < s->n; i++) {
		const sl_sbs_band *b = &s->band[i];
		double len = b->span > b->step_s ? b->span : b->step_s;
		t = len > t ? len : t;
	}
	return t;
}

int sl_sbs_per_row(int ndev, int rows)
{
	if (rows < 1)
		rows = 1;
	if (ndev <= rows)
		return 1;
	/* A divisor of the device count where there is one (rows of equal
	 * size, which on a mesh are whole groups): the smallest that fits. */
	int per = (ndev + rows - 1) / rows;
	for (int k = per; k <= 2 * per && k < ndev; k++)
		if (ndev % k == 0)
			return k;
	return per;
}

/* The states a cell can show, by what an event is. */
enum { C_COMPUTE, C_COMM, C_WAIT, C_IDLE, NC };

static int category(sl_ev_kind k)
{
	switch (k) {
	case SL_EV_COMPUTE:
		return C_COMPUTE;
	case SL_EV_SEND:
	case SL_EV_RECV:
	case SL_EV_REDUCE:
		return C_COMM;
	case SL_EV_WAIT:
		return C_WAIT;
	default:
		return -1;
	}
}

int sl_sbs_lanes(const sl_sbs_band *b)
{
	for (size_t i = 0; i < b->ev.n; i++)
		if (b->ev.ev[i].stream > 0)
			return 2;
	return 1;
}

static void cells(const sl_sbs_band *b, int lane, int lo, int hi, double axis, int width,
                  sl_dstate *out);

void sl_sbs_cells(const sl_sbs_band *b, int lo, int hi, double axis, int width, sl_dstate *out)
{
	cells(b, -1, lo, hi, axis, width, out);
}

void sl_sbs_lane_cells(const sl_sbs_band *b, int lane, int lo, int hi, double axis, int width,
                       sl_dstate *out)
{
	cells(b, sl_sbs_lanes(b) > 1 ? lane : -1, lo, hi, axis, width, out);
}

/* lane < 0: every event; 0: the compute stream's; 1: the side streams'. */
static void cells(const sl_sbs_band *b, int lane, int lo, int hi, double axis, int width,
                  sl_dstate *out)
{
	if (width <= 0)
		return;
	double *t = calloc((size_t)width * NC, sizeof *t);
	double dt = axis > 0 ? axis / width : 0;
	if (!t || !(dt > 0)) {
		for (int c = 0; c < width; c++)
			out[c] = SL_DS_COUNT;
		free(t);
		return;
	}
	for (size_t i = 0; i < b->ev.n; i++) {
		const sl_event *e = &b->ev.ev[i];
		int cat = category(e->kind);
		if (e->dev < lo || e->dev >= hi || cat < 0 ||
		    (lane >= 0 && (e->stream > 0) != lane))
			continue;
		double a = e->t0 - b->t0, z = e->t1 - b->t0;
		if (!(z > a))
			continue;
		int c0 = (int)(a / dt), c1 = (int)(z / dt);
		for (int c = c0 < 0 ? 0 : c0; c <= c1 && c < width; c++) {
			double s = c * dt, f = s + dt;
			double o = (z < f ? z : f) - (a > s ? a : s);
			if (o > 0)
				t[c * NC + cat] += o;
		}
	}
	int k = hi - lo;
	for (int c = 0; c < width; c++) {
		double s = c * dt;
		if (s >= b->span) {
			out[c] = SL_DS_COUNT;
			continue;
		}
		/* A device computes and communicates at once (overlap): each
		 * device's slice is dt, so what is left of k slices is idle. */
		double cover = (s + dt < b->span ? dt : b->span - s) * k;
		double busy = t[c * NC + C_COMPUTE] + t[c * NC + C_COMM] + t[c * NC + C_WAIT];
		t[c * NC + C_IDLE] = cover > busy ? cover - busy : 0;
		int best = C_IDLE;
		for (int j = 0; j < NC; j++)
			if (t[c * NC + j] > t[c * NC + best])
				best = j;
		static const sl_dstate state[NC] = {SL_DS_COMPUTE, SL_DS_SEND, SL_DS_WAIT,
		                                    SL_DS_IDLE};
		out[c] = state[best];
	}
	free(t);
}

static uint64_t anatomy_sum(const sl_train_dev *d)
{
	return d->params_bytes + d->grads_bytes + d->optimizer_bytes + d->act_peak_bytes +
	       d->workspace_peak_bytes;
}

int sl_sbs_anatomy(const sl_sbs_band *b, int lo, int hi, uint64_t out[5])
{
	int best = lo;
	for (int d = lo; d < hi && d < b->ndev; d++)
		if (b->dev[d].mem_peak_bytes > b->dev[best].mem_peak_bytes)
			best = d;
	const sl_train_dev *d = &b->dev[best];
	out[0] = d->params_bytes;
	out[1] = d->grads_bytes;
	out[2] = d->optimizer_bytes;
	out[3] = d->act_peak_bytes;
	out[4] = d->workspace_peak_bytes;
	return best;
}

uint64_t sl_sbs_mem_scale(const sl_sbs *s)
{
	uint64_t m = 0;
	for (int i = 0; i < s->n; i++)
		for (int d = 0; d < s->band[i].ndev; d++) {
			uint64_t v = anatomy_sum(&s->band[i].dev[d]);
			m = v > m ? v : m;
		}
	return m;
}
