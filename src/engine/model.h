/* SPDX-License-Identifier: MIT */
/* model.h - the small fp32 model that the strategies train, its parameters,
 * its data, and the single-device reference step.
 *
 * L blocks of width h.  Each block is, in order, an optional multi-head
 * self-attention sub-block (a heads of d = h/a) and an MLP sub-block, each
 * with a residual:
 *     x = x + (softmax(M + Q K^T / sqrt(d)) V) Wo + bo,   [Q K V] = x Wqkv
 * The mask M (mask): causal, as GPT's and Llama's, -inf above the diagonal
 * (a token attends to itself and the tokens before it, so its output does
 * not depend on later ones); full, 0 (every token attends to every one).
 *     x = x + gelu(x W1 + b1) W2 + b2
 * Grouped-query attention (kv_heads = G < a, Ainslie et al. 2023): the a
 * query heads come in G groups of a/G, and each group shares one key and
 * one value head.  A SwiGLU MLP (Shazeer 2020, as Llama's) has two fc1
 * products, gate and up, of f columns each:
 *     x = x + (silu(x Wg + bg) * (x Wu + bu)) W2 + b2
 * Attention dropout (attn_dropout = r > 0, as Megatron-LM's
 * --attention-dropout): the probabilities P are dropped element by element
 * and the kept ones scaled by 1/(1 - r) before they weigh V.  Which ones is
 * a pure function of (seed, step, block, sequence, head, query, key)
 * (sl_attn_dropout), so every layout drops the same ones as the reference.
 * Hidden dropout (hidden_dropout = r > 0, as Megatron-LM's
 * --hidden-dropout): each sub-block's output (after its bias, before the
 * residual) is dropped the same way, element by element of the global
 * batch (sl_hidden_dropout):
 *     x = x + drop(sub-block(x))
 * Pre-normalisation (norm, as GPT-2's and Megatron-LM's blocks): each
 * sub-block reads its input through a layer norm (Ba et al. 2016) or an RMS
 * norm (Zhang and Sennrich 2019, as Llama's), eps 1e-5, row by row:
 *     x = x + sub-block(norm(x))
 * without the learnable scale and shift (PyTorch's elementwise_affine =
 * False: a layer norm has 2h parameters fewer than Megatron-LM's, an RMS
 * norm h fewer).
 * No QKV bias: a bias on K shifts every score of a softmax row by the same
 * amount, so its gradient is exactly zero and Adam would turn rounding
 * noise into full-size steps.  A batch is B sequences of s tokens, i.e. B*s
 * rows of h values; the loss is the mean squared error against a target
 * over all B*s*h values.  Data and targets are a pure function of (seed,
 * step, row), so any device can make any slice of any step's batch.
 *
 * Parameters live in one flat vector in "model order": block by block, in
 * each block the tensors listed by sl_model_tensor().  That vector is the
 * canonical form that layouts gather to and scatter from (and that
 * checkpoints can be resharded through). */
#ifndef SL_MODEL_H
#define SL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* The limits of the model's sizes (sl_model_check).  The MLP's width goes
 * further than the rest: Megatron's 1T model has f = 102400. */
#define SL_MODEL_MAX_LAYERS 4096
#define SL_MODEL_MAX_DIM 65536
/* The longest sequence: a million tokens, as long-context training reaches. */
#define SL_MODEL_MAX_SEQ (1 << 20)
#define SL_MODEL_MAX_FFN 1048576
#define SL_MODEL_MAX_BATCH 1048576

typedef struct sl_model_spec {
	int layers;         /* L */
	int hidden;         /* h */
	int ffn;            /* f */
	int heads;          /* a; 0: MLP-only blocks */
	int kv_heads;       /* G, key/value heads (grouped-query attention); 0: a */
	int ffn_kind;       /* SL_FFN_GELU or SL_FFN_SWIGLU */
	int norm;           /* SL_NORM_NONE, SL_NORM_LAYER or SL_NORM_RMS, before each sub-block */
	int seq;            /* s, tokens per sequence (1 without attention) */
	int mask;           /* SL_MASK_CAUSAL (the default, 0) or SL_MASK_FULL */
	float attn_dropout; /* the share of attention probabilities dropped in training (0..0.9) */
	float hidden_dropout; /* the share of sub-block outputs dropped in training (0..0.9) */
	int batch;            /* B, sequences per step (the global batch) */
	/* Token embeddings and the LM head (Megatron-LM's, vocabulary-parallel
	 * over TP): timed, counted and held in memory, not computed (a run
	 * that computes refuses them, sl_model_check_values). */
	int vocab;   /* V; 0: none (the blocks alone) */
	int untie;   /* the LM head has its own weights (Llama's); 0: tied to the embedding */
	int pos_emb; /* SL_POS_LEARNED (s x h learned positions, GPT's) or SL_POS_ROPE (none) */
	uint64_t seed;
	float lr, beta1, beta2, eps; /* Adam */
	/* How a weight's gradient is added up over the micro-batches of a step
	 * (time and workspace only, the values are the same): SL_GACC_FUSED or SL_GACC_SEPARATE. */
	int grad_accum;
} sl_model_spec;

