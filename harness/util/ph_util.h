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

/* Read DIRFD/NAME (AT_FDCWD: a path) whole into a NUL-terminated *BUF
 * (LEN without the NUL), for a file a container may have written: never
 * through a link in its last component, never a FIFO, device or directory,
 * its size checked before a byte is read and at most MAX + 1 bytes read
 * whatever it grows to meanwhile, so a planted 300 MB file costs a
 * fstat().  -1 and *err (PH_EXIT_USAGE) with errnum ENOENT (missing),
 * ELOOP (a link), EINVAL (not a regular file), EFBIG (over MAX); any other
 * errnum is the system's (PH_EXIT_FAILURE). */
int ph_read_file_at(int dirfd, const char *name, size_t max, char **buf, size_t *len, ph_error_t *err);

/* The most a small JSON file written inside a container may hold (the
 * init shim's completion record, the sampler's status, a conversion's
 * facts): theirs are a few hundred bytes, anything larger is none of
 * theirs and is refused unread. */
#define PH_SMALL_JSON_MAX 65536

/* Allocation that aborts on failure is not used: these return NULL. */
char *ph_strdup0(const char *s); /* strdup, NULL-safe */

#endif
