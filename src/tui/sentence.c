/* SPDX-License-Identifier: MIT */
/* sentence.c - the sentence under the timeline: which step the scene's time
 * is at, and what that step does, in words from the events' fields (see
 * scene.h). */
#include "scene.h"

#include "steps.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "cost.h"
#include "units.h"

/* ---- the sentence ---- */

static const char *fmt_t(double s, char *b, size_t n)
{
	return sl_fmt_time(s, b, n);
}

/* Write or append to out (n bytes in all), cutting what does not fit (the
 * sentence line is cut to the screen anyway). */
static void appendf(char *out, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void appendf(char *out, size_t n, const char *fmt, ...)
{
	size_t len = strlen(out);
	if (len + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + len, n - len, fmt, ap);
	va_end(ap);
}

static void say(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *out, size_t n, const char *fmt, ...)
{
	if (n == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, n, fmt, ap);
	va_end(ap);
}

/* The stored chunk with this id, and its tensor. */
static const sl_ckpt_chunk *stored_chunk(const sl_ckpt *ck, int id, const sl_ckpt_tensor **T)
{
	const sl_ckpt_info *in = sl_ckpt_info_of(ck);
	for (int t = 0; t < in->ntensors; t++)
		for (int k = 0; k < in->tensors[t].nchunks; k++)
			if (in->tensors[t].chunks[k].id == id) {
				*T = &in->tensors[t];
				return &in->tensors[t].chunks[k];
			}
	return NULL;
}

static void rect_words(const int off[2], const int shape[2], char *out, size_t n)
{
	snprintf(out, n, "rows %d-%d, columns %d-%d", off[0], off[0] + shape[0] - 1, off[1],
	         off[1] + shape[1] - 1);
}

/* A chunk read or written while resharding. */
static void describe_io(const sl_play_train *tr, const sl_event *e, const char *who,
                        const char *dur, char *out, size_t n)
{
	char a[32], r1[64], r2[64];
	sl_fmt_bytes((double)e->bytes, a, sizeof a);
	if (e->kind == SL_EV_READ) {
		const sl_ckpt_tensor *T = NULL;
		const sl_ckpt_chunk *c = stored_chunk(tr->ck, e->op, &T);
		const sl_ckpt_move *mv = NULL;
		for (int i = 0; i < tr->nreads; i++)
			if (tr->reads[i].dev == e->dev && tr->reads[i].chunk == e->op)
				mv = &tr->reads[i];
		if (!c || !mv) {
			say(out, n, "%s reads a stored chunk (%s, %s)", who, a, dur);
			return;
		}
		rect_words(c->off, c->shape, r1, sizeof r1);
		rect_words(mv->off, mv->shape, r2, sizeof r2);
		say(out, n, "%s reads %s's chunk %d (%s), saved by device %d,", who, T->name, c->id,
		    r1, c->owner);
		appendf(out, n, " and keeps %s for its new shard (%s, %s)", r2, a, dur);
		return;
	}
	const sl_ckpt_move *mv = NULL;
	for (int i = 0; i < tr->nwrites; i++)
		if (tr->writes[i].dev == e->dev && tr->writes[i].chunk == e->op)
			mv = &tr->writes[i];
	if (!mv) {
		say(out, n, "%s writes a chunk (%s, %s)", who, a, dur);
		return;
	}
	const sl_ckpt_info *in = sl_ckpt_info_of(tr->ck);
	rect_words(mv->off, mv->shape, r1, sizeof r1);
	say(out, n, "%s writes its chunk of %s (%s) under the new layout (%s, %s)", who,
	    mv->tensor < in->ntensors ? in->tensors[mv->tensor].name : "?", r1, a, dur);
}

/* A training step's compute, from its fields: "the forward of block 1's
 * fc1".  0 if it is not one. */
static int train_op_words(const sl_ev_work *w, char *out, size_t n)
{
	static const char *const words[SL_PART_N] = {
	    NULL,
	    "QKV projection",
	    "attention scores QK^T",
	    "softmax times V",
	    "output projection",
	    "fc1",
	    "fc2",
	    "gradient of the attention probabilities",
	    "gradient of V",
	    "gradient of Q",
	    "gradient of K",
	};
	if (w->pass == SL_PASS_NONE || w->part <= SL_PART_NONE || w->part >= SL_PART_N)
		return 0;
	const char *g = w->grad == SL_GRAD_W   ? " (weight gradient)"
	                : w->grad == SL_GRAD_X ? " (input gradient)"
	                                       : "";
	/* The head index is the device's own: say "one head". */
	const char *h = w->head >= 0 ? " for one head" : "";
	say(out, n, "the %s of block %d's %s%s%s", w->pass == SL_PASS_FWD ? "forward" : "backward",
	    w->block, words[w->part], h, g);
	return 1;
}

/* "each device", "device 3", "each of devices 0, 3, 4, 7" for the devices
 * of a step (p in all). */
static void who_words(const sl_opstep *st, int p, char *who, size_t n)
{
	if (st->ndevs >= p && p > 1) {
		snprintf(who, n, "each device");
		return;
	}
	size_t len = (size_t)snprintf(who, n, "%s", st->ndevs > 1 ? "each of devices" : "device");
	int shown = 0;
	for (int d = 0; d < p && d < 64 && len + 8 < n; d++)
		if (st->devs >> d & 1)
			len += (size_t)snprintf(who + len, n - len, "%s %d", shown++ ? "," : "", d);
	if (shown < st->ndevs && len + 8 < n)
		snprintf(who + len, n - len, " and %d more", st->ndevs - shown);
}

/* "each of devices 0, 3" as a plural subject or object: "devices 0, 3". */
static const char *plural(const char *who)
{
	return strncmp(who, "each of ", 8) == 0 ? who + 8 : who;
}

/* Who sends in step idx and who takes the data in (the receivers, and the
 * peers of the sends), in words (who_words); returns how many send. */
static int parties(const sl_snapshot *s, const int *of, int idx, int p, char *from, char *to,
                   size_t n, int *nrcv)
{
	sl_opstep snd = {0}, rcv = {0};
	for (size_t i = 0; of && i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		if (of[i] != idx || e->dev >= 64)
			continue;
		sl_opstep *side = e->kind == SL_EV_SEND ? &snd : &rcv;
		side->devs |= (uint64_t)1 << e->dev;
		if (e->kind == SL_EV_SEND && e->peer >= 0 && e->peer < 64)
			rcv.devs |= (uint64_t)1 << e->peer;
	}
	snd.ndevs = __builtin_popcountll(snd.devs);
	rcv.ndevs = __builtin_popcountll(rcv.devs);
	who_words(&snd, p, from, n);
	who_words(&rcv, p, to, n);
	if (nrcv)
		*nrcv = rcv.ndevs;
	return snd.ndevs;
}

/* A collective's part and its counter in words: "all-reduce, reduce-scatter
 * 3 of 7", "all-reduce (tree), broadcast level 2 of 3", "all-gather, ring
 * step 4 of 7".  The counter counts logical steps within the part, the same
 * on every device, so it never goes back. */
static void coll_words(const sl_ev_coll *c, char *out, size_t n, int *last, int *phase_last)
{
	static const char *const ops[SL_COLL_NOPS] = {"all-reduce", "all-gather", "reduce-scatter",
	                                              "broadcast",  "reduce",     "gather",
	                                              "scatter"};
	static const char *const phases[SL_PHASE_N] = {
	    "", "reduce-scatter", "all-gather", "reduce", "broadcast", "gather", "scatter"};
	int two = c->op == SL_COLL_ALLREDUCE ||
	          (c->algo == SL_ALGO_TREE &&
	           (c->op == SL_COLL_ALLGATHER || c->op == SL_COLL_REDUCESCATTER));
	int half = two ? c->nsteps / 2 : c->nsteps;
	int k = two && c->step >= half ? c->step - half : c->step;
	const char *op = c->op >= 0 && c->op < SL_COLL_NOPS ? ops[c->op] : "a collective";
	const char *unit = c->algo == SL_ALGO_TREE ? "level" : "step";
	*last = c->step == c->nsteps - 1;
	*phase_last = k == half - 1;
	if (two)
		say(out, n, "%s%s, %s %s %d of %d", op, c->algo == SL_ALGO_TREE ? " (tree)" : "",
		    phases[c->phase], unit, k + 1, half);
	else
		say(out, n, "%s, %s %s %d of %d", op, c->algo == SL_ALGO_TREE ? "tree" : "ring",
		    unit, k + 1, half);
}

static void describe(const sl_scene_in *in, const sl_scene *m, const sl_opstep *st, const int *of,
                     int idx, char *out, size_t n)
{
	const sl_snapshot *s = in->ev;
	const sl_scenario *sc = in->sc;
	int p = m->ndev;
	const sl_event *first = &s->ev[st->rep];
	char who[96], a[32], dur[128];
	who_words(st, p, who, sizeof who);
	fmt_t(st->t1 - st->t0, dur, sizeof dur);
	/* Out of step (a slow hop between nodes): the devices spread the step
	 * over longer than any one transfer in it takes; say both, the slow
	 * hop first (it is what the clock advances by). */
	if (!st->compute && st->slow_s < (st->t1 - st->t0) * 0.99) {
		char sl[24], span[24];
		fmt_t(st->slow_s, sl, sizeof sl);
		fmt_t(st->t1 - st->t0, span, sizeof span);
		say(dur, sizeof dur,
		    "the slowest transfer %s; out of step, the devices spread it over %s", sl,
		    span);
	}
	if ((first->kind == SL_EV_READ || first->kind == SL_EV_WRITE) && in->train &&
	    in->train->ck) {
		/* Devices read and write different chunks at once: tell the
		 * first one's, and name the others. */
		char one[32];
		snprintf(one, sizeof one, "device %d", first->dev);
		describe_io(in->train, first, one, dur, out, n);
		if (st->ndevs > 1) {
			appendf(out, n, "; device%s", st->ndevs > 2 ? "s" : "");
			for (int d = 0, c = 0; d < p && d < 64; d++)
				if (d != first->dev && (st->devs >> d & 1))
					appendf(out, n, "%s %d", c++ ? "," : "", d);
			appendf(out, n, " %s theirs at the same time",
			        first->kind == SL_EV_READ ? "read" : "write");
		}
		return;
	}
	char words[128];
	if (st->compute && !in->train && first->op < 0) {
		/* The product's compute phase: shards may differ by one. */
		long lo = -1, hi = -1;
		for (int d = 0; d < p && d < 64; d++)
			if (st->devs >> d & 1) {
				long w = (long)(m->dev[d].hi - m->dev[d].lo);
				lo = lo < 0 || w < lo ? w : lo;
				hi = w > hi ? w : hi;
			}
		char cols[32];
		if (lo == hi)
			snprintf(cols, sizeof cols, "%ld", lo);
		else
			snprintf(cols, sizeof cols, "%ld or %ld", lo, hi);
		sl_fmt_flops(first->flops, a, sizeof a);
		char *slash = strstr(a, "/s");
		if (slash)
			*slash = '\0'; /* an amount of work, not a rate */
		if (p == 1)
			say(out, n, "device 0 computes all of Y = X W (%s, %s)", a, dur);
		else if (sc->gemm.split == SL_SPLIT_ROW)
			say(out, n,
			    "%s computes its %s columns of X times its %s rows of W: a full "
			    "%dx%d partial Y, still to be summed (%s)",
			    who, cols, cols, sc->gemm.m, sc->gemm.n, dur);
		else
			say(out, n,
			    "%s computes X times its %s columns of W: its own %dx%s block of Y "
			    "(%s%s%s)",
			    who, cols, sc->gemm.m, cols, lo == hi ? a : "", lo == hi ? ", " : "",
			    dur);
	} else if (st->coll) {
		const sl_ev_coll *c = st->coll;
		int last, phase_last;
		coll_words(c, words, sizeof words, &last, &phase_last);
		/* A training step's collective works on one micro-batch (its
		 * operation's); the data-parallel reduction at the end on none. */
		if (in->train && first->mb >= 0)
			appendf(words, sizeof words, " for micro-batch %d", first->mb);
		sl_fmt_bytes((double)st->bytes, a, sizeof a);
		char from[96], to[96];
		int nrcv = 0, nsnd = parties(s, of, idx, p, from, to, sizeof from, &nrcv);
		int ring = c->algo == SL_ALGO_RING && c->phase != SL_PHASE_BCAST &&
		           c->phase != SL_PHASE_REDUCE && c->phase != SL_PHASE_GATHER &&
		           c->phase != SL_PHASE_SCATTER;
		const char *done = "";
		if (last)
			done = c->op == SL_COLL_ALLREDUCE
			           ? (!in->train             ? "; Y is summed everywhere"
			              : st->ndevs >= m->ndev ? "; every device holds the whole sum"
			                                     : "; each of them holds the whole sum")
			       : c->op == SL_COLL_ALLGATHER
			           ? (!in->train             ? "; now all hold all of Y"
			              : st->ndevs >= m->ndev ? "; now all hold every block"
			                                     : "; each of them holds every block")
			       : c->op == SL_COLL_REDUCESCATTER
			           ? "; each holds one chunk fully summed"
			           : "";
		else if (phase_last && c->phase == SL_PHASE_RS)
			done = "; each holds one chunk fully summed";
		else if (phase_last && c->phase == SL_PHASE_REDUCE && c->op == SL_COLL_ALLREDUCE)
			done = "; the root holds the whole sum";
		if (ring && c->phase == SL_PHASE_RS)
			say(out, n,
			    "%s: %s adds a chunk (%s) from the previous one into its sum (%s)%s",
			    words, from, a, dur, done);
		else if (ring && c->op == SL_COLL_ALLREDUCE)
			say(out, n, "%s: %s passes a summed chunk (%s) to the next (%s)%s", words,
			    from, a, dur, done);
		else if (ring)
			say(out, n, "%s: %s sends a%s block (%s) to the next (%s)%s", words, from,
			    in->train ? "" : " Y", a, dur, done);
		else
			say(out, n, "%s: %s send%s %s (%s) to %s, which %s (%s)%s", words,
			    plural(from), nsnd > 1 ? "" : "s",
			    c->phase == SL_PHASE_REDUCE ? "a partial sum" : "data", a, plural(to),
			    c->phase == SL_PHASE_REDUCE
			        ? (nrcv > 1 ? "add it into their own" : "adds it into its own")
			        : (nrcv > 1 ? "keep it" : "keeps it"),
			    dur, done);
	} else if (st->nxfer > 0) {
		/* Point-to-point (a pipeline's activations or gradients). */
		char from[96], to[96];
		int nrcv = 0, nsnd = parties(s, of, idx, p, from, to, sizeof from, &nrcv);
		/* (A unit's exchange carries earlier results' sends with the
		 * next unit's receives, so no one micro-batch is named.) */
		say(out, n, "pipeline: %s send%s %s (%s) to %s (%s)", plural(from),
		    nsnd > 1 ? "" : "s", in->train ? "activations or gradients" : "data",
		    sl_fmt_bytes((double)st->bytes, a, sizeof a), plural(to), dur);
	} else if (first->kind == SL_EV_COMPUTE && in->train &&
	           train_op_words(&first->work, words, sizeof words)) {
		char mbw[32] = "";
		if (first->mb >= 0)
			snprintf(mbw, sizeof mbw, " for micro-batch %d", first->mb);
		say(out, n, "%s computes %s%s (%s)", who, words, mbw, dur);
	} else {
		say(out, n, "%s: %s (%s)", first->label, who, dur);
	}
}

void sl_scene_sentence(const sl_scene_in *in, sl_scene *m)
{
	sl_opstep *st = NULL;
	int *of = NULL;
	size_t ns = sl_steps_build(in->ev, &st, &of);
	double t = in->t;
	/* Logical steps done: those ended by t.  Two can end together (a
	 * binomial tree over 6 devices runs two levels side by side, pipeline
	 * stages work at once): the screen stops once for them, so it counts
	 * stops, the distinct ends, as the lesson's `step N` does. */
	int k = 0, stops = 0, stop_done = 0;
	for (size_t i = 0; i < ns; i++) {
		if (i == 0 || st[i].t_stop > st[i - 1].t_stop * (1 + 1e-12))
			stops++;
		if (st[i].t_stop <= t * (1 + 1e-12)) {
			k = (int)i + 1;
			stop_done = stops;
		}
	}
	m->at_step_end = k > 0 && st[k - 1].t_stop >= t * (1 - 1e-12);
	m->step = stop_done;
	m->nsteps = in->exact ? stops : 0;
	char desc[320], total[16] = "";
	if (m->nsteps)
		snprintf(total, sizeof total, "/%d", m->nsteps);
	if (ns == 0) {
		snprintf(m->sentence, sizeof m->sentence, "%s",
		         in->exact ? "nothing to run" : "planning the scenario...");
	} else if (m->at_step_end) {
		describe(in, m, &st[k - 1], of, k - 1, desc, sizeof desc);
		/* Other logical steps that ended at the same moment (pipeline
		 * stages working side by side): say that they did. */
		int with = 0;
		for (int i = k - 2; i >= 0 && st[i].t_stop >= st[k - 1].t_stop * (1 - 1e-12); i--)
			with++;
		if (with == 1) {
			char other[256];
			describe(in, m, &st[k - 2], of, k - 2, other, sizeof other);
			appendf(desc, sizeof desc, "; at the same time %s", other);
		} else if (with > 1) {
			sl_opstep all = {0};
			for (int i = k - 1 - with; i < k - 1; i++) {
				all.ndevs += __builtin_popcountll(st[i].devs & ~all.devs);
				all.devs |= st[i].devs;
			}
			char who[96];
			who_words(&all, m->ndev, who, sizeof who);
			appendf(desc, sizeof desc, "; at the same time %d other steps end on %s",
			        with, plural(who));
		}
		say(m->sentence, sizeof m->sentence, "Step %d%s done: %s.", stop_done, total, desc);
	} else if ((size_t)k < ns) {
		describe(in, m, &st[k], of, k, desc, sizeof desc);
		say(m->sentence, sizeof m->sentence, "Step %d%s%s: %s.", stop_done + 1, total,
		    t <= 0 ? " next" : "", desc);
	} else {
		snprintf(m->sentence, sizeof m->sentence, "Step %d%s: running...", stop_done + 1,
		         total);
	}
	free(st);
	free(of);
}
