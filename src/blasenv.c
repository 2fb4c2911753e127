/* SPDX-License-Identifier: MIT */
#include "blasenv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#define GUARD "SHARDLAB_BLAS_REEXEC"

void sl_blasenv_ensure(char **argv)
{
	/* Only the core type needs a fresh start: the thread count can still be
	 * set after loading, by openblas_set_num_threads below. */
	if (!getenv("OPENBLAS_CORETYPE") && !getenv(GUARD)) {
		setenv("OPENBLAS_CORETYPE", "auto", 0);
		setenv("OPENBLAS_NUM_THREADS", "1", 1);
		setenv(GUARD, "1", 1);
		execv("/proc/self/exe", argv);
		/* No /proc: carry on with whatever kernel OpenBLAS chose. */
	}
	unsetenv(GUARD);
	openblas_set_num_threads(1);
}
