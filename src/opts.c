/* SPDX-License-Identifier: MIT */
/* opts.c - the scenario options shared by the headless commands. */
#include "opts.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "hwfile.h"
#include "preset.h"
#include "units.h"

const struct option sl_opts_cluster[] = {
	{"devices", required_argument, NULL, SL_OPT_DEVICES},
	{"devices-per-node", required_argument, NULL, SL_OPT_DEVICES_PER_NODE},
	{"topology", required_argument, NULL, SL_OPT_TOPOLOGY},
	{"preset", required_argument, NULL, SL_OPT_PRESET},
	{"hardware", required_argument, NULL, SL_OPT_HARDWARE},
	{"bandwidth", required_argument, NULL, SL_OPT_BANDWIDTH},
	{"latency", required_argument, NULL, SL_OPT_LATENCY},
	{"inter-bandwidth", required_argument, NULL, SL_OPT_INTER_BANDWIDTH},
	{"inter-latency", required_argument, NULL, SL_OPT_INTER_LATENCY},
	{"flops", required_argument, NULL, SL_OPT_FLOPS},
	{"memory", required_argument, NULL, SL_OPT_MEMORY},
	{"timing", required_argument, NULL, SL_OPT_TIMING},
	{"precision", required_argument, NULL, SL_OPT_PRECISION},
	{"efficiency", required_argument, NULL, SL_OPT_EFFICIENCY},
	{"slowdown", required_argument, NULL, SL_OPT_SLOWDOWN},
	{"algorithm", required_argument, NULL, SL_OPT_ALGORITHM},
	{"format", required_argument, NULL, SL_OPT_FORMAT},
	{"trace", required_argument, NULL, SL_OPT_TRACE},
	{NULL, 0, NULL, 0},
};

const struct option sl_opts_gemm[] = {
	{"strategy", required_argument, NULL, SL_OPT_STRATEGY},
	{"m", required_argument, NULL, SL_OPT_M},
	{"k", required_argument, NULL, SL_OPT_K},
	{"n", required_argument, NULL, SL_OPT_N},
	{"seed", required_argument, NULL, SL_OPT_SEED},
	{NULL, 0, NULL, 0},
};

const struct option sl_opts_dry_run[] = {
	{"dry-run", no_argument, NULL, SL_OPT_DRY_RUN},
	{NULL, 0, NULL, 0},
};

const char sl_opts_dry_run_help[] =
	"  --dry-run               timing only: the same schedule, collectives and emulated\n"
	"                          timeline with no buffers, no arithmetic and no bytes\n"
	"                          copied; memory is counted; up to 1024 devices\n";

const char sl_opts_cluster_help[] =
	"Cluster (a preset first, then any explicit figure over it):\n"
	"  --devices=N             emulated devices, 1 to 64, or to 1024 in a timing-only\n"
	"                          run (default 4)\n"
	"  --devices-per-node=G    G devices per node; G must divide N (default: the\n"
	"                          preset's node size when N exceeds it, else one node)\n"
	"  --topology=full|ring    every pair linked, or only ring neighbours (default full)\n"
	"  --preset=NAME           hardware figures (default h100; see --list-presets and\n"
	"                          shardlab-hardware(5) for your own)\n"
	"  --hardware=FILE         hardware figures from a JSON file (shardlab-hardware(5))\n"
	"  --bandwidth=RATE        link bandwidth inside a node, e.g. 450GB/s, 400Gb/s (as\n"
	"                          given: a preset's line rate is scaled to its achievable\n"
	"                          share under realistic efficiency, an explicit one is not)\n"
	"  --latency=TIME          link latency inside a node, e.g. 2us\n"
	"  --inter-bandwidth=RATE  link bandwidth between nodes\n"
	"  --inter-latency=TIME    link latency between nodes\n"
	"  --flops=RATE            compute rate per device, e.g. 989TFLOP/s\n"
	"  --memory=SIZE           memory per device, e.g. 80GiB\n"
	"  --timing=model|measured compute time from the rate, or the thread's CPU time\n"
	"  --precision=bf16|fp32   bytes of an emulated element and the rate used (default:\n"
	"                          the preset's, bf16 on accelerators, fp32 on the host)\n"
	"  --efficiency=realistic|ideal\n"
	"                          kernels at their shapes' achievable rates and memory\n"
	"                          time, with a launch cost; or every GEMM at peak and all\n"
	"                          else free (default: the preset's, realistic on\n"
	"                          accelerators, ideal on the host)\n"
	"  --slowdown=X            pace the run in wall time, X times slower than emulated\n"
	"                          (1 to 1000000; default: headless, no pacing)\n"
	"  --algorithm=ring|tree   collective algorithm (default ring)\n"
	"Rates and times need a unit (only 0 stands alone): B is a byte and b a bit,\n"
	"so 100GBps is 100GB/s and 100Gbps is 100Gb/s, 12.5GB/s (shardlab(1), UNITS).\n"
	"\n"
	"Output:\n"
	"  --format=text|json      report format (default text; csv too for the tables\n"
	"                          of coll, compare and plan)\n"
	"  --trace=FILE            write the event trace as Chrome Trace Event JSON\n";

