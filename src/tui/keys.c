/* SPDX-License-Identifier: MIT */
/* keys.c - the key tables and what is generated from them. */
#include "keys.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#define CTRL(c) ((c)&0x1f)
#define ESC 27

static const sl_keybind any_keys[] = {
    {'q', SL_A_QUIT, "quit at once, also mid-transfer; the terminal is restored"},
    {'?', SL_A_HELP, "open or close this help"},
    {KEY_F(1), SL_A_HELP, NULL},
    {'c', SL_A_CONTRAST, "switch the high-contrast theme on or off (for projectors)"},
    {CTRL('l'), SL_A_REDRAW, "redraw the screen"},
    {0, SL_A_NONE, NULL},
};

/* Presentation clickers send Page Down/Page Up (or Right/Left), so those
 * step too. */
static const sl_keybind main_keys[] = {
    {' ', SL_A_PLAY, "play or pause"},
    {KEY_RIGHT, SL_A_STEP, "step forward one operation (one shard's product, one ring step)"},
    {KEY_NPAGE, SL_A_STEP, NULL},
    {'l', SL_A_STEP, NULL},
    {KEY_LEFT, SL_A_BACK, "step back one operation, replaying the recorded trace"},
    {KEY_PPAGE, SL_A_BACK, NULL},
    {'h', SL_A_BACK, NULL},
    {'r', SL_A_RESTART, "restart the scenario from time zero"},
    {KEY_HOME, SL_A_RESTART, NULL},
    {KEY_END, SL_A_END, "jump to the end of the scenario"},
    {'<', SL_A_SLOWER, "slower playback (down to a million times slower than real time)"},
    {'>', SL_A_FASTER, "faster playback (up to real time)"},
    {'=', SL_A_AUTOSPEED, "automatic speed: the scenario lasts a few seconds on screen"},
    {'[', SL_A_BW_DOWN, "halve the bandwidth of the knob's links (see i and Tab)"},
    {']', SL_A_BW_UP, "double the bandwidth of the knob's links"},
    {'{', SL_A_LAT_DOWN, "halve the latency of the knob's links"},
    {'}', SL_A_LAT_UP, "double the latency of the knob's links"},
    {'i', SL_A_KNOB_CLASS, "turn the knobs on intra-node or inter-node links"},
    {'\t', SL_A_SEL_NEXT, "select the next device or link (the knobs then turn a selected link)"},
    {KEY_BTAB, SL_A_SEL_PREV, "select the previous device or link"},
    {KEY_MOUSE, SL_A_SEL_CLICK, "select the device or link under the mouse"},
    {ESC, SL_A_SEL_NONE, "clear the selection"},
    {'p', SL_A_PRESET, "next hardware preset, and rerun"},
    {'t', SL_A_TOPOLOGY, "switch the topology (full or ring), and rerun"},
    {'d', SL_A_DEV_DOWN, "one device fewer, and rerun"},
    {'D', SL_A_DEV_UP, "one device more, and rerun"},
    {'s', SL_A_STRATEGY, "next strategy (column-wise, row-wise, single device), and rerun"},
    {'a', SL_A_ALGO, "switch the collective algorithm (ring or tree), and rerun"},
    {'m', SL_A_SIZE_DOWN, "halve the problem size (m, k and n), and rerun"},
    {'M', SL_A_SIZE_UP, "double the problem size (m, k and n), and rerun"},
    {'g', SL_A_PLOT, "plot speedup against link bandwidth, then against device count"},
    {'P', SL_A_PLAN,
     "plan the training model on these devices and links: every layout, ranked (training view)"},
    {0, SL_A_NONE, NULL},
};

static const sl_keybind plot_keys[] = {
    {'g', SL_A_PLOT, "the next plot (bandwidth, device count), then back to the main view"},
    {ESC, SL_A_CLOSE, "back to the main view"},
    {'[', SL_A_BW_DOWN, "halve the bandwidth of the knob's links"},
    {']', SL_A_BW_UP, "double the bandwidth of the knob's links"},
    {'i', SL_A_KNOB_CLASS, "turn the knobs on intra-node or inter-node links"},
    {'p', SL_A_PRESET, "next hardware preset"},
    {'s', SL_A_STRATEGY, "next strategy"},
    {'d', SL_A_DEV_DOWN, "one device fewer"},
    {'D', SL_A_DEV_UP, "one device more"},
    {0, SL_A_NONE, NULL},
};

