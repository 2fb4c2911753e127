/* SPDX-License-Identifier: MIT */
#include "preset.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"

#define GiB 1073741824.0

/* Figures are the vendors' published ones: dense (not sparse) BF16 tensor
 * throughput and FP32 (not TF32) throughput, memory size and bandwidth,
 * per-direction link bandwidth (NVLink's "900 GB/s" is both directions
 * together), one NIC per GPU between nodes.  Latencies are typical
 * small-message figures, not datasheet values.
 *
 * The GEMM efficiency (dm.gemm_frac) is the best measured BF16 matmul rate
 * over the peak: the "maximum achievable matmul FLOPS" (MAMF) table of
 * S. Bekman, Machine Learning Engineering, compute/accelerator/README.md
 * (torch.matmul, mean of 100 iterations after 50 warm-up, best shape of a
 * sweep).  The output tile (256 x 128) is cuBLAS's and CUTLASS's large
 * BF16 tile on Ampere and Hopper; the units are the SMs (CUs) of the
 * vendor's architecture whitepaper; k_half = 64 and the launch cost are
 * fitted to no end-to-end figure: see docs/validation.md for the GEMM
 * sweep they are checked against.
 *
 * The links' achievable shares: NVLink loses about 20% to NCCL's protocol
 * (S. Jeaugey, NVIDIA, nccl-tests issue 212: 370 GB/s of H100's 450 GB/s
 * line rate as ring bus bandwidth; nccl issue 1455 measures 365-370 GB/s on
 * 2 to 8 H100s; nccl issue 1712: close to 240 GB/s expected of A100's 300);
 * InfiniBand NDR reaches 46-48 GB/s of a NIC's 50 (nccl-tests issue 290).
 * The AMD, PCIe and HDR shares are assumed equal to those.
 *
 * Fused attention (dm.attn_frac): FlashAttention's forward and backward
 * rate over the peak at head dimension 128, long sequences, no mask, with
 * the FLOPs the kernels count (4 s^2 d a head forward, 2.5 times that
 * backward, its recomputation included) and fwd+bwd = 3.5 / (1/fwd +
 * 2.5/bwd): on H100, FlashAttention-3's 646 and 559 TFLOP/s at 8k tokens
 * (Shah et al. 2024, arXiv 2407.08608, figures 5 and 6, as read off the
 * charts), 581 TFLOP/s in all; on A100, FlashAttention-2's 203 TFLOP/s
 * forward and backward at 16k (Dao 2023, arXiv 2307.08691, figure 4, as
 * read off the chart).  H200 takes H100's (the same GH100 die); the others
 * have none measured and use their GEMM fraction (0).
 *
 * Device memory (dm.mem_frac): the share of the datasheet bandwidth a
 * streaming kernel reaches, measured as CUDA's p2pBandwidthLatencyTest
 * local copy (the matrices' diagonal, which counts the read and the write):
 * on HGX A100 SXM 80GB 1,562 to 1,608 GB/s, 1,593 on average over the five
 * GPUs shown, 78.1% of 2,039 (nccl-tests issue 100); on HGX H100 SXM 2,570
 * to 2,578 GB/s both ways, 2,575 on average, 76.9% of 3,350 (nccl issue
 * 1264; its one-way copies 2,475 to 2,515).  Other H100 copies have reached
 * more (cuda-samples issue 392: 2,959 GB/s on four H100 80GB; nvbandwidth's
 * copy-engine device_local_copy 1,519 GB/s copied, 3,038 read and written,
 * in Hugging Face's Smol Training Playbook); the presets take the one
 * method on both.  H200 takes H100's (the same GH100 die); the others have
 * none measured and use the datasheet figure (0). */
#define NV_DM(bw, frac, sms, launch, attn, mem)                                                    \
	{                                                                                          \
		(bw), (frac), (sms), 256, 128, 64, (launch), (attn), (mem), SL_OVERLAP_SLOWDOWN    \
	}
