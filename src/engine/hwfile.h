/* SPDX-License-Identifier: MIT */
/* hwfile.h - hardware and model descriptions as JSON files, and where they
 * are found (the schema: shardlab-hardware(5)).
 *
 * A hardware file holds one preset: name, title, source, the device (rates
 * per precision, memory, memory bandwidth, the GEMM efficiency curve, the
 * kernel launch cost, default precision and efficiency), the node size and
 * the two link classes.  A model file holds a model's shape.  Every key is
 * required but the few the man page marks optional (older files lack
 * them: a device's memory_bandwidth_fraction and attention_peak_fraction,
 * some of a model's), no other key is accepted, and figures are plain
 * numbers in SI units named by their key's suffix (_s, _bytes, _flop_per_s,
 * _bytes_per_s).  A file that is not right fails with one line,
 * "FILE: FIELD: what is wrong".
 *
 * Names are looked up, first file found wins, in
 *   $XDG_CONFIG_HOME/shardlab/KIND (default ~/.config/shardlab/KIND): the
 *       user's own;
 *   the shipped files: the directories of $SHARDLAB_HARDWARE_PATH
 *       (SHARDLAB_MODEL_PATH for models) when set, colon-separated, and then
 *       only those (the test suite points them at the source tree); else, for
 *       a program run from its build tree, the source tree's data/KIND beside
 *       it or one level up; then pkgdatadir/KIND;
 *   for hardware only, the built-in table of preset.c, which the shipped
 *   files equal (tests/test_hwfile.c), so the engine's defaults need no
 *   file.
 * KIND is "hardware" or "models"; a name NAME is the file NAME.json. */
#ifndef SL_HWFILE_H
#define SL_HWFILE_H

#include <jansson.h>

#include "model.h"
#include "preset.h"
#include "status.h"

/* ---- hardware ---- */

/* The preset as a JSON object of the schema (a new reference). */
json_t *sl_hw_to_json(const sl_preset *p);
/* Read a preset from a parsed object; file names it in messages.  The
 * strings of out are allocated: free them with sl_hw_free_strings. */
int sl_hw_from_json(const json_t *j, const char *file, sl_preset *out, sl_err *err);
void sl_hw_free_strings(sl_preset *p);
/* Load a hardware file.  The preset lives as long as the process (loading
 * the same path again gives the same one). */
const sl_preset *sl_hw_load(const char *path, sl_err *err);
/* A preset by name, in the order above; SL_EINVAL when no file or built-in
 * preset has that name (the message lists the known ones), or the file
 * found is not right.  *from (if not NULL) gets the file's path, or "" for
 * the built-in table (or a file that is not right), or NULL when nothing has
 * that name. */
const sl_preset *sl_hw_find(const char *name, const char **from, sl_err *err);
/* Every preset: the built-in names first, in the table's order (each as
 * sl_hw_find resolves it), then the other names of the directories, user's
 * first, sorted.  *out is allocated (free it); the presets are not.  A file
 * that cannot be read is left out and its message added to *bad (nbad of
 * them, allocated; bad may be NULL); only running out of memory fails. */
int sl_hw_list(const sl_preset ***out, int *n, sl_err **bad, int *nbad, sl_err *err);

/* ---- models ---- */

typedef struct sl_model_file {
	char name[32];
	char title[192];
	char source[1024];
	int layers, hidden, ffn, heads, seq, batch;
	int kv_heads; /* 0: as many as the heads */
	int ffn_kind; /* SL_FFN_GELU or SL_FFN_SWIGLU */
	int norm;     /* SL_NORM_* */
	int vocab;    /* 0: no embeddings or LM head */
	int untie;    /* the LM head's own weights */
	int pos_emb;  /* SL_POS_* */
} sl_model_file;

int sl_model_file_from_json(const json_t *j, const char *file, sl_model_file *out, sl_err *err);
json_t *sl_model_file_to_json(const sl_model_file *m);
int sl_model_file_load(const char *path, sl_model_file *out, sl_err *err);
/* NAME (looked up as above) or a FILE (it has a '/', ends in .json or
 * names an existing file). */
int sl_model_file_find(const char *name_or_file, sl_model_file *out, sl_err *err);

/* A report's "model" object gains "kv_heads" (the key/value heads in
 * effect: the heads' count without grouped-query attention), "ffn_kind",
 * "norm", "vocab", "untie_embeddings", "position_embedding" and the two
 * dropouts' fractions. */
void sl_model_json_kinds(json_t *o, const sl_model_spec *m);

/* ---- shared ---- */

/* j as text that reads back to exactly the same numbers, with the fewest
 * digits that do (15 to 17), indented by 2, ending in a newline.  Free
 * with free(). */
char *sl_json_dump_exact(const json_t *j);

#endif
