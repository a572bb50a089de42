/* ph_rundir.c - the run-dir store (ph_rundir.h): reserved names, the
 * order a run is completed in, limits and space, handing to the invoker,
 * the record of the started profile.
 *
 * Everything below <out>/<service> is reached through directory fds
 * (openat and friends with O_NOFOLLOW), never by a path that could cross
 * a link planted between two calls; the temp dir is made fresh with a
 * random name and extracted through its fd.  Only the report (a floor
 * below, path-based) reads the temp dir by its path, under the lock.
 */
#include "ph_rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_signal.h"
#include "ph_timing.h"
#include "ph_timing_out.h"
#include "ph_util.h"

/* Seconds in run.json: enough digits for nanoseconds over a day, and no
 * 1.1890000000000001. */
#define META_DUMP_FLAGS (JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(9))
/* How often a streamed write looks at the free space. */
#define FREE_CHECK_EVERY (1u << 20)

/* ---- reserved names ----------------------------------------------------- */

/* The one list: exact names, then prefixes. */
static const char *const reserved_exact[] = { PH_RUN_META_NAME, PH_REPORT_SUMMARY, PH_SERVICE_LOG_NAME,
                                              PH_REPORT_INDEX, PH_LATEST_LINK, PH_TASKS_NAME };
static const char *const reserved_prefix[] = { PH_REPORT_PREFIX, PH_HARNESS_PREFIX };

