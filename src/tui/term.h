/* SPDX-License-Identifier: MIT */
/* term.h - the terminal: curses set up, restored on every way out, and the
 * one place the UI thread waits.
 *
 * Quit signals (SIGINT, SIGTERM, SIGHUP) and SIGWINCH are blocked in every
 * thread and let through only while the UI thread waits in ppoll(), so a
 * handler never interrupts drawing and never runs on a device thread: the
 * quit handler only sets a flag, the loop cleans up and then dies of the
 * same signal.  Crash signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
 * SIGQUIT) write the saved restore sequence and the saved termios with
 * async-signal-safe calls, then die as they would have. */
#ifndef SL_TUI_TERM_H
#define SL_TUI_TERM_H

#include "status.h"

enum {
	SL_TERM_INPUT = 1,  /* keys (or a resize) to read */
	SL_TERM_WAKE = 2,   /* a background thread has news */
	SL_TERM_SIGNAL = 4, /* a quit signal arrived */
	SL_TERM_HANGUP = 8, /* the terminal went away */
};

/* Signals, the wake-up pipe and the saved terminal modes.  Call before any
 * thread starts (threads inherit the signal mask). */
int sl_term_init(sl_err *err);
/* Curses on the terminal; mouse unless no_mouse. */
int sl_term_start(int no_mouse, sl_err *err);
/* Before sl_term_start: draw to an off-screen terminal of rows x cols
 * (an xterm-256color description, output discarded, no input read) instead
 * of the real one, for a snapshot taken without a terminal (--snapshot). */
void sl_term_offscreen(int rows, int cols);
/* Is the terminal the off-screen one? */
int sl_term_is_offscreen(void);
/* The off-screen size: LINES and COLUMNS from the environment when both
 * are set, else the terminal's when stdout is one, else 30 x 100. */
void sl_term_offscreen_size(int *rows, int *cols);
/* Leave curses and put the terminal back (idempotent). */
void sl_term_stop(void);
/* Close the pipe and put the signal mask and handlers back. */
void sl_term_done(void);

/* Send stdscr to the terminal (wnoutrefresh, doupdate): every draw ends
 * here, so a screen test's diagnosis can count them. */
void sl_term_show(void);
/* How many times sl_term_show ran, and when last (sl_loop_now's clock). */
unsigned long sl_term_shows(double *last);

/* The pipe's write end, for background threads. */
int sl_term_wake_fd(void);
/* Wait for input, a wake-up or a quit signal, up to timeout_ms (-1: no
 * limit).  Returns SL_TERM_* bits (0 on timeout). */
int sl_term_wait(int timeout_ms);
/* The quit signal that arrived, or 0. */
int sl_term_quit_signal(void);
/* After cleaning up: die of sig as if unhandled. */
void sl_term_reraise(int sig);
/* A view's last step, after sl_term_stop and freeing what it can: die of
 * sig (the quit signal) if one came; leave with _exit when a background thread is still
 * computing (clean 0: exit() would run library destructors, OpenBLAS freeing
 * its buffers, under it); else sl_term_done.  Returns status. */
int sl_term_finish(int sig, int clean, int status);

#endif
