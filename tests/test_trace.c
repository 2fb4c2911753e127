/* SPDX-License-Identifier: MIT */
/* The Chrome trace writer (chrome.c), read back with an independent parser
 * (jansson; the writer does not use it): a ring all-reduce over two nodes,
 * a column-wise product and a training step at tp=2 pp=2 must each give
 * valid Trace Event JSON whose tracks Perfetto can lay out (tids from 1, no
 * two slices of one track on one interval), whose flows all land, and whose
 * step slices enclose their events.  Also: escaping, .gz output,
 * `run --trace=-` on stdout with the report on stderr, and every kind of
 * run's trace under Perfetto's import rules (test_perfetto_rules). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "coll.h"
#include "scenario.h"
#include "trace.h"
#include "testutil.h"
#include "tmputil.h"
#include "clirun.h"

typedef struct membuf {
	char *b;
	size_t n, cap;
} membuf;

static int mem_sink(void *ctx, const char *buf, size_t len)
{
	membuf *m = ctx;
	if (m->n + len + 1 > m->cap) {
		size_t cap = (m->n + len + 1) * 2;
		char *b = realloc(m->b, cap);
		if (!b)
			return -1;
		m->b = b;
		m->cap = cap;
	}
	memcpy(m->b + m->n, buf, len);
	m->n += len;
	m->b[m->n] = '\0';
	return 0;
}

static membuf write_mem(const sl_snapshot *s, const sl_trace_opts *o)
{
	membuf m = {0};
	sl_err err = {0};
	if (sl_trace_write_chrome_to(s, o, mem_sink, &m, &err))
		fail_msg("write: %s", err.msg);
	return m;
}

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	if (!j)
		fail_msg("not JSON: line %d: %s", jerr.line, jerr.text);
	return j;
}

/* ---- Perfetto's JSON import, as its documentation and importer read a
 * trace: timestamps and durations in microseconds become integer
 * nanoseconds by truncating x * 1000, x parsed as whole digits plus the
 * fraction's digits over their power of ten (not always the nearest
 * double); a duration event ("X") that partly overlaps another of its
 * track is dropped (complete events must nest or keep apart); a flow's id
 * is read as a number, and a string id as hexadecimal, the flow dropped
 * when it does not parse; a flow's end with no start before it is
 * dropped.  Applied to the raw text, one event a line as the writer puts
 * them, so nothing here rounds as the writer does. */

/* Perfetto's number rule for ts and dur: integer nanoseconds. */
static long long perfetto_ns(const char *p, const char **end)
{
	double out = 0;
	while (*p >= '0' && *p <= '9')
		out = out * 10.0 + (*p++ - '0');
	if (*p == '.') {
		double frac = 0, div = 1;
		for (p++; *p >= '0' && *p <= '9'; p++) {
			frac = frac * 10.0 + (*p - '0');
			div *= 10.0;
		}
		if (div > 1)
			out += frac / div;
	}
	if (*p == 'e' || *p == 'E')
		fail_msg("a time in exponent notation: %.20s", p);
	*end = p;
	return (long long)(out * 1000.0);
}

/* The value text of "key": in line, or NULL. */
static const char *field(const char *line, const char *key)
{
	char k[32];
	snprintf(k, sizeof k, "\"%s\":", key);
	const char *f = strstr(line, k);
	return f ? f + strlen(k) : NULL;
}

typedef struct pslice {
	long long pid, tid, t0, t1;
} pslice;

static int cmp_pslice(const void *x, const void *y)
{
	const pslice *a = x, *b = y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->t0 != b->t0)
		return a->t0 < b->t0 ? -1 : 1;
	return (a->t1 < b->t1) - (a->t1 > b->t1); /* the longer first */
}

typedef struct pflow {
	long long id;
	size_t line;
	char ph;
} pflow;

static int cmp_pflow(const void *x, const void *y)
{
	const pflow *a = x, *b = y;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return (a->line > b->line) - (a->line < b->line);
}

