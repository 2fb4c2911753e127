/* SPDX-License-Identifier: MIT */
/* schedule.c - GPipe, 1F1B and interleaved 1F1B action orders. */
#include "schedule.h"

#include <string.h>

static const char *const names[SL_SCHED_N] = {"gpipe", "1f1b", "interleaved"};

const char *sl_sched_name(sl_sched k)
{
	return k >= 0 && k < SL_SCHED_N ? names[k] : "?";
}

int sl_sched_parse(const char *s, sl_sched *out)
{
	for (int i = 0; i < SL_SCHED_N; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (sl_sched)i;
			return SL_OK;
		}
	return SL_EINVAL;
}

int sl_pp_check(sl_sched k, int p, int m, int v, sl_err *err)
{
	if (k < 0 || k >= SL_SCHED_N)
		return sl_fail(err, SL_EINVAL, "unknown pipeline schedule");
	if (p < 1 || m < 1 || v < 1)
		return sl_fail(err, SL_EINVAL,
		               "stages, micro-batches and chunks must be at least 1");
	if (k != SL_SCHED_INTERLEAVED && v != 1)
		return sl_fail(
		    err, SL_EINVAL,
		    "--chunks=%d needs --schedule=interleaved (%s runs one model chunk per device)",
		    v, names[k]);
	if (k == SL_SCHED_INTERLEAVED) {
		if (p < 2)
			return sl_fail(
			    err, SL_EINVAL,
			    "the interleaved schedule needs pp of 2 or more: use --schedule=1f1b");
		if (v < 2)
			return sl_fail(err, SL_EINVAL,
			               "the interleaved schedule needs --chunks of 2 or more (with "
			               "one chunk it is 1f1b)");
		if (m % p != 0)
			return sl_fail(err, SL_EINVAL,
			               "interleaving needs the micro-batch count to be a multiple "
			               "of pp: %d is not a multiple of %d",
			               m, p);
	}
	return SL_OK;
}

static void put(sl_pp_action *a, int *n, int bwd, int mb, int chunk)
{
	a[*n].bwd = bwd;
	a[*n].mb = mb;
	a[*n].chunk = chunk;
	a[*n].joined = 0;
	(*n)++;
}

/* Megatron-LM's order of virtual micro-batches k = 0 .. m*v-1: groups of p
 * micro-batches go through chunk 0, then chunk 1, ...; backwards take the
 * chunks in reverse. */
static int vchunk(int k, int p, int v, int bwd)
{
	int c = (k % (p * v)) / p;
	return bwd ? v - 1 - c : c;
}

static int vmb(int k, int p, int v)
{
	return (k / (p * v)) * p + k % p;
}

int sl_pp_schedule(sl_sched k, int p, int m, int v, int s, sl_pp_action *out, sl_err *err)
{
	int rc = sl_pp_check(k, p, m, v, err);
	if (rc)
		return rc;
	if (s < 0 || s >= p)
		return sl_fail(err, SL_EINVAL, "stage %d is not one of %d", s, p);
	int n = 0;
	if (k == SL_SCHED_GPIPE) {
		for (int i = 0; i < m; i++)
			put(out, &n, 0, i, 0);
		for (int i = 0; i < m; i++)
			put(out, &n, 1, i, 0);
		return SL_OK;
	}
	if (k == SL_SCHED_1F1B) {
		int warm = p - s - 1 < m ? p - s - 1 : m;
		for (int i = 0; i < warm; i++)
			put(out, &n, 0, i, 0);
		for (int i = 0; i < m - warm; i++) {
			put(out, &n, 0, warm + i, 0);
			put(out, &n, 1, i, 0);
		}
		for (int i = m - warm; i < m; i++)
			put(out, &n, 1, i, 0);
		return SL_OK;
	}
	int total = m * v;
	int warm = m == p ? total : (p - s - 1) * 2 + (v - 1) * p;
	if (warm > total)
		warm = total;
	for (int i = 0; i < warm; i++)
		put(out, &n, 0, vmb(i, p, v), vchunk(i, p, v, 0));
	for (int i = 0; i < total - warm; i++) {
		put(out, &n, 0, vmb(warm + i, p, v), vchunk(warm + i, p, v, 0));
		put(out, &n, 1, vmb(i, p, v), vchunk(i, p, v, 1));
		out[n - 1].joined = 1;
	}
	for (int i = total - warm; i < total; i++)
		put(out, &n, 1, vmb(i, p, v), vchunk(i, p, v, 1));
	return SL_OK;
}

int sl_pp_inflight_peak(const sl_pp_action *a, int n)
{
	int cur = 0, peak = 0;
	for (int i = 0; i < n; i++) {
		cur += a[i].bwd ? -1 : 1;
		if (cur > peak)
			peak = cur;
	}
	return peak;
}
