/* ph_run_convert.c - after a run, before collection: a profile's
 * `convert` (perf: `perf script`, then our own collapser, then the
 * flamegraph SVG and pprof, beside perf.data).
 *
 *   the profiled container has exited (stop waited for it) ->
 *   its /opt/profiling/<service> is streamed out through the archive
 *   endpoint into a temp file on the host -> a converter container of the
 *   tools image gets it at the same path (so the profile's command reads
 *   {out} as the run wrote it) -> runs the command, its stdout into a
 *   file there -> that file comes back through the archive endpoint (not
 *   the logs endpoint: perf script writes tens of MB, which the Engine's
 *   json-file logs carry line by line, seconds per run) and goes through
 *   the collapser -> with `symfs`, the files whose frames stayed unnamed
 *   and that have no GNU build-id (perf's build-id cache cannot hold
 *   them: a static Go binary) are copied from the profiled container
 *   into {out}/<symfs> and the converter runs once more with them ->
 *   stacks.folded, flamegraph.svg and profile.pb.gz are made here ->
 *   copied into the profiled container's {out}, beside what the profiler
 *   wrote (and the symfs files) -> the converter is removed.  Collection
 *   then takes everything together, with the profile's `latest` links.
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
#include <sys/stat.h>
#include <unistd.h>

#include "ph_collapse.h"
#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_flame.h"
#include "ph_timing.h"
#include "ph_image.h"
#include "ph_lines.h"
#include "ph_log.h"
#include "ph_pprof.h"
#include "ph_tar.h"
#include "ph_util.h"

#define CONVERT_TIMEOUT_S 3600L
#define CONVERT_STDERR_MAX 2048
/* In the converter: where the command's stdout goes, read back through
 * the archive endpoint. */
#define CONVERT_STDOUT_DIR "/tmp"
#define CONVERT_STDOUT_NAME "profharness-convert.out"
/* An ELF's notes are read from its first bytes: a build-id note is in
 * the first page of what linkers write. */
#define ELF_HEAD_MAX (64u << 10)

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

static int
collapse_chunk_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_collapse_feed(ctx, buf, len, err);
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
fetch_maps(ph_run *r, ph_backend *b, const char *id, const char *out, const char *service, char *maps, size_t len,
           ph_error_t *err)
{
    char path[PATH_MAX], dir[PATH_MAX];
    ph_tar_extract *x;
    int there = 0, rc;

    maps[0] = '\0';
    snprintf(path, sizeof path, "%s/%s", out, PH_PERF_MAPS);
    if (b->ops->archive_stat(b, id, path, &there, err) < 0)
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

        rc = b->ops->archive_get(b, id, path, extract_cb, ud, err);
    }
    if (rc == 0)
        rc = ph_tar_extract_finish(x, NULL, err);
    ph_tar_extract_free(x);
    return rc;
}

/* ---- the converter, run and read ------------------------------------- */

/* What each pass of a conversion shares. */
typedef struct conv_ctx {
    ph_run *r;
    ph_backend *b;
    const char *tools, *id, *service, *mode, *run_id;
    const char *out;  /* {out}: the run's files, at the same path */
    const char *work; /* the host's temp dir */
    FILE *tmp;        /* the run's files, as a tar */
    ph_collapse_opts co;
} conv_ctx;

static int
put_buffer(ph_backend *b, const char *cid, const char *path, const void *data, size_t len, ph_error_t *err)
{
    FILE *in = fmemopen((void *)data, len, "r");
    int rc;

    if (in == NULL)
        return ph_fail(err, errno, "allocate");
    rc = b->ops->archive_put(b, cid, path, file_read_cb, in, (long long)len, err);
    fclose(in);
    return rc;
}

/* One pass: a converter container of the tools image runs COMMAND on a
 * copy of the run's files at the same path (and EXTRA, a tar put into
 * {out} after them, when not NULL), its stdout into a file there; that
 * file comes back through the archive endpoint into WORK/script and is
 * collapsed: *OUT, a new collapser.  The container is removed. */
