/* SPDX-License-Identifier: MIT */
/* test_train.c - every layout trains the model exactly as one device does.
 *
 * For each strategy and combination (uneven splits included where the
 * strategy allows them): the losses of 10 steps equal the single-device
 * reference's to 1e-5 relative, and the parameters and Adam moments
 * gathered after 10 steps equal the reference's to 1e-4 relative (the
 * largest difference in a tensor over its largest value). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

#define STEPS 10

struct ref {
	sl_model_spec m;
	double loss[STEPS];
	sl_ref r;
};

/* Attention model: 4 blocks, 4 heads of 2, ffn 10 (uneven over 3 and 4). */
static struct ref attn_ref, mlp_ref;
/* Llama's kinds: 4 query heads of 2 in 2 key/value groups, a SwiGLU MLP of
 * 10 pairs (uneven over 4 ranks); and a SwiGLU MLP-only model of 7. */
static struct ref llama_ref, swiglu_ref;
/* The attention model with 30% attention dropout, and the Llama one with 20%. */
static struct ref drop_ref, drop_llama_ref;
/* The attention model and the MLP one with 25% hidden dropout. */
static struct ref hdrop_ref, hdrop_mlp_ref;
/* Pre-norms: the attention model with layer norms, the MLP one and
 * Llama's kinds with RMS norms. */
static struct ref ln_ref, rms_mlp_ref, rms_llama_ref;
/* Layer norms with both dropouts. */
static struct ref lnd_ref;
/* The attention model 7 blocks deep, which divides over no pipeline of 2
 * or 3 stages of 2 chunks. */
static struct ref deep_ref;
/* Every model above is causal (the default); the attention model and the
 * Llama one without a mask, the Llama one with attention dropout too. */
static struct ref full_ref, full_llama_ref;
/* Context parallelism: sequences of 24 tokens (into 2 cp chunks for cp 2, 3
 * and 4), with grouped queries and SwiGLU, hidden dropout and layer norms,
 * no mask, and 7 blocks. */
static struct ref cp_ref, cp_llama_ref, cp_hdrop_ref, cp_full_ref, cp_deep_ref;
/* The next case's context parallelism (0: none), and ZeRO-3's keeping. */
static int case_cp, case_cp_comm, case_keep;

static void make_ref(struct ref *R, const sl_model_spec *m)
{
	sl_err err;
	R->m = *m;
	assert_int_equal(sl_ref_init(&R->r, m, &err), SL_OK);
	for (int s = 0; s < STEPS; s++)
		assert_int_equal(sl_ref_step(&R->r, &R->loss[s], &err), SL_OK);
}

