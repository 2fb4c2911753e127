/* SPDX-License-Identifier: MIT */
/* Every collective and algorithm against a serial reference written here. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "coll_algo.h"
#include "cost.h"
#include "trace.h"
#include "testutil.h"

/* The links of every run here. */
#define BW 100e9
#define LAT 1e-6

struct job {
	sl_coll_op op;
	sl_algo algo;
	size_t count;
	int root;
	float *bufs[SL_MAX_DEVICES];
	float *outs[SL_MAX_DEVICES]; /* alltoall and sendrecv out of place; NULL: in place */
	int uneven;
	size_t counts[SL_MAX_DEVICES];
};

static int prog(sl_dev *d, void *arg, sl_err *err)
{
	struct job *j = arg;
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	float *b = j->bufs[sl_dev_id(d)];
	const size_t *counts = j->uneven ? j->counts : NULL;
	switch (j->op) {
	case SL_COLL_ALLREDUCE:
		return sl_allreduce(d, &g, b, j->count, j->algo, err);
	case SL_COLL_ALLGATHER:
		return sl_allgather(d, &g, b, j->count, counts, j->algo, err);
	case SL_COLL_REDUCESCATTER:
		return sl_reducescatter(d, &g, b, j->count, counts, j->algo, err);
	case SL_COLL_BROADCAST:
		return sl_broadcast(d, &g, b, j->count, j->root, j->algo, err);
	case SL_COLL_REDUCE:
		return sl_reduce(d, &g, b, j->count, j->root, j->algo, err);
	case SL_COLL_GATHER:
		return sl_gather(d, &g, b, j->count, counts, j->root, j->algo, err);
	case SL_COLL_SCATTER:
		return sl_scatter(d, &g, b, j->count, counts, j->root, j->algo, err);
	case SL_COLL_ALLTOALL:
		if (!j->outs[0])
			return sl_coll_run(d, &g, j->op, b, j->count, j->algo, err);
		return sl_alltoall(d, &g, b, j->outs[sl_dev_id(d)], j->count, j->algo, err);
	case SL_COLL_SENDRECV:
		if (!j->outs[0])
			return sl_coll_run(d, &g, j->op, b, j->count, j->algo, err);
		return sl_sendrecv(d, &g, b, j->outs[sl_dev_id(d)], j->count, err);
	default:
		return SL_EINVAL;
	}
}

/* Block boundaries, computed here independently of the engine. */
static void bounds(size_t n, int p, const struct job *j, size_t *off)
{
	off[0] = 0;
	for (int r = 0; r < p; r++)
		off[r + 1] =
		    off[r] + (j->uneven ? j->counts[r] : n / p + ((size_t)r < n % p ? 1 : 0));
}

static int ceil_log2(int p)
{
	int l = 0;
	while ((1 << l) < p)
		l++;
	return l;
}

/* The logical steps of each algorithm, from their definitions: a ring
 * all-reduce is p-1 reduce-scatter then p-1 all-gather steps; a ring's
 * pipelined broadcast or reduce of k segments takes k + p - 2 slots along
 * the chain; a binomial tree takes ceil(log2 p) levels, twice
 * when it is two trees (reduce then broadcast, ...). */
static int want_steps(sl_coll_op op, sl_algo algo, int p, size_t n)
{
	int two = op == SL_COLL_ALLREDUCE || op == SL_COLL_ALLGATHER || op == SL_COLL_REDUCESCATTER;
	if (op == SL_COLL_SENDRECV)
		return 1;
	if (op == SL_COLL_ALLTOALL)
		return p - 1;
	if (algo == SL_ALGO_TREE)
		return (two ? 2 : 1) * ceil_log2(p);
	if (op == SL_COLL_ALLREDUCE)
		return 2 * (p - 1);
	if (op == SL_COLL_BROADCAST || op == SL_COLL_REDUCE) {
		/* The segment count with the least time (k + p - 2)(a + N/(k B))
		 * on these tests' links, by trying every one. */
		double a = LAT, b = BW, nb = 4.0 * (double)n, best = INFINITY;
		int k = 1;
		for (int c = 1; c <= SL_CHAIN_SEGMENTS_MAX && (size_t)c <= n; c++) {
			double t = (c + p - 2) * (a + nb / c / b);
			if (t < best) {
				best = t;
				k = c;
			}
		}
		return k + p - 2;
	}
	return p - 1;
}

