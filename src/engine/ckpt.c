/* SPDX-License-Identifier: MIT */
/* ckpt.c - sharded checkpoints: the manifest, crash-safe saving by the
 * devices, checks, and loading under another layout (see ckpt.h). */
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "coll.h"

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

static const char *const state_names[NSTATES] = {"param", "exp_avg", "exp_avg_sq"};

static const char *const point_names[SL_CKPT_NPOINTS] = {
    "after a chunk",     "after a data file", "after the manifest",
    "before the rename", "after the rename",  "after removing an old file"};

const char *sl_ckpt_point_name(sl_ckpt_point p)
{
	return p >= 0 && p < SL_CKPT_NPOINTS ? point_names[p] : "?";
}

void sl_ckpt_opts_default(sl_ckpt_opts *o)
{
	memset(o, 0, sizeof *o);
	o->storage_bandwidth = SL_CKPT_STORAGE_BW_DEFAULT;
}

struct sl_ckpt {
	char dir[PATHLEN];
	char *text;
	sl_ckpt_info info;
	sl_ckpt_tensor *tensors;
	sl_ckpt_file *files;
	int *by_name; /* file indices sorted by name, for lookups */
};

/* ---- small helpers ---- */

static int host_is_le(void)
{
	const uint16_t one = 1;
	return *(const uint8_t *)&one == 1;
}

/* Chunks are little-endian float32 whatever the host. */
static void floats_to_le(unsigned char *dst, const float *src, size_t n)
{
	if (host_is_le()) {
		memcpy(dst, src, n * FL);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &src[i], 4);
		for (int b = 0; b < 4; b++)
			dst[4 * i + b] = (unsigned char)(u >> (8 * b));
	}
}

static void floats_from_le(float *dst, const unsigned char *src, size_t n)
{
	if (host_is_le()) {
		memcpy(dst, src, n * FL);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t u = 0;
		for (int b = 0; b < 4; b++)
			u |= (uint32_t)src[4 * i + b] << (8 * b);
		memcpy(&dst[i], &u, 4);
	}
}

static uint32_t crc_of(const unsigned char *p, size_t n)
{
	return (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), p, n);
}

static int join(char *out, const char *dir, const char *name, sl_err *err)
{
	int n = snprintf(out, PATHLEN, "%s/%s", dir, name);
	if (n < 0 || n >= PATHLEN)
		return sl_fail(err, SL_EINVAL, "%s/%s: path too long", dir, name);
	return SL_OK;
}

