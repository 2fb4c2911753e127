/* SPDX-License-Identifier: MIT */
/* chrome.c - the trace as Chrome Trace Event JSON, streamed.
 *
 * Events go out one by one through a small buffer to a sink (a FILE, a
 * gzFile, a test's memory): no document is built, so the writer's memory
 * is the snapshot's plus a few ints per event (each event's step) and a
 * bitmap per link.  Tracks (tids from 1; importers read tid 0 as "no
 * thread"):
 *   pid node+1 ("node N"): per device a compute, a send and a receive track
 *     (tids 3d+1, 3d+2, 3d+3), so a ring step's send and receive never sit
 *     on one track with the same interval; transfers one way that overlap
 *     (a pipeline exchange's, to or from two stages at once) go on further
 *     lanes of that way (tids from 3 ndev + 1, XLANES - 1 a device and
 *     way), so slices on a track nest or keep apart;
 *   pid nodes+1 ("run"): the steps of the step model (steps.h) on lanes
 *     where they do not overlap, one track per collective leader holding a
 *     slice per collective, and the bytes-in-flight counter;
 *   pid nodes+2 ("links"): one track per link src->dst (tid src*ndev+dst+1).
 * Flows (ph s/f) join each send to its receive by a number, given to what
 * names the message (in args.message): the link and the collective's
 * (leader, seq, step, first block), or the link's how-many-th
 * point-to-point message.  Times are whole nanoseconds (w_ns). */
#include "trace.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "coll.h"
#include "steps.h"

typedef struct wbuf {
	sl_trace_sink sink;
	void *ctx;
	int failed;
	size_t n;
	char b[1 << 15];
} wbuf;

static void w_flush(wbuf *w)
{
	if (w->n && !w->failed && w->sink(w->ctx, w->b, w->n) != 0)
		w->failed = 1;
	w->n = 0;
}

static void w_big(wbuf *w, const char *s, size_t len)
{
	w_flush(w);
	if (len > sizeof w->b) {
		if (!w->failed && w->sink(w->ctx, s, len) != 0)
			w->failed = 1;
		return;
	}
	memcpy(w->b, s, len);
	w->n = len;
}

/* Most pieces are a few bytes: the common case stays inline. */
static inline void w_raw(wbuf *w, const char *s, size_t len)
{
	if (w->n + len <= sizeof w->b) {
		memcpy(w->b + w->n, s, len);
		w->n += len;
	} else {
		w_big(w, s, len);
	}
}

/* A string literal, its length known at compile time. */
#define W_LIT(w, lit) w_raw((w), "" lit, sizeof(lit) - 1)

static void w_s(wbuf *w, const char *s)
{
	w_raw(w, s, strlen(s));
}

/* A JSON string: quotes, backslash and control characters escaped (bytes
 * from 0x80 pass: labels are ASCII or UTF-8). */
static void w_str(wbuf *w, const char *s)
{
	w_raw(w, "\"", 1);
	const unsigned char *p = (const unsigned char *)s;
	for (;;) {
		/* Copy the run of characters that need no escape at once. */
		const unsigned char *q = p;
		while (*q >= 0x20 && *q != '"' && *q != '\\')
			q++;
		if (q > p)
			w_raw(w, (const char *)p, (size_t)(q - p));
		if (!*q)
			break;
		char esc[8];
		if (*q == '"' || *q == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*q;
			w_raw(w, esc, 2);
		} else {
			snprintf(esc, sizeof esc, "\\u%04x", *q);
			w_raw(w, esc, 6);
		}
		p = q + 1;
	}
	w_raw(w, "\"", 1);
}

/* Integers by hand: snprintf was most of the writer's time. */
static void w_int(wbuf *w, long long v)
{
	char b[24], *e = b + sizeof b, *p = e;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	w_raw(w, p, (size_t)(e - p));
}

