/* cli_many.h - one command on several Docker Engines at once
 * (`--context A --context B`, or PH_CONTEXTS=A,B).
 *
 * Each Engine gets a process of its own: this program again, with
 * `--context-of-many NAME -o OUT/@NAME` after the user's options, so every
 * host's run is a whole ordinary invocation (its own Engine connection,
 * locks, links, index and interrupt handling) in an output dir of its
 * own, OUT/@NAME/<service>/<run>/.  Their lines come out prefixed with
 * the context's name; one host failing stops none of the others; the exit
 * status is the worst of theirs.  After stop, collect, restore and down,
 * each service's new runs on two or more hosts are merged
 * (ph_report_merge_runs) into OUT/<service>/<run>-merged/, reported, and
 * OUT/index.html lists the hosts' runs and the merged ones.
 */
#ifndef PH_CLI_MANY_H
#define PH_CLI_MANY_H

#include <stddef.h>

#include "ph_cmds.h"
#include "ph_error.h"

#define PH_CLI_MANY_MAX 32
/* The hidden option a member is started with. */
#define PH_CLI_MANY_MEMBER "context-of-many"

typedef struct ph_cli_many {
    const char *contexts[PH_CLI_MANY_MAX];
    size_t n;
} ph_cli_many;

/* Add NAME (--context NAME): a Docker context's name as docker allows it
 * ([a-zA-Z0-9][a-zA-Z0-9_.+-]*) or "default"; once each.  0, or -1 and a
 * PH_EXIT_USAGE error. */
int ph_cli_many_add(ph_cli_many *m, const char *name, ph_error_t *err);
/* The names of LIST ("a,b,c": PH_CONTEXTS), added in turn. */
int ph_cli_many_add_list(ph_cli_many *m, const char *list, ph_error_t *err);
/* 1 when the command CMD talks to an Engine (runs once per host). */
int ph_cli_many_fans_out(const char *cmd);
/* Run ARGV[FIRST..] (the command and its arguments; ARGV[1..FIRST) are
 * the user's global options, passed on) on every Engine of M; the exit
 * status. */
int ph_cli_many_run(const ph_global_opts *g, const ph_cli_many *m, int argc, char **argv, int first);

#endif
