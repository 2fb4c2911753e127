/* SPDX-License-Identifier: MIT */
/* test_ckpt.c - sharded checkpoints: resuming under another layout is
 * exact, joins follow the stored split, bad input changes nothing, and a
 * save killed at any point leaves a loadable checkpoint.
 *
 * References are independent of the code under test: the single-device
 * reference trainer (sl_ref) for losses and parameters, jansson and zlib's
 * crc32 read directly for what the files hold, and byte snapshots of the
 * directory for "untouched". */
#include "testutil.h"
#include "tmputil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "ckpt.h"
#include "trace.h"
#include "train.h"

#define S 3 /* steps before and after the save */

static char root[256]; /* this run's scratch directory */
static sl_model_spec attn;
static double ref_loss[2 * S];
static sl_ref ref; /* after 2S steps */

/* ---- helpers ---- */

static void rm_rf(const char *p)
{
	tu_rm_rf(p);
}

static void path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", root, name);
}

static sl_layout layout(int tp, int pp, int dp, const char *sched, int m, int zero1)
{
	sl_layout l;
	sl_layout_default(&l);
	l.tp = tp;
	l.pp = pp;
	l.dp = dp;
	assert_int_equal(sl_sched_parse(sched, &l.schedule), SL_OK);
	l.microbatches = m;
	l.zero = zero1;
	return l;
}

static sl_train *make_train(const sl_model_spec *m, const sl_layout *l)
{
	sl_err err = {0};
	sl_train *tr = sl_train_create(m, l, sl_layout_devices(l), &err);
	if (!tr)
		fail_msg("train: %s", err.msg);
	return tr;
}

struct state {
	size_t n;
	float *p, *m, *v;
	long step;
};

static struct state gather(const sl_train *tr)
{
	struct state s;
	s.n = sl_model_nparams(sl_train_model(tr));
	s.p = malloc(s.n * sizeof(float));
	s.m = malloc(s.n * sizeof(float));
	s.v = malloc(s.n * sizeof(float));
	assert_int_equal(sl_train_gather(tr, s.p, s.m, s.v), SL_OK);
	s.step = sl_train_step(tr);
	return s;
}

static void state_free(struct state *s)
{
	free(s->p);
	free(s->m);
	free(s->v);
}

static int state_same(const struct state *a, const struct state *b)
{
	return a->n == b->n && a->step == b->step && memcmp(a->p, b->p, a->n * 4) == 0 &&
	       memcmp(a->m, b->m, a->n * 4) == 0 && memcmp(a->v, b->v, a->n * 4) == 0;
}

static void train_steps(sl_train *tr, int steps, const double *want_loss, const char *what)
{
	const sl_layout *l = sl_train_layout(tr);
	sl_cluster *c = tu_cluster(sl_layout_devices(l), 100e9, 1e-6);
	sl_train_report rep;
	sl_err err = {0};
	if (sl_train_run(tr, c, steps, &rep, &err))
		fail_msg("%s: %s", what, err.msg);
	for (int s = 0; s < steps; s++) {
		double rel = fabs(rep.losses[s] - want_loss[s]) / fabs(want_loss[s]);
		if (!(rel <= 1e-5))
			fail_msg("%s: step %ld loss %.9g, reference %.9g", what, rep.first_step + s,
			         rep.losses[s], want_loss[s]);
	}
	sl_train_report_free(&rep);
	sl_cluster_destroy(c);
}

/* A file of the scratch area, whole. */
struct blob {
	char name[64];
	size_t n;
	unsigned char *b;
};

