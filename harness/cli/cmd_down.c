/* cmd_down.c - `profharness down [LIMITS] [SERVICE...]`: the way down
 * after `restore` (see ph_run_down). */
#include "cli_common.h"

int
ph_cmd_down(const ph_global_opts *g, int argc, char **argv)
{
    return ph_cli_run_services_limits(g, argc, argv, "down [LIMITS] [SERVICE...]", ph_run_down);
}
