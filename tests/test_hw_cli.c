/* SPDX-License-Identifier: MIT */
/* test_hw_cli.c - --hardware=FILE, --list-presets --format=json and
 * --model=NAME|FILE from the command line: a file written from the list
 * gives exactly the preset's figures, options override a file as they do a
 * preset, a malformed file gets one error line and nothing else, and the
 * user's own presets are found under $XDG_CONFIG_HOME. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "tmputil.h"

#include "clirun.h"

static char scratch[300];

static int setup(void **state)
{
	(void)state;
	tu_tmpname(scratch, sizeof scratch, "sl-hwcli-XXXXXX");
	assert_non_null(mkdtemp(scratch));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rm_rf(scratch);
	return 0;
}

/* Drop what depends on the host's load: wall and CPU seconds. */
static void drop_wall(json_t *j)
{
	if (json_is_object(j)) {
		json_object_del(j, "wall_s");
		json_object_del(j, "cpu_s");
		const char *k;
		json_t *v;
		json_object_foreach(j, k, v) drop_wall(v);
	} else if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach(j, i, v) drop_wall(v);
	}
}

static json_t *run_json_stable(const char *args)
{
	json_t *j = tu_run_json(args);
	drop_wall(j);
	return j;
}

static void expect_same(const char *a, const char *b)
{
	json_t *ja = run_json_stable(a), *jb = run_json_stable(b);
	if (!json_equal(ja, jb)) {
		char *sa = json_dumps(ja, JSON_COMPACT), *sb = json_dumps(jb, JSON_COMPACT);
		fail_msg("'%s' and '%s' differ:\n%.2000s\n%.2000s", a, b, sa, sb);
	}
	json_decref(ja);
	json_decref(jb);
}

/* --list-presets --format=json's presets, each a hardware file; the
 * report's version keys first, as every command's. */
static json_t *list_json(void)
{
	json_t *j = tu_run_json("--list-presets --format=json");
	assert_string_equal(json_object_iter_key(json_object_iter(j)), "shardlab_version");
	assert_true(json_is_integer(json_object_get(j, "format_version")));
	json_t *a = json_incref(json_object_get(j, "presets"));
	assert_true(json_is_array(a));
	json_decref(j);
	return a;
}

static void write_entry(const json_t *e, const char *path)
{
	assert_int_equal(json_dump_file(e, path, JSON_INDENT(2) | JSON_REAL_PRECISION(17)), 0);
}

#define MODEL "--layers=4 --hidden=256 --ffn=1024 --heads=4 --seq=64 --batch=32"

/* Every entry of the list, as a file, gives the preset's figures: the same
 * plan and the same dry-run training step, field by field. */
static void test_every_preset_as_file(void **state)
{
	(void)state;
	json_t *list = list_json();
	assert_int_equal(json_array_size(list), 8);
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
	{
		const char *name = json_string_value(json_object_get(e, "name"));
		assert_non_null(name);
		char path[400], a[1200], b[1200];
		snprintf(path, sizeof path, "%s/%s.json", scratch, name);
		write_entry(e, path);
		/* The host's rate is measured by each process: pin it in both. */
		const char *pin = strcmp(name, "host") == 0 ? " --flops=1TFLOP/s" : "";
		snprintf(a, sizeof a,
		         "plan --devices=16 " MODEL " --top=5 --format=json --preset=%s%s", name,
		         pin);
		snprintf(b, sizeof b,
		         "plan --devices=16 " MODEL " --top=5 --format=json --hardware=%s%s", path,
		         pin);
		expect_same(a, b);
		snprintf(a, sizeof a,
		         "train --dry-run --tp=2 --pp=2 --dp=4 " MODEL " --steps=1 --format=json "
		         "--preset=%s%s",
		         name, pin);
		snprintf(b, sizeof b,
		         "train --dry-run --tp=2 --pp=2 --dp=4 " MODEL " --steps=1 --format=json "
		         "--hardware=%s%s",
		         path, pin);
		expect_same(a, b);
	}
	json_decref(list);
}