static int setup(void **state)
{
	(void)state;
	sl_model_spec m;
	sl_model_default(&m);
	m.layers = 4;
	m.hidden = 8;
	m.ffn = 10;
	m.heads = 4;
	m.seq = 4;
	m.batch = 8;
	m.lr = 1e-2f;
	make_ref(&attn_ref, &m);
	m.attn_dropout = 0.3f;
	make_ref(&drop_ref, &m);
	/* (the dropout changes the losses: the cases below are not vacuous) */
	assert_true(fabs(drop_ref.loss[STEPS - 1] - attn_ref.loss[STEPS - 1]) >
	            1e-3 * attn_ref.loss[STEPS - 1]);
	m.attn_dropout = 0;
	m.hidden_dropout = 0.25f;
	make_ref(&hdrop_ref, &m);
	assert_true(fabs(hdrop_ref.loss[STEPS - 1] - attn_ref.loss[STEPS - 1]) >
	            1e-3 * attn_ref.loss[STEPS - 1]);
	m.hidden_dropout = 0;
	m.norm = SL_NORM_LAYER;
	make_ref(&ln_ref, &m);
	m.attn_dropout = 0.2f;
	m.hidden_dropout = 0.2f;
	make_ref(&lnd_ref, &m);
	m.attn_dropout = 0;
	m.hidden_dropout = 0;
	m.norm = SL_NORM_NONE;
	m.layers = 7;
	make_ref(&deep_ref, &m);
	m.layers = 4;
	m.norm = SL_NORM_LAYER;
	assert_true(fabs(ln_ref.loss[STEPS - 1] - attn_ref.loss[STEPS - 1]) >
	            1e-3 * attn_ref.loss[STEPS - 1]);
	m.norm = SL_NORM_NONE;
	m.mask = SL_MASK_FULL;
	make_ref(&full_ref, &m);
	/* (the mask changes the losses: the causal cases are not vacuous) */
	assert_true(fabs(full_ref.loss[STEPS - 1] - attn_ref.loss[STEPS - 1]) >
	            1e-3 * attn_ref.loss[STEPS - 1]);
	/* MLP model: 5 blocks (uneven over 2 and 3 stages), batch 7 (uneven
	 * over replicas and micro-batches), ffn 10. */
	sl_model_default(&m);
	m.layers = 5;
	m.hidden = 6;
	m.ffn = 10;
	m.batch = 7;
	m.seed = 3;
	m.lr = 1e-2f;
	make_ref(&mlp_ref, &m);
	m.hidden_dropout = 0.25f;
	make_ref(&hdrop_mlp_ref, &m);
	assert_true(fabs(hdrop_mlp_ref.loss[STEPS - 1] - mlp_ref.loss[STEPS - 1]) >
	            1e-3 * mlp_ref.loss[STEPS - 1]);
	m.hidden_dropout = 0;
	m.norm = SL_NORM_RMS;
	make_ref(&rms_mlp_ref, &m);
	sl_model_default(&m);
	m.layers = 4;
	m.hidden = 8;
	m.ffn = 10;
	m.heads = 4;
	m.kv_heads = 2;
	m.ffn_kind = SL_FFN_SWIGLU;
	m.seq = 4;
	m.batch = 8;
	m.seed = 5;
	m.lr = 1e-2f;
	make_ref(&llama_ref, &m);
	m.attn_dropout = 0.2f;
	make_ref(&drop_llama_ref, &m);
	m.mask = SL_MASK_FULL;
	make_ref(&full_llama_ref, &m);
	m.mask = SL_MASK_CAUSAL;
	m.attn_dropout = 0;
	m.norm = SL_NORM_RMS;
	make_ref(&rms_llama_ref, &m);
	sl_model_default(&m);
	m.layers = 4;
	m.hidden = 8;
	m.ffn = 10;
	m.heads = 4;
	m.seq = 24;
	m.batch = 4;
	m.seed = 11;
	m.lr = 1e-2f;
	make_ref(&cp_ref, &m);
	m.layers = 7;
	make_ref(&cp_deep_ref, &m);
	m.layers = 4;
	m.mask = SL_MASK_FULL;
	make_ref(&cp_full_ref, &m);
	m.mask = SL_MASK_CAUSAL;
	m.hidden_dropout = 0.25f;
	m.norm = SL_NORM_LAYER;
	make_ref(&cp_hdrop_ref, &m);
	m.hidden_dropout = 0;
	m.norm = SL_NORM_RMS;
	m.kv_heads = 2;
	m.ffn_kind = SL_FFN_SWIGLU;
	make_ref(&cp_llama_ref, &m);
	sl_model_default(&m);
	m.layers = 3;
	m.hidden = 6;
	m.ffn = 7;
	m.ffn_kind = SL_FFN_SWIGLU;
	m.batch = 6;
	m.seed = 9;
	m.lr = 1e-2f;
	make_ref(&swiglu_ref, &m);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sl_ref_free(&attn_ref.r);
	sl_ref_free(&mlp_ref.r);
	sl_ref_free(&llama_ref.r);
	sl_ref_free(&swiglu_ref.r);
	sl_ref_free(&drop_ref.r);
	sl_ref_free(&drop_llama_ref.r);
	sl_ref_free(&hdrop_ref.r);
	sl_ref_free(&hdrop_mlp_ref.r);
	sl_ref_free(&ln_ref.r);
	sl_ref_free(&lnd_ref.r);
	sl_ref_free(&rms_mlp_ref.r);
	sl_ref_free(&rms_llama_ref.r);
	sl_ref_free(&deep_ref.r);
	sl_ref_free(&full_ref.r);
	sl_ref_free(&full_llama_ref.r);
	return 0;
}

/* What sl_train_on_step reported: each step once, in order. */
struct seen {
	int n;
	long step[STEPS];
	double loss[STEPS], step_s[STEPS];
};

static void on_step(void *arg, long step, double loss, double step_s)
{
	struct seen *w = arg;
	assert_true(w->n < STEPS);
	w->step[w->n] = step;
	w->loss[w->n] = loss;
	w->step_s[w->n++] = step_s;
}

/* stages: --stage-layers's value (NULL: even); ov: the layout's overlap
 * (the ideal machine's auto is off) */