static int write_at(int fd, const unsigned char *p, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* 0, or -1 with errno set; a short file reads as EIO's cousin: errno 0. */
static int read_at(int fd, unsigned char *p, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t r = pread(fd, p, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = 0;
			return -1;
		}
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

/* "g000012-dev003.bin": a data file of generation 12, exactly as a save
 * names it; -1 for any other name (so "g1-dev1.bin", someone else's file,
 * is never taken for one, nor removed as an old generation). */
static long data_file_gen(const char *name)
{
	long g = -1;
	int d = -1;
	char want[64];
	if (strlen(name) >= sizeof want || sscanf(name, "g%ld-dev%d.bin", &g, &d) != 2 || g < 0 ||
	    g > 100000000L || d < 0 || d >= SL_MAX_DEVICES)
		return -1;
	snprintf(want, sizeof want, "g%06ld-dev%03d.bin", g, d);
	return strcmp(want, name) == 0 ? g : -1;
}

/* What a checkpoint directory may hold besides its data files. */
static int ckpt_own_name(const char *name)
{
	return strcmp(name, MANIFEST) == 0 || strcmp(name, MANIFEST_TMP) == 0 ||
	       data_file_gen(name) >= 0;
}

/* The manifest's bytes, NUL-terminated: a regular file of the directory's
 * own.  Opened without following a symbolic link (which could point
 * anywhere) and without blocking (a FIFO would wait for a writer forever),
 * then checked to be a regular file of at most MANIFEST_MAX bytes. */
static int read_manifest(const char *dir, char **out, size_t *len, sl_err *err)
{
	char path[PATHLEN];
	*out = NULL;
	*len = 0;
	int rc = join(path, dir, MANIFEST, err);
	if (rc)
		return rc;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return sl_fail(err, SL_EINVAL, "%s holds no checkpoint: %s is missing", dir,
			               MANIFEST);
		if (errno == ELOOP)
			return sl_fail(err, SL_EINVAL,
			               "%s is a symbolic link: a checkpoint's files must be its own",
			               path);
		return sl_fail(err, SL_EINVAL, "cannot read %s: %s", path, strerror(errno));
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = sl_fail(err, SL_EINVAL, "cannot read %s: %s", path, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		rc = sl_fail(err, SL_EINVAL, "%s is not a regular file", path);
	} else if (st.st_size > MANIFEST_MAX) {
		rc = sl_fail(err, SL_EINVAL, "%s is too large for a manifest: %lld bytes (at most %ld)",
		             path, (long long)st.st_size, MANIFEST_MAX);
	}
	char *text = rc ? NULL : malloc((size_t)st.st_size + 1);
	if (!rc && !text)
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	size_t n = 0;
	while (!rc && n < (size_t)st.st_size) {
		ssize_t r = read(fd, text + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = sl_fail(err, SL_EINVAL, "cannot read %s: %s", path, strerror(errno));
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (rc) {
		free(text);
		return rc;
	}
	text[n] = '\0';
	*out = text;
	*len = n;
	return SL_OK;
}

/* Open a data file of dir for reading: a regular file of its own (as the
 * manifest), of `bytes` bytes.  The fd, or -1 with err filled. */
static int open_data(const char *dir, const char *name, uint64_t bytes, sl_err *err)
{
	char path[PATHLEN];
	if (join(path, dir, name, err))
		return -1;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			sl_fail(err, SL_EINVAL,
			        "%s: %s is a symbolic link: a checkpoint's files must be its own", dir,
			        name);
		else if (errno == ENOENT)
			sl_fail(err, SL_EINVAL, "%s: data file %s is missing: %s", dir, name,
			        strerror(errno));
		else
			sl_fail(err, SL_EINVAL, "%s: cannot open %s: %s", dir, name, strerror(errno));
		return -1;
	}
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) != 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "it is not a regular file";
	if (!why && (uint64_t)st.st_size != bytes) {
		sl_fail(err, SL_EINVAL, "%s: data file %s is %s: %llu bytes, the manifest says %llu",
		        dir, name, (uint64_t)st.st_size < bytes ? "truncated" : "too long",
		        (unsigned long long)st.st_size, (unsigned long long)bytes);
		close(fd);
		return -1;
	}
	if (why) {
		sl_fail(err, SL_EINVAL, "%s: %s: %s", dir, name, why);
		close(fd);
		return -1;
	}
	return fd;
}

/* The rectangle a shard covers in its tensor. */
static void shard_rect(const sl_tensor_info *ti, const sl_shard *sh, int off[2], int shape[2])
{
	off[0] = off[1] = 0;
	shape[0] = ti->rows;
	shape[1] = ti->cols;
	if (ti->axis == 0) {
		off[0] = sh->start;
		shape[0] = sh->len;
	} else if (ti->axis == 1) {
		off[1] = sh->start;
		shape[1] = sh->len;
	}
}

/* Intersection of two rectangles; 0 when empty. */
static int rect_meet(const int ao[2], const int as[2], const int bo[2], const int bs[2], int o[2],
                     int s[2])
{
	for (int k = 0; k < 2; k++) {
		int lo = ao[k] > bo[k] ? ao[k] : bo[k];
		int hi = ao[k] + as[k] < bo[k] + bs[k] ? ao[k] + as[k] : bo[k] + bs[k];
		if (hi <= lo)
			return 0;
		o[k] = lo;
		s[k] = hi - lo;
	}
	return 1;
}

/* Copy rectangle (o, s) from a row-major block at (so, ss) to one at (doff, ds). */
static void rect_copy(float *dst, const int doff[2], const int ds[2], const float *src,
                      const int so[2], const int ss[2], const int o[2], const int s[2])
{
	for (int r = 0; r < s[0]; r++) {
		const float *a = src + (size_t)(o[0] - so[0] + r) * ss[1] + (o[1] - so[1]);
		float *b = dst + (size_t)(o[0] - doff[0] + r) * ds[1] + (o[1] - doff[1]);
		memcpy(b, a, (size_t)s[1] * FL);
	}
}

static void ckpt_free_parts(sl_ckpt *ck)
{
	if (ck->tensors)
		for (int i = 0; i < ck->info.ntensors; i++)
			free(ck->tensors[i].chunks);
	free(ck->tensors);
	free(ck->files);
	free(ck->text);
	free(ck->by_name);
	ck->tensors = NULL;
	ck->files = NULL;
	ck->text = NULL;
	ck->by_name = NULL;
}

void sl_ckpt_remove(const char *dir)
{
	DIR *dp = opendir(dir);
	if (dp) {
		struct dirent *e;
		char path[PATHLEN];
		while ((e = readdir(dp)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
				unlink(path);
		closedir(dp);
	}
	rmdir(dir);
}

void sl_ckpt_close(sl_ckpt *ck)
{
	if (!ck)
		return;
	ckpt_free_parts(ck);
	free(ck);
}

const sl_ckpt_info *sl_ckpt_info_of(const sl_ckpt *ck)
{
	return &ck->info;
}

const char *sl_ckpt_dir(const sl_ckpt *ck)
{
	return ck->dir;
}

const char *sl_ckpt_manifest_text(const sl_ckpt *ck)
{
	return ck->text ? ck->text : "";
}

static void info_link(sl_ckpt *ck)
{
	ck->info.tensors = ck->tensors;
	ck->info.files = ck->files;
}

/* ---- the save plan: which device writes which chunk where ---- */

/* Device d's primary shards with data, in the order of its flat arrays:
 * the chunks it writes, consecutively, into its one file. */
static int writes_of(const sl_dev_state *st, int i)
{
	return st->shards[i].primary && st->shards[i].count > 0;
}

static int cmp_chunk(const void *a, const void *b)
{
	const sl_ckpt_chunk *x = a, *y = b;
	if (x->off[0] != y->off[0])
		return x->off[0] < y->off[0] ? -1 : 1;
	return (x->off[1] > y->off[1]) - (x->off[1] < y->off[1]);
}

/* Fill ck (tensors, chunks, files, info) with what a save of tr writes in
 * generation gen. */
static int plan_save(sl_train *tr, long gen, sl_ckpt *ck, sl_err *err)
{
	const sl_model_spec *m = sl_train_model(tr);
	const sl_layout *l = sl_train_layout(tr);
	int ndev = l->tp * l->pp * l->dp, nt = sl_model_ntensors(m);
	memset(&ck->info, 0, sizeof ck->info);
	if (sl_train_step(tr) > SL_CKPT_MAX_STEP)
		return sl_fail(err, SL_EINVAL, "step %ld is past the %ld a checkpoint may record",
		               sl_train_step(tr), SL_CKPT_MAX_STEP);
	ck->tensors = calloc((size_t)nt, sizeof *ck->tensors);
	ck->files = calloc((size_t)ndev, sizeof *ck->files);
	if (!ck->tensors || !ck->files)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	ck->info.ntensors = nt;
	for (int t = 0; t < nt; t++) {
		sl_tensor_info ti;
		sl_model_tensor(m, t, &ti);
		sl_ckpt_tensor *T = &ck->tensors[t];
		snprintf(T->name, sizeof T->name, "%s", ti.name);
		T->rows = ti.rows;
		T->cols = ti.cols;
		T->split = ti.split;
		T->axis = ti.axis;
		T->unit = ti.unit;
		T->chunks = calloc((size_t)l->tp, sizeof *T->chunks);
		if (!T->chunks)
			return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	for (int d = 0; d < ndev; d++) {
		sl_dev_state st = sl_train_dev_state(tr, d);
		uint64_t cur = 0;
		int tp, pp, dp;
		sl_mesh_coords(l, d, &tp, &pp, &dp);
		for (int i = 0; i < st.nshards; i++) {
			if (!writes_of(&st, i))
				continue;
			const sl_shard *sh = &st.shards[i];
			sl_tensor_info ti;
			sl_model_tensor(m, sh->tensor, &ti);
			sl_ckpt_tensor *T = &ck->tensors[sh->tensor];
			if (T->nchunks >= l->tp)
				return sl_fail(err, SL_EINVAL,
				               "%s has more saved copies than TP ranks", ti.name);
			sl_ckpt_chunk *c = &T->chunks[T->nchunks++];
			c->owner = d;
			c->tp = tp;
			c->pp = pp;
			c->dp = dp;
			shard_rect(&ti, sh, c->off, c->shape);
			c->file = ck->info.nfiles;
			c->byte_offset = cur;
			c->byte_length = NSTATES * sh->count * FL;
			cur += c->byte_length;
		}
		if (cur == 0)
			continue;
		sl_ckpt_file *f = &ck->files[ck->info.nfiles++];
		snprintf(f->name, sizeof f->name, "g%06ld-dev%03d.bin", gen, d);
		f->bytes = cur;
		f->writer = d;
		ck->info.data_bytes += cur;
	}
	int id = 0;
	for (int t = 0; t < nt; t++) {
		sl_ckpt_tensor *T = &ck->tensors[t];
		qsort(T->chunks, (size_t)T->nchunks, sizeof *T->chunks, cmp_chunk);
		for (int k = 0; k < T->nchunks; k++) {
			T->chunks[k].id = id++;
			T->chunks[k].tensor = t;
		}
	}
	ck->info.nchunks = id;
	ck->info.format_version = SL_CKPT_FORMAT_VERSION;
	ck->info.generation = gen;
	ck->info.model = *m;
	ck->info.layout = *l;
	ck->info.devices = ndev;
	ck->info.step = ck->info.adam_step = ck->info.next_batch = sl_train_step(tr);
	info_link(ck);
	return SL_OK;
}

/* ---- the manifest: writing ---- */

static json_t *manifest_json(const sl_ckpt *ck)
{
	const sl_ckpt_info *in = &ck->info;
	const sl_model_spec *m = &in->model;
	const sl_layout *l = &in->layout;
	char order[16];
	json_t *block =
	    m->heads > 0 ? json_pack("[ss]", "attention", "mlp") : json_pack("[s]", "mlp");
	json_t *root =
	    json_pack("{s:s, s:i, s:I, s:{s:s, s:i, s:s, s:o, s:i, s:i, s:i, s:i}}", "format",
	              SL_CKPT_FORMAT, "format_version", SL_CKPT_FORMAT_VERSION, "generation",
	              (json_int_t)in->generation, "architecture", "name", SL_CKPT_ARCH_NAME,
	              "version", SL_CKPT_ARCH_VERSION, "dtype", "float32", "block", block, "layers",
	              m->layers, "hidden", m->hidden, "ffn", m->ffn, "heads", m->heads);
	if (!root)
		return NULL;
	json_object_set_new(
	    root, "layout",
	    json_pack("{s:i, s:i, s:i, s:i, s:s, s:s, s:i, s:i, s:b, s:b, s:s}", "devices",
	              in->devices, "tp", l->tp, "pp", l->pp, "dp", l->dp, "mesh_order",
	              sl_mesh_order_name(l->order, order, sizeof order), "schedule",
	              sl_sched_name(l->schedule), "chunks", l->chunks, "microbatches",
	              l->microbatches, "sequence_parallel", l->seq_parallel, "zero1", l->zero1,
	              "algorithm", sl_algo_name(l->algo)));
	json_object_set_new(
	    root, "training",
	    json_pack("{s:I, s:I, s:I, s:{s:I, s:i, s:i}, s:{s:s, s:f, s:f, s:f, s:f}}", "step",
	              (json_int_t)in->step, "adam_step", (json_int_t)in->adam_step, "seed",
	              (json_int_t)m->seed, "data", "next_batch", (json_int_t)in->next_batch,
	              "batch", m->batch, "seq", m->seq, "optimizer", "name", "adam", "lr",
	              (double)m->lr, "beta1", (double)m->beta1, "beta2", (double)m->beta2, "eps",
	              (double)m->eps));
	json_object_set_new(root, "byte_order", json_string("little"));
	json_object_set_new(root, "states",
	                    json_pack("[sss]", state_names[0], state_names[1], state_names[2]));
	json_object_set_new(root, "checksum", json_string("crc32"));
	json_t *files = json_array();
	for (int i = 0; i < in->nfiles; i++)
		json_array_append_new(files, json_pack("{s:s, s:I, s:i}", "name", ck->files[i].name,
		                                       "bytes", (json_int_t)ck->files[i].bytes,
		                                       "writer", ck->files[i].writer));
	json_object_set_new(root, "files", files);
	json_t *tensors = json_array();
	for (int t = 0; t < in->ntensors; t++) {
		const sl_ckpt_tensor *T = &ck->tensors[t];
		json_t *chunks = json_array();
		for (int k = 0; k < T->nchunks; k++) {
			const sl_ckpt_chunk *c = &T->chunks[k];
			json_array_append_new(
			    chunks,
			    json_pack(
			        "{s:i, s:i, s:{s:i, s:i, s:i}, s:[ii], s:[ii], s:s, s:I, s:I, s:I}",
			        "id", c->id, "owner", c->owner, "mesh", "tp", c->tp, "pp", c->pp,
			        "dp", c->dp, "offset", c->off[0], c->off[1], "shape", c->shape[0],
			        c->shape[1], "file", ck->files[c->file].name, "byte_offset",
			        (json_int_t)c->byte_offset, "byte_length",
			        (json_int_t)c->byte_length, "crc32", (json_int_t)c->crc32));
		}
		json_array_append_new(tensors, json_pack("{s:s, s:[ii], s:s, s:s, s:i, s:i, s:o}",
		                                         "name", T->name, "shape", T->rows, T->cols,
		                                         "dtype", "float32", "split",
		                                         sl_tsplit_name(T->split), "axis", T->axis,
		                                         "unit", T->unit, "chunks", chunks));
	}
	json_object_set_new(root, "tensors", tensors);
	return root;
}

/* ---- the manifest: reading and checking ---- */

struct rd {
	const char *where; /* "DIR/manifest.json" */
	sl_err *err;
};

static int bad(struct rd *R, const char *ctx, const char *fmt, const char *key)
{
	return sl_fail(R->err, SL_EINVAL, "%s: %s%s%s", R->where, ctx, *ctx ? ": " : "",
	               fmt ? fmt : key);
}

static json_t *field(struct rd *R, json_t *obj, const char *key, const char *ctx, int *rc)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		char msg[96];
		snprintf(msg, sizeof msg, "\"%s\" is missing", key);
		*rc = bad(R, ctx, msg, NULL);
	}
	return v;
}

static int get_int(struct rd *R, json_t *obj, const char *key, long long lo, long long hi,
                   long long *out, const char *ctx)
{
	int rc = SL_OK;
	json_t *v = field(R, obj, key, ctx, &rc);
	if (!v)
		return rc;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		char msg[128];
		snprintf(msg, sizeof msg, "\"%s\" must be an integer from %lld to %lld", key, lo,
		         hi);
		return bad(R, ctx, msg, NULL);
	}
	*out = json_integer_value(v);
	return SL_OK;
}

static int get_i(struct rd *R, json_t *obj, const char *key, int lo, int hi, int *out,
                 const char *ctx)
{
	long long v = 0;
	int rc = get_int(R, obj, key, lo, hi, &v, ctx);
	if (!rc)
		*out = (int)v;
	return rc;
}

/* obj's key, of the JSON type want (named as it must be in the message). */
static int get_typed(struct rd *R, json_t *obj, const char *key, json_type want,
                     const char *must, json_t **out, const char *ctx)
{
	int rc = SL_OK;
	json_t *v = field(R, obj, key, ctx, &rc);
	if (!v)
		return rc;
	json_type t = json_typeof(v);
	int ok = t == want || (want == JSON_REAL && t == JSON_INTEGER) ||
	         (want == JSON_TRUE && t == JSON_FALSE);
	if (!ok) {
		char msg[96];
		snprintf(msg, sizeof msg, "\"%s\" must be %s", key, must);
		return bad(R, ctx, msg, NULL);
	}
	*out = v;
	return SL_OK;
}

static int get_str(struct rd *R, json_t *obj, const char *key, const char **out, const char *ctx)
{
	json_t *v;
	int rc = get_typed(R, obj, key, JSON_STRING, "a string", &v, ctx);
	if (!rc)
		*out = json_string_value(v);
	return rc;
}

/* Any number, integer or real. */
static int get_real(struct rd *R, json_t *obj, const char *key, double *out, const char *ctx)
{
	json_t *v;
	int rc = get_typed(R, obj, key, JSON_REAL, "a number", &v, ctx);
	if (!rc)
		*out = json_number_value(v);
	return rc;
}

/* true or false. */
static int get_bool(struct rd *R, json_t *obj, const char *key, int *out, const char *ctx)
{
	json_t *v;
	int rc = get_typed(R, obj, key, JSON_TRUE, "true or false", &v, ctx);
	if (!rc)
		*out = json_is_true(v);
	return rc;
}

static int get_obj(struct rd *R, json_t *obj, const char *key, json_t **out, const char *ctx)
{
	return get_typed(R, obj, key, JSON_OBJECT, "an object", out, ctx);
}

static int get_arr(struct rd *R, json_t *obj, const char *key, json_t **out, const char *ctx)
{
	return get_typed(R, obj, key, JSON_ARRAY, "an array", out, ctx);
}

/* [a, b] of integers in [lo, hi]. */
static int get_pair(struct rd *R, json_t *obj, const char *key, int lo, int hi, int out[2],
                    const char *ctx)
{
	json_t *a;
	int rc = get_arr(R, obj, key, &a, ctx);
	if (rc)
		return rc;
	char msg[128];
	snprintf(msg, sizeof msg, "\"%s\" must be two integers from %d to %d", key, lo, hi);
	if (json_array_size(a) != 2)
		return bad(R, ctx, msg, NULL);
	for (int k = 0; k < 2; k++) {
		json_t *v = json_array_get(a, (size_t)k);
		if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
			return bad(R, ctx, msg, NULL);
		out[k] = (int)json_integer_value(v);
	}
	return SL_OK;
}

static int parse_arch(struct rd *R, json_t *root, sl_model_spec *m)
{
	json_t *a;
	const char *s;
	int rc, version;
	if ((rc = get_obj(R, root, "architecture", &a, "")))
		return rc;
	if ((rc = get_str(R, a, "name", &s, "architecture")))
		return rc;
	if (strcmp(s, SL_CKPT_ARCH_NAME) != 0) {
		char msg[160], esc[64];
		snprintf(msg, sizeof msg, "architecture \"%s\" is not %s", sl_escape(s, esc, sizeof esc),
		         SL_CKPT_ARCH_NAME);
		return bad(R, "", msg, NULL);
	}
	if ((rc = get_i(R, a, "version", 1, INT_MAX, &version, "architecture")))
		return rc;
	if (version > SL_CKPT_ARCH_VERSION)
		return sl_fail(R->err, SL_EINVAL,
		               "%s: architecture version %d is newer than this shardlab knows "
		               "(%d): use a newer shardlab",
		               R->where, version, SL_CKPT_ARCH_VERSION);
	if ((rc = get_str(R, a, "dtype", &s, "architecture")))
		return rc;
	if (strcmp(s, "float32") != 0)
		return bad(R, "architecture", "dtype must be \"float32\" (the only one supported)",
		           NULL);
	if ((rc = get_i(R, a, "layers", 1, 4096, &m->layers, "architecture")) ||
	    (rc = get_i(R, a, "hidden", 1, 65536, &m->hidden, "architecture")) ||
	    (rc = get_i(R, a, "ffn", 1, 65536, &m->ffn, "architecture")) ||
	    (rc = get_i(R, a, "heads", 0, 65536, &m->heads, "architecture")))
		return rc;
	json_t *b;
	if ((rc = get_arr(R, a, "block", &b, "architecture")))
		return rc;
	int attn = json_array_size(b) == 2 && json_is_string(json_array_get(b, 0)) &&
	           strcmp(json_string_value(json_array_get(b, 0)), "attention") == 0;
	size_t want = m->heads > 0 ? 2 : 1;
	json_t *last = json_array_get(b, want - 1);
	if (json_array_size(b) != want || (m->heads > 0) != attn || !json_is_string(last) ||
	    strcmp(json_string_value(last), "mlp") != 0)
		return bad(R, "architecture",
		           m->heads > 0
		               ? "\"block\" must be [\"attention\", \"mlp\"] when heads > 0"
		               : "\"block\" must be [\"mlp\"] when heads is 0",
		           NULL);
	return SL_OK;
}

static int parse_layout(struct rd *R, json_t *root, sl_ckpt_info *in)
{
	json_t *a;
	const char *s;
	int rc;
	sl_layout *l = &in->layout;
	sl_layout_default(l);
	if ((rc = get_obj(R, root, "layout", &a, "")) ||
	    (rc = get_i(R, a, "devices", 1, SL_MAX_DEVICES, &in->devices, "layout")) ||
	    (rc = get_i(R, a, "tp", 1, SL_MAX_DEVICES, &l->tp, "layout")) ||
	    (rc = get_i(R, a, "pp", 1, SL_MAX_DEVICES, &l->pp, "layout")) ||
	    (rc = get_i(R, a, "dp", 1, SL_MAX_DEVICES, &l->dp, "layout")) ||
	    (rc = get_i(R, a, "chunks", 1, 4096, &l->chunks, "layout")) ||
	    (rc = get_i(R, a, "microbatches", 1, 1 << 20, &l->microbatches, "layout")) ||
	    (rc = get_bool(R, a, "sequence_parallel", &l->seq_parallel, "layout")) ||
	    (rc = get_bool(R, a, "zero1", &l->zero1, "layout")))
		return rc;
	if ((long)l->tp * l->pp * l->dp != in->devices)
		return bad(R, "layout", "tp*pp*dp is not the device count", NULL);
	if ((rc = get_str(R, a, "mesh_order", &s, "layout")))
		return rc;
	if (sl_mesh_order_parse(s, l->order))
		return bad(R, "layout",
		           "\"mesh_order\" must name tp, pp and dp once each, as tp-dp-pp", NULL);
	if ((rc = get_str(R, a, "schedule", &s, "layout")))
		return rc;
	if (sl_sched_parse(s, &l->schedule))
		return bad(R, "layout", "unknown \"schedule\"", NULL);
	if ((rc = get_str(R, a, "algorithm", &s, "layout")))
		return rc;
	if (sl_algo_parse(s, &l->algo))
		return bad(R, "layout", "unknown \"algorithm\"", NULL);
	return SL_OK;
}

static int parse_training(struct rd *R, json_t *root, sl_ckpt_info *in)
{
	json_t *a, *d, *o;
	const char *s;
	long long v = 0;
	double x = 0;
	int rc;
	sl_model_spec *m = &in->model;
	if ((rc = get_obj(R, root, "training", &a, "")))
		return rc;
	/* Bounded: a step is a long here but an int in places (a run's step
	 * count), and no run gets near this. */
	if ((rc = get_int(R, a, "step", 0, SL_CKPT_MAX_STEP, &v, "training")))
		return rc;
	in->step = (long)v;
	if ((rc = get_int(R, a, "adam_step", 0, SL_CKPT_MAX_STEP, &v, "training")))
		return rc;
	in->adam_step = (long)v;
	if ((rc = get_int(R, a, "seed", 0, LLONG_MAX, &v, "training")))
		return rc;
	m->seed = (uint64_t)v;
	if ((rc = get_obj(R, a, "data", &d, "training")) ||
	    (rc = get_int(R, d, "next_batch", 0, SL_CKPT_MAX_STEP, &v, "training.data")))
		return rc;
	in->next_batch = (long)v;
	if ((rc = get_i(R, d, "batch", 1, 1 << 20, &m->batch, "training.data")) ||
	    (rc = get_i(R, d, "seq", 1, 65536, &m->seq, "training.data")) ||
	    (rc = get_obj(R, a, "optimizer", &o, "training")) ||
	    (rc = get_str(R, o, "name", &s, "training.optimizer")))
		return rc;
	if (strcmp(s, "adam") != 0)
		return bad(R, "training.optimizer", "\"name\" must be \"adam\"", NULL);
	float *f[4] = {&m->lr, &m->beta1, &m->beta2, &m->eps};
	const char *k[4] = {"lr", "beta1", "beta2", "eps"};
	for (int i = 0; i < 4; i++) {
		if ((rc = get_real(R, o, k[i], &x, "training.optimizer")))
			return rc;
		*f[i] = (float)x;
	}
	if (in->adam_step != in->step || in->next_batch != in->step)
		return sl_fail(R->err, SL_EINVAL,
		               "%s: the training state is inconsistent: step %ld, Adam step %ld, "
		               "next batch %ld (they must agree)",
		               R->where, in->step, in->adam_step, in->next_batch);
	return SL_OK;
}

static const sl_ckpt_file *sort_files; /* qsort has no context; set just around it */

static int cmp_file_name(const void *a, const void *b)
{
	return strcmp(sort_files[*(const int *)a].name, sort_files[*(const int *)b].name);
}

struct name_key {
	const sl_ckpt_file *files;
	const char *name;
};

static int cmp_key_name(const void *k, const void *b)
{
	const struct name_key *K = k;
	return strcmp(K->name, K->files[*(const int *)b].name);
}

/* The file of ck named name, or -1 (by bisection: a manifest may list
 * as many files as devices). */
static int file_named(const sl_ckpt *ck, const char *name)
{
	struct name_key k = {ck->files, name};
	const int *f = bsearch(&k, ck->by_name, (size_t)ck->info.nfiles, sizeof *ck->by_name,
	                       cmp_key_name);
	return f ? *f : -1;
}

static int parse_files(struct rd *R, json_t *root, sl_ckpt *ck)
{
	json_t *a;
	int rc = get_arr(R, root, "files", &a, "");
	if (rc)
		return rc;
	size_t n = json_array_size(a);
	/* Each device writes at most one file. */
	if (n > (size_t)ck->info.devices)
		return sl_fail(R->err, SL_EINVAL,
		               "%s: %zu files listed, more than the saved layout's %d device%s (each "
		               "writes at most one)",
		               R->where, n, ck->info.devices, ck->info.devices == 1 ? "" : "s");
	ck->files = calloc(n ? n : 1, sizeof *ck->files);
	ck->by_name = calloc(n ? n : 1, sizeof *ck->by_name);
	if (!ck->files || !ck->by_name)
		return sl_fail(R->err, SL_ENOMEM, "out of host memory");
	ck->info.nfiles = (int)n;
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_array_get(a, i);
		char ctx[48];
		snprintf(ctx, sizeof ctx, "files[%zu]", i);
		if (!json_is_object(f))
			return bad(R, ctx, "must be an object", NULL);
		const char *name;
		long long bytes;
		sl_ckpt_file *F = &ck->files[i];
		if ((rc = get_str(R, f, "name", &name, ctx)) ||
		    (rc = get_int(R, f, "bytes", 0, INT64_MAX, &bytes, ctx)) ||
		    (rc = get_i(R, f, "writer", 0, SL_MAX_DEVICES - 1, &F->writer, ctx)))
			return rc;
		/* Only names a save gives: nothing else in the directory (nor a
		 * path out of it) is ever read as data or removed as old. */
		if (data_file_gen(name) < 0) {
			char msg[160], esc[80];
			snprintf(msg, sizeof msg,
			         "\"name\" \"%s\" is not a data file's name (gGGGGGG-devDDD.bin)",
			         sl_escape(name, esc, sizeof esc));
			return bad(R, ctx, msg, NULL);
		}
		snprintf(F->name, sizeof F->name, "%s", name);
		F->bytes = (uint64_t)bytes;
		ck->info.data_bytes += F->bytes;
		ck->by_name[i] = (int)i;
	}
	sort_files = ck->files;
	qsort(ck->by_name, n, sizeof *ck->by_name, cmp_file_name);
	sort_files = NULL;
	for (size_t i = 1; i < n; i++)
		if (strcmp(ck->files[ck->by_name[i - 1]].name, ck->files[ck->by_name[i]].name) == 0) {
			char ctx[48];
			int j = ck->by_name[i] > ck->by_name[i - 1] ? ck->by_name[i] : ck->by_name[i - 1];
			snprintf(ctx, sizeof ctx, "files[%d]", j);
			return bad(R, ctx, "the file is listed twice", NULL);
		}
	return SL_OK;
}

static int parse_chunk(struct rd *R, json_t *c, sl_ckpt *ck, sl_ckpt_tensor *T, sl_ckpt_chunk *C,
                       const char *ctx)
{
	const sl_ckpt_info *in = &ck->info;
	const char *file;
	long long v;
	json_t *mesh;
	int rc;
	if (!json_is_object(c))
		return bad(R, ctx, "must be an object", NULL);
	if ((rc = get_i(R, c, "id", 0, INT_MAX, &C->id, ctx)) ||
	    (rc = get_i(R, c, "owner", 0, in->devices - 1, &C->owner, ctx)) ||
	    (rc = get_obj(R, c, "mesh", &mesh, ctx)) ||
	    (rc = get_i(R, mesh, "tp", 0, in->layout.tp - 1, &C->tp, ctx)) ||
	    (rc = get_i(R, mesh, "pp", 0, in->layout.pp - 1, &C->pp, ctx)) ||
	    (rc = get_i(R, mesh, "dp", 0, in->layout.dp - 1, &C->dp, ctx)) ||
	    (rc = get_pair(R, c, "offset", 0, INT_MAX, C->off, ctx)) ||
	    (rc = get_pair(R, c, "shape", 1, INT_MAX, C->shape, ctx)) ||
	    (rc = get_str(R, c, "file", &file, ctx)) ||
	    (rc = get_int(R, c, "byte_offset", 0, INT64_MAX, &v, ctx)))
		return rc;
	C->byte_offset = (uint64_t)v;
	if ((rc = get_int(R, c, "byte_length", 0, INT64_MAX, &v, ctx)))
		return rc;
	C->byte_length = (uint64_t)v;
	if ((rc = get_int(R, c, "crc32", 0, UINT32_MAX, &v, ctx)))
		return rc;
	C->crc32 = (uint32_t)v;
	if (C->off[0] > T->rows - C->shape[0] || C->off[1] > T->cols - C->shape[1])
		return bad(R, ctx, "its rectangle reaches outside the tensor", NULL);
	/* The recorded split names the stored layout's axis: chunks must span
	 * the other axis whole. */
	if ((T->axis == 1 && (C->off[0] != 0 || C->shape[0] != T->rows)) ||
	    (T->axis == 0 && (C->off[1] != 0 || C->shape[1] != T->cols)) ||
	    (T->axis < 0 && (C->shape[0] != T->rows || C->shape[1] != T->cols)))
		return bad(
		    R, ctx,
		    T->axis < 0
		        ? "a replicated tensor's chunk must hold all of it"
		        : "the chunk does not span the whole of the axis its split leaves uncut",
		    NULL);
	if (T->axis >= 0 && (C->off[T->axis] % T->unit || C->shape[T->axis] % T->unit))
		return bad(R, ctx, "the chunk cuts through a unit of its split (a head)", NULL);
	C->file = file_named(ck, file);
	if (C->file < 0)
		return bad(R, ctx, "its \"file\" is not in \"files\"", NULL);
	uint64_t want = (uint64_t)NSTATES * (uint64_t)C->shape[0] * (uint64_t)C->shape[1] * FL;
	if (C->byte_length != want) {
		char msg[160];
		snprintf(msg, sizeof msg,
		         "\"byte_length\" is %llu, but 3 states of %d x %d float32 take %llu",
		         (unsigned long long)C->byte_length, C->shape[0], C->shape[1],
		         (unsigned long long)want);
		return bad(R, ctx, msg, NULL);
	}
	if (C->byte_offset > ck->files[C->file].bytes ||
	    C->byte_length > ck->files[C->file].bytes - C->byte_offset)
		return bad(R, ctx, "its byte range reaches past the end of its file", NULL);
	return SL_OK;
}

static int tiling_axis; /* qsort has no context; set just around it */

static int cmp_chunk_on_axis(const void *a, const void *b)
{
	const sl_ckpt_chunk *x = *(const sl_ckpt_chunk *const *)a,
	                    *y = *(const sl_ckpt_chunk *const *)b;
	int k = tiling_axis;
	return (x->off[k] > y->off[k]) - (x->off[k] < y->off[k]);
}

/* The chunks tile the tensor: inside it (checked per chunk), no two
 * overlap, and their areas add up to the whole.  Every chunk spans the
 * axis its split leaves uncut (checked per chunk), so the question is one
 * of intervals along the cut axis: sorted, each must start at or after
 * the end of the one before. */
static int check_tiling(struct rd *R, const sl_ckpt_tensor *T)
{
	uint64_t area = 0;
	for (int i = 0; i < T->nchunks; i++)
		area += (uint64_t)T->chunks[i].shape[0] * (uint64_t)T->chunks[i].shape[1];
	const sl_ckpt_chunk **c = malloc((size_t)T->nchunks * sizeof *c);
	if (!c)
		return sl_fail(R->err, SL_ENOMEM, "out of host memory");
	for (int i = 0; i < T->nchunks; i++)
		c[i] = &T->chunks[i];
	int k = T->axis < 0 ? 0 : T->axis; /* replicated: every chunk is the whole */
	tiling_axis = k;
	qsort(c, (size_t)T->nchunks, sizeof *c, cmp_chunk_on_axis);
	for (int i = 1; i < T->nchunks; i++) {
		const sl_ckpt_chunk *a = c[i - 1], *b = c[i];
		int o[2], s[2];
		if (rect_meet(a->off, a->shape, b->off, b->shape, o, s)) {
			int lo = a->id < b->id ? a->id : b->id, hi = a->id < b->id ? b->id : a->id;
			free(c);
			return sl_fail(R->err, SL_EINVAL,
			               "%s: tensor %s: chunks %d and %d overlap at row %d, column %d",
			               R->where, T->name, lo, hi, o[0], o[1]);
		}
	}
	free(c);
	if (area != (uint64_t)T->rows * (uint64_t)T->cols)
		return sl_fail(R->err, SL_EINVAL,
		               "%s: tensor %s: its chunks cover %llu of its %llu elements (a chunk "
		               "is missing)",
		               R->where, T->name, (unsigned long long)area,
		               (unsigned long long)T->rows * (unsigned long long)T->cols);
	return SL_OK;
}

static int parse_tensors(struct rd *R, json_t *root, sl_ckpt *ck)
{
	json_t *a;
	int rc = get_arr(R, root, "tensors", &a, "");
	if (rc)
		return rc;
	const sl_model_spec *m = &ck->info.model;
	int nt = sl_model_ntensors(m);
	if (json_array_size(a) != (size_t)nt) {
		char msg[128];
		snprintf(msg, sizeof msg, "%zu tensors listed, but the architecture has %d",
		         json_array_size(a), nt);
		return bad(R, "", msg, NULL);
	}
	ck->tensors = calloc((size_t)nt, sizeof *ck->tensors);
	if (!ck->tensors)
		return sl_fail(R->err, SL_ENOMEM, "out of host memory");
	ck->info.ntensors = nt;
	int id = 0;
	for (int t = 0; t < nt; t++) {
		json_t *o = json_array_get(a, (size_t)t);
		sl_ckpt_tensor *T = &ck->tensors[t];
		sl_tensor_info ti;
		sl_model_tensor(m, t, &ti);
		char ctx[96];
		snprintf(ctx, sizeof ctx, "tensors[%d]", t);
		if (!json_is_object(o))
			return bad(R, ctx, "must be an object", NULL);
		const char *name, *s;
		int shape[2];
		if ((rc = get_str(R, o, "name", &name, ctx)))
			return rc;
		char esc[64];
		snprintf(ctx, sizeof ctx, "tensor %s", sl_escape(name, esc, sizeof esc));
		if (strcmp(name, ti.name) != 0) {
			char msg[160];
			snprintf(msg, sizeof msg, "expected %s here (model order)", ti.name);
			return bad(R, ctx, msg, NULL);
		}
		snprintf(T->name, sizeof T->name, "%s", name);
		if ((rc = get_pair(R, o, "shape", 1, 1 << 20, shape, ctx)))
			return rc;
		if (shape[0] != ti.rows || shape[1] != ti.cols) {
			char msg[160];
			snprintf(msg, sizeof msg,
			         "shape [%d, %d], but the architecture makes it [%d, %d]", shape[0],
			         shape[1], ti.rows, ti.cols);
			return bad(R, ctx, msg, NULL);
		}
		T->rows = shape[0];
		T->cols = shape[1];
		if ((rc = get_str(R, o, "dtype", &s, ctx)))
			return rc;
		if (strcmp(s, "float32") != 0)
			return bad(R, ctx, "dtype must be \"float32\"", NULL);
		if ((rc = get_str(R, o, "split", &s, ctx)))
			return rc;
		T->split = SL_TS_N;
		for (int k = 0; k < SL_TS_N; k++)
			if (strcmp(s, sl_tsplit_name((sl_tsplit)k)) == 0)
				T->split = (sl_tsplit)k;
		if (T->split == SL_TS_N)
			return bad(R, ctx, "\"split\" must be replicated, column, row or heads",
			           NULL);
		if ((rc = get_i(R, o, "axis", -1, 1, &T->axis, ctx)) ||
		    (rc = get_i(R, o, "unit", 1, INT_MAX, &T->unit, ctx)))
			return rc;
		if ((T->split == SL_TS_REPLICATED) != (T->axis < 0) ||
		    (T->split == SL_TS_COLUMN && T->axis != 1) ||
		    (T->split == SL_TS_ROW && T->axis != 0))
			return bad(R, ctx,
			           "\"axis\" does not match \"split\" (column cuts axis 1, row "
			           "axis 0, replicated none)",
			           NULL);
		json_t *ch;
		if ((rc = get_arr(R, o, "chunks", &ch, ctx)))
			return rc;
		size_t nc = json_array_size(ch);
		if (nc < 1)
			return bad(R, ctx, "\"chunks\" must list at least one chunk", NULL);
		/* One chunk per TP rank at most (DP rank 0 writes; a tensor lives on
		 * one stage). */
		if (nc > (size_t)ck->info.layout.tp)
			return sl_fail(R->err, SL_EINVAL,
			               "%s: %s: %zu chunks, more than the saved layout's tp=%d ranks",
			               R->where, ctx, nc, ck->info.layout.tp);
		T->chunks = calloc(nc, sizeof *T->chunks);
		if (!T->chunks)
			return sl_fail(R->err, SL_ENOMEM, "out of host memory");
		T->nchunks = (int)nc;
		for (size_t k = 0; k < nc; k++) {
			char cctx[128];
			snprintf(cctx, sizeof cctx, "%s: chunk %zu", ctx, k);
			if ((rc =
			         parse_chunk(R, json_array_get(ch, k), ck, T, &T->chunks[k], cctx)))
				return rc;
			T->chunks[k].tensor = t;
			if (T->chunks[k].id != id++)
				return bad(R, cctx, "\"id\" must count the chunks in order from 0",
				           NULL);
		}
		if ((rc = check_tiling(R, T)))
			return rc;
	}
	ck->info.nchunks = id;
	return SL_OK;
}

static int cmp_file_order(const void *a, const void *b)
{
	const sl_ckpt_chunk *x = *(const sl_ckpt_chunk *const *)a,
	                    *y = *(const sl_ckpt_chunk *const *)b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return (x->byte_offset > y->byte_offset) - (x->byte_offset < y->byte_offset);
}

/* All of ck's chunks in file order (file, then byte offset).  Free it. */
static const sl_ckpt_chunk **chunks_in_file_order(const sl_ckpt *ck)
{
	const sl_ckpt_chunk **r = malloc(((size_t)ck->info.nchunks + 1) * sizeof *r);
	if (!r)
		return NULL;
	size_t n = 0;
	for (int t = 0; t < ck->info.ntensors; t++)
		for (int k = 0; k < ck->tensors[t].nchunks; k++)
			r[n++] = &ck->tensors[t].chunks[k];
	qsort(r, n, sizeof *r, cmp_file_order);
	return r;
}

/* No two chunks share bytes of a file. */
static int check_bytes(struct rd *R, const sl_ckpt *ck)
{
	const sl_ckpt_chunk **r = chunks_in_file_order(ck);
	if (!r)
		return sl_fail(R->err, SL_ENOMEM, "out of host memory");
	int rc = SL_OK;
	for (int i = 1; i < ck->info.nchunks && !rc; i++)
		if (r[i]->file == r[i - 1]->file &&
		    r[i]->byte_offset < r[i - 1]->byte_offset + r[i - 1]->byte_length)
			rc = sl_fail(R->err, SL_EINVAL, "%s: chunks %d and %d share bytes of %s",
			             R->where, r[i - 1]->id, r[i]->id, ck->files[r[i]->file].name);
	free(r);
	return rc;
}

/* Every data file present, a regular file (not a symbolic link: its
 * bytes would come from anywhere), of the size recorded. */
static int check_files(const sl_ckpt *ck, sl_err *err)
{
	for (int i = 0; i < ck->info.nfiles; i++) {
		char path[PATHLEN];
		struct stat st;
		int rc = join(path, ck->dir, ck->files[i].name, err);
		if (rc)
			return rc;
		if (lstat(path, &st) != 0)
			return sl_fail(err, SL_EINVAL, "%s: data file %s is missing: %s", ck->dir,
			               ck->files[i].name, strerror(errno));
		if (S_ISLNK(st.st_mode))
			return sl_fail(err, SL_EINVAL,
			               "%s: %s is a symbolic link: a checkpoint's files must be its own",
			               ck->dir, ck->files[i].name);
		if (!S_ISREG(st.st_mode))
			return sl_fail(err, SL_EINVAL, "%s: %s is not a regular file", ck->dir,
			               ck->files[i].name);
		if ((uint64_t)st.st_size != ck->files[i].bytes)
			return sl_fail(
			    err, SL_EINVAL,
			    "%s: data file %s is %s: %llu bytes, the manifest says %llu", ck->dir,
			    ck->files[i].name,
			    (uint64_t)st.st_size < ck->files[i].bytes ? "truncated" : "too long",
			    (unsigned long long)st.st_size, (unsigned long long)ck->files[i].bytes);
	}
	return SL_OK;
}

/* Is dir a directory?  The message for each way it is not. */
static int check_is_dir(const char *dir, sl_err *err)
{
	struct stat st;
	if (!*dir)
		return sl_fail(err, SL_EINVAL, "empty checkpoint path");
	if (stat(dir, &st) != 0)
		return sl_fail(err, SL_EINVAL, "%s: %s", dir,
		               errno == ENOENT ? "no such checkpoint directory" : strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return sl_fail(err, SL_EINVAL, "%s is a file, not a checkpoint directory", dir);
	return SL_OK;
}

static int parse_manifest(sl_ckpt *ck, json_t *root, struct rd *R)
{
	const char *s;
	int rc, version;
	if (!json_is_object(root))
		return bad(R, "", "the manifest must be a JSON object", NULL);
	if ((rc = get_str(R, root, "format", &s, "")))
		return rc;
	if (strcmp(s, SL_CKPT_FORMAT) != 0)
		return bad(R, "", "\"format\" is not \"" SL_CKPT_FORMAT "\"", NULL);
	if ((rc = get_i(R, root, "format_version", 1, INT_MAX, &version, "")))
		return rc;
	if (version > SL_CKPT_FORMAT_VERSION)
		return sl_fail(R->err, SL_EINVAL,
		               "%s: format version %d is newer than this shardlab reads (%d): use "
		               "a newer shardlab",
		               R->where, version, SL_CKPT_FORMAT_VERSION);
	ck->info.format_version = version;
	long long gen;
	if ((rc = get_int(R, root, "generation", 0, 100000000, &gen, "")))
		return rc;
	ck->info.generation = (long)gen;
	sl_model_default(&ck->info.model);
	if ((rc = parse_arch(R, root, &ck->info.model)) ||
	    (rc = parse_layout(R, root, &ck->info)) || (rc = parse_training(R, root, &ck->info)))
		return rc;
	/* The limits of a run that holds values: a checkpoint holds them. */
	if ((rc = sl_model_check_values(&ck->info.model, R->err))) {
		char msg[sizeof R->err->msg];
		snprintf(msg, sizeof msg, "%s", R->err->msg);
		return sl_fail(R->err, SL_EINVAL, "%s: the model it describes is invalid: %s",
		               R->where, msg);
	}
	if ((rc = get_str(R, root, "byte_order", &s, "")))
		return rc;
	if (strcmp(s, "little") != 0)
		return bad(R, "", "\"byte_order\" must be \"little\"", NULL);
	if ((rc = get_str(R, root, "checksum", &s, "")))
		return rc;
	if (strcmp(s, "crc32") != 0)
		return bad(R, "", "\"checksum\" must be \"crc32\"", NULL);
	json_t *st;
	if ((rc = get_arr(R, root, "states", &st, "")))
		return rc;
	int ok = json_array_size(st) == NSTATES;
	for (int i = 0; ok && i < NSTATES; i++)
		ok = json_is_string(json_array_get(st, (size_t)i)) &&
		     strcmp(json_string_value(json_array_get(st, (size_t)i)), state_names[i]) == 0;
	if (!ok)
		return bad(R, "", "\"states\" must be [\"param\", \"exp_avg\", \"exp_avg_sq\"]",
		           NULL);
	if ((rc = parse_files(R, root, ck)) || (rc = parse_tensors(R, root, ck)) ||
	    (rc = check_bytes(R, ck)))
		return rc;
	return SL_OK;
}

int sl_ckpt_open(const char *dir, sl_ckpt **out, sl_err *err)
{
	*out = NULL;
	int rc = check_is_dir(dir, err);
	if (rc)
		return rc;
	sl_ckpt *ck = calloc(1, sizeof *ck);
	if (!ck)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	if (strlen(dir) >= sizeof ck->dir - 80) {
		free(ck);
		return sl_fail(err, SL_EINVAL, "%s: path too long", dir);
	}
	snprintf(ck->dir, sizeof ck->dir, "%s", dir);
	char path[PATHLEN], *text;
	size_t len;
	join(path, dir, MANIFEST, NULL);
	if ((rc = read_manifest(dir, &text, &len, err))) {
		sl_ckpt_close(ck);
		return rc;
	}
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!root) {
		char esc[96];
		sl_ckpt_close(ck);
		/* the parser quotes the text it stopped at: escaped */
		return sl_fail(err, SL_EINVAL, "%s:%d:%d: the manifest is not valid JSON (%s)",
		               path, je.line, je.column, sl_escape(je.text, esc, sizeof esc));
	}
	struct rd R = {path, err};
	rc = parse_manifest(ck, root, &R);
	if (!rc && !(ck->text = json_dumps(root, JSON_INDENT(2))))
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	json_decref(root);
	info_link(ck);
	if (!rc)
		rc = check_files(ck, err);
	if (rc) {
		sl_ckpt_close(ck);
		return rc;
	}
	*out = ck;
	return SL_OK;
}

/* ---- reading a chunk ---- */

/* Read chunk c of ck (fd open on its file) into buf (byte_length bytes)
 * and check its checksum. */
static int read_chunk(const sl_ckpt *ck, const sl_ckpt_tensor *T, const sl_ckpt_chunk *c, int fd,
                      unsigned char *buf, sl_err *err)
{
	const char *fname = ck->files[c->file].name;
	if (read_at(fd, buf, c->byte_length, c->byte_offset) != 0)
		return sl_fail(err, errno ? SL_ESYS : SL_EINVAL,
		               "%s/%s: cannot read chunk %d of %s: %s", ck->dir, fname, c->id,
		               T->name, errno ? strerror(errno) : "the file is truncated");
	uint32_t got = crc_of(buf, c->byte_length);
	if (got != c->crc32)
		return sl_fail(err, SL_EINVAL,
		               "%s/%s: checksum mismatch in chunk %d of %s (rows %d-%d, columns "
		               "%d-%d): crc32 0x%08x, the manifest says 0x%08x",
		               ck->dir, fname, c->id, T->name, c->off[0],
		               c->off[0] + c->shape[0] - 1, c->off[1], c->off[1] + c->shape[1] - 1,
		               got, c->crc32);
	return SL_OK;
}

/* A data file of ck, checked again as it is opened (it may have changed
 * since sl_ckpt_open). */
static int open_file(const sl_ckpt *ck, int f, sl_err *err)
{
	return open_data(ck->dir, ck->files[f].name, ck->files[f].bytes, err);
}

/* Checksum chunk c (fd open on its file) in reads of VERIFY_BUF bytes:
 * the memory verify needs does not grow with the chunks. */
static int verify_chunk(const sl_ckpt *ck, const sl_ckpt_chunk *c, int fd, unsigned char *buf,
                        sl_err *err)
{
	const sl_ckpt_tensor *T = &ck->tensors[c->tensor];
	const char *fname = ck->files[c->file].name;
	uLong crc = crc32_z(0L, Z_NULL, 0);
	for (uint64_t done = 0; done < c->byte_length;) {
		size_t n = c->byte_length - done < VERIFY_BUF ? (size_t)(c->byte_length - done)
		                                              : (size_t)VERIFY_BUF;
		if (read_at(fd, buf, n, c->byte_offset + done) != 0)
			return sl_fail(err, errno ? SL_ESYS : SL_EINVAL,
			               "%s/%s: cannot read chunk %d of %s: %s", ck->dir, fname, c->id,
			               T->name, errno ? strerror(errno) : "the file is truncated");
		crc = crc32_z(crc, buf, n);
		done += n;
	}
	if ((uint32_t)crc != c->crc32)
		return sl_fail(err, SL_EINVAL,
		               "%s/%s: checksum mismatch in chunk %d of %s (rows %d-%d, columns "
		               "%d-%d): crc32 0x%08x, the manifest says 0x%08x",
		               ck->dir, fname, c->id, T->name, c->off[0],
		               c->off[0] + c->shape[0] - 1, c->off[1], c->off[1] + c->shape[1] - 1,
		               (uint32_t)crc, c->crc32);
	return SL_OK;
}

int sl_ckpt_verify(const sl_ckpt *ck, sl_err *err)
{
	int rc = check_files(ck, err);
	if (rc)
		return rc;
	unsigned char *buf = malloc(VERIFY_BUF);
	const sl_ckpt_chunk **order = chunks_in_file_order(ck);
	if (!buf || !order)
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	int fd = -1, at = -1;
	for (int i = 0; i < ck->info.nchunks && !rc; i++) {
		if (order[i]->file != at) {
			if (fd >= 0)
				close(fd);
			at = order[i]->file;
			if ((fd = open_file(ck, at, err)) < 0) {
				rc = SL_EINVAL;
				break;
			}
		}
		rc = verify_chunk(ck, order[i], fd, buf, err);
	}
	if (fd >= 0)
		close(fd);
	free(order);
	free(buf);
	return rc;
}

int sl_ckpt_check_target(const sl_ckpt *ck, const sl_model_spec *m, const sl_layout *l, int ndev,
                         sl_err *err)
{
	const sl_model_spec *s = &ck->info.model;
	if (s->layers != m->layers || s->hidden != m->hidden || s->ffn != m->ffn ||
	    s->heads != m->heads)
		return sl_fail(
		    err, SL_EINVAL,
		    "%s holds another architecture: %d layers, hidden %d, ffn %d, %d heads; the "
		    "model being trained has %d layers, hidden %d, ffn %d, %d heads",
		    ck->dir, s->layers, s->hidden, s->ffn, s->heads, m->layers, m->hidden, m->ffn,
		    m->heads);
	sl_err e = {0};
	if (sl_layout_check(m, l, ndev, &e))
		return sl_fail(
		    err, SL_EINVAL,
		    "%s (saved at tp=%d pp=%d dp=%d) cannot be resharded to tp=%d pp=%d dp=%d: %s",
		    ck->dir, ck->info.layout.tp, ck->info.layout.pp, ck->info.layout.dp, l->tp,
		    l->pp, l->dp, e.msg);
	return SL_OK;
}

/* ---- the work of one device ---- */

/* A read: stored chunk ch, kept (rectangle o, s) for shard `shard` of the device. */
struct rmove {
	sl_ckpt_move mv;
	int shard;
	const sl_ckpt_tensor *T;
	const sl_ckpt_chunk *ch;
};

struct load {
	const sl_ckpt *ck;
	sl_train *tr;
	struct rmove *mv; /* all devices' reads, by device */
	int nmv;
	int first[SL_MAX_DEVICES + 1];
	float *stage[SL_MAX_DEVICES][NSTATES]; /* each device's new flat arrays, full length */
	uint64_t maxbytes[SL_MAX_DEVICES];
};

struct save {
	sl_train *tr;
	sl_ckpt plan;                /* what goes into the manifest */
	char work[PATHLEN];          /* the directory the files go into */
	int created[SL_MAX_DEVICES]; /* device's file was created (remove it on failure) */
};

struct job {
	struct load *L;
	struct save *S;
	const sl_ckpt_opts *o;
	int commit_each; /* reshard: each device commits its own new state before saving */
};

static int fault(const sl_ckpt_opts *o, sl_ckpt_point at, int dev, sl_err *err)
{
	if (o->fault && o->fault(o->fault_ctx, at, dev))
		return sl_fail(err, SL_ESYS, "the save was interrupted %s (fault injection)",
		               sl_ckpt_point_name(at));
	return SL_OK;
}

static int build_reads(struct load *L, sl_err *err)
{
	const sl_ckpt *ck = L->ck;
	const sl_layout *l = sl_train_layout(L->tr);
	const sl_model_spec *m = sl_train_model(L->tr);
	int ndev = l->tp * l->pp * l->dp, cap = 0;
	for (int d = 0; d < ndev; d++) {
		L->first[d] = L->nmv;
		sl_dev_state st = sl_train_dev_state(L->tr, d);
		for (int i = 0; i < st.nshards; i++) {
			const sl_shard *sh = &st.shards[i];
			sl_tensor_info ti;
			sl_model_tensor(m, sh->tensor, &ti);
			int ro[2], rs[2];
			shard_rect(&ti, sh, ro, rs);
			const sl_ckpt_tensor *T = &ck->tensors[sh->tensor];
			for (int k = 0; k < T->nchunks; k++) {
				const sl_ckpt_chunk *c = &T->chunks[k];
				int o[2], s[2];
				if (!rect_meet(ro, rs, c->off, c->shape, o, s))
					continue;
				if (L->nmv == cap) {
					cap = cap ? 2 * cap : 256;
					struct rmove *p = realloc(L->mv, (size_t)cap * sizeof *p);
					if (!p)
						return sl_fail(err, SL_ENOMEM,
						               "out of host memory");
					L->mv = p;
				}
				struct rmove *r = &L->mv[L->nmv++];
				r->mv = (sl_ckpt_move){.dev = d,
				                       .tensor = sh->tensor,
				                       .chunk = c->id,
				                       .off = {o[0], o[1]},
				                       .shape = {s[0], s[1]},
				                       .bytes = c->byte_length};
				r->shard = i;
				r->T = T;
				r->ch = c;
				if (c->byte_length > L->maxbytes[d])
					L->maxbytes[d] = c->byte_length;
			}
		}
	}
	L->first[ndev] = L->nmv;
	return SL_OK;
}

static void load_free(struct load *L)
{
	for (int d = 0; d < SL_MAX_DEVICES; d++)
		for (int w = 0; w < NSTATES; w++)
			free(L->stage[d][w]);
	free(L->mv);
}

/* Read everything device d's new shards need into its staging arrays,
 * checking every chunk read. */
static int load_dev(struct load *L, int d, sl_dev *dev, const sl_ckpt_opts *o, sl_err *err)
{
	const sl_ckpt *ck = L->ck;
	const sl_model_spec *m = sl_train_model(L->tr);
	sl_dev_state st = sl_train_dev_state(L->tr, d);
	uint64_t held = 0;
	int rc = SL_OK;
	if (dev) {
		held = (uint64_t)NSTATES * st.n * FL + L->maxbytes[d];
		if ((rc = sl_dev_reserve(dev, held, "the checkpoint's chunks", err)))
			return rc;
	}
	unsigned char *buf = malloc(L->maxbytes[d] ? L->maxbytes[d] : 1);
	float *vals = malloc(L->maxbytes[d] ? L->maxbytes[d] : 1);
	int *fds = malloc((size_t)(ck->info.nfiles ? ck->info.nfiles : 1) * sizeof *fds);
	if (!buf || !vals || !fds)
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	for (int f = 0; fds && f < ck->info.nfiles; f++)
		fds[f] = -1;
	for (int i = L->first[d]; i < L->first[d + 1] && !rc; i++) {
		const struct rmove *r = &L->mv[i];
		const sl_ckpt_chunk *c = r->ch;
		if (fds[c->file] < 0 && (fds[c->file] = open_file(ck, c->file, err)) < 0) {
			rc = SL_EINVAL;
			break;
		}
		if ((rc = read_chunk(ck, r->T, c, fds[c->file], buf, err)))
			break;
		if (dev) {
			char label[40];
			snprintf(label, sizeof label, "read %.34s", r->T->name);
			sl_dev_set_op(dev, c->id, -1);
			if ((rc = sl_dev_storage(dev, 0, c->byte_length, o->storage_bandwidth,
			                         label, err)))
				break;
		}
		size_t cnt = (size_t)c->shape[0] * c->shape[1];
		floats_from_le(vals, buf, NSTATES * cnt);
		const sl_shard *sh = &st.shards[r->shard];
		sl_tensor_info ti;
		sl_model_tensor(m, sh->tensor, &ti);
		int ro[2], rs[2];
		shard_rect(&ti, sh, ro, rs);
		for (int w = 0; w < NSTATES; w++)
			rect_copy(L->stage[d][w] + sh->offset, ro, rs, vals + w * cnt, c->off,
			          c->shape, r->mv.off, r->mv.shape);
	}
	for (int f = 0; fds && f < ck->info.nfiles; f++)
		if (fds[f] >= 0)
			close(fds[f]);
	free(fds);
	free(vals);
	free(buf);
	if (dev)
		sl_dev_release(dev, held);
	return rc;
}

/* Device d's staged arrays become its state (its ZeRO-1 slice of the
 * moments only). */
static void commit_dev(struct load *L, int d)
{
	sl_dev_state st = sl_train_dev_state(L->tr, d);
	memcpy(st.params, L->stage[d][0], st.n * FL);
	memset(st.grads, 0, st.n * FL);
	size_t no = st.opt_hi - st.opt_lo;
	memcpy(st.mom, L->stage[d][1] + st.opt_lo, no * FL);
	memcpy(st.var, L->stage[d][2] + st.opt_lo, no * FL);
}

/* Device d's full-length moment arrays: its own without ZeRO-1; with it,
 * its DP group's slices, gathered over the links on a cluster (to the
 * group's rank 0, the one that writes) or copied on the host. */
static int full_moments(struct save *S, int d, sl_dev *dev, float *mom, float *var, sl_err *err)
{
	const sl_layout *l = sl_train_layout(S->tr);
	sl_dev_state st = sl_train_dev_state(S->tr, d);
	if (!l->zero1) {
		memcpy(mom, st.mom, st.n * FL);
		memcpy(var, st.var, st.n * FL);
		return SL_OK;
	}
	int tp, pp, dp;
	sl_mesh_coords(l, d, &tp, &pp, &dp);
	if (dev) {
		sl_group g;
		g.n = l->dp;
		for (int q = 0; q < l->dp; q++)
			g.ranks[q] = sl_mesh_device(l, tp, pp, q);
		size_t no = st.opt_hi - st.opt_lo;
		memcpy(mom + st.opt_lo, st.mom, no * FL);
		memcpy(var + st.opt_lo, st.var, no * FL);
		sl_dev_set_op(dev, -1, -1);
		int rc = sl_gather(dev, &g, mom, st.n, NULL, 0, l->algo, err);
		return rc ? rc : sl_gather(dev, &g, var, st.n, NULL, 0, l->algo, err);
	}
	for (int q = 0; q < l->dp; q++) {
		sl_dev_state o = sl_train_dev_state(S->tr, sl_mesh_device(l, tp, pp, q));
		memcpy(mom + o.opt_lo, o.mom, (o.opt_hi - o.opt_lo) * FL);
		memcpy(var + o.opt_lo, o.var, (o.opt_hi - o.opt_lo) * FL);
	}
	return SL_OK;
}

/* Which of the plan's files device d writes, or -1. */
static int file_of(const sl_ckpt *p, int d)
{
	for (int f = 0; f < p->info.nfiles; f++)
		if (p->files[f].writer == d)
			return f;
	return -1;
}

/* Write device d's chunks into its file and sync it; fill their checksums. */
static int save_dev(struct save *S, int d, sl_dev *dev, const sl_ckpt_opts *o, sl_err *err)
{
	const sl_layout *l = sl_train_layout(S->tr);
	sl_dev_state st = sl_train_dev_state(S->tr, d);
	sl_ckpt *p = &S->plan;
	int f = file_of(p, d);
	if (f < 0 && !l->zero1)
		return SL_OK; /* nothing to write, no gather to join */
	size_t maxc = 0;
	for (int i = 0; i < st.nshards; i++)
		if (st.shards[i].count > maxc)
			maxc = st.shards[i].count;
	uint64_t held = (2 * st.n + NSTATES * maxc) * FL;
	int rc = SL_OK;
	if (dev && (rc = sl_dev_reserve(dev, held, "the checkpoint's write buffers", err)))
		return rc;
	float *mom = malloc((st.n ? st.n : 1) * FL), *var = malloc((st.n ? st.n : 1) * FL);
	size_t bufn = NSTATES * maxc;
	unsigned char *buf = malloc((bufn ? bufn : 1) * FL);
	int fd = -1;
	if (!mom || !var || !buf)
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	if (!rc)
		rc = full_moments(S, d, dev, mom, var, err);
	char path[PATHLEN];
	if (!rc && f >= 0 && !(rc = join(path, S->work, p->files[f].name, err))) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			rc = sl_fail(err, SL_ESYS, "cannot create %s: %s", path, strerror(errno));
		else
			S->created[d] = 1;
	}
	for (int i = 0; i < st.nshards && !rc && f >= 0; i++) {
		if (!writes_of(&st, i))
			continue;
		const sl_shard *sh = &st.shards[i];
		sl_ckpt_tensor *T = &p->tensors[sh->tensor];
		sl_ckpt_chunk *c = NULL;
		for (int k = 0; k < T->nchunks; k++)
			if (T->chunks[k].owner == d)
				c = &T->chunks[k];
		if (!c) {
			rc = sl_fail(err, SL_EINVAL, "no chunk of %s planned for device %d",
			             T->name, d);
			break;
		}
		const float *src[NSTATES] = {st.params + sh->offset, mom + sh->offset,
		                             var + sh->offset};
		for (int w = 0; w < NSTATES; w++)
			floats_to_le(buf + w * sh->count * FL, src[w], sh->count);
		c->crc32 = crc_of(buf, c->byte_length);
		if (write_at(fd, buf, c->byte_length, c->byte_offset) != 0) {
			rc = sl_fail(err, SL_ESYS, "cannot write %s: %s", path, strerror(errno));
			break;
		}
		if (dev) {
			char label[40];
			snprintf(label, sizeof label, "write %.33s", T->name);
			sl_dev_set_op(dev, c->id, -1);
			if ((rc = sl_dev_storage(dev, 1, c->byte_length, o->storage_bandwidth,
			                         label, err)))
				break;
		}
		rc = fault(o, SL_CKPT_AT_CHUNK, d, err);
	}
	if (fd >= 0) {
		if (!rc && fsync(fd) != 0)
			rc = sl_fail(err, SL_ESYS, "cannot sync %s: %s", path, strerror(errno));
		if (close(fd) != 0 && !rc)
			rc = sl_fail(err, SL_ESYS, "cannot close %s: %s", path, strerror(errno));
		if (!rc)
			rc = fault(o, SL_CKPT_AT_FILE, d, err);
	}
	free(buf);
	free(var);
	free(mom);
	if (dev)
		sl_dev_release(dev, held);
	return rc;
}

