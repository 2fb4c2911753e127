/* SPDX-License-Identifier: MIT */
/* train_est.c - the training step's prediction: recorded once per device
 * kind by the step's own functions, replayed under the engine's rules. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_algo.h"
#include "cost.h"
#include "device.h"
#include "train_internal.h"
#include "xfer.h"

/* ---- the prediction ----
 *
 * A device's step is recorded by running the very step functions with no
 * device (record()): every GEMM's FLOPs, every collective, every exchange
 * and every buffer, in order.  The recordings are then replayed under the
 * engine's rules: a transfer starts at its sender's clock and lasts
 * a + n/B (a link is never busy then: both ends of an exchange wait for
 * all of its transfers, so the previous one on a link has always ended;
 * B over the port count of sl_port_share for a pipeline's transfers);
 * an exchange ends at its latest transfer, gaps before are waiting;
 * collectives are their ring's exchanges, step by step.
 *
 * A recording names groups by mesh axis and trn_pipeline peers by stage, so it
 * holds for any mesh order; devices that hold the same shapes (every TP
 * rank of a stage when the splits are even, every replica when the batch
 * splits evenly) share one.  A mesh is mostly copies of one trn_pipeline: when
 * every replica sees the same links, the replicas run the same trn_pipeline
 * phase at the same times and one replica (slice dp=0) is replayed; when
 * in addition the TP ranks of a stage share a recording and every TP ring
 * and trn_pipeline hop of a stage has one kind of link, the ranks stay in
 * lockstep and one device per stage is replayed, its TP collectives as the
 * ring of one member.  The step's end (gradient collectives over TP and DP
 * groups, then the barrier) is then replayed for every device from its
 * copy's clock.  Anything less symmetric replays every device. */

struct linksrc {
	const sl_cluster *c;          /* live links, knobs included; or */
	const sl_cluster_config *cfg; /* the class figures; or neither: nominal */
};

static sl_link_spec link_of(const struct linksrc *L, int src, int dst)
{
	if (L->c)
		return sl_cluster_link(L->c, src, dst);
	if (L->cfg)
		return sl_cluster_config_link(L->cfg, src, dst);
	sl_link_spec nominal = {1e9, 1e-6};
	return nominal;
}

static int same_link(sl_link_spec a, sl_link_spec b)
{
	return a.bandwidth == b.bandwidth && a.latency == b.latency;
}

/* The configuration the links come from, or NULL for the nominal ones. */
static const sl_cluster_config *linksrc_cfg(const struct linksrc *L)
{
	return L->c ? sl_cluster_config_of(L->c) : L->cfg;
}

/* Do the pipeline hops a0->a1 and b0->b1 time alike: the same link, and,
 * where ports are shared (sl_port_share), through the same kind of port
 * (inside the node or not), even when both kinds have the same figures. */
static int same_hop(const struct linksrc *L, int a0, int a1, int b0, int b1)
{
	if (!same_link(link_of(L, a0, a1), link_of(L, b0, b1)))
		return 0;
	const sl_cluster_config *cfg = linksrc_cfg(L);
	return !cfg || !sl_ports_shared(cfg) ||
	       sl_cluster_config_same_node(cfg, a0, a1) == sl_cluster_config_same_node(cfg, b0, b1);
}

/* One device's recorded step. */
struct prec {
	struct plist pl;
	struct tstore ts; /* the templates its PO_ACTION ops run */
	int tail;         /* the first op after PO_PIPE_END */
	double flops;     /* all its GEMMs */
	uint64_t live_peak, act_peak, ws_peak;
};

static void prec_free(struct prec *r)
{
	free(r->pl.op);
	free(r->pl.msg);
	for (int i = 0; i < r->ts.n; i++)
		free(r->ts.t[i].pl.op);
	free(r->ts.t);
}

/* literal: every micro-batch's work in full, no templates (the reference
 * the templates are tested against). */
static int record(const sl_train *tr, struct dstate *ds, int literal, const sl_cluster_config *hw,
                  struct prec *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	const sl_layout *l = &tr->l;
	int nb = ds->cfirst[tr->v], mv = l->microbatches * tr->v;
	struct drun dr;
	memset(&dr, 0, sizeof dr);
	dr.st = calloc((size_t)mv, sizeof *dr.st);
	dr.bst = calloc((size_t)l->microbatches * (nb ? nb : 1), sizeof *dr.bst);
	struct kctx k;
	memset(&k, 0, sizeof k);
	k.pl = &out->pl;
	k.ts = literal ? NULL : &out->ts;
	k.times = 1;
	k.tr = tr;
	k.ds = ds;
	k.dr = &dr;
	k.err = err;
	trn_set_hw(&k, hw);
	int rc = dr.st && dr.bst ? SL_OK : sl_fail(err, SL_ENOMEM, "out of host memory");
	for (int mb = 0; rc == SL_OK && mb < l->microbatches; mb++)
		for (int c = 0; c < tr->v; c++)
			dr.st[mb * tr->v + c].b = dr.bst + (size_t)mb * nb + ds->cfirst[c];
	if (rc == SL_OK)
		rc = trn_pipeline(&k);
	if (rc == SL_OK)
		rc = trn_rec_mark(&k, PO_PIPE_END);
	out->tail = out->pl.n;
	if (rc == SL_OK)
		rc = trn_sync_and_update(&k);
	if (rc == SL_OK)
		rc = trn_rec_mark(&k, PO_BARRIER);
	out->live_peak = dr.live_peak;
	out->act_peak = dr.act_peak;
	out->ws_peak = dr.ws_peak;
	for (int i = 0; i < out->pl.n; i++)
		if (out->pl.op[i].type == PO_COMPUTE || out->pl.op[i].type == PO_ACTION)
			out->flops += out->pl.op[i].flops;
	trn_free_all(&k);
	free(dr.live);
	free(dr.st);
	free(dr.bst);
	return rc;
}

/* ---- recordings of a layout ---- */

enum { REC_STAGE, REC_SLICE, REC_ALL }; /* one recording per stage, per (tp, stage), per device */

struct sl_est_rec {
	sl_train tr; /* the model and layout; only the recorded devices' states are built */
	int gran;
	int nrec;
	struct prec *rec;
	int *dev; /* the device each recording was made on (the layout's own order) */
	/* The device figures it was recorded for: precision (bytes of
	 * messages and memory) and, when realistic, its kernels' times. */
	sl_cluster_config hw;
	int has_hw;
	double eb;
};

/* Do every TP rank of a stage, and every replica, hold the same shapes? */
static int even_tp(const sl_model_spec *m, const sl_layout *l)
{
	if (m->ffn % l->tp != 0)
		return 0;
	/* sequence parallelism's rows, or scatter/gather's slices of a
	 * micro-batch's r x h values (train_step.c) */
	long unit = l->seq_parallel ? 1 : m->hidden;
	if (l->tp > 1)
		for (int j = 0; j < l->microbatches; j++) {
			int first, count;
			sl_layout_microbatch(m, l, 0, j, &first, &count);
			if ((long)count * m->seq * unit % l->tp != 0)
				return 0;
		}
	return 1;
}

static int rec_index(const sl_est_rec *R, int tp, int pp, int dp)
{
	const sl_layout *l = &R->tr.l;
	return R->gran == REC_STAGE   ? pp
	       : R->gran == REC_SLICE ? pp * l->tp + tp
	                              : (dp * l->pp + pp) * l->tp + tp;
}

void sl_est_rec_free(sl_est_rec *R)
{
	if (!R)
		return;
	for (int i = 0; R->rec && i < R->nrec; i++)
		prec_free(&R->rec[i]);
	for (int i = 0; R->tr.dev && i < R->tr.ndev; i++)
		if (R->tr.dev[i].built)
			trn_free_dev(&R->tr.dev[i]);
	free(R->tr.dev);
	free(R->rec);
	free(R->dev);
	free(R);
}

static int est_record(const sl_model_spec *m, const sl_layout *l, int ndev, int literal,
                      const sl_cluster_config *hw, sl_est_rec **out, sl_err *err)
{
	*out = NULL;
	sl_est_rec *R = calloc(1, sizeof *R);
	if (!R)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	if (hw) {
		R->hw = *hw;
		R->has_hw = 1;
	}
	R->eb = hw ? sl_elem_bytes(hw) : 4.0;
	R->tr.m = *m;
	R->tr.l = *l;
	R->tr.ndev = ndev;
	R->tr.v = l->chunks;
	R->tr.nchunks = l->pp * l->chunks;
	R->gran = m->batch % l->dp != 0 ? REC_ALL : even_tp(m, l) ? REC_STAGE : REC_SLICE;
	R->nrec = R->gran == REC_STAGE ? l->pp : R->gran == REC_SLICE ? l->pp * l->tp : ndev;
	R->tr.dev = calloc((size_t)ndev, sizeof *R->tr.dev);
	R->rec = calloc((size_t)R->nrec, sizeof *R->rec);
	R->dev = calloc((size_t)R->nrec, sizeof *R->dev);
	int rc =
	    R->tr.dev && R->rec && R->dev ? SL_OK : sl_fail(err, SL_ENOMEM, "out of host memory");
	for (int dp = 0; dp < (R->gran == REC_ALL ? sl_layout_dpc(l) : 1) && rc == SL_OK; dp++)
		for (int pp = 0; pp < l->pp && rc == SL_OK; pp++)
			for (int tp = 0; tp < (R->gran == REC_STAGE ? 1 : l->tp) && rc == SL_OK;
			     tp++) {
				int i = rec_index(R, tp, pp, dp),
				    id = sl_mesh_device(l, tp, pp, dp);
				struct dstate *ds = &R->tr.dev[id];
				R->dev[i] = id;
				ds->id = id;
				rc = trn_build_dev(&R->tr, ds, err);
				if (rc == SL_OK)
					rc = record(&R->tr, ds, literal, R->has_hw ? &R->hw : NULL,
					            &R->rec[i], err);
			}
	if (rc) {
		sl_est_rec_free(R);
		return rc;
	}
	*out = R;
	return SL_OK;
}

