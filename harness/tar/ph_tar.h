/* ph_tar.h - tar in and out of the Engine, with libarchive.
 *
 * Extraction is a push-style streaming parser: feed it bytes as they arrive
 * from the Engine (ph_tar_extract_feed) and it writes files as it goes, so
 * memory stays bounded whatever the archive's size or shape.  What it
 * extracts comes from a container, which may be hostile: it refuses
 * absolute paths, `..` components, links that leave the destination,
 * device nodes, FIFOs and sockets; file modes are clamped to the user's
 * (0644/0755, never setuid or 0600-only) and files belong to the invoking
 * user; and it stops at limits on size, entries and free disk space.
 *
 * Details of that contract:
 *   - a refused entry is skipped, counted in stats.refused and named in a
 *     warning; extraction goes on.  Refused: absolute names, any `..`
 *     component, names of PATH_MAX bytes or more or with a component over
 *     NAME_MAX (so no entry is more than 2,048 levels deep), symlinks with
 *     an absolute target or one that could leave the destination (`..` is
 *     allowed only as leading components, no more of them than the link's
 *     depth), hard links to anything but a regular file extracted inside
 *     the destination or to a name refused earlier (names are remembered
 *     by a 64-bit hash: a collision refuses a link, never admits one),
 *     device nodes, FIFOs, sockets, entries under a symlink or
 *     non-directory, a non-directory where a directory is;
 *   - no symlink is ever followed inside the destination, whoever planted
 *     it (the archive, or something racing the extraction): every
 *     operation is relative to a directory fd opened with O_NOFOLLOW, or
 *     through openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the
 *     kernel has it (PH_TAR_NO_OPENAT2 in the environment makes it walk
 *     with O_NOFOLLOW instead: for tests); an existing leaf is replaced,
 *     never written through;
 *   - holes stay holes: all-zero 4 KiB runs of a file's data are not
 *     written (the Engine streams a sparse file's holes as zeros), and the
 *     file is truncated to its exact size;
 *   - modes: files 0644, or 0755 when any execute bit is set; directories
 *     0755; whatever the umask.  Never chown.  mtimes of files and links
 *     are kept; a directory's is set when the walk leaves it, so it holds
 *     for archives in walk order (each directory's contents after it and
 *     together, as the Engine and tar write them); a later entry that
 *     comes back into a directory changes that directory's mtime;
 *   - memory: no per-entry allocation is kept; the directory stack is at
 *     most 2,048 levels of 32 bytes, and at most 64 directory fds are open
 *     (those of the deepest levels; a shallower level's is reopened when
 *     needed);
 *   - limits (ph_tar_limits): an archive whose files' full sizes (holes
 *     included) add up to more than max_bytes, or whose stream is larger
 *     than that plus 16 KiB of headers per entry, or that has more than
 *     max_entries entries (refused ones count), or whose writing would
 *     leave less than min_free_bytes available on the destination's
 *     filesystem (looked at with fstatvfs every MiB written and every 64
 *     entries), stops the extraction with an error that names the limit:
 *     stats.limit says which, err->errnum is EFBIG, EMLINK or ENOSPC, and
 *     the hint says how to raise it.  A member over max_bytes is refused
 *     before any of its data is written;
 *   - a stream that stops early (inside a member, or between members with
 *     no end-of-archive marker), or a limit, fails in feed or finish;
 *     files completed so far stay (the caller removes the destination if
 *     it wants nothing partial), a half-written one is removed.  Zero
 *     padding after the marker is ignored (within the stream limit);
 *   - extraction runs on a thread of its own (with every signal blocked),
 *     fed through a socketpair: feed blocks while the disk is behind and
 *     memory stays bounded (measured: under 1 MB of RSS for 200 MB, and
 *     for 2,000 nested directories).  Feed, finish and free must not run
 *     concurrently with each other.
 */
#ifndef PH_TAR_H
#define PH_TAR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ph_error.h"

typedef struct ph_tar_extract ph_tar_extract;

