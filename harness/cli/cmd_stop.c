/* cmd_stop.c - `profharness stop [--discard] [SERVICE...]`. */
#include <getopt.h>
#include <stdio.h>

#include "cli_common.h"

static const char usage[] =
    "usage: profharness stop [--discard] [LIMITS] [SERVICE...]\n"
    "Stop profiled services gracefully (the profiler flushes), collect their\n"
    "artifacts into OUTDIR/<service>/<run>/, then remove their containers.\n"
    "  --discard           give the runs up: remove the profiled containers\n"
    "                      WITHOUT collecting (what they hold is lost); for a\n"
    "                      container that cannot be collected, which a plain\n"
    "                      stop keeps forever; on a stack, the service rolled\n"
    "                      back as deployed (or the tools containers attached\n"
    "                      to its tasks removed), nothing collected\n"
    PH_CLI_LIMIT_HELP
    "Over a limit nothing is kept on the host, the container is kept, and the\n"
    "error says which limit, where it was set and how to raise it.\n"
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
        PH_CLI_LIMIT_OPTIONS,
        { NULL, 0, NULL, 0 },
    };
    ph_error_t err = NULL;
    ph_tar_limits lim = { 0 };
    ph_run *r;
    int c, discard = 0, lr;

    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        if ((lr = ph_cli_limit_opt(c, optarg, &lim)) != 0) {
            if (lr < 0)
                return 2;
            continue;
        }
        switch (c) {
        case 'D': discard = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    r = ph_cli_run_open_limits(g, &lim, &err);
    if (r != NULL && discard)
        ph_run_discard(r, argv + optind, argc - optind, &err);
    else if (r != NULL)
        ph_run_stop(r, argv + optind, argc - optind, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
