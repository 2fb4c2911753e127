/* SPDX-License-Identifier: MIT */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct unit {
	const char *name;
	double scale;
};

/* Numbers are decimal and nothing else: strtod alone would also take
 * leading spaces, a '+', hexadecimal ("0x1p4"), inf, nan and the locale's
 * decimal comma.  The digits are converted in the C locale. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
	c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

size_t sl_scan_number(const char *s, double *v)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t digits = 0;
	while (isdigit(*p))
		p++, digits++;
	if (*p == '.')
		for (p++; isdigit(*p); p++)
			digits++;
	if (!digits)
		return 0;
	if ((*p == 'e' || *p == 'E') &&
	    (isdigit(p[1]) || ((p[1] == '+' || p[1] == '-') && isdigit(p[2])))) {
		p += 2;
		while (isdigit(*p))
			p++;
	}
	size_t n = (size_t)(p - (const unsigned char *)s);
	char buf[80];
	if (n >= sizeof buf)
		return 0;
	memcpy(buf, s, n);
	buf[n] = 0;
	pthread_once(&c_locale_once, make_c_locale);
	errno = 0;
	double x = c_locale ? strtod_l(buf, NULL, c_locale) : strtod(buf, NULL);
	if (errno == ERANGE && x != 0)
		x = HUGE_VAL; /* overflow: callers refuse it as too large */
	*v = x;
	return n;
}

static const struct unit byte_units[] = {{"", 1},
                                         {"B", 1},
                                         {"KiB", 1024.0},
                                         {"MiB", 1048576.0},
                                         {"GiB", 1073741824.0},
                                         {"TiB", 1099511627776.0},
                                         {"KB", 1e3},
                                         {"MB", 1e6},
                                         {"GB", 1e9},
                                         {"TB", 1e12},
                                         {"K", 1024.0},
                                         {"M", 1048576.0},
                                         {"G", 1073741824.0},
                                         {NULL, 0}};

/* A capital B is a byte and a lowercase b a bit, whether "/s" or "ps"
 * follows: GBps is bytes, as Calculon and most tools write it, and Gbps
 * bits, as network line rates are given. */
static const struct unit rate_units[] = {{"B/s", 1},
                                         {"KB/s", 1e3},
                                         {"MB/s", 1e6},
                                         {"GB/s", 1e9},
                                         {"TB/s", 1e12},
                                         {"KiB/s", 1024.0},
                                         {"MiB/s", 1048576.0},
                                         {"GiB/s", 1073741824.0},
                                         {"TiB/s", 1099511627776.0},
                                         {"Bps", 1},
                                         {"KBps", 1e3},
                                         {"MBps", 1e6},
                                         {"GBps", 1e9},
                                         {"TBps", 1e12},
                                         {"KiBps", 1024.0},
                                         {"MiBps", 1048576.0},
                                         {"GiBps", 1073741824.0},
                                         {"TiBps", 1099511627776.0},
                                         {"Kb/s", 1e3 / 8},
                                         {"Mb/s", 1e6 / 8},
                                         {"Gb/s", 1e9 / 8},
                                         {"Tb/s", 1e12 / 8},
                                         {"Kbit/s", 1e3 / 8},
                                         {"Mbit/s", 1e6 / 8},
                                         {"Gbit/s", 1e9 / 8},
                                         {"Tbit/s", 1e12 / 8},
                                         {"Kbps", 1e3 / 8},
                                         {"Mbps", 1e6 / 8},
                                         {"Gbps", 1e9 / 8},
                                         {"Tbps", 1e12 / 8},
                                         {NULL, 0}};