/* A slice's ends in nanoseconds, as Perfetto converts them. */
static pslice ns_slice(json_t *e)
{
	long long t0 = (long long)(json_number_value(json_object_get(e, "ts")) * 1000.0);
	return (pslice){json_integer_value(json_object_get(e, "pid")),
	                json_integer_value(json_object_get(e, "tid")), t0,
	                t0 + (long long)(json_number_value(json_object_get(e, "dur")) * 1000.0)};
}

/* On each track, slices (sorted by cmp_pslice) nest or keep apart. */
static void check_nesting(const pslice *sl, size_t ns)
{
	long long *stack = malloc((ns + 1) * sizeof *stack);
	size_t depth = 0;
	for (size_t i = 0; i < ns; i++) {
		if (i == 0 || sl[i].pid != sl[i - 1].pid || sl[i].tid != sl[i - 1].tid)
			depth = 0;
		while (depth && stack[depth - 1] <= sl[i].t0)
			depth--;
		if (depth && sl[i].t1 > stack[depth - 1])
			fail_msg(
			    "track %lld/%lld: the slice [%lld, %lld] ns crosses the end of one "
			    "that encloses its start (%lld ns): Perfetto drops it",
			    sl[i].pid, sl[i].tid, sl[i].t0, sl[i].t1, stack[depth - 1]);
		stack[depth++] = sl[i].t1;
	}
	free(stack);
}

static void check_trace(json_t *j, int want_steps)
{
	json_t *evs = json_object_get(j, "traceEvents");
	assert_true(json_is_array(evs));
	size_t n = json_array_size(evs);
	assert_true(n > 0);
	/* Step slices by their args.step; every slice in nanoseconds. */
	size_t cap = n;
	pslice *step = calloc(cap, sizeof *step);
	char *have = calloc(cap, 1);
	pslice *iv = calloc(n, sizeof *iv);
	size_t niv = 0, nsteps = 0;
	json_t *starts = json_object(), *finishes = json_object();
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(evs, i);
		const char *ph = json_string_value(json_object_get(e, "ph"));
		const char *cat = json_string_value(json_object_get(e, "cat"));
		json_t *pid = json_object_get(e, "pid"), *tid = json_object_get(e, "tid");
		if (!ph || !cat || !json_is_integer(pid) || !json_is_integer(tid))
			fail_msg("event %zu lacks ph, cat, pid or tid", i);
		if (json_integer_value(tid) < 1 || json_integer_value(pid) < 1)
			fail_msg("event %zu: pid %lld tid %lld", i,
			         (long long)json_integer_value(pid),
			         (long long)json_integer_value(tid));
		if (strcmp(ph, "X") == 0) {
			if (!json_is_number(json_object_get(e, "ts")) ||
			    !json_is_number(json_object_get(e, "dur")))
				fail_msg("slice %zu: ts or dur not a number", i);
			iv[niv++] = ns_slice(e);
			if (strcmp(cat, "step") == 0) {
				json_int_t k = json_integer_value(
				    json_object_get(json_object_get(e, "args"), "step"));
				assert_true(k >= 0 && (size_t)k < cap);
				step[k] = ns_slice(e);
				have[k] = 1;
				nsteps++;
			}
		} else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
			json_t *jid = json_object_get(e, "id");
			if (!json_is_integer(jid))
				fail_msg("flow event %zu: its id is not a number", i);
			char id[32];
			snprintf(id, sizeof id, "%lld", (long long)json_integer_value(jid));
			json_t *set = ph[0] == 's' ? starts : finishes;
			if (json_object_get(set, id))
				fail_msg("flow %s: two %s events", id, ph);
			if (ph[0] == 'f' && !json_object_get(starts, id))
				fail_msg("flow %s: its end comes before its start", id);
			json_object_set_new(set, id, json_true());
			if (ph[0] == 'f')
				assert_string_equal(json_string_value(json_object_get(e, "bp")),
				                    "e");
		}
	}
	if (want_steps)
		assert_true(nsteps > 0);
	/* No two slices of one track on one interval (but a moment's: sub-ns
	 * steps of a tiny model round to zero length). */
	qsort(iv, niv, sizeof *iv, cmp_pslice);
	for (size_t a = 1; a < niv; a++)
		if (!cmp_pslice(&iv[a], &iv[a - 1]) && iv[a].t1 > iv[a].t0)
			fail_msg("two slices on track %lld/%lld on [%lld, %lld] ns", iv[a].pid,
			         iv[a].tid, iv[a].t0, iv[a].t1);
	/* On a track, slices nest or keep apart, as the format requires (an
	 * importer drops or misdraws a slice that crosses another's end). */
	check_nesting(iv, niv);
	/* Every flow start lands, and every finish has a start. */
	const char *id;
	json_t *v;
	json_object_foreach(starts, id, v) if (!json_object_get(finishes, id))
	    fail_msg("flow %s starts and never finishes", id);
	/* Step slices enclose the events of their step. */
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(evs, i);
		const char *cat = json_string_value(json_object_get(e, "cat"));
		json_t *k = json_object_get(json_object_get(e, "args"), "step");
		if (strcmp(json_string_value(json_object_get(e, "ph")), "X") ||
		    !strcmp(cat, "step") || !k)
			continue;
		json_int_t s = json_integer_value(k);
		assert_true(s >= 0 && (size_t)s < cap && have[s]);
		pslice x = ns_slice(e);
		if (x.t0 < step[s].t0 || x.t1 > step[s].t1)
			fail_msg("event %zu [%lld, %lld] ns outside step %lld [%lld, %lld]", i,
			         x.t0, x.t1, (long long)s, step[s].t0, step[s].t1);
	}
	free(iv);
	free(step);
	free(have);
	json_decref(starts);
	json_decref(finishes);
}

