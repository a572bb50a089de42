/* ph_lines.h - bytes in chunks of any size, whole lines out: the one line
 * splitter of the streaming parsers (folded stacks, perf script, massif,
 * callgrind, strace).
 *
 * A line wholly inside a chunk is handed over in place, without a copy;
 * only a line split across chunks is held, and never more than MAX_LINE
 * bytes of it: a longer line is dropped and reported as one call with
 * LINE == NULL, so memory stays bounded whatever the input.  The newline
 * is not part of the line; a final '\r' is removed unless PH_LINES_KEEP_CR
 * is given, for a parser that reads it itself (perf script's keeps it, as
 * Perl's chomp does; folded stacks' trims it with trailing blanks).
 * MAX_LINE counts the bytes before the newline, '\r' included.
 *
 * ph_read_file_chunks and ph_read_fd_chunks stream a whole file to a
 * parser: through a 1 MiB buffer, or a regular file straight from the page
 * cache.  The splitter is pure; one ph_lines belongs to one thread at a
 * time.
 */
#ifndef PH_LINES_H
#define PH_LINES_H

#include <stddef.h>
#include <string.h>
#include "ph_error.h"

/* One line (LEN bytes, not NUL-terminated) numbered LINENO from 1; LINE
 * is NULL for a line longer than the limit (dropped).  Return < 0 to stop
 * (with *err set). */
typedef int (*ph_lines_cb)(void *ctx, const char *line, size_t len, size_t lineno, ph_error_t *err);

typedef struct ph_lines {
    ph_lines_cb cb;
    void *ctx;
    size_t max_line;
    int flags;
    char *hold;        /* the start of a line split across chunks */
    size_t hold_len, hold_cap;
    int overlong;      /* the held line went past max_line: dropping to its end */
    size_t lineno;     /* lines handed over so far */
} ph_lines;

enum {
    PH_LINES_KEEP_CR = 1 << 0, /* hand a final '\r' over as part of the line */
};

/* FLAGS from the enum above. */
void ph_lines_init(ph_lines *l, size_t max_line, int flags, ph_lines_cb cb, void *ctx);
/* Hand over every complete line of BUF; -1 when the callback says so or
 * on ENOMEM. */
int ph_lines_feed(ph_lines *l, const char *buf, size_t len, ph_error_t *err);

/* The slow paths of ph_lines_feed_with, out of line: the start of a chunk
 * completing the held line (*POS moves past it), and a chunk's last,
 * unfinished line. */
int ph_lines_feed_held(ph_lines *l, const char **pos, const char *end, ph_error_t *err);
int ph_lines_hold(ph_lines *l, const char *s, size_t n, ph_error_t *err);

/* ph_lines_feed for a parser whose lines cost a few nanoseconds (folded
 * stacks, perf script: millions of lines).  CB, the callback given to
 * ph_lines_init, is named at the call: called directly, it can be inlined
 * into this loop, and the splitter's fields live in registers (CB must
 * not touch L). */
static inline int
ph_lines_feed_with(ph_lines *l, const char *buf, size_t len, ph_lines_cb cb, ph_error_t *err)
{
    const char *p = buf, *end = buf + len;
    size_t max, lineno;
    void *ctx = l->ctx;
    int strip_cr = !(l->flags & PH_LINES_KEEP_CR);

    if ((l->hold_len > 0 || l->overlong) && ph_lines_feed_held(l, &p, end, err) < 0)
        return -1;
    max = l->max_line;
    lineno = l->lineno;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n;
        int rc;

        if (nl == NULL)
            break;
        n = (size_t)(nl - p);
        lineno++;
        if (n > max) {
            rc = cb(ctx, NULL, 0, lineno, err);
        } else {
            if (strip_cr && n > 0 && p[n - 1] == '\r')
                n--; /* in place */
            rc = cb(ctx, p, n, lineno, err);
        }
        if (rc < 0) {
            l->lineno = lineno;
            return -1;
        }
        p = nl + 1;
    }
    l->lineno = lineno;
    return p < end ? ph_lines_hold(l, p, (size_t)(end - p), err) : 0;
}

/* Hand over a final line without a newline, if any.  The splitter may be
 * fed again afterwards (a new file: line numbers go on). */
int ph_lines_finish(ph_lines *l, ph_error_t *err);
void ph_lines_free(ph_lines *l);

/* A chunk of a file, for readers that take chunks rather than lines. */
typedef int (*ph_chunk_cb)(void *ctx, const char *buf, size_t len, ph_error_t *err);
/* Read PATH through a 1 MiB buffer, handing each chunk to CB.  Errors
 * name the file.  *SIZE (may be NULL) gets the bytes read. */
int ph_read_file_chunks(const char *path, ph_chunk_cb cb, void *ctx, unsigned long long *size, ph_error_t *err);

enum {
    /* A regular file is handed over from the page cache, 16 MiB windows
     * each unmapped once read: no copy, and resident memory stays a window
     * whatever the size.  Anything mmap cannot read is read() as usual. */
    PH_READ_MAP = 1 << 0,
};
/* ph_read_file_chunks of an open FD (left open), NAME in errors; FLAGS
 * from the enum above. */
int ph_read_fd_chunks(int fd, const char *name, int flags, ph_chunk_cb cb, void *ctx, unsigned long long *size,
                      ph_error_t *err);

#endif
