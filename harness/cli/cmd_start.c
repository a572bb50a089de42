/* cmd_start.c - `profharness start --mode MODE [SERVICE...]`. */
#include <stdio.h>

#include "cli_common.h"

int
ph_cmd_start(const ph_global_opts *g, int argc, char **argv)
{
    static const char usage[] = "usage: profharness start --mode MODE [SERVICE...]\n";
    const char *mode = NULL;
    ph_error_t err = NULL;
    ph_run *r;
    int first = ph_cli_mode_args(argc, argv, usage, &mode);

    if (first < 0)
        return first == -2 ? 0 : 2;
    r = ph_cli_run_open(g, &err);
    if (r != NULL)
        ph_run_start(r, mode, argv + first, argc - first, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