static int job_prog(sl_dev *dev, void *arg, sl_err *err)
{
	struct job *J = arg;
	int d = sl_dev_id(dev), rc = SL_OK;
	if (J->L) {
		if ((rc = load_dev(J->L, d, dev, J->o, err)))
			return rc;
		if (J->commit_each)
			commit_dev(J->L, d);
	}
	if (J->S)
		rc = save_dev(J->S, d, dev, J->o, err);
	return rc;
}

/* Run the job on c's devices, or device by device on the host. */
static int run_job(struct job *J, sl_cluster *c, int ndev, sl_err *err)
{
	if (c)
		return sl_cluster_run(c, job_prog, J, err);
	int rc = SL_OK;
	for (int d = 0; d < ndev && !rc && J->L; d++)
		rc = load_dev(J->L, d, NULL, J->o, err);
	for (int d = 0; d < ndev && !rc && J->L && J->commit_each; d++)
		commit_dev(J->L, d);
	for (int d = 0; d < ndev && !rc && J->S; d++)
		rc = save_dev(J->S, d, NULL, J->o, err);
	return rc;
}

/* ---- saving: the directory dance ---- */

struct target {
	char final[PATHLEN - 100]; /* the checkpoint's name */
	char work[PATHLEN];        /* where this save writes: final, or a new directory beside it */
	int fresh;                 /* work is new, renamed onto final at the end */
	long gen;
};

