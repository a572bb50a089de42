/* cmd_report.c - `profharness report [RUN_DIR|SERVICE|SERVICE/RUN...]`:
 * (re)write report.html and summary.json of the runs named (all runs
 * under OUTDIR when none is), print each headline, then rewrite
 * OUTDIR/index.html.  Needs no compose file and no Engine. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_common.h"
#include "ph_log.h"
#include "ph_report.h"

static const char usage[] =
    "usage: profharness report [--no-index] [RUN_DIR|SERVICE|SERVICE/RUN...]\n"
    "Writes report.html and summary.json into each run dir named (a SERVICE: all of its runs;\n"
    "nothing: every run under OUTDIR), prints each run's headline, then rewrites the index.html\n"
    "of the output dir they are in (OUTDIR/SERVICE/RUN).\n"
    "  --no-index   leave index.html alone\n"
    "Exit status: 0 ok, 1 a report could not be written, 2 usage or no such run.\n";

static int
is_dir(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
file_exists(const char *dir, const char *name)
{
    char p[PATH_MAX + 64];
    struct stat st;

    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

/* A run dir has run.json, ph-exit.json, or no subdirectory of its own. */
static int
looks_like_run(const char *dir)
{
    DIR *d;
    struct dirent *de;
    int subdirs = 0;

    if (file_exists(dir, PH_RUN_META_NAME) || file_exists(dir, "ph-exit.json"))
        return 1;
    if ((d = opendir(dir)) == NULL)
        return 0;
    while ((de = readdir(d)) != NULL && !subdirs) {
        char p[PATH_MAX + 256];
        if (de->d_name[0] == '.' || strcmp(de->d_name, PH_LATEST_LINK) == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        subdirs = is_dir(p);
    }
    closedir(d);
    return !subdirs;
}

/* The output dirs whose index.html is to be rewritten: each reported
 * run's grandparent (OUTDIR/SERVICE/RUN), only where the parent is named
 * for the run's service: a run dir copied anywhere else is reported
 * without writing an index two levels up, which could be any directory
 * (`/` for a run in /tmp). */
static char index_dirs[16][PATH_MAX];
static size_t n_index_dirs;

static void
note_index_dir(const char *run_dir, const char *service)
{
    char d[PATH_MAX], *s;

    snprintf(d, sizeof d, "%s", run_dir);
    for (int up = 0; up < 2; up++) {
        while ((s = strrchr(d, '/')) != NULL && s[1] == '\0' && s != d)
            *s = '\0';
        if (up == 1 && strcmp((s = strrchr(d, '/')) ? s + 1 : d, service) != 0) {
            ph_info("index: %s is not in an output dir (OUTDIR/%s/RUN): no index written", run_dir, service);
            return;
        }
        s = strrchr(d, '/');
        if (s == NULL)
            snprintf(d, sizeof d, ".");
        else if (s == d)
            d[1] = '\0';
        else
            *s = '\0';
    }
    for (size_t i = 0; i < n_index_dirs; i++)
        if (strcmp(index_dirs[i], d) == 0)
            return;
    if (n_index_dirs < sizeof index_dirs / sizeof index_dirs[0])
        snprintf(index_dirs[n_index_dirs++], PATH_MAX, "%s", d);
}

static int
report_one(const char *run_dir, const ph_profile_set *profiles, int *failed)
{
    ph_report_headline h;
    ph_error_t err = NULL;

    if (ph_report_write_run(run_dir, profiles, &h, &err) < 0) {
        ph_error_report(&err);
        (*failed)++;
        return -1;
    }
    note_index_dir(run_dir, h.service);
    ph_report_print_headline(stdout, &h);
    return 0;
}

static int
cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every run dir under SERVICE_DIR, oldest first. */
static int
report_service(const char *service_dir, const ph_profile_set *profiles, int *failed)
{
    DIR *d = opendir(service_dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;

    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX + 256];
        if (de->d_name[0] == '.' || strcmp(de->d_name, PH_LATEST_LINK) == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", service_dir, de->d_name);
        if (!is_dir(p))
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap ? cap * 2 : 16) * sizeof *nn);
            if (nn == NULL)
                break;
            names = nn;
            cap = cap ? cap * 2 : 16;
        }
        if ((names[n] = strdup(p)) != NULL)
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        report_one(names[i], profiles, failed);
        free(names[i]);
    }
    free(names);
    return 0;
}

