/* cmd_restore.c - `profharness restore [SERVICE...]`. */
#include "cli_common.h"

int
ph_cmd_restore(const ph_global_opts *g, int argc, char **argv)
{
    return ph_cli_run_services_limits(g, argc, argv, "restore [LIMITS] [SERVICE...]", ph_run_restore);
}