/* The list is the shipped files, entry by entry, in the table's order. */
static void test_list_is_the_files(void **state)
{
	(void)state;
	json_t *list = list_json();
	const char *order[] = {"h100",   "h200", "b200",      "a100",
	                       "mi300x", "pcie", "h100-pcie", "host"};
	for (size_t i = 0; i < 8; i++) {
		json_t *e = json_array_get(list, i);
		assert_string_equal(json_string_value(json_object_get(e, "name")), order[i]);
		char path[400];
		snprintf(path, sizeof path, "%s/%s.json", HARDWARE_DIR, order[i]);
		json_error_t je;
		json_t *f = json_load_file(path, 0, &je);
		if (!f)
			fail_msg("%s: %s", path, je.text);
		assert_true(json_equal(e, f));
		json_decref(f);
	}
	/* The text list gives every source whole (its last word is there, not
	 * cut off) and each device memory's share as the files have it. */
	tu_result r;
	tu_run("--list-presets", &r);
	assert_int_equal(r.status, 0);
	for (size_t i = 0; i < 8; i++) {
		const char *src =
		    json_string_value(json_object_get(json_array_get(list, i), "source"));
		const char *last = strrchr(src, ' ');
		assert_non_null(last);
		if (!strstr(r.out, last + 1))
			fail_msg("%s: the source's last word '%s' is not listed", order[i],
			         last + 1);
	}
	assert_non_null(strstr(r.out, "memory 3.35 TB/s, of which a measured copy reaches 76.9%"));
	assert_non_null(strstr(r.out, "memory 2.04 TB/s, of which a measured copy reaches 78.1%"));
	assert_non_null(
	    strstr(r.out, "memory 8.00 TB/s, all of it taken as reached (no copy measured)"));
	tu_result_free(&r);
	json_decref(list);
}

/* Explicit options win over the file, in either order. */
static void test_options_override_file(void **state)
{
	(void)state;
	char path[400], args[800];
	snprintf(path, sizeof path, HARDWARE_DIR "/a100.json");
	for (int k = 0; k < 2; k++) {
		if (k == 0)
			snprintf(
			    args, sizeof args,
			    "plan --devices=8 " MODEL " --format=json "
			    "--hardware=%s --bandwidth=100GB/s --memory=1GiB --efficiency=ideal",
			    path);
		else
			snprintf(
			    args, sizeof args,
			    "plan --devices=8 " MODEL " --format=json "
			    "--efficiency=ideal --bandwidth=100GB/s --memory=1GiB --hardware=%s",
			    path);
		json_t *j = tu_run_json(args);
		json_t *c = json_object_get(j, "cluster");
		assert_string_equal(json_string_value(json_object_get(c, "preset")), "a100");
		assert_true(tu_num(c, "memory_per_device_bytes") == 1073741824.0);
		assert_true(tu_num(json_object_get(c, "intra"), "bandwidth_bytes_per_s") == 100e9);
		/* The rest is the file's (ideal: links at their line rate). */
		assert_true(tu_num(json_object_get(c, "inter"), "bandwidth_bytes_per_s") == 25e9);
		assert_true(tu_num(c, "device_flop_per_s") == 312e12);
		json_decref(j);
	}
	/* Realistic (a100's default): the file's links at its achievable share. */
	json_error_t je;
	json_t *file = json_load_file(path, 0, &je);
	assert_non_null(file);
	double frac = tu_num(json_object_get(file, "inter_node"), "achievable_fraction");
	assert_true(frac > 0 && frac <= 1);
	json_decref(file);
	snprintf(args, sizeof args, "plan --devices=8 " MODEL " --format=json --hardware=%s", path);
	json_t *jr = tu_run_json(args);
	assert_true(tu_num(json_object_get(json_object_get(jr, "cluster"), "inter"),
	                   "bandwidth_bytes_per_s") == 25e9 * frac);
	json_decref(jr);
	/* --precision=fp32 takes the file's FP32 rate. */
	snprintf(args, sizeof args,
	         "plan --devices=8 " MODEL " --format=json --hardware=%s "
	         "--precision=fp32",
	         path);
	json_t *j = tu_run_json(args);
	assert_true(tu_num(json_object_get(j, "cluster"), "device_flop_per_s") == 19.5e12);
	json_decref(j);
}

/* A file that is not right: one line naming file and field, exit 2,
 * nothing on stdout. */