int
ph_rundir_reserved(const char *name)
{
    for (size_t i = 0; i < sizeof reserved_exact / sizeof reserved_exact[0]; i++)
        if (strcmp(name, reserved_exact[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof reserved_prefix / sizeof reserved_prefix[0]; i++)
        if (strncmp(name, reserved_prefix[i], strlen(reserved_prefix[i])) == 0)
            return 1;
    return 0;
}

int
ph_rundir_reserved_run_name(const char *name, const ph_profile *p)
{
    if (ph_rundir_reserved(name) || strncmp(name, PH_RUNDIR_TEMP_PREFIX, strlen(PH_RUNDIR_TEMP_PREFIX)) == 0 ||
        strcmp(name, ".lock") == 0)
        return 1;
    for (size_t i = 0; p != NULL && i < p->n_artifacts; i++)
        if (p->artifacts[i].latest != NULL && strcmp(name, p->artifacts[i].latest) == 0)
            return 1;
    return 0;
}

int
ph_rundir_kept_name(const char *name, unsigned k, char *out, size_t len)
{
    char lead[32];
    size_t n;

    if (k <= 1)
        snprintf(lead, sizeof lead, "%s", PH_RUNDIR_KEPT_PREFIX);
    else
        snprintf(lead, sizeof lead, "%s%u-", PH_RUNDIR_KEPT_PREFIX, k);
    n = strlen(lead);
    if (len < n + 2)
        return -1;
    /* a file name: at most NAME_MAX bytes, the name's head kept */
    if (len > NAME_MAX + 1)
        len = NAME_MAX + 1;
    snprintf(out, len, "%s%s", lead, name);
    return 0;
}

/* Move every entry of DIRFD on a reserved name to its kept name, and say
 * so.  -1 and *err only when one cannot be moved (the run cannot be
 * completed without its own name). */
static int
free_reserved(int dirfd, const char *service, json_t *renamed, ph_error_t *err)
{
    DIR *d = ph_fs_opendir_at(dirfd);
    struct dirent *de;
    ph_strv hit = { 0 };
    int rc = 0;

    if (d == NULL)
        return ph_fail(err, errno, "list the collected files");
    while ((de = readdir(d)) != NULL)
        if (ph_rundir_reserved(de->d_name) && ph_strv_push(&hit, de->d_name) < 0) {
            closedir(d);
            ph_strv_free(&hit);
            return ph_fail(err, ENOMEM, "allocate");
        }
    closedir(d);
    for (size_t i = 0; rc == 0 && i < hit.n; i++) {
        char kept[NAME_MAX + 1], e1[NAME_MAX * 4 + 1], e2[NAME_MAX * 4 + 1];
        unsigned k = 1;

        for (;; k++) {
            ph_rundir_kept_name(hit.v[i], k, kept, sizeof kept);
            if (renameat2(dirfd, hit.v[i], dirfd, kept, RENAME_NOREPLACE) == 0)
                break;
            if ((errno != EEXIST && errno != ENOTEMPTY) || k == 1000) {
                rc = ph_fail(err, errno, "move the container's `%s` off the harness's own name",
                             ph_escape(e1, sizeof e1, hit.v[i]));
                break;
            }
        }
        if (rc == 0) {
            /* the names are the container's data: escaped */
            ph_warn("%s: the container wrote `%s`, a name of the harness's own: kept as `%s`", service,
                    ph_escape(e1, sizeof e1, hit.v[i]), ph_escape(e2, sizeof e2, kept));
            json_object_set_new(renamed, hit.v[i], json_string(kept));
        }
    }
    ph_strv_free(&hit);
    return rc;
}

/* ---- limits ------------------------------------------------------------ */

static uint64_t *
limit_field(ph_tar_limits *l, ph_tar_limit which)
{
    return which == PH_TAR_LIMIT_BYTES ? &l->max_bytes
         : which == PH_TAR_LIMIT_ENTRIES ? &l->max_entries : &l->min_free_bytes;
}

void
ph_rundir_limits_of(const ph_tar_limits *flags, const ph_profile *p, ph_rundir_limits *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->profile_path, sizeof out->profile_path, "%s", p && p->path ? p->path : "");
    for (int w = PH_TAR_LIMIT_BYTES; w <= PH_TAR_LIMIT_FREE; w++) {
        uint64_t flag = flags ? *limit_field((ph_tar_limits *)flags, w) : 0;
        uint64_t prof = p ? *limit_field((ph_tar_limits *)&p->collect, w) : 0;

        *limit_field(&out->lim, w) = flag ? flag : prof;
        out->from[w] = flag ? 'f' : prof ? 'p' : 'd';
    }
}

int
ph_rundir_room(uint64_t avail, uint64_t min_free, uint64_t need)
{
    return ph_tar_room(avail, min_free, need);
}

uint64_t
ph_rundir_min_free_hint(uint64_t limit)
{
    uint64_t half = limit / 2;

    return half >= 1024 ? half / 1024 * 1024 : half;
}

uint64_t
ph_rundir_raise_hint(uint64_t v)
{
    return v > UINT64_MAX / 2 ? v : v * 2;
}

const char *
ph_rundir_size_arg(uint64_t v, char buf[32])
{
    static const char *const units[] = { "", "KiB", "MiB", "GiB", "TiB", "PiB" };
    int u = 0;

    while (u < 5 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(buf, 32, "%" PRIu64 "%s", v, units[u]);
    return buf;
}

int
ph_rundir_limit_hint(const ph_rundir_limits *l, ph_tar_limit which, uint64_t value, const char *cmd,
                     const char *service, const char *id, ph_error_t *err)
{
    static const char *const flags[] = { "", "--max-bytes", "--max-entries", "--min-free" };
    static const uint64_t defaults[] = { 0, PH_TAR_DEFAULT_MAX_BYTES, PH_TAR_DEFAULT_MAX_ENTRIES, 0 };
    const char *name = ph_tar_limit_name(which);
    char file[PATH_MAX];
    uint64_t v;
    char more[32], where[PATH_MAX + 64];
    size_t n;

    if (*err == NULL || which < PH_TAR_LIMIT_BYTES || which > PH_TAR_LIMIT_FREE)
        return -1;
    /* the path is a label's (the Engine's answer): escaped */
    if (l->profile_path[0])
        ph_escape(file, sizeof file, l->profile_path);
    else
        snprintf(file, sizeof file, "the mode's profile");
    v = value ? value : *limit_field((ph_tar_limits *)&l->lim, which);
    if (l->from[which] == 'f')
        snprintf(where, sizeof where, "set with %s", flags[which]);
    else if (l->from[which] == 'p')
        snprintf(where, sizeof where, "set in %s", file);
    else
        snprintf(where, sizeof where, "the default");
    n = strlen((*err)->msg);
    snprintf((*err)->msg + n, sizeof (*err)->msg - n, " (%s)", where);
    if (which == PH_TAR_LIMIT_FREE) {
        ph_rundir_size_arg(ph_rundir_min_free_hint(v), more);
        return ph_error_hint(err, "the container %.12s is kept with its artifacts, no partial run left; free "
                             "space on the disk of the output dir, or lower `min_free` (`profharness %s "
                             "--min-free %s %s`, or `collect: {min_free: %s}` in %s), and retry",
                             id, cmd, more, service, more, file);
    }
    if (v == 0)
        v = defaults[which];
    if (which == PH_TAR_LIMIT_ENTRIES)
        snprintf(more, sizeof more, "%" PRIu64, ph_rundir_raise_hint(v));
    else
        ph_rundir_size_arg(ph_rundir_raise_hint(v), more);
    return ph_error_hint(err, "the container %.12s is kept with its artifacts, no partial run left; raise the "
                         "limit and retry: `profharness %s %s %s %s`, or `collect: {%s: %s}` in %s "
                         "(`unlimited` turns it off)", id, cmd, flags[which], more, service, name, more, file);
}

/* ---- the invoker -------------------------------------------------------- */

int
ph_rundir_invoker(uid_t *uid, gid_t *gid)
{
    const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
    char *end;
    unsigned long lu, lg;

    if (geteuid() != 0 || u == NULL || g == NULL || u[0] < '0' || u[0] > '9' || g[0] < '0' || g[0] > '9')
        return 0;
    errno = 0;
    lu = strtoul(u, &end, 10);
    if (*end != '\0' || errno != 0 || lu >= (uid_t)-1)
        return 0;
    lg = strtoul(g, &end, 10);
    if (*end != '\0' || errno != 0 || lg >= (gid_t)-1)
        return 0;
    *uid = (uid_t)lu;
    *gid = (gid_t)lg;
    return 1;
}

void
ph_rundir_give_at(int dirfd, const char *name)
{
    uid_t uid;
    gid_t gid;

    if (ph_rundir_invoker(&uid, &gid) && fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
        ph_debug("chown `%s`: %s", name, strerror(errno));
}

int
ph_rundir_give_tree_at(int dirfd, const char *name, ph_error_t *err)
{
    uid_t uid;
    gid_t gid;

    if (!ph_rundir_invoker(&uid, &gid))
        return 0;
    return ph_fs_chown_tree_at(dirfd, name, uid, gid, err);
}

/* ---- files -------------------------------------------------------------- */

/* A fresh temp name in DIRFD: PREFIX and 12 random characters. */
static void
temp_name(char *out, size_t len, const char *prefix)
{
    size_t n = (size_t)snprintf(out, len, "%s", prefix);

    if (n + 13 <= len) {
        ph_fs_random_name(out + n, 12);
        out[n + 12] = '\0';
    }
}

int
ph_rundir_link_replace(int svcfd, const char *target, const char *link, ph_error_t *err)
{
    char tmp[64];

    for (int tries = 0;; tries++) {
        temp_name(tmp, sizeof tmp, PH_RUNDIR_TEMP_PREFIX "link-");
        if (symlinkat(target, svcfd, tmp) == 0)
            break;
        if (errno != EEXIST || tries == 100)
            return ph_fail(err, errno, "symlink `%s`", tmp);
    }
    ph_rundir_give_at(svcfd, tmp);
    if (renameat(svcfd, tmp, svcfd, link) < 0) {
        int e = errno;
        unlinkat(svcfd, tmp, 0);
        return ph_fail(err, e, "replace the link `%s`", link);
    }
    return 0;
}

/* Write DIRFD/NAME: FILL writes a fresh temp file (O_EXCL, O_NOFOLLOW)
 * through its fd, which is then renamed over NAME.  SHOWN names it in
 * errors. */
static int
write_file_at(int dirfd, const char *shown, const char *name, int (*fill)(int fd, const void *ud), const void *ud,
              ph_error_t *err)
{
    char tmp[64];
    int fd = -1;

    for (int tries = 0; fd < 0; tries++) {
        temp_name(tmp, sizeof tmp, PH_RUNDIR_TEMP_PREFIX);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && (errno != EEXIST || tries == 100))
            return ph_fail(err, errno, "write `%s`", shown);
    }
    if (fill(fd, ud) < 0) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, tmp, 0);
        return ph_fail(err, e, "write `%s`", shown);
    }
    if (close(fd) < 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        return ph_fail(err, e, "write `%s`", shown);
    }
    ph_rundir_give_at(dirfd, tmp);
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        return ph_fail(err, e, "rename into `%s`", shown);
    }
    return 0;
}