static int
converter_pass(conv_ctx *x, const ph_strv *command, const void *extra, size_t extra_len, ph_collapse **out,
               ph_error_t *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    text stderr_text = { .len = 0 };
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    ph_tar_extract *tx = NULL;
    ph_collapse *col = NULL;
    char *cid = NULL;
    long code = -1;
    int timed_out = 0, rc = -1;

    *out = NULL;
    /* sh is the tools image's.  No network; logs the orchestrator can
     * read back whatever its default, so its stderr can be read. */
    spec.image = x->tools;
    spec.set_entrypoint = spec.set_cmd = 1;
    spec.network_none = 1;
    spec.readable_logs = 1;
    if (ph_strv_push(&spec.entrypoint, "/bin/sh") < 0 || ph_strv_push(&spec.entrypoint, "-c") < 0 ||
        ph_strv_push(&spec.entrypoint, "exec \"$@\" > " CONVERT_STDOUT_DIR "/" CONVERT_STDOUT_NAME) < 0 ||
        ph_strv_push(&spec.entrypoint, "sh") < 0 || (spec.user = strdup("0")) == NULL ||
        (spec.workdir = strdup(x->out)) == NULL || ph_kvv_set(&spec.labels, PH_LABEL_PROJECT, x->r->compose->project) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_SERVICE, x->service) < 0 || ph_kvv_set(&spec.labels, PH_LABEL_CONVERT, x->id) < 0)
        goto nomem;
    for (size_t i = 0; i < command->n; i++) {
        char *w = ph_profile_expand(command->v[i], x->out, x->service, x->mode, x->run_id);
        int bad = w == NULL || ph_strv_push(&spec.entrypoint, w) < 0;

        free(w);
        if (bad)
            goto nomem;
    }
    rewind(x->tmp);
    if (x->b->ops->create(x->b, &spec, &cid, err) < 0 ||
        x->b->ops->archive_put(x->b, cid, PH_CONTAINER_OUT, file_read_cb, x->tmp, -1, err) < 0 ||
        (extra != NULL && put_buffer(x->b, cid, x->out, extra, extra_len, err) < 0) ||
        x->b->ops->start(x->b, cid, err) < 0 ||
        x->b->ops->wait(x->b, cid, CONVERT_TIMEOUT_S, &code, &timed_out, err) < 0)
        goto out;
    if (timed_out) {
        ph_fail(err, 0, "`%s` did not finish within %ld s", command->v[0], CONVERT_TIMEOUT_S);
        goto out;
    }
    if (code != 0) {
        x->b->ops->output(x->b, cid, 2, text_cb, &stderr_text, NULL);
        ph_fail(err, 0, "`%s` failed with status %ld: %s", command->v[0], code,
                stderr_text.len ? stderr_text.buf : "(it said nothing)");
        goto out;
    }
    snprintf(dir, sizeof dir, "%s/script", x->work);
    ph_fs_remove_tree_at(AT_FDCWD, dir, NULL);
    if (mkdir(dir, 0700) < 0) {
        ph_fail(err, errno, "create `%s`", dir);
        goto out;
    }
    if ((tx = ph_tar_extract_new(dir, 0, &x->r->opts.collect, err)) == NULL)
        goto out;
    {
        void *ud[2] = { tx, err };

        rc = x->b->ops->archive_get(x->b, cid, CONVERT_STDOUT_DIR "/" CONVERT_STDOUT_NAME, extract_cb, ud, err);
    }
    if (rc == 0)
        rc = ph_tar_extract_finish(tx, NULL, err);
    if (rc < 0)
        goto out;
    rc = -1;
    snprintf(path, sizeof path, "%s/%s", dir, CONVERT_STDOUT_NAME);
    if ((col = ph_collapse_new(&x->co, err)) == NULL)
        goto out;
    if (ph_read_file_chunks(path, collapse_chunk_cb, col, NULL, err) < 0 || ph_collapse_finish(col, err) < 0) {
        ph_collapse_free(col);
        goto out;
    }
    ph_fs_remove_tree_at(AT_FDCWD, dir, NULL);
    *out = col;
    rc = 0;
    goto out;
nomem:
    ph_fail(err, ENOMEM, "build the converter's spec");
out:
    ph_tar_extract_free(tx);
    if (cid != NULL)
        x->b->ops->remove(x->b, cid, 1, NULL);
    ph_workload_spec_clear(&spec);
    free(cid);
    return rc;
}

/* ---- files perf had no copy of --------------------------------------- */

/* A path perf named a file by, fit to be made under a directory: absolute,
 * no empty, `.` or `..` component, under PATH_MAX. */
static int
clean_abs_path(const char *p)
{
    if (p[0] != '/' || strlen(p) >= PATH_MAX - 64)
        return 0;
    for (const char *c = p + 1; *c;) {
        size_t n = strcspn(c, "/");

        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        c += n;
        if (*c == '/')
            c++;
        if (*c == '\0' && c[-1] == '/')
            return 0;
    }
    return 1;
}

/* The directory REL (components of a clean path, up to LEN bytes) under
 * BASE, made as needed, no link followed: its fd, or -1 and *err. */
