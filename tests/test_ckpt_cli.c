/* SPDX-License-Identifier: MIT */
/* test_ckpt_cli.c - `shardlab ckpt` from the outside: what inspect and
 * verify say, reshard's output loading back to the same state, and one
 * line on stderr with the documented exit status for every bad input. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "testutil.h"
#include "tmputil.h"

#include "clirun.h"

#include "ckpt.h"
#include "train.h"

static char root[256];

/* Run shardlab with the words of args (split on spaces; "@" stands for the
 * scratch directory). */
static void run_at(const char *args, tu_result *r)
{
	char words[2048];
	size_t w = 0;
	for (const char *p = args; *p && w < sizeof words - 300; p++)
		if (*p == '@')
			w += (size_t)snprintf(words + w, sizeof words - w, "%s", root);
		else
			words[w++] = *p;
	words[w] = '\0';
	tu_run(words, r);
}

/* Exit status want, nothing on stdout, and one line on stderr that starts
 * with "shardlab: " and contains says. */
static void refused(const char *args, int want, const char *says)
{
	tu_result r;
	run_at(args, &r);
	if (r.status != want)
		fail_msg("'%s': exit %d, not %d (stderr: %s)", args, r.status, want, r.err);
	assert_string_equal(r.out, "");
	assert_int_equal(strncmp(r.err, "shardlab: ", 10), 0);
	char *nl = strchr(r.err, '\n');
	assert_non_null(nl);
	assert_string_equal(nl, "\n");
	if (!strstr(r.err, says))
		fail_msg("'%s': stderr '%s' does not say '%s'", args, r.err, says);
	tu_result_free(&r);
}

static sl_model_spec model;

static sl_layout tp_layout(int tp)
{
	sl_layout l;
	sl_layout_default(&l);
	l.tp = tp;
	return l;
}

/* A checkpoint of a trained state at tp 2 in ROOT/name; its state in *s. */
static void make_ckpt(const char *name, float **s)
{
	sl_layout l = tp_layout(2);
	sl_err err = {0};
	sl_train *tr = sl_train_create(&model, &l, 2, &err);
	assert_non_null(tr);
	sl_cluster *c = tu_cluster(2, 100e9, 1e-6);
	sl_train_report rep;
	assert_int_equal(sl_train_run(tr, c, 2, &rep, &err), SL_OK);
	sl_train_report_free(&rep);
	char dir[300];
	snprintf(dir, sizeof dir, "%s/%s", root, name);
	if (sl_ckpt_save(tr, c, dir, NULL, &err))
		fail_msg("%s", err.msg);
	if (s) {
		size_t n = sl_model_nparams(&model);
		*s = malloc(3 * n * sizeof(float));
		assert_int_equal(sl_train_gather(tr, *s, *s + n, *s + 2 * n), SL_OK);
	}
	sl_cluster_destroy(c);
	sl_train_destroy(tr);
}

static int setup(void **st)
{
	(void)st;
	snprintf(root, sizeof root, "test_ckpt_cli.tmp-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	sl_model_default(&model);
	model.layers = 2;
	model.hidden = 8;
	model.ffn = 12;
	model.heads = 4;
	model.seq = 2;
	model.batch = 4;
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	tu_rm_rf(root);
	return 0;
}

static void inspect_and_verify(void **st)
{
	(void)st;
	make_ckpt("a", NULL);
	tu_result r;
	run_at("ckpt inspect @/a", &r);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	assert_non_null(strstr(r.out, "saved at    tp=2 pp=1 dp=1 on 2 devices"));
	assert_non_null(strstr(r.out, "training    step 2 (Adam step 2, next batch 2)"));
	for (int t = 0; t < sl_model_ntensors(&model); t++) {
		sl_tensor_info ti;
		sl_model_tensor(&model, t, &ti);
		assert_non_null(strstr(r.out, ti.name));
	}
	assert_non_null(strstr(r.out, "block1.mlp.fc2.weight      [12, 8]     row (axis 0)"));
	tu_result_free(&r);

	run_at("ckpt inspect @/a --format=json", &r);
	assert_int_equal(r.status, 0);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	assert_non_null(j);
	/* The report's versions, and the manifest as written, with its own. */
	assert_int_equal(json_integer_value(json_object_get(j, "format_version")), 1);
	assert_non_null(json_string_value(json_object_get(j, "shardlab_version")));
	json_t *man = json_object_get(j, "manifest");
	assert_int_equal(json_integer_value(json_object_get(man, "format_version")),
	                 SL_CKPT_FORMAT_VERSION);
	assert_int_equal(json_array_size(json_object_get(man, "tensors")),
	                 (size_t)sl_model_ntensors(&model));
	json_decref(j);
	tu_result_free(&r);

	run_at("ckpt verify @/a", &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, ": ok: 14 tensors tiled exactly by 24 chunks"));
	tu_result_free(&r);

	/* One flipped byte: verify fails with the chunk's name. */
	char f[400];
	snprintf(f, sizeof f, "%s/a/g000001-dev001.bin", root);
	int fd = open(f, O_RDWR);
	assert_true(fd >= 0);
	unsigned char b;
	assert_int_equal(pread(fd, &b, 1, 100), 1);
	b ^= 1;
	assert_int_equal(pwrite(fd, &b, 1, 100), 1);
	close(fd);
	refused("ckpt verify @/a", 1, "checksum mismatch in chunk");
	/* inspect reads only the manifest: it still works. */
	run_at("ckpt inspect @/a", &r);
	assert_int_equal(r.status, 0);
	tu_result_free(&r);
}