int sl_est_record(const sl_model_spec *m, const sl_layout *l, int ndev, int literal,
                  const sl_cluster_config *hw, sl_est_rec **out, sl_err *err)
{
	*out = NULL;
	if (ndev < 1 || ndev > SL_MAX_PLAN_DEVICES)
		return sl_fail(err, SL_EINVAL, "device count %d is out of range (1 to %d)", ndev,
		               SL_MAX_PLAN_DEVICES);
	/* A group's ranks are an array of SL_MAX_DEVICES. */
	if (l->tp > SL_MAX_DEVICES || l->pp > SL_MAX_DEVICES || sl_layout_dpc(l) > SL_MAX_DEVICES)
		return sl_fail(err, SL_EINVAL, "tp=%d pp=%d dp=%d: each degree can be at most %d",
		               l->tp, l->pp, l->dp, SL_MAX_DEVICES);
	int rc = sl_layout_check(m, l, ndev, err);
	return rc ? rc : est_record(m, l, ndev, literal, hw, out, err);
}

/* Memory of the device at (tp, pp, dp). */
static void dev_memory(const sl_est_rec *R, int tp, int pp, int dp, uint64_t *params,
                       uint64_t *grads, uint64_t *opt, uint64_t *peak, const struct prec **rp)
{
	int i = rec_index(R, tp, pp, dp);
	const struct dstate *ds = &R->tr.dev[R->dev[i]];
	const sl_cluster_config *hw = R->has_hw ? &R->hw : NULL;
	trn_state_bytes(&R->tr, ds, dp, hw, params, grads, opt);
	*peak = *params + *grads + *opt + R->rec[i].live_peak;
	*rp = &R->rec[i];
}

void sl_est_rec_memory(const sl_est_rec *R, sl_estimate *e)
{
	memset(e, 0, sizeof *e);
	const sl_layout *l = &R->tr.l;
	for (int i = 0; i < R->tr.ndev; i++) {
		int tp, pp, dp;
		sl_mesh_coords(l, i, &tp, &pp, &dp);
		uint64_t params, grads, opt, peak;
		const struct prec *r;
		dev_memory(R, tp, pp, dp, &params, &grads, &opt, &peak, &r);
		if (peak > e->mem_peak_bytes) {
			e->mem_peak_bytes = peak;
			e->peak_dev = i;
			e->params_bytes = params;
			e->grads_bytes = grads;
			e->optimizer_bytes = opt;
			e->act_peak_bytes = r->act_peak;
			e->workspace_peak_bytes = r->ws_peak;
		}
	}
}

/* ---- the replay ---- */

struct pdev {
	double clock, compute, comm, pipe_end, pipe_busy;
	int pc, tpc, xphase, ri; /* tpc: the op inside a PO_ACTION's template */
	int waiting;             /* has arrived at a collective */
	int at_tmpl;             /* has arrived at a template its TP group runs together */
	sl_span sp[2 * MAX_UNIT_MSGS];
	int nsp;
	uint64_t sent[SL_TR_NKINDS], recv[SL_TR_NKINDS];
	/* streams, as the engine's (sl_dev_stream): each side stream's clock and
	 * the start of its busy stretch; communication on them; the compute
	 * stream's waits for them */
	double sclock[SL_STREAMS], sbusy[SL_STREAMS];
	double comm_side, swait, comp_side;
	double ev[EV_SLOTS]; /* events marked on a side stream (PO_MARK) */
	int walk;            /* an effect (S->eff) that cannot be added: walk its ops */
	/* an exchange on a side stream: the compute clock and comm it left;
	 * the spans of its receives (EV_PP_RECV) */
	double xc, xcomm0;
	sl_span xr[MAX_UNIT_MSGS];
	int nxr;
};

struct gcache {
	struct gslot *slot; /* per template of the group's recording */
	int n;
};

struct psim {
	const sl_train *tr; /* the model, and the layout in the order replayed */
	sl_layout l;
	const struct linksrc *L;
	double rate;
	int realistic;           /* the recording's kernel times, not FLOPs over the rate */
	double eb;               /* bytes of a message's element */
	int method;              /* SL_EST_STAGE, SLICE, REPLICA or FULL */
	int period;              /* TP ranks r and r + period are alike (1: STAGE; tp: none) */
	int *rep;                /* SL_EST_REPLICA: replica -> the replica replayed for it */
	int N, n;                /* devices in the mesh; devices replayed */
	int *id;                 /* replayed index -> device id */
	int *tp, *pp, *dp;       /* replayed index -> its mesh coordinates */
	int *slot;               /* device id -> replayed index, or -1 */
	const struct prec **rec; /* per replayed device */
	struct pdev *d;          /* per replayed device */
	/* per replayed sender and the stage it sends to (a device sends only to
	 * the stages of its own TP and DP ranks): the message on that link */
	int *posted, *key;
	double *pt0, *pt1;
	int *pshare;       /* the sender's port count for it (sl_port_share) */
	int crossed;       /* a receiver met another tensor than it expected */
	int uneven;        /* a TP collective of uneven blocks: the period does not hold */
	struct pdev **eff; /* SL_EST_STAGE: per replayed device and template, its whole effect */
	/* scratch for collectives */
	int *gids;
	struct pdev **gm;
	size_t *off;
	double *t0, *t1;
	sl_link_spec *ln;
	unsigned char *pat;
	sl_link_spec *glk;
	sl_link_spec *next[2]; /* per replayed device: the link to its TP, DP ring's next */
	int *queue, qh, qn;    /* the devices ready to be tried */
	unsigned char *inq;
	/* SL_EST_SLICE and REPLICA: per TP group and template, the effects
	 * seen, by the members' clock offsets at its start (group_tmpl()) */
	struct gcache *gc;
	int ngc;
	int *tarr; /* per TP group: members arrived at its template */
	/* per replayed device and pipeline stage: the replayed index of the
	 * device of that stage with its TP and DP ranks, and the link to it */
	int *pslot;
	sl_link_spec *plink;
	unsigned char *pinter; /* 1: that device is in another node */
	int ports;             /* sl_ports_shared() of the links' configuration */
	/* per axis (0: TP, 1: DP), the groups of replayed devices: a device's
	 * group, its members by rank, how many have arrived at its collective */
	int *grp[3], *members[3], *arrived[3];
	/* ZeRO-2 and 3's DP collectives inside the pipeline when one replica is
	 * replayed (dp_virtual()): every DP ring hop has one link; scratch */
	int dp_alike;
	struct pdev *vd, **vp;
	int *vids;
	const sl_cluster_config *cfg; /* for sl_overlap_extra (NULL: no slowdown) */
	/* compute may run beside busy side streams, slower: templates are never
	 * added as a whole (S->eff, group_tmpl()), every op is walked */
	int walk_all;
	double *cst; /* per device: the compute clock while on a side stream */
};

/* An op on stream s: a side stream's starts when the stream is free, not
 * before the compute stream's now (sl_dev_stream); returns the compute
 * clock, which st_leave puts back. */
static double st_enter(struct pdev *d, int s)
{
	double c = d->clock;
	if (s) {
		if (c > d->sclock[s])
			d->sbusy[s] = c;
		else
			d->clock = d->sclock[s];
	}
	return c;
}

static void st_leave(struct pdev *d, int s, double c, double comm0)
{
	if (s) {
		d->comm_side += d->comm - comm0;
		d->sclock[s] = d->clock;
		d->clock = c;
	}
}

/* A compute op on d: on the compute stream slowed beside busy side streams. */
static void st_compute(const struct psim *S, struct pdev *d, int s, double f)
{
	double c = st_enter(d, s);
	if (!s)
		f += sl_overlap_extra(S->cfg, 0, d->sbusy, d->sclock, d->clock, f);
	d->clock += f;
	d->compute += f;
	if (s)
		d->comp_side += f;
	st_leave(d, s, c, d->comm);
}

static void st_wait(struct pdev *d, int s, int slot)
{
	if (slot == EV_PP_RECV) {
		/* sl_dev_wait_spans: a gap idle, a span's rest waited for */
		sl_span sp[MAX_UNIT_MSGS];
		memcpy(sp, d->xr, (size_t)d->nxr * sizeof *sp);
		double comm = 0, idle = 0;
		double t = sl_settle(d->clock, sp, d->nxr, &comm, &idle, NULL, NULL);
		d->swait += comm;
		d->clock = t;
		return;
	}
	double t = slot >= 0 ? d->ev[slot] : d->sclock[s];
	if (t > d->clock) {
		d->swait += t - d->clock;
		d->clock = t;
	}
}

/* A compute op's time: its recorded kernel times on a realistic machine,
 * its FLOPs over the rate on an ideal one. */
static double op_s(const struct psim *S, const struct pop *o)
{
	return S->realistic ? o->sec : o->flops / S->rate;
}

/* sl_port_share of message k of n to or from the stages of msg[], for
 * replayed device i: how many of them go through the same port. */
static int xfer_share(const struct psim *S, int i, const struct xmsg *msg, int n, int k)
{
	if (!S->ports || n < 2)
		return 1;
	const unsigned char *inter = S->pinter + (size_t)i * S->l.pp;
	int share = 0;
	for (int j = 0; j < n; j++)
		share += inter[msg[j].stage] == inter[msg[k].stage];
	return share;
}

/* A transfer posted at the sender's clock t. */
static double span_end(sl_link_spec ln, double t, double bytes)
{
	return t + ln.latency + bytes / ln.bandwidth;
}

/* The engine's clock rule after an exchange (xfer.c's sl_settle, the one
 * the emulation uses). */
static void settle(struct pdev *d, sl_span *sp, int n)
{
	double wait = 0;
	d->clock = sl_settle(d->clock, sp, n, &d->comm, &wait, NULL, NULL);
}

static void coll_offsets(const sl_train *tr, const struct pop *o, int p, size_t *off)
{
	if (o->rows > 0) {
		sl_block_offsets((size_t)o->rows, p, NULL, off);
		for (int i = 0; i <= p; i++)
			off[i] *= (size_t)tr->m.hidden;
	} else {
		sl_block_offsets(o->count, p, NULL, off);
	}
}

static int ring_phases(sl_coll_op op, int *ph)
{
	int n = 0;
	if (op == SL_COLL_ALLREDUCE || op == SL_COLL_REDUCESCATTER)
		ph[n++] = 0;
	if (op == SL_COLL_ALLREDUCE || op == SL_COLL_ALLGATHER)
		ph[n++] = 1;
	return n;
}

