/* SPDX-License-Identifier: MIT */
/* The key tables of every mode (the sandbox's views, the lesson menu, the
 * lesson screen and its answer line, the help): no key does two things in
 * one mode or hides one it inherits, nothing typed is taken for a key,
 * every action says what it does, and the KEYS section of man/shardlab.1.in is
 * exactly what the tables generate (GENERATE=1 rewrites that section). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curses.h>

#include "keys.h"
#include "theme.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap + 1);
	size_t r;
	while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			b = realloc(b, cap + 1);
		}
	}
	fclose(f);
	if (b)
		b[n] = 0;
	*len = n;
	return b;
}

static char *generated(size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	assert_non_null(f);
	sl_keys_write_man(f);
	fclose(f);
	return buf;
}

/* Where the KEYS section starts and ends (the next .SH, or the end). */
static int find_section(const char *man, size_t *a, size_t *b)
{
	const char *s = strstr(man, ".SH KEYS\n");
	if (!s)
		return -1;
	*a = (size_t)(s - man);
	const char *e = strstr(s + 1, "\n.SH ");
	*b = e ? (size_t)(e - man) + 1 : strlen(man);
	return 0;
}

static void test_man_keys_section(void **state)
{
	(void)state;
	size_t mlen = 0, glen = 0;
	char *man = slurp(SHARDLAB_MAN, &mlen);
	if (!man)
		fail_msg("cannot read %s", SHARDLAB_MAN);
	char *gen = generated(&glen);
	size_t a, b;
	const char *regen = getenv("GENERATE");
	if (regen && strcmp(regen, "1") == 0) {
		/* Replace the section, or put it before SEE ALSO, or at the end. */
		FILE *f = fopen(SHARDLAB_MAN, "wb");
		assert_non_null(f);
		if (find_section(man, &a, &b) == 0) {
			fwrite(man, 1, a, f);
			fwrite(gen, 1, glen, f);
			fputs(man + b, f);
		} else {
			const char *see = strstr(man, ".SH SEE ALSO");
			size_t at = see ? (size_t)(see - man) : mlen;
			fwrite(man, 1, at, f);
			fwrite(gen, 1, glen, f);
			fputs(man + at, f);
		}
		fclose(f);
		print_message("rewrote the KEYS section of %s\n", SHARDLAB_MAN);
	} else {
		if (find_section(man, &a, &b) != 0)
			fail_msg("%s has no KEYS section (run the test with GENERATE=1)",
			         SHARDLAB_MAN);
		if (b - a != glen || memcmp(man + a, gen, glen) != 0)
			fail_msg("the KEYS section of %s differs from the key table (GENERATE=1 "
			         "rewrites it)",
			         SHARDLAB_MAN);
	}
	free(man);
	free(gen);
}

static void test_no_key_twice(void **state)
{
	(void)state;
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		const sl_keybind *t = sl_keys_of((sl_keymode)m);
		for (int i = 0; t[i].action != SL_A_NONE; i++) {
			for (int j = i + 1; t[j].action != SL_A_NONE; j++)
				if (t[i].key == t[j].key)
					fail_msg("%s: key %d bound twice",
					         sl_keymode_title((sl_keymode)m), t[i].key);
			/* A mode's own binding must not hide one it inherits. */
			for (sl_keymode p = sl_keymode_parent((sl_keymode)m); p != SL_MODE_COUNT;
			     p = sl_keymode_parent(p)) {
				const sl_keybind *g = sl_keys_of(p);
				for (int j = 0; g[j].action != SL_A_NONE; j++)
					if (g[j].key == t[i].key)
						fail_msg("%s: key %d hides a binding of %s",
						         sl_keymode_title((sl_keymode)m), t[i].key,
						         sl_keymode_title(p));
			}
			assert_int_equal(sl_keys_lookup((sl_keymode)m, t[i].key), t[i].action);
		}
	}
	/* F10 quits and F1 helps on every screen, also while typing (htop,
	 * nvtop, btop); q leaves every screen but the answer line, where it
	 * is typed. */
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		assert_int_equal(sl_keys_lookup((sl_keymode)m, KEY_F(10)), SL_A_QUIT);
		if (m != SL_MODE_HELP)
			assert_int_equal(sl_keys_lookup((sl_keymode)m, KEY_F(1)), SL_A_HELP);
		if (m != SL_MODE_ANY && m != SL_MODE_INPUT && m != SL_MODE_HELP)
			assert_int_equal(sl_keys_lookup((sl_keymode)m, 'q'), SL_A_LEAVE);
		if (m != SL_MODE_ANY && m != SL_MODE_HELP)
			assert_int_equal(sl_keys_lookup((sl_keymode)m, '?'), SL_A_HELP);
	}
	assert_int_equal(sl_keys_lookup(SL_MODE_HELP, 'q'), SL_A_CLOSE);
	assert_int_equal(sl_keys_lookup(SL_MODE_HELP, '?'), SL_A_CLOSE);
	assert_int_equal(sl_keys_lookup(SL_MODE_MAIN, 0x7fff), SL_A_NONE);
}

