/* cmd_compare.c - `profharness compare [OPTIONS] A [B]`: two runs of one
 * mode side by side (text or JSON on stdout, compare.html beside them),
 * and --fail-if conditions for CI.  Needs no Engine; the compose file
 * only for where the output dir is (as report finds it) and the modes.
 * A run is a run dir only by its run.json (ph_report_run_dir_info), so a
 * directory that bears a service's name (its build context) is never
 * taken for the service's runs. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_common.h"
#include "ph_escape.h"
#include "ph_log.h"
#include "ph_report.h"

#define MAX_FAIL_IF 64

static const char usage[] =
    "usage: profharness compare [OPTIONS] A [B]\n"
    "Compares run B (after) with run A (before), two runs of one mode:\n"
    "  A, B        run dirs, SERVICE@RUN or SERVICE/RUN (RUN may be `latest`) under OUTDIR;\n"
    "              or A alone = SERVICE: its two newest runs of the newest run's mode (said)\n"
    "              OUTDIR: -o, else contrib/profiling beside the compose file\n"
    "  --format text|json   what goes to stdout (text)\n"
    "  --html FILE          where compare.html goes (default: B's service dir)\n"
    "  --no-html            write no compare.html\n"
    "  --top N              rows per table (20)\n"
    "  --fail-if EXPR       exit 3 when EXPR holds, printing why; may be repeated.  EXPR is\n"
    "                       METRIC OP VALUE: OP > < >= <=; VALUE +N% / -N% (change from A to B),\n"
    "                       +N / -N (absolute change), N (B's value); k, M, G suffixes.\n"
    "                       ir>+5%   peak_heap>+10%   samples[front_checksum_payload]>+20%\n"
    "  metrics: callgrind ir (or any event), EVENT[fn], EVENT_incl[fn]; massif peak_heap,\n"
    "  peak_total, peak_extra, peak_stacks, heap[site]; strace syscalls, errors, syscall_time,\n"
    "  calls[name], time[name], errors[name]; flamegraph samples, samples[fn] and self[fn]\n"
    "  (shares of all samples, in %); perf those and cpu_time (s of CPU) or events; wall those\n"
    "  and offcpu, offcpu[fn] (%); heap inuse_space, inuse_space[fn], alloc_space,\n"
    "  alloc_space[fn], inuse_space_growth (grown since the first snapshot),\n"
    "  inuse_space_growth[fn] (bytes, [fn]: with fn on the stack).  A [name] in neither run\n"
    "  is an error (exit 2), with the nearest name there is.\n"
    "Exit status: 0 ok, 1 failure, 2 usage or bad input, 3 a --fail-if condition held.\n";

static int
is_dir(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A run of a service, for picking the newest: its dir, its mode and
 * when it was collected (run.json's collected_at as a stamp, else its
 * name's: both start YYYYMMDDTHHMMSSZ). */
typedef struct run_pick {
    char *name;
    char mode[64];
    char when[40];
} run_pick;

static int
cmp_newest(const void *a, const void *b)
{
    const run_pick *x = a, *y = b;
    int c = strcmp(y->when, x->when);

    return c ? c : strcmp(y->name, x->name);
}

/* SERVICE_DIR's two newest runs of one mode (the newest run's) into A
 * and B, said; SHOWN names the service in what is said. */
