/* ph_run_convert.c - after a run, before collection: a profile's
 * `convert` (perf: `perf script`, then our own collapser, then the
 * flamegraph SVG and pprof, beside perf.data).
 *
 *   the profiled container has exited (stop waited for it) ->
 *   its /opt/profiling/<service> is streamed out through the archive
 *   endpoint into a temp file on the host -> a converter container of the
 *   tools image gets it at the same path (so the profile's command reads
 *   {out} as the run wrote it) -> runs the command -> its stdout goes
 *   through the collapser as it arrives -> stacks.folded, flamegraph.svg
 *   and profile.pb.gz are made here -> copied into the profiled
 *   container's {out}, beside what the profiler wrote -> the converter
 *   is removed.  Collection then takes everything together, with the
 *   profile's `latest` links.
 *
 * Why there: the converter is the tools image's perf, the same one a run
 * without a package manager recorded with, whatever the host has (it may
 * have no perf at all: macOS, a remote Engine), and the binaries to read
 * symbols from are in the run's files (perf's build-id cache, or the
 * files an attach copied), not on the host.
 *
 * A conversion never costs the run: on any failure the profiler's own
 * output is collected as it is and a warning says what failed and how to
 * convert by hand.  The collapser is harness/flame/ph_collapse (the
 * `profharness collapse perf` command).
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_collapse.h"
#include "ph_fs.h"
#include "ph_flame.h"
#include "ph_timing.h"
#include "ph_image.h"
#include "ph_log.h"
#include "ph_pprof.h"
#include "ph_tar.h"
#include "ph_util.h"

#define CONVERT_TIMEOUT_S 3600L
#define CONVERT_STDERR_MAX 2048

/* ---- the converter's output, as it arrives ---------------------------- */

typedef struct sink {
    FILE *f;
    ph_error_t *err;
} sink;

static int
file_cb(void *ud, const char *data, size_t len)
{
    sink *s = ud;

    if (fwrite(data, 1, len, s->f) != len)
        return ph_fail(s->err, errno, "write a temp file");
    return 0;
}

static ssize_t
file_read_cb(void *ud, char *buf, size_t len)
{
    FILE *f = ud;
    size_t n = fread(buf, 1, len, f);

    return n == 0 && ferror(f) ? -1 : (ssize_t)n;
}

typedef struct text {
    char buf[CONVERT_STDERR_MAX];
    size_t len;
} text;

static int
text_cb(void *ud, const char *data, size_t len)
{
    text *t = ud;
    size_t room = sizeof t->buf - 1 - t->len;

    if (len > room)
        len = room;
    memcpy(t->buf + t->len, data, len);
    t->len += len;
    t->buf[t->len] = '\0';
    return 0;
}

/* A temp file beside where the run will land: anonymous (unlinked at
 * once), so nothing is left behind whatever happens. */
static FILE *
temp_file(ph_run *r, const char *service, ph_error_t *err)
{
    char path[PATH_MAX];
    int fd;
    FILE *f;

    snprintf(path, sizeof path, "%s/%s/.convert-XXXXXX", r->opts.out_dir, service);
    if ((fd = mkostemp(path, O_CLOEXEC)) < 0) {
        ph_fail(err, errno, "create `%s`", path);
        return NULL;
    }
    unlink(path);
    if ((f = fdopen(fd, "w+")) == NULL) {
        ph_fail(err, errno, "open `%s`", path);
        close(fd);
    }
    return f;
}

typedef struct collapse_sink {
    ph_collapse *c;
    ph_error_t *err;
} collapse_sink;

static int
collapse_cb(void *ud, const char *data, size_t len)
{
    collapse_sink *s = ud;

    return ph_collapse_feed(s->c, data, len, s->err);
}

/* Write LEN bytes of DATA to DIR/NAME. */
static int
write_file(const char *dir, const char *name, const void *data, size_t len, ph_error_t *err)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((f = fopen(path, "we")) == NULL)
        return ph_fail(err, errno, "create `%s`", path);
    if (fwrite(data, 1, len, f) != len) {
        int e = errno;

        fclose(f);
        return ph_fail(err, e, "write `%s`", path);
    }
    if (fclose(f) != 0)
        return ph_fail(err, errno, "write `%s`", path);
    return 0;
}

/* convert.json: what the collapser saw (event, samples, the counts' unit),
 * for the report: the folded counts of cpu-clock are nanoseconds, not
 * samples. */