static void test_malformed_file_one_line(void **state)
{
	(void)state;
	char path[400], args[800], want[600];
	snprintf(path, sizeof path, "%s/bad.json", scratch);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"name\": \"x\", \"title\": \"t\", \"source\": \"s\", \"device\": {}}\n", f);
	fclose(f);
	const char *cmds[] = {("plan --devices=8 " MODEL), "train --dry-run --tp=2", "run --m=64",
	                      "coll --op=allreduce --bytes=1MiB"};
	for (int k = 0; k < 4; k++) {
		snprintf(args, sizeof args, "%s --hardware=%s", cmds[k], path);
		tu_result r;
		tu_run(args, &r);
		tu_expect_one_error(args, 2, &r);
		snprintf(want, sizeof want, "%s: devices_per_node: missing", path);
		if (!strstr(r.err, want))
			fail_msg("'%s': want '%s' in [%s]", args, want, r.err);
		assert_string_equal(r.out, "");
		tu_result_free(&r);
	}
	/* h100.json with a subnormal GEMM fraction (issue 39): plan ranked
	 * layouts at "0 s (-nan%)", train --dry-run said "step time inf s".
	 * Refused by name instead, by every command. */
	json_t *h = json_load_file(HARDWARE_DIR "/h100.json", 0, NULL);
	assert_non_null(h);
	json_object_set_new(json_object_get(h, "device"), "gemm_peak_fraction", json_real(5e-324));
	write_entry(h, path);
	json_decref(h);
	const char *cmds2[] = {("plan --devices=64 " MODEL), "train --dry-run --tp=2",
	                       "run --m=64"};
	for (int k = 0; k < 3; k++) {
		snprintf(args, sizeof args, "%s --hardware=%s", cmds2[k], path);
		tu_result r;
		tu_run(args, &r);
		tu_expect_one_error(args, 2, &r);
		snprintf(want, sizeof want,
		         "%s: device.gemm_peak_fraction: 4.9406564584124654e-324 "
		         "is subnormal",
		         path);
		if (!strstr(r.err, want))
			fail_msg("'%s': want '%s' in [%s]", args, want, r.err);
		assert_string_equal(r.out, "");
		tu_result_free(&r);
	}
	/* Both --preset and --hardware: one of them. */
	snprintf(args, sizeof args, "plan --devices=8 --preset=h100 --hardware=%s",
	         HARDWARE_DIR "/a100.json");
	tu_result r;
	tu_run(args, &r);
	tu_expect_one_error(args, 2, &r);
	assert_non_null(strstr(r.err, "--preset and --hardware both choose the hardware"));
	tu_result_free(&r);
}

/* $XDG_CONFIG_HOME/shardlab/hardware/NAME.json adds a preset by name, to
 * the list too. */
