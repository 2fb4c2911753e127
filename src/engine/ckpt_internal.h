/* SPDX-License-Identifier: MIT */
/* ckpt_internal.h - what the three parts of the checkpoint code share,
 * nobody else: ckpt_manifest.c (the manifest: writing, reading and
 * checking it, verifying the chunks), ckpt_commit.c (where a save goes,
 * its lock, the crash-safe commit and the clean-up) and ckpt.c (the
 * devices' reads and writes: save, load, reshard, plans). */
#ifndef SL_CKPT_INTERNAL_H
#define SL_CKPT_INTERNAL_H

#include <stdint.h>

#include <jansson.h>

#include "ckpt.h"

#define FL sizeof(float)
#define NSTATES 3 /* param, exp_avg, exp_avg_sq */
#define MANIFEST "manifest.json"
#define MANIFEST_TMP "manifest.json.tmp"
#define PATHLEN 4096
/* A manifest past this is not one shardlab wrote (1,024 devices' chunks of
 * the largest model a run can hold take a few MB). */
#define MANIFEST_MAX (64L << 20)
/* verify streams each chunk's checksum in reads of this size. */
#define VERIFY_BUF (1 << 20)

struct sl_ckpt {
	char dir[PATHLEN];
	char *text;
	sl_ckpt_info info;
	sl_ckpt_tensor *tensors;
	sl_ckpt_file *files;
	int *by_name; /* file indices sorted by name, for lookups */
	int *fds;     /* each data file, held open since sl_ckpt_open; NULL: opened when read */
};

/* ---- ckpt_manifest.c ---- */

int ckpt_join(char *out, const char *dir, const char *name, sl_err *err);
int ckpt_write_at(int fd, const unsigned char *p, size_t n, uint64_t off);
/* 0, or -1 with errno set (0 for a short file). */
int ckpt_read_at(int fd, unsigned char *p, size_t n, uint64_t off);
/* "g000012-dev003.bin": 12, exactly as a save names it; -1 otherwise. */
long ckpt_data_file_gen(const char *name);
/* manifest.json, manifest.json.tmp or a data file's name. */
int ckpt_own_name(const char *name);
/* dir's manifest, NUL-terminated (free it): a regular file, no link. */
int ckpt_read_manifest(const char *dir, char **out, size_t *len, sl_err *err);
/* A data file of ck opened for reading, checked again; -1 on error. */
int ckpt_open_file(const sl_ckpt *ck, int f, sl_err *err);
int ckpt_check_files(const sl_ckpt *ck, sl_err *err);
int ckpt_rect_meet(const int ao[2], const int as[2], const int bo[2], const int bs[2], int o[2],
                   int s[2]);
void ckpt_free_parts(sl_ckpt *ck);
void ckpt_info_link(sl_ckpt *ck);
json_t *ckpt_manifest_json(const sl_ckpt *ck);

/* ---- ckpt_commit.c ---- */

struct ckpt_target {
	char final[PATHLEN - 100]; /* the checkpoint's name */
	char work[PATHLEN];        /* where this save writes: final, or a new directory beside it */
	int fresh;                 /* work is new, renamed onto final at the end */
	long gen;
};

int ckpt_sync_dir(const char *dir);
void ckpt_parent_of(const char *path, char *out);
/* Where a save to dir writes; *lock: the directory's lock (>= 0) when in place. */
int ckpt_prepare_target(const char *dir, struct ckpt_target *t, int *lock, sl_err *err);
/* The manifest written and synced under its temporary name (in a new
 * directory, under its own name). */
int ckpt_write_manifest(const struct ckpt_target *t, const sl_ckpt *plan, const sl_ckpt_opts *o,
                        sl_err *err);
int ckpt_remove_old(const struct ckpt_target *t, const sl_ckpt *plan, const sl_ckpt_opts *o,
                    sl_err *err);
/* Undo a save that failed before its commit (created: by writer device). */
void ckpt_abandon(const struct ckpt_target *t, const sl_ckpt *plan, const int *created);

static inline int ckpt_fault(const sl_ckpt_opts *o, sl_ckpt_point at, int dev, sl_err *err)
{
	if (o->fault && o->fault(o->fault_ctx, at, dev))
		return sl_fail(err, SL_ESYS, "the save was interrupted %s (fault injection)",
		               sl_ckpt_point_name(at));
	return SL_OK;
}

#endif
