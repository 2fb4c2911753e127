/* SPDX-License-Identifier: MIT */
/* sentence.c - the sentence under the timeline: which step the scene's time
 * is at, and what that step does, in words from the events' fields (see
 * scene.h). */
#include "scene.h"

#include "steps.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "coll_algo.h"
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

static void rect_words(const int off[2], const int shape[2], char *out, size_t n)
{
	snprintf(out, n, "rows %d-%d, columns %d-%d", off[0], off[0] + shape[0] - 1, off[1],
	         off[1] + shape[1] - 1);
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
	    "LM head",
	};
	if (w->pass == SL_PASS_NONE || w->part <= SL_PART_NONE || w->part >= SL_PART_N)
		return 0;
	const char *g = w->grad == SL_GRAD_W   ? " (weight gradient)"
	                : w->grad == SL_GRAD_X ? " (input gradient)"
	                                       : "";
	/* The head index is the device's own: say "one head". */
	const char *h = w->head >= 0 ? " for one head" : "";
	if (w->part == SL_PART_HEAD) {
		say(out, n, "the %s of the LM head%s",
		    w->pass == SL_PASS_FWD ? "forward" : "backward", g);
		return 1;
	}
	say(out, n, "the %s of block %d's %s%s%s", w->pass == SL_PASS_FWD ? "forward" : "backward",
	    w->block, words[w->part], h, g);
	return 1;
}

/* The devices of a step (p in all) in words, as one at a time ("each
 * device", "device 3", "each of devices 0, 3, 4, 7") and as a plural
 * subject or object ("devices 0, 3, 4, 7"). */
struct who {
	char each[96], plural[96];
};

static void who_list(const sl_opstep *st, int p, const char *many, char *who, size_t n)
{
	if (st->ndevs >= p && p > 1) {
		snprintf(who, n, "each device");
		return;
	}
	size_t len = (size_t)snprintf(who, n, "%s", st->ndevs > 1 ? many : "device");
	int shown = 0;
	for (int d = 0; d < p && d < 64 && len + 8 < n; d++)
		if (st->devs >> d & 1)
			len += (size_t)snprintf(who + len, n - len, "%s %d", shown++ ? "," : "", d);
	if (shown < st->ndevs && len + 8 < n)
		snprintf(who + len, n - len, " and %d more", st->ndevs - shown);
}

static void who_words(const sl_opstep *st, int p, struct who *w)
{
	who_list(st, p, "each of devices", w->each, sizeof w->each);
	who_list(st, p, "devices", w->plural, sizeof w->plural);
}

/* Who sends in step idx and who takes the data in (the receivers, and the
 * peers of the sends), in words (who_words); returns how many send. */
static int parties(const sl_snapshot *s, const int *of, int idx, int p, struct who *from,
                   struct who *to, int *nrcv)
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
	who_words(&snd, p, from);
	who_words(&rcv, p, to);
	if (nrcv)
		*nrcv = rcv.ndevs;
	return snd.ndevs;
}

/* A collective's part and its counter in words: "all-reduce, reduce-scatter
 * 3 of 7", "all-reduce (tree), broadcast level 2 of 3", "all-gather, ring
 * step 4 of 7".  The counter counts logical steps within the part, the same
 * on every device, so it never goes back. */
static const char *const op_words[SL_COLL_NOPS] = {"all-reduce", "all-gather", "reduce-scatter",
                                                   "broadcast",  "reduce",     "gather",
                                                   "scatter",    "all-to-all", "send/recv"};

static void coll_words(const sl_ev_coll *c, int with_op, char *out, size_t n, int *last,
                       int *phase_last)
{
	static const char *const phases[SL_PHASE_N] = {
	    "", "reduce-scatter", "all-gather", "reduce", "broadcast", "gather", "scatter"};
	const sl_algo_ops *al = sl_algo_ops_of((sl_algo)c->algo);
	if (!al)
		al = sl_algo_ops_of((sl_algo)0); /* the table's first, the default */
	int two = c->op >= 0 && c->op < SL_COLL_NOPS && (al->two_parts >> c->op) & 1;
	int half = two ? c->nsteps / 2 : c->nsteps;
	int k = two && c->step >= half ? c->step - half : c->step;
	const char *op = c->op >= 0 && c->op < SL_COLL_NOPS ? op_words[c->op] : "a collective";
	const char *unit = al->step_word;
	*last = c->step == c->nsteps - 1;
	*phase_last = k == half - 1;
	char tag[32] = ""; /* the algorithm, unless it is the default */
	if (!al->quiet)
		snprintf(tag, sizeof tag, " (%s)", al->name);
	if (!with_op) { /* said already: the part and its counter alone */
		op = "";
		tag[0] = 0;
	}
	if (two)
		say(out, n, "%s%s%s%s %s %d of %d", op, tag, with_op ? ", " : "", phases[c->phase],
		    unit, k + 1, half);
	else
		say(out, n, "%s%s%s %s %d of %d", op, with_op ? ", " : "", al->name, unit, k + 1,
		    half);
}