static double p10e(int k)
{
	static const double t[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
	                           1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
	                           1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
	return t[k];
}

/* Nine significant digits, as %.9g; JSON has no inf or nan.  snprintf was
 * most of the writer's time, so %.9g's fixed notation (1e-4 up to 1e9,
 * where every time falls) and its exponent notation up to 1e22 (flops) are
 * done by hand: scaled to a 9-digit integer, rounded, trailing zeros
 * dropped; near a rounding tie snprintf decides. */
static void w_num(wbuf *w, double v)
{
	static const double p10[] = {1e0, 1e1, 1e2, 1e3,  1e4,  1e5,  1e6,
	                             1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13};
	static const long long i10[] = {1,
	                                10,
	                                100,
	                                1000,
	                                10000,
	                                100000,
	                                1000000,
	                                10000000,
	                                100000000,
	                                1000000000,
	                                10000000000LL,
	                                100000000000LL,
	                                1000000000000LL,
	                                10000000000000LL};
	if (!isfinite(v))
		v = 0;
	double a = fabs(v);
	if (a < 1e9 && v == (double)(long long)v) {
		w_int(w, (long long)v);
		return;
	}
	if (a >= 1e-4 && a < 1e9) {
		int x = -4; /* the decimal exponent: 10^x <= a < 10^(x+1) */
		while (x < 8 && a >= (x + 1 >= 0 ? p10[x + 1] : 1.0 / p10[-(x + 1)]))
			x++;
		int d = 8 - x; /* decimals: 0 to 12 */
		double sc = a * p10[d];
		long long q = llround(sc);
		if (q >= 1000000000LL) { /* rounding carried into a tenth digit */
			if (d == 0)
				goto slow;
			d--;
			sc = a * p10[d];
			q = llround(sc);
		}
		/* Near a tie the scaled product's own rounding could decide the
		 * last digit: let snprintf, which rounds the exact value, do it. */
		if (fabs(sc - floor(sc) - 0.5) < 1e-3)
			goto slow;
		char b[40], *p = b;
		if (v < 0)
			*p++ = '-';
		long long ip = q / i10[d], fp = q % i10[d];
		char t[24], *e = t + sizeof t, *u = e;
		do {
			*--u = (char)('0' + ip % 10);
			ip /= 10;
		} while (ip);
		memcpy(p, u, (size_t)(e - u));
		p += e - u;
		if (fp) {
			*p++ = '.';
			for (int k = d - 1; k >= 0; k--) {
				*p++ = (char)('0' + fp / i10[k]);
				fp %= i10[k];
			}
			while (p[-1] == '0')
				p--;
		}
		w_raw(w, b, (size_t)(p - b));
		return;
	}
	if (a >= 1e9 && a < 1e22) {
		/* %.9g's exponent notation (flops): d.dddddddde+XX. */
		int x = 9;
		while (x < 21 && a >= p10e(x + 1))
			x++;
		double sc = a / p10e(x - 8);
		long long q = llround(sc);
		if (q >= 1000000000LL) {
			x++;
			sc = a / p10e(x - 8);
			q = llround(sc);
		}
		if (fabs(sc - floor(sc) - 0.5) < 1e-3 || x > 21)
			goto slow;
		char b[40], *p = b;
		if (v < 0)
			*p++ = '-';
		*p++ = (char)('0' + q / 100000000LL);
		long long fp = q % 100000000LL;
		if (fp) {
			*p++ = '.';
			for (long long k = 10000000LL; k >= 1; k /= 10) {
				*p++ = (char)('0' + fp / k);
				fp %= k;
			}
			while (p[-1] == '0')
				p--;
		}
		*p++ = 'e';
		*p++ = '+';
		*p++ = (char)('0' + x / 10);
		*p++ = (char)('0' + x % 10);
		w_raw(w, b, (size_t)(p - b));
		return;
	}
slow:;
	char b[32];
	int n = snprintf(b, sizeof b, "%.9g", v);
	w_raw(w, b, (size_t)n);
}

/* `,"key":` for a literal key */
#define w_key(w, k) W_LIT((w), ",\"" k "\":")

/* The head every event shares: {"ph":..,"cat":..,"pid":..,"tid":.. -- the
 * caller adds the rest and closes it. */
static void w_head(wbuf *w, int *first, const char *ph, const char *cat, int pid, long tid)
{
	w_s(w, *first ? "\n{\"ph\":" : ",\n{\"ph\":");
	*first = 0;
	w_str(w, ph);
	w_key(w, "cat");
	w_str(w, cat);
	w_key(w, "pid");
	w_int(w, pid);
	w_key(w, "tid");
	w_int(w, tid);
}

static void w_meta(wbuf *w, int *first, const char *what, int pid, long tid, const char *name)
{
	w_head(w, first, "M", "__metadata", pid, tid);
	w_key(w, "name");
	w_str(w, what);
	w_key(w, "args");
	W_LIT(w, "{\"name\":");
	w_str(w, name);
	W_LIT(w, "}}");
}

/* tid 0: the process's order (written on tid 1: some importers drop tid 0). */
static void w_sort(wbuf *w, int *first, int pid, long tid, long idx)
{
	w_head(w, first, "M", "__metadata", pid, tid ? tid : 1);
	w_key(w, "name");
	w_str(w, tid ? "thread_sort_index" : "process_sort_index");
	w_key(w, "args");
	W_LIT(w, "{\"sort_index\":");
	w_int(w, idx);
	W_LIT(w, "}}");
}

/* Times go out as whole nanoseconds: a slice's two ends are rounded, and
 * its duration is the difference, so slices that nest or keep apart on a
 * track still do as written (rounding is monotone). */
static long long ns_of(double s)
{
	return s > 0 ? llround(s * 1e9) : 0;
}

/* ns nanoseconds in the format's unit, microseconds: fixed point, three
 * decimals, then "01".  Importers turn microseconds back into integer
 * nanoseconds by truncating x * 1000 (Perfetto's JSON importer does, after
 * a parse that is not always correctly rounded), and N / 1000 as a double
 * can land just below N; a hundredth of a nanosecond more keeps every such
 * reader (and one that rounds) at N, up to hours of trace. */
static void w_ns(wbuf *w, long long ns)
{
	if (ns < 0)
		ns = 0;
	w_int(w, ns / 1000);
	long long f = ns % 1000;
	if (f) {
		char b[6] = {'.',
		             (char)('0' + f / 100),
		             (char)('0' + f / 10 % 10),
		             (char)('0' + f % 10),
		             '0',
		             '1'};
		w_raw(w, b, sizeof b);
	}
}

/* A min-heap of the ends of sends in flight, for the counter. */
typedef struct flight {
	double t1;
	uint64_t bytes;
} flight;
typedef struct heap {
	flight *a;
	size_t n, cap;
} heap;

static int heap_push(heap *h, flight f)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		flight *a = realloc(h->a, cap * sizeof *a);
		if (!a)
			return -1;
		h->a = a;
		h->cap = cap;
	}
	size_t i = h->n++;
	while (i > 0 && h->a[(i - 1) / 2].t1 > f.t1) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = f;
	return 0;
}

