/* SPDX-License-Identifier: MIT */
/* test_lesson.c - the lesson language: its checker on malformed lessons, the
 * interpreter's steps and figures against independent formulas, the
 * headless runner, progress files and lesson lookup. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "tmputil.h"

#include "catalog.h"
#include "headless.h"
#include "lesson.h"
#include "progress.h"
#include "setup.h"

#define HEAD "title T\nminutes 5\n"

/* ---- helpers ---- */

static int parse(const char *text, sl_lesson **l, sl_err *err)
{
	return sl_lesson_parse("t.lesson", text, strlen(text), l, NULL, err);
}

static sl_lesson *must_parse(const char *text)
{
	sl_lesson *l = NULL;
	sl_err err = {0};
	if (parse(text, &l, &err))
		fail_msg("lesson refused: %s", err.msg);
	return l;
}

static void must_next(sl_vm *vm, sl_step *st, sl_step_kind want)
{
	sl_err err = {0};
	if (sl_vm_next(vm, st, &err))
		fail_msg("sl_vm_next: %s", err.msg);
	if (st->kind != want)
		fail_msg("step kind %d at line %d, wanted %d", st->kind, st->line, want);
}

/* The engine's figure behind a numeric question, to nine digits, through
 * the oracle a learner's front end can show. */
static double oracle(sl_vm *vm)
{
	char buf[64];
	sl_err err = {0};
	if (sl_vm_expected(vm, buf, sizeof buf, &err))
		fail_msg("expected: %s", err.msg);
	return strtod(buf, NULL);
}

static void assert_rel(double got, double want, double tol)
{
	double d = got - want;
	if (d < 0)
		d = -d;
	double s = want < 0 ? -want : want;
	if (!(d <= tol * s))
		fail_msg("got %.12g, wanted %.12g (tolerance %g)", got, want, tol);
}

/* ---- the checker: a table of malformed lessons ---- */

struct bad {
	const char *what;
	const char *text;
	const char *message; /* the whole first error */
};

static const struct bad bads[] = {
    {"unknown command", HEAD "sya hello\n",
     "t.lesson:3: unknown command 'sya' (did you mean 'say'?)"},
    {"unknown command far from any", HEAD "frobnicate\n",
     "t.lesson:3: unknown command 'frobnicate' (commands: title minutes about say setup run step "
     "pause check let label jump finish question menu explore show)"},
    {"missing parameter", HEAD "jump\nsay x\n",
     "t.lesson:3: jump needs a label: jump LABEL [if CONDITION]"},
    {"missing text", HEAD "say\n", "t.lesson:3: say needs a text: say TEXT"},
    {"bad number", "title T\nminutes ten\nsay x\n",
     "t.lesson:2: minutes 'ten' is not a whole number (decimal digits only)"},
    {"number out of range", HEAD "step 0\n",
     "t.lesson:3: step 0 is out of range (1 to 1000): step N shows the next N operations"},
    {"bad unit", HEAD "setup bandwidth=10GB\nsay x\n",
     "t.lesson:3: bandwidth: unknown unit 'GB' in rate '10GB' (known: B/s, GB/s, GiB/s, GBps "
     "(bytes) or Gb/s, Gbit/s, Gbps (bits), where G may be K, M or T)"},
    {"rate without a unit", HEAD "setup bandwidth=100\nsay x\n",
     "t.lesson:3: bandwidth: '100' has no unit: write it with one of B/s, GB/s, GiB/s, GBps "
     "(bytes) or Gb/s, Gbit/s, Gbps (bits), where G may be K, M or T (for example 100GB/s)"},
    {"latency without a unit", HEAD "setup latency=5\nsay x\n",
     "t.lesson:3: latency: '5' has no unit: write it with one of ns, us, ms, s (for example 5us)"},
    {"unit in the wrong case", HEAD "setup bandwidth=25gb/s\nsay x\n",
     "t.lesson:3: bandwidth: unit 'gb/s' in rate '25gb/s': units are case-sensitive (B is a byte, "
     "b a bit): write GB/s or Gb/s"},
    {"hexadecimal literal", HEAD "run matmul\ncheck time < 0x10us\n",
     "t.lesson:4: '0x10us' is not a decimal number (as in 2.5, 1e9 or 64MiB; no hexadecimal, inf "
     "or nan)"},
    {"sign on a setup count", HEAD "setup devices=+4\nsay x\n",
     "t.lesson:3: devices: '+4' is not a whole number (decimal digits only)"},
    {"unknown setup key", HEAD "setup bandwith=1GB/s\nsay x\n",
     "t.lesson:3: unknown setup key 'bandwith' (did you mean 'bandwidth'?)"},
    {"setup without =", HEAD "setup devices 4\nsay x\n",
     "t.lesson:3: setup takes key=value pairs: write devices=4"},
    {"unknown label", HEAD "jump nowhere\nsay x\n",
     "t.lesson:3: jump to unknown label 'nowhere': add 'label nowhere' where the lesson should go "
     "on"},
    {"label misspelt", HEAD "jump finale\nsay x\nlabel final\nsay y\n",
     "t.lesson:3: jump to unknown label 'finale' (did you mean 'final'?)"},
    {"duplicate label", HEAD "label a\nsay x\nlabel a\nsay y\n",
     "t.lesson:5: label 'a' is already defined at line 3"},
    {"jump into nothing", HEAD "jump done\nsay x\nlabel done\n",
     "t.lesson:3: jump to 'done' leads nowhere: nothing follows the label at line 5 (end the "
     "lesson with 'finish' instead)"},
    {"menu into nothing", HEAD "menu Go\nitem done Finish\nend\nsay x\nlabel done\n",
     "t.lesson:4: item 'done' leads nowhere: nothing follows the label at line 7 (end the lesson "
     "with 'finish' instead)"},
    {"unterminated block", HEAD "question Which?\noption a\ncorrect b\n",
     "t.lesson:5: the question opened at line 3 is not closed: add 'end' after its last line, in "
     "column 1"},
    {"block closed too late", HEAD "question Which?\noption a\ncorrect b\nsay x\nend\n",
     "t.lesson:6: 'say' inside the question opened at line 3: add 'end' before this line to close "
     "the question"},
    {"end alone", HEAD "say x\nend\n",
     "t.lesson:4: 'end' without a question, menu or explore to close"},
    {"block line outside", HEAD "option a\n",
     "t.lesson:3: 'option' belongs inside a question ... end block"},
    {"indented block lines", HEAD "question Q?\n  option a\n  correct b\nend\n",
     "t.lesson:3: the question has no choices and no answer: add 'correct TEXT' and 'option TEXT' "
     "lines, or 'answer FIGURE' (block lines start in column 1)"},
    {"no right choice", HEAD "question Q?\noption a\noption b\nend\n",
     "t.lesson:3: no choice is marked right: write 'correct' instead of 'option' for it"},
    {"continuation with nothing above", "  title T\n",
     "t.lesson:1: an indented line continues the command above it, but there is none (commands "
     "start in column 1; a blank line ends a command)"},
    {"no title", "minutes 5\nsay x\n",
     "t.lesson:1: the lesson has no title: add 'title TEXT' at the top"},
    {"empty file", "",
     "t.lesson:1: the lesson is empty: it needs a 'title' line, a 'minutes' line "
     "and at least one step"},
    {"only comments", "# nothing\n\n   \n",
     "t.lesson:1: the lesson is empty: it needs a 'title' line, a 'minutes' line and at least one "
     "step"},
    {"no steps", HEAD, "t.lesson:2: the lesson has no steps: add 'say TEXT'"},
    {"figure before any run", HEAD "say {speedup}\nrun matmul\n",
     "t.lesson:3: 'speedup' needs a run before it: add 'run matmul' above this line"},
    {"figure of another kind", HEAD "run collective\ncheck speedup > 1\n",
     "t.lesson:4: 'speedup' is not a figure of a collective run, and the latest run here is a "
     "collective (name the run you mean: run KIND as NAME, then NAME.speedup)"},
    {"figure on one path only",
     HEAD "jump b if devices > 2\nrun matmul\nlabel b\ncheck time > 0s\n",
     "t.lesson:6: 'time' may have no value here: a jump or menu reaches this line before any run"},
    {"unknown figure", HEAD "run matmul\ncheck speedp > 1\n",
     "t.lesson:4: unknown figure 'speedp' (did you mean 'speedup'?)"},
    {"unknown figure far from any", HEAD "run matmul\ncheck zzz > 1\n",
     "t.lesson:4: unknown figure 'zzz' (see FIGURES in shardlab-lesson(5))"},
    {"named run missing", HEAD "check ar.time > 0s\n",
     "t.lesson:3: 'ar.time': there is no run named 'ar' (name one with run KIND as ar)"},
    {"dimensions", HEAD "run matmul\ncheck time < 1\n",
     "t.lesson:4: cannot compare a time with a plain number (give the number a unit, e.g. 2us or "
     "10GB/s)"},
    {"adding unlike things", HEAD "run matmul\ncheck time + traffic > 0s\n",
     "t.lesson:4: cannot add a time and a size in bytes"},
    {"typed figure", HEAD "say it takes 2.5 ms on fast links\n",
     "t.lesson:3: '2.5 ms' is a figure typed into the text: let the engine produce it and "
     "interpolate it, e.g. {time} or {bandwidth}"},
    {"typed figure in a formula is fine, outside it is not", HEAD "say `T > 8 F / (6 B)` and 6 B\n",
     "t.lesson:3: '6 B' is a figure typed into the text: let the engine produce it and "
     "interpolate it, e.g. {time} or {bandwidth}"},
    {"a count in words is a figure too", HEAD "say a model of about 6.5 billion parameters\n",
     "t.lesson:3: '6.5 billion' is a figure typed into the text: let the engine produce it and "
     "interpolate it, e.g. {time} or {bandwidth}"},
    {"bytes in words, in an explanation",
     HEAD "question Q?\noption x\nexplain at 16 bytes each\ncorrect y\nend\n",
     "t.lesson:5: '16 bytes' is a figure typed into the text: let the engine produce it and "
     "interpolate it, e.g. {time} or {bandwidth}"},
    {"an explore skipped leaves the run before it the latest",
     HEAD "setup op=allreduce bytes=1MiB\nrun collective\nexplore matmul Make it pay.\n"
          "knob bandwidth\nuntil speedup > 1\nend\nsay it gave {speedup}\n",
     "t.lesson:9: 'speedup' is not a figure of a collective run, and the latest run here may be "
     "a collective (name the run you mean: run KIND as NAME, then NAME.speedup)"},
    {"unclosed brace", HEAD "say {devices\n",
     "t.lesson:3: a '{' is not closed: write {figure}, or {{ for a brace"},
    {"jump loop", HEAD "label a\nsay x\njump a\n",
     "t.lesson:5: this jump loops back to line 3 with no question, menu or explore on the way: "
     "the lesson would never end"},
    {"unreachable", HEAD "say x\nfinish\nsay y\n",
     "t.lesson:5: this line can never be reached: no jump or menu item leads here"},
    {"step before a run", HEAD "step 2\n",
     "t.lesson:3: step shows the operations of a run: add a 'run' above it"},
    {"run the engine refuses", HEAD "setup strategy=colwise devices=8 n=4\nrun matmul\n",
     "t.lesson:4: run matmul: cannot split n=4 output columns over 8 devices column-wise: every "
     "device needs at least one column"},
    {"run past a lesson's limits", HEAD "setup m=20000 k=20000 n=20000\nrun matmul\n",
     "t.lesson:4: run matmul: m=20000 k=20000 n=20000 is 1.6e+13 FLOP: more than a lesson may run "
     "on this host (2e+11); use smaller matrices"},
    {"host memory limit", HEAD "setup devices=64 bytes=1GiB op=allgather\nrun collective\n",
     "t.lesson:4: run collective: this collective would hold 64.0 GiB of host memory; a lesson "
     "may use 1.00 GiB: use smaller sizes or fewer devices"},
    {"explore knob", HEAD "explore matmul Go.\nknob bandwidht\nuntil speedup < 1\nend\n",
     "t.lesson:4: knob: unknown setup key 'bandwidht' (did you mean 'bandwidth'?)"},
    {"setup key far from any", HEAD "setup frobnicate=1\nsay x\n",
     "t.lesson:3: unknown setup key 'frobnicate' (see SETUP KEYS in shardlab-lesson(5))"},
    {"demo outside knobs",
     HEAD "explore matmul Go.\nknob bandwidth\nuntil speedup < 1\n"
          "demo latency=1us\nend\n",
     "t.lesson:6: demo sets 'latency', which is not one of the explore's knobs"},
    {"control character",
     HEAD "say a\x01"
          "b\n",
     "t.lesson:3: not text: byte 0x01 at column 6 (a lesson is UTF-8 text)"},
    {"invalid utf-8", HEAD "say caf\xc3\n", "t.lesson:3: not UTF-8 text: byte 0xc3 at column 8"},
    {"C1 control character",
     HEAD "say a\xc2\x9b"
          "2J\n",
     "t.lesson:3: not text: control character U+009B at column 6 (a lesson is UTF-8 text)"},
    /* What a message quotes from the lesson is shown escaped, never raw. */
    {"byte-order mark inside", HEAD "\xef\xbb\xbfsay x\n",
     "t.lesson:3: expected a command such as say, setup, run or check at the start of the line, "
     "found '\\ufeffsay'"},
    {"tab and bidi mark quoted", HEAD "setup devices 4\t\xe2\x80\x8f x\n",
     "t.lesson:3: setup takes key=value pairs: write devices=4\\t\\u200f x"},
    /* One rule for any file's text (issue 39): overrides and isolates
     * reorder what a terminal shows, so a lesson may not hold them. */
    {"bidi override",
     HEAD "say a\xe2\x80\xae"
          "b\n",
     "t.lesson:3: not text: bidirectional override U+202E at column 6 (a lesson is UTF-8 text)"},
    {"bidi isolate",
     HEAD "title x\xe2\x81\xa7"
          "y\n",
     "t.lesson:3: not text: bidirectional isolate U+2067 at column 8 (a lesson is UTF-8 text)"},
    {"DEL",
     HEAD "say a\x7f"
          "b\n",
     "t.lesson:3: not text: byte 0x7f at column 6 (a lesson is UTF-8 text)"},
    /* Lesson 10 once said this under runs that showed the opposite; an
     * ordering in prose is a claim now, checked or marked general. */
    {"an ordering stated without its claim",
     HEAD "say Both still beat tensor parallelism across the nodes; which of the two wins "
          "depends on the model{?}.\n",
     "t.lesson:3: 'beat' states an ordering: back the sentence with {? CONDITION}, checked "
     "when it is shown, or mark it {?} if it speaks of no run"},
    {"a reshard timed without values", HEAD "setup dry-run=yes\nrun reshard\n",
     "t.lesson:4: run reshard: a reshard moves stored values, and a timing-only run "
     "(dry-run=yes) has none: set dry-run=no"},
    {"layout the engine refuses", HEAD "setup tp=3 heads=4 hidden=64\nrun train\n",
     "t.lesson:4: run train: 4 heads do not split over tp=3: tp must divide heads (attention is "
     "split by whole heads)"},
    {"schedule", HEAD "setup schedule=zigzag\nsay x\n",
     "t.lesson:3: schedule: unknown value 'zigzag' (one of: gpipe, 1f1b, interleaved)"},
    {"misspelt choice", HEAD "setup strategy=colwize\nsay x\n",
     "t.lesson:3: strategy: unknown value 'colwize': did you mean 'colwise'? (one of: single, "
     "colwise, rowwise)"},
    /* 0 / 0 passed the check and left 'y' without a value (issue 39). */
    {"division by constant zero", HEAD "let y = 0 / 0\nsay {y}\n",
     "t.lesson:3: division by zero: the divisor is always 0"},
    {"division by a zero sum", HEAD "run matmul\ncheck time / (2 - 2 * 1) > 0s\n",
     "t.lesson:4: division by zero: the divisor is always 0"},
    {"let before use", HEAD "run matmul\nsay {r}\nlet r = time / single_time\n",
     "t.lesson:4: 'r' is used before its let at line 5"},
    /* show side-by-side: two or three training runs, named above it and
     * run on every path to it. */
    {"show an unknown figure", HEAD "run train as a\nshow sbs a\n",
     "t.lesson:4: show: unknown figure 'sbs' (figures: side-by-side)"},
    {"show one run", HEAD "run train as a\nshow side-by-side a\n",
     "t.lesson:4: show side-by-side takes two or three runs, not 1: show side-by-side RUN RUN "
     "[RUN] (runs named by run train as RUN)"},
    {"show four runs", HEAD "run train as a\nshow side-by-side a a a a\n",
     "t.lesson:4: show side-by-side takes two or three runs, not 4: show side-by-side RUN RUN "
     "[RUN] (runs named by run train as RUN)"},
    {"show a name of no run", HEAD "run train as a\nlabel b\nshow side-by-side a b\n",
     "t.lesson:5: show side-by-side: no run above this line is named 'b' (name one with run "
     "train as b)"},
    {"show a run named below", HEAD "run train as a\nshow side-by-side a b\nrun train as b\n",
     "t.lesson:4: show side-by-side: no run above this line is named 'b' (name one with run "
     "train as b)"},
    {"show a run of another kind",
     HEAD "run train as a\nrun matmul as prod\nshow side-by-side a prod\n",
     "t.lesson:5: show side-by-side: 'prod' is a matmul run (line 4); it shows training runs "
     "(run train as prod)"},
    {"show a run twice", HEAD "run train as a\nshow side-by-side a a\n",
     "t.lesson:4: show side-by-side: 'a' is named twice"},
    {"show a run a path skips",
     HEAD "run train as a\njump x if a.time > 0s\nrun train as b\nlabel x\nshow side-by-side a b\n",
     "t.lesson:7: show side-by-side: 'b' may not have run here: no path to this line surely "
     "passes the run named 'b' (line 5)"},
};