static void check_ov(const struct ref *R, const char *spec0, int devices_per_node,
                     const char *stages, int ov)
{
	char spec[192];
	snprintf(spec, sizeof spec, "%s%s", spec0, ov == SL_OVERLAP_ON ? " (overlap on)" : "");
	/* spec: "tp pp dp schedule m v sp zero [order [algo [recompute [attention]]]]" */
	sl_layout l;
	sl_layout_default(&l);
	if (stages)
		assert_int_equal(sl_stage_layers_parse(stages, &l, NULL), SL_OK);
	char sched[16], order[16] = "tp-dp-pp", algo[8] = "ring", rc[16] = "none";
	char attn[16] = "materialized";
	int n = sscanf(spec0, "%d %d %d %15s %d %d %d %d %15s %7s %15s %15s", &l.tp, &l.pp, &l.dp,
	               sched, &l.microbatches, &l.chunks, &l.seq_parallel, &l.zero, order, algo, rc,
	               attn);
	assert_true(n >= 8);
	assert_int_equal(sl_recompute_parse(rc, &l.recompute), 0);
	assert_int_equal(sl_attention_parse(attn, &l.attention), 0);
	assert_int_equal(sl_sched_parse(sched, &l.schedule), SL_OK);
	assert_int_equal(sl_mesh_order_parse(order, l.order), SL_OK);
	assert_int_equal(sl_algo_parse(algo, &l.algo), SL_OK);
	if (case_cp) {
		l.cp = case_cp;
		l.cp_comm = case_cp_comm;
	}
	l.zero_keep = case_keep;
	l.overlap = ov;
	int ndev = sl_layout_devices(&l);

	sl_cluster_config cfg;
	sl_cluster_config_default(&cfg);
	cfg.devices = ndev;
	cfg.devices_per_node = devices_per_node;
	cfg.memory = (uint64_t)1 << 30;
	sl_err err = {0};
	sl_cluster *c = sl_cluster_create(&cfg, &err);
	assert_non_null(c);
	sl_train *tr = sl_train_create(&R->m, &l, ndev, &err);
	if (!tr)
		fail_msg("%s: %s", spec, err.msg);
	sl_train_report rep;
	struct seen seen = {0};
	sl_train_on_step(tr, on_step, &seen);
	if (sl_train_run(tr, c, STEPS, &rep, &err))
		fail_msg("%s: %s", spec, err.msg);
	/* The steps as they ended are the report's: in order, the same losses
	 * (summed in the same order), times whose mean is its step time. */
	assert_int_equal(seen.n, STEPS);
	double sum_s = 0;
	for (int s = 0; s < STEPS; s++) {
		assert_int_equal(seen.step[s], s);
		if (seen.loss[s] != rep.losses[s])
			fail_msg("%s: step %d reported loss %.17g, the report %.17g", spec, s,
			         seen.loss[s], rep.losses[s]);
		sum_s += seen.step_s[s];
	}
	assert_true(fabs(sum_s / STEPS - rep.step_s) <= 1e-12 * rep.step_s);
	for (int s = 0; s < STEPS; s++) {
		double rel = fabs(rep.losses[s] - R->loss[s]) / fabs(R->loss[s]);
		if (!(rel <= 1e-5))
			fail_msg("%s: step %d loss %.9g, reference %.9g", spec, s, rep.losses[s],
			         R->loss[s]);
	}
	assert_int_equal(sl_train_step(tr), STEPS);

	size_t np = sl_model_nparams(&R->m);
	float *p = malloc(np * sizeof *p), *mo = malloc(np * sizeof *mo),
	      *va = malloc(np * sizeof *va);
	assert_int_equal(sl_train_gather(tr, p, mo, va), SL_OK);
	const float *want[3] = {R->r.params, R->r.mom, R->r.var};
	const float *got[3] = {p, mo, va};
	const char *what[3] = {"parameters", "first moments", "second moments"};
	for (int w = 0; w < 3; w++) {
		int worst = 0;
		double rel = tu_tensor_rel(&R->m, got[w], want[w], &worst);
		if (!(rel <= 1e-4)) {
			sl_tensor_info t;
			sl_model_tensor(&R->m, worst, &t);
			fail_msg("%s: %s of %s differ by %.3g relative", spec, what[w], t.name,
			         rel);
		}
	}
	free(p);
	free(mo);
	free(va);
	sl_train_report_free(&rep);
	sl_train_destroy(tr);
	sl_cluster_destroy(c);
}

/* Every layout as lesson runs have it, and with communication beside
 * compute (buckets, ZeRO's prefetch, TP's dX, pipeline sends, the ring):
 * the values do not depend on when bytes move. */
static void check_st(const struct ref *R, const char *spec, int devices_per_node,
                     const char *stages)
{
	check_ov(R, spec, devices_per_node, stages, SL_OVERLAP_AUTO);
	check_ov(R, spec, devices_per_node, stages, SL_OVERLAP_ON);
}

static void check(const struct ref *R, const char *spec, int devices_per_node)
{
	check_st(R, spec, devices_per_node, NULL);
}

#define CASE(name, ref, spec, g)                                                                   \
	static void name(void **state)                                                             \
	{                                                                                          \
		(void)state;                                                                       \
		check(&ref, spec, g);                                                              \
	}
#define CASE_ST(name, ref, spec, g, stages)                                                        \
	static void name(void **state)                                                             \
	{                                                                                          \
		(void)state;                                                                       \
		check_st(&ref, spec, g, stages);                                                   \
	}

/* With context parallelism (cp ranks, ring or all-gather). */
#define CASE_CP(name, ref, spec, g, stages, cp, comm)                                              \
	static void name(void **state)                                                             \
	{                                                                                          \
		(void)state;                                                                       \
		case_cp = cp;                                                                      \
		case_cp_comm = comm;                                                               \
		check_st(&ref, spec, g, stages);                                                   \
		case_cp = 0;                                                                       \
	}

