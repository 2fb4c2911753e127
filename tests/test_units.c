/* SPDX-License-Identifier: MIT */
/* test_units.c - reading and writing sizes, rates, durations and compute
 * rates: every unit family, bits against bytes, and what must be refused.
 * Expected values are written out here by hand. */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "units.h"

typedef int (*parse_fn)(const char *, double *, sl_err *);

struct good {
	const char *text;
	double want;
};

static void expect_all(parse_fn parse, const struct good *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double v = -1;
		sl_err err = {0};
		int rc = parse(g[i].text, &v, &err);
		if (rc != SL_OK)
			fail_msg("'%s' was refused: %s", g[i].text, err.msg);
		if (fabs(v - g[i].want) > 1e-12 * fabs(g[i].want))
			fail_msg("'%s' read as %.17g, want %.17g", g[i].text, v, g[i].want);
	}
}

static void refuse_all(parse_fn parse, const char *const *bad, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double v = 12345;
		sl_err err = {0};
		int rc = parse(bad[i], &v, &err);
		if (rc != SL_EINVAL)
			fail_msg("'%s' was accepted as %g", bad[i], v);
		if (err.code != SL_EINVAL || strlen(err.msg) == 0)
			fail_msg("'%s' was refused without a message", bad[i]);
	}
}

#define N(a) (sizeof(a) / sizeof *(a))

static void test_bytes(void **state)
{
	(void)state;
	static const struct good g[] = {
	    {"1024", 1024},
	    {"0", 0},
	    {"512B", 512},
	    {"4KiB", 4096},
	    {"64MiB", 64.0 * 1024 * 1024},
	    {"1GiB", 1024.0 * 1024 * 1024},
	    {"2TiB", 2.0 * 1024 * 1024 * 1024 * 1024},
	    {"2KB", 2000},
	    {"3MB", 3e6},
	    {"1.5GB", 1.5e9},
	    {"1TB", 1e12},
	    {"4K", 4096},
	    {"1M", 1048576},
	    {"1G", 1073741824},
	    {"8 MiB", 8.0 * 1048576},
	    {"1e3", 1000},
	};
	expect_all(sl_parse_bytes, g, N(g));
	static const char *const bad[] = {"",    "abc",    "MiB",    "4XiB",  "4 parsecs",
	                                  "-1",  "-1KiB",  "4MiB/s", "1e400", "nan",
	                                  "inf", "12KiBx", "1..5MB"};
	refuse_all(sl_parse_bytes, bad, N(bad));
}

static void test_rates_bits_and_bytes(void **state)
{
	(void)state;
	static const struct good g[] = {
	    {"450GB/s", 450e9},
	    {"25GiB/s", 25.0 * 1073741824},
	    {"400Gb/s", 50e9}, /* bits: 400e9 / 8 */
	    {"100Gbps", 12.5e9},
	    {"8Kb/s", 1000},
	    {"80Mb/s", 10e6},
	    {"1Tb/s", 125e9},
	    {"2TB/s", 2e12},
	    {"1MB/s", 1e6},
	    {"1KB/s", 1e3},
	    {"1MiB/s", 1048576},
	    {"5B/s", 5},
	    {"1e9B/s", 1e9},
	    {"0", 0},
	    /* "ps" spellings: B bytes, b bits, as with "/s" */
	    {"100GBps", 100e9},
	    {"3MBps", 3e6},
	    {"2KBps", 2e3},
	    {"1TBps", 1e12},
	    {"25GiBps", 25.0 * 1073741824},
	    {"7Bps", 7},
	};
	expect_all(sl_parse_rate, g, N(g));

	/* The same figure in bits is an eighth of it in bytes. */
	const char *pairs[][2] = {{"1Gb/s", "1GB/s"}, {"3Mb/s", "3MB/s"}, {"7Kb/s", "7KB/s"},
	                          {"2Tb/s", "2TB/s"}, {"1Gbps", "1GBps"}, {"5Mbps", "5MBps"}};
	for (size_t i = 0; i < N(pairs); i++) {
		double bits, bytes;
		sl_err err = {0};
		assert_int_equal(sl_parse_rate(pairs[i][0], &bits, &err), SL_OK);
		assert_int_equal(sl_parse_rate(pairs[i][1], &bytes, &err), SL_OK);
		assert_true(fabs(bits * 8 - bytes) <= 1e-12 * bytes);
	}
	static const char *const bad[] = {"",       "fast",     "450GB",     "450GBs",  "450XB/s",
	                                  "-1GB/s", "-0.5Gb/s", "1e999GB/s", "nan",     "12GB/s/s",
	                                  "1e9",    "100",      "100GiBs",   "100Gibps"};
	refuse_all(sl_parse_rate, bad, N(bad));
}