/* A collective's axis: 0 TP, 1 DP (dp x cp devices), 2 CP. */
static int op_axis(const struct pop *o)
{
	return o->cp_group ? 2 : o->dp_group;
}

static int group_member(const sl_layout *l, int tp, int pp, int dp, int axis, int r)
{
	return axis == 1   ? sl_mesh_device(l, tp, pp, r)
	       : axis == 2 ? sl_mesh_device(l, tp, pp, dp - dp % l->cp + r)
	                   : sl_mesh_device(l, r, pp, dp);
}

/* The next member of dev's TP or DP ring. */
static int group_next(const sl_layout *l, int dev, int axis)
{
	int tp, pp, dp;
	sl_mesh_coords(l, dev, &tp, &pp, &dp);
	int ci = dp % l->cp;
	return axis == 1   ? sl_mesh_device(l, tp, pp, (dp + 1) % sl_layout_dpc(l))
	       : axis == 2 ? sl_mesh_device(l, tp, pp, dp - ci + (ci + 1) % l->cp)
	                   : sl_mesh_device(l, (tp + 1) % l->tp, pp, dp);
}

/* The link from dev to the next member of its TP or DP ring as the ring's
 * collectives see it (every one a training step runs is an all-reduce, a
 * reduce-scatter or an all-gather): between nodes, striped over adapters as
 * NCCL's channels are (sl_ring_stripes), under the ring algorithm. */
static sl_link_spec ring_link_of(const struct linksrc *L, const sl_layout *l, int dev, int axis)
{
	sl_link_spec s = link_of(L, dev, group_next(l, dev, axis));
	const sl_cluster_config *cfg = linksrc_cfg(L);
	if (cfg)
		s.bandwidth *= sl_mesh_ring_stripes(l, cfg, dev, axis);
	return s;
}

/* The longest chain of members that each follow their predecessor (bit 0
 * of pat[]) back to one whose own send wins: after the pattern has held
 * that many steps, every increment is its chain root's.  p when no member
 * is a root (then no shortcut applies). */
static int chain_depth(const unsigned char *pat, int p)
{
	int r0 = -1;
	for (int r = 0; r < p && r0 < 0; r++)
		if (!(pat[r] & 1))
			r0 = r;
	if (r0 < 0)
		return p;
	int most = 0, d = 0;
	for (int i = 1; i < p; i++) {
		int r = (r0 + i) % p;
		d = pat[r] & 1 ? d + 1 : 0;
		most = d > most ? d : most;
	}
	return most;
}

/* `steps` ring steps of equal blocks for members at clocks c[0..p)
 * (communication so far comm[]), member r sending to r + 1 over a link of
 * latency lat[r] taking tb[r] for a block; nc and w are scratch.  Each
 * member's step is settle() of its send and its receive: it ends at the
 * later end (a transfer is (t + a) + n/B, as the engine adds it up); a
 * receive that starts after the send ended leaves a gap.
 *
 * Which term wins each member's max (its own send, or its predecessor's)
 * and whether it waits: while that pattern holds, a member's increment is
 * the previous step's increment of the member it follows, so once the
 * count of its repeats (same) exceeds the longest chain of followers
 * (chain_depth(), at most p - 1; a few members when nodes cut a ring into
 * runs; one step spare) every member's increment is that of the member its chain starts from,
 * one whose own send wins.  When all of those have the same link, every
 * clock then advances by the same amount each step, their differences
 * stay, so the pattern holds for good and every member's communication
 * grows by its own constant: the rest of the steps are added at once
 * (which changes only the rounding). */
static void ring_even(struct psim *S, double *c, double *comm, double *nc, double *w,
                      const double *lat, const double *tb, int p, int steps)
{
	unsigned char *pat = S->pat;
	double *dc = S->t0 + 6 * (size_t)S->N, *dm = S->t0 + 7 * (size_t)S->N;
	/* All at one clock on like links (a data-parallel ring across nodes,
	 * say): every step is the same latency and block time on every link,
	 * with no gap, whatever p; its closed form spares p x steps updates. */
	int uniform = 1;
	for (int r = 1; r < p && uniform; r++)
		uniform = c[r] == c[0] && lat[r] == lat[0] && tb[r] == tb[0];
	if (uniform && p > 1) {
		double d = (double)steps * (lat[0] + tb[0]);
		for (int r = 0; r < p; r++) {
			c[r] += d;
			comm[r] += d;
		}
		return;
	}
	int same = 0, depth = p;
	for (int k = 0; k < steps; k++) {
		for (int r = 0; r < p; r++)
			w[r] = c[r] + lat[r] + tb[r];
		int changed = 0;
		for (int r = 0; r < p; r++) {
			int q = r ? r - 1 : p - 1;
			double t = w[r] > w[q] ? w[r] : w[q];
			t = t > c[r] ? t : c[r];
			double gap = c[q] - w[r];
			double inc = (t - c[r]) - (gap > 0 ? gap : 0);
			comm[r] += inc;
			unsigned char b = (unsigned char)((w[q] > w[r]) | (gap > 0) << 1);
			changed |= b != pat[r];
			pat[r] = b;
			dc[r] = t - c[r];
			dm[r] = inc;
			nc[r] = t;
		}
		for (int r = 0; r < p; r++)
			c[r] = nc[r];
		same = k > 0 && !changed ? same + 1 : 0;
		if (same == 1)
			depth = chain_depth(pat, p);
		if (same > depth && k + 1 < steps) {
			int root = -1, one = 1;
			for (int r = 0; r < p && one; r++)
				if (!(pat[r] & 1)) {
					if (root < 0)
						root = r;
					one = lat[r] == lat[root] && tb[r] == tb[root];
				}
			if (root < 0 || !one)
				continue;
			double left = steps - k - 1;
			for (int r = 0; r < p; r++) {
				c[r] += left * dc[r];
				comm[r] += left * dm[r];
			}
			return;
		}
	}
}

/* The links of a group whose ranks are the devices ids[]. */
struct group_links {
	const struct linksrc *L;
	const int *ids;
};

static sl_link_spec group_link(void *arg, int from, int to)
{
	const struct group_links *g = arg;
	return link_of(g->L, g->ids[from], g->ids[to]);
}

/* A collective over a ring of `ring` devices of which m[0..p) are
 * replayed: p = ring, or p a period of the ring (rank r is like rank
 * r + p: the same links, the same clock).  ids[] are the replayed
 * members' device ids.  An algorithm whose row replays as a ring
 * (ring_replay), its exchanges step by step: each member's step is
 * settle() of its own send and its receive (the clock bit for bit, but for
 * a uniform ring's closed form, to rounding; the communication time to
 * rounding).  Any other (trees) by its row's closed form on the group's
 * links (an estimate, not the engine's exchanges).  0 when a period meets
 * uneven blocks, or an algorithm without ring_replay a period. */
static int sim_coll(struct psim *S, const int *ids, struct pdev **m, int p, int ring,
                    const struct pop *o, const sl_link_spec *known)
{
	size_t N = (size_t)S->N;
	double *c = S->t0, *w = S->t0 + N, *comm = S->t0 + 2 * N, *nc = S->t0 + 3 * N;
	double *lat = S->t0 + 4 * N, *tb = S->t0 + 5 * N;
	sl_link_spec *ln = S->ln;
	double bw = INFINITY, mx = 0;
	int sr = o->op == SL_COLL_SENDRECV;
	for (int r = 0; r < p; r++) {
		/* a sendrecv's plain link (no channels), a ring collective's striped one */
		ln[r] = known ? known[r]
		        : sr  ? link_of(S->L, ids[r], group_next(&S->l, ids[r], op_axis(o)))
		              : ring_link_of(S->L, &S->l, ids[r], op_axis(o));
		bw = ln[r].bandwidth < bw ? ln[r].bandwidth : bw;
		mx = m[r]->clock > mx ? m[r]->clock : mx;
	}
	if (sr) {
		/* one step of a ring: the whole buffer to the next, from the previous */
		double bytes = (double)o->count * S->eb;
		for (int r = 0; r < p; r++) {
			c[r] = m[r]->clock;
			comm[r] = m[r]->comm;
			lat[r] = ln[r].latency;
			tb[r] = bytes / ln[r].bandwidth;
			m[r]->sent[o->kind] += (uint64_t)bytes;
			m[r]->recv[o->kind] += (uint64_t)bytes;
		}
		ring_even(S, c, comm, nc, w, lat, tb, p, 1);
		for (int r = 0; r < p; r++) {
			m[r]->clock = c[r];
			m[r]->comm = comm[r];
		}
		return 1;
	}
	const sl_algo_ops *al = sl_algo_ops_of(S->l.algo);
	if (!al->ring_replay) {
		if (p != ring)
			return 0;
		/* The algorithm's closed form on the group's links. */
		struct group_links gl = {S->L, ids};
		double t = al->time_on(o->op, p, (double)o->count * S->eb, bw, group_link, &gl);
		for (int r = 0; r < p; r++) {
			m[r]->comm += t;
			m[r]->clock = mx + t;
		}
		return 1;
	}
	size_t unit = o->rows > 0 ? (size_t)o->rows : o->count;
	int even = unit % (size_t)ring == 0;
	if (p != ring && !even)
		return 0;
	size_t *off = S->off;
	if (!even)
		coll_offsets(S->tr, o, ring, off);
	double bytes =
	    (double)(unit / (size_t)ring * (o->rows > 0 ? (size_t)S->tr->m.hidden : 1)) * S->eb;
	int ph[2], np = ring_phases(o->op, ph);
	for (int r = 0; r < p; r++) {
		c[r] = m[r]->clock;
		comm[r] = m[r]->comm;
		lat[r] = ln[r].latency;
		tb[r] = bytes / ln[r].bandwidth;
	}
	if (even) {
		int steps = np * (ring - 1);
		for (int r = 0; r < p; r++) {
			m[r]->sent[o->kind] += (uint64_t)steps * (uint64_t)bytes;
			m[r]->recv[o->kind] += (uint64_t)steps * (uint64_t)bytes;
		}
		ring_even(S, c, comm, nc, w, lat, tb, p, steps);
		for (int r = 0; r < p; r++) {
			m[r]->clock = c[r];
			m[r]->comm = comm[r];
		}
		return 1;
	}
	for (int h = 0; h < np; h++)
		for (int s = 0; s < ring - 1; s++) {
			int blk = ph[h] == 0 ? ((-s - 1) % ring + ring) % ring
			                     : ((-s) % ring + ring) % ring;
			for (int r = 0; r < p; r++, blk = blk + 1 == ring ? 0 : blk + 1) {
				double b = (double)(off[blk + 1] - off[blk]) * S->eb;
				w[r] = c[r] + lat[r] + b / ln[r].bandwidth;
				m[r]->sent[o->kind] += (uint64_t)b;
				m[r + 1 == p ? 0 : r + 1]->recv[o->kind] += (uint64_t)b;
			}
			for (int r = 0; r < p; r++) {
				int q = r ? r - 1 : p - 1;
				/* settle() of the spans [c[r], w[r]] and [c[q], w[q]] from
				 * clock c[r]: it ends at the later end; a receive that
				 * starts after the send ended leaves a gap */
				double t = w[r] > w[q] ? w[r] : w[q];
				t = t > c[r] ? t : c[r];
				double gap = c[q] - w[r];
				comm[r] += (t - c[r]) - (gap > 0 ? gap : 0);
				nc[r] = t;
			}
			for (int r = 0; r < p; r++)
				c[r] = nc[r];
		}
	for (int r = 0; r < p; r++) {
		m[r]->clock = c[r];
		m[r]->comm = comm[r];
	}
	return 1;
}

