/* SPDX-License-Identifier: MIT */
/* lesson_show.c - what a lesson's runs become on its screen: the sandbox's
 * playback of each product, training step, reshard and lone collective the
 * lesson runs (see lesson_show.h). */
#include "lesson_show.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "setup.h"
#include "term.h"

/* A scenario the playback can take: valid, and small enough to plan and
 * play beside the vm's own run. */
static int playable(const sl_scenario *sc)
{
	sl_err err = {0};
	int t = sc->gemm.split == SL_SPLIT_SINGLE ? 1 : sc->cluster.devices;
	sl_cluster_config cfg = sc->cluster;
	if (t == 1) {
		cfg.devices = 1;
		cfg.devices_per_node = 0;
	}
	if (t > 16 || sl_cluster_config_check(&cfg, &err) || sl_gemm_check(&sc->gemm, t, &err))
		return 0;
	return 2.0 * sc->gemm.m * sc->gemm.k * sc->gemm.n <= 2e11;
}

static void ckpt_free(struct sl_lshow_ckpt *k)
{
	sl_ckpt_close(k->ck);
	free(k->reads);
	free(k->writes);
	if (k->dir[0]) {
		char saved[4200];
		snprintf(saved, sizeof saved, "%s/saved", k->dir);
		sl_ckpt_remove(saved);
		rmdir(k->dir);
	}
	memset(k, 0, sizeof *k);
}

/* Show sc (or one training step or reshard, tr, with the checkpoint it
 * reads, k) in the scenario view, playing once planned.  A playback of the
 * other kind is replaced; k is the view's from then on (freed here if the
 * playback cannot be made). */
static void use_play(sl_lshow *u, const sl_scenario *sc, const sl_play_train *tr,
                     struct sl_lshow_ckpt *k, double now)
{
	if (!tr && !sl_play_training(u->play)) {
		sl_play_set_scenario(u->play, sc);
	} else {
		sl_err e = {0};
		sl_play *np = tr ? sl_play_create_train(sc, tr, sl_term_wake_fd(), &e)
		                 : sl_play_create(sc, sl_term_wake_fd(), &e);
		if (!np) {
			snprintf(u->msg, sizeof u->msg, "the run is not shown: %.200s", e.msg);
			if (k)
				ckpt_free(k);
			u->on = 0;
			return;
		}
		/* A thread still computing may read the old checkpoint: it
		 * stays until the process ends. */
		if (!sl_play_destroy(u->play, 2.0))
			u->orphans = 1;
		else
			ckpt_free(&u->ck);
		u->play = np;
		if (k)
			u->ck = *k;
		else
			memset(&u->ck, 0, sizeof u->ck);
		u->replaced = 1;
	}
	sl_play_toggle(u->play, now); /* plays once planned */
	u->stepped = 0;
	u->on = 1;
}

/* One training step of the set-up's model and layout, as the sandbox shows
 * it (the lesson's own run checks sizes against the host first). */
static void show_train(sl_lshow *u, const sl_lsetup *s, double now)
{
	sl_err e = {0};
	sl_scenario sc = s->sc;
	if (sl_lrun_config(SL_RUN_TRAIN, s, 0, &sc.cluster, &e) ||
	    sc.cluster.devices > SL_MAX_FULL_DEVICES) {
		u->on = 0;
		return;
	}
	sl_play_train tr = {.on = 1, .m = s->model, .l = sl_lsetup_layout(s)};
	use_play(u, &sc, &tr, NULL, now);
}

/* A reshard as the sandbox shows one (--load): the target layout's devices
 * read the chunks of a checkpoint saved under the set-up's layout, then
 * write their own.  The checkpoint is made here as the lesson's run makes
 * its own (the set-up's steps trained, headless, then saved), so the view's
 * steps are that run's. */
