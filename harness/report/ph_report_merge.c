/* ph_report_merge.c - one service's runs on several Engines as one run:
 * the stacks each host's report counts, summed into one folded file, a
 * pprof profile of the sum, run.json naming the hosts' runs (and, for
 * perf, convert.json with the samples added up); the report then draws
 * the merged flamegraph from the folded file as from any run's.
 *
 * Each host's stacks are read as its own report reads them (ph_rundata:
 * a cumulative sampler's last snapshot, a delta sampler's every one,
 * perf's converted stacks), so the merged total is the sum of the
 * hosts' totals, frame for frame.  Runs of different modes, or perf runs
 * of different events or units, are not added up: the answer says why.
 */
#include "ph_report_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ph_markup_only.h"
#include "ph_pprof.h"

static const char *
jstr(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* One file of the merge: FILL writes it into memory, then it is
 * written atomically as DIR/NAME. */
static int
write_mem(const char *dir, const char *name, const ph_folded *f, const ph_pprof_opts *po, ph_error_t *err)
{
    char *buf = NULL, path[PATH_MAX + 64];
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int rc;

    if (m == NULL)
        return ph_fail(err, ENOMEM, "write `%s`", name);
    rc = po != NULL ? ph_pprof_write(f, po, m, err) : ph_folded_write(f, m, err);
    if (fclose(m) != 0 && rc == 0)
        rc = ph_fail(err, ENOMEM, "write `%s`", name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (rc == 0)
        rc = ph_report_write_file(dir, path, buf, len, err);
    free(buf);
    return rc;
}

/* Why RD cannot be added to the first run FIRST, or NULL when it can. */
static const char *
mismatch(const ph_rundata *first, const ph_rundata *rd, char *why, size_t cap)
{
    json_t *a = first->convert, *b = rd->convert;

    if (strcmp(first->mode, rd->mode) != 0 || strcmp(first->service, rd->service) != 0) {
        snprintf(why, cap, "runs of different services or modes (%s %s, %s %s)", first->service, first->mode,
                 rd->service, rd->mode);
        return why;
    }
    if ((a == NULL) != (b == NULL) ||
        (a != NULL && (!jstr(a, "event") || !jstr(b, "event") || strcmp(jstr(a, "event"), jstr(b, "event")) != 0 ||
                       !jstr(a, "unit") || !jstr(b, "unit") || strcmp(jstr(a, "unit"), jstr(b, "unit")) != 0))) {
        snprintf(why, cap, "perf counted different events or units on the hosts");
        return why;
    }
    return NULL;
}

int
ph_report_merge_runs(const char *dir, const char *name, const ph_merge_src *src, size_t n,
                     const ph_profile_set *profiles, char *why, size_t why_len, ph_error_t *err)
{
    ph_rundata *rd = calloc(n ? n : 1, sizeof *rd);
    ph_folded *sum = NULL;
    json_t *run = json_object(), *from = json_array(), *conv = NULL;
    const char *started = NULL;
    char path[PATH_MAX + 64], now[32], scratch[256];
    size_t loaded = 0;
    json_int_t perf_samples = 0;
    int rc = -1;
    time_t t = time(NULL);
    struct tm tm;

    why[0] = '\0';
    if (rd == NULL || run == NULL || from == NULL || (sum = ph_folded_new(0, err)) == NULL) {
        if (rd == NULL || run == NULL || from == NULL)
            ph_fail(err, ENOMEM, "merge the runs");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const ph_folded *fo;

        /* counted once loaded: a run refused below is freed as well */
        if (ph_rundata_load(src[i].run_dir, profiles, &rd[i], err) < 0)
            goto out;
        loaded++;
        fo = ph_flame_native(&rd[i].flame); /* every frame: the merged run makes its own view */
        if (fo == NULL) {
            snprintf(why, why_len, "%s's run has no folded stacks to add up (%s)", src[i].host,
                     rd[i].has_flame ? "see its report" : "a mode without stacks: nothing to merge");
            rc = 1;
            goto out;
        }
        if (i > 0 && mismatch(&rd[0], &rd[i], scratch, sizeof scratch) != NULL) {
            snprintf(why, why_len, "%s", scratch);
            rc = 1;
            goto out;
        }
        if (ph_folded_merge(sum, fo, err) < 0)
            goto out;
        if (rd[i].convert != NULL)
            perf_samples += json_integer_value(json_object_get(rd[i].convert, "samples"));
        if (jstr(rd[i].run, "started_at") && (started == NULL || strcmp(jstr(rd[i].run, "started_at"), started) < 0))
            started = jstr(rd[i].run, "started_at");
        snprintf(scratch, sizeof scratch, "@%s/%s/%s", src[i].host, rd[i].service, rd[i].name);
        json_array_append_new(from, json_pack("{s:s, s:s, s:s, s:f}", "context", src[i].host, "dir", scratch, "run",
                                              rd[i].name, "samples", ph_folded_get_stats(fo)->total));
    }
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(run, "service", json_string(rd[0].service));
    json_object_set_new(run, "mode", json_string(rd[0].mode));
    json_object_set_new(run, "dir", json_string(name));
    json_object_set_new(run, "collected_at", json_string(now));
    if (started != NULL)
        json_object_set_new(run, "started_at", json_string(started));
    json_object_set(run, PH_MERGED_FROM, from);
    if (rd[0].convert != NULL) {
        conv = json_pack("{s:s, s:s, s:I}", "event", jstr(rd[0].convert, "event"), "unit",
                         jstr(rd[0].convert, "unit"), "samples", perf_samples);
        snprintf(path, sizeof path, "%s/convert.json", dir);
        if (conv == NULL || ph_report_write_json(dir, path, conv, err) < 0)
            goto out;
    }
    {
        /* perf's unit as its conversion wrote it; the sampler's samples */
        int ns = conv && strcmp(jstr(conv, "unit"), "nanoseconds") == 0;
        ph_pprof_opts po = { .type = conv ? (ns ? "cpu" : jstr(conv, "event")) : "samples",
                             .unit = ns ? "nanoseconds" : "count",
                             .comment = "merged across Docker Engines by profharness" };

        if (write_mem(dir, PH_MERGED_FOLDED, sum, NULL, err) < 0 || write_mem(dir, PH_MERGED_PPROF, sum, &po, err) < 0)
            goto out;
    }
    snprintf(path, sizeof path, "%s/%s", dir, PH_RUN_META_NAME);
    rc = ph_report_write_json(dir, path, run, err) < 0 ? -1 : 0;
out:
    for (size_t i = 0; i < loaded; i++)
        ph_rundata_free(&rd[i]);
    free(rd);
    ph_folded_free(sum);
    json_decref(run);
    json_decref(from);
    json_decref(conv);
    return rc;
}

void
ph_report_merged_section(ph_mw *f, const ph_rundata *rd)
{
    json_t *from = json_object_get(rd->run, PH_MERGED_FROM), *h;
    static const char *const heads[] = { "host (Docker context)", "samples#", "its run" };
    char b[PH_FMT_LEN];
    size_t i;

    if (!json_is_array(from))
        return;
    ph_html_section(f, "hosts", "Hosts merged");
    ph_html_note(f, "The stacks of each host's run, added up: the graph and the tables above count them all.");
    ph_html_table(f, heads, 3);
    json_array_foreach(from, i, h) {
        const char *host = jstr(h, "context"), *run = jstr(h, "run");
        double samples = json_number_value(json_object_get(h, "samples"));

        PH_MW_RAW(f, "<tr><td><b>");
        ph_mw_text(f, host ? host : "?");
        PH_MW_RAW(f, "</b></td>");
        ph_html_num(f, samples, ph_fmt_commify(b, (uint64_t)samples));
        PH_MW_RAW(f, "<td>");
        if (host != NULL && run != NULL) {
            /* OUT/<service>/<merged>/ to OUT/@<host>/<service>/<run>/ */
            PH_MW_RAW(f, "<a href=\"../../@");
            ph_mw_url(f, host);
            PH_MW_RAW(f, "/");
            ph_mw_url(f, rd->service);
            PH_MW_RAW(f, "/");
            ph_mw_url(f, run);
            PH_MW_RAW(f, "/" PH_REPORT_HTML "\">");
            ph_mw_text(f, run);
            PH_MW_RAW(f, "</a>");
        }
        PH_MW_RAW(f, "</td></tr>\n");
    }
    ph_html_table_end(f);
    ph_html_section_end(f);
}