static size_t read_whole(const char *path, unsigned char **out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*out = malloc((size_t)n + 1);
	assert_int_equal(fread(*out, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return (size_t)n;
}

static void write_whole(const char *path, const unsigned char *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* Every file of dir (sorted by name), with its bytes. */
static int snapshot(const char *dir, struct blob *out, int cap)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		assert_true(n < cap);
		char p[512];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		snprintf(out[n].name, sizeof out[n].name, "%.63s", e->d_name);
		out[n].n = read_whole(p, &out[n].b);
		n++;
	}
	closedir(d);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(out[j].name, out[j - 1].name) < 0; j--) {
			struct blob t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

static void snapshot_equal(const struct blob *a, int na, const struct blob *b, int nb)
{
	assert_int_equal(na, nb);
	for (int i = 0; i < na; i++) {
		assert_string_equal(a[i].name, b[i].name);
		assert_int_equal(a[i].n, b[i].n);
		assert_memory_equal(a[i].b, b[i].b, a[i].n);
	}
}

static void snapshot_free(struct blob *a, int n)
{
	for (int i = 0; i < n; i++)
		free(a[i].b);
}

static void save(sl_train *tr, const char *dir, int on_devices)
{
	const sl_layout *l = sl_train_layout(tr);
	sl_cluster *c = on_devices ? tu_cluster(sl_layout_devices(l), 100e9, 1e-6) : NULL;
	sl_err err = {0};
	if (sl_ckpt_save(tr, c, dir, NULL, &err))
		fail_msg("save %s: %s", dir, err.msg);
	sl_cluster_destroy(c);
}

static sl_ckpt *open_ok(const char *dir)
{
	sl_ckpt *ck;
	sl_err err = {0};
	if (sl_ckpt_open(dir, &ck, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return ck;
}

static void load(sl_train *tr, const char *dir, int on_devices)
{
	const sl_layout *l = sl_train_layout(tr);
	sl_cluster *c = on_devices ? tu_cluster(sl_layout_devices(l), 100e9, 1e-6) : NULL;
	sl_ckpt *ck = open_ok(dir);
	sl_err err = {0};
	if (sl_ckpt_load(tr, c, ck, NULL, &err))
		fail_msg("load %s: %s", dir, err.msg);
	sl_ckpt_close(ck);
	sl_cluster_destroy(c);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "test_ckpt.tmp-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	/* 4 blocks with attention: 4 heads (over tp 4), ffn 10 (uneven over 4). */
	sl_model_default(&attn);
	attn.layers = 4;
	attn.hidden = 8;
	attn.ffn = 10;
	attn.heads = 4;
	attn.seq = 4;
	attn.batch = 8;
	attn.lr = 1e-2f;
	sl_err err;
	if (sl_ref_init(&ref, &attn, &err))
		return -1;
	for (int s = 0; s < 2 * S; s++)
		if (sl_ref_step(&ref, &ref_loss[s], &err))
			return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sl_ref_free(&ref);
	rm_rf(root);
	return 0;
}

/* ---- resuming under every other layout ---- */

static const char *const layouts[] = {
    /* tp pp dp schedule m zero */
    "4 1 1 1f1b 1 0", "2 2 1 gpipe 2 0", "2 1 2 1f1b 1 1",  "1 4 1 1f1b 4 0",
    "1 1 1 1f1b 1 0", "1 1 4 1f1b 1 3",  "1 2 2 gpipe 2 2",
};
#define NLAYOUTS ((int)(sizeof layouts / sizeof layouts[0]))

static sl_layout parse_layout(const char *spec)
{
	int tp, pp, dp, m, z;
	char sched[16];
	assert_int_equal(sscanf(spec, "%d %d %d %15s %d %d", &tp, &pp, &dp, sched, &m, &z), 6);
	return layout(tp, pp, dp, sched, m, z);
}

static void resume_from(int from)
{
	sl_layout ls = parse_layout(layouts[from]);
	sl_train *tr = make_train(&attn, &ls);
	train_steps(tr, S, ref_loss, layouts[from]);
	char dir[300];
	snprintf(dir, sizeof dir, "%s/from%d", root, from);
	save(tr, dir, 1);
	struct state saved = gather(tr);
	sl_train_destroy(tr);

	for (int to = 0; to < NLAYOUTS; to++) {
		if (to == from)
			continue;
		char what[96];
		snprintf(what, sizeof what, "saved at (%s), resumed at (%s)", layouts[from],
		         layouts[to]);
		sl_layout lr = parse_layout(layouts[to]);
		sl_train *t2 = make_train(&attn, &lr);
		load(t2, dir, 1);
		/* Resharding moves values, it computes nothing: exact. */
		struct state got = gather(t2);
		if (!state_same(&got, &saved))
			fail_msg("%s: the loaded state differs from the saved one", what);
		state_free(&got);
		train_steps(t2, S, ref_loss + S, what);
		struct state end = gather(t2);
		const float *want[3] = {ref.params, ref.mom, ref.var};
		const float *have[3] = {end.p, end.m, end.v};
		for (int w = 0; w < 3; w++) {
			double rel = tu_tensor_rel(&attn, have[w], want[w], NULL);
			if (!(rel <= 1e-4))
				fail_msg("%s: state %d differs from the reference by %.3g", what, w,
				         rel);
		}
		assert_int_equal(end.step, 2 * S);
		state_free(&end);
		sl_train_destroy(t2);
	}
	state_free(&saved);
}

static void resume_from_tp4(void **st)
{
	(void)st;
	resume_from(0);
}

static void resume_from_tp2_pp2(void **st)
{
	(void)st;
	resume_from(1);
}

static void resume_from_tp2_dp2_zero1(void **st)
{
	(void)st;
	resume_from(2);
}

static void resume_from_pp4(void **st)
{
	(void)st;
	resume_from(3);
}

/* ZeRO-3: each replica holds a slice of every block's parameters and
 * moments; the save gathers them, a load under ZeRO-3 slices them again. */
static void resume_from_dp4_zero3(void **st)
{
	(void)st;
	resume_from(5);
}

static void resume_from_pp2_dp2_zero2(void **st)
{
	(void)st;
	resume_from(6);
}

/* One device's losses of m over 2S steps: what every layout must give. */
static void ref_losses(const sl_model_spec *m, double *want)
{
	sl_ref r;
	sl_err err = {0};
	assert_int_equal(sl_ref_init(&r, m, &err), SL_OK);
	for (int s = 0; s < 2 * S; s++)
		assert_int_equal(sl_ref_step(&r, &want[s], &err), SL_OK);
	sl_ref_free(&r);
}

/* The manifest's architecture object of the checkpoint in dir (a new
 * reference: json_decref it). */
static json_t *manifest_arch(const char *dir)
{
	char mp[400];
	snprintf(mp, sizeof mp, "%s/manifest.json", dir);
	json_t *man = json_load_file(mp, 0, NULL);
	assert_non_null(man);
	json_t *a = json_incref(json_object_get(man, "architecture"));
	json_decref(man);
	return a;
}

/* Loading dir into one device of model m is refused as another
 * architecture, the message naming `saved`. */
static void refused_as_other(const char *dir, const sl_model_spec *m, const char *saved)
{
	sl_layout l1 = layout(1, 1, 1, "1f1b", 1, 0);
	sl_train *t = make_train(m, &l1);
	sl_ckpt *ck = open_ok(dir);
	sl_err err = {0};
	assert_int_not_equal(sl_ckpt_load(t, NULL, ck, NULL, &err), SL_OK);
	assert_non_null(strstr(err.msg, "another architecture"));
	assert_non_null(strstr(err.msg, saved));
	sl_ckpt_close(ck);
	sl_train_destroy(t);
}

/* Llama's kinds: the manifest says version 2 with kv_heads and ffn_kind,
 * and the whole groups and pairs reshard to other layouts exactly. */
static void llama_kinds_reshard(void **st)
{
	(void)st;
	sl_model_spec m = attn;
	m.kv_heads = 2;
	m.ffn_kind = SL_FFN_SWIGLU;
	m.seed = 11;
	double want[2 * S];
	ref_losses(&m, want);
	sl_layout ls = layout(2, 2, 1, "gpipe", 2, 0);
	sl_train *tr = make_train(&m, &ls);
	train_steps(tr, S, want, "llama tp2 pp2");
	char dir[300];
	path_in(dir, sizeof dir, "llama");
	save(tr, dir, 1);
	struct state saved = gather(tr);
	sl_train_destroy(tr);
	json_t *a = manifest_arch(dir);
	assert_int_equal(json_integer_value(json_object_get(a, "version")), 2);
	assert_int_equal(json_integer_value(json_object_get(a, "kv_heads")), 2);
	assert_string_equal(json_string_value(json_object_get(a, "ffn_kind")), "swiglu");
	json_decref(a);
	const char *to[] = {"1 1 2 1f1b 1 1", "1 4 1 1f1b 4 0", "2 1 1 1f1b 1 0"};
	for (int i = 0; i < 3; i++) {
		sl_layout lr = parse_layout(to[i]);
		sl_train *t2 = make_train(&m, &lr);
		load(t2, dir, 1);
		struct state got = gather(t2);
		if (!state_same(&got, &saved))
			fail_msg(
			    "llama resumed at (%s): the loaded state differs from the saved one",
			    to[i]);
		state_free(&got);
		train_steps(t2, S, want + S, to[i]);
		sl_train_destroy(t2);
	}
	state_free(&saved);
	/* A GeLU model of the same sizes is another architecture. */
	sl_model_spec gelu = m;
	gelu.ffn_kind = SL_FFN_GELU;
	refused_as_other(dir, &gelu, "swiglu ffn 10, 4 heads (2 key/value)");
}

/* Uneven stages: a checkpoint saved under a list, ends or interleaved
 * chunks of unequal blocks records each stage's layers, reloads under it,
 * and reshards to every other split, even ones included, exactly; each
 * resumes with the one device's losses. */
static const struct {
	const char *spec; /* tp pp dp schedule m zero */
	int v;
	const char *stages;
	int want[4]; /* the manifest's stage_layers (0: none) */
} uneven[] = {
    {"1 2 1 interleaved 2 0", 2, "3,4", {3, 4}}, {"2 3 1 1f1b 3 0", 1, "ends", {2, 3, 2}},
    {"1 2 2 interleaved 2 2", 2, "even", {0}},   {"1 3 1 gpipe 3 0", 1, "1,5,1", {1, 5, 1}},
    {"1 1 1 1f1b 1 0", 1, "even", {0}},          {"2 2 1 interleaved 2 0", 3, "ends", {3, 4}},
};
#define NUNEVEN ((int)(sizeof uneven / sizeof uneven[0]))

static sl_layout uneven_layout(int i)
{
	sl_layout l = parse_layout(uneven[i].spec);
	l.chunks = uneven[i].v;
	assert_int_equal(sl_stage_layers_parse(uneven[i].stages, &l, NULL), SL_OK);
	return l;
}

static void uneven_stages_reshard(void **st)
{
	(void)st;
	sl_model_spec m = attn;
	m.layers = 7;
	m.seed = 13;
	double want[2 * S];
	ref_losses(&m, want);
	for (int from = 0; from < NUNEVEN; from++) {
		if (from == 2 || from == 4)
			continue; /* even: the other tests' */
		sl_layout ls = uneven_layout(from);
		sl_train *tr = make_train(&m, &ls);
		train_steps(tr, S, want, uneven[from].spec);
		char dir[300], name[32];
		snprintf(name, sizeof name, "uneven%d", from);
		path_in(dir, sizeof dir, name);
		save(tr, dir, 1);
		struct state saved = gather(tr);
		sl_train_destroy(tr);
		/* the manifest: a list's counts, or the rule's name (so a reshard
		 * to another pp keeps the rule), read back as they were given */
		int ends = strcmp(uneven[from].stages, "ends") == 0;
		char mp[400];
		snprintf(mp, sizeof mp, "%s/manifest.json", dir);
		json_t *man = json_load_file(mp, 0, NULL);
		assert_non_null(man);
		json_t *sl = json_object_get(json_object_get(man, "layout"), "stage_layers");
		if (ends) {
			assert_string_equal(json_string_value(sl), "ends");
		} else {
			assert_int_equal(json_array_size(sl), (size_t)ls.pp);
			for (int k = 0; k < ls.pp; k++)
				assert_int_equal(json_integer_value(json_array_get(sl, (size_t)k)),
				                 uneven[from].want[k]);
		}
		json_decref(man);
		sl_ckpt *ck = open_ok(dir);
		const sl_layout *in = &sl_ckpt_info_of(ck)->layout;
		assert_int_equal(in->stages, ends ? SL_STAGES_ENDS : SL_STAGES_LIST);
		for (int k = 0; k < ls.pp; k++)
			assert_int_equal(sl_layout_stage_layers(&m, in, k), uneven[from].want[k]);
		sl_ckpt_close(ck);
		for (int to = 0; to < NUNEVEN; to++) {
			char what[160];
			snprintf(what, sizeof what,
			         "saved at (%s v=%d %s), resumed at (%s v=%d %s)",
			         uneven[from].spec, uneven[from].v, uneven[from].stages,
			         uneven[to].spec, uneven[to].v, uneven[to].stages);
			sl_layout lr = uneven_layout(to);
			sl_train *t2 = make_train(&m, &lr);
			load(t2, dir, 1);
			struct state got = gather(t2);
			if (!state_same(&got, &saved))
				fail_msg("%s: the loaded state differs from the saved one", what);
			state_free(&got);
			train_steps(t2, S, want + S, what);
			sl_train_destroy(t2);
		}
		state_free(&saved);
	}
	/* an even layout's manifest has none */
	sl_layout le = uneven_layout(2);
	sl_train *tr = make_train(&m, &le);
	char dir[300];
	path_in(dir, sizeof dir, "uneven-even");
	save(tr, dir, 0);
	sl_train_destroy(tr);
	char mp[400];
	snprintf(mp, sizeof mp, "%s/manifest.json", dir);
	json_t *man = json_load_file(mp, 0, NULL);
	assert_null(json_object_get(json_object_get(man, "layout"), "stage_layers"));
	json_decref(man);
}

/* Context parallelism splits tokens, not tensors: a checkpoint saved
 * under cp records its dp x cp devices as replicas, reshards to layouts
 * without cp (and other TP, PP, ZeRO) and back to other cp, and each
 * resumes with the one device's losses. */
static void cp_reshards(void **st)
{
	(void)st;
	sl_model_spec m = attn;
	m.seq = 24;
	m.seed = 17;
	double want[2 * S];
	ref_losses(&m, want);
	static const struct {
		const char *spec; /* tp pp dp schedule m zero */
		int cp;
	} lay[] = {
	    {"1 1 1 1f1b 1 0", 2}, {"2 1 1 1f1b 1 1", 2}, {"1 2 2 1f1b 2 3", 2},
	    {"1 1 1 1f1b 1 2", 4}, {"2 2 1 1f1b 2 0", 1}, {"1 1 3 1f1b 1 1", 1},
	};
	int n = (int)(sizeof lay / sizeof lay[0]);
	for (int from = 0; from < n; from++) {
		if (lay[from].cp == 1)
			continue;
		sl_layout ls = parse_layout(lay[from].spec);
		ls.cp = lay[from].cp;
		ls.attention = SL_ATTN_FLASH;
		sl_train *tr = make_train(&m, &ls);
		train_steps(tr, S, want, lay[from].spec);
		char dir[300], name[32];
		snprintf(name, sizeof name, "cp%d", from);
		path_in(dir, sizeof dir, name);
		save(tr, dir, 1);
		struct state saved = gather(tr);
		sl_train_destroy(tr);
		sl_ckpt *ck = open_ok(dir);
		const sl_layout *in = &sl_ckpt_info_of(ck)->layout;
		assert_int_equal(in->dp, ls.dp * ls.cp);
		assert_int_equal(in->cp, 1);
		sl_ckpt_close(ck);
		for (int to = 0; to < n; to++) {
			char what[160];
			snprintf(what, sizeof what, "saved at (%s cp=%d), resumed at (%s cp=%d)",
			         lay[from].spec, lay[from].cp, lay[to].spec, lay[to].cp);
			sl_layout lr = parse_layout(lay[to].spec);
			lr.cp = lay[to].cp;
			lr.attention = SL_ATTN_FLASH;
			sl_train *t2 = make_train(&m, &lr);
			load(t2, dir, 1);
			struct state got = gather(t2);
			if (!state_same(&got, &saved))
				fail_msg("%s: the loaded state differs from the saved one", what);
			state_free(&got);
			train_steps(t2, S, want + S, what);
			sl_train_destroy(t2);
		}
		state_free(&saved);
	}
	/* One sequence a step, as long contexts have: its dp x cp replicas do
	 * not divide the batch, its cp ranks do; it reloads under cp 2 and 4. */
	m.batch = 1;
	ref_losses(&m, want);
	sl_layout l1 = parse_layout("1 1 1 1f1b 1 0");
	l1.cp = 2;
	l1.attention = SL_ATTN_FLASH;
	sl_train *tr = make_train(&m, &l1);
	train_steps(tr, S, want, "cp=2, one sequence");
	char dir[300];
	path_in(dir, sizeof dir, "cp-one");
	save(tr, dir, 1);
	sl_train_destroy(tr);
	for (int c = 2; c <= 4; c += 2) {
		l1.cp = c;
		sl_train *t2 = make_train(&m, &l1);
		load(t2, dir, 1);
		train_steps(t2, S, want + S, "cp=2, one sequence, resumed");
		sl_train_destroy(t2);
	}
}

/* A model with a norm: the manifest says version 3 and names it, the
 * state reshards exactly, and the model without the norm is another
 * architecture. */
static void norm_reshards(void **st)
{
	(void)st;
	sl_model_spec m = attn;
	m.norm = SL_NORM_RMS;
	m.seed = 13;
	double want[2 * S];
	ref_losses(&m, want);
	sl_layout ls = layout(2, 1, 2, "1f1b", 1, 1);
	sl_train *tr = make_train(&m, &ls);
	train_steps(tr, S, want, "norm tp2 dp2");
	char dir[300];
	path_in(dir, sizeof dir, "norm");
	save(tr, dir, 1);
	sl_train_destroy(tr);
	json_t *a = manifest_arch(dir);
	assert_int_equal(json_integer_value(json_object_get(a, "version")), 3);
	assert_string_equal(json_string_value(json_object_get(a, "norm")), "rmsnorm");
	json_decref(a);
	sl_layout lr = parse_layout("1 2 1 1f1b 2 0");
	sl_train *t2 = make_train(&m, &lr);
	load(t2, dir, 1);
	train_steps(t2, S, want + S, "norm resumed at pp2");
	sl_train_destroy(t2);
	sl_model_spec plain = m;
	plain.norm = SL_NORM_NONE;
	refused_as_other(dir, &plain, "norm rmsnorm");
}

/* ---- devices do the I/O ---- */

/* The host and the devices write the same bytes; the trace shows each
 * chunk written once by its owner, and each read the plan announces. */
static void devices_write_and_read_chunks(void **st)
{
	(void)st;
	sl_layout l = parse_layout(layouts[2]); /* tp 2, dp 2, ZeRO-1: moments gathered */
	sl_train *tr = make_train(&attn, &l);
	train_steps(tr, 1, ref_loss, "tp2 dp2");
	char a[300], b[300];
	path_in(a, sizeof a, "by-host");
	path_in(b, sizeof b, "by-devices");
	save(tr, a, 0);
	sl_cluster *c = tu_cluster(4, 100e9, 1e-6);
	sl_ckpt_opts o;
	sl_ckpt_opts_default(&o);
	o.storage_bandwidth = 1e9;
	sl_err err = {0};
	if (sl_ckpt_save(tr, c, b, &o, &err))
		fail_msg("%s", err.msg);
	struct blob x[64], y[64];
	int nx = snapshot(a, x, 64), ny = snapshot(b, y, 64);
	snapshot_equal(x, nx, y, ny);
	snapshot_free(x, nx);
	snapshot_free(y, ny);

	/* Independent: the manifest as jansson reads it. */
	char mp[400];
	snprintf(mp, sizeof mp, "%s/manifest.json", b);
	json_t *man = json_load_file(mp, 0, NULL);
	assert_non_null(man);
	sl_snapshot snap;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &snap), SL_OK);
	size_t i;
	json_t *t;
	int nchunks = 0, nwrites = 0;
	json_array_foreach(json_object_get(man, "tensors"), i, t)
	{
		size_t k;
		json_t *ch;
		json_array_foreach(json_object_get(t, "chunks"), k, ch)
		{
			int id = (int)json_integer_value(json_object_get(ch, "id"));
			int owner = (int)json_integer_value(json_object_get(ch, "owner"));
			json_int_t len = json_integer_value(json_object_get(ch, "byte_length"));
			int found = 0;
			for (size_t e = 0; e < snap.n; e++)
				if (snap.ev[e].kind == SL_EV_WRITE && snap.ev[e].op == id) {
					found++;
					assert_int_equal(snap.ev[e].dev, owner);
					assert_int_equal(snap.ev[e].bytes, (uint64_t)len);
					/* emulated time: bytes over the storage rate */
					assert_true(fabs((snap.ev[e].t1 - snap.ev[e].t0) -
					                 len / 1e9) <= 1e-12 * (len / 1e9));
				}
			assert_int_equal(found, 1);
			/* Written by dp rank 0 of its TP rank. */
			assert_int_equal(
			    json_integer_value(json_object_get(json_object_get(ch, "mesh"), "dp")),
			    0);
			nchunks++;
		}
		/* Replicated tensors are written once. */
		if (strcmp(json_string_value(json_object_get(t, "split")), "replicated") == 0)
			assert_int_equal(json_array_size(json_object_get(t, "chunks")), 1);
		else
			assert_int_equal(json_array_size(json_object_get(t, "chunks")), 2);
	}
	for (size_t e = 0; e < snap.n; e++)
		nwrites += snap.ev[e].kind == SL_EV_WRITE;
	assert_int_equal(nwrites, nchunks);
	sl_snapshot_free(&snap);

	/* The write plan names the same moves. */
	sl_ckpt_move *mv;
	int nmv;
	assert_int_equal(sl_ckpt_write_plan(tr, &mv, &nmv, &err), SL_OK);
	assert_int_equal(nmv, nchunks);
	free(mv);
	json_decref(man);
	sl_train_destroy(tr);
	sl_cluster_destroy(c);

	/* Load at tp 4: every device reads the stored chunks its shards overlap. */
	sl_layout l4 = parse_layout(layouts[0]);
	sl_train *t4 = make_train(&attn, &l4);
	c = tu_cluster(4, 100e9, 1e-6);
	sl_ckpt *ck = open_ok(b);
	assert_int_equal(sl_ckpt_read_plan(ck, t4, &mv, &nmv, &err), SL_OK);
	if (sl_ckpt_load(t4, c, ck, NULL, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &snap), SL_OK);
	int nreads = 0;
	for (size_t e = 0; e < snap.n; e++)
		nreads += snap.ev[e].kind == SL_EV_READ;
	assert_int_equal(nreads, nmv);
	for (int k = 0; k < nmv; k++) {
		int found = 0;
		for (size_t e = 0; e < snap.n; e++)
			found += snap.ev[e].kind == SL_EV_READ && snap.ev[e].op == mv[k].chunk &&
			         snap.ev[e].dev == mv[k].dev;
		assert_int_equal(found, 1);
	}
	/* fc1 (column, 10 columns over 2 then 4 devices): stored chunks of 5
	 * columns; new device 1 holds columns 3-5, so it reads both. */
	int fc1 = -1;
	for (int k = 0; k < sl_model_ntensors(&attn); k++) {
		sl_tensor_info ti;
		sl_model_tensor(&attn, k, &ti);
		if (strcmp(ti.name, "block0.mlp.fc1.weight") == 0)
			fc1 = k;
	}
	int dev1_reads = 0;
	for (int k = 0; k < nmv; k++)
		if (mv[k].tensor == fc1 && mv[k].dev == 1) {
			dev1_reads++;
			assert_int_equal(mv[k].shape[0], 8);
		}
	assert_int_equal(dev1_reads, 2);
	free(mv);
	sl_snapshot_free(&snap);
	sl_ckpt_close(ck);
	sl_cluster_destroy(c);
	sl_train_destroy(t4);
}

/* ---- training with periodic saves ---- */

static int count_commits(void *ctx, sl_ckpt_point p, int dev)
{
	(void)dev;
	if (p == SL_CKPT_AT_COMMIT)
		(*(int *)ctx)++;
	return 0;
}

/* 5 steps saving every 2: three saves (after steps 2, 4, 5), the last one
 * holding the final state, and a report equal to one 5-step run's. */
static void train_run_saves_every_n(void **st)
{
	(void)st;
	sl_layout l = parse_layout(layouts[1]);
	sl_train *a = make_train(&attn, &l), *b = make_train(&attn, &l);
	sl_cluster *c = tu_cluster(4, 100e9, 1e-6);
	sl_train_report ra, rb;
	sl_err err = {0};
	assert_int_equal(sl_train_run(a, c, 5, &ra, &err), SL_OK);
	char dir[300];
	path_in(dir, sizeof dir, "every2");
	int commits = 0;
	sl_ckpt_opts o;
	sl_ckpt_opts_default(&o);
	o.fault = count_commits;
	o.fault_ctx = &commits;
	if (sl_ckpt_train_run(b, c, 5, dir, 2, &o, &rb, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(commits, 3);
	assert_int_equal(rb.steps, 5);
	assert_int_equal(rb.first_step, 0);
	for (int s = 0; s < 5; s++)
		assert_true(rb.losses[s] == ra.losses[s]);
	/* Model timing: every step takes the same emulated time. */
	assert_true(fabs(rb.step_s - ra.step_s) <= 1e-12 * ra.step_s);
	assert_true(fabs(rb.bubble_fraction - ra.bubble_fraction) <= 1e-9);
	for (int i = 0; i < 4; i++) {
		assert_true(fabs(rb.dev[i].compute_s - ra.dev[i].compute_s) <= 1e-12 * ra.step_s);
		assert_true(fabs(rb.dev[i].comm_s - ra.dev[i].comm_s) <= 1e-12 * ra.step_s);
		for (int k = 0; k < SL_TR_NKINDS; k++)
			assert_int_equal(rb.dev[i].sent[k], ra.dev[i].sent[k]);
	}
	struct state want = gather(b);
	sl_layout one = layout(1, 1, 1, "1f1b", 1, 0);
	sl_train *t1 = make_train(&attn, &one);
	load(t1, dir, 0);
	struct state got = gather(t1);
	assert_true(state_same(&got, &want));
	state_free(&got);
	state_free(&want);
	sl_train_destroy(t1);
	sl_train_report_free(&ra);
	sl_train_report_free(&rb);
	sl_train_destroy(a);
	sl_train_destroy(b);
	sl_cluster_destroy(c);
}

/* ---- joins follow the stored split ---- */

/* MLP-only, h 6, f 10: fc2 is 10 x 6, row-parallel. */
static sl_model_spec mlp_model(void)
{
	sl_model_spec m;
	sl_model_default(&m);
	m.layers = 2;
	m.hidden = 6;
	m.ffn = 10;
	m.batch = 4;
	return m;
}

/* Distinct exact values that say where they belong. */
static float pat(int t, int r, int c, int w)
{
	return (float)(t * 10000 + r * 100 + c) + 0.25f * (float)w;
}

static void fill_pattern(const sl_model_spec *m, float *p[3])
{
	for (int t = 0; t < sl_model_ntensors(m); t++) {
		sl_tensor_info ti;
		sl_model_tensor(m, t, &ti);
		for (int r = 0; r < ti.rows; r++)
			for (int c = 0; c < ti.cols; c++)
				for (int w = 0; w < 3; w++)
					p[w][ti.offset + (size_t)r * ti.cols + c] = pat(t, r, c, w);
	}
}

static void check_pattern(const sl_model_spec *m, const sl_train *tr, const char *what)
{
	struct state s = gather(tr);
	float *g[3] = {s.p, s.m, s.v};
	for (int t = 0; t < sl_model_ntensors(m); t++) {
		sl_tensor_info ti;
		sl_model_tensor(m, t, &ti);
		for (int r = 0; r < ti.rows; r++)
			for (int c = 0; c < ti.cols; c++)
				for (int w = 0; w < 3; w++) {
					float v = g[w][ti.offset + (size_t)r * ti.cols + c];
					if (v != pat(t, r, c, w))
						fail_msg("%s: %s[%d][%d] state %d holds %g, not %g",
						         what, ti.name, r, c, w, v,
						         pat(t, r, c, w));
				}
	}
	state_free(&s);
}

static json_t *find_tensor(json_t *man, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(man, "tensors"), i,
	                   t) if (strcmp(json_string_value(json_object_get(t, "name")), name) ==
	                          0) return t;
	fail_msg("no tensor %s", name);
	return NULL;
}

static void row_parallel_joined_along_rows(void **st)
{
	(void)st;
	sl_model_spec m = mlp_model();
	size_t n = sl_model_nparams(&m);
	float *p[3] = {malloc(n * 4), malloc(n * 4), malloc(n * 4)};
	fill_pattern(&m, p);
	sl_layout l2 = layout(2, 1, 1, "1f1b", 1, 0);
	sl_train *tr = make_train(&m, &l2);
	assert_int_equal(sl_train_scatter(tr, p[0], p[1], p[2]), SL_OK);
	char dir[300];
	path_in(dir, sizeof dir, "rows");
	save(tr, dir, 0);
	sl_train_destroy(tr);

	/* What the files hold, read independently: fc2's chunks are row blocks
	 * (5 x 6 each, rows 0-4 and 5-9), param then moments. */
	char mp[400];
	snprintf(mp, sizeof mp, "%s/manifest.json", dir);
	json_t *man = json_load_file(mp, 0, NULL);
	assert_non_null(man);
	json_t *fc2 = find_tensor(man, "block1.mlp.fc2.weight");
	assert_string_equal(json_string_value(json_object_get(fc2, "split")), "row");
	assert_int_equal(json_integer_value(json_object_get(fc2, "axis")), 0);
	json_t *chunks = json_object_get(fc2, "chunks");
	assert_int_equal(json_array_size(chunks), 2);
	int t_fc2 = 1 * 4 + 2; /* block 1, fc1.w fc1.b fc2.w fc2.b */
	for (int k = 0; k < 2; k++) {
		json_t *ch = json_array_get(chunks, (size_t)k);
		json_t *off = json_object_get(ch, "offset"), *shp = json_object_get(ch, "shape");
		assert_int_equal(json_integer_value(json_array_get(off, 0)), 5 * k);
		assert_int_equal(json_integer_value(json_array_get(off, 1)), 0);
		assert_int_equal(json_integer_value(json_array_get(shp, 0)), 5);
		assert_int_equal(json_integer_value(json_array_get(shp, 1)), 6);
		char fp[400];
		snprintf(fp, sizeof fp, "%s/%s", dir,
		         json_string_value(json_object_get(ch, "file")));
		unsigned char *b;
		size_t nb = read_whole(fp, &b);
		size_t o = (size_t)json_integer_value(json_object_get(ch, "byte_offset"));
		size_t len = (size_t)json_integer_value(json_object_get(ch, "byte_length"));
		assert_true(o + len <= nb);
		assert_int_equal(len, 3 * 30 * 4);
		assert_int_equal(crc32(0L, b + o, (uInt)len),
		                 (uLong)json_integer_value(json_object_get(ch, "crc32")));
		for (int w = 0; w < 3; w++)
			for (int i = 0; i < 30; i++) {
				float v;
				memcpy(&v, b + o + 4 * (size_t)(w * 30 + i), 4);
				assert_true(v == pat(t_fc2, 5 * k + i / 6, i % 6, w));
			}
		free(b);
	}
	/* Loaded at tp 1 and tp 3, every value lands where it belongs (a join
	 * along columns would put row 5 beside row 0). */
	sl_layout l1 = layout(1, 1, 1, "1f1b", 1, 0), l3 = layout(3, 1, 1, "1f1b", 1, 0);
	sl_train *t1 = make_train(&m, &l1), *t3 = make_train(&m, &l3);
	load(t1, dir, 1);
	check_pattern(&m, t1, "saved at tp 2, loaded at tp 1");
	load(t3, dir, 1);
	check_pattern(&m, t3, "saved at tp 2, loaded at tp 3");

	/* The same tensor stored split by columns (as another layout could
	 * store it): the manifest says so, and the load must follow it rather
	 * than the model's own row split. */
	json_object_set_new(fc2, "split", json_string("column"));
	json_object_set_new(fc2, "axis", json_integer(1));
	for (int k = 0; k < 2; k++) {
		json_t *ch = json_array_get(chunks, (size_t)k);
		json_object_set_new(ch, "offset", json_pack("[ii]", 0, 3 * k));
		json_object_set_new(ch, "shape", json_pack("[ii]", 10, 3));
		char fp[400];
		snprintf(fp, sizeof fp, "%s/%s", dir,
		         json_string_value(json_object_get(ch, "file")));
		unsigned char *b;
		size_t nb = read_whole(fp, &b);
		size_t o = (size_t)json_integer_value(json_object_get(ch, "byte_offset"));
		for (int w = 0; w < 3; w++)
			for (int i = 0; i < 30; i++) {
				float v = pat(t_fc2, i / 3, 3 * k + i % 3, w);
				memcpy(b + o + 4 * (size_t)(w * 30 + i), &v, 4);
			}
		json_object_set_new(ch, "crc32", json_integer((json_int_t)crc32(0L, b + o, 360)));
		write_whole(fp, b, nb);
		free(b);
	}
	assert_int_equal(json_dump_file(man, mp, JSON_INDENT(1)), 0);
	json_decref(man);
	sl_err err = {0};
	sl_ckpt *ck = open_ok(dir);
	assert_int_equal(sl_ckpt_verify(ck, &err), SL_OK);
	sl_ckpt_close(ck);
	sl_train_destroy(t1);
	sl_train_destroy(t3);
	t1 = make_train(&m, &l1);
	t3 = make_train(&m, &l3);
	load(t1, dir, 0);
	check_pattern(&m, t1, "stored by columns, loaded at tp 1");
	load(t3, dir, 1);
	check_pattern(&m, t3, "stored by columns, loaded at tp 3");
	sl_train_destroy(t1);
	sl_train_destroy(t3);
	for (int w = 0; w < 3; w++)
		free(p[w]);
}

/* ---- bad input changes nothing ---- */

/* A fresh checkpoint in dir (tp 2, one step). */
static void good_ckpt(const char *dir)
{
	sl_layout l = layout(2, 1, 1, "1f1b", 1, 0);
	sl_train *tr = make_train(&attn, &l);
	train_steps(tr, 1, ref_loss, "tp2");
	save(tr, dir, 0);
	sl_train_destroy(tr);
}

/* A good checkpoint in the test directory's NAME (its path in dir), and its
 * manifest, loaded. */
static json_t *good_manifest(const char *name, char *dir, size_t n)
{
	char mp[400];
	path_in(dir, n, name);
	good_ckpt(dir);
	snprintf(mp, sizeof mp, "%s/manifest.json", dir);
	json_t *man = json_load_file(mp, 0, NULL);
	assert_non_null(man);
	return man;
}

/* Open and load dir into a fresh tp-4 state on devices: must fail with a
 * one-line message containing want, leaving the files and the state as
 * they were. */
static void refused(const char *dir, const char *want, const sl_model_spec *m)
{
	struct blob before[64], after[64];
	int nb = 0;
	struct stat sb;
	int isdir = stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
	if (isdir)
		nb = snapshot(dir, before, 64);
	sl_layout l = layout(4, 1, 1, "1f1b", 1, 0);
	sl_train *tr = make_train(m ? m : &attn, &l);
	if (!m) /* a state that is not the initial one */
		train_steps(tr, 1, ref_loss, "tp4");
	struct state s0 = gather(tr);
	sl_cluster *c = tu_cluster(4, 100e9, 1e-6);
	sl_ckpt *ck = NULL;
	sl_err err = {0};
	int rc = sl_ckpt_open(dir, &ck, &err);
	if (rc == SL_OK) {
		rc = sl_ckpt_load(tr, c, ck, NULL, &err);
		sl_ckpt_close(ck);
	}
	if (rc == SL_OK)
		fail_msg("%s: loaded, but should be refused (%s)", dir, want);
	if (!strstr(err.msg, want))
		fail_msg("%s: message \"%s\" does not say \"%s\"", dir, err.msg, want);
	assert_null(strchr(err.msg, '\n'));
	struct state s1 = gather(tr);
	assert_true(state_same(&s0, &s1));
	state_free(&s0);
	state_free(&s1);
	if (isdir) {
		int na = snapshot(dir, after, 64);
		snapshot_equal(before, nb, after, na);
		snapshot_free(before, nb);
		snapshot_free(after, na);
	}
	sl_cluster_destroy(c);
	sl_train_destroy(tr);
}

static char *first_data_file(const char *dir, char *out, size_t n)
{
	struct blob b[64];
	int k = snapshot(dir, b, 64);
	for (int i = 0; i < k; i++)
		if (strstr(b[i].name, ".bin")) {
			snprintf(out, n, "%.300s/%.63s", dir, b[i].name);
			break;
		}
	snapshot_free(b, k);
	return out;
}

static void bad_missing_file(void **st)
{
	(void)st;
	char dir[300], f[400];
	path_in(dir, sizeof dir, "missing");
	good_ckpt(dir);
	unlink(first_data_file(dir, f, sizeof f));
	refused(dir, "is missing", NULL);
}

/* A save that commits between a reader's open and its load removes the
 * generation the reader's manifest names (issue 39: "data file ... is
 * missing" though the checkpoint verifies).  The reader keeps what it
 * opened: the load gets that generation whole, and verifies. */
static void load_after_a_save_committed(void **st)
{
	(void)st;
	char dir[300];
	path_in(dir, sizeof dir, "raced");
	good_ckpt(dir);
	sl_ckpt *ck = open_ok(dir);
	long gen = sl_ckpt_info_of(ck)->generation;
	sl_layout l2 = layout(2, 1, 1, "1f1b", 1, 0);
	sl_train *next = make_train(&attn, &l2);
	train_steps(next, 2, ref_loss, "tp2, two steps");
	save(next, dir, 0);
	sl_train_destroy(next);
	sl_ckpt *now = open_ok(dir);
	assert_true(sl_ckpt_info_of(now)->generation > gen);
	sl_ckpt_close(now);
	sl_err err = {0};
	if (sl_ckpt_verify(ck, &err))
		fail_msg("verify of the generation opened: %s", err.msg);
	sl_layout l = layout(4, 1, 1, "1f1b", 1, 0);
	sl_train *tr = make_train(&attn, &l);
	if (sl_ckpt_load(tr, NULL, ck, NULL, &err))
		fail_msg("load of the generation opened: %s", err.msg);
	/* The state of the first save (one step), not the second's. */
	train_steps(tr, 1, ref_loss + 1, "tp4 after the raced load");
	sl_train_destroy(tr);
	sl_ckpt_close(ck);
	rm_rf(dir);
}

static void bad_truncated_file(void **st)
{
	(void)st;
	char dir[300], f[400];
	path_in(dir, sizeof dir, "truncated");
	good_ckpt(dir);
	first_data_file(dir, f, sizeof f);
	struct stat sb;
	assert_int_equal(stat(f, &sb), 0);
	assert_int_equal(truncate(f, sb.st_size - 4), 0);
	refused(dir, "truncated", NULL);
}

static void bad_checksum(void **st)
{
	(void)st;
	char dir[300], f[400];
	path_in(dir, sizeof dir, "flipped");
	good_ckpt(dir);
	first_data_file(dir, f, sizeof f);
	unsigned char *b;
	size_t n = read_whole(f, &b);
	b[n - 3] ^= 0x10; /* the last chunk: devices read others first, fine */
	write_whole(f, b, n);
	free(b);
	refused(dir, "checksum mismatch", NULL);
	sl_ckpt *ck = open_ok(dir);
	sl_err err = {0};
	assert_int_not_equal(sl_ckpt_verify(ck, &err), SL_OK);
	assert_non_null(strstr(err.msg, "checksum mismatch"));
	sl_ckpt_close(ck);
}

static void edit_manifest(const char *dir, const char *key, json_t *value)
{
	char mp[400];
	snprintf(mp, sizeof mp, "%s/manifest.json", dir);
	json_t *man = json_load_file(mp, 0, NULL);
	assert_non_null(man);
	json_object_set_new(man, key, value);
	assert_int_equal(json_dump_file(man, mp, JSON_INDENT(1)), 0);
	json_decref(man);
}

/* The manifest keeps a model's attention mask under "training"; one
 * without it is from before the mask, when attention had none: full.  A
 * mask of another name is refused. */
static void mask_in_manifest(void **st)
{
	(void)st;
	char dir[300];
	json_t *man = good_manifest("mask", dir, sizeof dir);
	json_t *tr = json_deep_copy(json_object_get(man, "training"));
	json_decref(man);
	assert_string_equal(json_string_value(json_object_get(tr, "attention_mask")), "causal");
	sl_ckpt *ck = open_ok(dir);
	assert_int_equal(sl_ckpt_info_of(ck)->model.mask, SL_MASK_CAUSAL);
	sl_ckpt_close(ck);
	json_t *old = json_deep_copy(tr);
	json_object_del(old, "attention_mask");
	edit_manifest(dir, "training", old);
	ck = open_ok(dir);
	assert_int_equal(sl_ckpt_info_of(ck)->model.mask, SL_MASK_FULL);
	sl_ckpt_close(ck);
	json_object_set_new(tr, "attention_mask", json_string("diagonal"));
	edit_manifest(dir, "training", tr);
	sl_err err = {0};
	assert_int_not_equal(sl_ckpt_open(dir, &ck, &err), SL_OK);
	assert_non_null(strstr(err.msg, "attention_mask"));
}

/* The plain model is still written as architecture version 1, so an
 * older shardlab reads it; a version 2 manifest without its keys is
 * refused, and so is a kv_heads that does not group the heads. */
static void arch_versions(void **st)
{
	(void)st;
	char dir[300];
	json_t *man = good_manifest("v1", dir, sizeof dir);
	json_t *a = json_object_get(man, "architecture");
	assert_int_equal(json_integer_value(json_object_get(a, "version")), 1);
	assert_null(json_object_get(a, "kv_heads"));
	json_t *a2 = json_deep_copy(a);
	json_decref(man);
	json_object_set_new(a2, "version", json_integer(2));
	edit_manifest(dir, "architecture", json_deep_copy(a2));
	refused(dir, "kv_heads", NULL);
	json_object_set_new(a2, "kv_heads", json_integer(3));
	json_object_set_new(a2, "ffn_kind", json_string("gelu"));
	edit_manifest(dir, "architecture", json_deep_copy(a2));
	refused(dir, "\"kv_heads\" must divide \"heads\"", NULL);
	json_object_set_new(a2, "kv_heads", json_integer(0));
	json_object_set_new(a2, "ffn_kind", json_string("relu"));
	edit_manifest(dir, "architecture", json_deep_copy(a2));
	refused(dir, "\"ffn_kind\" must be", NULL);
	/* version 3: a norm, named */
	json_object_set_new(a2, "ffn_kind", json_string("gelu"));
	json_object_set_new(a2, "version", json_integer(3));
	edit_manifest(dir, "architecture", json_deep_copy(a2));
	refused(dir, "norm", NULL);
	json_object_set_new(a2, "norm", json_string("batchnorm"));
	edit_manifest(dir, "architecture", json_deep_copy(a2));
	refused(dir, "\"norm\" must be", NULL);
	json_decref(a2);
}

static void bad_newer_format(void **st)
{
	(void)st;
	char dir[300];
	path_in(dir, sizeof dir, "newer");
	good_ckpt(dir);
	edit_manifest(dir, "format_version", json_integer(SL_CKPT_FORMAT_VERSION + 1));
	refused(dir, "newer than this shardlab reads", NULL);
}

static void bad_truncated_manifest(void **st)
{
	(void)st;
	char dir[300], mp[400];
	path_in(dir, sizeof dir, "cut-manifest");
	good_ckpt(dir);
	snprintf(mp, sizeof mp, "%s/manifest.json", dir);
	struct stat sb;
	assert_int_equal(stat(mp, &sb), 0);
	assert_int_equal(truncate(mp, sb.st_size / 2), 0);
	refused(dir, "not valid JSON", NULL);
}

static void bad_architecture(void **st)
{
	(void)st;
	char dir[300];
	path_in(dir, sizeof dir, "arch");
	good_ckpt(dir);
	sl_model_spec other = attn;
	other.ffn = 12;
	refused(dir, "another architecture", &other);
}

static void bad_path_is_a_file(void **st)
{
	(void)st;
	char f[300];
	path_in(f, sizeof f, "plain-file");
	const unsigned char text[] = "not a checkpoint\n";
	write_whole(f, text, sizeof text - 1);
	refused(f, "is a file", NULL);
	/* Saving onto it is refused too, and it keeps its bytes. */
	sl_layout l = layout(1, 1, 1, "1f1b", 1, 0);
	sl_train *tr = make_train(&attn, &l);
	sl_err err = {0};
	assert_int_not_equal(sl_ckpt_save(tr, NULL, f, NULL, &err), SL_OK);
	assert_non_null(strstr(err.msg, "is a file"));
	unsigned char *b;
	size_t n = read_whole(f, &b);
	assert_int_equal(n, sizeof text - 1);
	assert_memory_equal(b, text, n);
	free(b);
	/* A directory that is not a checkpoint is not written into. */
	char d[300], inner[400];
	path_in(d, sizeof d, "not-a-ckpt");
	assert_int_equal(mkdir(d, 0755), 0);
	snprintf(inner, sizeof inner, "%s/notes.txt", d);
	write_whole(inner, text, sizeof text - 1);
	assert_int_not_equal(sl_ckpt_save(tr, NULL, d, NULL, &err), SL_OK);
	assert_non_null(strstr(err.msg, "holds no checkpoint"));
	struct blob s[4];
	assert_int_equal(snapshot(d, s, 4), 1);
	snapshot_free(s, 1);
	sl_train_destroy(tr);
}

static void bad_layout_says_why(void **st)
{
	(void)st;
	char dir[300], out[300];
	path_in(dir, sizeof dir, "to-tp3");
	path_in(out, sizeof out, "to-tp3-out");
	good_ckpt(dir);
	sl_ckpt *ck = open_ok(dir);
	sl_layout l3 = layout(3, 1, 1, "1f1b", 1, 0);
	sl_err err = {0};
	assert_int_not_equal(sl_ckpt_check_target(ck, &attn, &l3, 3, &err), SL_OK);
	assert_non_null(strstr(err.msg, "cannot be resharded to tp=3 pp=1 dp=1"));
	assert_non_null(strstr(err.msg, "heads"));
	/* Offline: refused the same way, nothing written. */
	assert_int_not_equal(sl_ckpt_reshard(ck, &l3, NULL, out, NULL, &err), SL_OK);
	assert_non_null(strstr(err.msg, "heads"));
	struct stat sb;
	assert_int_not_equal(stat(out, &sb), 0);
	/* More stages than blocks: */
	sl_layout l8 = layout(1, 8, 1, "1f1b", 8, 0);
	assert_int_not_equal(sl_ckpt_check_target(ck, &attn, &l8, 8, &err), SL_OK);
	assert_non_null(strstr(err.msg, "layers"));
	sl_ckpt_close(ck);
}

/* verify: chunks that overlap, or leave a hole, are refused at open. */
static void verify_tiling(void **st)
{
	(void)st;
	char dir[300], mp[400];
	path_in(dir, sizeof dir, "tiling");
	good_ckpt(dir);
	sl_ckpt *ck = open_ok(dir);
	sl_err err = {0};
	assert_int_equal(sl_ckpt_verify(ck, &err), SL_OK);
	sl_ckpt_close(ck);
	snprintf(mp, sizeof mp, "%s/manifest.json", dir);
	json_t *man = json_load_file(mp, 0, NULL);
	json_t *fc1 = find_tensor(man, "block0.mlp.fc1.weight");
	json_t *c1 = json_array_get(json_object_get(fc1, "chunks"), 1);
	json_object_set_new(c1, "offset", json_pack("[ii]", 0, 4)); /* columns 4-8: overlaps 0-4 */
	assert_int_equal(json_dump_file(man, mp, JSON_INDENT(1)), 0);
	assert_int_not_equal(sl_ckpt_open(dir, &ck, &err), SL_OK);
	assert_non_null(strstr(err.msg, "overlap"));
	json_array_remove(json_object_get(fc1, "chunks"), 1);
	assert_int_equal(json_dump_file(man, mp, JSON_INDENT(1)), 0);
	assert_int_not_equal(sl_ckpt_open(dir, &ck, &err), SL_OK);
	json_decref(man);
}

/* ---- saving survives a kill at any point ---- */

struct kill_at {
	atomic_int calls;
	sl_ckpt_point p;
	int at;
};

static int kill_hook(void *ctx, sl_ckpt_point p, int dev)
{
	(void)dev;
	struct kill_at *k = ctx;
	if (p == k->p && atomic_fetch_add(&k->calls, 1) + 1 == k->at)
		kill(getpid(), SIGKILL); /* killed: no cleanup, no flush, no exit handlers */
	return 0;
}

/* Save `next` into dir on devices in a child killed at the k-th time it
 * reaches point p; returns 1 if the child was killed, 0 if the save
 * completed without reaching it. */
static int save_killed_at(sl_train *next, const char *dir, sl_ckpt_point p, int k)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct kill_at ka = {0, p, k};
		sl_ckpt_opts o;
		sl_ckpt_opts_default(&o);
		o.fault = kill_hook;
		o.fault_ctx = &ka;
		const sl_layout *l = sl_train_layout(next);
		sl_err err = {0};
		sl_cluster_config cfg;
		sl_cluster_config_default(&cfg);
		cfg.devices = l->tp * l->pp * l->dp;
		sl_cluster *c = sl_cluster_create(&cfg, &err);
		int rc = c ? sl_ckpt_save(next, c, dir, &o, &err) : 1;
		_exit(rc ? 1 : 0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return 1;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	return 0;
}

/* dir loads, and holds exactly old (if given) or new. */
static int loads_as(const char *dir, const struct state *old, const struct state *nw)
{
	sl_ckpt *ck;
	sl_err err = {0};
	if (sl_ckpt_open(dir, &ck, &err)) {
		if (old)
			fail_msg("%s no longer opens: %s", dir, err.msg);
		/* No old checkpoint: "nothing there" is the other allowed outcome. */
		assert_non_null(strstr(err.msg, "no such checkpoint directory"));
		return 0;
	}
	if (sl_ckpt_verify(ck, &err))
		fail_msg("%s: %s", dir, err.msg);
	sl_layout l = layout(1, 1, 1, "1f1b", 1, 0);
	sl_train *tr = make_train(&attn, &l);
	if (sl_ckpt_load(tr, NULL, ck, NULL, &err))
		fail_msg("%s: %s", dir, err.msg);
	struct state s = gather(tr);
	int which = old && state_same(&s, old) ? 1 : state_same(&s, nw) ? 2 : 0;
	if (!which)
		fail_msg("%s holds neither the old checkpoint nor the new one", dir);
	state_free(&s);
	sl_train_destroy(tr);
	sl_ckpt_close(ck);
	return which;
}

static void kill_during_save(void **st)
{
	(void)st;
	sl_layout l = layout(2, 1, 2, "1f1b", 1, 1); /* two writers, ZeRO-1 gathers first */
	sl_train *tr = make_train(&attn, &l);
	train_steps(tr, 1, ref_loss, "old");
	struct state old = gather(tr);
	char dir[300], fresh[300];
	path_in(dir, sizeof dir, "killed");
	path_in(fresh, sizeof fresh, "killed-first");
	save(tr, dir, 1);
	train_steps(tr, 1, ref_loss + 1, "new");
	struct state nw = gather(tr);

	/* Every point, its first few times (a chunk point comes once per chunk). */
	int saw_old = 0, saw_new = 0;
	for (int p = 0; p < SL_CKPT_NPOINTS; p++) {
		int kills = 0;
		for (int k = 1; k <= 3; k++) {
			int killed = save_killed_at(tr, dir, (sl_ckpt_point)p, k);
			int which = loads_as(dir, &old, &nw);
			saw_old |= which == 1;
			saw_new |= which == 2;
			/* Before the rename the old one stands; from it on, the new. */
			if (killed)
				assert_int_equal(which, p < SL_CKPT_AT_COMMITTED ? 1 : 2);
			else
				assert_int_equal(which, 2);
			if (which == 2) { /* put the old one back for the next round */
				sl_train *o = make_train(&attn, &l);
				sl_err err = {0};
				assert_int_equal(sl_train_scatter(o, old.p, old.m, old.v), SL_OK);
				sl_train_set_step(o, old.step);
				assert_int_equal(sl_ckpt_save(o, NULL, dir, NULL, &err), SL_OK);
				sl_train_destroy(o);
			}
			if (!killed)
				break;
			kills++;
		}
		if (kills == 0)
			fail_msg("a save into a checkpoint never reached point '%s'",
			         sl_ckpt_point_name((sl_ckpt_point)p));
	}
	assert_true(saw_old && saw_new);

	/* A first save killed anywhere: nothing under the name, or the new
	 * checkpoint (no old generation to clean up there). */
	for (int p = 0; p < SL_CKPT_AT_CLEANUP; p++) {
		int kills = 0;
		for (int k = 1; k <= 2; k++) {
			rm_rf(fresh);
			int killed = save_killed_at(tr, fresh, (sl_ckpt_point)p, k);
			int which = loads_as(fresh, NULL, &nw);
			if (!killed)
				break;
			kills++;
			assert_int_equal(which, p < SL_CKPT_AT_COMMITTED ? 0 : 2);
		}
		assert_true(kills > 0);
	}
	state_free(&old);
	state_free(&nw);
	sl_train_destroy(tr);
}

/* ---- a save that fails (rather than dies) cleans up ---- */

struct fail_at {
	sl_ckpt_point p;
	atomic_int hit; /* device threads call the hook concurrently */
};

static int fail_hook(void *ctx, sl_ckpt_point p, int dev)
{
	(void)dev;
	struct fail_at *f = ctx;
	if (p != f->p)
		return 0;
	atomic_store(&f->hit, 1);
	return 1;
}

/* Names in the scratch area that start with prefix. */
static int count_prefixed(const char *prefix)
{
	DIR *d = opendir(root);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

static void failed_save_keeps_the_old(void **st)
{
	(void)st;
	sl_layout l = layout(2, 1, 1, "1f1b", 1, 0);
	sl_train *tr = make_train(&attn, &l);
	train_steps(tr, 1, ref_loss, "old");
	struct state old = gather(tr);
	char dir[300], fresh[300];
	path_in(dir, sizeof dir, "fails");
	path_in(fresh, sizeof fresh, "fails-first");
	save(tr, dir, 0);
	train_steps(tr, 1, ref_loss + 1, "new");
	struct state nw = gather(tr);
	struct blob before[64], after[64];
	int nb = snapshot(dir, before, 64);
	/* Before the commit: an error, and every byte as it was. */
	for (int p = SL_CKPT_AT_CHUNK; p <= SL_CKPT_AT_COMMIT; p++) {
		struct fail_at f = {(sl_ckpt_point)p, 0};
		sl_ckpt_opts o;
		sl_ckpt_opts_default(&o);
		o.fault = fail_hook;
		o.fault_ctx = &f;
		sl_cluster *c = tu_cluster(2, 100e9, 1e-6);
		sl_err err = {0};
		assert_int_not_equal(sl_ckpt_save(tr, p % 2 ? c : NULL, dir, &o, &err), SL_OK);
		assert_true(atomic_load(&f.hit));
		assert_non_null(strstr(err.msg, sl_ckpt_point_name((sl_ckpt_point)p)));
		int na = snapshot(dir, after, 64);
		snapshot_equal(before, nb, after, na);
		snapshot_free(after, na);
		/* A first save fails without leaving anything behind. */
		atomic_store(&f.hit, 0);
		assert_int_not_equal(sl_ckpt_save(tr, c, fresh, &o, &err), SL_OK);
		assert_true(atomic_load(&f.hit));
		assert_int_equal(count_prefixed("fails-first"), 0);
		sl_cluster_destroy(c);
	}
	assert_int_equal(loads_as(dir, &old, &nw), 1);
	snapshot_free(before, nb);
	/* After the commit the new checkpoint stands, whatever fails next. */
	struct fail_at f = {SL_CKPT_AT_COMMITTED, 0};
	sl_ckpt_opts o;
	sl_ckpt_opts_default(&o);
	o.fault = fail_hook;
	o.fault_ctx = &f;
	sl_err err = {0};
	assert_int_not_equal(sl_ckpt_save(tr, NULL, dir, &o, &err), SL_OK);
	assert_int_equal(loads_as(dir, &old, &nw), 2);
	/* The next save removes the generation the failure left behind. */
	save(tr, dir, 0);
	sl_ckpt *ck = open_ok(dir);
	int nfiles = sl_ckpt_info_of(ck)->nfiles;
	sl_ckpt_close(ck);
	int na = snapshot(dir, after, 64);
	assert_int_equal(na, nfiles + 1);
	snapshot_free(after, na);
	state_free(&old);
	state_free(&nw);
	sl_train_destroy(tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(resume_from_tp4),
	    cmocka_unit_test(resume_from_tp2_pp2),
	    cmocka_unit_test(resume_from_tp2_dp2_zero1),
	    cmocka_unit_test(resume_from_dp4_zero3),
	    cmocka_unit_test(resume_from_pp2_dp2_zero2),
	    cmocka_unit_test(resume_from_pp4),
	    cmocka_unit_test(llama_kinds_reshard),
	    cmocka_unit_test(norm_reshards),
	    cmocka_unit_test(uneven_stages_reshard),
	    cmocka_unit_test(cp_reshards),
	    cmocka_unit_test(devices_write_and_read_chunks),
	    cmocka_unit_test(train_run_saves_every_n),
	    cmocka_unit_test(row_parallel_joined_along_rows),
	    cmocka_unit_test(bad_missing_file),
	    cmocka_unit_test(bad_truncated_file),
	    cmocka_unit_test(bad_checksum),
	    cmocka_unit_test(arch_versions),
	    cmocka_unit_test(mask_in_manifest),
	    cmocka_unit_test(bad_newer_format),
	    cmocka_unit_test(bad_truncated_manifest),
	    cmocka_unit_test(bad_architecture),
	    cmocka_unit_test(bad_path_is_a_file),
	    cmocka_unit_test(bad_layout_says_why),
	    cmocka_unit_test(verify_tiling),
	    cmocka_unit_test(load_after_a_save_committed),
	    cmocka_unit_test(failed_save_keeps_the_old),
	    cmocka_unit_test(kill_during_save),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