const char sl_opts_gemm_help[] =
	"Workload: Y[m,n] = X[m,k] W[k,n]\n"
	"  --strategy=single|colwise|rowwise\n"
	"                          one device; W split by columns (all-gather); W split\n"
	"                          by rows (all-reduce) (default colwise)\n"
	"  --m=M --k=K --n=N       the shape, 1 to 1000000 each (default 1024, 4096, 4096)\n"
	"  --seed=S                seed of the random X and W (default 1)\n";

#define GIVEN(code) (1u << ((code) - SL_OPT_DEVICES))

void sl_opts_init(sl_opts *o)
{
	memset(o, 0, sizeof *o);
	sl_scenario_default(&o->sc);
	o->format = SL_FORMAT_TEXT;
}

int sl_opts_given(const sl_opts *o, int code)
{
	return code >= SL_OPT_DEVICES && code < SL_OPT_NCODES && (o->given & GIVEN(code));
}

const char *sl_opts_name(int code)
{
	const struct option *lists[3] = {sl_opts_cluster, sl_opts_gemm, sl_opts_dry_run};
	for (int l = 0; l < 3; l++)
		for (const struct option *p = lists[l]; p->name; p++)
			if (p->val == code)
				return p->name;
	return NULL;
}

size_t sl_opts_append(struct option *dst, size_t n, size_t cap, const struct option *src)
{
	for (; src->name; src++) {
		assert(n + 1 < cap);
		if (n + 1 >= cap)
			return cap;
		dst[n++] = *src;
	}
	memset(&dst[n], 0, sizeof dst[n]);
	return n;
}

/* One of a fixed list of words; the message lists them. */
static int parse_word(const char *opt, const char *arg, const char *const *words, int nwords,
		      int *out, sl_err *err)
{
	char known[128] = "";
	size_t len = 0;
	for (int i = 0; i < nwords; i++) {
		if (strcmp(arg, words[i]) == 0) {
			*out = i;
			return SL_OK;
		}
		len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
					words[i]);
		if (len >= sizeof known)
			len = sizeof known - 1;
	}
	return sl_opts_unknown(err, opt, "value", arg, known);
}

int sl_opts_unknown(sl_err *err, const char *opt, const char *what, const char *arg,
		    const char *list)
{
	char near[64];
	if (sl_closest_in(arg, list, near, sizeof near))
		return sl_fail(err, SL_EINVAL, "--%s: unknown %s '%s': did you mean '%s'? (one of: %s)",
			       opt, what, arg, near, list);
	return sl_fail(err, SL_EINVAL, "--%s: unknown %s '%s' (one of: %s)", opt, what, arg, list);
}

/* A parse error from units.c, prefixed with the option's name. */
static int named(const char *opt, int rc, sl_err *err)
{
	if (rc && err) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		sl_fail(err, rc, "--%s: %s", opt, msg);
	}
	return rc;
}

static int in_range(const char *opt, const char *arg, double v, double lo, double hi,
		    const char *range, sl_err *err)
{
	if (v == 0 && lo > 0)
		return sl_fail(err, SL_EINVAL, "--%s=%s: must be positive", opt, arg);
	if (!(v >= lo && v <= hi))
		return sl_fail(err, SL_EINVAL, "--%s=%s is out of range (%s)", opt, arg, range);
	return SL_OK;
}

static int parse_rate(const char *opt, const char *arg, double *out, sl_err *err)
{
	int rc = named(opt, sl_parse_rate(arg, out, err), err);
	/* The engine's own limits for a link (cluster.c). */
	return rc ? rc : in_range(opt, arg, *out, 1e3, 1e15, "1 KB/s to 1 PB/s", err);
}

static int parse_latency(const char *opt, const char *arg, double *out, sl_err *err)
{
	int rc = named(opt, sl_parse_time(arg, out, err), err);
	return rc ? rc : in_range(opt, arg, *out, 0, 10, "0 to 10 s", err);
}

