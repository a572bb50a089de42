/* ph_run_convert.c - after a run, before collection: a profile's
 * `convert` (perf: `perf script`, then our own collapser, then the
 * flamegraph SVG and pprof, beside perf.data).
 *
 *   the profiled container has exited (stop waited for it) ->
 *   the files the converter reads (those its command names under {out}:
 *   perf.data and perf's build-id cache, or an attach's symfs/; never
 *   anything else the container left there) are streamed out through the
 *   archive endpoint and extracted into a temp dir beside the run, under
 *   the collection's own limits (max_bytes, max_entries, min_free, as the
 *   flags, the profile and the defaults set them, counted over all of
 *   them), so nothing is written past a limit and holes stay holes ->
 *   a converter container of the tools image gets them at the same path
 *   (so the profile's command reads {out} as the run wrote it), streamed
 *   from there without another copy -> the command runs in it (exec),
 *   its stderr kept to its first 2 KiB there, its stdout streamed to the
 *   collapser as it comes: nothing is written to disk on either side, at
 *   most max_bytes are read (past that the conversion ends and says so),
 *   and it has 300 s and a second per MiB of its input, at most an hour
 *   -> with `symfs`, the files whose frames stayed unnamed and that have
 *   no GNU build-id (perf's build-id cache cannot hold them: a static Go
 *   binary) are copied from the profiled container (under the same
 *   limits) into {out}/<symfs> and the converter runs once more with them
 *   -> stacks.folded, flamegraph.svg and profile.pb.gz are made here ->
 *   copied into the profiled container's {out}, beside what the profiler
 *   wrote (and the symfs files) -> the converter is removed.  Collection
 *   then takes everything together, with the profile's `latest` links.
 *
 * Why there: the converter is the tools image's perf, the same one a run
 * without a package manager recorded with, whatever the host has (it may
 * have no perf at all: macOS, a remote Engine), and the binaries to read
 * symbols from are in the run's files (perf's build-id cache, or the
 * files an attach copied), not on the host.  Why exec: the container's
 * own output goes to its log (seconds per tens of MB of lines) and to a
 * file in its layer would fill the Engine's disk (a 2.5 MB perf.data of
 * 200-deep stacks of 4 KiB names made 1.2 GB of text); an exec's output
 * is handed over as it is written and stops being written when it is
 * not read.
 *
 * A conversion never costs the run: on any failure the profiler's own
 * output is collected as it is and a warning says what failed and how to
 * convert by hand.  The collapser is harness/flame/ph_collapse (the
 * `profharness collapse perf` command).
 */
#include "ph_run_int.h"
#include "ph_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "ph_log.h"
#include "ph_pprof.h"
#include "ph_tar.h"
#include "ph_util.h"

/* The command's time: a base, a second per MiB of its input, a ceiling. */
#define CONVERT_TIME_BASE_S 300L
#define CONVERT_TIME_MAX_S 3600L
#define CONVERT_STDERR_MAX 2048
#define STR_(v) #v
#define STR(v) STR_(v)
/* In the converter: the command's stderr (its first CONVERT_STDERR_MAX
 * bytes) and status, read back when it fails. */
#define CONVERT_ERR "/tmp/profharness-convert.err"
#define CONVERT_STATUS "/tmp/profharness-convert.status"
/* An ELF's notes are read from its first bytes: a build-id note is in
 * the first page of what linkers write. */
#define ELF_HEAD_MAX (64u << 10)
/* Inputs a command names under {out}, at most. */
#define INPUTS_MAX 16

/* What the exec runs: $1 the time limit, then the command, its stdout
 * the exec's (fd 3), its stderr cut to its first bytes and the rest
 * drained (a command that says much is not killed for it), its status
 * the exec's. */
static const char run_script[] =
    "t=$1; shift; exec 3>&1; "
    "{ timeout \"$t\" \"$@\" 2>&1 >&3 3>&-; echo $? > " CONVERT_STATUS "; } | "
    "{ head -c " STR(CONVERT_STDERR_MAX) " > " CONVERT_ERR "; cat > /dev/null; } 3>&-; "
    "exit \"$(cat " CONVERT_STATUS ")\"";