static void test_user_preset(void **state)
{
	(void)state;
	char dir[400], path[500];
	snprintf(dir, sizeof dir, "%s/cfg", scratch);
	mkdir(dir, 0700);
	snprintf(dir, sizeof dir, "%s/cfg/shardlab", scratch);
	mkdir(dir, 0700);
	snprintf(dir, sizeof dir, "%s/cfg/shardlab/hardware", scratch);
	mkdir(dir, 0700);
	json_t *list = list_json();
	json_t *e = json_deep_copy(json_array_get(list, 3)); /* a100 */
	json_decref(list);
	json_object_set_new(e, "name", json_string("lab-a100"));
	json_object_set_new(json_object_get(e, "intra_node"), "bandwidth_bytes_per_s",
	                    json_real(123e9));
	snprintf(path, sizeof path, "%s/lab-a100.json", dir);
	write_entry(e, path);
	char *old = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
	char cfg[400];
	snprintf(cfg, sizeof cfg, "%s/cfg", scratch);
	setenv("XDG_CONFIG_HOME", cfg, 1);

	json_t *j = tu_run_json("plan --devices=8 " MODEL " --format=json --preset=lab-a100 "
	                        "--efficiency=ideal");
	json_t *c = json_object_get(j, "cluster");
	assert_string_equal(json_string_value(json_object_get(c, "preset")), "lab-a100");
	assert_true(tu_num(json_object_get(c, "intra"), "bandwidth_bytes_per_s") == 123e9);
	json_decref(j);
	list = list_json();
	assert_int_equal(json_array_size(list), 9);
	assert_true(json_equal(json_array_get(list, 8), e));
	json_decref(list);
	tu_result r;
	tu_run("--list-presets", &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "lab-a100"));
	/* It says which file each preset came from. */
	char line[600];
	snprintf(line, sizeof line, "file: %s", path);
	assert_non_null(strstr(r.out, line));
	assert_non_null(strstr(r.out, "file: " HARDWARE_DIR "/h100.json"));
	tu_result_free(&r);
	/* A malformed user file is left out with its one line; the other
	 * presets are all listed (issue 39), the JSON's presets hold only
	 * hardware files and its unreadable the line.  A directory and a FIFO named .json likewise,
	 * and the FIFO, without a writer, does not block the listing. */
	FILE *f = fopen(path, "w");
	fputs("{}", f);
	fclose(f);
	tu_run("--list-presets --format=json", &r);
	tu_expect_one_error("--list-presets", 0, &r);
	assert_non_null(strstr(r.err, "lab-a100.json: name: missing (left out of the list)"));
	json_t *got = json_loads(r.out, JSON_PRESERVE_ORDER, NULL);
	assert_non_null(got);
	assert_int_equal(json_array_size(json_object_get(got, "presets")), 8);
	json_t *bad = json_object_get(got, "unreadable");
	assert_int_equal(json_array_size(bad), 1);
	assert_non_null(
	    strstr(json_string_value(json_array_get(bad, 0)), "lab-a100.json: name: missing"));
	json_decref(got);
	tu_result_free(&r);
	char sub[600];
	snprintf(sub, sizeof sub, "%s/dir.json", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof sub, "%s/fifo.json", dir);
	assert_int_equal(mkfifo(sub, 0600), 0);
	tu_run("--list-presets", &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "h100 "));
	assert_non_null(strstr(r.out, "host "));
	assert_null(strstr(r.out, "lab-a100"));
	assert_int_equal(tu_count_lines(r.err), 3);
	assert_non_null(strstr(r.err, "/dir.json: not a regular file (left out of the list)"));
	assert_non_null(strstr(r.err, "/fifo.json: not a regular file (left out of the list)"));
	assert_non_null(strstr(r.err, "lab-a100.json: name: missing"));
	tu_result_free(&r);
	unlink(sub);
	snprintf(sub, sizeof sub, "%s/dir.json", dir);
	rmdir(sub);

	if (old)
		setenv("XDG_CONFIG_HOME", old, 1);
	else
		unsetenv("XDG_CONFIG_HOME");
	free(old);
	json_decref(e);
}

/* --model: the shipped shapes, options over them in either order, a file,
 * and unknown names. */
static void test_model_option(void **state)
{
	(void)state;
	const char *forms[] = {
	    "train --dry-run --tp=8 --steps=1 --format=json --model=gpt3-175b --layers=2 --batch=8",
	    "train --dry-run --tp=8 --steps=1 --format=json --layers=2 --batch=8 --model=gpt3-175b",
	    "train --dry-run --tp=8 --steps=1 --format=json --layers=2 --batch=8 "
	    "--model=" MODELS_DIR "/gpt3-175b.json",
	};
	for (int k = 0; k < 3; k++) {
		json_t *j = tu_run_json(forms[k]);
		json_t *m = json_object_get(j, "model");
		assert_true(tu_num(m, "layers") == 2);
		assert_true(tu_num(m, "batch") == 8);
		assert_true(tu_num(m, "hidden") == 12288);
		assert_true(tu_num(m, "ffn") == 49152);
		assert_true(tu_num(m, "heads") == 96);
		assert_true(tu_num(m, "seq") == 2048);
		json_decref(j);
	}
	/* Megatron's 1T, whose MLP is wider than 65536. */
	json_t *j =
	    tu_run_json("train --dry-run --tp=8 --steps=1 --format=json --model=megatron-1t "
	                "--layers=1 --batch=1");
	json_t *m = json_object_get(j, "model");
	assert_true(tu_num(m, "hidden") == 25600);
	assert_true(tu_num(m, "ffn") == 102400);
	assert_true(tu_num(m, "heads") == 160);
	json_decref(j);
	/* plan takes --model too. */
	j = tu_run_json("plan --devices=8 --model=gpt3-175b --layers=2 --batch=8 --seq=256 "
	                "--format=json --top=1");
	m = json_object_get(j, "model");
	assert_true(tu_num(m, "hidden") == 12288);
	assert_true(tu_num(m, "layers") == 2);
	assert_true(tu_num(m, "seq") == 256);
	json_decref(j);

	const char *bad[] = {"train --dry-run --model=llama-2-7b",
	                     "plan --model=/nonexistent.json"};
	const char *says[] = {"unknown model 'llama-2-7b' (one of: gpt3-175b, llama-3-405b, "
	                      "llama-3-70b, llama-3-8b, megatron-1t, opt-175b)",
	                      "/nonexistent.json: cannot open: No such file or directory"};
	for (int k = 0; k < 2; k++) {
		tu_result r;
		tu_run(bad[k], &r);
		tu_expect_one_error(bad[k], 2, &r);
		if (!strstr(r.err, says[k]))
			fail_msg("'%s': want '%s' in [%s]", bad[k], says[k], r.err);
		assert_string_equal(r.out, "");
		tu_result_free(&r);
	}
}

