/* ph_report_out.c - where a report's files go (ph_report_int.h).
 *
 * Each file is written to a fresh temporary name beside it and renamed,
 * so a reader sees the old file or the new one, and takes the run dir's
 * owner (a report made under sudo belongs to whoever owns the run).
 * All the files of one report are held to its limits (ph_report_limits):
 * a bound on their bytes together, and the free space an artifacts'
 * collection keeps on that filesystem (min_free), looked at before a
 * file and then every MiB, as the collection looks.  A graph is streamed
 * to its file through a FILE that counts and checks (ph_report_out_stream),
 * never held whole in memory.
 */
#include "ph_report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_strings.h"
#include "ph_tar.h"

/* How often a stream looks at the free space. */
#define FREE_CHECK_EVERY (1u << 20)

void
ph_report_out_init(ph_report_out *o, const char *dir, const ph_report_limits *lim)
{
    memset(o, 0, sizeof *o);
    snprintf(o->dir, sizeof o->dir, "%s", dir);
    o->min_free = lim != NULL ? lim->min_free : 0;
    o->max_bytes = lim != NULL && lim->max_bytes != 0 ? lim->max_bytes : PH_REPORT_MAX_BYTES;
}

void
ph_report_out_done(ph_report_out *o)
{
    ph_strv_free(&o->made);
}

void
ph_report_out_undo(ph_report_out *o)
{
    for (size_t i = 0; i < o->made.n; i++)
        (void)unlink(o->made.v[i]);
    ph_report_out_done(o);
}

uint64_t
ph_report_out_left(const ph_report_out *o)
{
    return o->written < o->max_bytes ? o->max_bytes - o->written : 0;
}

/* The last component of PATH, for messages. */
static const char *
base(const char *path)
{
    const char *s = strrchr(path, '/');

    return s != NULL ? s + 1 : path;
}

/* Room for NEED more bytes of PATH: the report's bound, then min_free
 * on FD's filesystem (resolved at the first look). */
static int
room(ph_report_out *o, int fd, const char *path, uint64_t need, ph_error_t *err)
{
    char a[PH_FMT_LEN], b[PH_FMT_LEN];

    if (need > ph_report_out_left(o))
        return ph_fail(err, EFBIG, "write `%s`: the report's files would pass %s (%s written), the bound on one report",
                       path, ph_fmt_bytes(a, (double)o->max_bytes), ph_fmt_bytes(b, (double)o->written));
    if (!o->min_free_resolved) {
        o->min_free = ph_tar_min_free_of(o->min_free, fd);
        o->min_free_resolved = 1;
    }
    o->unchecked = 0;
    return ph_tar_free_check(fd, o->min_free, need, base(path), err);
}

/* A fresh PATH.tmp, never through what is there: a run dir holds what a
 * container wrote, and a planted `report.html.tmp` symlink would
 * otherwise have us write (as root, under sudo) wherever it points. */
static int
open_tmp(const char *path, char *tmp, size_t len, ph_error_t *err)
{
    int fd;

    snprintf(tmp, len, "%s.tmp", path);
    (void)unlink(tmp);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0)
        return ph_fail(err, errno, "write `%s`", tmp);
    return fd;
}

/* Close FD (TMP), give it the dir's owner, rename it to PATH; on any
 * failure TMP is removed. */
static int
finish_tmp(ph_report_out *o, int fd, const char *tmp, const char *path, ph_error_t *err)
{
    struct stat st;
    int e;

    if (geteuid() == 0 && stat(o->dir, &st) == 0 && fchown(fd, st.st_uid, st.st_gid) < 0) {
        /* the file is ours then: readable all the same (0644) */
    }
    if (close(fd) < 0) {
        e = errno;
        unlink(tmp);
        return ph_fail(err, e, "write `%s`", tmp);
    }
    if (rename(tmp, path) < 0) {
        e = errno;
        unlink(tmp);
        return ph_fail(err, e, "rename `%s`", tmp);
    }
    (void)ph_strv_push(&o->made, path); /* ENOMEM: an undo leaves this one */
    return 0;
}