static const sl_preset presets[] = {
    {"h100",
     "NVIDIA H100 SXM5 80GB, NVLink 4 in the node, 400G InfiniBand NDR between nodes",
     989e12,
     67e12,
     80 * GiB,
     8,
     {450e9, 2e-6},
     {50e9, 5e-6},
     NV_DM(3.35e12, 0.803, 132, 2e-6, 0.588, 0.769),
     0.822,
     0.94,
     SL_PREC_BF16,
     SL_EFF_REALISTIC,
     "NVIDIA H100 Tensor Core GPU datasheet (989 TFLOP/s dense BF16, 67 TFLOP/s FP32, "
     "3.35 TB/s HBM3, 900 GB/s NVLink total); ConnectX-7 NDR 400 Gb/s; MAMF 794.5 TFLOP/s "
     "(80.3%, Bekman's ML Engineering table); 132 SMs (NVIDIA H100 whitepaper); fused "
     "attention 581 TFLOP/s forward and backward (58.8%: FlashAttention-3, Shah et al. 2024, "
     "arXiv 2407.08608, figures 5 and 6, head dimension 128, 8k tokens); device memory "
     "2,575 GB/s read and written by a local copy (76.9%: p2pBandwidthLatencyTest on HGX "
     "H100, nccl issue 1264)"},
    {"h200",
     "NVIDIA H200 SXM 141GB, NVLink 4 in the node, 400G InfiniBand NDR between nodes",
     989e12,
     67e12,
     141e9,
     8,
     {450e9, 2e-6},
     {50e9, 5e-6},
     NV_DM(4.8e12, 0.838, 132, 2e-6, 0.588, 0.769),
     0.822,
     0.94,
     SL_PREC_BF16,
     SL_EFF_REALISTIC,
     "NVIDIA H200 datasheet (989 TFLOP/s dense BF16, 67 TFLOP/s FP32, 141 GB HBM3e at "
     "4.8 TB/s, 900 GB/s NVLink total); GEMM efficiency: the GH200's MAMF, 828.6 TFLOP/s "
     "(83.8%, Bekman's ML Engineering table; the same GH100 die with HBM3e); fused attention: "
     "the H100's 58.8% (FlashAttention-3, arXiv 2407.08608); device memory: the H100's "
     "76.9% of its peak (p2pBandwidthLatencyTest, nccl issue 1264)"},
    {"b200",
     "NVIDIA B200 180GB, NVLink 5 in the node, 400G InfiniBand NDR between nodes",
     2250e12,
     75e12,
     180e9,
     8,
     {900e9, 2e-6},
     {50e9, 5e-6},
     NV_DM(8.0e12, 0.776, 148, 2e-6, 0, 0),
     0.822,
     0.94,
     SL_PREC_BF16,
     SL_EFF_REALISTIC,
     "NVIDIA HGX B200 datasheet (2.25 PFLOP/s dense BF16 and 75 TFLOP/s FP32 per GPU, 180 GB "
     "HBM3e at 8 TB/s, 1.8 TB/s NVLink total); MAMF 1745 TFLOP/s (77.6%, Bekman's ML "
     "Engineering); 148 SMs"},
    {"a100",
     "NVIDIA A100 SXM4 80GB, NVLink 3 in the node, 200G InfiniBand HDR between nodes",
     312e12,
     19.5e12,
     80 * GiB,
     8,
     {300e9, 2e-6},
     {25e9, 5e-6},
     NV_DM(2.039e12, 0.869, 108, 2e-6, 0.651, 0.781),
     0.8,
     0.94,
     SL_PREC_BF16,
     SL_EFF_REALISTIC,
     "NVIDIA A100 datasheet (312 TFLOP/s dense BF16, 19.5 TFLOP/s FP32, 2.04 TB/s HBM2e, "
     "600 GB/s NVLink total); ConnectX-6 HDR 200 Gb/s; MAMF 271.2 TFLOP/s (86.9%, Bekman's "
     "ML Engineering table); 108 SMs (NVIDIA A100 whitepaper); fused attention 203 TFLOP/s "
     "forward and backward (65.1%: FlashAttention-2, Dao 2023, arXiv 2307.08691, figure 4, "
     "head dimension 128, 16k tokens); device memory 1,593 GB/s read and written by a local "
     "copy (78.1%: p2pBandwidthLatencyTest on HGX A100 80GB, nccl-tests issue 100)"},
    {"mi300x",
     "AMD Instinct MI300X 192GB, Infinity Fabric in the node, 400G between nodes",
     1307e12,
     163.4e12,
     192e9,
     8,
     {448e9, 2e-6},
     {50e9, 5e-6},
     {5.3e12, 0.601, 304, 256, 256, 64, 2e-6, 0, 0, SL_OVERLAP_SLOWDOWN},
     0.8,
     0.94,
     SL_PREC_BF16,
     SL_EFF_REALISTIC,
     "AMD Instinct MI300X data sheet (1307 TFLOP/s dense BF16, 163.4 TFLOP/s FP32, 192 GB "
     "HBM3 at 5.3 TB/s, 896 GB/s peer-to-peer Infinity Fabric in all, 304 CUs); MAMF 781.9 "
     "TFLOP/s (60.1%, ROCm 6.2, Bekman's ML Engineering table)"},
    {"pcie",
     "NVIDIA L40S 48GB on PCIe Gen4 x16, no NVLink; 100G Ethernet between nodes",
     362e12,
     91.6e12,
     48 * GiB,
     8,
     {32e9, 10e-6},
     {12.5e9, 15e-6},
     NV_DM(864e9, 0.811, 142, 2e-6, 0, 0),
     0.8,
     0.94,
     SL_PREC_BF16,
     SL_EFF_REALISTIC,
     "NVIDIA L40S datasheet (362 TFLOP/s dense BF16, 91.6 TFLOP/s FP32, 864 GB/s GDDR6, PCIe "
     "Gen4 x16 64 GB/s both directions, 142 SMs); 100 Gb/s Ethernet; GEMM efficiency: no "
     "published MAMF, the A100 PCIe's 81.1% (Bekman's ML Engineering table) is assumed"},
    {"h100-pcie",
     "NVIDIA H100 PCIe 80GB without NVLink bridges, PCIe Gen5 x16; 200G between nodes",
     756e12,
     51e12,
     80 * GiB,
     8,
     {64e9, 8e-6},
     {25e9, 5e-6},
     NV_DM(2.0e12, 0.803, 114, 2e-6, 0, 0),
     0.8,
     0.94,
     SL_PREC_BF16,
     SL_EFF_REALISTIC,
     "NVIDIA H100 PCIe datasheet (756 TFLOP/s dense BF16, 51 TFLOP/s FP32, 2.0 TB/s HBM2e, "
     "PCIe Gen5 128 GB/s both directions, 114 SMs); GEMM efficiency: the H100 SXM's MAMF "
     "fraction (80.3%) is assumed"},
    {"host",
     "this machine: one core's measured sgemm rate, shared-memory copies between threads",
     0,
     0,
     2 * GiB,
     0,
     {5.5e9, 40e-6},
     {1e9, 100e-6},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
     1,
     1,
     SL_PREC_FP32,
     SL_EFF_IDEAL,
     "measured at start-up: single-thread OpenBLAS sgemm; copies ~5.5 GB/s out of cache; a "
     "cross-core wake-up ~40 us"},
    {NULL,
     NULL,
     0,
     0,
     0,
     0,
     {0, 0},
     {0, 0},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
     0,
     0,
     SL_PREC_FP32,
     SL_EFF_IDEAL,
     NULL},
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
	double rate =
	    cfg->precision == SL_PREC_FP32 && p->flops_fp32 > 0 ? p->flops_fp32 : p->flops;
	cfg->flops = rate > 0 ? rate : sl_host_flops();
	cfg->dm = p->dm;
	cfg->memory = (uint64_t)p->memory;
	cfg->intra = p->intra;
	cfg->inter = p->inter;
	if (cfg->efficiency == SL_EFF_REALISTIC) {
		if (p->intra_frac > 0)
			cfg->intra.bandwidth *= p->intra_frac;
		if (p->inter_frac > 0)
			cfg->inter.bandwidth *= p->inter_frac;
	}
}
