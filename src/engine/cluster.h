/* SPDX-License-Identifier: MIT */
/* cluster.h - emulated devices, the links between them, and running a
 * program on every device thread.
 *
 * A cluster owns ndev devices (one pthread each while a run is in progress),
 * a link for every ordered device pair, and the trace.  Every device keeps an
 * emulated clock; see docs/architecture.md for the time model. */
#ifndef SL_CLUSTER_H
#define SL_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "trace.h"

/* Devices that really compute and move bytes; a timing-only cluster may
 * have up to SL_MAX_DEVICES. */
#define SL_MAX_FULL_DEVICES 64
#define SL_MAX_DEVICES 1024
/* A plan runs no device: its clusters may be larger (Narayanan et al.'s
 * 3,072 A100s), each of its groups (TP, PP or DP) still at most
 * SL_MAX_DEVICES.  A replay that cannot stand one device in for others
 * simulates every device: at 3,072 a full search takes minutes. */
#define SL_MAX_PLAN_DEVICES 16384

typedef struct sl_cluster sl_cluster;
typedef struct sl_dev sl_dev;
typedef struct sl_trace sl_trace;

typedef enum sl_timing {
	SL_TIMING_MODEL,    /* compute = flops / device rate (deterministic) */
	SL_TIMING_MEASURED, /* compute = the device thread's own CPU time */
} sl_timing;

typedef enum sl_topo {
	SL_TOPO_FULL, /* every pair connected (one node, or nodes of G) */
	SL_TOPO_RING, /* only ring neighbours; other pairs pay one latency per hop */
} sl_topo;

typedef struct sl_link_spec {
	double bandwidth; /* bytes per second */
	double latency;   /* seconds */
} sl_link_spec;

/* What the emulated device stores and sends an element in: the host's
 * arithmetic is always fp32 (results are still checked against one
 * device), but emulated bytes, memory and the compute rate are the chosen
 * precision's. */
typedef enum sl_precision {
	SL_PREC_FP32, /* 4 bytes an element, the FP32 rate */
	SL_PREC_BF16, /* 2 bytes an element, the BF16 tensor rate; mixed-precision Adam */
	SL_PREC_N
} sl_precision;

/* How close to peak the device runs (see device.h). */
typedef enum sl_efficiency {
	SL_EFF_IDEAL,     /* every GEMM at the peak rate; element-wise work and launches free */
	SL_EFF_REALISTIC, /* GEMMs at a shape-dependent achievable rate, element-wise work at its
	                     bytes' memory time, a launch cost per kernel */
	SL_EFF_N
} sl_efficiency;

/* The device's figures beyond its peak rate, for SL_EFF_REALISTIC. */
typedef struct sl_device_model {
	double mem_bw;           /* device memory (HBM) bytes per second */
	double gemm_frac;        /* the best GEMM rate measured, over the peak (MAMF / peak) */
	int units;               /* SMs (CUs): output tiles run in waves of this many */
	int tile_m, tile_n;      /* the output tile of the library's large-GEMM kernels */
	double k_half;           /* K at which a tile's main loop runs at half its rate */
	double launch_s;         /* per kernel */
	double attn_frac;        /* a fused attention kernel's rate over the peak (FlashAttention);
	                            0: gemm_frac */
	double mem_frac;         /* the share of mem_bw a streaming kernel reaches (a measured
	                            device-local copy over the datasheet figure); 0: all of it */
	double overlap_slowdown; /* a kernel beside communication kernels takes this much
	                            longer for the time they share (their SMs); 0: none */
} sl_device_model;

/* Which events a cluster's runs keep in its trace; all zero: all of them.
 * off: none (a headless run whose trace nobody reads then holds no memory
 * per event); nranges > 0: only the devices of those ranges (first and
 * last, inclusive); step_lo to step_hi (from 1 in a run, as sl_dev_set_step
 * numbers them; 0 and 0: any): only what a device records inside those
 * training steps.  What a run computes and times is the same either way. */