/* The generation of the manifest in dir, if it is a shardlab checkpoint's
 * (read as sl_ckpt_open reads it: no link, no FIFO); anything else named
 * manifest.json (a web project's, say) is refused, never replaced. */
static int manifest_gen(const char *dir, long *gen, sl_err *err)
{
	char *text;
	size_t len;
	int rc = read_manifest(dir, &text, &len, err);
	if (rc)
		return rc;
	json_t *root = json_loadb(text, len, 0, NULL);
	free(text);
	json_t *f = json_is_object(root) ? json_object_get(root, "format") : NULL;
	if (!json_is_string(f) || strcmp(json_string_value(f), SL_CKPT_FORMAT) != 0) {
		json_decref(root);
		return sl_fail(err, SL_EINVAL,
		               "%s holds a %s that is not a shardlab checkpoint's: refusing to "
		               "write into it",
		               dir, MANIFEST);
	}
	json_t *g = json_object_get(root, "generation");
	*gen = json_is_integer(g) && json_integer_value(g) >= 0 && json_integer_value(g) < 100000000
	           ? (long)json_integer_value(g)
	           : 0;
	json_decref(root);
	return SL_OK;
}

static void parent_of(const char *path, char *out)
{
	snprintf(out, PATHLEN, "%s", path);
	char *s = strrchr(out, '/');
	if (!s)
		snprintf(out, PATHLEN, ".");
	else if (s == out)
		s[1] = '\0';
	else
		*s = '\0';
}

