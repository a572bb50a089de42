/* cmd_logs.c - `profharness logs [-f] SERVICE`. */
#include <getopt.h>
#include <stdio.h>

#include "cli_common.h"

int
ph_cmd_logs(const ph_global_opts *g, int argc, char **argv)
{
    static const char usage[] = "usage: profharness logs [-f] SERVICE\n";
    ph_error_t err = NULL;
    ph_run *r;
    int c, follow = 0;

    while ((c = getopt(argc, argv, "+fh")) != -1) {
        switch (c) {
        case 'f': follow = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind + 1 != argc) {
        fputs(usage, stderr);
        return 2;
    }
    r = ph_cli_run_open(g, &err);
    if (r != NULL)
        ph_run_logs(r, argv[optind], follow, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
