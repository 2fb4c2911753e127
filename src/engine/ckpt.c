/* SPDX-License-Identifier: MIT */
/* ckpt.c - sharded checkpoints: the devices' reads and writes (save,
 * load, reshard, periodic saves) and their plans, for views (see ckpt.h;
 * the manifest is ckpt_manifest.c's, the commit ckpt_commit.c's). */
#include "ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "coll.h"

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
	const sl_layout *l = sl_train_store_layout(tr);
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
	ckpt_info_link(ck);
	return SL_OK;
}

/* Read chunk c of ck (fd open on its file) into buf (byte_length bytes)
 * and check its checksum. */
static int read_chunk(const sl_ckpt *ck, const sl_ckpt_tensor *T, const sl_ckpt_chunk *c, int fd,
                      unsigned char *buf, sl_err *err)
{
	const char *fname = ck->files[c->file].name;
	if (ckpt_read_at(fd, buf, c->byte_length, c->byte_offset) != 0)
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

static int build_reads(struct load *L, sl_err *err)
{
	const sl_ckpt *ck = L->ck;
	const sl_layout *l = sl_train_store_layout(L->tr);
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
				if (!ckpt_rect_meet(ro, rs, c->off, c->shape, o, s))
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

/* The fields of chunk c of tensor T's events (trace.h). */
static sl_ev_io chunk_io(const sl_ckpt_tensor *T, const sl_ckpt_chunk *c, sl_io_kind kind)
{
	return (sl_ev_io){.kind = (signed char)kind,
	                  .tensor = (short)c->tensor,
	                  .chunk = (short)(c - T->chunks),
	                  .nchunks = (short)T->nchunks,
	                  .id = c->id};
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
		if (fds[c->file] < 0 && (fds[c->file] = ckpt_open_file(ck, c->file, err)) < 0) {
			rc = SL_EINVAL;
			break;
		}
		if ((rc = read_chunk(ck, r->T, c, fds[c->file], buf, err)))
			break;
		if (dev) {
			char label[40];
			snprintf(label, sizeof label, "read %.34s", r->T->name);
			sl_ev_io io = chunk_io(r->T, c, SL_IO_READ);
			sl_dev_set_op(dev, c->id, -1);
			if ((rc = sl_dev_storage(dev, 0, c->byte_length, o->storage_bandwidth, &io,
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

/* Device d's staged arrays become its state (under ZeRO its slices of the
 * moments only). */
static void commit_dev(struct load *L, int d)
{
	sl_dev_state st = sl_train_dev_state(L->tr, d);
	memcpy(st.params, L->stage[d][0], st.n * FL);
	memset(st.grads, 0, st.n * FL);
	size_t at = 0;
	for (int u = 0; u < st.nunit; u++) {
		size_t lo, cnt;
		sl_train_unit_slice(&st, u, st.dp_rank, &lo, &cnt);
		memcpy(st.mom + at, L->stage[d][1] + lo, cnt * FL);
		memcpy(st.var + at, L->stage[d][2] + lo, cnt * FL);
		at += cnt;
	}
}

/* Device d's full-length arrays: its own without ZeRO; with it, its DP
 * group's slices, gathered over the links on a cluster (to the group's rank
 * 0, the one that writes) or copied on the host.  out[0], the parameters,
 * only under ZeRO-3 (whose are fresh only in their owners' slices; NULL
 * otherwise: the device's own are whole); out[1] and out[2] the moments. */
static int full_state(struct save *S, int d, sl_dev *dev, float *out[3], sl_err *err)
{
	const sl_layout *l = sl_train_store_layout(S->tr);
	sl_dev_state st = sl_train_dev_state(S->tr, d);
	if (!l->zero) {
		memcpy(out[1], st.mom, st.n * FL);
		memcpy(out[2], st.var, st.n * FL);
		return SL_OK;
	}
	int tp, pp, dp;
	sl_mesh_coords(l, d, &tp, &pp, &dp);
	sl_group g;
	g.n = l->dp;
	for (int q = 0; q < l->dp; q++)
		g.ranks[q] = sl_mesh_device(l, tp, pp, q);
	for (int q = 0; q < l->dp; q++) {
		if (dev && q != dp)
			continue; /* the links bring the others' */
		sl_dev_state o = sl_train_dev_state(S->tr, g.ranks[q]);
		size_t at = 0;
		for (int u = 0; u < o.nunit; u++) {
			size_t lo, cnt;
			sl_train_unit_slice(&o, u, q, &lo, &cnt);
			if (out[0])
				memcpy(out[0] + lo, o.params + lo, cnt * FL);
			memcpy(out[1] + lo, o.mom + at, cnt * FL);
			memcpy(out[2] + lo, o.var + at, cnt * FL);
			at += cnt;
		}
	}
	if (!dev)
		return SL_OK;
	sl_dev_set_op(dev, -1, -1);
	for (int w = 0; w < 3; w++)
		for (int u = 0; u < st.nunit && out[w]; u++) {
			int rc = sl_gather(dev, &g, out[w] + st.ulo[u], st.ulo[u + 1] - st.ulo[u],
			                   NULL, 0, l->algo, err);
			if (rc)
				return rc;
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
	const sl_layout *l = sl_train_store_layout(S->tr);
	sl_dev_state st = sl_train_dev_state(S->tr, d);
	sl_ckpt *p = &S->plan;
	int f = file_of(p, d);
	if (f < 0 && !l->zero)
		return SL_OK; /* nothing to write, no gather to join */
	size_t maxc = 0;
	for (int i = 0; i < st.nshards; i++)
		if (st.shards[i].count > maxc)
			maxc = st.shards[i].count;
	int z3 = l->zero >= 3;
	uint64_t held = ((2 + (size_t)z3) * st.n + NSTATES * maxc) * FL;
	int rc = SL_OK;
	if (dev && (rc = sl_dev_reserve(dev, held, "the checkpoint's write buffers", err)))
		return rc;
	float *mom = malloc((st.n ? st.n : 1) * FL), *var = malloc((st.n ? st.n : 1) * FL);
	float *par = z3 ? malloc((st.n ? st.n : 1) * FL) : NULL;
	size_t bufn = NSTATES * maxc;
	unsigned char *buf = malloc((bufn ? bufn : 1) * FL);
	int fd = -1;
	if (!mom || !var || !buf || (z3 && !par))
		rc = sl_fail(err, SL_ENOMEM, "out of host memory");
	float *full[3] = {par, mom, var};
	if (!rc)
		rc = full_state(S, d, dev, full, err);
	char path[PATHLEN];
	if (!rc && f >= 0 && !(rc = ckpt_join(path, S->work, p->files[f].name, err))) {
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
		const float *src[NSTATES] = {(par ? par : st.params) + sh->offset, mom + sh->offset,
		                             var + sh->offset};
		for (int w = 0; w < NSTATES; w++)
			floats_to_le(buf + w * sh->count * FL, src[w], sh->count);
		c->crc32 = crc_of(buf, c->byte_length);
		if (ckpt_write_at(fd, buf, c->byte_length, c->byte_offset) != 0) {
			rc = sl_fail(err, SL_ESYS, "cannot write %s: %s", path, strerror(errno));
			break;
		}
		if (dev) {
			char label[40];
			snprintf(label, sizeof label, "write %.33s", T->name);
			sl_ev_io io = chunk_io(T, c, SL_IO_WRITE);
			sl_dev_set_op(dev, c->id, -1);
			if ((rc = sl_dev_storage(dev, 1, c->byte_length, o->storage_bandwidth, &io,
			                         label, err)))
				break;
		}
		rc = ckpt_fault(o, SL_CKPT_AT_CHUNK, d, err);
	}
	if (fd >= 0) {
		if (!rc && fsync(fd) != 0)
			rc = sl_fail(err, SL_ESYS, "cannot sync %s: %s", path, strerror(errno));
		if (close(fd) != 0 && !rc)
			rc = sl_fail(err, SL_ESYS, "cannot close %s: %s", path, strerror(errno));
		if (!rc)
			rc = ckpt_fault(o, SL_CKPT_AT_FILE, d, err);
	}
	free(buf);
	free(par);
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

/* The save into target t (prepared, locked when in place). */
static int save_locked(struct job *J, struct save *S, sl_cluster *c, struct ckpt_target *tp,
                       sl_err *err)
{
	struct ckpt_target t = *tp;
	const sl_layout *l = sl_train_store_layout(S->tr);
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
		rc = ckpt_write_manifest(&t, &S->plan, J->o, err);
	if (!rc && ckpt_sync_dir(t.work) != 0)
		rc = sl_fail(err, SL_ESYS, "cannot sync %s: %s", t.work, strerror(errno));
	if (!rc)
		rc = ckpt_fault(J->o, SL_CKPT_AT_COMMIT, -1, err);
	if (!rc) {
		char from[PATHLEN], to[PATHLEN];
		if (t.fresh) {
			snprintf(from, sizeof from, "%s", t.work);
			snprintf(to, sizeof to, "%s", t.final);
		} else {
			ckpt_join(from, t.work, MANIFEST_TMP, NULL);
			ckpt_join(to, t.work, MANIFEST, NULL);
		}
		if (rename(from, to) != 0) {
			if (t.fresh && (errno == ENOTEMPTY || errno == EEXIST))
				rc = sl_fail(
				    err, SL_ESYS,
				    "%s appeared while this save was writing (another save?): "
				    "it was left as it is",
				    t.final);
			else
				rc = sl_fail(err, SL_ESYS, "cannot rename %s to %s: %s", from, to,
				             strerror(errno));
		}
	}
	if (rc) {
		ckpt_abandon(&t, &S->plan, S->created);
		return rc;
	}
	/* Committed: from here the new checkpoint is the one under the name. */
	char parent[PATHLEN];
	ckpt_parent_of(t.final, parent);
	if (ckpt_sync_dir(t.fresh ? parent : t.work) != 0)
		return sl_fail(err, SL_ESYS, "saved %s, but syncing its directory failed: %s",
		               t.final, strerror(errno));
	if ((rc = ckpt_fault(J->o, SL_CKPT_AT_COMMITTED, -1, err)))
		return rc;
	/* A new directory holds this save's files only; in place, the old
	 * generation goes (still under the lock). */
	return t.fresh ? SL_OK : ckpt_remove_old(&t, &S->plan, J->o, err);
}

static int save_run(struct job *J, struct save *S, sl_cluster *c, const char *dir, sl_err *err)
{
	struct ckpt_target t;
	int lock;
	sl_ckpt_clean_stale(dir);
	int rc = ckpt_prepare_target(dir, &t, &lock, err);
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
	const sl_layout *l = sl_train_store_layout(tr);
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
	const sl_layout *l = sl_train_store_layout(tr);
	int ndev = l->tp * l->pp * l->dp;
	memset(L, 0, sizeof *L);
	L->ck = ck;
	L->tr = tr;
	/* (the layout as trained, cp and its batch split included; the store's
	 * dp x cp replicas need not divide the batch) */
	int rc = sl_ckpt_check_target(ck, sl_train_model(tr), sl_train_layout(tr), ndev, err);
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
	const sl_layout *l = sl_train_store_layout(tr);
	int ndev = l->tp * l->pp * l->dp;
	if (c && sl_cluster_devices(c) != ndev)
		return sl_fail(err, SL_EINVAL, "the layout has %d devices but the cluster %d", ndev,
		               sl_cluster_devices(c));
	struct load *L = malloc(sizeof *L);
	if (!L)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	int rc = ckpt_check_files(ck, err);
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
	/* (as the checkpoint records it: dp x cp replicas, no cp) */
	sl_layout store = *l;
	store.dp = sl_layout_dpc(l);
	store.cp = 1;
	store.cp_comm = SL_CP_RING;
	l = &store;
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
	if ((rc = ckpt_check_files(ck, err)))
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
		if (d->idle_s < 0 && d->idle_s > -1e-9 * t->step_s)
			d->idle_s = 0; /* rounding, as in train.c */
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
	const sl_layout *l = sl_train_store_layout(tr);
	int rc = sl_ckpt_check_target(ck, sl_train_model(tr), sl_train_layout(tr),
	                              l->tp * l->pp * l->dp, err);
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
