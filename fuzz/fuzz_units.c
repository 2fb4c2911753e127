/* SPDX-License-Identifier: MIT */
/* fuzz_units.c - libFuzzer harness: the parsers of sizes, rates, times,
 * FLOP rates and numbers that every option and lesson setup key goes
 * through. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[257];
	if (size >= sizeof s)
		size = sizeof s - 1;
	memcpy(s, data, size);
	s[size] = 0;
	double d;
	long l;
	sl_err err = {0};
	(void)sl_parse_bytes(s, &d, &err);
	(void)sl_parse_rate(s, &d, &err);
	(void)sl_parse_time(s, &d, &err);
	(void)sl_parse_flops(s, &d, &err);
	(void)sl_parse_double(s, &d, &err);
	(void)sl_parse_int(s, 1, 1024, "devices", &l, &err);
	(void)sl_parse_int(s, -1000000, 1000000, "value", &l, &err);
	return 0;
}
