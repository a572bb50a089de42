/* ph_report_index.c - OUT_DIR/index.html: every service and run, newest
 * first, with its mode, start, duration, how it stopped and headline,
 * each linking to its report.
 *
 * It reads only the harness's own small files, summary.json and
 * run.json, each with a size cap, so it stays fast with many large runs;
 * nothing the container wrote (how the run stopped is run.json's
 * `completion`, the record the harness checked when it collected).  A run
 * without a report yet is listed with the command that makes one.
 */
#include "ph_report_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ph_markup_only.h"

#define MAX_RUNS 100000

typedef struct entry {
    char *service, *run, *mode, *started, *stopped, *headline;
    double seconds;          /* how long it ran, -1 unknown */
    int has_report, problems;
} entry;

static char *
dup_or(const char *s, const char *dflt)
{
    return strdup(s ? s : dflt);
}

static int
cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    /* run names start with their UTC start stamp: newest first */
    int c = strcmp(y->run, x->run);

    return c ? c : strcmp(x->service, y->service);
}

static void
free_entry(entry *e)
{
    free(e->service);
    free(e->run);
    free(e->mode);
    free(e->started);
    free(e->stopped);
    free(e->headline);
}

/* The entry of OUT_DIR/SERVICE/RUN. */
static int
read_run(const char *out_dir, const char *service, const char *run, entry *e)
{
    char dir[PATH_MAX];
    json_t *sum, *meta, *x, *secs;
    const char *mode, *started, *stopped, *headline;
    char guess[64] = "", attached[96];

    snprintf(dir, sizeof dir, "%s/%s/%s", out_dir, service, run);
    sum = ph_report_load_json(dir, PH_REPORT_SUMMARY, PH_RD_OWN_JSON_MAX, NULL, 0);
    meta = ph_report_load_json(dir, PH_RUN_META_NAME, PH_RD_OWN_JSON_MAX, NULL, 0);
    x = json_object_get(meta, "completion"); /* borrowed; null for a snapshot */
    mode = json_string_value(json_object_get(sum, "mode"));
    if (mode == NULL)
        mode = json_string_value(json_object_get(meta, "mode"));
    if (mode == NULL) {
        const char *d = strchr(run, '-');
        if (d != NULL)
            snprintf(guess, sizeof guess, "%.*s", (int)strcspn(d + 1, "-."), d + 1);
        mode = guess;
    }
    if (json_string_value(json_object_get(meta, "attached_to")) != NULL) { /* profiled without a restart */
        snprintf(attached, sizeof attached, "%.60s (attached)", mode);
        mode = attached;
    }
    started = json_string_value(json_object_get(meta, "started_at"));
    stopped = json_string_value(json_object_get(sum, "stopped"));
    headline = json_string_value(json_object_get(sum, "headline"));
    memset(e, 0, sizeof *e);
    e->service = strdup(service);
    e->run = strdup(run);
    e->mode = strdup(mode);
    /* no start time recorded: the run's name starts with its UTC stamp */
    e->started = dup_or(started, run);
    e->stopped = dup_or(stopped, json_is_object(x) ? "" : "snapshot / unknown");
    e->headline = dup_or(headline, "");
    e->has_report = sum != NULL;
    e->problems = (int)json_array_size(json_object_get(sum, "problems"));
    secs = json_object_get(json_is_number(json_object_get(sum, "run_seconds")) ? sum : x, "run_seconds");
    e->seconds = json_is_number(secs) ? json_number_value(secs) : -1;
    json_decref(sum);
    json_decref(meta);
    if (e->service == NULL || e->run == NULL || e->mode == NULL || e->started == NULL || e->stopped == NULL ||
        e->headline == NULL) {
        free_entry(e);
        return -1;
    }
    return 0;
}

