#include "blasenv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#define GUARD "SHARDLAB_BLAS_REEXEC"

void sl_blasenv_ensure(char **argv)
{
	const char *threads = getenv("OPENBLAS_NUM_THREADS");
	int need = !getenv("OPENBLAS_CORETYPE") || !threads || strcmp(threads, "1") != 0;
	if (need && !getenv(GUARD)) {
		setenv("OPENBLAS_CORETYPE", "auto", 0);
		setenv("OPENBLAS_NUM_THREADS", "1", 1);
		setenv(GUARD, "1", 1);
		execv("/proc/self/exe", argv);
		/* No /proc: carry on with whatever kernel OpenBLAS chose. */
	}
	unsetenv(GUARD);
	openblas_set_num_threads(1);
}