#define SL_RECORD_RANGES 8
typedef struct sl_record_filter {
	int off;
	int nranges;
	int ranges[SL_RECORD_RANGES][2];
	int step_lo, step_hi;
} sl_record_filter;

typedef struct sl_cluster_config {
	int devices;          /* 1 .. SL_MAX_FULL_DEVICES, or SL_MAX_DEVICES timing-only */
	int devices_per_node; /* G; 0 means all devices in one node */
	sl_topo topology;
	double flops;             /* per device, FLOP/s at the chosen precision */
	uint64_t memory;          /* per device capacity, bytes */
	sl_precision precision;   /* SL_PREC_FP32 unless set */
	sl_efficiency efficiency; /* SL_EFF_IDEAL unless set */
	sl_device_model dm;       /* used by SL_EFF_REALISTIC */
	sl_link_spec intra;       /* links inside a node */
	sl_link_spec inter;       /* links between nodes */
	sl_timing timing;
	double slowdown; /* 0: headless, no pacing; >= 1: wall = emulated * slowdown */
	/* Timing only ("dry run"): the same operations, clocks, links, events and
	 * memory figures, but no arithmetic and no bytes: sl_dev_sgemm accounts
	 * its FLOPs without calling BLAS, transfers and collectives take their
	 * emulated time without reading or writing buffers (which may be NULL),
	 * and programs account memory with sl_dev_reserve instead of holding
	 * it.  Needs model timing. */
	int timing_only;
	sl_record_filter record;
} sl_cluster_config;

/* Fill cfg with the defaults (4 devices, one node, the default preset's
 * figures, fp32 and ideal efficiency: the closed-form machine). */
void sl_cluster_config_default(sl_cluster_config *cfg);
/* Check a configuration; returns SL_EINVAL with a message naming the field. */
int sl_cluster_config_check(const sl_cluster_config *cfg, sl_err *err);
/* The same for a cluster that is only planned: up to SL_MAX_PLAN_DEVICES. */
int sl_cluster_config_check_plan(const sl_cluster_config *cfg, sl_err *err);

/* The figures a link src->dst of such a cluster starts with (its class:
 * inside a node or between nodes, times the hops of a ring). */
sl_link_spec sl_cluster_config_link(const sl_cluster_config *cfg, int src, int dst);

sl_cluster *sl_cluster_create(const sl_cluster_config *cfg, sl_err *err);

void sl_cluster_destroy(sl_cluster *c);
const sl_cluster_config *sl_cluster_config_of(const sl_cluster *c);

/* A device program: runs on the device's own thread.  Returns SL_OK or an
 * error code with err filled. */
typedef int (*sl_program)(sl_dev *dev, void *arg, sl_err *err);

/* Run prog on every device thread and wait for all of them.  Device clocks,
 * link state, memory peaks and the trace start afresh.  If one device fails,
 * the others are cancelled (their blocking calls return SL_ECANCEL) and the
 * first real error is returned. */
int sl_cluster_run(sl_cluster *c, sl_program prog, void *arg, sl_err *err);
/* How many runs (sl_cluster_run calls) this process has started, on any
 * cluster: what the lesson screen reports under SHARDLAB_TUI_STATS, so a
 * test can tell how many times a lesson's run executed. */
unsigned long sl_cluster_runs_started(void);

/* BLAS on the host.  Under an address-space limit (ulimit -v) OpenBLAS's
 * buffer is made once, after checking it fits, and calls are serialized so
 * that it suffices (OpenBLAS would retry a refused buffer forever);
 * sl_cluster_run also refuses, before starting any, device threads that
 * would not fit.  sl_host_blas_ready fails with SL_ENOMEM and "out of
 * memory: ..." when the buffer does not fit; nothing changes with no limit.
 * Every sgemm of the engine goes through sl_host_sgemm (row-major). */