static const char *const outputs[] = { "stacks.folded", "profile.pb.gz", "flamegraph.svg", PH_CONVERT_META };

static int
write_meta(const char *dir, const ph_profile_convert *conv, const ph_collapse_stats *cs, int ns, ph_error_t *err)
{
    json_t *m = json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:s?}", "version", 1, "command", conv->command.v[0],
                          "collapse", conv->collapse, "event", cs->event, "samples", (json_int_t)cs->samples,
                          "stacks", (json_int_t)cs->stacks, "unit", ns ? "nanoseconds" : "events",
                          "unrecognized_lines", (json_int_t)cs->unrecognized,
                          "other_event", cs->other_event[0] ? cs->other_event : NULL);
    char *json_text = m ? json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    int rc;

    json_decref(m);
    if (json_text == NULL)
        return ph_fail(err, ENOMEM, "build %s", PH_CONVERT_META);
    rc = write_file(dir, PH_CONVERT_META, json_text, strlen(json_text), err);
    free(json_text);
    return rc;
}

/* The folded stacks as the four files, in DIR (so that they are dated
 * now), then in a tar to copy in. */
static int
outputs_tar(const char *dir, const char *folded, size_t folded_len, const char *title, const ph_profile_convert *conv,
            const ph_collapse_stats *cs, void **tar, size_t *tar_len, ph_error_t *err)
{
    const char *event = cs->event;
    /* cpu-clock and task-clock periods are nanoseconds; other events count. */
    int ns = strncmp(event, "cpu-clock", 9) == 0 || strncmp(event, "task-clock", 10) == 0;
    ph_folded *f = ph_folded_parse(folded, folded_len, 0, err);
    ph_flame_opts fo;
    ph_pprof_opts po = { .type = ns ? "cpu" : event, .unit = ns ? "nanoseconds" : "count", .comment = title };
    char *svg = NULL, *pb = NULL, subtitle[160];
    size_t svg_len = 0, pb_len = 0;
    FILE *m = NULL;
    int rc = -1;

    if (f == NULL)
        return -1;
    ph_flame_opts_init(&fo);
    fo.title = title;
    snprintf(subtitle, sizeof subtitle, "perf %s%s", event, ns ? ", in nanoseconds of CPU" : "");
    fo.subtitle = subtitle;
    fo.countname = ns ? "ns" : "events";
    if ((m = open_memstream(&svg, &svg_len)) == NULL) {
        ph_fail(err, errno, "allocate");
        goto out;
    }
    rc = ph_flame_render(f, &fo, m, NULL, err);
    fclose(m);
    if (rc < 0)
        goto out;
    rc = -1;
    if ((m = open_memstream(&pb, &pb_len)) == NULL) {
        ph_fail(err, errno, "allocate");
        goto out;
    }
    rc = ph_pprof_write(f, &po, m, err);
    fclose(m);
    if (rc < 0 || write_file(dir, outputs[0], folded, folded_len, err) < 0 ||
        write_file(dir, outputs[1], pb, pb_len, err) < 0 || write_file(dir, outputs[2], svg, svg_len, err) < 0 ||
        write_meta(dir, conv, cs, ns, err) < 0 ||
        ph_tar_context_build(dir, NULL, 0, 1u << 30, tar, tar_len, err) < 0)
        rc = -1;
out:
    ph_folded_free(f);
    free(svg);
    free(pb);
    return rc;
}

/* ---- the run's JIT maps ------------------------------------------------ */

static int
extract_cb(void *ud, const char *data, size_t len)
{
    ph_tar_extract *x = ((void **)ud)[0];
    ph_error_t *err = ((void **)ud)[1];

    return ph_tar_extract_feed(x, data, len, err);
}

/* The maps the run carries ({out}/perf-maps/perf-<pid>.map) into a temp
 * dir MAPS made here beside the run's; MAPS stays "" when the run has
 * none.  The collapser reads maps from there only: perf script names
 * /tmp/perf-<pid>.map, the container's path with the container's pid,
 * which on this host is some other program's file, or none. */