typedef struct text {
    const char *p;
    size_t n;
} text;

static int
fill_text(int fd, const void *ud)
{
    const text *t = ud;

    return ph_fs_write_all(fd, t->p, t->n);
}

static int
fill_json(int fd, const void *j)
{
    return json_dumpfd(j, fd, META_DUMP_FLAGS) < 0 || write(fd, "\n", 1) != 1 ? -1 : 0;
}

static int
fill_json_compact(int fd, const void *j)
{
    return json_dumpfd(j, fd, JSON_COMPACT) < 0 || write(fd, "\n", 1) != 1 ? -1 : 0;
}

int
ph_rundir_write_json_at(int dirfd, const char *shown, const char *name, json_t *j, ph_error_t *err)
{
    return write_file_at(dirfd, shown, name, fill_json, j, err);
}

/* harness.folded: the command's stages so far, as a flamechart's lines. */
static int
fill_folded(int fd, const void *tree)
{
    int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    FILE *f = dfd < 0 ? NULL : fdopen(dfd, "w");
    ph_error_t e = NULL;
    int rc;

    if (f == NULL) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    rc = ph_timing_write_folded(f, tree, &e);
    ph_error_free(&e);
    if (fclose(f) != 0)
        rc = -1;
    return rc < 0 ? (errno = errno ? errno : EIO, -1) : 0;
}

