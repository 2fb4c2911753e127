/* SPDX-License-Identifier: MIT */
/* quiz.c - the checker's rules for questions, beyond what a lesson needs to
 * load: a numeric question names the wrong answers learners are likely to
 * give (two mistakes at least), and no multiple-choice question is
 * answered by the text shown since the question before it.
 *
 * `shardlab check` runs them; a lesson that breaks them still loads and
 * plays, so an author can try a draft.  The give-away rule reads only the
 * lesson's own words: figures are known when it runs, and the course's
 * test holds their rendered values out of the transcript before each
 * question.
 *
 * Key words of a right choice: its words, lowercased, a possessive 's and
 * a plural s or es dropped, without stop words, one-letter words, words of the
 * question and words another choice has.  The question is answered by the
 * text above when at least two thirds of them are in the text shown since
 * the previous question, and a larger share than of any wrong choice's: the about text before the
 * first question, then say, pause, menu and explore texts, walking the lesson's flow back from the
 * question (the feedback on the previous answer speaks of that question and does not count). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_internal.h"

#define MAX_WORD 32
#define MAX_KEYS 24
#define MAX_WALK                                                                                   \
	256 /* commands walked back from one question (and 8 times as many queued):                \
	     * checking stays linear */

static const char *const stop_words[] = {
    "a",     "about",   "above",   "after",   "again",  "against", "all",     "also",    "an",
    "and",   "any",     "are",     "as",      "at",     "be",      "because", "been",    "before",
    "being", "below",   "both",    "but",     "by",     "can",     "could",   "did",     "do",
    "does",  "doing",   "down",    "during",  "each",   "either",  "else",    "every",   "few",
    "for",   "from",    "further", "had",     "has",    "have",    "having",  "he",      "her",
    "here",  "him",     "his",     "how",     "i",      "if",      "in",      "into",    "is",
    "it",    "its",     "itself",  "just",    "may",    "me",      "might",   "more",    "most",
    "much",  "must",    "my",      "neither", "no",     "nor",     "not",     "now",     "of",
    "off",   "on",      "once",    "one",     "only",   "or",      "other",   "our",     "out",
    "over",  "own",     "same",    "she",     "should", "so",      "some",    "such",    "than",
    "that",  "the",     "their",   "them",    "then",   "there",   "these",   "they",    "this",
    "those", "through", "to",      "too",     "under",  "until",   "up",      "us",      "very",
    "was",   "we",      "were",    "what",    "when",   "where",   "which",   "while",   "who",
    "whom",  "why",     "will",    "with",    "would",  "yes",     "yet",     "you",     "your",
    "it's",  "isn't",   "don't",   "doesn't", "two",    "three",   "four",    "many",    "less",
    "still", "even",    "get",     "gets",    "make",   "makes",   "way",     "there's", NULL};

/* A list of normalized words. */
struct words {
	char w[MAX_KEYS][MAX_WORD];
	int n;
};

static int is_stop(const char *w)
{
	for (int i = 0; stop_words[i]; i++)
		if (strcmp(w, stop_words[i]) == 0)
			return 1;
	return 0;
}

static int word_char(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '\'' || c >= 0x80;
}

/* The next word of s at *i (0 at the end): lowercased, its possessive 's
 * and a plural s dropped; *at is where it starts.  Interpolations and
 * claims ({...}) are skipped: their words are figures, not prose. */
static int next_word(const char *s, size_t *i, char w[MAX_WORD], size_t *at)
{
	for (;;) {
		while (s[*i] && !word_char((unsigned char)s[*i]) && s[*i] != '{')
			(*i)++;
		if (s[*i] == '{') {
			if (s[*i + 1] == '{') {
				*i += 2;
				continue;
			}
			while (s[*i] && s[*i] != '}')
				(*i)++;
			continue;
		}
		if (!s[*i])
			return 0;
		size_t a = *i, n = 0;
		while (s[*i] && word_char((unsigned char)s[*i]))
			(*i)++;
		size_t b = *i;
		while (a < b && (s[a] == '-' || s[a] == '\''))
			a++;
		while (b > a && (s[b - 1] == '-' || s[b - 1] == '\''))
			b--;
		if (b - a >= 2 && s[b - 2] == '\'' && tolower((unsigned char)s[b - 1]) == 's')
			b -= 2;
		for (size_t k = a; k < b && n + 1 < MAX_WORD; k++)
			w[n++] = (char)tolower((unsigned char)s[k]);
		w[n] = 0;
		if (n > 4 && w[n - 2] == 'e' && w[n - 1] == 's' &&
		    (w[n - 3] == 'x' || (w[n - 3] == 's' && w[n - 4] == 's') ||
		     (w[n - 3] == 'h' && (w[n - 4] == 'c' || w[n - 4] == 's'))))
			w[n -= 2] = 0; /* batches, crosses, boxes */
		else if (n > 3 && w[n - 1] == 's' && w[n - 2] != 's' && !is_stop(w))
			w[--n] = 0;
		if (n < 2)
			continue;
		*at = a;
		return 1;
	}
}

