/* cmd_prune.c - `profharness prune [--all]`. */
#include <getopt.h>
#include <stdio.h>

#include "cli_common.h"

static const char usage[] =
    "usage: profharness prune [--all]\n"
    "Remove the profiling images of this project's services that no container\n"
    "uses (each is some hundred MB; a new one is made whenever a service's image\n"
    "or a profile changes), and the old service images only they still held;\n"
    "and the Engine's old tools volumes (with their marks and tools images)\n"
    "that no container mounts any more.  The current tools volume stays.\n"
    "  --all   the newest of each service too (the next start builds it again)\n";

int
ph_cmd_prune(const ph_global_opts *g, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "all", no_argument, NULL, 'a' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    ph_error_t err = NULL;
    ph_run *r;
    int c, all = 0;

    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': all = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc) {
        fputs(usage, stderr);
        return 2;
    }
    r = ph_cli_run_open(g, &err);
    if (r != NULL)
        ph_run_prune(r, all, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
