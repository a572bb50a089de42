/* ph_tar.h - tar in and out of the Engine, with libarchive.
 *
 * Extraction is a push-style streaming parser: feed it bytes as they arrive
 * from the Engine (ph_tar_extract_feed) and it writes files as it goes, so
 * memory stays bounded whatever the archive's size.  It refuses absolute
 * paths, `..` components, links that leave the destination, device nodes,
 * FIFOs and sockets; file modes are clamped to the user's (0644/0755, never
 * setuid or 0600-only) and files belong to the invoking user.
 */
#ifndef PH_TAR_H
#define PH_TAR_H

#include <stddef.h>
#include <stdint.h>
#include "ph_error.h"

typedef struct ph_tar_extract ph_tar_extract;

typedef struct ph_tar_stats {
    uint64_t files, dirs, links, bytes;
    uint64_t refused;  /* entries refused for safety (listed through ph_warn) */
} ph_tar_stats;

/* Extract into DEST_DIR (must exist).  STRIP: leading path components to
 * drop (the Engine's archive names the requested dir as the first component). */
ph_tar_extract *ph_tar_extract_new(const char *dest_dir, int strip, ph_error_t *err);
/* Feed LEN bytes.  Returns 0, or -1 and *err; after an error feed no more. */
int ph_tar_extract_feed(ph_tar_extract *x, const void *data, size_t len, ph_error_t *err);
/* Finish: flushes and checks the archive ended cleanly. */
int ph_tar_extract_finish(ph_tar_extract *x, ph_tar_stats *stats, ph_error_t *err);
void ph_tar_extract_free(ph_tar_extract *x);

/* Extract a whole in-memory archive (tests and small cases). */
int ph_tar_extract_buffer(const void *data, size_t len, const char *dest_dir, int strip,
                          ph_tar_stats *stats, ph_error_t *err);

/* Build an in-memory tar of directory DIR (recursively, skipping paths
 * matched by DIR/.dockerignore patterns) plus EXTRA files: extra[i].name in
 * the archive taken from extra[i].path on disk (or from data/len when path
 * is NULL).  At most max_bytes.  *out is malloc'd. */
typedef struct ph_tar_extra {
    const char *name;
    const char *path;
    const void *data;
    size_t len;
    unsigned mode;
} ph_tar_extra;
int ph_tar_context_build(const char *dir, const ph_tar_extra *extra, size_t n_extra,
                         size_t max_bytes, void **out, size_t *out_len, ph_error_t *err);

#endif