/* ---- completing a run --------------------------------------------------- */

struct ph_rundir {
    const ph_rundir_spec *spec;
    char tmp[NAME_MAX + 1];     /* the temp dir's name in svcfd */
    char path[PATH_MAX];        /* what messages call it: its final path */
    int fd;                     /* the temp dir, wherever it is moved */
    uint64_t min_free;          /* resolved */
    uint64_t unchecked;         /* bytes written since the last look at the free space */
    ph_tar_extract *x;
    ph_rundir_done *out;
};

int
ph_rundir_fd(const ph_rundir *rd)
{
    return rd->fd;
}

const char *
ph_rundir_path(const ph_rundir *rd)
{
    return rd->path;
}

const ph_tar_stats *
ph_rundir_stats(const ph_rundir *rd)
{
    return &rd->out->stats;
}

/* Over min_free: the limit's error, and the stats say which, as an
 * extraction's would. */
static int
room_for(ph_rundir *rd, const char *name, uint64_t need, ph_error_t *err)
{
    char rel[NAME_MAX + 64];

    rd->unchecked = 0;
    snprintf(rel, sizeof rel, "%s", name);
    if (ph_tar_free_check(rd->fd, rd->min_free, need, rel, err) == 0)
        return 0;
    rd->out->stats.limit = PH_TAR_LIMIT_FREE;
    rd->out->limit_value = rd->min_free;
    return -1;
}

int
ph_rundir_create(ph_rundir *rd, const char *name, int *fd_out, ph_error_t *err)
{
    int fd = openat(rd->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

    if (fd < 0)
        return ph_fail(err, errno, "create `%s/%s`", rd->path, name);
    *fd_out = fd;
    return 0;
}

int
ph_rundir_write(ph_rundir *rd, int fd, const char *name, const void *data, size_t len, ph_error_t *err)
{
    if ((rd->unchecked == 0 || rd->unchecked + len >= FREE_CHECK_EVERY) && room_for(rd, name, len, err) < 0)
        return -1;
    if (ph_fs_write_all(fd, data, len) < 0)
        return ph_fail(err, errno, "write `%s/%s`", rd->path, name);
    rd->unchecked += len;
    return 0;
}

typedef struct feed_ctx {
    ph_tar_extract *x;
} feed_ctx;

static int
feed_cb(void *ud, const char *data, size_t len, ph_error_t *err)
{
    feed_ctx *f = ud;
    int sig = ph_interrupted();

    if (sig != 0)
        return ph_interrupt_fail(err, sig);
    return ph_tar_extract_feed(f->x, data, len, err);
}

static int
interrupted(ph_error_t *err)
{
    int sig = ph_interrupted();

    return sig != 0 ? ph_interrupt_fail(err, sig) : 0;
}

/* The newest regular file in the directory DIRFD matching GLOB, by mtime
 * then name. */
int
ph_rundir_newest_match(int dirfd, const char *glob, char *out, size_t len)
{
    DIR *d = ph_fs_opendir_at(dirfd);
    struct dirent *de;
    struct stat st;
    time_t best = 0;
    int found = 0;

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        if (fnmatch(glob, de->d_name, 0) != 0)
            continue;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (!found || st.st_mtime > best || (st.st_mtime == best && strcmp(de->d_name, out) > 0)) {
            snprintf(out, len, "%s", de->d_name);
            best = st.st_mtime;
            found = 1;
        }
    }
    closedir(d);
    return found;
}

/* One link of the service dir: replaced when it is a link or absent;
 * anything else there (a directory, a file) is left and said. */