/* The name of the thread (pid, tid), from its metadata; NULL if none. */
static const char *thread_name(json_t *j, json_int_t pid, json_int_t tid)
{
	json_t *evs = json_object_get(j, "traceEvents");
	for (size_t i = 0; i < json_array_size(evs); i++) {
		json_t *e = json_array_get(evs, i);
		if (!strcmp(json_string_value(json_object_get(e, "ph")), "M") &&
		    !strcmp(json_string_value(json_object_get(e, "name")), "thread_name") &&
		    json_integer_value(json_object_get(e, "pid")) == pid &&
		    json_integer_value(json_object_get(e, "tid")) == tid)
			return json_string_value(
			    json_object_get(json_object_get(e, "args"), "name"));
	}
	return NULL;
}

static int has_name(json_t *j, const char *name)
{
	json_t *evs = json_object_get(j, "traceEvents");
	for (size_t i = 0; i < json_array_size(evs); i++) {
		json_t *e = json_array_get(evs, i), *a = json_object_get(e, "args");
		const char *n = json_string_value(json_object_get(e, "name"));
		const char *an = a ? json_string_value(json_object_get(a, "name")) : NULL;
		if ((n && strcmp(n, name) == 0) || (an && strcmp(an, name) == 0))
			return 1;
	}
	return 0;
}

static void check_snapshot(sl_cluster *c, int want_steps, json_t **out)
{
	sl_snapshot s;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &s), SL_OK);
	sl_trace_opts o = {.known = 1,
	                   .devices_per_node = sl_cluster_config_of(c)->devices_per_node};
	membuf m = write_mem(&s, &o);
	json_t *j = parse(m.b);
	check_trace(j, want_steps);
	free(m.b);
	sl_snapshot_free(&s);
	*out = j;
}

static void test_ring_two_nodes(void **state)
{
	(void)state;
	sl_cluster_config cfg = tu_config(4, 100e9, 2e-6);
	cfg.devices_per_node = 2;
	cfg.inter.bandwidth = 12.5e9;
	cfg.inter.latency = 5e-6;
	cfg.timing_only = 1;
	sl_cluster *c = tu_create(&cfg);
	tu_coll_job job = {SL_COLL_ALLREDUCE, SL_ALGO_RING, 1 << 20};
	sl_err err = {0};
	if (sl_cluster_run(c, tu_coll_prog, &job, &err))
		fail_msg("all-reduce: %s", err.msg);
	json_t *j;
	check_snapshot(c, 1, &j);
	assert_true(has_name(j, "node 0"));
	assert_true(has_name(j, "node 1"));
	/* Device 2 is node 1's first: pid 2, its compute track tid 7. */
	assert_string_equal(thread_name(j, 2, 7), "device 2 compute (node 1)");
	assert_true(has_name(j, "link 1->2 (inter-node)"));
	assert_true(has_name(j, "link 0->1 (intra-node)"));
	assert_true(has_name(j, "allreduce ring step 1/6 reduce-scatter"));
	assert_true(has_name(j, "bytes in flight"));
	json_decref(j);
	sl_cluster_destroy(c);
}