/* Where a save to dir goes, without touching anything: t->final, whether
 * the checkpoint is new (t->fresh: dir is missing, built beside and
 * renamed in), its generation.  An existing directory is written in place:
 * a checkpoint (its manifest a shardlab one), an empty directory, or one
 * holding only what a killed save left (data files, a temporary manifest);
 * in place, so that "." works and a directory keeps its identity. */
static int examine_target(const char *dir, struct target *t, sl_err *err)
{
	memset(t, 0, sizeof *t);
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0)
		return sl_fail(err, SL_EINVAL, "empty checkpoint path");
	if (len >= sizeof t->final)
		return sl_fail(err, SL_EINVAL, "%s: path too long", dir);
	memcpy(t->final, dir, len);
	t->final[len] = '\0';
	struct stat st;
	int exists = stat(t->final, &st) == 0;
	if (!exists && errno != ENOENT)
		return sl_fail(err, SL_ESYS, "%s: %s", t->final, strerror(errno));
	if (exists && !S_ISDIR(st.st_mode))
		return sl_fail(err, SL_EINVAL,
		               "%s is a file, not a checkpoint directory: refusing to replace it",
		               t->final);
	if (exists) {
		int has_manifest = 0, others = 0;
		long maxgen = 0;
		DIR *dp = opendir(t->final);
		if (!dp)
			return sl_fail(err, SL_ESYS, "%s: %s", t->final, strerror(errno));
		struct dirent *e;
		while ((e = readdir(dp))) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			long g = data_file_gen(e->d_name);
			if (strcmp(e->d_name, MANIFEST) == 0)
				has_manifest = 1;
			else if (g > maxgen)
				maxgen = g;
			others += !ckpt_own_name(e->d_name);
		}
		closedir(dp);
		long g = 0;
		if (has_manifest) {
			int rc = manifest_gen(t->final, &g, err);
			if (rc)
				return rc;
		} else if (others) {
			return sl_fail(err, SL_EINVAL,
			               "%s is a directory that holds no checkpoint (no %s) and is "
			               "not empty: refusing to write into it",
			               t->final, MANIFEST);
		}
		t->gen = (g > maxgen ? g : maxgen) + 1;
		snprintf(t->work, sizeof t->work, "%s", t->final);
		return SL_OK;
	}
	/* A new checkpoint: built beside, renamed in. */
	t->fresh = 1;
	t->gen = 1;
	char parent[PATHLEN];
	parent_of(t->final, parent);
	if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
		return sl_fail(err, SL_EINVAL, "%s: no directory %s to create it in", t->final,
		               parent);
	if (access(parent, W_OK) != 0)
		return sl_fail(err, SL_EINVAL, "%s: cannot write into %s", t->final, parent);
	return SL_OK;
}

