/* SPDX-License-Identifier: MIT */
/* test_hwfile.c - hardware and model files: the shipped files equal the
 * built-in table, every malformed field gets its one message, and names
 * are found in the documented order (shardlab-hardware(5)).
 *
 * GENERATE=1 tests/test_hwfile rewrites data/hardware/ from the table. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "tmputil.h"

#include "hwfile.h"
#include "preset.h"

#ifndef HARDWARE_DIR
#error "the Makefile passes -DHARDWARE_DIR and -DMODELS_DIR"
#endif

static char *slurp_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return strdup(buf);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Every figure, one by one. */
static void assert_same_preset(const sl_preset *a, const sl_preset *b)
{
	assert_string_equal(a->name, b->name);
	assert_string_equal(a->title, b->title);
	assert_string_equal(a->source, b->source);
	assert_true(a->flops == b->flops);
	assert_true(a->flops_fp32 == b->flops_fp32);
	assert_true(a->memory == b->memory);
	assert_int_equal(a->devices_per_node, b->devices_per_node);
	assert_true(a->intra.bandwidth == b->intra.bandwidth);
	assert_true(a->intra.latency == b->intra.latency);
	assert_true(a->inter.bandwidth == b->inter.bandwidth);
	assert_true(a->inter.latency == b->inter.latency);
	assert_true(a->intra_frac == b->intra_frac);
	assert_true(a->inter_frac == b->inter_frac);
	assert_true(a->dm.mem_bw == b->dm.mem_bw);
	assert_true(a->dm.gemm_frac == b->dm.gemm_frac);
	assert_int_equal(a->dm.units, b->dm.units);
	assert_int_equal(a->dm.tile_m, b->dm.tile_m);
	assert_int_equal(a->dm.tile_n, b->dm.tile_n);
	assert_true(a->dm.k_half == b->dm.k_half);
	assert_true(a->dm.launch_s == b->dm.launch_s);
	assert_true(a->dm.attn_frac == b->dm.attn_frac);
	assert_true(a->dm.mem_frac == b->dm.mem_frac);
	assert_int_equal(a->precision, b->precision);
	assert_int_equal(a->efficiency, b->efficiency);
}

/* The shipped files are the built-in table, written by sl_hw_to_json, byte
 * for byte, and read back to the same figures. */
static void test_shipped_files_are_the_table(void **state)
{
	(void)state;
	int regen = getenv("GENERATE") != NULL;
	int n = 0;
	for (const sl_preset *p = sl_presets(); p->name; p++, n++) {
		char path[600];
		snprintf(path, sizeof path, "%s/%s.json", HARDWARE_DIR, p->name);
		json_t *j = sl_hw_to_json(p);
		char *want = sl_json_dump_exact(j);
		json_decref(j);
		assert_non_null(want);
		if (regen)
			write_file(path, want);
		char *got = slurp_file(path);
		if (!got)
			fail_msg("%s is missing (GENERATE=1 tests/test_hwfile writes it)", path);
		if (strcmp(got, want) != 0)
			fail_msg("%s differs from the built-in table (GENERATE=1 rewrites it)",
			         path);
		sl_err err = {0};
		const sl_preset *f = sl_hw_load(path, &err);
		if (!f)
			fail_msg("%s", err.msg);
		assert_same_preset(f, p);
		free(got);
		free(want);
	}
	/* And nothing else is shipped under a name the table does not know. */
	int files = 0;
	DIR *d = opendir(HARDWARE_DIR);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			files++;
	closedir(d);
	assert_int_equal(files, n);
}

/* The schema's own figures: the numbers of a reader written from the
 * datasheet, not from the table (h100.json by hand). */