/* Every event of the run says in fields what it is: the collective, the
 * algorithm, its logical step of the right count, and the blocks it moves
 * (their bytes are the event's); every step has a transfer, and every send
 * has its receive on the peer in the same step with the same blocks. */
static void check_fields(sl_cluster *c, int p, sl_coll_op op, sl_algo algo, size_t n,
                         const size_t *off)
{
	sl_snapshot s;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &s), SL_OK);
	int ns = want_steps(op, algo, p, n);
	int used[2 * SL_MAX_DEVICES] = {0};
	for (size_t i = 0; i < s.n; i++) {
		const sl_event *e = &s.ev[i];
		if (e->kind != SL_EV_SEND && e->kind != SL_EV_RECV && e->kind != SL_EV_REDUCE)
			continue;
		if (e->coll.op != (int)op || e->coll.algo != (int)algo || e->coll.p != p ||
		    e->coll.nsteps != ns || e->coll.step < 0 || e->coll.step >= ns)
			fail_msg("%s %s p=%d n=%zu: device %d event %s has op %d algo %d p %d "
			         "step %d of %d (want %d steps)",
			         sl_coll_op_name(op), sl_algo_name(algo), p, n, e->dev, e->label,
			         e->coll.op, e->coll.algo, e->coll.p, e->coll.step, e->coll.nsteps,
			         ns);
		used[e->coll.step] = 1;
		if (e->coll.count > 0) {
			uint64_t b = 0;
			for (int k = 0; k < e->coll.count; k++) {
				int blk = (e->coll.first + k) % p;
				b += (off[blk + 1] - off[blk]) * sizeof(float);
			}
			if (b != e->bytes)
				fail_msg(
				    "%s %s p=%d n=%zu: device %d %s: blocks %d+%d hold %llu bytes, "
				    "the event %llu",
				    sl_coll_op_name(op), sl_algo_name(algo), p, n, e->dev, e->label,
				    e->coll.first, e->coll.count, (unsigned long long)b,
				    (unsigned long long)e->bytes);
		}
		if (e->kind != SL_EV_SEND)
			continue;
		int match = 0;
		for (size_t k = 0; k < s.n; k++) {
			const sl_event *r = &s.ev[k];
			match += (r->kind == SL_EV_RECV || r->kind == SL_EV_REDUCE) &&
			         r->dev == e->peer && r->peer == e->dev &&
			         r->coll.step == e->coll.step && r->coll.first == e->coll.first &&
			         r->coll.count == e->coll.count && r->bytes == e->bytes;
		}
		if (match != 1)
			fail_msg(
			    "%s %s p=%d n=%zu: device %d's send to %d in step %d has %d receives",
			    sl_coll_op_name(op), sl_algo_name(algo), p, n, e->dev, e->peer,
			    e->coll.step, match);
	}
	for (int k = 0; k < ns && p > 1; k++)
		if (!used[k])
			fail_msg("%s %s p=%d n=%zu: step %d of %d moves nothing",
			         sl_coll_op_name(op), sl_algo_name(algo), p, n, k, ns);
	sl_snapshot_free(&s);
}

