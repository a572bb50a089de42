/* cmd_restore.c - `profharness restore [SERVICE...]`. */
#include "cli_common.h"

int
ph_cmd_restore(const ph_global_opts *g, int argc, char **argv)
{
    ph_error_t err = NULL;
    ph_tar_limits lim = { 0 };
    ph_run *r;
    int first = ph_cli_services_limits_args(argc, argv, "restore [LIMITS] [SERVICE...]", &lim);

    if (first < 0)
        return first == -2 ? 0 : 2;
    r = ph_cli_run_open_limits(g, &lim, &err);
    if (r != NULL)
        ph_run_restore(r, argv + first, argc - first, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