int sl_ckpt_check_dest(const char *dir, sl_err *err)
{
	struct target t;
	return examine_target(dir, &t, err);
}

/* Take the save lock of an existing directory: flock on the directory
 * itself (nothing to create, nothing a link could redirect), held until
 * the save ends.  A second save into it meanwhile fails at once. */
static int lock_dir(const char *dir, int *fd, sl_err *err)
{
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return sl_fail(err, SL_ESYS, "cannot open %s: %s", dir, strerror(errno));
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return SL_OK;
	int e = errno;
	close(*fd);
	*fd = -1;
	if (e == EWOULDBLOCK)
		return sl_fail(err, SL_ESYS,
		               "%s: another save into this checkpoint is running (it holds the "
		               "directory's lock): nothing was changed",
		               dir);
	return sl_fail(err, SL_ESYS, "cannot lock %s: %s", dir, strerror(e));
}

/* Where this save writes: a new directory beside a missing dir; else dir
 * itself, locked (*lock), looked at again under the lock. */
static int prepare_target(const char *dir, struct target *t, int *lock, sl_err *err)
{
	*lock = -1;
	int rc = examine_target(dir, t, err);
	if (rc)
		return rc;
	if (!t->fresh) {
		if ((rc = lock_dir(t->final, lock, err)))
			return rc;
		/* Another save may have committed between the look and the lock. */
		if ((rc = examine_target(dir, t, err)) || t->fresh) {
			close(*lock);
			*lock = -1;
			return rc ? rc : sl_fail(err, SL_ESYS, "%s disappeared while saving", dir);
		}
		return SL_OK;
	}
	/* mkdir rather than mkdtemp: the directory gets the usual permissions. */
	for (int i = 0; i < 1000; i++) {
		snprintf(t->work, sizeof t->work, "%s.tmp-%ld-%d", t->final, (long)getpid(), i);
		if (mkdir(t->work, 0777) == 0)
			return SL_OK;
		if (errno != EEXIST)
			break;
	}
	return sl_fail(err, SL_ESYS, "cannot create a directory beside %s: %s", t->final,
	               strerror(errno));
}