static void check_one(int p, sl_coll_op op, sl_algo algo, size_t n, int root, int uneven)
{
	struct job j = {.op = op, .algo = algo, .count = n, .root = root, .uneven = uneven};
	if (uneven) {
		/* Deliberately lopsided blocks, one of them empty when possible. */
		size_t left = n;
		for (int r = 0; r < p; r++) {
			size_t c = r == p - 1 ? left : (r % 3 == 1 ? 0 : left / 2);
			j.counts[r] = c;
			left -= c;
		}
	}
	size_t off[SL_MAX_DEVICES + 1];
	bounds(n, p, &j, off);
	float *in[SL_MAX_DEVICES];
	for (int r = 0; r < p; r++) {
		in[r] = malloc((n ? n : 1) * sizeof(float));
		j.bufs[r] = malloc((n ? n : 1) * sizeof(float));
		for (size_t i = 0; i < n; i++)
			in[r][i] = j.bufs[r][i] = tu_val(r, i);
	}
	float *sum = calloc(n ? n : 1, sizeof(float));
	for (int r = 0; r < p; r++)
		for (size_t i = 0; i < n; i++)
			sum[i] += in[r][i];

	sl_cluster *c = tu_cluster(p, BW, LAT);
	sl_err err = {0};
	int rc = sl_cluster_run(c, prog, &j, &err);
	if (rc)
		fail_msg("%s %s p=%d n=%zu: %s", sl_coll_op_name(op), sl_algo_name(algo), p, n,
		         err.msg);

	for (int r = 0; r < p; r++) {
		for (size_t i = 0; i < n; i++) {
			int blk = 0;
			while (i >= off[blk + 1])
				blk++;
			float want;
			int check = 1;
			switch (op) {
			case SL_COLL_ALLREDUCE:
				want = sum[i];
				break;
			case SL_COLL_ALLGATHER:
				want = in[blk][i];
				break;
			case SL_COLL_REDUCESCATTER:
				want = sum[i];
				check = blk == r;
				break;
			case SL_COLL_BROADCAST:
				want = in[root][i];
				break;
			case SL_COLL_REDUCE:
				want = sum[i];
				check = r == root;
				break;
			case SL_COLL_GATHER:
				want = in[blk][i];
				check = r == root || blk == r;
				break;
			case SL_COLL_SCATTER:
				want = in[root][i];
				check = blk == r;
				break;
			default:
				want = 0;
			}
			if (check && j.bufs[r][i] != want)
				fail_msg("%s %s p=%d n=%zu root=%d uneven=%d: rank %d element %zu "
				         "is %g, want %g",
				         sl_coll_op_name(op), sl_algo_name(algo), p, n, root,
				         uneven, r, i, (double)j.bufs[r][i], (double)want);
		}
	}
	/* Nothing was left on the devices and every byte was accounted. */
	uint64_t sent = 0, recvd = 0;
	for (int r = 0; r < p; r++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, r);
		sent += st.bytes_sent;
		recvd += st.bytes_received;
	}
	assert_int_equal(sent, recvd);
	check_fields(c, p, op, algo, n, off);
	sl_cluster_destroy(c);
	for (int r = 0; r < p; r++) {
		free(in[r]);
		free(j.bufs[r]);
	}
	free(sum);
}

static void sweep(sl_coll_op op)
{
	for (int a = 0; a < SL_ALGO_NALGOS; a++)
		for (int p = 1; p <= 9; p++) {
			size_t lens[] = {0, 1, (size_t)p - 1, (size_t)p + 1, 1000, 100003};
			for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
				int roots[] = {0, p - 1, p / 2};
				int has_root = op == SL_COLL_BROADCAST || op == SL_COLL_REDUCE ||
				               op == SL_COLL_GATHER || op == SL_COLL_SCATTER;
				for (int ri = 0; ri < (has_root ? 3 : 1); ri++)
					check_one(p, op, (sl_algo)a, lens[li], roots[ri], 0);
				int blocked = op == SL_COLL_ALLGATHER ||
				              op == SL_COLL_REDUCESCATTER || op == SL_COLL_GATHER ||
				              op == SL_COLL_SCATTER;
				if (blocked)
					check_one(p, op, (sl_algo)a, lens[li], has_root ? p / 2 : 0,
					          1);
			}
		}
}

static void test_allreduce(void **s)
{
	(void)s;
	sweep(SL_COLL_ALLREDUCE);
}
static void test_allgather(void **s)
{
	(void)s;
	sweep(SL_COLL_ALLGATHER);
}
static void test_reducescatter(void **s)
{
	(void)s;
	sweep(SL_COLL_REDUCESCATTER);
}
static void test_broadcast(void **s)
{
	(void)s;
	sweep(SL_COLL_BROADCAST);
}
static void test_reduce(void **s)
{
	(void)s;
	sweep(SL_COLL_REDUCE);
}
static void test_gather(void **s)
{
	(void)s;
	sweep(SL_COLL_GATHER);
}
static void test_scatter(void **s)
{
	(void)s;
	sweep(SL_COLL_SCATTER);
}

/* All-to-all and send/receive against their definitions, written here:
 * alltoall's out[r] block b (q = n / p elements) is in[b] block r, the tail
 * past p q untouched in place; sendrecv's out[r] is in[r - 1].  Both in
 * place (through the engine's scratch buffer) and out of place.  Times on
 * uniform links: (p-1)(a + q 4 / B) and a + 4 n / B. */
