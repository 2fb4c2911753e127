/* SPDX-License-Identifier: MIT */
/* ckpt.h - sharded checkpoints: save a training state under its layout,
 * check one, and load it under the same or another layout.
 *
 * A checkpoint is a directory:
 *   manifest.json           what is where (format below), the commit point
 *   gGGGGGG-devDDD.bin      the chunks device DDD wrote in generation GGGGGG
 *
 * The manifest (JSON, format_version 1):
 *   format            "shardlab-checkpoint"
 *   format_version    1; a reader refuses a newer one
 *   generation        counts the saves into this directory
 *   architecture      {name "shardlab-transformer", version 1, 2 or 3, dtype "float32",
 *                      block ["attention", "mlp"] or ["mlp"], layers, hidden, ffn, heads;
 *                      version 2 (written only for grouped-query attention or a SwiGLU
 *                      MLP) adds kv_heads and ffn_kind "gelu" or "swiglu"; version 3
 *                      (only for a model with a norm) adds norm "layernorm" or
 *                      "rmsnorm"}
 *   layout            the layout at save: {devices, tp, pp, dp, mesh_order ("tp-dp-pp":
 *                      fastest-varying axis first, as train.h), schedule, chunks,
 *                      microbatches, sequence_parallel, zero1, algorithm}
 *   training          {step, adam_step, seed, data {next_batch, batch, seq},
 *                      optimizer {name "adam", lr, beta1, beta2, eps},
 *                      attention_dropout, hidden_dropout (each only when above 0:
 *                      the resumed run's rates)}
 *   byte_order        "little"
 *   states            ["param", "exp_avg", "exp_avg_sq"]: what each chunk's bytes hold
 *   checksum          "crc32" (zlib's, of each chunk's whole byte range)
 *   files             [{name, bytes, writer}]
 *   tensors           in model order: [{name, shape [rows, cols], dtype, split
 *                      ("replicated", "column", "row" or "heads"), axis (the axis of this
 *                      stored layout that the split cuts: 0, 1, or -1 when replicated), unit
 *                      (elements per indivisible unit along it: 3d for QKV columns, d for
 *                      output-projection rows, 1 otherwise), chunks [{id, owner, mesh {tp,
 *                      pp, dp}, offset [row, col], shape [rows, cols], file, byte_offset,
 *                      byte_length, crc32}]}]
 * A chunk's bytes are its parameter values, then Adam's first moments, then
 * the second moments, each rows*cols float32 in the chunk's own row-major
 * order.  So the optimizer state lives on the same chunks as its parameters
 * and reshards with them.  A replicated tensor is one chunk, written once.
 * The chunks of a tensor tile it exactly; loading places each by its offset
 * and shape, i.e. joins along the axis the stored layout split, whatever
 * the model being trained splits now.
 *
 * Saving is crash-safe.  A new directory is built under a temporary name
 * beside it and renamed into place; an existing checkpoint gets its new data
 * files under new names and its manifest is replaced by the rename of a
 * fully written, synced temporary manifest, after which the old generation's
 * files are removed.  A process killed at any point leaves the old
 * checkpoint or the new one under the final name; a failed save removes
 * what it wrote and leaves the old one untouched.  An existing directory
 * (a checkpoint, or empty) is written in place under an exclusive flock
 * on the directory, so a second save into it fails at once; a save only
 * ever creates, renames or removes the names above (and never through a
 * symbolic link), and refuses a manifest.json that is not a checkpoint's.
 * A reader takes no lock: sl_ckpt_open holds every data file of the
 * generation it read open until sl_ckpt_close, so a save that commits
 * meanwhile cannot remove it from under a load, and reads the manifest
 * again when a save committed while it was opening.
 *
 * A checkpoint is untrusted input: reading refuses links, FIFOs and other
 * non-regular files, names other than a save's, more files than devices
 * or chunks than TP ranks, a model past train's limits and a step past
 * SL_CKPT_MAX_STEP, each with one line that escapes the manifest's
 * strings; checks take O(n log n) and verify a fixed buffer.
 *
 * Devices do the I/O: on a cluster, every device thread writes its own
 * chunks (device dp 0 of each TP rank and stage; with ZeRO-1 it first
 * gathers its DP group's Adam slices) and, when loading, reads every stored
 * chunk that overlaps its new shards and keeps the overlap.  Each chunk is
 * one SL_EV_WRITE or SL_EV_READ event on the device that moved it, with
 * op = the chunk's id in its manifest, the fields of sl_ev_io (the tensor,
 * the chunk's index among its chunks, read or write) and the label
 * "write NAME" or "read NAME" for people; its emulated time is bytes / the
 * storage bandwidth.  Without
 * a cluster (c == NULL) the host does the same work device by device. */
