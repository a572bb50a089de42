/* cmd_start.c - `profharness start --mode MODE [--build] [--allow-unnamed] [SERVICE...]`. */
#include <stdio.h>

#include "cli_common.h"

int
ph_cmd_start(const ph_global_opts *g, int argc, char **argv)
{
    static const char usage[] =
        "usage: profharness start --mode MODE [--build] [--allow-unnamed] [SERVICE...]\n"
        "Restart SERVICES (default: all) under MODE; what they depend on is started\n"
        "unprofiled.  A container docker compose runs for a service is stopped and\n"
        "kept (`restore` starts it again).\n"
        "  --build   build the images of services with `build:` first, as compose's\n"
        "            `up --build` does (the builder's cache keeps an unchanged one)\n"
        "  --allow-unnamed  go on where the mode would name none of the service's\n"
        "            functions (a runtime it cannot see into: Python 3.11 under perf);\n"
        "            without it such a start is refused before anything is restarted,\n"
        "            saying why and which mode works (exit 2)\n";
    int build = 0, allow_unnamed = 0;
    const char *mode = NULL;
    ph_error_t err = NULL;
    ph_run *r;
    int first = ph_cli_mode_args(argc, argv, usage, &mode, &build, &allow_unnamed);

    if (first < 0)
        return first == -2 ? 0 : 2;
    r = ph_cli_run_open_mode(g, build, allow_unnamed, &err);
    if (r != NULL)
        ph_run_start(r, mode, argv + first, argc - first, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