typedef struct text {
    char buf[CONVERT_STDERR_MAX + 1];
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

static int
extract_cb(void *ud, const char *data, size_t len)
{
    ph_tar_extract *x = ((void **)ud)[0];
    ph_error_t *err = ((void **)ud)[1];

    return ph_tar_extract_feed(x, data, len, err);
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

/* The tree DIR into directory PATH of container CID, streamed. */
static int
put_dir(ph_backend *b, const char *cid, const char *path, const char *dir, ph_error_t *err)
{
    ph_tar_stream *ts = ph_tar_stream_new(dir, NULL, 0, err);
    int rc;

    if (ts == NULL)
        return -1;
    rc = b->ops->archive_put(b, cid, path, ph_tar_stream_read, ts, -1, err);
    if (ph_tar_stream_finish(ts, err) < 0)
        rc = -1;
    ph_tar_stream_free(ts);
    return rc;
}

/* ---- what a conversion shares ------------------------------------------ */

typedef struct conv_ctx {
    ph_run *r;
    ph_backend *b;    /* the converter's */
    ph_backend *src;  /* the run's container's */
    const char *tools, *id, *service, *mode, *run_id;
    const char *out;  /* {out}: the run's files, at the same path */
    char in[PATH_MAX]; /* the host's copy of the converter's input: in/<service>/... */
    ph_collapse_opts co;
    /* The collection's limits, over everything taken out of the run's
     * container for the conversion. */
    ph_rundir_limits lim;
    uint64_t max_bytes, max_entries; /* resolved: a default as it is */
    uint64_t bytes, entries;         /* taken so far (files' full sizes) */
    long time_s;                     /* the command's */
} conv_ctx;

/* Past limit WHICH with what was taken so far: the error says so as a
 * collection over it would, with where the limit was set and the hint. */
static int
over_limit(conv_ctx *x, ph_tar_limit which, const char *path, uint64_t value, ph_error_t *err)
{
    char v[32];

    if (which == PH_TAR_LIMIT_BYTES) {
        ph_error_free(err);
        ph_fail(err, 0, "`%s` brings the converter's input, holes included, to %" PRIu64
                " bytes: over the limit `max_bytes` of %s", path, x->bytes, ph_tar_size_text(x->max_bytes, v));
        (*err)->errnum = EFBIG;
        value = x->max_bytes;
    } else if (which == PH_TAR_LIMIT_ENTRIES) {
        ph_error_free(err);
        ph_fail(err, 0, "`%s` brings the converter's input to %" PRIu64 " entries: over the limit "
                "`max_entries` of %" PRIu64, path, x->entries, x->max_entries);
        (*err)->errnum = EMLINK;
        value = x->max_entries;
    } /* min_free: the extraction's own words (what was written, what is free) */
    return ph_rundir_limit_hint(&x->lim, which, value, "stop", x->service, x->id, err);
}

/* PATH of the run's container (a file or a tree), extracted into the
 * directory DIRFD (STRIP leading components dropped) under what is left
 * of the limits: the bytes and entries it brought are counted.  Holes
 * stay holes; a member over max_bytes is refused at its header, before
 * any of it is written; free space is looked at as it is written. */
static int
take(conv_ctx *x, const char *path, int dirfd, int strip, ph_error_t *err)
{
    ph_tar_limits left = { .min_free_bytes = x->lim.lim.min_free_bytes };
    ph_tar_stats st = { 0 };
    ph_tar_extract *tx;
    int rc;

    /* 0 would be the default: 1 lets one byte through, which the count
     * below then refuses */
    left.max_bytes = x->max_bytes == PH_TAR_NO_LIMIT ? PH_TAR_NO_LIMIT
                     : x->bytes < x->max_bytes        ? x->max_bytes - x->bytes
                                                      : 1;
    left.max_entries = x->max_entries == PH_TAR_NO_LIMIT ? PH_TAR_NO_LIMIT
                       : x->entries < x->max_entries      ? x->max_entries - x->entries
                                                          : 1;
    if ((tx = ph_tar_extract_new_at(dirfd, strip, &left, err)) == NULL)
        return -1;
    {
        void *ud[2] = { tx, err };

        rc = x->src->ops->archive_get(x->src, x->id, path, extract_cb, ud, err);
    }
    if (ph_tar_extract_finish(tx, &st, err) < 0)
        rc = -1;
    ph_tar_extract_free(tx);
    x->bytes += st.size;
    x->entries += st.entries;
    if (st.limit != PH_TAR_LIMIT_NONE)
        return over_limit(x, st.limit, path, st.limit_value, err);
    if (rc == 0 && x->max_bytes != PH_TAR_NO_LIMIT && x->bytes > x->max_bytes)
        return over_limit(x, PH_TAR_LIMIT_BYTES, path, 0, err);
    if (rc == 0 && x->max_entries != PH_TAR_NO_LIMIT && x->entries > x->max_entries)
        return over_limit(x, PH_TAR_LIMIT_ENTRIES, path, 0, err);
    return rc;
}

/* take() into the directory DIR. */
static int
take_into(conv_ctx *x, const char *path, const char *dir, int strip, ph_error_t *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc;

    if (fd < 0)
        return ph_fail(err, errno, "open `%s`", dir);
    rc = take(x, path, fd, strip, err);
    close(fd);
    return rc;
}

/* The names under {out} that COMMAND's words name ("{out}/perf.data",
 * "--symfs={out}/symfs": perf.data, symfs), once each, into NAMES (at
 * most INPUTS_MAX); 0 names when a word names {out} itself (or an input
 * cannot be told): then the converter gets all of it. */
static size_t
inputs_of(const ph_strv *command, char names[][NAME_MAX + 1])
{
    static const char mark[] = "{out}";
    size_t n = 0;

    for (size_t i = 0; i < command->n; i++)
        for (const char *w = command->v[i]; (w = strstr(w, mark)) != NULL;) {
            const char *name = w + sizeof mark - 1, *end;
            size_t len;
            int seen = 0;

            if (*name != '/')
                return 0; /* {out} itself */
            name++;
            end = name + strcspn(name, "/ \"'");
            len = (size_t)(end - name);
            if (len == 0 || len > NAME_MAX || (len == 1 && name[0] == '.') || (len == 2 && memcmp(name, "..", 2) == 0) ||
                memchr(name, '{', len) != NULL)
                return 0;
            for (size_t k = 0; k < n; k++)
                seen |= strlen(names[k]) == len && memcmp(names[k], name, len) == 0;
            if (!seen) {
                if (n == INPUTS_MAX)
                    return 0;
                memcpy(names[n], name, len);
                names[n++][len] = '\0';
            }
            w = end;
        }
    return n;
}

/* The converter's input, from the run's container into X->in/<service>:
 * what COMMAND names (a name the run does not have is left out), or all
 * of {out}.  Said in one line.  *NONE: COMMAND names inputs and the run
 * has none of them. */
static int
take_input(conv_ctx *x, const ph_strv *command, int *none, ph_error_t *err)
{
    char names[INPUTS_MAX][NAME_MAX + 1], path[PATH_MAX], dir[PATH_MAX], said[512] = "";
    size_t n = inputs_of(command, names), used = 0;

    *none = 0;
    snprintf(dir, sizeof dir, "%s/%s", x->in, x->service);
    if (mkdir(dir, 0755) < 0)
        return ph_fail(err, errno, "create `%s`", dir);
    if (n == 0) { /* all of it: the archive of {out} names it as its first component */
        if (take_into(x, x->out, x->in, 0, err) < 0)
            return -1;
        ph_info("%s: the converter gets all of %s (%.1f MiB)", x->service, x->out, (double)x->bytes / 1048576);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        int there = 0;

        snprintf(path, sizeof path, "%s/%s", x->out, names[i]);
        if (x->src->ops->archive_stat(x->src, x->id, path, &there, err) < 0)
            return -1;
        if (!there)
            continue;
        if (take_into(x, path, dir, 0, err) < 0)
            return -1;
        if (used < sizeof said) /* a list cut short is still said */
            used += (size_t)snprintf(said + used, sizeof said - used, "%s%s", used ? ", " : "", names[i]);
    }
    *none = said[0] == '\0';
    ph_info("%s: the converter gets %s (%.1f MiB)", x->service, said[0] ? said : "nothing", (double)x->bytes / 1048576);
    return 0;
}

/* The maps the run carries ({out}/perf-maps/perf-<pid>.map) into MAPS
 * (made here) under the same limits; MAPS stays "" when the run has
 * none.  The collapser reads maps from there only: perf script names
 * /tmp/perf-<pid>.map, the container's path with the container's pid,
 * which on this host is some other program's file, or none. */
static int
take_maps(conv_ctx *x, const char *work, char *maps, size_t len, ph_error_t *err)
{
    char path[PATH_MAX];
    int there = 0;

    maps[0] = '\0';
    snprintf(path, sizeof path, "%s/%s", x->out, PH_PERF_MAPS);
    if (x->src->ops->archive_stat(x->src, x->id, path, &there, err) < 0)
        return -1;
    if (!there)
        return 0;
    snprintf(maps, len, "%s/maps", work);
    if (mkdir(maps, 0700) < 0) {
        ph_fail(err, errno, "create `%s`", maps);
        maps[0] = '\0';
        return -1;
    }
    return take_into(x, path, maps, 1, err);
}

/* ---- the converter, run and read ------------------------------------- */

/* The command's output, as it comes: into the collapser, at most
 * max_bytes of it. */
typedef struct script {
    conv_ctx *x;
    const char *what;
    ph_collapse *col;
    uint64_t bytes;
    int over;
    ph_error_t *err;
} script;

static int
script_cb(void *ud, const char *data, size_t len)
{
    script *s = ud;
    uint64_t max = s->x->max_bytes, room = max == PH_TAR_NO_LIMIT ? UINT64_MAX : max - s->bytes;
    char v[32];
    int sig;

    if ((sig = ph_interrupted()) != 0)
        return ph_interrupt_fail(s->err, sig);

    if (len > room) {
        s->over = 1;
        len = (size_t)room;
    }
    s->bytes += len;
    if (len > 0 && ph_collapse_feed(s->col, data, len, s->err) < 0)
        return -1;
    if (!s->over)
        return 0;
    ph_fail(s->err, 0, "the output of `%s` passed %s: over the limit `max_bytes` of %s", s->what,
            ph_tar_size_text(max, v), v);
    (*s->err)->errnum = EFBIG;
    ph_rundir_limit_hint(&s->x->lim, PH_TAR_LIMIT_BYTES, max, "stop", s->x->service, s->x->id, s->err);
    return -1;
}

/* One pass: a converter container of the tools image gets the input
 * (X->in, at / of the artifacts) and EXTRA (a dir put into {out} after
 * it, when not NULL), COMMAND runs in it, its output collapsed: *OUT, a
 * new collapser.  The container is removed. */
static int
converter_pass(conv_ctx *x, const ph_strv *command, const char *extra, ph_collapse **out, ph_error_t *err)
{
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    ph_strv argv = { 0 };
    script sc = { .x = x, .what = command->v[0], .err = err };
    char *cid = NULL, t[24], sleep_s[24];
    long code = -1;
    int rc = -1;

    *out = NULL;
    /* The container only waits (a while past the command's time, should
     * we be gone); the command is an exec in it.  No network. */
    snprintf(t, sizeof t, "%ld", x->time_s);
    snprintf(sleep_s, sizeof sleep_s, "%ld", x->time_s + 120);
    spec.image = x->tools;
    spec.set_entrypoint = spec.set_cmd = 1;
    spec.network_none = 1;
    if (ph_strv_push(&spec.entrypoint, "sleep") < 0 || ph_strv_push(&spec.entrypoint, sleep_s) < 0 ||
        (spec.user = strdup("0")) == NULL || (spec.workdir = strdup(x->out)) == NULL ||
        ph_kvv_set(&spec.labels, PH_LABEL_PROJECT, x->r->compose->project) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_SERVICE, x->service) < 0 || ph_kvv_set(&spec.labels, PH_LABEL_CONVERT, x->id) < 0 ||
        ph_strv_push(&argv, "/bin/sh") < 0 || ph_strv_push(&argv, "-c") < 0 || ph_strv_push(&argv, run_script) < 0 ||
        ph_strv_push(&argv, "sh") < 0 || ph_strv_push(&argv, t) < 0)
        goto nomem;
    for (size_t i = 0; i < command->n; i++) {
        char *w = ph_profile_expand(command->v[i], x->out, x->service, x->mode, x->run_id);
        int bad = w == NULL || ph_strv_push(&argv, w) < 0;

        free(w);
        if (bad)
            goto nomem;
    }
    if ((sc.col = ph_collapse_new(&x->co, err)) == NULL)
        goto out;
    if (x->b->ops->create(x->b, &spec, &cid, err) < 0 || put_dir(x->b, cid, PH_CONTAINER_OUT, x->in, err) < 0 ||
        (extra != NULL && put_dir(x->b, cid, x->out, extra, err) < 0) || x->b->ops->start(x->b, cid, err) < 0 ||
        x->b->ops->exec(x->b, cid, (const char *const *)argv.v, NULL, x->time_s + 60, script_cb, &sc, &code, err) < 0)
        goto out;
    if (code == 124) {
        ph_fail(err, 0, "`%s` did not finish within %ld s (%ld s and a second per MiB of its input, at most %ld s)",
                command->v[0], x->time_s, CONVERT_TIME_BASE_S, CONVERT_TIME_MAX_S);
        goto out;
    }
    if (code != 0) {
        const char *const cat[] = { "head", "-c", STR(CONVERT_STDERR_MAX), CONVERT_ERR, NULL };
        text said = { .len = 0 };
        long ignored;

        char esc[4 * CONVERT_STDERR_MAX + 1];

        x->b->ops->exec(x->b, cid, cat, NULL, 30, text_cb, &said, &ignored, NULL);
        /* what it said comes of the container's files: escaped */
        ph_fail(err, 0, "`%s` failed with status %ld: %s", command->v[0], code,
                said.len ? ph_escape(esc, sizeof esc, said.buf) : "(it said nothing)");
        goto out;
    }
    if (ph_collapse_finish(sc.col, err) < 0)
        goto out;
    *out = sc.col;
    sc.col = NULL;
    rc = 0;
    goto out;
nomem:
    ph_fail(err, ENOMEM, "build the converter's spec");
out:
    ph_collapse_free(sc.col);
    if (cid != NULL)
        x->b->ops->remove(x->b, cid, 1, NULL);
    ph_workload_spec_clear(&spec);
    ph_strv_free(&argv);
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

/* The file PATH of the run's container, into SYMFS (an open directory)
 * at its own path, when it is an ELF program with no GNU build-id (its
 * first bytes are read first, so a file perf's cache had, and still named
 * nothing of, is not copied), under what is left of the limits: 1; 0
 * when not (not there, not a regular file, a build-id, not ELF); -1 and
 * *err on a fault or over a limit. */
static int
fetch_unnamed(conv_ctx *x, int symfs, const char *path, ph_error_t *err)
{
    const char *base = strrchr(path, '/') + 1;
    unsigned char *head = malloc(ELF_HEAD_MAX);
    ph_tar_peek_t t;
    int dirfd = -1, rc = -1;
    struct stat st;

    if (head == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if ((rc = ph_image_file_head(x->src, x->id, path, &t, head, ELF_HEAD_MAX, err)) < 0) {
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
    if ((dirfd = mkdirs_at(symfs, path + 1, (size_t)(base - path - 1), err)) < 0)
        return -1;
    rc = take(x, path, dirfd, 0, err);
    /* what came is a regular file (a link there would be nothing to read) */
    if (rc == 0) {
        rc = fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) ? 1 : 0;
        if (rc == 0)
            unlinkat(dirfd, base, 0);
    }
    close(dirfd);
    return rc;
}

/* The files COL left unnamed, those without a build-id fetched from the
 * run's container into DIR (WORK/out/<symfs>): how many, or -1 and *err. */
static int
fetch_symfs(conv_ctx *x, const ph_profile_convert *conv, const ph_collapse *col, const char *dir, ph_error_t *err)
{
    int symfs = -1, kept = 0;

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
        if ((got = fetch_unnamed(x, symfs, path, err)) < 0) {
            close(symfs);
            return -1;
        }
        if (got) {
            char esc[PATH_MAX];

            ph_info("%s: perf had no copy of `%s` (no GNU build-id): converting again with the file from the "
                    "service's container, kept in %s/", x->service, ph_escape(esc, sizeof esc, path), conv->symfs);
            kept++;
        }
    }
    if (symfs >= 0)
        close(symfs);
    return kept;
}

/* ---- the outputs -------------------------------------------------------- */

/* convert.json: what the collapser saw (event, samples, the counts' unit),
 * for the report: the folded counts of cpu-clock are nanoseconds, not
 * samples. */
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
 * now); CONV NULL: the attached profiler's own stacks.folded (no
 * collapser, no convert.json, counts as samples), only the other two. */
