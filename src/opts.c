/* opts.c - the scenario options shared by the headless commands. */
#include "opts.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "preset.h"
#include "units.h"

const struct option sl_opts_cluster[] = {
	{"devices", required_argument, NULL, SL_OPT_DEVICES},
	{"devices-per-node", required_argument, NULL, SL_OPT_DEVICES_PER_NODE},
	{"topology", required_argument, NULL, SL_OPT_TOPOLOGY},
	{"preset", required_argument, NULL, SL_OPT_PRESET},
	{"bandwidth", required_argument, NULL, SL_OPT_BANDWIDTH},
	{"latency", required_argument, NULL, SL_OPT_LATENCY},
	{"inter-bandwidth", required_argument, NULL, SL_OPT_INTER_BANDWIDTH},
	{"inter-latency", required_argument, NULL, SL_OPT_INTER_LATENCY},
	{"flops", required_argument, NULL, SL_OPT_FLOPS},
	{"memory", required_argument, NULL, SL_OPT_MEMORY},
	{"timing", required_argument, NULL, SL_OPT_TIMING},
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
	"  --preset=NAME           hardware figures (default h100; see --list-presets)\n"
	"  --bandwidth=RATE        link bandwidth inside a node, e.g. 450GB/s, 400Gb/s\n"
	"  --latency=TIME          link latency inside a node, e.g. 2us\n"
	"  --inter-bandwidth=RATE  link bandwidth between nodes\n"
	"  --inter-latency=TIME    link latency between nodes\n"
	"  --flops=RATE            compute rate per device, e.g. 989TFLOP/s\n"
	"  --memory=SIZE           memory per device, e.g. 80GiB\n"
	"  --timing=model|measured compute time from the rate, or the thread's CPU time\n"
	"  --slowdown=X            pace the run in wall time, X times slower than emulated\n"
	"                          (1 to 1000000; default: headless, no pacing)\n"
	"  --algorithm=ring|tree   collective algorithm (default ring)\n"
	"Output:\n"
	"  --format=text|json      report format (default text)\n"
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
	return sl_fail(err, SL_EINVAL, "--%s: unknown value '%s' (one of: %s)", opt, arg, known);
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
	static const char *const formats[] = {"text", "json"};
	const char *opt = sl_opts_name(code);
	if (!opt)
		return SL_OPTS_NOT_MINE;
	if (!arg)
		arg = "";
	long l = 0;
	int w = 0, rc = SL_OK;
	switch (code) {
	case SL_OPT_DEVICES:
		rc = named(opt, sl_parse_int(arg, 1, SL_MAX_DEVICES, "device count", &l, err), err);
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
	case SL_OPT_PRESET:
		if (!sl_preset_find(arg)) {
			char known[128] = "";
			size_t len = 0;
			const sl_preset *p = sl_presets();
			for (; p->name && len < sizeof known - 16; p++)
				len += (size_t)snprintf(known + len, sizeof known - len, "%s%s",
							len ? ", " : "", p->name);
			return sl_fail(err, SL_EINVAL, "--preset: unknown preset '%s' (one of: %s)",
				       arg, known);
		}
		o->preset = arg;
		break;
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
	case SL_OPT_SLOWDOWN:
		rc = named(opt, sl_parse_double(arg, &o->slowdown, err), err);
		if (!rc && !(o->slowdown >= 1 && o->slowdown <= 1e6))
			rc = sl_fail(err, SL_EINVAL,
				     "--slowdown=%s is out of range (1 = real time, to 1000000)",
				     arg);
		break;
	case SL_OPT_ALGORITHM:
		if (sl_algo_parse(arg, &o->algo))
			rc = sl_fail(err, SL_EINVAL,
				     "--algorithm: unknown algorithm '%s' (one of: ring, tree)",
				     arg);
		break;
	case SL_OPT_FORMAT:
		rc = parse_word(opt, arg, formats, 2, &w, err);
		o->format = (sl_format)w;
		break;
	case SL_OPT_TRACE:
		if (!*arg)
			rc = sl_fail(err, SL_EINVAL, "--trace: empty file name");
		o->trace = arg;
		break;
	case SL_OPT_STRATEGY:
		if (sl_split_parse(arg, &o->split))
			rc = sl_fail(err, SL_EINVAL,
				     "--strategy: unknown strategy '%s' "
				     "(one of: single, colwise, rowwise)",
				     arg);
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
	const sl_preset *p = sl_preset_find(o->preset ? o->preset : s->preset);
	if (!p)
		p = sl_preset_find(SL_PRESET_DEFAULT);
	/* The preset first... */
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
	return sl_cluster_config_check(cfg, err);
}