int sl_opts_handle(sl_opts *o, int code, const char *arg, sl_err *err)
{
	static const char *const topos[] = {"full", "ring"};
	static const char *const timings[] = {"model", "measured"};
	static const char *const formats[] = {"text", "json", "csv"};
	const char *opt = sl_opts_name(code);
	if (!opt)
		return SL_OPTS_NOT_MINE;
	if (!arg)
		arg = "";
	long l = 0;
	int w = 0, rc = SL_OK;
	switch (code) {
	case SL_OPT_DEVICES:
		rc = named(opt,
			   sl_parse_int(arg, 1, o->max_devices > 0 ? o->max_devices : SL_MAX_DEVICES,
					"device count", &l, err),
			   err);
		o->devices = (int)l;
		break;
	case SL_OPT_DEVICES_PER_NODE:
		rc = named(opt, sl_parse_int(arg, 1, SL_MAX_DEVICES, "devices per node", &l, err),
			   err);
		o->devices_per_node = (int)l;
		break;
	case SL_OPT_TOPOLOGY:
		rc = parse_word(opt, arg, topos, 2, &w, err);
		o->topology = (sl_topo)w;
		break;
	case SL_OPT_PRESET: {
		sl_err e = {0};
		const sl_preset *p = sl_hw_find(arg, NULL, &e);
		/* A file that is not right says so itself ("FILE: FIELD: ..."). */
		if (!p)
			return strncmp(e.msg, "unknown preset", 14) == 0
				       ? sl_fail(err, e.code, "--preset: %s", e.msg)
				       : sl_fail(err, e.code, "%s", e.msg);
		o->preset = arg;
		o->hw = p;
		break;
	}
	case SL_OPT_HARDWARE: {
		const sl_preset *p = sl_hw_load(arg, err);
		if (!p)
			return err ? err->code : SL_EINVAL;
		o->hw = p;
		break;
	}
	case SL_OPT_BANDWIDTH:
		rc = parse_rate(opt, arg, &o->bandwidth, err);
		break;
	case SL_OPT_INTER_BANDWIDTH:
		rc = parse_rate(opt, arg, &o->inter_bandwidth, err);
		break;
	case SL_OPT_LATENCY:
		rc = parse_latency(opt, arg, &o->latency, err);
		break;
	case SL_OPT_INTER_LATENCY:
		rc = parse_latency(opt, arg, &o->inter_latency, err);
		break;
	case SL_OPT_FLOPS:
		rc = named(opt, sl_parse_flops(arg, &o->flops, err), err);
		if (!rc)
			rc = in_range(opt, arg, o->flops, 1e6, 1e18, "1 MFLOP/s to 1000 PFLOP/s",
				      err);
		break;
	case SL_OPT_MEMORY:
		rc = named(opt, sl_parse_bytes(arg, &o->memory, err), err);
		/* At least one whole byte; at most 1 PiB, so it fits a uint64_t. */
		if (!rc)
			rc = in_range(opt, arg, o->memory, 1, 1125899906842624.0, "1 B to 1 PiB",
				      err);
		break;
	case SL_OPT_TIMING:
		rc = parse_word(opt, arg, timings, 2, &w, err);
		o->timing = (sl_timing)w;
		break;
	case SL_OPT_PRECISION:
		if (sl_precision_parse(arg, &o->precision))
			rc = sl_opts_unknown(err, "precision", "precision", arg, "bf16, fp32");
		break;
	case SL_OPT_EFFICIENCY:
		if (sl_efficiency_parse(arg, &o->efficiency))
			rc = sl_opts_unknown(err, "efficiency", "efficiency", arg, "realistic, ideal");
		break;
	case SL_OPT_SLOWDOWN:
		rc = named(opt, sl_parse_double(arg, &o->slowdown, err), err);
		if (!rc && !(o->slowdown >= 1 && o->slowdown <= 1e6))
			rc = sl_fail(err, SL_EINVAL,
				     "--slowdown=%s is out of range (1 = real time, to 1000000)",
				     arg);
		break;
	case SL_OPT_ALGORITHM:
		if (sl_algo_parse(arg, &o->algo))
			rc = sl_opts_unknown(err, "algorithm", "algorithm", arg, "ring, tree");
		break;
	case SL_OPT_FORMAT:
		if (strcmp(arg, "csv") == 0 && !o->csv_ok)
			rc = sl_fail(err, SL_EINVAL,
				     "--format=csv is for the tables of coll, compare and plan "
				     "(here one of: text, json)");
		else
			rc = parse_word(opt, arg, formats, o->csv_ok ? 3 : 2, &w, err);
		o->format = (sl_format)w;
		break;
	case SL_OPT_TRACE:
		if (!*arg)
			rc = sl_fail(err, SL_EINVAL, "--trace: empty file name");
		o->trace = arg;
		break;
	case SL_OPT_STRATEGY:
		if (sl_split_parse(arg, &o->split))
			rc = sl_opts_unknown(err, "strategy", "strategy", arg, "single, colwise, rowwise");
		break;
	case SL_OPT_M:
	case SL_OPT_K:
	case SL_OPT_N:
		rc = named(opt, sl_parse_int(arg, 1, 1000000, opt, &l, err), err);
		*(code == SL_OPT_M ? &o->m : code == SL_OPT_K ? &o->k : &o->n) = (int)l;
		break;
	case SL_OPT_SEED:
		rc = named(opt, sl_parse_int(arg, 0, 2147483647L, "seed", &l, err), err);
		o->seed = (uint64_t)l;
		break;
	case SL_OPT_DRY_RUN:
		break;
	default:
		return SL_OPTS_NOT_MINE;
	}
	if (rc == SL_OK)
		o->given |= GIVEN(code);
	return rc;
}

