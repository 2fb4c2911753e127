/* SPDX-License-Identifier: MIT */
/* bench_engine.c - the engine's benchmarks (make bench; see bench/run.sh).
 *
 * Each subcommand prints plain lines "KIND field field ...", which run.sh
 * turns into bench/RESULTS.md; nothing here judges a figure against its
 * target.  Wall-clock figures need a quiet machine, and are medians or the
 * best of a few repetitions as each section says.
 *
 *   info                         the machine: CPU, cores, OpenBLAS core
 *   throttle REPS                paced transfers at 1 MB/s .. 1 GB/s, slowdown 1
 *   gemm REPS M K N DEVICES      a device's sharded sgemm against a bare one
 *   coll MIN MAX SECONDS REPS P...  unpaced collectives, memcpy, cross-core copy
 *   memory DEVICES BYTES         peak RSS of an all-reduce over many devices
 *   time RUNS CMD ARGS...        wall time of a whole process (start-up) */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "cluster.h"
#include "coll.h"
#include "gemm.h"
#include "trace.h"
#include "xfer.h"

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double max_of(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "bench_engine: cannot allocate %zu bytes\n", n);
		exit(1);
	}
	return p;
}

static sl_cluster *make_cluster(int devices, double bw, double slowdown, sl_timing timing,
                                uint64_t memory)
{
	sl_cluster_config cfg;
	sl_cluster_config_default(&cfg);
	cfg.devices = devices;
	cfg.devices_per_node = 0;
	cfg.intra.bandwidth = cfg.inter.bandwidth = bw;
	cfg.intra.latency = cfg.inter.latency = 0;
	cfg.slowdown = slowdown;
	cfg.timing = timing;
	cfg.memory = memory;
	sl_err err = {0};
	sl_cluster *c = sl_cluster_create(&cfg, &err);
	if (!c) {
		fprintf(stderr, "bench_engine: %s\n", err.msg);
		exit(1);
	}
	return c;
}

static void run_or_die(sl_cluster *c, sl_program prog, void *arg)
{
	sl_err err = {0};
	if (sl_cluster_run(c, prog, arg, &err) != SL_OK) {
		fprintf(stderr, "bench_engine: %s\n", err.msg);
		exit(1);
	}
}

/* ---- info ---- */

static int cmd_info(void)
{
	char line[512], cpu[256] = "unknown";
	FILE *f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "model name", 10) == 0) {
			char *v = strchr(line, ':');
			if (v) {
				v += strspn(v + 1, " \t") + 1;
				v[strcspn(v, "\n")] = 0;
				snprintf(cpu, sizeof cpu, "%s", v);
			}
			break;
		}
	if (f)
		fclose(f);
	double load[3] = {0, 0, 0};
	getloadavg(load, 3);
	printf("info cpu %s\n", cpu);
	printf("info cores %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	printf("info openblas_core %s\n", openblas_get_corename());
	printf("info openblas_config %s\n", openblas_get_config());
	printf("info openblas_threads %d\n", openblas_get_num_threads());
	printf("info load %.2f %.2f %.2f\n", load[0], load[1], load[2]);
	return 0;
}

/* ---- throttle: one paced transfer from device 0 to device 1 ---- */

struct xfer_job {
	size_t bytes;
	char *src, *dst;
};

static int xfer_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct xfer_job *j = arg;
	if (sl_dev_id(d) == 0)
		return sl_send(d, 1, j->src, j->bytes, "bench send", err);
	return sl_recv(d, 0, j->dst, j->bytes, "bench recv", err);
}

/* Wall seconds from the start of the run (the pacing origin) until the
 * receiver had the last byte, from the trace. */
static double recv_end_wall(sl_cluster *c)
{
	sl_snapshot s;
	if (sl_trace_snapshot(sl_cluster_trace(c), &s) != SL_OK) {
		fprintf(stderr, "bench_engine: cannot read the trace\n");
		exit(1);
	}
	double w = -1;
	for (size_t i = 0; i < s.n; i++)
		if (s.ev[i].dev == 1 && s.ev[i].kind == SL_EV_RECV)
			w = s.ev[i].w1;
	sl_snapshot_free(&s);
	return w;
}

