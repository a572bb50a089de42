/* cmd_modes.c - `profharness modes`: the modes there are (shipped, the
 * project's own, --profiles; see ph_run.h). */
#include <stdio.h>

#include "cli_common.h"
#include "ph_profile.h"

int
ph_cmd_modes(const ph_global_opts *g, int argc, char **argv)
{
    ph_error_t err = NULL;
    ph_profile_set set = { 0 };
    int first = ph_cli_services_args(argc, argv, "modes");

    if (first < 0)
        return first == -2 ? 0 : 2;
    if (ph_cli_profiles(g, &set, &err) == 0) {
        for (size_t i = 0; i < set.n; i++)
            printf("%-12s %s\n", set.v[i].name, set.v[i].description ? set.v[i].description : "");
    }
    ph_profiles_free(&set);
    return ph_error_report(&err);
}