/* ---- a collective on a side stream (cluster.h's Streams) ---- */

/* The whole message of the collective an event belongs to (its leader and
 * seq name it), from its sends' fields: a send of all p blocks carries it
 * whole; sends of one block each add up to it once every block is seen
 * (a ring's first step).  Failing both, p blocks of the event's size. */
static double coll_message_bytes(const sl_snapshot *s, const sl_event *r)
{
	const sl_ev_coll *c = &r->coll;
	int p = c->p;
	uint64_t blk[SL_MAX_FULL_DEVICES] = {0};
	int seen = 0;
	for (size_t i = 0; p > 0 && p <= SL_MAX_FULL_DEVICES && i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		if (e->kind != SL_EV_SEND || e->coll.op != c->op || e->coll.leader != c->leader ||
		    e->coll.seq != c->seq || e->coll.p != p)
			continue;
		if (e->coll.count == p)
			return (double)e->bytes;
		if (e->coll.count == 1 && e->coll.first >= 0 && e->coll.first < p &&
		    !blk[e->coll.first]) {
			blk[e->coll.first] = e->bytes ? e->bytes : 1;
			seen++;
		}
	}
	if (p > 0 && seen == p) {
		double sum = 0;
		for (int b = 0; b < p; b++)
			sum += (double)blk[b];
		return sum;
	}
	return c->count > 0 ? (double)r->bytes * p / c->count : (double)r->bytes;
}

/* What the compute stream of device d did over [a, b), in words: "the
 * backward of block 2's fc1 (weight gradient)" for one GEMM, "the backward
 * of block 2" for several of one block, "the backward of blocks 3 to 1",
 * "other compute" (element-wise work); "" for none.  *waited gets the time
 * it waited for a side stream in that span (communication not hidden). */
static void beside_words(const sl_snapshot *s, int d, double a, double b, char *out, size_t n,
                         double *waited)
{
	const sl_event *one = NULL;
	int ops = 0, other = 0, pass = -1, passes = 0, b0 = -1, b1 = -1;
	*waited = 0;
	out[0] = 0;
	for (size_t i = 0; i < s->n && s->ev[i].t0 < b; i++) {
		const sl_event *e = &s->ev[i];
		double lo = e->t0 > a ? e->t0 : a, hi = e->t1 < b ? e->t1 : b;
		if (e->dev != d || e->stream != 0 || !(hi > lo))
			continue;
		if (e->kind == SL_EV_WAIT && e->waits_stream)
			*waited += hi - lo;
		if (e->kind != SL_EV_COMPUTE)
			continue;
		if (e->work.pass == SL_PASS_NONE) {
			other = 1;
			continue;
		}
		const sl_ev_work *w = &e->work;
		if (!one || w->pass != one->work.pass || w->part != one->work.part ||
		    w->grad != one->work.grad || w->block != one->work.block ||
		    w->head != one->work.head)
			ops++;
		if (w->pass != pass)
			passes++;
		pass = w->pass;
		one = e;
		if (w->part != SL_PART_HEAD && w->block >= 0) {
			if (b0 < 0)
				b0 = w->block;
			b1 = w->block;
		}
	}
	if (!one) {
		if (other)
			snprintf(out, n, "other compute");
		return;
	}
	const char *pw = passes > 1            ? "forward and backward"
	                 : pass == SL_PASS_FWD ? "forward"
	                                       : "backward";
	if (ops == 1 && train_op_words(&one->work, out, n))
		return;
	if (b0 < 0)
		snprintf(out, n, "the %s of the LM head", pw);
	else if (b0 == b1)
		snprintf(out, n, "the %s of block %d", pw, b0);
	else
		snprintf(out, n, "the %s of blocks %d to %d", pw, b0, b1);
}

/* The head of a side-stream collective's step: "the gradient all-reduce of
 * 771 KiB on the communication stream, beside the backward of block 2;
 * 0.40 us exposed".  Training's data-parallel stream carries the
 * gradients' all-reduces and reduce-scatters and ZeRO-3's gathers of
 * parameters (train_step.c). */
