/* cli_common.h - helpers shared by the subcommand files. */
#ifndef PH_CLI_COMMON_H
#define PH_CLI_COMMON_H

#include "ph_cmds.h"
#include "ph_error.h"
#include "ph_lines.h"
#include "ph_run.h"

/* Open the run context for the global options; NULL and *err on failure. */
ph_run *ph_cli_run_open(const ph_global_opts *g, ph_error_t *err);
/* The same, for start and attach: building service images first when
 * BUILD (start --build); going on where the mode would name nothing of a
 * runtime when ALLOW_UNNAMED (--allow-unnamed). */
ph_run *ph_cli_run_open_mode(const ph_global_opts *g, int build, int allow_unnamed, ph_error_t *err);

/* The modes for the global options: shipped, the project's own (when a
 * compose project is found here; none is needed), --profiles. */
int ph_cli_profiles(const ph_global_opts *g, ph_profile_set *out, ph_error_t *err);
/* For the commands that read runs and need no Engine (report, compare):
 * the modes as stop knows them (ph_cli_profiles) into PROFILES, and the
 * output dir into OUT (LEN bytes): -o as given, else PH_OUT_DEFAULT
 * beside the compose file, found as the other commands find it.  With
 * neither, OUT is "" and WHY (WHY_LEN bytes) says why, for the error of
 * whatever needs it.  Modes that do not load are a warning (files are
 * then known by their usual names), never an error: returns 0. */
int ph_cli_runs_open(const ph_global_opts *g, ph_profile_set *profiles, char *out, size_t len, char *why,
                     size_t why_len);
/* The same, with collection limits from flags (ph_run_opts.collect). */
ph_run *ph_cli_run_open_limits(const ph_global_opts *g, const ph_tar_limits *lim, ph_error_t *err);

/* The collection limit flags of the commands that collect (stop,
 * collect, restore), for their getopt_long tables, and their help. */
#define PH_CLI_LIMIT_OPTIONS                                                                               \
    { "max-bytes", required_argument, NULL, 'B' }, { "max-entries", required_argument, NULL, 'E' },     \
        { "min-free", required_argument, NULL, 'F' }
#define PH_CLI_LIMIT_HELP                                                                                   \
    "  --max-bytes SIZE    at most SIZE of files taken out of a container, holes\n"                      \
    "                      included (default: the mode's `collect:`, else 16GiB)\n"                       \
    "  --max-entries N     at most N files, directories and links (else 200000)\n"                       \
    "  --min-free SIZE     keep SIZE free on the output's disk (else 1GiB or 5 %)\n"                     \
    "                      SIZE: bytes, or 512MiB, 16GiB, 2TB...; `unlimited`\n"

/* If C is one of the limit flags ('B', 'E', 'F'), parse ARG into LIM:
 * 1, or -1 after printing the error (exit 2).  0 for any other C. */
int ph_cli_limit_opt(int c, const char *arg, ph_tar_limits *lim);

/* Parse subcommand options: only -h/--help, then SERVICE...  Returns the
 * index of the first service, or -1 after printing usage (exit 2), or -2
 * after printing help (exit 0). */
int ph_cli_services_args(int argc, char **argv, const char *usage);
/* The same with the limit flags too, into LIM. */
int ph_cli_services_limits_args(int argc, char **argv, const char *usage, ph_tar_limits *lim);

/* A command of that shape, whole: the limit flags and SERVICE... parsed,
 * the run opened, FN(r, services, n, err) run, the error reported; the
 * exit status. */
int ph_cli_run_services_limits(const ph_global_opts *g, int argc, char **argv, const char *usage,
                               int (*fn)(ph_run *r, char **services, int n, ph_error_t *err));

/* Parse `--mode MODE` (required), `--build` (when BUILD is not NULL: set
 * to 1 when given, else 0), `--allow-unnamed` (*ALLOW_UNNAMED) and -h,
 * then SERVICE...  Returns the index of the first service, or -1 after
 * printing USAGE (exit 2), or -2 after printing it as help (exit 0). */
int ph_cli_mode_args(int argc, char **argv, const char *usage, const char **mode, int *build, int *allow_unnamed);

/* Hand the input file PATH ("-": stdin, named "stdin" in errors) to CB in
 * chunks, as ph_read_fd_chunks does with FLAGS.  A file that cannot be
 * opened is a usage error (exit 2). */
int ph_cli_read_input(const char *path, int flags, ph_chunk_cb cb, void *ctx, ph_error_t *err);

#endif