static const sl_keybind plan_keys[] = {
    {KEY_UP, SL_A_ROW_UP, "select the layout above"},
    {'k', SL_A_ROW_UP, NULL},
    {KEY_DOWN, SL_A_ROW_DOWN, "select the layout below"},
    {'j', SL_A_ROW_DOWN, NULL},
    {KEY_PPAGE, SL_A_PAGE_UP, "a page of layouts up"},
    {KEY_NPAGE, SL_A_PAGE_DOWN, "a page of layouts down"},
    {'s', SL_A_SORT,
     "sort by the next column: step time, tokens/s, peak memory, comm, bubble, tp*pp"},
    {'r', SL_A_SORT_REVERSE, "reverse the order (worst first)"},
    {'\r', SL_A_OPEN, "open the selected layout in the main view: one training step of it"},
    {'o', SL_A_OPEN, NULL},
    {'P', SL_A_PLAN, "back to the main view (the plan is kept)"},
    {ESC, SL_A_CLOSE, "back to the main view"},
    {0, SL_A_NONE, NULL},
};

static const sl_keybind help_keys[] = {
    {ESC, SL_A_CLOSE, "close the help"},
    {KEY_UP, SL_A_SCROLL_UP, "scroll up"},
    {KEY_PPAGE, SL_A_SCROLL_UP, NULL},
    {KEY_DOWN, SL_A_SCROLL_DOWN, "scroll down"},
    {KEY_NPAGE, SL_A_SCROLL_DOWN, NULL},
    {' ', SL_A_SCROLL_DOWN, NULL},
    {0, SL_A_NONE, NULL},
};

static const sl_keybind *const tables[SL_MODE_COUNT] = {any_keys, main_keys, plot_keys, plan_keys,
                                                        help_keys};
static const char *const titles[SL_MODE_COUNT] = {"Everywhere", "Main view", "Plot view",
                                                  "Plan view", "Help"};

static const char *const words[SL_A_COUNT] = {
    [SL_A_QUIT] = "quit",
    [SL_A_HELP] = "help",
    [SL_A_CONTRAST] = "contrast",
    [SL_A_REDRAW] = "redraw",
    [SL_A_PLAY] = "play",
    [SL_A_STEP] = "step",
    [SL_A_BACK] = "back",
    [SL_A_RESTART] = "restart",
    [SL_A_END] = "end",
    [SL_A_SLOWER] = "slower",
    [SL_A_FASTER] = "faster",
    [SL_A_AUTOSPEED] = "auto speed",
    [SL_A_BW_DOWN] = "bw-",
    [SL_A_BW_UP] = "bw+",
    [SL_A_LAT_DOWN] = "lat-",
    [SL_A_LAT_UP] = "lat+",
    [SL_A_KNOB_CLASS] = "intra/inter",
    [SL_A_SEL_NEXT] = "select",
    [SL_A_SEL_PREV] = "select",
    [SL_A_SEL_CLICK] = "select",
    [SL_A_SEL_NONE] = "unselect",
    [SL_A_PRESET] = "preset",
    [SL_A_TOPOLOGY] = "topology",
    [SL_A_DEV_DOWN] = "devices-",
    [SL_A_DEV_UP] = "devices+",
    [SL_A_STRATEGY] = "strategy",
    [SL_A_ALGO] = "algorithm",
    [SL_A_SIZE_DOWN] = "size-",
    [SL_A_SIZE_UP] = "size+",
    [SL_A_PLOT] = "plot",
    [SL_A_CLOSE] = "back",
    [SL_A_SCROLL_UP] = "scroll",
    [SL_A_SCROLL_DOWN] = "scroll",
    [SL_A_PLAN] = "plan",
    [SL_A_ROW_UP] = "up",
    [SL_A_ROW_DOWN] = "down",
    [SL_A_PAGE_UP] = "page up",
    [SL_A_PAGE_DOWN] = "page down",
    [SL_A_SORT] = "sort",
    [SL_A_SORT_REVERSE] = "reverse",
    [SL_A_OPEN] = "open",
};

const sl_keybind *sl_keys_of(sl_keymode mode)
{
	return mode >= 0 && mode < SL_MODE_COUNT ? tables[mode] : any_keys;
}

const char *sl_keymode_title(sl_keymode mode)
{
	return mode >= 0 && mode < SL_MODE_COUNT ? titles[mode] : "?";
}