/*                                      tp pp dp sched       m v sp zero */
CASE(single, attn_ref, "1 1 1 1f1b        1 1 0 0", 0)
CASE(single_microbatches, attn_ref, "1 1 1 gpipe       3 1 0 0", 0)
CASE(tp2, attn_ref, "2 1 1 1f1b        1 1 0 0", 0)
CASE(tp4_uneven_ffn, attn_ref, "4 1 1 1f1b        1 1 0 0", 0)
CASE(tp3_uneven_ffn, mlp_ref, "3 1 1 1f1b        1 1 0 0", 0)
CASE(tp2_sp, attn_ref, "2 1 1 1f1b        2 1 1 0", 0)
CASE(tp3_sp_uneven_rows, mlp_ref, "3 1 1 1f1b        1 1 1 0", 0)
CASE(pp2_gpipe, attn_ref, "1 2 1 gpipe       4 1 0 0", 0)
CASE(pp3_1f1b_uneven_layers, mlp_ref, "1 3 1 1f1b        3 1 0 0", 0)
CASE(pp4_1f1b, attn_ref, "1 4 1 1f1b        6 1 0 0", 0)
CASE(pp2_interleaved, attn_ref, "1 2 1 interleaved 4 2 0 0", 0)
CASE(pp2_interleaved_m_eq_p, attn_ref, "1 2 1 interleaved 2 2 0 0", 0)
CASE(dp2_uneven_batch, mlp_ref, "1 1 2 1f1b        1 1 0 0", 0)
CASE(dp3_zero1, mlp_ref, "1 1 3 1f1b        2 1 0 1", 0)
CASE(dp2_zero1, attn_ref, "1 1 2 gpipe       2 1 0 1", 0)
CASE(tp2_dp2, attn_ref, "2 1 2 1f1b        1 1 0 0", 2)
CASE(tp2_dp2_sp_zero1, attn_ref, "2 1 2 1f1b        2 1 1 1", 2)
CASE(tp2_dp2_tree, attn_ref, "2 1 2 1f1b        1 1 0 0 tp-dp-pp tree", 0)
CASE(tp2_pp2_1f1b, attn_ref, "2 2 1 1f1b        2 1 0 0", 0)
CASE(tp2_pp2_interleaved_sp, attn_ref, "2 2 1 interleaved 2 2 1 0", 0)
CASE(tp2_pp2_dp2, attn_ref, "2 2 2 1f1b        2 1 1 1", 2)
CASE(tp2_pp2_dp2_interleaved, attn_ref, "2 2 2 interleaved 2 2 0 1 pp-tp-dp", 0)
CASE(tp2_pp2_mlp_uneven, mlp_ref, "2 2 1 gpipe       3 1 1 0 dp-pp-tp", 0)
/* ZeRO-2 and 3: gradients reduce-scattered unit by unit after each
 * micro-batch, parameters gathered before use; uneven slices (dp=3), every
 * schedule, TP with sequence parallelism, uneven stages, the tree. */
CASE(dp2_zero2, attn_ref, "1 1 2 1f1b        2 1 0 2", 0)
CASE(dp3_zero3_uneven, mlp_ref, "1 1 3 1f1b        2 1 0 3", 0)
CASE(pp2_dp2_gpipe_zero2, attn_ref, "1 2 2 gpipe       4 1 0 2", 0)
CASE(tp2_dp2_sp_zero3, attn_ref, "2 1 2 1f1b        2 1 1 3", 2)
CASE(tp2_pp2_dp2_interleaved_zero3, attn_ref, "2 2 2 interleaved 2 2 0 3 pp-tp-dp", 0)
CASE(pp3_dp2_uneven_layers_zero3, mlp_ref, "1 3 2 1f1b        3 1 0 3", 0)
CASE(tp2_dp2_tree_zero3, attn_ref, "2 1 2 1f1b        1 1 0 3 tp-dp-pp tree", 0)
/* Recomputation changes what is kept, never the result. */
CASE(single_full, attn_ref, "1 1 1 1f1b        2 1 0 0 tp-dp-pp ring full", 0)
CASE(tp2_sp_full, attn_ref, "2 1 1 1f1b        2 1 1 0 tp-dp-pp ring full", 0)
CASE(tp2_selective, attn_ref, "2 1 1 1f1b        1 1 0 0 tp-dp-pp ring selective", 0)
CASE(pp2_interleaved_full, attn_ref, "1 2 1 interleaved 4 2 0 0 tp-dp-pp ring full", 0)
CASE(tp2_pp2_dp2_selective, attn_ref, "2 2 2 1f1b        2 1 1 1 tp-dp-pp ring selective", 2)
CASE(tp3_mlp_full, mlp_ref, "3 1 1 gpipe       2 1 1 0 tp-dp-pp ring full", 0)
/* Grouped-query attention is split by whole groups; SwiGLU by whole
 * gate/up pairs. */