static flight heap_pop(heap *h)
{
	flight top = h->a[0], last = h->a[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1].t1 < h->a[c].t1)
			c++;
		if (h->a[c].t1 >= last.t1)
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n)
		h->a[i] = last;
	return top;
}

/* The bytes-in-flight counter: one sample per distinct time. */
typedef struct counter {
	int pid;
	int have;     /* a sample is pending */
	long long ts; /* ns */
	uint64_t value;
} counter;

static void counter_set(wbuf *w, int *first, counter *c, double t, uint64_t v)
{
	long long n = ns_of(t);
	if (c->have && n != c->ts) {
		w_head(w, first, "C", "link", c->pid, 1);
		w_key(w, "name");
		w_str(w, "bytes in flight");
		w_key(w, "ts");
		w_ns(w, c->ts);
		w_key(w, "args");
		W_LIT(w, "{\"bytes\":");
		w_int(w, (long long)c->value);
		W_LIT(w, "}}");
	}
	c->have = 1;
	c->ts = n;
	c->value = v;
}

/* Appending to a name without snprintf (per event, it showed in profiles). */
static size_t put_s(char *b, size_t at, size_t cap, const char *s)
{
	while (*s && at + 1 < cap)
		b[at++] = *s++;
	b[at] = '\0';
	return at;
}

static size_t put_i(char *b, size_t at, size_t cap, long long v)
{
	char t[24], *e = t + sizeof t, *p = e;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	*--p = '\0';
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return put_s(b, at, cap, p);
}

/* An event's slice name: its label (or fallback), and its micro-batch. */
static void ev_name(char *b, size_t cap, const sl_event *e, const char *fallback)
{
	size_t n = put_s(b, 0, cap, e->label[0] ? e->label : fallback);
	if (e->mb >= 0) {
		n = put_s(b, n, cap, " mb");
		put_i(b, n, cap, e->mb);
	}
}

static void flow_id(char *b, size_t len, const sl_event *e, int src, int dst, const int *p2p)
{
	size_t n = put_i(b, 0, len, src);
	n = put_s(b, n, len, ">");
	n = put_i(b, n, len, dst);
	if (e->coll.op >= 0) {
		const int f[4] = {e->coll.leader, e->coll.seq, e->coll.step, e->coll.first};
		for (int k = 0; k < 4; k++) {
			n = put_s(b, n, len, k ? "." : ":");
			n = put_i(b, n, len, f[k]);
		}
	} else {
		n = put_s(b, n, len, ":p");
		put_i(b, n, len, p2p ? *p2p : 0);
	}
}

/* A step's slice name, without snprintf (a step per few events). */
static void step_name(char *b, size_t len, const sl_snapshot *s, const sl_opstep *st)
{
	const sl_event *r = &s->ev[st->rep];
	static const char *const phases[SL_PHASE_N] = {
	    "", "reduce-scatter", "all-gather", "reduce", "broadcast", "gather", "scatter"};
	const char *what = r->label[0] ? r->label : sl_ev_kind_name(r->kind);
	size_t n;
	if (st->coll) {
		const sl_ev_coll *c = st->coll;
		const char *ph = c->phase > 0 && c->phase < SL_PHASE_N ? phases[(int)c->phase] : "";
		n = put_s(b, 0, len, sl_coll_op_name((sl_coll_op)c->op));
		n = put_s(b, n, len, " ");
		n = put_s(b, n, len, sl_algo_name((sl_algo)c->algo));
		n = put_s(b, n, len, " step ");
		n = put_i(b, n, len, c->step + 1);
		n = put_s(b, n, len, "/");
		n = put_i(b, n, len, c->nsteps);
		if (*ph) {
			n = put_s(b, n, len, " ");
			put_s(b, n, len, ph);
		}
	} else if (st->compute && r->work.pass == SL_PASS_NONE) {
		n = put_s(b, 0, len, "compute (");
		n = put_i(b, n, len, st->ndevs);
		put_s(b, n, len, st->ndevs == 1 ? " device)" : " devices)");
	} else if (st->p2p) {
		const sl_ev_p2p *q = st->p2p;
		n = put_s(b, 0, len, q->kind == SL_P2P_ACT ? "pipeline F mb" : "pipeline B mb");
		n = put_i(b, n, len, q->mb);
		n = put_s(b, n, len, " stage ");
		n = put_i(b, n, len, q->from);
		n = put_s(b, n, len, "->");
		put_i(b, n, len, q->to);
	} else if (st->io) {
		n = put_s(b, 0, len, what);
		n = put_s(b, n, len, " (chunk ");
		n = put_i(b, n, len, st->io->chunk + 1);
		n = put_s(b, n, len, "/");
		n = put_i(b, n, len, st->io->nchunks);
		put_s(b, n, len, ")");
	} else if (r->mb >= 0) {
		n = put_s(b, 0, len, what);
		n = put_s(b, n, len, " mb");
		put_i(b, n, len, r->mb);
	} else {
		put_s(b, 0, len, what);
	}
}