static int
write_outputs(const char *dir, const char *folded, size_t folded_len, const char *title, const ph_profile_convert *conv,
              const ph_collapse_stats *cs, ph_error_t *err)
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
    snprintf(subtitle, sizeof subtitle, "%s %s%s", conv ? "perf" : "the attached profiler's", event,
             ns ? ", in nanoseconds of CPU" : "");
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
    if (rc < 0 || (conv != NULL && write_file(dir, "stacks.folded", folded, folded_len, err) < 0) ||
        write_file(dir, "profile.pb.gz", pb, pb_len, err) < 0 || write_file(dir, "flamegraph.svg", svg, svg_len, err) < 0 ||
        (conv != NULL && write_meta(dir, conv, cs, ns, err) < 0))
        rc = -1;
out:
    ph_folded_free(f);
    free(svg);
    free(pb);
    return rc;
}

/* ---- the conversion ---------------------------------------------------- */

/* An attached profiler that wrote stacks.folded and no pprof (ph-nodeinsp:
 * a Node's own profile, folded in the tools container): its SVG and pprof
 * drawn from it, into DIR and back into the container.  The stacks are
 * the container's: read under the conversion's limits, parsed as any
 * folded input.  2 when there is no such file (the profiler wrote all of
 * its outputs: the sampler in a JVM). */
