/* cmd_attach.c - `profharness attach --mode MODE [SERVICE...]`: profile
 * running services without restarting them; `profharness stop` detaches
 * and collects. */
#include <stdio.h>

#include "cli_common.h"

int
ph_cmd_attach(const ph_global_opts *g, int argc, char **argv)
{
    static const char usage[] =
        "usage: profharness attach --mode MODE [--allow-unnamed] [SERVICE...]\n"
        "  Profile running services without restarting them: a tools container joins each\n"
        "  service's PID namespace and runs the mode's attach command (strace -p, perf record -p).\n"
        "  `profharness stop SERVICE` detaches (the service keeps running) and collects.\n"
        "  The modes that can attach are marked in `profharness modes`.\n"
        "  --allow-unnamed  go on where the mode would name none of a process's functions\n"
        "            (a node started without --perf-basic-prof, Python 3.11 under perf);\n"
        "            without it such an attach is refused before anything is attached,\n"
        "            saying why and what works (exit 2)\n";
    const char *mode = NULL;
    int allow_unnamed = 0;
    ph_error_t err = NULL;
    ph_run *r;
    int first = ph_cli_mode_args(argc, argv, usage, &mode, NULL, &allow_unnamed);

    if (first < 0)
        return first == -2 ? 0 : 2;
    r = ph_cli_run_open_mode(g, 0, allow_unnamed, &err);
    if (r != NULL)
        ph_run_attach(r, mode, argv + first, argc - first, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
