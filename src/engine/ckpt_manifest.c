/* SPDX-License-Identifier: MIT */
/* ckpt_manifest.c - a checkpoint's manifest: written from a save's plan,
 * read and checked as untrusted input (no links or FIFOs, bounded sizes,
 * checks in O(n log n), escaped strings), and the chunks verified in a
 * fixed buffer (see ckpt.h). */
#include "ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "text.h"

static const char *const state_names[NSTATES] = {"param", "exp_avg", "exp_avg_sq"};

int ckpt_join(char *out, const char *dir, const char *name, sl_err *err)
{
	int n = snprintf(out, PATHLEN, "%s/%s", dir, name);
	if (n < 0 || n >= PATHLEN)
		return sl_fail(err, SL_EINVAL, "%s/%s: path too long", dir, name);
	return SL_OK;
}

int ckpt_write_at(int fd, const unsigned char *p, size_t n, uint64_t off)
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
int ckpt_read_at(int fd, unsigned char *p, size_t n, uint64_t off)
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

/* "g000012-dev003.bin": a data file of generation 12, exactly as a save
 * names it; -1 for any other name (so "g1-dev1.bin", someone else's file,
 * is never taken for one, nor removed as an old generation). */
long ckpt_data_file_gen(const char *name)
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
int ckpt_own_name(const char *name)
{
	return strcmp(name, MANIFEST) == 0 || strcmp(name, MANIFEST_TMP) == 0 ||
	       ckpt_data_file_gen(name) >= 0;
}

/* The manifest's bytes, NUL-terminated: a regular file of the directory's
 * own.  Opened without following a symbolic link (which could point
 * anywhere) and without blocking (a FIFO would wait for a writer forever),
 * then checked to be a regular file of at most MANIFEST_MAX bytes. */