CASE(llama_single, llama_ref, "1 1 1 1f1b        2 1 0 0", 0)
CASE(llama_tp2, llama_ref, "2 1 1 1f1b        1 1 0 0", 0)
CASE(llama_tp2_sp, llama_ref, "2 1 1 1f1b        2 1 1 0", 0)
CASE(llama_tp2_pp2_dp2, llama_ref, "2 2 2 1f1b        2 1 1 1", 2)
CASE(llama_pp2_interleaved, llama_ref, "1 2 1 interleaved 4 2 0 0", 0)
CASE(llama_tp2_selective, llama_ref, "2 1 1 1f1b        1 1 0 0 tp-dp-pp ring selective", 0)
CASE(llama_tp2_dp2_full_tree, llama_ref, "2 1 2 gpipe       2 1 0 1 tp-dp-pp tree full", 0)
CASE(swiglu_tp4_uneven, swiglu_ref, "4 1 1 1f1b        1 1 0 0", 0)
CASE(swiglu_tp3_sp_pp3, swiglu_ref, "3 3 1 1f1b        2 1 1 0", 0)
/* Fused attention computes the same values (its probabilities in scratch,
 * made again in the backward pass). */
CASE(flash_single, attn_ref, "1 1 1 1f1b        2 1 0 0 tp-dp-pp ring none flash", 0)
CASE(flash_tp2_sp, attn_ref, "2 1 1 1f1b        2 1 1 0 tp-dp-pp ring none flash", 0)
CASE(flash_tp2_pp2_dp2_sel, attn_ref, "2 2 2 1f1b        2 1 1 1 tp-dp-pp ring selective flash", 2)
CASE(flash_llama_tp2_full, llama_ref, "2 1 1 gpipe       2 1 0 0 tp-dp-pp ring full flash", 0)
/* Attention dropout drops what the reference drops: by global sequence
 * and head, whatever the replica, the TP rank, the micro-batch or the
 * recomputation. */
CASE(drop_tp2_dp2_sp, drop_ref, "2 1 2 1f1b        2 1 1 0", 2)
CASE(drop_tp4_pp2_sel, drop_ref, "4 2 1 1f1b        2 1 0 0 tp-dp-pp ring selective", 0)
CASE(drop_pp2_interleaved_full, drop_ref, "1 2 1 interleaved 4 2 0 0 tp-dp-pp ring full", 0)
CASE(drop_flash_tp2_dp2, drop_ref, "2 1 2 1f1b        2 1 1 1 tp-dp-pp ring none flash", 2)
CASE(drop_llama_tp2_pp2_dp2, drop_llama_ref, "2 2 2 1f1b      2 1 1 1", 2)
CASE(drop_llama_flash_sel, drop_llama_ref, "2 1 1 1f1b      2 1 0 0 tp-dp-pp ring selective flash",
     0)
/* Hidden dropout likewise, by global row and column: sequence-parallel
 * shards, uneven rows and replicas, recomputation. */
CASE(hdrop_tp2_dp2_sp, hdrop_ref, "2 1 2 1f1b        2 1 1 0", 2)
CASE(hdrop_tp4_pp2_sel, hdrop_ref, "4 2 1 1f1b        2 1 0 0 tp-dp-pp ring selective", 0)
CASE(hdrop_pp2_interleaved_full, hdrop_ref, "1 2 1 interleaved 4 2 0 0 tp-dp-pp ring full", 0)
CASE(hdrop_flash_tp2_pp2_dp2, hdrop_ref, "2 2 2 1f1b       2 1 1 1 tp-dp-pp ring none flash", 2)
CASE(hdrop_mlp_tp3_sp_uneven, hdrop_mlp_ref, "3 1 1 1f1b     1 1 1 0", 0)
CASE(hdrop_mlp_tp2_pp2_uneven, hdrop_mlp_ref, "2 2 1 gpipe   3 1 1 0 dp-pp-tp", 0)
CASE(hdrop_mlp_dp3_zero1_full, hdrop_mlp_ref, "1 1 3 1f1b    2 1 0 1 tp-dp-pp ring full", 0)
CASE(hdrop_mlp_dp3_zero2_full, hdrop_mlp_ref, "1 1 3 1f1b    2 1 0 2 tp-dp-pp ring full", 0)
CASE(drop_llama_tp2_dp2_zero3_full, drop_llama_ref, "2 1 2 gpipe 2 1 0 3 tp-dp-pp ring full", 0)
CASE(hdrop_tp2_sp_full, hdrop_ref, "2 1 1 1f1b        2 1 1 0 tp-dp-pp ring full", 0)
CASE(hdrop_tp2_sp_sel, hdrop_ref, "2 1 1 1f1b        2 1 1 0 tp-dp-pp ring selective", 0)
/* Pre-norms run on the device's rows: whole rows without sequence
 * parallelism (every TP rank the same), shards with it. */