static void test_colwise(void **state)
{
	(void)state;
	sl_scenario sc;
	sl_scenario_default(&sc);
	sl_preset_apply(sl_preset_find("h100"), &sc.cluster);
	sc.cluster.devices = 4;
	sc.cluster.devices_per_node = 0;
	sc.cluster.timing = SL_TIMING_MODEL;
	sc.cluster.slowdown = 0;
	sc.gemm.split = SL_SPLIT_COL;
	sc.gemm.m = 64;
	sc.gemm.k = 128;
	sc.gemm.n = 128;
	sl_cluster *c = NULL;
	sl_gemm_result res;
	sl_err err = {0};
	if (sl_scenario_run(&sc, &c, &res, &err))
		fail_msg("run: %s", err.msg);
	json_t *j;
	check_snapshot(c, 1, &j);
	/* One node: all devices in "node 0", links intra-node. */
	assert_true(has_name(j, "node 0"));
	assert_false(has_name(j, "node 1"));
	assert_true(has_name(j, "link 0->1 (intra-node)"));
	json_decref(j);
	sl_cluster_destroy(c);
}

/* One training step of layout l on cfg (model timing, headless), its trace
 * checked by check_trace(). */
static json_t *train_trace(const sl_model_spec *ms, const sl_layout *l, sl_cluster_config cfg)
{
	sl_err err = {0};
	sl_train *tr = cfg.timing_only ? sl_train_create_timing_only(ms, l, cfg.devices, &err)
	                               : sl_train_create(ms, l, cfg.devices, &err);
	if (!tr)
		fail_msg("train: %s", err.msg);
	cfg.timing = SL_TIMING_MODEL;
	cfg.slowdown = 0;
	sl_cluster *c = tu_create(&cfg);
	sl_train_report rep;
	if (sl_train_run(tr, c, 1, &rep, &err))
		fail_msg("train: %s", err.msg);
	sl_train_report_free(&rep);
	json_t *j;
	check_snapshot(c, 1, &j);
	sl_cluster_destroy(c);
	sl_train_destroy(tr);
	return j;
}

static void test_training(void **state)
{
	(void)state;
	sl_model_spec ms = tu_model(2, 16, 32, 2, 4, 32);
	sl_layout l = tu_layout(2, 2, 1, SL_SCHED_1F1B, 2, 1);
	sl_cluster_config cfg = tu_h100(4, 2);
	cfg.memory = (uint64_t)1 << 30;
	json_decref(train_trace(&ms, &l, cfg));
}

/* A pipeline message that shared its port says how many shared it
 * (args.port_share), and its slice lasts what that share gives: a + k n/B
 * of the inter-node link, k its port_share or 1. */
static void test_port_share(void **state)
{
	(void)state;
	sl_model_spec ms = tu_model(8, 16, 32, 0, 1, 8);
	sl_layout l = tu_layout(1, 4, 1, SL_SCHED_INTERLEAVED, 8, 2);
	sl_cluster_config cfg = tu_h100(4, 1);
	cfg.timing_only = 1;
	cfg.efficiency = SL_EFF_REALISTIC;
	json_t *j = train_trace(&ms, &l, cfg);
	json_t *evs = json_object_get(j, "traceEvents");
	int shared = 0, alone = 0;
	for (size_t i = 0; i < json_array_size(evs); i++) {
		json_t *e = json_array_get(evs, i), *args = json_object_get(e, "args");
		const char *kind = json_string_value(json_object_get(args, "kind"));
		if (!kind || strcmp(kind, "send") != 0)
			continue;
		json_t *k = json_object_get(args, "port_share");
		double share = k ? (double)json_integer_value(k) : 1;
		double bytes = (double)json_integer_value(json_object_get(args, "bytes"));
		double want = (5e-6 + share * bytes / 50e9) * 1e6;
		/* Written in whole nanoseconds, each end rounded. */
		double dur = json_number_value(json_object_get(e, "dur"));
		if (fabs(dur - want) > 1.01e-3)
			fail_msg("send slice %zu: %.9g us, want %.9g (port_share %g)", i, dur, want,
			         share);
		shared += share == 2;
		alone += share == 1;
	}
	if (!shared || !alone)
		fail_msg("%d sends with port_share 2, %d without: want both", shared, alone);
	json_decref(j);
}