static void wake(struct psim *S, int i)
{
	if (S->inq[i])
		return;
	S->inq[i] = 1;
	int t = S->qh + S->qn;
	S->queue[t >= S->n ? t - S->n : t] = i;
	S->qn++;
}

/* The next op of replayed device i (inside a template when it runs one). */
/* A DP collective inside the pipeline (ZeRO-2 and 3) for replayed device i,
 * at state *d, under a method that replays one replica (STAGE, SLICE): the
 * method's premise is that every replica is where this one is, so the
 * group is p copies of d, ringed over its members' links, and d becomes
 * its own rank's copy.  0 (fall back) unless every DP hop has one link. */
static int dp_virtual(struct psim *S, int i, struct pdev *d, const struct pop *o)
{
	int cp = o->cp_group, p = cp ? S->l.cp : sl_layout_dpc(&S->l);
	if ((!cp && !S->dp_alike) || S->method == SL_EST_REPLICA)
		return 0;
	double comm0 = d->comm, c = st_enter(d, o->stream);
	for (int r = 0; r < p; r++) {
		S->vd[r] = *d;
		S->vp[r] = &S->vd[r];
		S->vids[r] = group_member(&S->l, S->tp[i], S->pp[i], S->dp[i], op_axis(o), r);
	}
	if (!sim_coll(S, S->vids, S->vp, p, p, o, NULL)) {
		d->clock = c;
		return 0;
	}
	*d = S->vd[cp ? S->dp[i] % S->l.cp : S->dp[i]];
	st_leave(d, o->stream, c, comm0);
	return 1;
}

static void next_op(struct psim *S, int i)
{
	struct pdev *d = &S->d[i];
	const struct prec *r = S->rec[i];
	const struct pop *o = &r->pl.op[d->pc];
	if (o->type == PO_ACTION && ++d->tpc < r->ts.t[o->tm].pl.n)
		return;
	d->tpc = 0;
	d->pc++;
}

/* A template that a TP group's members run with no other device: its
 * computes and its TP collectives only. */
static int tmpl_plain(const struct tmpl *t)
{
	for (int q = 0; q < t->pl.n; q++) {
		const struct pop *o = &t->pl.op[q];
		if (o->stream || (o->type != PO_COMPUTE &&
		                  !(o->type == PO_COLL && !o->dp_group && !o->cp_group)))
			return 0;
	}
	return 1;
}

/* What a template did to the p members of a TP group, each from its own
 * clock: their clocks' offsets from member 0's at the start, and what it
 * added to each member. */
struct gent {
	double *off, *clock, *compute, *comm; /* per member */
	uint64_t *sent, *recv;                /* per member and kind */
};
enum { GSLOT_MAX = 4 };
struct gslot {
	int n, next;
	int plain; /* tmpl_plain() of the template: 1, 0, or -1 not yet known */
	struct gent e[GSLOT_MAX];
};

static void gent_free(struct gent *e)
{
	free(e->off);
	free(e->sent);
	memset(e, 0, sizeof *e);
}

static int gent_alloc(struct gent *e, int p)
{
	e->off = malloc(4 * (size_t)p * sizeof *e->off);
	e->sent = calloc(2 * (size_t)p * SL_TR_NKINDS, sizeof *e->sent);
	if (!e->off || !e->sent) {
		gent_free(e);
		return -1;
	}
	e->clock = e->off + p;
	e->compute = e->off + 2 * p;
	e->comm = e->off + 3 * p;
	e->recv = e->sent + (size_t)p * SL_TR_NKINDS;
	return 0;
}

/* Every member of TP group grp has arrived at template tm: run it for all
 * of them at once.  Its computes add to each member's clock; its
 * collectives are the group's rings, from the members' clocks.  What a
 * ring does depends only on the clocks' offsets (max and + commute with
 * adding one time to all), so a template met again from the same offsets
 * (compared bit for bit) adds what it added then instead of being worked
 * out again: one addition per member where the ops took one each, so the
 * clocks agree with the op-by-op replay to rounding, as the STAGE method's
 * templates do.  0 when a collective meets uneven blocks. */
static int group_tmpl(struct psim *S, int grp, const int *mem, int tm)
{
	int p = S->period;
	const struct tmpl *t = &S->rec[mem[0]]->ts.t[tm];
	struct pdev **m = S->gm;
	double *off = S->t0 + 6 * (size_t)S->N; /* ring_even's dc: free here */
	for (int r = 0; r < p; r++) {
		m[r] = &S->d[mem[r]];
		off[r] = m[r]->clock - m[0]->clock;
	}
	struct gslot *g = &S->gc[grp].slot[tm];
	for (int k = 0; k < g->n; k++) {
		const struct gent *e = &g->e[k];
		if (memcmp(e->off, off, (size_t)p * sizeof *off) != 0)
			continue;
		for (int r = 0; r < p; r++) {
			m[r]->clock += e->clock[r];
			m[r]->compute += e->compute[r];
			m[r]->comm += e->comm[r];
			for (int q = 0; q < SL_TR_NKINDS; q++) {
				m[r]->sent[q] += e->sent[(size_t)r * SL_TR_NKINDS + q];
				m[r]->recv[q] += e->recv[(size_t)r * SL_TR_NKINDS + q];
			}
		}
		return 1;
	}
	/* Not met yet: work it out, keeping what it adds. */
	struct gent *e = &g->e[g->n < GSLOT_MAX ? g->n : g->next];
	/* A full slot reuses its oldest entry's room (the same p). */
	int keep = g->n == GSLOT_MAX || gent_alloc(e, p) == 0;
	if (g->n == GSLOT_MAX)
		g->next = (g->next + 1) % GSLOT_MAX;
	if (keep) {
		memcpy(e->off, off, (size_t)p * sizeof *off);
		for (int r = 0; r < p; r++) {
			e->clock[r] = m[r]->clock;
			e->compute[r] = m[r]->compute;
			e->comm[r] = m[r]->comm;
			for (int q = 0; q < SL_TR_NKINDS; q++) {
				e->sent[(size_t)r * SL_TR_NKINDS + q] = m[r]->sent[q];
				e->recv[(size_t)r * SL_TR_NKINDS + q] = m[r]->recv[q];
			}
		}
	}
	int *ids = S->gids;
	sl_link_spec *lk = S->glk;
	for (int r = 0; r < p; r++) {
		ids[r] = S->id[mem[r]];
		lk[r] = S->next[0][mem[r]];
	}
	for (int q = 0; q < t->pl.n; q++) {
		const struct pop *o = &t->pl.op[q];
		if (o->type == PO_COMPUTE) {
			for (int r = 0; r < p; r++) {
				double f = op_s(S, o);
				m[r]->clock += f;
				m[r]->compute += f;
			}
		} else if (o->dp_group || o->cp_group) {
			for (int r = 0; r < p; r++)
				if (!dp_virtual(S, mem[r], m[r], o)) {
					if (keep && g->n < GSLOT_MAX)
						gent_free(e);
					return 0;
				}
		} else if (!sim_coll(S, ids, m, p, S->l.tp, o, lk)) {
			if (keep && g->n < GSLOT_MAX)
				gent_free(e); /* not counted yet */
			return 0;
		}
	}
	if (keep) {
		for (int r = 0; r < p; r++) {
			e->clock[r] = m[r]->clock - e->clock[r];
			e->compute[r] = m[r]->compute - e->compute[r];
			e->comm[r] = m[r]->comm - e->comm[r];
			for (int q = 0; q < SL_TR_NKINDS; q++) {
				e->sent[(size_t)r * SL_TR_NKINDS + q] =
				    m[r]->sent[q] - e->sent[(size_t)r * SL_TR_NKINDS + q];
				e->recv[(size_t)r * SL_TR_NKINDS + q] =
				    m[r]->recv[q] - e->recv[(size_t)r * SL_TR_NKINDS + q];
			}
		}
		if (g->n < GSLOT_MAX)
			g->n++;
	}
	return 1;
}

/* Advance replayed device i by one op if it can; 0 when it must wait (or
 * has reached `stop`, the end of what this replay covers).  Exchanges
 * follow the engine: post every send, take the receives in order (each
 * once its sender has posted), then wait until every send is taken. */
