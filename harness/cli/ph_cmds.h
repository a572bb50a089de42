/* ph_cmds.h - the subcommands of the profharness CLI, one file each.
 * Each takes the global options and its own argv (argv[0] = the command
 * name), returns a process exit status, and prints errors only through
 * ph_error_report(). */
#ifndef PH_CMDS_H
#define PH_CMDS_H

#include "ph_compose.h"

typedef struct ph_global_opts {
    ph_compose_opts compose;   /* -f..., -p, --project-directory, --env-file..., --profile... */
    const char *compose_file;  /* the first -f, NULL when none */
    const char *profiles_dir;  /* --profiles, NULL when not given (ph_run_opts) */
    const char *out_dir;       /* -o, NULL when not given (ph_run_opts) */
    const char *project;       /* -p, NULL = from the compose file */
} ph_global_opts;

int ph_cmd_setup(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_start(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_attach(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_stop(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_restore(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_down(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_collect(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_status(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_modes(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_logs(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_flamegraph(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_diff(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_prune(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_collapse(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_report(const ph_global_opts *g, int argc, char **argv);
int ph_cmd_compare(const ph_global_opts *g, int argc, char **argv);

#endif