#ifndef SL_CKPT_H
#define SL_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "model.h"
#include "status.h"
#include "train.h"

#define SL_CKPT_FORMAT "shardlab-checkpoint"
#define SL_CKPT_FORMAT_VERSION 1
#define SL_CKPT_ARCH_NAME "shardlab-transformer"
#define SL_CKPT_ARCH_VERSION 3 /* 2: kv_heads and ffn_kind; 3: norm */
/* A nominal rate per device (a local NVMe drive's order of magnitude), for
 * the emulated time of checkpoint I/O; a knob, not a measurement. */
#define SL_CKPT_STORAGE_BW_DEFAULT 2e9
/* The largest training step a manifest may record (a crafted one past it
 * is refused, never truncated). */
#define SL_CKPT_MAX_STEP 1000000000L

/* Points of a save where a fault-injection hook is called. */
typedef enum sl_ckpt_point {
	SL_CKPT_AT_CHUNK,     /* a device wrote a chunk's bytes; its file is not synced yet */
	SL_CKPT_AT_FILE,      /* a device's data file is complete and synced */
	SL_CKPT_AT_MANIFEST,  /* the manifest is written and synced under its temporary name */
	SL_CKPT_AT_COMMIT,    /* everything is synced; the rename into place is next */
	SL_CKPT_AT_COMMITTED, /* renamed into place; the old generation is still on disk */
	SL_CKPT_AT_CLEANUP,   /* one file of the old generation was removed */
	SL_CKPT_NPOINTS
} sl_ckpt_point;

const char *sl_ckpt_point_name(sl_ckpt_point p);

/* Called at every point (from device threads for the first two, dev = the
 * device; else dev = -1).  Returning non-zero makes the save fail there as
 * if the disk had (it cleans up); a test simulating a kill calls _exit. */
typedef int (*sl_ckpt_fault_fn)(void *ctx, sl_ckpt_point at, int dev);

typedef struct sl_ckpt_opts {
	double storage_bandwidth; /* bytes/s per device, for emulated I/O time */
	sl_ckpt_fault_fn fault;   /* testing only; NULL normally */
	void *fault_ctx;
} sl_ckpt_opts;

void sl_ckpt_opts_default(sl_ckpt_opts *o);

/* ---- an opened checkpoint ---- */

typedef struct sl_ckpt_chunk {
	int id;               /* position among all the manifest's chunks, tensor by tensor */
	int tensor;           /* its tensor's index */
	int owner;            /* the device that wrote it, in the saved layout */
	int tp, pp, dp;       /* the owner's mesh coordinates */
	int off[2], shape[2]; /* its rectangle in the tensor: first row and column, rows, cols */
	int file;             /* index into the files */
	uint64_t byte_offset, byte_length;
	uint32_t crc32;
} sl_ckpt_chunk;

typedef struct sl_ckpt_tensor {
	char name[48];
	int rows, cols;
	sl_tsplit split;
	int axis, unit;
	int nchunks;
	sl_ckpt_chunk *chunks;
} sl_ckpt_tensor;

typedef struct sl_ckpt_file {
	char name[64];
	uint64_t bytes;
	int writer;
} sl_ckpt_file;

typedef struct sl_ckpt_info {
	int format_version;
	long generation;
	int arch_version;    /* the manifest's architecture version */
	sl_model_spec model; /* architecture, data (seed, batch, seq) and Adam settings */
	sl_layout layout;    /* the layout at save */
	int devices;
	long step, adam_step, next_batch;
	int ntensors, nchunks, nfiles;
	const sl_ckpt_tensor *tensors;
	const sl_ckpt_file *files;
	uint64_t data_bytes; /* all data files */
} sl_ckpt_info;

typedef struct sl_ckpt sl_ckpt;

/* Read and check the manifest of dir: the format and its version, every
 * field, chunks that tile every tensor exactly, byte ranges inside their
 * files, and every data file present with the size recorded (checksums are
 * sl_ckpt_verify's and the load's).  The messages name dir and what is wrong;
 * one that saves kept changing while it was read says a save was under way. */
int sl_ckpt_open(const char *dir, sl_ckpt **out, sl_err *err);
void sl_ckpt_close(sl_ckpt *ck);

/* Remove a scratch checkpoint: the plain files in dir, then dir (what
 * cannot be removed is left, silently). */