/* Note an explicit option that replaced one of the preset's figures. */
static void note_override(sl_opts *o, int code)
{
	if (!sl_opts_given(o, code))
		return;
	size_t len = strlen(o->overrides);
	snprintf(o->overrides + len, sizeof o->overrides - len, "%s%s", len ? ", " : "",
		 sl_opts_name(code));
}

int sl_opts_finish(sl_opts *o, sl_err *err)
{
	sl_scenario *s = &o->sc;
	sl_cluster_config *cfg = &s->cluster;
	if (sl_opts_given(o, SL_OPT_PRESET) && sl_opts_given(o, SL_OPT_HARDWARE))
		return sl_fail(err, SL_EINVAL,
			       "--preset and --hardware both choose the hardware: give one");
	/* The default preset is found as --preset would find it: a user's
	 * file, a shipped one, or the built-in table. */
	const sl_preset *p = o->hw;
	if (!p && !(p = sl_hw_find(s->preset[0] ? s->preset : SL_PRESET_DEFAULT, NULL, err)))
		return err ? err->code : SL_EINVAL;
	/* The preset first, at the precision chosen (its rate)... */
	cfg->precision = sl_opts_given(o, SL_OPT_PRECISION) ? o->precision : p->precision;
	cfg->efficiency = sl_opts_given(o, SL_OPT_EFFICIENCY) ? o->efficiency : p->efficiency;
	sl_preset_apply(p, cfg);
	snprintf(s->preset, sizeof s->preset, "%s", p->name);

	/* ...then every explicit option over it. */
	o->overrides[0] = '\0';
	if (sl_opts_given(o, SL_OPT_DEVICES))
		cfg->devices = o->devices;
	if (sl_opts_given(o, SL_OPT_TOPOLOGY))
		cfg->topology = o->topology;
	if (sl_opts_given(o, SL_OPT_BANDWIDTH))
		cfg->intra.bandwidth = o->bandwidth;
	if (sl_opts_given(o, SL_OPT_LATENCY))
		cfg->intra.latency = o->latency;
	if (sl_opts_given(o, SL_OPT_INTER_BANDWIDTH))
		cfg->inter.bandwidth = o->inter_bandwidth;
	if (sl_opts_given(o, SL_OPT_INTER_LATENCY))
		cfg->inter.latency = o->inter_latency;
	if (sl_opts_given(o, SL_OPT_FLOPS))
		cfg->flops = o->flops;
	if (sl_opts_given(o, SL_OPT_MEMORY))
		cfg->memory = (uint64_t)o->memory;
	static const int figures[] = {SL_OPT_FLOPS, SL_OPT_MEMORY, SL_OPT_BANDWIDTH, SL_OPT_LATENCY,
				      SL_OPT_INTER_BANDWIDTH, SL_OPT_INTER_LATENCY};
	for (size_t i = 0; i < sizeof figures / sizeof *figures; i++)
		note_override(o, figures[i]);
	if (sl_opts_given(o, SL_OPT_TIMING))
		cfg->timing = o->timing;
	if (sl_opts_given(o, SL_OPT_SLOWDOWN))
		cfg->slowdown = o->slowdown;
	if (sl_opts_given(o, SL_OPT_DRY_RUN))
		cfg->timing_only = 1;
	if (cfg->timing_only && cfg->timing == SL_TIMING_MEASURED)
		return sl_fail(err, SL_EINVAL,
			       "--dry-run computes nothing to measure: drop --timing=measured");
	if (sl_opts_given(o, SL_OPT_ALGORITHM))
		s->gemm.algo = o->algo;
	if (sl_opts_given(o, SL_OPT_STRATEGY))
		s->gemm.split = o->split;
	if (sl_opts_given(o, SL_OPT_M))
		s->gemm.m = o->m;
	if (sl_opts_given(o, SL_OPT_K))
		s->gemm.k = o->k;
	if (sl_opts_given(o, SL_OPT_N))
		s->gemm.n = o->n;
	if (sl_opts_given(o, SL_OPT_SEED))
		s->gemm.seed = o->seed;

	/* Nodes: as given; else the preset's node size when the devices do not
	 * fit one of its nodes and it divides them; else a single node. */
	if (sl_opts_given(o, SL_OPT_DEVICES_PER_NODE))
		cfg->devices_per_node = o->devices_per_node;
	else if (cfg->topology == SL_TOPO_FULL && p->devices_per_node > 0 &&
		 cfg->devices > p->devices_per_node && cfg->devices % p->devices_per_node == 0)
		cfg->devices_per_node = p->devices_per_node;
	else
		cfg->devices_per_node = 0;
	if (cfg->devices_per_node > cfg->devices)
		return sl_fail(err, SL_EINVAL, "--devices-per-node=%d exceeds --devices=%d",
			       cfg->devices_per_node, cfg->devices);
	if (cfg->devices_per_node > 0 && cfg->devices % cfg->devices_per_node != 0)
		return sl_fail(err, SL_EINVAL,
			       "--devices-per-node=%d does not divide --devices=%d: "
			       "every node holds the same number of devices",
			       cfg->devices_per_node, cfg->devices);
	if (cfg->topology == SL_TOPO_RING && cfg->devices_per_node > 0 &&
	    cfg->devices_per_node != cfg->devices)
		return sl_fail(err, SL_EINVAL,
			       "--topology=ring is a single node: "
			       "drop --devices-per-node or use --topology=full");
	return o->max_devices > SL_MAX_DEVICES ? sl_cluster_config_check_plan(cfg, err)
						: sl_cluster_config_check(cfg, err);
}