static int
two_newest(const char *service_dir, const char *shown, char *a, char *b, ph_error_t *err)
{
    DIR *d = opendir(service_dir);
    struct dirent *de;
    run_pick *runs = NULL;
    size_t n = 0, cap = 0, other = 0, found = 0, pick[2] = { 0, 0 };
    int rc = 0;

    if (d == NULL)
        return ph_error_make(err, errno, PH_EXIT_USAGE, "open `%s`", service_dir);
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX + 256];
        ph_run_dir_info info;

        if (de->d_name[0] == '.' || strcmp(de->d_name, PH_LATEST_LINK) == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", service_dir, de->d_name);
        if (ph_report_run_dir_info(p, &info) != PH_RUN_DIR_ONE)
            continue;
        if (n == cap) {
            run_pick *nr = realloc(runs, (cap ? cap * 2 : 16) * sizeof *nr);
            if (nr == NULL) {
                rc = ph_fail(err, ENOMEM, "list the runs of `%s`", service_dir);
                break;
            }
            runs = nr;
            cap = cap ? cap * 2 : 16;
        }
        if ((runs[n].name = strdup(de->d_name)) == NULL) {
            rc = ph_fail(err, ENOMEM, "list the runs of `%s`", service_dir);
            break;
        }
        snprintf(runs[n].mode, sizeof runs[n].mode, "%s", info.mode);
        if (info.collected[0]) {
            size_t o = 0;
            for (const char *c = info.collected; *c && o + 1 < sizeof runs[n].when; c++)
                if (*c != '-' && *c != ':')
                    runs[n].when[o++] = *c;
            runs[n].when[o] = '\0';
        } else {
            snprintf(runs[n].when, sizeof runs[n].when, "%.16s", de->d_name);
        }
        n++;
    }
    closedir(d);
    if (rc == 0 && n > 1)
        qsort(runs, n, sizeof *runs, cmp_newest);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (strcmp(runs[i].mode, runs[0].mode) != 0)
            other++;
        else if (found < 2)
            pick[found++] = i;
    }
    if (rc == 0 && found < 2) {
        if (n == 0)
            rc = ph_bad_input(err, "`%s` has no run under `%s`: nothing to compare", shown, service_dir);
        else
            rc = ph_bad_input(err, "`%s` has one %s run (its newest, %s)%s: nothing to compare", shown, runs[0].mode,
                              runs[0].name, other ? " and runs of other modes" : "");
        ph_error_hint(err, "name two runs: `profharness compare %s@RUN_A %s@RUN_B`", shown, shown);
    }
    if (rc == 0) {
        snprintf(a, PATH_MAX, "%s/%s", service_dir, runs[pick[1]].name);
        snprintf(b, PATH_MAX, "%s/%s", service_dir, runs[pick[0]].name);
        ph_info("compare: %s's two newest %s runs: A %s, B %s", shown, runs[0].mode, runs[pick[1]].name,
                runs[pick[0]].name);
    }
    for (size_t i = 0; i < n; i++)
        free(runs[i].name);
    free(runs);
    return rc;
}

/* A run named as the user may name it, into OUT: a run dir by its path,
 * SERVICE@RUN or SERVICE/RUN (or @HOST/SERVICE/RUN) under the output dir
 * OUTDIR ("" none: WHY says why). */
static int
resolve_run(const char *outdir, const char *why, const char *arg, char *out, ph_error_t *err)
{
    const char *at = arg[0] == '@' ? strchr(arg + 1, '@') : strchr(arg, '@');
    ph_run_dir_info info;

    /* A path to a directory is the run the user points at, run.json of
     * ours or not (a run copied by hand, another tool's folded stacks):
     * compare only reads it. */
    if (at == NULL && (ph_report_run_dir_info(arg, &info) == PH_RUN_DIR_ONE || (strchr(arg, '/') && is_dir(arg)))) {
        snprintf(out, PATH_MAX, "%s", arg);
        return 0;
    }
    if (outdir[0] == '\0')
        return ph_bad_input(err, "`%s` is no run dir, and there is no output dir to look for it in: %s", arg, why);
    if (at != NULL)
        snprintf(out, PATH_MAX, "%s/%.*s/%s", outdir, (int)(at - arg), arg, at + 1);
    else
        snprintf(out, PATH_MAX, "%s/%s", outdir, arg);
    if (ph_report_run_dir_info(out, &info) != PH_RUN_DIR_ONE)
        return ph_bad_input(err, "`%s`: no such run (looked for a run dir at `%s`)", arg, out);
    return 0;
}

/* A service named as the user may name it: SERVICE (or @HOST/SERVICE)
 * under the output dir, else a directory of runs by its path. */
static int
resolve_service(const char *outdir, const char *why, const char *arg, char *out, ph_error_t *err)
{
    if (outdir[0] != '\0') {
        snprintf(out, PATH_MAX, "%s/%s", outdir, arg);
        if (is_dir(out))
            return 0;
    }
    if (is_dir(arg) && ph_report_run_dir_info(arg, &(ph_run_dir_info){ 0 }) == PH_RUN_DIR_NONE) {
        snprintf(out, PATH_MAX, "%s", arg);
        return 0;
    }
    if (outdir[0] == '\0')
        return ph_bad_input(err, "`%s` is no service with runs, and there is no output dir to look for one in: %s",
                            arg, why);
    return ph_bad_input(err, "`%s` is no service with runs under `%s`", arg, outdir);
}

