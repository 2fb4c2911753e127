/* SPDX-License-Identifier: MIT */
/* workload.c - one row of functions per kind of workload (see workload.h). */
#include "workload.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "device.h"
#include "units.h"

/* ---- the product ---- */

static int product_check(const sl_workload *w, int devices, sl_err *err)
{
	return sl_gemm_check(&w->gemm, devices, err);
}

static int product_devices(const sl_workload *w, const sl_cluster_config *cfg)
{
	return w->gemm.split == SL_SPLIT_SINGLE ? 1 : cfg->devices;
}

static int product_run(const sl_workload *w, sl_cluster *c, sl_wl_result *r, int pred, sl_err *err)
{
	(void)pred;
	sl_gemm_result res;
	int rc = sl_gemm_run(c, &w->gemm, r ? &r->gemm : &res, err);
	return rc;
}

/* The analytic model as gemm.c computes it, on the slowest link of the
 * ring over c's devices. */
static double product_predict(const sl_workload *w, const sl_cluster *c)
{
	const sl_cluster_config *cfg = sl_cluster_config_of(c);
	int t = sl_cluster_devices(c);
	double dim = w->gemm.split == SL_SPLIT_ROW ? w->gemm.k : w->gemm.n;
	return sl_gemm_predict(cfg, &w->gemm, t, ceil(dim / t),
	                       sl_cost_ring_bottleneck_op(c, t, SL_COLL_ALLREDUCE, w->gemm.algo));
}

static void product_describe(const sl_workload *w, int devices, char *buf, size_t n)
{
	snprintf(buf, n, "a %s %dx%dx%d product on %d device%s", sl_split_name(w->gemm.split),
	         w->gemm.m, w->gemm.k, w->gemm.n, devices, devices == 1 ? "" : "s");
}

/* ---- a lone collective ---- */

static int coll_check(const sl_workload *w, int devices, sl_err *err)
{
	if (devices < 1)
		return sl_fail(err, SL_EINVAL, "a collective needs at least one device");
	if (w->count < 1)
		return sl_fail(err, SL_EINVAL, "a collective needs at least one value a device");
	return SL_OK;
}

static int all_devices(const sl_workload *w, const sl_cluster_config *cfg)
{
	(void)w;
	return cfg->devices;
}

/* Each device a buffer of random values, then the collective over all. */
static int coll_prog(sl_dev *d, void *arg, sl_err *err)
{
	const sl_workload *w = arg;
	size_t bytes = w->count * sizeof(float);
	int dry = sl_cluster_config_of(sl_dev_cluster(d))->timing_only;
	const char *what = "the collective's buffer";
	/* A dry run holds no values but accounts the buffer all the same. */
	float *buf = dry ? NULL : sl_dev_alloc(d, bytes, what, err);
	if (dry ? sl_dev_reserve(d, bytes, what, err) != SL_OK : !buf)
		return err && err->code ? err->code : SL_EDEVMEM;
	if (buf)
		sl_fill_random(buf, w->count, (uint64_t)sl_dev_id(d) + 1);
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	int rc = sl_coll_run(d, &g, w->op, buf, w->count, w->algo, err);
	if (buf)
		sl_dev_free(d, buf, bytes);
	else
		sl_dev_release(d, bytes);
	return rc;
}

static int coll_run(const sl_workload *w, sl_cluster *c, sl_wl_result *r, int pred, sl_err *err)
{
	(void)r;
	(void)pred;
	return sl_cluster_run(c, coll_prog, (void *)w, err);
}

/* Alpha-beta over the ring's slowest link. */
static double coll_predict(const sl_workload *w, const sl_cluster *c)
{
	int n = sl_cluster_devices(c);
	sl_link_spec bn = sl_cost_ring_bottleneck_op(c, n, w->op, w->algo);
	const sl_cluster_config *cfg = sl_cluster_config_of(c);
	return sl_cost_coll_terms(w->op, w->algo, n, (double)w->count * sl_elem_bytes(cfg),
	                          bn.latency, bn.bandwidth, cfg->topology, NULL, NULL);
}

