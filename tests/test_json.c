/* SPDX-License-Identifier: MIT */
/* test_json.c - every command's --format=json against the naming scheme
 * the man page states (shardlab(1), OUTPUT, "JSON names").  The unit
 * suffixes, the ratio suffixes and the unitless keys are read from the man
 * page itself, so the documented scheme is the one tested; every key is
 * checked by its pattern, so a field a command gains passes when it follows
 * the rules, with no list of fields to keep here. */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clirun.h"
#include "testutil.h"

#define MAXW 128

struct words {
	int n;
	char w[MAXW][40];
};

static struct words units, ratios, unitless;

/* The first word of each line between ".\" BEGIN name" and ".\" END name",
 * without its roff request and trailing punctuation. */
static void read_list(const char *man, const char *name, struct words *out)
{
	char begin[64], end[64];
	snprintf(begin, sizeof begin, ".\\\" BEGIN %s", name);
	snprintf(end, sizeof end, ".\\\" END %s", name);
	const char *p = strstr(man, begin);
	if (!p)
		fail_msg("the man page has no %s list", name);
	const char *q = strstr(p, end);
	assert_non_null(q);
	p = strchr(p, '\n') + 1;
	out->n = 0;
	while (p < q) {
		const char *eol = strchr(p, '\n');
		if (strncmp(p, ".BR ", 4) == 0 || strncmp(p, ".B ", 3) == 0) {
			p = strchr(p, ' ') + 1;
			size_t len = strcspn(p, " ,;\n");
			assert_true(len > 0 && len < sizeof out->w[0] && out->n < MAXW);
			memcpy(out->w[out->n], p, len);
			out->w[out->n++][len] = '\0';
		}
		p = eol + 1;
	}
	if (out->n == 0)
		fail_msg("the man page's %s list is empty", name);
}

static int in(const struct words *ws, const char *k)
{
	for (int i = 0; i < ws->n; i++)
		if (strcmp(ws->w[i], k) == 0)
			return 1;
	return 0;
}

static int ends_with(const char *k, const char *suffix)
{
	size_t a = strlen(k), b = strlen(suffix);
	return a >= b && strcmp(k + a - b, suffix) == 0;
}

/* k names a unit: it ends with one of the documented suffixes, or is the
 * unit's name ("flop"). */
static int has_unit(const char *k)
{
	for (int i = 0; i < units.n; i++)
		if (ends_with(k, units.w[i]) || strcmp(k, units.w[i] + 1) == 0)
			return 1;
	return 0;
}

static int is_snake(const char *k)
{
	if (!islower((unsigned char)k[0]))
		return 0;
	for (const char *p = k; *p; p++) {
		if (*p == '_' && (p[1] == '_' || p[1] == '\0'))
			return 0;
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
			return 0;
	}
	return 1;
}

/* Unit words only at the end (bytes, flop, s), and other spellings of
 * units nowhere. */
static const char *bad_word(const char *k)
{
	static const char *const never[] = {"flops", "mem", "bps", "sec", "secs", "ms", "us",
	                                    "ns",    "kib", "mib", "gib", "kb",   "mb", "gb"};
	static const char *const last[] = {"bytes", "flop", "s"};
	char buf[128];
	snprintf(buf, sizeof buf, "%s", k);
	char *save, *w = strtok_r(buf, "_", &save);
	while (w) {
		char *next = strtok_r(NULL, "_", &save);
		for (size_t i = 0; i < sizeof never / sizeof *never; i++)
			if (strcmp(w, never[i]) == 0)
				return never[i];
		for (size_t i = 0; i < sizeof last / sizeof *last; i++)
			/* ..._bytes_per_s and ..._flop_per_s are the rates */
			if (strcmp(w, last[i]) == 0 && next && strcmp(next, "per") != 0)
				return last[i];
		w = next;
	}
	return NULL;
}

static int is_number(const json_t *v)
{
	if (json_is_number(v))
		return 1;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return 0;
	size_t i;
	json_t *x;
	json_array_foreach(v, i, x) if (!json_is_number(x) && !json_is_null(x)) return 0;
	return 1;
}

static int nkeys;

/* Every key under v; unit_parent: the object's key names the unit of its
 * values. */
static void walk(const char *what, const char *path, const json_t *v, int unit_parent)
{
	if (json_is_array(v)) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) walk(what, path, x, unit_parent);
		return;
	}
	if (!json_is_object(v))
		return;
	const char *k;
	json_t *x;
	json_object_foreach((json_t *)v, k, x)
	{
		char sub[512];
		snprintf(sub, sizeof sub, "%s.%s", path, k);
		nkeys++;
		if (!is_snake(k))
			fail_msg("%s: %s is not snake_case", what, sub);
		const char *w = bad_word(k);
		if (w)
			fail_msg("%s: %s spells a unit '%s' the scheme does not", what, sub, w);
		int unit = has_unit(k);
		int ratio = 0;
		for (int i = 0; i < ratios.n; i++)
			ratio |= ends_with(k, ratios.w[i]);
		if (is_number(x) && !unit && !ratio && !unit_parent && !in(&unitless, k))
			fail_msg("%s: %s is a number with no unit in its name and not a documented "
			         "count or ratio",
			         what, sub);
		if (strcmp(k, "manifest") == 0)
			continue; /* the checkpoint's own format, outside the scheme */
		walk(what, sub, x, unit && json_is_object(x));
	}
}