typedef enum sl_ffn_kind { SL_FFN_GELU, SL_FFN_SWIGLU, SL_FFN_N } sl_ffn_kind;

const char *sl_ffn_kind_name(int k);
int sl_ffn_kind_parse(const char *s, int *out);

typedef enum sl_norm_kind { SL_NORM_NONE, SL_NORM_LAYER, SL_NORM_RMS, SL_NORM_N } sl_norm_kind;

/* Gradient accumulation.  Fused: each weight-gradient product adds into the
 * gradient array itself (beta = 1: Megatron-LM's gradient-accumulation
 * fusion, in NVIDIA apex's copy of Megatron's layers since February 2022,
 * NVIDIA/apex pull request 1297).  Separate: the product writes a fresh
 * gradient, which another kernel then adds into the array (PyTorch's
 * autograd, and Megatron-LM's data-parallel hook, main_grad.add_(grad),
 * without the fusion): a pass that reads the new gradient and the array and
 * writes the array, for every linear layer's weight (the LM head's too, not
 * the embedding table's) and every micro-batch, and a transient buffer of
 * the weight's size. */
typedef enum sl_grad_accum { SL_GACC_FUSED, SL_GACC_SEPARATE, SL_GACC_N } sl_grad_accum;

/* "fused", "separate" */
const char *sl_grad_accum_name(int k);
int sl_grad_accum_parse(const char *s, int *out);

typedef enum sl_mask { SL_MASK_CAUSAL, SL_MASK_FULL, SL_MASK_N } sl_mask;

/* "causal", "full" */
const char *sl_mask_name(int k);
int sl_mask_parse(const char *s, int *out);

/* A fused attention kernel's tiles (FlashAttention-2, Dao 2023, arXiv
 * 2307.08691, section 3.3: blocks of 64 or 128 rows and columns; its
 * kernels take 128 x 128 for the common head sizes). */
#define SL_ATTN_TILE 128
/* The share of a head's s x s products that a fused kernel executes: 1
 * without a mask; causal, only the tiles of SL_ATTN_TILE rows and columns
 * that hold an element on or below the diagonal (the others are skipped,
 * FlashAttention-2 section 3.1.1), those on the diagonal whole.  For s a
 * multiple of the tile, n = s / 128 tiles a side: n (n + 1) / 2 of n^2,
 * 1/2 + 1/(2n); otherwise the last row and column of tiles are partial and
 * counted as they are. */
double sl_attn_tile_share(const sl_model_spec *m);
/* The same for a causal product of n queries by their n keys. */
double sl_attn_tile_share_n(int n);

typedef enum sl_pos_kind { SL_POS_LEARNED, SL_POS_ROPE, SL_POS_N } sl_pos_kind;

/* "learned", "rope" */
const char *sl_pos_name(int k);
int sl_pos_parse(const char *s, int *out);

#define SL_MODEL_MAX_VOCAB 4194304

/* The embeddings' and LM head's parameters (Megatron-LM's count: V h for
 * the tied pair, 2 V h untied, plus s h learned positions); 0 without a
 * vocabulary.  They are not in the flat vector of sl_model_nparams(). */
size_t sl_model_embed_params(const sl_model_spec *m);
/* All of the model's parameters: the blocks' and the embeddings'. */
size_t sl_model_total_params(const sl_model_spec *m);
/* The LM head's columns on each of tp ranks: ceil(V / tp), as Megatron-LM
 * pads the vocabulary to a multiple of the TP degree. */
int sl_model_vocab_shard(const sl_model_spec *m, int tp);

/* "none", "layernorm", "rmsnorm" */
const char *sl_norm_name(int k);
int sl_norm_parse(const char *s, int *out);

/* 4 MLP-only blocks, h=64, f=256, batch 16, seed 1, Adam lr 1e-3. */
void sl_model_default(sl_model_spec *m);
/* Sizes in range, h divisible by the head count, under 2^31 tokens a
 * batch; the message names the option to change. */