static int
fetch_maps(ph_run *r, ph_engine *e, const char *id, const char *out, const char *service, char *maps, size_t len,
           ph_error_t *err)
{
    char path[PATH_MAX], dir[PATH_MAX];
    ph_tar_extract *x;
    int there = 0, rc;

    maps[0] = '\0';
    snprintf(path, sizeof path, "%s/%s", out, PH_PERF_MAPS);
    if (ph_engine_archive_stat(e, id, path, &there, err) < 0)
        return -1;
    if (!there)
        return 0;
    snprintf(dir, sizeof dir, "%s/%s/.maps-XXXXXX", r->opts.out_dir, service);
    if (mkdtemp(dir) == NULL)
        return ph_fail(err, errno, "create a temp dir in `%s/%s`", r->opts.out_dir, service);
    snprintf(maps, len, "%s", dir);
    if ((x = ph_tar_extract_new(dir, 1, &r->opts.collect, err)) == NULL)
        return -1;
    {
        void *ud[2] = { x, err };

        rc = ph_engine_archive_get(e, id, path, extract_cb, ud, err);
    }
    if (rc == 0)
        rc = ph_tar_extract_finish(x, NULL, err);
    ph_tar_extract_free(x);
    return rc;
}

/* ---- the conversion ---------------------------------------------------- */