/* Which limit stopped an extraction. */
typedef enum ph_tar_limit {
    PH_TAR_LIMIT_NONE = 0,
    PH_TAR_LIMIT_BYTES,   /* max_bytes (err->errnum EFBIG) */
    PH_TAR_LIMIT_ENTRIES, /* max_entries (EMLINK) */
    PH_TAR_LIMIT_FREE,    /* min_free_bytes (ENOSPC) */
} ph_tar_limit;

/* Per-extraction limits.  A field of 0 takes its default; PH_TAR_NO_LIMIT
 * turns that check off. */
typedef struct ph_tar_limits {
    uint64_t max_bytes;      /* files' full sizes, holes included */
    uint64_t max_entries;    /* archive entries, refused ones included */
    uint64_t min_free_bytes; /* left available on the destination's filesystem */
} ph_tar_limits;

#define PH_TAR_NO_LIMIT UINT64_MAX
#define PH_TAR_DEFAULT_MAX_BYTES (16ull << 30)
#define PH_TAR_DEFAULT_MAX_ENTRIES 200000ull
/* min_free_bytes' default: 1 GiB, or 5 % of the filesystem when that is
 * less (a small disk can still take a run; a large one keeps room). */
#define PH_TAR_DEFAULT_MIN_FREE (1ull << 30)

/* min_free_bytes SET as an extraction into FD's filesystem uses it: SET,
 * or for 0 the default above. */
uint64_t ph_tar_min_free_of(uint64_t set, int fd);
/* Room for NEED more bytes where AVAIL are available, keeping MIN_FREE
 * (PH_TAR_NO_LIMIT: the check is off): 1 or 0. */
int ph_tar_room(uint64_t avail, uint64_t min_free, uint64_t need);
/* Is there room for NEED more bytes on FD's filesystem, keeping MIN_FREE
 * (resolved)?  0, or -1 and the error an extraction stopped by min_free
 * gives (errnum ENOSPC), naming REL as what is written. */
int ph_tar_free_check(int fd, uint64_t min_free, uint64_t need, const char *rel, ph_error_t *err);

/* V as "16 GiB" when exact in a binary unit, else in bytes; "unlimited"
 * for PH_TAR_NO_LIMIT: sizes in the limits' messages.  Returns BUF. */
const char *ph_tar_size_text(uint64_t v, char buf[32]);
/* The user-facing name of a limit: "max_bytes", "max_entries", "min_free". */
const char *ph_tar_limit_name(ph_tar_limit limit);
/* Parse TEXT as a value for LIMIT: a size for max_bytes and min_free
 * (bytes, or a number with one of B, KiB, MiB, GiB, TiB, kB, MB, GB, TB:
 * `512MiB`, `16GiB`), a count for max_entries; `unlimited` for
 * PH_TAR_NO_LIMIT.  0 is refused for the maxima and means "keep nothing"
 * (PH_TAR_NO_LIMIT) for min_free.  Bad input: -1 and a PH_EXIT_USAGE error
 * saying what is wanted (the caller adds where). */
int ph_tar_limit_parse(ph_tar_limit limit, const char *text, uint64_t *out, ph_error_t *err);

typedef struct ph_tar_stats {
    uint64_t files, dirs, links;
    uint64_t bytes;    /* data bytes received for files, zeros included */
    uint64_t size;     /* files' full sizes, holes included (what max_bytes counts) */
    uint64_t entries;  /* archive entries seen (what max_entries counts) */
    uint64_t refused;  /* entries refused for safety (listed through ph_warn) */
    uint64_t skipped;  /* entries the select callback passed over */
    ph_tar_limit limit; /* the limit that stopped the extraction, if one did */
    uint64_t limit_value; /* ... and its value (resolved: a default as it was) */
} ph_tar_stats;

/* Extract into DEST_DIR (must exist).  STRIP: leading path components to
 * drop (the Engine's archive names the requested dir as the first
 * component).  LIMITS: NULL for the defaults. */
ph_tar_extract *ph_tar_extract_new(const char *dest_dir, int strip, const ph_tar_limits *limits, ph_error_t *err);
/* The same into the directory DIRFD is (O_PATH will do), however it is
 * named by the time extraction runs: no path is resolved.  DIRFD stays
 * the caller's. */