static int cmd_throttle(int reps)
{
	static const double rates[] = {1e6, 10e6, 100e6, 500e6, 1e9};
	const size_t cap = (size_t)64 << 20;
	char *src = xmalloc(cap), *dst = xmalloc(cap);
	memset(src, 1, cap);
	memset(dst, 0, cap);
	for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
		/* 64 MiB, or 2 seconds' worth when that is less. */
		size_t bytes = (size_t)(rates[r] * 2.0);
		if (bytes > cap)
			bytes = cap;
		bytes &= ~(size_t)3;
		double ratio[16] = {0}, wall[16] = {0};
		reps = reps < 1 ? 1 : reps > 16 ? 16 : reps;
		for (int i = 0; i < reps; i++) {
			sl_cluster *c =
			    make_cluster(2, rates[r], 1.0, SL_TIMING_MODEL, (uint64_t)1 << 30);
			struct xfer_job j = {bytes, src, dst};
			run_or_die(c, xfer_prog, &j);
			wall[i] = recv_end_wall(c);
			ratio[i] = (double)bytes / wall[i] / rates[r];
			sl_cluster_destroy(c);
		}
		double lo = ratio[0], hi = ratio[0];
		for (int i = 1; i < reps; i++) {
			lo = ratio[i] < lo ? ratio[i] : lo;
			hi = ratio[i] > hi ? ratio[i] : hi;
		}
		double med_wall = median(wall, reps);
		printf("throttle %.0f %zu %d %.6f %.6f %.6f %.6f\n", rates[r], bytes, reps,
		       med_wall, median(ratio, reps), lo, hi);
		fflush(stdout);
	}
	free(src);
	free(dst);
	return 0;
}

/* ---- gemm: device CPU time against a bare cblas_sgemm ---- */

/* The shard a device computes, prepared as gemm.c prepares it: inputs copied
 * into fresh buffers, the output freshly allocated and untouched. */
static double bare_sgemm(int m, int n, int k)
{
	size_t a_n = (size_t)m * k, b_n = (size_t)k * n, c_n = (size_t)m * n;
	float *a0 = xmalloc(a_n * sizeof(float)), *b0 = xmalloc(b_n * sizeof(float));
	sl_fill_random(a0, a_n, 11);
	sl_fill_random(b0, b_n, 12);
	float *a = xmalloc(a_n * sizeof(float)), *b = xmalloc(b_n * sizeof(float));
	float *c = xmalloc(c_n * sizeof(float));
	memcpy(a, a0, a_n * sizeof(float));
	memcpy(b, b0, b_n * sizeof(float));
	double t0 = thread_cpu_now();
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c,
	            n);
	double dt = thread_cpu_now() - t0;
	free(a0);
	free(b0);
	free(a);
	free(b);
	free(c);
	return dt;
}

struct bare_job {
	int m, n, k;
	double cpu;
};

static void *bare_thread(void *arg)
{
	struct bare_job *j = arg;
	j->cpu = bare_sgemm(j->m, j->n, j->k);
	return NULL;
}

/* The same shard on t plain threads at once, as the devices run: what the
 * machine's sharing of cores and caches costs, without the engine. */
static double bare_concurrent(int t, int m, int n, int k)
{
	pthread_t th[SL_MAX_DEVICES];
	struct bare_job j[SL_MAX_DEVICES];
	int started = 0;
	for (int i = 0; i < t; i++) {
		j[i] = (struct bare_job){m, n, k, 0};
		if (pthread_create(&th[i], NULL, bare_thread, &j[i]) != 0)
			break;
		started++;
	}
	double sum = 0;
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		sum += j[i].cpu;
	}
	if (started < t) {
		fprintf(stderr, "bench_engine: cannot start threads\n");
		exit(1);
	}
	return sum / t;
}