static json_t *check_report(const char *args, int want_status)
{
	tu_result r;
	tu_run(args, &r);
	if (r.status != want_status)
		fail_msg("'%s' exited %d, want %d: %s", args, r.status, want_status, r.err);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	if (!j)
		fail_msg("'%s': stdout is not JSON (%s): '%.200s'", args, je.text, r.out);
	/* The versions first. */
	const char *k1 = json_object_iter_key(json_object_iter(j));
	const char *k2 = json_object_iter_key(json_object_iter_next(j, json_object_iter(j)));
	if (!k1 || !k2 || strcmp(k1, "shardlab_version") || strcmp(k2, "format_version"))
		fail_msg("'%s': the first keys are %s and %s", args, k1 ? k1 : "-", k2 ? k2 : "-");
	assert_string_equal(json_string_value(json_object_get(j, "shardlab_version")),
	                    PACKAGE_VERSION);
	assert_int_equal(json_integer_value(json_object_get(j, "format_version")), 1);
	nkeys = 0;
	walk(args, "", j, 0);
	printf("# %s: %d keys follow the scheme\n", args, nkeys);
	tu_result_free(&r);
	return j;
}

static char man[1 << 20];

static int setup(void **state)
{
	(void)state;
	FILE *f = fopen(SHARDLAB_MAN, "r");
	assert_non_null(f);
	size_t n = fread(man, 1, sizeof man - 1, f);
	fclose(f);
	man[n] = '\0';
	read_list(man, "json-units", &units);
	read_list(man, "json-ratio-suffixes", &ratios);
	read_list(man, "json-unitless", &unitless);
	return 0;
}

#define MODEL "--layers=2 --hidden=64 --ffn=256 --heads=4 --seq=16 --batch=8"

static void test_every_command(void **state)
{
	(void)state;
	const char *cmds[] = {
	    "run --devices=3 --m=40 --k=50 --n=30 --strategy=rowwise --format=json",
	    "run --devices=4 --dry-run --format=json",
	    "coll --devices=4 -b 1M -e 4M --format=json",
	    "coll --op=alltoall --devices=3 --bytes=12K --format=json",
	    "train --devices=4 --tp=2 --pp=2 --microbatches=2 --steps=2 --format=json",
	    "train --devices=4 --dp=4 --zero1 --steps=1 --dry-run --format=json",
	    "compare --devices=4 --format=json",
	    "plan --devices=8 --devices-per-node=4 " MODEL " --format=json",
	    "check --format=json 01 02",
	    "lesson --headless --demo --format=json 01",
	    "sandbox --devices=2 --m=32 --k=48 --n=64 --format=json",
	};
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
		json_decref(check_report(cmds[i], 0));

	/* ckpt inspect: the versions, and the manifest as it is. */
	const char *tmp = getenv("TMPDIR");
	char dir[512], args[700];
	snprintf(dir, sizeof dir, "%s/test_json.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(args, sizeof args, "train --devices=2 --tp=2 --steps=1 --save=%s/ck --format=json",
	         dir);
	json_t *t = check_report(args, 0);
	assert_non_null(json_object_get(t, "checkpoint"));
	json_decref(t);
	snprintf(args, sizeof args, "ckpt inspect %s/ck --format=json", dir);
	json_t *j = check_report(args, 0);
	assert_non_null(json_object_get(json_object_get(j, "manifest"), "tensors"));
	json_decref(j);
	snprintf(args, sizeof args, "ckpt verify %s/ck --format=json", dir);
	j = check_report(args, 0);
	assert_true(json_is_true(json_object_get(j, "ok")));
	json_decref(j);
	snprintf(args, sizeof args, "rm -rf '%s'", dir);
	assert_int_equal(system(args), 0);
}

/* --format=csv: the header's names follow the same rules, the numeric
 * columns (by the first row) the number rule; every row has the header's
 * cells. */