sl_action sl_keys_lookup(sl_keymode mode, int key)
{
	for (const sl_keybind *b = sl_keys_of(mode); b->action != SL_A_NONE; b++)
		if (b->key == key)
			return b->action;
	for (const sl_keybind *b = any_keys; b->action != SL_A_NONE; b++)
		if (b->key == key)
			return b->action;
	return SL_A_NONE;
}

int sl_keys_first(sl_keymode mode, sl_action a)
{
	for (const sl_keybind *b = sl_keys_of(mode); b->action != SL_A_NONE; b++)
		if (b->action == a)
			return b->key;
	for (const sl_keybind *b = any_keys; b->action != SL_A_NONE; b++)
		if (b->action == a)
			return b->key;
	return -1;
}

const char *sl_action_word(sl_action a)
{
	return a > SL_A_NONE && a < SL_A_COUNT && words[a] ? words[a] : "";
}

const char *sl_key_name(int key, char *buf, size_t n)
{
	static const struct {
		int key;
		const char *name;
	} named[] = {
	    {' ', "Space"},       {'\t', "Tab"},       {ESC, "Esc"},       {KEY_BTAB, "Shift-Tab"},
	    {KEY_RIGHT, "Right"}, {KEY_LEFT, "Left"},  {KEY_UP, "Up"},     {KEY_DOWN, "Down"},
	    {KEY_NPAGE, "PgDn"},  {KEY_PPAGE, "PgUp"}, {KEY_HOME, "Home"}, {KEY_END, "End"},
	    {KEY_MOUSE, "Click"}, {'\n', "Enter"},      {'\r', "Enter"},
	};
	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
		if (named[i].key == key) {
			snprintf(buf, n, "%s", named[i].name);
			return buf;
		}
	if (key >= KEY_F(1) && key <= KEY_F(12))
		snprintf(buf, n, "F%d", key - KEY_F0);
	else if (key > 0 && key < 32)
		snprintf(buf, n, "Ctrl-%c", key + 'A' - 1);
	else if (key > 32 && key < 127)
		snprintf(buf, n, "%c", key);
	else
		snprintf(buf, n, "#%d", key);
	return buf;
}

int sl_keys_help(sl_keymode mode, sl_keys_entry_fn fn, void *ctx)
{
	const sl_keybind *t = sl_keys_of(mode);
	int count = 0;
	for (int i = 0; t[i].action != SL_A_NONE; i++) {
		int first = 1;
		for (int j = 0; j < i; j++)
			if (t[j].action == t[i].action)
				first = 0;
		if (!first)
			continue;
		char keys[96] = "", name[24];
		size_t len = 0;
		const char *note = NULL;
		for (int j = i; t[j].action != SL_A_NONE; j++) {
			if (t[j].action != t[i].action)
				continue;
			if (!note)
				note = t[j].note;
			len += (size_t)snprintf(
			    keys + len, len < sizeof keys ? sizeof keys - len : 0, "%s%s",
			    len ? ", " : "", sl_key_name(t[j].key, name, sizeof name));
		}
		fn(ctx, keys, note ? note : "");
		count++;
	}
	return count;
}

/* roff needs a backslash before a backslash and a leading dot or quote. */
static void roff_text(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

static void man_entry(void *ctx, const char *keys, const char *note)
{
	FILE *f = ctx;
	fputs(".TP\n.B ", f);
	roff_text(f, keys);
	fputc('\n', f);
	/* Sentence case in the man page. */
	char buf[200];
	snprintf(buf, sizeof buf, "%s", note);
	if (buf[0] >= 'a' && buf[0] <= 'z')
		buf[0] = (char)(buf[0] - 'a' + 'A');
	roff_text(f, buf);
	fputs(".\n", f);
}

void sl_keys_write_man(FILE *f)
{
	fputs(".SH KEYS\n"
	      "The terminal interface\n"
	      "(\\fBshardlab\\fR with no arguments, and \\fBshardlab sandbox\\fR)\n"
	      "takes these keys.\n"
	      "The help screen (\\fB?\\fR) is generated from the same table.\n",
	      f);
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		fputs(".SS ", f);
		roff_text(f, sl_keymode_title((sl_keymode)m));
		fputc('\n', f);
		sl_keys_help((sl_keymode)m, man_entry, f);
	}
}