int sl_model_check(const sl_model_spec *m, sl_err *err);
/* The same, and small enough for the host to hold its values (every
 * matrix under 10^9 values): what a run that computes needs. */
int sl_model_check_values(const sl_model_spec *m, sl_err *err);

/* "4 blocks of width 128, SwiGLU ffn 512, 4 heads (2 key/value)"; the
 * length snprintf gives. */
int sl_model_describe(const sl_model_spec *m, char *buf, size_t n);

/* ---- shapes ---- */

/* G: the key/value heads (a when kv_heads is 0; 0 without attention). */
int sl_model_kv_heads(const sl_model_spec *m);
/* Columns of Wqkv: (a + 2G) d. */
int sl_model_qkv_cols(const sl_model_spec *m);
/* Columns of W1: f, or 2f for SwiGLU (gate and up). */
int sl_model_fc1_cols(const sl_model_spec *m);

/* ---- tensors ---- */

/* How tensor parallelism cuts a tensor (Megatron-LM's naming). */
typedef enum sl_tsplit {
	SL_TS_REPLICATED, /* every TP rank holds all of it */
	SL_TS_COLUMN,     /* column-parallel: cut along axis 1 */
	SL_TS_ROW,        /* row-parallel: cut along axis 0 */
	SL_TS_HEADS,      /* by attention heads: cut along axis 1 of the head-major stored layout */
	SL_TS_N
} sl_tsplit;

const char *sl_tsplit_name(sl_tsplit s);

enum {
	SL_T_QKV_W, /* [h, (a+2G)d] columns group-major: with u = (a/G + 2) d, group g owns
	               [u g, u (g+1)) = its a/G query heads, then its k, then its v (G = a:
	               head j owns [3dj, 3d(j+1)) = its q, k, v) */
	SL_T_OUT_W, /* [h, h]  rows head-major: head j's output rows [dj, d(j+1)) */
	SL_T_OUT_B, /* [1, h] */
	SL_T_FC1_W, /* [h, f], SwiGLU [h, 2f] in pairs: column 2j gate j, 2j+1 up j */
	SL_T_FC1_B, /* [1, f], SwiGLU [1, 2f] likewise */
	SL_T_FC2_W, /* [f, h] */
	SL_T_FC2_B, /* [1, h] */
	SL_T_PER_BLOCK
};

typedef struct sl_tensor_info {
	char name[48];  /* "block3.mlp.fc1.weight" */
	int block;      /* 0..L-1 */
	int kind;       /* SL_T_* */
	int rows, cols; /* global shape of the stored layout, row-major (biases: 1 row) */
	sl_tsplit split;
	int axis;      /* the stored layout's axis the split cuts: 0, 1, or -1 (replicated) */
	int unit;      /* shards hold whole units of this many elements along axis (a
	                  group's (a/G + 2) d QKV columns, its (a/G) d output-projection
	                  rows, SwiGLU's 2 fc1 columns of a pair, 1 otherwise) */
	size_t offset; /* first element in the model's flat parameter vector */
	size_t count;  /* rows * cols */
} sl_tensor_info;

/* Tensors in model order (attention tensors only when heads > 0). */
int sl_model_ntensors(const sl_model_spec *m);
int sl_model_tensor(const sl_model_spec *m, int i, sl_tensor_info *out);
size_t sl_model_nparams(const sl_model_spec *m);

/* Tensor-parallel rank r of t's part of a tensor along its split axis:
 * elements [*start, *start + *len) of that axis (the whole axis 0 range
 * when replicated).  Units are dealt as evenly as possible, the first
 * ones one larger. */
void sl_tensor_shard(const sl_tensor_info *ti, int t, int r, int *start, int *len);

/* Deterministic initial values of the whole flat vector. */
void sl_model_init(const sl_model_spec *m, float *params);

/* Rows [row0, row0+nrows) of step's batch (rows count tokens: sequence
 * i's token j is row i*s+j): inputs x and targets y, each nrows*h. */
void sl_model_data(const sl_model_spec *m, long step, long row0, int nrows, float *x, float *y);

/* GEMM FLOPs of one training step of the whole batch (forward and
 * backward, the LM head's included; element-wise work is not counted):
 * the model's FLOPs that MFU counts.  Under a causal mask attention's
 * s x s products count half (s^2 / 2 a head, as FlashAttention's
 * benchmarks count them), whatever a kernel executes; Narayanan et al.
 * 2021's formula counts them whole, as --mask=full does. */
double sl_model_step_flops(const sl_model_spec *m);

