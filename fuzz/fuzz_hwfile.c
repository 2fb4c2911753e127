/* SPDX-License-Identifier: MIT */
/* fuzz_hwfile.c - libFuzzer harness: hardware and model files
 * (shardlab-hardware(5)) are untrusted input.  Each input is read as a
 * hardware file and as a model file; one that is accepted must come back
 * the same through the writer. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hwfile.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The rule for figures (issue 39): normal and finite, or +0. */
static int figure_ok(double v)
{
	return (v == 0 && !signbit(v)) || (isfinite(v) && isnormal(v));
}

static int figures_ok(const sl_preset *p)
{
	const double v[] = {p->flops,           p->flops_fp32,    p->memory,
	                    p->intra.bandwidth, p->intra.latency, p->inter.bandwidth,
	                    p->inter.latency,   p->intra_frac,    p->inter_frac,
	                    p->dm.mem_bw,       p->dm.gemm_frac,  p->dm.k_half,
	                    p->dm.launch_s,     p->dm.attn_frac,  p->dm.mem_frac};
	for (size_t i = 0; i < sizeof v / sizeof *v; i++)
		if (!figure_ok(v[i]))
			return 0;
	/* The rule for text from any file. */
	unsigned cp;
	return sl_text_check(p->title, strlen(p->title), &cp) == strlen(p->title) &&
	       sl_text_check(p->source, strlen(p->source), &cp) == strlen(p->source);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!j)
		return 0;
	sl_err err = {0};
	sl_preset p, q;
	if (sl_hw_from_json(j, "fuzz.json", &p, &err) == SL_OK) {
		if (!figures_ok(&p))
			abort();
		json_t *back = sl_hw_to_json(&p);
		char *s = sl_json_dump_exact(back);
		json_t *again = s ? json_loads(s, 0, NULL) : NULL;
		if (!again || sl_hw_from_json(again, "back.json", &q, &err) != SL_OK)
			abort();
		if (strcmp(p.name, q.name) || strcmp(p.title, q.title) ||
		    strcmp(p.source, q.source) || p.flops != q.flops ||
		    p.flops_fp32 != q.flops_fp32 || p.memory != q.memory ||
		    p.devices_per_node != q.devices_per_node || memcmp(&p.dm, &q.dm, sizeof p.dm) ||
		    memcmp(&p.intra, &q.intra, sizeof p.intra) ||
		    memcmp(&p.inter, &q.inter, sizeof p.inter) || p.intra_frac != q.intra_frac ||
		    p.inter_frac != q.inter_frac || p.precision != q.precision ||
		    p.efficiency != q.efficiency)
			abort();
		sl_hw_free_strings(&q);
		sl_hw_free_strings(&p);
		json_decref(again);
		json_decref(back);
		free(s);
	}
	sl_model_file m, n;
	if (sl_model_file_from_json(j, "fuzz.json", &m, &err) == SL_OK) {
		json_t *back = sl_model_file_to_json(&m);
		if (sl_model_file_from_json(back, "back.json", &n, &err) != SL_OK ||
		    memcmp(&m, &n, sizeof m))
			abort();
		json_decref(back);
	}
	json_decref(j);
	return 0;
}
