/* cmd_stop.c - `profharness stop [--discard] [SERVICE...]`. */
#include <getopt.h>
#include <stdio.h>

#include "cli_common.h"

static const char usage[] =
    "usage: profharness stop [--discard] [SERVICE...]\n"
    "Stop profiled services gracefully (the profiler flushes), collect their\n"
    "artifacts into OUTDIR/<service>/<run>/, then remove their containers.\n"
    "  --discard   give the runs up: remove the profiled containers WITHOUT\n"
    "              collecting (what they hold is lost); for a container that\n"
    "              cannot be collected, which a plain stop keeps forever\n"
    "exit status: 0 every run collected (or nothing to stop); 1 a fault: the\n"
    "container is kept with its artifacts and the hint says how to retry;\n"
    "2 usage; 130/143 interrupted by SIGINT/SIGTERM (container kept, no\n"
    "partial run left).\n";

int
ph_cmd_stop(const ph_global_opts *g, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "discard", no_argument, NULL, 'D' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    ph_error_t err = NULL;
    ph_run *r;
    int c, discard = 0;

    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'D': discard = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    r = ph_cli_run_open(g, &err);
    if (r != NULL && discard)
        ph_run_discard(r, argv + optind, argc - optind, &err);
    else if (r != NULL)
        ph_run_stop(r, argv + optind, argc - optind, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
