/* ph_report_index.c - OUT_DIR/index.html: every service and run, newest
 * first, with its mode, start, duration, how it stopped and headline,
 * each linking to its report.  With runs on several Engines, each host's
 * output dir OUT_DIR/@<context>/ is listed too, its runs marked with
 * the host, and a merged run with the hosts it adds up (a context's name
 * never starts with `@`, a service's neither: no dir is taken for the
 * other).
 *
 * It reads only the harness's own small files, summary.json and
 * run.json, each with a size cap, so it stays fast with many large runs;
 * nothing the container wrote (how the run stopped is run.json's
 * `completion`, the record the harness checked when it collected).  A run
 * without a report yet is listed with the command that makes one.  A run
 * of several workloads (a service's replicas, a Swarm service's tasks:
 * <run>/tasks.json beside a run dir per workload) is listed per workload,
 * as SERVICE/<sub-dir>.
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
    char *host;              /* "" here; the context of OUT_DIR/@<context>/; "merged: a, b" */
    char *service, *run, *sub, *mode, *started, *stopped, *headline; /* sub: "" or a workload's dir in RUN */
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

    if (c == 0)
        c = strcmp(x->service, y->service);
    if (c == 0)
        c = strcmp(x->sub, y->sub);
    return c ? c : strcmp(x->host, y->host);
}

static void
free_entry(entry *e)
{
    free(e->host);
    free(e->service);
    free(e->run);
    free(e->sub);
    free(e->mode);
    free(e->started);
    free(e->stopped);
    free(e->headline);
}

/* "merged: a, b" for a merged run's run.json, else "". */
static char *
merged_hosts(json_t *meta)
{
    json_t *from = json_object_get(meta, PH_MERGED_FROM), *h;
    char buf[512] = "";
    size_t i, o = 0;

    if (!json_is_array(from))
        return strdup("");
    o = (size_t)snprintf(buf, sizeof buf, "merged:");
    json_array_foreach(from, i, h) {
        const char *c = json_string_value(json_object_get(h, "context"));
        if (o < sizeof buf)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s %s", i ? "," : "", c ? c : "?");
    }
    return strdup(buf);
}

/* The entry of OUT_DIR/SERVICE/RUN (OUT_DIR/@HOST/SERVICE/RUN when HOST),
 * or of its workload's dir SUB ("" for none). */