static void side_words(const sl_scene_in *in, const sl_scene *m, const sl_opstep *st, const int *of,
                       int idx, char *out, size_t n)
{
	const sl_snapshot *s = in->ev;
	const sl_event *r = &s->ev[st->rep];
	const sl_ev_coll *c = st->coll;
	const char *op = c->op >= 0 && c->op < SL_COLL_NOPS ? op_words[c->op] : "collective";
	const char *what = "";
	if (m->kind == SL_WL_TRAIN && r->stream == SL_STREAM_DP)
		what = c->op == SL_COLL_ALLGATHER ? "parameter " : "gradient ";
	char a[32], dur[32], bw[128];
	sl_fmt_bytes(coll_message_bytes(s, r), a, sizeof a);
	say(out, n, "the %s%s of %s on the %s stream", what, op, a,
	    r->stream == SL_STREAM_DP   ? "communication"
	    : r->stream == SL_STREAM_PP ? "pipeline"
	                                : "second communication");
	/* The representative device's share of the step, and its compute
	 * stream over it. */
	double t0 = r->t0, t1 = r->t1;
	for (size_t i = 0; of && i < s->n; i++)
		if (of[i] == idx && s->ev[i].dev == r->dev) {
			t0 = s->ev[i].t0 < t0 ? s->ev[i].t0 : t0;
			t1 = s->ev[i].t1 > t1 ? s->ev[i].t1 : t1;
		}
	double waited;
	beside_words(s, r->dev, t0, t1, bw, sizeof bw, &waited);
	if (waited > 0)
		fmt_t(waited, dur, sizeof dur);
	if (bw[0])
		appendf(out, n, ", beside %s; %s exposed", bw, waited > 0 ? dur : "none");
	else if (waited > 0)
		appendf(out, n, ", the compute stream waiting for it; %s exposed", dur);
	else
		appendf(out, n, ", with no compute beside it");
}

/* A checkpoint chunk's step, from its fields (which tensor, which of its
 * chunks, read or written): a stored chunk read by every device whose new
 * shards it overlaps, or a chunk of the new layout written by its owner.
 * The manifest read gives the tensor's name and the chunk's rectangle;
 * the plans what each device keeps or writes. */
static void describe_io(const sl_workload *tr, const sl_opstep *st, uint64_t bytes, const char *who,
                        const char *dur, char *out, size_t n)
{
	const sl_ev_io *io = st->io;
	char a[32], r1[64], r2[64];
	sl_fmt_bytes((double)bytes, a, sizeof a);
	const sl_ckpt_info *in = tr && tr->ck ? sl_ckpt_info_of(tr->ck) : NULL;
	const sl_ckpt_tensor *T =
	    in && io->tensor >= 0 && io->tensor < in->ntensors ? &in->tensors[io->tensor] : NULL;
	char name[64];
	if (T)
		snprintf(name, sizeof name, "%s", T->name);
	else
		snprintf(name, sizeof name, "tensor %d", io->tensor);
	int many = st->ndevs > 1;
	if (io->kind == SL_IO_READ) {
		const sl_ckpt_chunk *c =
		    T && io->chunk >= 0 && io->chunk < T->nchunks ? &T->chunks[io->chunk] : NULL;
		say(out, n, "%s read%s %s's stored chunk %d of %d", who, many ? "" : "s", name,
		    io->chunk + 1, io->nchunks);
		if (c) {
			rect_words(c->off, c->shape, r1, sizeof r1);
			appendf(out, n, " (%s, saved by device %d)", r1, c->owner);
		}
		const sl_ckpt_move *mv = NULL;
		for (int i = 0; tr && !many && i < tr->nreads; i++)
			if (tr->reads[i].chunk == io->id && (st->devs >> tr->reads[i].dev & 1))
				mv = &tr->reads[i];
		if (mv) {
			rect_words(mv->off, mv->shape, r2, sizeof r2);
			appendf(out, n, " and keeps %s for its new shard", r2);
		} else {
			appendf(out, n, " and %s the part its new shard needs",
			        many ? "each keeps" : "keeps");
		}
		appendf(out, n, " (%s, %s)", a, dur);
		return;
	}
	const sl_ckpt_move *mv = NULL;
	for (int i = 0; tr && i < tr->nwrites; i++)
		if (tr->writes[i].chunk == io->id && (st->devs >> tr->writes[i].dev & 1))
			mv = &tr->writes[i];
	say(out, n, "%s write%s chunk %d of %d of %s", who, many ? "" : "s", io->chunk + 1,
	    io->nchunks, name);
	if (mv) {
		rect_words(mv->off, mv->shape, r1, sizeof r1);
		appendf(out, n, " (%s)", r1);
	}
	appendf(out, n, " under the new layout (%s, %s)", a, dur);
}