static int
draw_folded(conv_ctx *x, const char *dir, const char *title, ph_error_t *err)
{
    char path[PATH_MAX], in[PATH_MAX];
    ph_collapse_stats cs = { 0 };
    char *stacks = NULL;
    size_t len = 0;
    int there = 0, rc;

    snprintf(path, sizeof path, "%s/profile.pb.gz", x->out);
    if (x->src->ops->archive_stat(x->src, x->id, path, &there, err) < 0)
        return -1;
    if (there)
        return 2;
    snprintf(path, sizeof path, "%s/stacks.folded", x->out);
    if (x->src->ops->archive_stat(x->src, x->id, path, &there, err) < 0)
        return -1;
    if (!there)
        return 2;
    snprintf(in, sizeof in, "%s/%s", x->in, x->service);
    if (take_into(x, path, in, 0, err) < 0)
        return -1;
    snprintf(in, sizeof in, "%s/%s/stacks.folded", x->in, x->service);
    if (ph_read_file(in, (size_t)x->max_bytes, 0, &stacks, &len, err) < 0)
        return -1;
    snprintf(cs.event, sizeof cs.event, "samples");
    rc = write_outputs(dir, stacks, len, title, NULL, &cs, err);
    free(stacks);
    if (rc < 0 || put_dir(x->src, x->id, x->out, dir, err) < 0)
        return -1;
    ph_info("%s: the attached profiler's stacks.folded drawn: flamegraph.svg, profile.pb.gz", x->service);
    return 0;
}