static void check_p2p(int p, sl_coll_op op, sl_algo algo, size_t n, int inplace)
{
	struct job j = {.op = op, .algo = algo, .count = n};
	size_t q = n / (size_t)p, off[SL_MAX_DEVICES + 1];
	float *in[SL_MAX_DEVICES];
	for (int r = 0; r < p; r++) {
		in[r] = malloc((n ? n : 1) * sizeof(float));
		j.bufs[r] = malloc((n ? n : 1) * sizeof(float));
		j.outs[r] = inplace ? NULL : calloc(n ? n : 1, sizeof(float));
		for (size_t i = 0; i < n; i++)
			in[r][i] = j.bufs[r][i] = tu_val(r, i);
	}
	for (int b = 0; b <= p; b++)
		off[b] = op == SL_COLL_ALLTOALL ? (size_t)b * q : (b == p ? n : 0);
	double bw = 100e9, lat = 1e-6;
	sl_cluster *c = tu_cluster(p, bw, lat);
	sl_err err = {0};
	if (sl_cluster_run(c, prog, &j, &err))
		fail_msg("%s p=%d n=%zu: %s", sl_coll_op_name(op), p, n, err.msg);
	for (int r = 0; r < p; r++) {
		const float *got = inplace ? j.bufs[r] : j.outs[r];
		for (size_t i = 0; i < n; i++) {
			float want;
			int check = 1;
			if (op == SL_COLL_SENDRECV) {
				want = in[(r + p - 1) % p][i];
			} else if (i < (size_t)p * q) {
				size_t b = i / q;
				want = in[b][(size_t)r * q + i % q];
			} else {
				want = in[r][i];
				check = inplace;
			}
			if (check && got[i] != want)
				fail_msg("%s %s p=%d n=%zu inplace=%d: rank %d element %zu is %g, "
				         "want %g",
				         sl_coll_op_name(op), sl_algo_name(algo), p, n, inplace, r,
				         i, (double)got[i], (double)want);
		}
	}
	double want_t = p == 1                   ? 0
	                : op == SL_COLL_SENDRECV ? lat + 4.0 * (double)n / bw
	                                         : (p - 1) * (lat + 4.0 * (double)q / bw);
	double t = 0;
	for (int r = 0; r < p; r++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, r);
		if (st.clock > t)
			t = st.clock;
		if (inplace)
			assert_int_equal(sl_cluster_dev_stats(c, r).mem_current, 0);
	}
	if (fabs(t - want_t) > 1e-12 * (want_t > 1 ? want_t : 1))
		fail_msg("%s p=%d n=%zu: %.12g s, want %.12g s", sl_coll_op_name(op), p, n, t,
		         want_t);
	check_fields(c, p, op, algo, n, off);
	sl_cluster_destroy(c);
	for (int r = 0; r < p; r++) {
		free(in[r]);
		free(j.bufs[r]);
		free(j.outs[r]);
	}
}

static void p2p_sweep(sl_coll_op op)
{
	/* sendrecv takes no algorithm (its events say ring). */
	for (int a = 0; a < (op == SL_COLL_SENDRECV ? 1 : SL_ALGO_NALGOS); a++)
		for (int p = 1; p <= 9; p++) {
			size_t lens[] = {0, 1, (size_t)p - 1, (size_t)p + 1, 1000, 100003};
			for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
				for (int inplace = 0; inplace < 2; inplace++)
					check_p2p(p, op, (sl_algo)a, lens[li], inplace);
		}
}

static void test_alltoall(void **s)
{
	(void)s;
	p2p_sweep(SL_COLL_ALLTOALL);
}
static void test_sendrecv(void **s)
{
	(void)s;
	p2p_sweep(SL_COLL_SENDRECV);
}

/* One buffer for both is refused: the receives would overwrite blocks not
 * yet sent. */
static void test_p2p_one_buffer(void **s)
{
	(void)s;
	struct job j = {.op = SL_COLL_ALLTOALL, .count = 8};
	for (int r = 0; r < 2; r++)
		j.outs[r] = j.bufs[r] = calloc(8, sizeof(float));
	sl_cluster *c = tu_cluster(2, 100e9, 1e-6);
	sl_err err = {0};
	assert_int_equal(sl_cluster_run(c, prog, &j, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "are one"));
	sl_cluster_destroy(c);
	for (int r = 0; r < 2; r++)
		free(j.bufs[r]);
}

/* A large buffer at a size where chunking and both ring phases matter. */
static void test_allreduce_large(void **s)
{
	(void)s;
	check_one(8, SL_COLL_ALLREDUCE, SL_ALGO_RING, (size_t)3 << 20, 0, 0);
	check_one(5, SL_COLL_ALLREDUCE, SL_ALGO_TREE, (size_t)1 << 20, 0, 0);
}

