/* SPDX-License-Identifier: MIT */
/* lesson_show.c - what a lesson's runs become on its screen: the sandbox's
 * playback of the trace each product, training step, reshard and lone
 * collective the lesson ran left, and the bands of a show (see
 * lesson_show.h). */
#include "lesson_show.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "term.h"

/* The workload a lesson's run of kind k on s was, as the engine ran it; 0
 * for a run with nothing to animate (a plan; a reshard whose checkpoint the
 * run did not hand over). */
static int workload_of(sl_run_kind k, const sl_lsetup *s, const sl_wl_result *eng, sl_workload *w)
{
	memset(w, 0, sizeof *w);
	switch (k) {
	case SL_RUN_MATMUL:
		*w = sl_workload_product(&s->sc.gemm);
		return 1;
	case SL_RUN_COLLECTIVE:
		w->kind = SL_WL_COLLECTIVE;
		w->op = s->op;
		w->algo = s->sc.gemm.algo;
		w->count = (size_t)(s->bytes / sizeof(float));
		return w->count > 0;
	case SL_RUN_TRAIN:
		w->kind = SL_WL_TRAIN;
		w->m = s->model;
		w->l = sl_lsetup_layout(s);
		w->steps = s->steps;
		return 1;
	case SL_RUN_RESHARD:
		if (!eng || !eng->ck)
			return 0;
		w->kind = SL_WL_RESHARD;
		w->m = s->model;
		w->l = sl_lsetup_target(s);
		w->ck = eng->ck;
		w->reads = eng->reads;
		w->writes = eng->writes;
		w->nreads = eng->nreads;
		w->nwrites = eng->nwrites;
		return 1;
	default:
		return 0;
	}
}

/* The product's split is the lesson's; another kind shown on one device's
 * set-up is drawn as split by columns (the sandbox's default). */
static const int own_split[SL_WL_KINDS] = {[SL_WL_PRODUCT] = 1};

void sl_lshow_done(sl_lshow *u, sl_run_kind k, const sl_lsetup *s, sl_cluster *c, sl_wl_result *eng,
                   double now)
{
	sl_wl_result none;
	memset(&none, 0, sizeof none);
	if (!eng)
		eng = &none;
	sl_workload w;
	if (!c || sl_cluster_devices(c) > SL_MAX_FULL_DEVICES || !workload_of(k, s, eng, &w)) {
		sl_wl_result_free(eng);
		u->on = 0;
		return;
	}
	sl_scenario sc = s->sc;
	sc.cluster = *sl_cluster_config_of(c); /* the devices it ran on, as it ran */
	if (!own_split[w.kind] && sc.gemm.split == SL_SPLIT_SINGLE)
		sc.gemm.split = SL_SPLIT_COL;
	sl_err e = {0};
	sl_play *np = sl_play_create_done(&sc, &w, c, eng, sl_term_wake_fd(), &e);
	if (!np) {
		snprintf(u->msg, sizeof u->msg, "the run is not shown: %.200s", e.msg);
		sl_wl_result_free(eng);
		u->on = 0;
		return;
	}
	/* A thread still computing may read the old checkpoint: it stays
	 * until the process ends. */
	if (!sl_play_destroy(u->play, 2.0))
		u->orphans = 1;
	else
		sl_wl_result_free(&u->eng);
	u->play = np;
	u->eng = *eng; /* w points into it */
	memset(eng, 0, sizeof *eng);
	u->replaced = 1;
	sl_play_toggle(u->play, now);
	u->stepped = 0;
	u->on = 1;
}

void sl_lshow_free(sl_lshow *u)
{
	sl_wl_result_free(&u->eng);
}

/* "tp=4", "pp=4 1f1b", "tp=2 x dp=2", "one device": as compare names them. */
static void layout_words(const sl_layout *l, char *buf, size_t n)
{
	const int size[3] = {l->tp, l->pp, l->dp};
	const char *nm[3] = {"tp", "pp", "dp"};
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i < 3 && len < n; i++)
		if (size[i] > 1)
			len += (size_t)snprintf(buf + len, n - len, "%s%s=%d", len ? " x " : "",
			                        nm[i], size[i]);
	if (l->pp > 1 && len < n)
		snprintf(buf + len, n - len, " %s", sl_sched_name(l->schedule));
	if (!buf[0])
		snprintf(buf, n, "one device");
}

int sl_sbs_from_lesson(sl_sbs *s, const sl_shown_run *r, int n)
{
	memset(s, 0, sizeof *s);
	for (int i = 0; i < n && i < SL_SBS_MAX; i++) {
		sl_sbs_band *b = &s->band[s->n];
		sl_layout l = sl_lsetup_layout(r[i].setup);
		char words[40];
		layout_words(&l, words, sizeof words);
		snprintf(b->name, sizeof b->name, "%s: %s", r[i].name, words);
		b->dev = malloc((size_t)r[i].ndev * sizeof *b->dev);
		b->ev.ev = malloc((r[i].nev ? r[i].nev : 1) * sizeof *b->ev.ev);
		if (!b->dev || !b->ev.ev) {
			free(b->dev);
			free(b->ev.ev);
			sl_sbs_free(s);
			return SL_ENOMEM;
		}
		s->n++;
		b->ndev = b->ev.ndev = r[i].ndev;
		memcpy(b->dev, r[i].dev, (size_t)r[i].ndev * sizeof *b->dev);
		memcpy(b->ev.ev, r[i].ev, r[i].nev * sizeof *b->ev.ev);
		b->ev.n = r[i].nev;
		b->step_s = r[i].step_s;
		for (int d = 0; d < b->ndev; d++) {
			uint64_t sent = 0;
			for (int k = 0; k < SL_TR_NKINDS; k++)
				sent += b->dev[d].sent[k];
			b->mem_peak = b->dev[d].mem_peak_bytes > b->mem_peak
			                  ? b->dev[d].mem_peak_bytes
			                  : b->mem_peak;
			b->sent = sent > b->sent ? sent : b->sent;
		}
		sl_sbs_band_span(b);
	}
	return SL_OK;
}
