/* SPDX-License-Identifier: MIT */
/* preset.h - real hardware, so emulated times are that hardware's. */
#ifndef SL_PRESET_H
#define SL_PRESET_H

#include "cluster.h"

#define SL_PRESET_DEFAULT "h100"

typedef struct sl_preset {
	const char *name;
	const char *title;
	double flops;        /* dense BF16 tensor-core FLOP/s per device */
	double memory;       /* bytes per device */
	int devices_per_node;
	sl_link_spec intra, inter;
	const char *source;
} sl_preset;

/* NULL-terminated table. */
const sl_preset *sl_presets(void);
const sl_preset *sl_preset_find(const char *name);
/* Copy the preset's device and link figures into cfg (device count and
 * topology are left alone).  The "host" preset measures this machine once. */
void sl_preset_apply(const sl_preset *p, sl_cluster_config *cfg);
/* This machine's single-thread sgemm rate, measured once (about 50 ms). */
double sl_host_flops(void);

#endif