/* ---- the training groups ---- */

const struct option sl_opts_model[] = {
	{"layers", required_argument, NULL, SL_OPT_LAYERS}, {"hidden", required_argument, NULL, SL_OPT_HIDDEN},
	{"ffn", required_argument, NULL, SL_OPT_FFN},       {"heads", required_argument, NULL, SL_OPT_HEADS},
	{"seq", required_argument, NULL, SL_OPT_SEQ},       {"batch", required_argument, NULL, SL_OPT_BATCH},
	{"steps", required_argument, NULL, SL_OPT_STEPS},   {"seed", required_argument, NULL, SL_OPT_MODEL_SEED},
	{"lr", required_argument, NULL, SL_OPT_LR},         {"model", required_argument, NULL, SL_OPT_MODEL},
	{"kv-heads", required_argument, NULL, SL_OPT_KV_HEADS},
	{"ffn-kind", required_argument, NULL, SL_OPT_FFN_KIND},
	{"norm", required_argument, NULL, SL_OPT_NORM},
	{"vocab", required_argument, NULL, SL_OPT_VOCAB},
	{"untie-embeddings", no_argument, NULL, SL_OPT_UNTIE},
	{"tie-embeddings", no_argument, NULL, SL_OPT_TIE},
	{"position-embedding", required_argument, NULL, SL_OPT_POS_EMB},
	{"attention-dropout", required_argument, NULL, SL_OPT_ATTN_DROPOUT},
	{"hidden-dropout", required_argument, NULL, SL_OPT_HIDDEN_DROPOUT},
	{"grad-accumulation", required_argument, NULL, SL_OPT_GRAD_ACCUM},
	{NULL, 0, NULL, 0}};

const struct option sl_opts_layout[] = {
	{"tp", required_argument, NULL, SL_OPT_TP},
	{"pp", required_argument, NULL, SL_OPT_PP},
	{"dp", required_argument, NULL, SL_OPT_DP},
	{"schedule", required_argument, NULL, SL_OPT_SCHEDULE},
	{"chunks", required_argument, NULL, SL_OPT_CHUNKS},
	{"microbatches", required_argument, NULL, SL_OPT_MICROBATCHES},
	{"sequence-parallel", no_argument, NULL, SL_OPT_SP},
	{"zero1", no_argument, NULL, SL_OPT_ZERO1},
	{"mesh-order", required_argument, NULL, SL_OPT_ORDER},
	{"recompute", required_argument, NULL, SL_OPT_RECOMPUTE},
	{"attention", required_argument, NULL, SL_OPT_ATTENTION},
	{NULL, 0, NULL, 0}};