/* Remove temporary directory `name` of parent (fd pfd) if it holds only
 * a checkpoint's files, each a regular file; never following a link. */
static int remove_stale(int pfd, const char *name)
{
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* a link, or not a directory: not a save's */
	int dfd = dup(fd);
	DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!dp) {
		if (dfd >= 0)
			close(dfd);
		close(fd);
		return 0;
	}
	int ok = 1;
	struct dirent *e;
	while (ok && (e = readdir(dp))) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		ok = ckpt_own_name(e->d_name) &&
		     fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	}
	if (ok) {
		rewinddir(dp);
		while ((e = readdir(dp)))
			if (ckpt_own_name(e->d_name))
				unlinkat(fd, e->d_name, 0);
	}
	closedir(dp);
	close(fd);
	return ok && unlinkat(pfd, name, AT_REMOVEDIR) == 0;
}

int sl_ckpt_clean_stale(const char *dir)
{
	char final[PATHLEN], parent[PATHLEN];
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0 || len >= sizeof final - 64)
		return 0;
	memcpy(final, dir, len);
	final[len] = '\0';
	const char *base = strrchr(final, '/');
	base = base ? base + 1 : final;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return 0;
	parent_of(final, parent);
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return 0;
	int dfd = dup(pfd);
	DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!dp) {
		if (dfd >= 0)
			close(dfd);
		close(pfd);
		return 0;
	}
	size_t bl = strlen(base);
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(dp))) {
		const char *n = e->d_name;
		long pid = 0;
		int k = -1;
		char want[PATHLEN];
		/* exactly NAME.tmp-PID-N, as prepare_target makes them */
		if (strncmp(n, base, bl) != 0 || strncmp(n + bl, ".tmp-", 5) != 0 ||
		    sscanf(n + bl + 5, "%ld-%d", &pid, &k) != 2 || pid <= 0 || k < 0)
			continue;
		snprintf(want, sizeof want, "%s.tmp-%ld-%d", base, pid, k);
		if (strcmp(want, n) != 0 || pid == (long)getpid())
			continue;
		/* only a dead process's: its save can never finish */
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		removed += remove_stale(pfd, n);
	}
	closedir(dp);
	close(pfd);
	return removed;
}

/* Undo a save that failed before its commit. */
static void abandon(const struct target *t, struct save *S)
{
	char path[PATHLEN];
	for (int f = 0; f < S->plan.info.nfiles; f++)
		if (S->created[S->plan.files[f].writer] &&
		    join(path, t->work, S->plan.files[f].name, NULL) == 0)
			unlink(path);
	if (join(path, t->work, MANIFEST_TMP, NULL) == 0)
		unlink(path);
	if (t->fresh) {
		if (join(path, t->work, MANIFEST, NULL) == 0)
			unlink(path);
		rmdir(t->work);
	}
}

static int write_manifest(const struct target *t, const sl_ckpt *plan, const sl_ckpt_opts *o,
                          sl_err *err)
{
	char tmp[PATHLEN], fin[PATHLEN];
	join(tmp, t->work, MANIFEST_TMP, NULL);
	join(fin, t->work, MANIFEST, NULL);
	/* Under the lock a temporary manifest is a dead save's (or planted):
	 * remove the name (a link goes, not what it points to) and create ours
	 * new, never through a link. */
	if (unlink(tmp) != 0 && errno != ENOENT)
		return sl_fail(err, SL_ESYS, "cannot remove the stale %s: %s", tmp, strerror(errno));
	json_t *root = manifest_json(plan);
	if (!root)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		json_decref(root);
		return sl_fail(err, SL_ESYS, "cannot create %s: %s", tmp, strerror(errno));
	}
	char *text = json_dumps(root, JSON_INDENT(2));
	json_decref(root);
	int rc = SL_OK;
	if (!text)
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	else if (write_at(fd, (const unsigned char *)text, strlen(text), 0) != 0 ||
	         write_at(fd, (const unsigned char *)"\n", 1, strlen(text)) != 0 || fsync(fd) != 0)
		rc = sl_fail(err, SL_ESYS, "cannot write %s: %s", tmp, strerror(errno));
	free(text);
	if (close(fd) != 0 && !rc)
		rc = sl_fail(err, SL_ESYS, "cannot close %s: %s", tmp, strerror(errno));
	if (!rc)
		rc = fault(o, SL_CKPT_AT_MANIFEST, -1, err);
	if (rc || !t->fresh)
		return rc;
	/* In a new directory nothing is live yet: the manifest takes its name now. */
	if (rename(tmp, fin) != 0)
		return sl_fail(err, SL_ESYS, "cannot rename %s: %s", tmp, strerror(errno));
	return SL_OK;
}

/* After the commit: remove the data files no manifest refers to any more
 * (names exactly a save's, so nothing else in the directory). */
static int remove_old(const struct target *t, const sl_ckpt *plan, const sl_ckpt_opts *o,
                      sl_err *err)
{
	DIR *dp = opendir(t->work);
	if (!dp)
		return SL_OK; /* leftovers are harmless; the next save removes them */
	struct dirent *e;
	int rc = SL_OK, removed = 0;
	while (!rc && (e = readdir(dp))) {
		if (data_file_gen(e->d_name) < 0)
			continue;
		int live = 0;
		for (int f = 0; f < plan->info.nfiles; f++)
			live |= strcmp(plan->files[f].name, e->d_name) == 0;
		char path[PATHLEN];
		if (live || join(path, t->work, e->d_name, NULL))
			continue;
		if (unlink(path) == 0) {
			removed = 1;
			rc = fault(o, SL_CKPT_AT_CLEANUP, -1, err);
		}
	}
	closedir(dp);
	if (removed)
		sync_dir(t->work);
	return rc;
}

/* The save into target t (prepared, locked when in place). */
static int save_locked(struct job *J, struct save *S, sl_cluster *c, struct target *tp,
                       sl_err *err)
{
	struct target t = *tp;
	const sl_layout *l = sl_train_layout(S->tr);
	int ndev = l->tp * l->pp * l->dp;
	int rc = plan_save(S->tr, t.gen, &S->plan, err);
	if (rc) {
		if (t.fresh)
			rmdir(t.work);
		return rc;
	}
	snprintf(S->work, sizeof S->work, "%s", t.work);
	rc = run_job(J, c, ndev, err);
	if (!rc)
		rc = write_manifest(&t, &S->plan, J->o, err);
	if (!rc && sync_dir(t.work) != 0)
		rc = sl_fail(err, SL_ESYS, "cannot sync %s: %s", t.work, strerror(errno));
	if (!rc)
		rc = fault(J->o, SL_CKPT_AT_COMMIT, -1, err);
	if (!rc) {
		char from[PATHLEN], to[PATHLEN];
		if (t.fresh) {
			snprintf(from, sizeof from, "%s", t.work);
			snprintf(to, sizeof to, "%s", t.final);
		} else {
			join(from, t.work, MANIFEST_TMP, NULL);
			join(to, t.work, MANIFEST, NULL);
		}
		if (rename(from, to) != 0) {
			if (t.fresh && (errno == ENOTEMPTY || errno == EEXIST))
				rc = sl_fail(err, SL_ESYS,
				             "%s appeared while this save was writing (another save?): "
				             "it was left as it is",
				             t.final);
			else
				rc = sl_fail(err, SL_ESYS, "cannot rename %s to %s: %s", from, to,
				             strerror(errno));
		}
	}
	if (rc) {
		abandon(&t, S);
		return rc;
	}
	/* Committed: from here the new checkpoint is the one under the name. */
	char parent[PATHLEN];
	parent_of(t.final, parent);
	if (sync_dir(t.fresh ? parent : t.work) != 0)
		return sl_fail(err, SL_ESYS, "saved %s, but syncing its directory failed: %s",
		               t.final, strerror(errno));
	if ((rc = fault(J->o, SL_CKPT_AT_COMMITTED, -1, err)))
		return rc;
	/* A new directory holds this save's files only; in place, the old
	 * generation goes (still under the lock). */
	return t.fresh ? SL_OK : remove_old(&t, &S->plan, J->o, err);
}

static int save_run(struct job *J, struct save *S, sl_cluster *c, const char *dir, sl_err *err)
{
	struct target t;
	int lock;
	sl_ckpt_clean_stale(dir);
	int rc = prepare_target(dir, &t, &lock, err);
	if (rc)
		return rc;
	rc = save_locked(J, S, c, &t, err);
	if (lock >= 0)
		close(lock); /* releases the lock */
	return rc;
}

/* A timing-only state or cluster holds or moves no values: nothing to save,
 * load or reshard (the caller is told, rather than writing zeros). */
static int need_values(const sl_train *tr, const sl_cluster *c, sl_err *err)
{
	if ((tr && !sl_train_has_values(tr)) || (c && sl_cluster_config_of(c)->timing_only))
		return sl_fail(err, SL_EINVAL,
		               "a timing-only run holds no values: checkpoints need a full run");
	return SL_OK;
}