static int sim_advance(struct psim *S, int i, int stop)
{
	struct pdev *d = &S->d[i];
	const struct plist *pl = &S->rec[i]->pl;
	if (d->pc >= stop)
		return 0;
	const struct pop *o = &pl->op[d->pc];
	const struct plist *src = pl; /* the list o is in: its msg[] holds o's messages */
	if (o->type == PO_ACTION) {
		const struct tmpl *t = &S->rec[i]->ts.t[o->tm];
		if (S->eff && d->tpc == 0 && !S->eff[i][o->tm].walk && !S->walk_all) {
			const struct pdev *e = &S->eff[i][o->tm];
			d->clock += e->clock;
			d->compute += e->compute;
			d->comm += e->comm;
			for (int q = 0; q < SL_TR_NKINDS; q++) {
				d->sent[q] += e->sent[q];
				d->recv[q] += e->recv[q];
			}
			d->pc++;
			return 1;
		}
		if (t->pl.n == 0) {
			d->pc++;
			return 1;
		}
		struct gslot *gs = S->gc && d->tpc == 0 ? &S->gc[S->grp[0][i]].slot[o->tm] : NULL;
		if (gs && gs->plain < 0)
			gs->plain = !S->walk_all && tmpl_plain(t);
		if (gs && gs->plain) {
			/* The TP group runs it together, once all have come. */
			int grp = S->grp[0][i];
			if (!d->at_tmpl) {
				d->at_tmpl = 1;
				S->tarr[grp]++;
			}
			if (S->tarr[grp] < S->period)
				return 0;
			S->tarr[grp] = 0;
			const int *mem = S->members[0] + (size_t)grp * S->period;
			if (!group_tmpl(S, grp, mem, o->tm)) {
				S->uneven = 1;
				return 0;
			}
			for (int r = 0; r < S->period; r++) {
				S->d[mem[r]].at_tmpl = 0;
				S->d[mem[r]].pc++;
				wake(S, mem[r]);
			}
			return 1;
		}
		o = &t->pl.op[d->tpc];
		src = &t->pl;
	}
	/* Only an exchange has messages; a list without any has msg == NULL,
	 * and NULL + 0 is undefined. */
	const struct xmsg *snd = NULL, *rcv = NULL;
	if (o->type == PO_XFER) {
		snd = src->msg + o->m0;
		rcv = snd + o->ns;
	}
	int n = S->n;
	switch (o->type) {
	case PO_COMPUTE:
		st_compute(S, d, o->stream, op_s(S, o));
		next_op(S, i);
		return 1;
	case PO_WAIT:
		st_wait(d, o->stream, o->slot);
		next_op(S, i);
		return 1;
	case PO_MARK:
		d->ev[o->slot] = d->sclock[o->stream];
		next_op(S, i);
		return 1;
	case PO_PIPE_END:
		d->pipe_end = d->clock;
		/* (train_step.c's: what the compute stream did or waited for) */
		d->pipe_busy = d->compute - d->comp_side + d->comm - d->comm_side + d->swait;
		d->pc++;
		return 1;
	case PO_XFER:
		/* The receiver times each transfer: it starts at the sender's
		 * clock and runs at its link's bandwidth over the larger of the
		 * two ends' port counts (sl_port_share), as xfer.c's pull(). */
		if (d->xphase == 0) {
			d->xcomm0 = d->comm;
			d->xc = st_enter(d, o->stream);
			if (o->slot)
				d->nxr = 0;
			d->nsp = 0;
			for (int m = 0; m < o->ns; m++) {
				size_t pi = (size_t)i * S->l.pp + snd[m].stage;
				int ps = S->pslot[pi];
				size_t li = pi; /* sender i, the receiver's stage */
				S->pt0[li] = d->clock;
				S->pshare[li] = xfer_share(S, i, snd, o->ns, m);
				S->posted[li] = 1;
				S->key[li] = snd[m].key;
				wake(S, ps);
				d->sent[SL_TR_PP_SENDRECV] += (uint64_t)((double)snd[m].n * S->eb);
			}
			d->xphase = 1;
			d->ri = 0;
		}
		if (d->xphase == 1) {
			for (; d->ri < o->nr; d->ri++) {
				int ps = S->pslot[(size_t)i * S->l.pp + rcv[d->ri].stage];
				size_t li = (size_t)ps * S->l.pp + S->pp[i];
				if (!S->posted[li])
					return 0;
				if (S->key[li] != rcv[d->ri].key)
					S->crossed = 1;
				int share = xfer_share(S, i, rcv, o->nr, d->ri);
				if (S->pshare[li] > share)
					share = S->pshare[li];
				double bytes = (double)rcv[d->ri].n * S->eb;
				sl_link_spec ln = S->plink[li];
				if (share > 1)
					ln.bandwidth /= share;
				S->pt1[li] = span_end(ln, S->pt0[li], bytes);
				if (d->nxr < MAX_UNIT_MSGS)
					d->xr[d->nxr++] = (sl_span){S->pt0[li], S->pt1[li]};
				S->posted[li] = 0;
				wake(S, ps);
				d->sp[d->nsp] = (sl_span){S->pt0[li], S->pt1[li]};
				d->nsp++;
				d->recv[SL_TR_PP_SENDRECV] += (uint64_t)bytes;
			}
			d->xphase = 2;
		}
		for (int m = 0; m < o->ns; m++)
			if (S->posted[(size_t)i * S->l.pp + snd[m].stage])
				return 0;
		/* Every send taken: its span is the receiver's timing. */
		for (int m = 0; m < o->ns; m++) {
			size_t li = (size_t)i * S->l.pp + snd[m].stage;
			d->sp[d->nsp] = (sl_span){S->pt0[li], S->pt1[li]};
			d->nsp++;
		}
		settle(d, d->sp, d->nsp);
		st_leave(d, o->stream, d->xc, d->xcomm0);
		d->xphase = 0;
		d->pc++;
		return 1;
	case PO_COLL: {
		if ((o->dp_group || o->cp_group) && S->method != SL_EST_FULL) {
			if (!dp_virtual(S, i, d, o)) {
				S->uneven = 1;
				return 0;
			}
			next_op(S, i);
			wake(S, i);
			return 1;
		}
		int g = op_axis(o);
		int ring = g == 1 ? sl_layout_dpc(&S->l) : g == 2 ? S->l.cp : S->l.tp;
		int p = g ? ring : S->period;
		/* Every member runs the same collectives in the same order: the
		 * last to arrive runs it for all. */
		int grp = S->grp[g][i];
		if (!d->waiting) {
			d->waiting = 1;
			S->arrived[g][grp]++;
		}
		if (S->arrived[g][grp] < p)
			return 0;
		S->arrived[g][grp] = 0;
		int *ids = S->gids;
		struct pdev **m = S->gm;
		sl_link_spec *lk = S->glk;
		const int *mem = S->members[g] + (size_t)grp * p;
		double *cst = S->cst, *cm0 = S->cst + S->N;
		for (int r = 0; r < p; r++) {
			ids[r] = S->id[mem[r]];
			m[r] = &S->d[mem[r]];
			lk[r] = g < 2 ? S->next[g][mem[r]] : ring_link_of(S->L, &S->l, ids[r], 2);
			cm0[r] = m[r]->comm;
			cst[r] = st_enter(m[r], o->stream);
		}
		if (!sim_coll(S, ids, m, p, ring, o, o->op == SL_COLL_SENDRECV ? NULL : lk)) {
			S->uneven = 1;
			return 0;
		}
		for (int r = 0; r < p; r++)
			st_leave(m[r], o->stream, cst[r], cm0[r]);
		for (int r = 0; r < p; r++) {
			m[r]->waiting = 0;
			next_op(S, mem[r]);
			wake(S, mem[r]);
		}
		(void)stop;
		return 1;
	}
	case PO_BARRIER: {
		double mx = 0;
		for (int j = 0; j < n; j++) {
			if (S->d[j].pc >= S->rec[j]->pl.n ||
			    S->rec[j]->pl.op[S->d[j].pc].type != PO_BARRIER)
				return 0;
			mx = S->d[j].clock > mx ? S->d[j].clock : mx;
		}
		for (int j = 0; j < n; j++) {
			S->d[j].clock = mx;
			S->d[j].pc++;
			wake(S, j);
		}
		return 1;
	}
	}
	return 0;
}

/* Replay the replayed devices up to their stop. */
static int sim_run(struct psim *S, sl_err *err)
{
	/* A device is tried again only when something it may wait for has
	 * happened (wake()): devices are tried as long as one is ready. */
	for (int i = 0; i < S->n; i++)
		wake(S, i);
	while (S->qn > 0) {
		int i = S->queue[S->qh];
		S->qh = S->qh + 1 == S->n ? 0 : S->qh + 1;
		S->qn--;
		S->inq[i] = 0;
		int stop = S->method == SL_EST_FULL ? S->rec[i]->pl.n : S->rec[i]->tail;
		while (sim_advance(S, i, stop))
			;
		if (S->uneven)
			return SL_OK;
	}
	for (int i = 0; i < S->n; i++)
		if (S->d[i].pc < (S->method == SL_EST_FULL ? S->rec[i]->pl.n : S->rec[i]->tail))
			return sl_fail(err, SL_EINVAL,
			               "this schedule would deadlock on %s with p=%d, m=%d, v=%d "
			               "(a bug in shardlab)",
			               sl_sched_name(S->l.schedule), S->l.pp, S->l.microbatches,
			               S->tr->v);
	if (S->crossed)
		return sl_fail(err, SL_EINVAL,
		               "this schedule's messages would cross on a link with p=%d, m=%d, "
		               "v=%d (a bug in shardlab)",
		               S->l.pp, S->l.microbatches, S->tr->v);
	return SL_OK;
}

/* What a template does to a device that runs it alone from clock 0, its
 * TP collectives as rings in lockstep; 0 when one has uneven blocks. */
static int tmpl_effect(struct psim *S, int i, const struct tmpl *t, struct pdev *e)
{
	memset(e, 0, sizeof *e);
	/* Beside the compute, what a template adds depends on the streams
	 * when it starts: its ops are walked instead. */
	for (int q = 0; q < t->pl.n; q++)
		if (t->pl.op[q].stream || t->pl.op[q].type == PO_WAIT ||
		    t->pl.op[q].type == PO_MARK) {
			e->walk = 1;
			return 1;
		}
	for (int q = 0; q < t->pl.n; q++) {
		const struct pop *o = &t->pl.op[q];
		if (o->type == PO_COMPUTE) {
			e->clock += op_s(S, o);
			e->compute += op_s(S, o);
		} else if (o->type == PO_COLL && !o->dp_group && !o->cp_group) {
			int id = S->id[i];
			struct pdev *m = e;
			if (!sim_coll(S, &id, &m, 1, S->l.tp, o, &S->next[0][i]))
				return 0;
		} else if (o->type == PO_COLL) {
			if (!dp_virtual(S, i, e, o))
				return 0;
		} else {
			return 0;
		}
	}
	return 1;
}

/* Do the links allow replaying replica 0's TP ranks 0..per-1 only (see
 * above)?  By mesh coordinates, every device's TP ring link to the next
 * rank and its trn_pipeline hops both ways (around the ends when interleaved)
 * must be those of (tp % per, s, 0). */