const char sl_opts_model_help[] =
	"Model (L blocks of width h: multi-head attention when --heads > 0, then an MLP):\n"
	"  --model=NAME|FILE       the shape of a shipped model (gpt3-175b, megatron-1t,\n"
	"                          llama-3-8b, llama-3-70b, llama-3-405b) or a JSON file;\n"
	"                          the options below override it (shardlab-hardware(5))\n"
	"  --layers=L              blocks (default 4)\n"
	"  --hidden=H              width (default 128)\n"
	"  --ffn=F                 MLP inner width, up to 1048576 (default 512)\n"
	"  --heads=A               attention heads, 0 for MLP-only blocks (default 4)\n"
	"  --kv-heads=G            key/value heads, grouped-query attention: G divides A\n"
	"                          (default 0: as many as --heads)\n"
	"  --ffn-kind=gelu|swiglu  the MLP: GeLU, or SwiGLU's gate and up products of F\n"
	"                          columns each, as Llama's (default gelu)\n"
	"  --norm=none|layernorm|rmsnorm\n"
	"                          a norm before each sub-block, as GPT's (layernorm) or\n"
	"                          Llama's (rmsnorm), without scale and shift (default\n"
	"                          none)\n"
	"  --vocab=V               token embeddings and an LM head over V tokens (0 to\n"
	"                          4194304), vocabulary-parallel over TP as Megatron-LM's:\n"
	"                          timed and held in memory, not computed, so plan and\n"
	"                          --dry-run only (default 0: the blocks alone)\n"
	"  --untie-embeddings      the LM head has its own weights, as Llama's (default:\n"
	"                          tied to the embedding, as GPT's); --tie-embeddings ties\n"
	"                          them (over a model file's)\n"
	"  --position-embedding=learned|rope\n"
	"                          learned positions (s x h parameters, GPT's) or rotary\n"
	"                          ones (none, Llama's; default learned)\n"
	"  --attention-dropout=R   drop this share (0 to 0.9) of the attention\n"
	"                          probabilities in training, as Megatron-LM's option\n"
	"                          (default 0)\n"
	"  --hidden-dropout=R      drop this share (0 to 0.9) of each attention and MLP\n"
	"                          output before its residual, as Megatron-LM's option\n"
	"                          (default 0)\n"
	"  --grad-accumulation=fused|separate\n"
	"                          each weight-gradient product adds into the gradients\n"
	"                          (fused, default), or writes its own that a memory pass\n"
	"                          then adds, every micro-batch (separate: PyTorch's\n"
	"                          autograd, Megatron-LM before the fusion); time and\n"
	"                          workspace only\n"
	"  --seq=S                 tokens per sequence (default 32; 1 without attention\n"
	"                          unless given)\n"
	"  --batch=B               sequences per step, over all replicas (default 16)\n"
	"  --steps=N               training steps (default 5; compare: 3)\n"
	"  --seed=S                seed of the initial weights and the data (default 1)\n"
	"  --lr=X                  Adam's learning rate (default 0.001)\n";

const char sl_opts_layout_help[] =
	"Layout (devices: tp*pp*dp unless --devices is given):\n"
	"  --tp=T --pp=P --dp=D    tensor, pipeline and data parallel sizes (default 1)\n"
	"  --schedule=gpipe|1f1b|interleaved\n"
	"                          pipeline schedule (default 1f1b)\n"
	"  --chunks=V              model chunks per device, interleaved (default 2)\n"
	"  --microbatches=M        micro-batches per replica and step (default 2*pp, or 1)\n"
	"  --sequence-parallel     split each TP all-reduce into reduce-scatter + all-gather\n"
	"  --zero1                 shard Adam's state over the data-parallel replicas\n"
	"  --recompute=none|selective|full\n"
	"                          activation recomputation: the attention core, or each\n"
	"                          block's forward, run again in the backward pass (default\n"
	"                          none)\n"
	"  --attention=flash|materialized\n"
	"                          the attention core as one fused kernel that keeps no\n"
	"                          s x s matrix (FlashAttention), or scores and softmax in\n"
	"                          device memory (as Megatron-LM in 2021); the same values\n"
	"                          (default flash)\n"
	"  --mesh-order=tp-dp-pp   device order, fastest axis first (default tp-dp-pp:\n"
	"                          TP groups on consecutive devices, i.e. inside a node)\n";

static int named_int(const char *opt, const char *arg, long lo, long hi, int *out, sl_err *err)
{
	long v;
	char what[40];
	snprintf(what, sizeof what, "--%s", opt);
	int rc = sl_parse_int(arg, lo, hi, what, &v, err);
	if (rc == SL_OK)
		*out = (int)v;
	return rc;
}

