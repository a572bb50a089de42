/* ph_tar.h - tar in and out of the Engine, with libarchive.
 *
 * Extraction is a push-style streaming parser: feed it bytes as they arrive
 * from the Engine (ph_tar_extract_feed) and it writes files as it goes, so
 * memory stays bounded whatever the archive's size.  It refuses absolute
 * paths, `..` components, links that leave the destination, device nodes,
 * FIFOs and sockets; file modes are clamped to the user's (0644/0755, never
 * setuid or 0600-only) and files belong to the invoking user.
 *
 * Details of that contract:
 *   - a refused entry is skipped, counted in stats.refused and named in a
 *     warning; extraction goes on.  Refused: absolute names, any `..`
 *     component, symlinks with an absolute target or one that could leave
 *     the destination (`..` is allowed only as leading components, no more
 *     of them than the link's depth), hard links to anything but a regular
 *     file extracted inside the destination or to a name refused earlier,
 *     device nodes, FIFOs, sockets, entries under a symlink or non-directory;
 *   - nothing is ever written through an existing symlink: paths are walked
 *     with O_NOFOLLOW and an existing leaf is replaced, not opened;
 *   - modes: files 0644, or 0755 when any execute bit is set; directories
 *     0755; whatever the umask.  Never chown.  mtimes of files, links and
 *     directories are kept;
 *   - a stream that stops early (inside a member, or between members with
 *     no end-of-archive marker) fails in feed or finish; files completed so
 *     far stay, a half-written one is removed.  Zero padding after the
 *     marker is ignored;
 *   - extraction runs on a thread of its own (with every signal blocked),
 *     fed through a socketpair: feed blocks while the disk is behind and
 *     memory stays bounded (measured: under 1 MB of RSS for 200 MB).  Feed,
 *     finish and free must not run concurrently with each other.
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
/* Finish: flushes and checks the archive ended cleanly.  STATS (may be
 * NULL) is filled on failure too.  Call it once; free is still needed. */
int ph_tar_extract_finish(ph_tar_extract *x, ph_tar_stats *stats, ph_error_t *err);
void ph_tar_extract_free(ph_tar_extract *x);

/* Extract a whole in-memory archive (tests and small cases). */
int ph_tar_extract_buffer(const void *data, size_t len, const char *dest_dir, int strip,
                          ph_tar_stats *stats, ph_error_t *err);

/* Build an in-memory tar of directory DIR (recursively, skipping paths
 * matched by DIR/.dockerignore patterns) plus EXTRA files: extra[i].name in
 * the archive taken from extra[i].path on disk (or from data/len when path
 * is NULL).  At most max_bytes.  *out is malloc'd.
 *
 * The output is deterministic, because the caller hashes it to name the
 * image it builds: members in bytewise-sorted order (directories before
 * their contents), then the extras in the order given; owner 0:0 with no
 * user or group names; modes as on disk without set-id bits; mtimes kept
 * to the second (in-memory extras: 0).  So identical names, contents,
 * modes and mtimes give identical bytes, and touching a file changes them.
 * .dockerignore follows Docker's rules: `#` comments, `*` `?` `[...]`
 * within a component, `**` across components, a trailing `/` ignored,
 * `!` exceptions, the last matching pattern wins, a pattern matching a
 * directory covers its contents; Dockerfile and .dockerignore are always
 * sent, as Docker's CLI does.  Symlinks are stored as links; an extra
 * replaces a context file of the same name; its mode is extra.mode, or
 * when 0 its file's (0644 for data).  Over max_bytes: an error
 * naming the limit, with a hint. */
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
