/* ph_run_servicelog.c - service.log: what the service printed, kept with
 * every run.
 *
 * A profiled container is removed once its run is collected, and its
 * output (the service's stdout and stderr, and valgrind's own messages,
 * which go to stderr) went with it.  So before the removal, stop and
 * collect write it into the run dir as service.log, each line led by the
 * Engine's timestamp, as `docker logs -t` shows it; `logs SERVICE` reads
 * the newest one once no container is left (`latest`; in a run of several,
 * replicas or a stack's tasks, each sub-dir's).
 *
 * Best effort and bounded: a log the Engine cannot give back (a `none` or
 * `syslog` driver) is a warning, not a failed stop (the artifacts are what
 * a stop guarantees); past PH_SERVICE_LOG_MAX bytes (PH_SERVICE_LOG_MAX in
 * the environment, a size) the rest is left out, and the file says so.
 * The rest is not read either: at the cap the stream is closed, so a
 * service that printed a gigabyte costs a stop no more than the cap; how
 * much was left is then known only as "at least" what had come with the
 * last chunk.  It is written through the run-dir store, before run.json
 * (ph_rundir.h): its space counts against min_free like the artifacts',
 * and a container's own service.log was moved aside first.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_tar.h"
#include "ph_util.h"

typedef struct log_ctx {
    ph_rundir *rd;
    int fd;
    unsigned long long max, written, dropped;
    ph_error_t *err;
} log_ctx;

/* PH_SERVICE_LOG_MAX, else the default; a bad value is said and ignored
 * (the log is a side file: it never fails a stop). */
static unsigned long long
log_max(void)
{
    const char *v = getenv("PH_SERVICE_LOG_MAX");
    ph_error_t err = NULL;
    uint64_t max = PH_SERVICE_LOG_MAX;

    if (v == NULL || v[0] == '\0')
        return PH_SERVICE_LOG_MAX;
    if (ph_tar_limit_parse(PH_TAR_LIMIT_BYTES, v, &max, &err) < 0 || max == PH_TAR_NO_LIMIT) {
        ph_warn("PH_SERVICE_LOG_MAX=`%s`: %s; %s keeps up to %u MiB", v, err ? err->msg : "no limit is no cap",
                PH_SERVICE_LOG_NAME, PH_SERVICE_LOG_MAX >> 20);
        ph_error_free(&err);
        return PH_SERVICE_LOG_MAX;
    }
    return max;
}