static int
convert(ph_run *r, json_t *c, const ph_profile_convert *conv, ph_error_t *err)
{
    const char *id = json_string_value(json_object_get(c, "Id"));
    const char *service = ph_run_label(c, PH_LABEL_SERVICE), *mode = ph_run_label(c, PH_LABEL_MODE);
    const char *run_id = ph_run_label(c, PH_LABEL_RUN);
    ph_engine *e;
    char out[PATH_MAX], title[256], dir[PATH_MAX] = "", maps[PATH_MAX] = "";
    json_t *cfg = NULL, *argv = NULL, *labels;
    char *tools = NULL, *cid = NULL, *folded = NULL;
    FILE *tmp = NULL, *fm = NULL;
    size_t folded_len = 0, tar_len = 0;
    void *tar = NULL;
    ph_collapse *col = NULL;
    ph_collapse_opts co;
    const ph_collapse_stats *cs;
    text stderr_text = { .len = 0 };
    long code = -1;
    int timed_out = 0, rc = -1;

    if (ph_run_engine(r, &e, err) < 0 || ph_image_ensure_tools(e, r->data_dir, &r->profiles, &tools, err) < 0)
        return -1;
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, service);
    ph_info("%s: converting the %s run (%s, in the tools image)", service, mode, conv->command.v[0]);

    /* The run's files, out of the stopped container and into a temp file. */
    if ((tmp = temp_file(r, service, err)) == NULL)
        goto out;
    {
        sink s = { tmp, err };

        if (ph_engine_archive_get(e, id, out, file_cb, &s, err) < 0 || fflush(tmp) != 0)
            goto out;
        rewind(tmp);
    }

    /* The converter: the profile's command on a copy at the same path. */
    argv = json_array();
    for (size_t i = 0; i < conv->command.n; i++) {
        char *w = ph_profile_expand(conv->command.v[i], out, service, mode, run_id);

        if (w == NULL || json_array_append_new(argv, json_string(w)) < 0) {
            free(w);
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
        free(w);
    }
    labels = json_pack("{s:s, s:s, s:s}", PH_LABEL_PROJECT, r->compose->project, PH_LABEL_SERVICE, service,
                       PH_LABEL_CONVERT, id);
    /* No network; json-file logs whatever the daemon's default, so the
     * output can be read back. */
    cfg = json_pack("{s:s, s:O, s:[], s:s, s:s, s:o, s:{s:s, s:{s:s, s:{}}}}", "Image", tools, "Entrypoint", argv,
                    "Cmd", "User", "0", "WorkingDir", out, "Labels", labels, "HostConfig", "NetworkMode", "none",
                    "LogConfig", "Type", "json-file", "Config");
    if (cfg == NULL) {
        ph_fail(err, ENOMEM, "build the converter's configuration");
        goto out;
    }
    if (ph_engine_container_create(e, NULL, cfg, &cid, err) < 0 ||
        ph_engine_archive_put(e, cid, PH_CONTAINER_OUT, file_read_cb, tmp, -1, err) < 0 ||
        ph_engine_container_start(e, cid, err) < 0 ||
        ph_engine_container_wait(e, cid, CONVERT_TIMEOUT_S, &code, &timed_out, err) < 0)
        goto out;
    if (timed_out) {
        ph_fail(err, 0, "`%s` did not finish within %ld s", conv->command.v[0], CONVERT_TIMEOUT_S);
        goto out;
    }
    if (code != 0) {
        ph_engine_container_output(e, cid, 2, text_cb, &stderr_text, NULL);
        ph_fail(err, 0, "`%s` failed with status %ld: %s", conv->command.v[0], code,
                stderr_text.len ? stderr_text.buf : "(it said nothing)");
        goto out;
    }

    /* Its output, collapsed as it arrives: memory is the distinct stacks. */
    ph_collapse_opts_init(&co);
    if (fetch_maps(r, e, id, out, service, maps, sizeof maps, err) < 0)
        goto out;
    co.map_dir = maps[0] ? maps : NULL;
    co.jit_named = 1; /* a frame named from a perf map is JIT code: its kind, _[j] */
    if ((col = ph_collapse_new(&co, err)) == NULL)
        goto out;
    {
        collapse_sink s = { col, err };

        if (ph_engine_container_output(e, cid, 1, collapse_cb, &s, err) < 0 || ph_collapse_finish(col, err) < 0)
            goto out;
    }
    cs = ph_collapse_get_stats(col);
    if (cs->samples == 0) {
        ph_fail(err, 0, "`%s` gave no samples (%zu lines read)", conv->command.v[0], cs->lines);
        goto out;
    }
    if ((fm = open_memstream(&folded, &folded_len)) == NULL) {
        ph_fail(err, errno, "allocate");
        goto out;
    }
    rc = ph_collapse_write(col, fm, err);
    fclose(fm);
    fm = NULL;
    if (rc < 0)
        goto out;
    rc = -1;
    snprintf(title, sizeof title, "%s (%s, run %s)", service, mode, run_id ? run_id : "?");
    snprintf(dir, sizeof dir, "%s/%s/.convert-XXXXXX", r->opts.out_dir, service);
    if (mkdtemp(dir) == NULL) {
        dir[0] = '\0';
        ph_fail(err, errno, "create a temp dir in `%s/%s`", r->opts.out_dir, service);
        goto out;
    }
    if (outputs_tar(dir, folded, folded_len, title, conv, cs, &tar, &tar_len, err) < 0)
        goto out;
    {
        FILE *in = fmemopen(tar, tar_len, "r");

        if (in == NULL) {
            ph_fail(err, errno, "allocate");
            goto out;
        }
        rc = ph_engine_archive_put(e, id, out, file_read_cb, in, (long long)tar_len, err);
        fclose(in);
        if (rc < 0)
            goto out;
        rc = -1;
    }
    ph_info("%s: %zu samples of %s, %zu distinct stacks: stacks.folded, flamegraph.svg, profile.pb.gz", service,
            cs->samples, cs->event, cs->stacks);
    rc = 0;
out:
    if (dir[0] != '\0') {
        char path[PATH_MAX];

        for (size_t i = 0; i < PH_ARRAY_LEN(outputs); i++) {
            snprintf(path, sizeof path, "%s/%s", dir, outputs[i]);
            unlink(path);
        }
        rmdir(dir);
    }
    if (maps[0] != '\0')
        ph_fs_remove_tree_at(AT_FDCWD, maps, NULL);
    if (cid != NULL)
        ph_engine_container_remove(e, cid, 1, NULL);
    if (tmp != NULL)
        fclose(tmp);
    ph_collapse_free(col);
    json_decref(cfg);
    json_decref(argv);
    free(folded);
    free(tar);
    free(tools);
    free(cid);
    return rc;
}

void
ph_run_convert(ph_run *r, json_t *c, const ph_profile *p)
{
    const char *service = ph_run_label(c, PH_LABEL_SERVICE);
    const ph_profile_convert *conv;
    ph_error_t err = NULL;
    ph_stage *st;

    if (p == NULL)
        return;
    conv = ph_run_label(c, PH_LABEL_ATTACHED) ? &p->attach.convert : &p->convert;
    if (conv->command.n == 0)
        return;
    st = ph_stage_beginf("profiler", 0, "convert what %s wrote", p->name);
    if (ph_run_stage_done(st, convert(r, c, conv, &err), &err) == 0)
        return;
    ph_warn("%s: the conversion failed: %s", service, err->msg);
    ph_warn("%s: what %s wrote is collected as it is; convert by hand with `%s`, then `profharness collapse "
            "perf` and `profharness flamegraph`", service, p->name, conv->command.v[0]);
    ph_error_free(&err);
}