int sl_host_blas_ready(sl_err *err);
void sl_host_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                   int lda, const float *b, int ldb, float beta, float *c, int ldc);

/* Ask a run in progress to stop (any thread; safe from a signal-free
 * context).  Blocking calls on device threads return SL_ECANCEL promptly. */
void sl_cluster_cancel(sl_cluster *c);
int sl_cluster_cancelled(const sl_cluster *c);

/* Knobs, safe to call from any thread while a run is in progress.  A change
 * applies to the rest of any transfer in flight.  src/dst = -1 matches all. */
void sl_cluster_set_link(sl_cluster *c, int src, int dst, double bandwidth, double latency);
void sl_cluster_set_class(sl_cluster *c, int inter_node, double bandwidth, double latency);
void sl_cluster_set_slowdown(sl_cluster *c, double slowdown);
double sl_cluster_slowdown(const sl_cluster *c);
sl_link_spec sl_cluster_link(const sl_cluster *c, int src, int dst);
/* The link's figures as they were when the current run started: what an
 * algorithm tunes by (a chain's segments), the same on every device of
 * the run however the knobs turn while it runs. */
sl_link_spec sl_cluster_link_tuned(const sl_cluster *c, int src, int dst);

/* Playback control for the front end, from any thread.  Pausing freezes the
 * mapping from wall to emulated time and holds every device at its next
 * operation; a breakpoint holds back any operation that would end after
 * emulated time t (INFINITY: none), which is how the TUI steps one operation
 * at a time.  Both persist across runs. */
void sl_cluster_pause(sl_cluster *c, int paused);
int sl_cluster_paused(const sl_cluster *c);
void sl_cluster_set_breakpoint(sl_cluster *c, double t);
/* The emulated time playback has reached: (wall - start) / slowdown less
 * pauses, never past the breakpoint; INFINITY when headless. */
double sl_cluster_now(const sl_cluster *c);
/* Number of hops between two devices in the topology (1 for direct links). */
int sl_cluster_hops(const sl_cluster *c, int src, int dst);
int sl_cluster_same_node(const sl_cluster *c, int a, int b);
/* NCCL's rings across nodes.  NCCL orders a ring by the topology and runs
 * it on several channels, each of which leaves a node through a different
 * member's network adapter (S. Jeaugey, NVIDIA/nccl-tests issue 119: the
 * target is 24 GB/s a 200 Gb/s adapter times the node's adapters; NVIDIA/nccl
 * issue 812: 192 GB/s of all-reduce bus bandwidth on DGX A100 nodes of eight).
 * So under realistic efficiency, on the full topology, the hop of ring
 * ranks[0..p) from ranks[r] to ranks[r+1] between two nodes whose members
 * each form one run of the ring carries k adapters' bytes at once, k the
 * smaller run: its bandwidth is k times the link's, at most a link inside
 * the node (every channel crosses the node's links too).  This returns that
 * factor, 1 for every other hop; ranks NULL: 0, 1, ..., p-1.  Ring
 * collectives (sl_coll_channels) use it in the engine and the predictions
 * alike. */
double sl_ring_stripes(const sl_cluster_config *cfg, const int *ranks, int p, int r);
/* The factor for a node-crossing hop of a ring of p between runs of ka and
 * kb members (the runs known already, as a mesh's rings, whose device ids
 * grow with the rank, have them). */
double sl_ring_stripes_runs(const sl_cluster_config *cfg, int p, int ka, int kb);
/* sl_ring_stripes on c's class figures as the run started (the tuned ones,
 * read under the lock the knobs take), so every device of a collective
 * stripes alike whatever knobs turn. */
double sl_cluster_ring_stripes(const sl_cluster *c, const int *ranks, int p, int r);

