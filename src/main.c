/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include "blasenv.h"
#include "cli.h"
int main(int argc, char **argv)
{
	sl_blasenv_ensure(argv);
	return sl_cli_main(argc, argv);
}