static void reshard_round_trip(void **st)
{
	(void)st;
	float *want;
	make_ckpt("b", &want);
	char trace[300];
	snprintf(trace, sizeof trace, "%s/t.json", root);
	tu_result r;
	run_at("ckpt reshard @/b --tp=4 --out=@/b4 --trace=@/t.json", &r);
	if (r.status != 0)
		fail_msg("%s", r.err);
	assert_non_null(strstr(r.out, "tp=4 pp=1 dp=1 on 4 devices"));
	tu_result_free(&r);
	/* A split of the layers named: the new manifest records it, inspect says it. */
	run_at("ckpt reshard @/b --tp=1 --pp=2 --stage-layers=1,1 --out=@/b11", &r);
	if (r.status != 0)
		fail_msg("%s", r.err);
	tu_result_free(&r);
	run_at("ckpt inspect @/b11", &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "stage layers 1,1"));
	tu_result_free(&r);
	run_at("ckpt verify @/b4", &r);
	assert_int_equal(r.status, 0);
	tu_result_free(&r);
	/* The trace: chunk writes and reads on the devices. */
	json_t *t = json_load_file(trace, 0, NULL);
	assert_non_null(t);
	size_t i;
	json_t *e;
	int reads = 0, writes = 0;
	json_array_foreach(json_object_get(t, "traceEvents"), i, e)
	{
		const char *cat = json_string_value(json_object_get(e, "cat"));
		reads += cat && strcmp(cat, "read") == 0;
		writes += cat && strcmp(cat, "write") == 0;
	}
	json_decref(t);
	assert_true(reads > 0 && writes > 0);

	/* Back from tp 4 to tp 1 through the engine: the very same state. */
	char dir[300];
	snprintf(dir, sizeof dir, "%s/b4", root);
	sl_ckpt *ck;
	sl_err err = {0};
	assert_int_equal(sl_ckpt_open(dir, &ck, &err), SL_OK);
	sl_layout l1 = tp_layout(1);
	sl_train *tr = sl_train_create(&model, &l1, 1, &err);
	assert_int_equal(sl_ckpt_load(tr, NULL, ck, NULL, &err), SL_OK);
	size_t n = sl_model_nparams(&model);
	float *got = malloc(3 * n * sizeof(float));
	assert_int_equal(sl_train_gather(tr, got, got + n, got + 2 * n), SL_OK);
	assert_memory_equal(got, want, 3 * n * sizeof(float));
	assert_int_equal(sl_train_step(tr), 2);
	free(got);
	free(want);
	sl_train_destroy(tr);
	sl_ckpt_close(ck);
}

