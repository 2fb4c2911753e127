/* SPDX-License-Identifier: MIT */
/* mpi_coll.c - Open MPI's collectives on the sizes and rank counts that
 * bench_engine measures, for the comparison column of bench/RESULTS.md.
 *
 * Not part of shardlab: bench/run.sh builds it with mpicc when Open MPI is
 * installed.  Buffers are fp32 and in place, like shardlab's; a size is the
 * whole buffer (NCCL-tests' convention), so all-gather contributes size/p per
 * rank and reduce-scatter keeps size/p.
 *
 *   mpi_coll sweep MIN_BYTES MAX_BYTES SECONDS REPS   one line per op and size:
 *       mpi OP P BYTES ITERS MEDIAN_TIME_S BEST_BUSBW MEDIAN_BUSBW
 *   (REPS timed loops of about SECONDS each; the best is what a quiet machine
 *   gives, as bench_engine reports its own)
 *   mpi_coll once BYTES                          one all-reduce (start-up) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, NOPS };
static const char *const op_names[NOPS] = {"allreduce", "allgather", "reducescatter"};

static void run_op(int op, float *buf, size_t count, int p)
{
	int block = (int)(count / (size_t)p);
	switch (op) {
	case OP_ALLREDUCE:
		MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		break;
	case OP_ALLGATHER:
		MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, block, MPI_FLOAT,
		              MPI_COMM_WORLD);
		break;
	default:
		MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, block, MPI_FLOAT, MPI_SUM,
		                         MPI_COMM_WORLD);
		break;
	}
}

/* NCCL-tests' bus bandwidth factors. */
static double bus_factor(int op, int p)
{
	return op == OP_ALLREDUCE ? 2.0 * (p - 1) / p : (double)(p - 1) / p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Time one op and size: after a warm-up, one timed call sizes the loop to
 * about `seconds`;
 * a loop's time is the slowest rank's, between barriers. */
static void measure(int op, float *buf, size_t bytes, double seconds, int reps, int rank, int p)
{
	size_t count = bytes / sizeof(float);
	count -= count % (size_t)p;

	run_op(op, buf, count, p); /* warm-up: first touches, connections */
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	run_op(op, buf, count, p);
	double dt = MPI_Wtime() - t0, worst;
	MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	int iters = worst > 0 ? (int)(seconds / worst) : 1000;
	if (iters < 1)
		iters = 1;
	if (iters > 1000)
		iters = 1000;
	/* A call longer than a whole loop (an overloaded machine): one timed
	 * call, so the sweep still ends in reasonable time. */
	if (worst > seconds)
		reps = 1;

	double tm[16];
	for (int r = 0; r < reps; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			run_op(op, buf, count, p);
		MPI_Barrier(MPI_COMM_WORLD);
		dt = MPI_Wtime() - t0;
		MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		tm[r] = worst / iters;
	}
	if (rank == 0) {
		qsort(tm, (size_t)reps, sizeof *tm, cmp_double);
		double med = reps % 2 ? tm[reps / 2] : (tm[reps / 2 - 1] + tm[reps / 2]) / 2;
		double real = (double)count * sizeof(float), f = bus_factor(op, p);
		printf("mpi %s %d %zu %d %.9f %.6e %.6e\n", op_names[op], p, bytes, iters, med,
		       real / tm[0] * f, real / med * f);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, p;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &p);
	int bad = 0;
	if (argc == 6 && strcmp(argv[1], "sweep") == 0) {
		size_t lo = strtoull(argv[2], NULL, 10), hi = strtoull(argv[3], NULL, 10);
		double seconds = atof(argv[4]);
		int reps = atoi(argv[5]);
		if (lo < sizeof(float) * (size_t)p || hi < lo || !(seconds > 0) || reps < 1 ||
		    reps > 16)
			bad = 1;
		else {
			/* One buffer touched once, as bench_engine does. */
			float *buf = malloc(hi);
			if (!buf) {
				fprintf(stderr, "mpi_coll: cannot allocate %zu bytes\n", hi);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			for (size_t i = 0; i < hi / sizeof(float); i++)
				buf[i] = (float)((i + (size_t)rank) % 7);
			for (int op = 0; op < NOPS; op++)
				for (size_t b = lo; b <= hi; b *= 2)
					measure(op, buf, b, seconds, reps, rank, p);
			free(buf);
		}
	} else if (argc == 3 && strcmp(argv[1], "once") == 0) {
		size_t count = strtoull(argv[2], NULL, 10) / sizeof(float);
		float *buf = calloc(count ? count : 1, sizeof *buf);
		if (!buf)
			bad = 1;
		else
			MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM,
			              MPI_COMM_WORLD);
		free(buf);
	} else {
		bad = 1;
	}
	if (bad && rank == 0)
		fprintf(stderr,
		        "usage: mpi_coll sweep MIN_BYTES MAX_BYTES SECONDS REPS | once BYTES\n");
	MPI_Finalize();
	return bad;
}
