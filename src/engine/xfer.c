/* SPDX-License-Identifier: MIT */
/* xfer.c - point-to-point transfers: the rendezvous, the emulated link time,
 * and the pacing of live runs. */
#include "xfer.h"
#include "device.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "units.h"

#define MAX_MSGS (2 * SL_MAX_DEVICES)

sl_msg sl_msg1(int peer, void *buf, size_t off, size_t len)
{
	sl_msg m = {.peer = peer, .buf = buf, .off = {off, 0}, .len = {len, 0}, .nseg = 1};
	return m;
}

sl_msg sl_msg2(int peer, void *buf, size_t off0, size_t len0, size_t off1, size_t len1)
{
	sl_msg m = {.peer = peer, .buf = buf, .off = {off0, off1}, .len = {len0, len1}, .nseg = 2};
	if (len1 == 0)
		m.nseg = 1;
	return m;
}

size_t sl_msg_bytes(const sl_msg *m)
{
	size_t s = 0;
	for (int i = 0; i < m->nseg; i++)
		s += m->len[i];
	return s;
}

/* Walks the byte ranges of a message. */
struct cursor {
	char *base;
	const size_t *off, *len;
	int nseg, seg;
	size_t pos;
};

static void cursor_init(struct cursor *c, const void *base, const size_t *off, const size_t *len,
                        int nseg)
{
	c->base = (char *)base;
	c->off = off;
	c->len = len;
	c->nseg = nseg;
	c->seg = 0;
	c->pos = 0;
	while (c->seg < c->nseg && c->len[c->seg] == 0)
		c->seg++;
}

static size_t cursor_span(const struct cursor *c)
{
	return c->seg < c->nseg ? c->len[c->seg] - c->pos : 0;
}

static char *cursor_ptr(const struct cursor *c)
{
	return c->base + c->off[c->seg] + c->pos;
}

static void cursor_advance(struct cursor *c, size_t n)
{
	c->pos += n;
	while (c->seg < c->nseg && c->pos == c->len[c->seg]) {
		c->seg++;
		c->pos = 0;
	}
}

/* In blocks of a fixed 16 floats: at -O2 GCC vectorises only loops whose
 * trip count needs no scalar remainder, and a plain loop ran one addss per
 * element, well below what memory can feed. */
static void sum_f32(float *restrict dst, const float *restrict src, size_t n)
{
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		for (size_t j = 0; j < 16; j++)
			dst[i + j] += src[i + j];
	for (; i < n; i++)
		dst[i] += src[i];
}

/* Move n bytes from one cursor to the other. */
static void move_bytes(struct cursor *from, struct cursor *to, size_t n, sl_xop op)
{
	while (n > 0) {
		size_t k = cursor_span(from);
		size_t kt = cursor_span(to);
		if (kt < k)
			k = kt;
		if (n < k)
			k = n;
		if (op == SL_XSUM)
			sum_f32((float *)cursor_ptr(to), (const float *)cursor_ptr(from),
			        k / sizeof(float));
		else
			memcpy(cursor_ptr(to), cursor_ptr(from), k);
		cursor_advance(from, k);
		cursor_advance(to, k);
		n -= k;
	}
}

/* Bytes per chunk: in live mode about 20 ms of wall time, so a knob turned
 * mid-transfer bites quickly and the animation sees steady progress; headless,
 * large chunks. */
static size_t chunk_bytes(double bw, double slowdown)
{
	double c = slowdown > 0 ? bw / slowdown * 0.02 : 1 << 20;
	if (c < 4096)
		c = 4096;
	if (c > (1 << 20))
		c = 1 << 20;
	return (size_t)c & ~(size_t)(sizeof(float) - 1);
}

/* The receiver's half: compute emulated times and move the bytes, paced.
 * Timing-only, the same chunks keep the same pace and the same progress
 * for the front end, but no byte is read or written. */