CASE(ln_tp2, ln_ref, "2 1 1 1f1b        1 1 0 0", 0)
CASE(ln_tp2_dp2_sp, ln_ref, "2 1 2 1f1b        2 1 1 0", 2)
CASE(ln_tp4_pp2_sel, ln_ref, "4 2 1 1f1b        2 1 0 0 tp-dp-pp ring selective", 0)
CASE(ln_pp2_interleaved_full, ln_ref, "1 2 1 interleaved 4 2 0 0 tp-dp-pp ring full", 0)
CASE(ln_flash_tp2_pp2_dp2_sp, ln_ref, "2 2 2 1f1b        2 1 1 1 tp-dp-pp ring none flash", 2)
CASE(rms_mlp_tp3_sp_uneven, rms_mlp_ref, "3 1 1 1f1b       1 1 1 0", 0)
CASE(rms_mlp_tp2_pp2_full, rms_mlp_ref, "2 2 1 gpipe       3 1 1 0 tp-dp-pp ring full", 0)
CASE(rms_llama_tp2_pp2_dp2, rms_llama_ref, "2 2 2 1f1b     2 1 1 1", 2)
CASE(ln_pp2_dp2_zero3_flash_sel, ln_ref, "1 2 2 1f1b   2 1 0 3 tp-dp-pp ring selective flash", 0)
CASE(llama_tp2_pp2_dp2_sp_zero3, llama_ref, "2 2 2 1f1b     2 1 1 3", 2)
CASE(ln_tp2_full, ln_ref, "2 1 1 1f1b        2 1 0 0 tp-dp-pp ring full", 0)
CASE(ln_tp2_sp_sel, ln_ref, "2 1 1 1f1b        2 1 1 0 tp-dp-pp ring selective", 0)
CASE(lnd_tp2_dp2_sp_full, lnd_ref, "2 1 2 1f1b        2 1 1 0 tp-dp-pp ring full", 2)
CASE(lnd_tp2_pp2, lnd_ref, "2 2 1 1f1b        2 1 0 0", 0)
/* Uneven stages: a list, or fewer on the first and last stage (ends),
 * interleaved too, where the layers divide into no equal chunks: 7 blocks
 * on 2 stages of 2 chunks fall 2+2 and 2+1 (even), 3 = 2+1 and 4 = 2+2
 * (ends), 3 and 4 blocks on 3 chunks each (a list). */
CASE_ST(deep_pp2_1f1b_list, deep_ref, "1 2 1 1f1b        4 1 0 0", 0, "2,5")
CASE_ST(deep_pp3_gpipe_ends, deep_ref, "1 3 1 gpipe       3 1 0 0", 0, "ends")
CASE_ST(deep_pp2_interleaved_even, deep_ref, "1 2 1 interleaved 4 2 0 0", 0, "even")
CASE_ST(deep_pp2_interleaved_v3_list, deep_ref, "1 2 1 interleaved 2 3 0 0", 0, "3,4")
CASE_ST(deep_tp2_pp2_dp2_interleaved_ends, deep_ref, "2 2 2 interleaved 2 2 1 1", 2, "ends")
CASE_ST(deep_pp3_dp2_interleaved_ends_zero3, deep_ref,
        "1 3 2 interleaved 3 2 0 3 pp-tp-dp ring full", 0, "ends")
CASE_ST(deep_tp2_pp3_interleaved_list, deep_ref, "2 3 1 interleaved 3 2 0 0 dp-pp-tp", 0, "2,2,3")
CASE_ST(mlp_pp2_interleaved_uneven, mlp_ref, "1 2 1 interleaved 2 2 0 0", 0, NULL)
CASE_ST(llama_tp2_pp3_ends, llama_ref, "2 3 1 1f1b        3 1 1 0", 0, "ends")
/* Without a mask, every kind of attention core and recomputation. */
CASE(full_tp2_sp, full_ref, "2 1 1 1f1b        2 1 1 0", 0)
CASE(full_tp2_pp2_dp2_sel, full_ref, "2 2 2 1f1b        2 1 1 1 tp-dp-pp ring selective", 2)
CASE(full_flash_tp2_dp2, full_ref, "2 1 2 1f1b        2 1 0 1 tp-dp-pp ring none flash", 2)
CASE(full_llama_tp2_pp2_full, full_llama_ref, "2 2 1 gpipe     2 1 0 0 tp-dp-pp ring full", 0)
CASE(full_llama_flash_sel, full_llama_ref, "2 1 1 1f1b      2 1 0 0 tp-dp-pp ring selective flash",
     0)

/* Context parallelism: every rank's keys and values reach every other,
 * the causal mask by global position; with TP (and SP), PP (uneven,
 * interleaved, full recomputation), DP and every ZeRO stage. */
/* ZeRO-3 keeping each block's gathered parameters from its forward to its
 * backward (reshard-after-forward no): with PP, TP and full recomputation. */
#define CASE_KEEP(name, ref, spec, g)                                                              \
	static void name(void **state)                                                             \
	{                                                                                          \
		(void)state;                                                                       \
		case_keep = 1;                                                                     \
		check(&ref, spec, g);                                                              \
		case_keep = 0;                                                                     \
	}
CASE_KEEP(keep_tp2_pp2_dp2_zero3, attn_ref, "2 2 2 1f1b        4 1 1 3", 2)
CASE_KEEP(keep_dp3_zero3_full_interleaved, deep_ref, "1 2 3 interleaved 2 2 0 3 tp-dp-pp ring full",
          0)

