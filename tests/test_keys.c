/* SPDX-License-Identifier: MIT */
/* The key table: no key does two things in one view, every action says what
 * it does, and the KEYS section of man/shardlab.1 is exactly what the table
 * generates (GENERATE=1 rewrites that section from the table). */
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
			/* A view's own binding must not hide a global one. */
			if (m != SL_MODE_ANY) {
				const sl_keybind *g = sl_keys_of(SL_MODE_ANY);
				for (int j = 0; g[j].action != SL_A_NONE; j++)
					if (g[j].key == t[i].key)
						fail_msg("%s: key %d hides a global binding",
						         sl_keymode_title((sl_keymode)m), t[i].key);
			}
			assert_int_equal(sl_keys_lookup((sl_keymode)m, t[i].key), t[i].action);
		}
	}
	/* q quits everywhere: the promise of the issue. */
	for (int m = 0; m < SL_MODE_COUNT; m++)
		assert_int_equal(sl_keys_lookup((sl_keymode)m, 'q'), SL_A_QUIT);
	assert_int_equal(sl_keys_lookup(SL_MODE_MAIN, 0x7fff), SL_A_NONE);
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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_key_twice),
	    cmocka_unit_test(test_every_action_explained),
	    cmocka_unit_test(test_key_names),
	    cmocka_unit_test(test_man_keys_section),
	};
	return cmocka_run_group_tests_name("keys", tests, NULL, NULL);
}