static void test_h100_figures(void **state)
{
	(void)state;
	sl_err err = {0};
	const sl_preset *p = sl_hw_load(HARDWARE_DIR "/h100.json", &err);
	if (!p)
		fail_msg("%s", err.msg);
	assert_true(p->flops == 989e12);
	assert_true(p->flops_fp32 == 67e12);
	assert_true(p->memory == 80.0 * 1024 * 1024 * 1024);
	assert_true(p->dm.mem_bw == 3.35e12);
	assert_int_equal(p->devices_per_node, 8);
	assert_true(p->intra.bandwidth == 450e9 && p->intra.latency == 2e-6);
	assert_true(p->inter.bandwidth == 50e9 && p->inter.latency == 5e-6);
	/* nccl-tests' bus bandwidth over the line rate (preset.c's sources). */
	assert_true(p->intra_frac == 0.822 && p->inter_frac == 0.94);
	assert_int_equal(p->precision, SL_PREC_BF16);
	assert_int_equal(p->efficiency, SL_EFF_REALISTIC);
	/* The host's rates are measured: null in the file, 0 in the preset. */
	p = sl_hw_load(HARDWARE_DIR "/host.json", &err);
	assert_non_null(p);
	assert_true(p->flops == 0 && p->flops_fp32 == 0);
	char *text = slurp_file(HARDWARE_DIR "/host.json");
	assert_non_null(strstr(text, "\"bf16_flop_per_s\": null"));
	free(text);
}

/* ---- malformed files ---- */

struct bad_case {
	const char *from, *to; /* replace the first `from` of h100.json by `to` */
	const char *msg;       /* what follows "FILE: " */
};