/* With --load the model comes from the checkpoint unless options give
 * it: --model gives the whole shape, so a different one is refused, as an
 * explicit --layers is; the sandbox refuses model options with --load. */
static void test_model_with_load(void **state)
{
	(void)state;
	char args[1200], ck[400], small[400], other[400];
	snprintf(ck, sizeof ck, "%s/ck", scratch);
	snprintf(args, sizeof args,
	         "train --tp=2 --layers=2 --hidden=16 --ffn=32 --heads=2 --seq=4 --batch=2 "
	         "--steps=1 --save=%s",
	         ck);
	tu_result r;
	tu_run(args, &r);
	assert_int_equal(r.status, 0);
	tu_result_free(&r);
	const char *shape = "\"title\": \"t\", \"source\": \"s\", \"hidden\": 16, \"ffn\": 32, "
	                    "\"heads\": 2, \"seq\": 4, \"batch\": 2";
	snprintf(small, sizeof small, "%s/small.json", scratch);
	snprintf(other, sizeof other, "%s/other.json", scratch);
	FILE *f = fopen(small, "w");
	fprintf(f, "{\"name\": \"small\", \"layers\": 2, %s}\n", shape);
	fclose(f);
	f = fopen(other, "w");
	fprintf(f, "{\"name\": \"other\", \"layers\": 3, %s}\n", shape);
	fclose(f);
	snprintf(args, sizeof args, "train --load=%s --model=%s --steps=1 --format=json", ck,
	         small);
	json_t *j = tu_run_json(args);
	assert_true(tu_num(json_object_get(j, "model"), "layers") == 2);
	json_decref(j);
	snprintf(args, sizeof args, "train --load=%s --model=%s --steps=1", ck, other);
	tu_run(args, &r);
	tu_expect_one_error(args, 2, &r);
	assert_non_null(strstr(r.err, "holds another architecture"));
	tu_result_free(&r);
	/* the sandbox takes the whole model from the checkpoint: a shape, a
	 * dropout or a norm given with --load is refused, not ignored */
	char with_model[420];
	snprintf(with_model, sizeof with_model, "--model=%s", small);
	const char *given[] = {with_model, "--attention-dropout=0.1", "--hidden-dropout=0.1",
	                       "--norm=rmsnorm"};
	for (size_t i = 0; i < sizeof given / sizeof *given; i++) {
		snprintf(args, sizeof args, "sandbox --load=%s %s", ck, given[i]);
		tu_run(args, &r);
		tu_expect_one_error(args, 2, &r);
		assert_non_null(strstr(r.err, "drop the model options"));
		tu_result_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_preset_as_file),
	    cmocka_unit_test(test_list_is_the_files),
	    cmocka_unit_test(test_options_override_file),
	    cmocka_unit_test(test_malformed_file_one_line),
	    cmocka_unit_test(test_user_preset),
	    cmocka_unit_test(test_model_option),
	    cmocka_unit_test(test_model_with_load),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