static void test_times(void **state)
{
	(void)state;
	static const struct good g[] = {
	    {"2us", 2e-6}, {"1.5ms", 1.5e-3}, {"0.1s", 0.1},        {"500ns", 500e-9},
	    {"0", 0},      {"0.0", 0},        {"7\xc2\xb5s", 7e-6}, {"10 ms", 10e-3},
	};
	expect_all(sl_parse_time, g, N(g));
	static const char *const bad[] = {"",     "soon", "2 weeks", "5parsecs", "-1us",
	                                  "-0.1", "2uss", "ms",      "1e999s",   "inf",
	                                  "3",    "5",    "1e-6"};
	refuse_all(sl_parse_time, bad, N(bad));
}

static void test_flops(void **state)
{
	(void)state;
	static const struct good g[] = {
	    {"989TFLOP/s", 989e12}, {"30GFLOPS", 30e9}, {"1e12FLOP/s", 1e12}, {"2PFLOP/s", 2e15},
	    {"5T", 5e12},           {"7MFLOP/s", 7e6},  {"3KFLOPS", 3e3},     {"100FLOP/s", 100},
	};
	expect_all(sl_parse_flops, g, N(g));
	static const char *const bad[] = {"",         "lots", "989TB/s", "-1TFLOP/s",
	                                  "1XFLOP/s", "nan",  "1e12"};
	refuse_all(sl_parse_flops, bad, N(bad));
}

/* A rate, a time or a compute rate without a unit is refused, naming the
 * units to write (a bare 5 was 5 s for a latency); only 0 may stand alone.
 * A size without one is bytes, as every tool reads it. */
static void test_unit_required(void **state)
{
	(void)state;
	struct msg {
		parse_fn f;
		const char *in, *want;
	} msgs[] = {
	    {sl_parse_time, "5",
	     "'5' has no unit: write it with one of ns, us, ms, s (for example 5us)"},
	    {sl_parse_rate, "100",
	     "'100' has no unit: write it with one of B/s, GB/s, GiB/s, GBps "
	     "(bytes) or Gb/s, Gbit/s, Gbps (bits), where G may be K, M or T "
	     "(for example 100GB/s)"},
	    {sl_parse_flops, "1e12",
	     "'1e12' has no unit: write it with one of FLOP/s, TFLOP/s, "
	     "TFLOPS or T, where T may be K, M, G or P (for example "
	     "1e12FLOP/s)"},
	    {sl_parse_flops, "989",
	     "'989' has no unit: write it with one of FLOP/s, TFLOP/s, "
	     "TFLOPS or T, where T may be K, M, G or P (for example "
	     "989TFLOP/s)"},
	    {sl_parse_rate, "10GB",
	     "unknown unit 'GB' in rate '10GB' (known: B/s, GB/s, GiB/s, GBps "
	     "(bytes) or Gb/s, Gbit/s, Gbps (bits), where G may be K, M or T)"},
	};
	for (size_t i = 0; i < N(msgs); i++) {
		double v;
		sl_err err = {0};
		assert_int_equal(msgs[i].f(msgs[i].in, &v, &err), SL_EINVAL);
		assert_string_equal(err.msg, msgs[i].want);
	}
	static const parse_fn need[] = {sl_parse_rate, sl_parse_time, sl_parse_flops};
	static const struct good zero[] = {{"0", 0}, {"0.0", 0}, {"0e3", 0}};
	for (size_t p = 0; p < N(need); p++)
		expect_all(need[p], zero, N(zero));
	static const struct good size[] = {{"4096", 4096}};
	expect_all(sl_parse_bytes, size, N(size));
}