/* A device's ports.  Under realistic efficiency, on the full topology, a
 * device reaches the others of its node through one switch port (NVSwitch,
 * a PCIe slot) and other nodes through one network adapter, and a link's
 * bandwidth is all its port carries: the transfers of one exchange outside
 * a collective (a pipeline's sends to the next and the previous stage, say)
 * that go through the same port of a device share it, whether or not they
 * overlap in time.  sl_ports_shared says whether the rule applies to cfg
 * (not on the ideal machine or the ring topology: the closed forms'
 * independent links).  sl_port_share returns how many of peers[0..n)
 * device dev reaches through the port it reaches peers[i] by (peers[i]
 * counted), 1 where the rule does not apply.  A transfer runs at its link's
 * bandwidth over the larger of its sender's and its receiver's counts;
 * collectives post one send and one receive an exchange, so the rule
 * leaves them alone. */
int sl_ports_shared(const sl_cluster_config *cfg);
int sl_port_share(const sl_cluster_config *cfg, int dev, const int *peers, int n, int i);
/* Do a and b sit in the same node of a cluster so configured? */
int sl_cluster_config_same_node(const sl_cluster_config *cfg, int a, int b);

/* Live state of a link for the front end: bytes moved by the transfer in
 * flight and its size (0 when idle), and total bytes since the run began. */
typedef struct sl_link_state {
	uint64_t inflight_done, inflight_total, total;
} sl_link_state;
sl_link_state sl_cluster_link_state(const sl_cluster *c, int src, int dst);

/* Per-device results after (or during) a run. */
typedef struct sl_dev_stats {
	double clock; /* emulated time at the end of the device's program */
	double compute_s, comm_s, wait_s;
	double comm_side_s;    /* of comm_s, on a side stream (beside the compute) */
	double compute_side_s; /* of compute_s, on a side stream */
	double stream_wait_s;  /* the compute stream waiting for a side stream */
	double flops;
	uint64_t bytes_sent, bytes_received;
	uint64_t mem_current, mem_peak;
	double cpu_s;                       /* host CPU time spent in the device's compute */
	double io_s;                        /* emulated time reading and writing storage */
	uint64_t bytes_written, bytes_read; /* to and from storage */
} sl_dev_stats;
sl_dev_stats sl_cluster_dev_stats(const sl_cluster *c, int dev);
int sl_cluster_devices(const sl_cluster *c);
sl_trace *sl_cluster_trace(sl_cluster *c);

/* ---- on a device thread ---- */
int sl_dev_id(const sl_dev *d);
int sl_dev_node(const sl_dev *d);
sl_cluster *sl_dev_cluster(sl_dev *d);
double sl_dev_clock(const sl_dev *d);
/* Move the device's clock forward to t (never back), as idle time. */
void sl_dev_wait_until(sl_dev *d, double t);
/* Streams, as a GPU runs NCCL kernels beside its GEMMs: stream 0 computes;
 * collectives and transfers may run on the side streams.  The device's
 * clock is its current stream's.  sl_dev_stream makes s current: what
 * follows on a side stream starts when it is free and not before the
 * stream left has got to (it waits for what was issued before it, the data
 * it sends); back on the compute stream, from the compute stream's own
 * clock.
 * sl_dev_stream_wait makes the current stream wait for s (as a CUDA event),
 * the wait counted as stream_wait_s.  A compute kernel that runs while a
 * side stream is busy takes longer by the device's overlap_slowdown of the
 * time they share (sl_device_model; 0 on the ideal machine).  Every stream
 * starts at 0 in a run. */
#define SL_STREAMS 4
enum { SL_STREAM_COMPUTE, SL_STREAM_DP, SL_STREAM_MP, SL_STREAM_PP };
/* The extra time of a kernel of dt from t0 on stream `stream`, the side
 * streams busy over [busy[s], sclock[s]]: what the engine adds, and what
 * the prediction adds the same way. */
double sl_overlap_extra(const sl_cluster_config *cfg, int stream, const double *busy,
                        const double *sclock, double t0, double dt);
