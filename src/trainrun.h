/* SPDX-License-Identifier: MIT */
/* trainrun.h - what `shardlab train` and `shardlab compare` share
 * (trainrun.c): one layout's run and its report. */
#ifndef SL_TRAINRUN_H
#define SL_TRAINRUN_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "ckpt.h"
#include "opts.h"
#include "train.h"

/* The largest relative difference of a loss from one device's that passes. */
#define LOSS_TOLERANCE 1e-5

/* One layout's run: its cluster, report, prediction and the one-device
 * figures it is compared with. */
struct outcome {
	sl_layout l;
	char name[48];
	sl_cluster *c;
	sl_train_report rep;
	sl_train_prediction pred;
	double single_s;
	int single_est;
	double wall_s;
	double max_rel;           /* losses against the reference */
	sl_train_step_fn on_step; /* set by the caller: each step as it ends */
	void *on_step_arg;
};

/* train's checkpoints: load before the steps, save after (and every N). */
struct ckpt_io {
	const sl_ckpt *load;
	const char *save;
	int every;
};

double sl_tr_wall_now(void);
int sl_tr_run_layout(const sl_cluster_config *base, const sl_model_spec *m, const sl_layout *l,
                     int steps, const double *ref, const struct ckpt_io *io, struct outcome *r,
                     sl_err *err);
void sl_tr_outcome_free(struct outcome *r);
/* One device's losses over the steps: from step 0, or resumed from ck. */
int sl_tr_reference(const char *cmd, const sl_model_spec *m, const sl_ckpt *ck, int steps,
                    double *out);
const char *sl_tr_fmt_t(double s, char *b);
const char *sl_tr_fmt_b(double v, char *b);
/* The largest peak memory and bytes sent of any device in a step. */
void sl_tr_dev_peaks(const sl_train_report *p, uint64_t *mem, uint64_t *sent);
/* The header's note of how the attention core runs (none without it). */
const char *sl_tr_attention_words(const sl_model_spec *m, const sl_layout *l);
void sl_tr_model_words(const sl_model_spec *m, char *buf, size_t n);
void sl_tr_data_words(const sl_model_spec *m, char *buf, size_t n);
void sl_tr_train_text_head(FILE *f, const sl_opts *o, const sl_model_spec *m, const double *ref,
                           const struct outcome *r);
int sl_tr_step_row(char *b, size_t n, long step, double loss, double ref);
void sl_tr_train_text(FILE *f, const sl_opts *o, const sl_model_spec *m, int steps,
                      const double *ref, const struct outcome *r, int head_done, int per_device);
json_t *sl_tr_jreal(double v);
void sl_tr_model_json(json_t *o, const sl_model_spec *m);
json_t *sl_tr_losses_json(const double *v, int n);
/* The figures of one layout's run, shared by train's and compare's JSON. */
void sl_tr_outcome_json(json_t *o, const struct outcome *r, const sl_model_spec *m, int steps);

#endif