/* The edit distance behind every "did you mean". */
static void test_closest(void **state)
{
	(void)state;
	assert_int_equal(sl_edit_distance("bandwith", "bandwidth"), 1);
	assert_int_equal(sl_edit_distance("", "abc"), 3);
	assert_int_equal(sl_edit_distance("same", "same"), 0);
	static const char *const names[] = {"single", "colwise", NULL, "rowwise"};
	assert_string_equal(sl_closest("colwize", names, 4), "colwise");
	assert_string_equal(sl_closest("rowise", names, 4), "rowwise");
	assert_null(sl_closest("diagonal", names, 4));
	/* A word of one or two letters is near everything: no guess. */
	static const char *const shorts[] = {"m", "k", "n"};
	assert_null(sl_closest("x", shorts, 3));
	static const char *const models[] = {"llama-3-70b", "llama-3-8b"};
	assert_null(sl_closest("llama-2-7b", models, 2)); /* two equally near */
	char buf[16];
	assert_string_equal(sl_closest_in("rign", "full, ring", buf, sizeof buf), "ring");
	assert_string_equal(sl_closest_in("modle", "model measured", buf, sizeof buf), "model");
	assert_null(sl_closest_in("torus", "full, ring", buf, sizeof buf));
}

static void test_int_and_double(void **state)
{
	(void)state;
	long v = 0;
	sl_err err = {0};
	assert_int_equal(sl_parse_int("8", 1, 64, "devices", &v, &err), SL_OK);
	assert_int_equal(v, 8);
	assert_int_equal(sl_parse_int("64", 1, 64, "devices", &v, &err), SL_OK);
	assert_int_equal(v, 64);
	static const char *const bad[] = {
	    "0", "65", "-3", "", "4x", "1.5", "1e3", "abc", "99999999999999999999999"};
	for (size_t i = 0; i < N(bad); i++) {
		memset(&err, 0, sizeof err);
		if (sl_parse_int(bad[i], 1, 64, "devices", &v, &err) != SL_EINVAL)
			fail_msg("'%s' accepted as a device count", bad[i]);
		assert_true(strlen(err.msg) > 0);
		assert_non_null(strstr(err.msg, "devices"));
	}
	double d = 0;
	assert_int_equal(sl_parse_double("2.5", &d, &err), SL_OK);
	assert_true(d == 2.5);
	assert_int_equal(sl_parse_double("-4", &d, &err), SL_OK);
	assert_true(d == -4);
	static const char *const badd[] = {"", "x", "2.5x", "nan", "inf", "1e999"};
	for (size_t i = 0; i < N(badd); i++)
		if (sl_parse_double(badd[i], &d, &err) != SL_EINVAL)
			fail_msg("'%s' accepted as a number", badd[i]);
}

/* Numbers are decimal and units exact: what strtod and case folding let
 * through before (" 64", "+64", "0x1p4GB/s", 25gb/s as bytes but 25MBPS as
 * bits) is refused, each with one message that says what to write. */
