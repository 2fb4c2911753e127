/* SPDX-License-Identifier: MIT */
#include "device.h"

#include <math.h>
#include <string.h>

#include "units.h"

double sl_elem_bytes(const sl_cluster_config *cfg)
{
	return cfg->precision == SL_PREC_BF16 ? 2.0 : 4.0;
}

double sl_wire_scale(const sl_cluster_config *cfg)
{
	return sl_elem_bytes(cfg) / 4.0;
}

static int realistic(const sl_cluster_config *cfg)
{
	return cfg->efficiency == SL_EFF_REALISTIC;
}

/* The device memory's achievable bandwidth: the datasheet figure times the
 * measured share a streaming kernel reaches. */
static double achievable_bw(const sl_device_model *dm)
{
	return dm->mem_bw * (dm->mem_frac > 0 ? dm->mem_frac : 1);
}

double sl_gemm_s(const sl_cluster_config *cfg, double M, double N, double K, double batch)
{
	double flops = 2.0 * M * N * K * batch;
	if (!realistic(cfg))
		return flops / cfg->flops;
	const sl_device_model *dm = &cfg->dm;
	if (M <= 0 || N <= 0 || K <= 0 || batch <= 0)
		return dm->launch_s;
	double rate = cfg->flops * (dm->gemm_frac > 0 ? dm->gemm_frac : 1);
	if (dm->units > 0 && dm->tile_m > 0 && dm->tile_n > 0) {
		double tiles = ceil(M / dm->tile_m) * ceil(N / dm->tile_n) * batch;
		double waves = ceil(tiles / dm->units);
		rate *= tiles / (waves * dm->units);
	}
	if (dm->k_half > 0)
		rate *= K / (K + dm->k_half);
	double t = flops / rate;
	if (dm->mem_bw > 0) {
		double bytes = (M * K + K * N + M * N) * batch * sl_elem_bytes(cfg);
		double tm = bytes / achievable_bw(dm);
		if (tm > t)
			t = tm;
	}
	return dm->launch_s + t;
}

double sl_gemm_rate(const sl_cluster_config *cfg, double M, double N, double K, double batch)
{
	double t = sl_gemm_s(cfg, M, N, K, batch);
	return t > 0 ? 2.0 * M * N * K * batch / t : 0;
}

double sl_attn_s(const sl_cluster_config *cfg, double flops)
{
	if (!realistic(cfg))
		return flops / cfg->flops;
	const sl_device_model *dm = &cfg->dm;
	double f = dm->attn_frac > 0 ? dm->attn_frac : dm->gemm_frac > 0 ? dm->gemm_frac : 1;
	return flops / (cfg->flops * f);
}

double sl_mem_s(const sl_cluster_config *cfg, double bytes)
{
	if (!realistic(cfg))
		return 0;
	const sl_device_model *dm = &cfg->dm;
	return dm->launch_s + (dm->mem_bw > 0 ? bytes / achievable_bw(dm) : 0);
}

static const char *prec_names[SL_PREC_N] = {"fp32", "bf16"};
static const char *eff_names[SL_EFF_N] = {"ideal", "realistic"};

const char *sl_precision_name(sl_precision p)
{
	return p >= 0 && p < SL_PREC_N ? prec_names[p] : "?";
}

int sl_precision_parse(const char *s, sl_precision *out)
{
	int i = sl_name_index(prec_names, SL_PREC_N, s);
	if (i >= 0)
		*out = (sl_precision)i;
	return i < 0 ? -1 : 0;
}

const char *sl_efficiency_name(sl_efficiency e)
{
	return e >= 0 && e < SL_EFF_N ? eff_names[e] : "?";
}

int sl_efficiency_parse(const char *s, sl_efficiency *out)
{
	int i = sl_name_index(eff_names, SL_EFF_N, s);
	if (i >= 0)
		*out = (sl_efficiency)i;
	return i < 0 ? -1 : 0;
}
