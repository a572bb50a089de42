/* cli_common.c - helpers shared by the subcommand files. */
#include "cli_common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_paths.h"

static ph_run *
run_open(const ph_global_opts *g, int build, int allow_unnamed, const ph_tar_limits *lim, ph_error_t *err)
{
    ph_run_opts o = {
        .compose = &g->compose,
        .compose_file = g->compose_file,
        .profiles_dir = g->profiles_dir,
        .out_dir = g->out_dir,
        .project = g->project,
        .build = build,
        .allow_unnamed = allow_unnamed,
    };

    if (lim != NULL)
        o.collect = *lim;
    return ph_run_new(&o, err);
}

ph_run *
ph_cli_run_open_mode(const ph_global_opts *g, int build, int allow_unnamed, ph_error_t *err)
{
    return run_open(g, build, allow_unnamed, NULL, err);
}

ph_run *
ph_cli_run_open_limits(const ph_global_opts *g, const ph_tar_limits *lim, ph_error_t *err)
{
    return run_open(g, 0, 0, lim, err);
}

ph_run *
ph_cli_run_open(const ph_global_opts *g, ph_error_t *err)
{
    return run_open(g, 0, 0, NULL, err);
}

/* The modes for G with project C (may be NULL): shipped, C's own, --profiles. */
static int
modes_of(const ph_global_opts *g, const ph_compose *c, ph_profile_set *out, ph_error_t *err)
{
    ph_run_opts o = { .profiles_dir = g->profiles_dir };
    ph_layout lay;

    if (ph_paths_layout(NULL, getenv("PH_DATA_DIR"), &lay, err) < 0)
        return -1;
    return ph_run_load_profiles(&o, lay.data, c ? c->dir : NULL, out, err);
}

int
ph_cli_profiles(const ph_global_opts *g, ph_profile_set *out, ph_error_t *err)
{
    ph_compose *c = NULL;
    ph_error_t no_project = NULL;
    int rc;

    /* Listing modes needs no project; with one, its own profiles count. */
    if (ph_compose_open(&g->compose, &c, &no_project) < 0)
        ph_error_free(&no_project);
    rc = modes_of(g, c, out, err);
    ph_compose_free(c);
    return rc;
}

int
ph_cli_runs_open(const ph_global_opts *g, ph_profile_set *profiles, char *out, size_t len, char *why, size_t why_len)
{
    ph_compose *c = NULL;
    ph_error_t no_project = NULL, err = NULL;

    out[0] = why[0] = '\0';
    memset(profiles, 0, sizeof *profiles);
    /* -o wins; else the project's, as start and stop put runs there */
    if (ph_compose_open(&g->compose, &c, &no_project) < 0) {
        snprintf(why, why_len, "%s", no_project->msg);
        ph_error_free(&no_project);
    }
    if (g->out_dir != NULL)
        snprintf(out, len, "%s", g->out_dir);
    else if (c != NULL)
        snprintf(out, len, "%s/%s", c->dir, PH_OUT_DEFAULT);
    if (modes_of(g, c, profiles, &err) < 0) {
        ph_warn("%s; files are recognised by their usual names", err->msg);
        ph_error_free(&err);
        ph_profiles_free(profiles);
        memset(profiles, 0, sizeof *profiles);
    }
    ph_compose_free(c);
    return 0;
}

int
ph_cli_limit_opt(int c, const char *arg, ph_tar_limits *lim)
{
    ph_error_t err = NULL;
    ph_tar_limit which = c == 'B' ? PH_TAR_LIMIT_BYTES : c == 'E' ? PH_TAR_LIMIT_ENTRIES : PH_TAR_LIMIT_FREE;
    uint64_t *dst = c == 'B' ? &lim->max_bytes : c == 'E' ? &lim->max_entries : &lim->min_free_bytes;

    if (c != 'B' && c != 'E' && c != 'F')
        return 0;
    if (ph_tar_limit_parse(which, arg, dst, &err) < 0) {
        ph_error_wrap(&err, c == 'B' ? "--max-bytes" : c == 'E' ? "--max-entries" : "--min-free");
        ph_error_report(&err);
        return -1;
    }
    return 1;
}

static int
services_args(int argc, char **argv, const char *usage, ph_tar_limits *lim)
{
    static const struct option plain[] = {
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const struct option limits[] = {
        { "help", no_argument, NULL, 'h' },
        PH_CLI_LIMIT_OPTIONS,
        { NULL, 0, NULL, 0 },
    };
    int c, r;

    while ((c = getopt_long(argc, argv, "+h", lim ? limits : plain, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: profharness %s\n%s", usage, lim ? PH_CLI_LIMIT_HELP : "");
            return -2;
        }
        if (lim != NULL && (r = ph_cli_limit_opt(c, optarg, lim)) != 0) {
            if (r < 0)
                return -1;
            continue;
        }
        fprintf(stderr, "usage: profharness %s\n", usage);
        return -1;
    }
    return optind;
}

int
ph_cli_mode_args(int argc, char **argv, const char *usage, const char **mode, int *build, int *allow_unnamed)
{
    static const struct option longopts[] = {
        { "mode", required_argument, NULL, 'm' },
        { "build", no_argument, NULL, 'b' },
        { "allow-unnamed", no_argument, NULL, 'u' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;

    *mode = NULL;
    if (build != NULL)
        *build = 0;
    *allow_unnamed = 0;
    while ((c = getopt_long(argc, argv, "+m:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': *mode = optarg; break;
        case 'b':
            if (build == NULL) { /* attach: the service runs already */
                fputs(usage, stderr);
                return -1;
            }
            *build = 1;
            break;
        case 'u': *allow_unnamed = 1; break;
        case 'h': fputs(usage, stdout); return -2;
        default: fputs(usage, stderr); return -1;
        }
    }
    if (*mode == NULL) {
        fprintf(stderr, "profharness: %s needs --mode (see `profharness modes`)\n%s", argv[0], usage);
        return -1;
    }
    return optind;
}

int
ph_cli_services_args(int argc, char **argv, const char *usage)
{
    return services_args(argc, argv, usage, NULL);
}

int
ph_cli_services_limits_args(int argc, char **argv, const char *usage, ph_tar_limits *lim)
{
    return services_args(argc, argv, usage, lim);
}

int
ph_cli_run_services_limits(const ph_global_opts *g, int argc, char **argv, const char *usage,
                           int (*fn)(ph_run *r, char **services, int n, ph_error_t *err))
{
    ph_error_t err = NULL;
    ph_tar_limits lim = { 0 };
    ph_run *r;
    int first = ph_cli_services_limits_args(argc, argv, usage, &lim);

    if (first < 0)
        return first == -2 ? 0 : 2;
    r = ph_cli_run_open_limits(g, &lim, &err);
    if (r != NULL)
        fn(r, argv + first, argc - first, &err);
    ph_run_free(r);
    return ph_error_report(&err);
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