static void coll_describe(const sl_workload *w, int devices, char *buf, size_t n)
{
	char b[32];
	snprintf(buf, n, "a %s %s of %s over %d devices", sl_algo_name(w->algo),
	         sl_coll_op_name(w->op),
	         sl_fmt_bytes((double)w->count * sizeof(float), b, sizeof b), devices);
}

/* ---- a training step ---- */

static int layout_check(const sl_workload *w, int devices, sl_err *err)
{
	return sl_layout_check(&w->m, &w->l, devices, err);
}

static int layout_devices(const sl_workload *w, const sl_cluster_config *cfg)
{
	(void)cfg;
	return sl_layout_devices(&w->l);
}

static sl_train *make_train(const sl_workload *w, const sl_cluster *c, sl_err *err)
{
	/* A timing-only cluster runs a state without values (the same step). */
	return sl_cluster_config_of(c)->timing_only
	           ? sl_train_create_timing_only(&w->m, &w->l, sl_cluster_devices(c), err)
	           : sl_train_create(&w->m, &w->l, sl_cluster_devices(c), err);
}

static int train_run(const sl_workload *w, sl_cluster *c, sl_wl_result *r, int pred, sl_err *err)
{
	sl_wl_result mine;
	if (!r) {
		memset(&mine, 0, sizeof mine);
		r = &mine;
	}
	sl_train *t = make_train(w, c, err);
	if (!t)
		return err && err->code ? err->code : SL_EINVAL;
	int rc = sl_train_run(t, c, w->steps > 0 ? w->steps : 1, &r->trep, err);
	if (rc == SL_OK) {
		r->loss = r->trep.losses ? r->trep.losses[0] : 0;
		if (pred)
			rc = sl_train_predict(t, c, &r->tpred, err);
	}
	sl_train_destroy(t);
	int est;
	if (rc == SL_OK && pred)
		rc = sl_train_single_step_s(&w->m, &w->l, sl_cluster_config_of(c), &r->single_s,
		                            &est, err);
	if (r == &mine)
		sl_wl_result_free(&mine);
	return rc;
}

static double train_predict(const sl_workload *w, const sl_cluster *c)
{
	sl_err err = {0};
	sl_train_prediction p;
	sl_train *t = sl_train_create_timing_only(&w->m, &w->l, sl_cluster_devices(c), &err);
	int rc = t ? sl_train_predict(t, c, &p, &err) : SL_EINVAL;
	sl_train_destroy(t);
	return rc == SL_OK ? p.step_s : -1;
}

static void layout_describe(const char *what, const sl_workload *w, char *buf, size_t n)
{
	snprintf(buf, n, "%s at tp=%d pp=%d dp=%d (%d micro-batch%s)", what, w->l.tp, w->l.pp,
	         w->l.dp, w->l.microbatches, w->l.microbatches == 1 ? "" : "es");
}

static void train_describe(const sl_workload *w, int devices, char *buf, size_t n)
{
	(void)devices;
	layout_describe(w->steps > 1 ? "training steps" : "one training step", w, buf, n);
}

/* ---- a reshard ---- */

static int reshard_check(const sl_workload *w, int devices, sl_err *err)
{
	if (!w->ck)
		return sl_fail(err, SL_EINVAL, "a reshard needs a checkpoint to read");
	return sl_ckpt_check_target(w->ck, &w->m, &w->l, devices, err);
}

/* Into a directory that is removed after: what is shown is the devices'
 * reads and writes. */
static int reshard_run(const sl_workload *w, sl_cluster *c, sl_wl_result *r, int pred, sl_err *err)
{
	(void)r;
	(void)pred;
	const char *tmp = getenv("TMPDIR");
	char dir[4096], out[4200];
	snprintf(dir, sizeof dir, "%s/shardlab-reshard-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return sl_fail(err, SL_ESYS, "cannot create a directory in %s: %s",
		               tmp && *tmp ? tmp : "/tmp", strerror(errno));
	snprintf(out, sizeof out, "%s/ckpt", dir);
	int rc = sl_ckpt_reshard(w->ck, &w->l, c, out, NULL, err);
	sl_ckpt_remove(out);
	rmdir(dir);
	return rc;
}

