/* cmd_compare.c - `profharness compare [OPTIONS] A [B]`: two runs of one
 * mode side by side (text or JSON on stdout, compare.html beside them),
 * and --fail-if conditions for CI.  Needs no compose file and no Engine. */
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
    "              or A alone = SERVICE: its two newest runs of the newest run's mode\n"
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
    "  (shares of all samples, in %); wall those and offcpu, offcpu[fn] (%); heap inuse_space,\n"
    "  inuse_space[fn], alloc_space, alloc_space[fn], inuse_space_growth (grown since the\n"
    "  first snapshot), inuse_space_growth[fn] (bytes, [fn]: with fn on the stack).\n"
    "Exit status: 0 ok, 1 failure, 2 usage or bad input, 3 a --fail-if condition held.\n";

static int
is_dir(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
cmp_desc(const void *a, const void *b)
{
    return strcmp(*(char *const *)b, *(char *const *)a);
}

/* The mode of run dir DIR/NAME: run.json's, else from the name. */
static void
run_mode(const char *dir, const char *name, char *mode, size_t cap)
{
    char path[PATH_MAX + 300], buf[4096];
    FILE *f;
    const char *p, *d;

    snprintf(path, sizeof path, "%s/%s/run.json", dir, name);
    mode[0] = '\0';
    if ((f = fopen(path, "re")) != NULL) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        if ((p = strstr(buf, "\"mode\"")) != NULL && (p = strchr(p + 6, '"')) != NULL) {
            snprintf(mode, cap, "%.*s", (int)strcspn(p + 1, "\""), p + 1);
            return;
        }
    }
    if ((d = strchr(name, '-')) != NULL)
        snprintf(mode, cap, "%.*s", (int)strcspn(d + 1, "-."), d + 1);
}

/* SERVICE's two newest runs of one mode into A and B. */
static int
two_newest(const char *service_dir, char *a, char *b, ph_error_t *err)
{
    DIR *d = opendir(service_dir);
    struct dirent *de;
    char *names[4096], mode[64] = "", m[64];
    size_t n = 0, found = 0;

    if (d == NULL)
        return ph_error_make(err, errno, PH_EXIT_USAGE, "open `%s`", service_dir);
    while ((de = readdir(d)) != NULL && n < 4096) {
        char p[PATH_MAX + 256];
        if (de->d_name[0] == '.' || strcmp(de->d_name, PH_LATEST_LINK) == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", service_dir, de->d_name);
        if (is_dir(p) && (names[n] = strdup(de->d_name)) != NULL)
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_desc);
    for (size_t i = 0; i < n && found < 2; i++) {
        run_mode(service_dir, names[i], m, sizeof m);
        if (found == 0)
            snprintf(mode, sizeof mode, "%s", m);
        if (strcmp(m, mode) != 0)
            continue;
        snprintf(found == 0 ? b : a, PATH_MAX, "%s/%s", service_dir, names[i]);
        found++;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    if (found < 2)
        return ph_bad_input(err, "`%s` has %s run of mode %s: nothing to compare", service_dir,
                            found ? "only one" : "no", mode[0] ? mode : "any");
    return 0;
}

/* A run named as the user may name it, into OUT. */
static int
resolve(const ph_global_opts *g, const char *arg, char *out, ph_error_t *err)
{
    const char *at = strchr(arg, '@');

    if (at == NULL && is_dir(arg)) {
        snprintf(out, PATH_MAX, "%s", arg);
        return 0;
    }
    if (at != NULL)
        snprintf(out, PATH_MAX, "%s/%.*s/%s", g->out_dir, (int)(at - arg), arg, at + 1);
    else
        snprintf(out, PATH_MAX, "%s/%s", g->out_dir, arg);
    if (!is_dir(out))
        return ph_bad_input(err, "`%s`: no such run (looked for `%s`)", arg, out);
    return 0;
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
    char a[PATH_MAX], b[PATH_MAX], html_default[PATH_MAX + 32], *failed = NULL, *end;
    int c, no_html = 0, rc;

    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
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
    if (argc - optind == 1) {
        char sdir[PATH_MAX];
        if (resolve(g, argv[optind], sdir, &err) < 0 || two_newest(sdir, a, b, &err) < 0)
            return ph_error_report(&err);
    } else if (resolve(g, argv[optind], a, &err) < 0 || resolve(g, argv[optind + 1], b, &err) < 0) {
        return ph_error_report(&err);
    }
    if (is_dir(g->profiles_dir) && ph_profiles_load_dir(g->profiles_dir, &profiles, &err) == 0)
        pp = &profiles;
    ph_error_free(&err);
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
