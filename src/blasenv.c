/* SPDX-License-Identifier: MIT */
#include "blasenv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#define GUARD "SHARDLAB_BLAS_REEXEC"

static int has_var(char **envp, const char *name)
{
	size_t n = strlen(name);
	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return 1;
	return 0;
}

/* Runs before any shared library's constructor (.preinit_array, which only
 * a program has), so before OpenBLAS's: that one reads OPENBLAS_CORETYPE and
 * OPENBLAS_NUM_THREADS and starts a thread per core.  Under a small address
 * space (ulimit -v 50000) starting them failed and OpenBLAS raised SIGINT
 * before main ran; re-executing from main came too late.  libc is not set up
 * yet (no getenv or setenv): read envp as given and build the new one on the
 * stack. */
static void blasenv_preinit(int argc, char **argv, char **envp)
{
	(void)argc;
	int core = has_var(envp, "OPENBLAS_CORETYPE"),
	    threads = has_var(envp, "OPENBLAS_NUM_THREADS");
	if ((core && threads) || has_var(envp, GUARD) || !argv || !argv[0])
		return;
	size_t n = 0;
	while (envp && envp[n])
		n++;
	if (n > 4096)
		return; /* no room for a copy on this stack: main sets the core type */
	char *env[n + 4];
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		env[k++] = envp[i];
	if (!core)
		env[k++] = "OPENBLAS_CORETYPE=auto";
	if (!threads)
		env[k++] = "OPENBLAS_NUM_THREADS=1";
	env[k++] = GUARD "=1";
	env[k] = NULL;
	execve("/proc/self/exe", argv, env);
	/* No /proc: main carries on as before. */
}

__attribute__((section(".preinit_array"),
               used)) static void (*const blasenv_preinit_p)(int, char **,
                                                             char **) = blasenv_preinit;

void sl_blasenv_ensure(char **argv)
{
	/* The fallback when the early re-execution could not happen: only the
	 * core type needs a fresh start, the thread count can still be set after
	 * loading, by openblas_set_num_threads below. */
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
