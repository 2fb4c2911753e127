/* SPDX-License-Identifier: MIT */
/* glyphs.c - the UTF-8 and ASCII glyph tables, and the legend of every
 * glyph and colour role the views draw (no curses calls: the tests link
 * it). */
#include <stddef.h>

#include "theme.h"

/* States, in sl_dstate order: idle, compute, send, recv, reduce, wait, busy,
 * write, read (a checkpoint's chunks).
 * Densities differ, so a monochrome timeline still tells them apart. */
const sl_glyphs sl_glyphs_utf8 = {
    .utf8 = 1,
    .h = "─",
    .v = "│",
    .tl = "┌",
    .tr = "┐",
    .bl = "└",
    .br = "┘",
    .state = {" ", "█", "░", "▒", "▓", "·", "?", "▀", "▄"},
    /* Partial sums as a rising fill, apart from the states' shades (░ is
     * only ever send). */
    .level = {"·", "▂", "▄", "▆", "█"},
    .incoming = "»",
    .line_done = "━",
    .line_todo = "─",
    .line_head = "▶",
    .line_inter = "┅",
    .bar = {" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉", "█"},
    .arrow = "→",
    .larrow = "←",
    .tick = "┴",
    .caret = "▲",
    .point = "●",
    .curve = "·",
    .cross_mark = "┆",
    .bwd = "▚",
    .wgrad = "▗",
    .fwd2 = "▛",
    .bwd2 = "▞",
    .wgrad2 = "▖",
    .more = "+",
    .lane = "↳",
    .replica = "≡",
    .unknown = "?",
    .mem_l = "▕",
    .mem_r = "▏",
    .anatomy = {"▓", "▒", "░", "▞", "·"},
    .custom = "*",
    .pass = "✓ pass",
    .fail = "✗ FAIL",
    .dot = "·",
    .times = "×",
};

const sl_glyphs sl_glyphs_ascii = {
    .utf8 = 0,
    .h = "-",
    .v = "|",
    .tl = "+",
    .tr = "+",
    .bl = "+",
    .br = "+",
    .state = {" ", "#", ">", "<", "+", ".", "?", "W", "R"},
    .level = {".", ":", "=", "%", "#"},
    .incoming = "*",
    .line_done = "=",
    .line_todo = "-",
    .line_head = ">",
    .line_inter = "~",
    .bar = {" ", ".", ".", ":", ":", "|", "|", "|", "#"},
    .arrow = "->",
    .larrow = "<-",
    .tick = "+",
    .caret = "^",
    .point = "o",
    .curve = ".",
    .cross_mark = ":",
    .bwd = "%",
    .wgrad = "=",
    .fwd2 = "@",
    .bwd2 = "$",
    .wgrad2 = ";",
    .more = "&",
    .lane = "\\",
    .replica = "~",
    .unknown = "?",
    .mem_l = "[",
    .mem_r = "]",
    .anatomy = {"P", "G", "O", "A", "w"},
    .custom = "*",
    .pass = "pass",
    .fail = "FAIL",
    .dot = ".",
    .times = "x",
};

