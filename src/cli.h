/* cli.h - the command line: subcommands, options, and their errors. */
#ifndef SL_CLI_H
#define SL_CLI_H

/* Parse and run; returns the process exit status. */
int sl_cli_main(int argc, char **argv);

#endif