static int has_word(const struct words *ws, const char *w)
{
	for (int i = 0; i < ws->n; i++)
		if (strcmp(ws->w[i], w) == 0)
			return 1;
	return 0;
}

/* The content words of s, each once. */
static void content_words(const char *s, struct words *out)
{
	char w[MAX_WORD];
	size_t i = 0, at;
	out->n = 0;
	while (s && next_word(s, &i, w, &at))
		if (!is_stop(w) && !has_word(out, w) && out->n < MAX_KEYS)
			memcpy(out->w[out->n++], w, MAX_WORD);
}

/* A choice's key words: its content words that are neither the question's
 * nor another choice's (a word two choices share tells them apart from
 * neither). */
static void key_words(const sl_op *q, const sl_choice *c, struct words *keys)
{
	struct words all, question, other;
	content_words(c->text.s, &all);
	content_words(q->text.s, &question);
	keys->n = 0;
	for (int i = 0; i < all.n; i++) {
		int shared = has_word(&question, all.w[i]);
		for (int k = 0; k < q->nch && !shared; k++)
			if (&q->ch[k] != c) {
				content_words(q->ch[k].text.s, &other);
				shared = has_word(&other, all.w[i]);
			}
		if (!shared)
			memcpy(keys->w[keys->n++], all.w[i], MAX_WORD);
	}
}