typedef struct coll_span {
	int leader, seq;
	double t0, t1;
	const sl_ev_coll *c;
} coll_span;

static int cmp_coll(const void *a, const void *b)
{
	const coll_span *x = a, *y = b;
	if (x->leader != y->leader)
		return x->leader < y->leader ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Slice args shared by an event's device and link slices. */
static void w_event_args(wbuf *w, const sl_event *e, int step)
{
	w_key(w, "args");
	W_LIT(w, "{\"kind\":");
	w_str(w, sl_ev_kind_name(e->kind));
	w_key(w, "device");
	w_int(w, e->dev);
	if (e->peer >= 0) {
		w_key(w, "peer");
		w_int(w, e->peer);
	}
	if (e->mb >= 0) {
		w_key(w, "microbatch");
		w_int(w, e->mb);
	}
	/* Zero bytes (compute) and zero flops (transfers) go unsaid: a big
	 * trace is mostly these args. */
	if (e->bytes) {
		w_key(w, "bytes");
		w_int(w, (long long)e->bytes);
	}
	if (e->flops != 0) {
		w_key(w, "flops");
		w_num(w, e->flops);
	}
	w_key(w, "wall_start_s");
	w_num(w, e->w0);
	w_key(w, "wall_end_s");
	w_num(w, e->w1);
	if (step >= 0) {
		w_key(w, "step");
		w_int(w, step);
	}
	if (e->coll.op >= 0) {
		w_key(w, "collective");
		w_str(w, sl_coll_op_name((sl_coll_op)e->coll.op));
		w_key(w, "leader");
		w_int(w, e->coll.leader);
		w_key(w, "seq");
		w_int(w, e->coll.seq);
		w_key(w, "coll_step");
		w_int(w, e->coll.step);
	}
	if (e->p2p.kind != SL_P2P_NONE && e->p2p.share > 1) {
		w_key(w, "port_share");
		w_int(w, e->p2p.share);
	}
	W_LIT(w, "}}");
}

static void w_slice(wbuf *w, int *first, const char *cat, int pid, long tid, const char *name,
                    double t0, double t1)
{
	w_head(w, first, "X", cat, pid, tid);
	w_key(w, "name");
	w_str(w, name);
	long long n0 = ns_of(t0), n1 = ns_of(t1);
	w_key(w, "ts");
	w_ns(w, n0);
	w_key(w, "dur");
	w_ns(w, n1 > n0 ? n1 - n0 : 0);
}

/* A device's transfers one way at once: a pipeline exchange posts up to
 * four messages; more than that share the last lane. */
enum { XLANES = 4 };

/* The track of a device's send (way 0) or receive (way 1) from t0 to t1:
 * the first of its lanes free by t0.  *fresh is the lane's number (2, 3,
 * ...) when it is used for the first time and is not the device's own send
 * or receive track, else 0. */
static long xfer_tid(double *end, unsigned char *used, int ndev, int d, int way, double t0,
                     double t1, int *fresh)
{
	size_t base = ((size_t)d * 2 + (size_t)way) * XLANES;
	int l = 0;
	while (l < XLANES - 1 && used[base + l] && end[base + l] > t0)
		l++;
	*fresh = l > 0 && !used[base + l] ? l + 1 : 0;
	used[base + l] = 1;
	if (t1 > end[base + l])
		end[base + l] = t1;
	if (l == 0)
		return 3L * d + way + 2;
	return 3L * ndev + 1 + ((long)d * 2 + way) * (XLANES - 1) + (l - 1);
}

/* Flow ids are numbers: Perfetto's importer reads a string id as
 * hexadecimal and drops the flow when it is not.  A message's name (see
 * flow_id) maps to the number given when its send or its receive came
 * first; the map holds only messages half written (linear probing,
 * deletion by backward shift).  A receive that comes first (the same start
 * as its send) waits there, so a flow's "f" never precedes its "s": an
 * importer that meets the end first has no flow to end. */
typedef struct flow_ent {
	long long id; /* 0: empty */
	int waiting;  /* a receive's "f", written after the send's "s" */
	int pid;
	long tid;
	double t;
	char key[64];
} flow_ent;
typedef struct flowmap {
	flow_ent *a;
	size_t cap, n;
	long long next;
} flowmap;

static size_t flow_hash(const char *k, size_t cap)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ULL;
	return (size_t)(h & (cap - 1));
}