static void show_reshard(sl_lshow *u, const sl_lsetup *s, double now)
{
	sl_err e = {0};
	sl_scenario sc = s->sc;
	sl_layout from = sl_lsetup_layout(s), to = sl_lsetup_target(s);
	struct sl_lshow_ckpt k = {{0}, NULL, NULL, NULL};
	sl_play_train tr = {.on = 1, .m = s->model, .l = to};
	sl_train *t = NULL;
	const char *tmp = getenv("TMPDIR");
	char saved[4200];
	u->on = 0;
	if (sl_lrun_config(SL_RUN_RESHARD, s, 0, &sc.cluster, &e) ||
	    sc.cluster.devices > SL_MAX_FULL_DEVICES)
		return;
	snprintf(k.dir, sizeof k.dir, "%s/shardlab-view-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(k.dir)) {
		k.dir[0] = 0;
		return;
	}
	snprintf(saved, sizeof saved, "%s/saved", k.dir);
	sl_lsetup src = *s;
	src.to_tp = src.to_pp = src.to_dp = 0;
	sl_cluster_config cfg;
	sl_cluster *c = NULL;
	sl_train_report rep = {0};
	int ok = !sl_lrun_config(SL_RUN_TRAIN, &src, 0, &cfg, &e) &&
	         (c = sl_cluster_create(&cfg, &e)) &&
	         (t = sl_train_create(&s->model, &from, cfg.devices, &e)) &&
	         !sl_train_run(t, c, s->steps, &rep, &e) && !sl_ckpt_save(t, c, saved, NULL, &e);
	sl_train_report_free(&rep);
	sl_train_destroy(t);
	sl_cluster_destroy(c);
	ok = ok && !sl_ckpt_open(saved, &k.ck, &e) &&
	     (t = sl_train_create(&s->model, &to, sc.cluster.devices, &e)) &&
	     !sl_ckpt_read_plan(k.ck, t, &k.reads, &tr.nreads, &e) &&
	     !sl_ckpt_write_plan(t, &k.writes, &tr.nwrites, &e);
	sl_train_destroy(t);
	if (!ok) {
		snprintf(u->msg, sizeof u->msg, "the reshard is not shown: %.200s", e.msg);
		ckpt_free(&k);
		return;
	}
	if (sc.gemm.split == SL_SPLIT_SINGLE)
		sc.gemm.split = SL_SPLIT_COL;
	tr.ck = k.ck;
	tr.reads = k.reads;
	tr.writes = k.writes;
	use_play(u, &sc, &tr, &k, now);
}

/* A lone collective, on the set-up's devices and buffer (the view shows
 * each device's blocks for the ring's all-reduce, reduce-scatter and
 * all-gather). */
static void show_coll(sl_lshow *u, const sl_lsetup *s, double now)
{
	sl_err e = {0};
	sl_scenario sc = s->sc;
	if (sl_lrun_config(SL_RUN_COLLECTIVE, s, 0, &sc.cluster, &e) || sc.cluster.devices < 2 ||
	    sc.cluster.devices > SL_MAX_FULL_DEVICES || s->bytes < 4) {
		u->on = 0;
		return;
	}
	if (sc.gemm.split == SL_SPLIT_SINGLE)
		sc.gemm.split = SL_SPLIT_COL;
	sl_play_train tr = {.on = 1,
	                    .m = s->model,
	                    .l = s->layout,
	                    .coll = 1,
	                    .op = s->op,
	                    .algo = s->sc.gemm.algo,
	                    .count = (size_t)(s->bytes / sizeof(float))};
	use_play(u, &sc, &tr, NULL, now);
}

/* The view follows the lesson's runs: products, training steps, reshards
 * and lone collectives are animated; a plan is told in the panel alone,
 * with no stale picture above it. */
void sl_lshow_run(sl_lshow *u, const sl_step *st, double now)
{
	if (st->run == SL_RUN_MATMUL && playable(st->scenario))
		use_play(u, st->scenario, NULL, NULL, now);
	else if (st->run == SL_RUN_TRAIN && st->setup)
		show_train(u, st->setup, now);
	else if (st->run == SL_RUN_RESHARD && st->setup)
		show_reshard(u, st->setup, now);
	else if (st->run == SL_RUN_COLLECTIVE && st->setup)
		show_coll(u, st->setup, now);
	else
		u->on = 0;
}

void sl_lshow_free_ckpt(sl_lshow *u)
{
	ckpt_free(&u->ck);
}
