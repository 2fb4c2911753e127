/* SPDX-License-Identifier: MIT */
/* The one loop's pure parts, without a terminal: how a key is dispatched
 * (a resize, the keys every screen shares, the help, the rest to the
 * screen's handler with its action in the screen's table) and how long the
 * loop waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curses.h>

#include "draw.h"
#include "loop.h"

struct fake {
	sl_loop_help help;
	size_t typed;
	sl_keymode mode;
	int calls, ch;
	sl_action a;
	double now;
	unsigned ret;
};

static sl_keymode fake_keys(void *ctx)
{
	return ((struct fake *)ctx)->mode;
}

static unsigned fake_key(void *ctx, int ch, sl_action a, double now)
{
	struct fake *f = ctx;
	f->calls++;
	f->ch = ch;
	f->a = a;
	f->now = now;
	return f->ret;
}

static sl_loop_help *fake_help(void *ctx)
{
	return &((struct fake *)ctx)->help;
}

static size_t fake_typed(void *ctx)
{
	return ((struct fake *)ctx)->typed;
}

static const sl_loop_mode fake_mode = {fake_keys, fake_help, fake_typed, fake_key, NULL, NULL,
                                       NULL,      NULL,      NULL,       NULL,     NULL};

static unsigned send(struct fake *f, sl_keymode mode, int ch)
{
	f->mode = mode;
	f->calls = 0;
	f->a = SL_A_COUNT;
	return sl_loop_dispatch(&fake_mode, f, ch, 1.5);
}

/* F10, Ctrl-L and a resize are the loop's on every screen, also while an
 * answer is typed: the handler never sees them. */
static void test_loop_keys(void **state)
{
	(void)state;
	struct fake f = {.ret = SL_LOOP_DRAW};
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		assert_int_equal(send(&f, (sl_keymode)m, KEY_F(10)), SL_LOOP_QUIT);
		assert_int_equal(f.calls, 0);
		/* Ctrl-L lays the screen out again too: a stale layout is what it fixes. */
		assert_int_equal(send(&f, (sl_keymode)m, 12),
		                 SL_LOOP_DRAW | SL_LOOP_LAYOUT | SL_LOOP_CLEAR);
		assert_int_equal(f.calls, 0);
		assert_int_equal(send(&f, (sl_keymode)m, KEY_RESIZE),
		                 SL_LOOP_DRAW | SL_LOOP_LAYOUT | SL_LOOP_CLEAR);
		assert_int_equal(f.calls, 0);
	}
}

/* Every other key goes to the handler once, with its action in the table
 * of the screen shown now, and the handler's flags come back. */
static void test_handler_gets_action(void **state)
{
	(void)state;
	struct fake f = {.ret = SL_LOOP_DRAW | SL_LOOP_LAYOUT};
	assert_int_equal(send(&f, SL_MODE_MAIN, ' '), SL_LOOP_DRAW | SL_LOOP_LAYOUT);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.ch, ' ');
	assert_int_equal(f.a, SL_A_PLAY);
	assert_true(f.now == 1.5);
	/* q: the sandbox's and the lesson's leave their screen, the answer
	 * line's is typed (unbound: the handler types it). */
	send(&f, SL_MODE_MAIN, 'q');
	assert_int_equal(f.a, SL_A_LEAVE);
	send(&f, SL_MODE_LESSON, 'q');
	assert_int_equal(f.a, SL_A_LEAVE);
	send(&f, SL_MODE_INPUT, 'q');
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.a, SL_A_NONE);
	/* The mode is asked at each key: Enter goes on, then answers. */
	send(&f, SL_MODE_LESSON, '\r');
	assert_int_equal(f.a, SL_A_GO_ON);
	send(&f, SL_MODE_INPUT, '\r');
	assert_int_equal(f.a, SL_A_SUBMIT);
	send(&f, SL_MODE_MENU, '\r');
	assert_int_equal(f.a, SL_A_OPEN);
	/* An unbound key is the handler's. */
	f.ret = 0;
	assert_int_equal(send(&f, SL_MODE_PLAN, 0x7fff), 0);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.a, SL_A_NONE);
}

/* ? and F1 open the help on every screen (on the answer line, ? only while
 * nothing is typed: then it is typed), from the screen shown; the loop
 * scrolls and closes it, and the screen's handler sees none of its keys. */
