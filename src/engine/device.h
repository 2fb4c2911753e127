/* SPDX-License-Identifier: MIT */
/* device.h - how long a kernel takes on an emulated device, in model
 * timing.
 *
 * Ideal efficiency (the closed-form machine): a GEMM takes its FLOPs over
 * the peak rate; element-wise work and kernel launches are free.
 *
 * Realistic efficiency, a roofline per kernel:
 *   GEMM:  launch + max(FLOPs / rate(M, N, K), bytes / memory bandwidth)
 *          rate = peak * gemm_frac * waves(M, N) * K / (K + k_half)
 *          waves = tiles / (ceil(tiles / units) * units), the share of the
 *          last wave of output tiles that is busy (tile quantisation)
 *   element-wise (bias, GeLU, softmax, residual, copy, loss, Adam):
 *          launch + bytes / memory bandwidth
 * where the memory bandwidth is the datasheet figure times the share a
 * streaming copy was measured to reach (mem_frac), bytes are what the
 * kernel reads and writes at the precision's
 * element size.  `batch` identical products fused in one batched kernel
 * (attention's heads) share one launch and fill the waves together.
 * Fused attention (FlashAttention): a head's products at peak * attn_frac,
 * its softmax on chip (free), one launch for all heads. */
#ifndef SL_DEVICE_H
#define SL_DEVICE_H

#include "cluster.h"

/* Bytes an element of activations, gradients and messages takes. */
double sl_elem_bytes(const sl_cluster_config *cfg);
/* Emulated bytes of n host fp32 bytes (messages: host buffers are fp32). */
double sl_wire_scale(const sl_cluster_config *cfg);

/* Seconds of `batch` products of M x K by K x N fused in one kernel. */
double sl_gemm_s(const sl_cluster_config *cfg, double M, double N, double K, double batch);
/* The rate that gives: FLOPs over sl_gemm_s. */
double sl_gemm_rate(const sl_cluster_config *cfg, double M, double N, double K, double batch);
/* Seconds of `flops` inside a fused attention kernel (FlashAttention: the
 * scores, softmax and weighted sum of a head in one kernel, the s x s
 * matrix never in device memory): at the device's fused-attention rate,
 * peak * attn_frac (ideal: the peak); the kernel's one launch is charged
 * apart. */
double sl_attn_s(const sl_cluster_config *cfg, double flops);
/* Seconds of one memory-bound kernel reading and writing `bytes`. */
double sl_mem_s(const sl_cluster_config *cfg, double bytes);

const char *sl_precision_name(sl_precision p);
int sl_precision_parse(const char *s, sl_precision *out);
const char *sl_efficiency_name(sl_efficiency e);
int sl_efficiency_parse(const char *s, sl_efficiency *out);

#endif