static int
is_dir(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int
ph_report_write_index(const char *out_dir, ph_error_t *err)
{
    DIR *d = opendir(out_dir), *sd;
    struct dirent *de, *re;
    entry *v = NULL;
    size_t n = 0, cap = 0, services = 0;
    char path[PATH_MAX + 32], b[PH_FMT_LEN], sub[256];
    const char *page = NULL;
    size_t page_len = 0;
    ph_mw w = { 0 }, *f = &w;
    int rc = -1;

    if (d == NULL)
        return ph_error_make(err, errno, errno == ENOENT ? PH_EXIT_USAGE : PH_EXIT_FAILURE, "open `%s`", out_dir);
    while ((de = readdir(d)) != NULL) {
        char sdir[PATH_MAX];
        int any = 0;

        if (de->d_name[0] == '.')
            continue;
        snprintf(sdir, sizeof sdir, "%s/%s", out_dir, de->d_name);
        if (!is_dir(sdir) || (sd = opendir(sdir)) == NULL)
            continue;
        while ((re = readdir(sd)) != NULL && n < MAX_RUNS) {
            char rdir[PATH_MAX + 256];
            if (re->d_name[0] == '.' || strcmp(re->d_name, PH_LATEST_LINK) == 0)
                continue;
            snprintf(rdir, sizeof rdir, "%s/%s", sdir, re->d_name);
            if (!is_dir(rdir))
                continue;
            if (n == cap) {
                entry *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof *nv);
                if (nv == NULL) {
                    closedir(sd);
                    ph_fail(err, ENOMEM, "list the runs in `%s`", out_dir);
                    goto out;
                }
                v = nv;
                cap = cap ? cap * 2 : 64;
            }
            if (read_run(out_dir, de->d_name, re->d_name, &v[n]) < 0) {
                closedir(sd);
                ph_fail(err, ENOMEM, "list the runs in `%s`", out_dir);
                goto out;
            }
            n++;
            any = 1;
        }
        closedir(sd);
        services += any;
    }
    qsort(v, n, sizeof *v, cmp_entry);

    if (ph_mw_open_mem(&w, PH_MW_HTML) < 0) {
        ph_fail(err, ENOMEM, "write the index");
        goto out;
    }
    snprintf(sub, sizeof sub, "%zu run%s of %zu service%s, newest first", n, n == 1 ? "" : "s", services,
             services == 1 ? "" : "s");
    ph_html_begin(f, "profharness: all runs", "profharness: all runs", sub);
    ph_html_main(f);
    ph_html_section(f, "runs", "Runs");
    if (n == 0) {
        ph_html_note(f, "No run yet: `just profile-strace SERVICE`, some load, then `just stop-profiling`.");
    } else {
        static const char *const heads[] = { "service", "mode", "started (UTC)", "ran#", "how it stopped", "headline",
                                             "report" };
        ph_html_table(f, heads, 7);
        for (size_t i = 0; i < n; i++) {
            entry *e = &v[i];
            PH_MW_RAW(f, "<tr id=\"");
            ph_mw_attr(f, e->service);
            PH_MW_RAW(f, "--");
            ph_mw_attr(f, e->run);
            PH_MW_RAW(f, "\"><td><b>");
            ph_mw_text(f, e->service);
            PH_MW_RAW(f, "</b></td><td>");
            ph_mw_text(f, e->mode);
            PH_MW_RAW(f, "</td><td class=\"mono\">");
            ph_mw_text(f, e->started);
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, e->seconds, e->seconds >= 0 ? ph_fmt_seconds(b, e->seconds) : "-");
            PH_MW_RAW(f, "<td>");
            ph_mw_text(f, e->stopped);
            PH_MW_RAW(f, "</td><td>");
            ph_mw_text(f, e->headline);
            if (e->problems > 0)
                PH_MW_FMT(f, " <span class=\"note\">(%d problem%s)</span>", e->problems, e->problems == 1 ? "" : "s");
            PH_MW_RAW(f, "</td><td>");
            if (e->has_report) {
                PH_MW_RAW(f, "<a href=\"");
                ph_mw_url(f, e->service);
                PH_MW_RAW(f, "/");
                ph_mw_url(f, e->run);
                PH_MW_RAW(f, "/" PH_REPORT_HTML "\">report</a>");
            } else {
                PH_MW_RAW(f, "<span class=\"note\">none yet: <code>profharness report ");
                ph_mw_text(f, e->service);
                PH_MW_RAW(f, "/");
                ph_mw_text(f, e->run);
                PH_MW_RAW(f, "</code></span>");
            }
            PH_MW_RAW(f, "</td></tr>\n");
        }
        ph_html_table_end(f);
    }
    ph_html_section_end(f);
    ph_html_end(f);
    if (ph_mw_finish(&w, &page, &page_len) < 0) {
        ph_fail(err, ENOMEM, "write the index");
        goto out;
    }
    snprintf(path, sizeof path, "%s/%s", out_dir, PH_REPORT_INDEX);
    rc = ph_report_write_file(out_dir, path, page, page_len, err);
out:
    if (d)
        closedir(d);
    for (size_t i = 0; i < n; i++)
        free_entry(&v[i]);
    free(v);
    ph_mw_close(&w);
    return rc;
}