/* Labels are the engine's, but a quote, a backslash or a control character
 * must still come out as valid JSON; and with no cluster shape the writer
 * names no nodes. */
static void test_escaping(void **state)
{
	(void)state;
	sl_trace *t = sl_trace_create(2);
	sl_event e = {.dev = 0, .peer = -1, .kind = SL_EV_COMPUTE, .mb = -1, .t0 = 0, .t1 = 1e-6};
	e.coll.op = -1;
	snprintf(e.label, sizeof e.label, "a\"b\\c\nd\te\x01z");
	sl_trace_add(t, &e);
	sl_snapshot s;
	assert_int_equal(sl_trace_snapshot(t, &s), SL_OK);
	membuf m = write_mem(&s, NULL);
	assert_non_null(strstr(m.b, "a\\\"b\\\\c\\u000ad\\u0009e\\u0001z"));
	json_t *j = parse(m.b);
	check_trace(j, 1);
	assert_true(has_name(j, "a\"b\\c\nd\te\x01z"));
	assert_true(has_name(j, "device 1 recv"));
	assert_false(has_name(j, "node 0"));
	json_decref(j);
	free(m.b);
	sl_snapshot_free(&s);
	sl_trace_destroy(t);
}

/* A take moves out the events a snapshot copies, in the same order (the
 * order of cmp_event: time, then device, then end), and leaves the trace
 * empty (a device records some events out of that order). */
static void test_take(void **state)
{
	(void)state;
	sl_model_spec ms = tu_model(2, 16, 32, 2, 4, 32);
	sl_layout l = tu_layout(2, 2, 1, SL_SCHED_1F1B, 4, 1);
	sl_cluster_config cfg = tu_h100(4, 2);
	cfg.memory = (uint64_t)1 << 30;
	cfg.timing = SL_TIMING_MODEL;
	sl_err err = {0};
	sl_train *tr = sl_train_create(&ms, &l, 4, &err);
	assert_non_null(tr);
	sl_cluster *c = tu_create(&cfg);
	sl_train_report rep;
	if (sl_train_run(tr, c, 2, &rep, &err))
		fail_msg("train: %s", err.msg);
	sl_train_report_free(&rep);
	sl_snapshot a, b;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &a), SL_OK);
	assert_int_equal(sl_trace_take(sl_cluster_trace(c), &b), SL_OK);
	assert_true(a.n > 100);
	assert_int_equal(a.n, b.n);
	/* The order trace.h states, written out here: time, then device,
	 * then end. */
	for (size_t i = 0; i < a.n; i++) {
		assert_memory_equal(&a.ev[i], &b.ev[i], sizeof a.ev[i]);
		const sl_event *p = i ? &a.ev[i - 1] : NULL, *e = &a.ev[i];
		if (p && (e->t0 < p->t0 || (e->t0 == p->t0 && e->dev < p->dev) ||
		          (e->t0 == p->t0 && e->dev == p->dev && e->t1 < p->t1)))
			fail_msg("event %zu is out of order", i);
	}
	assert_int_equal(sl_trace_count(sl_cluster_trace(c)), 0);
	sl_snapshot_free(&a);
	sl_snapshot_free(&b);
	sl_cluster_destroy(c);
	sl_train_destroy(tr);
}