/* The slot of key, or the empty slot where it would go. */
static size_t flow_slot(const flowmap *m, const char *key)
{
	size_t i = flow_hash(key, m->cap);
	while (m->a[i].id && strcmp(m->a[i].key, key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int flow_grow(flowmap *m)
{
	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	flowmap g = {.cap = m->cap ? 2 * m->cap : 1024, .n = m->n, .next = m->next};
	if (!(g.a = calloc(g.cap, sizeof *g.a)))
		return -1;
	for (size_t i = 0; i < m->cap; i++)
		if (m->a[i].id)
			g.a[flow_slot(&g, m->a[i].key)] = m->a[i];
	free(m->a);
	*m = g;
	return 0;
}

/* Empty slot i, shifting the followers of its run back over the hole. */
static void flow_remove(flowmap *m, size_t i)
{
	size_t hole = i, mask = m->cap - 1;
	for (size_t j = (i + 1) & mask; m->a[j].id; j = (j + 1) & mask) {
		size_t home = flow_hash(m->a[j].key, m->cap);
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			m->a[hole] = m->a[j];
			hole = j;
		}
	}
	m->a[hole].id = 0;
	m->n--;
}

static void w_flow_event(wbuf *w, int *first, const char *ph, int pid, long tid, long long id,
                         const char *key, double t)
{
	w_head(w, first, ph, "flow", pid, tid);
	w_key(w, "name");
	w_str(w, "message");
	w_key(w, "id");
	w_int(w, id);
	if (ph[0] == 'f') {
		w_key(w, "bp");
		w_str(w, "e");
	}
	w_key(w, "ts");
	w_ns(w, ns_of(t));
	w_key(w, "args");
	W_LIT(w, "{\"message\":");
	w_str(w, key);
	W_LIT(w, "}}");
}

/* A message's send (recv 0: its flow's "s") or receive (recv 1: its "f",
 * bound to the slice enclosing it) on track (pid, tid) at t.  -1 when out
 * of memory. */
static int w_flow(wbuf *w, int *first, flowmap *fm, int recv, int pid, long tid, const char *key,
                  double t)
{
	if (flow_grow(fm))
		return -1;
	size_t i = flow_slot(fm, key);
	flow_ent *f = &fm->a[i];
	if (!f->id) { /* the first half: a number, and a receive waits */
		*f = (flow_ent){.id = ++fm->next, .waiting = recv, .pid = pid, .tid = tid, .t = t};
		put_s(f->key, 0, sizeof f->key, key);
		fm->n++;
		if (!recv)
			w_flow_event(w, first, "s", pid, tid, f->id, key, t);
		return 0;
	}
	if (recv) {
		w_flow_event(w, first, "f", pid, tid, f->id, key, t);
	} else {
		w_flow_event(w, first, "s", pid, tid, f->id, key, t);
		if (f->waiting)
			w_flow_event(w, first, "f", f->pid, f->tid, f->id, key, f->t);
	}
	flow_remove(fm, i);
	return 0;
}

int sl_trace_write_chrome_to(const sl_snapshot *s, const sl_trace_opts *opt, sl_trace_sink sink,
                             void *ctx, sl_err *err)
{
	int ndev = s->ndev;
	int dpn =
	    opt && opt->known ? (opt->devices_per_node > 0 ? opt->devices_per_node : ndev) : 0;
	int nodes = dpn ? (ndev + dpn - 1) / dpn : 1;
	if (nodes < 1)
		nodes = 1;
	int run_pid = nodes + 1, link_pid = nodes + 2;
	wbuf *w = malloc(sizeof *w);
	unsigned char *seen = calloc((size_t)ndev * ndev + 1, 1);
	int *p2p_sent = calloc((size_t)ndev * ndev + 1, sizeof *p2p_sent);
	int *p2p_recv = calloc((size_t)ndev * ndev + 1, sizeof *p2p_recv);
	sl_opstep *st = NULL;
	int *step_of = NULL;
	size_t ns = s->n ? sl_steps_build(s, &st, &step_of) : 0;
	size_t *lane_of = ns ? malloc(ns * sizeof *lane_of) : NULL;
	double *lane_end = ns ? malloc(ns * sizeof *lane_end) : NULL;
	coll_span *cs = ns ? malloc(ns * sizeof *cs) : NULL;
	double *xend = calloc((size_t)ndev * 2 * XLANES + 1, sizeof *xend);
	unsigned char *xused = calloc((size_t)ndev * 2 * XLANES + 1, 1);
	heap h = {0};
	flowmap fm = {0};
	/* Devices with events: a trace kept to some devices (train
	 * --trace-devices) draws no flow to or from one without. */
	unsigned char *present = calloc((size_t)ndev + 1, 1);
	for (size_t i = 0; present && i < s->n; i++)
		if (s->ev[i].dev >= 0 && s->ev[i].dev < ndev)
			present[s->ev[i].dev] = 1;
	int rc = SL_OK;
	if (!w || !seen || !p2p_sent || !p2p_recv || !xend || !xused || !present ||
	    (s->n && (!st || !step_of)) || (ns && (!lane_of || !lane_end || !cs))) {
		rc = sl_fail(err, SL_ENOMEM, "out of host memory writing the trace");
		goto out;
	}
	w->sink = sink;
	w->ctx = ctx;
	w->failed = 0;
	w->n = 0;
	int first = 1;
	W_LIT(w, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");

	/* Processes and device tracks. */
	char name[96];
	for (int n = 0; n < nodes; n++) {
		if (dpn)
			snprintf(name, sizeof name, "node %d", n);
		else
			snprintf(name, sizeof name, "devices");
		w_meta(w, &first, "process_name", n + 1, 1, name);
		w_sort(w, &first, n + 1, 0, n + 1);
	}
	w_meta(w, &first, "process_name", run_pid, 1, "run");
	w_sort(w, &first, run_pid, 0, 0);
	w_meta(w, &first, "process_name", link_pid, 1, "links");
	w_sort(w, &first, link_pid, 0, nodes + 2);
	static const char *const track[3] = {"compute", "send", "recv"};
	for (int d = 0; d < ndev; d++) {
		int pid = dpn ? d / dpn + 1 : 1;
		for (int k = 0; k < 3; k++) {
			if (dpn)
				snprintf(name, sizeof name, "device %d %s (node %d)", d, track[k],
				         d / dpn);
			else
				snprintf(name, sizeof name, "device %d %s", d, track[k]);
			w_meta(w, &first, "thread_name", pid, 3L * d + k + 1, name);
			w_sort(w, &first, pid, 3L * d + k + 1, (3L * d + k + 1) * XLANES);
		}
	}

	/* Steps on lanes where they do not overlap (their ends ascend, so a
	 * step fits a lane whose last end is at or before its start). */
	size_t lanes = 0;
	for (size_t k = 0; k < ns; k++) {
		size_t l = 0;
		while (l < lanes && lane_end[l] > st[k].t0)
			l++;
		if (l == lanes)
			lanes++;
		lane_end[l] = st[k].t1;
		lane_of[k] = l;
	}
	for (size_t l = 0; l < lanes; l++) {
		if (l == 0)
			snprintf(name, sizeof name, "steps");
		else
			snprintf(name, sizeof name, "steps (overlapping %zu)", l + 1);
		w_meta(w, &first, "thread_name", run_pid, (long)l + 1, name);
		w_sort(w, &first, run_pid, (long)l + 1, (long)l + 1);
	}
	for (size_t k = 0; k < ns; k++) {
		step_name(name, sizeof name, s, &st[k]);
		w_slice(w, &first, "step", run_pid, (long)lane_of[k] + 1, name, st[k].t0, st[k].t1);
		w_key(w, "args");
		W_LIT(w, "{\"step\":");
		w_int(w, (long long)k);
		w_key(w, "devices");
		w_int(w, st[k].ndevs);
		w_key(w, "sends");
		w_int(w, st[k].nxfer);
		W_LIT(w, "}}");
	}

	/* A slice per collective (leader, seq), from its steps' spans, on its
	 * leader's track (a device runs one collective at a time). */
	size_t nc = 0;
	for (size_t k = 0; k < ns; k++)
		if (st[k].coll)
			cs[nc++] = (coll_span){st[k].coll->leader, st[k].coll->seq, st[k].t0,
			                       st[k].t1, st[k].coll};
	qsort(cs, nc, sizeof *cs, cmp_coll);
	long coll_tid0 = (long)lanes + 1;
	for (size_t i = 0; i < nc;) {
		size_t j = i;
		double t0 = cs[i].t0, t1 = cs[i].t1;
		while (j < nc && cs[j].leader == cs[i].leader && cs[j].seq == cs[i].seq) {
			if (cs[j].t0 < t0)
				t0 = cs[j].t0;
			if (cs[j].t1 > t1)
				t1 = cs[j].t1;
			j++;
		}
		long tid = coll_tid0 + cs[i].leader;
		if (i == 0 || cs[i - 1].leader != cs[i].leader) {
			snprintf(name, sizeof name, "collectives led by device %d", cs[i].leader);
			w_meta(w, &first, "thread_name", run_pid, tid, name);
			w_sort(w, &first, run_pid, tid, tid);
		}
		const sl_ev_coll *c = cs[i].c;
		snprintf(name, sizeof name, "%s %s over %d (#%d)",
		         sl_coll_op_name((sl_coll_op)c->op), sl_algo_name((sl_algo)c->algo), c->p,
		         c->seq);
		w_slice(w, &first, "collective", run_pid, tid, name, t0, t1);
		w_key(w, "args");
		W_LIT(w, "{\"leader\":");
		w_int(w, c->leader);
		w_key(w, "seq");
		w_int(w, c->seq);
		w_key(w, "steps");
		w_int(w, c->nsteps);
		W_LIT(w, "}}");
		i = j;
	}

	/* The events, in time order, with the counter fed on the way. */
	counter ctr = {.pid = run_pid};
	uint64_t inflight = 0;
	for (size_t i = 0; i < s->n && !w->failed; i++) {
		const sl_event *e = &s->ev[i];
		while (h.n && h.a[0].t1 <= e->t0) {
			flight f = heap_pop(&h);
			inflight -= f.bytes;
			counter_set(w, &first, &ctr, f.t1, inflight);
		}
		if (e->kind == SL_EV_WAIT || e->dev < 0 || e->dev >= ndev)
			continue;
		int pid = dpn ? e->dev / dpn + 1 : 1;
		int k = e->kind == SL_EV_COMPUTE                          ? 0
		        : e->kind == SL_EV_SEND || e->kind == SL_EV_WRITE ? 1
		                                                          : 2;
		long tid = 3L * e->dev + k + 1;
		int fresh = 0;
		if (k > 0)
			tid = xfer_tid(xend, xused, ndev, e->dev, k - 1, e->t0, e->t1, &fresh);
		if (fresh) {
			long lane = fresh;
			if (dpn)
				snprintf(name, sizeof name, "device %d %s %ld (node %d)", e->dev,
				         track[k], lane, e->dev / dpn);
			else
				snprintf(name, sizeof name, "device %d %s %ld", e->dev, track[k],
				         lane);
			w_meta(w, &first, "thread_name", pid, tid, name);
			w_sort(w, &first, pid, tid, (3L * e->dev + k + 1) * XLANES + lane - 1);
		}
		ev_name(name, sizeof name, e, sl_ev_kind_name(e->kind));
		const char *cat = sl_ev_kind_name(e->kind);
		int step = step_of ? step_of[i] : -1;
		w_slice(w, &first, cat, pid, tid, name, e->t0, e->t1);
		w_event_args(w, e, step);

		int xfer =
		    e->peer >= 0 && e->peer < ndev &&
		    (e->kind == SL_EV_SEND || e->kind == SL_EV_RECV || e->kind == SL_EV_REDUCE);
		if (!xfer)
			continue;
		int src = e->kind == SL_EV_SEND ? e->dev : e->peer;
		int dst = e->kind == SL_EV_SEND ? e->peer : e->dev;
		size_t li = (size_t)src * ndev + dst;
		char id[64];
		if (e->kind == SL_EV_SEND) {
			flow_id(id, sizeof id, e, src, dst, e->coll.op < 0 ? &p2p_sent[li] : NULL);
			if (e->coll.op < 0)
				p2p_sent[li]++;
			if (present[dst] && w_flow(w, &first, &fm, 0, pid, tid, id, e->t0)) {
				rc =
				    sl_fail(err, SL_ENOMEM, "out of host memory writing the trace");
				goto out;
			}

			long ltid = (long)li + 1;
			if (!seen[li]) {
				seen[li] = 1;
				const char *where = !dpn                     ? ""
				                    : src / dpn == dst / dpn ? " (intra-node)"
				                                             : " (inter-node)";
				snprintf(name, sizeof name, "link %d->%d%s", src, dst, where);
				w_meta(w, &first, "thread_name", link_pid, ltid, name);
			}
			ev_name(name, sizeof name, e, "send");
			/* The device's slice holds the details; the link's says what moves. */
			w_slice(w, &first, "link", link_pid, ltid, name, e->t0, e->t1);
			w_key(w, "args");
			W_LIT(w, "{\"bytes\":");
			w_int(w, (long long)e->bytes);
			if (step >= 0) {
				w_key(w, "step");
				w_int(w, step);
			}
			W_LIT(w, "}}");
			if (heap_push(&h, (flight){e->t1, e->bytes})) {
				rc =
				    sl_fail(err, SL_ENOMEM, "out of host memory writing the trace");
				goto out;
			}
			inflight += e->bytes;
			counter_set(w, &first, &ctr, e->t0, inflight);
		} else {
			flow_id(id, sizeof id, e, src, dst, e->coll.op < 0 ? &p2p_recv[li] : NULL);
			if (e->coll.op < 0)
				p2p_recv[li]++;
			if (present[src] && w_flow(w, &first, &fm, 1, pid, tid, id, e->t0)) {
				rc =
				    sl_fail(err, SL_ENOMEM, "out of host memory writing the trace");
				goto out;
			}
		}
	}
	while (h.n) {
		flight f = heap_pop(&h);
		inflight -= f.bytes;
		counter_set(w, &first, &ctr, f.t1, inflight);
	}
	counter_set(w, &first, &ctr, ctr.have ? (double)ctr.ts * 1e-9 + 1 : 0,
	            0); /* flush the last sample */
	W_LIT(w, "\n]}\n");
	w_flush(w);
	if (w->failed)
		rc = sl_fail(err, SL_ESYS, "cannot write the trace");
out:
	free(present);
	free(fm.a);
	free(h.a);
	free(xend);
	free(xused);
	free(cs);
	free(lane_end);
	free(lane_of);
	free(st);
	free(step_of);
	free(p2p_recv);
	free(p2p_sent);
	free(seen);
	free(w);
	return rc;
}

static int file_sink(void *ctx, const char *buf, size_t len)
{
	return fwrite(buf, 1, len, (FILE *)ctx) == len ? 0 : -1;
}

int sl_trace_write_chrome(const sl_snapshot *s, FILE *f, sl_err *err)
{
	return sl_trace_write_chrome_opts(s, NULL, f, err);
}

int sl_trace_write_chrome_opts(const sl_snapshot *s, const sl_trace_opts *opt, FILE *f, sl_err *err)
{
	int rc = sl_trace_write_chrome_to(s, opt, file_sink, f, err);
	if (rc == SL_OK && (fflush(f) != 0 || ferror(f)))
		rc = sl_fail(err, SL_ESYS, "cannot write the trace");
	return rc;
}

static int gz_sink(void *ctx, const char *buf, size_t len)
{
	while (len) {
		unsigned chunk = len > (1u << 30) ? 1u << 30 : (unsigned)len;
		if (gzwrite((gzFile)ctx, buf, chunk) != (int)chunk)
			return -1;
		buf += chunk;
		len -= chunk;
	}
	return 0;
}

/* Compression overlaps formatting: the writer fills one 1 MiB block while
 * a thread deflates the other (at level 1, deflating alone took about as
 * long as formatting; make bench, section 10). */
enum { GZ_BLOCK = 1 << 20 };
typedef struct gzpipe {
	gzFile g;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *blk[2];
	size_t len[2];
	int full[2];
	int cur, done, failed;
	size_t fill;
} gzpipe;

static void *gz_thread(void *arg)
{
	gzpipe *p = arg;
	for (int i = 0;; i ^= 1) {
		pthread_mutex_lock(&p->mu);
		while (!p->full[i] && !p->done)
			pthread_cond_wait(&p->cv, &p->mu);
		if (!p->full[i]) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		pthread_mutex_unlock(&p->mu);
		int bad = gz_sink(p->g, p->blk[i], p->len[i]);
		pthread_mutex_lock(&p->mu);
		p->failed |= bad;
		p->full[i] = 0;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

/* Hand the current block over and wait until the other one is free. */
static int gz_hand(gzpipe *p)
{
	pthread_mutex_lock(&p->mu);
	p->len[p->cur] = p->fill;
	p->full[p->cur] = 1;
	pthread_cond_broadcast(&p->cv);
	p->cur ^= 1;
	while (p->full[p->cur])
		pthread_cond_wait(&p->cv, &p->mu);
	int failed = p->failed;
	pthread_mutex_unlock(&p->mu);
	p->fill = 0;
	return failed ? -1 : 0;
}

static int gzpipe_sink(void *ctx, const char *buf, size_t len)
{
	gzpipe *p = ctx;
	while (len) {
		size_t k = GZ_BLOCK - p->fill < len ? GZ_BLOCK - p->fill : len;
		memcpy(p->blk[p->cur] + p->fill, buf, k);
		p->fill += k;
		buf += k;
		len -= k;
		if (p->fill == GZ_BLOCK && gz_hand(p))
			return -1;
	}
	return 0;
}

int sl_trace_write_chrome_gz(const sl_snapshot *s, const sl_trace_opts *opt, const char *path,
                             sl_err *err)
{
	/* Level 1: a trace still compresses about 11x, at a fraction of the
	 * default level's time (make bench, section 10). */
	gzFile g = gzopen(path, "wb1");
	if (!g)
		return sl_fail(err, SL_ESYS, "cannot write the trace to %s", path);
	gzpipe p = {.g = g};
	pthread_t th;
	int rc, threaded = 0;
	p.blk[0] = malloc(GZ_BLOCK);
	p.blk[1] = malloc(GZ_BLOCK);
	if (p.blk[0] && p.blk[1] && pthread_mutex_init(&p.mu, NULL) == 0) {
		if (pthread_cond_init(&p.cv, NULL) == 0) {
			if (pthread_create(&th, NULL, gz_thread, &p) == 0)
				threaded = 1;
			else
				pthread_cond_destroy(&p.cv);
		}
		if (!threaded)
			pthread_mutex_destroy(&p.mu);
	}
	if (threaded) {
		rc = sl_trace_write_chrome_to(s, opt, gzpipe_sink, &p, err);
		int bad = p.fill ? gz_hand(&p) : 0;
		pthread_mutex_lock(&p.mu);
		p.done = 1;
		pthread_cond_broadcast(&p.cv);
		pthread_mutex_unlock(&p.mu);
		pthread_join(th, NULL);
		pthread_cond_destroy(&p.cv);
		pthread_mutex_destroy(&p.mu);
		if ((bad || p.failed) && rc == SL_OK)
			rc = sl_fail(err, SL_ESYS, "writing the trace to %s failed", path);
	} else {
		/* No thread or no memory for the blocks: deflate inline. */
		rc = sl_trace_write_chrome_to(s, opt, gz_sink, g, err);
	}
	free(p.blk[0]);
	free(p.blk[1]);
	if (gzclose(g) != Z_OK && rc == SL_OK)
		rc = sl_fail(err, SL_ESYS, "writing the trace to %s failed", path);
	return rc;
}
