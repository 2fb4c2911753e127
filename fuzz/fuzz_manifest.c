/* SPDX-License-Identifier: MIT */
/* fuzz_manifest.c - libFuzzer harness: the checkpoint manifest loader and
 * verify.  Each input becomes manifest.json in a scratch checkpoint whose
 * data files are those of a real checkpoint (copied once, from
 * $SHARDLAB_FUZZ_CKPT: make fuzz-run saves one), so a mutated manifest
 * reaches the tiling, range and checksum checks and not only the JSON
 * parser.  The scratch directory is made in the working directory. */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb");
	if (!in)
		return -1;
	FILE *out = fopen(to, "wb");
	if (!out) {
		fclose(in);
		return -1;
	}
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	return fclose(out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(dir, sizeof dir, "fuzz-ckpt-%ld", (long)getpid());
	if (mkdir(dir, 0700) != 0)
		return 0;
	const char *seed = getenv("SHARDLAB_FUZZ_CKPT");
	DIR *d = seed ? opendir(seed) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 4 || strcmp(e->d_name + l - 4, ".bin") != 0)
			continue;
		char from[600], to[600];
		snprintf(from, sizeof from, "%s/%s", seed, e->d_name);
		snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
		copy_file(from, to);
	}
	if (d)
		closedir(d);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	ssize_t w = write(fd, data, size);
	close(fd);
	if (w != (ssize_t)size)
		return 0;
	sl_ckpt *ck = NULL;
	sl_err err = {0};
	if (sl_ckpt_open(dir, &ck, &err) == SL_OK) {
		(void)sl_ckpt_verify(ck, &err);
		sl_ckpt_close(ck);
	}
	return 0;
}