static void
link_one(const ph_rundir_spec *s, const char *target, const char *link)
{
    ph_error_t e = NULL;
    struct stat st;
    char esc[NAME_MAX * 4 + 1];

    if (fstatat(s->svcfd, link, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode)) {
        ph_warn("%s: `%s/%s/%s` is no link profharness made (a %s): left as it is, not pointed at the new run",
                s->service, s->out_dir, s->service, ph_escape(esc, sizeof esc, link),
                S_ISDIR(st.st_mode) ? "directory" : "file");
        return;
    }
    if (ph_rundir_link_replace(s->svcfd, target, link, &e) < 0) {
        ph_warn("%s: %s (the run is complete without it)", s->service, e->msg);
        ph_error_free(&e);
    }
}

void
ph_rundir_link_latest(int svcfd, const char *out_dir, const char *service, const char *name)
{
    ph_rundir_spec s = { .svcfd = svcfd, .out_dir = out_dir, .service = service };

    link_one(&s, name, PH_LATEST_LINK);
}

static void
update_links(const ph_rundir_spec *s, int runfd)
{
    char target[PATH_MAX], file[NAME_MAX + 1];
    const ph_profile *p = s->profile;

    link_one(s, s->name, PH_LATEST_LINK);
    for (size_t i = 0; p != NULL && i < p->n_artifacts; i++) {
        const ph_artifact_spec *a = &p->artifacts[i];

        if (a->latest == NULL || !ph_rundir_newest_match(runfd, a->glob, file, sizeof file))
            continue;
        snprintf(target, sizeof target, "%s/%s", s->name, file);
        link_one(s, target, a->latest);
    }
}

/* harness.folded and harness.trace.json of the command so far; a failure
 * is a warning: timings never cost a run. */
static void
write_timing_files(ph_rundir *rd, const ph_stage *tree)
{
    json_t *trace;
    ph_error_t e = NULL;
    char shown[PATH_MAX + 32];

    if (tree == NULL)
        return;
    snprintf(shown, sizeof shown, "%s/%s", rd->path, PH_HARNESS_FOLDED);
    if (write_file_at(rd->fd, shown, PH_HARNESS_FOLDED, fill_folded, tree, &e) == 0) {
        snprintf(shown, sizeof shown, "%s/%s", rd->path, PH_HARNESS_TRACE);
        trace = ph_timing_trace_json(tree);
        if (trace == NULL)
            ph_fail(&e, ENOMEM, "build `%s`", shown);
        else
            write_file_at(rd->fd, shown, PH_HARNESS_TRACE, fill_json_compact, trace, &e);
        json_decref(trace);
    }
    if (e != NULL) {
        ph_warn("%s (the run is complete without it)", e->msg);
        ph_error_free(&e);
    }
}

/* run.json, then the timing files: the stage tree as of one instant in
 * both.  run.json counts against min_free. */
static int
write_meta(ph_rundir *rd, json_t *meta, ph_error_t *err)
{
    ph_stage *st = ph_stage_begin("host", "write run.json and the harness timings", 0);
    char shown[PATH_MAX + 16], *dumped = NULL;
    int rc = -1;

    ph_timing_read_begin();
    if (meta == NULL || ph_timing_run_json(meta) < 0 || (dumped = json_dumps(meta, META_DUMP_FLAGS)) == NULL) {
        ph_timing_read_end();
        ph_fail(err, ENOMEM, "build %s", PH_RUN_META_NAME);
        goto out;
    }
    snprintf(shown, sizeof shown, "%s/%s", rd->path, PH_RUN_META_NAME);
    {
        text t = { dumped, strlen(dumped) };

        dumped[t.n] = '\0';
        if (room_for(rd, PH_RUN_META_NAME, t.n + 1, err) == 0) {
            char *nl = realloc(dumped, t.n + 2);

            if (nl == NULL) {
                ph_fail(err, ENOMEM, "build %s", PH_RUN_META_NAME);
            } else {
                dumped = nl;
                memcpy(dumped + t.n, "\n", 2);
                t.p = dumped;
                t.n++;
                rc = write_file_at(rd->fd, shown, PH_RUN_META_NAME, fill_text, &t, err);
            }
        }
    }
    if (rc == 0)
        write_timing_files(rd, ph_timing_root());
    ph_timing_read_end();
out:
    free(dumped);
    ph_stage_end(st);
    return rc;
}

/* The size of DIRFD/NAME, for a "report" stage's bytes out; 0 if absent. */
static uint64_t
size_at(int dirfd, const char *name)
{
    struct stat sb;

    return fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)sb.st_size : 0;
}