static const struct bad_case bad_cases[] = {
    {"\"memory_bytes\": 85899345920,", "", "device.memory_bytes: missing"},
    {"\"name\": \"h100\",", "", "name: missing"},
    {"\"latency_s\": 5e-6", "\"latency_s\": 5e-6, \"speed\": 1",
     "inter_node.speed: unknown key (known: bandwidth_bytes_per_s, latency_s, "
     "achievable_fraction)"},
    {"\"achievable_fraction\": 0.94", "\"achievable_fraction\": 1.5",
     "inter_node.achievable_fraction: 1.5 is out of range (0 (the line rate) to 1)"},
    {"\"devices_per_node\": 8,", "\"devices_per_node\": 8, \"colour\": \"red\",",
     "colour: unknown key (known: name, title, source, device, devices_per_node, intra_node, "
     "inter_node)"},
    /* The device's keys do not fit the line: the man page has them. */
    {"\"gemm_units\": 132", "\"gemm_units\": 132, \"sms\": 1",
     "device.sms: unknown key (see shardlab-hardware(5))"},
    {"\"memory_bytes\": 85899345920", "\"memory_bytes\": \"80GiB\"",
     "device.memory_bytes: must be a number, not a string"},
    {"\"memory_bytes\": 85899345920", "\"memory_bytes\": 0",
     "device.memory_bytes: 0 is out of range (1 B to 1 PiB)"},
    {"\"memory_bytes\": 85899345920", "\"memory_bytes\": 1.5",
     "device.memory_bytes: 1.5 is not a whole number"},
    {"\"bf16_flop_per_s\": 989000000000000.0", "\"bf16_flop_per_s\": -1",
     "device.bf16_flop_per_s: -1 is out of range (1 MFLOP/s to 1000 PFLOP/s, or null: measured)"},
    {"\"bf16_flop_per_s\": 989000000000000.0", "\"bf16_flop_per_s\": true",
     "device.bf16_flop_per_s: must be a number or null, not a boolean"},
    {"\"gemm_peak_fraction\": 0.803", "\"gemm_peak_fraction\": 1.2",
     "device.gemm_peak_fraction: 1.2 is out of range (0 (not modelled) to 1)"},
    /* One rule for every figure (issue 39): a subnormal is refused even
     * where the range starts at 0, since dividing by one gives inf. */
    {"\"gemm_peak_fraction\": 0.803", "\"gemm_peak_fraction\": 5e-324",
     "device.gemm_peak_fraction: 4.9406564584124654e-324 is subnormal: too close to zero to "
     "compute with (0 (not modelled) to 1)"},
    {"\"latency_s\": 2e-6", "\"latency_s\": 1e-310",
     "intra_node.latency_s: 9.9999999999999694e-311 is subnormal: too close to zero to compute "
     "with (0 to 10 s)"},
    {"\"gemm_units\": 132", "\"gemm_units\": 5e-324",
     "device.gemm_units: 4.9406564584124654e-324 is subnormal: too close to zero to compute "
     "with (0 (not modelled) to 1e6)"},
    {"\"gemm_k_half\": 64.0", "\"gemm_k_half\": 1e308",
     "device.gemm_k_half: 1e+308 is out of range (0 (not modelled) to 1e9)"},
    {"\"gemm_k_half\": 64.0", "\"gemm_k_half\": 1e309",
     "line 15, column 24: real number overflow near '1e309'"},
    {"\"gemm_k_half\": 64.0", "\"gemm_k_half\": NaN",
     "line 15, column 22: invalid token near 'NaN'"},
    {"\"attention_peak_fraction\": 0.588", "\"attention_peak_fraction\": 1.5",
     "device.attention_peak_fraction: 1.5 is out of range (0 (the GEMM fraction) to 1)"},
    {"\"attention_peak_fraction\": 0.588", "\"attention_peak_fraction\": \"fast\"",
     "device.attention_peak_fraction: must be a number, not a string"},
    {"\"memory_bandwidth_fraction\": 0.769", "\"memory_bandwidth_fraction\": 1.2",
     "device.memory_bandwidth_fraction: 1.2 is out of range (0 (all of it) to 1)"},
    {"\"memory_bandwidth_fraction\": 0.769", "\"memory_bandwidth_fraction\": null",
     "device.memory_bandwidth_fraction: must be a number, not null"},
    {"\"gemm_units\": 132", "\"gemm_units\": 13.2",
     "device.gemm_units: 13.199999999999999 is not a whole number"},
    {"\"default_precision\": \"bf16\"", "\"default_precision\": \"fp8\"",
     "device.default_precision: must be \"bf16\" or \"fp32\""},
    {"\"default_efficiency\": \"realistic\"", "\"default_efficiency\": 1",
     "device.default_efficiency: must be a string, not a number"},
    {"\"devices_per_node\": 8", "\"devices_per_node\": 2000",
     "devices_per_node: 2000 is out of range (0 (any) to 1024)"},
    {"\"bandwidth_bytes_per_s\": 450000000000.0", "\"bandwidth_bytes_per_s\": 10",
     "intra_node.bandwidth_bytes_per_s: 10 is out of range (1 KB/s to 1 PB/s)"},
    {"\"latency_s\": 2e-6", "\"latency_s\": null",
     "intra_node.latency_s: must be a number, not null"},
    {"\"intra_node\": {", "\"intra_node\": [{", "line 27, column 15: ']' expected near ':'"},
    {"\"name\": \"h100\"", "\"name\": \"h 100\"",
     "name: may hold only letters, digits, '.', '_' and '-'"},
    {"\"name\": \"h100\"", "\"name\": \"\"", "name: is empty"},
    {"\"title\": \"NVIDIA", "\"title\": \"\\u001b[31mNVIDIA",
     "title: holds control character U+001B at byte 1"},
    /* The rule for any file's text (issue 39): C1 controls, the 8-bit CSI
     * among them, and bidirectional overrides and isolates. */
    {"\"title\": \"NVIDIA", "\"title\": \"\\u009b2JNVIDIA",
     "title: holds control character U+009B at byte 1"},
    {"\"title\": \"NVIDIA", "\"title\": \"NV\\u202eAIDIVN",
     "title: holds bidirectional override U+202E at byte 3"},
    {"\"title\": \"NVIDIA", "\"title\": \"NV\\u2066IDIA",
     "title: holds bidirectional isolate U+2066 at byte 3"},
    {"\"title\": \"NVIDIA", "\"title\": \"NV\\u007fIDIA",
     "title: holds control character U+007F at byte 3"},
    {"\"device\": {", "\"device\": 5, \"x\": {",
     "x: unknown key (known: name, title, source, "
     "device, devices_per_node, intra_node, inter_node)"},
    {"\"name\": \"h100\",", "\"name\": \"h100\", \"name\": \"h200\",",
     "line 2, column 24: duplicate object key near '\"name\"'"},
};