static int
mkdirs_at(int base, const char *rel, size_t len, ph_error_t *err)
{
    int fd = dup(base);

    if (fd < 0)
        return ph_fail(err, errno, "dup");
    for (size_t i = 0; i < len;) {
        char name[NAME_MAX + 1];
        size_t n = strcspn(rel + i, "/");
        int next;

        if (n > len - i)
            n = len - i;
        if (n == 0) {
            i++;
            continue;
        }
        if (n > NAME_MAX) {
            close(fd);
            return ph_fail(err, ENAMETOOLONG, "a component of `%.*s`", (int)len, rel);
        }
        memcpy(name, rel + i, n);
        name[n] = '\0';
        if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
            ph_fail(err, errno, "create `%s`", name);
            close(fd);
            return -1;
        }
        next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (next < 0)
            return ph_fail(err, errno, "open `%s`", name);
        fd = next;
        i += n;
    }
    return fd;
}

/* The file PATH of container ID, into SYMFS (an open directory) at its
 * own path, when it is an ELF program with no GNU build-id (its first
 * bytes are read first, so a file perf's cache had, and still named
 * nothing of, is not copied): 1; 0 when not (not there, not a regular
 * file, a build-id, not ELF); -1 and *err on a fault. */
static int
fetch_unnamed(ph_run *r, ph_backend *b, const char *id, int symfs, const char *path, ph_error_t *err)
{
    const char *base = strrchr(path, '/') + 1;
    unsigned char *head = malloc(ELF_HEAD_MAX);
    ph_tar_extract *x = NULL;
    ph_tar_peek_t t;
    int dirfd = -1, rc = -1;
    struct stat st;

    if (head == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if ((rc = ph_image_file_head(b, id, path, &t, head, ELF_HEAD_MAX, err)) < 0) {
        free(head);
        return rc == -1 ? 0 : -1;
    }
    /* an ELF whose notes lie past what was read is copied (perf will
     * see); what is not ELF is not */
    rc = t.type == PH_TAR_PEEK_FILE ? ph_image_elf_build_id(head, t.len) : 1;
    if (rc == -1 && (t.len < 4 || memcmp(head, "\177ELF", 4) != 0))
        rc = 1;
    free(head);
    if (rc == 1)
        return 0;
    rc = -1;
    if ((dirfd = mkdirs_at(symfs, path + 1, (size_t)(base - path - 1), err)) < 0)
        return -1;
    if ((x = ph_tar_extract_new_at(dirfd, 0, &r->opts.collect, err)) == NULL)
        goto out;
    {
        void *ud[2] = { x, err };

        rc = b->ops->archive_get(b, id, path, extract_cb, ud, err);
    }
    if (rc == 0)
        rc = ph_tar_extract_finish(x, NULL, err);
    if (rc < 0)
        goto out;
    /* what came is a regular file (a link there would be nothing to read) */
    rc = fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) ? 1 : 0;
    if (rc == 0)
        unlinkat(dirfd, base, 0);
out:
    ph_tar_extract_free(x);
    close(dirfd);
    return rc;
}

/* The files COL left unnamed, those without a build-id fetched from
 * container ID into WORK/out/<symfs>: how many, or -1 and *err. */