static int cmd_gemm(int reps, int m, int k, int n, int t)
{
	if (reps > 16)
		reps = 16;
	for (int split = SL_SPLIT_COL; split <= SL_SPLIT_ROW; split++) {
		double dev[16] = {0}, bare[16] = {0}, conc[16] = {0}, lo = 1e300, hi = 0,
		       err_max = 0;
		/* Run -1 is a warm-up: OpenBLAS allocates and first touches its
		 * per-call buffers once per process, which no later call pays. */
		for (int i = -1; i < reps; i++) {
			sl_cluster *c =
			    make_cluster(t, 100e9, 0, SL_TIMING_MEASURED, (uint64_t)1 << 34);
			sl_gemm_spec s = {(sl_split)split, m, k, n, SL_ALGO_RING, 1};
			sl_gemm_result res;
			sl_err err = {0};
			if (sl_gemm_run(c, &s, &res, &err) != SL_OK) {
				fprintf(stderr, "bench_engine: %s\n", err.msg);
				return 1;
			}
			double sum = 0;
			for (int d = 0; d < t && i >= 0; d++) {
				double cpu = sl_cluster_dev_stats(c, d).cpu_s;
				sum += cpu;
				lo = cpu < lo ? cpu : lo;
				hi = cpu > hi ? cpu : hi;
			}
			err_max = res.max_rel_error > err_max ? res.max_rel_error : err_max;
			sl_cluster_destroy(c);
			/* Device 0's shard shape (the largest when uneven). */
			int bn = split == SL_SPLIT_COL ? n / t + (n % t > 0) : n;
			int bk = split == SL_SPLIT_ROW ? k / t + (k % t > 0) : k;
			double b = bare_sgemm(m, bn, bk), bc = bare_concurrent(t, m, bn, bk);
			if (i >= 0) {
				dev[i] = sum / t;
				bare[i] = b;
				conc[i] = bc;
			}
		}
		int sm = m, sn = split == SL_SPLIT_COL ? n / t + (n % t > 0) : n;
		int sk = split == SL_SPLIT_ROW ? k / t + (k % t > 0) : k;
		double dmed = median(dev, reps), bmed = median(bare, reps);
		printf("gemm %s %d %d %d %d %d %d %d %d %.6f %.6f %.6f %.6f %.3e %.6f\n",
		       sl_split_name((sl_split)split), m, k, n, t, sm, sk, sn, reps, dmed, lo, hi,
		       bmed, err_max, median(conc, reps));
		fflush(stdout);
	}
	return 0;
}

/* ---- coll: unpaced collectives, timed inside one run ---- */

static double bus_factor(sl_coll_op op, int p)
{
	return op == SL_COLL_ALLREDUCE ? 2.0 * (p - 1) / p : (double)(p - 1) / p;
}

/* One op and size in one run: a warm-up, one timed call to size the loops,
 * then reps loops of about `seconds`, each between wall barriers. */
struct coll_job {
	sl_coll_op op;
	size_t count;
	float **bufs; /* one per device, allocated and touched once per p */
	double seconds;
	int reps, iters, nrep;
	double elapsed[16];
};

static int coll_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct coll_job *j = arg;
	int id = sl_dev_id(d), p = sl_cluster_devices(sl_dev_cluster(d));
	sl_group g = sl_group_all(p);
	float *buf = j->bufs[id];
	int rc = sl_coll_run(d, &g, j->op, buf, j->count, SL_ALGO_RING, err);
	if (!rc)
		rc = sl_dev_wall_barrier(d);
	double t0 = wall_now();
	if (!rc)
		rc = sl_coll_run(d, &g, j->op, buf, j->count, SL_ALGO_RING, err);
	if (!rc)
		rc = sl_dev_wall_barrier(d);
	if (!rc && id == 0) {
		double dt = wall_now() - t0;
		int it = dt > 0 ? (int)(j->seconds / dt) : 1000;
		j->iters = it < 1 ? 1 : it > 1000 ? 1000 : it;
		/* One call longer than a loop: an overloaded machine; one loop
		 * keeps the sweep short. */
		j->nrep = dt > j->seconds ? 1 : j->reps;
	}
	if (!rc)
		rc = sl_dev_wall_barrier(d);
	for (int r = 0; !rc && r < j->nrep; r++) {
		t0 = wall_now();
		for (int i = 0; !rc && i < j->iters; i++)
			rc = sl_coll_run(d, &g, j->op, buf, j->count, SL_ALGO_RING, err);
		if (!rc)
			rc = sl_dev_wall_barrier(d);
		if (!rc && id == 0)
			j->elapsed[r] = wall_now() - t0;
	}
	return rc;
}

