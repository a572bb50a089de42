/* ph_util.c - cleanup helpers (see ph_util.h). */
#include "ph_util.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void
ph_freep(void *p)
{
    free(*(void **)p);
}

void
ph_closep(int *fd)
{
    if (*fd >= 0)
        close(*fd);
}

void
ph_fclosep(FILE **f)
{
    if (*f != NULL)
        fclose(*f);
}

char *
ph_strdup0(const char *s)
{
    return s == NULL ? NULL : strdup(s);
}

/* Read FD to its end into a NUL-terminated *BUF_OUT, refusing more than
 * MAX bytes (at most MAX + 1 are read). */
static int
read_capped(int fd, const char *what, size_t max, char **buf_out, size_t *len_out, ph_error_t *err)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;

    for (;;) {
        ssize_t r;

        if (len == cap) {
            char *nb;

            if (cap > max) {
                free(buf);
                return ph_error_make(err, 0, PH_EXIT_USAGE, "`%s` is larger than %zu bytes", what, max);
            }
            /* one byte past MAX: a file that grew after fstat is caught */
            cap = cap ? cap * 2 : 4096;
            if (cap > max + 1)
                cap = max + 1;
            nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                free(buf);
                return ph_fail(err, ENOMEM, "read `%s`", what);
            }
            buf = nb;
        }
        r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;

            free(buf);
            return ph_fail(err, e, "read `%s`", what);
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (buf == NULL && (buf = malloc(1)) == NULL)
        return ph_fail(err, ENOMEM, "read `%s`", what);
    buf[len] = '\0';
    *buf_out = buf;
    *len_out = len;
    return 0;
}

int
ph_read_file(const char *path, size_t max, int allow_fifo, char **buf_out, size_t *len_out, ph_error_t *err)
{
    /* O_NONBLOCK: a FIFO with no writer must not hang the open. */
    ph_cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | (allow_fifo ? 0 : O_NONBLOCK));
    struct stat st;

    *buf_out = NULL;
    *len_out = 0;
    if (fd < 0)
        return ph_error_make(err, errno, errno == ENOENT ? PH_EXIT_USAGE : PH_EXIT_FAILURE, "open `%s`", path);
    if (fstat(fd, &st) < 0)
        return ph_fail(err, errno, "stat `%s`", path);
    if (!S_ISREG(st.st_mode) && !(allow_fifo && S_ISFIFO(st.st_mode)))
        return ph_bad_input(err, "`%s` is not a regular file", path);
    return read_capped(fd, path, max, buf_out, len_out, err);
}

/* Make the error, with ERRNUM for the caller to tell cases apart but
 * without strerror's words in the message. */
static int __attribute__((format(printf, 3, 4)))
refuse(ph_error_t *err, int errnum, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ph_error_makev(err, 0, PH_EXIT_USAGE, fmt, ap);
    va_end(ap);
    if (*err != NULL)
        (*err)->errnum = errnum;
    return -1;
}

int
ph_read_file_at(int dirfd, const char *name, size_t max, char **buf_out, size_t *len_out, ph_error_t *err)
{
    ph_cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;

    *buf_out = NULL;
    *len_out = 0;
    if (fd < 0 && errno == ENOENT)
        return refuse(err, ENOENT, "`%s` is missing", name);
    if (fd < 0 && errno == ELOOP)
        return refuse(err, ELOOP, "`%s` is a symbolic link", name);
    if (fd < 0)
        return ph_fail(err, errno, "open `%s`", name);
    if (fstat(fd, &st) < 0)
        return ph_fail(err, errno, "stat `%s`", name);
    if (!S_ISREG(st.st_mode))
        return refuse(err, EINVAL, "`%s` is not a regular file", name);
    if ((unsigned long long)st.st_size > max)
        return refuse(err, EFBIG, "`%s` is %lld bytes (limit %zu)", name, (long long)st.st_size, max);
    if (read_capped(fd, name, max, buf_out, len_out, err) < 0) {
        if (*err != NULL && (*err)->status == PH_EXIT_USAGE)
            (*err)->errnum = EFBIG; /* it grew past MAX while it was read */
        return -1;
    }
    return 0;
}
