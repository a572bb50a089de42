/* cli_common.h - helpers shared by the subcommand files. */
#ifndef PH_CLI_COMMON_H
#define PH_CLI_COMMON_H

#include "ph_cmds.h"
#include "ph_error.h"
#include "ph_run.h"

/* Open the run context for the global options; NULL and *err on failure. */
ph_run *ph_cli_run_open(const ph_global_opts *g, ph_error_t *err);
/* The same, building service images first when BUILD (start --build). */
ph_run *ph_cli_run_open_build(const ph_global_opts *g, int build, ph_error_t *err);

/* The modes for the global options: shipped, the project's own (when a
 * compose project is found here; none is needed), --profiles. */
int ph_cli_profiles(const ph_global_opts *g, ph_profile_set *out, ph_error_t *err);

/* Parse subcommand options: only -h/--help, then SERVICE...  Returns the
 * index of the first service, or -1 after printing usage (exit 2), or -2
 * after printing help (exit 0). */
int ph_cli_services_args(int argc, char **argv, const char *usage);

/* Parse `--mode MODE` (required), `--build` (when BUILD is not NULL: set
 * to 1 when given, else 0) and -h, then SERVICE...  Returns the
 * index of the first service, or -1 after printing USAGE (exit 2), or -2
 * after printing it as help (exit 0). */
int ph_cli_mode_args(int argc, char **argv, const char *usage, const char **mode, int *build);

#endif
