/* ph_init_record.c - the init shim's completion record, ph-exit.json:
 * formatting (bounded, no allocation) and putting it in place safely.
 *
 * The record lives in the artifacts dir, which the service can write to
 * as well.  So nothing the service can plant there may block ph-init (a
 * FIFO at a name we open), redirect the record (a symlink or hard link at
 * a name we write, the directory itself swapped for a symlink), or keep
 * it out (a directory at its name, names we would try taken).  Hence:
 * - the directory is created and opened before the command starts, and
 *   every later step goes through that descriptor (openat, renameat);
 * - the record is written to a new file under a random name, created
 *   with O_CREAT|O_EXCL|O_NOFOLLOW|O_NONBLOCK: it cannot be something that
 *   already existed, so no link is followed and no FIFO is opened;
 * - then renamed onto the record's name, which replaces a file, FIFO or
 *   symlink there without following it; a directory there is moved aside
 *   (renamed, not deleted: it is the service's) and the rename retried;
 * - nothing lists the directory, so a huge one costs nothing.
 * A reader sees no record or a whole one.  O_TMPFILE would keep the file
 * nameless while written, but overlayfs (the container's root) supports
 * it only from Linux 6.6, and the random name serves as well.
 *
 * The record (ph-exit.json; "version": 1, one JSON object, fields only
 * ever added).  The profiler is the wrapper; the service is the profiled
 * process.  Present from the start:
 *   command [str], wrapper_pid, target_pid (who got the stop signal, or
 *   would have), exit_code (ph-init's exit status: the profiler's code,
 *   128+N if a signal N ended it), signal (that signal's name, or null),
 *   stop_requested, stop_signal, escalations [signal names sent to the
 *   target after the grace], wrapper_killed, wrapper_signals (sent to the
 *   profiler itself because it outlived its target), leftovers_signalled
 *   (other processes that got SIGTERM from ph-init, during the stop or
 *   after the profiler ended), started_at, stop_requested_at, ended_at
 *   (UTC, ms), run_seconds, stop_seconds (from the stop request to the
 *   profiler's end; null without a stop).
 * Added with the fault matrix:
 *   stop_target "tracee"|"wrapper", grace_seconds, escalate_grace_seconds;
 *   service_exit_code, service_signal: how the service ended, as the
 *     profiler reports it (valgrind and the sampler are the service's
 *     process; strace exits with its tracee's code or kills itself with
 *     its signal); both null when unknown (ph-init signalled the tracer);
 *   outcome, the first of these that applies:
 *     "oom_killed" a SIGKILL ph-init did not send ended the service, and
 *                  the cgroup's OOM killer acted during the run;
 *     "killed"     the same without the OOM killer;
 *     "crashed"    another signal ph-init did not send ended it (SIGSEGV,
 *                  SIGABRT...), stop or not;
 *     "escalated"  a stop was requested and needed escalation (or the
 *                  profiler had to be signalled);
 *     "stopped"    a stop was requested, no escalation was needed;
 *     "signalled"  no stop; a signal forwarded to it ended it;
 *     "exited"     no stop; it exited by itself (service_exit_code);
 *   complete: the profiler got no SIGKILL (from ph-init, or, when it is
 *     not a tracer mirroring its tracee, from anyone), so it could write
 *     its output;
 *   leftovers_killed: other processes that needed SIGKILL;
 *   leftovers_survived: still there when ph-init gave up on them;
 *   oom_kills: the increase of the memory cgroup's oom_kill counter over
 *     the run, null where it cannot be read. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ph_init.h"

#define TMP_TRIES 16 /* random names tried before giving up */

static struct {
    int dirfd;
    char dir[PATH_MAX];   /* as given, for messages and the moved-dir check */
    const char *name;     /* the record's name in dir */
    struct stat dir_st;   /* what dirfd is */
} rec = { .dirfd = -1 };

/* A bounded writer: formats into a static buffer, flushes to an fd when full. */
static struct {
    int fd, failed;
    size_t len;
    char buf[8192];
} rw;