/* Where the collapser finds copies of the service's programs, to name a
 * stripped Go program from its own table (ph_collapse_opts.elf_dirs):
 * what COMMAND reads as a symfs or as perf's build-id cache under {out}
 * (host copies in X->in/<service>/), and FETCHED (the files `symfs`
 * fetches, NULL if none) into ROOTS (NULL-ended), their paths in BUF. */
#define ELF_ROOTS_MAX 4
static void
elf_roots(const conv_ctx *x, const ph_strv *command, const char *fetched, char buf[][PATH_MAX], const char **roots)
{
    size_t n = 0;

    for (size_t i = 0; i + 1 < command->n && n < ELF_ROOTS_MAX - 2; i++) {
        const char *v = command->v[i + 1];

        if ((strcmp(command->v[i], "--symfs") != 0 && strcmp(command->v[i], "--buildid-dir") != 0) ||
            strncmp(v, "{out}/", 6) != 0 || v[6] == '\0' || v[6] == '.' || strchr(v + 6, '/') != NULL)
            continue;
        snprintf(buf[n], PATH_MAX, "%s/%s/%s", x->in, x->service, v + 6);
        roots[n] = buf[n];
        n++;
    }
    if (fetched != NULL) {
        snprintf(buf[n], PATH_MAX, "%s", fetched);
        roots[n] = buf[n];
        n++;
    }
    roots[n] = NULL;
}