static void test_malformed_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
		sl_lesson *l = NULL;
		sl_err err = {0};
		int rc = parse(bads[i].text, &l, &err);
		if (rc == SL_OK) {
			sl_lesson_free(l);
			fail_msg("%s: accepted", bads[i].what);
		}
		assert_null(l);
		if (strcmp(err.msg, bads[i].message) != 0)
			fail_msg("%s:\n  got    %s\n  wanted %s", bads[i].what, err.msg,
			         bads[i].message);
	}
}

/* A 100 MB line, in memory and from a file; binary garbage. */
static void test_huge_and_binary(void **state)
{
	(void)state;
	size_t n = 100u << 20;
	char *big = malloc(n);
	assert_non_null(big);
	memset(big, 'x', n);
	memcpy(big, "say ", 4);
	sl_lesson *l = NULL;
	sl_err err = {0};
	assert_int_equal(sl_lesson_parse("t.lesson", big, n, &l, NULL, &err), SL_EINVAL);
	assert_string_equal(err.msg,
	                    "t.lesson:1: line longer than 1000 bytes: a lesson line holds one "
	                    "command; continue long text on indented lines");

	/* A file larger than the limit, of short valid lines: refused for its size. */
	char path[256];
	tu_tmpname(path, sizeof path, "sl_lesson_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(HEAD, f);
	for (int i = 0; i < 40000; i++)
		fputs("say a line of narration that is not long\n", f);
	fclose(f);
	/* The line reached when the first MiB ends: count its newlines. */
	f = fopen(path, "r");
	int line = 1, c;
	for (long i = 0; i < SL_LESSON_MAX_BYTES && (c = fgetc(f)) != EOF; i++)
		line += c == '\n';
	fclose(f);
	assert_int_equal(sl_lesson_load(path, &l, NULL, &err), SL_EINVAL);
	char want[512];
	snprintf(want, sizeof want,
	         "%s:%d: the lesson is larger than 1024 KiB: a lesson is a short "
	         "text file",
	         path, line);
	assert_string_equal(err.msg, want);

	/* The 100 MB line from a file: only the first MiB is ever read. */
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 100; i++)
		fwrite(big, 1, 1u << 20, f);
	fclose(f);
	assert_int_equal(sl_lesson_load(path, &l, NULL, &err), SL_EINVAL);
	snprintf(want, sizeof want,
	         "%s:1: line longer than 1000 bytes: a lesson line holds one "
	         "command; continue long text on indented lines",
	         path);
	assert_string_equal(err.msg, want);

	/* Binary garbage: deterministic bytes with NULs in them. */
	uint64_t s = 42;
	for (size_t i = 0; i < 4096; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		big[i] = (char)(s >> 56);
	}
	big[0] = 0;
	assert_int_equal(sl_lesson_parse("g.lesson", big, 4096, &l, NULL, &err), SL_EINVAL);
	assert_string_equal(err.msg,
	                    "g.lesson:1: not text: byte 0x00 at column 1 (a lesson is UTF-8 text)");

	/* A directory, a device and a missing file. */
	assert_int_equal(sl_lesson_load("/tmp", &l, NULL, &err), SL_EINVAL);
	assert_string_equal(err.msg, "/tmp: is a directory, not a lesson file");
	assert_int_equal(sl_lesson_load("/dev/zero", &l, NULL, &err), SL_EINVAL);
	assert_string_equal(err.msg, "/dev/zero: not a regular file (a lesson is a text file)");
	char got[64];
	assert_int_equal(sl_lesson_find("/tmp", got, sizeof got, &err), SL_EINVAL);
	assert_string_equal(err.msg, "/tmp: is a directory, not a lesson file");
	assert_int_equal(sl_lesson_find("/dev/zero", got, sizeof got, &err), SL_EINVAL);
	assert_string_equal(err.msg, "/dev/zero: not a regular file (a lesson is a text file)");
	assert_int_equal(sl_lesson_find("/nonexistent/x.lesson", got, sizeof got, &err), SL_EINVAL);
	assert_string_equal(err.msg, "/nonexistent/x.lesson: no such lesson file");

	/* A leading UTF-8 byte-order mark is skipped. */
	l = must_parse("\xef\xbb\xbf" HEAD "say x\n");
	assert_string_equal(sl_lesson_title(l), "T");
	sl_lesson_free(l);
	unlink(path);
	assert_int_equal(sl_lesson_load(path, &l, NULL, &err), SL_EINVAL);
	free(big);
}

