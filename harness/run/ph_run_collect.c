/* ph_run_collect.c - stop, collect, discard.
 *
 *   stop     flock(<out>/<service>/.lock) -> SIGTERM to the shim (which
 *            signals the profiled process and escalates only after the
 *            profile's grace) -> Engine wait -> stream the artifacts out
 *            through libarchive into a fresh temp dir -> hand it to the
 *            invoker -> rename into place -> links -> only then remove the
 *            container.
 *
 * The lock makes a second `stop` (or a `collect`) of the same service wait
 * for the first and then find nothing to stop.  On any failure the
 * container is kept, the temp dir removed, and the error's hint says how to
 * recover, including how to give the run up (`stop --discard`) when it
 * cannot be collected at all.  A collection is bounded (ph_tar_limits: the
 * flags of ph_run_opts.collect, else the mode's `collect:`, else the
 * defaults); over a limit the error says where it was set and how to
 * raise it.
 *
 * What the container wrote is hostile until proven otherwise, and so is
 * <out>/<service>/ itself, which belongs to the invoker under sudo:
 *   - everything below <out>/<service> is reached through directory fds
 *     (openat and friends with O_NOFOLLOW), never by a path that could
 *     cross a link planted between two calls; the temp dir is made fresh
 *     with a random name (never reused) and extracted through its fd;
 *   - temp entries are named `.incoming-*` and made only under the lock,
 *     so any found while holding it were left by a harness that died:
 *     they are removed (the container of that run was kept);
 *   - the completion record is read with a size cap and must have the
 *     shim's fields (ph_run_record.c), else the run is marked "no valid
 *     completion record";
 *   - every name and field printed is escaped (ph_escape.h);
 *   - from temp dir to rename, SIGINT/SIGTERM only set a flag
 *     (ph_signal.h) that the stream callback checks: the temp dir is
 *     removed and the container kept, exit 128+N.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <sys/file.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_signal.h"
#include "ph_util.h"
#include "ph_report.h"
#include "ph_tar.h"
#include "ph_timing.h"
#include "ph_timing_out.h"

#define TEMP_PREFIX ".incoming-"
/* Seconds in run.json: enough digits for nanoseconds over a day, and no
 * 1.1890000000000001. */
#define META_DUMP_FLAGS (JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(9))

/* ---- the service directory and its lock --------------------------------- */

/* The run label names a directory: nothing but [A-Za-z0-9._-], no leading
 * dot, bounded. */
static int
safe_name(const char *s)
{
    size_t n = 0;

    if (s == NULL || s[0] == '\0' || s[0] == '.')
        return 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return n < 128;
}

/* Open <out>/<service> (made when missing; what is made is the invoker's),
 * refusing a link there: everything below it is reached through this fd. */