void sl_dev_stream(sl_dev *d, int s);
void sl_dev_stream_wait(sl_dev *d, int s);
/* An event: stream s's time now (what it has been given so far); waiting
 * for one makes the current stream wait for that much of it only. */
double sl_dev_stream_now(const sl_dev *d, int s);
void sl_dev_wait_event(sl_dev *d, double t);
int sl_dev_stream_of(const sl_dev *d);

/* Memory accounting: every buffer a device holds goes through these.  An
 * allocation past capacity fails with SL_EDEVMEM and a message naming the
 * device, what was asked, and what is free. */
void *sl_dev_alloc(sl_dev *d, size_t bytes, const char *what, sl_err *err);
void sl_dev_free(sl_dev *d, void *p, size_t bytes);
/* Account bytes without a host buffer (sizes only). */
int sl_dev_reserve(sl_dev *d, uint64_t bytes, const char *what, sl_err *err);
void sl_dev_release(sl_dev *d, uint64_t bytes);

/* Row-major C[m,n] = alpha * op(A) op(B) + beta * C with one real
 * cblas_sgemm call on this thread; the emulated clock advances by the
 * compute time of the timing mode; an event labelled label is recorded.
 * On a timing-only cluster nothing is computed and a, b, c may be NULL. */
/* What the device's next compute events are, in fields (a training step's
 * GEMM); NULL clears it. */
void sl_dev_set_work(sl_dev *d, const sl_ev_work *w);
int sl_dev_sgemm(sl_dev *d, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc,
                 const char *label, sl_err *err);
/* Account compute done outside BLAS (element-wise work): flops at the
 * device rate in model timing, the measured CPU time since mark otherwise.
 * mark comes from sl_dev_cpu_mark() taken before the work. */
double sl_dev_cpu_mark(void);
int sl_dev_compute(sl_dev *d, double flops, double cpu_mark, const char *label, sl_err *err);
/* Element-wise work that reads and writes `bytes` (at the precision's
 * element size): its memory time in realistic model timing (device.h),
 * nothing at all in ideal model timing, the CPU time since mark in
 * measured timing. */
int sl_dev_ew(sl_dev *d, double bytes, double cpu_mark, const char *label, sl_err *err);
/* The next GEMMs and element-wise kernels are each one of `batch`
 * identical ones fused in one batched kernel (attention's heads): each is
 * charged its share of that kernel's time.  1 (the default) for none. */
void sl_dev_set_batch(sl_dev *d, int batch);
/* The next products and element-wise kernels are parts of one fused
 * attention kernel (FlashAttention): in model timing the products run at
 * the device's fused-attention rate (sl_attn_s) with no launch of their
 * own, and the element-wise work stays on chip, costing nothing.  share
 * (0 to 1) is the part of each product the kernel executes, a causal
 * mask's skipped tiles left out (sl_attn_tile_share): its FLOPs, and in
 * model timing its time (the host computes the whole product). */
void sl_dev_set_fused(sl_dev *d, int on, double share);

/* Account bytes moved between the device and storage (a checkpoint chunk
 * the thread has just written or read for real): the clock advances by
 * bytes / bandwidth and a SL_EV_WRITE or SL_EV_READ event labelled label is
 * recorded, carrying io (the chunk's tensor and index; may be NULL). */
int sl_dev_storage(sl_dev *d, int write, uint64_t bytes, double bandwidth, const sl_ev_io *io,
                   const char *label, sl_err *err);

/* Tag the events this device records next (shown in the TUI and trace):
 * an operation id shared by the devices taking part, and a micro-batch
 * number (-1 for none). */
void sl_dev_set_op(sl_dev *d, int op_id, int microbatch);
/* The training step the device's next events belong to (from 1 in the
 * run; 0: none), for the step filter of sl_cluster_config.record. */
void sl_dev_set_step(sl_dev *d, int step);

/* Wall-clock barrier across all devices (no emulated time passes); for
 * benchmarks that time repeated operations. */
int sl_dev_wall_barrier(sl_dev *d);

#endif
