/* SPDX-License-Identifier: MIT */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct unit {
	const char *name;
	double scale;
};

/* Split s into a finite non-negative number and a suffix; the suffix is
 * matched case-sensitively first (b vs B matters), then case-insensitively. */
static int parse_with(const char *s, const struct unit *units, const char *kind, double *out,
		      sl_err *err)
{
	if (!s || !*s)
		return sl_fail(err, SL_EINVAL, "empty %s", kind);
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || errno == ERANGE || !isfinite(v))
		return sl_fail(err, SL_EINVAL, "'%s' is not a %s (a number with an optional unit)", s, kind);
	if (v < 0)
		return sl_fail(err, SL_EINVAL, "%s '%s' is negative", kind, s);
	while (*end == ' ')
		end++;
	const struct unit *hit = NULL;
	for (const struct unit *u = units; u->name; u++)
		if (strcmp(end, u->name) == 0) {
			hit = u;
			break;
		}
	for (const struct unit *u = units; !hit && u->name; u++)
		if (strcasecmp(end, u->name) == 0)
			hit = u;
	if (!hit) {
		char known[160] = "";
		size_t len = 0;
		for (const struct unit *u = units; u->name && len < sizeof known - 12; u++) {
			if (!*u->name)
				continue;
			len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", len ? ", " : "", u->name);
		}
		return sl_fail(err, SL_EINVAL, "unknown unit '%s' in %s '%s' (known: %s)", end, kind, s, known);
	}
	*out = v * hit->scale;
	if (!isfinite(*out))
		return sl_fail(err, SL_EINVAL, "%s '%s' is too large", kind, s);
	return SL_OK;
}

static const struct unit byte_units[] = {
	{"", 1}, {"B", 1},
	{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0},
	{NULL, 0}};

static const struct unit rate_units[] = {
	{"", 1}, {"B/s", 1},
	{"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12},
	{"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
	{"Kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8}, {"Gb/s", 1e9 / 8}, {"Tb/s", 1e12 / 8},
	{"Kbps", 1e3 / 8}, {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8},
	{NULL, 0}};

static const struct unit time_units[] = {
	{"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ns", 1e-9},
	{NULL, 0}};

static const struct unit flop_units[] = {
	{"", 1}, {"FLOP/s", 1}, {"FLOPS", 1},
	{"KFLOP/s", 1e3}, {"MFLOP/s", 1e6}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
	{"KFLOPS", 1e3}, {"MFLOPS", 1e6}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15},
	{"G", 1e9}, {"T", 1e12}, {"P", 1e15},
	{NULL, 0}};

int sl_parse_bytes(const char *s, double *out, sl_err *err)
{
	return parse_with(s, byte_units, "size", out, err);
}

int sl_parse_rate(const char *s, double *out, sl_err *err)
{
	/* Exact-case lookup keeps Gb/s (bits) apart from GB/s (bytes). */
	return parse_with(s, rate_units, "rate", out, err);
}

int sl_parse_time(const char *s, double *out, sl_err *err)
{
	return parse_with(s, time_units, "duration", out, err);
}

int sl_parse_flops(const char *s, double *out, sl_err *err)
{
	return parse_with(s, flop_units, "compute rate", out, err);
}

int sl_parse_double(const char *s, double *out, sl_err *err)
{
	errno = 0;
	char *end;
	double v = s ? strtod(s, &end) : 0;
	if (!s || end == s || *end || errno == ERANGE || !isfinite(v))
		return sl_fail(err, SL_EINVAL, "'%s' is not a number", s ? s : "");
	*out = v;
	return SL_OK;
}

int sl_parse_int(const char *s, long lo, long hi, const char *what, long *out, sl_err *err)
{
	errno = 0;
	char *end;
	long v = s ? strtol(s, &end, 10) : 0;
	if (!s || end == s || *end || errno == ERANGE)
		return sl_fail(err, SL_EINVAL, "%s '%s' is not a whole number", what, s ? s : "");
	if (v < lo || v > hi)
		return sl_fail(err, SL_EINVAL, "%s %ld is out of range (%ld to %ld)", what, v, lo, hi);
	*out = v;
	return SL_OK;
}

static char *fmt_scaled(double v, const char *const *names, double base, int nnames, char *buf,
			size_t n)
{
	int i = 0;
	double a = fabs(v);
	while (i + 1 < nnames && a >= base * 0.9995) {
		a /= base;
		v /= base;
		i++;
	}
	if (a == 0 || a >= 100 || i == 0)
		snprintf(buf, n, "%.0f %s", v, names[i]);
	else if (a >= 10)
		snprintf(buf, n, "%.1f %s", v, names[i]);
	else
		snprintf(buf, n, "%.2f %s", v, names[i]);
	return buf;
}

char *sl_fmt_bytes(double bytes, char *buf, size_t n)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	return fmt_scaled(bytes, names, 1024.0, 5, buf, n);
}

char *sl_fmt_rate(double r, char *buf, size_t n)
{
	static const char *const names[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
	return fmt_scaled(r, names, 1000.0, 5, buf, n);
}

char *sl_fmt_flops(double r, char *buf, size_t n)
{
	static const char *const names[] = {"FLOP/s", "KFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s",
					    "PFLOP/s"};
	return fmt_scaled(r, names, 1000.0, 6, buf, n);
}

char *sl_fmt_count(double v, char *buf, size_t n)
{
	static const char *const u[] = {"", "k", "M", "G", "T"};
	int i = 0;
	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, n, v >= 100 || i == 0 ? "%.0f%s" : "%.3g%s", v, u[i]);
	return buf;
}

char *sl_fmt_time(double s, char *buf, size_t n)
{
	double a = fabs(s);
	if (a == 0)
		snprintf(buf, n, "0 s");
	else if (a < 1e-6)
		snprintf(buf, n, "%.1f ns", s * 1e9);
	else if (a < 1e-3)
		snprintf(buf, n, "%.2f us", s * 1e6);
	else if (a < 1)
		snprintf(buf, n, "%.2f ms", s * 1e3);
	else
		snprintf(buf, n, "%.3f s", s);
	return buf;
}