static const struct unit time_units[] = {
    {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ns", 1e-9}, {NULL, 0}};

static const struct unit flop_units[] = {
    {"FLOP/s", 1},    {"FLOPS", 1},      {"KFLOP/s", 1e3},  {"MFLOP/s", 1e6},
    {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {"KFLOPS", 1e3},
    {"MFLOPS", 1e6},  {"GFLOPS", 1e9},   {"TFLOPS", 1e12},  {"PFLOPS", 1e15},
    {"G", 1e9},       {"T", 1e12},       {"P", 1e15},       {NULL, 0}};

/* A kind of value: its units, and the words its messages use.  A family
 * without a "" unit needs one: a bare 5 was read as 5 s for a latency, a
 * million times what was meant, and only 0 means the same in every unit. */
struct family {
	const struct unit *units;
	const char *kind;    /* "rate" */
	const char *example; /* "450GB/s" */
	const char *unit;    /* the unit an example adds to a bare number */
	const char *known;   /* the units, for the messages */
	int bits;            /* B and b both occur: say which is which */
};

static const struct family bytes_family = {
    byte_units, "size", "64MiB", "MiB", "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB, K, M, G", 1};
static const struct family rate_family = {
    rate_units,
    "rate",
    "450GB/s",
    "GB/s",
    "B/s, GB/s, GiB/s, GBps (bytes) or Gb/s, Gbit/s, Gbps (bits), where G may be K, M or T",
    1};
static const struct family time_family = {time_units, "duration", "2us", "us", "ns, us, ms, s", 0};
static const struct family flop_family = {
    flop_units,
    "compute rate",
    "989TFLOP/s",
    "TFLOP/s",
    "FLOP/s, TFLOP/s, TFLOPS or T, where T may be K, M, G or P",
    0};

/* The one message for a value that is not a decimal number. */
static int not_decimal(sl_err *err, const struct family *f, const char *s)
{
	return sl_fail(err, SL_EINVAL,
	               "%s '%s' is not a decimal number %s, as in %s (no spaces around "
	               "it, no sign, hexadecimal, inf or nan)",
	               f->kind, s, f->units[0].name[0] ? "with a unit" : "with an optional unit",
	               f->example);
}

/* Split s into a finite non-negative number and a unit.  Units match
 * exactly as written: B is a byte and b a bit, so folding case would turn
 * one into the other (25gb/s was bytes but 25MBPS bits).  A unit that
 * matches only in another case is refused with the spellings it may mean.
 * One space may stand between the number and its unit, as the program
 * writes them ("450 GB/s"). */
static int parse_with(const char *s, const struct family *f, double *out, sl_err *err)
{
	if (!s || !*s)
		return sl_fail(err, SL_EINVAL, "empty %s", f->kind);
	double v;
	int neg = s[0] == '-';
	size_t n = sl_scan_number(s + neg, &v);
	const char *end = s + neg + n;
	if (!n || (end[0] == ' ' && (end[1] == 0 || end[1] == ' ')))
		return not_decimal(err, f, s);
	if (end[0] == ' ')
		end++;
	for (const char *c = end; *c; c++)
		if (isspace((unsigned char)*c))
			return not_decimal(err, f, s);
	if (n == 1 && s[neg] == '0' && (*end == 'x' || *end == 'X'))
		return not_decimal(err, f, s);
	if (neg)
		return sl_fail(err, SL_EINVAL, "%s '%s' is negative", f->kind, s);
	const struct unit *hit = NULL;
	for (const struct unit *u = f->units; u->name && !hit; u++)
		if (strcmp(end, u->name) == 0)
			hit = u;
	if (!hit && !*end) {
		if (v == 0) {
			*out = 0;
			return SL_OK;
		}
		/* The example keeps the digits; a figure as large as 1e12 was
		 * meant in the base unit, not as 1e12 TFLOP/s. */
		return sl_fail(err, SL_EINVAL,
		               "'%s' has no unit: write it with one of %s (for example %s%s)", s,
		               f->known, s, v >= 1e6 ? f->units[0].name : f->unit);
	}
	if (!hit) {
		char near[120] = "";
		size_t len = 0;
		for (const struct unit *u = f->units; u->name && len < sizeof near - 12; u++)
			if (*u->name && strcasecmp(end, u->name) == 0)
				len += (size_t)snprintf(near + len, sizeof near - len, "%s%s",
				                        len ? " or " : "", u->name);
		if (near[0])
			return sl_fail(err, SL_EINVAL,
			               "unit '%s' in %s '%s': units are case-sensitive%s: "
			               "write %s",
			               end, f->kind, s, f->bits ? " (B is a byte, b a bit)" : "",
			               near);
		return sl_fail(err, SL_EINVAL, "unknown unit '%s' in %s '%s' (known: %s)", end,
		               f->kind, s, f->known);
	}
	*out = v * hit->scale;
	if (!isfinite(*out))
		return sl_fail(err, SL_EINVAL, "%s '%s' is too large", f->kind, s);
	return SL_OK;
}

int sl_parse_bytes(const char *s, double *out, sl_err *err)
{
	return parse_with(s, &bytes_family, out, err);
}

int sl_parse_rate(const char *s, double *out, sl_err *err)
{
	return parse_with(s, &rate_family, out, err);
}

int sl_parse_time(const char *s, double *out, sl_err *err)
{
	return parse_with(s, &time_family, out, err);
}

int sl_parse_flops(const char *s, double *out, sl_err *err)
{
	return parse_with(s, &flop_family, out, err);
}

int sl_parse_double(const char *s, double *out, sl_err *err)
{
	double v;
	int neg = s && s[0] == '-';
	size_t n = s ? sl_scan_number(s + neg, &v) : 0;
	if (!n || s[neg + n] || !isfinite(v))
		return sl_fail(err, SL_EINVAL,
		               "'%s' is not a decimal number, as in 0.5 or 1e-3 (no "
		               "spaces around it, no '+', hexadecimal, inf or nan)",
		               s ? s : "");
	*out = neg ? -v : v;
	return SL_OK;
}

int sl_parse_int(const char *s, long lo, long hi, const char *what, long *out, sl_err *err)
{
	int neg = s && s[0] == '-';
	size_t n = 0;
	while (s && isdigit((unsigned char)s[neg + n]))
		n++;
	if (!s || !n || s[neg + n])
		return sl_fail(err, SL_EINVAL,
		               "%s '%s' is not a whole number (decimal digits only)", what,
		               s ? s : "");
	errno = 0;
	long v = strtol(s, NULL, 10);
	if (errno == ERANGE || v < lo || v > hi)
		return sl_fail(err, SL_EINVAL, "%s %s is out of range (%ld to %ld)", what, s, lo,
		               hi);
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
	static const char *const names[] = {"FLOP/s",  "KFLOP/s", "MFLOP/s",
	                                    "GFLOP/s", "TFLOP/s", "PFLOP/s"};
	return fmt_scaled(r, names, 1000.0, 6, buf, n);
}

char *sl_fmt_flop(double r, char *buf, size_t n)
{
	static const char *const names[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
	return fmt_scaled(r, names, 1000.0, 6, buf, n);
}

char *sl_fmt_ratio(double v, char *buf, size_t n)
{
	int d = 2;
	if (v > 0 && v < 0.1) {
		d = 1 - (int)floor(log10(v));
		d = d > 9 ? 9 : d;
	}
	snprintf(buf, n, "%.*f", d, v);
	return buf;
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

int sl_name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

/* Levenshtein distance of short words, for "did you mean". */
int sl_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 40 || lb > 40)
		return 99;
	int row[41];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int cur = row[j];
			int sub = prev + (a[i - 1] != b[j - 1]);
			int del = row[j] + 1, ins = row[j - 1] + 1;
			row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			prev = cur;
		}
	}
	return row[lb];
}

const char *sl_closest(const char *s, const char *const *names, int n)
{
	const char *best = NULL;
	/* Within two edits, and fewer than s has letters: "x" is one edit
	 * from "m" but is no misspelling of it.  Two names equally near are
	 * no guess either (llama-2-7b is as near llama-3-8b as llama-3-70b). */
	size_t len = strlen(s);
	int bd = len < 3 ? (int)len : 3, ties = 0;
	for (int i = 0; i < n; i++) {
		if (!names[i])
			continue;
		int d = sl_edit_distance(s, names[i]);
		if (d < bd) {
			bd = d;
			best = names[i];
			ties = 0;
		} else if (d == bd && best && strcmp(best, names[i]) != 0) {
			ties++;
		}
	}
	return ties ? NULL : best;
}

const char *sl_closest_in(const char *s, const char *list, char *buf, size_t n)
{
	char words[512];
	const char *names[64];
	int k = 0;
	char *save = NULL;
	snprintf(words, sizeof words, "%s", list);
	for (char *w = strtok_r(words, ", ", &save); w && k < 64; w = strtok_r(NULL, ", ", &save))
		names[k++] = w;
	const char *near = sl_closest(s, names, k);
	if (!near || !n)
		return NULL;
	snprintf(buf, n, "%s", near);
	return buf;
}