#define R_ SL_CP_RING
#define AG SL_CP_ALLGATHER
CASE_CP(cp2_ring, cp_ref, "1 1 1 1f1b 1 1 0 0 tp-dp-pp ring none flash", 0, NULL, 2, R_)
CASE_CP(cp3_ring_m2, cp_ref, "1 1 1 1f1b 2 1 0 0 tp-dp-pp ring none flash", 0, NULL, 3, R_)
CASE_CP(cp4_allgather, cp_ref, "1 1 1 1f1b 1 1 0 0 tp-dp-pp ring none flash", 0, NULL, 4, AG)
CASE_CP(cp3_allgather_zero2, cp_ref, "1 1 1 1f1b 2 1 0 2 tp-dp-pp ring none flash", 0, NULL, 3, AG)
CASE_CP(cp2_llama_tp2_sp, cp_llama_ref, "2 1 1 1f1b 2 1 1 0 tp-dp-pp ring none flash", 0, NULL, 2,
        R_)
CASE_CP(cp2_pp2_dp2_zero3, cp_ref, "1 2 2 1f1b 2 1 0 3 tp-dp-pp ring none flash", 2, NULL, 2, R_)
CASE_CP(cp3_deep_pp2_interleaved_list, cp_deep_ref,
        "1 2 1 interleaved 2 2 0 0 tp-dp-pp ring none flash", 0, "3,4", 3, R_)
CASE_CP(cp2_hdrop_tp2_pp2_full, cp_hdrop_ref, "2 2 1 1f1b 2 1 1 0 tp-dp-pp ring full flash", 2,
        "ends", 2, R_)
CASE_CP(cp4_full_dp2_zero1, cp_full_ref, "1 1 2 1f1b 1 1 0 1 tp-dp-pp ring none flash", 4, NULL, 4,
        AG)
CASE_CP(cp2_llama_tp2_dp2_zero2_order, cp_llama_ref, "2 1 2 gpipe 2 1 0 2 dp-pp-tp ring none flash",
        0, NULL, 2, R_)
/* grouped queries with two local key/value groups (tp 1) */
CASE_CP(cp2_llama_gqa_groups, cp_llama_ref, "1 1 1 1f1b 2 1 0 0 tp-dp-pp ring none flash", 0, NULL,
        2, R_)
CASE_CP(cp3_llama_gqa_allgather, cp_llama_ref, "1 1 1 1f1b 1 1 0 0 tp-dp-pp ring none flash", 0,
        NULL, 3, AG)
