/* cli_common.c - helpers shared by the subcommand files. */
#include "cli_common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

ph_run *
ph_cli_run_open(const ph_global_opts *g, ph_error_t *err)
{
    ph_run_opts o = {
        .compose = &g->compose,
        .compose_file = g->compose_file,
        .profiles_dir = g->profiles_dir,
        .out_dir = g->out_dir,
        .project = g->project,
    };

    return ph_run_new(&o, err);
}

int
ph_cli_services_args(int argc, char **argv, const char *usage)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;

    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: profharness %s\n", usage);
            return -2;
        }
        fprintf(stderr, "usage: profharness %s\n", usage);
        return -1;
    }
    return optind;
}

int
ph_cli_read_input(const char *path, int flags, ph_chunk_cb cb, void *ctx, ph_error_t *err)
{
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return ph_error_make(err, errno, PH_EXIT_USAGE, "open `%s`", path);
    rc = ph_read_fd_chunks(fd, fd == STDIN_FILENO ? "stdin" : path, flags, cb, ctx, NULL, err);
    if (fd != STDIN_FILENO)
        close(fd);
    return rc;
}
