/* SPDX-License-Identifier: MIT */
#include "preset.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"

#define GiB 1073741824.0

/* Figures are the vendors' published ones: dense (not sparse) BF16 tensor
 * throughput, per-direction link bandwidth (NVLink's "900 GB/s" is both
 * directions together), one NIC per GPU between nodes.  Latencies are
 * typical small-message figures, not datasheet values. */
static const sl_preset presets[] = {
	{"h100", "NVIDIA H100 SXM5 80GB, NVLink 4 in the node, 400G InfiniBand NDR between nodes",
	 989e12, 80 * GiB, 8, {450e9, 2e-6}, {50e9, 5e-6},
	 "NVIDIA H100 Tensor Core GPU datasheet (989 TFLOP/s dense BF16, 900 GB/s NVLink total); "
	 "ConnectX-7 NDR 400 Gb/s"},
	{"a100", "NVIDIA A100 SXM4 80GB, NVLink 3 in the node, 200G InfiniBand HDR between nodes",
	 312e12, 80 * GiB, 8, {300e9, 2e-6}, {25e9, 5e-6},
	 "NVIDIA A100 datasheet (312 TFLOP/s dense BF16, 600 GB/s NVLink total); ConnectX-6 HDR 200 Gb/s"},
	{"pcie", "NVIDIA L40S 48GB on PCIe Gen4 x16, no NVLink; 100G Ethernet between nodes",
	 362e12, 48 * GiB, 8, {32e9, 10e-6}, {12.5e9, 15e-6},
	 "NVIDIA L40S datasheet (362 TFLOP/s dense BF16, PCIe Gen4 x16 64 GB/s both directions); "
	 "100 Gb/s Ethernet"},
	{"h100-pcie", "NVIDIA H100 PCIe 80GB without NVLink bridges, PCIe Gen5 x16; 200G between nodes",
	 756e12, 80 * GiB, 8, {64e9, 8e-6}, {25e9, 5e-6},
	 "NVIDIA H100 PCIe datasheet (756 TFLOP/s dense BF16, PCIe Gen5 128 GB/s both directions)"},
	{"host", "this machine: one core's measured sgemm rate, shared-memory copies between threads",
	 0, 2 * GiB, 0, {5.5e9, 40e-6}, {1e9, 100e-6},
	 "measured at start-up: single-thread OpenBLAS sgemm; copies ~5.5 GB/s out of cache; a "
	 "cross-core wake-up ~40 us"},
	{NULL, NULL, 0, 0, 0, {0, 0}, {0, 0}, NULL},
};

const sl_preset *sl_presets(void)
{
	return presets;
}

const sl_preset *sl_preset_find(const char *name)
{
	for (const sl_preset *p = presets; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

static double host_flops;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static double now_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void measure_host(void)
{
	enum { N = 384 };
	float *a = sl_host_blas_ready(NULL) ? NULL : malloc(sizeof(float) * N * N * 3);
	if (!a) {
		host_flops = 30e9;
		return;
	}
	float *b = a + N * N, *c = b + N * N;
	for (int i = 0; i < N * N; i++) {
		a[i] = (float)(i % 7) * 0.25f;
		b[i] = (float)(i % 5) * 0.5f;
	}
	double best = 0;
	for (int rep = 0; rep < 4; rep++) {
		double t0 = now_cpu();
		sl_host_sgemm(0, 0, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
		double dt = now_cpu() - t0;
		double r = dt > 0 ? 2.0 * N * N * N / dt : 0;
		if (r > best)
			best = r;
	}
	free(a);
	host_flops = best > 0 ? best : 30e9;
}

double sl_host_flops(void)
{
	pthread_once(&host_once, measure_host);
	return host_flops;
}

void sl_preset_apply(const sl_preset *p, sl_cluster_config *cfg)
{
	if (!p)
		return;
	cfg->flops = p->flops > 0 ? p->flops : sl_host_flops();
	cfg->memory = (uint64_t)p->memory;
	cfg->intra = p->intra;
	cfg->inter = p->inter;
}