int ckpt_read_manifest(const char *dir, char **out, size_t *len, sl_err *err)
{
	char path[PATHLEN];
	*out = NULL;
	*len = 0;
	int rc = ckpt_join(path, dir, MANIFEST, err);
	if (rc)
		return rc;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return sl_fail(err, SL_EINVAL, "%s holds no checkpoint: %s is missing", dir,
			               MANIFEST);
		if (errno == ELOOP)
			return sl_fail(
			    err, SL_EINVAL,
			    "%s is a symbolic link: a checkpoint's files must be its own", path);
		return sl_fail(err, SL_EINVAL, "cannot read %s: %s", path, strerror(errno));
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = sl_fail(err, SL_EINVAL, "cannot read %s: %s", path, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		rc = sl_fail(err, SL_EINVAL, "%s is not a regular file", path);
	} else if (st.st_size > MANIFEST_MAX) {
		rc = sl_fail(err, SL_EINVAL,
		             "%s is too large for a manifest: %lld bytes (at most %ld)", path,
		             (long long)st.st_size, MANIFEST_MAX);
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

/* fd is a data file's: a regular file of `bytes` bytes.  fd, or -1 (and
 * fd closed) with err filled. */
static int check_data(int fd, const char *dir, const char *name, uint64_t bytes, sl_err *err)
{
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) != 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "it is not a regular file";
	if (!why && (uint64_t)st.st_size != bytes) {
		sl_fail(err, SL_EINVAL,
		        "%s: data file %s is %s: %llu bytes, the manifest says %llu", dir, name,
		        (uint64_t)st.st_size < bytes ? "truncated" : "too long",
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

/* Open a data file of dir for reading: a regular file of its own (as the
 * manifest), of `bytes` bytes.  The fd, or -1 with err filled and errno
 * the open's when it failed. */
static int open_data(const char *dir, const char *name, uint64_t bytes, sl_err *err)
{
	char path[PATHLEN];
	if (ckpt_join(path, dir, name, err))
		return -1;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (errno == ELOOP)
			sl_fail(err, SL_EINVAL,
			        "%s: %s is a symbolic link: a checkpoint's files must be its own",
			        dir, name);
		else if (errno == ENOENT)
			sl_fail(err, SL_EINVAL, "%s: data file %s is missing: %s", dir, name,
			        strerror(errno));
		else
			sl_fail(err, SL_EINVAL, "%s: cannot open %s: %s", dir, name,
			        strerror(errno));
		errno = e;
		return -1;
	}
	return check_data(fd, dir, name, bytes, err);
}

/* Intersection of two rectangles; 0 when empty. */
int ckpt_rect_meet(const int ao[2], const int as[2], const int bo[2], const int bs[2], int o[2],
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

void ckpt_free_parts(sl_ckpt *ck)
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

static void unpin_files(sl_ckpt *ck)
{
	for (int i = 0; ck->fds && i < ck->info.nfiles; i++)
		if (ck->fds[i] >= 0)
			close(ck->fds[i]);
	free(ck->fds);
	ck->fds = NULL;
}

void sl_ckpt_close(sl_ckpt *ck)
{
	if (!ck)
		return;
	unpin_files(ck);
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

void ckpt_info_link(sl_ckpt *ck)
{
	ck->info.tensors = ck->tensors;
	ck->info.files = ck->files;
}

/* ---- the manifest: writing ---- */

/* Version 1: multi-head attention and a GeLU MLP.  Version 2 adds
 * "kv_heads" (grouped-query attention) and "ffn_kind" (gelu or swiglu);
 * version 3 "norm" (none, layernorm or rmsnorm).  A model that an older
 * version describes is still written as that version, so an older
 * shardlab reads it; one with a norm is refused by those that know no
 * norm, not read as another function. */
static int arch_version(const sl_model_spec *m)
{
	if (m->norm != SL_NORM_NONE)
		return 3;
	return sl_model_kv_heads(m) != m->heads || m->ffn_kind != SL_FFN_GELU ? 2 : 1;
}

json_t *ckpt_manifest_json(const sl_ckpt *ck)
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
	              "version", arch_version(m), "dtype", "float32", "block", block, "layers",
	              m->layers, "hidden", m->hidden, "ffn", m->ffn, "heads", m->heads);
	if (!root)
		return NULL;
	if (arch_version(m) >= 2) {
		json_t *a = json_object_get(root, "architecture");
		json_object_set_new(a, "kv_heads", json_integer(m->kv_heads));
		json_object_set_new(a, "ffn_kind", json_string(sl_ffn_kind_name(m->ffn_kind)));
	}
	if (arch_version(m) >= 3)
		json_object_set_new(json_object_get(root, "architecture"), "norm",
		                    json_string(sl_norm_name(m->norm)));
	json_object_set_new(
	    root, "layout",
	    json_pack("{s:i, s:i, s:i, s:i, s:s, s:s, s:i, s:i, s:b, s:b, s:i, s:s}", "devices",
	              in->devices, "tp", l->tp, "pp", l->pp, "dp", l->dp, "mesh_order",
	              sl_mesh_order_name(l->order, order, sizeof order), "schedule",
	              sl_sched_name(l->schedule), "chunks", l->chunks, "microbatches",
	              l->microbatches, "sequence_parallel", l->seq_parallel, "zero1", l->zero >= 1,
	              "zero", l->zero, "algorithm", sl_algo_name(l->algo)));
	/* Uneven stages: a list's counts, or the rule's name (ends), so a
	 * reshard to another pp keeps the rule; none when even, as older
	 * manifests have none.  A load maps
	 * tensors by their global index whatever the split, so this is the
	 * layout's record, read back by sl_ckpt_open. */
	if (l->stages != SL_STAGES_EVEN) {
		json_t *st;
		if (l->stages == SL_STAGES_LIST) {
			st = json_array();
			for (int s = 0; s < l->pp; s++)
				json_array_append_new(
				    st, json_integer(sl_layout_stage_layers(m, l, s)));
		} else {
			char name[16];
			st = json_string(sl_stage_layers_name(l, name, sizeof name));
		}
		json_object_set_new(json_object_get(root, "layout"), "stage_layers", st);
	}
	json_object_set_new(
	    root, "training",
	    json_pack("{s:I, s:I, s:I, s:{s:I, s:i, s:i}, s:{s:s, s:f, s:f, s:f, s:f}}", "step",
	              (json_int_t)in->step, "adam_step", (json_int_t)in->adam_step, "seed",
	              (json_int_t)m->seed, "data", "next_batch", (json_int_t)in->next_batch,
	              "batch", m->batch, "seq", m->seq, "optimizer", "name", "adam", "lr",
	              (double)m->lr, "beta1", (double)m->beta1, "beta2", (double)m->beta2, "eps",
	              (double)m->eps));
	/* A training setting the resumed run must keep; only when used, as older
	 * manifests have none. */
	if (m->attn_dropout > 0)
		json_object_set_new(json_object_get(root, "training"), "attention_dropout",
		                    json_real(sl_float_decimal(m->attn_dropout)));
	if (m->hidden_dropout > 0)
		json_object_set_new(json_object_get(root, "training"), "hidden_dropout",
		                    json_real(sl_float_decimal(m->hidden_dropout)));
	/* The mask changes what the model computes; a manifest without it is
	 * from before it, when attention had none. */
	if (m->heads > 0)
		json_object_set_new(json_object_get(root, "training"), "attention_mask",
		                    json_string(sl_mask_name(m->mask)));
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
static int get_typed(struct rd *R, json_t *obj, const char *key, json_type want, const char *must,
                     json_t **out, const char *ctx)
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
	if (rc)
		return rc;
	/* Names are echoed in messages and listings: the rule for any file's
	 * text (text.h) holds here as in a lesson or a hardware file. */
	unsigned cp;
	size_t n = json_string_length(v);
	if (sl_text_check(json_string_value(v), n, &cp) < n) {
		char msg[200], esc[64];
		snprintf(msg, sizeof msg, "\"%s\" '%s' holds %s U+%04X", key,
		         sl_escape(json_string_value(v), esc, sizeof esc), sl_text_what(cp), cp);
		return bad(R, ctx, msg, NULL);
	}
	*out = json_string_value(v);
	return SL_OK;
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

static int parse_arch(struct rd *R, json_t *root, sl_model_spec *m, int *arch_version)
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
		snprintf(msg, sizeof msg, "architecture \"%s\" is not %s",
		         sl_escape(s, esc, sizeof esc), SL_CKPT_ARCH_NAME);
		return bad(R, "", msg, NULL);
	}
	if ((rc = get_i(R, a, "version", 1, INT_MAX, &version, "architecture")))
		return rc;
	*arch_version = version;
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
	m->kv_heads = 0;
	m->ffn_kind = SL_FFN_GELU;
	if (version >= 2) {
		if ((rc = get_i(R, a, "kv_heads", 0, 65536, &m->kv_heads, "architecture")) ||
		    (rc = get_str(R, a, "ffn_kind", &s, "architecture")))
			return rc;
		if (sl_ffn_kind_parse(s, &m->ffn_kind))
			return bad(R, "architecture", "\"ffn_kind\" must be \"gelu\" or \"swiglu\"",
			           NULL);
		if (m->kv_heads > 0 &&
		    (m->heads == 0 || m->kv_heads > m->heads || m->heads % m->kv_heads != 0))
			return bad(R, "architecture", "\"kv_heads\" must divide \"heads\"", NULL);
	}
	m->norm = SL_NORM_NONE;
	if (version >= 3) {
		if ((rc = get_str(R, a, "norm", &s, "architecture")))
			return rc;
		if (sl_norm_parse(s, &m->norm))
			return bad(R, "architecture",
			           "\"norm\" must be \"none\", \"layernorm\" or \"rmsnorm\"", NULL);
	}
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
	    (rc = get_bool(R, a, "zero1", &l->zero, "layout")))
		return rc;
	/* the stage, since ZeRO-2 and 3 (zero1 alone before) */
	if (json_object_get(a, "zero") &&
	    (rc = get_i(R, a, "zero", l->zero ? 1 : 0, l->zero ? 3 : 0, &l->zero, "layout")))
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
	/* each stage's layers, since uneven stages (even before) */
	json_t *st = json_object_get(a, "stage_layers");
	if (st && json_is_string(st)) {
		if (strcmp(json_string_value(st), "ends") != 0 &&
		    strcmp(json_string_value(st), "even") != 0)
			return bad(R, "layout", "\"stage_layers\" must be even, ends or a list",
			           NULL);
		sl_stage_layers_parse(json_string_value(st), l, NULL);
		/* a rule that leaves a stage without a layer (ends with fewer
		 * layers than stages) is no layout */
		for (int k = 0; k < l->pp; k++)
			if (sl_layout_stage_layers(&in->model, l, k) < 1)
				return bad(R, "layout",
				           "\"stage_layers\" leaves a stage without a layer", NULL);
	} else if (st) {
		size_t n = json_is_array(st) ? json_array_size(st) : 0;
		if (n != (size_t)l->pp || n > SL_MAX_STAGE_LIST)
			return bad(R, "layout",
			           "\"stage_layers\" must be a list of one count a stage", NULL);
		long sum = 0;
		for (size_t k = 0; k < n; k++) {
			json_t *v = json_array_get(st, k);
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > SL_MODEL_MAX_LAYERS)
				return bad(R, "layout",
				           "\"stage_layers\" must hold counts of 1 or more", NULL);
			l->stage_list[k] = (unsigned short)json_integer_value(v);
			sum += l->stage_list[k];
		}
		if (sum != in->model.layers)
			return bad(R, "layout", "\"stage_layers\" must add up to the layers", NULL);
		l->stages = SL_STAGES_LIST;
		l->stage_n = (int)n;
	}
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
	m->attn_dropout = 0;
	if (json_object_get(a, "attention_dropout")) {
		if ((rc = get_real(R, a, "attention_dropout", &x, "training")))
			return rc;
		if (!(x >= 0 && x <= 0.9))
			return bad(R, "training", "\"attention_dropout\" must be 0 to 0.9", NULL);
		m->attn_dropout = (float)x;
	}
	m->mask = SL_MASK_FULL;
	if (json_object_get(a, "attention_mask")) {
		const char *mk;
		if ((rc = get_str(R, a, "attention_mask", &mk, "training")))
			return rc;
		if (sl_mask_parse(mk, &m->mask))
			return bad(R, "training",
			           "\"attention_mask\" must be \"causal\" or \"full\"", NULL);
	}
	m->hidden_dropout = 0;
	if (json_object_get(a, "hidden_dropout")) {
		if ((rc = get_real(R, a, "hidden_dropout", &x, "training")))
			return rc;
		if (!(x >= 0 && x <= 0.9))
			return bad(R, "training", "\"hidden_dropout\" must be 0 to 0.9", NULL);
		m->hidden_dropout = (float)x;
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
	const int *f =
	    bsearch(&k, ck->by_name, (size_t)ck->info.nfiles, sizeof *ck->by_name, cmp_key_name);
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
		return sl_fail(
		    R->err, SL_EINVAL,
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
		if (ckpt_data_file_gen(name) < 0) {
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
		if (strcmp(ck->files[ck->by_name[i - 1]].name, ck->files[ck->by_name[i]].name) ==
		    0) {
			char ctx[48];
			int j = ck->by_name[i] > ck->by_name[i - 1] ? ck->by_name[i]
			                                            : ck->by_name[i - 1];
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
		if (ckpt_rect_meet(a->off, a->shape, b->off, b->shape, o, s)) {
			int lo = a->id < b->id ? a->id : b->id, hi = a->id < b->id ? b->id : a->id;
			free(c);
			return sl_fail(
			    R->err, SL_EINVAL,
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
			return sl_fail(
			    R->err, SL_EINVAL,
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
int ckpt_check_files(const sl_ckpt *ck, sl_err *err)
{
	for (int i = 0; ck->fds && i < ck->info.nfiles; i++) {
		/* Held open: checked by what is held, which a save may have
		 * unlinked since (its names are the next generation's). */
		int fd = fcntl(ck->fds[i], F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return sl_fail(err, SL_ESYS, "%s: %s: %s", ck->dir, ck->files[i].name,
			               strerror(errno));
		if ((fd = check_data(fd, ck->dir, ck->files[i].name, ck->files[i].bytes, err)) < 0)
			return SL_EINVAL;
		close(fd);
	}
	for (int i = 0; !ck->fds && i < ck->info.nfiles; i++) {
		char path[PATHLEN];
		struct stat st;
		int rc = ckpt_join(path, ck->dir, ck->files[i].name, err);
		if (rc)
			return rc;
		if (lstat(path, &st) != 0)
			return sl_fail(err, SL_EINVAL, "%s: data file %s is missing: %s", ck->dir,
			               ck->files[i].name, strerror(errno));
		if (S_ISLNK(st.st_mode))
			return sl_fail(
			    err, SL_EINVAL,
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
	if ((rc = parse_arch(R, root, &ck->info.model, &ck->info.arch_version)) ||
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

/* Open every data file of ck and hold it (ck->fds) from the moment the
 * manifest is read: a save that commits meanwhile removes the old
 * generation's names, not files a reader holds, so a load or a verify
 * reads the generation it opened, whole.  Without enough descriptors the
 * files are opened when read instead. */
static int pin_files(sl_ckpt *ck, sl_err *err)
{
	int n = ck->info.nfiles;
	if (!(ck->fds = malloc((size_t)(n ? n : 1) * sizeof *ck->fds)))
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	for (int i = 0; i < n; i++)
		ck->fds[i] = -1;
	for (int i = 0; i < n; i++) {
		sl_err e = {0};
		ck->fds[i] = open_data(ck->dir, ck->files[i].name, ck->files[i].bytes, &e);
		if (ck->fds[i] >= 0)
			continue;
		int why = errno;
		unpin_files(ck);
		if (why == EMFILE || why == ENFILE)
			return SL_OK;
		if (err)
			*err = e;
		return e.code;
	}
	return SL_OK;
}

/* One attempt of sl_ckpt_open; *text: the manifest it read (free it). */
static int open_once(sl_ckpt *ck, const char *dir, char **text, sl_err *err)
{
	char path[PATHLEN];
	size_t len;
	int rc;
	ckpt_join(path, dir, MANIFEST, NULL);
	if ((rc = ckpt_read_manifest(dir, text, &len, err)))
		return rc;
	json_error_t je;
	json_t *root = json_loadb(*text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		char esc[96];
		/* the parser quotes the text it stopped at: escaped */
		return sl_fail(err, SL_EINVAL, "%s:%d:%d: the manifest is not valid JSON (%s)",
		               path, je.line, je.column, sl_escape(je.text, esc, sizeof esc));
	}
	struct rd R = {path, err};
	rc = parse_manifest(ck, root, &R);
	if (!rc && !(ck->text = json_dumps(root, JSON_INDENT(2))))
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	json_decref(root);
	ckpt_info_link(ck);
	if (!rc)
		rc = ckpt_check_files(ck, err);
	if (!rc)
		rc = pin_files(ck, err);
	return rc;
}

/* A save may commit while a reader reads: its rename replaces the manifest
 * and it then removes the generation the old manifest named.  A reader
 * that failed while the manifest changed under it reads the new one; a
 * save per attempt, this many times, and it gives up saying why. */
#define OPEN_TRIES 8

int sl_ckpt_open(const char *dir, sl_ckpt **out, sl_err *err)
{
	*out = NULL;
	int rc = check_is_dir(dir, err);
	if (rc)
		return rc;
	if (strlen(dir) >= PATHLEN - 80)
		return sl_fail(err, SL_EINVAL, "%s: path too long", dir);
	for (int tries = 1;; tries++) {
		sl_ckpt *ck = calloc(1, sizeof *ck);
		if (!ck)
			return sl_fail(err, SL_ENOMEM, "out of host memory");
		snprintf(ck->dir, sizeof ck->dir, "%s", dir);
		char *seen = NULL, *now = NULL;
		size_t n;
		rc = open_once(ck, dir, &seen, err);
		if (!rc) {
			free(seen);
			*out = ck;
			return SL_OK;
		}
		sl_ckpt_close(ck);
		int changed = seen && ckpt_read_manifest(dir, &now, &n, NULL) == SL_OK &&
		              strcmp(seen, now) != 0;
		free(seen);
		free(now);
		if (!changed)
			return rc;
		if (tries == OPEN_TRIES)
			return sl_fail(err, SL_ESYS,
			               "%s: a save into it was under way (its manifest changed %d "
			               "times while it was read): try again",
			               dir, tries);
	}
}

/* ---- verifying the chunks, checking a target ---- */

/* A data file of ck, checked again as it is opened (it may have changed
 * since sl_ckpt_open). */
int ckpt_open_file(const sl_ckpt *ck, int f, sl_err *err)
{
	if (!ck->fds)
		return open_data(ck->dir, ck->files[f].name, ck->files[f].bytes, err);
	/* The file held since sl_ckpt_open, under a descriptor of the
	 * caller's own: the generation read, even if a save removed its name. */
	int fd = fcntl(ck->fds[f], F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		sl_fail(err, SL_ESYS, "%s: %s: %s", ck->dir, ck->files[f].name, strerror(errno));
		return -1;
	}
	return check_data(fd, ck->dir, ck->files[f].name, ck->files[f].bytes, err);
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
		if (ckpt_read_at(fd, buf, n, c->byte_offset + done) != 0)
			return sl_fail(err, errno ? SL_ESYS : SL_EINVAL,
			               "%s/%s: cannot read chunk %d of %s: %s", ck->dir, fname,
			               c->id, T->name,
			               errno ? strerror(errno) : "the file is truncated");
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
	int rc = ckpt_check_files(ck, err);
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
			if ((fd = ckpt_open_file(ck, at, err)) < 0) {
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
	    s->heads != m->heads || sl_model_kv_heads(s) != sl_model_kv_heads(m) ||
	    s->ffn_kind != m->ffn_kind || s->norm != m->norm)
		return sl_fail(
		    err, SL_EINVAL,
		    "%s holds another architecture: %d layers, hidden %d, %s ffn %d, %d heads "
		    "(%d key/value), norm %s; the model being trained has %d layers, hidden %d, %s "
		    "ffn %d, %d heads (%d key/value), norm %s",
		    ck->dir, s->layers, s->hidden, sl_ffn_kind_name(s->ffn_kind), s->ffn, s->heads,
		    sl_model_kv_heads(s), sl_norm_name(s->norm), m->layers, m->hidden,
		    sl_ffn_kind_name(m->ffn_kind), m->ffn, m->heads, sl_model_kv_heads(m),
		    sl_norm_name(m->norm));
	sl_err e = {0};
	if (sl_layout_check(m, l, ndev, &e))
		return sl_fail(err, SL_EINVAL,
		               "%s (saved at tp=%d pp=%d dp=%d) cannot be resharded to tp=%d pp=%d "
		               "dp=%d%s: %s",
		               ck->dir, ck->info.layout.tp, ck->info.layout.pp, ck->info.layout.dp,
		               l->tp, l->pp, l->dp, l->cp > 1 ? " with cp" : "", e.msg);
	return SL_OK;
}
