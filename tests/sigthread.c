/* SPDX-License-Identifier: MIT */
/* sigthread PID SIGNAL - send SIGNAL (a name, SEGV, or a number) to the main
 * thread of process PID.
 *
 * A fault (SIGSEGV, SIGBUS) is delivered to the thread that caused it,
 * while kill(1) leaves the kernel to pick any thread that does not block
 * the signal.  The screen tests send crash signals both ways.  Under
 * ThreadSanitizer a process-wide SIGSEGV that lands on a thread being
 * created or torn down kills the process without running the program's
 * handler (a 15-line program with an SA_RESETHAND handler and threads
 * started and joined in a loop lost 6 of 150 such signals built with
 * -fsanitize=thread, none without it, and none of 150 sent this way), so
 * that build sends them this way only. */
#include <errno.h>
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
	long pid = strtol(argv[1], &end, 10);
	if (*end || pid <= 0) {
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
