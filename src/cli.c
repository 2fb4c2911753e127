#include "cli.h"
int sl_cli_main(int argc, char **argv) { (void)argc; (void)argv; return 0; }