static int symmetric(const sl_layout *l, int v, const struct linksrc *L, int per)
{
	int t = l->tp, p = l->pp, d = sl_layout_dpc(l);
	for (int s = 0; s < p; s++) {
		int nxt[2] = {(s + 1) % p, (s + p - 1) % p};
		for (int k = 0; k < d; k++)
			for (int r = 0; r < t; r++) {
				int rr = r % per;
				/* every CP ring of one link (its hops are replayed as
				 * copies of the stand-in's) */
				if (l->cp > 1) {
					int a = sl_mesh_device(l, r, s, k),
					    b = sl_mesh_device(l, rr, s, 0);
					if (!same_link(ring_link_of(L, l, a, 2),
					               ring_link_of(L, l, b, 2)) ||
					    !same_link(link_of(L, a, group_next(l, a, 2)),
					               link_of(L, b, group_next(l, b, 2))))
						return 0;
				}
				if (k == 0 && rr == r)
					continue;
				if (t > 1) {
					sl_link_spec a =
					    ring_link_of(L, l, sl_mesh_device(l, r, s, k), 0);
					sl_link_spec b =
					    ring_link_of(L, l, sl_mesh_device(l, rr, s, 0), 0);
					if (!same_link(a, b))
						return 0;
				}
				for (int w = 0; w < 2 && p > 1; w++) {
					if (v == 1 &&
					    ((w == 0 && s == p - 1) || (w == 1 && s == 0)))
						continue;
					if (!same_hop(L, sl_mesh_device(l, r, s, k),
					              sl_mesh_device(l, r, nxt[w], k),
					              sl_mesh_device(l, rr, s, 0),
					              sl_mesh_device(l, rr, nxt[w], 0)))
						return 0;
				}
			}
	}
	return 1;
}

/* The replayed device that stands for the device at (tp, pp, dp). */
static int stand_in(const struct psim *S, int tp, int pp, int dp)
{
	if (S->method == SL_EST_FULL)
		return sl_mesh_device(&S->l, tp, pp, dp);
	if (S->method == SL_EST_REPLICA)
		return sl_mesh_device(&S->l, tp, pp, S->rep[dp]);
	return sl_mesh_device(&S->l, tp % S->period, pp, 0);
}

struct est_out {
	sl_estimate *est;
	double *compute, *comm; /* per device, or NULL */
};

static void psim_free(struct psim *S)
{
	free(S->rec);
	free(S->rep);
	free(S->d);
	free(S->id);
	free(S->tp);
	free(S->slot);
	free(S->posted);
	free(S->key);
	free(S->pt0);
	for (int i = 0; S->eff && i < S->n; i++)
		free(S->eff[i]);
	free(S->eff);
	free(S->gids);
	free(S->vd);
	free(S->cst);
	free(S->vp);
	free(S->vids);
	free(S->gm);
	free(S->off);
	free(S->t0);
	free(S->ln);
	free(S->pat);
	free(S->glk);
	for (int g = 0; S->gc && g < S->ngc; g++) {
		for (int q = 0; S->gc[g].slot && q < S->gc[g].n; q++)
			for (int k = 0; k < S->gc[g].slot[q].n; k++)
				gent_free(&S->gc[g].slot[q].e[k]);
		free(S->gc[g].slot);
	}
	free(S->gc);
	free(S->tarr);
	free(S->pslot);
	free(S->plink);
	free(S->pinter);
	free(S->pshare);
	free(S->next[0]);
	free(S->queue);
	free(S->inq);
	for (int g = 0; g < 3; g++) {
		free(S->grp[g]);
		free(S->members[g]);
		free(S->arrived[g]);
	}
	memset(S, 0, sizeof *S);
}

/* Do replicas a and b cross the same links, rank by rank: each TP ring's
 * link to its next rank and the pipeline hops both ways? */
static int same_replica(const sl_layout *l, const struct linksrc *L, int a, int b)
{
	int t = l->tp, p = l->pp;
	for (int s = 0; s < p; s++)
		for (int r = 0; r < t; r++) {
			int da = sl_mesh_device(l, r, s, a), db = sl_mesh_device(l, r, s, b);
			if (t > 1 &&
			    !same_link(ring_link_of(L, l, da, 0), ring_link_of(L, l, db, 0)))
				return 0;
			for (int w = 0; w < 2 && p > 1; w++) {
				int s2 = w == 0 ? (s + 1) % p : (s + p - 1) % p;
				if (!same_hop(L, da, sl_mesh_device(l, r, s2, a), db,
				              sl_mesh_device(l, r, s2, b)))
					return 0;
			}
		}
	return 1;
}

/* Does any device meet a data-parallel collective before its step's end
 * (where the replay of a part of the mesh stops)?  Then replicas wait for
 * each other inside the pipeline and none can stand for another. */
static int dp_inside(const sl_est_rec *R)
{
	for (int i = 0; i < R->nrec; i++) {
		const struct prec *r = &R->rec[i];
		for (int k = 0; k < r->tail && k < r->pl.n; k++) {
			const struct pop *o = &r->pl.op[k];
			if (o->type == PO_COLL && o->dp_group)
				return 1;
			if (o->type == PO_ACTION)
				for (int q = 0; q < r->ts.t[o->tm].pl.n; q++)
					if (r->ts.t[o->tm].pl.op[q].type == PO_COLL &&
					    r->ts.t[o->tm].pl.op[q].dp_group)
						return 1;
		}
	}
	return 0;
}

/* SL_EST_REPLICA: each replica's stand-in, the first replica like it
 * (same_replica()); how many replicas are replayed, or 0 when every
 * replica is its own (the full replay is then no dearer). */
static int replica_kinds(const sl_layout *l, const struct linksrc *L, int *rep)
{
	int kinds = 0;
	for (int k = 0; k < sl_layout_dpc(l); k++) {
		rep[k] = k;
		for (int j = 0; j < k; j++)
			if (rep[j] == j && same_replica(l, L, j, k)) {
				rep[k] = j;
				break;
			}
		kinds += rep[k] == k;
	}
	return kinds < sl_layout_dpc(l) ? kinds : 0;
}

/* Replay with one method; *fallback = 1 when the method does not apply. */
/* Replay with one method (and period of the TP ranks for STAGE and
 * SLICE); *fallback = 1 when it does not apply. */