static int
fetch_symfs(ph_run *r, ph_backend *b, const char *id, const char *service, const ph_profile_convert *conv,
            const ph_collapse *col, const char *work, ph_error_t *err)
{
    char dir[PATH_MAX];
    int symfs = -1, kept = 0;

    snprintf(dir, sizeof dir, "%s/out/%s", work, conv->symfs);
    for (size_t i = 0; i < ph_collapse_n_unnamed(col); i++) {
        const char *path = ph_collapse_unnamed(col, i);
        int got;

        if (!clean_abs_path(path))
            continue;
        if (symfs < 0) {
            if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return ph_fail(err, errno, "create `%s`", dir);
            if ((symfs = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                return ph_fail(err, errno, "open `%s`", dir);
        }
        if ((got = fetch_unnamed(r, b, id, symfs, path, err)) < 0) {
            close(symfs);
            return -1;
        }
        if (got) {
            char esc[PATH_MAX];

            ph_info("%s: perf had no copy of `%s` (no GNU build-id): converting again with the file from the "
                    "service's container, kept in %s/", service, ph_escape(esc, sizeof esc, path), conv->symfs);
            kept++;
        }
    }
    if (symfs >= 0)
        close(symfs);
    return kept;
}

/* ---- the conversion ---------------------------------------------------- */

/* C's run converted: its files read from and the outputs put back
 * through SRC (C's backend), the converter run on R's own. */
static int
convert(ph_run *r, ph_backend *src, const ph_workload *c, const ph_profile_convert *conv, ph_error_t *err)
{
    const char *id = c->id;
    const char *service = c->service, *mode = c->mode;
    const char *run_id = c->run;
    ph_backend *b;
    char out[PATH_MAX], title[256], work[PATH_MAX] = "", dir[PATH_MAX], maps[PATH_MAX] = "";
    char *tools = NULL, *folded = NULL;
    FILE *tmp = NULL, *fm = NULL;
    size_t folded_len = 0, tar_len = 0;
    void *tar = NULL;
    ph_collapse *col = NULL;
    const ph_collapse_stats *cs;
    conv_ctx x;
    int rc = -1;

    if (ph_run_backend(r, &b, err) < 0 || ph_image_ensure_tools(b, r->data_dir, &r->profiles, &tools, err) < 0)
        return -1;
    if (src == NULL)
        src = b;
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, service);
    ph_info("%s: converting the %s run (%s, in the tools image)", service, mode, conv->command.v[0]);

    /* The run's files, out of the stopped container and into a temp file. */
    if ((tmp = temp_file(r, service, err)) == NULL)
        goto out;
    {
        sink s = { tmp, err };

        if (src->ops->archive_get(src, id, out, file_cb, &s, err) < 0 || fflush(tmp) != 0)
            goto out;
    }
    /* Beside where the run will land: WORK/out (what goes back into the
     * container, then the run), WORK/script (the command's output). */
    snprintf(work, sizeof work, "%s/%s/.convert-XXXXXX", r->opts.out_dir, service);
    if (mkdtemp(work) == NULL) {
        work[0] = '\0';
        ph_fail(err, errno, "create a temp dir in `%s/%s`", r->opts.out_dir, service);
        goto out;
    }
    snprintf(dir, sizeof dir, "%s/out", work);
    if (mkdir(dir, 0755) < 0) {
        ph_fail(err, errno, "create `%s`", dir);
        goto out;
    }
    if (fetch_maps(r, src, id, out, service, maps, sizeof maps, err) < 0)
        goto out;
    x = (conv_ctx){ .r = r, .b = b, .tools = tools, .id = id, .service = service, .mode = mode, .run_id = run_id,
                    .out = out, .work = work, .tmp = tmp };
    ph_collapse_opts_init(&x.co);
    x.co.map_dir = maps[0] ? maps : NULL;
    x.co.jit_named = 1; /* a frame named from a perf map is JIT code: its kind, _[j] */
    if (converter_pass(&x, &conv->command, NULL, 0, &col, err) < 0)
        goto out;

    /* Files perf had no copy of: given to it, and its second command. */
    if (conv->symfs != NULL && c->attached == NULL && ph_collapse_n_unnamed(col) > 0) {
        int kept = fetch_symfs(r, src, id, service, conv, col, work, err);

        if (kept < 0)
            goto out;
        if (kept > 0) {
            ph_collapse *again = NULL;

            if (ph_tar_context_build(dir, NULL, 0, 1u << 30, &tar, &tar_len, err) < 0 ||
                converter_pass(&x, &conv->symfs_command, tar, tar_len, &again, err) < 0)
                goto out;
            ph_collapse_free(col);
            col = again;
            free(tar);
            tar = NULL;
        }
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
    if (outputs_tar(dir, folded, folded_len, title, conv, cs, &tar, &tar_len, err) < 0 ||
        put_buffer(src, id, out, tar, tar_len, err) < 0)
        goto out;
    ph_info("%s: %zu samples of %s, %zu distinct stacks: stacks.folded, flamegraph.svg, profile.pb.gz", service,
            cs->samples, cs->event, cs->stacks);
    rc = 0;
out:
    if (work[0] != '\0')
        ph_fs_remove_tree_at(AT_FDCWD, work, NULL);
    if (maps[0] != '\0')
        ph_fs_remove_tree_at(AT_FDCWD, maps, NULL);
    if (tmp != NULL)
        fclose(tmp);
    ph_collapse_free(col);
    free(folded);
    free(tar);
    free(tools);
    return rc;
}

void
ph_run_convert(ph_run *r, const ph_workload *c, const ph_profile *p)
{
    ph_run_convert_from(r, NULL, c, p);
}

void
ph_run_convert_from(ph_run *r, ph_backend *src, const ph_workload *c, const ph_profile *p)
{
    const char *service = c->service;
    const ph_profile_convert *conv;
    ph_error_t err = NULL;
    ph_stage *st;

    if (p == NULL)
        return;
    conv = c->attached ? &p->attach.convert : &p->convert;
    if (conv->command.n == 0)
        return;
    st = ph_stage_beginf("profiler", 0, "convert what %s wrote", p->name);
    if (ph_run_stage_done(st, convert(r, src, c, conv, &err), &err) == 0)
        return;
    ph_warn("%s: the conversion failed: %s", service, err->msg);
    ph_warn("%s: what %s wrote is collected as it is; convert by hand with `%s`, then `profharness collapse "
            "perf` and `profharness flamegraph`", service, p->name, conv->command.v[0]);
    ph_error_free(&err);
}