int sl_train_opts_handle(sl_train_opts *a, int code, const char *arg, sl_err *err)
{
	sl_layout *l = &a->l;
	sl_model_spec *m = &a->m;
	long seed;
	double lr;
	int rc = SL_OK;
	switch (code) {
	case SL_OPT_TP:
		rc = named_int("tp", arg, 1, SL_MAX_DEVICES, &l->tp, err);
		break;
	case SL_OPT_PP:
		rc = named_int("pp", arg, 1, SL_MAX_DEVICES, &l->pp, err);
		break;
	case SL_OPT_DP:
		rc = named_int("dp", arg, 1, SL_MAX_DEVICES, &l->dp, err);
		break;
	case SL_OPT_SCHEDULE:
		if (sl_sched_parse(arg, &l->schedule))
			return sl_opts_unknown(err, "schedule", "schedule", arg, "gpipe, 1f1b, interleaved");
		a->given_sched = 1;
		break;
	case SL_OPT_CHUNKS:
		rc = named_int("chunks", arg, 1, 64, &l->chunks, err);
		a->given_v = 1;
		break;
	case SL_OPT_MICROBATCHES:
		rc = named_int("microbatches", arg, 1, 4096, &l->microbatches, err);
		a->given_m = 1;
		break;
	case SL_OPT_SP:
		l->seq_parallel = 1;
		break;
	case SL_OPT_ZERO1:
		l->zero1 = 1;
		break;
	case SL_OPT_RECOMPUTE:
		if (sl_recompute_parse(arg, &l->recompute))
			return sl_opts_unknown(err, "recompute", "recomputation", arg,
					       "none, selective, full");
		break;
	case SL_OPT_ATTENTION:
		if (sl_attention_parse(arg, &l->attention))
			return sl_opts_unknown(err, "attention", "kind", arg, "flash, materialized");
		break;
	case SL_OPT_ORDER:
		if (sl_mesh_order_parse(arg, l->order))
			return sl_fail(err, SL_EINVAL,
				       "--mesh-order: '%s' is not an order of tp, pp and dp (as in tp-dp-pp)",
				       arg);
		break;
	case SL_OPT_LAYERS:
		rc = named_int("layers", arg, 1, 4096, &m->layers, err);
		break;
	case SL_OPT_HIDDEN:
		rc = named_int("hidden", arg, 1, 65536, &m->hidden, err);
		break;
	case SL_OPT_FFN:
		rc = named_int("ffn", arg, 1, SL_MODEL_MAX_FFN, &m->ffn, err);
		break;
	case SL_OPT_HEADS:
		rc = named_int("heads", arg, 0, 65536, &m->heads, err);
		break;
	case SL_OPT_KV_HEADS:
		rc = named_int("kv-heads", arg, 0, 65536, &m->kv_heads, err);
		break;
	case SL_OPT_FFN_KIND:
		if (sl_ffn_kind_parse(arg, &m->ffn_kind))
			return sl_opts_unknown(err, "ffn-kind", "MLP", arg, "gelu, swiglu");
		break;
	case SL_OPT_NORM:
		if (sl_norm_parse(arg, &m->norm))
			return sl_opts_unknown(err, "norm", "norm", arg, "none, layernorm, rmsnorm");
		break;
	case SL_OPT_VOCAB:
		rc = named_int("vocab", arg, 0, SL_MODEL_MAX_VOCAB, &m->vocab, err);
		break;
	case SL_OPT_UNTIE:
	case SL_OPT_TIE:
		m->untie = code == SL_OPT_UNTIE;
		a->given_shape |= 1u << (SL_OPT_UNTIE - SL_OPT_LAYERS);
		break;
	case SL_OPT_POS_EMB:
		if (sl_pos_parse(arg, &m->pos_emb))
			return sl_opts_unknown(err, "position-embedding", "kind", arg, "learned, rope");
		break;
	case SL_OPT_SEQ:
		rc = named_int("seq", arg, 1, 65536, &m->seq, err);
		a->given_seq = 1;
		break;
	case SL_OPT_BATCH:
		rc = named_int("batch", arg, 1, 1 << 20, &m->batch, err);
		break;
	case SL_OPT_STEPS:
		rc = named_int("steps", arg, 1, 100000, &a->steps, err);
		a->given_steps = 1;
		break;
	case SL_OPT_MODEL_SEED:
		rc = sl_parse_int(arg, 0, 2147483647L, "--seed", &seed, err);
		m->seed = (uint64_t)seed;
		break;
	case SL_OPT_MODEL: {
		sl_model_file mf;
		if ((rc = sl_model_file_find(arg, &mf, err)))
			return rc;
		/* A shape option wins over the file whatever its place. */
		const int v[] = {mf.layers, mf.hidden, mf.ffn, mf.heads, mf.seq, mf.batch};
		int *f[] = {&m->layers, &m->hidden, &m->ffn, &m->heads, &m->seq, &m->batch};
		for (int i = 0; i < 6; i++)
			if (!(a->given_shape & (1u << i)))
				*f[i] = v[i];
		if (!(a->given_shape & (1u << (SL_OPT_KV_HEADS - SL_OPT_LAYERS))))
			m->kv_heads = mf.kv_heads;
		if (!(a->given_shape & (1u << (SL_OPT_FFN_KIND - SL_OPT_LAYERS))))
			m->ffn_kind = mf.ffn_kind;
		if (!(a->given_shape & (1u << (SL_OPT_NORM - SL_OPT_LAYERS))))
			m->norm = mf.norm;
		if (!(a->given_shape & (1u << (SL_OPT_VOCAB - SL_OPT_LAYERS))))
			m->vocab = mf.vocab;
		if (!(a->given_shape & (1u << (SL_OPT_UNTIE - SL_OPT_LAYERS))))
			m->untie = mf.untie;
		if (!(a->given_shape & (1u << (SL_OPT_POS_EMB - SL_OPT_LAYERS))))
			m->pos_emb = mf.pos_emb;
		a->given_seq = 1; /* the file's sequence, with or without attention */
		break;
	}
	case SL_OPT_ATTN_DROPOUT:
		rc = sl_parse_double(arg, &lr, err);
		if (rc)
			return sl_fail(err, SL_EINVAL, "--attention-dropout: '%s' is not a number", arg);
		if (!(lr >= 0 && lr <= 0.9))
			rc = sl_fail(err, SL_EINVAL,
				     "--attention-dropout=%s is out of range (0 to 0.9)", arg);
		m->attn_dropout = (float)lr;
		break;
	case SL_OPT_HIDDEN_DROPOUT:
		rc = sl_parse_double(arg, &lr, err);
		if (rc)
			return sl_fail(err, SL_EINVAL, "--hidden-dropout: '%s' is not a number", arg);
		if (!(lr >= 0 && lr <= 0.9))
			rc = sl_fail(err, SL_EINVAL, "--hidden-dropout=%s is out of range (0 to 0.9)",
				     arg);
		m->hidden_dropout = (float)lr;
		break;
	case SL_OPT_GRAD_ACCUM:
		if (sl_grad_accum_parse(arg, &m->grad_accum))
			return sl_opts_unknown(err, "grad-accumulation", "kind", arg, "fused, separate");
		break;
	case SL_OPT_LR:
		rc = sl_parse_double(arg, &lr, err);
		if (rc == SL_OK && !(lr > 0 && lr < 1))
			rc = sl_fail(err, SL_EINVAL, "--lr=%s is out of range (between 0 and 1)", arg);
		m->lr = (float)lr;
		break;
	default:
		return SL_OPTS_NOT_MINE;
	}
	if (rc == SL_OK && ((code >= SL_OPT_LAYERS && code <= SL_OPT_BATCH) ||
			    code == SL_OPT_KV_HEADS || code == SL_OPT_FFN_KIND || code == SL_OPT_NORM ||
			    code == SL_OPT_VOCAB || code == SL_OPT_UNTIE || code == SL_OPT_POS_EMB))
		a->given_shape |= 1u << (code - SL_OPT_LAYERS);
	/* The device count follows the layout unless --devices says otherwise
	 * (sl_opts_finish keeps it when --devices is not given). */
	if (a->devices_follow)
		a->o->sc.cluster.devices = l->tp * l->pp * l->dp;
	return rc;
}

