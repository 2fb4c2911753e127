/* SPDX-License-Identifier: MIT */
/* cliutil.c - what every subcommand shares: one-line errors, option parsing
 * over the shared tables, the host-memory and output checks (see
 * cliutil.h). */
#include "cliutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "units.h"

static char last_error[2048];

const char *sl_cli_last_error(void)
{
	return last_error;
}

void sl_cli_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* Keep the promise of one line, whatever a message holds, and send no
	 * control character to the terminal (a path or a file's text could
	 * hold escape sequences): those show as \xNN, as do the C1 controls
	 * in UTF-8 (0xc2 0x80-0x9f); other bytes pass, so names in any
	 * language read as they are. */
	char safe[4 * sizeof msg];
	size_t w = 0;
	for (const unsigned char *p = (const unsigned char *)msg; *p && w + 9 < sizeof safe; p++) {
		if (*p == '\n' || *p == '\r')
			safe[w++] = ' ';
		else if (*p < 0x20 || *p == 0x7f)
			w += (size_t)snprintf(safe + w, sizeof safe - w, "\\x%02x", *p);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			w += (size_t)snprintf(safe + w, sizeof safe - w, "\\x%02x\\x%02x", p[0],
			                      p[1]);
			p++;
		} else
			safe[w++] = (char)*p;
	}
	safe[w] = '\0';
	snprintf(last_error, sizeof last_error, "%s", safe);
	fflush(stdout);
	fprintf(stderr, "shardlab: %s\n", safe);
}

int sl_cli_usage(const char *cmd, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (cmd)
		sl_cli_error("%s: %s (see 'shardlab %s --help')", cmd, msg, cmd);
	else
		sl_cli_error("%s (see 'shardlab --help')", msg);
	return SL_EXIT_USAGE;
}

int sl_cli_fail(const char *cmd, const sl_err *err)
{
	sl_cli_error("%s: %s", cmd, err->msg[0] ? err->msg : "failed");
	return err->code == SL_EINVAL ? SL_EXIT_USAGE : SL_EXIT_FAIL;
}

int sl_cli_flush(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		sl_cli_error("cannot write the report: %s", strerror(errno));
		return SL_EXIT_FAIL;
	}
	return status;
}

/* Long options must be spelled out: with --m, --k and --n beside --memory,
 * getopt_long's abbreviations would read "--m=3" as --memory=3 in a command
 * without --m.  Check every "--name" (and skip the value of "--name VALUE")
 * before getopt_long sees them. */
static int check_spelling(const char *cmd, int argc, char **argv, const struct option *lo)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (strncmp(a, "--", 2) != 0)
			continue;
		const char *name = a + 2;
		size_t len = strcspn(name, "=");
		int exact = -1, hits = 0;
		char cands[160] = "";
		size_t cl = 0;
		for (int j = 0; lo[j].name; j++) {
			if (strncmp(lo[j].name, name, len) != 0)
				continue;
			if (strlen(lo[j].name) == len)
				exact = j;
			hits++;
			if (cl < sizeof cands)
				cl += (size_t)snprintf(cands + cl, sizeof cands - cl, "%s'--%s'",
				                       cl ? ", " : "", lo[j].name);
		}
		if (exact < 0 && hits > 0)
			return sl_cli_usage(cmd, "unknown option '--%.*s' (did you mean %s%s?)",
			                    (int)len, name, hits > 1 ? "one of " : "", cands);
		if (exact < 0) {
			/* Not a prefix of any: a misspelling, as --bandwith. */
			const char *names[SL_OPTS_MAX];
			int nn = 0;
			char word[48];
			snprintf(word, sizeof word, "%.*s", (int)len, name);
			for (int j = 0; lo[j].name && nn < SL_OPTS_MAX; j++)
				names[nn++] = lo[j].name;
			const char *near = len < sizeof word ? sl_closest(word, names, nn) : NULL;
			if (near)
				return sl_cli_usage(
				    cmd, "unknown option '--%.*s' (did you mean '--%s'?)", (int)len,
				    name, near);
			return sl_cli_usage(cmd, "unknown option '--%.*s'", (int)len, name);
		}
		if (lo[exact].has_arg == no_argument && name[len] == '=')
			return sl_cli_usage(cmd, "option '--%s' takes no value", lo[exact].name);
		if (lo[exact].has_arg == required_argument && name[len] != '=')
			i++; /* its value */
	}
	return 0;
}

/* What getopt_long did not like, in words (long options were checked). */
static int getopt_error(const char *cmd, int c, char **argv)
{
	if (c == ':')
		return sl_cli_usage(cmd, "option '%s' needs a value", argv[optind - 1]);
	return sl_cli_usage(cmd, "unknown option '-%c'", optopt > 0 && optopt < 128 ? optopt : '?');
}

static int parse(const char *cmd, unsigned bit, int argc, char **argv, sl_opts *o, sl_cli_optfn own,
                 void *ctx, void (*help)(void), int *first_operand);

