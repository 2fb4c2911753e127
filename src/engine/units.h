/* SPDX-License-Identifier: MIT */
/* units.h - reading and writing sizes, rates and durations with units. */
#ifndef SL_UNITS_H
#define SL_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Every number is decimal: digits with an optional point and exponent (64,
 * 1.5, 2e9), converted in the C locale.  Spaces around it, a '+', hex, inf
 * and nan are refused; units match exactly as written (see shardlab(1),
 * UNITS).  sl_scan_number reads one at the start of s and returns its
 * length, 0 if none (an overflow reads as HUGE_VAL). */
size_t sl_scan_number(const char *s, double *v);

/* Sizes: 1024, 4KiB, 64MiB, 1GiB, 1.5GB, 512B (KB/MB/GB are powers of 10). */
int sl_parse_bytes(const char *s, double *out, sl_err *err);
/* Rates, times and compute rates need a unit; only 0 may stand alone.
 * Rates in bytes/s: 450GB/s, 25GiB/s, 100GBps (B: bytes); 400Gb/s,
 * 400Gbit/s, 400Gbps (b: bits). */
int sl_parse_rate(const char *s, double *out, sl_err *err);
/* Durations in seconds: 2us, 1.5ms, 0.1s, 500ns, 0. */
int sl_parse_time(const char *s, double *out, sl_err *err);
/* Compute rates in FLOP/s: 989TFLOP/s, 30GFLOPS, 5T. */
int sl_parse_flops(const char *s, double *out, sl_err *err);
/* Decimal digits (a '-' allowed) within [lo, hi]; what names it in messages. */
int sl_parse_int(const char *s, long lo, long hi, const char *what, long *out, sl_err *err);
/* A decimal real number, without a unit (a '-' allowed). */
int sl_parse_double(const char *s, double *out, sl_err *err);

/* Human forms: "64.0 MiB", "450 GB/s", "2.00 us", "989 TFLOP/s". */
char *sl_fmt_bytes(double bytes, char *buf, size_t n);
char *sl_fmt_rate(double bytes_per_s, char *buf, size_t n);
char *sl_fmt_time(double seconds, char *buf, size_t n);
char *sl_fmt_flops(double flops_per_s, char *buf, size_t n);
/* An amount of work, "25.8 GFLOP". */
char *sl_fmt_flop(double flops, char *buf, size_t n);
/* A ratio (a speedup): "3.68", and below 0.1 in two significant digits,
 * "0.0037", so a run a link's latency makes slow does not read 0.00. */
char *sl_fmt_ratio(double v, char *buf, size_t n);
/* A count in three or four digits: "961k", "1.20M". */
char *sl_fmt_count(double v, char *buf, size_t n);

/* The index of s among n names, or -1: what the name-to-enum parsers share. */
int sl_name_index(const char *const *names, int n, const char *s);
/* The edit distance of two short words (99 past 40 bytes each). */
int sl_edit_distance(const char *a, const char *b);
/* The one of n names nearest s, for "did you mean": NULL if none is within
 * two edits, fewer than s's length, or two are equally near (NULL names
 * are skipped). */
const char *sl_closest(const char *s, const char *const *names, int n);
/* The same over list, names parted by commas or spaces ("ring, tree"): the
 * nearest copied into buf (n bytes), or NULL. */
const char *sl_closest_in(const char *s, const char *list, char *buf, size_t n);

#endif