void sl_ckpt_remove(const char *dir);
const sl_ckpt_info *sl_ckpt_info_of(const sl_ckpt *ck);
const char *sl_ckpt_dir(const sl_ckpt *ck);
/* The manifest as stored. */
const char *sl_ckpt_manifest_text(const sl_ckpt *ck);

/* Read every chunk and check its checksum (on the host). */
int sl_ckpt_verify(const sl_ckpt *ck, sl_err *err);

/* Can ck be loaded into model m under layout l on ndev devices?  The
 * architecture must match (layers, hidden, ffn, heads); the layout must be
 * one the model can be split into, else the message says why. */
int sl_ckpt_check_target(const sl_ckpt *ck, const sl_model_spec *m, const sl_layout *l, int ndev,
                         sl_err *err);

/* ---- save, load, reshard ---- */

/* Save tr (its parameters, Adam moments and step) into dir, by c's devices
 * when c is not NULL (c's device count must be tr's).  dir may be missing,
 * an empty directory, or a checkpoint (replaced); anything else is refused. */
int sl_ckpt_save(sl_train *tr, sl_cluster *c, const char *dir, const sl_ckpt_opts *o, sl_err *err);

/* Remove the temporary directories that killed fresh saves to dir left
 * beside it: exactly DIR.tmp-PID-N, of a process that is dead, holding
 * only a checkpoint's files (regular files: manifest.json,
 * manifest.json.tmp, gGGGGGG-devDDD.bin); links are never followed.  A
 * save does it first; the ckpt commands too.  Returns how many. */
int sl_ckpt_clean_stale(const char *dir);

/* Can a save go to dir (missing, in a writable directory; an empty
 * directory; or a checkpoint)?  Changes nothing; the message says why not. */
int sl_ckpt_check_dest(const char *dir, sl_err *err);

/* Load ck into tr, resharding to tr's layout, by c's devices when c is not
 * NULL.  Every chunk is read and its checksum checked before anything in tr
 * changes; on any error tr is untouched.  Sets tr's step to the saved one;
 * the data and Adam settings stay tr's own (the caller chooses them, e.g.
 * from sl_ckpt_info_of). */
int sl_ckpt_load(sl_train *tr, sl_cluster *c, const sl_ckpt *ck, const sl_ckpt_opts *o,
                 sl_err *err);

/* The single-device reference (model.h) resumed from ck: ck loaded on one
 * device, its parameters, Adam moments and step.  What a resumed run is
 * checked against: a replay from step 0 would take as long as the whole
 * history (a crafted step of 10^6 is a hang).  m: the model being trained
 * (its architecture ck's, sl_ckpt_check_target). */
int sl_ckpt_ref_init(sl_ref *r, const sl_ckpt *ck, const sl_model_spec *m, sl_err *err);

/* Offline: rewrite ck under layout l (ndev = tp*pp*dp devices) into out, in
 * one run of c's devices when c is not NULL (each reads what its new shards
 * need, then writes its new chunks).  The model and training state are ck's. */
int sl_ckpt_reshard(const sl_ckpt *ck, const sl_layout *l, sl_cluster *c, const char *out,
                    const sl_ckpt_opts *o, sl_err *err);

/* Train `steps` steps on c (as sl_train_run), saving into dir every
 * `every` steps (0: no intermediate saves) and after the last one; each
 * save replaces the previous one crash-safely.  rep covers all the steps, as
 * one sl_train_run would report them (means over the steps, peaks over the
 * whole).  The cluster's trace holds what its devices did last: the final
 * save. */
int sl_ckpt_train_run(sl_train *tr, sl_cluster *c, int steps, const char *dir, int every,
                      const sl_ckpt_opts *o, sl_train_report *rep, sl_err *err);

/* ---- plans, for views that animate saving and resharding ---- */

/* One chunk moved between a device and storage: for a write, the chunk the
 * device writes (the whole of it); for a read, the stored chunk the device
 * reads and the part of it (rectangle in tensor coordinates) that it keeps
 * for its new shard. */
typedef struct sl_ckpt_move {
	int dev;
	int tensor, chunk; /* chunk: id in the manifest (the trace event's op) */
	int off[2], shape[2];
	uint64_t bytes; /* bytes moved to or from storage */
} sl_ckpt_move;

/* The writes a save of tr makes, in each device's order.  Free with free(). */
int sl_ckpt_write_plan(const sl_train *tr, sl_ckpt_move **out, int *n, sl_err *err);
/* The reads a load of ck into tr's layout makes.  Free with free(). */
int sl_ckpt_read_plan(const sl_ckpt *ck, const sl_train *tr, sl_ckpt_move **out, int *n,
                      sl_err *err);

#endif