static int replay_with(const sl_est_rec *R, const sl_layout *l, const struct linksrc *L, int method,
                       int per, const struct est_out *out, int *fallback, sl_err *err)
{
	int N = R->tr.ndev, t = l->tp, pp_n = l->pp, dp_n = sl_layout_dpc(l);
	*fallback = 0;
	/* Ranks stand for others only when they share a recording. */
	if ((method != SL_EST_FULL && per < t && R->gran != REC_STAGE) ||
	    (method != SL_EST_FULL && R->gran == REC_ALL)) {
		*fallback = 1;
		return SL_OK;
	}
	int *rep = NULL, kinds = 1;
	if (method == SL_EST_REPLICA) {
		/* Rings only: a tree pairs ranks that the kinds do not compare. */
		if (!sl_algo_ops_of(l->algo)->ring_replay || dp_n < 2 || dp_inside(R) ||
		    l->cp > 1) {
			*fallback = 1;
			return SL_OK;
		}
		if (!(rep = malloc((size_t)dp_n * sizeof *rep)))
			return sl_fail(err, SL_ENOMEM, "out of host memory");
		if (!(kinds = replica_kinds(l, L, rep))) {
			free(rep);
			*fallback = 1;
			return SL_OK;
		}
	}
	struct psim S;
	memset(&S, 0, sizeof S);
	S.tr = &R->tr;
	S.l = *l;
	S.L = L;
	S.rate = L->c ? sl_cluster_config_of(L->c)->flops : L->cfg ? L->cfg->flops : 1e12;
	S.realistic = R->has_hw && R->hw.efficiency == SL_EFF_REALISTIC;
	S.eb = R->eb;
	S.method = method;
	S.period = method == SL_EST_FULL || method == SL_EST_REPLICA ? t : per;
	S.rep = rep;
	S.N = N;
	if ((method == SL_EST_STAGE || method == SL_EST_SLICE) && !symmetric(l, R->tr.v, L, per)) {
		*fallback = 1;
		return SL_OK;
	}
	int nmax = method == SL_EST_FULL ? N : pp_n * per * kinds;
	size_t nn = (size_t)nmax * (size_t)pp_n;
	S.slot = malloc((size_t)N * sizeof *S.slot);
	S.id = malloc((size_t)nmax * sizeof *S.id);
	S.tp = malloc(3 * (size_t)nmax * sizeof *S.tp);
	S.pp = S.tp ? S.tp + nmax : NULL;
	S.dp = S.tp ? S.tp + 2 * nmax : NULL;
	S.rec = calloc((size_t)nmax, sizeof *S.rec);
	S.d = calloc((size_t)nmax, sizeof *S.d);
	S.posted = calloc(nn, sizeof *S.posted);
	S.key = calloc(nn, sizeof *S.key);
	S.pt0 = calloc(2 * nn, sizeof *S.pt0);
	S.pt1 = S.pt0 ? S.pt0 + nn : NULL;
	S.pshare = calloc(nn, sizeof *S.pshare);
	S.gids = malloc((size_t)N * sizeof *S.gids);
	S.cfg = linksrc_cfg(L);
	{
		const sl_layout *rl = &R->tr.l;
		int real = S.cfg && S.cfg->efficiency == SL_EFF_REALISTIC;
		int ov = rl->overlap == SL_OVERLAP_ON || (rl->overlap == SL_OVERLAP_AUTO && real);
		/* (the ring of context parallelism is beside compute whatever the overlap) */
		S.walk_all = real && S.cfg->dm.overlap_slowdown > 0 &&
		             ((ov && (sl_layout_dpc(rl) > 1 || rl->pp > 1)) ||
		              (rl->cp > 1 && rl->cp_comm == SL_CP_RING));
	}
	S.cst = malloc(2 * (size_t)N * sizeof *S.cst);
	S.vd = malloc((size_t)dp_n * sizeof *S.vd);
	S.vp = malloc((size_t)dp_n * sizeof *S.vp);
	S.vids = malloc((size_t)dp_n * sizeof *S.vids);
	if (!S.vd || !S.vp || !S.vids || !S.cst) {
		psim_free(&S);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	if (method != SL_EST_FULL && sl_layout_dpc(&R->tr.l) > 1) {
		sl_link_spec l0 = ring_link_of(L, l, 0, 1);
		S.dp_alike = 1;
		for (int id = 1; id < N && S.dp_alike; id++)
			S.dp_alike = same_link(ring_link_of(L, l, id, 1), l0);
	}
	S.gm = malloc((size_t)N * sizeof *S.gm);
	S.off = malloc(((size_t)N + 1) * sizeof *S.off);
	S.t0 = malloc(8 * (size_t)N * sizeof *S.t0);
	S.pat = malloc(2 * (size_t)N);
	S.glk = malloc((size_t)N * sizeof *S.glk);
	S.next[0] = malloc(2 * (size_t)nmax * sizeof *S.next[0]);
	S.next[1] = S.next[0] ? S.next[0] + nmax : NULL;
	S.queue = malloc((size_t)nmax * sizeof *S.queue);
	S.inq = calloc((size_t)nmax, 1);
	int nogroup = 0;
	for (int g = 0; g < 3; g++) {
		S.grp[g] = malloc((size_t)nmax * sizeof *S.grp[g]);
		S.members[g] = malloc((size_t)nmax * sizeof *S.members[g]);
		S.arrived[g] = calloc((size_t)nmax, sizeof *S.arrived[g]);
		nogroup |= !S.grp[g] || !S.members[g] || !S.arrived[g];
	}
	S.t1 = S.t0 ? S.t0 + N : NULL;
	S.ln = malloc((size_t)N * sizeof *S.ln);
	if (!S.slot || !S.id || !S.tp || !S.rec || !S.d || !S.posted || !S.key || !S.pt0 ||
	    !S.pshare || !S.gids || !S.gm || !S.off || !S.t0 || !S.ln || !S.pat || !S.glk ||
	    !S.next[0] || !S.queue || !S.inq || nogroup) {
		psim_free(&S);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	for (int i = 0; i < N; i++)
		S.slot[i] = -1;
	/* The replicas replayed, ri counting them (the TP groups' index). */
	for (int dp = 0, ri = 0; dp < (method == SL_EST_STAGE || method == SL_EST_SLICE ? 1 : dp_n);
	     dp++) {
		if (method == SL_EST_REPLICA && rep[dp] != dp)
			continue;
		for (int pp = 0; pp < pp_n; pp++)
			for (int tp = 0; tp < S.period; tp++) {
				int id = sl_mesh_device(l, tp, pp, dp);
				S.slot[id] = S.n;
				S.id[S.n] = id;
				S.tp[S.n] = tp;
				S.pp[S.n] = pp;
				S.dp[S.n] = dp;
				S.rec[S.n] = &R->rec[rec_index(R, tp, pp, dp)];
				for (int g = 0; g < 2; g++)
					S.next[g][S.n] = ring_link_of(L, l, id, g);
				/* TP groups: (pp, dp), ranks tp < period; DP groups (every
				 * device replayed): (tp, pp), ranks dp */
				int tg = ri * pp_n + pp, dg = tp * pp_n + pp;
				S.grp[0][S.n] = tg;
				S.members[0][(size_t)tg * S.period + tp] = S.n;
				S.grp[1][S.n] = dg;
				if (method == SL_EST_FULL)
					S.members[1][(size_t)dg * dp_n + dp] = S.n;
				/* CP groups (every device replayed): (tp, pp, replica), ranks
				 * dp % cp */
				int cg = (dp / l->cp * pp_n + pp) * t + tp;
				S.grp[2][S.n] = cg;
				if (method == SL_EST_FULL)
					S.members[2][(size_t)cg * l->cp + dp % l->cp] = S.n;
				S.n++;
			}
		ri++;
	}
	S.pslot = malloc((size_t)S.n * pp_n * sizeof *S.pslot);
	S.plink = calloc((size_t)S.n * pp_n, sizeof *S.plink);
	S.pinter = calloc((size_t)S.n * pp_n, 1);
	const sl_cluster_config *cfg = linksrc_cfg(L);
	S.ports = cfg && sl_ports_shared(cfg);
	if (!S.pslot || !S.plink || !S.pinter) {
		psim_free(&S);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	for (int i = 0; i < S.n; i++)
		for (int st = 0; st < pp_n; st++) {
			int peer = sl_mesh_device(l, S.tp[i], st, S.dp[i]);
			S.pslot[(size_t)i * pp_n + st] = S.slot[peer];
			S.pinter[(size_t)i * pp_n + st] =
			    cfg && !sl_cluster_config_same_node(cfg, S.id[i], peer);
			if (peer != S.id[i]) /* a device sends to no stage of its own */
				S.plink[(size_t)i * pp_n + st] = link_of(L, S.id[i], peer);
		}
	/* One device per stage: a template always takes the same time (its TP
	 * collectives are rings in lockstep), so it is worked out once. */
	int rc = SL_OK;
	if (method == SL_EST_STAGE) {
		if (!(S.eff = calloc((size_t)S.n, sizeof *S.eff)))
			rc = sl_fail(err, SL_ENOMEM, "out of host memory");
		for (int i = 0; i < S.n && rc == SL_OK && !S.uneven; i++) {
			const struct tstore *ts = &S.rec[i]->ts;
			if (!(S.eff[i] = calloc((size_t)(ts->n ? ts->n : 1), sizeof *S.eff[i]))) {
				rc = sl_fail(err, SL_ENOMEM, "out of host memory");
				break;
			}
			for (int q = 0; q < ts->n && !S.uneven; q++)
				S.uneven = !tmpl_effect(&S, i, &ts->t[q], &S.eff[i][q]);
		}
	}
	/* The TP ranks of a period, sharing one recording: each group runs
	 * its templates together (group_tmpl()). */
	if (rc == SL_OK && (method == SL_EST_SLICE || method == SL_EST_REPLICA) && S.period > 1 &&
	    R->gran == REC_STAGE) {
		S.ngc = S.n / S.period;
		S.gc = calloc((size_t)S.ngc, sizeof *S.gc);
		S.tarr = calloc((size_t)S.ngc, sizeof *S.tarr);
		if (!S.gc || !S.tarr)
			rc = sl_fail(err, SL_ENOMEM, "out of host memory");
		for (int g = 0; g < S.ngc && rc == SL_OK; g++) {
			const struct prec *r0 = S.rec[S.members[0][(size_t)g * S.period]];
			S.gc[g].n = r0->ts.n;
			if (r0->ts.n &&
			    !(S.gc[g].slot = calloc((size_t)r0->ts.n, sizeof *S.gc[g].slot)))
				rc = sl_fail(err, SL_ENOMEM, "out of host memory");
			for (int q = 0; q < r0->ts.n && rc == SL_OK; q++)
				S.gc[g].slot[q].plain = -1;
		}
	}
	if (rc == SL_OK && !S.uneven)
		rc = sim_run(&S, err);
	if (rc == SL_OK && S.uneven) {
		psim_free(&S);
		*fallback = 1;
		return SL_OK;
	}
	if (rc != SL_OK || !out) {
		psim_free(&S);
		return rc;
	}

	/* Every device from its stand-in; then the step's end for all. */
	struct pdev *all = S.method == SL_EST_FULL ? S.d : calloc((size_t)N, sizeof *all);
	const struct prec **arec =
	    S.method == SL_EST_FULL ? S.rec : calloc((size_t)N, sizeof *arec);
	/* Every device's coordinates, asked for once per op of the step's end,
	 * and how many ops its end has. */
	int *crd = S.method != SL_EST_FULL ? malloc(4 * (size_t)N * sizeof *crd) : NULL;
	if (!all || !arec || (S.method != SL_EST_FULL && !crd)) {
		if (all != S.d)
			free(all);
		if (arec != S.rec)
			free(arec);
		free(crd);
		psim_free(&S);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	if (S.method != SL_EST_FULL) {
		int most = 0;
		for (int i = 0; i < N; i++) {
			int tp, pp, dp;
			sl_mesh_coords(l, i, &tp, &pp, &dp);
			crd[4 * i] = tp;
			crd[4 * i + 1] = pp;
			crd[4 * i + 2] = dp;
			int si = S.slot[stand_in(&S, tp, pp, dp)];
			all[i] = S.d[si];
			arec[i] = S.rec[si];
			all[i].pc = arec[i]->tail;
			int n = 0;
			while (arec[i]->pl.op[arec[i]->tail + n].type != PO_BARRIER)
				n++;
			crd[4 * i + 3] = n;
			most = n > most ? n : most;
		}
		/* The j-th op of the step's end is the same kind of op on every
		 * device of a stage (trn_sync_and_update(): ZeRO's gathers go unit
		 * by unit, as many as the stage's blocks), and its groups stay
		 * inside the stage. */
		for (int j = 0; j < most; j++) {
			for (int i = 0; i < N; i++) {
				if (j >= crd[4 * i + 3])
					continue;
				const struct pop *o = &arec[i]->pl.op[arec[i]->tail + j];
				if (o->type == PO_COMPUTE) {
					st_compute(&S, &all[i], o->stream, op_s(&S, o));
					continue;
				}
				if (o->type == PO_WAIT) {
					st_wait(&all[i], o->stream, o->slot);
					continue;
				}
				/* Every group once: from the member of rank 0. */
				int tp = crd[4 * i], pp = crd[4 * i + 1], dp = crd[4 * i + 2];
				if ((o->dp_group ? dp : tp) != 0)
					continue;
				int p = o->dp_group ? dp_n : t;
				double *cst = S.cst, *cm0 = S.cst + N;
				for (int r = 0; r < p; r++) {
					S.gids[r] = group_member(l, tp, pp, dp, o->dp_group, r);
					S.gm[r] = &all[S.gids[r]];
					cm0[r] = S.gm[r]->comm;
					cst[r] = st_enter(S.gm[r], o->stream);
				}
				sim_coll(&S, S.gids, S.gm, p, p, o, NULL);
				for (int r = 0; r < p; r++)
					st_leave(S.gm[r], o->stream, cst[r], cm0[r]);
			}
		}
		double mx = 0;
		for (int i = 0; i < N; i++)
			mx = all[i].clock > mx ? all[i].clock : mx;
		for (int i = 0; i < N; i++)
			all[i].clock = mx;
		free(crd);
	}

	sl_estimate *e = out->est;
	sl_est_rec_memory(R, e);
	e->method = method;
	e->replayed = S.n;
	e->step_s = all[0].clock;
	double comm_sum = 0, comp_sum = 0, exp_sum = 0;
	for (int i = 0; i < N; i++) {
		/* the full replay's devices are in its slots' order */
		int si = S.method == SL_EST_FULL ? S.slot[i] : i;
		const struct pdev *a = &all[si];
		e->pipeline_s = a->pipe_end > e->pipeline_s ? a->pipe_end : e->pipeline_s;
		e->ideal_s = a->pipe_busy > e->ideal_s ? a->pipe_busy : e->ideal_s;
		e->flops_per_step += arec[si]->flops;
		comp_sum += a->compute;
		comm_sum += a->comm;
		e->comm_max_s = a->comm > e->comm_max_s ? a->comm : e->comm_max_s;
		double exposed = a->comm - a->comm_side + a->swait;
		exp_sum += exposed;
		e->idle_fraction += e->step_s - (a->compute - a->comp_side) - exposed;
		for (int k = 0; k < SL_TR_NKINDS; k++) {
			e->sent[k] = a->sent[k] > e->sent[k] ? a->sent[k] : e->sent[k];
			e->received[k] = a->recv[k] > e->received[k] ? a->recv[k] : e->received[k];
		}
		if (out->compute)
			out->compute[i] = a->compute;
		if (out->comm)
			out->comm[i] = a->comm;
	}
	e->compute_s = comp_sum / N;
	e->comm_s = comm_sum / N;
	e->comm_exposed_s = exp_sum / N;
	e->idle_fraction = e->step_s > 0 ? e->idle_fraction / (e->step_s * N) : 0;
	if (e->idle_fraction < 0) /* rounding, as a run's */
		e->idle_fraction = 0;
	e->bubble_fraction = e->ideal_s > 0 ? (e->pipeline_s - e->ideal_s) / e->ideal_s : 0;
	if (e->bubble_fraction < 0)
		e->bubble_fraction = 0;
	if (all != S.d)
		free(all);
	if (arec != S.rec)
		free(arec);
	psim_free(&S);
	return SL_OK;
}

/* The cheapest method that applies, from `how` on. */
static int replay(const sl_est_rec *R, const sl_axis *order, const struct linksrc *L,
                  sl_est_method how, const struct est_out *out, sl_err *err)
{
	sl_layout l = R->tr.l;
	if (order)
		memcpy(l.order, order, sizeof l.order);
	for (int m = how == SL_EST_AUTO ? SL_EST_STAGE : how; m <= SL_EST_FULL; m++)
		for (int per = m == SL_EST_STAGE   ? 1
		               : m == SL_EST_SLICE ? 2
		                                   : l.tp;
		     per <= l.tp; per++) {
			if (l.tp % per != 0)
				continue;
			int fallback, rc = replay_with(R, &l, L, m, per, out, &fallback, err);
			if (rc || !fallback)
				return rc;
			if (m == SL_EST_STAGE)
				break;
		}
	return sl_fail(err, SL_EINVAL, "no replay method applies (a bug in shardlab)");
}

int sl_est_replay(const sl_est_rec *R, const sl_axis order[SL_NAXES], const sl_cluster_config *cfg,
                  sl_est_method how, sl_estimate *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	if (cfg->devices != R->tr.ndev)
		return sl_fail(err, SL_EINVAL, "the layout needs %d devices but the cluster has %d",
		               R->tr.ndev, cfg->devices);
	if (!(cfg->flops > 0))
		return sl_fail(err, SL_EINVAL, "device compute rate must be positive");
	sl_layout chk = R->tr.l;
	if (order) {
		memcpy(chk.order, order, sizeof chk.order);
		int rc = sl_layout_check(&R->tr.m, &chk, R->tr.ndev, err);
		if (rc)
			return rc;
	}
	struct linksrc L = {NULL, cfg};
	struct est_out o = {out, NULL, NULL};
	return replay(R, order, &L, how, &o, err);
}

/* The compute stream's work in template t (what runs beside it on another
 * stream may overlap it, so it is left out). */
static double tmpl_stream0_s(const struct psim *S, const struct tmpl *t)
{
	double sum = 0;
	for (int q = 0; q < t->pl.n; q++)
		if (t->pl.op[q].type == PO_COMPUTE && t->pl.op[q].stream == SL_STREAM_COMPUTE)
			sum += op_s(S, &t->pl.op[q]);
	return sum;
}

/* The pipeline's own floor: whatever the schedule, a stage's first pass
 * waits for a forward pass on every stage before it (each at least that
 * stage's shortest), and its last pass is a backward that every stage
 * before it must then run too.  So the step is at least, for every stage s,
 *     sum_{j<s} (F_j + B_j) + C_s
 * with F_j, B_j stage j's shortest forward and backward pass and C_s the
 * compute stream's work in stage s's passes (each pass counted by its
 * compute alone: waits, communication and slowdowns only add).  It is the
 * bubble the busiest device's compute misses: (m + p - 1) passes for p
 * even stages and m micro-batches. */
static double pipeline_floor(const struct psim *S, const sl_est_rec *R)
{
	int pp = R->tr.l.pp;
	if (pp < 2)
		return 0;
	double *F = malloc(3 * (size_t)pp * sizeof *F);
	if (!F)
		return 0;
	double *B = F + pp, *C = F + 2 * pp;
	for (int s = 0; s < pp; s++) {
		F[s] = B[s] = INFINITY;
		C[s] = 0;
	}
	for (int i = 0; i < R->nrec; i++) {
		const struct prec *r = &R->rec[i];
		int tp, st, dp;
		sl_mesh_coords(&R->tr.l, R->dev[i], &tp, &st, &dp);
		double c = 0;
		for (int k = 0; k < r->pl.n; k++)
			if (r->pl.op[k].type == PO_ACTION)
				c += tmpl_stream0_s(S, &r->ts.t[r->pl.op[k].tm]);
		C[st] = c > C[st] ? c : C[st];
		for (int k = 0; k < r->ts.n; k++) {
			double t = tmpl_stream0_s(S, &r->ts.t[k]);
			double *x = r->ts.t[k].bwd ? &B[st] : &F[st];
			*x = t < *x ? t : *x;
		}
	}
	double most = 0, before = 0;
	for (int s = 0; s < pp; s++) {
		double b = C[s] + before;
		most = b > most ? b : most;
		if (!isfinite(F[s]) || !isfinite(B[s]))
			break; /* (a stage with no passes recorded: no chain past it) */
		before += F[s] + B[s];
	}
	free(F);
	return most;
}

/* A floor under the step time of every replay of R on cfg's rates: the
 * compute of its busiest recording, or the pipeline's floor
 * (pipeline_floor()) when that is longer.  Every device's clock advances by
 * at least each of its compute ops (a collective, an exchange and the
 * barrier only ever add waiting), and every recording is some device's,
 * so the step, the latest clock, is never shorter than any recording's
 * compute time.  The planner skips the replays of a layout whose floor is
 * already slower than the rows it must rank exactly. */
double sl_est_compute_floor(const sl_est_rec *R, const sl_cluster_config *cfg)
{
	struct psim S;
	memset(&S, 0, sizeof S);
	S.rate = cfg && cfg->flops > 0 ? cfg->flops : 1e12;
	S.realistic = R->has_hw && R->hw.efficiency == SL_EFF_REALISTIC;
	double most = pipeline_floor(&S, R);
	for (int i = 0; i < R->nrec; i++) {
		const struct prec *r = &R->rec[i];
		double sum = 0;
		/* (the compute stream's alone: a side stream's compute runs beside
		 * it, and on fast links may hide entirely) */
		for (int k = 0; k < r->pl.n; k++) {
			const struct pop *o = &r->pl.op[k];
			if (o->type == PO_COMPUTE && o->stream == SL_STREAM_COMPUTE)
				sum += op_s(&S, o);
			else if (o->type == PO_ACTION)
				sum += tmpl_stream0_s(&S, &r->ts.t[o->tm]);
		}
		most = sum > most ? sum : most;
	}
	return most;
}

/* Rendezvous sends must never wait on each other, and every receive must
 * meet the tensor it expects: check the whole plan once, at nominal cost. */
int trn_check_plan(const sl_train *tr, sl_err *err)
{
	sl_est_rec *R;
	int rc = est_record(&tr->m, &tr->l, tr->ndev, 0, NULL, &R, err);
	if (rc)
		return rc;
	struct linksrc L = {NULL, NULL};
	rc = replay(R, NULL, &L, SL_EST_AUTO, NULL, err);
	sl_est_rec_free(R);
	return rc;
}

int sl_train_predict(const sl_train *tr, const sl_cluster *c, sl_train_prediction *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	if (sl_cluster_devices(c) != tr->ndev)
		return sl_fail(err, SL_EINVAL, "the layout needs %d devices but the cluster has %d",
		               tr->ndev, sl_cluster_devices(c));
	sl_est_rec *R;
	int rc = est_record(&tr->m, &tr->l, tr->ndev, 0, sl_cluster_config_of(c), &R, err);
	if (rc)
		return rc;
	struct linksrc L = {c, NULL};
	sl_estimate e;
	struct est_out o = {&e, out->compute_s, out->comm_s};
	rc = replay(R, NULL, &L, SL_EST_AUTO, &o, err);
	sl_est_rec_free(R);
	if (rc)
		return rc;
	out->step_s = e.step_s;
	out->pipeline_s = e.pipeline_s;
	out->ideal_s = e.ideal_s;
	out->bubble_fraction = e.bubble_fraction;
	return SL_OK;
}

int sl_train_estimate(const sl_model_spec *m, const sl_layout *l, const sl_cluster_config *cfg,
                      sl_est_method how, sl_estimate *out, sl_err *err)
{
	memset(out, 0, sizeof *out);
	sl_est_rec *R;
	int rc = sl_est_record(m, l, cfg->devices, how == SL_EST_FULL, cfg, &R, err);
	if (rc)
		return rc;
	rc = sl_est_replay(R, NULL, cfg, how, out, err);
	sl_est_rec_free(R);
	return rc;
}