static void bad_input(void **st)
{
	(void)st;
	make_ckpt("c", NULL);
	refused("ckpt", 2, "inspect, verify or reshard");
	refused("ckpt frob @/c", 2, "unknown subcommand 'frob'");
	refused("ckpt verify", 2, "which checkpoint?");
	refused("ckpt verify @/c --bogus", 2, "unknown option '--bogus'");
	refused("ckpt verify @/nothing", 1, "no such checkpoint directory");
	refused("ckpt inspect @/c/manifest.json", 1, "is a file, not a checkpoint directory");
	refused("ckpt reshard @/c --tp=4", 2, "--out=DIR2 is required");
	refused("ckpt reshard @/c --tp=3 --out=@/c3", 2, "4 heads do not split over tp=3");
	refused("ckpt reshard @/c --pp=3 --out=@/c3", 2, "cannot be resharded to tp=2 pp=3 dp=1");
	refused("ckpt reshard @/c --tp=0 --out=@/c3", 2, "--tp");
	refused("ckpt reshard @/c --pp=2 --stage-layers=2,1 --out=@/c3", 2,
	        "--stage-layers adds up to 3 layers but the model has 2");
	refused("ckpt reshard @/c --stage-layers=1,x --out=@/c3", 2,
	        "--stage-layers: '1,x': count 2 is not a whole number");
	refused("ckpt reshard @/c --tp=4 --out=@/c/manifest.json", 2, "is a file");
	struct stat sb;
	char c3[300];
	snprintf(c3, sizeof c3, "%s/c3", root);
	assert_int_not_equal(stat(c3, &sb), 0);
	/* A newer format: refused by name. */
	char mp[300];
	snprintf(mp, sizeof mp, "%s/c/manifest.json", root);
	json_t *m = json_load_file(mp, 0, NULL);
	json_object_set_new(m, "format_version", json_integer(2));
	assert_int_equal(json_dump_file(m, mp, 0), 0);
	json_decref(m);
	refused("ckpt verify @/c", 1, "format version 2 is newer");
	/* A damaged source is not resharded: exit 1, nothing written. */
	make_ckpt("d", NULL);
	char f[400];
	snprintf(f, sizeof f, "%s/d/g000001-dev000.bin", root);
	assert_int_equal(truncate(f, 1000), 0);
	refused("ckpt reshard @/d --tp=4 --out=@/d4", 1, "truncated");
	make_ckpt("e", NULL);
	snprintf(f, sizeof f, "%s/e/g000001-dev000.bin", root);
	int fd = open(f, O_RDWR);
	unsigned char b;
	assert_int_equal(pread(fd, &b, 1, 7), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, 7), 1);
	close(fd);
	refused("ckpt reshard @/e --tp=4 --out=@/e4", 1, "checksum mismatch");
	char d4[300];
	snprintf(d4, sizeof d4, "%s/e4", root);
	assert_int_not_equal(stat(d4, &sb), 0);
}

/* ---- train --save and --load ---- */

#define MODEL "--layers=4 --hidden=16 --ffn=24 --heads=4 --seq=4 --batch=8 --lr=0.01"

static json_t *train_json(const char *args)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "train %s --format=json", args);
	tu_result r;
	run_at(cmd, &r);
	if (r.status != 0)
		fail_msg("'%s': exit %d: %s", cmd, r.status, r.err);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	if (!j)
		fail_msg("'%s': not JSON: %s", cmd, je.text);
	tu_result_free(&r);
	return j;
}

static double loss_at(json_t *j, const char *key, size_t i)
{
	return json_real_value(json_array_get(json_object_get(j, key), i));
}

/* 2 steps at tp 2 pp 2, saved; resumed for 2 more at tp 4, at dp 2 with
 * ZeRO-1, and on one device: the losses are those of 4 uninterrupted steps
 * on one device. */
static void train_save_and_resume(void **st)
{
	(void)st;
	json_t *whole = train_json("--steps=4 " MODEL);
	json_t *a = train_json("--tp=2 --pp=2 --steps=2 --save=@/run " MODEL);
	for (size_t s = 0; s < 2; s++)
		assert_true(fabs(loss_at(a, "losses", s) - loss_at(whole, "losses", s)) <=
		            1e-5 * fabs(loss_at(whole, "losses", s)));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(a, "checkpoint"), "saved_to")) +
	        strlen(root),
	    "/run");
	json_decref(a);
	const char *resume[] = {"--tp=4", "--dp=2 --zero1", "--tp=1"};
	for (int k = 0; k < 3; k++) {
		char args[300];
		/* no model options: they come from the checkpoint */
		snprintf(args, sizeof args, "%s --steps=2 --load=@/run", resume[k]);
		json_t *b = train_json(args);
		assert_int_equal(json_integer_value(json_object_get(b, "first_step")), 2);
		assert_string_equal(json_string_value(json_object_get(b, "check")), "pass");
		for (size_t s = 0; s < 2; s++) {
			double got = loss_at(b, "losses", s),
			       want = loss_at(whole, "losses", s + 2);
			if (!(fabs(got - want) <= 1e-5 * fabs(want)))
				fail_msg("resumed with %s: step %zu loss %.9g, uninterrupted %.9g",
				         resume[k], s + 3, got, want);
			/* the reference it prints is one device resumed from the same
			 * checkpoint: the uninterrupted one's to the tolerance (the
			 * saved state is tp 2 pp 2's, equal to one device's to rounding) */
			double rgot = loss_at(b, "reference_losses", s),
			       rwant = loss_at(whole, "reference_losses", s + 2);
			if (!(fabs(rgot - rwant) <= 1e-5 * fabs(rwant)))
				fail_msg(
				    "resumed with %s: reference at step %zu %.9g, uninterrupted "
				    "%.9g",
				    resume[k], s + 3, rgot, rwant);
		}
		json_decref(b);
	}
	json_decref(whole);
	/* --save-every: the checkpoint holds the last step. */
	json_decref(train_json("--steps=3 --save=@/every --save-every=2 " MODEL));
	tu_result r;
	run_at("ckpt verify @/every", &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "step 3"));
	tu_result_free(&r);
}