/* Nothing bound where an answer is typed may swallow a character of it:
 * the only printable key bound there is ?, and only while nothing is
 * typed. */
static void test_typing_wins(void **state)
{
	(void)state;
	for (sl_keymode m = SL_MODE_INPUT; m != SL_MODE_COUNT; m = sl_keymode_parent(m)) {
		const sl_keybind *t = sl_keys_of(m);
		for (int i = 0; t[i].action != SL_A_NONE; i++)
			if (t[i].key >= 32 && t[i].key < 127 && t[i].key != '?')
				fail_msg("%s binds the printable key '%c'", sl_keymode_title(m),
				         t[i].key);
	}
	for (int c = 32; c < 127; c++) {
		assert_true(sl_keys_typed(c, 1));
		assert_int_equal(sl_keys_typed(c, 0), c != '?');
	}
	assert_false(sl_keys_typed('\r', 0));
	assert_false(sl_keys_typed(27, 3));
	assert_false(sl_keys_typed(KEY_F(1), 3));
	assert_int_equal(sl_keys_lookup(SL_MODE_INPUT, 27), SL_A_CANCEL);
	assert_int_equal(sl_keys_lookup(SL_MODE_INPUT, '\r'), SL_A_SUBMIT);
	assert_int_equal(sl_keys_lookup(SL_MODE_INPUT, 127), SL_A_ERASE);
}

/* Each help lists the keys that work everywhere, its own front end's
 * screens (never the other's) and its own keys. */
static void test_help_modes(void **state)
{
	(void)state;
	for (int from = 0; from < SL_MODE_COUNT; from++) {
		sl_keymode ms[SL_MODE_COUNT];
		int n = sl_keys_help_modes((sl_keymode)from, ms, SL_MODE_COUNT);
		assert_true(n >= 3);
		if (from != SL_MODE_HELP)
			assert_int_equal(ms[0], from);
		assert_int_equal(ms[n - 1], SL_MODE_HELP);
		int any = 0, menu = 0, main = 0;
		for (int i = 0; i < n; i++) {
			any += ms[i] == SL_MODE_ANY;
			menu |= ms[i] == SL_MODE_MENU;
			main |= ms[i] == SL_MODE_MAIN;
			for (int j = 0; j < i; j++)
				assert_int_not_equal(ms[i], ms[j]);
		}
		assert_int_equal(any, 1);
		/* The side-by-side screen is a front end of its own. */
		if (from == SL_MODE_SBS)
			assert_true(!menu && !main);
		else
			assert_true(menu != main);
	}
	sl_keymode ms[SL_MODE_COUNT];
	/* lesson, everywhere, menu, typing, sections, help */
	assert_int_equal(sl_keys_help_modes(SL_MODE_LESSON, ms, SL_MODE_COUNT), 6);
	assert_int_equal(ms[1], SL_MODE_ANY);
	assert_int_equal(ms[2], SL_MODE_MENU);
	assert_int_equal(ms[4], SL_MODE_SECTIONS);
	/* The presenter's keys: a section to go to, the next and the previous
	 * phase (also while a question waits, on keys that type nothing), and
	 * in the menu the forgetting of every lesson's progress. */
	assert_int_equal(sl_keys_lookup(SL_MODE_LESSON, 'g'), SL_A_SECTIONS);
	assert_int_equal(sl_keys_lookup(SL_MODE_LESSON, 'n'), SL_A_PHASE_NEXT);
	assert_int_equal(sl_keys_lookup(SL_MODE_LESSON, 'N'), SL_A_PHASE_PREV);
	assert_int_equal(sl_keys_lookup(SL_MODE_INPUT, KEY_SRIGHT), SL_A_PHASE_NEXT);
	assert_int_equal(sl_keys_lookup(SL_MODE_INPUT, KEY_SLEFT), SL_A_PHASE_PREV);
	assert_int_equal(sl_keys_lookup(SL_MODE_SECTIONS, 27), SL_A_LEAVE);
	assert_int_equal(sl_keys_lookup(SL_MODE_SECTIONS, '\r'), SL_A_OPEN);
	assert_int_equal(sl_keys_lookup(SL_MODE_MENU, 'R'), SL_A_FORGET_ALL);
	/* main view, sandbox, everywhere, plot, plan, help */
	assert_int_equal(sl_keys_help_modes(SL_MODE_MAIN, ms, SL_MODE_COUNT), 6);
	assert_int_equal(ms[1], SL_MODE_SANDBOX);
	assert_int_equal(ms[2], SL_MODE_ANY);
	assert_int_equal(sl_keys_help_modes(SL_MODE_MENU, ms, 2), 2);
	/* side by side, everywhere, help */
	assert_int_equal(sl_keys_help_modes(SL_MODE_SBS, ms, SL_MODE_COUNT), 3);
	assert_int_equal(ms[1], SL_MODE_ANY);
}

