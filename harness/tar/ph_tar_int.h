/* ph_tar_int.h - what the two halves of the tar module share: extraction
 * (ph_tar.c), its limits (ph_tar_limits.c) and build contexts
 * (ph_tar_context.c).  Not for other floors. */
#ifndef PH_TAR_INT_H
#define PH_TAR_INT_H

#include <archive.h>
#include <stddef.h>
#include <stdint.h>

#include "ph_tar.h"

enum { PH_TAR_NAME_OK, PH_TAR_NAME_EMPTY, PH_TAR_NAME_UNSAFE, PH_TAR_NAME_LONG };

/* Normalise archive name NAME into OUT (OUTSZ bytes): drop empty and `.`
 * components, then STRIP leading ones.  PH_TAR_NAME_EMPTY when nothing is
 * left, PH_TAR_NAME_UNSAFE for an absolute name or any `..` component (even
 * one that would be stripped: such an archive is not what the Engine
 * sends), PH_TAR_NAME_LONG when the result does not fit OUT with its NUL
 * or a component is longer than NAME_MAX. */
int ph_tar_name_normalise(const char *name, int strip, char *out, size_t outsz);

/* A tar writer A (archive_write_new) set up as build contexts are written
 * (pax where ustar falls short, no padding to records) and opened onto
 * WRITE_CB with UD. */
int ph_tar_context_open(struct archive *a, void *ud, la_ssize_t (*write_cb)(struct archive *, void *, const void *, size_t),
                        ph_error_t *err);
/* DIR (its .dockerignore applied; NULL: none) and the EXTRA files into A,
 * opened by ph_tar_context_open, as ph_tar_context_build lays them out;
 * then A is closed (the end-of-archive marker written). */
int ph_tar_context_write(struct archive *a, const char *dir, const ph_tar_extra *extra, size_t n_extra,
                         ph_error_t *err);

#endif