/* An all-reduce of n bytes over p devices on uniform links (latency a,
 * bandwidth b) from first principles, by the algorithm's name: a ring is
 * 2(p-1) steps that each move a block of n/p over every link at once; a
 * binomial tree reduces the whole buffer to the root over ceil(log2 p)
 * levels, then broadcasts it back over as many.  A new row needs its own
 * line here: the table is checked against these, never against itself. */
static double allreduce_reference(const char *name, int p, double n, double a, double b)
{
	if (strcmp(name, "ring") == 0)
		return 2.0 * (p - 1) * (a + n / p / b);
	if (strcmp(name, "tree") == 0)
		return 2.0 * ceil_log2(p) * (a + n / b);
	fail_msg("algorithm %s: no reference all-reduce time in tests/test_coll.c", name);
	return 0;
}

/* Walk the table: each row's names, schedule and closed form, and the
 * engine's emulated all-reduce under it equal to the reference above. */
static void test_algo_table(void **s)
{
	(void)s;
	char list[256] = "", want[256] = "";
	for (int a = 0; a < SL_ALGO_NALGOS; a++) {
		const sl_algo_ops *al = sl_algo_ops_of((sl_algo)a);
		assert_non_null(al);
		assert_non_null(al->name);
		assert_string_equal(sl_algo_name((sl_algo)a), al->name);
		sl_algo got = SL_ALGO_NALGOS;
		assert_int_equal(sl_algo_parse(al->name, &got), SL_OK);
		assert_int_equal(got, a);
		assert_int_equal(sl_algo_next((sl_algo)a), (a + 1) % SL_ALGO_NALGOS);
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", a ? ", " : "",
		         al->name);
		/* Every op has a schedule but the pairwise ones. */
		for (int op = 0; op < SL_COLL_NOPS; op++)
			assert_int_equal(al->walk[op] != NULL,
			                 op != SL_COLL_ALLTOALL && op != SL_COLL_SENDRECV);
		assert_non_null(al->time);
		assert_non_null(al->busbw);
		assert_true(al->ring_replay || al->time_on);

		static const int ps[] = {2, 3, 4, 5, 8, 16};
		for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
			int p = ps[i];
			struct job j = {
			    .op = SL_COLL_ALLREDUCE, .algo = (sl_algo)a, .count = (size_t)p * 3000};
			double n = (double)j.count * sizeof(float);
			double ref = allreduce_reference(al->name, p, n, LAT, BW);
			char what[96];
			snprintf(what, sizeof what, "allreduce %s p=%d: the row's closed form",
			         al->name, p);
			tu_check_close(al->time(SL_COLL_ALLREDUCE, p, n, LAT, BW, 1, SL_TOPO_FULL),
			               ref, 1e-12, what);
			snprintf(what, sizeof what, "allreduce %s p=%d: sl_cost_coll", al->name, p);
			tu_check_close(sl_cost_coll(SL_COLL_ALLREDUCE, (sl_algo)a, p, n, LAT, BW),
			               ref, 1e-12, what);
			for (int r = 0; r < p; r++)
				assert_non_null(j.bufs[r] = calloc(j.count, sizeof(float)));
			sl_cluster *c = tu_cluster(p, BW, LAT);
			sl_err err = {0};
			if (sl_cluster_run(c, prog, &j, &err))
				fail_msg("allreduce %s p=%d: %s", al->name, p, err.msg);
			double slowest = 0; /* a tree's leaves are done before its root */
			for (int r = 0; r < p; r++) {
				slowest = fmax(slowest, sl_cluster_dev_stats(c, r).clock);
				free(j.bufs[r]);
			}
			snprintf(what, sizeof what, "allreduce %s p=%d: the slowest clock",
			         al->name, p);
			tu_check_close(slowest, ref, 1e-12, what);
			sl_cluster_destroy(c);
		}
	}
	assert_null(sl_algo_ops_of(SL_ALGO_NALGOS));
	assert_string_equal(sl_algo_list(list, sizeof list, ", "), want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allreduce),      cmocka_unit_test(test_allgather),
	    cmocka_unit_test(test_reducescatter),  cmocka_unit_test(test_broadcast),
	    cmocka_unit_test(test_reduce),         cmocka_unit_test(test_gather),
	    cmocka_unit_test(test_scatter),        cmocka_unit_test(test_allreduce_large),
	    cmocka_unit_test(test_alltoall),       cmocka_unit_test(test_sendrecv),
	    cmocka_unit_test(test_p2p_one_buffer), cmocka_unit_test(test_algo_table),
	};
	return cmocka_run_group_tests_name("collectives", tests, NULL, NULL);
}