static void diag(const sl_lesson *l, sl_lesson_diags *d, int *found, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void diag(const sl_lesson *l, sl_lesson_diags *d, int *found, int line, const char *fmt, ...)
{
	char msg[300], raw[sizeof d->msg[0]];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	(*found)++;
	if (!d)
		return;
	if (d->n >= SL_LESSON_MAX_DIAGS) {
		d->more = 1;
		return;
	}
	snprintf(raw, sizeof raw, "%s:%d: %s", l->name, line, msg);
	sl_escape_controls(d->msg[d->n++], sizeof d->msg[0], raw);
}

/* The texts a command shows before a question may be asked. */
static int shown_texts(const sl_op *o, const char *t[], int max)
{
	int n = 0;
	switch (o->kind) {
	case OP_SAY:
	case OP_PAUSE:
		t[n++] = o->text.s;
		break;
	case OP_EXPLORE:
		t[n++] = o->text.s;
		t[n++] = o->hint.s;
		break;
	case OP_MENU:
		t[n++] = o->text.s;
		for (int i = 0; i < o->nch && n < max; i++)
			t[n++] = o->ch[i].text.s;
		break;
	default:
		break;
	}
	return n;
}

/* The sentence that says the most key words, and where it starts. */
struct best {
	int hits, line;
	const char *text;
	size_t at;
};

static int sentence_end(const char *s, size_t i)
{
	return strchr(".;:?!", s[i]) && (s[i + 1] == ' ' || !s[i + 1]);
}

/* Mark the key words in text s (line) in seen, and keep its sentence
 * that holds the most of them. */
static void scan(const char *s, int line, const struct words *keys, unsigned char *seen,
                 struct best *best)
{
	char w[MAX_WORD];
	size_t i = 0, at, start = 0, mark = 0;
	int hits = 0;
	unsigned char here[MAX_KEYS] = {0};
	while (s && next_word(s, &i, w, &at)) {
		for (size_t k = mark; k < at; k++)
			if (sentence_end(s, k)) { /* a new sentence */
				memset(here, 0, sizeof here);
				hits = 0;
				start = at;
			}
		mark = at;
		for (int k = 0; k < keys->n; k++)
			if (!here[k] && strcmp(keys->w[k], w) == 0) {
				here[k] = seen[k] = 1;
				if (++hits > best->hits)
					*best = (struct best){hits, line, s, start};
			}
	}
}

/* The sentence of s around position at, quoted in at most 72 bytes. */
static void excerpt(const char *s, size_t at, char *out, size_t n)
{
	size_t a = at, len = strlen(s);
	while (a > 0 && !sentence_end(s, a - 1))
		a--;
	while (s[a] == ' ')
		a++;
	size_t b = at;
	while (b < len && !sentence_end(s, b))
		b++;
	if (b < len)
		b++;
	int cut = b - a > 72;
	if (cut) {
		b = a + 72;
		while (b > at && (s[b] & 0xc0) == 0x80) /* whole UTF-8 characters */
			b--;
	}
	snprintf(out, n, "%.*s%s", (int)(b - a), s + a, cut ? "..." : "");
}

/* How much of a choice's key words the texts hold: hits of n, and where
 * a text holds the most of them. */
struct share {
	int hits, n;
	struct best best;
};

static void share_of(const sl_lesson *l, const sl_op *q, const sl_choice *c, const int *walk,
                     int nwalk, int start, struct share *sh)
{
	struct words keys;
	unsigned char seen[MAX_KEYS] = {0};
	key_words(q, c, &keys);
	memset(sh, 0, sizeof *sh);
	sh->n = keys.n;
	for (int i = 0; i < nwalk && keys.n; i++) {
		const sl_op *o = &l->ops[walk[i]];
		const char *t[MAX_CHOICES + 2];
		int nt = shown_texts(o, t, MAX_CHOICES + 2);
		for (int k = 0; k < nt; k++)
			scan(t[k], o->line, &keys, seen, &sh->best);
	}
	if (start && l->about_line && keys.n)
		scan(l->about, l->about_line, &keys, seen, &sh->best);
	for (int k = 0; k < keys.n; k++)
		sh->hits += seen[k];
}

/* Does the text shown since the previous question give q's right choice
 * away?  Walks the flow back from position p over preds, then weighs each
 * choice: a right one is given away when the text holds two thirds of its
 * key words, and a larger share of them than of any wrong choice's (a text
 * that names every choice singles none out). */
static void give_away(const sl_lesson *l, int p, const int *pstart, const int *preds, int *stamp,
                      int *queue, sl_lesson_diags *d, int *found)
{
	const sl_op *q = &l->ops[p];
	int head = 0, tail = 0, nwalk = 0, start = p == 0;
	int *walk = queue; /* the commands walked are the queue's head */
	for (int k = pstart[p]; k < pstart[p + 1] && tail < 8 * MAX_WALK; k++)
		if (stamp[preds[k]] != p + 1) {
			stamp[preds[k]] = p + 1;
			queue[tail++] = preds[k];
		}
	while (head < tail && nwalk < MAX_WALK) {
		int r = queue[head++];
		if (l->ops[r].kind == OP_QUESTION)
			continue; /* the previous question: the text before it is its own */
		walk[nwalk++] = r;
		start |= r == 0;
		for (int k = pstart[r]; k < pstart[r + 1] && tail < 8 * MAX_WALK; k++)
			if (stamp[preds[k]] != p + 1) {
				stamp[preds[k]] = p + 1;
				queue[tail++] = preds[k];
			}
	}
	struct share sh[MAX_CHOICES];
	for (int c = 0; c < q->nch && c < MAX_CHOICES; c++)
		share_of(l, q, &q->ch[c], walk, nwalk, start, &sh[c]);
	for (int c = 0; c < q->nch && c < MAX_CHOICES; c++) {
		if (!q->ch[c].correct || !sh[c].n || 3 * sh[c].hits < 2 * sh[c].n)
			continue;
		int singled = 1;
		for (int w = 0; w < q->nch && w < MAX_CHOICES; w++)
			if (!q->ch[w].correct && sh[w].n &&
			    sh[c].hits * sh[w].n <= sh[w].hits * sh[c].n)
				singled = 0;
		if (!singled)
			continue;
		char ex[100];
		excerpt(sh[c].best.text, sh[c].best.at, ex, sizeof ex);
		diag(l, d, found, q->line, "question answered by the text above (line %d: \"%s\")",
		     sh[c].best.line, ex);
		return;
	}
}

int sl_lesson_lint(const sl_lesson *l, sl_lesson_diags *d)
{
	int found = 0, n = l->nops;
	if (d)
		memset(d, 0, sizeof *d);
	for (int p = 0; p < n; p++) {
		const sl_op *o = &l->ops[p];
		if (o->kind == OP_QUESTION && o->numeric && o->nmis < 2)
			diag(l, d, &found, o->line,
			     "a numeric question needs at least two 'mistake' lines, the wrong "
			     "answers a learner is likely to give, each with its 'explain' (this "
			     "one "
			     "has %d)",
			     o->nmis);
	}
	/* Predecessors of every position, for walking back from a question. */
	int *pstart = calloc((size_t)n + 2, sizeof *pstart);
	int succ[MAX_CHOICES + 2], total = 0;
	if (!pstart)
		return found;
	for (int p = 0; p < n; p++) {
		int ns = lp_succ(l, p, succ);
		for (int i = 0; i < ns; i++)
			pstart[succ[i] + 1]++;
		total += ns;
	}
	for (int p = 0; p < n; p++)
		pstart[p + 1] += pstart[p];
	pstart[n + 1] = pstart[n];
	int *preds = malloc(((size_t)total + 1) * sizeof *preds);
	int *fill = malloc(((size_t)n + 1) * sizeof *fill);
	int *stamp = calloc((size_t)n + 1, sizeof *stamp);
	int *queue = malloc(((size_t)n + 1) * sizeof *queue);
	if (preds && fill && stamp && queue) {
		memcpy(fill, pstart, (size_t)n * sizeof *fill);
		for (int p = 0; p < n; p++) {
			int ns = lp_succ(l, p, succ);
			for (int i = 0; i < ns; i++)
				preds[fill[succ[i]]++] = p;
		}
		for (int p = 0; p < n; p++)
			if (l->ops[p].kind == OP_QUESTION && !l->ops[p].numeric)
				give_away(l, p, pstart, preds, stamp, queue, d, &found);
	}
	free(pstart);
	free(preds);
	free(fill);
	free(stamp);
	free(queue);
	return found;
}