/* "256 MiB", or bytes where the cap is no whole MiB. */
static void
size_words(unsigned long long n, char *out, size_t size)
{
    if (n >= (1ull << 20) && n % (1ull << 20) == 0)
        snprintf(out, size, "%llu MiB", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(out, size, "%llu KiB", n >> 10);
    else
        snprintf(out, size, "%llu bytes", n);
}

static int
log_cb(void *ud, const char *data, size_t len)
{
    log_ctx *l = ud;
    size_t take = len;

    if (l->written + take > l->max)
        take = l->written >= l->max ? 0 : (size_t)(l->max - l->written);
    l->dropped += len - take;
    /* the store's write: min_free is kept, as for the artifacts */
    if (take > 0 && ph_rundir_write(l->rd, l->fd, PH_SERVICE_LOG_NAME, data, take, l->err) < 0)
        return -1;
    l->written += take;
    /* At the cap: read no further (the Engine would send it all). */
    return l->dropped > 0 || l->written >= l->max ? PH_BACKEND_DATA_ENOUGH : 0;
}

int
ph_run_service_log(ph_run *r, ph_backend *b, const char *service, const char *id, ph_rundir *rd, ph_error_t *err)
{
    ph_cleanup_close int fd = -1;
    ph_error_t lerr = NULL;
    log_ctx l = { .rd = rd, .err = &lerr, .max = log_max() };
    char note[300], cap[32];

    /* the store moved a container's file of that name away */
    if (ph_rundir_create(rd, PH_SERVICE_LOG_NAME, &fd, &lerr) < 0) {
        ph_warn("%s: the service's output is not kept: %s", service, lerr->msg);
        ph_error_free(&lerr);
        return 0;
    }
    l.fd = fd;
    if ((b == NULL && ph_run_backend(r, &b, &lerr) < 0) || b->ops->log_all(b, id, log_cb, &l, &lerr) < 0) {
        if (ph_rundir_stats(rd)->limit == PH_TAR_LIMIT_FREE) {
            *err = lerr; /* over min_free: the run is not completed */
            return -1;
        }
        ph_warn("%s: the service's output is not (all) kept in %s/%s: %s", service, ph_rundir_path(rd),
                PH_SERVICE_LOG_NAME, lerr ? lerr->msg : "?");
        ph_error_free(&lerr);
        return 0;
    }
    if (l.dropped > 0) {
        size_words(l.max, cap, sizeof cap);
        snprintf(note, sizeof note,
                 "\n[profharness: the output goes on past %s; at least %llu more bytes were left out, the rest "
                 "unread: %s keeps %s (PH_SERVICE_LOG_MAX)]\n",
                 cap, l.dropped, PH_SERVICE_LOG_NAME, cap);
        if (ph_rundir_write(rd, fd, PH_SERVICE_LOG_NAME, note, strlen(note), err) < 0)
            return -1;
        ph_warn("%s: its output is over %s: %s keeps the first %s, the rest was not read", service, cap,
                PH_SERVICE_LOG_NAME, cap);
    }
    return 0;
}

/* PATH (a service.log of a run) to OUT, led by a line naming it: 1 when
 * printed, 0 when there is none, -1 and *ERR. */
static int
print_log_file(const char *service, const char *path, FILE *out, ph_error_t *err)
{
    char real[PATH_MAX], buf[65536];
    ph_cleanup_close int fd = -1;
    ssize_t n;

    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : ph_fail(err, errno, "open `%s`", path);
    if (realpath(path, real) == NULL)
        snprintf(real, sizeof real, "%s", path);
    ph_info("%s: no container; the output of its last run (%s):", service, real);
    fflush(out);
    while ((n = read(fd, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ph_fail(err, errno, "read `%s`", path);
        if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
            return ph_fail(err, errno, "write the log");
    }
    return fflush(out) == 0 ? 1 : ph_fail(err, errno, "write the log");
}

/* A sub-dir of a run of several: no dot first (the store's temp dirs). */
static int
run_subdir(const struct dirent *de)
{
    return de->d_name[0] != '.';
}

int
ph_run_print_last_log(ph_run *r, const char *service, FILE *out, ph_error_t *err)
{
    char latest[PATH_MAX], path[PATH_MAX + 300];
    struct dirent **subs = NULL;
    struct stat st;
    int rc, n, printed = 0;

    snprintf(latest, sizeof latest, "%s/%s/%s", r->opts.out_dir, service, PH_LATEST_LINK);
    snprintf(path, sizeof path, "%s/%s", latest, PH_SERVICE_LOG_NAME);
    if ((rc = print_log_file(service, path, out, err)) != 0)
        return rc < 0 ? -1 : 0;
    /* A run of several workloads (tasks.json beside a run dir each:
     * replicas, a stack's tasks): each one's, in slot order. */
    snprintf(path, sizeof path, "%s/%s", latest, PH_RUN_TASKS_NAME);
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (n = scandir(latest, &subs, run_subdir, versionsort)) > 0) {
        for (int i = 0; i < n; i++) {
            snprintf(path, sizeof path, "%s/%s", latest, subs[i]->d_name);
            if (rc >= 0 && lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                snprintf(path, sizeof path, "%s/%s/%s", latest, subs[i]->d_name, PH_SERVICE_LOG_NAME);
                if ((rc = print_log_file(service, path, out, err)) > 0)
                    printed++;
            }
            free(subs[i]);
        }
        free(subs);
        if (rc < 0)
            return -1;
    }
    if (printed > 0)
        return 0;
    ph_fail(err, 0, "%s: no container, and no run with a %s in `%s/%s`", service, PH_SERVICE_LOG_NAME,
            r->opts.out_dir, service);
    return ph_error_hint(err, "start it (`profharness start --mode MODE %s` or `profharness restore %s`)", service,
                         service);
}
