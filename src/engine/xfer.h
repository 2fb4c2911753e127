/* SPDX-License-Identifier: MIT */
/* xfer.h - point-to-point transfers between emulated devices.
 *
 * A transfer really copies bytes from the sender's buffer to the receiver's
 * (or adds fp32 values into it), over the link src->dst.  In emulated time it
 * starts when the sender is ready and the link is free, and lasts
 * latency + bytes / bandwidth.  The receiver pulls the data; the sender's call
 * returns when the receiver has it. */
#ifndef SL_XFER_H
#define SL_XFER_H

#include <stddef.h>

#include "cluster.h"
#include "trace.h"

typedef enum sl_xop {
	SL_XCOPY, /* receiver's buffer = sender's */
	SL_XSUM,  /* receiver's buffer += sender's (fp32) */
} sl_xop;

/* One message: up to two byte ranges of a buffer (a ring wrap needs two). */
typedef struct sl_msg {
	int peer;
	void *buf;
	size_t off[2], len[2]; /* bytes */
	int nseg;
	short first, count; /* a collective's blocks it carries (count 0: not a collective's) */
	sl_ev_p2p p2p;      /* a pipeline message's fields (kind NONE: not one); both ends' events
	                       carry the receiver's and the sender's own */
	double stripes;     /* a ring collective's hop between nodes runs at this many times
	                       its link's bandwidth (sl_ring_stripes; the receiver's counts;
	                       0 or 1: the link's) */
} sl_msg;

sl_msg sl_msg1(int peer, void *buf, size_t off, size_t len);
sl_msg sl_msg2(int peer, void *buf, size_t off0, size_t len0, size_t off1, size_t len1);
size_t sl_msg_bytes(const sl_msg *m);

/* Post all sends, pull all receives (in order), wait for all sends to be
 * taken.  In emulated time every message starts at the device's current
 * clock, concurrently on their own links (outside a collective, those
 * through one port of a realistic machine's device share it:
 * sl_port_share); the clock ends at the latest completion.  Receives and
 * sends must match the peer's calls in count and size, else SL_EINVAL. */
int sl_xfer(sl_dev *d, const sl_msg *sends, int nsend, const sl_msg *recvs, int nrecv, sl_xop op,
            const char *label, sl_err *err);
/* The same, as one step of a collective: every event it records carries
 * info, with each message's blocks. */
int sl_xfer_coll(sl_dev *d, const sl_msg *sends, int nsend, const sl_msg *recvs, int nrecv,
                 sl_xop op, const sl_ev_coll *info, const char *label, sl_err *err);

/* The engine's clock rule after an exchange, the one the emulation and the
 * prediction's replay both use: walk the transfers' spans in order of start
 * (sp is sorted in place); time a span covers past the clock is
 * communication, a gap before it waiting.  Returns the new clock; adds to
 * *comm and *wait; calls gap(ctx, from, to) for each gap (may be NULL). */
typedef struct sl_span {
	double t0, t1;
} sl_span;
double sl_settle(double clock, sl_span *sp, int n, double *comm, double *wait,
                 void (*gap)(void *ctx, double from, double to), void *ctx);

/* The spans of the receives of the device's last sl_xfer (at most
 * SL_RECV_SPANS; the last covers any beyond), copied to out; returns how
 * many. */
#define SL_RECV_SPANS 8
int sl_dev_recv_spans(const sl_dev *d, sl_span *out, int max);
/* The current stream waits for received data, as a compute stream waits
 * for an exchange on a side stream while its sends go on: the gap before
 * a span is idle (its sender was not ready), the span itself communication
 * not hidden (stream_wait_s). sp is sorted in place. */
void sl_dev_wait_spans(sl_dev *d, sl_span *sp, int n);

int sl_send(sl_dev *d, int peer, const void *buf, size_t bytes, const char *label, sl_err *err);
int sl_recv(sl_dev *d, int peer, void *buf, size_t bytes, const char *label, sl_err *err);

#endif