static int pull(sl_dev *d, struct sl_link *l, double *rx_free, const struct sl_chan *desc,
                const sl_msg *r, int *share, sl_xop op, double *t_start, double *t_end)
{
	sl_cluster *c = d->c;
	size_t total = sl_msg_bytes(r);
	double start = desc->t_ready > l->free_at ? desc->t_ready : l->free_at;
	/* Within a collective a device takes one message at a time through
	 * its port: the next starts (its handshake, its latency) once the
	 * previous one's bytes are in. */
	if (rx_free && *rx_free > start)
		start = *rx_free;
	double seg_t0 = start + atomic_load(&l->latency);
	/* Host buffers are fp32; the emulated message is the precision's size.
	 * A port that both ends share with other transfers of their exchanges
	 * gives this one its share (sl_port_share: the larger count binds). */
	if (desc->share > *share)
		*share = desc->share;
	double sc = sl_wire_scale(&c->cfg) / (r->stripes > 1 ? r->stripes : 1) * *share;
	double bw = atomic_load(&l->bandwidth) / sc;
	size_t seg_bytes = 0, done = 0;
	int timing_only = c->cfg.timing_only;
	struct cursor from, to;
	cursor_init(&from, desc->buf, desc->off, desc->len, desc->nseg);
	cursor_init(&to, r->buf, r->off, r->len, r->nseg);
	atomic_store(&l->inflight_done, 0);
	atomic_store(&l->inflight_total, total);
	int rc = SL_OK;
	if (total == 0)
		rc = sl_pace_until(c, seg_t0);
	while (done < total && rc == SL_OK) {
		double slowdown = sl_cluster_slowdown(c);
		double b = atomic_load(&l->bandwidth) / sc;
		if (b != bw) {
			/* A knob turned mid-transfer: the rest goes at the new rate. */
			seg_t0 += (double)seg_bytes / bw;
			seg_bytes = 0;
			bw = b;
		}
		size_t n = chunk_bytes(bw, slowdown);
		if (n > total - done)
			n = total - done;
		/* Headless too: a paused run or a breakpoint holds the chunk. */
		if ((rc = sl_pace_until(c, seg_t0 + (double)(seg_bytes + n) / bw)))
			break;
		if (atomic_load(&c->cancel)) {
			rc = SL_ECANCEL;
			break;
		}
		if (!timing_only)
			move_bytes(&from, &to, n, op);
		seg_bytes += n;
		done += n;
		atomic_store(&l->inflight_done, done);
	}
	*t_start = start;
	*t_end = seg_t0 + (double)seg_bytes / bw;
	l->free_at = *t_end;
	if (rx_free)
		*rx_free = *t_end;
	atomic_fetch_add(&l->total, done);
	atomic_store(&l->inflight_total, 0);
	atomic_store(&l->inflight_done, 0);
	return rc;
}

/* What a host message of n fp32 bytes is on the emulated link. */
static uint64_t wire_bytes(const sl_cluster *c, size_t n)
{
	return (uint64_t)((double)n * sl_wire_scale(&c->cfg) + 0.5);
}

