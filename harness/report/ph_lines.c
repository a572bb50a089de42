/* ph_lines.c - chunks to lines with a bounded hold; see ph_lines.h. */
#include "ph_lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)

void
ph_lines_init(ph_lines *l, size_t max_line, ph_lines_cb cb, void *ctx)
{
    memset(l, 0, sizeof *l);
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
    if (n > 0 && s[n - 1] == '\r')
        n--;
    return l->cb(l->ctx, s, n, l->lineno, err);
}

/* Append to the held partial line, or start dropping it when too long. */
static int
hold(ph_lines *l, const char *s, size_t n, ph_error_t *err)
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
    l->hold_len = 0;
    return rc;
}

int
ph_lines_feed(ph_lines *l, const char *buf, size_t len, ph_error_t *err)
{
    const char *p = buf, *end = buf + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n;

        if (nl == NULL)
            return hold(l, p, (size_t)(end - p), err);
        n = (size_t)(nl - p);
        if (l->hold_len > 0 || l->overlong) {
            if (hold(l, p, n, err) < 0 || flush_held(l, err) < 0)
                return -1;
        } else if (n > l->max_line) {
            l->lineno++;
            if (l->cb(l->ctx, NULL, 0, l->lineno, err) < 0)
                return -1;
        } else if (emit(l, p, n, err) < 0) {
            return -1;
        }
        p = nl + 1;
    }
    return 0;
}

int
ph_lines_finish(ph_lines *l, ph_error_t *err)
{
    if (l->hold_len == 0 && !l->overlong)
        return 0;
    return flush_held(l, err);
}

int
ph_read_file_chunks(const char *path, ph_chunk_cb cb, void *ctx, unsigned long long *size, ph_error_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = NULL;
    unsigned long long total = 0;
    int rc = 0;

    if (size)
        *size = 0;
    if (fd < 0)
        return ph_fail(err, errno, "open `%s`", path);
    buf = malloc(READ_CHUNK);
    if (buf == NULL) {
        close(fd);
        return ph_fail(err, ENOMEM, "read `%s`", path);
    }
    for (;;) {
        ssize_t n = read(fd, buf, READ_CHUNK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = ph_fail(err, errno, "read `%s`", path);
            break;
        }
        if (n == 0)
            break;
        total += (unsigned long long)n;
        if (cb(ctx, buf, (size_t)n, err) < 0) {
            rc = ph_error_wrap(err, "`%s`", path);
            break;
        }
    }
    free(buf);
    close(fd);
    if (size)
        *size = total;
    return rc;
}