/* A .gz trace gunzips to the same bytes as the plain one. */
static void test_gzip(void **state)
{
	(void)state;
	sl_cluster_config cfg = tu_config(4, 100e9, 2e-6);
	cfg.devices_per_node = 2;
	cfg.timing_only = 1;
	sl_cluster *c = tu_create(&cfg);
	tu_coll_job job = {SL_COLL_ALLGATHER, SL_ALGO_RING, 1 << 16};
	sl_err err = {0};
	if (sl_cluster_run(c, tu_coll_prog, &job, &err))
		fail_msg("all-gather: %s", err.msg);
	sl_snapshot s;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &s), SL_OK);
	sl_trace_opts o = {.known = 1, .devices_per_node = 2};
	membuf m = write_mem(&s, &o);
	char path[512], tmpl[64];
	snprintf(tmpl, sizeof tmpl, "test_trace_%d.json.gz", (int)getpid());
	tu_tmpname(path, sizeof path, tmpl);
	if (sl_trace_write_chrome_gz(&s, &o, path, &err))
		fail_msg("gz: %s", err.msg);
	gzFile g = gzopen(path, "rb");
	assert_non_null(g);
	membuf u = {0};
	char buf[4096];
	int k;
	while ((k = gzread(g, buf, sizeof buf)) > 0)
		mem_sink(&u, buf, (size_t)k);
	assert_true(k == 0);
	gzclose(g);
	unlink(path);
	assert_int_equal(u.n, m.n);
	assert_memory_equal(u.b, m.b, m.n);
	json_decref(parse(u.b));
	free(u.b);
	free(m.b);
	sl_snapshot_free(&s);
	sl_cluster_destroy(c);
}

/* The trace file at path under Perfetto's rules: every slice kept, every
 * flow paired.  *span_ns: the trace's last end. */
static void perfetto_check(const char *path, size_t *nslices, size_t *nflows, long long *span_ns)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t cs = 1024, cf = 1024, ns = 0, nf = 0, ln = 0;
	pslice *sl = malloc(cs * sizeof *sl);
	pflow *fl = malloc(cf * sizeof *fl);
	char *line = NULL;
	size_t cap = 0;
	long long last = 0;
	while (getline(&line, &cap, f) > 0) {
		ln++;
		const char *ph = field(line, "ph");
		if (!ph)
			continue;
		const char *pid = field(line, "pid"), *tid = field(line, "tid");
		if (!pid || !tid)
			fail_msg("line %zu: no pid or tid", ln);
		const char *e;
		if (!strncmp(ph, "\"X\"", 3)) {
			const char *ts = field(line, "ts"), *dur = field(line, "dur");
			if (!ts || !dur)
				fail_msg("line %zu: a slice without ts or dur", ln);
			if (ns == cs)
				sl = realloc(sl, (cs *= 2) * sizeof *sl);
			pslice *x = &sl[ns++];
			x->pid = atoll(pid);
			x->tid = atoll(tid);
			x->t0 = perfetto_ns(ts, &e);
			x->t1 = x->t0 + perfetto_ns(dur, &e);
			/* The same under a correctly rounded parse. */
			long long t0 = (long long)(strtod(ts, NULL) * 1000.0);
			if (t0 != x->t0 || t0 + (long long)(strtod(dur, NULL) * 1000.0) != x->t1)
				fail_msg("line %zu: ts %.24s dur %.24s read differently by strtod",
				         ln, ts, dur);
			if (x->t1 > last)
				last = x->t1;
		} else if (!strncmp(ph, "\"s\"", 3) || !strncmp(ph, "\"f\"", 3)) {
			const char *id = field(line, "id");
			if (!id || *id < '0' || *id > '9')
				fail_msg("line %zu: a flow whose id is not a number: %.40s", ln,
				         id ? id : "");
			if (nf == cf)
				fl = realloc(fl, (cf *= 2) * sizeof *fl);
			fl[nf++] = (pflow){atoll(id), ln, ph[1]};
		}
	}
	free(line);
	fclose(f);
	/* Slices: on each track, nested or apart once in nanoseconds. */
	qsort(sl, ns, sizeof *sl, cmp_pslice);
	check_nesting(sl, ns);
	/* Flows: each number one "s", then one "f". */
	qsort(fl, nf, sizeof *fl, cmp_pflow);
	for (size_t i = 0; i < nf; i += 2) {
		if (i + 1 >= nf || fl[i + 1].id != fl[i].id ||
		    (i + 2 < nf && fl[i + 2].id == fl[i].id))
			fail_msg("flow %lld: not one start and one end", fl[i].id);
		if (fl[i].ph != 's' || fl[i + 1].ph != 'f')
			fail_msg("flow %lld: its end (line %zu) comes before its start", fl[i].id,
			         fl[i].line);
	}
	free(sl);
	free(fl);
	*nslices = ns;
	*nflows = nf / 2;
	*span_ns = last;
}

