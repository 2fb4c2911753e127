/* SPDX-License-Identifier: MIT */
/* cliprogress.c - the progress line (cliprogress.h). */
#include "cliprogress.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sl_cliprog {
	char what[64], unit[32];
	atomic_long done, total;
	atomic_int stop;
	const atomic_int *wdone, *wtotal;
	double t0;
	pthread_t th;
	pthread_mutex_t mu; /* stderr's line: drawing, clearing, report lines */
	int drawn;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds as a person reads a countdown: "8.5 s", "42 s", "3 min 05 s". */
static const char *countdown(double s, char *b, size_t n)
{
	if (s < 10)
		snprintf(b, n, "%.1f s", s);
	else if (s < 120)
		snprintf(b, n, "%.0f s", s);
	else
		snprintf(b, n, "%d min %02d s", (int)(s / 60), (int)s % 60);
	return b;
}

static void clear_line(sl_cliprog *p)
{
	if (p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->drawn = 0;
	}
}

static void draw(sl_cliprog *p)
{
	long done = p->wdone ? atomic_load(p->wdone) : atomic_load(&p->done);
	long total = p->wtotal ? atomic_load(p->wtotal) : atomic_load(&p->total);
	double el = now() - p->t0;
	char line[200], t[32];
	int n = snprintf(line, sizeof line, "%s: %ld of %ld %s", p->what, done, total, p->unit);
	if (total > 0 && n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, ", %.0f%%",
		              100.0 * (double)done / (double)total);
	if (n > 0 && (size_t)n < sizeof line) {
		if (done > 0 && done < total)
			snprintf(
			    line + n, sizeof line - (size_t)n, ", about %s left",
			    countdown(el * (double)(total - done) / (double)done, t, sizeof t));
		else
			snprintf(line + n, sizeof line - (size_t)n, ", %s so far",
			         countdown(el, t, sizeof t));
	}
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	p->drawn = 1;
}

static void *ticker(void *arg)
{
	sl_cliprog *p = arg;
	/* The first frame after a moment: a quick command shows none. */
	for (int tick = 0; !atomic_load(&p->stop); tick++) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
		if (tick >= 10 && tick % 5 == 0) {
			pthread_mutex_lock(&p->mu);
			if (!atomic_load(&p->stop))
				draw(p);
			pthread_mutex_unlock(&p->mu);
		}
	}
	return NULL;
}

sl_cliprog *sl_cliprog_start(const char *what, const char *unit, long total)
{
	const char *env = getenv("SHARDLAB_PROGRESS");
	if ((env && strcmp(env, "0") == 0) || !isatty(STDERR_FILENO))
		return NULL;
	sl_cliprog *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	snprintf(p->what, sizeof p->what, "%s", what);
	snprintf(p->unit, sizeof p->unit, "%s", unit);
	atomic_init(&p->done, 0);
	atomic_init(&p->total, total);
	atomic_init(&p->stop, 0);
	p->t0 = now();
	pthread_mutex_init(&p->mu, NULL);
	if (pthread_create(&p->th, NULL, ticker, p) != 0) {
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	return p;
}

void sl_cliprog_set(sl_cliprog *p, long done)
{
	if (p)
		atomic_store(&p->done, done);
}

void sl_cliprog_set_total(sl_cliprog *p, long total)
{
	if (p)
		atomic_store(&p->total, total);
}

void sl_cliprog_watch(sl_cliprog *p, const atomic_int *done, const atomic_int *total)
{
	if (p) {
		pthread_mutex_lock(&p->mu);
		p->wdone = done;
		p->wtotal = total;
		pthread_mutex_unlock(&p->mu);
	}
}

void sl_cliprog_print(sl_cliprog *p, FILE *f, const char *fmt, ...)
{
	va_list ap;
	if (p) {
		pthread_mutex_lock(&p->mu);
		clear_line(p);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fflush(f);
	if (p) {
		if (now() - p->t0 >= 0.5)
			draw(p);
		pthread_mutex_unlock(&p->mu);
	}
}

void sl_cliprog_stop(sl_cliprog *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, 1);
	pthread_join(p->th, NULL);
	clear_line(p);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
