/* SPDX-License-Identifier: MIT */
/* sigthread.c - send a signal to the main thread of a process.
 *
 *   sigthread PID SIGNAL     SIGNAL: a name such as SEGV, or a number
 *
 * A fault reaches the thread that made it; kill leaves the kernel to pick
 * any thread not blocking the signal.  The screen tests send SIGSEGV both
 * ways, but only this way under ThreadSanitizer: there a process-wide
 * SIGSEGV that lands on a thread being created or torn down can kill the
 * process before the program's handler runs (see tests/screen/run.sh). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *end;
	if (argc != 3) {
		fprintf(stderr, "usage: sigthread PID SIGNAL (a name such as SEGV, or a number)\n");
		return 2;
	}
	errno = 0;
	long pid = strtol(argv[1], &end, 10);
	if (*end || errno || pid <= 0 || pid > INT_MAX) {
		fprintf(stderr, "sigthread: '%s' is not a process id\n", argv[1]);
		return 2;
	}
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"HUP", SIGHUP}, {"INT", SIGINT},   {"QUIT", SIGQUIT},
	             {"ILL", SIGILL}, {"ABRT", SIGABRT}, {"BUS", SIGBUS},
	             {"FPE", SIGFPE}, {"SEGV", SIGSEGV}, {"TERM", SIGTERM}};
	long sig = strtol(argv[2], &end, 10);
	if (*end) {
		sig = 0;
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
			if (strcmp(argv[2], names[i].name) == 0)
				sig = names[i].sig;
	}
	if (sig <= 0 || sig >= NSIG) {
		fprintf(stderr, "sigthread: '%s' is not a signal\n", argv[2]);
		return 2;
	}
	/* The main thread's id is the process id. */
	if (syscall(SYS_tgkill, (pid_t)pid, (pid_t)pid, (int)sig) != 0) {
		fprintf(stderr, "sigthread: %ld: %s\n", pid, strerror(errno));
		return 1;
	}
	return 0;
}