/* Every device reads, then writes, one chunk after another at the storage
 * rate: the busiest device's bytes over the rate. */
static double reshard_predict(const sl_workload *w, const sl_cluster *c)
{
	(void)c;
	double bytes[SL_MAX_DEVICES] = {0}, most = 0;
	for (int i = 0; i < w->nreads; i++)
		bytes[w->reads[i].dev] += (double)w->reads[i].bytes;
	for (int i = 0; i < w->nwrites; i++)
		bytes[w->writes[i].dev] += (double)w->writes[i].bytes;
	for (int d = 0; d < SL_MAX_DEVICES; d++)
		if (bytes[d] > most)
			most = bytes[d];
	return most / SL_CKPT_STORAGE_BW_DEFAULT;
}

static void reshard_describe(const sl_workload *w, int devices, char *buf, size_t n)
{
	(void)devices;
	layout_describe("a reshard to", w, buf, n);
}

/* ---- the table ---- */

static const sl_workload_ops table[SL_WL_KINDS] = {
    [SL_WL_PRODUCT] = {"product", product_check, product_devices, product_run, product_predict,
                       product_describe},
    [SL_WL_COLLECTIVE] = {"collective", coll_check, all_devices, coll_run, coll_predict,
                          coll_describe},
    [SL_WL_TRAIN] = {"training step", layout_check, layout_devices, train_run, train_predict,
                     train_describe},
    [SL_WL_RESHARD] = {"reshard", reshard_check, layout_devices, reshard_run, reshard_predict,
                       reshard_describe},
};

const sl_workload_ops *sl_workload_ops_of(sl_wl_kind k)
{
	return k >= 0 && k < SL_WL_KINDS ? &table[k] : &table[SL_WL_PRODUCT];
}

sl_workload sl_workload_product(const sl_gemm_spec *g)
{
	sl_workload w;
	memset(&w, 0, sizeof w);
	w.kind = SL_WL_PRODUCT;
	w.gemm = *g;
	return w;
}

sl_cluster_config sl_workload_cluster(const sl_workload *w, const sl_cluster_config *base)
{
	sl_cluster_config cfg = *base;
	int need = sl_workload_ops_of(w->kind)->devices(w, base);
	if (need != cfg.devices || (w->kind == SL_WL_PRODUCT && need == 1)) {
		cfg.devices = need;
		if (need == 1)
			cfg.devices_per_node = 0;
	}
	return cfg;
}

int sl_workload_run(const sl_workload *w, const sl_cluster_config *base, sl_cluster **out,
                    sl_wl_result *r, sl_err *err)
{
	const sl_workload_ops *ops = sl_workload_ops_of(w->kind);
	sl_cluster_config cfg = sl_workload_cluster(w, base);
	if (out)
		*out = NULL;
	int rc = ops->check(w, cfg.devices, err);
	if (rc)
		return rc;
	sl_cluster *c = sl_cluster_create(&cfg, err);
	if (!c)
		return err && err->code ? err->code : SL_EINVAL;
	rc = sl_workload_exec(w, c, r, 0, err);
	if (out)
		*out = c;
	else
		sl_cluster_destroy(c);
	return rc;
}

int sl_workload_exec(const sl_workload *w, sl_cluster *c, sl_wl_result *r, int with_prediction,
                     sl_err *err)
{
	return sl_workload_ops_of(w->kind)->run(w, c, r, with_prediction, err);
}

void sl_wl_result_free(sl_wl_result *r)
{
	sl_train_report_free(&r->trep);
	sl_ckpt_close(r->ck);
	free(r->reads);
	free(r->writes);
	r->ck = NULL;
	r->reads = r->writes = NULL;
	r->nreads = r->nwrites = 0;
}
