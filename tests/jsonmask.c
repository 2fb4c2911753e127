/* SPDX-License-Identifier: MIT */
/* jsonmask.c - a JSON report with what differs between machines masked,
 * for tests/json_golden.sh (which needs neither jq nor python).
 *
 *   jsonmask [-k KEY]... [-r FROM=TO]... <report >masked
 *
 * The text is copied byte for byte, so a golden file holds the report's
 * exact spelling (indentation, key order, digits), except: every number
 * and string under a key named by -k (at any depth, inside its arrays and
 * objects too) becomes "<masked>", keeping null, true and false and the
 * shape; and inside every other string each FROM of -r becomes TO.  The
 * input must parse as JSON (jansson) first: a report that is not JSON is
 * an error, not a golden. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define MAXARGS 64
#define PLACEHOLDER "\"<masked>\""

static const char *keys[MAXARGS];
static int nkeys;
static const char *from[MAXARGS], *to[MAXARGS];
static int nrepl;

static const char *p, *end; /* the input still to copy */

static void ws(void)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		putchar(*p++);
}

/* The string at p (its quotes included): its length. */
static size_t string_len(void)
{
	const char *q = p + 1;
	while (q < end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	return (size_t)(q + 1 - p);
}

/* Copy the string at p with -r's replacements, or its placeholder. */
static void string(int masked)
{
	size_t n = string_len();
	const char *e = p + n;
	if (masked) {
		fputs(PLACEHOLDER, stdout);
		p = e;
		return;
	}
	while (p < e) {
		int hit = 0;
		for (int i = 0; i < nrepl && !hit; i++) {
			size_t fl = strlen(from[i]);
			if (fl && (size_t)(e - p) >= fl && memcmp(p, from[i], fl) == 0) {
				fputs(to[i], stdout);
				p += fl;
				hit = 1;
			}
		}
		if (!hit)
			putchar(*p++);
	}
}

static int is_masked_key(const char *k, size_t n)
{
	for (int i = 0; i < nkeys; i++)
		if (strlen(keys[i]) == n && memcmp(keys[i], k, n) == 0)
			return 1;
	return 0;
}

static void value(int masked)
{
	ws();
	if (p >= end)
		return;
	if (*p == '{' || *p == '[') {
		int obj = *p == '{';
		char close = obj ? '}' : ']';
		putchar(*p++);
		for (;;) {
			ws();
			if (p >= end)
				return;
			if (*p == close) {
				putchar(*p++);
				return;
			}
			if (*p == ',') {
				putchar(*p++);
				continue;
			}
			int m = masked;
			if (obj) {
				size_t n = string_len();
				m |= is_masked_key(p + 1, n - 2);
				string(0);
				ws();
				if (p < end && *p == ':')
					putchar(*p++);
			}
			value(m);
		}
	}
	if (*p == '"') {
		string(masked);
		return;
	}
	/* A number or true, false, null. */
	const char *q = p;
	while (q < end && !strchr(",]} \t\r\n", *q))
		q++;
	int number = *p == '-' || (*p >= '0' && *p <= '9');
	if (masked && number)
		fputs(PLACEHOLDER, stdout);
	else
		fwrite(p, 1, (size_t)(q - p), stdout);
	p = q;
}

static void usage(void)
{
	fprintf(stderr, "usage: jsonmask [-k KEY]... [-r FROM=TO]... <report >masked\n");
	exit(2);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc || nkeys >= MAXARGS || nrepl >= MAXARGS)
			usage();
		if (strcmp(argv[i], "-k") == 0) {
			keys[nkeys++] = argv[++i];
		} else if (strcmp(argv[i], "-r") == 0) {
			char *eq = strchr(argv[++i], '=');
			if (!eq)
				usage();
			*eq = '\0';
			from[nrepl] = argv[i];
			to[nrepl++] = eq + 1;
		} else {
			usage();
		}
	}
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);
	while (buf && (n = fread(buf + len, 1, cap - len, stdin)) > 0) {
		len += n;
		if (len == cap) {
			char *b = realloc(buf, cap *= 2);
			if (!b)
				free(buf);
			buf = b;
		}
	}
	if (!buf) {
		fprintf(stderr, "jsonmask: out of memory\n");
		return 1;
	}
	json_error_t je;
	json_t *j = json_loadb(buf, len, 0, &je);
	if (!j) {
		fprintf(stderr, "jsonmask: not JSON: line %d: %s\n", je.line, je.text);
		free(buf);
		return 1;
	}
	json_decref(j);
	p = buf;
	end = buf + len;
	value(0);
	/* What follows the value (its final newline) as it is. */
	fwrite(p, 1, (size_t)(end - p), stdout);
	free(buf);
	return fflush(stdout) == 0 ? 0 : 1;
}