static int cmp_span(const void *a, const void *b)
{
	const sl_span *x = a, *y = b;
	return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* By start, stably: an exchange has a span or two, for which qsort's
 * merge sort cost the planner a tenth of its time. */
static void sort_spans(sl_span *sp, int n)
{
	if (n > 16) {
		qsort(sp, (size_t)n, sizeof *sp, cmp_span);
		return;
	}
	for (int i = 1; i < n; i++) {
		sl_span v = sp[i];
		int j = i;
		for (; j > 0 && sp[j - 1].t0 > v.t0; j--)
			sp[j] = sp[j - 1];
		sp[j] = v;
	}
}

int sl_dev_recv_spans(const sl_dev *d, sl_span *out, int max)
{
	int n = d->nrsp < max ? d->nrsp : max;
	memcpy(out, d->rsp, (size_t)n * sizeof *out);
	return n;
}

void sl_dev_wait_spans(sl_dev *d, sl_span *sp, int n)
{
	/* sl_settle's walk: a gap is idle, a span's uncovered part waited for */
	double t = d->clock;
	sort_spans(sp, n);
	for (int i = 0; i < n; i++) {
		if (sp[i].t1 <= t)
			continue;
		if (sp[i].t0 > t)
			sl_dev_wait_until(d, sp[i].t0);
		sl_dev_wait_event(d, sp[i].t1);
		t = sp[i].t1;
	}
}

double sl_settle(double clock, sl_span *sp, int n, double *comm, double *wait,
                 void (*gap)(void *ctx, double from, double to), void *ctx)
{
	double t = clock;
	sort_spans(sp, n);
	for (int i = 0; i < n; i++) {
		double a = sp[i].t0 > t ? sp[i].t0 : t, b = sp[i].t1;
		if (b <= t)
			continue;
		if (a > t) {
			if (gap)
				gap(ctx, t, a);
			*wait += a - t;
		}
		*comm += b - a;
		t = b;
	}
	return t;
}

struct waitrec {
	sl_dev *d;
	double w;
};

static void record_wait(void *ctx, double from, double to)
{
	struct waitrec *r = ctx;
	sl_dev_record(r->d, SL_EV_WAIT, -1, from, to, r->w, r->w, 0, 0, "wait");
}

/* Advance the device clock over a set of transfer intervals, recording the
 * gaps between them as waiting. */
static void settle_clock(sl_dev *d, sl_span *sp, int n, double w)
{
	double comm = 0, wait = 0;
	struct waitrec r = {d, w};
	double t = sl_settle(d->clock, sp, n, &comm, &wait, record_wait, &r);
	pthread_mutex_lock(&d->mu);
	d->clock = t;
	d->st.comm_s += comm;
	d->st.wait_s += wait;
	if (d->stream != SL_STREAM_COMPUTE)
		d->st.comm_side_s += comm;
	pthread_mutex_unlock(&d->mu);
}

/* sl_port_share of each of an exchange's n sends (or receives). */
static void port_counts(const sl_dev *d, const sl_msg *m, int n, int *share)
{
	const sl_cluster_config *cfg = &d->c->cfg;
	int peers[MAX_MSGS / 2];
	if (d->coll.op >= 0 || n < 2 || !sl_ports_shared(cfg)) {
		for (int i = 0; i < n; i++)
			share[i] = 1;
		return;
	}
	for (int i = 0; i < n; i++)
		peers[i] = m[i].peer;
	for (int i = 0; i < n; i++)
		share[i] = sl_port_share(cfg, d->id, peers, n, i);
}

static int check_msgs(sl_dev *d, const sl_msg *m, int n, sl_xop op, sl_err *err)
{
	for (int i = 0; i < n; i++) {
		if (m[i].peer < 0 || m[i].peer >= d->c->n || m[i].peer == d->id)
			return sl_fail(err, SL_EINVAL, "device %d: no link to device %d", d->id,
			               m[i].peer);
		/* One slot per channel: a device has one message in flight per peer. */
		for (int k = 0; k < i; k++)
			if (m[k].peer == m[i].peer)
				return sl_fail(err, SL_EINVAL,
				               "device %d: two messages to device %d at once",
				               d->id, m[i].peer);
		if (m[i].nseg < 1 || m[i].nseg > 2)
			return sl_fail(err, SL_EINVAL, "device %d: bad message", d->id);
		for (int s = 0; s < m[i].nseg; s++)
			if (op == SL_XSUM &&
			    (m[i].len[s] % sizeof(float) || m[i].off[s] % sizeof(float)))
				return sl_fail(err, SL_EINVAL,
				               "device %d: a summed message must hold whole floats",
				               d->id);
	}
	return SL_OK;
}

int sl_xfer(sl_dev *d, const sl_msg *sends, int nsend, const sl_msg *recvs, int nrecv, sl_xop op,
            const char *label, sl_err *err)
{
	sl_cluster *c = d->c;
	if (nsend < 0 || nrecv < 0 || nsend > MAX_MSGS / 2 || nrecv > MAX_MSGS / 2)
		return sl_fail(err, SL_EINVAL, "device %d: too many messages at once", d->id);
	if (check_msgs(d, sends, nsend, op, err) || check_msgs(d, recvs, nrecv, op, err))
		return SL_EINVAL;
	if (atomic_load(&c->cancel))
		return sl_fail(err, SL_ECANCEL, "cancelled");

	/* Every pair this exchange uses, made now if need be. */
	struct sl_pair *ps[MAX_MSGS / 2], *pr[MAX_MSGS / 2];
	for (int i = 0; i < nsend + nrecv; i++) {
		int out = i < nsend;
		const sl_msg *m = out ? &sends[i] : &recvs[i - nsend];
		struct sl_pair *p =
		    out ? sl_pair_at(c, d->id, m->peer) : sl_pair_at(c, m->peer, d->id);
		if (!p)
			return sl_fail(err, SL_ENOMEM, "out of host memory");
		*(out ? &ps[i] : &pr[i - nsend]) = p;
	}

	/* Each message's port count (sl_port_share) at this end: only the
	 * exchanges outside a collective post several at once. */
	int share_s[MAX_MSGS / 2], share_r[MAX_MSGS / 2];
	port_counts(d, sends, nsend, share_s);
	port_counts(d, recvs, nrecv, share_r);

	unsigned seq[MAX_MSGS / 2];
	sl_span sp[MAX_MSGS];
	int nsp = 0;
	d->nrsp = 0;
	for (int i = 0; i < nsend; i++) {
		struct sl_chan *ch = &ps[i]->chan;
		pthread_mutex_lock(&ch->mu);
		ch->buf = sends[i].buf;
		memcpy(ch->off, sends[i].off, sizeof ch->off);
		memcpy(ch->len, sends[i].len, sizeof ch->len);
		ch->nseg = sends[i].nseg;
		ch->t_ready = d->clock;
		ch->share = share_s[i];
		ch->failed = 0;
		seq[i] = ++ch->posted;
		pthread_cond_broadcast(&ch->cv);
		pthread_mutex_unlock(&ch->mu);
	}

	int rc = SL_OK;
	for (int i = 0; i < nrecv && rc == SL_OK; i++) {
		int src = recvs[i].peer;
		struct sl_chan *ch = &pr[i]->chan;
		pthread_mutex_lock(&ch->mu);
		while (ch->posted == ch->taken && !atomic_load(&c->cancel))
			pthread_cond_wait(&ch->cv, &ch->mu);
		if (atomic_load(&c->cancel)) {
			pthread_mutex_unlock(&ch->mu);
			rc = sl_fail(err, SL_ECANCEL, "cancelled");
			break;
		}
		/* The sender stays blocked until taken moves, so its buffer and
		 * this description stay valid while we read them unlocked. */
		struct sl_chan desc = *ch;
		ch->busy = 1;
		pthread_mutex_unlock(&ch->mu);

		size_t want = sl_msg_bytes(&recvs[i]), got = 0;
		for (int s = 0; s < desc.nseg; s++)
			got += desc.len[s];
		double ts = d->clock, te = d->clock, w0 = sl_wall_now();
		if (want != got)
			rc = sl_fail(err, SL_EINVAL,
			             "device %d expected %zu bytes from device %d but it sent %zu",
			             d->id, want, src, got);
		else
			rc =
			    pull(d, &pr[i]->link,
			         d->coll.op >= 0 ? &d->rx_free[!sl_cluster_same_node(c, src, d->id)]
			                         : NULL,
			         &desc, &recvs[i], &share_r[i], op, &ts, &te);
		if (rc == SL_ECANCEL)
			sl_fail(err, SL_ECANCEL, "cancelled");
		double w1 = sl_wall_now();

		pthread_mutex_lock(&ch->mu);
		ch->t_start = ts;
		ch->t_end = te;
		ch->shared = share_r[i];
		ch->w_start = w0;
		ch->w_end = w1;
		ch->failed = rc;
		ch->busy = 0;
		ch->taken++;
		pthread_cond_broadcast(&ch->cv);
		pthread_mutex_unlock(&ch->mu);
		if (rc != SL_OK)
			break;

		/* The receive as the device saw it: from when it was free to take
		 * the bytes.  A message that arrived whole while the device was
		 * still busy with its previous exchange (its sender ran ahead, as
		 * on a ring whose slow inter-node hop holds one device back) is
		 * recorded over the interval it crossed the link: it did arrive,
		 * and a reader of the trace must see that the device holds it. */
		double a = ts > d->clock ? ts : d->clock;
		if (te <= a)
			a = ts;
		if (te > a) {
			d->coll.first = recvs[i].first;
			d->coll.count = recvs[i].count;
			d->p2p = recvs[i].p2p;
			d->p2p.share = (signed char)(share_r[i] < 127 ? share_r[i] : 127);
			sl_dev_record(d, op == SL_XSUM ? SL_EV_REDUCE : SL_EV_RECV, src, a, te, w0,
			              w1, wire_bytes(c, want), 0, label);
			memset(&d->p2p, 0, sizeof d->p2p);
		}
		sp[nsp++] = (sl_span){ts, te};
		if (d->nrsp < SL_RECV_SPANS) {
			d->rsp[d->nrsp++] = (sl_span){ts, te};
		} else {
			sl_span *l = &d->rsp[SL_RECV_SPANS - 1];
			l->t0 = ts < l->t0 ? ts : l->t0;
			l->t1 = te > l->t1 ? te : l->t1;
		}
		pthread_mutex_lock(&d->mu);
		d->st.bytes_received += wire_bytes(c, want);
		pthread_mutex_unlock(&d->mu);
	}

	/* Wait for every send to be taken, even after a failure: the receiver
	 * may be reading our buffer. */
	for (int i = 0; i < nsend; i++) {
		struct sl_chan *ch = &ps[i]->chan;
		pthread_mutex_lock(&ch->mu);
		while (ch->taken < seq[i] && !atomic_load(&c->cancel))
			pthread_cond_wait(&ch->cv, &ch->mu);
		int finished = ch->taken >= seq[i];
		if (!finished) {
			/* Cancelled.  A receiver already reading our buffer stops
			 * at its next chunk; wait for it.  Otherwise take the
			 * message back so nobody reads it once we return. */
			while (ch->busy)
				pthread_cond_wait(&ch->cv, &ch->mu);
			if (ch->taken < seq[i] && ch->posted == seq[i])
				ch->posted--;
			pthread_mutex_unlock(&ch->mu);
			if (rc == SL_OK)
				rc = sl_fail(err, SL_ECANCEL, "cancelled");
			continue;
		}
		struct sl_chan done = *ch;
		pthread_mutex_unlock(&ch->mu);
		if (done.failed) {
			/* A receiver cancelled mid-transfer did not refuse anything. */
			if (rc == SL_OK && done.failed == SL_ECANCEL)
				rc = sl_fail(err, SL_ECANCEL, "cancelled");
			else if (rc == SL_OK)
				rc = sl_fail(err, SL_EINVAL,
				             "device %d: device %d refused a message", d->id,
				             sends[i].peer);
			continue;
		}
		if (rc != SL_OK)
			continue;
		size_t bytes = wire_bytes(c, sl_msg_bytes(&sends[i]));
		d->coll.first = sends[i].first;
		d->coll.count = sends[i].count;
		d->p2p = sends[i].p2p;
		d->p2p.share = (signed char)(done.shared < 127 ? done.shared : 127);
		sl_dev_record(d, SL_EV_SEND, sends[i].peer, done.t_start, done.t_end, done.w_start,
		              done.w_end, bytes, 0, label);
		memset(&d->p2p, 0, sizeof d->p2p);
		sp[nsp++] = (sl_span){done.t_start, done.t_end};
		pthread_mutex_lock(&d->mu);
		d->st.bytes_sent += bytes;
		pthread_mutex_unlock(&d->mu);
	}
	if (rc != SL_OK)
		return rc;
	d->coll.first = d->coll.count = 0;
	settle_clock(d, sp, nsp, sl_wall_now());
	return SL_OK;
}

int sl_xfer_coll(sl_dev *d, const sl_msg *sends, int nsend, const sl_msg *recvs, int nrecv,
                 sl_xop op, const sl_ev_coll *info, const char *label, sl_err *err)
{
	d->coll = *info;
	int rc = sl_xfer(d, sends, nsend, recvs, nrecv, op, label, err);
	d->coll.op = -1;
	d->coll.first = d->coll.count = 0;
	return rc;
}

int sl_send(sl_dev *d, int peer, const void *buf, size_t bytes, const char *label, sl_err *err)
{
	sl_msg m = sl_msg1(peer, (void *)buf, 0, bytes);
	return sl_xfer(d, &m, 1, NULL, 0, SL_XCOPY, label, err);
}

int sl_recv(sl_dev *d, int peer, void *buf, size_t bytes, const char *label, sl_err *err)
{
	sl_msg m = sl_msg1(peer, buf, 0, bytes);
	return sl_xfer(d, NULL, 0, &m, 1, SL_XCOPY, label, err);
}
