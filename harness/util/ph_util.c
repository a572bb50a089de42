/* ph_util.c - cleanup helpers (see ph_util.h). */
#include "ph_util.h"

#include <errno.h>
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

int
ph_read_file(const char *path, size_t max, int allow_fifo, char **buf_out, size_t *len_out, ph_error_t *err)
{
    /* O_NONBLOCK: a FIFO with no writer must not hang the open. */
    ph_cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | (allow_fifo ? 0 : O_NONBLOCK));
    struct stat st;
    char *buf = NULL;
    size_t len = 0, cap = 0;

    *buf_out = NULL;
    *len_out = 0;
    if (fd < 0)
        return ph_error_make(err, errno, errno == ENOENT ? PH_EXIT_USAGE : PH_EXIT_FAILURE, "open `%s`", path);
    if (fstat(fd, &st) < 0)
        return ph_fail(err, errno, "stat `%s`", path);
    if (!S_ISREG(st.st_mode) && !(allow_fifo && S_ISFIFO(st.st_mode)))
        return ph_bad_input(err, "`%s` is not a regular file", path);
    for (;;) {
        ssize_t r;

        if (len == cap) {
            char *nb;

            if (cap >= max) {
                free(buf);
                return ph_bad_input(err, "`%s` is larger than %zu bytes", path, max);
            }
            cap = cap ? cap * 2 : 4096;
            if (cap > max)
                cap = max;
            nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                free(buf);
                return ph_fail(err, ENOMEM, "read `%s`", path);
            }
            buf = nb;
        }
        r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;

            free(buf);
            return ph_fail(err, e, "read `%s`", path);
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (buf == NULL && (buf = malloc(1)) == NULL)
        return ph_fail(err, ENOMEM, "read `%s`", path);
    buf[len] = '\0';
    *buf_out = buf;
    *len_out = len;
    return 0;
}