void sl_train_opts_init(sl_train_opts *a, sl_opts *o, int steps)
{
	memset(a, 0, sizeof *a);
	a->o = o;
	sl_opts_init(o);
	sl_model_default(&a->m);
	a->m.layers = 4;
	a->m.hidden = 128;
	a->m.ffn = 512;
	a->m.heads = 4;
	a->m.seq = 32;
	a->m.batch = 16;
	sl_layout_default(&a->l);
	/* What training runs use today; the engine's default stays the
	 * materialized core that the closed forms describe. */
	a->l.attention = SL_ATTN_FLASH;
	a->steps = steps;
}

void sl_train_opts_model_finish(sl_train_opts *a)
{
	if (a->m.heads == 0 && !a->given_seq)
		a->m.seq = 1;
}

void sl_train_layout_defaults(const sl_model_spec *m, sl_layout *l, int given_m, int given_v)
{
	if (!given_v)
		l->chunks = l->schedule == SL_SCHED_INTERLEAVED ? 2 : 1;
	if (!given_m) {
		int mb = l->pp > 1 ? 2 * l->pp : 1;
		int most = m->batch / l->dp > 0 ? m->batch / l->dp : 1;
		if (mb > most)
			mb = l->schedule == SL_SCHED_INTERLEAVED && most >= l->pp ? most - most % l->pp
										  : most;
		l->microbatches = mb;
	}
}

int sl_train_cluster_config(const sl_cluster_config *base, int n, sl_cluster_config *out,
			    sl_err *err)
{
	*out = *base;
	out->devices = n;
	int g = base->devices_per_node;
	if (g > 0 && n <= g)
		out->devices_per_node = 0;
	else if (g > 0 && n % g != 0)
		return sl_fail(err, SL_EINVAL, "%d devices do not fill nodes of %d: use a multiple of %d",
			       n, g, g);
	return SL_OK;
}
