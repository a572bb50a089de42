/* cmd_collect.c - `profharness collect [SERVICE...]`. */
#include "cli_common.h"

int
ph_cmd_collect(const ph_global_opts *g, int argc, char **argv)
{
    return ph_cli_run_services_limits(g, argc, argv, "collect [LIMITS] [SERVICE...]", ph_run_collect);
}