static void test_strict_numbers_and_units(void **state)
{
	(void)state;
	static const parse_fn parsers[] = {sl_parse_bytes, sl_parse_rate, sl_parse_time,
	                                   sl_parse_flops};
	static const char *const forms[] = {" 64",   "64 ",   "+64", "\t64", "0x40",
	                                    "0x1p4", "0X10",  "inf", "nan",  "infinity",
	                                    "1e999", "64  B", " ",   "."};
	for (size_t p = 0; p < N(parsers); p++)
		refuse_all(parsers[p], forms, N(forms));
	static const char *const rates[] = {"25gb/s",    "25MBPS", "25GBPS", "25gbps", "1gib/s",
	                                    "0x1p4GB/s", "+5GB/s", " 5GB/s", "5GB/s ", "5 GB/s "};
	refuse_all(sl_parse_rate, rates, N(rates));
	static const char *const times[] = {"2US", "2Ms", "2MS", "1S", "2 us "};
	refuse_all(sl_parse_time, times, N(times));
	static const char *const sizes[] = {"80gib", "80gb", "1kib", "4mib"};
	refuse_all(sl_parse_bytes, sizes, N(sizes));

	static const struct good g[] = {
	    {"400Gbit/s", 50e9},         {"8Kbit/s", 1000},
	    {"1Tbit/s", 125e9},          {"100Tbps", 12.5e12},
	    {"1TiB/s", 1099511627776.0}, {"450 GB/s", 450e9},
	    {".5GB/s", 0.5e9},           {"2E9B/s", 2e9},
	    {"1.5e-3GB/s", 1.5e6},
	};
	expect_all(sl_parse_rate, g, N(g));

	struct msg {
		parse_fn f;
		const char *in, *want;
	} msgs[] = {
	    {sl_parse_rate, "25gb/s",
	     "unit 'gb/s' in rate '25gb/s': units are case-sensitive (B is a "
	     "byte, b a bit): write GB/s or Gb/s"},
	    {sl_parse_rate, "25MBPS",
	     "unit 'MBPS' in rate '25MBPS': units are case-sensitive (B is a "
	     "byte, b a bit): write MBps or Mbps"},
	    {sl_parse_time, "2US",
	     "unit 'US' in duration '2US': units are case-sensitive: write us"},
	    {sl_parse_rate, "0x1p4GB/s",
	     "rate '0x1p4GB/s' is not a decimal number with a unit, as "
	     "in 450GB/s (no spaces around it, no sign, hexadecimal, "
	     "inf or nan)"},
	    {sl_parse_bytes, " 64",
	     "size ' 64' is not a decimal number with an optional unit, as in "
	     "64MiB (no spaces around it, no sign, hexadecimal, inf or nan)"},
	};
	for (size_t i = 0; i < N(msgs); i++) {
		double v;
		sl_err err = {0};
		assert_int_equal(msgs[i].f(msgs[i].in, &v, &err), SL_EINVAL);
		assert_string_equal(err.msg, msgs[i].want);
	}

	/* Integers and plain reals. */
	static const char *const ints[] = {" 8", "8 ", "+8", "0x8", "8abc", "08x", "\t8", "1e3"};
	long l;
	for (size_t i = 0; i < N(ints); i++) {
		sl_err err = {0};
		if (sl_parse_int(ints[i], 1, 64, "--devices", &l, &err) != SL_EINVAL)
			fail_msg("'%s' accepted as a device count", ints[i]);
		char want[128], shown[16];
		sl_escape_controls(shown, sizeof shown, ints[i]); /* the tab shows as \t */
		snprintf(want, sizeof want,
		         "--devices '%s' is not a whole number (decimal digits only)", shown);
		assert_string_equal(err.msg, want);
	}
	sl_err err = {0};
	assert_int_equal(sl_parse_int("99999999999999999999", 1, 1000000, "--m", &l, &err),
	                 SL_EINVAL);
	assert_string_equal(err.msg, "--m 99999999999999999999 is out of range (1 to 1000000)");
	assert_int_equal(sl_parse_int("008", 1, 64, "--devices", &l, &err), SL_OK);
	assert_int_equal(l, 8);
	static const char *const reals[] = {" 2",     "2 ",  "+2",   "0x10",
	                                    "0x1p-4", "inf", "-inf", "nan"};
	for (size_t i = 0; i < N(reals); i++) {
		double d;
		if (sl_parse_double(reals[i], &d, &err) != SL_EINVAL)
			fail_msg("'%s' accepted as a number", reals[i]);
	}
}

/* A message quotes what it was given with control and invisible characters
 * escaped: it stays one visible line and sends nothing to the terminal. */
static void test_messages_escaped(void **state)
{
	(void)state;
	sl_err err = {0};
	sl_fail(&err, SL_EINVAL, "bad '%s'",
	        "\x1b[2J\n\t\x7f\xc2\x9b\xef\xbb\xbf"
	        "a\xe2\x80\xae"
	        "b\xc3\xa9");
	assert_string_equal(err.msg, "bad '\\x1b[2J\\n\\t\\x7f\\u009b\\ufeffa\\u202eb\xc3\xa9'");
	/* Truncated at the buffer, never in the middle of an escape. */
	char small[8];
	sl_escape_controls(small, sizeof small,
	                   "ab\x01"
	                   "cdef");
	assert_string_equal(small, "ab\\x01c");
	sl_escape_controls(small, 5,
	                   "ab\x01"
	                   "cdef");
	assert_string_equal(small, "ab");
}