static int
read_run(const char *out_dir, const char *host, const char *service, const char *run, const char *sub, entry *e)
{
    char dir[PATH_MAX];
    json_t *sum, *meta, *x, *secs;
    const char *mode, *started, *stopped, *headline;
    char guess[64] = "", attached[96];

    if (host != NULL)
        snprintf(dir, sizeof dir, "%s/@%s/%s/%s%s%s", out_dir, host, service, run, sub[0] ? "/" : "", sub);
    else
        snprintf(dir, sizeof dir, "%s/%s/%s%s%s", out_dir, service, run, sub[0] ? "/" : "", sub);
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
    e->host = host != NULL ? strdup(host) : merged_hosts(meta);
    e->service = strdup(service);
    e->run = strdup(run);
    e->sub = strdup(sub);
    e->mode = strdup(mode);
    /* no start time recorded: the run's name starts with its UTC stamp */
    e->started = dup_or(started, run);
    if (stopped == NULL && json_is_array(json_object_get(meta, PH_MERGED_FROM)))
        stopped = "the hosts' runs added up";
    e->stopped = dup_or(stopped, json_is_object(x) ? "" : "snapshot / unknown");
    e->headline = dup_or(headline, "");
    e->has_report = sum != NULL;
    e->problems = (int)json_array_size(json_object_get(sum, "problems"));
    secs = json_object_get(json_is_number(json_object_get(sum, "run_seconds")) ? sum : x, "run_seconds");
    e->seconds = json_is_number(secs) ? json_number_value(secs) : -1;
    json_decref(sum);
    json_decref(meta);
    if (e->host == NULL || e->service == NULL || e->run == NULL || e->sub == NULL || e->mode == NULL || e->started == NULL || e->stopped == NULL ||
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

typedef struct entries {
    entry *v;
    size_t n, cap;
} entries;

/* One more entry in L: OUT_DIR/[@HOST/]SERVICE/RUN[/SUB].  -1 on ENOMEM. */
static int
push_run(entries *l, const char *out_dir, const char *host, const char *service, const char *run, const char *sub)
{
    if (l->n == l->cap) {
        entry *nv = realloc(l->v, (l->cap ? l->cap * 2 : 64) * sizeof *nv);
        if (nv == NULL)
            return -1;
        l->v = nv;
        l->cap = l->cap ? l->cap * 2 : 64;
    }
    if (read_run(out_dir, host, service, run, sub, &l->v[l->n]) < 0)
        return -1;
    l->n++;
    return 0;
}

/* RDIR, the run RUN of SERVICE: one entry, or one per workload's dir
 * when it is a run of several (tasks.json beside them).  -1 on ENOMEM. */
static int
push_runs(entries *l, const char *out_dir, const char *host, const char *service, const char *run, const char *rdir)
{
    char tasks[PATH_MAX + 300];
    struct stat st;
    struct dirent *te;
    DIR *td;
    int rc = 0;

    snprintf(tasks, sizeof tasks, "%s/%s", rdir, PH_TASKS_NAME);
    if (lstat(tasks, &st) < 0 || !S_ISREG(st.st_mode) || (td = opendir(rdir)) == NULL)
        return push_run(l, out_dir, host, service, run, "");
    while (rc == 0 && (te = readdir(td)) != NULL && l->n < MAX_RUNS) {
        char sdir[PATH_MAX + 600];

        snprintf(sdir, sizeof sdir, "%s/%s", rdir, te->d_name);
        if (te->d_name[0] != '.' && is_dir(sdir))
            rc = push_run(l, out_dir, host, service, run, te->d_name);
    }
    closedir(td);
    return rc;
}

/* The runs of every service dir of BASE (OUT_DIR, or OUT_DIR/@HOST) into
 * L.  -1 only on ENOMEM. */
static int
scan(const char *out_dir, const char *host, entries *l)
{
    char base[PATH_MAX];
    DIR *d, *sd;
    struct dirent *de, *re;

    if (host != NULL)
        snprintf(base, sizeof base, "%s/@%s", out_dir, host);
    else
        snprintf(base, sizeof base, "%s", out_dir);
    if ((d = opendir(base)) == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        char sdir[PATH_MAX];

        if (de->d_name[0] == '.' || de->d_name[0] == '@')
            continue;
        snprintf(sdir, sizeof sdir, "%s/%s", base, de->d_name);
        if (!is_dir(sdir) || (sd = opendir(sdir)) == NULL)
            continue;
        while ((re = readdir(sd)) != NULL && l->n < MAX_RUNS) {
            char rdir[PATH_MAX + 256];
            if (re->d_name[0] == '.' || strcmp(re->d_name, PH_LATEST_LINK) == 0)
                continue;
            snprintf(rdir, sizeof rdir, "%s/%s", sdir, re->d_name);
            if (!is_dir(rdir))
                continue;
            if (push_runs(l, out_dir, host, de->d_name, re->d_name, rdir) < 0)
                goto enomem;
        }
        closedir(sd);
    }
    closedir(d);
    return 0;
enomem:
    closedir(sd);
    closedir(d);
    return -1;
}

int
ph_report_write_index(const char *out_dir, ph_error_t *err)
{
    DIR *d = opendir(out_dir);
    struct dirent *de;
    entries l = { 0 };
    entry *v = NULL;
    size_t n = 0, services = 0;
    char path[PATH_MAX + 32], b[PH_FMT_LEN], sub[256];
    const char *page = NULL;
    size_t page_len = 0;
    ph_mw w = { 0 }, *f = &w;
    int rc = -1, hosts = 0;

    if (d == NULL)
        return ph_error_make(err, errno, errno == ENOENT ? PH_EXIT_USAGE : PH_EXIT_FAILURE, "open `%s`", out_dir);
    if (scan(out_dir, NULL, &l) < 0)
        goto enomem;
    /* each Engine's own output dir, OUT_DIR/@<context> */
    while ((de = readdir(d)) != NULL) {
        char hdir[PATH_MAX];

        snprintf(hdir, sizeof hdir, "%s/%s", out_dir, de->d_name);
        if (de->d_name[0] != '@' || de->d_name[1] == '\0' || !is_dir(hdir))
            continue;
        if (scan(out_dir, de->d_name + 1, &l) < 0)
            goto enomem;
    }
    v = l.v;
    n = l.n;
    qsort(v, n, sizeof *v, cmp_entry);
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(v[j].service, v[i].service) == 0;
        services += !seen;
        hosts |= v[i].host[0] != '\0';
    }

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
        static const char *const heads[] = { "host", "service", "mode", "started (UTC)", "ran#", "how it stopped",
                                             "headline", "report" };
        ph_html_table(f, heads + !hosts, 8 - !hosts);
        for (size_t i = 0; i < n; i++) {
            entry *e = &v[i];
            /* a host's run: OUT_DIR/@<host>/...; a merged one is here */
            int at = e->host[0] != '\0' && strncmp(e->host, "merged:", 7) != 0;

            PH_MW_RAW(f, "<tr id=\"");
            if (e->host[0] != '\0') {
                ph_mw_attr(f, at ? e->host : "merged");
                PH_MW_RAW(f, "--");
            }
            ph_mw_attr(f, e->service);
            PH_MW_RAW(f, "--");
            ph_mw_attr(f, e->run);
            if (e->sub[0]) {
                PH_MW_RAW(f, "--");
                ph_mw_attr(f, e->sub);
            }
            PH_MW_RAW(f, "\">");
            if (hosts) {
                PH_MW_RAW(f, "<td>");
                ph_mw_text(f, e->host);
                PH_MW_RAW(f, "</td>");
            }
            PH_MW_RAW(f, "<td><b>");
            ph_mw_text(f, e->service);
            PH_MW_RAW(f, "</b>");
            if (e->sub[0]) { /* a replica, a task */
                PH_MW_RAW(f, "/");
                ph_mw_text(f, e->sub);
            }
            PH_MW_RAW(f, "</td><td>");
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
                if (at) {
                    PH_MW_RAW(f, "@");
                    ph_mw_url(f, e->host);
                    PH_MW_RAW(f, "/");
                }
                ph_mw_url(f, e->service);
                PH_MW_RAW(f, "/");
                ph_mw_url(f, e->run);
                if (e->sub[0]) {
                    PH_MW_RAW(f, "/");
                    ph_mw_url(f, e->sub);
                }
                PH_MW_RAW(f, "/" PH_REPORT_HTML "\">report</a>");
            } else {
                PH_MW_RAW(f, "<span class=\"note\">none yet: <code>profharness report ");
                if (at) {
                    PH_MW_RAW(f, "@");
                    ph_mw_text(f, e->host);
                    PH_MW_RAW(f, "/");
                }
                ph_mw_text(f, e->service);
                PH_MW_RAW(f, "/");
                ph_mw_text(f, e->run);
                if (e->sub[0]) {
                    PH_MW_RAW(f, "/");
                    ph_mw_text(f, e->sub);
                }
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
    goto out;
enomem:
    v = l.v;
    n = l.n;
    ph_fail(err, ENOMEM, "list the runs in `%s`", out_dir);
out:
    if (d)
        closedir(d);
    for (size_t i = 0; i < n; i++)
        free_entry(&v[i]);
    free(v);
    ph_mw_close(&w);
    return rc;
}