/* Checking is near-linear: a lesson of 1 MiB, whatever it holds, checks in
 * well under a second.  Looking a name up by a scan made 55,770 labels take
 * 13 to 22 s (this file's 81,000 labels about 28 s); the bound is CPU time
 * and far from both, so a noisy machine does not decide it. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *big_lesson(const char *kind, size_t *len)
{
	size_t cap = SL_LESSON_MAX_BYTES, n = 0;
	char *b = malloc(cap + 64);
	assert_non_null(b);
	n += (size_t)sprintf(b + n, HEAD);
	int labels = 27000;
	if (strcmp(kind, "labels") == 0) {
		for (int i = 0; n < cap - 40; i++)
			n += (size_t)sprintf(b + n, "label l%d\n", i);
	} else if (strcmp(kind, "jumps") == 0) {
		/* A run of labels and a jump to each: the "leads nowhere" check too. */
		for (int i = 0; i < labels; i++)
			n += (size_t)sprintf(b + n, "label l%d\n", i);
		n += (size_t)sprintf(b + n, "question Q?\ncorrect a\noption b\nend\n");
		for (int i = 0; n < cap - 40; i++)
			n += (size_t)sprintf(b + n, "jump l%d if devices > 1\n", i % labels);
	} else if (strcmp(kind, "unknown") == 0) {
		/* Errors past the kept ones: no suggestion is looked for. */
		for (int i = 0; i < 20000; i++)
			n += (size_t)sprintf(b + n, "let q%d = 1\n", i);
		for (int i = 0; n < cap - 40; i++)
			n += (size_t)sprintf(b + n, "jump nowhere%d\ncheck zz%d > 1\n", i, i);
	} else { /* menus */
		for (int i = 0; n < cap - 100; i++)
			n += (size_t)sprintf(
			    b + n,
			    "label m%d\nmenu Pick\nitem m%d again\nitem n%d on\nend\n"
			    "label n%d\n",
			    i, i, i, i);
	}
	n += (size_t)sprintf(b + n, "say end\n");
	assert_true(n <= cap);
	*len = n;
	return b;
}

static void test_big_lessons(void **state)
{
	(void)state;
	static const char *const kinds[] = {"labels", "jumps", "unknown", "menus"};
	static const int ok[] = {1, 1, 0, 1};
	for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
		size_t len;
		char *b = big_lesson(kinds[k], &len);
		sl_lesson *l = NULL;
		sl_lesson_diags d;
		sl_err err = {0};
		double t0 = cpu_now();
		int rc = sl_lesson_parse("big.lesson", b, len, &l, &d, &err);
		double dt = cpu_now() - t0;
		if ((rc == SL_OK) != ok[k])
			fail_msg("%s: %s", kinds[k], rc ? err.msg : "accepted");
		if (dt > 5)
			fail_msg("%s: a %zu-byte lesson took %.1f s of CPU to check", kinds[k], len,
			         dt);
		if (!ok[k])
			assert_true(d.more);
		sl_lesson_free(l);
		free(b);
	}
}

/* Every error is reported, not just the first. */
static void test_all_errors(void **state)
{
	(void)state;
	sl_lesson *l;
	sl_lesson_diags d;
	sl_err err = {0};
	const char *text = HEAD "sya x\njump nowhere\nsetup devices=zero\nsay x\n";
	assert_int_equal(sl_lesson_parse("t.lesson", text, strlen(text), &l, &d, &err), SL_EINVAL);
	assert_int_equal(d.n, 3);
	assert_string_equal(d.msg[0], "t.lesson:3: unknown command 'sya' (did you mean 'say'?)");
	assert_string_equal(d.msg[1],
	                    "t.lesson:4: jump to unknown label 'nowhere': add 'label nowhere' "
	                    "where the lesson should go on");
	assert_string_equal(d.msg[2], "t.lesson:5: devices: 'zero' is not a whole number "
	                              "(decimal digits only)");
	assert_string_equal(err.msg, d.msg[0]);
}

/* Mutations of a valid lesson never crash the loader (run under ASan in CI). */
static void test_mutations(void **state)
{
	(void)state;
	static const char base[] =
	    HEAD "setup preset=a100 devices=4 strategy=colwise m=64 k=256 n=256\n"
	         "say X is {m} x {k}; {{literal}} *emph* `code`.\n"
	         "  continued {devices - 1} and {bandwidth}\n"
	         "run matmul as a\nsay {time / single_time:%}\nstep 2\ncheck speedup < devices "
	         "within 5%\nlet r = a.time / a.single_time\n"
	         "label q\nquestion What? {r}\noption x\nexplain y\ncorrect z\nend\n"
	         "question How long?\nanswer a.time within 2us\nunit us\nright yes\nwrong no\nend\n"
	         "menu Go\nitem q Again\nitem out Out\nend\nlabel out\n"
	         "explore matmul Turn.\nknob bandwidth latency\nuntil speedup < 1 and time > 1us\n"
	         "hint {bandwidth}\ndemo bandwidth=1GB/s\nend\njump out2 if fits == yes\nlabel "
	         "out2\nfinish\n";
	size_t n = sizeof base - 1;
	char *buf = malloc(n + 64);
	uint64_t s = 7;
	sl_lesson *l;
	sl_err err = {0};
	if (sl_lesson_parse("m.lesson", base, n, &l, NULL, &err))
		fail_msg("%s", err.msg);
	sl_lesson_free(l);
	int accepted = 0;
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(buf, base, n);
		size_t len = n;
		int edits = 1 + iter % 4;
		for (int e = 0; e < edits; e++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t at = (size_t)(s >> 33) % len;
			switch ((s >> 20) % 4) {
			case 0: /* replace a byte with a printable one */
				buf[at] = (char)(32 + (s >> 8) % 95);
				break;
			case 1: /* delete a byte */
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
				break;
			case 2: /* a newline */
				buf[at] = '\n';
				break;
			default: /* a brace, a space or a digit */
				buf[at] = "{} 9.=#"[(s >> 8) % 7];
			}
		}
		err.msg[0] = 0;
		if (sl_lesson_parse("m.lesson", buf, len, &l, NULL, &err) == SL_OK) {
			accepted++;
			sl_lesson_free(l);
		} else if (strncmp(err.msg, "m.lesson:", 9) != 0) {
			fail_msg("a refusal without file:line: %s", err.msg);
		}
	}
	free(buf);
	print_message("mutations accepted: %d of 3000\n", accepted);
}

/* ---- the interpreter ---- */