/* How the sentence speaks of each kind of workload's steps. */
static const struct kind_words {
	/* Its compute phase is the sharded product of X and W, and its
	 * collective's buffer is Y: words for a block of it (" Y"), and when
	 * an all-reduce or all-gather of it ends (NULL: the devices' words). */
	int product;
	const char *block, *summed, *gathered;
	int micro_batches; /* its collectives work on one micro-batch each */
	int train_ops;     /* its compute events say which training GEMM they are */
	int model_chunks;  /* its pipeline messages carry a model chunk (interleaved) */
} kinds[SL_WL_KINDS] = {
    [SL_WL_PRODUCT] = {1, " Y", "; Y is summed everywhere", "; now all hold all of Y", 0, 0, 0},
    [SL_WL_COLLECTIVE] = {0, "", NULL, NULL, 1, 1, 0},
    [SL_WL_TRAIN] = {0, "", NULL, NULL, 1, 1, 1},
    [SL_WL_RESHARD] = {0, "", NULL, NULL, 1, 1, 0},
};

/* A pipeline message's step, from its fields: which stage sends which
 * micro-batch's activations forward or gradient back, and to which stage
 * (the devices of each end when a stage has several: its tensor-parallel
 * ranks, its data-parallel replicas). */
static void describe_p2p(const sl_scene_in *in, const struct kind_words *kw, const sl_opstep *st,
                         const struct who *from, const struct who *to, int nsnd, const char *dur,
                         char *out, size_t n)
{
	const sl_ev_p2p *q = st->p2p;
	int fwd = q->kind == SL_P2P_ACT;
	char a[32], chunk[32] = "";
	sl_fmt_bytes((double)st->bytes, a, sizeof a);
	if (kw->model_chunks && in->wl->l.chunks > 1)
		snprintf(chunk, sizeof chunk, " of model chunk %d", q->chunk);
	say(out, n, "pipeline %s: stage %d", fwd ? "forward" : "backward", q->from);
	if (nsnd > 1)
		appendf(out, n, " (%s)", from->plural);
	appendf(out, n, " sends micro-batch %d's %s%s to stage %d", q->mb,
	        fwd ? "activations" : "gradient", chunk, q->to);
	if (nsnd > 1)
		appendf(out, n, " (%s)", to->plural);
	appendf(out, n, " (%s%s, %s)", a, nsnd > 1 ? " each" : "", dur);
	/* Why it took longer than its link's rate: a port at one end carried
	 * other transfers of the same exchange (sl_port_share). */
	if (q->share > 1) {
		const sl_event *e = &in->ev->ev[st->rep];
		int inter = e->peer >= 0 && in->inter && in->inter(in->ctx, e->dev, e->peer);
		char part[16] = "half";
		if (q->share > 2)
			snprintf(part, sizeof part, "1/%d of", q->share);
		/* Short: at 80 columns it must fit the status line's two rows. */
		appendf(out, n, "; shared %s: %s the link's rate",
		        inter ? "adapter" : "switch port", part);
	}
	/* On the pipeline's stream (overlap): what the stage computed while
	 * it travelled. */
	const sl_event *e = &in->ev->ev[st->rep];
	if (e->stream > 0) {
		char bw[128];
		double waited;
		beside_words(in->ev, e->dev, e->t0, e->t1, bw, sizeof bw, &waited);
		if (bw[0])
			appendf(out, n, "; beside %s", bw);
	}
}