/* The report, in the temp dir (by its path: the report floor reads paths;
 * the dir is ours, under the lock), held to the artifacts' min_free.  A
 * report that cannot be written costs a warning, never the run. */
static void
write_report(ph_rundir *rd)
{
    const ph_rundir_spec *s = rd->spec;
    ph_stage *st = ph_stage_begin("report", "write report.html and summary.json", 0);
    ph_profile_set one = { (ph_profile *)s->profile, s->profile ? 1 : 0 };
    ph_report_limits lim = { rd->min_free, 0 };
    char tmp_path[PATH_MAX + NAME_MAX + 2];
    ph_error_t e = NULL;

    snprintf(tmp_path, sizeof tmp_path, "%s/%s/%s", s->out_dir, s->service, rd->tmp);
    if (ph_report_write_run_limited(tmp_path, &one, &lim, &rd->out->headline, &e) < 0) {
        ph_warn("no report for %s: %s (the artifacts are there; retry with `profharness report %s`)", rd->path,
                e->msg, rd->path);
        ph_stage_fail(st, e->msg);
        ph_error_free(&e);
        ph_stage_end(st);
        return;
    }
    /* the headline names the report where it will be */
    snprintf(rd->out->headline.run, sizeof rd->out->headline.run, "%s", s->name);
    snprintf(rd->out->headline.report, sizeof rd->out->headline.report, "%s/%s", rd->path, PH_REPORT_HTML);
    rd->out->reported = 1;
    ph_stage_bytes(st, 0, size_at(rd->fd, PH_REPORT_HTML) + size_at(rd->fd, PH_REPORT_SUMMARY));
    ph_stage_end(st);
}

/* Remove the temp dir: its contents through the fd (what is in our dir,
 * wherever it is), then the name if it is still our dir. */
