/* cmd_start.c - `profharness start --mode MODE [SERVICE...]`. */
#include <getopt.h>
#include <stdio.h>

#include "cli_common.h"

int
ph_cmd_start(const ph_global_opts *g, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "mode", required_argument, NULL, 'm' },
        { "build", no_argument, NULL, 'b' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
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
    int c;

    while ((c = getopt_long(argc, argv, "+m:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': mode = optarg; break;
        case 'b': build = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (mode == NULL) {
        fprintf(stderr, "profharness: start needs --mode (see `profharness modes`)\n%s", usage);
        return 2;
    }
    r = ph_cli_run_open_build(g, build, &err);
    if (r != NULL)
        ph_run_start(r, mode, argv + optind, argc - optind, &err);
    ph_run_free(r);
    return ph_error_report(&err);
}