/* C's run converted under P's limits: its files read from and the outputs
 * put back through SRC (C's backend), the converter run on R's own.  0
 * converted; 1 when the command read the run whole but it held no sample
 * (a service never on a CPU where the profiler looks): nothing to draw, no
 * failure; 2 when an attached run holds none of the files the command
 * reads (its profiler wrote the outputs itself); -1 on error. */
static int
convert(ph_run *r, ph_backend *src, const ph_workload *c, const ph_profile *p, const ph_profile_convert *conv,
        ph_error_t *err)
{
    ph_backend *b;
    char out[PATH_MAX], title[256], work[PATH_MAX] = "", dir[PATH_MAX], sym[PATH_MAX], maps[PATH_MAX] = "";
    char *tools = NULL, *folded = NULL;
    char root_buf[ELF_ROOTS_MAX][PATH_MAX];
    const char *roots[ELF_ROOTS_MAX];
    FILE *fm = NULL;
    size_t folded_len = 0;
    ph_collapse *col = NULL;
    const ph_collapse_stats *cs;
    conv_ctx x;
    long per_mib;
    int rc = -1, none = 0;

    /* the converter is a workload of ours, made where images are (a
     * swarm makes no task one by one: its manager's Engine) */
    if (ph_run_backend(r, &b, err) < 0 || (b = b->ops->images(b, err)) == NULL ||
        ph_image_ensure_tools(b, r->data_dir, &r->profiles, &tools, err) < 0)
        return -1;
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, c->service);
    memset(&x, 0, sizeof x);
    x.r = r;
    x.b = b;
    x.src = src != NULL ? src : b;
    x.tools = tools;
    x.id = c->id;
    x.service = c->service;
    x.mode = c->mode;
    x.run_id = c->run;
    x.out = out;
    ph_rundir_limits_of(&r->opts.collect, p, &x.lim);
    x.max_bytes = x.lim.lim.max_bytes ? x.lim.lim.max_bytes : PH_TAR_DEFAULT_MAX_BYTES;
    x.max_entries = x.lim.lim.max_entries ? x.lim.lim.max_entries : PH_TAR_DEFAULT_MAX_ENTRIES;
    ph_info("%s: converting the %s run (%s, in the tools image)", c->service, c->mode, conv->command.v[0]);

    /* Beside where the run will land: WORK/in (the converter's input),
     * WORK/maps (the run's JIT maps), WORK/out (what goes back into the
     * container, then the run). */
    /* named as the run dir's temp entries are, so that a retry after a
     * kill (SIGKILL: no unwinding) removes it as it removes theirs */
    snprintf(work, sizeof work, "%s/%s/" PH_RUNDIR_TEMP_PREFIX "convert-XXXXXX", r->opts.out_dir, c->service);
    if (mkdtemp(work) == NULL) {
        work[0] = '\0';
        ph_fail(err, errno, "create a temp dir in `%s/%s`", r->opts.out_dir, c->service);
        goto out;
    }
    snprintf(x.in, sizeof x.in, "%s/in", work);
    snprintf(dir, sizeof dir, "%s/out", work);
    if (mkdir(x.in, 0755) < 0 || mkdir(dir, 0755) < 0) {
        ph_fail(err, errno, "create `%s`", dir);
        goto out;
    }
    if (take_input(&x, &conv->command, &none, err) < 0)
        goto out;
    snprintf(title, sizeof title, "%s (%s, run %s)", c->service, c->mode, c->run ? c->run : "?");
    if (none && c->attached != NULL) {
        rc = draw_folded(&x, dir, title, err); /* an attach that wrote its outputs itself */
        goto out;
    }
    if (take_maps(&x, work, maps, sizeof maps, err) < 0)
        goto out;
    per_mib = (long)(x.bytes >> 20);
    x.time_s = per_mib > CONVERT_TIME_MAX_S - CONVERT_TIME_BASE_S ? CONVERT_TIME_MAX_S : CONVERT_TIME_BASE_S + per_mib;
    ph_collapse_opts_init(&x.co);
    x.co.map_dir = maps[0] ? maps : NULL;
    x.co.jit_named = 1; /* a frame named from a perf map is JIT code: its kind, _[j] */
    snprintf(sym, sizeof sym, "%s/%s", dir, conv->symfs ? conv->symfs : "");
    elf_roots(&x, &conv->command, conv->symfs && c->attached == NULL ? sym : NULL, root_buf, roots);
    x.co.elf_dirs = roots;
    if (converter_pass(&x, &conv->command, NULL, &col, err) < 0)
        goto out;

    /* Files perf had no copy of: given to it, and its second command. */
    if (conv->symfs != NULL && c->attached == NULL && ph_collapse_n_unnamed(col) > 0) {
        int kept;

        if ((kept = fetch_symfs(&x, conv, col, sym, err)) < 0)
            goto out;
        if (kept > 0) {
            ph_collapse *again = NULL;

            if (converter_pass(&x, &conv->symfs_command, dir, &again, err) < 0)
                goto out;
            ph_collapse_free(col);
            col = again;
        }
    }
    cs = ph_collapse_get_stats(col);
    if (cs->samples == 0) {
        rc = 1;
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
    if (write_outputs(dir, folded, folded_len, title, conv, cs, err) < 0 || put_dir(x.src, c->id, out, dir, err) < 0)
        goto out;
    ph_info("%s: %zu samples of %s, %zu distinct stacks: stacks.folded, flamegraph.svg, profile.pb.gz", c->service,
            cs->samples, cs->event, cs->stacks);
    rc = 0;
out:
    if (work[0] != '\0')
        ph_fs_remove_tree_at(AT_FDCWD, work, NULL);
    ph_collapse_free(col);
    free(folded);
    free(tools);
    return rc;
}

