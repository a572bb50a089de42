/* cmd_report.c - `profharness report [RUN_DIR|SERVICE|SERVICE/RUN...]`:
 * (re)write report.html and summary.json of the runs named (every run of
 * the output dir when none is), print each headline, then rewrite the
 * output dir's index.html.  Needs no Engine; the compose file only for
 * where the output dir is and which modes the project has.
 *
 * A name is a run dir only when it is one (ph_report_run_dir_info: the
 * run.json only the harness writes), else a service (or SERVICE/RUN,
 * @HOST/SERVICE...) under the output dir: a report is never written into
 * a directory that is not a run, such as a service's build context that
 * happens to bear its name.  The modes are loaded as stop loads them, so
 * a run re-reported reads its files as its own report did. */
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
    "Writes report.html and summary.json into each run named (a RUN_DIR: a run dir, wherever it is;\n"
    "a SERVICE: all of its runs under OUTDIR; nothing: every run under OUTDIR), prints each run's\n"
    "headline, then rewrites OUTDIR's index.html.  OUTDIR: -o, else contrib/profiling beside the\n"
    "compose file.\n"
    "  --no-index   leave index.html alone\n"
    "Exit status: 0 ok, 1 a report could not be written, 2 usage or no such run.\n";

typedef struct report_ctx {
    const ph_profile_set *profiles;
    const char *out;       /* the output dir, "" when there is none */
    const char *why_none;  /* why there is none */
    int failed, reported;
    int index_out;         /* a run under OUT was reported: its index is rewritten */
    char index_dirs[16][PATH_MAX]; /* other output dirs, of runs named by their path */
    size_t n_index_dirs;
} report_ctx;