static void test_csv_headers(void **state)
{
	(void)state;
	const char *cmds[] = {
	    "coll --devices=4 -b 1M -e 4M --format=csv",
	    "compare --devices=4 --format=csv",
	    /* two nodes: groups that cross them, so every crossing cell is filled */
	    "plan --devices=16 --devices-per-node=8 " MODEL " --format=csv",
	};
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		tu_result r;
		tu_run(cmds[i], &r);
		assert_int_equal(r.status, 0);
		char *save, *hdr = strtok_r(r.out, "\n", &save), *row = strtok_r(NULL, "\n", &save);
		assert_non_null(hdr);
		assert_non_null(row);
		int ncols = 0;
		char names[64][64];
		for (char *s2, *k = strtok_r(hdr, ",", &s2); k; k = strtok_r(NULL, ",", &s2)) {
			assert_true(ncols < 64);
			snprintf(names[ncols++], sizeof names[0], "%s", k);
			if (!is_snake(k) || bad_word(k))
				fail_msg("%s: column '%s' breaks the scheme", cmds[i], k);
		}
		for (int rows = 1; row; rows++, row = strtok_r(NULL, "\n", &save)) {
			int cells = 1;
			for (const char *c = row; *c; c++)
				cells += *c == ',';
			if (cells != ncols)
				fail_msg("%s: row %d has %d cells, the header %d", cmds[i], rows,
				         cells, ncols);
			if (rows > 1)
				continue;
			char cp[1024];
			snprintf(cp, sizeof cp, "%s", row);
			char *c = cp;
			for (int col = 0; col < ncols; col++) {
				char *end = strchr(c, ',');
				if (end)
					*end = '\0';
				char *e;
				strtod(c, &e);
				int number = *c && !*e;
				const char *k = names[col];
				int ratio = 0;
				for (int q = 0; q < ratios.n; q++)
					ratio |= ends_with(k, ratios.w[q]);
				if (number && !has_unit(k) && !ratio && !in(&unitless, k))
					fail_msg(
					    "%s: column %s holds numbers with no unit in its name",
					    cmds[i], k);
				c = end ? end + 1 : c + strlen(c);
			}
		}
		tu_result_free(&r);
	}
}

/* null for what is not set; the figure when it is. */
static void test_null_for_unset(void **state)
{
	(void)state;
	json_t *j = check_report("run --devices=2 --m=8 --k=8 --n=8 --format=json", 0);
	assert_true(json_is_null(json_object_get(j, "slowdown")));
	json_decref(j);
	j = check_report("run --devices=2 --m=8 --k=8 --n=8 --slowdown=2 --format=json", 0);
	assert_true(json_number_value(json_object_get(j, "slowdown")) == 2);
	json_decref(j);
}

/* A failure under --format=json answers with an error object, and the same
 * exit status as without it. */
static void test_error_object(void **state)
{
	(void)state;
	static const struct {
		const char *args;
		int status;
		const char *says;
	} cases[] = {
	    /* out of device memory: the run fails */
	    {"train --devices=2 --tp=2 --memory=1MiB --format=json", 1, "out of memory"},
	    {"run --memory=1MiB --m=1024 --k=1024 --n=1024 --format=json", 1, "out of memory"},
	    /* usage errors, before and after --format=json on the line */
	    {"coll --op=bad --format=json", 2, "--op: unknown value"},
	    {"plan --format=json --devices=0", 2, "devices"},
	    {"check --format=json", 2, "no lesson given"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		json_t *j = check_report(cases[i].args, cases[i].status);
		json_t *e = json_object_get(j, "error");
		if (!json_is_object(e))
			fail_msg("'%s': no error object", cases[i].args);
		const char *msg = json_string_value(json_object_get(e, "message"));
		if (!msg || !strstr(msg, cases[i].says))
			fail_msg("'%s': message '%s' does not say '%s'", cases[i].args,
			         msg ? msg : "", cases[i].says);
		assert_int_equal(json_integer_value(json_object_get(e, "exit_status")),
		                 cases[i].status);
		json_decref(j);
	}
	/* The same exit status without JSON, and nothing on stdout. */
	tu_result r;
	tu_run("train --devices=2 --tp=2 --memory=1MiB", &r);
	assert_int_equal(r.status, 1);
	tu_result_free(&r);
}

/* The rules themselves: what they refuse. */
static void test_rules_refuse(void **state)
{
	(void)state;
	assert_false(is_snake("bandwidth_Bps"));
	assert_false(is_snake("_x"));
	assert_false(is_snake("a__b"));
	assert_non_null(bad_word("bytes_sent"));
	assert_non_null(bad_word("flops_per_device"));
	assert_non_null(bad_word("mem_peak_bytes"));
	assert_non_null(bad_word("step_s_max"));
	assert_null(bad_word("sent_bytes"));
	assert_null(bad_word("algbw_bytes_per_s"));
	assert_null(bad_word("device_flop_per_s"));
	assert_true(has_unit("tokens_per_s") && has_unit("flop") && has_unit("wall_s"));
	assert_false(has_unit("steps") || has_unit("devices"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules_refuse), cmocka_unit_test(test_every_command),
	    cmocka_unit_test(test_csv_headers),  cmocka_unit_test(test_null_for_unset),
	    cmocka_unit_test(test_error_object),
	};
	return cmocka_run_group_tests_name("json", tests, setup, NULL);
}
