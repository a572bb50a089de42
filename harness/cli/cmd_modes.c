/* cmd_modes.c - `profharness modes`: the modes there are (shipped, the
 * project's own, --profiles; see ph_run.h), whether each can attach to a
 * running service, which images it runs in, and why not where it cannot
 * (the profiles' own words). */
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "ph_profile.h"

/* "any", "glibc,musl", "package manager", "glibc,musl or pm": which
 * images the mode runs in. */
static void
images_of(const ph_profile *p, char *out, size_t len)
{
    if (!p->has_tools) {
        snprintf(out, len, "package manager");
        return;
    }
    if (p->tools_libc.n > 0) { /* from the tree with that C library, else the package manager's */
        out[0] = '\0';
        for (size_t i = 0; i < p->tools_libc.n; i++)
            snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", p->tools_libc.v[i]);
        snprintf(out + strlen(out), len - strlen(out), " or pm");
        return;
    }
    if (p->libc.n == 0) {
        snprintf(out, len, "any");
        return;
    }
    out[0] = '\0';
    for (size_t i = 0; i < p->libc.n; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", p->libc.v[i]);
}

int
ph_cmd_modes(const ph_global_opts *g, int argc, char **argv)
{
    ph_error_t err = NULL;
    ph_profile_set set = { 0 };
    int first = ph_cli_services_args(argc, argv, "modes");

    if (first < 0)
        return first == -2 ? 0 : 2;
    if (ph_cli_profiles(g, &set, &err) == 0) {
        int limits = 0;

        printf("%-12s %-6s %-16s %s\n", "MODE", "ATTACH", "IMAGES", "DESCRIPTION");
        for (size_t i = 0; i < set.n; i++) {
            char images[64];

            images_of(&set.v[i], images, sizeof images);
            printf("%-12s %-6s %-16s %s\n", set.v[i].name, set.v[i].attach.command.n ? "yes" : "no", images,
                   set.v[i].description ? set.v[i].description : "");
            limits |= set.v[i].limits != NULL || set.v[i].attach.unsupported != NULL;
        }
        if (limits) {
            printf("\nIMAGES: any = FROM scratch and distroless too (the tools tree); package manager (pm) = "
                   "apt, apk, dnf, microdnf or yum;\nglibc,musl = a service dynamically linked against glibc or musl; "
                   "glibc,musl or pm = from the tools tree in an image with glibc's or musl's loader, else "
                   "through its package manager.\n");
            for (size_t i = 0; i < set.n; i++) {
                if (set.v[i].limits)
                    printf("  %s: %s\n", set.v[i].name, set.v[i].limits);
                if (set.v[i].attach.unsupported)
                    printf("  %s, attach: %s\n", set.v[i].name, set.v[i].attach.unsupported);
            }
        }
    }
    ph_profiles_free(&set);
    return ph_error_report(&err);
}