int
ph_run_convert(ph_run *r, const ph_workload *c, const ph_profile *p, ph_error_t *err)
{
    return ph_run_convert_from(r, NULL, c, p, err);
}

int
ph_run_convert_from(ph_run *r, ph_backend *src, const ph_workload *c, const ph_profile *p, ph_error_t *err)
{
    const char *service = c->service;
    const ph_profile_convert *conv;
    ph_error_t e = NULL;
    ph_stage *st;
    int rc, sig;

    if (p == NULL)
        return 0;
    conv = c->attached ? &p->attach.convert : &p->convert;
    if (conv->command.n == 0)
        return 0;
    st = ph_stage_beginf("profiler", 0, "convert what %s wrote", p->name);
    ph_interrupt_begin(); /* a temp dir exists: a signal only sets a flag, the conversion ends at its next line */
    rc = ph_run_stage_done(st, convert(r, src, c, p, conv, &e), &e);
    ph_interrupt_end();
    if ((sig = ph_interrupted()) != 0) {
        ph_error_free(&e);
        ph_interrupt_fail(err, sig);
        return ph_error_wrap(err, "%s: the conversion of what %s wrote", service, p->name);
    }
    switch (rc) {
    case 0:
        return 0;
    case 2:
        ph_info("%s: nothing for %s's converter: the attached profiler wrote its outputs itself", service, p->name);
        return 0;
    case 1:
        /* perf.data is whole: it holds no sample, as the sampler's modes
         * say of an idle run */
        ph_warn("%s: %s recorded no samples, so there is no profile to draw: the service was on no CPU where %s "
                "looks (user space) while it ran; what %s wrote is collected as it is", service, p->name, p->name,
                p->name);
        return 0;
    default:
        break;
    }
    ph_warn("%s: the conversion failed: %s", service, e->msg);
    ph_warn("%s: what %s wrote is collected as it is; convert by hand with `%s`, then `profharness collapse "
            "perf` and `profharness flamegraph`", service, p->name, conv->command.v[0]);
    ph_error_free(&e);
    return 0;
}
