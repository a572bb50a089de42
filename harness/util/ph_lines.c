/* ph_lines.c - chunks to lines with a bounded hold; see ph_lines.h. */
#include "ph_lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)

void
ph_lines_init(ph_lines *l, size_t max_line, int flags, ph_lines_cb cb, void *ctx)
{
    memset(l, 0, sizeof *l);
    l->flags = flags;
    l->cb = cb;
    l->ctx = ctx;
    l->max_line = max_line ? max_line : 1;
}

void
ph_lines_free(ph_lines *l)
{
    if (l == NULL)
        return;
    free(l->hold);
    l->hold = NULL;
    l->hold_len = l->hold_cap = 0;
}

static int
emit(ph_lines *l, const char *s, size_t n, ph_error_t *err)
{
    l->lineno++;
    if (n > 0 && s[n - 1] == '\r' && !(l->flags & PH_LINES_KEEP_CR))
        n--;
    return l->cb(l->ctx, s, n, l->lineno, err);
}

/* Append to the held partial line, or start dropping it when too long. */
int
ph_lines_hold(ph_lines *l, const char *s, size_t n, ph_error_t *err)
{
    if (l->overlong)
        return 0;
    if (l->hold_len + n > l->max_line) {
        l->overlong = 1;
        l->hold_len = 0;
        return 0;
    }
    if (l->hold_len + n > l->hold_cap) {
        size_t cap = l->hold_cap ? l->hold_cap : 4096;
        char *nh;

        while (cap < l->hold_len + n)
            cap *= 2;
        if (cap > l->max_line)
            cap = l->max_line;
        nh = realloc(l->hold, cap);
        if (nh == NULL)
            return ph_fail(err, ENOMEM, "hold a line of %zu bytes", l->hold_len + n);
        l->hold = nh;
        l->hold_cap = cap;
    }
    memcpy(l->hold + l->hold_len, s, n);
    l->hold_len += n;
    return 0;
}

/* The held line is complete. */
static int
flush_held(ph_lines *l, ph_error_t *err)
{
    int rc;

    if (l->overlong) {
        l->overlong = 0;
        l->lineno++;
        return l->cb(l->ctx, NULL, 0, l->lineno, err);
    }
    rc = emit(l, l->hold, l->hold_len, err);
    l->hold_len = 0; /* handed over: forgotten */
    return rc;
}

int
ph_lines_feed_held(ph_lines *l, const char **pos, const char *end, ph_error_t *err)
{
    const char *p = *pos, *nl = memchr(p, '\n', (size_t)(end - p));

    if (ph_lines_hold(l, p, (size_t)((nl ? nl : end) - p), err) < 0)
        return -1;
    if (nl == NULL) {
        *pos = end;
        return 0;
    }
    *pos = nl + 1;
    return flush_held(l, err);
}

int
ph_lines_feed(ph_lines *l, const char *buf, size_t len, ph_error_t *err)
{
    return ph_lines_feed_with(l, buf, len, l->cb, err);
}

int
ph_lines_finish(ph_lines *l, ph_error_t *err)
{
    if (l->hold_len == 0 && !l->overlong)
        return 0;
    return flush_held(l, err);
}

#define MAP_WINDOW (16u << 20)

/* FD fed from the page cache a window at a time: 1 if done this way, 0 if
 * FD is not a file mmap can read (then read() it), -1 on error. */
static int
read_mapped(int fd, const char *name, ph_chunk_cb cb, void *ctx, unsigned long long *total, ph_error_t *err)
{
    struct stat st;

    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return 0;
    for (off_t off = 0; off < st.st_size; off += MAP_WINDOW) {
        size_t len = (size_t)(st.st_size - off < MAP_WINDOW ? st.st_size - off : MAP_WINDOW);
        void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, off);
        int rc;

        if (p == MAP_FAILED)
            return off == 0 ? 0 : ph_fail(err, errno, "read `%s`", name);
        rc = cb(ctx, p, len, err);
        munmap(p, len);
        if (rc < 0)
            return ph_error_wrap(err, "`%s`", name);
        *total += len;
    }
    return 1;
}

int
ph_read_fd_chunks(int fd, const char *name, int flags, ph_chunk_cb cb, void *ctx, unsigned long long *size,
                  ph_error_t *err)
{
    char *buf = NULL;
    unsigned long long total = 0;
    int rc = 0;

    if (size)
        *size = 0;
    if ((flags & PH_READ_MAP) && (rc = read_mapped(fd, name, cb, ctx, &total, err)) != 0)
        goto done;
    buf = malloc(READ_CHUNK);
    if (buf == NULL)
        return ph_fail(err, ENOMEM, "read `%s`", name);
    for (;;) {
        ssize_t n = read(fd, buf, READ_CHUNK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = ph_fail(err, errno, "read `%s`", name);
            break;
        }
        if (n == 0)
            break;
        total += (unsigned long long)n;
        if (cb(ctx, buf, (size_t)n, err) < 0) {
            rc = ph_error_wrap(err, "`%s`", name);
            break;
        }
    }
    free(buf);
done:
    if (size)
        *size = total;
    return rc < 0 ? -1 : 0;
}

int
ph_read_file_chunks(const char *path, ph_chunk_cb cb, void *ctx, unsigned long long *size, ph_error_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc;

    if (size)
        *size = 0;
    if (fd < 0)
        return ph_fail(err, errno, "open `%s`", path);
    rc = ph_read_fd_chunks(fd, path, 0, cb, ctx, size, err);
    close(fd);
    return rc;
}
