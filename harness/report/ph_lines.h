/* ph_lines.h - bytes in chunks of any size, whole lines out, for the
 * report's streaming parsers (massif, callgrind, strace).
 *
 * A line wholly inside a chunk is handed over in place, without a copy;
 * only a line split across chunks is held, and never more than MAX_LINE
 * bytes of it: a longer line is dropped and reported as one call with
 * LINE == NULL, so memory stays bounded whatever the input.  The newline
 * is not part of the line; a final '\r' is removed.
 *
 * ph_lines_read_file streams a whole file through a 1 MiB buffer.
 * Pure; one ph_lines belongs to one thread at a time.
 */
#ifndef PH_LINES_H
#define PH_LINES_H

#include <stddef.h>
#include "ph_error.h"

/* One line (LEN bytes, not NUL-terminated) numbered LINENO from 1; LINE
 * is NULL for a line longer than the limit (dropped).  Return < 0 to stop
 * (with *err set). */
typedef int (*ph_lines_cb)(void *ctx, const char *line, size_t len, size_t lineno, ph_error_t *err);

typedef struct ph_lines {
    ph_lines_cb cb;
    void *ctx;
    size_t max_line;
    char *hold;        /* the start of a line split across chunks */
    size_t hold_len, hold_cap;
    int overlong;      /* the held line went past max_line: dropping to its end */
    size_t lineno;     /* lines handed over so far */
} ph_lines;

void ph_lines_init(ph_lines *l, size_t max_line, ph_lines_cb cb, void *ctx);
/* Hand over every complete line of BUF; -1 when the callback says so or
 * on ENOMEM. */
int ph_lines_feed(ph_lines *l, const char *buf, size_t len, ph_error_t *err);
/* Hand over a final line without a newline, if any.  The splitter may be
 * fed again afterwards (a new file: line numbers go on). */
int ph_lines_finish(ph_lines *l, ph_error_t *err);
void ph_lines_free(ph_lines *l);

/* A chunk of a file, for readers that take chunks rather than lines. */
typedef int (*ph_chunk_cb)(void *ctx, const char *buf, size_t len, ph_error_t *err);
/* Read PATH through a 1 MiB buffer, handing each chunk to CB.  Errors
 * name the file.  *SIZE (may be NULL) gets the bytes read. */
int ph_read_file_chunks(const char *path, ph_chunk_cb cb, void *ctx, unsigned long long *size, ph_error_t *err);

#endif
