/* cli_common.h - helpers shared by the subcommand files. */
#ifndef PH_CLI_COMMON_H
#define PH_CLI_COMMON_H

#include "ph_cmds.h"
#include "ph_error.h"
#include "ph_lines.h"
#include "ph_run.h"

/* Open the run context for the global options; NULL and *err on failure. */
ph_run *ph_cli_run_open(const ph_global_opts *g, ph_error_t *err);

/* Parse subcommand options: only -h/--help, then SERVICE...  Returns the
 * index of the first service, or -1 after printing usage (exit 2), or -2
 * after printing help (exit 0). */
int ph_cli_services_args(int argc, char **argv, const char *usage);

/* Hand the input file PATH ("-": stdin, named "stdin" in errors) to CB in
 * chunks, as ph_read_fd_chunks does with FLAGS.  A file that cannot be
 * opened is a usage error (exit 2). */
int ph_cli_read_input(const char *path, int flags, ph_chunk_cb cb, void *ctx, ph_error_t *err);

#endif