/* Single-thread memcpy between two touched buffers of `bytes`: like the
 * collectives, loops of about `seconds`, the best of reps loops. */
static double memcpy_bw(size_t bytes, double seconds, int reps)
{
	char *a = xmalloc(bytes), *b = xmalloc(bytes);
	memset(a, 1, bytes);
	memset(b, 2, bytes);
	double t0 = wall_now();
	memcpy(b, a, bytes);
	double one = wall_now() - t0, best = 0;
	int iters = one > 0 ? (int)(seconds / one) : 1000;
	iters = iters < 1 ? 1 : iters > 100000 ? 100000 : iters;
	for (int r = 0; r < reps; r++) {
		t0 = wall_now();
		for (int i = 0; i < iters; i++)
			memcpy(i % 2 ? a : b, i % 2 ? b : a, bytes);
		double bw = (double)bytes * iters / (wall_now() - t0);
		best = bw > best ? bw : best;
	}
	free(a);
	free(b);
	return best;
}

/* Two plain threads, no engine: each writes its own buffer, then copies the
 * other's, freshly written, into a second buffer of its own, a barrier after
 * each phase.  Every byte a ring step moves was just written by another
 * core, so this copy rate, not memcpy's, bounds a step on this machine. */
struct xcore {
	float *x[2], *y[2];
	size_t bytes;
	int iters, reps;
	pthread_barrier_t bar;
	double best;
};

struct xcore_arg {
	struct xcore *xc;
	int id;
};

static void *xcore_rank(void *arg)
{
	struct xcore_arg *a = arg;
	struct xcore *xc = a->xc;
	int id = a->id;
	float *mine = xc->x[id];
	size_t n = xc->bytes / sizeof(float);
	for (int r = 0; r < xc->reps; r++) {
		double copy = 0;
		for (int i = 0; i < xc->iters; i++) {
			for (size_t k = 0; k < n; k++)
				mine[k] += 1.0f;
			pthread_barrier_wait(&xc->bar);
			double t0 = wall_now();
			memcpy(xc->y[id], xc->x[1 - id], xc->bytes);
			pthread_barrier_wait(&xc->bar);
			copy += wall_now() - t0;
		}
		double bw = (double)xc->bytes * xc->iters / copy;
		if (id == 0 && bw > xc->best)
			xc->best = bw;
	}
	return NULL;
}

static double xcore_bw(size_t bytes, double seconds, int reps)
{
	struct xcore xc;
	memset(&xc, 0, sizeof xc);
	xc.bytes = bytes / sizeof(float) * sizeof(float);
	for (int r = 0; r < 2; r++) {
		xc.x[r] = xmalloc(xc.bytes);
		xc.y[r] = xmalloc(xc.bytes);
		memset(xc.x[r], 0, xc.bytes);
		memset(xc.y[r], 0, xc.bytes);
	}
	/* Size the loops from one copy; the write phase takes about as long. */
	double t0 = wall_now();
	memcpy(xc.y[0], xc.x[1], xc.bytes);
	double one = 2 * (wall_now() - t0);
	xc.iters = one > 0 ? (int)(seconds / one) : 1000;
	xc.iters = xc.iters < 2 ? 2 : xc.iters > 10000 ? 10000 : xc.iters;
	xc.reps = reps;
	pthread_barrier_init(&xc.bar, NULL, 2);
	pthread_t th;
	struct xcore_arg a0 = {&xc, 0}, a1 = {&xc, 1};
	if (pthread_create(&th, NULL, xcore_rank, &a1) != 0) {
		fprintf(stderr, "bench_engine: cannot start a thread\n");
		exit(1);
	}
	xcore_rank(&a0);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&xc.bar);
	for (int r = 0; r < 2; r++) {
		free(xc.x[r]);
		free(xc.y[r]);
	}
	return xc.best;
}