/* Every service of HOST_DIR (OUT/@<context>), an output dir of its own;
 * OUT's index lists its runs too. */
static void
report_host(const char *host_dir, const ph_profile_set *profiles, int *failed)
{
    DIR *d = opendir(host_dir);
    struct dirent *de;
    char out[PATH_MAX];

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX + 256];
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", host_dir, de->d_name);
        if (is_dir(p))
            report_service(p, profiles, failed);
    }
    closedir(d);
    snprintf(out, sizeof out, "%s", host_dir);
    *strrchr(out, '/') = '\0';
    for (size_t i = 0; i < n_index_dirs; i++)
        if (strcmp(index_dirs[i], out) == 0)
            return;
    if (n_index_dirs < sizeof index_dirs / sizeof index_dirs[0])
        snprintf(index_dirs[n_index_dirs++], PATH_MAX, "%s", out);
}

int
ph_cmd_report(const ph_global_opts *g, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "no-index", no_argument, NULL, 'N' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    ph_profile_set profiles = { 0 }, *pp = NULL;
    ph_error_t err = NULL;
    int c, no_index = 0, failed = 0, missing = 0;

    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'N': no_index = 1; break;
        case 'h': fputs(usage, stdout); return PH_EXIT_OK;
        default: fputs(usage, stderr); return PH_EXIT_USAGE;
        }
    }
    /* the profiles say which file is which; without them the usual names do */
    if (is_dir(g->profiles_dir)) {
        if (ph_profiles_load_dir(g->profiles_dir, &profiles, &err) == 0) {
            pp = &profiles;
        } else {
            ph_warn("%s; files are recognised by their usual names", err->msg);
            ph_error_free(&err);
        }
    }
    if (optind == argc) {
        DIR *d = opendir(g->out_dir);
        struct dirent *de;
        if (d == NULL) {
            ph_error_make(&err, errno, PH_EXIT_USAGE, "open `%s`", g->out_dir);
            ph_error_hint(&err, "nothing has been profiled into it yet; or give -o DIR");
            ph_profiles_free(&profiles);
            return ph_error_report(&err);
        }
        while ((de = readdir(d)) != NULL) {
            char p[PATH_MAX + 256];
            if (de->d_name[0] == '.')
                continue;
            snprintf(p, sizeof p, "%s/%s", g->out_dir, de->d_name);
            if (!is_dir(p))
                continue;
            if (de->d_name[0] == '@') /* an Engine's own output dir (--context a --context b) */
                report_host(p, pp, &failed);
            else
                report_service(p, pp, &failed);
        }
        closedir(d);
    }
    for (int i = optind; i < argc; i++) {
        char alt[PATH_MAX + 256];
        const char *p = argv[i];

        if (!is_dir(p)) {
            snprintf(alt, sizeof alt, "%s/%s", g->out_dir, argv[i]);
            p = alt;
        }
        if (!is_dir(p)) {
            ph_bad_input(&err, "`%s` is neither a run dir nor a service under `%s`", argv[i], g->out_dir);
            ph_error_report(&err);
            missing++;
            continue;
        }
        if (looks_like_run(p))
            report_one(p, pp, &failed);
        else
            report_service(p, pp, &failed);
    }
    for (size_t i = 0; !no_index && i < n_index_dirs; i++) {
        if (ph_report_write_index(index_dirs[i], &err) < 0) {
            ph_error_report(&err);
            failed++;
        } else {
            printf("index: %s/index.html\n", index_dirs[i]);
        }
    }
    ph_profiles_free(&profiles);
    return failed ? PH_EXIT_FAILURE : missing ? PH_EXIT_USAGE : PH_EXIT_OK;
}