static void
rw_flush(void)
{
    size_t off = 0;

    while (off < rw.len && !rw.failed) {
        ssize_t n = write(rw.fd, rw.buf + off, rw.len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rw.failed = errno ? errno : EIO;
        else
            off += (size_t)n;
    }
    rw.len = 0;
}

#define RW_LIT(lit) rw_put((lit), sizeof(lit) - 1)

static void
rw_put(const char *s, size_t n)
{
    while (n > 0) {
        size_t room = sizeof rw.buf - rw.len, k = n < room ? n : room;

        memcpy(rw.buf + rw.len, s, k);
        rw.len += k;
        s += k;
        n -= k;
        if (rw.len == sizeof rw.buf)
            rw_flush();
    }
}

__attribute__((format(printf, 1, 2))) static void
rw_printf(const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        rw_put(tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of the valid UTF-8 sequence at S (1..4), or 0 if it is not one. */
static int
utf8_len(const unsigned char *s)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    int n;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4;
    else
        return 0;
    /* No overlong forms, no surrogates, nothing past U+10FFFF. */
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

/* A JSON string.  argv is bytes, JSON is Unicode: bytes that are not UTF-8
 * become U+FFFD, so every reader accepts the record. */
static void
rw_str(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;

    RW_LIT("\"");
    while (*s) {
        int n = utf8_len(s);
        char esc[8];

        if (n == 0) {
            RW_LIT("\\ufffd");
            s++;
            continue;
        }
        if (*s == '"' || *s == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*s;
            rw_put(esc, 2);
        } else if (*s == '\n') {
            RW_LIT("\\n");
        } else if (*s == '\t') {
            RW_LIT("\\t");
        } else if (*s == '\r') {
            RW_LIT("\\r");
        } else if (*s < 0x20 || *s == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", *s);
            rw_put(esc, 6);
        } else {
            rw_put((const char *)s, (size_t)n);
        }
        s += n;
    }
    RW_LIT("\"");
}

static void
rw_time(const struct timespec *ts)
{
    struct tm tm;
    char out[40];

    gmtime_r(&ts->tv_sec, &tm);
    snprintf(out, sizeof out, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts->tv_nsec / 1000000);
    rw_put(out, strlen(out));
}

static void
rw_siglist(const int *sigs, int n)
{
    RW_LIT("[");
    for (int i = 0; i < n; i++) {
        if (i)
            RW_LIT(",");
        rw_str(PH_INIT_SIGNAME(sigs[i]));
    }
    RW_LIT("]");
}

int
ph_init_record_path_ok(const char *path)
{
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;

    return path[0] != '\0' && strlen(path) < PATH_MAX - 64 && name[0] != '\0' && strcmp(name, ".") != 0 &&
           strcmp(name, "..") != 0 && strlen(name) <= NAME_MAX - 32;
}

int
ph_init_record_open(const char *path)
{
    char *slash;
    mode_t old;

    snprintf(rec.dir, sizeof rec.dir, "%s", path);
    slash = strrchr(rec.dir, '/');
    if (slash == NULL) {
        rec.name = path;
        snprintf(rec.dir, sizeof rec.dir, ".");
    } else {
        rec.name = path + (slash - rec.dir) + 1;
        slash[slash == rec.dir] = '\0'; /* "/x" keeps its "/" */
    }
    old = umask(0);
    for (char *p = rec.dir + 1; slash != NULL; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;

            *p = '\0';
            if (mkdir(rec.dir, 0777) < 0 && errno != EEXIST)
                ph_init_warn("mkdir %s: %s", rec.dir, strerror(errno));
            *p = c;
            if (c == '\0')
                break;
        }
    }
    umask(old);
    /* The last component must be a directory, not a link to one: parents
     * come from the image, this one is the service's to write in. */
    while ((rec.dirfd = open(rec.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0 &&
           errno == EINTR)
        ;
    if (rec.dirfd < 0 || fstat(rec.dirfd, &rec.dir_st) < 0) {
        ph_init_warn("cannot open the record's directory %s: %s; no record will be written", rec.dir,
                     strerror(errno));
        if (rec.dirfd >= 0)
            close(rec.dirfd);
        rec.dirfd = -1;
        return -1;
    }
    return 0;
}

/* NAME.tmp-<12 random hex digits>, new: O_EXCL, so never something that
 * was there.  The fd, or -1 with errno. */
static int
create_tmp(char *tmp, size_t len)
{
    for (int i = 0; i < TMP_TRIES; i++) {
        unsigned char r[6];
        int fd;

        if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts;
            unsigned long x;

            clock_gettime(CLOCK_MONOTONIC, &ts);
            x = (unsigned long)ts.tv_nsec * 2654435761u ^ (unsigned long)getpid() << 16 ^ (unsigned long)i;
            for (size_t k = 0; k < sizeof r; k++)
                r[k] = (unsigned char)(x >> (8 * k));
        }
        snprintf(tmp, len, "%s.tmp-%02x%02x%02x%02x%02x%02x", rec.name, r[0], r[1], r[2], r[3], r[4], r[5]);
        while ((fd = openat(rec.dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                            0644)) < 0 &&
               errno == EINTR)
            ;
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* The record's content into rw.fd. */
static void
format_record(const ph_init_report *r)
{
    RW_LIT("{\"version\":1,\"command\":[");
    for (int i = 0; r->argv[i]; i++) {
        if (i)
            RW_LIT(",");
        rw_str(r->argv[i]);
    }
    rw_printf("],\"wrapper_pid\":%d,\"target_pid\":%d,\"exit_code\":%d,\"signal\":", (int)r->wrapper_pid,
              (int)r->target_pid, r->exit_code);
    if (WIFSIGNALED(r->wrapper_status))
        rw_str(PH_INIT_SIGNAME(WTERMSIG(r->wrapper_status)));
    else
        RW_LIT("null");
    rw_printf(",\"stop_requested\":%s,\"stop_signal\":", r->stop_requested ? "true" : "false");
    rw_str(PH_INIT_SIGNAME(r->stop_signal));
    RW_LIT(",\"escalations\":");
    rw_siglist(r->escalations, r->n_escalations);
    rw_printf(",\"wrapper_killed\":%s,\"wrapper_signals\":", r->n_wrapper_signals ? "true" : "false");
    rw_siglist(r->wrapper_signals, r->n_wrapper_signals);
    rw_printf(",\"leftovers_signalled\":%d,\"started_at\":", r->leftovers_signalled);
    rw_time(&r->started_at);
    RW_LIT(",\"stop_requested_at\":");
    if (r->stop_requested)
        rw_time(&r->stop_requested_at);
    else
        RW_LIT("null");
    RW_LIT(",\"ended_at\":");
    rw_time(&r->ended_at);
    rw_printf(",\"run_seconds\":%.3f,\"stop_seconds\":", r->run_seconds);
    if (r->stop_requested)
        rw_printf("%.3f", r->stop_seconds);
    else
        RW_LIT("null");
    rw_printf(",\"stop_target\":\"%s\",\"grace_seconds\":%.3f,\"escalate_grace_seconds\":%.3f,\"outcome\":",
              r->stop_target_tracee ? "tracee" : "wrapper", r->grace, r->escalate_grace);
    rw_str(r->outcome);
    RW_LIT(",\"service_exit_code\":");
    if (r->service_known && r->service_exit_code >= 0)
        rw_printf("%d", r->service_exit_code);
    else
        RW_LIT("null");
    RW_LIT(",\"service_signal\":");
    if (r->service_known && r->service_signal > 0)
        rw_str(PH_INIT_SIGNAME(r->service_signal));
    else
        RW_LIT("null");
    rw_printf(",\"complete\":%s,\"leftovers_killed\":%d,\"leftovers_survived\":%d,\"oom_kills\":",
              r->complete ? "true" : "false", r->leftovers_killed, r->leftovers_survived);
    if (r->oom_kills >= 0)
        rw_printf("%ld", r->oom_kills);
    else
        RW_LIT("null");
    RW_LIT("}\n");
}

/* Rename TMP onto the record's name.  A directory there (rename cannot
 * replace it) is moved aside first, once. */
static int
put_in_place(const char *tmp)
{
    char aside[NAME_MAX + 1];

    if (renameat(rec.dirfd, tmp, rec.dirfd, rec.name) == 0)
        return 0;
    if (errno != EISDIR && errno != ENOTEMPTY && errno != EEXIST)
        return -1;
    snprintf(aside, sizeof aside, "%s.planted%s", rec.name, tmp + strlen(rec.name) + 4);
    if (renameat(rec.dirfd, rec.name, rec.dirfd, aside) < 0)
        return -1;
    ph_init_warn("a directory was where the record goes; moved it to %s/%s", rec.dir, aside);
    return renameat(rec.dirfd, tmp, rec.dirfd, rec.name);
}

int
ph_init_record_write(const ph_init_report *r)
{
    char tmp[NAME_MAX + 1];
    struct stat mine, there;
    int fd;

    if (rec.dirfd < 0)
        return -1;
    /* The service may have renamed the directory and put a link in its
     * place: the record still goes where ph-init made it, not there. */
    if (stat(rec.dir, &there) < 0 || there.st_dev != rec.dir_st.st_dev || there.st_ino != rec.dir_st.st_ino)
        ph_init_warn("%s was moved or replaced while the service ran; the record goes into the directory "
                     "ph-init made, wherever it is now, not to what is at that path",
                     rec.dir);
    fd = create_tmp(tmp, sizeof tmp);
    if (fd < 0) {
        ph_init_warn("cannot write the record in %s: %s", rec.dir, strerror(errno));
        return -1;
    }
    rw.fd = fd;
    rw.failed = 0;
    rw.len = 0;
    format_record(r);
    rw_flush();
    if (rw.failed == 0 && fstat(fd, &mine) < 0)
        rw.failed = errno;
    if (rw.failed == 0 && fsync(fd) < 0)
        rw.failed = errno;
    if (close(fd) < 0 && rw.failed == 0 && errno != EINTR)
        rw.failed = errno;
    if (rw.failed == 0 && put_in_place(tmp) < 0)
        rw.failed = errno;
    if (rw.failed) {
        ph_init_warn("cannot write the record %s/%s: %s", rec.dir, rec.name, strerror(rw.failed));
        unlinkat(rec.dirfd, tmp, 0);
        return -1;
    }
    if (fstatat(rec.dirfd, rec.name, &there, AT_SYMLINK_NOFOLLOW) < 0 || there.st_ino != mine.st_ino ||
        there.st_dev != mine.st_dev)
        ph_init_warn("the record %s/%s was replaced right after it was written", rec.dir, rec.name);
    fsync(rec.dirfd);
    ph_init_log("record written to %s/%s", rec.dir, rec.name);
    return 0;
}