#define G(f) offsetof(sl_glyphs, f)
#define NOG SL_LEGEND_NO_GLYPH
static const sl_legend_item legend[] = {
    {SL_LG_STATES, G(state[SL_DS_COMPUTE]), 1, SL_ROLE_STATE0 + SL_DS_COMPUTE,
     "compute (on a training timeline: forward)"},
    {SL_LG_STATES, G(bwd), 1, SL_ROLE_BWD, "backward: input gradients"},
    {SL_LG_STATES, G(wgrad), 1, SL_ROLE_WGRAD, "backward: weight gradients"},
    {SL_LG_STATES, G(fwd2), 1, SL_ROLE_STATE0 + SL_DS_COMPUTE,
     "forward of a device's second model chunk on (interleaved schedule)"},
    {SL_LG_STATES, G(bwd2), 1, SL_ROLE_BWD, "backward (input gradients) of a later chunk"},
    {SL_LG_STATES, G(wgrad2), 1, SL_ROLE_WGRAD, "weight gradients of a later chunk"},
    {SL_LG_STATES, G(state[SL_DS_SEND]), 1, SL_ROLE_STATE0 + SL_DS_SEND, "send"},
    {SL_LG_STATES, G(state[SL_DS_RECV]), 1, SL_ROLE_STATE0 + SL_DS_RECV, "receive"},
    {SL_LG_STATES, G(state[SL_DS_REDUCE]), 1, SL_ROLE_STATE0 + SL_DS_REDUCE,
     "reduce (add what arrived)"},
    {SL_LG_STATES, G(state[SL_DS_WAIT]), 1, SL_ROLE_STATE0 + SL_DS_WAIT, "wait for a peer"},
    {SL_LG_STATES, G(state[SL_DS_WRITE]), 1, SL_ROLE_STATE0 + SL_DS_WRITE, "write a chunk"},
    {SL_LG_STATES, G(state[SL_DS_READ]), 1, SL_ROLE_STATE0 + SL_DS_READ, "read a chunk"},
    {SL_LG_STATES, G(state[SL_DS_BUSY]), 1, SL_ROLE_STATE0 + SL_DS_BUSY, "other work"},
    {SL_LG_STATES, G(state[SL_DS_IDLE]), 1, SL_ROLE_STATE0 + SL_DS_IDLE,
     "(blank) idle; on a training timeline a digit is the micro-batch starting, "
     "underlined when backward"},
    {SL_LG_STATES, G(more), 1, SL_ROLE_NORMAL,
     "after micro-batch digits: more passes started there than the columns can name"},
    {SL_LG_STATES, G(lane), 1, SL_ROLE_DEV0,
     "a lane under a device's: its communication stream, whose collectives run beside the "
     "compute above (a wait there is communication not hidden); devices whose lanes look the "
     "same share rows where space is short, named 0,1 or 0-3"},
    {SL_LG_SCALE, G(tick), 1, SL_ROLE_DIM, "a time on the scale"},
    {SL_LG_SCALE, G(caret), 1, SL_ROLE_CURSOR, "now (the cursor; also the plot's setting)"},
    {SL_LG_BLOCKS, NOG, 1, SL_ROLE_DEVBG0,
     "a digit on a device's colour: the device owning (holding) that block"},
    {SL_LG_BLOCKS, G(replica), 1, SL_ROLE_DIM, "held whole by every device (X column-wise)"},
    {SL_LG_BLOCKS, G(level[0]), 1, SL_ROLE_DIM, "not there yet"},
    {SL_LG_BLOCKS, G(level[1]), 3, SL_ROLE_DEV0,
     "a partial sum, a quarter, half, three quarters of the devices' terms (in a reshard "
     "the last is a part read, not yet written)"},
    {SL_LG_BLOCKS, G(level[4]), 1, SL_ROLE_DEV0, "complete (monochrome; in colour, the digit)"},
    {SL_LG_BLOCKS, G(incoming), 1, SL_ROLE_DEV0, "arriving, or being read"},
    {SL_LG_BLOCKS, G(unknown), 1, SL_ROLE_DIM, "not known yet"},
    {SL_LG_LINKS, G(line_done), 1, SL_ROLE_INTRA, "delivered over a link inside a node"},
    {SL_LG_LINKS, G(line_inter), 1, SL_ROLE_INTER, "a link between nodes (delivered, bold)"},
    {SL_LG_LINKS, G(line_head), 1, SL_ROLE_STATE0 + SL_DS_SEND, "the transfer's head"},
    {SL_LG_LINKS, G(line_todo), 1, SL_ROLE_DIM, "still to send, or an idle link"},
    {SL_LG_LINKS, G(custom), 1, SL_ROLE_WARN, "a link turned from its class's figures"},
    {SL_LG_LINKS, G(arrow), 1, SL_ROLE_NORMAL, "from a device to a device"},
    {SL_LG_LINKS, G(larrow), 1, SL_ROLE_NORMAL, "received from"},
    {SL_LG_MEMORY, G(bar[1]), 8, SL_ROLE_DEV0,
     "a device's memory in use, in eighths of a cell, of its capacity"},
    {SL_LG_MEMORY, G(mem_l), 1, SL_ROLE_DIM, "the bar's start"},
    {SL_LG_MEMORY, G(mem_r), 1, SL_ROLE_DIM, "the bar's end (its capacity)"},
    {SL_LG_MEMORY, G(bar[0]), 1, SL_ROLE_DIM, "(blank) free"},
    {SL_LG_MEMORY, G(anatomy[0]), 1, SL_ROLE_STATE0 + SL_DS_SEND, "a memory anatomy: parameters"},
    {SL_LG_MEMORY, G(anatomy[1]), 1, SL_ROLE_STATE0 + SL_DS_REDUCE, "gradients"},
    {SL_LG_MEMORY, G(anatomy[2]), 1, SL_ROLE_BWD, "optimizer state (Adam)"},
    {SL_LG_MEMORY, G(anatomy[3]), 1, SL_ROLE_STATE0 + SL_DS_COMPUTE,
     "activations kept for the backward pass (their peak)"},
    {SL_LG_MEMORY, G(anatomy[4]), 1, SL_ROLE_DIM, "workspace (its peak)"},
    {SL_LG_PLOT, G(point), 1, SL_ROLE_KEY, "measured by the engine"},
    {SL_LG_PLOT, G(curve), 1, SL_ROLE_STATE0 + SL_DS_SEND,
     "the model's prediction (dimmed and spaced: speedup 1)"},
    {SL_LG_PLOT, G(cross_mark), 1, SL_ROLE_WARN, "the crossover, where speedup falls below 1"},
    {SL_LG_TEXT, G(pass), 1, SL_ROLE_PASS, "a check that holds"},
    {SL_LG_TEXT, G(fail), 1, SL_ROLE_FAIL, "a check that fails"},
    {SL_LG_TEXT, G(dot), 1, SL_ROLE_NORMAL, "separates figures"},
    {SL_LG_TEXT, G(times), 1, SL_ROLE_NORMAL, "in a shape: rows by columns"},
    {SL_LG_TEXT, G(h), 6, SL_ROLE_BORDER, "a panel's frame"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_DEV0, "each device its own colour (and its digit)"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_HEAD, "a panel's title, a question"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_TITLE, "the title line"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_KEY, "a key, an answer typed"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_STATUS, "the status line"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_SELECT, "the selected device or link"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_WARN, "not quite; a figure turned by a knob"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_DIM, "setup, run, result lines; what is still to come"},
    {SL_LG_COLOURS, NOG, 1, SL_ROLE_NORMAL, "text"},
};
#undef G
#undef NOG

const sl_legend_item *sl_legend(size_t *n)
{
	*n = sizeof legend / sizeof legend[0];
	return legend;
}

const char *sl_legend_group_name(sl_legend_group g)
{
	static const char *const names[SL_LG_COUNT] = {
	    "Timeline and device states",
	    "Time scale",
	    "Blocks (matrices, buffers, a device's Y, checkpoint tensors)",
	    "Links",
	    "Memory",
	    "Plot",
	    "Checks and frames",
	    "Colours"};
	return g >= 0 && g < SL_LG_COUNT ? names[g] : "?";
}

const char *sl_glyph_at(const sl_glyphs *g, size_t off, int k)
{
	const char *const *slot = (const char *const *)(const void *)((const char *)g + off);
	return slot[k];
}