ph_tar_extract *ph_tar_extract_new_at(int dirfd, int strip, const ph_tar_limits *limits, ph_error_t *err);
/* The same as ph_tar_extract_new_at, extracting only the entries
 * SELECT_CB takes (returns 1; 0 passes over it, counted in
 * stats.skipped).  It is called with each entry's name as it would be
 * written (stripped and checked: never empty, absolute or with `..`), its
 * type (S_IFREG, S_IFDIR, S_IFLNK... of <sys/stat.h>; a hard link is
 * S_IFREG, and is still refused when its target was not extracted) and
 * its size, on the extraction's thread.  Every entry still counts against
 * the limits, so max_bytes bounds how much of the archive is read, taken
 * or not.  An entry taken under a directory passed over is written all
 * the same, its directories made as for an archive that lists none. */
typedef int (*ph_tar_select_cb)(void *ud, const char *rel, unsigned type, uint64_t size);
ph_tar_extract *ph_tar_extract_new_select_at(int dirfd, int strip, const ph_tar_limits *limits,
                                             ph_tar_select_cb select_cb, void *ud, ph_error_t *err);
/* Feed LEN bytes.  Returns 0, or -1 and *err; after an error feed no more. */
int ph_tar_extract_feed(ph_tar_extract *x, const void *data, size_t len, ph_error_t *err);
/* Finish: flushes and checks the archive ended cleanly.  STATS (may be
 * NULL) is filled on failure too, also after a failed feed.  Call it once;
 * free is still needed. */
int ph_tar_extract_finish(ph_tar_extract *x, ph_tar_stats *stats, ph_error_t *err);
void ph_tar_extract_free(ph_tar_extract *x);

/* Extract a whole in-memory archive (tests and small cases). */
int ph_tar_extract_buffer(const void *data, size_t len, const char *dest_dir, int strip,
                          const ph_tar_limits *limits, ph_tar_stats *stats, ph_error_t *err);

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
 * when 0 its file's (0644 for data); with no path and S_IFDIR in its
 * mode, a directory of that mode (the sticky bit kept).  Over max_bytes: an error
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

/* The tar ph_tar_context_build makes of DIR and EXTRA, streamed: a
 * thread writes it as ph_tar_stream_read (the backend's read callback, UD
 * the stream) takes it, so memory stays bounded whatever the files'
 * sizes (holes are read as zeros).  DIR is copied; EXTRA must stay valid
 * until free.  The reader's -1 means the writer failed; finish then
 * gives the writer's error in place of the one the reader's caller made,
 * or says the stream was not read to its end; 0 once it was, whole.
 * Free ends a writer still running (its next write fails). */
typedef struct ph_tar_stream ph_tar_stream;
ph_tar_stream *ph_tar_stream_new(const char *dir, const ph_tar_extra *extra, size_t n_extra, ph_error_t *err);
ssize_t ph_tar_stream_read(void *ud, char *buf, size_t len);
int ph_tar_stream_finish(ph_tar_stream *s, ph_error_t *err);
uint64_t ph_tar_stream_bytes(const ph_tar_stream *s); /* read so far */
void ph_tar_stream_free(ph_tar_stream *s);

/* The first member of a tar whose first LEN bytes are DATA (the rest may
 * be missing): a regular file's first bytes (up to CAP into BUF, as many
 * as DATA holds; out->len), or a symlink's target.  -1 and *err when DATA
 * does not begin with a tar header. */
typedef struct ph_tar_peek_t {
    enum { PH_TAR_PEEK_OTHER, PH_TAR_PEEK_FILE, PH_TAR_PEEK_SYMLINK } type;
    size_t len;         /* bytes of a file's data in BUF */
    char target[4096];  /* a symlink's target */
} ph_tar_peek_t;
int ph_tar_peek(const void *data, size_t len, ph_tar_peek_t *out, void *buf, size_t cap, ph_error_t *err);

#endif