static void describe(const sl_scene_in *in, const sl_scene *m, const sl_opstep *st, const int *of,
                     int idx, char *out, size_t n)
{
	const sl_snapshot *s = in->ev;
	const sl_scenario *sc = in->sc;
	int p = m->ndev;
	const sl_event *first = &s->ev[st->rep];
	const struct kind_words *kw = &kinds[m->kind];
	struct who wd;
	const char *who = wd.each;
	char a[32], dur[128];
	who_words(st, p, &wd);
	fmt_t(st->t1 - st->t0, dur, sizeof dur);
	/* Out of step (a slow hop between nodes): the devices spread the step
	 * over longer than any one transfer in it takes; say both, the slow
	 * hop first (it is what the clock advances by). */
	if (!st->compute && !st->io && st->slow_s < (st->t1 - st->t0) * 0.99) {
		char sl[24], span[24];
		fmt_t(st->slow_s, sl, sizeof sl);
		fmt_t(st->t1 - st->t0, span, sizeof span);
		say(dur, sizeof dur,
		    "the slowest transfer %s; out of step, the devices spread it over %s", sl,
		    span);
	}
	if (st->io) {
		describe_io(m->wl, st, first->bytes,
		            st->ndevs >= p && p > 1 ? "all devices" : wd.plural, dur, out, n);
		return;
	}
	char words[128];
	if (st->compute && kw->product && first->op < 0) {
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
		sl_fmt_flop(first->flops, a, sizeof a);
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
		/* On a side stream: what it is and what it ran beside first,
		 * then the step (the sentence is cut at 80 columns). */
		int side = first->stream > 0;
		coll_words(c, !side, words, sizeof words, &last, &phase_last);
		/* A training step's collective works on one micro-batch (its
		 * operation's); the data-parallel reduction at the end on none. */
		if (kw->micro_batches && first->mb >= 0)
			appendf(words, sizeof words, " for micro-batch %d", first->mb);
		sl_fmt_bytes((double)st->bytes, a, sizeof a);
		struct who from, to;
		int nrcv = 0, nsnd = parties(s, of, idx, p, &from, &to, &nrcv);
		const sl_algo_ops *al = sl_algo_ops_of((sl_algo)c->algo);
		int ring = al && c->phase >= 0 && c->phase < SL_PHASE_N &&
		           (al->neighbour_phases >> c->phase) & 1;
		const char *done = "";
		if (last)
			done = c->op == SL_COLL_ALLREDUCE
			           ? (kw->summed             ? kw->summed
			              : st->ndevs >= m->ndev ? "; every device holds the whole sum"
			                                     : "; each of them holds the whole sum")
			       : c->op == SL_COLL_ALLGATHER
			           ? (kw->gathered           ? kw->gathered
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
			    words, from.each, a, dur, done);
		else if (ring && c->op == SL_COLL_ALLREDUCE)
			say(out, n, "%s: %s passes a summed chunk (%s) to the next (%s)%s", words,
			    from.each, a, dur, done);
		else if (ring)
			say(out, n, "%s: %s sends a%s block (%s) to the next (%s)%s", words,
			    from.each, kw->block, a, dur, done);
		else
			say(out, n, "%s: %s send%s %s (%s) to %s, which %s (%s)%s", words,
			    from.plural, nsnd > 1 ? "" : "s",
			    c->phase == SL_PHASE_REDUCE ? "a partial sum" : "data", a, to.plural,
			    c->phase == SL_PHASE_REDUCE
			        ? (nrcv > 1 ? "add it into their own" : "adds it into its own")
			        : (nrcv > 1 ? "keep it" : "keeps it"),
			    dur, done);
		if (side) {
			char head[256], body[320];
			side_words(in, m, st, of, idx, head, sizeof head);
			snprintf(body, sizeof body, "%s", out);
			body[0] = (char)toupper((unsigned char)body[0]);
			say(out, n, "%s. %s", head, body);
		}
	} else if (st->p2p) {
		struct who from, to;
		int nsnd = parties(s, of, idx, p, &from, &to, NULL);
		describe_p2p(in, kw, st, &from, &to, nsnd, dur, out, n);
	} else if (st->nxfer > 0) {
		/* Point-to-point that says nothing of itself. */
		struct who from, to;
		int nrcv = 0, nsnd = parties(s, of, idx, p, &from, &to, &nrcv);
		say(out, n, "%s send%s data (%s) to %s (%s)", from.plural, nsnd > 1 ? "" : "s",
		    sl_fmt_bytes((double)st->bytes, a, sizeof a), to.plural, dur);
	} else if (first->kind == SL_EV_COMPUTE && kw->train_ops &&
	           train_op_words(&first->work, words, sizeof words)) {
		char mbw[32] = "";
		if (first->mb >= 0)
			snprintf(mbw, sizeof mbw, " for micro-batch %d", first->mb);
		say(out, n, "%s computes %s%s (%s)", who, words, mbw, dur);
	} else if (first->stream > 0) {
		/* Work on a side stream (ZeRO's gradient slice summed where its
		 * reduce-scatter left it): beside the compute stream's. */
		say(out, n, "%s: %s, on the communication stream (%s)", first->label, who, dur);
	} else {
		say(out, n, "%s: %s (%s)", first->label, who, dur);
	}
}

void sl_scene_sentence(const sl_scene_in *in, sl_scene *m)
{
	sl_step_index own = {0};
	if (!in->steps)
		sl_step_index_build(in->ev, &own);
	const sl_step_index *x = in->steps ? in->steps : &own;
	const sl_opstep *st = x->st;
	const int *of = x->of;
	size_t ns = x->ns;
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
			struct who w;
			who_words(&all, m->ndev, &w);
			appendf(desc, sizeof desc, "; at the same time %d other steps end on %s",
			        with, w.plural);
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
	sl_step_index_free(&own);
}