static void count(void *ctx, const char *keys, const char *note)
{
	assert_true(keys[0] != 0);
	if (!note[0])
		fail_msg("keys %s have no note", keys);
	(*(int *)ctx)++;
}

static void test_every_action_explained(void **state)
{
	(void)state;
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		int n = 0;
		int entries = sl_keys_help((sl_keymode)m, count, &n);
		assert_int_equal(entries, n);
		assert_true(n > 0);
		const sl_keybind *t = sl_keys_of((sl_keymode)m);
		for (int i = 0; t[i].action != SL_A_NONE; i++)
			if (!sl_action_word(t[i].action)[0])
				fail_msg("action %d has no status word", t[i].action);
	}
}

static void test_key_names(void **state)
{
	(void)state;
	char b[24];
	assert_string_equal(sl_key_name(' ', b, sizeof b), "Space");
	assert_string_equal(sl_key_name('q', b, sizeof b), "q");
	assert_string_equal(sl_key_name(12, b, sizeof b), "Ctrl-L");
	assert_string_equal(sl_key_name(27, b, sizeof b), "Esc");
	/* Clickers send Page Down and Page Up (or Right and Left): they step. */
	assert_int_equal(sl_keys_lookup(SL_MODE_MAIN, KEY_NPAGE), SL_A_STEP);
	assert_int_equal(sl_keys_lookup(SL_MODE_MAIN, KEY_RIGHT), SL_A_STEP);
	assert_int_equal(sl_keys_lookup(SL_MODE_MAIN, KEY_PPAGE), SL_A_BACK);
	assert_int_equal(sl_keys_lookup(SL_MODE_MAIN, KEY_LEFT), SL_A_BACK);
	assert_int_equal(sl_keys_lookup(SL_MODE_MAIN, KEY_F(1)), SL_A_HELP);
	assert_string_equal(sl_key_name(KEY_F(10), b, sizeof b), "F10");
	assert_string_equal(sl_key_name(KEY_BACKSPACE, b, sizeof b), "Backspace");
}

/* Enter is one name in the help though three codes in the table. */
static void first_keys(void *ctx, const char *keys, const char *note)
{
	(void)note;
	if (!*(const char **)ctx)
		*(const char **)ctx = strdup(keys);
}

static void test_help_names_once(void **state)
{
	(void)state;
	const char *first = NULL;
	sl_keys_help(SL_MODE_INPUT, first_keys, &first);
	assert_non_null(first);
	assert_string_equal(first, "Enter");
	free((void *)first);
}

/* ---- the legend (theme.c's table, which the help draws) ---- */

#define NSLOTS ((sizeof(sl_glyphs) - offsetof(sl_glyphs, h)) / sizeof(const char *))

static size_t slot_off(size_t k)
{
	return offsetof(sl_glyphs, h) + k * sizeof(const char *);
}

/* Every glyph the views can draw comes from sl_glyphs, and every slot of it
 * is in the legend. */
static void test_legend_every_glyph(void **state)
{
	(void)state;
	size_t n;
	const sl_legend_item *L = sl_legend(&n);
	for (size_t k = 0; k < NSLOTS; k++) {
		size_t off = slot_off(k);
		int found = 0;
		for (size_t i = 0; i < n && !found; i++)
			found = L[i].off != SL_LEGEND_NO_GLYPH && off >= L[i].off &&
			        off < L[i].off + (size_t)L[i].n * sizeof(const char *);
		if (!found)
			fail_msg("glyph slot %zu ('%s') has no legend entry", k,
			         sl_glyph_at(&sl_glyphs_utf8, off, 0));
	}
}