CASE_CP(cp4_deep_pp3_ends_sel, cp_deep_ref, "1 3 1 1f1b 2 1 0 0 pp-tp-dp ring selective flash", 0,
        "ends", 4, R_)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(single),
	    cmocka_unit_test(keep_tp2_pp2_dp2_zero3),
	    cmocka_unit_test(keep_dp3_zero3_full_interleaved),
	    cmocka_unit_test(cp2_ring),
	    cmocka_unit_test(cp3_ring_m2),
	    cmocka_unit_test(cp4_allgather),
	    cmocka_unit_test(cp3_allgather_zero2),
	    cmocka_unit_test(cp2_llama_tp2_sp),
	    cmocka_unit_test(cp2_pp2_dp2_zero3),
	    cmocka_unit_test(cp3_deep_pp2_interleaved_list),
	    cmocka_unit_test(cp2_hdrop_tp2_pp2_full),
	    cmocka_unit_test(cp4_full_dp2_zero1),
	    cmocka_unit_test(cp2_llama_tp2_dp2_zero2_order),
	    cmocka_unit_test(cp4_deep_pp3_ends_sel),
	    cmocka_unit_test(cp2_llama_gqa_groups),
	    cmocka_unit_test(cp3_llama_gqa_allgather),
	    cmocka_unit_test(deep_pp2_1f1b_list),
	    cmocka_unit_test(deep_pp3_gpipe_ends),
	    cmocka_unit_test(deep_pp2_interleaved_even),
	    cmocka_unit_test(deep_pp2_interleaved_v3_list),
	    cmocka_unit_test(deep_tp2_pp2_dp2_interleaved_ends),
	    cmocka_unit_test(deep_pp3_dp2_interleaved_ends_zero3),
	    cmocka_unit_test(deep_tp2_pp3_interleaved_list),
	    cmocka_unit_test(mlp_pp2_interleaved_uneven),
	    cmocka_unit_test(llama_tp2_pp3_ends),
	    cmocka_unit_test(single_microbatches),
	    cmocka_unit_test(tp2),
	    cmocka_unit_test(tp4_uneven_ffn),
	    cmocka_unit_test(tp3_uneven_ffn),
	    cmocka_unit_test(tp2_sp),
	    cmocka_unit_test(tp3_sp_uneven_rows),
	    cmocka_unit_test(pp2_gpipe),
	    cmocka_unit_test(pp3_1f1b_uneven_layers),
	    cmocka_unit_test(pp4_1f1b),
	    cmocka_unit_test(pp2_interleaved),
	    cmocka_unit_test(pp2_interleaved_m_eq_p),
	    cmocka_unit_test(dp2_uneven_batch),
	    cmocka_unit_test(dp2_zero2),
	    cmocka_unit_test(dp3_zero3_uneven),
	    cmocka_unit_test(pp2_dp2_gpipe_zero2),
	    cmocka_unit_test(tp2_dp2_sp_zero3),
	    cmocka_unit_test(tp2_pp2_dp2_interleaved_zero3),
	    cmocka_unit_test(pp3_dp2_uneven_layers_zero3),
	    cmocka_unit_test(tp2_dp2_tree_zero3),
	    cmocka_unit_test(hdrop_mlp_dp3_zero2_full),
	    cmocka_unit_test(drop_llama_tp2_dp2_zero3_full),
	    cmocka_unit_test(ln_pp2_dp2_zero3_flash_sel),
	    cmocka_unit_test(llama_tp2_pp2_dp2_sp_zero3),
	    cmocka_unit_test(dp3_zero1),
	    cmocka_unit_test(dp2_zero1),
	    cmocka_unit_test(tp2_dp2),
	    cmocka_unit_test(tp2_dp2_sp_zero1),
	    cmocka_unit_test(tp2_dp2_tree),
	    cmocka_unit_test(tp2_pp2_1f1b),
	    cmocka_unit_test(tp2_pp2_interleaved_sp),
	    cmocka_unit_test(tp2_pp2_dp2),
	    cmocka_unit_test(tp2_pp2_dp2_interleaved),
	    cmocka_unit_test(tp2_pp2_mlp_uneven),
	    cmocka_unit_test(single_full),
	    cmocka_unit_test(tp2_sp_full),
	    cmocka_unit_test(tp2_selective),
	    cmocka_unit_test(pp2_interleaved_full),
	    cmocka_unit_test(tp2_pp2_dp2_selective),
	    cmocka_unit_test(tp3_mlp_full),
	    cmocka_unit_test(llama_single),
	    cmocka_unit_test(llama_tp2),
	    cmocka_unit_test(llama_tp2_sp),
	    cmocka_unit_test(llama_tp2_pp2_dp2),
	    cmocka_unit_test(llama_pp2_interleaved),
	    cmocka_unit_test(llama_tp2_selective),
	    cmocka_unit_test(llama_tp2_dp2_full_tree),
	    cmocka_unit_test(swiglu_tp4_uneven),
	    cmocka_unit_test(swiglu_tp3_sp_pp3),
	    cmocka_unit_test(flash_single),
	    cmocka_unit_test(flash_tp2_sp),
	    cmocka_unit_test(flash_tp2_pp2_dp2_sel),
	    cmocka_unit_test(flash_llama_tp2_full),
	    cmocka_unit_test(drop_tp2_dp2_sp),
	    cmocka_unit_test(drop_tp4_pp2_sel),
	    cmocka_unit_test(drop_pp2_interleaved_full),
	    cmocka_unit_test(drop_flash_tp2_dp2),
	    cmocka_unit_test(drop_llama_tp2_pp2_dp2),
	    cmocka_unit_test(drop_llama_flash_sel),
	    cmocka_unit_test(hdrop_tp2_dp2_sp),
	    cmocka_unit_test(hdrop_tp4_pp2_sel),
	    cmocka_unit_test(hdrop_pp2_interleaved_full),
	    cmocka_unit_test(hdrop_flash_tp2_pp2_dp2),
	    cmocka_unit_test(hdrop_mlp_tp3_sp_uneven),
	    cmocka_unit_test(hdrop_mlp_tp2_pp2_uneven),
	    cmocka_unit_test(hdrop_mlp_dp3_zero1_full),
	    cmocka_unit_test(hdrop_tp2_sp_full),
	    cmocka_unit_test(hdrop_tp2_sp_sel),
	    cmocka_unit_test(ln_tp2),
	    cmocka_unit_test(ln_tp2_dp2_sp),
	    cmocka_unit_test(ln_tp4_pp2_sel),
	    cmocka_unit_test(ln_pp2_interleaved_full),
	    cmocka_unit_test(ln_flash_tp2_pp2_dp2_sp),
	    cmocka_unit_test(rms_mlp_tp3_sp_uneven),
	    cmocka_unit_test(rms_mlp_tp2_pp2_full),
	    cmocka_unit_test(rms_llama_tp2_pp2_dp2),
	    cmocka_unit_test(ln_tp2_full),
	    cmocka_unit_test(ln_tp2_sp_sel),
	    cmocka_unit_test(full_tp2_sp),
	    cmocka_unit_test(full_tp2_pp2_dp2_sel),
	    cmocka_unit_test(full_flash_tp2_dp2),
	    cmocka_unit_test(full_llama_tp2_pp2_full),
	    cmocka_unit_test(full_llama_flash_sel),
	    cmocka_unit_test(lnd_tp2_dp2_sp_full),
	    cmocka_unit_test(lnd_tp2_pp2),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
