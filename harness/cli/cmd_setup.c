/* cmd_setup.c - `profharness setup [--profiling-image] [SERVICE...]`. */
#include <getopt.h>
#include <stdio.h>

#include "cli_common.h"

static const char usage[] =
    "usage: profharness setup [--profiling-image] [SERVICE...]\n"
    "Build or pull each service's image and make sure of what its modes need:\n"
    "the tools volume, and a profiling image for a mode the tools tree cannot serve.\n"
    "  --profiling-image   build the profiling image (every mode's tools installed\n"
    "                      into the service's image) even where the tools volume\n"
    "                      serves: what a Swarm's nodes run, for a manager that\n"
    "                      cannot build it (then `docker push` or save | load)\n";

int
ph_cmd_setup(const ph_global_opts *g, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "profiling-image", no_argument, NULL, 'i' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    ph_error_t err = NULL;
    ph_run *r;
    int c, image = 0;

    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': image = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    r = ph_cli_run_open(g, &err);
    if (r != NULL)
        ph_run_setup(r, argv + optind, argc - optind, image, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