/* Attention and hidden dropout are settings of the run that the checkpoint
 * keeps: a resume with no option drops what the uninterrupted run drops;
 * another rate is refused. */
static void train_resume_keeps_dropout(void **st)
{
	(void)st;
	json_t *whole = train_json("--steps=4 --attention-dropout=0.3 --hidden-dropout=0.2 " MODEL);
	json_t *plain = train_json("--steps=4 " MODEL);
	json_decref(train_json("--tp=2 --steps=2 --attention-dropout=0.3 --hidden-dropout=0.2 "
	                       "--save=@/drop " MODEL));
	json_t *b = train_json("--dp=2 --steps=2 --load=@/drop");
	assert_true(json_real_value(json_object_get(json_object_get(b, "model"),
	                                            "attention_dropout_fraction")) == 0.3);
	assert_true(json_real_value(json_object_get(json_object_get(b, "model"),
	                                            "hidden_dropout_fraction")) == 0.2);
	for (size_t s = 0; s < 2; s++) {
		double got = loss_at(b, "losses", s), want = loss_at(whole, "losses", s + 2);
		if (!(fabs(got - want) <= 1e-5 * fabs(want)))
			fail_msg("resumed: step %zu loss %.9g, uninterrupted %.9g", s + 3, got,
			         want);
	}
	/* (and the dropout mattered) */
	assert_true(fabs(loss_at(whole, "losses", 3) - loss_at(plain, "losses", 3)) >
	            1e-3 * loss_at(plain, "losses", 3));
	json_decref(b);
	json_decref(whole);
	json_decref(plain);
	refused("train --load=@/drop --attention-dropout=0", 2,
	        "--attention-dropout=0.3: resuming exactly needs the same data");
	refused("train --load=@/drop --hidden-dropout=0.1", 2,
	        "--hidden-dropout=0.2: resuming exactly needs the same data");
}

/* The mask is a setting the checkpoint keeps as well: a resume with no
 * option runs without it, as the uninterrupted run did; the default's
 * causal mask is refused. */
static void train_resume_keeps_mask(void **st)
{
	(void)st;
	json_t *whole = train_json("--steps=4 --mask=full " MODEL);
	json_decref(train_json("--tp=2 --steps=2 --mask=full --save=@/full " MODEL));
	json_t *b = train_json("--dp=2 --steps=2 --load=@/full");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(b, "model"), "attention_mask")),
	    "full");
	for (size_t s = 0; s < 2; s++) {
		double got = loss_at(b, "losses", s), want = loss_at(whole, "losses", s + 2);
		if (!(fabs(got - want) <= 1e-5 * fabs(want)))
			fail_msg("resumed: step %zu loss %.9g, uninterrupted %.9g", s + 3, got,
			         want);
	}
	json_decref(b);
	json_decref(whole);
	refused("train --load=@/full --mask=causal", 2,
	        "--mask=full: resuming exactly needs the same data");
}

static void train_refusals(void **st)
{
	(void)st;
	json_decref(train_json("--tp=2 --steps=1 --save=@/t " MODEL));
	refused("train --tp=3 --load=@/t", 2, "cannot be resharded to tp=3 pp=1 dp=1: 4 heads");
	refused("train --load=@/t --hidden=32", 2, "holds another architecture");
	refused("train --load=@/t --lr=0.5", 2, "resuming exactly needs the same data");
	refused("train --load=@/t/manifest.json", 1, "is a file");
	refused("train --load=@/none", 1, "no such checkpoint directory");
	refused("train --steps=1 --save=@/t/manifest.json " MODEL, 2, "--save:");
	refused("train --steps=1 --save-every=1 " MODEL, 2, "--save-every needs --save");
	/* A damaged checkpoint: refused, and left as it was. */
	char f[400];
	snprintf(f, sizeof f, "%s/t/g000001-dev000.bin", root);
	int fd = open(f, O_RDWR);
	unsigned char b;
	assert_int_equal(pread(fd, &b, 1, 40), 1);
	b ^= 0x80;
	assert_int_equal(pwrite(fd, &b, 1, 40), 1);
	close(fd);
	struct stat before, after;
	assert_int_equal(stat(f, &before), 0);
	refused("train --tp=4 --load=@/t --save=@/t", 1, "checksum mismatch");
	assert_int_equal(stat(f, &after), 0);
	assert_int_equal(before.st_size, after.st_size);
	assert_true(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
	            before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(inspect_and_verify),
	    cmocka_unit_test(reshard_round_trip),
	    cmocka_unit_test(bad_input),
	    cmocka_unit_test(train_save_and_resume),
	    cmocka_unit_test(train_resume_keeps_dropout),
	    cmocka_unit_test(train_resume_keeps_mask),
	    cmocka_unit_test(train_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