static void test_malformed_files(void **state)
{
	(void)state;
	char *good = slurp_file(HARDWARE_DIR "/h100.json");
	assert_non_null(good);
	char dir[300], path[400];
	tu_tmpname(dir, sizeof dir, "sl-hwfile-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/bad.json", dir);
	for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
		const struct bad_case *c = &bad_cases[i];
		char *at = strstr(good, c->from);
		if (!at)
			fail_msg("case %zu: '%s' is not in h100.json", i, c->from);
		char text[1 << 14];
		snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good, c->to,
		         at + strlen(c->from));
		write_file(path, text);
		sl_err err = {0};
		char want[600];
		snprintf(want, sizeof want, "%s: %s", path, c->msg);
		const sl_preset *p = sl_hw_load(path, &err);
		if (p)
			fail_msg("case %zu loaded", i);
		if (strcmp(err.msg, want) != 0)
			fail_msg("case %zu:\n got  %s\n want %s", i, err.msg, want);
		assert_int_equal(err.code, SL_EINVAL);
	}
	/* attention_peak_fraction and memory_bandwidth_fraction may be left
	 * out (files written before them): 0, the GEMM fraction and the whole
	 * bandwidth. */
	for (int k = 0; k < 2; k++) {
		const char *key = k ? "    \"memory_bandwidth_fraction\": 0.769,\n"
		                    : "    \"attention_peak_fraction\": 0.588,\n";
		char *at = strstr(good, key);
		assert_non_null(at);
		char text[1 << 14], okp[420];
		snprintf(text, sizeof text, "%.*s%s", (int)(at - good), good, at + strlen(key));
		snprintf(okp, sizeof okp, "%s/older%d.json", dir, k);
		write_file(okp, text);
		sl_err e0 = {0};
		const sl_preset *p = sl_hw_load(okp, &e0);
		if (!p)
			fail_msg("%s", e0.msg);
		assert_true(k ? p->dm.mem_frac == 0 && p->dm.attn_frac == 0.588
		              : p->dm.attn_frac == 0 && p->dm.mem_frac == 0.769);
		assert_true(p->dm.gemm_frac == 0.803);
		unlink(okp);
	}
	/* -0 is zero, read as +0: nothing divides by it to -inf. */
	{
		char *at = strstr(good, "\"kernel_launch_s\": 2e-6");
		assert_non_null(at);
		char text[1 << 14], okp[420];
		snprintf(text, sizeof text, "%.*s\"kernel_launch_s\": -0.0%s", (int)(at - good),
		         good, at + strlen("\"kernel_launch_s\": 2e-6"));
		snprintf(okp, sizeof okp, "%s/negzero.json", dir);
		write_file(okp, text);
		sl_err e0 = {0};
		const sl_preset *p = sl_hw_load(okp, &e0);
		if (!p)
			fail_msg("%s", e0.msg);
		assert_true(p->dm.launch_s == 0 && !signbit(p->dm.launch_s));
		unlink(okp);
	}
	/* Not an object; not a file; a directory. */
	write_file(path, "[1]\n");
	sl_err err = {0};
	char want[600];
	assert_null(sl_hw_load(path, &err));
	snprintf(want, sizeof want, "%s: (top level): must be an object, not an array", path);
	assert_string_equal(err.msg, want);
	assert_null(sl_hw_load(dir, &err));
	snprintf(want, sizeof want, "%s: not a regular file", dir);
	assert_string_equal(err.msg, want);
	unlink(path);
	assert_null(sl_hw_load(path, &err));
	snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
	assert_string_equal(err.msg, want);
	tu_rm_rf(dir);
	free(good);
}

/* ---- where names are found ---- */