static int
open_service_dir(ph_run *r, const char *service, int *fd_out, ph_error_t *err)
{
    ph_cleanup_close int out = -1;
    char esc[256];
    int fd;

    if (!safe_name(service))
        return ph_fail(err, 0, "`%s` is no service name profharness writes a directory for",
                       ph_escape(esc, sizeof esc, service));
    if (ph_run_mkdir_p(r->opts.out_dir, err) < 0)
        return -1;
    out = open(r->opts.out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (out < 0 && errno == ENOTDIR) {
        ph_fail(err, 0, "the output directory `%s` is not a directory", r->opts.out_dir);
        return ph_error_hint(err, "point -o at a directory (it is created if missing), or move the file away");
    }
    if (out < 0)
        return ph_fail(err, errno, "open `%s`", r->opts.out_dir);
    if (mkdirat(out, service, 0755) == 0)
        ph_run_give_at(out, service);
    else if (errno != EEXIST)
        return ph_fail(err, errno, "mkdir `%s/%s`", r->opts.out_dir, service);
    fd = openat(out, service, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        struct stat st;
        int e = errno;

        if (fstatat(out, service, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
            ph_fail(err, 0, "`%s/%s` is a symbolic link: runs are written only into a real directory",
                    r->opts.out_dir, service);
            return ph_error_hint(err, "remove the link, or point -o at the directory it names");
        }
        return ph_fail(err, e, "open `%s/%s`", r->opts.out_dir, service);
    }
    *fd_out = fd;
    return 0;
}

/* Under the lock no other harness is collecting: every temp entry is a
 * leftover of one that died (its container was kept, so nothing is lost). */
static void
remove_stale_temps(ph_run *r, int svcfd, const char *service)
{
    DIR *d = ph_fs_opendir_at(svcfd);
    struct dirent *de;
    ph_strv stale = { 0 };

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0 && ph_strv_push(&stale, de->d_name) < 0)
            break;
    closedir(d);
    for (size_t i = 0; i < stale.n; i++) {
        ph_error_t e = NULL;
        char esc[256];

        ph_escape(esc, sizeof esc, stale.v[i]);
        if (ph_fs_remove_tree_at(svcfd, stale.v[i], &e) < 0) {
            ph_warn("%s: cannot remove `%s/%s/%s`, left by an interrupted collection: %s", service,
                    r->opts.out_dir, service, esc, e->msg);
            ph_error_free(&e);
        } else {
            ph_info("%s: removed `%s/%s/%s`, left by an interrupted collection", service, r->opts.out_dir,
                    service, esc);
        }
    }
    ph_strv_free(&stale);
}

int
ph_run_lock_service(ph_run *r, const char *service, int *svcfd_out, int *lock_out, ph_error_t *err)
{
    ph_cleanup_close int svcfd = -1;
    int fd;

    if (open_service_dir(r, service, &svcfd, err) < 0)
        return -1;
    fd = openat(svcfd, ".lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0)
        ph_run_give_at(svcfd, ".lock");
    else if (errno == EEXIST)
        fd = openat(svcfd, ".lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return ph_fail(err, errno, "open `%s/%s/.lock`", r->opts.out_dir, service);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK) {
            close(fd);
            return ph_fail(err, errno, "lock `%s/%s/.lock`", r->opts.out_dir, service);
        }
        ph_stage *st = ph_stage_beginf("host", 0, "wait for the other profharness (%s/.lock)", service);
        int locked, e;

        ph_info("%s: another profharness is stopping or collecting this service; waiting for it", service);
        locked = flock(fd, LOCK_EX);
        e = errno;
        if (ph_run_stage_done(st, locked, NULL) < 0) {
            close(fd);
            return ph_fail(err, e, "lock `%s/%s/.lock`", r->opts.out_dir, service);
        }
    }
    remove_stale_temps(r, svcfd, service);
    *lock_out = fd;
    *svcfd_out = svcfd;
    svcfd = -1;
    return 0;
}

/* ---- collection limits -------------------------------------------------- */

/* The limits one collection runs under, and where each came from: a flag
 * (ph_run_opts.collect) wins over the mode's `collect:`, which wins over
 * the defaults. */
typedef struct collect_limits {
    ph_tar_limits lim;
    const char *profile_path;           /* the mode's file, NULL when it has none */
    char mode[64];
    char from[PH_TAR_LIMIT_FREE + 1];   /* per limit: 'f'lag, 'p'rofile, 'd'efault */
} collect_limits;

static uint64_t *
limit_field(ph_tar_limits *l, ph_tar_limit which)
{
    return which == PH_TAR_LIMIT_BYTES ? &l->max_bytes
         : which == PH_TAR_LIMIT_ENTRIES ? &l->max_entries : &l->min_free_bytes;
}

static void
collect_limits_of(ph_run *r, const char *mode, collect_limits *cl)
{
    ph_profile *p = ph_profiles_find(&r->profiles, mode);

    memset(cl, 0, sizeof *cl);
    snprintf(cl->mode, sizeof cl->mode, "%s", mode ? mode : "MODE");
    cl->profile_path = p ? p->path : NULL;
    for (int w = PH_TAR_LIMIT_BYTES; w <= PH_TAR_LIMIT_FREE; w++) {
        uint64_t flag = *limit_field(&r->opts.collect, w), prof = p ? *limit_field(&p->collect, w) : 0;

        *limit_field(&cl->lim, w) = flag ? flag : prof;
        cl->from[w] = flag ? 'f' : prof ? 'p' : 'd';
    }
}

/* V for a flag: "32GiB" when exact in a binary unit, else bytes. */
static const char *
size_arg(uint64_t v, char buf[32])
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

/* A collection stopped by limit WHICH: say in ERR's message where the
 * limit was set, and in its hint how to raise it and retry with CMD
 * ("stop", "collect"); the container is kept. */
static int
limit_hint(const collect_limits *cl, ph_tar_limit which, const char *cmd, const char *service, const char *id,
           ph_error_t *err)
{
    static const char *const flags[] = { "", "--max-bytes", "--max-entries", "--min-free" };
    static const uint64_t defaults[] = { 0, PH_TAR_DEFAULT_MAX_BYTES, PH_TAR_DEFAULT_MAX_ENTRIES, 0 };
    const char *name = ph_tar_limit_name(which), *file = cl->profile_path ? cl->profile_path : "the mode's profile";
    uint64_t v = *limit_field((ph_tar_limits *)&cl->lim, which);
    char more[32], where[PATH_MAX + 64];
    size_t n;

    if (*err == NULL || which < PH_TAR_LIMIT_BYTES || which > PH_TAR_LIMIT_FREE)
        return -1;
    if (cl->from[which] == 'f')
        snprintf(where, sizeof where, "set with %s", flags[which]);
    else if (cl->from[which] == 'p')
        snprintf(where, sizeof where, "set in %s", file);
    else
        snprintf(where, sizeof where, "the default");
    n = strlen((*err)->msg);
    snprintf((*err)->msg + n, sizeof (*err)->msg - n, " (%s)", where);
    if (which == PH_TAR_LIMIT_FREE)
        return ph_error_hint(err, "the container %.12s is kept with its artifacts, no partial run left; free "
                             "space on the disk of the output dir, or lower `min_free` (`profharness %s "
                             "--min-free 256MiB %s`, or `collect: {min_free: 256MiB}` in %s), and retry",
                             id, cmd, service, file);
    if (v == 0)
        v = defaults[which];
    if (which == PH_TAR_LIMIT_ENTRIES)
        snprintf(more, sizeof more, "%" PRIu64, v > UINT64_MAX / 2 ? v : v * 2);
    else
        size_arg(v > UINT64_MAX / 2 ? v : v * 2, more);
    return ph_error_hint(err, "the container %.12s is kept with its artifacts, no partial run left; raise the "
                         "limit and retry: `profharness %s %s %s %s`, or `collect: {%s: %s}` in %s "
                         "(`unlimited` turns it off)", id, cmd, flags[which], more, service, name, more, file);
}

/* ---- collection ------------------------------------------------------- */

typedef struct collect_result {
    char run_dir[PATH_MAX];   /* as the user can open it: <out>/<service>/<run> */
    int run_fd;               /* the run dir, wherever it is moved: run.json goes there */
    ph_tar_stats stats;
    json_t *record;           /* the shim's completion record, or NULL ... */
    char record_problem[256]; /* ... and why */
    json_t *missing;          /* globs of the mode's artifacts that matched nothing */
    int oom_killed;           /* the Engine says the kernel's OOM killer struck */
    collect_limits limits;    /* what the collection ran under */
} collect_result;

static void
collect_result_done(collect_result *res)
{
    if (res->run_fd >= 0)
        close(res->run_fd);
    res->run_fd = -1;
    json_decref(res->record);
    res->record = NULL;
    json_decref(res->missing);
    res->missing = NULL;
}

typedef struct extract_ctx {
    ph_tar_extract *x;
    ph_error_t *err;
} extract_ctx;

static int
extract_cb(void *ud, const char *data, size_t len)
{
    extract_ctx *a = ud;
    int sig = ph_interrupted();

    if (sig != 0)
        return ph_interrupt_fail(a->err, sig);
    return ph_tar_extract_feed(a->x, data, len, a->err);
}

int
ph_run_link_replace(int svcfd, const char *target, const char *link, ph_error_t *err)
{
    char tmp[64];

    for (int tries = 0;; tries++) {
        memcpy(tmp, TEMP_PREFIX "link-", sizeof TEMP_PREFIX + 4);
        ph_fs_random_name(tmp + sizeof TEMP_PREFIX + 4, 12);
        tmp[sizeof TEMP_PREFIX + 16] = '\0';
        if (symlinkat(target, svcfd, tmp) == 0)
            break;
        if (errno != EEXIST || tries == 100)
            return ph_fail(err, errno, "symlink `%s`", tmp);
    }
    ph_run_give_at(svcfd, tmp);
    if (renameat(svcfd, tmp, svcfd, link) < 0) {
        int e = errno;
        unlinkat(svcfd, tmp, 0);
        return ph_fail(err, e, "replace the link `%s`", link);
    }
    return 0;
}

/* The newest regular file in the directory DIRFD matching GLOB, by mtime
 * then name. */
static int
newest_match(int dirfd, const char *glob, char *out, size_t len)
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

static int
update_links(ph_run *r, int svcfd, int runfd, const char *run_name, const char *mode, ph_error_t *err)
{
    char target[PATH_MAX], file[NAME_MAX + 1];
    ph_profile *p = ph_profiles_find(&r->profiles, mode);

    if (ph_run_link_replace(svcfd, run_name, "latest", err) < 0)
        return -1;
    if (p == NULL)
        return 0;
    for (size_t i = 0; i < p->n_artifacts; i++) {
        const ph_artifact_spec *a = &p->artifacts[i];

        if (a->latest == NULL || !newest_match(runfd, a->glob, file, sizeof file))
            continue;
        snprintf(target, sizeof target, "%s/%s", run_name, file);
        if (ph_run_link_replace(svcfd, target, a->latest, err) < 0)
            return -1;
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
        memcpy(tmp, TEMP_PREFIX, sizeof TEMP_PREFIX - 1);
        ph_fs_random_name(tmp + sizeof TEMP_PREFIX - 1, 12);
        tmp[sizeof TEMP_PREFIX + 11] = '\0';
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
    ph_run_give_at(dirfd, tmp);
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        return ph_fail(err, e, "rename into `%s`", shown);
    }
    return 0;
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
ph_run_write_json_at(int dirfd, const char *shown, const char *name, json_t *j, ph_error_t *err)
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

/* The globs of MODE's artifacts that match no regular file in DIRFD: what
 * the profiler did not write (a process killed by SIGKILL, a sampler that
 * never reached its first write). */
static json_t *
missing_artifacts(ph_run *r, const char *mode, int dirfd)
{
    ph_profile *p = ph_profiles_find(&r->profiles, mode);
    json_t *missing = json_array();
    char file[NAME_MAX + 1];

    for (size_t i = 0; p != NULL && missing != NULL && i < p->n_artifacts; i++)
        if (!newest_match(dirfd, p->artifacts[i].glob, file, sizeof file))
            json_array_append_new(missing, json_string(p->artifacts[i].glob));
    return missing;
}

/* Remove the temp dir NAME in SVCFD whose fd is TMPFD: its contents through
 * the fd (what is in our dir, wherever it is), then the name if it is
 * still our dir. */
static void
remove_temp(const char *svc_path, int svcfd, const char *name, int tmpfd)
{
    ph_error_t e = NULL;
    struct stat a, b;

    if (ph_fs_remove_tree_at(tmpfd, ".", &e) < 0) {
        ph_warn("could not empty the temp dir `%s/%s`: %s", svc_path, name, e->msg);
        ph_error_free(&e);
    }
    if (fstat(tmpfd, &a) == 0 && fstatat(svcfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        unlinkat(svcfd, name, AT_REMOVEDIR);
}

/* Stream /opt/profiling/<service> out of container C into a new run dir
 * under SVCFD (locked).  SNAPSHOT: a copy while it runs (a distinct name,
 * links untouched).  On failure nothing is left on the host. */
static int
collect_into_run_dir(ph_run *r, json_t *c, int svcfd, int snapshot, collect_result *res, ph_error_t *err)
{
    const char *id = json_string_value(json_object_get(c, "Id"));
    const char *service = ph_run_label(c, PH_LABEL_SERVICE);
    const char *mode = ph_run_label(c, PH_LABEL_MODE);
    const char *run = ph_run_label(c, PH_LABEL_RUN);
    char tmp[NAME_MAX + 1], src[PATH_MAX], run_name[NAME_MAX], final[NAME_MAX + 1], stamp[17], esc[256];
    ph_tar_extract *x = NULL;
    extract_ctx ctx;
    int tmpfd = -1, sig, finished = 0;
    uid_t uid;
    gid_t gid;
    ph_stage *st = NULL;
    ph_engine *e;

    res->run_fd = -1;
    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    if (service == NULL || run == NULL || mode == NULL)
        return ph_fail(err, 0, "container %.12s has no profharness labels", id);
    if (!safe_name(run))
        return ph_fail(err, 0, "container %.12s: its run label `%s` is no directory name", id,
                       ph_escape(esc, sizeof esc, run));
    ph_run_utc_stamp(stamp);
    if (snapshot)
        snprintf(run_name, sizeof run_name, "%s-snapshot-%s", run, stamp);
    else
        snprintf(run_name, sizeof run_name, "%s", run);
    if (ph_fs_mkdtemp_at(svcfd, TEMP_PREFIX, 0700, tmp, sizeof tmp, err) < 0)
        return ph_error_wrap(err, "collect the artifacts of `%s` into `%s/%s`", service, r->opts.out_dir, service);
    tmpfd = openat(svcfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tmpfd < 0) {
        ph_fail(err, errno, "open `%s/%s/%s`", r->opts.out_dir, service, tmp);
        unlinkat(svcfd, tmp, AT_REMOVEDIR);
        return ph_error_wrap(err, "collect the artifacts of `%s`", service);
    }

    st = ph_stage_beginf("collect", 0, "stream and extract %s/%s", PH_CONTAINER_OUT, service);
    /* Through our fd: no link planted under <out>/<service> meanwhile can
     * redirect the extraction. */
    collect_limits_of(r, mode, &res->limits);
    x = ph_tar_extract_new_at(tmpfd, 1, &res->limits.lim, err);
    if (x == NULL)
        goto fail;
    ctx.x = x;
    ctx.err = err;
    snprintf(src, sizeof src, "%s/%s", PH_CONTAINER_OUT, service);
    if (ph_engine_archive_get(e, id, src, extract_cb, &ctx, err) < 0)
        goto fail;
    finished = 1;
    if (ph_tar_extract_finish(x, &res->stats, err) < 0)
        goto fail;
    ph_tar_extract_free(x);
    x = NULL;
    ph_stage_bytes(st, 0, res->stats.bytes);
    ph_stage_end(st);
    st = NULL;
    if ((sig = ph_interrupted()) != 0) {
        ph_interrupt_fail(err, sig);
        goto fail;
    }

    ph_run_record_read(tmpfd, PH_RECORD_NAME, &res->record, res->record_problem, sizeof res->record_problem);
    res->missing = missing_artifacts(r, mode, tmpfd);
    if (fchmod(tmpfd, 0755) < 0) {
        ph_fail(err, errno, "chmod `%s/%s/%s`", r->opts.out_dir, service, tmp);
        goto fail;
    }
    /* Through our fd: the tree we extracted, whatever the name points at. */
    st = ph_run_invoker(&uid, &gid) ? ph_stage_begin("host", "give the files to the invoker", 0) : NULL;
    if (ph_run_invoker(&uid, &gid) && ph_fs_chown_tree_at(tmpfd, ".", uid, gid, err) < 0)
        goto fail;
    ph_stage_end(st);
    st = NULL;
    if ((sig = ph_interrupted()) != 0) {
        ph_interrupt_fail(err, sig);
        goto fail;
    }
    st = ph_stage_begin("host", "rename into place and link", 0);
    snprintf(final, sizeof final, "%s", run_name);
    for (int k = 2; renameat2(svcfd, tmp, svcfd, final, RENAME_NOREPLACE) < 0; k++) {
        if ((errno != EEXIST && errno != ENOTEMPTY) || k == 1000) {
            ph_fail(err, errno, "rename `%s/%s/%s` to `%s`", r->opts.out_dir, service, tmp, final);
            goto fail;
        }
        snprintf(final, sizeof final, "%s.%d", run_name, k);
    }
    snprintf(res->run_dir, sizeof res->run_dir, "%s/%s/%s", r->opts.out_dir, service, final);
    res->run_fd = tmpfd;
    if (!snapshot && update_links(r, svcfd, tmpfd, final, mode, err) < 0) {
        ph_error_wrap(err, "the artifacts are in place in %s, but", res->run_dir);
        return ph_run_stage_done(st, -1, err);
    }
    ph_stage_end(st);
    return 0;
fail:
    ph_run_stage_done(st, -1, err);
    if (x != NULL && !finished) {
        /* The stats of a failed feed: which limit, if one stopped it. */
        ph_error_t ignored = NULL;

        ph_tar_extract_finish(x, &res->stats, &ignored);
        ph_error_free(&ignored);
    }
    ph_tar_extract_free(x);
    /* Keep nothing half-written: the container still has everything. */
    snprintf(src, sizeof src, "%s/%s", r->opts.out_dir, service);
    remove_temp(src, svcfd, tmp, tmpfd);
    close(tmpfd);
    return ph_error_wrap(err, "collect the artifacts of `%s`", service);
}

/* The names of MODE's artifacts found in DIRFD ("strace.log"; a glob's
 * `latest` name, else the file's), joined with ", " into OUT. */
static void
present_artifacts(ph_run *r, const char *mode, int dirfd, char *out, size_t len)
{
    ph_profile *p = ph_profiles_find(&r->profiles, mode);
    char file[NAME_MAX + 1], esc[NAME_MAX * 4 + 1];
    size_t o = 0;

    out[0] = '\0';
    for (size_t i = 0; p != NULL && i < p->n_artifacts && o < len; i++) {
        if (!newest_match(dirfd, p->artifacts[i].glob, file, sizeof file))
            continue;
        ph_escape(esc, sizeof esc, p->artifacts[i].latest ? p->artifacts[i].latest : file);
        o += (size_t)snprintf(out + o, len - o, "%s%s", o ? ", " : "", esc);
    }
}

static void
describe_record(ph_run *r, const char *service, const char *mode, const collect_result *res)
{
    json_t *rec = res->record, *esc_list, *g;
    const char *sig;
    char esc[128], globs[512] = "", present[512], story[1024];
    size_t i, o = 0;
    int level;

    json_array_foreach(res->missing, i, g)
        o += (size_t)snprintf(globs + o, o < sizeof globs ? sizeof globs - o : 0, "%s`%s`", i ? ", " : "",
                              json_string_value(g));
    if (o > 0)
        ph_warn("%s: the profiler wrote no %s (listed in %s as missing_artifacts; %s says how the service ended)",
                service, globs, PH_RUN_META_NAME, PH_RECORD_NAME);
    /* The kernel's SIGKILL is no stop: whoever it hit had no chance to
     * flush, and the record (written by ph-init, which survived) may not
     * know it was the OOM killer. */
    if (res->oom_killed && !(rec && json_is_string(json_object_get(rec, "outcome")) &&
                             strcmp(json_string_value(json_object_get(rec, "outcome")), "oom_killed") == 0))
        ph_warn("%s: the OOM killer struck in the container (its memory limit): what the profiler wrote may be "
                "incomplete", service);
    if (rec == NULL) {
        ph_warn("%s: no valid completion record: %s; the profiled process may not have stopped through the "
                "shim, so output may be incomplete (marked in %s)", service, res->record_problem, PH_RUN_META_NAME);
        return;
    }
    /* What happened, plainly, from the shim's outcome. */
    present_artifacts(r, mode, res->run_fd, present, sizeof present);
    if ((level = ph_run_record_story(rec, present, story, sizeof story)) >= 0) {
        ph_log(level ? PH_LOG_WARN : PH_LOG_INFO, "%s: %s", service, story);
        return;
    }
    /* An older shim's record: no outcome. */
    sig = json_string_value(json_object_get(rec, "signal"));
    esc_list = json_object_get(rec, "escalations");
    if (sig != NULL)
        ph_info("%s: service ended by %s (exit %lld)", service, ph_escape(esc, sizeof esc, sig),
                (long long)json_integer_value(json_object_get(rec, "exit_code")));
    else
        ph_info("%s: service exited with status %lld", service,
                (long long)json_integer_value(json_object_get(rec, "exit_code")));
    if (json_array_size(esc_list) > 0)
        ph_warn("%s: the service did not stop on its stop signal; escalated (%zu step%s, see %s)", service,
                json_array_size(esc_list), json_array_size(esc_list) == 1 ? "" : "s", PH_RECORD_NAME);
    if (!ph_run_record_complete(rec) && !res->oom_killed)
        ph_warn("%s: the profiler itself was killed before it could finish: what it wrote may be incomplete "
                "(see %s)", service, PH_RECORD_NAME);
}

/* harness.folded and harness.trace.json (ph_timing_out.h) of the command
 * so far into the run dir; a failure is a warning: timings never cost a
 * run. */
static void
write_timing_files(const collect_result *res)
{
    const ph_stage *tree = ph_timing_root();
    json_t *trace;
    ph_error_t e = NULL;
    char shown[PATH_MAX + 32];

    if (tree == NULL)
        return;
    snprintf(shown, sizeof shown, "%s/%s", res->run_dir, PH_HARNESS_FOLDED);
    if (write_file_at(res->run_fd, shown, PH_HARNESS_FOLDED, fill_folded, tree, &e) == 0) {
        snprintf(shown, sizeof shown, "%s/%s", res->run_dir, PH_HARNESS_TRACE);
        trace = ph_timing_trace_json(tree);
        if (trace == NULL)
            ph_fail(&e, ENOMEM, "build `%s`", shown);
        else
            write_file_at(res->run_fd, shown, PH_HARNESS_TRACE, fill_json_compact, trace, &e);
        json_decref(trace);
    }
    if (e != NULL) {
        ph_warn("%s (the run is complete without it)", e->msg);
        ph_error_free(&e);
    }
}

static int
write_run_meta(json_t *c, const collect_result *res, ph_error_t *err)
{
    ph_stage *st = ph_stage_begin("host", "write run.json and the harness timings", 0);
    json_t *meta;
    char ended[32], shown[PATH_MAX + 16];
    int rc;

    ph_run_utc_iso(ended, sizeof ended);
    meta = json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:s, s:I, s:I, s:I, s:O?, s:s?, s:O?, s:b}",
                     "service", ph_run_label(c, PH_LABEL_SERVICE),
                     "mode", ph_run_label(c, PH_LABEL_MODE),
                     "run", ph_run_label(c, PH_LABEL_RUN),
                     "started_at", ph_run_label(c, PH_LABEL_STARTED),
                     "container", json_string_value(json_object_get(c, "Id")),
                     "collected_at", ended,
                     "files", (json_int_t)res->stats.files,
                     "bytes", (json_int_t)res->stats.bytes,
                     "refused_entries", (json_int_t)res->stats.refused,
                     "completion", res->record,
                     "completion_problem", res->record == NULL ? res->record_problem : NULL,
                     "missing_artifacts", res->missing,
                     "oom_killed", res->oom_killed);
    /* attach: the service's container, which kept running (the report says so) */
    if (meta != NULL && ph_run_label(c, PH_LABEL_ATTACHED) != NULL)
        json_object_set_new(meta, "attached_to", json_string(ph_run_label(c, PH_LABEL_ATTACHED)));
    /* The whole stage tree so far, and the trace id of its spans; the
     * three files as of one instant. */
    ph_timing_read_begin();
    if (meta == NULL || ph_timing_run_json(meta) < 0) {
        ph_timing_read_end();
        json_decref(meta);
        return ph_run_stage_done(st, ph_fail(err, ENOMEM, "build %s", PH_RUN_META_NAME), err);
    }
    write_timing_files(res);
    ph_timing_read_end();
    snprintf(shown, sizeof shown, "%s/%s", res->run_dir, PH_RUN_META_NAME);
    rc = ph_run_write_json_at(res->run_fd, shown, PH_RUN_META_NAME, meta, err);
    json_decref(meta);
    return ph_run_stage_done(st, rc, err);
}

/* ---- stop ------------------------------------------------------------- */

static long
stop_budget_s(ph_run *r, json_t *c)
{
    ph_profile *p = ph_profiles_find(&r->profiles, ph_run_label(c, PH_LABEL_MODE));
    long long ns;

    if (p == NULL)
        return 600;
    ns = p->stop_grace_ns + (long long)p->escalate.n * p->escalate_grace_ns;
    return (long)(ns / 1000000000LL) + 30;
}

static int
is_created(json_t *c)
{
    const char *state = json_string_value(json_object_get(c, "State"));

    return state != NULL && strcmp(state, "created") == 0;
}

/* The stop itself: the wait registered first (nothing can be missed),
 * then SIGTERM to the shim, then the wait for the profiler to flush and
 * exit within BUDGET seconds; a "profiler" stage, whose time is that. */
static int
signal_and_wait(ph_engine *e, json_t *c, long budget, int *timed_out, ph_error_t *err)
{
    const char *service = ph_run_label(c, PH_LABEL_SERVICE), *mode = ph_run_label(c, PH_LABEL_MODE);
    const char *id = json_string_value(json_object_get(c, "Id"));
    ph_stage *st = ph_stage_beginf("profiler", 0, "the %s profiler flushes and exits", mode ? mode : "?");
    ph_engine_wait *w = NULL;
    long code = 0;

    if (ph_engine_container_wait_begin(e, id, &w, err) < 0)
        return ph_run_stage_done(st, -1, err);
    if (ph_run_is_running(c)) {
        ph_info("%s: stopping %s profiler (waiting up to %ld s for it to flush)", service, mode, budget);
        if (ph_engine_container_kill(e, id, "SIGTERM", err) < 0) {
            /* It may have exited between the listing and now. */
            ph_debug("kill: %s", (*err)->msg);
            ph_error_free(err);
        }
    }
    return ph_run_stage_done(st, ph_engine_container_wait_end(w, budget, &code, timed_out, err), err);
}

/* The size of DIR/NAME, for a "report" stage's bytes out; 0 if absent. */
static uint64_t
file_size_in(const char *dir, const char *name)
{
    char path[PATH_MAX];
    struct stat sb;

    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path || stat(path, &sb) < 0)
        return 0;
    return (uint64_t)sb.st_size;
}

/* The run's report.html and summary.json, and its headline on stderr
 * (stdout keeps the parseable "service<TAB>run dir" lines).  A report that
 * cannot be written costs a warning, never the run: the artifacts are
 * already in place.  A "report" stage of the command (after run.json, so
 * the command's tree has it and the run's own run.json does not). */
static void
write_report(ph_run *r, const char *run_dir)
{
    ph_stage *st = ph_stage_begin("report", "write report.html and summary.json", 0);
    ph_report_headline h;
    ph_error_t rerr = NULL;

    if (ph_report_write_run(run_dir, &r->profiles, &h, &rerr) < 0) {
        ph_warn("no report for %s: %s (the artifacts are there; retry with `profharness report %s`)", run_dir,
                rerr->msg, run_dir);
        ph_run_stage_done(st, -1, &rerr);
        ph_error_free(&rerr);
        return;
    }
    ph_stage_bytes(st, 0, file_size_in(run_dir, "report.html") + file_size_in(run_dir, "summary.json"));
    ph_stage_end(st);
    ph_report_print_headline(stderr, &h);
}

/* contrib/profiling/index.html, after a command collected something. */
static void
write_index(ph_run *r)
{
    ph_stage *st = ph_stage_begin("report", "write the index of runs", 0);
    ph_error_t rerr = NULL;

    if (ph_report_write_index(r->opts.out_dir, &rerr) < 0) {
        ph_warn("the index of runs was not updated: %s (retry with `profharness report`)", rerr->msg);
        ph_run_stage_done(st, -1, &rerr);
        ph_error_free(&rerr);
        return;
    }
    ph_stage_bytes(st, 0, file_size_in(r->opts.out_dir, "index.html"));
    ph_stage_end(st);
}

/* Gracefully stop one profiled container and collect it.  On any failure
 * the container is kept and the hint says how to recover. */
static int
stop_one(ph_run *r, json_t *listed, ph_error_t *err)
{
    const char *service = ph_run_label(listed, PH_LABEL_SERVICE);
    const char *id = json_string_value(json_object_get(listed, "Id"));
    ph_cleanup_close int lock = -1;
    ph_cleanup_close int svcfd = -1;
    json_t *fresh = NULL, *c;
    collect_result res = { .run_fd = -1 };
    ph_engine *e;
    int found = 0, timed_out = 0, rc = -1;
    long budget;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    if (ph_run_lock_service(r, service, &svcfd, &lock, err) < 0)
        return -1;
    /* Whoever held the lock may have collected it already. */
    if (ph_engine_container_inspect(e, id, &fresh, &found, err) < 0)
        return -1;
    if (!found) {
        ph_info("%s: nothing to stop (already collected)", service);
        return 0;
    }
    json_decref(fresh);
    c = listed;

    if (is_created(c)) {
        /* Made but never started (a start interrupted between create and
         * start): nothing ran, so there is nothing to collect. */
        if (ph_engine_container_remove(e, id, 1, err) < 0)
            return ph_error_wrap(err, "remove the never-started container %.12s of `%s`", id, service);
        ph_info("%s: container %.12s was created but never started: nothing to collect; removed", service, id);
        return 0;
    }

    ph_run_refresh(r, c); /* the runtimes' perf maps current and in the run */
    budget = stop_budget_s(r, c);
    if (signal_and_wait(e, c, budget, &timed_out, err) < 0)
        goto keep;
    if (timed_out) {
        ph_fail(err, 0, "%s: the profiled container did not exit within %ld s", service, budget);
        goto keep;
    }
    ph_run_convert(r, c); /* perf: folded stacks, flamegraph, pprof beside perf.data */
    if (ph_engine_container_inspect(e, id, &fresh, &found, err) < 0)
        goto keep;
    res.oom_killed = json_is_true(json_object_get(json_object_get(fresh, "State"), "OOMKilled"));
    json_decref(fresh);

    ph_interrupt_begin(); /* a temp dir exists from here: signals only set a flag */
    if (collect_into_run_dir(r, c, svcfd, 0, &res, err) < 0) {
        ph_interrupt_end();
        if (res.run_fd < 0)
            goto keep;
        /* In place; only the links failed: the container is not needed. */
        ph_error_hint(err, "the run is complete in %s; the container %.12s is kept: remove it with "
                      "`profharness stop --discard %s`", res.run_dir, id, service);
        goto out;
    }
    describe_record(r, service, ph_run_label(c, PH_LABEL_MODE), &res);
    ph_run_attach_describe(r, c, res.record);
    ph_run_explain_samples(service, res.run_fd);
    ph_run_service_log(r, service, id, res.run_fd, res.run_dir); /* its output goes with the container */

    if (ph_engine_container_remove(e, id, 0, err) < 0) {
        ph_interrupt_end();
        ph_error_wrap(err, "artifacts are safe in %s, but removing container %.12s failed", res.run_dir, id);
        ph_error_hint(err, "remove it by hand: docker rm %.12s", id);
        goto out;
    }
    rc = write_run_meta(c, &res, err);
    ph_interrupt_end();
    if (rc < 0)
        goto out;
    write_report(r, res.run_dir);
    printf("%s\t%s\n", service, res.run_dir);
    fflush(stdout);
    goto out;
keep:
    if (res.stats.limit != PH_TAR_LIMIT_NONE)
        limit_hint(&res.limits, res.stats.limit, "stop", service, id, err);
    else
        ph_error_hint(err, "the container %.12s is kept with its artifacts; retry with `profharness stop %s` "
                      "(or `profharness collect %s`); if it cannot be collected, give the run up with "
                      "`profharness stop --discard %s`", id, service, service, service);
out:
    collect_result_done(&res);
    return rc;
}

int
ph_run_stop_one(ph_run *r, json_t *listed, ph_error_t *err)
{
    ph_stage *st = ph_run_container_stage(listed, "stop");

    return ph_run_stage_done(st, stop_one(r, listed, err), err);
}

/* One job of a stop (or discard): every profiled container of service I. */
typedef struct stop_jobs {
    ph_svc_list *sl;
    size_t off; /* the wave's first service in SL */
    int discard;
    int *acted;
} stop_jobs;

static void
log_error(ph_error_t e)
{
    ph_log(PH_LOG_ERROR, "%s", e->msg);
    if (e->hint[0])
        ph_log(PH_LOG_ERROR, "hint: %s", e->hint);
}

/* A fault in one container does not strand the service's others (the
 * last fault is returned, earlier ones said); an interrupt ends the job. */
static int
stop_job(ph_run *r, size_t i, void *ud, ph_error_t *err)
{
    stop_jobs *j = ud;
    const char *name;

    i += j->off;
    name = j->sl->v[i]->name;
    json_t *list = NULL, *c;
    ph_error_t fault = NULL;
    size_t k;
    int sig = ph_interrupted();

    if (sig != 0) {
        ph_interrupt_fail(err, sig);
        return ph_error_wrap(err, "stopped before `%s`", name);
    }
    if (ph_run_list(r, name, &list, err) < 0)
        return -1;
    json_array_foreach(list, k, c) {
        if (!ph_run_is_profiled(c))
            continue;
        if ((sig = ph_interrupted()) != 0) {
            ph_interrupt_fail(err, sig);
            ph_error_wrap(err, "stopped before a container of `%s`", name);
            break;
        }
        /* a stage per container, named for its service: a job of its own
         * would only repeat the name */
        if ((j->discard ? ph_run_stage_done(ph_run_container_stage(c, "discard"), ph_run_discard_one(r, c, err), err)
                        : ph_run_stop_one(r, c, err)) < 0) {
            if ((*err)->status > PH_EXIT_SIGNAL)
                break;
            if (fault != NULL) {
                log_error(fault);
                ph_error_free(&fault);
            }
            fault = *err;
            *err = NULL;
            continue;
        }
        j->acted[i]++;
    }
    json_decref(list);
    if (*err != NULL) { /* interrupted */
        if (fault != NULL)
            log_error(fault);
        ph_error_free(&fault);
        return -1;
    }
    *err = fault;
    return fault != NULL ? -1 : 0;
}

/* SL in waves, as compose stops a project: a service's wave comes after
 * that of every selected service depending on it, so dependants stop
 * before what they depend on; each wave's services stop at once.  Sorts
 * SL by wave (stable: the caller's order within one) into DEPTH. */
static void
stop_waves(ph_svc_list *sl, size_t *depth)
{
    for (size_t i = 0; i < sl->n; i++)
        depth[i] = 0;
    for (size_t pass = 0; pass < sl->n; pass++) { /* at most n: no cycle in a loaded project */
        int moved = 0;

        for (size_t i = 0; i < sl->n; i++)
            for (size_t j = 0; j < sl->n; j++)
                for (size_t k = 0; j != i && k < sl->v[j]->depends_on.n; k++)
                    if (strcmp(sl->v[j]->depends_on.v[k], sl->v[i]->name) == 0 && depth[i] <= depth[j]) {
                        depth[i] = depth[j] + 1;
                        moved = 1;
                    }
        if (!moved)
            break;
    }
    for (size_t i = 1; i < sl->n; i++) {
        for (size_t j = i; j > 0 && depth[j - 1] > depth[j]; j--) {
            ph_service *t = sl->v[j];
            size_t d = depth[j];

            sl->v[j] = sl->v[j - 1];
            depth[j] = depth[j - 1];
            sl->v[j - 1] = t;
            depth[j - 1] = d;
        }
    }
}

/* Stop (or discard) every profiled container of the services in SL,
 * wave by wave (stop_waves), each wave concurrently (ph_run_parallel,
 * bounded): the time is the slowest service's of each wave, not the sum.
 * A fault in one service does not strand the others; an interrupt stops
 * every job before its next container.  One fault is returned as it is;
 * several are each said and summed up. */
static int
for_each_profiled(ph_run *r, ph_svc_list *caller, int discard, int *acted, ph_error_t *err)
{
    /* the waves' order is this function's: the caller's list is left as it is */
    ph_svc_list waves = { calloc(caller->n + 1, sizeof *waves.v), caller->n }, *sl = &waves;
    stop_jobs j = { .sl = sl, .discard = discard, .acted = calloc(sl->n + 1, sizeof *j.acted) };
    ph_error_t *errs = calloc(sl->n + 1, sizeof *errs);
    size_t *depth = calloc(sl->n + 1, sizeof *depth);
    ph_engine *e;
    size_t failed = 0, keep = sl->n;

    if (waves.v == NULL || j.acted == NULL || errs == NULL || depth == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    /* The first contact (and its errors) on this thread, before any job. */
    if (ph_run_engine(r, &e, err) < 0)
        goto out;
    /* The workers' sections nest in this one: only this (the main)
     * thread installs and restores the handlers. */
    memcpy(waves.v, caller->v, caller->n * sizeof *waves.v);
    stop_waves(sl, depth);
    ph_interrupt_begin();
    for (size_t w = 0; w < sl->n;) {
        size_t end = w;

        while (end < sl->n && depth[end] == depth[w])
            end++;
        j.off = w;
        failed += ph_run_parallel(r, end - w, ph_run_jobs_max(), stop_job, NULL, &j, errs + w);
        w = end;
    }
    ph_interrupt_end();
    for (size_t i = 0; i < sl->n; i++) {
        *acted += j.acted[i];
        if (errs[i] != NULL && (keep == sl->n || errs[i]->status > PH_EXIT_SIGNAL))
            keep = i; /* the first fault, or an interrupt */
    }
    for (size_t i = 0; i < sl->n; i++) {
        if (errs[i] == NULL || (i == keep && (failed == 1 || errs[i]->status > PH_EXIT_SIGNAL)))
            continue;
        log_error(errs[i]);
        ph_error_free(&errs[i]);
    }
    if (failed == 1 || (keep < sl->n && errs[keep] != NULL)) {
        *err = errs[keep];
        errs[keep] = NULL;
    } else if (failed > 1) {
        ph_fail(err, 0, "%zu of %zu services could not be %s cleanly (each said above)", failed, sl->n,
                discard ? "discarded" : "stopped");
    }
out:
    free(j.acted);
    free(errs);
    free(depth);
    free(waves.v);
    return *err != NULL ? -1 : 0;
}

int
ph_run_stop_services(ph_run *r, ph_svc_list *sl, int quiet_if_none, ph_error_t *err)
{
    int stopped = 0;

    if (for_each_profiled(r, sl, 0, &stopped, err) < 0)
        return -1;
    if (stopped == 0 && !quiet_if_none)
        ph_info("nothing to stop: no profiled service is running in project `%s`", r->compose->project);
    if (stopped > 0)
        write_index(r);
    return 0;
}

int
ph_run_stop(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    ph_run_order_dependants_first(r, &sl); /* as compose stops them */
    rc = ph_run_stop_services(r, &sl, 0, err);
    free(sl.v);
    return rc;
}

/* ---- discard ---------------------------------------------------------- */

int
ph_run_discard_one(ph_run *r, json_t *c, ph_error_t *err)
{
    const char *service = ph_run_label(c, PH_LABEL_SERVICE);
    const char *id = json_string_value(json_object_get(c, "Id"));
    const char *run = ph_run_label(c, PH_LABEL_RUN);
    const char *state = json_string_value(json_object_get(c, "State"));
    ph_cleanup_close int lock = -1;
    ph_cleanup_close int svcfd = -1;
    char esc[256];
    ph_engine *e;
    ph_stage *st = ph_run_container_stage(c, "discard");

    if (ph_run_engine(r, &e, err) < 0 || ph_run_lock_service(r, service, &svcfd, &lock, err) < 0)
        return ph_run_stage_done(st, -1, err);
    ph_warn("%s: discarding container %.12s (%s, run %s) without collecting it: whatever it holds in %s/%s "
            "is lost", service, id, state ? state : "?", ph_escape(esc, sizeof esc, run ? run : "?"),
            PH_CONTAINER_OUT, service);
    if (ph_engine_container_remove(e, id, 1, err) < 0)
        return ph_run_stage_done(st, ph_error_wrap(err, "discard container %.12s of `%s`", id, service), err);
    ph_info("%s: container %.12s removed; nothing was collected", service, id);
    return ph_run_stage_done(st, 0, err);
}

int
ph_run_discard(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc, discarded = 0;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    rc = for_each_profiled(r, &sl, 1, &discarded, err);
    if (rc == 0 && discarded == 0)
        ph_info("nothing to discard: no profiled container in project `%s`", r->compose->project);
    free(sl.v);
    return rc;
}

/* ---- collect ---------------------------------------------------------- */

/* A copy of what a running container has now, as a -snapshot- run. */
static int
snapshot_one(ph_run *r, json_t *c, ph_error_t *err)
{
    const char *service = ph_run_label(c, PH_LABEL_SERVICE);
    ph_cleanup_close int lock = -1;
    ph_cleanup_close int svcfd = -1;
    ph_stage *st = ph_run_container_stage(c, "snapshot");
    collect_result res = { .run_fd = -1 };
    int rc;

    if (ph_run_lock_service(r, service, &svcfd, &lock, err) < 0)
        return ph_run_stage_done(st, -1, err);
    ph_run_snapshot_request(r, c); /* what the profiler has now, not what it wrote last */
    ph_interrupt_begin();
    rc = collect_into_run_dir(r, c, svcfd, 1, &res, err);
    if (rc < 0 && res.stats.limit != PH_TAR_LIMIT_NONE)
        limit_hint(&res.limits, res.stats.limit, "collect", service, json_string_value(json_object_get(c, "Id")),
                   err);
    if (rc == 0)
        ph_run_explain_samples(service, res.run_fd);
    if (rc == 0)
        ph_run_service_log(r, service, json_string_value(json_object_get(c, "Id")), res.run_fd, res.run_dir);
    if (rc == 0)
        rc = write_run_meta(c, &res, err);
    ph_interrupt_end();
    if (rc == 0) {
        write_report(r, res.run_dir);
        printf("%s\t%s\n", service, res.run_dir);
    }
    collect_result_done(&res);
    return ph_run_stage_done(st, rc, err);
}

int
ph_run_collect(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc = 0, any = 0;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        json_t *list = NULL, *c;
        size_t k;

        if (ph_run_list(r, sl.v[i]->name, &list, err) < 0) {
            rc = -1;
            break;
        }
        json_array_foreach(list, k, c) {
            if (!ph_run_is_profiled(c))
                continue;
            any = 1;
            /* A stopped profiled container: a stop that failed half way. */
            rc = ph_run_is_running(c) ? snapshot_one(r, c, err) : ph_run_stop_one(r, c, err);
            if (rc < 0)
                break;
        }
        json_decref(list);
    }
    if (rc == 0 && !any)
        ph_info("nothing to collect: no profiled container in project `%s`", r->compose->project);
    if (any)
        write_index(r);
    free(sl.v);
    return rc;
}
