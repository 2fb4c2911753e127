/* SPDX-License-Identifier: MIT */
/* preset.h - real hardware, so emulated times are that hardware's. */
#ifndef SL_PRESET_H
#define SL_PRESET_H

#include "cluster.h"

#define SL_PRESET_DEFAULT "h100"

typedef struct sl_preset {
	const char *name;
	const char *title;
	double flops;      /* dense BF16 tensor-core FLOP/s per device */
	double flops_fp32; /* FP32 (not TF32) FLOP/s per device */
	double memory;     /* bytes per device */
	int devices_per_node;
	sl_link_spec intra, inter;
	sl_device_model dm; /* memory bandwidth, GEMM efficiency, launch cost */
	/* The share of a link's line rate collectives reach (nccl-tests' bus
	 * bandwidth over the line rate), inside and between nodes; applied to
	 * the bandwidths under realistic efficiency. */
	double intra_frac, inter_frac;
	sl_precision precision;   /* the default: bf16 on accelerators, fp32 on the host */
	sl_efficiency efficiency; /* the default: realistic on accelerators, ideal on the host */
	const char *source;
} sl_preset;

/* NULL-terminated table. */
const sl_preset *sl_presets(void);
const sl_preset *sl_preset_find(const char *name);
/* Copy the preset's device and link figures into cfg (device count,
 * topology, precision and efficiency are left alone): the compute rate is
 * the one of cfg->precision, and under realistic efficiency the links run
 * at their achievable share of the line rate.  The "host" preset measures this machine once. */
void sl_preset_apply(const sl_preset *p, sl_cluster_config *cfg);
/* This machine's single-thread sgemm rate, measured once (about 50 ms). */
double sl_host_flops(void);

/* A kernel running beside communication kernels: 18.9% slower on average
 * over the time they share, as Lee et al. 2025 measured GPT and Llama
 * layers on 4 A100s, H100s, MI250s and MI210s ("Characterizing Compute-
 * Communication Overlap in GPU-Accelerated Distributed Deep Learning",
 * arXiv 2507.03114, abstract: an average slowdown of 18.9%, at most 40%);
 * every preset and hardware file takes it. */
#define SL_OVERLAP_SLOWDOWN 0.189

#endif