static void test_lookup_order(void **state)
{
	(void)state;
	char top[300], dir[400], empty[400], path[500];
	tu_tmpname(top, sizeof top, "sl-hwlook-XXXXXX");
	assert_non_null(mkdtemp(top));
	snprintf(dir, sizeof dir, "%s/shardlab", top);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(dir, sizeof dir, "%s/shardlab/hardware", top);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(empty, sizeof empty, "%s/empty", top);
	assert_int_equal(mkdir(empty, 0700), 0);
	char *good = slurp_file(HARDWARE_DIR "/h100.json");
	assert_non_null(good);
	char *oldx = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
	char *oldp =
	    getenv("SHARDLAB_HARDWARE_PATH") ? strdup(getenv("SHARDLAB_HARDWARE_PATH")) : NULL;
	setenv("XDG_CONFIG_HOME", top, 1);
	setenv("SHARDLAB_HARDWARE_PATH", HARDWARE_DIR, 1);

	/* The shipped file, before the table. */
	const char *from = NULL;
	sl_err err = {0};
	const sl_preset *p = sl_hw_find("a100", &from, &err);
	assert_non_null(p);
	assert_string_equal(from, HARDWARE_DIR "/a100.json");
	assert_same_preset(p, sl_preset_find("a100"));

	/* A user's file of a new name, and one that replaces a shipped one. */
	char text[1 << 14], *at = strstr(good, "\"h100\"");
	snprintf(text, sizeof text, "%.*s\"mybox\"%s", (int)(at - good), good, at + 6);
	snprintf(path, sizeof path, "%s/mybox.json", dir);
	write_file(path, text);
	at = strstr(good, "85899345920");
	snprintf(text, sizeof text, "%.*s1000%s", (int)(at - good), good, at + 11);
	snprintf(path, sizeof path, "%s/h100.json", dir);
	write_file(path, text);
	p = sl_hw_find("mybox", &from, &err);
	if (!p)
		fail_msg("%s", err.msg);
	assert_string_equal(p->name, "mybox");
	assert_true(p->memory == 85899345920.0);
	p = sl_hw_find("h100", &from, &err);
	assert_non_null(p);
	assert_string_equal(from, path);
	assert_true(p->memory == 1000);
	/* The list: the table's names in order (h100 the user's), then mybox. */
	const sl_preset **list;
	int n = 0;
	assert_int_equal(sl_hw_list(&list, &n, NULL, NULL, &err), SL_OK);
	int nb = 0;
	for (const sl_preset *q = sl_presets(); q->name; q++, nb++)
		assert_string_equal(list[nb]->name, q->name);
	assert_int_equal(n, nb + 1);
	assert_string_equal(list[nb]->name, "mybox");
	assert_true(list[0]->memory == 1000);
	free(list);

	/* One bad file in the folder (a directory, a FIFO, bad JSON) is left
	 * out and named; every other preset is still listed (issue 39).  The
	 * FIFO has no writer: opening it must not block. */
	char bads[3][500];
	snprintf(bads[0], sizeof bads[0], "%s/dir.json", dir);
	snprintf(bads[1], sizeof bads[1], "%s/fifo.json", dir);
	snprintf(bads[2], sizeof bads[2], "%s/zbad.json", dir);
	assert_int_equal(mkdir(bads[0], 0700), 0);
	assert_int_equal(mkfifo(bads[1], 0600), 0);
	write_file(bads[2], "{\"name\": ");
	sl_err *bad = NULL;
	int nbad = 0;
	assert_int_equal(sl_hw_list(&list, &n, &bad, &nbad, &err), SL_OK);
	assert_int_equal(n, nb + 1);
	assert_string_equal(list[nb]->name, "mybox");
	free(list);
	assert_int_equal(nbad, 3);
	const char *why[3] = {"not a regular file", "not a regular file", "line 1, column"};
	for (int i = 0; i < 3; i++) {
		char w[1600];
		snprintf(w, sizeof w, "%s: %s", bads[i], why[i]);
		if (strncmp(bad[i].msg, w, strlen(w)) != 0)
			fail_msg("bad file %d: got '%s', want '%s...'", i, bad[i].msg, w);
	}
	free(bad);
	/* Without a place for them, the bad files are only left out. */
	assert_int_equal(sl_hw_list(&list, &n, NULL, NULL, &err), SL_OK);
	assert_int_equal(n, nb + 1);
	free(list);
	for (int i = 0; i < 3; i++)
		assert_int_equal(i ? unlink(bads[i]) : rmdir(bads[i]), 0);

	/* A file whose name is not its file's is refused. */
	snprintf(path, sizeof path, "%s/other.json", dir);
	write_file(path, good);
	assert_null(sl_hw_find("other", NULL, &err));
	char want[700];
	snprintf(want, sizeof want,
	         "%s: name: \"h100\" is not the file's name (other.json holds \"other\")", path);
	assert_string_equal(err.msg, want);
	unlink(path);

	/* No file anywhere: the built-in table; an unknown name lists the
	 * known ones. */
	setenv("XDG_CONFIG_HOME", empty, 1);
	setenv("SHARDLAB_HARDWARE_PATH", empty, 1);
	p = sl_hw_find("b200", &from, &err);
	assert_true(p == sl_preset_find("b200"));
	assert_string_equal(from, "");
	assert_null(sl_hw_find("tpu", NULL, &err));
	assert_string_equal(err.msg, "unknown preset 'tpu' (one of: h100, h200, b200, a100, "
	                             "mi300x, pcie, h100-pcie, host)");
	assert_null(sl_hw_find("h10", NULL, &err));
	assert_string_equal(err.msg,
	                    "unknown preset 'h10': did you mean 'h100'? (one of: h100, h200, "
	                    "b200, a100, mi300x, pcie, h100-pcie, host)");
	/* A relative XDG_CONFIG_HOME is ignored (XDG: it must be absolute);
	 * HOME's .config is used instead. */
	char *oldh = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	setenv("XDG_CONFIG_HOME", "relative", 1);
	setenv("HOME", top, 1);
	snprintf(path, sizeof path, "%s/.config", top);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/.config/shardlab", top);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/.config/shardlab/hardware", top);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/.config/shardlab/hardware/mybox.json", top);
	snprintf(text, sizeof text, "%s", good);
	at = strstr(good, "\"h100\"");
	snprintf(text, sizeof text, "%.*s\"mybox\"%s", (int)(at - good), good, at + 6);
	write_file(path, text);
	p = sl_hw_find("mybox", &from, &err);
	assert_non_null(p);
	assert_string_equal(from, path);

	if (oldh)
		setenv("HOME", oldh, 1);
	else
		unsetenv("HOME");
	if (oldx)
		setenv("XDG_CONFIG_HOME", oldx, 1);
	else
		unsetenv("XDG_CONFIG_HOME");
	if (oldp)
		setenv("SHARDLAB_HARDWARE_PATH", oldp, 1);
	else
		unsetenv("SHARDLAB_HARDWARE_PATH");
	free(oldh);
	free(oldx);
	free(oldp);
	free(good);
	tu_rm_rf(top);
}