static void
remove_temp(ph_rundir *rd)
{
    const ph_rundir_spec *s = rd->spec;
    ph_error_t e = NULL;
    struct stat a, b;

    if (ph_fs_remove_tree_at(rd->fd, ".", &e) < 0) {
        ph_warn("could not empty the temp dir `%s/%s/%s`: %s", s->out_dir, s->service, rd->tmp, e->msg);
        ph_error_free(&e);
    }
    if (fstat(rd->fd, &a) == 0 && fstatat(s->svcfd, rd->tmp, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        unlinkat(s->svcfd, rd->tmp, AT_REMOVEDIR);
}

/* Is SVCFD/NAME a complete run of CONTAINER (its run.json says so)?  Only
 * the harness writes run.json (reserved), so it is ours to read. */
static int
is_own_run(int svcfd, const char *name, const char *container)
{
    int dfd = openat(svcfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd;
    json_t *meta = NULL;
    json_error_t je;
    struct stat st;
    int own = 0;

    if (dfd < 0)
        return 0;
    fd = openat(dfd, PH_RUN_META_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(dfd);
    if (fd < 0)
        return 0;
    /* run.json is small: the timing tree at most */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (16 << 20)) {
        FILE *f = fdopen(fd, "r");

        if (f != NULL) {
            meta = json_loadf(f, 0, &je);
            fclose(f);
            fd = -1;
        }
    }
    if (fd >= 0)
        close(fd);
    own = container != NULL && json_is_string(json_object_get(meta, "container")) &&
          strcmp(json_string_value(json_object_get(meta, "container")), container) == 0;
    json_decref(meta);
    return own;
}

/* Where the run goes: NAME, or when that is taken by another run,
 * NAME.2, NAME.3 ...; *OWN when NAME is this container's complete run. */
static int
final_name(const ph_rundir_spec *s, char *out, size_t len, int *own, ph_error_t *err)
{
    struct stat st;

    *own = 0;
    snprintf(out, len, "%s", s->name);
    for (int k = 2; fstatat(s->svcfd, out, &st, AT_SYMLINK_NOFOLLOW) == 0; k++) {
        /* a stop's retry; a snapshot is a new copy each time */
        if (s->links && is_own_run(s->svcfd, out, s->container)) {
            *own = 1;
            return 0;
        }
        if (k == 1000)
            return ph_fail(err, EEXIST, "find a free name for `%s/%s/%s`", s->out_dir, s->service, s->name);
        snprintf(out, len, "%s.%d", s->name, k);
    }
    if (errno != ENOENT)
        return ph_fail(err, errno, "look at `%s/%s/%s`", s->out_dir, s->service, out);
    return 0;
}

/* Links and the invoker: the steps after the rename (and all a retry of a
 * complete run does). */
static int
finish_in_place(ph_rundir *rd, int runfd, const char *final, ph_error_t *err)
{
    const ph_rundir_spec *s = rd->spec;
    ph_stage *st = ph_stage_begin("host", "link and give the files to the invoker", 0);
    ph_rundir_spec named = *s;
    int rc = 0;

    named.name = final;
    if (s->links)
        update_links(&named, runfd);
    /* Through our fd: the tree we made, whatever the name points at. */
    if (ph_rundir_give_tree_at(runfd, ".", err) < 0) {
        ph_error_wrap(err, "the run is complete in %s, but handing it to the invoker failed", rd->path);
        rc = -1;
    }
    if (rc < 0)
        ph_stage_fail(st, (*err)->msg);
    ph_stage_end(st);
    return rc;
}

int
ph_rundir_complete(const ph_rundir_spec *s, const ph_rundir_steps *steps, ph_rundir_done *out, ph_error_t *err)
{
    ph_rundir rd = { .spec = s, .fd = -1, .out = out };
    char final[NAME_MAX + 1];
    feed_ctx fc;
    json_t *renamed = NULL, *meta = NULL;
    ph_stage *st = NULL;
    int own = 0, finished = 0;

    memset(out, 0, sizeof *out);
    ph_rundir_limits_of(s->flags, s->profile, &out->limits);
    if (ph_rundir_reserved_run_name(s->name, s->profile)) {
        char esc[NAME_MAX * 4 + 1];

        return ph_fail(err, 0, "a run named `%s` would take a name of the harness's own in `%s/%s`",
                       ph_escape(esc, sizeof esc, s->name), s->out_dir, s->service);
    }
    if (final_name(s, final, sizeof final, &own, err) < 0)
        return -1;
    snprintf(out->run_dir, sizeof out->run_dir, "%s/%s/%s", s->out_dir, s->service, final);
    snprintf(rd.path, sizeof rd.path, "%s", out->run_dir);
    if (own) {
        /* A harness died after the rename: the run is complete, only what
         * comes after it is redone. */
        rd.fd = openat(s->svcfd, final, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rd.fd < 0)
            return ph_fail(err, errno, "open `%s`", out->run_dir);
        out->resumed = 1;
        ph_info("%s: the run %s was complete already (a stop was cut short after it): finishing it", s->service,
                out->run_dir);
        int rc = finish_in_place(&rd, rd.fd, final, err);
        close(rd.fd);
        return rc;
    }

    /* 1. extract into the temp dir */
    if (ph_fs_mkdtemp_at(s->svcfd, PH_RUNDIR_TEMP_PREFIX, 0700, rd.tmp, sizeof rd.tmp, err) < 0)
        return ph_error_wrap(err, "collect the artifacts of `%s` into `%s/%s`", s->service, s->out_dir, s->service);
    rd.fd = openat(s->svcfd, rd.tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rd.fd < 0) {
        ph_fail(err, errno, "open `%s/%s/%s`", s->out_dir, s->service, rd.tmp);
        unlinkat(s->svcfd, rd.tmp, AT_REMOVEDIR);
        return ph_error_wrap(err, "collect the artifacts of `%s`", s->service);
    }
    rd.min_free = ph_tar_min_free_of(out->limits.lim.min_free_bytes, rd.fd);
    st = ph_stage_beginf("collect", 0, "stream and extract the artifacts of %s", s->service);
    /* Through our fd: no link planted under <out>/<service> meanwhile can
     * redirect the extraction. */
    rd.x = ph_tar_extract_new_at(rd.fd, 1, &out->limits.lim, err);
    if (rd.x == NULL)
        goto fail;
    fc.x = rd.x;
    if (steps->fetch(steps->ud, feed_cb, &fc, err) < 0)
        goto fail;
    finished = 1;
    if (ph_tar_extract_finish(rd.x, &out->stats, err) < 0)
        goto fail;
    ph_tar_extract_free(rd.x);
    rd.x = NULL;
    ph_stage_bytes(st, 0, out->stats.bytes);
    ph_stage_end(st);
    st = NULL;
    if (interrupted(err) < 0)
        goto fail;

    /* 2. the container's files off the harness's names */
    renamed = json_object();
    if (renamed == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto fail;
    }
    if (free_reserved(rd.fd, s->service, renamed, err) < 0)
        goto fail;
    if (steps->examine != NULL)
        steps->examine(steps->ud, &rd);

    /* 3. service.log */
    if (steps->service_log != NULL && steps->service_log(steps->ud, &rd, err) < 0)
        goto fail;
    if (interrupted(err) < 0)
        goto fail;

    /* 4. run.json, 5. the harness timing files */
    meta = steps->meta(steps->ud, &rd);
    if (meta != NULL) {
        json_object_set_new(meta, "files", json_integer((json_int_t)out->stats.files));
        json_object_set_new(meta, "bytes", json_integer((json_int_t)out->stats.bytes));
        json_object_set_new(meta, "refused_entries", json_integer((json_int_t)out->stats.refused));
        json_object_set_new(meta, "dir", json_string(final));
        if (json_object_size(renamed) > 0)
            json_object_set(meta, "renamed", renamed);
    }
    if (write_meta(&rd, meta, err) < 0)
        goto fail;
    if (interrupted(err) < 0)
        goto fail;

    /* 6. the report */
    write_report(&rd);
    if (fchmod(rd.fd, 0755) < 0) {
        ph_fail(err, errno, "chmod `%s/%s/%s`", s->out_dir, s->service, rd.tmp);
        goto fail;
    }
    if (interrupted(err) < 0)
        goto fail;

    /* 7. rename into place: complete from the first instant it is there */
    st = ph_stage_begin("host", "rename into place", 0);
    if (renameat2(s->svcfd, rd.tmp, s->svcfd, final, RENAME_NOREPLACE) < 0) {
        ph_fail(err, errno, "rename `%s/%s/%s` to `%s`", s->out_dir, s->service, rd.tmp, final);
        goto fail;
    }
    ph_stage_end(st);
    st = NULL;
    json_decref(renamed);
    json_decref(meta);

    /* 8. links, 9. the invoker */
    {
        int rc = finish_in_place(&rd, rd.fd, final, err);

        close(rd.fd);
        return rc;
    }
fail:
    if (st != NULL) {
        if (*err != NULL)
            ph_stage_fail(st, (*err)->msg);
        ph_stage_end(st);
    }
    if (rd.x != NULL && !finished) {
        /* The stats of a failed feed: which limit, if one stopped it. */
        ph_error_t ignored = NULL;

        ph_tar_extract_finish(rd.x, &out->stats, &ignored);
        ph_error_free(&ignored);
    }
    ph_tar_extract_free(rd.x);
    if (out->stats.limit != PH_TAR_LIMIT_NONE && out->limit_value == 0)
        out->limit_value = out->stats.limit_value;
    json_decref(renamed);
    json_decref(meta);
    /* Keep nothing half-written: the container still has everything. */
    remove_temp(&rd);
    close(rd.fd);
    return ph_error_wrap(err, "collect the artifacts of `%s`", s->service);
}

/* ---- the profile a run was started with -------------------------------- */

char *
ph_rundir_profile_record(const ph_profile *p)
{
    json_t *j;
    char *s;

    if (p == NULL || p->source == NULL || p->path == NULL || strlen(p->source) > PH_RUNDIR_PROFILE_MAX)
        return NULL;
    j = json_pack("{s:s, s:s}", "path", p->path, "text", p->source);
    s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

int
ph_rundir_profile_load(const char *rec, const char *mode, ph_profile *out, ph_error_t *err)
{
    size_t n = strlen(rec);
    json_t *j = NULL;
    json_error_t je;
    const char *path, *src, *base;
    int rc;

    memset(out, 0, sizeof *out);
    if (n > PH_RUNDIR_PROFILE_MAX + PATH_MAX + 64)
        return ph_fail(err, EFBIG, "the recorded profile is over %d bytes", PH_RUNDIR_PROFILE_MAX);
    j = json_loads(rec, JSON_REJECT_DUPLICATES, &je);
    path = json_string_value(json_object_get(j, "path"));
    src = json_string_value(json_object_get(j, "text"));
    if (path == NULL || src == NULL) {
        json_decref(j);
        return ph_fail(err, 0, "the recorded profile is not one profharness wrote");
    }
    /* The loader checks the name against the file's: the run's mode. */
    base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (mode == NULL || strncmp(base, mode, strlen(mode)) != 0 || strcmp(base + strlen(mode), ".yaml") != 0) {
        json_decref(j);
        return ph_fail(err, 0, "the recorded profile is not the mode `%s`", mode ? mode : "?");
    }
    rc = ph_profile_load_buf(path, src, strlen(src), out, err);
    json_decref(j);
    return rc;
}