int sl_cli_parse(const char *cmd, unsigned bit, int argc, char **argv, sl_opts *o, sl_cli_optfn own,
                 void *ctx, void (*help)(void))
{
	return parse(cmd, bit, argc, argv, o, own, ctx, help, NULL);
}

int sl_cli_parse_operands(const char *cmd, unsigned bit, int argc, char **argv, sl_opts *o,
                          sl_cli_optfn own, void *ctx, void (*help)(void), int *first)
{
	return parse(cmd, bit, argc, argv, o, own, ctx, help, first);
}

static int parse(const char *cmd, unsigned bit, int argc, char **argv, sl_opts *o, sl_cli_optfn own,
                 void *ctx, void (*help)(void), int *first_operand)
{
	struct option all[SL_OPTS_MAX];
	sl_opts_getopt(bit, all);
	o->cmd = bit;
	int rc = check_spelling(cmd, argc, argv, all);
	if (rc)
		return rc;
	/* Entries whose code is a letter are short options too (coll's -b,
	 * -e, -f and -n, as nccl-tests spells them). */
	char shorts[64] = ":h";
	size_t ns = 2;
	for (size_t i = 0; all[i].name && ns + 3 < sizeof shorts; i++)
		if (all[i].val > 0 && all[i].val < 128 && all[i].val != 'h' &&
		    isalpha((unsigned char)all[i].val)) {
			shorts[ns++] = (char)all[i].val;
			if (all[i].has_arg == required_argument)
				shorts[ns++] = ':';
		}
	shorts[ns] = '\0';
	sl_err err = {0};
	int c;
	optind = 0; /* a full reset in glibc, whatever parsed before */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
		if (c == 'h') {
			help();
			return sl_cli_flush(SL_EXIT_OK);
		}
		if (c == '?' || c == ':')
			return getopt_error(cmd, c, argv);
		rc = sl_opts_handle(o, c, optarg, &err);
		if (rc == SL_OPTS_NOT_MINE)
			rc = own ? own(ctx, c, optarg, &err)
			         : sl_fail(&err, SL_EINVAL, "option code %d has no handler", c);
		if (rc)
			return sl_cli_usage(cmd, "%s", err.msg);
	}
	if (first_operand)
		*first_operand = optind; /* getopt moved the operands to the end */
	else if (optind < argc)
		return sl_cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
	if (sl_opts_finish(o, &err))
		return sl_cli_usage(cmd, "%s", err.msg);
	return SL_CLI_GO;
}

static int host_fits(const char *cmd, double bytes, const char *what, const char *hint);

int sl_cli_host_fits(const char *cmd, double bytes, const char *what)
{
	return host_fits(cmd, bytes, what, "");
}

int sl_cli_host_fits_or_dry(const char *cmd, double bytes, const char *what)
{
	return host_fits(cmd, bytes, what, "; --dry-run times it without holding it");
}

static int host_fits(const char *cmd, double bytes, const char *what, const char *hint)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || psize <= 0)
		return 0;
	/* Half the machine: the emulated devices' memory is the host's, and
	 * the machine is shared. */
	double limit = (double)pages * (double)psize / 2;
	if (bytes <= limit)
		return 0;
	char need[32], have[32];
	sl_cli_error("%s: %s would take %s of host memory, more than half of this machine's %s%s",
	             cmd, what, sl_fmt_bytes(bytes, need, sizeof need),
	             sl_fmt_bytes(limit * 2, have, sizeof have), hint);
	return SL_EXIT_USAGE;
}

int sl_cli_check_output(const char *cmd, const char *path)
{
	struct stat st;
	size_t len = strlen(path);
	if (strcmp(path, "-") == 0) /* stdout */
		return 0;
	if ((stat(path, &st) == 0 && S_ISDIR(st.st_mode)) || (len > 0 && path[len - 1] == '/'))
		return sl_cli_usage(cmd, "--trace=%s is a directory: give a file name", path);
	/* The directory the file goes into must exist. */
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return sl_cli_usage(cmd, "--trace=%s: no directory %s", path, dir);
	if (access(dir, W_OK) != 0)
		return sl_cli_usage(cmd, "--trace=%s: cannot write into %s", path, dir);
	return 0;
}

FILE *sl_cli_report_stream(const char *trace)
{
	return trace && strcmp(trace, "-") == 0 ? stderr : stdout;
}

void sl_cli_help_cluster(unsigned cmd)
{
	sl_opts_help(stdout, cmd, SL_KG_CLUSTER, 1);
	printf("Rates and times need a unit (only 0 stands alone): B is a byte and b a bit,\n"
	       "so 100GBps is 100GB/s and 100Gbps is 100Gb/s, 12.5GB/s (shardlab(1), UNITS).\n\n");
	sl_opts_help(stdout, cmd, SL_KG_OUTPUT, 1);
}