int sl_ckpt_save(sl_train *tr, sl_cluster *c, const char *dir, const sl_ckpt_opts *o, sl_err *err)
{
	sl_ckpt_opts def;
	if (!o) {
		sl_ckpt_opts_default(&def);
		o = &def;
	}
	if (need_values(tr, c, err))
		return SL_EINVAL;
	const sl_layout *l = sl_train_layout(tr);
	if (c && sl_cluster_devices(c) != l->tp * l->pp * l->dp)
		return sl_fail(err, SL_EINVAL, "the layout has %d devices but the cluster %d",
		               l->tp * l->pp * l->dp, sl_cluster_devices(c));
	struct save *S = calloc(1, sizeof *S);
	if (!S)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	S->tr = tr;
	struct job J = {.S = S, .o = o};
	int rc = save_run(&J, S, c, dir, err);
	ckpt_free_parts(&S->plan);
	free(S);
	return rc;
}

/* ---- loading ---- */

static int load_prepare(struct load *L, const sl_ckpt *ck, sl_train *tr, sl_err *err)
{
	const sl_layout *l = sl_train_layout(tr);
	int ndev = l->tp * l->pp * l->dp;
	memset(L, 0, sizeof *L);
	L->ck = ck;
	L->tr = tr;
	int rc = sl_ckpt_check_target(ck, sl_train_model(tr), l, ndev, err);
	if (!rc)
		rc = build_reads(L, err);
	for (int d = 0; d < ndev && !rc; d++) {
		sl_dev_state st = sl_train_dev_state(tr, d);
		for (int w = 0; w < NSTATES; w++)
			if (!(L->stage[d][w] = calloc(st.n ? st.n : 1, FL)))
				return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	return rc;
}

int sl_ckpt_load(sl_train *tr, sl_cluster *c, const sl_ckpt *ck, const sl_ckpt_opts *o, sl_err *err)
{
	sl_ckpt_opts def;
	if (!o) {
		sl_ckpt_opts_default(&def);
		o = &def;
	}
	if (need_values(tr, c, err))
		return SL_EINVAL;
	const sl_layout *l = sl_train_layout(tr);
	int ndev = l->tp * l->pp * l->dp;
	if (c && sl_cluster_devices(c) != ndev)
		return sl_fail(err, SL_EINVAL, "the layout has %d devices but the cluster %d", ndev,
		               sl_cluster_devices(c));
	struct load *L = malloc(sizeof *L);
	if (!L)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	int rc = check_files(ck, err);
	if (!rc)
		rc = load_prepare(L, ck, tr, err);
	else
		memset(L, 0, sizeof *L);
	struct job J = {.L = L, .o = o};
	if (!rc)
		rc = run_job(&J, c, ndev, err);
	if (!rc) {
		/* Every chunk was read and checked: now, and only now, the state changes. */
		for (int d = 0; d < ndev; d++)
			commit_dev(L, d);
		sl_train_set_step(tr, ck->info.step);
	}
	load_free(L);
	free(L);
	return rc;
}

int sl_ckpt_ref_init(sl_ref *r, const sl_ckpt *ck, const sl_model_spec *m, sl_err *err)
{
	int rc = sl_ref_init(r, m, err);
	if (rc)
		return rc;
	sl_layout l;
	sl_layout_default(&l);
	sl_train *tr = sl_train_create(m, &l, 1, err);
	if (!tr) {
		sl_ref_free(r);
		return err ? err->code : SL_EINVAL;
	}
	rc = sl_ckpt_load(tr, NULL, ck, NULL, err);
	if (!rc && sl_train_gather(tr, r->params, r->mom, r->var) != SL_OK)
		rc = sl_fail(err, SL_EINVAL, "cannot gather the state loaded from %s", ck->dir);
	sl_train_destroy(tr);
	if (rc) {
		sl_ref_free(r);
		return rc;
	}
	r->step = ck->info.step;
	return SL_OK;
}

int sl_ckpt_reshard(const sl_ckpt *ck, const sl_layout *l, sl_cluster *c, const char *out,
                    const sl_ckpt_opts *o, sl_err *err)
{
	sl_ckpt_opts def;
	if (!o) {
		sl_ckpt_opts_default(&def);
		o = &def;
	}
	const sl_model_spec *m = &ck->info.model;
	int ndev = l->tp * l->pp * l->dp;
	int rc = sl_ckpt_check_target(ck, m, l, ndev, err);
	if (rc || (rc = need_values(NULL, c, err)))
		return rc;
	if (c && sl_cluster_devices(c) != ndev)
		return sl_fail(err, SL_EINVAL, "the layout has %d devices but the cluster %d", ndev,
		               sl_cluster_devices(c));
	if ((rc = check_files(ck, err)))
		return rc;
	sl_train *tr = sl_train_create(m, l, ndev, err);
	if (!tr)
		return err ? err->code : SL_EINVAL;
	sl_train_set_step(tr, ck->info.step);
	struct load *L = malloc(sizeof *L);
	struct save *S = calloc(1, sizeof *S);
	if (!L || !S) {
		free(L);
		free(S);
		sl_train_destroy(tr);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	rc = load_prepare(L, ck, tr, err);
	S->tr = tr;
	struct job J = {.L = L, .S = S, .o = o, .commit_each = 1};
	if (!rc)
		rc = save_run(&J, S, c, out, err);
	ckpt_free_parts(&S->plan);
	free(S);
	load_free(L);
	free(L);
	sl_train_destroy(tr);
	return rc;
}

/* ---- training with periodic saves ---- */

/* Fold segment r (r->steps steps) into the running total t. */
static int report_add(sl_train_report *t, const sl_train_report *r)
{
	int n = t->steps + r->steps;
	double *l = realloc(t->losses, (size_t)n * sizeof *l);
	if (!l)
		return SL_ENOMEM;
	memcpy(l + t->steps, r->losses, (size_t)r->steps * sizeof *l);
	t->losses = l;
	if (t->steps == 0) {
		t->first_step = r->first_step;
		t->ndev = r->ndev;
	}
	double a = t->steps, b = r->steps;
	/* idle share: of all devices' time, i.e. weighted by each segment's time */
	double ta = a * t->step_s, tb = b * r->step_s;
	t->idle_fraction =
	    ta + tb > 0 ? (t->idle_fraction * ta + r->idle_fraction * tb) / (ta + tb) : 0;
	t->step_s = (t->step_s * a + r->step_s * b) / n;
	t->pipeline_s = (t->pipeline_s * a + r->pipeline_s * b) / n;
	t->ideal_s = (t->ideal_s * a + r->ideal_s * b) / n;
	t->flops_per_step = (t->flops_per_step * a + r->flops_per_step * b) / n;
	t->bubble_fraction = t->ideal_s > 0 ? (t->pipeline_s - t->ideal_s) / t->ideal_s : 0;
	if (t->bubble_fraction < 0)
		t->bubble_fraction = 0;
	for (int i = 0; i < r->ndev; i++) {
		sl_train_dev *d = &t->dev[i];
		const sl_train_dev *e = &r->dev[i];
		d->tp = e->tp;
		d->pp = e->pp;
		d->dp = e->dp;
		d->params_bytes = e->params_bytes;
		d->grads_bytes = e->grads_bytes;
		d->optimizer_bytes = e->optimizer_bytes;
		if (e->act_peak_bytes > d->act_peak_bytes)
			d->act_peak_bytes = e->act_peak_bytes;
		if (e->workspace_peak_bytes > d->workspace_peak_bytes)
			d->workspace_peak_bytes = e->workspace_peak_bytes;
		if (e->mem_peak_bytes > d->mem_peak_bytes)
			d->mem_peak_bytes = e->mem_peak_bytes;
		d->compute_s = (d->compute_s * a + e->compute_s * b) / n;
		d->comm_s = (d->comm_s * a + e->comm_s * b) / n;
		d->flops = (d->flops * a + e->flops * b) / n;
		d->pipe_busy_s = (d->pipe_busy_s * a + e->pipe_busy_s * b) / n;
		d->idle_s = t->step_s - d->compute_s - d->comm_s;
		for (int k = 0; k < SL_TR_NKINDS; k++) {
			d->sent[k] = (uint64_t)((d->sent[k] * a + e->sent[k] * b) / n + 0.5);
			d->received[k] =
			    (uint64_t)((d->received[k] * a + e->received[k] * b) / n + 0.5);
		}
	}
	t->steps = n;
	return SL_OK;
}

int sl_ckpt_train_run(sl_train *tr, sl_cluster *c, int steps, const char *dir, int every,
                      const sl_ckpt_opts *o, sl_train_report *rep, sl_err *err)
{
	memset(rep, 0, sizeof *rep);
	if (steps < 1)
		return sl_fail(err, SL_EINVAL, "--steps=%d is out of range", steps);
	if (every < 0)
		return sl_fail(err, SL_EINVAL, "--save-every=%d must not be negative", every);
	if (need_values(tr, c, err))
		return SL_EINVAL;
	int done = 0, rc = SL_OK;
	while (done < steps && !rc) {
		int n = every > 0 && every < steps - done ? every : steps - done;
		sl_train_report seg;
		if ((rc = sl_train_run(tr, c, n, &seg, err)))
			break;
		if (report_add(rep, &seg))
			rc = sl_fail(err, SL_ENOMEM, "out of host memory");
		sl_train_report_free(&seg);
		done += n;
		if (!rc && dir)
			rc = sl_ckpt_save(tr, c, dir, o, err);
	}
	if (rc)
		sl_train_report_free(rep);
	return rc;
}

/* ---- plans ---- */

struct wsort {
	int file;
	uint64_t off;
	sl_ckpt_move mv;
};

static int cmp_wsort(const void *a, const void *b)
{
	const struct wsort *x = a, *y = b;
	if (x->file != y->file)
		return x->file - y->file;
	return (x->off > y->off) - (x->off < y->off);
}

int sl_ckpt_write_plan(const sl_train *tr, sl_ckpt_move **out, int *n, sl_err *err)
{
	*out = NULL;
	*n = 0;
	sl_ckpt p;
	memset(&p, 0, sizeof p);
	/* Planning only reads the state. */
	int rc = plan_save((sl_train *)tr, 1, &p, err);
	struct wsort *w = rc ? NULL : malloc(((size_t)p.info.nchunks + 1) * sizeof *w);
	sl_ckpt_move *mv = rc ? NULL : malloc(((size_t)p.info.nchunks + 1) * sizeof *mv);
	if (!rc && (!w || !mv))
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	int k = 0;
	for (int t = 0; t < p.info.ntensors && !rc; t++)
		for (int j = 0; j < p.tensors[t].nchunks; j++) {
			const sl_ckpt_chunk *c = &p.tensors[t].chunks[j];
			w[k++] = (struct wsort){c->file,
			                        c->byte_offset,
			                        {.dev = c->owner,
			                         .tensor = t,
			                         .chunk = c->id,
			                         .off = {c->off[0], c->off[1]},
			                         .shape = {c->shape[0], c->shape[1]},
			                         .bytes = c->byte_length}};
		}
	/* Device by device, in the order each writes its file. */
	if (!rc) {
		qsort(w, (size_t)k, sizeof *w, cmp_wsort);
		for (int i = 0; i < k; i++)
			mv[i] = w[i].mv;
		*n = k;
		*out = mv;
	} else {
		free(mv);
	}
	free(w);
	ckpt_free_parts(&p);
	return rc;
}

int sl_ckpt_read_plan(const sl_ckpt *ck, const sl_train *tr, sl_ckpt_move **out, int *n,
                      sl_err *err)
{
	*out = NULL;
	*n = 0;
	const sl_layout *l = sl_train_layout(tr);
	int rc = sl_ckpt_check_target(ck, sl_train_model(tr), l, l->tp * l->pp * l->dp, err);
	if (rc)
		return rc;
	struct load L;
	memset(&L, 0, sizeof L);
	L.ck = ck;
	L.tr = (sl_train *)tr; /* only read */
	if ((rc = build_reads(&L, err))) {
		free(L.mv);
		return rc;
	}
	sl_ckpt_move *mv = malloc(((size_t)L.nmv + 1) * sizeof *mv);
	if (!mv) {
		free(L.mv);
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	}
	for (int i = 0; i < L.nmv; i++)
		mv[i] = L.mv[i].mv;
	*n = L.nmv;
	*out = mv;
	free(L.mv);
	return SL_OK;
}