static int
is_dir(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void
add_index_dir(report_ctx *x, const char *d)
{
    for (size_t i = 0; i < x->n_index_dirs; i++)
        if (strcmp(x->index_dirs[i], d) == 0)
            return;
    if (x->n_index_dirs < sizeof x->index_dirs / sizeof x->index_dirs[0])
        snprintf(x->index_dirs[x->n_index_dirs++], PATH_MAX, "%s", d);
}

/* A run dir named by its path: its output dir is its grandparent
 * (OUTDIR/SERVICE/RUN), only where the parent is named for the run's
 * service: a run dir copied anywhere else is reported without writing an
 * index two levels up, which could be any directory (`/` for a run in
 * /tmp). */
static void
note_index_dir(report_ctx *x, const char *run_dir, const char *service)
{
    char d[PATH_MAX], *s;

    snprintf(d, sizeof d, "%s", run_dir);
    for (int up = 0; up < 2; up++) {
        while ((s = strrchr(d, '/')) != NULL && s[1] == '\0' && s != d)
            *s = '\0';
        if (up == 1 && (service[0] == '\0' || strcmp((s = strrchr(d, '/')) ? s + 1 : d, service) != 0)) {
            ph_info("index: %s is not in an output dir (OUTDIR/%s/RUN): no index written", run_dir,
                    service[0] ? service : "SERVICE");
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
    add_index_dir(x, d);
}

/* Report the run dir DIR; UNDER_OUT: it was found under the output dir. */
static void
report_one(report_ctx *x, const char *dir, int under_out)
{
    ph_report_headline h;
    ph_error_t err = NULL;

    if (ph_report_write_run(dir, x->profiles, &h, &err) < 0) {
        ph_error_report(&err);
        x->failed++;
        return;
    }
    x->reported++;
    if (under_out)
        x->index_out = 1;
    else
        note_index_dir(x, dir, h.service);
    ph_report_print_headline(stdout, &h);
}

static int
cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of DIR's entries that are directories, sorted (no `.`
 * names, no `latest`); *N of them.  NULL when DIR cannot be listed. */
static char **
sub_dirs(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t cap = 0;

    *n = 0;
    if (d == NULL)
        return NULL;
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX + 256];

        if (de->d_name[0] == '.' || strcmp(de->d_name, PH_LATEST_LINK) == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (!is_dir(p))
            continue;
        if (*n == cap) {
            char **nn = realloc(names, (cap ? cap * 2 : 16) * sizeof *nn);
            if (nn == NULL)
                break;
            names = nn;
            cap = cap ? cap * 2 : 16;
        }
        if ((names[*n] = strdup(de->d_name)) != NULL)
            (*n)++;
    }
    closedir(d);
    if (*n > 1)
        qsort(names, *n, sizeof *names, cmp_names);
    return names ? names : calloc(1, sizeof *names);
}

static void
free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* FN(X, DIR/NAME, NAME, ARG) for each directory NAME in DIR, in name
 * order (no `.` names, no `latest`); the sum of what FN returns. */
static int
each_sub_dir(report_ctx *x, const char *dir, int (*fn)(report_ctx *, const char *, const char *, int), int arg)
{
    size_t n;
    char **names = sub_dirs(dir, &n);
    int found = 0;

    for (size_t i = 0; names != NULL && i < n; i++) {
        char p[PATH_MAX + 256];

        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        found += fn(x, p, names[i], arg);
    }
    free_names(names, n);
    return found;
}

/* A run dir of a run of several workloads; UNDER_OUT as for report_one. */
static int
workload_cb(report_ctx *x, const char *dir, const char *name, int under_out)
{
    ph_run_dir_info info;

    (void)name;
    if (ph_report_run_dir_info(dir, &info) != PH_RUN_DIR_ONE)
        return 0;
    report_one(x, dir, under_out);
    return 1;
}

/* DIR if it is a run: a run dir, or a run of several workloads (each of
 * its run dirs).  Returns how many were reported or failed; 0 when DIR is
 * no run. */
static int
report_run(report_ctx *x, const char *dir, int under_out)
{
    ph_run_dir_info info;

    switch (ph_report_run_dir_info(dir, &info)) {
    case PH_RUN_DIR_ONE: report_one(x, dir, under_out); return 1;
    case PH_RUN_DIR_SEVERAL: return each_sub_dir(x, dir, workload_cb, under_out);
    default: return 0;
    }
}

static int
run_cb(report_ctx *x, const char *dir, const char *name, int under_out)
{
    (void)name;
    return report_run(x, dir, under_out);
}

/* Every run of the service dir SDIR, oldest first; how many. */
static int
report_service(report_ctx *x, const char *sdir, int under_out)
{
    return each_sub_dir(x, sdir, run_cb, under_out);
}

/* A service dir of an output dir, or (HOSTS) an Engine's own output dir
 * OUT/@<context> of --context a --context b, whose runs OUT's index
 * lists too. */
static int
service_cb(report_ctx *x, const char *dir, const char *name, int hosts)
{
    if (name[0] == '@')
        return hosts ? each_sub_dir(x, dir, service_cb, 0) : 0;
    return report_service(x, dir, 1);
}

/* One argument: a run dir by its path; else a run, or a service's runs,
 * under the output dir; else a directory of run dirs by its path (a
 * service dir named by where it is).  0, or -1 after the error. */
static int
report_arg(report_ctx *x, const char *arg)
{
    char p[PATH_MAX + 256];
    ph_error_t err = NULL;

    if (report_run(x, arg, 0) > 0)
        return 0;
    if (x->out[0] != '\0') {
        snprintf(p, sizeof p, "%s/%s", x->out, arg);
        if (report_run(x, p, 1) > 0)
            return 0;
        if (is_dir(p)) {
            if (report_service(x, p, 1) > 0)
                return 0;
            ph_bad_input(&err, "`%s` has no run under `%s`", arg, x->out);
            ph_error_hint(&err, "a run is made by `profharness start` and `stop` (or `collect`) of the service");
            return ph_error_report(&err), -1;
        }
    }
    if (is_dir(arg) && report_service(x, arg, 0) > 0)
        return 0;
    if (x->out[0] != '\0') {
        ph_bad_input(&err, "`%s` is neither a run dir nor a service under `%s`", arg, x->out);
        ph_error_hint(&err, "a run dir holds the run.json profharness writes; the services with runs are the "
                      "directories of `%s`", x->out);
    } else {
        ph_bad_input(&err, "`%s` is no run dir, and there is no output dir to look for a service in: %s", arg,
                     x->why_none);
        ph_error_hint(&err, "give -o DIR, or run it where the compose file is");
    }
    ph_error_report(&err);
    return -1;
}

int
ph_cmd_report(const ph_global_opts *g, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "no-index", no_argument, NULL, 'N' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    ph_profile_set profiles = { 0 };
    ph_error_t err = NULL;
    report_ctx *x = NULL;
    char out[PATH_MAX], why[1024];
    int c, no_index = 0, missing = 0, rc;

    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'N': no_index = 1; break;
        case 'h': fputs(usage, stdout); return PH_EXIT_OK;
        default: fputs(usage, stderr); return PH_EXIT_USAGE;
        }
    }
    if ((x = calloc(1, sizeof *x)) == NULL) {
        ph_fail(&err, errno, "allocate");
        return ph_error_report(&err);
    }
    ph_cli_runs_open(g, &profiles, out, sizeof out, why, sizeof why);
    x->profiles = profiles.n > 0 ? &profiles : NULL;
    x->out = out;
    x->why_none = why;
    if (optind == argc) {
        if (out[0] == '\0') {
            ph_bad_input(&err, "no output dir to report: %s", why);
            ph_error_hint(&err, "give -o DIR, or run it where the compose file is");
            missing++;
        } else if (!is_dir(out)) {
            ph_error_make(&err, errno, PH_EXIT_USAGE, "open the output dir `%s`", out);
            ph_error_hint(&err, "nothing has been profiled into it yet; or give -o DIR");
            missing++;
        } else if (each_sub_dir(x, out, service_cb, 1) == 0) {
            ph_info("no run under `%s` to report", out);
        }
        if (err != NULL)
            ph_error_report(&err);
    }
    for (int i = optind; i < argc; i++)
        missing += report_arg(x, argv[i]) < 0;
    if (x->index_out)
        add_index_dir(x, out);
    for (size_t i = 0; !no_index && i < x->n_index_dirs; i++) {
        if (ph_report_write_index(x->index_dirs[i], &err) < 0) {
            ph_error_report(&err);
            x->failed++;
        } else {
            printf("index: %s/index.html\n", x->index_dirs[i]);
        }
    }
    rc = x->failed ? PH_EXIT_FAILURE : missing ? PH_EXIT_USAGE : PH_EXIT_OK;
    ph_profiles_free(&profiles);
    free(x);
    return rc;
}
