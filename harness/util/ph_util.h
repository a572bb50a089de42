/* ph_util.h - cleanup attributes and small helpers shared by the library. */
#ifndef PH_UTIL_H
#define PH_UTIL_H

#include <stddef.h>
#include <stdio.h>

void ph_freep(void *p);       /* free(*(void **)p) */
void ph_closep(int *fd);      /* close(*fd) when >= 0 */
void ph_fclosep(FILE **f);    /* fclose(*f) when non-NULL */

#define ph_cleanup_free __attribute__((cleanup(ph_freep)))
#define ph_cleanup_close __attribute__((cleanup(ph_closep)))
#define ph_cleanup_fclose __attribute__((cleanup(ph_fclosep)))

#define PH_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Read PATH whole, at most MAX bytes, into a NUL-terminated *BUF (LEN
 * without the NUL).  Only a regular file, or a FIFO when ALLOW_FIFO (which
 * process substitution gives); anything else, or a larger file, is bad
 * input (PH_EXIT_USAGE), as is a missing one.  The open never blocks on a
 * FIFO without a writer unless ALLOW_FIFO. */
#include "ph_error.h"
int ph_read_file(const char *path, size_t max, int allow_fifo, char **buf, size_t *len, ph_error_t *err);

/* Allocation that aborts on failure is not used: these return NULL. */
char *ph_strdup0(const char *s); /* strdup, NULL-safe */

#endif