static void test_steps_and_figures(void **state)
{
	(void)state;
	/* Independent reference: model timing, a100 figures from the datasheet
	 * the preset cites. */
	const double F = 19.5e12, B = 300e9, a = 2e-6; /* FP32: a lesson's default */
	const int m = 64, k = 512, n = 256, p = 4;
	sl_lesson *l =
	    must_parse(HEAD "setup preset=a100 devices=4 strategy=colwise m=64 k=512 n=256\n"
	                    "say X is {m} x {k} on {devices} devices; {{braces}} stay.\n"
	                    "run matmul\n"
	                    "check time == predicted\n"
	                    "check speedup > 100\n"
	                    "question How long?\nanswer time\nend\n"
	                    "question One device?\nanswer single_time\nend\n"
	                    "question Sent?\nanswer traffic\nend\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	sl_err err = {0};
	must_next(vm, &st, SL_STEP_SETUP);
	assert_int_equal(st.line, 3);
	assert_int_equal(st.scenario->cluster.devices, 4);
	must_next(vm, &st, SL_STEP_SAY);
	assert_string_equal(st.text, "X is 64 x 512 on 4 devices; {braces} stay.");
	must_next(vm, &st, SL_STEP_RUN);
	assert_int_equal(st.run, SL_RUN_MATMUL);
	must_next(vm, &st, SL_STEP_RESULT);
	assert_non_null(sl_vm_cluster(vm));
	/* A check that fails speaks at once; one that holds waits until the
	 * question after it is answered (it would answer it). */
	must_next(vm, &st, SL_STEP_CHECK);
	assert_false(st.passed);
	assert_string_equal(st.text, "speedup > 100");

	/* Asking for the next step while a question waits is refused. */
	must_next(vm, &st, SL_STEP_QUESTION);
	assert_int_equal(sl_vm_next(vm, &st, &err), SL_EINVAL);

	double shard = 2.0 * m * k * (n / p) / F;
	double gather = (p - 1) * a + (double)(p - 1) / p * 4.0 * m * n / B;
	sl_answer ans;
	assert_rel(oracle(vm), shard + gather, 1e-9);
	assert_int_equal(sl_vm_answer(vm, "1h", &ans, &err),
	                 SL_EINVAL); /* unknown unit: still waiting */
	char buf[64];
	snprintf(buf, sizeof buf, "%.6gus", (shard + gather) * 1e6);
	assert_int_equal(sl_vm_answer(vm, buf, &ans, &err), SL_OK);
	if (!ans.correct)
		fail_msg("'%s' judged wrong, expected %s", buf, ans.expected);
	must_next(vm, &st, SL_STEP_CHECK); /* held back until now */
	assert_true(st.passed);
	assert_string_equal(st.text, "time == predicted");
	assert_int_equal(st.line, 6);
	must_next(vm, &st, SL_STEP_QUESTION);
	assert_rel(oracle(vm), 2.0 * m * k * n / F, 1e-9);
	/* A first wrong answer says which way it is off and asks again, without
	 * giving the answer; the second gives it and goes on. */
	assert_int_equal(sl_vm_answer(vm, "1s", &ans, &err), SL_OK);
	assert_false(ans.correct);
	assert_true(ans.again);
	assert_string_equal(ans.expected, "");
	assert_string_equal(ans.explain, "That is too high.");
	assert_int_equal(sl_vm_next(vm, &st, &err), SL_EINVAL); /* still waiting */
	assert_int_equal(sl_vm_answer(vm, "1ns", &ans, &err), SL_OK);
	assert_false(ans.correct);
	assert_false(ans.again);
	assert_true(ans.expected[0] != 0);
	must_next(vm, &st, SL_STEP_QUESTION);
	/* A ring all-gather: each device sends p-1 blocks of Y. */
	assert_rel(oracle(vm), (double)(p - 1) * 4.0 * m * n, 1e-12);
	assert_int_equal(sl_vm_answer(vm, "192 KiB", &ans, &err), SL_OK);
	assert_true(ans.correct);
	must_next(vm, &st, SL_STEP_END);
	assert_int_equal(st.asked, 3);
	assert_int_equal(st.right, 2);
	assert_int_equal(st.checks_failed, 1);
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

static void test_collective_figures(void **state)
{
	(void)state;
	const double B = 450e9, a = 2e-6, N = 1 << 20;
	const int p = 8;
	sl_lesson *l = must_parse(HEAD "setup preset=h100 devices=8 op=allreduce bytes=1MiB\n"
	                               "run collective\n"
	                               "question busbw?\nanswer busbw\nend\n"
	                               "question latency term?\nanswer latency_term\nend\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	sl_answer ans;
	sl_err err;
	must_next(vm, &st, SL_STEP_SETUP);
	must_next(vm, &st, SL_STEP_RUN);
	must_next(vm, &st, SL_STEP_RESULT);
	must_next(vm, &st, SL_STEP_QUESTION);
	double t = 2 * (p - 1) * a + 2.0 * (p - 1) / p * N / B;
	assert_rel(oracle(vm), N / t * 2 * (p - 1) / p, 1e-9);
	assert_int_equal(sl_vm_answer(vm, "a lot", &ans, &err), SL_EINVAL);
	assert_int_equal(sl_vm_answer(vm, "28us", &ans, &err), SL_EINVAL); /* a time, not a rate */
	assert_int_equal(sl_vm_skip(vm, &err), SL_OK);
	must_next(vm, &st, SL_STEP_QUESTION);
	assert_rel(oracle(vm), 2 * (p - 1) * a, 1e-12);
	assert_int_equal(sl_vm_answer(vm, "28 us", &ans, &err), SL_OK);
	assert_true(ans.correct);
	must_next(vm, &st, SL_STEP_END);
	assert_int_equal(st.asked, 2);
	assert_int_equal(st.right, 1);
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

/* Training figures against formulas written here: the parameter count of
 * MLP-only blocks, the pipeline bubble (p-1)/m on near-instant links, and
 * the Megatron all-reduce bytes (one forward, one backward per block). */
static void test_train_figures(void **state)
{
	(void)state;
	const int L = 4, h = 64, f = 256, B = 8, S = 4, t = 2, p = 2, m = 4;
	sl_lesson *l = must_parse(
	    HEAD "setup preset=h100 latency=0 bandwidth=1000TB/s layers=4 hidden=64 ffn=256 "
	         "batch=8 seq=4\n"
	         "setup pp=2 schedule=gpipe microbatches=4\nrun train as pipe\n"
	         "setup pp=1 microbatches=1 tp=2\nrun train as tens\n"
	         "question a\nanswer params\nend\n"
	         "question b\nanswer pipe.bubble\nend\n"
	         "question c\nanswer tens.tp_traffic\nend\n"
	         "question d\nanswer tens.loss_error\nend\n"
	         "question e\nanswer pipe.speedup\nend\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	sl_answer ans;
	sl_err err = {0};
	for (;;) {
		if (sl_vm_next(vm, &st, &err))
			fail_msg("%s", err.msg);
		if (st.kind == SL_STEP_QUESTION)
			break;
	}
	double P = (double)L * (2.0 * h * f + f + h);
	assert_rel(oracle(vm), P, 1e-12);
	assert_int_equal(sl_vm_skip(vm, &err), SL_OK);
	must_next(vm, &st, SL_STEP_QUESTION);
	/* Not exact: even at 1000 TB/s the stages' few-KiB transfers take a
	 * thousandth of these nanosecond micro-batches. */
	assert_rel(oracle(vm), (double)(p - 1) / m, 5e-3);
	assert_int_equal(sl_vm_answer(vm, "1/4", &ans, &err), SL_OK);
	assert_true(ans.correct);
	must_next(vm, &st, SL_STEP_QUESTION);
	/* Per block: one all-reduce forward, one backward, of B*S*h fp32; a ring
	 * over t devices sends 2(t-1)/t of it from each of the t devices. */
	assert_rel(oracle(vm), L * 2.0 * 2 * (t - 1) * B * S * h * 4, 1e-12);
	assert_int_equal(sl_vm_skip(vm, &err), SL_OK);
	must_next(vm, &st, SL_STEP_QUESTION);
	assert_true(oracle(vm) < 1e-5);
	assert_int_equal(sl_vm_skip(vm, &err), SL_OK);
	must_next(vm, &st, SL_STEP_QUESTION);
	/* Two stages: the ideal time halved, stretched by the bubble. */
	assert_rel(oracle(vm), p / (1.0 + (double)(p - 1) / m), 5e-3);
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

/* show side-by-side yields the runs it names as they ran: their devices,
 * and the events of their last training step only; the figures the
 * lesson reads of them are the same. */
static void test_show_side_by_side(void **state)
{
	(void)state;
	sl_lesson *l = must_parse(HEAD "setup layers=2 hidden=64 ffn=256 batch=8 seq=4 steps=2\n"
	                               "setup tp=2\nrun train as tens\n"
	                               "setup tp=1 dp=2\nrun train as data\n"
	                               "setup dp=1\nrun train as one\n"
	                               "show side-by-side tens data\n"
	                               "question q\nanswer data.time\nend\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	sl_err err = {0};
	do {
		if (sl_vm_next(vm, &st, &err))
			fail_msg("%s", err.msg);
	} while (st.kind != SL_STEP_SHOW && st.kind != SL_STEP_END);
	assert_int_equal(st.kind, SL_STEP_SHOW);
	assert_string_equal(st.text, "side-by-side");
	assert_int_equal(st.nshows, 2);
	assert_string_equal(st.shows[0].name, "tens");
	assert_string_equal(st.shows[1].name, "data");
	assert_int_equal(st.shows[0].setup->layout.tp, 2);
	assert_int_equal(st.shows[1].setup->layout.dp, 2);
	double data_step = st.shows[1].step_s;
	for (int i = 0; i < 2; i++) {
		const sl_shown_run *r = &st.shows[i];
		assert_int_equal(r->ndev, 2);
		assert_true(r->step_s > 0);
		assert_true(r->dev[0].mem_peak_bytes > 0 && r->dev[1].mem_peak_bytes > 0);
		/* The second step's events only, by start time, on both devices,
		 * within about a step's time. */
		assert_true(r->nev > 0);
		int on[2] = {0, 0};
		for (size_t e = 0; e < r->nev; e++) {
			assert_int_equal(r->ev[e].step, 2);
			assert_true(e == 0 || r->ev[e].t0 >= r->ev[e - 1].t0);
			assert_true(r->ev[e].t1 - r->ev[0].t0 <= 1.5 * r->step_s);
			on[r->ev[e].dev] = 1;
		}
		assert_true(on[0] && on[1]);
	}
	/* Data parallelism's replicas hold the whole model: more than a
	 * tensor-parallel half. */
	assert_true(st.shows[1].dev[0].params_bytes > st.shows[0].dev[0].params_bytes);
	must_next(vm, &st, SL_STEP_QUESTION);
	assert_rel(oracle(vm), data_step, 1e-8);
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

static void test_step_ops(void **state)
{
	(void)state;
	sl_lesson *l =
	    must_parse(HEAD "setup preset=a100 devices=4 strategy=colwise m=64 k=512 n=256\n"
	                    "run matmul\nstep 1\nstep 2\nstep 1000\nstep 1\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	must_next(vm, &st, SL_STEP_SETUP);
	must_next(vm, &st, SL_STEP_RUN);
	must_next(vm, &st, SL_STEP_RESULT);
	/* The compute: four devices end together, one operation. */
	must_next(vm, &st, SL_STEP_OPS);
	assert_int_equal(st.ops, 1);
	assert_int_equal(st.nev, 4);
	assert_true(st.t_from == 0);
	for (size_t i = 0; i < st.nev; i++) {
		assert_int_equal(st.ev[i].kind, SL_EV_COMPUTE);
		assert_true(st.ev[i].t1 == st.t_to);
	}
	double t1 = st.t_to;
	/* Then the all-gather's ring steps, one send and one receive per device. */
	must_next(vm, &st, SL_STEP_OPS);
	assert_int_equal(st.ops, 2);
	assert_true(st.t_from == t1);
	assert_int_equal(st.nev, 16);
	for (size_t i = 0; i < st.nev; i++)
		assert_true(st.ev[i].t1 > st.t_from && st.ev[i].t1 <= st.t_to);
	must_next(vm, &st, SL_STEP_OPS);
	assert_int_equal(st.ops, 1); /* only the last ring step was left */
	must_next(vm, &st, SL_STEP_OPS);
	assert_int_equal(st.ops, 0);
	assert_int_equal(st.nev, 0);
	must_next(vm, &st, SL_STEP_END);
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

/* The lesson's step N counts the engine's steps, as the screen does: over
 * two nodes, where the ring's devices fall out of step, a row-wise product
 * on 8 devices is its compute phase and 2(p-1) all-reduce steps; on 3
 * devices 1 + 4 (it was 14 steps here and 11 on screen). */
static void test_step_counts_logical(void **state)
{
	(void)state;
	const char *setups[] = {
	    "setup preset=h100 devices=8 per-node=4 strategy=rowwise m=256 k=2048 n=2048\n",
	    "setup preset=h100 devices=8 per-node=4 strategy=colwise m=256 k=2048 n=2048\n",
	    "setup preset=h100 devices=3 strategy=rowwise m=256 k=512 n=512\n",
	    "setup preset=h100 devices=7 strategy=colwise m=256 k=1024 n=1000\n",
	};
	const int want[] = {1 + 14, 1 + 7, 1 + 4, 1 + 6};
	for (size_t c = 0; c < sizeof want / sizeof *want; c++) {
		char text[512];
		snprintf(text, sizeof text, HEAD "%srun matmul\nstep 1000\n", setups[c]);
		sl_lesson *l = must_parse(text);
		sl_vm *vm = sl_vm_create(l, NULL);
		sl_step st;
		must_next(vm, &st, SL_STEP_SETUP);
		must_next(vm, &st, SL_STEP_RUN);
		must_next(vm, &st, SL_STEP_RESULT);
		must_next(vm, &st, SL_STEP_OPS);
		if (st.ops != want[c])
			fail_msg("%s: step 1000 took %d steps, want %d", setups[c], st.ops,
			         want[c]);
		sl_vm_destroy(vm);
		sl_lesson_free(l);
	}
}

/* A check that holds within its tolerance shows the digits that agree, not
 * "0.187 == 0.188 within 0.1%"; a count of millions reads in words. */
static void test_check_digits(void **state)
{
	(void)state;
	sl_lesson *l = must_parse(HEAD "let a = 0.18749\nlet b = 0.18751\nlet count = 5033164800\n"
	                               "check a == b within 0.1%\nsay {count} parameters\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	must_next(vm, &st, SL_STEP_SAY);
	assert_string_equal(st.text, "5.03 billion parameters");
	must_next(vm, &st, SL_STEP_CHECK); /* held until the end */
	assert_true(st.passed);
	assert_string_equal(st.detail, "0.1875 == 0.1875 within 0.1%");
	must_next(vm, &st, SL_STEP_END);
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

/* A divisor the checker cannot see is zero stops the run at its line,
 * instead of leaving a let without a value (issue 39). */
static void test_division_by_zero_at_run(void **state)
{
	(void)state;
	sl_lesson *l = must_parse(HEAD "let z = 2 - 2\nlet y = 0 / z\nsay {y}\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	sl_err err = {0};
	assert_int_not_equal(sl_vm_next(vm, &st, &err), SL_OK);
	assert_string_equal(err.msg, "t.lesson:4: division by zero");
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

/* A numeric question's mistakes: a wrong answer that one matches gets its
 * explanation (the first try's instead of too high or too low, the last
 * try's before the wrong text); any other stays too high or too low. */
static void test_mistakes(void **state)
{
	(void)state;
	const char *q = "question Algorithm bandwidth?\n"
	                "answer  ag.algbw within 3%\n"
	                "mistake ag.busbw\n"
	                "explain That is the bus bandwidth.\n"
	                "mistake bytes / devices / ag.time\n"
	                "explain That is one block over the time.\n"
	                "unit    GB/s\n"
	                "wrong   It is the buffer over the time.\n"
	                "end\n";
	char text[1024];
	snprintf(text, sizeof text,
	         HEAD "setup preset=h100 devices=8 op=allgather bytes=16MiB\n"
	              "run collective as ag\n%s%s",
	         q, q);
	sl_lesson *l = must_parse(text);
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	sl_err err = {0};
	sl_answer ans;
	char buf[64];
	must_next(vm, &st, SL_STEP_SETUP);
	must_next(vm, &st, SL_STEP_RUN);
	must_next(vm, &st, SL_STEP_RESULT);
	must_next(vm, &st, SL_STEP_QUESTION);
	double algbw = oracle(vm), busbw = algbw * 7 / 8; /* (p-1)/p of it */
	snprintf(buf, sizeof buf, "%.9gB/s", busbw);
	assert_int_equal(sl_vm_answer(vm, buf, &ans, &err), SL_OK);
	assert_false(ans.correct);
	assert_true(ans.again);
	assert_int_equal(ans.mistake, 0);
	assert_string_equal(ans.explain, "That is the bus bandwidth.");
	snprintf(buf, sizeof buf, "%.9gB/s", algbw / 8);
	assert_int_equal(sl_vm_answer(vm, buf, &ans, &err), SL_OK);
	assert_false(ans.again);
	assert_int_equal(ans.mistake, 1);
	assert_string_equal(ans.explain,
	                    "That is one block over the time. It is the buffer over the time.");
	/* A number no mistake matches is only too high. */
	must_next(vm, &st, SL_STEP_QUESTION);
	snprintf(buf, sizeof buf, "%.9gB/s", algbw * 3);
	assert_int_equal(sl_vm_answer(vm, buf, &ans, &err), SL_OK);
	assert_true(ans.again);
	assert_int_equal(ans.mistake, -1);
	assert_string_equal(ans.explain, "That is too high.");
	snprintf(buf, sizeof buf, "%.9gB/s", algbw);
	assert_int_equal(sl_vm_answer(vm, buf, &ans, &err), SL_OK);
	assert_true(ans.correct);
	assert_int_equal(ans.mistake, -1);
	must_next(vm, &st, SL_STEP_END);
	sl_vm_destroy(vm);
	sl_lesson_free(l);

	/* A mistake the answer's tolerance takes for right could never be
	 * said: it fails as a check when the question comes, at its line. */
	l = must_parse(HEAD "setup preset=h100 devices=8 op=allgather bytes=16MiB\n"
	                    "run collective as ag\n"
	                    "question Algorithm bandwidth?\n"
	                    "answer  ag.algbw within 3%\n"
	                    "mistake ag.algbw * 1.01\n"
	                    "explain Never said.\n"
	                    "mistake ag.busbw\n"
	                    "explain The bus bandwidth.\n"
	                    "end\n");
	vm = sl_vm_create(l, NULL);
	must_next(vm, &st, SL_STEP_SETUP);
	must_next(vm, &st, SL_STEP_RUN);
	must_next(vm, &st, SL_STEP_RESULT);
	must_next(vm, &st, SL_STEP_CHECK);
	assert_false(st.passed);
	assert_int_equal(st.line, 7);
	assert_string_equal(st.text, "ag.algbw * 1.01");
	assert_non_null(strstr(st.detail, "which the answer, "));
	must_next(vm, &st, SL_STEP_QUESTION); /* then the question, once */
	assert_int_equal(sl_vm_expected(vm, buf, sizeof buf, &err), SL_OK);
	assert_int_equal(sl_vm_answer(vm, buf, &ans, &err), SL_OK);
	assert_true(ans.correct);
	must_next(vm, &st, SL_STEP_END);
	assert_int_equal(st.checks_failed, 1);
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

/* What loading refuses of a mistake, one message each. */
static void test_mistake_errors(void **state)
{
	(void)state;
	static const struct {
		const char *text, *msg;
	} bad[] = {
	    {"question Q?\nanswer time\nmistake time\nexplain e\nend\n",
	     "t.lesson:7: the mistake is the answer itself (line 6): a right answer is never a "
	     "mistake"},
	    {"question Q?\nanswer time\nmistake 2 * time\nend\n",
	     "t.lesson:7: the mistake needs an 'explain' line after it: what a learner who "
	     "gives this answer has confused"},
	    {"question Q?\nanswer time\nmistake traffic\nexplain e\nend\n",
	     "t.lesson:7: the mistake is a size in bytes but the answer is a time"},
	    {"question Q?\noption a\ncorrect b\nmistake time\nexplain e\nend\n",
	     "t.lesson:8: 'mistake' is for numeric questions: give each choice its own "
	     "'explain'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[512];
		snprintf(text, sizeof text, HEAD "setup devices=2\nrun matmul\n%s", bad[i].text);
		sl_lesson *l = NULL;
		sl_lesson_diags d;
		sl_err err = {0};
		assert_int_equal(sl_lesson_parse("t.lesson", text, strlen(text), &l, &d, &err),
		                 SL_EINVAL);
		assert_int_equal(d.n, 1);
		assert_string_equal(d.msg[0], bad[i].msg);
	}
}

static void test_flow_menu_jump_explore(void **state)
{
	(void)state;
	sl_lesson *l = must_parse(
	    HEAD "setup preset=a100 devices=4 strategy=colwise m=64 k=2048 n=1024 precision=bf16\n"
	         "label top\nmenu Where?\nitem a Part A\nitem b Part B\nend\n"
	         "label a\nsay in a\njump top\n"
	         "label b\nrun matmul as base\njump fast if speedup < 1\nsay slow\nfinish\n"
	         "label fast\nsay fast {base.speedup}\n"
	         "explore matmul Slow it down.\nknob bandwidth\nuntil speedup < base.speedup / 2\n"
	         "demo bandwidth=5GB/s\nend\n"
	         "question Pick\noption one\nexplain not one\ncorrect two\nexplain yes two\nend\n"
	         "say done at {bandwidth}\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	sl_err err = {0};
	must_next(vm, &st, SL_STEP_SETUP);
	must_next(vm, &st, SL_STEP_MENU);
	assert_int_equal(st.nchoices, 2);
	assert_string_equal(st.choices[1], "Part B");
	assert_int_equal(sl_vm_choose(vm, 5, &err), SL_EINVAL);
	assert_int_equal(sl_vm_choose(vm, 0, &err), SL_OK);
	must_next(vm, &st, SL_STEP_SAY);
	assert_string_equal(st.text, "in a");
	must_next(vm, &st, SL_STEP_MENU); /* back at the top */
	assert_int_equal(sl_vm_choose(vm, 1, &err), SL_OK);
	must_next(vm, &st, SL_STEP_RUN);
	must_next(vm, &st, SL_STEP_RESULT);
	must_next(vm, &st, SL_STEP_SAY);
	assert_true(strncmp(st.text, "fast ", 5) == 0);
	must_next(vm, &st, SL_STEP_EXPLORE);
	assert_int_equal(st.nknobs, 1);
	assert_string_equal(st.knobs[0], "bandwidth");
	/* The condition in the lesson's words, not the engine's expression. */
	assert_string_equal(st.detail, "the speedup is below the speedup of run 'base' / 2");
	const char *detail;
	assert_int_equal(sl_vm_explore_met(vm, &detail, &err), 0); /* nothing run yet */
	assert_int_equal(sl_vm_knob(vm, "latency 1us", &err), SL_EINVAL);
	assert_string_equal(err.msg, "'latency' is not a knob here; you may turn: bandwidth");
	assert_int_equal(sl_vm_knob(vm, "bandwidth=fast", &err), SL_EINVAL);
	assert_int_equal(sl_vm_knob(vm, "bandwidth 250GB/s", &err), SL_OK);
	assert_int_equal(sl_vm_explore_met(vm, &detail, &err), 0);
	/* The figures in words: the value, then what it must be. */
	if (!strstr(detail, ", not below "))
		fail_msg("explore feedback not in words: '%s'", detail);
	assert_int_equal(sl_vm_demo(vm, &err), SL_OK);
	assert_int_equal(sl_vm_explore_met(vm, &detail, &err), 1);
	if (!strstr(detail, ", below ") || strstr(detail, "not"))
		fail_msg("explore feedback when met: '%s'", detail);
	must_next(vm, &st, SL_STEP_QUESTION);
	sl_answer ans;
	assert_int_equal(sl_vm_answer(vm, "c", &ans, &err), SL_EINVAL);
	assert_string_equal(err.msg, "answer with a letter from a to b");
	/* A wrong pick of two choices: its explanation and the answer at once,
	 * since another try could only be the other choice. */
	assert_int_equal(sl_vm_answer(vm, "ONE", &ans, &err), SL_OK);
	assert_false(ans.correct);
	assert_false(ans.again);
	assert_string_equal(ans.explain, "not one");
	assert_string_equal(ans.expected, "b) two");
	must_next(vm, &st, SL_STEP_SAY);
	assert_string_equal(st.text, "done at 5.00 GB/s");
	must_next(vm, &st, SL_STEP_END);
	sl_vm_destroy(vm);
	sl_lesson_free(l);
}

/* A presenter's list of sections: the start, then each label, titled by
 * the first words of its first narration (plain: no emphasis marks, a
 * figure as "..."), or by the label's name; each starts where --start
 * would. */
static void test_sections(void **state)
{
	(void)state;
	sl_lesson *l = must_parse(
	    HEAD "setup devices=2\nsay Welcome to *the* lesson.\nrun matmul\n"
	         "label timing\nsay The product took {time}, `fast` enough.\n"
	         "label empty\nrun matmul\n"
	         "label long\nsay A very long sentence that goes on and on, well past what a "
	         "line of the list can show, so that it has to be cut at a whole word.\n");
	sl_section sec[8];
	assert_int_equal(sl_lesson_sections(l, sec, 8), 4);
	assert_null(sec[0].label);
	assert_int_equal(sec[0].pos, 0);
	assert_string_equal(sec[0].title, "Welcome to the lesson.");
	assert_string_equal(sec[1].label, "timing");
	assert_string_equal(sec[1].title, "The product took ..., fast enough.");
	assert_string_equal(sec[2].title, "empty");
	assert_int_equal(sec[3].line, 10);
	size_t n = strlen(sec[3].title);
	assert_true(n < sizeof sec[3].title);
	assert_string_equal(sec[3].title + n - 3, "...");
	assert_true(sec[3].title[n - 4] != ' ');
	sl_err err = {0};
	for (int i = 1; i < 4; i++)
		assert_int_equal(sl_lesson_locate(l, sec[i].label, &err), sec[i].pos);
	/* Fewer asked for than there are: the count is still the whole. */
	assert_int_equal(sl_lesson_sections(l, sec, 2), 4);
	sl_lesson_free(l);
}

/* An explore's feedback in the figure's unit (review item 17: "this run
 * gives 0.000280542954, not below 0.000280542954"): equal times read as
 * two equal times; times that differ past the usual digits get more
 * digits, still in microseconds. */
static void test_explore_feedback_units(void **state)
{
	(void)state;
	static const struct {
		const char *until;
		int differ;
	} cases[] = {{"time < base.time", 0}, {"time < base.time * 0.999999", 1}};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		char text[512];
		snprintf(text, sizeof text,
		         HEAD "setup preset=a100 devices=2 strategy=colwise m=64 k=1024 n=1024 "
		              "bandwidth=100GB/s\n"
		              "run matmul as base\nexplore matmul Make it faster.\nknob bandwidth\n"
		              "until %s\nend\nsay done\n",
		         cases[c].until);
		sl_lesson *l = must_parse(text);
		sl_vm *vm = sl_vm_create(l, NULL);
		sl_step st;
		sl_err err = {0};
		must_next(vm, &st, SL_STEP_SETUP);
		must_next(vm, &st, SL_STEP_RUN);
		must_next(vm, &st, SL_STEP_RESULT);
		must_next(vm, &st, SL_STEP_EXPLORE);
		if (!strstr(st.detail, "the time is below the time of run 'base'"))
			fail_msg("the condition is not in words: '%s'", st.detail);
		assert_int_equal(sl_vm_knob(vm, "bandwidth 100GB/s", &err), SL_OK);
		const char *detail;
		assert_int_equal(sl_vm_explore_met(vm, &detail, &err), 0);
		double a, b;
		char ua[8], ub[8];
		if (sscanf(detail, "%lf %7s not below %lf %7s", &a, ua, &b, ub) != 4 ||
		    strcmp(ua, "us,") != 0 || strcmp(ub, "us") != 0)
			fail_msg("explore feedback not in microseconds: '%s'", detail);
		if ((a != b) != cases[c].differ)
			fail_msg("'%s': %s", cases[c].until, detail);
		assert_null(strstr(detail, "e-"));
		sl_vm_destroy(vm);
		sl_lesson_free(l);
	}
}

static void test_start_and_did_not_fit(void **state)
{
	(void)state;
	sl_lesson *l = must_parse(
	    HEAD "setup strategy=single m=64 k=8192 n=8192 memory=64MiB\nrun matmul as big\n"
	         "check fits == no\nsay refused\nlabel later\nsay needs {big.mem_need}\n"
	         "jump over if fits == no\nsay {time}\nlabel over\nsay end\n");
	sl_vm *vm = sl_vm_create(l, NULL);
	sl_step st;
	sl_err err = {0};
	int pos = sl_lesson_locate(l, "later", &err);
	assert_true(pos > 0);
	assert_int_equal(sl_lesson_locate(l, "nope", &err), -1);
	assert_int_equal(sl_lesson_locate(l, "7", &err), pos); /* line 7 holds the label */
	assert_int_equal(sl_vm_start_at(vm, pos, &err), SL_OK);
	must_next(vm, &st, SL_STEP_SAY);
	/* Independent: X + W + Y in fp32. */
	assert_string_equal(st.text, "needs 260 MiB");
	must_next(vm, &st, SL_STEP_SAY);
	assert_string_equal(st.text, "end");
	sl_vm_destroy(vm);

	/* A figure the run could not produce is a lesson error at its line. */
	sl_lesson *l2 = must_parse(HEAD "setup strategy=single m=64 k=8192 n=8192 memory=64MiB\n"
	                                "run matmul\nsay {time}\n");
	vm = sl_vm_create(l2, NULL);
	must_next(vm, &st, SL_STEP_SETUP);
	must_next(vm, &st, SL_STEP_RUN);
	must_next(vm, &st, SL_STEP_RESULT);
	assert_int_equal(sl_vm_next(vm, &st, &err), SL_EINVAL);
	assert_true(strncmp(err.msg,
	                    "t.lesson:5: 'time' has no value: the matmul did not fit in device "
	                    "memory: device 0 is out of memory",
	                    93) == 0);
	sl_vm_destroy(vm);
	sl_lesson_free(l2);
	sl_lesson_free(l);
}

static void test_spans(void **state)
{
	(void)state;
	const char *c = "a *b* `c d` x * y";
	const char *s;
	size_t n;
	sl_span_style st;
	char out[128] = "";
	while (sl_text_span(&c, &s, &n, &st))
		snprintf(out + strlen(out), sizeof out - strlen(out), "[%d:%.*s]", st, (int)n, s);
	assert_string_equal(out, "[0:a ][1:b][0: ][2:c d][0: x * y]");
}

/* ---- the headless runner ---- */

static int headless(const char *text, const char *input, char **out)
{
	char path[256];
	tu_tmpname(path, sizeof path, "sl_headless_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	size_t olen;
	FILE *in = fmemopen((void *)input, strlen(input), "r");
	FILE *o = open_memstream(out, &olen);
	FILE *e = open_memstream(out + 1, &olen);
	sl_headless_opts opts = {.save = 0, .echo = 1};
	int rc = sl_lesson_headless(path, &opts, in, o, e);
	fclose(in);
	fclose(o);
	fclose(e);
	unlink(path);
	return rc;
}

/* The loss a training run's result names first is the first step's, the
 * one the screen plays (lesson 11 printed its last step's beside the
 * screen's first): a run of two steps begins with the loss of a run of
 * one, and says which step each loss is. */
static void squeeze(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++)
		if (!(isspace((unsigned char)*r) && w > s && w[-1] == ' '))
			*w++ = isspace((unsigned char)*r) ? ' ' : *r;
	*w = 0;
}

/* A sentence's claim is checked when the sentence would be shown: one that
 * holds shows the sentence without its marker; one that does not fails
 * the lesson there, in words and units, and the sentence is not shown. */
static void test_claims(void **state)
{
	(void)state;
	const char *runs = HEAD "setup devices=4\nrun matmul as a\nsetup devices=2\n"
	                        "run matmul as b\n";
	char text[512], *out[2];
	snprintf(text, sizeof text,
	         "%ssay Both ran{? a.time > 0us and b.time > 0us}, the second "
	         "on {b.devices} devices.\n",
	         runs);
	assert_int_equal(headless(text, "", out), 0);
	assert_non_null(strstr(out[0], "Both ran, the second on 2 devices."));
	assert_null(strstr(out[0], "{?"));
	free(out[0]);
	free(out[1]);
	snprintf(text, sizeof text, "%ssay Four devices were slower than two{? a.time > 1000s}.\n",
	         runs);
	assert_int_equal(headless(text, "", out), 1);
	assert_null(strstr(out[0], "Four devices were slower"));
	assert_non_null(strstr(out[0], "FAILED"));
	assert_non_null(strstr(out[0], "a.time > 1000s (the narration's claim at line 7"));
	assert_non_null(strstr(out[0], "us, not above 1000"));
	free(out[0]);
	free(out[1]);
}

static void test_result_loss_steps(void **state)
{
	(void)state;
	double loss[2] = {0, 0};
	for (int k = 0; k < 2; k++) {
		char text[512], *out[2];
		snprintf(text, sizeof text,
		         HEAD "setup preset=h100 layers=2 hidden=64 ffn=256 heads=0 batch=8 seq=4 "
		              "tp=2 microbatches=1 steps=%d\nrun train\n",
		         k + 1);
		assert_int_equal(headless(text, "", out), 0);
		squeeze(out[0]);
		const char *at = strstr(out[0], "; loss ");
		assert_non_null(at);
		assert_int_equal(sscanf(at, "; loss %lf", &loss[k]), 1);
		if (k == 1) {
			assert_non_null(strstr(at, " at step 1, loss "));
			assert_non_null(strstr(at, " at step 2"));
		} else {
			assert_null(strstr(at, " at step"));
		}
		free(out[0]);
		free(out[1]);
	}
	assert_true(loss[0] > 0);
	assert_true(loss[0] == loss[1]);
}

static void test_headless(void **state)
{
	(void)state;
	char *out[2];
	const char *ok = HEAD "setup preset=a100 devices=2 m=64 k=512 n=256\nsay hello {devices}\n"
	                      "run matmul\ncheck speedup > 0\n"
	                      "question Q?\noption x\ncorrect y\nend\n";
	assert_int_equal(headless(ok, "zz\nb\n", out), 0);
	assert_non_null(strstr(out[0], "hello 2\n"));
	assert_non_null(strstr(out[0], "[check] ok: speedup > 0"));
	assert_non_null(
	    strstr(out[0], "answer> zz\n  answer with a letter from a to b\nanswer> b\n"));
	assert_non_null(strstr(out[0], "[end] T: 1 of 1 question right; every check held"));
	free(out[0]);
	free(out[1]);

	const char *failing = HEAD "run matmul\ncheck speedup > 100\n";
	assert_int_equal(headless(failing, "", out), 1);
	/* "[check] FAILED at $TMPDIR/sl_headless_...:2" */
	const char *at = strstr(out[0], "[check] FAILED at ");
	assert_non_null(at);
	assert_non_null(strstr(at, "/sl_headless_"));
	assert_non_null(strstr(out[0], "1 check FAILED"));
	free(out[0]);
	free(out[1]);

	/* Input ends while a question waits: status 2, one message. */
	assert_int_equal(headless(ok, "", out), 2);
	assert_non_null(
	    strstr(out[1], ":7: standard input ended before the question was answered\n"));
	free(out[0]);
	free(out[1]);

	/* A refused lesson: status 2 and file:line. */
	assert_int_equal(headless(HEAD "sya\n", "", out), 2);
	assert_non_null(strstr(out[1], ":3: unknown command 'sya' (did you mean 'say'?)\n"));
	free(out[0]);
	free(out[1]);
}

/* --demo on a loop back to a question: it stops, with a message and status
 * 2, instead of answering forever (it printed 45 million lines in 10 s). */
static void test_demo_loop(void **state)
{
	(void)state;
	char dir[256], path[512];
	tu_tmpname(dir, sizeof dir, "sl_demo_XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/loop.lesson", dir);
	const char *text = HEAD "label again\nquestion Q?\ncorrect a\noption b\nend\njump again\n";
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	char *err;
	size_t elen;
	FILE *in = fopen("/dev/null", "r"), *o = fopen("/dev/null", "w");
	FILE *e = open_memstream(&err, &elen);
	sl_headless_opts opts = {.autoplay = 1};
	alarm(60); /* the unbounded demo never returned */
	int rc = sl_lesson_headless(path, &opts, in, o, e);
	alarm(0);
	fclose(in);
	fclose(o);
	fclose(e);
	assert_int_equal(rc, 2);
	char want[1024];
	snprintf(want, sizeof want,
	         "%s:4: the demo has answered 1000 questions, menus and explores "
	         "without reaching the end: the lesson loops when answered right and "
	         "given each menu's first item\n",
	         path);
	assert_string_equal(err, want);
	free(err);
	unlink(path);
	rmdir(dir);
}

/* ---- progress ---- */

static char state_dir[256];

static void test_progress(void **state)
{
	(void)state;
	sl_progress p, q;
	sl_err err = {0};
	char id[64];
	sl_progress_id("/some/where/02-colwise.lesson", id, sizeof id);
	assert_string_equal(id, "02-colwise");
	sl_progress_id("../../etc/passwd", id, sizeof id);
	assert_null(strchr(id, '/'));
	sl_progress_id("..", id, sizeof id);
	assert_true(id[0] != '.');

	assert_int_equal(sl_progress_load("02-colwise", &p, &err), SL_OK); /* none yet */
	assert_int_equal(p.position, -1);
	assert_int_equal(p.done, 0);
	p = (sl_progress){.done = 1,
	                  .asked = 4,
	                  .right = 3,
	                  .position = 17,
	                  .now_asked = 2,
	                  .now_right = 1,
	                  .hash = 0xdeadbeefcafef00dULL};
	assert_int_equal(sl_progress_save("02-colwise", &p, &err), SL_OK);
	assert_int_equal(sl_progress_load("02-colwise", &q, &err), SL_OK);
	assert_memory_equal(&p, &q, sizeof p);

	/* It landed in the state directory, and no temporary file is left. */
	char path[512];
	snprintf(path, sizeof path, "%s/shardlab/progress/02-colwise", state_dir);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "ls %s/shardlab/progress | grep -c tmp", state_dir);
	FILE *f = popen(cmd, "r");
	int tmps = -1;
	assert_int_equal(fscanf(f, "%d", &tmps), 1);
	pclose(f);
	assert_int_equal(tmps, 0);

	/* A corrupt file is a fresh start, not an error. */
	f = fopen(path, "w");
	fputs("\x01garbage\nresume -5 x\n", f);
	fclose(f);
	assert_int_equal(sl_progress_load("02-colwise", &q, &err), SL_OK);
	assert_int_equal(q.position, -1);
	assert_int_equal(q.done, 0);

	assert_int_equal(sl_progress_forget("02-colwise", &err), SL_OK);
	assert_int_equal(stat(path, &sb), -1);
	assert_int_equal(sl_progress_forget("02-colwise", &err), SL_OK);
}

/* Forgetting every lesson's progress removes the progress files and
 * nothing else: not a file of another program beside them, not a link,
 * not the rest of the state directory. */
static void test_progress_forget_all(void **state)
{
	(void)state;
	sl_err err = {0};
	int removed = -1;
	char path[512], other[512], keep[512], lnk[512];
	/* No progress directory yet: nothing to forget, no error. */
	snprintf(path, sizeof path, "%s/shardlab/progress", state_dir);
	tu_rm_rf(path);
	assert_int_equal(sl_progress_forget_all(&removed, &err), SL_OK);
	assert_int_equal(removed, 0);

	sl_progress p = {.done = 1, .asked = 3, .right = 2, .position = -1};
	assert_int_equal(sl_progress_save("02-colwise", &p, &err), SL_OK);
	p = (sl_progress){.position = 5, .hash = 7};
	assert_int_equal(sl_progress_save("08-pipeline", &p, &err), SL_OK);
	snprintf(other, sizeof other, "%s/shardlab/progress/notes", state_dir);
	FILE *f = fopen(other, "w");
	fputs("mine, not shardlab's\n", f);
	fclose(f);
	snprintf(keep, sizeof keep, "%s/shardlab/other-state", state_dir);
	f = fopen(keep, "w");
	fputs("shardlab-progress 1\n", f);
	fclose(f);
	snprintf(lnk, sizeof lnk, "%s/shardlab/progress/03-rowwise", state_dir);
	assert_int_equal(symlink(keep, lnk), 0);

	assert_int_equal(sl_progress_forget_all(&removed, &err), SL_OK);
	assert_int_equal(removed, 2);
	sl_progress q;
	assert_int_equal(sl_progress_load("02-colwise", &q, &err), SL_OK);
	assert_int_equal(q.done, 0);
	assert_int_equal(q.position, -1);
	assert_int_equal(sl_progress_load("08-pipeline", &q, &err), SL_OK);
	assert_int_equal(q.position, -1);
	struct stat sb;
	assert_int_equal(stat(other, &sb), 0);
	assert_int_equal(stat(keep, &sb), 0);
	assert_int_equal(lstat(lnk, &sb), 0);
	unlink(other);
	unlink(keep);
	unlink(lnk);
}

/* Headless progress: resume where the learner left, score carried over. */
static void test_resume(void **state)
{
	(void)state;
	char dir[256];
	tu_tmpname(dir, sizeof dir, "sl_lessons_XXXXXX");
	assert_non_null(mkdtemp(dir));
	char path[512];
	snprintf(path, sizeof path, "%s/09-resume.lesson", dir);
	FILE *f = fopen(path, "w");
	fputs(HEAD "setup preset=a100 devices=2 m=64 k=512 n=256\nrun matmul as r\n"
	           "question A?\noption x\ncorrect y\nend\n"
	           "question B {r.speedup}?\noption x\ncorrect y\noption z\nend\nsay bye\n",
	      f);
	fclose(f);
	char *out;
	size_t olen;
	sl_headless_opts o = {.save = 1, .echo = 1};
	/* Answer A, then stop. */
	FILE *in = fmemopen((void *)"b\n", 2, "r");
	FILE *of = open_memstream(&out, &olen);
	FILE *ef = fopen("/dev/null", "w");
	assert_int_equal(sl_lesson_headless(path, &o, in, of, ef), 2);
	fclose(in);
	fclose(of);
	free(out);
	sl_progress p;
	sl_err err;
	assert_int_equal(sl_progress_load("09-resume", &p, &err), SL_OK);
	assert_int_equal(p.now_asked, 1);
	assert_int_equal(p.now_right, 1);
	assert_true(p.position > 0);
	assert_int_equal(p.done, 0);
	/* Resume: question B comes first, with its figure from the replayed run. */
	o.resume = 1;
	in = fmemopen((void *)"a\na\n", 4, "r"); /* wrong twice: a second try, then the answer */
	of = open_memstream(&out, &olen);
	assert_int_equal(sl_lesson_headless(path, &o, in, of, ef), 0);
	fclose(in);
	fclose(of);
	assert_null(strstr(out, "[question] A?"));
	assert_non_null(strstr(out, "[question] B "));
	assert_non_null(strstr(out, "[not quite] "));
	assert_non_null(strstr(out, "[end] T: 1 of 2 questions right"));
	free(out);
	assert_int_equal(sl_progress_load("09-resume", &p, &err), SL_OK);
	assert_int_equal(p.done, 1);
	assert_int_equal(p.asked, 2);
	assert_int_equal(p.right, 1);
	assert_int_equal(p.position, -1);
	fclose(ef);
	unlink(path);
	rmdir(dir);
}

static void test_find(void **state)
{
	(void)state;
	char dir[256];
	tu_tmpname(dir, sizeof dir, "sl_find_XXXXXX");
	assert_non_null(mkdtemp(dir));
	const char *names[] = {"01-one.lesson", "02-colwise.lesson", "12-compare.lesson",
	                       "notes.txt"};
	char p[512];
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		FILE *f = fopen(p, "w");
		fputs(HEAD "say x\n", f);
		fclose(f);
	}
	setenv("SHARDLAB_LESSON_PATH", dir, 1);
	char got[512], want[512];
	sl_err err = {0};
	assert_int_equal(sl_lesson_find("02", got, sizeof got, &err), SL_OK);
	snprintf(want, sizeof want, "%s/02-colwise.lesson", dir);
	assert_string_equal(got, want);
	assert_int_equal(sl_lesson_find("colwise", got, sizeof got, &err), SL_OK);
	assert_string_equal(got, want);
	assert_int_equal(sl_lesson_find("02-colwise", got, sizeof got, &err), SL_OK);
	assert_string_equal(got, want);
	assert_int_equal(sl_lesson_find("1", got, sizeof got, &err), SL_EINVAL);
	/* Built in the source tree, the program's own lessons follow these. */
	const char *known = "no lesson named '1' (lessons: 01-one 02-colwise 12-compare";
	if (strncmp(err.msg, known, strlen(known)) != 0)
		fail_msg("got '%s'", err.msg);
	assert_int_equal(sl_lesson_find(want, got, sizeof got, &err), SL_OK);
	sl_catalog_entry *e;
	int n;
	assert_int_equal(sl_catalog_list(&e, &n, &err), SL_OK);
	assert_int_equal(n, 3);
	assert_string_equal(e[2].id, "12-compare");
	assert_true(e[0].ok);
	assert_string_equal(e[0].title, "T");
	assert_int_equal(e[0].minutes, 5);
	/* The menu's lesson to go on with: the first without progress, then
	 * the one after the last done, then the one started. */
	assert_int_equal(sl_catalog_next(e, n), 0);
	sl_progress pr = {.done = 1, .asked = 1, .right = 1, .position = -1};
	assert_int_equal(sl_progress_save(e[0].id, &pr, &err), SL_OK);
	assert_int_equal(sl_catalog_next(e, n), 1);
	pr = (sl_progress){.position = 2, .hash = 1};
	assert_int_equal(sl_progress_save(e[2].id, &pr, &err), SL_OK);
	assert_int_equal(sl_catalog_next(e, n), 2);
	sl_progress_forget(e[0].id, NULL);
	sl_progress_forget(e[2].id, NULL);
	assert_int_equal(sl_catalog_next(e, n), 0);
	free(e);
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
	unsetenv("SHARDLAB_LESSON_PATH");
}

/* Without SHARDLAB_LESSON_PATH, a program in its build tree finds the
 * source tree's lessons before any installed copy (in an out-of-tree build
 * the test binary has no lessons/ beside it: nothing to check). */
static void test_find_tree_first(void **state)
{
	(void)state;
	char exe[400], tree[512];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(len > 0);
	exe[len] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(tree, sizeof tree, "%s/../lessons/02-colwise.lesson", exe);
	if (access(tree, R_OK) != 0)
		skip();
	unsetenv("SHARDLAB_LESSON_PATH");
	char got[512];
	sl_err err = {0};
	assert_int_equal(sl_lesson_find("02", got, sizeof got, &err), SL_OK);
	assert_string_equal(got, tree);
}

/* ---- the manual ---- */

static char *read_man(void)
{
	FILE *f = fopen(MAN_PAGE, "r");
	assert_non_null(f);
	static char buf[1 << 17];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	/* roff escapes to text: \- is a minus, \e a backslash. */
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\\' && i + 1 < n && buf[i + 1] == '-') {
			buf[j++] = '-';
			i++;
		} else if (buf[i] == '\\' && i + 1 < n && buf[i + 1] == 'e') {
			buf[j++] = '\\';
			i++;
		} else {
			buf[j++] = buf[i];
		}
	}
	buf[j] = 0;
	return buf;
}

/* Every setup key and figure the checker knows is documented. */
static void test_manual_covers_tables(void **state)
{
	(void)state;
	const char *man = read_man();
	for (int i = 0; i < sl_fig_count(); i++)
		if (!strstr(man, sl_fig(i)->name))
			fail_msg("figure '%s' is not in shardlab-lesson(5)", sl_fig(i)->name);
	for (int k = 0; sl_setup_key_name(k)[0] != '?'; k++) {
		char want[40];
		snprintf(want, sizeof want, "%s=", sl_setup_key_name(k));
		if (!strstr(man, want))
			fail_msg("setup key '%s' is not in shardlab-lesson(5)",
			         sl_setup_key_name(k));
	}
}

/* No two figures share a name (a set-up figure would hide a run's). */
static void test_figure_names_unique(void **state)
{
	(void)state;
	for (int i = 0; i < sl_fig_count(); i++)
		for (int j = 0; j < i; j++)
			if (strcmp(sl_fig(i)->name, sl_fig(j)->name) == 0)
				fail_msg("figure '%s' is defined twice", sl_fig(i)->name);
}

/* The manual's complete example passes the checker and plays through. */
static void test_manual_example(void **state)
{
	(void)state;
	const char *man = read_man();
	const char *a = strstr(man, "\n.EX\n"), *b = a ? strstr(a, "\n.EE\n") : NULL;
	assert_non_null(a);
	assert_non_null(b);
	a += 5;
	char *text = strndup(a, (size_t)(b - a + 1));
	char *out[2];
	char path[256];
	tu_tmpname(path, sizeof path, "sl_example_XXXXXX");
	int fd = mkstemp(path);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	sl_lesson *l;
	sl_err err = {0};
	if (sl_lesson_load(path, &l, NULL, &err))
		fail_msg("the manual's example: %s", err.msg);
	sl_lesson_free(l);
	size_t olen;
	FILE *in = fopen("/dev/null", "r");
	FILE *o = open_memstream(&out[0], &olen);
	FILE *e = open_memstream(&out[1], &olen);
	sl_headless_opts opts = {.autoplay = 1};
	int rc = sl_lesson_headless(path, &opts, in, o, e);
	fclose(in);
	fclose(o);
	fclose(e);
	if (rc != 0)
		fail_msg("the manual's example: status %d: %s", rc, out[1]);
	assert_non_null(strstr(out[0], "2 of 2 questions right; every check held"));
	free(out[0]);
	free(out[1]);
	free(text);
	unlink(path);
}

int main(void)
{
	/* Progress goes to a private state directory, never the user's. */
	tu_tmpname(state_dir, sizeof state_dir, "sl_state_XXXXXX");
	if (!mkdtemp(state_dir))
		return 1;
	setenv("XDG_STATE_HOME", state_dir, 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_malformed_table),
	    cmocka_unit_test(test_huge_and_binary),
	    cmocka_unit_test(test_big_lessons),
	    cmocka_unit_test(test_all_errors),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_steps_and_figures),
	    cmocka_unit_test(test_collective_figures),
	    cmocka_unit_test(test_mistakes),
	    cmocka_unit_test(test_mistake_errors),
	    cmocka_unit_test(test_show_side_by_side),
	    cmocka_unit_test(test_step_ops),
	    cmocka_unit_test(test_step_counts_logical),
	    cmocka_unit_test(test_train_figures),
	    cmocka_unit_test(test_division_by_zero_at_run),
	    cmocka_unit_test(test_flow_menu_jump_explore),
	    cmocka_unit_test(test_explore_feedback_units),
	    cmocka_unit_test(test_sections),
	    cmocka_unit_test(test_check_digits),
	    cmocka_unit_test(test_start_and_did_not_fit),
	    cmocka_unit_test(test_spans),
	    cmocka_unit_test(test_headless),
	    cmocka_unit_test(test_result_loss_steps),
	    cmocka_unit_test(test_claims),
	    cmocka_unit_test(test_demo_loop),
	    cmocka_unit_test(test_progress),
	    cmocka_unit_test(test_progress_forget_all),
	    cmocka_unit_test(test_resume),
	    cmocka_unit_test(test_find),
	    cmocka_unit_test(test_find_tree_first),
	    cmocka_unit_test(test_manual_covers_tables),
	    cmocka_unit_test(test_figure_names_unique),
	    cmocka_unit_test(test_manual_example),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rm_rf(state_dir);
	return rc;
}
