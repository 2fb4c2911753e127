/* SPDX-License-Identifier: MIT */
/* term.c - curses set-up and restore, signals, and waiting (see term.h). */
#include "term.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <term.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int wake_pipe[2] = {-1, -1};
static struct termios saved_tio;
static int saved_tio_ok;
static sigset_t saved_mask, wait_mask;
static volatile sig_atomic_t quit_sig;
static volatile sig_atomic_t curses_on;
static SCREEN *screen;
/* The off-screen terminal (sl_term_offscreen): its size and its files. */
static int off_rows, off_cols;
static FILE *off_out, *off_in;
/* What puts the terminal back, written by the crash handler. */
static char restore_seq[512];
static size_t restore_len;

static const int quit_sigs[] = {SIGINT, SIGTERM, SIGHUP};
static const int crash_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGQUIT};
static struct sigaction old_quit[3], old_crash[6], old_winch;

static void on_quit(int sig)
{
	int e = errno;
	quit_sig = sig;
	char b = 0;
	if (write(wake_pipe[1], &b, 1) < 0) {
		/* the flag is enough: ppoll returns EINTR */
	}
	errno = e;
}

static void on_crash(int sig)
{
	if (curses_on) {
		if (restore_len && write(STDOUT_FILENO, restore_seq, restore_len) < 0) {
			/* nothing more can be done from here */
		}
		if (saved_tio_ok)
			tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	}
	/* SA_RESETHAND made the action the default again. */
	raise(sig);
}

int sl_term_init(sl_err *err)
{
	if (pipe(wake_pipe) != 0)
		return sl_fail(err, SL_ESYS, "cannot create a pipe: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		fcntl(wake_pipe[i], F_SETFL, fcntl(wake_pipe[i], F_GETFL) | O_NONBLOCK);
		fcntl(wake_pipe[i], F_SETFD, FD_CLOEXEC);
	}
	if (tcgetattr(STDIN_FILENO, &saved_tio) == 0)
		saved_tio_ok = 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_quit;
	for (size_t i = 0; i < 3; i++)
		sigaction(quit_sigs[i], &sa, &old_quit[i]);
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (size_t i = 0; i < 6; i++)
		sigaction(crash_sigs[i], &sa, &old_crash[i]);
	sigaction(SIGWINCH, NULL, &old_winch);
	/* Blocked everywhere but in ppoll. */
	sigset_t block;
	sigemptyset(&block);
	for (size_t i = 0; i < 3; i++)
		sigaddset(&block, quit_sigs[i]);
	sigaddset(&block, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &block, &saved_mask);
	wait_mask = saved_mask;
	for (size_t i = 0; i < 3; i++)
		sigdelset(&wait_mask, quit_sigs[i]);
	sigdelset(&wait_mask, SIGWINCH);
	return SL_OK;
}

static void add_seq(const char *s)
{
	if (!s || s == (char *)-1)
		return;
	size_t n = strlen(s);
	if (restore_len + n < sizeof restore_seq) {
		memcpy(restore_seq + restore_len, s, n);
		restore_len += n;
	}
}

void sl_term_offscreen(int rows, int cols)
{
	off_rows = rows;
	off_cols = cols;
}

int sl_term_is_offscreen(void)
{
	return off_rows > 0;
}

void sl_term_offscreen_size(int *rows, int *cols)
{
	const char *l = getenv("LINES"), *c = getenv("COLUMNS");
	int r = l ? atoi(l) : 0, k = c ? atoi(c) : 0;
	struct winsize ws;
	if ((r <= 0 || k <= 0) && isatty(STDOUT_FILENO) &&
	    ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		r = ws.ws_row;
		k = ws.ws_col;
	}
	if (r <= 0 || k <= 0 || r > 1000 || k > 1000) {
		r = 30;
		k = 100;
	}
	*rows = r;
	*cols = k;
}

/* A terminal nobody sees, of a known description (so a snapshot's colours
 * do not depend on TERM) and the size asked for. */
static int start_offscreen(sl_err *err)
{
	off_out = fopen("/dev/null", "w");
	off_in = fopen("/dev/null", "r");
	if (off_out && off_in)
		screen = newterm("xterm-256color", off_out, off_in);
	if (!screen && off_out && off_in)
		screen = newterm(NULL, off_out, off_in);
	if (!screen) {
		if (off_out)
			fclose(off_out);
		if (off_in)
			fclose(off_in);
		off_out = off_in = NULL;
		return sl_fail(err, SL_ESYS,
		               "cannot open an off-screen terminal for the snapshot (is the "
		               "xterm-256color terminfo entry installed?)");
	}
	set_term(screen);
	resize_term(off_rows, off_cols);
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	curses_on = 1;
	return SL_OK;
}