int
ph_cmd_compare(const ph_global_opts *g, int argc, char **argv)
{
    enum { O_FORMAT = 256, O_HTML, O_NOHTML, O_TOP, O_FAILIF };
    static const struct option longopts[] = {
        { "format", required_argument, NULL, O_FORMAT }, { "html", required_argument, NULL, O_HTML },
        { "no-html", no_argument, NULL, O_NOHTML },      { "top", required_argument, NULL, O_TOP },
        { "fail-if", required_argument, NULL, O_FAILIF }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *fail_if[MAX_FAIL_IF], *html = NULL;
    ph_compare_opts o = { 0 };
    ph_profile_set profiles = { 0 }, *pp = NULL;
    ph_error_t err = NULL;
    char a[PATH_MAX], b[PATH_MAX], html_default[PATH_MAX + 32], outdir[PATH_MAX], why[1024], *failed = NULL, *end;
    int c, no_html = 0, rc;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_FORMAT:
            if (strcmp(optarg, "text") == 0)
                o.format = PH_COMPARE_TEXT;
            else if (strcmp(optarg, "json") == 0)
                o.format = PH_COMPARE_JSON;
            else {
                ph_bad_input(&err, "--format: `%s` is not text or json", optarg);
                return ph_error_report(&err);
            }
            break;
        case O_HTML: html = optarg; break;
        case O_NOHTML: no_html = 1; break;
        case O_TOP:
            o.top = strtoul(optarg, &end, 10);
            if (end == optarg || *end != '\0' || o.top == 0 || o.top > 100000) {
                ph_bad_input(&err, "--top: `%s` is not a number of rows (1 to 100000)", optarg);
                return ph_error_report(&err);
            }
            break;
        case O_FAILIF:
            if (o.n_fail_if == MAX_FAIL_IF) {
                ph_bad_input(&err, "--fail-if: at most %d of them", MAX_FAIL_IF);
                return ph_error_report(&err);
            }
            if (ph_compare_check(optarg, &err) < 0)
                return ph_error_report(&err);
            fail_if[o.n_fail_if++] = optarg;
            break;
        case 'h': fputs(usage, stdout); return PH_EXIT_OK;
        default: fputs(usage, stderr); return PH_EXIT_USAGE;
        }
    }
    if (argc - optind < 1 || argc - optind > 2) {
        fputs(usage, stderr);
        return PH_EXIT_USAGE;
    }
    ph_cli_runs_open(g, &profiles, outdir, sizeof outdir, why, sizeof why);
    pp = profiles.n > 0 ? &profiles : NULL;
    if (argc - optind == 1) {
        char sdir[PATH_MAX];
        if (resolve_service(outdir, why, argv[optind], sdir, &err) < 0 ||
            two_newest(sdir, argv[optind], a, b, &err) < 0) {
            ph_profiles_free(&profiles);
            return ph_error_report(&err);
        }
    } else if (resolve_run(outdir, why, argv[optind], a, &err) < 0 ||
               resolve_run(outdir, why, argv[optind + 1], b, &err) < 0) {
        ph_profiles_free(&profiles);
        return ph_error_report(&err);
    }
    if (!no_html) {
        if (html == NULL) {
            /* B's service dir: OUTDIR/SERVICE/RUN -> OUTDIR/SERVICE/compare.html */
            char *slash;
            snprintf(html_default, sizeof html_default, "%s", b);
            while ((slash = strrchr(html_default, '/')) != NULL && slash[1] == '\0')
                *slash = '\0';
            slash = strrchr(html_default, '/');
            if (slash != NULL)
                snprintf(slash + 1, sizeof html_default - (size_t)(slash + 1 - html_default), "%s", "compare.html");
            else
                snprintf(html_default, sizeof html_default, "compare.html");
            html = html_default;
        }
        o.html_path = html;
    }
    o.fail_if = fail_if;
    rc = ph_compare_runs(a, b, pp, &o, stdout, &failed, &err);
    ph_profiles_free(&profiles);
    if (rc < 0)
        return ph_error_report(&err);
    fflush(stdout); /* the data first, then what we say about it */
    if (o.html_path != NULL)
        ph_info("compare: %s", o.html_path);
    if (rc > 0) {
        ph_escape_write(stderr, failed, strlen(failed), PH_ESCAPE_BACKSLASH);
        free(failed);
        return 3;
    }
    return PH_EXIT_OK;
}