/* A trace of every kind of run, through the command line, and one of a
 * multi-second training run (where nine significant digits used to make
 * neighbouring slices cross after the conversion), under those rules. */
static void test_perfetto_rules(void **state)
{
	(void)state;
	static const struct {
		const char *args;
		long long min_span_ns;
	} runs[] = {
	    {"run --devices=4 --devices-per-node=2 --m=64 --k=96 --n=128", 1},
	    {"coll --op=allreduce --devices=8 --devices-per-node=4 --bytes=1MiB", 1},
	    {"train --tp=2 --pp=2 --dp=2 --microbatches=4 --steps=2", 1},
	    {"train --dry-run --preset=a100 --tp=4 --pp=2 --model=gpt3-175b --layers=2 --batch=8 "
	     "--microbatches=4 --steps=4",
	     1000000000LL},
	};
	for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
		char path[512], tmpl[64], args[800];
		snprintf(tmpl, sizeof tmpl, "test_trace_pf_%d.json", (int)getpid());
		tu_tmpname(path, sizeof path, tmpl);
		snprintf(args, sizeof args, "%s --trace=%s", runs[k].args, path);
		tu_result r;
		tu_run_to(args, "/dev/null", &r);
		if (r.status != 0)
			fail_msg("%s: status %d: %s", args, r.status, r.err);
		tu_result_free(&r);
		size_t nsl, nfl;
		long long span;
		perfetto_check(path, &nsl, &nfl, &span);
		unlink(path);
		if (span < runs[k].min_span_ns)
			fail_msg("%s: the trace spans %lld ns, want %lld at least", runs[k].args,
			         span, runs[k].min_span_ns);
		assert_true(nsl > 0);
		assert_true(nfl > 0);
		print_message("ok: %s: %zu slices, %zu flows over %lld ns\n", runs[k].args, nsl,
		              nfl, span);
	}
}

/* --trace=- puts the trace on stdout and the report on stderr, and makes
 * no file named "-". */
static void test_stdout(void **state)
{
	(void)state;
	int had_dash = access("-", F_OK) == 0;
	tu_result r;
	tu_run("run --devices=4 --devices-per-node=2 --m=16 --k=24 --n=32 --trace=-", &r);
	assert_int_equal(r.status, 0);
	json_t *j = parse(r.out);
	check_trace(j, 1);
	assert_true(has_name(j, "link 1->2 (inter-node)"));
	json_decref(j);
	assert_non_null(strstr(r.err, "PASS"));
	tu_result_free(&r);
	if (!had_dash)
		assert_true(access("-", F_OK) != 0);
	/* The sandbox's screen is stdout: it takes a file name only. */
	tu_run("sandbox --trace=-", &r);
	tu_expect_one_error("sandbox --trace=-", 2, &r);
	tu_result_free(&r);
	/* The .gz route through the command line. */
	char path[512], tmpl[64];
	snprintf(tmpl, sizeof tmpl, "test_trace_cli_%d.json.gz", (int)getpid());
	tu_tmpname(path, sizeof path, tmpl);
	char args[800];
	snprintf(args, sizeof args, "run --devices=2 --m=16 --k=24 --n=32 --trace=%s", path);
	tu_run(args, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "PASS"));
	tu_result_free(&r);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	unsigned char magic[2] = {0};
	assert_int_equal(fread(magic, 1, 2, f), 2);
	fclose(f);
	unlink(path);
	assert_true(magic[0] == 0x1f && magic[1] == 0x8b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_two_nodes), cmocka_unit_test(test_colwise),
	    cmocka_unit_test(test_training),       cmocka_unit_test(test_port_share),
	    cmocka_unit_test(test_escaping),       cmocka_unit_test(test_take),
	    cmocka_unit_test(test_gzip),           cmocka_unit_test(test_stdout),
	    cmocka_unit_test(test_perfetto_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
