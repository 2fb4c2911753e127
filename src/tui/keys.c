/* SPDX-License-Identifier: MIT */
/* keys.c - the key tables and what is generated from them. */
#include "keys.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#define CTRL(c) ((c)&0x1f)
#define ESC 27
/* These work in every mode, also while an answer is typed: no printable
 * key among them (F10 quits, as in htop, nvtop and btop). */
static const sl_keybind any_keys[] = {
    {KEY_F(10), SL_A_QUIT,
     "quit at once from any screen, also mid-transfer; the terminal is restored"},
    {KEY_F(1), SL_A_HELP, "open or close the help of the screen shown"},
    {CTRL('l'), SL_A_REDRAW, "redraw the screen"},
    {KEY_F(12), SL_A_SNAPSHOT,
     "write the screen to shardlab-N.svg (SVG) and shardlab-N.svg.txt (text) here"},
    {0, SL_A_NONE, NULL},
};

static const sl_keybind sandbox_keys[] = {
    {'q', SL_A_LEAVE,
     "quit at once, also mid-transfer (back to the lesson menu when the sandbox was opened "
     "from it)"},
    {'?', SL_A_HELP, "open or close this help"},
    {'c', SL_A_CONTRAST, "switch the high-contrast theme on or off (for projectors)"},
    {'S', SL_A_SNAPSHOT, "write the screen as a figure (as F12)"},
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
    {'a', SL_A_ALGO, "the next collective algorithm (ring, tree, ...), and rerun"},
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

static const sl_keybind menu_keys[] = {
    {KEY_DOWN, SL_A_ROW_DOWN, "choose the next lesson"},
    {'j', SL_A_ROW_DOWN, NULL},
    {KEY_UP, SL_A_ROW_UP, "choose the previous lesson"},
    {'k', SL_A_ROW_UP, NULL},
    {'\r', SL_A_OPEN, "open the lesson chosen, where you left it"},
    {'\n', SL_A_OPEN, NULL},
    {KEY_ENTER, SL_A_OPEN, NULL},
    {'f', SL_A_FRESH, "open the lesson chosen from its start, forgetting where you left it"},
    {'s', SL_A_SANDBOX, "open the sandbox (q there comes back here)"},
    {'R', SL_A_FORGET_ALL,
     "forget every lesson's progress and score (for a new class); asks first, y confirms"},
    {'q', SL_A_LEAVE, "quit"},
    {ESC, SL_A_LEAVE, NULL},
    {'?', SL_A_HELP, "open or close this help"},
    {'c', SL_A_CONTRAST, "switch the high-contrast theme on or off (for projectors)"},
    {'p', SL_A_PRESENTER, "presenter mode on or off: no scores here, no log lines in a lesson"},
    {KEY_F(2), SL_A_PRESENTER, NULL},
    {0, SL_A_NONE, NULL},
};

/* The sandbox's playback keys work on the scenario a lesson shows. */
static const sl_keybind lesson_keys[] = {
    {'\r', SL_A_GO_ON, "go on: the next paragraph, run or question (at the end, back to the menu)"},
    {'\n', SL_A_GO_ON, NULL},
    {KEY_ENTER, SL_A_GO_ON, NULL},
    {' ', SL_A_PLAY, "play or pause the scenario shown"},
    {KEY_RIGHT, SL_A_STEP, "step the scenario forward one operation"},
    {KEY_NPAGE, SL_A_STEP, NULL},
    {'l', SL_A_STEP, NULL},
    {KEY_LEFT, SL_A_BACK, "step the scenario back one operation"},
    {KEY_PPAGE, SL_A_BACK, NULL},
    {'h', SL_A_BACK, NULL},
    {'r', SL_A_RESTART, "restart the scenario from time zero"},
    {KEY_HOME, SL_A_RESTART, NULL},
    {KEY_END, SL_A_END, "jump to the end of the scenario"},
    {'n', SL_A_PHASE_NEXT,
     "play the scenario to the end of its phase: a run of operations of one kind (compute, "
     "one collective's half, pipeline messages, checkpoint reads or writes)"},
    {KEY_SRIGHT, SL_A_PHASE_NEXT, NULL},
    {'N', SL_A_PHASE_PREV, "back to the end of the phase before"},
    {KEY_SLEFT, SL_A_PHASE_PREV, NULL},
    {'g', SL_A_SECTIONS,
     "the lesson's sections: choose one to go to (the runs before it run again, unseen)"},
    {'v', SL_A_VIEW,
     "switch between the compact figure over the narration and the full scenario view (on "
     "terminals of 30 rows or fewer)"},
    {KEY_UP, SL_A_SCROLL_UP, "scroll the narration back a line (what scrolled off the panel)"},
    {'k', SL_A_SCROLL_UP, NULL},
    {KEY_DOWN, SL_A_SCROLL_DOWN, "scroll the narration forward a line, to the newest"},
    {'j', SL_A_SCROLL_DOWN, NULL},
    {'p', SL_A_PRESENTER,
     "presenter mode on or off: the narration without its setup, run, result and passing "
     "check lines, and no score (for a projector)"},
    {KEY_F(2), SL_A_PRESENTER, NULL},
    {'q', SL_A_LEAVE,
     "leave the lesson, keeping your place: back to the menu (or quit, when opened by "
     "shardlab lesson)"},
    {ESC, SL_A_LEAVE, NULL},
    {'?', SL_A_HELP, "open or close this help"},
    {'c', SL_A_CONTRAST, "switch the high-contrast theme on or off (for projectors)"},
    {'S', SL_A_SNAPSHOT, "write the screen as a figure (as F12)"},
    {0, SL_A_NONE, NULL},
};

static const sl_keybind sbs_keys[] = {
    {'q', SL_A_LEAVE, "quit"},
    {ESC, SL_A_LEAVE, NULL},
    {'?', SL_A_HELP, "open or close this help"},
    {'c', SL_A_CONTRAST, "switch the high-contrast theme on or off (for projectors)"},
    {'S', SL_A_SNAPSHOT, "write the screen as a figure (as F12)"},
    {0, SL_A_NONE, NULL},
};

/* Every printable key but ? is typed (see sl_keys_typed). */
static const sl_keybind input_keys[] = {
    {'\r', SL_A_SUBMIT,
     "answer with what is typed: a choice's letter or number, a number with its unit, or "
     "KNOB VALUE, demo or skip"},
    {'\n', SL_A_SUBMIT, NULL},
    {KEY_ENTER, SL_A_SUBMIT, NULL},
    {KEY_BACKSPACE, SL_A_ERASE, "erase the last character typed"},
    {127, SL_A_ERASE, NULL},
    {CTRL('h'), SL_A_ERASE, NULL},
    {ESC, SL_A_CANCEL, "clear what is typed; with nothing typed, leave the lesson"},
    /* The figure plays and steps while a question waits, on keys that
     * type nothing. */
    {'\t', SL_A_PLAY, "play or pause the scenario shown, while the question waits"},
    {KEY_UP, SL_A_SCROLL_UP, "scroll the narration back a line, while the question waits"},
    {KEY_DOWN, SL_A_SCROLL_DOWN, "scroll the narration forward a line"},
    {KEY_F(2), SL_A_PRESENTER, "presenter mode on or off, while the question waits"},
    {KEY_RIGHT, SL_A_STEP, "step the scenario forward one operation"},
    {KEY_NPAGE, SL_A_STEP, NULL},
    {KEY_LEFT, SL_A_BACK, "step the scenario back one operation"},
    {KEY_PPAGE, SL_A_BACK, NULL},
    {KEY_HOME, SL_A_RESTART, "restart the scenario from time zero"},
    {KEY_END, SL_A_END, "jump to the end of the scenario"},
    {KEY_SRIGHT, SL_A_PHASE_NEXT, "play the scenario to the end of its phase"},
    {KEY_SLEFT, SL_A_PHASE_PREV, "back to the end of the phase before"},
    {'?', SL_A_HELP, "open this help while nothing is typed (after that, ? is typed)"},
    {0, SL_A_NONE, NULL},
};

static const sl_keybind sections_keys[] = {
    {KEY_DOWN, SL_A_ROW_DOWN, "choose the next section"},
    {'j', SL_A_ROW_DOWN, NULL},
    {KEY_UP, SL_A_ROW_UP, "choose the section before"},
    {'k', SL_A_ROW_UP, NULL},
    {'\r', SL_A_OPEN, "go to the section chosen (the runs before it run again, unseen)"},
    {'\n', SL_A_OPEN, NULL},
    {KEY_ENTER, SL_A_OPEN, NULL},
    {ESC, SL_A_LEAVE, "close the list: back to the lesson where it was"},
    {'g', SL_A_LEAVE, NULL},
    {'q', SL_A_LEAVE, NULL},
    {'?', SL_A_HELP, "open or close this help"},
    {0, SL_A_NONE, NULL},
};

static const sl_keybind help_keys[] = {
    {ESC, SL_A_CLOSE, "close the help"},
    {'q', SL_A_CLOSE, NULL},
    {'?', SL_A_CLOSE, NULL},
    {KEY_UP, SL_A_SCROLL_UP, "scroll up"},
    {KEY_PPAGE, SL_A_SCROLL_UP, NULL},
    {KEY_DOWN, SL_A_SCROLL_DOWN, "scroll down"},
    {KEY_NPAGE, SL_A_SCROLL_DOWN, NULL},
    {' ', SL_A_SCROLL_DOWN, NULL},
    {0, SL_A_NONE, NULL},
};

static const struct mode {
	const sl_keybind *keys;
	sl_keymode parent;
	int lessons; /* the front end: 0 the sandbox, 1 the lessons, 2 side by side */
	const char *title;
} modes[SL_MODE_COUNT] = {
    [SL_MODE_ANY] = {any_keys, SL_MODE_COUNT, 0, "Everywhere"},
    [SL_MODE_SANDBOX] = {sandbox_keys, SL_MODE_ANY, 0, "Sandbox, every view"},
    [SL_MODE_MAIN] = {main_keys, SL_MODE_SANDBOX, 0, "Main view"},
    [SL_MODE_PLOT] = {plot_keys, SL_MODE_SANDBOX, 0, "Plot view"},
    [SL_MODE_PLAN] = {plan_keys, SL_MODE_SANDBOX, 0, "Plan view"},
    [SL_MODE_MENU] = {menu_keys, SL_MODE_ANY, 1, "Lesson menu"},
    [SL_MODE_LESSON] = {lesson_keys, SL_MODE_ANY, 1, "Lesson"},
    [SL_MODE_INPUT] = {input_keys, SL_MODE_ANY, 1,
                       "Lesson, typing an answer (other printable keys are typed)"},
    [SL_MODE_SECTIONS] = {sections_keys, SL_MODE_ANY, 1, "Lesson, its sections (g)"},
    [SL_MODE_SBS] = {sbs_keys, SL_MODE_ANY, 2, "Side by side (shardlab compare --side-by-side)"},
    [SL_MODE_HELP] = {help_keys, SL_MODE_ANY, 0, "Help"},
};

static const char *const words[SL_A_COUNT] = {
    [SL_A_QUIT] = "quit",
    [SL_A_LEAVE] = "quit",
    [SL_A_HELP] = "help",
    [SL_A_CONTRAST] = "contrast",
    [SL_A_REDRAW] = "redraw",
    [SL_A_SNAPSHOT] = "snapshot",
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
    [SL_A_FRESH] = "fresh start",
    [SL_A_SANDBOX] = "sandbox",
    [SL_A_FORGET_ALL] = "forget all",
    [SL_A_PHASE_NEXT] = "phase",
    [SL_A_PHASE_PREV] = "phase back",
    [SL_A_SECTIONS] = "sections",
    [SL_A_GO_ON] = "go on",
    [SL_A_VIEW] = "scenario/lesson",
    [SL_A_PRESENTER] = "presenter",
    [SL_A_SUBMIT] = "answer",
    [SL_A_ERASE] = "erase",
    [SL_A_CANCEL] = "back",
};

static int valid(sl_keymode mode)
{
	return mode >= 0 && mode < SL_MODE_COUNT;
}

const sl_keybind *sl_keys_of(sl_keymode mode)
{
	return valid(mode) ? modes[mode].keys : any_keys;
}

const char *sl_keymode_title(sl_keymode mode)
{
	return valid(mode) ? modes[mode].title : "?";
}

sl_keymode sl_keymode_parent(sl_keymode mode)
{
	return valid(mode) ? modes[mode].parent : SL_MODE_COUNT;
}

/* The screen's own keys first, then what it inherits, then its siblings. */
int sl_keys_help_modes(sl_keymode from, sl_keymode *out, int max)
{
	int lessons = valid(from) ? modes[from].lessons : 0, n = 0;
	sl_keymode m = valid(from) && from != SL_MODE_HELP ? from : SL_MODE_ANY;
	for (; valid(m) && n < max; m = modes[m].parent)
		out[n++] = m;
	for (int i = 0; i < SL_MODE_COUNT && n < max; i++) {
		int listed = i == SL_MODE_HELP;
		for (int j = 0; j < n; j++)
			listed |= (int)out[j] == i;
		if (!listed && modes[i].lessons == lessons)
			out[n++] = (sl_keymode)i;
	}
	if (n < max)
		out[n++] = SL_MODE_HELP;
	return n;
}

sl_action sl_keys_lookup(sl_keymode mode, int key)
{
	for (sl_keymode m = valid(mode) ? mode : SL_MODE_ANY; valid(m); m = modes[m].parent)
		for (const sl_keybind *b = modes[m].keys; b->action != SL_A_NONE; b++)
			if (b->key == key)
				return b->action;
	return SL_A_NONE;
}

int sl_keys_typed(int key, size_t typed)
{
	if (key < 32 || key >= 127)
		return 0;
	return typed > 0 || sl_keys_lookup(SL_MODE_INPUT, key) == SL_A_NONE;
}

int sl_keys_first(sl_keymode mode, sl_action a)
{
	for (sl_keymode m = valid(mode) ? mode : SL_MODE_ANY; valid(m); m = modes[m].parent)
		for (const sl_keybind *b = modes[m].keys; b->action != SL_A_NONE; b++)
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
	    {' ', "Space"},
	    {'\t', "Tab"},
	    {ESC, "Esc"},
	    {KEY_BTAB, "Shift-Tab"},
	    {KEY_RIGHT, "Right"},
	    {KEY_LEFT, "Left"},
	    {KEY_SRIGHT, "Shift-Right"},
	    {KEY_SLEFT, "Shift-Left"},
	    {KEY_UP, "Up"},
	    {KEY_DOWN, "Down"},
	    {KEY_NPAGE, "PgDn"},
	    {KEY_PPAGE, "PgUp"},
	    {KEY_HOME, "Home"},
	    {KEY_END, "End"},
	    {KEY_MOUSE, "Click"},
	    {'\n', "Enter"},
	    {'\r', "Enter"},
	    {KEY_ENTER, "Enter"},
	    {KEY_BACKSPACE, "Backspace"},
	    {127, "Backspace"},
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
			/* Enter is CR, LF or KEY_ENTER: named once. */
			sl_key_name(t[j].key, name, sizeof name);
			int dup = 0;
			for (int k = i; k < j; k++) {
				char other[24];
				if (t[k].action == t[i].action &&
				    strcmp(sl_key_name(t[k].key, other, sizeof other), name) == 0)
					dup = 1;
			}
			if (dup)
				continue;
			len +=
			    (size_t)snprintf(keys + len, len < sizeof keys ? sizeof keys - len : 0,
			                     "%s%s", len ? ", " : "", name);
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
	      "(the lesson menu of \\fBshardlab\\fR with no arguments, \\fBshardlab lesson\\fR\n"
	      "and \\fBshardlab sandbox\\fR)\n"
	      "takes these keys, one table per screen.\n"
	      "A screen also takes the keys of the table it names, and those under\n"
	      "Everywhere, which work on every screen, also while an answer is typed.\n"
	      "Each screen's help (\\fB?\\fR or \\fBF1\\fR) and status line\n"
	      "are generated from the same tables.\n",
	      f);
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		fputs(".SS ", f);
		roff_text(f, sl_keymode_title((sl_keymode)m));
		fputc('\n', f);
		sl_keymode p = sl_keymode_parent((sl_keymode)m);
		if (p != SL_MODE_COUNT && p != SL_MODE_ANY) {
			fputs("Also the keys of ", f);
			roff_text(f, sl_keymode_title(p));
			fputs(".\n", f);
		}
		sl_keys_help((sl_keymode)m, man_entry, f);
	}
}