struct shown {
	double v;
	const char *want;
};

static void expect_fmt(char *(*fmt)(double, char *, size_t), const struct shown *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char buf[32];
		const char *got = fmt(s[i].v, buf, sizeof buf);
		if (strcmp(got, s[i].want) != 0)
			fail_msg("%.17g formatted as '%s', want '%s'", s[i].v, got, s[i].want);
	}
}

static void test_formatting(void **state)
{
	(void)state;
	static const struct shown bytes[] = {
	    {0, "0 B"},
	    {512, "512 B"},
	    {1000, "1000 B"},
	    {1024, "1.00 KiB"},
	    {1536, "1.50 KiB"},
	    {64.0 * 1048576, "64.0 MiB"},
	    {200.0 * 1048576, "200 MiB"},
	    {1.5 * 1073741824, "1.50 GiB"},
	    {80.0 * 1073741824, "80.0 GiB"},
	    {2.0 * 1099511627776, "2.00 TiB"},
	};
	expect_fmt(sl_fmt_bytes, bytes, N(bytes));
	static const struct shown rates[] = {
	    {999, "999 B/s"},      {1e3, "1.00 KB/s"},  {5.5e9, "5.50 GB/s"},
	    {12.5e9, "12.5 GB/s"}, {450e9, "450 GB/s"}, {2e12, "2.00 TB/s"},
	};
	expect_fmt(sl_fmt_rate, rates, N(rates));
	static const struct shown times[] = {
	    {0, "0 s"},          {5e-9, "5.0 ns"},    {2e-6, "2.00 us"},
	    {1.5e-3, "1.50 ms"}, {0.25, "250.00 ms"}, {2.5, "2.500 s"},
	};
	expect_fmt(sl_fmt_time, times, N(times));
	static const struct shown flops[] = {
	    {989e12, "989 TFLOP/s"},
	    {30e9, "30.0 GFLOP/s"},
	    {1.5e15, "1.50 PFLOP/s"},
	    {500, "500 FLOP/s"},
	};
	expect_fmt(sl_fmt_flops, flops, N(flops));
	static const struct shown ratios[] = {
	    {0, "0.00"},        {3.678, "3.68"},         {0.1, "0.10"},
	    {0.0037, "0.0037"}, {0.00012345, "0.00012"}, {4e-5, "0.000040"},
	};
	expect_fmt(sl_fmt_ratio, ratios, N(ratios));
}

/* What is written can be read back, to the precision written (3 figures). */
static void test_round_trip(void **state)
{
	(void)state;
	const double vals[] = {1, 3, 999, 1000, 1234, 65536, 3.3e6, 7.7e8, 4.2e10, 9.9e12};
	for (size_t i = 0; i < N(vals); i++) {
		char buf[32];
		double back;
		sl_err err = {0};
		double v = vals[i], t = v * 1e-9;
		sl_fmt_bytes(v, buf, sizeof buf);
		assert_int_equal(sl_parse_bytes(buf, &back, &err), SL_OK);
		assert_true(fabs(back - v) <= 0.005 * v);
		sl_fmt_rate(v, buf, sizeof buf);
		assert_int_equal(sl_parse_rate(buf, &back, &err), SL_OK);
		assert_true(fabs(back - v) <= 0.005 * v);
		sl_fmt_flops(v, buf, sizeof buf);
		assert_int_equal(sl_parse_flops(buf, &back, &err), SL_OK);
		assert_true(fabs(back - v) <= 0.005 * v);
		sl_fmt_time(t, buf, sizeof buf);
		assert_int_equal(sl_parse_time(buf, &back, &err), SL_OK);
		assert_true(fabs(back - t) <= 0.005 * t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bytes),
	    cmocka_unit_test(test_rates_bits_and_bytes),
	    cmocka_unit_test(test_times),
	    cmocka_unit_test(test_flops),
	    cmocka_unit_test(test_unit_required),
	    cmocka_unit_test(test_closest),
	    cmocka_unit_test(test_int_and_double),
	    cmocka_unit_test(test_strict_numbers_and_units),
	    cmocka_unit_test(test_messages_escaped),
	    cmocka_unit_test(test_formatting),
	    cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