/* ---- element-wise kernels, shared by the reference and the layouts ---- */

void sl_gelu(const float *z, float *a, size_t n);
/* dz = da * gelu'(z) */
void sl_gelu_grad(const float *z, const float *da, float *dz, size_t n);
/* SwiGLU on rows x f pairs: a[i][j] = silu(z[i][2j]) * z[i][2j+1]; and its
 * gradient dz (rows x 2f) from da (rows x f). */
void sl_swiglu(const float *z, float *a, size_t rows, size_t f);
void sl_swiglu_grad(const float *z, const float *da, float *dz, size_t rows, size_t f);
/* The MLP's activation of either kind: z is rows x fc1 columns, a rows x f. */
void sl_ffn_act(int kind, const float *z, float *a, size_t rows, size_t f);
/* dz (rows x fc1 columns) from da (rows x f); GeLU works in place (dz may be da). */
void sl_ffn_act_grad(int kind, const float *z, const float *da, float *dz, size_t rows, size_t f);
/* y[rows x cols] += b, broadcast over the rows. */
void sl_add_bias(float *y, const float *b, size_t rows, size_t cols);
/* Row-wise softmax in place on rows x cols, leading dimension ld. */
void sl_softmax_rows(float *s, int rows, int cols, int ld);
/* The softmax of a head's s x s scores under mask (SL_MASK_*): causal,
 * row i over its first i + 1 scores and 0 after them (-inf before the
 * softmax).  sl_softmax_grad_rows then needs no mask: P is 0 there. */
void sl_softmax_masked(float *p, int s, int mask);
/* Given P (rows x cols) and dP, overwrite dP with dS = scale * P (dP - rowsum(dP P)). */
void sl_softmax_grad_rows(const float *p, float *dp, int rows, int cols, int ld, float scale);
/* Attention dropout on one head's s x s probabilities p (row-major, ld s):
 * out = p * keep / (1 - r), keep drawn from (seed, step, block, seq,
 * head, query, key) with global indices; out may be p.  The gradient is the
 * same map: dp = dout * keep / (1 - r). */
void sl_attn_dropout(const sl_model_spec *m, long step, int block, long seq, int head,
                     const float *p, float *out, int s);
/* Hidden dropout on rows row0 .. row0 + rows - 1 of the global batch (h
 * values each) of sub-block sub (0 attention, 1 MLP) of block `block`: out
 * = in * keep / (1 - r), keep drawn from (seed, step, block, sub, global
 * row, column); out may be in.  The gradient is the same map. */
void sl_hidden_dropout(const sl_model_spec *m, long step, int block, int sub, long row0,
                       size_t rows, const float *in, float *out);
/* The norm of kind (SL_NORM_LAYER or SL_NORM_RMS) of each of rows rows
 * of h values: y = (x - mean) / sqrt(var + eps), or x / sqrt(mean(x^2) +
 * eps).  Its gradient in place: d (dy in, dx out) given x, the statistics
 * made again from x. */
void sl_norm_rows(int kind, const float *x, float *y, size_t rows, size_t h);
void sl_norm_grad_rows(int kind, const float *x, float *d, size_t rows, size_t h);
/* A float as the double of its shortest decimal (0.1f -> 0.1, not
 * 0.10000000149): what a report or manifest prints of a float setting. */
double sl_float_decimal(float f);
/* One Adam step (t counts from 1) on n elements. */
void sl_adam(const sl_model_spec *m, long t, float *p, const float *g, float *mom, float *var,
             size_t n);

/* ---- the single-device reference ---- */

/* Loss and gradient of step's whole batch at params (plain host code, one
 * cblas_sgemm per product, no micro-batches).  grad gets the full flat
 * gradient. */
int sl_ref_grad(const sl_model_spec *m, const float *params, long step, float *grad, double *loss,
                sl_err *err);

/* The reference's forward pass alone on inputs x (the whole batch, B s
 * rows of h, instead of step's data): out gets the last block's output,
 * B s rows of h.  What a test of the mask perturbs and reads. */
int sl_ref_forward(const sl_model_spec *m, const float *params, long step, const float *x,
                   float *out, sl_err *err);

typedef struct sl_ref {
	sl_model_spec m;
	size_t n;
	float *params, *grad, *mom, *var;
	long step; /* steps done = Adam's step count */
} sl_ref;

int sl_ref_init(sl_ref *r, const sl_model_spec *m, sl_err *err);
void sl_ref_free(sl_ref *r);
/* One step: the loss before the update, then Adam. */
int sl_ref_step(sl_ref *r, double *loss, sl_err *err);

#endif