/* ---- models ---- */

static void test_shipped_models(void **state)
{
	(void)state;
	/* Brown et al. 2020, Table 2.1; Narayanan et al. 2021, Table 1; Llama
	 * Team 2024, Table 3; Zhang et al. 2022, Table 1 (OPT's batch: 8
	 * sequences for each of 124 replicas, section 2.4). */
	const struct {
		const char *name;
		int layers, hidden, ffn, heads, kv_heads, ffn_kind, norm, seq, batch, vocab, untie;
		const char *cite;
	} want[] = {
	    {"gpt3-175b", 96, 12288, 49152, 96, 0, SL_FFN_GELU, SL_NORM_LAYER, 2048, 1536, 51200, 0,
	     "Brown et al. 2020"},
	    {"megatron-1t", 128, 25600, 102400, 160, 0, SL_FFN_GELU, SL_NORM_LAYER, 2048, 3072,
	     51200, 0, "2104.04473"},
	    {"llama-3-8b", 32, 4096, 14336, 32, 8, SL_FFN_SWIGLU, SL_NORM_RMS, 8192, 2048, 128256,
	     1, "2407.21783"},
	    {"llama-3-70b", 80, 8192, 28672, 64, 8, SL_FFN_SWIGLU, SL_NORM_RMS, 8192, 2048, 128256,
	     1, "2407.21783"},
	    {"llama-3-405b", 126, 16384, 53248, 128, 8, SL_FFN_SWIGLU, SL_NORM_RMS, 8192, 2048,
	     128256, 1, "2407.21783"},
	    {"opt-175b", 96, 12288, 49152, 96, 0, SL_FFN_GELU, SL_NORM_LAYER, 2048, 992, 50272, 0,
	     "2205.01068"},
	};
	/* Llama 3 8B's blocks: 32 (h (h + 2 * 8 * 128) + h h + 3 h f) weights (the
	 * paper's 8.03B less its embeddings and head of 128256 words), and the
	 * biases this model adds (none on QKV): 32 (h + 2f + h). */
	const double w8b = 32.0 * (4096.0 * (4096 + 2048) + 4096.0 * 4096 + 3.0 * 4096 * 14336);
	const double b8b = 32.0 * (4096 + 2.0 * 14336 + 4096);
	char *oldp = getenv("SHARDLAB_MODEL_PATH") ? strdup(getenv("SHARDLAB_MODEL_PATH")) : NULL;
	setenv("SHARDLAB_MODEL_PATH", MODELS_DIR, 1);
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		sl_model_file m;
		sl_err err = {0};
		if (sl_model_file_find(want[i].name, &m, &err))
			fail_msg("%s", err.msg);
		assert_string_equal(m.name, want[i].name);
		assert_int_equal(m.layers, want[i].layers);
		assert_int_equal(m.hidden, want[i].hidden);
		assert_int_equal(m.ffn, want[i].ffn);
		assert_int_equal(m.heads, want[i].heads);
		assert_int_equal(m.kv_heads, want[i].kv_heads);
		assert_int_equal(m.ffn_kind, want[i].ffn_kind);
		assert_int_equal(m.norm, want[i].norm);
		assert_int_equal(m.seq, want[i].seq);
		assert_int_equal(m.batch, want[i].batch);
		assert_int_equal(m.vocab, want[i].vocab);
		assert_int_equal(m.untie, want[i].untie);
		assert_int_equal(m.pos_emb, want[i].untie ? SL_POS_ROPE : SL_POS_LEARNED);
		assert_non_null(strstr(m.source, want[i].cite));
		/* The engine takes the shape as it is. */
		sl_model_spec s;
		sl_model_default(&s);
		s.layers = m.layers;
		s.hidden = m.hidden;
		s.ffn = m.ffn;
		s.heads = m.heads;
		s.kv_heads = m.kv_heads;
		s.ffn_kind = m.ffn_kind;
		s.seq = m.seq;
		s.batch = m.batch;
		assert_int_equal(sl_model_check(&s, &err), SL_OK);
		s.vocab = m.vocab;
		s.untie = m.untie;
		s.pos_emb = m.pos_emb;
		if (i == 2) {
			assert_true((double)sl_model_nparams(&s) == w8b + b8b);
			/* with the untied embeddings and head: the released model's
			 * 8,030,261,248 (its weights, embeddings, head and 65 norm
			 * scales of h) less the scales, plus this model's biases */
			assert_true((double)sl_model_total_params(&s) ==
			            w8b + b8b + 2.0 * 128256 * 4096);
			assert_true((double)sl_model_total_params(&s) ==
			            8030261248.0 - 65.0 * 4096 + b8b);
		}
		/* And the file round-trips through the writer. */
		json_t *j = sl_model_file_to_json(&m);
		sl_model_file back;
		assert_int_equal(sl_model_file_from_json(j, "x", &back, &err), SL_OK);
		json_decref(j);
		assert_memory_equal(&back, &m, sizeof m);
	}
	sl_model_file m;
	sl_err err = {0};
	assert_int_not_equal(sl_model_file_find("llama-2-7b", &m, &err), SL_OK);
	/* As near llama-3-8b as llama-3-70b: no guess. */
	assert_string_equal(err.msg, "unknown model 'llama-2-7b' (one of: gpt3-175b, llama-3-405b, "
	                             "llama-3-70b, llama-3-8b, megatron-1t, opt-175b)");
	assert_int_not_equal(sl_model_file_find("llama-3-8", &m, &err), SL_OK);
	assert_string_equal(err.msg,
	                    "unknown model 'llama-3-8': did you mean 'llama-3-8b'? (one of: "
	                    "gpt3-175b, llama-3-405b, llama-3-70b, llama-3-8b, megatron-1t, "
	                    "opt-175b)");
	if (oldp)
		setenv("SHARDLAB_MODEL_PATH", oldp, 1);
	else
		unsetenv("SHARDLAB_MODEL_PATH");
	free(oldp);
}