int sl_term_start(int no_mouse, sl_err *err)
{
	if (off_rows > 0)
		return start_offscreen(err);
	screen = newterm(NULL, stdout, stdin);
	if (!screen)
		return sl_fail(err, SL_ESYS, "cannot drive the terminal '%s' (check TERM)",
		               getenv("TERM") ? getenv("TERM") : "");
	set_term(screen);
	/* A terminal that cannot move the cursor (dumb, a printer) cannot
	 * show a screen. */
	const char *cup = tigetstr("cup");
	if (!cup || cup == (char *)-1) {
		endwin();
		delscreen(screen);
		screen = NULL;
		return sl_fail(err, SL_EINVAL,
		               "the terminal '%s' cannot address the cursor (check TERM)",
		               getenv("TERM") ? getenv("TERM") : "");
	}
	/* The crash handler's way back, taken from this terminal's own
	 * description. */
	restore_len = 0;
	add_seq(tigetstr("sgr0"));
	add_seq(tigetstr("cnorm"));
	add_seq(tigetstr("rmkx"));
	if (!no_mouse)
		add_seq("\033[?1006l\033[?1002l\033[?1000l");
	add_seq(tigetstr("rmcup"));
	add_seq("\r\n");
	cbreak(); /* Ctrl-C stays a signal: a clean quit */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	/* Every update goes out whole: by default curses postpones one while
	 * input is pending, and the loop, having read that input, may have
	 * nothing left to draw, leaving the postponed frame unshown. */
	typeahead(-1);
	set_escdelay(25);
	curs_set(0);
	if (!no_mouse)
		mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED, NULL);
	curses_on = 1;
	return SL_OK;
}

void sl_term_stop(void)
{
	if (!curses_on)
		return;
	curses_on = 0;
	if (off_rows > 0) {
		endwin();
		delscreen(screen);
		screen = NULL;
		fclose(off_out);
		fclose(off_in);
		off_out = off_in = NULL;
		return;
	}
	mousemask(0, NULL);
	endwin();
	if (saved_tio_ok)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	fflush(stdout);
	delscreen(screen);
	screen = NULL;
}

void sl_term_done(void)
{
	for (size_t i = 0; i < 3; i++)
		sigaction(quit_sigs[i], &old_quit[i], NULL);
	for (size_t i = 0; i < 6; i++)
		sigaction(crash_sigs[i], &old_crash[i], NULL);
	sigaction(SIGWINCH, &old_winch, NULL);
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	for (int i = 0; i < 2; i++)
		if (wake_pipe[i] >= 0) {
			close(wake_pipe[i]);
			wake_pipe[i] = -1;
		}
}

static unsigned long shows;
static double last_show;

void sl_term_show(void)
{
	struct timespec ts;
	wnoutrefresh(stdscr);
	doupdate();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	last_show = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
	shows++;
}

unsigned long sl_term_shows(double *last)
{
	if (last)
		*last = last_show;
	return shows;
}

int sl_term_wake_fd(void)
{
	return wake_pipe[1];
}

int sl_term_quit_signal(void)
{
	return quit_sig;
}

int sl_term_wait(int timeout_ms)
{
	/* Off screen, no key comes: only the threads' news is waited for. */
	struct pollfd fds[2] = {{off_rows > 0 ? -1 : STDIN_FILENO, POLLIN, 0},
	                        {wake_pipe[0], POLLIN, 0}};
	struct timespec ts, *tp = NULL;
	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		tp = &ts;
	}
	int r = ppoll(fds, 2, tp, &wait_mask);
	int bits = 0;
	if (r < 0 && errno == EINTR)
		bits |= SL_TERM_INPUT; /* SIGWINCH: curses reports KEY_RESIZE */
	if (r > 0 && (fds[0].revents & POLLIN))
		bits |= SL_TERM_INPUT;
	if (r > 0 && (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
		bits |= SL_TERM_HANGUP;
	if (r > 0 && (fds[1].revents & POLLIN)) {
		char buf[64];
		while (read(wake_pipe[0], buf, sizeof buf) > 0)
			;
		bits |= SL_TERM_WAKE;
	}
	if (quit_sig)
		bits |= SL_TERM_SIGNAL;
	return bits;
}

void sl_term_reraise(int sig)
{
	signal(sig, SIG_DFL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
}

int sl_term_finish(int sig, int clean, int status)
{
	if (sig) {
		sl_term_reraise(sig);
		sl_term_done();
		return status;
	}
	if (!clean) {
		fflush(NULL);
		_exit(status);
	}
	sl_term_done();
	return status;
}