static int cmd_coll(size_t lo, size_t hi, double seconds, int reps, const int *ps, int nps)
{
	static const sl_coll_op ops[] = {SL_COLL_ALLREDUCE, SL_COLL_ALLGATHER,
	                                 SL_COLL_REDUCESCATTER};
	if (reps > 16)
		reps = 16;
	for (size_t b = lo; b <= hi; b *= 2) {
		printf("memcpy %zu %.6e\n", b, memcpy_bw(b, seconds, reps));
		printf("xcore %zu %.6e\n", b, xcore_bw(b, seconds, reps));
		fflush(stdout);
	}
	for (int pi = 0; pi < nps; pi++) {
		int p = ps[pi];
		sl_cluster *c = make_cluster(p, 100e9, 0, SL_TIMING_MODEL, (uint64_t)1 << 34);
		/* Host buffers touched once: this machine takes seconds to fault
		 * in fresh pages, which would swamp the sweep. */
		float *bufs[SL_MAX_DEVICES];
		for (int r = 0; r < p; r++) {
			bufs[r] = xmalloc(hi);
			for (size_t i = 0; i < hi / sizeof(float); i++)
				bufs[r][i] = (float)((i + (size_t)r) % 7);
		}
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
			for (size_t b = lo; b <= hi; b *= 2) {
				/* Whole blocks per rank, as mpi_coll.c does. */
				size_t count = b / sizeof(float);
				count -= count % (size_t)p;
				struct coll_job j = {ops[o], count, bufs, seconds, reps, 0, 0, {0}};
				run_or_die(c, coll_prog, &j);
				double bw[16] = {0}, tm[16] = {0};
				for (int r = 0; r < j.nrep; r++) {
					tm[r] = j.elapsed[r] / j.iters;
					bw[r] = (double)count * sizeof(float) / tm[r] *
					        bus_factor(ops[o], p);
				}
				/* Best of the loops: the machine is shared, and the noise
				 * only ever slows a loop down. */
				printf("shardlab %s %d %zu %d %.9f %.6e %.6e\n",
				       sl_coll_op_name(ops[o]), p, b, j.iters, median(tm, j.nrep),
				       max_of(bw, j.nrep), median(bw, j.nrep));
				fflush(stdout);
			}
		for (int r = 0; r < p; r++)
			free(bufs[r]);
		sl_cluster_destroy(c);
	}
	return 0;
}

/* ---- memory: peak RSS of an all-reduce over many devices ---- */

struct mem_job {
	size_t count;
	float expect[17];
	int bad[SL_MAX_DEVICES];
};

static float mem_val(int rank, size_t i)
{
	return (float)((int)((i * 7 + (size_t)rank * 13) % 17) - 8);
}

static int mem_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct mem_job *j = arg;
	int id = sl_dev_id(d), p = sl_cluster_devices(sl_dev_cluster(d));
	sl_group g = sl_group_all(p);
	size_t bytes = j->count * sizeof(float);
	float *buf = sl_dev_alloc(d, bytes, "all-reduce buffer", err);
	if (!buf)
		return err->code;
	for (size_t i = 0; i < j->count; i++)
		buf[i] = mem_val(id, i);
	int rc = sl_allreduce(d, &g, buf, j->count, SL_ALGO_RING, err);
	/* Small integers sum exactly, so every element must match. */
	for (size_t i = 0; !rc && i < j->count; i++)
		if (buf[i] != j->expect[i % 17]) {
			j->bad[id] = 1;
			break;
		}
	sl_dev_free(d, buf, bytes);
	return rc;
}