static void test_help_everywhere(void **state)
{
	(void)state;
	struct fake f = {.ret = SL_LOOP_DRAW};
	f.help.rows = 10;
	f.help.cols = 80;
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		if (m == SL_MODE_HELP || m == SL_MODE_ANY)
			continue;
		int keys[] = {'?', KEY_F(1)};
		for (int k = 0; k < 2; k++) {
			f.help.open = 0;
			f.help.scroll = 5;
			assert_int_equal(send(&f, (sl_keymode)m, keys[k]), SL_LOOP_DRAW);
			assert_int_equal(f.calls, 0);
			assert_true(f.help.open);
			assert_int_equal(f.help.of, m);
			assert_int_equal(f.help.scroll, 0);
			/* Scrolled by half a page (of 8 lines), not past the top. */
			send(&f, (sl_keymode)m, KEY_NPAGE);
			assert_int_equal(f.help.scroll, 4);
			send(&f, (sl_keymode)m, KEY_PPAGE);
			send(&f, (sl_keymode)m, KEY_PPAGE);
			assert_int_equal(f.help.scroll, 0);
			/* The screen's keys do nothing under the help. */
			send(&f, (sl_keymode)m, 'c');
			send(&f, (sl_keymode)m, '\r');
			assert_int_equal(f.calls, 0);
			assert_true(f.help.open);
			/* F10 still quits. */
			assert_int_equal(send(&f, (sl_keymode)m, KEY_F(10)), SL_LOOP_QUIT);
			int close = k == 0 ? 27 : KEY_F(1);
			send(&f, (sl_keymode)m, close);
			assert_false(f.help.open);
			assert_int_equal(f.calls, 0);
		}
	}
	/* Scrolling stops at the end of the help. */
	f.help.open = 1;
	f.help.of = SL_MODE_MAIN;
	for (int i = 0; i < 100; i++)
		send(&f, SL_MODE_MAIN, ' ');
	assert_int_equal(f.help.scroll, sl_help_lines(SL_MODE_MAIN, 80) - 8);
	f.help.open = 0;
	/* On the answer line, once something is typed, ? and q are typed. */
	f.typed = 2;
	send(&f, SL_MODE_INPUT, '?');
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.a, SL_A_NONE);
	assert_false(f.help.open);
	f.typed = 0;
	send(&f, SL_MODE_INPUT, '?');
	assert_int_equal(f.calls, 0);
	assert_true(f.help.open);
}

/* A paused screen blocks; a pending draw or an animation waits for the
 * next frame, never a negative time. */
static void test_timeout(void **state)
{
	(void)state;
	assert_int_equal(sl_loop_timeout(0, 0, 10.0, 5.0), -1);
	assert_int_equal(sl_loop_timeout(SL_LOOP_LAYOUT, 0, 10.0, 5.0), -1);
	assert_int_equal(sl_loop_timeout(SL_LOOP_DRAW, 0, 5.5, 5.0), 500);
	assert_int_equal(sl_loop_timeout(SL_LOOP_DRAW, 0, 5.0625, 5.0), 63); /* rounded up */
	assert_int_equal(sl_loop_timeout(0, 1, 5.0005, 5.0), 1);
	assert_int_equal(sl_loop_timeout(0, 1, 4.0, 5.0), 0);
	assert_int_equal(sl_loop_timeout(SL_LOOP_DRAW, 1, 5.0, 5.0), 0);
}

/* While a front end computes (a lesson's run on its worker), what leaves or
 * looks goes through at once and what needs the run waits: q and Esc leave,
 * F10 quits, ? opens the help, Ctrl-L and a resize repaint; Enter, Space,
 * an answer's letters wait. */
static void test_busy_passes(void **state)
{
	(void)state;
	struct fake f = {.ret = SL_LOOP_DRAW};
	f.mode = SL_MODE_LESSON;
	assert_true(sl_loop_passes(&fake_mode, &f, 'q'));
	assert_true(sl_loop_passes(&fake_mode, &f, 27));
	assert_true(sl_loop_passes(&fake_mode, &f, KEY_F(10)));
	assert_true(sl_loop_passes(&fake_mode, &f, '?'));
	assert_true(sl_loop_passes(&fake_mode, &f, 12));
	assert_true(sl_loop_passes(&fake_mode, &f, KEY_RESIZE));
	assert_false(sl_loop_passes(&fake_mode, &f, '\r'));
	assert_false(sl_loop_passes(&fake_mode, &f, ' '));
	assert_false(sl_loop_passes(&fake_mode, &f, KEY_RIGHT));
	/* On the answer line, a letter typed waits too; the help, once open,
	 * takes every key. */
	f.mode = SL_MODE_INPUT;
	f.typed = 1;
	assert_false(sl_loop_passes(&fake_mode, &f, 'b'));
	assert_false(sl_loop_passes(&fake_mode, &f, 'q'));
	f.help.open = 1;
	assert_true(sl_loop_passes(&fake_mode, &f, ' '));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loop_keys),       cmocka_unit_test(test_handler_gets_action),
	    cmocka_unit_test(test_help_everywhere), cmocka_unit_test(test_timeout),
	    cmocka_unit_test(test_busy_passes),
	};
	return cmocka_run_group_tests_name("loop", tests, NULL, NULL);
}