static int
write_all(int fd, const char *buf, size_t len)
{
    for (size_t o = 0; o < len;) {
        ssize_t n = write(fd, buf + o, len - o);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        o += (size_t)n;
    }
    return 0;
}

int
ph_report_out_write(ph_report_out *o, const char *path, const void *buf, size_t len, ph_error_t *err)
{
    char tmp[PATH_MAX + 16];
    int fd = open_tmp(path, tmp, sizeof tmp, err), e;

    if (fd < 0)
        return -1;
    if (room(o, fd, path, len, err) < 0) {
        close(fd);
        unlink(tmp);
        return -1;
    }
    if (write_all(fd, buf, len) < 0) {
        e = errno;
        close(fd);
        unlink(tmp);
        return ph_fail(err, e, "write `%s`", tmp);
    }
    o->written += len;
    return finish_tmp(o, fd, tmp, path, err);
}

int
ph_report_out_json(ph_report_out *o, const char *path, json_t *j, ph_error_t *err)
{
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    int rc;

    if (text == NULL)
        return ph_fail(err, ENOMEM, "build `%s`", path);
    rc = ph_report_out_write(o, path, text, strlen(text), err);
    free(text);
    return rc;
}

/* A stream's FILE: what it is given goes to FD once the limits allow;
 * the first refusal is kept, as the error the stream ends with. */
typedef struct stream {
    ph_report_out *o;
    int fd;
    const char *path;
    ph_error_t refused;
} stream;

static ssize_t
stream_write(void *cookie, const char *buf, size_t n)
{
    stream *s = cookie;

    if (s->refused != NULL) {
        errno = s->refused->errnum ? s->refused->errnum : EIO;
        return -1;
    }
    if ((n > ph_report_out_left(s->o) || s->o->unchecked + n >= FREE_CHECK_EVERY) &&
        room(s->o, s->fd, s->path, n, &s->refused) < 0) {
        errno = s->refused->errnum ? s->refused->errnum : EIO;
        return -1;
    }
    if (write_all(s->fd, buf, n) < 0)
        return -1;
    s->o->written += n;
    s->o->unchecked += n;
    return (ssize_t)n;
}

int
ph_report_out_stream(ph_report_out *o, const char *path, ph_report_fill_cb fill, void *arg, ph_error_t *err)
{
    char tmp[PATH_MAX + 16];
    cookie_io_functions_t io = { NULL, stream_write, NULL, NULL };
    stream s = { o, -1, path, NULL };
    FILE *f = NULL;
    int rc;

    if ((s.fd = open_tmp(path, tmp, sizeof tmp, err)) < 0)
        return -1;
    /* the first look: the file's start must have room */
    if (room(o, s.fd, path, 0, err) < 0 || (f = fopencookie(&s, "w", io)) == NULL) {
        if (f == NULL && *err == NULL)
            ph_fail(err, ENOMEM, "write `%s`", tmp);
        close(s.fd);
        unlink(tmp);
        return -1;
    }
    rc = fill(f, arg, err);
    if (fclose(f) != 0 && rc == 0)
        rc = ph_fail(err, errno, "write `%s`", tmp);
    if (s.refused != NULL) { /* the limit, not what the writer made of it */
        ph_error_free(err);
        *err = s.refused;
        s.refused = NULL;
        rc = -1;
    }
    if (rc < 0) {
        close(s.fd);
        unlink(tmp);
        return -1;
    }
    return finish_tmp(o, s.fd, tmp, path, err);
}

int
ph_report_write_file(const char *dir, const char *path, const char *buf, size_t len, ph_error_t *err)
{
    ph_report_out o;
    int rc;

    ph_report_out_init(&o, dir, NULL);
    rc = ph_report_out_write(&o, path, buf, len, err);
    ph_report_out_done(&o);
    return rc;
}

int
ph_report_write_json(const char *dir, const char *path, json_t *j, ph_error_t *err)
{
    ph_report_out o;
    int rc;

    ph_report_out_init(&o, dir, NULL);
    rc = ph_report_out_json(&o, path, j, err);
    ph_report_out_done(&o);
    return rc;
}