static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static int cmd_memory(int p, size_t bytes)
{
	struct mem_job *j = calloc(1, sizeof *j);
	if (!j)
		return 1;
	j->count = bytes / sizeof(float);
	for (int k = 0; k < 17; k++) {
		double s = 0;
		for (int r = 0; r < p; r++)
			s += mem_val(r, (size_t)k);
		j->expect[k] = (float)s;
	}
	sl_cluster *c = make_cluster(p, 100e9, 0, SL_TIMING_MODEL, (uint64_t)bytes + (1u << 20));
	long before = status_kib("VmHWM");
	double t0 = wall_now();
	run_or_die(c, mem_prog, j);
	double dt = wall_now() - t0;
	int bad = 0;
	uint64_t held = 0;
	for (int d = 0; d < p; d++) {
		bad |= j->bad[d];
		held += sl_cluster_dev_stats(c, d).mem_peak;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	long hwm = status_kib("VmHWM");
	printf("memory %d %zu %" PRIu64 " %ld %ld %ld %.3f %s\n", p, bytes, held, before * 1024,
	       hwm * 1024, ru.ru_maxrss * 1024, dt, bad ? "wrong" : "correct");
	sl_cluster_destroy(c);
	free(j);
	return bad;
}

/* ---- time: wall time of a whole process, when hyperfine is missing ---- */

static int cmd_time(int runs, char **argv)
{
	double t[64] = {0};
	runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
	for (int i = -2; i < runs; i++) { /* two warm-up runs */
		double t0 = wall_now();
		pid_t pid = fork();
		if (pid == 0) {
			if (!freopen("/dev/null", "w", stdout))
				_exit(127);
			execvp(argv[0], argv);
			_exit(127);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "bench_engine: %s failed\n", argv[0]);
			return 1;
		}
		if (i >= 0)
			t[i] = wall_now() - t0;
	}
	double lo = t[0];
	for (int i = 1; i < runs; i++)
		lo = t[i] < lo ? t[i] : lo;
	printf("time %d %.6f %.6f\n", runs, median(t, runs), lo);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: bench_engine info | throttle REPS | gemm REPS M K N DEVICES |\n"
	        "       coll MIN_BYTES MAX_BYTES SECONDS REPS P... | memory DEVICES BYTES |\n"
	        "       time RUNS CMD [ARGS...]\n");
}

int main(int argc, char **argv)
{
	openblas_set_num_threads(1);
	if (argc >= 2 && strcmp(argv[1], "info") == 0)
		return cmd_info();
	if (argc == 3 && strcmp(argv[1], "throttle") == 0)
		return cmd_throttle(atoi(argv[2]) > 0 ? atoi(argv[2]) : 1);
	if (argc == 7 && strcmp(argv[1], "gemm") == 0) {
		int reps = atoi(argv[2]), m = atoi(argv[3]), k = atoi(argv[4]), n = atoi(argv[5]);
		int t = atoi(argv[6]);
		if (reps > 0 && m > 0 && k >= t && n >= t && t > 0 && t <= SL_MAX_DEVICES)
			return cmd_gemm(reps, m, k, n, t);
	}
	if (argc >= 7 && strcmp(argv[1], "coll") == 0) {
		size_t lo = strtoull(argv[2], NULL, 10), hi = strtoull(argv[3], NULL, 10);
		double sec = atof(argv[4]);
		int reps = atoi(argv[5]), ps[16], nps = 0,
		    ok = lo >= 256 && hi >= lo && sec > 0 && reps > 0;
		for (int i = 6; i < argc && nps < 16; i++) {
			ps[nps] = atoi(argv[i]);
			ok &= ps[nps] >= 1 && ps[nps] <= SL_MAX_DEVICES;
			nps++;
		}
		if (ok)
			return cmd_coll(lo, hi, sec, reps, ps, nps);
	}
	if (argc == 4 && strcmp(argv[1], "memory") == 0) {
		int p = atoi(argv[2]);
		size_t bytes = strtoull(argv[3], NULL, 10);
		if (p >= 1 && p <= SL_MAX_DEVICES && bytes >= sizeof(float) * (size_t)p)
			return cmd_memory(p, bytes);
	}
	if (argc >= 4 && strcmp(argv[1], "time") == 0 && atoi(argv[2]) > 0)
		return cmd_time(atoi(argv[2]), argv + 3);
	usage();
	return 2;
}
