/* SPDX-License-Identifier: MIT */
/* lesson_ui.h - lessons on the terminal: the lesson menu (the program's
 * front door) and a lesson's screen, in the sandbox's loop (loop.h).
 *
 * The interpreter (src/lesson) yields steps; this front end shows them: the
 * narration and the learner's prompts in a lesson panel, and each product,
 * training step, reshard and lone collective the lesson runs animated by
 * the same playback and views as `shardlab sandbox` (lesson_show.h).  The
 * vm's own headless run gives the figures, identical to the animation's in
 * model timing. */
#ifndef SL_TUI_LESSON_UI_H
#define SL_TUI_LESSON_UI_H

#include "tui.h"

/* Open the lesson at path (NULL: the menu of installed lessons), starting at
 * start (a label or line; NULL: where the learner left off, unless fresh).
 * Returns the process exit status: 0; 1 after one line on stderr (no
 * terminal, a terminal curses cannot drive); 2 for a lesson that does not
 * load. */
int sl_tui_lessons(const char *path, const char *start, int fresh,
                   const struct sl_tui_options *opt);

#endif
