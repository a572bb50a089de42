/* cmd_start.c - `profharness start --mode MODE [--build] [SERVICE...]`. */
#include <stdio.h>

#include "cli_common.h"

int
ph_cmd_start(const ph_global_opts *g, int argc, char **argv)
{
    static const char usage[] =
        "usage: profharness start --mode MODE [--build] [SERVICE...]\n"
        "Restart SERVICES (default: all) under MODE; what they depend on is started\n"
        "unprofiled.  A container docker compose runs for a service is stopped and\n"
        "kept (`restore` starts it again).\n"
        "  --build   build the images of services with `build:` first, as compose's\n"
        "            `up --build` does (the builder's cache keeps an unchanged one)\n";
    int build = 0;
    const char *mode = NULL;
    ph_error_t err = NULL;
    ph_run *r;
    int first = ph_cli_mode_args(argc, argv, usage, &mode, &build);

    if (first < 0)
        return first == -2 ? 0 : 2;
    r = ph_cli_run_open_build(g, build, &err);
    if (r != NULL)
        ph_run_start(r, mode, argv + first, argc - first, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