static void test_malformed_models(void **state)
{
	(void)state;
	const struct {
		const char *text, *msg;
	} cases[] = {
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"seq\": 8, \"batch\": 4, \"vocabulary\": 50000}",
	     "vocabulary: unknown key (known: name, title, source, layers, hidden, ffn, heads, "
	     "seq, batch, kv_heads, ffn_kind, norm, vocab, untie_embeddings, position_embedding)"},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"seq\": 8, \"batch\": 4, \"vocab\": -1}",
	     "vocab: -1 is out of range (0 to 4194304)"},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"seq\": 8, \"batch\": 4, \"untie_embeddings\": 1}",
	     "untie_embeddings: must be true or false"},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"seq\": 8, \"batch\": 4, \"position_embedding\": "
	     "\"alibi\"}",
	     "position_embedding: must be \"learned\" or \"rope\""},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"norm\": \"batchnorm\", \"seq\": 8, \"batch\": 4}",
	     "norm: must be \"none\", \"layernorm\" or \"rmsnorm\""},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"kv_heads\": 3, \"seq\": 8, \"batch\": 4}",
	     "kv_heads: 3 key/value heads do not group 4 heads"},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"ffn_kind\": \"relu\", \"seq\": 8, \"batch\": 4}",
	     "ffn_kind: must be \"gelu\" or \"swiglu\""},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 5, \"seq\": 8, \"batch\": 4}",
	     "heads: 5 heads do not divide hidden 64"},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 0, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"seq\": 8, \"batch\": 4}",
	     "layers: 0 is out of range (1 to 4096)"},
	    {"{\"name\": \"m\", \"title\": \"t\\u2069\", \"source\": \"s\", \"layers\": 2, "
	     "\"hidden\": 64, \"ffn\": 256, \"heads\": 4, \"seq\": 8, \"batch\": 4}",
	     "title: holds bidirectional isolate U+2069 at byte 2"},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\\u0085\", \"layers\": 2, "
	     "\"hidden\": 64, \"ffn\": 256, \"heads\": 4, \"seq\": 8, \"batch\": 4}",
	     "source: holds control character U+0085 at byte 2"},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"seq\": 8, \"batch\": 4, \"vocab\": 1e-310}",
	     "vocab: 9.9999999999999694e-311 is subnormal: too close to zero to compute with (0 to "
	     "4194304)"},
	    {"{\"name\": \"m\", \"title\": \"t\", \"source\": \"s\", \"layers\": 2, \"hidden\": "
	     "64, "
	     "\"ffn\": 256, \"heads\": 4, \"batch\": 4}",
	     "seq: missing"},
	};
	char path[300];
	tu_tmpname(path, sizeof path, "sl-model-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		write_file(path, cases[i].text);
		sl_model_file m;
		sl_err err = {0};
		char want[600];
		snprintf(want, sizeof want, "%s: %s", path, cases[i].msg);
		assert_int_equal(sl_model_file_load(path, &m, &err), SL_EINVAL);
		assert_string_equal(err.msg, want);
	}
	unlink(path);
}

/* sl_json_dump_exact: the fewest digits that read back exactly. */
static void test_dump_exact(void **state)
{
	(void)state;
	json_t *a = json_pack("[f, f, f, f]", 2e-6, 0.1 + 0.2, 989e12, 1.0 / 3);
	char *s = sl_json_dump_exact(a);
	json_t *b = json_loads(s, 0, NULL);
	assert_true(json_equal(a, b));
	json_decref(b);
	free(s);
	json_decref(a);
	a = json_pack("[f]", 2e-6);
	s = sl_json_dump_exact(a);
	assert_string_equal(s, "[\n  2e-6\n]\n");
	free(s);
	json_decref(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shipped_files_are_the_table),
	    cmocka_unit_test(test_h100_figures),
	    cmocka_unit_test(test_malformed_files),
	    cmocka_unit_test(test_lookup_order),
	    cmocka_unit_test(test_shipped_models),
	    cmocka_unit_test(test_malformed_models),
	    cmocka_unit_test(test_dump_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