/* Every colour role is in the legend (a device's colours by device 0's). */
static void test_legend_every_colour(void **state)
{
	(void)state;
	size_t n;
	const sl_legend_item *L = sl_legend(&n);
	for (int r = 0; r < SL_ROLE_COUNT; r++) {
		int want = r >= SL_ROLE_DEVBG0 ? SL_ROLE_DEVBG0
		           : r >= SL_ROLE_DEV0 ? SL_ROLE_DEV0
		                               : r;
		int found = 0;
		for (size_t i = 0; i < n; i++)
			found |= (int)L[i].role == want;
		if (!found)
			fail_msg("colour role %d has no legend entry", r);
	}
}

/* In a group of the legend one glyph means one thing, in both tables; and
 * send's glyph is no block's (the devices panel shows both on a row): it
 * meant send, a replicated X and a partial sum at once. */
static void test_legend_glyphs_apart(void **state)
{
	(void)state;
	size_t n;
	const sl_legend_item *L = sl_legend(&n);
	const sl_glyphs *tables[] = {&sl_glyphs_utf8, &sl_glyphs_ascii};
	for (int t = 0; t < 2; t++) {
		const sl_glyphs *g = tables[t];
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++) {
				if (L[i].group != L[j].group || L[i].group == SL_LG_TEXT ||
				    L[i].group == SL_LG_MEMORY || L[i].off == SL_LEGEND_NO_GLYPH ||
				    L[j].off == SL_LEGEND_NO_GLYPH)
					continue;
				for (int a = 0; a < L[i].n; a++)
					for (int b = 0; b < L[j].n; b++)
						if (!strcmp(sl_glyph_at(g, L[i].off, a),
						            sl_glyph_at(g, L[j].off, b)))
							fail_msg(
							    "%s: '%s' means both '%s' and '%s'",
							    t ? "ascii" : "utf-8",
							    sl_glyph_at(g, L[i].off, a),
							    L[i].meaning, L[j].meaning);
			}
		for (size_t i = 0; i < n; i++) {
			if (L[i].group != SL_LG_BLOCKS || L[i].off == SL_LEGEND_NO_GLYPH)
				continue;
			for (int a = 0; a < L[i].n; a++)
				assert_string_not_equal(sl_glyph_at(g, L[i].off, a),
				                        g->state[SL_DS_SEND]);
		}
		assert_string_not_equal(g->replica, g->level[1]);
	}
}

/* The views draw no glyph of their own: a string literal with a byte past
 * ASCII in src/tui/view_*.c or draw.c (outside comments) would be a glyph
 * the legend does not know. */
static void test_views_draw_table_glyphs(void **state)
{
	(void)state;
	static const char *const files[] = {"view_devices.c",  "view_help.c", "view_matrices.c",
	                                    "view_numbers.c",  "view_plan.c", "view_plot.c",
	                                    "view_timeline.c", "draw.c"};
	for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
		char path[512];
		snprintf(path, sizeof path, "%s/src/tui/%s", SHARDLAB_SRCDIR, files[f]);
		size_t len;
		char *src = slurp(path, &len);
		if (!src)
			fail_msg("cannot read %s", path);
		int line = 1, in_comment = 0, in_str = 0;
		for (size_t i = 0; i < len; i++) {
			char c = src[i];
			if (c == '\n') {
				line++;
				in_str = 0;
				continue;
			}
			if (in_comment) {
				if (c == '*' && src[i + 1] == '/')
					in_comment = 0, i++;
				continue;
			}
			if (!in_str && c == '/' && src[i + 1] == '*') {
				in_comment = 1, i++;
				continue;
			}
			if (!in_str && c == '/' && src[i + 1] == '/') {
				while (i < len && src[i] != '\n')
					i++;
				i--;
				continue;
			}
			if (c == '\\' && in_str) {
				i++;
				continue;
			}
			if (c == '"')
				in_str = !in_str;
			else if (in_str && (unsigned char)c >= 0x80)
				fail_msg("%s:%d: a glyph outside theme.c's table", path, line);
		}
		free(src);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_key_twice),
	    cmocka_unit_test(test_typing_wins),
	    cmocka_unit_test(test_help_modes),
	    cmocka_unit_test(test_every_action_explained),
	    cmocka_unit_test(test_key_names),
	    cmocka_unit_test(test_help_names_once),
	    cmocka_unit_test(test_man_keys_section),
	    cmocka_unit_test(test_legend_every_glyph),
	    cmocka_unit_test(test_legend_every_colour),
	    cmocka_unit_test(test_legend_glyphs_apart),
	    cmocka_unit_test(test_views_draw_table_glyphs),
	};
	return cmocka_run_group_tests_name("keys", tests, NULL, NULL);
}
