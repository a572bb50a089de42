/* ph_tar.c - extraction of the Engine's archives with libarchive (see
 * ph_tar.h for the contract; build contexts are in ph_tar_context.c).
 *
 * Streaming.  The Engine's archive endpoint pushes bytes at us (curl's
 * write callback) while libarchive pulls them (a read callback).
 * libarchive cannot resume a read that ran out of data: a read callback
 * that returns "nothing yet" is taken as end of file, and ARCHIVE_RETRY is
 * not honoured mid-header by the tar reader.  Parsing ustar/pax/GNU headers
 * ourselves would mean a second tar reader to keep correct.  So the reader
 * runs in its own thread on one end of a socketpair and
 * ph_tar_extract_feed() writes into the other:
 *
 *   - the socket buffer (a few hundred kB) plus libarchive's own 64 kB read
 *     block is the whole queue, so memory stays bounded whatever the size
 *     of the archive, and a slow disk pushes back on curl through a blocking
 *     send();
 *   - a reader that stopped on an error shuts its end down, so the next
 *     feed fails at once with EPIPE (MSG_NOSIGNAL: no SIGPIPE) instead of
 *     blocking, and the caller gets the reader's error;
 *   - a reader that reached the end-of-archive marker keeps draining the
 *     socket, so the zero padding some writers append is no error;
 *   - the thread runs with every signal blocked (signals are the main
 *     loop's business) and touches only the destination directory and its
 *     own fields; the caller reads those after pthread_join().
 *
 * The directory stack.  Entries arrive in walk order, so consecutive
 * entries share most of their path.  The stack holds the directory the
 * last entry went into, one level per component, each with the fd it was
 * opened with: the next entry pops to the longest common prefix and opens
 * (creating) only what follows, so an entry costs its own components, not
 * its whole depth.  A level's mtime is set when it is popped, when the
 * walk has left it.  Only the 64 deepest levels keep their fds (besides
 * the destination's); a level needed again after its fd was closed is
 * reopened in one openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) from the
 * destination, or, where the kernel (or a seccomp filter) lacks openat2,
 * by walking down from the destination with O_NOFOLLOW (a walk as long as
 * the path: old kernels pay for what openat2 does in one call).
 *
 * Safety.  Every entry is written relative to a directory fd of the stack,
 * and every stack level was opened from its parent's fd with O_NOFOLLOW |
 * O_DIRECTORY (or by the openat2 above), so neither a `..` nor a symlink
 * planted earlier (by the archive or by something racing us) can lead a
 * write outside the destination; an existing leaf is unlinked and
 * recreated, never written through.  Names must be relative without `..`.
 * Symlink targets must be relative and may use `..` only as leading
 * components, no more of them than the link's depth: the link's own
 * directories are real directories (we created them without following
 * links, and we never replace a directory), so the leading `..` stay
 * inside, and the rest only descends, through names that are themselves
 * directories or links checked by the same rule.  A lexical check that
 * allowed `x/..` would be fooled by `x` being a link (`sub/x -> ..`,
 * `sub/y -> x/..`).  Hard links may only name a regular file already
 * extracted inside the destination and not a name refused earlier; they
 * are never links to symlinks, which would move a symlink to another
 * depth.
 *
 * Hostile sizes.  A container's sparse file arrives as zeros: all-zero
 * runs are skipped (lseek-free: pwrite at offsets, ftruncate at the end),
 * so a 1 TiB hole costs no disk, but it still costs the time to stream it,
 * which is why max_bytes counts files' full sizes and refuses such a
 * member at its header, before any of it is read.
 */
#include "ph_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_tar_int.h"
#include "ph_timing.h"

/* The select callback is told an entry's type in <sys/stat.h>'s terms,
 * which libarchive's are. */
_Static_assert(AE_IFREG == S_IFREG && AE_IFDIR == S_IFDIR && AE_IFLNK == S_IFLNK, "libarchive's file types");

#define READ_BLOCK (64 * 1024)
#define REFUSED_SLOTS 8192                /* hashes of refused names, open addressing */
#define REFUSED_MAX (REFUSED_SLOTS / 2)   /* beyond this, every hard link is refused */
#define FD_WINDOW 64                      /* directory fds kept open besides the destination's */
#define MAX_DEPTH (PATH_MAX / 2)          /* components in a name shorter than PATH_MAX */
#define HOLE_CHUNK 4096                   /* aligned all-zero runs of this size are not written */
#define FREE_CHECK_BYTES (1u << 20)       /* free space is looked at every MiB written */
#define FREE_CHECK_ENTRIES 64             /* and every 64 entries */
#define HEADER_ALLOWANCE (16 * 1024)      /* stream bytes per entry beyond its data */

typedef struct dir_level {
    int fd;             /* -1: closed, reopened when needed */
    unsigned end;       /* this level's path is cur[0..end) */
    int has_mtime;
    struct timespec mtime;
} dir_level;

struct ph_tar_extract {
    int dest_fd;
    int strip;
    int sock[2];     /* [0] the reader's end, [1] ours */
    pthread_t thread;
    int started;
    int failed;      /* an error was handed to the caller */
    ph_tar_limits lim; /* resolved: no zero fields */
    ph_tar_stats stats;
    ph_error_t err;  /* the reader's error, read after join */
    ph_stage *parent; /* the caller's timing stage: the reader's nests under it */
    ph_tar_select_cb select_cb; /* NULL: every entry */
    void *select_ud;

    /* Reader-thread state. */
    char rbuf[READ_BLOCK];
    uint64_t *refused; /* REFUSED_SLOTS name hashes, allocated at the first refusal */
    size_t n_refused;
    int use_openat2;
    int umask_ok;      /* the umask leaves 0755 alone: no fchmod needed after creating */
    int top_created;   /* dirs_enter created the top level just now */
    uint64_t received; /* bytes handed to libarchive */
    uint64_t trailing; /* bytes after the end-of-archive marker */
    uint64_t unchecked_bytes; /* written since free space was last looked at */
    unsigned unchecked_entries;
    /* The directory stack (see the top): cur is the path of lv[depth],
     * NUL-terminated; lv[0] is the destination.  lv[1..low-1] are closed. */
    unsigned depth, n_open, low;
    char cur[PATH_MAX];
    dir_level lv[MAX_DEPTH + 1];
};

/* ---- names -------------------------------------------------------------- */

/* See ph_tar_int.h. */
int
ph_tar_name_normalise(const char *name, int strip, char *out, size_t outsz)
{
    size_t len = 0;
    int skipped = 0;

    if (name[0] == '/')
        return PH_TAR_NAME_UNSAFE;
    out[0] = '\0';
    for (const char *c = name; *c;) {
        const char *e = c;
        size_t n;

        while (*e != '\0' && *e != '/') /* not strcspn: a call per component costs */
            e++;                         /* more than the bytes of a deep name */
        n = (size_t)(e - c);
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return PH_TAR_NAME_UNSAFE;
        if (n > 0 && !(n == 1 && c[0] == '.')) {
            if (skipped < strip) {
                skipped++;
            } else {
                if (n > NAME_MAX || len + (len > 0) + n >= outsz)
                    return PH_TAR_NAME_LONG;
                if (len > 0)
                    out[len++] = '/';
                memcpy(out + len, c, n);
                len += n;
                out[len] = '\0';
            }
        }
        c += n;
        while (*c == '/')
            c++;
    }
    return len > 0 ? PH_TAR_NAME_OK : PH_TAR_NAME_EMPTY;
}

/* May a symlink at REL (normalised) point at TARGET?  See the top. */
static int
symlink_target_ok(const char *rel, const char *target)
{
    int depth = 0, descended = 0;

    if (target[0] == '\0' || target[0] == '/')
        return 0;
    for (const char *c = rel; *c; c++)
        if (*c == '/')
            depth++;
    for (const char *t = target; *t;) {
        size_t n = strcspn(t, "/");

        if (n == 2 && t[0] == '.' && t[1] == '.') {
            if (descended || --depth < 0)
                return 0;
        } else if (n > 0 && !(n == 1 && t[0] == '.')) {
            descended = 1;
        }
        t += n;
        while (*t == '/')
            t++;
    }
    return 1;
}

/* ---- limits ------------------------------------------------------------- */

/* Stop on LIMIT: the error says what passed it (FMT), the limit's name and
 * value, and how to raise it; stats.limit and err->errnum say which. */
static int __attribute__((format(printf, 4, 5)))
limit_fail(ph_tar_extract *x, ph_tar_limit limit, ph_error_t *err, const char *fmt, ...)
{
    static const int errnums[] = { [PH_TAR_LIMIT_BYTES] = EFBIG, [PH_TAR_LIMIT_ENTRIES] = EMLINK,
                                   [PH_TAR_LIMIT_FREE] = ENOSPC };
    const uint64_t values[] = { [PH_TAR_LIMIT_BYTES] = x->lim.max_bytes,
                                [PH_TAR_LIMIT_ENTRIES] = x->lim.max_entries,
                                [PH_TAR_LIMIT_FREE] = x->lim.min_free_bytes };
    char what[1024], value[32];
    va_list ap;

    if (*err != NULL)
        return -1; /* an earlier error stands */
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (limit == PH_TAR_LIMIT_ENTRIES)
        snprintf(value, sizeof value, "%" PRIu64, values[limit]);
    else
        ph_tar_size_text(values[limit], value);
    ph_fail(err, 0, "%s: over the limit `%s` of %s", what, ph_tar_limit_name(limit), value);
    (*err)->errnum = errnums[limit];
    ph_error_hint(err, "if this is expected, raise `%s` (`unlimited` turns it off)", ph_tar_limit_name(limit));
    x->stats.limit = limit;
    x->stats.limit_value = values[limit];
    return -1;
}

/* Is there room for NEED more bytes on FD's filesystem, keeping
 * min_free_bytes available?  REL names what is being written. */
static int
free_check(ph_tar_extract *x, int fd, uint64_t need, const char *rel, ph_error_t *err)
{
    x->unchecked_bytes = 0;
    x->unchecked_entries = 0;
    if (*err != NULL)
        return -1; /* an earlier error stands */
    if (ph_tar_free_check(fd, x->lim.min_free_bytes, need, rel, err) == 0)
        return 0;
    x->stats.limit = PH_TAR_LIMIT_FREE;
    x->stats.limit_value = x->lim.min_free_bytes;
    return -1;
}

/* ---- the refused-name set (for hard links) ------------------------------ */

static uint64_t
name_hash(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h ? h : 1; /* 0 marks an empty slot */
}

static void
refused_add(ph_tar_extract *x, const char *rel)
{
    uint64_t h = name_hash(rel);
    size_t i = h % REFUSED_SLOTS;

    if (x->n_refused >= REFUSED_MAX)
        return;
    if (x->refused == NULL && (x->refused = calloc(REFUSED_SLOTS, sizeof *x->refused)) == NULL) {
        x->n_refused = REFUSED_MAX; /* cannot remember: refuse every hard link */
        return;
    }
    while (x->refused[i] != 0 && x->refused[i] != h)
        i = (i + 1) % REFUSED_SLOTS;
    if (x->refused[i] == 0) {
        x->refused[i] = h;
        x->n_refused++;
    }
}

static int
refused_has(const ph_tar_extract *x, const char *rel)
{
    uint64_t h = name_hash(rel);
    size_t i = h % REFUSED_SLOTS;

    if (x->n_refused >= REFUSED_MAX)
        return 1; /* full: refuse every hard link */
    if (x->refused == NULL)
        return 0;
    while (x->refused[i] != 0) {
        if (x->refused[i] == h)
            return 1;
        i = (i + 1) % REFUSED_SLOTS;
    }
    return 0;
}

/* Skip an entry for safety: count it, name it, remember it.  Returns 0 so
 * callers can `return refuse(...)`. */
static int
refuse(ph_tar_extract *x, const char *name, const char *rel, const char *why)
{
    x->stats.refused++;
    ph_warn("archive entry `%s` refused: %s", name, why);
    if (rel != NULL)
        refused_add(x, rel);
    return 0;
}

/* ---- the directory stack ------------------------------------------------ */

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define FILE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC) /* a new file, never through a link */

/* Where level J's component starts in cur. */
static unsigned
lv_start(const ph_tar_extract *x, unsigned j)
{
    return j <= 1 ? 0 : x->lv[j - 1].end + 1;
}

/* Open PATH (components separated by single `/`, writable: it is cut and
 * restored in place) below directory BASE, one component at a time,
 * following no symlink.  A new fd, or -1 and errno (ELOOP, ENOTDIR: a
 * component is a symlink or not a directory). */
static int
walk_down(int base, char *path)
{
    int fd = -1;

    for (char *p = path;;) {
        char *slash = strchr(p, '/');
        int next, e;

        if (slash)
            *slash = '\0';
        next = openat(fd >= 0 ? fd : base, p, DIR_FLAGS);
        e = errno;
        if (slash)
            *slash = '/';
        if (fd >= 0)
            close(fd);
        fd = next;
        if (fd < 0 || slash == NULL) {
            errno = e;
            return fd;
        }
        p = slash + 1;
    }
}

/* PATH (non-empty) below the destination, following no symlink, in one
 * openat2 where the kernel has it.  A new fd, or -1 and errno; when openat2
 * is missing or filtered, x->use_openat2 is cleared and errno is ENOSYS. */
static int
open_beneath2(ph_tar_extract *x, const char *path)
{
    struct open_how how = {
        .flags = DIR_FLAGS,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, x->dest_fd, path, &how, sizeof how);

    if (fd < 0 && (errno == ENOSYS || errno == EPERM || errno == EINVAL || errno == E2BIG)) {
        x->use_openat2 = 0; /* an old kernel or a seccomp filter: walk from now on */
        errno = ENOSYS;
    }
    return (int)fd;
}

/* A new fd for directory PATH (writable, non-empty) below the destination. */
static int
open_beneath(ph_tar_extract *x, char *path)
{
    if (x->use_openat2) {
        int fd = open_beneath2(x, path);

        if (fd >= 0 || x->use_openat2)
            return fd;
    }
    return walk_down(x->dest_fd, path);
}

/* A new fd for stack level J (>= 1), whose own fd is closed.  Fds are
 * closed from the shallow end, so when J's is, all above it in the stack
 * are too: the path is opened from the destination. */
static int
lv_reopen(ph_tar_extract *x, unsigned j)
{
    unsigned end = x->lv[j].end;
    char saved = x->cur[end];
    int fd;

    x->cur[end] = '\0';
    fd = open_beneath(x, x->cur);
    x->cur[end] = saved;
    return fd;
}

/* Give level J the fd FD, closing the shallowest other level's when more
 * than FD_WINDOW are open. */
static void
lv_keep(ph_tar_extract *x, unsigned j, int fd)
{
    x->lv[j].fd = fd;
    x->n_open++;
    if (j < x->low)
        x->low = j;
    while (x->n_open > FD_WINDOW) {
        while (x->lv[x->low].fd < 0)
            x->low++;
        close(x->lv[x->low].fd);
        x->lv[x->low].fd = -1;
        x->n_open--;
        x->low++;
    }
}

/* Level J's fd, reopened if it was closed.  -1 and errno if that fails. */
static int
lv_fd(ph_tar_extract *x, unsigned j)
{
    int fd;

    if (j == 0)
        return x->dest_fd;
    if (x->lv[j].fd >= 0)
        return x->lv[j].fd;
    fd = lv_reopen(x, j);
    if (fd >= 0)
        lv_keep(x, j, fd);
    return fd;
}

static void
apply_mtime(int fd, const dir_level *l)
{
    struct timespec ts[2] = { l->mtime, l->mtime };

    if (l->has_mtime)
        futimens(fd, ts); /* cosmetic: a failure is no reason to stop */
}

/* Leave the levels above K: set their mtimes, close their fds. */
static void
dirs_pop(ph_tar_extract *x, unsigned k)
{
    unsigned j = k + 1;
    int parent = -1, owned = 0;

    /* Closed levels with an mtime to set: open them walking down, each
     * from its parent (mtimes can be set in any order: setting one
     * changes no directory's contents). */
    while (j <= x->depth && !(x->lv[j].fd < 0 && x->lv[j].has_mtime))
        j++;
    for (; j <= x->depth; j++) {
        int fd = x->lv[j].fd, own = 0;

        if (fd < 0) {
            if (parent >= 0) {
                unsigned end = x->lv[j].end;
                char saved = x->cur[end];

                x->cur[end] = '\0';
                fd = openat(parent, x->cur + lv_start(x, j), DIR_FLAGS);
                x->cur[end] = saved;
            } else {
                fd = lv_reopen(x, j);
            }
            own = 1;
            if (fd >= 0)
                apply_mtime(fd, &x->lv[j]);
        }
        if (owned)
            close(parent);
        parent = fd;
        owned = own;
        if (fd < 0)
            break; /* gone: what is below it is gone too */
    }
    if (owned)
        close(parent);
    for (j = x->depth; j > k; j--) {
        if (x->lv[j].fd >= 0) {
            apply_mtime(x->lv[j].fd, &x->lv[j]);
            close(x->lv[j].fd);
            x->lv[j].fd = -1;
            x->n_open--;
        }
        x->lv[j].has_mtime = 0;
    }
    x->depth = k;
    x->cur[x->lv[k].end] = '\0';
    if (x->low > k + 1)
        x->low = k + 1;
}

/* How many leading levels of the stack DIR (LEN bytes, normalised) shares. */
static unsigned
dirs_common(const ph_tar_extract *x, const char *dir, size_t len)
{
    size_t m = 0, lim = x->lv[x->depth].end;
    unsigned k = x->depth;

    if (lim > len)
        lim = len;
    while (m < lim && x->cur[m] == dir[m])
        m++;
    while (k > 0 && !(x->lv[k].end <= m && (x->lv[k].end == len || dir[x->lv[k].end] == '/')))
        k--;
    return k;
}

/* Make DIR (LEN bytes of a normalised name; empty: the destination) the
 * current directory, creating what is missing (0755).  Its fd, owned by
 * the stack, or -1 and errno (ELOOP, ENOTDIR: a component is a symlink or
 * not a directory); then the stack holds the part that exists. */
static int
dirs_enter(ph_tar_extract *x, const char *dir, size_t len)
{
    unsigned k = dirs_common(x, dir, len);
    size_t pos = k == 0 ? 0 : x->lv[k].end + 1;

    if (k < x->depth)
        dirs_pop(x, k);
    x->top_created = 0;
    while (pos < len) {
        const char *c = dir + pos;
        size_t n = len - pos;
        const char *slash = memchr(c, '/', n);
        unsigned start = x->depth == 0 ? 0 : x->lv[x->depth].end + 1;
        int parent = lv_fd(x, x->depth), fd, created, e;

        if (parent < 0)
            return -1;
        if (slash)
            n = (size_t)(slash - c);
        if (x->depth >= MAX_DEPTH || start + n >= sizeof x->cur) {
            errno = ENAMETOOLONG; /* normalised names cannot get here */
            return -1;
        }
        if (x->depth > 0)
            x->cur[start - 1] = '/';
        memcpy(x->cur + start, c, n);
        x->cur[start + n] = '\0';
        created = mkdirat(parent, x->cur + start, 0755) == 0;
        e = errno;
        fd = created || e == EEXIST ? openat(parent, x->cur + start, DIR_FLAGS) : -1;
        if (fd < 0) {
            if (created || e == EEXIST)
                e = errno;
            x->cur[x->lv[x->depth].end] = '\0';
            errno = e;
            return -1;
        }
        if (created && !x->umask_ok)
            fchmod(fd, 0755); /* whatever the umask: the user reads it */
        x->top_created = created;
        x->depth++;
        x->lv[x->depth] = (dir_level){ .fd = -1, .end = start + (unsigned)n };
        lv_keep(x, x->depth, fd);
        pos += n + 1;
    }
    return lv_fd(x, x->depth);
}

/* The directory of REL (normalised) entered, *leaf its last component.
 * >= 0: the directory's fd (the stack's); -1: *err is set; -2: refused. */
static int
enter_parent(ph_tar_extract *x, const char *name, const char *rel, const char **leaf, ph_error_t *err)
{
    const char *slash = strrchr(rel, '/');
    int fd;

    *leaf = slash ? slash + 1 : rel;
    fd = dirs_enter(x, rel, slash ? (size_t)(slash - rel) : 0);
    if (fd >= 0)
        return fd;
    if (errno == ELOOP || errno == ENOTDIR) {
        refuse(x, name, rel, "a parent is a symlink or not a directory");
        return -2;
    }
    ph_fail(err, errno, "create the directories of `%s`", rel);
    return -1;
}

/* ---- writing entries ---------------------------------------------------- */

static int
entry_mtime(struct archive_entry *e, struct timespec ts[2])
{
    if (!archive_entry_mtime_is_set(e))
        return 0;
    ts[0].tv_sec = ts[1].tv_sec = archive_entry_mtime(e);
    ts[0].tv_nsec = ts[1].tv_nsec = archive_entry_mtime_nsec(e);
    return 1;
}

/* Make room for a new non-directory at LEAF: an existing file or link is
 * removed (never written through); a directory stays, and the entry is
 * refused. */
static int
clear_leaf(int dir, const char *leaf)
{
    struct stat st;

    if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return -1;
    unlinkat(dir, leaf, 0);
    return 0;
}

static int
all_zero(const unsigned char *p, size_t n)
{
    return p[0] == 0 && memcmp(p, p + 1, n - 1) == 0;
}

/* Write LEN bytes of BUF at OFF, leaving all-zero chunks (HOLE_CHUNK
 * aligned in the file) as holes: the file is new, so they read as zeros.
 * *END: how far the file has been written. */
static int
write_data(ph_tar_extract *x, int fd, const unsigned char *buf, size_t len, uint64_t off, const char *rel,
           uint64_t *end, ph_error_t *err)
{
    size_t i = 0;

    while (i < len) {
        size_t from;

        for (; i < len; i += HOLE_CHUNK - (off + i) % HOLE_CHUNK) {
            size_t n = HOLE_CHUNK - (off + i) % HOLE_CHUNK;

            if (!all_zero(buf + i, n < len - i ? n : len - i))
                break;
        }
        if (i >= len)
            break;
        from = i;
        for (; i < len; i += HOLE_CHUNK - (off + i) % HOLE_CHUNK) {
            size_t n = HOLE_CHUNK - (off + i) % HOLE_CHUNK;

            if (all_zero(buf + i, n < len - i ? n : len - i))
                break;
        }
        if (i > len)
            i = len;
        x->unchecked_bytes += i - from;
        if (x->unchecked_bytes >= FREE_CHECK_BYTES && free_check(x, fd, FREE_CHECK_BYTES, rel, err) < 0)
            return -1;
        for (size_t done = from; done < i;) {
            ssize_t n = pwrite(fd, buf + done, i - done, (off_t)(off + done));

            if (n <= 0)
                return ph_fail(err, n < 0 ? errno : EIO, "write `%s`", rel);
            done += (size_t)n;
        }
        if (off + i > *end)
            *end = off + i;
    }
    return 0;
}

static int
write_file(ph_tar_extract *x, struct archive *a, struct archive_entry *e, const char *name, const char *rel,
           ph_error_t *err)
{
    mode_t mode = (archive_entry_perm(e) & 0111) ? 0755 : 0644;
    uint64_t size = 0, end = 0;
    struct timespec ts[2];
    const char *leaf;
    int dir, fd, rc = -1;

    dir = enter_parent(x, name, rel, &leaf, err);
    if (dir < 0)
        return dir == -2 ? 0 : -1;
    fd = openat(dir, leaf, FILE_FLAGS, mode);
    if (fd < 0 && errno == EEXIST) {
        if (clear_leaf(dir, leaf) < 0)
            return refuse(x, name, rel, "a directory is in the way");
        fd = openat(dir, leaf, FILE_FLAGS, mode);
    }
    if (fd < 0)
        return ph_fail(err, errno, "create `%s`", rel);
    for (;;) {
        const void *buf;
        size_t len;
        la_int64_t off;
        int r = archive_read_data_block(a, &buf, &len, &off);

        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            ph_fail(err, 0, "read `%s` from the archive: %s", name, archive_error_string(a));
            goto out;
        }
        /* Offsets, not a running position: sparse members leave holes. */
        if (len > 0 && write_data(x, fd, buf, len, (uint64_t)off, rel, &end, err) < 0)
            goto out;
        if (len > 0 && (uint64_t)off + len > size)
            size = (uint64_t)off + len;
        x->stats.bytes += len;
    }
    if (archive_entry_size_is_set(e))
        size = (uint64_t)archive_entry_size(e);
    /* Trailing zeros, or a sparse member's final hole. */
    if (end != size && ftruncate(fd, (off_t)size) < 0) {
        ph_fail(err, errno, "truncate `%s`", rel);
        goto out;
    }
    if (!x->umask_ok)
        fchmod(fd, mode); /* the umask must not make it unreadable */
    if (entry_mtime(e, ts))
        futimens(fd, ts);
    if (close(fd) < 0) {
        fd = -1;
        ph_fail(err, errno, "close `%s`", rel);
        goto out;
    }
    fd = -1;
    x->stats.files++;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlinkat(dir, leaf, 0); /* no half file that looks complete */
    return rc;
}

static int
write_dir(ph_tar_extract *x, struct archive_entry *e, const char *name, const char *rel, ph_error_t *err)
{
    dir_level *top;
    int fd = dirs_enter(x, rel, strlen(rel));

    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return refuse(x, name, rel, "it or a parent is a symlink or not a directory");
        return ph_fail(err, errno, "create directory `%s`", rel);
    }
    if (!x->top_created || !x->umask_ok)
        fchmod(fd, 0755); /* it may have been there with other bits */
    x->stats.dirs++;
    /* Its mtime is set when the walk leaves it: writing its contents
     * would change it. */
    top = &x->lv[x->depth];
    top->has_mtime = archive_entry_mtime_is_set(e);
    top->mtime.tv_sec = archive_entry_mtime(e);
    top->mtime.tv_nsec = archive_entry_mtime_nsec(e);
    return 0;
}

static int
write_symlink(ph_tar_extract *x, struct archive_entry *e, const char *name, const char *rel, ph_error_t *err)
{
    const char *target = archive_entry_symlink(e), *leaf;
    struct timespec ts[2];
    int dir;

    if (target == NULL || !symlink_target_ok(rel, target))
        return refuse(x, name, rel, "symbolic link that may lead outside the destination");
    dir = enter_parent(x, name, rel, &leaf, err);
    if (dir < 0)
        return dir == -2 ? 0 : -1;
    if (clear_leaf(dir, leaf) < 0)
        return refuse(x, name, rel, "a directory is in the way");
    if (symlinkat(target, dir, leaf) < 0)
        return ph_fail(err, errno, "symlink `%s`", rel);
    if (entry_mtime(e, ts))
        utimensat(dir, leaf, ts, AT_SYMLINK_NOFOLLOW);
    x->stats.links++;
    return 0;
}

static int
write_hardlink(ph_tar_extract *x, const char *name, const char *rel, const char *link, ph_error_t *err)
{
    char target[PATH_MAX], *tslash;
    const char *tleaf, *leaf;
    int tdir = -1, dir, rc = 0;
    struct stat st, have;

    if (ph_tar_name_normalise(link, x->strip, target, sizeof target) != PH_TAR_NAME_OK)
        return refuse(x, name, rel, "hard link to a name outside the destination");
    if (refused_has(x, target))
        return refuse(x, name, rel, "hard link to a refused entry");
    tslash = strrchr(target, '/');
    if (tslash) {
        *tslash = '\0';
        tdir = open_beneath(x, target);
        *tslash = '/';
    }
    tleaf = tslash ? tslash + 1 : target;
    if ((tslash && tdir < 0) || fstatat(tslash ? tdir : x->dest_fd, tleaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(st.st_mode)) {
        rc = refuse(x, name, rel, "hard link to something not a regular file extracted here");
        goto out;
    }
    dir = enter_parent(x, name, rel, &leaf, err);
    if (dir < 0) {
        rc = dir == -2 ? 0 : -1;
        goto out;
    }
    if (fstatat(dir, leaf, &have, AT_SYMLINK_NOFOLLOW) == 0) {
        if (have.st_dev == st.st_dev && have.st_ino == st.st_ino)
            goto linked; /* a link to itself, or made already */
        if (S_ISDIR(have.st_mode)) {
            rc = refuse(x, name, rel, "a directory is in the way");
            goto out;
        }
        unlinkat(dir, leaf, 0);
    }
    if (linkat(tslash ? tdir : x->dest_fd, tleaf, dir, leaf, 0) < 0) {
        if (errno == EMLINK)
            rc = refuse(x, name, rel, "too many links to its target");
        else
            rc = ph_fail(err, errno, "hard link `%s` to `%s`", rel, target);
        goto out;
    }
linked:
    x->stats.links++;
out:
    if (tdir >= 0)
        close(tdir);
    return rc;
}

static int
extract_entry(ph_tar_extract *x, struct archive *a, struct archive_entry *e, ph_error_t *err)
{
    const char *name = archive_entry_pathname(e);
    const char *link = archive_entry_hardlink(e);
    uint64_t size = archive_entry_size_is_set(e) && archive_entry_size(e) > 0 ? (uint64_t)archive_entry_size(e) : 0;
    char rel[PATH_MAX];

    /* Limits first: every entry counts, refused or not. */
    if (++x->stats.entries > x->lim.max_entries)
        return limit_fail(x, PH_TAR_LIMIT_ENTRIES, err, "entry `%s` is one too many",
                          name ? name : "(unnamed)");
    x->stats.size = size > UINT64_MAX - x->stats.size ? UINT64_MAX : x->stats.size + size;
    if (x->stats.size > x->lim.max_bytes) {
        char sz[32];

        return limit_fail(x, PH_TAR_LIMIT_BYTES, err, "`%s` (%s) brings the files' sizes, holes included, to %" PRIu64
                          " bytes", name ? name : "(unnamed)", ph_tar_size_text(size, sz), x->stats.size);
    }
    if (++x->unchecked_entries >= FREE_CHECK_ENTRIES && free_check(x, x->dest_fd, 0, name ? name : "", err) < 0)
        return -1;
    if (name == NULL)
        return refuse(x, "(unnamed)", NULL, "no name");
    switch (ph_tar_name_normalise(name, x->strip, rel, sizeof rel)) {
    case PH_TAR_NAME_EMPTY:
        return 0; /* the stripped top directory itself */
    case PH_TAR_NAME_UNSAFE:
        return refuse(x, name, NULL, "absolute path or `..` component");
    case PH_TAR_NAME_LONG:
        return refuse(x, name, NULL, "name too long");
    }
    if (x->select_cb != NULL &&
        !x->select_cb(x->select_ud, rel, link ? S_IFREG : (unsigned)archive_entry_filetype(e), size)) {
        x->stats.skipped++;
        return 0;
    }
    if (link != NULL)
        return write_hardlink(x, name, rel, link, err);
    switch (archive_entry_filetype(e)) {
    case AE_IFREG:
        return write_file(x, a, e, name, rel, err);
    case AE_IFDIR:
        return write_dir(x, e, name, rel, err);
    case AE_IFLNK:
        return write_symlink(x, e, name, rel, err);
    case AE_IFCHR:
    case AE_IFBLK:
        return refuse(x, name, rel, "device node");
    case AE_IFIFO:
        return refuse(x, name, rel, "FIFO");
    case AE_IFSOCK:
        return refuse(x, name, rel, "socket");
    default:
        return refuse(x, name, rel, "unknown file type");
    }
}

/* ---- the reader thread -------------------------------------------------- */

static int
extract_all(ph_tar_extract *x, struct archive *a, ph_error_t *err)
{
    struct archive_entry *e;

    for (;;) {
        la_int64_t before = archive_filter_bytes(a, 0);
        int r = archive_read_next_header(a, &e);

        if (r == ARCHIVE_EOF) {
            /* libarchive's tar reader takes a stream that stops between
             * members as a clean end; only the end-of-archive marker (zero
             * blocks, consumed here) says the Engine sent everything. */
            if (archive_filter_bytes(a, 0) == before)
                return ph_fail(err, 0, "the archive ended without its end-of-archive marker "
                                       "(truncated stream)");
            return 0;
        }
        /* ARCHIVE_RETRY (a damaged header) is an error too: the Engine
         * never sends one, and skipping ahead would guess at the rest. */
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            return ph_fail(err, 0, "read the archive: %s", archive_error_string(a));
        if (r == ARCHIVE_WARN)
            ph_debug("archive: %s", archive_error_string(a));
        if (extract_entry(x, a, e, err) < 0)
            return -1;
        /* Consume the rest of the member now, so `before` above is the
         * position just after it. */
        if (archive_read_data_skip(a) != ARCHIVE_OK)
            return ph_fail(err, 0, "read the archive: %s", archive_error_string(a));
    }
}

/* Is the stream (RECEIVED bytes) within max_bytes plus headers?  A
 * member's data is counted at its header; this bounds the rest (pax
 * records, long names, padding after the marker). */
static int
stream_ok(ph_tar_extract *x, uint64_t received)
{
    uint64_t allowance = (x->stats.entries + 1) * (uint64_t)HEADER_ALLOWANCE + READ_BLOCK;

    if (x->lim.max_bytes == PH_TAR_NO_LIMIT || x->lim.max_bytes > UINT64_MAX - allowance ||
        received <= x->lim.max_bytes + allowance)
        return 1;
    limit_fail(x, PH_TAR_LIMIT_BYTES, &x->err, "the archive's stream passed %" PRIu64 " bytes", received);
    return 0;
}

static la_ssize_t
sock_read_cb(struct archive *a, void *ud, const void **buf)
{
    ph_tar_extract *x = ud;

    for (;;) {
        ssize_t n = read(x->sock[0], x->rbuf, sizeof x->rbuf);

        if (n >= 0) {
            x->received += (uint64_t)n;
            if (!stream_ok(x, x->received)) {
                archive_set_error(a, EFBIG, "over the limit `max_bytes`");
                return -1;
            }
            *buf = x->rbuf;
            return n;
        }
        if (errno != EINTR) {
            archive_set_error(a, errno, "read the stream: %s", strerror(errno));
            return -1;
        }
    }
}

static void *
reader_main(void *ud)
{
    ph_tar_extract *x = ud;
    /* Names are bytes, and pax names UTF-8: in this thread's own locale
     * libarchive takes them as they are, instead of converting each
     * character to the process's (C) locale and warning. */
    locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    struct archive *a;
    ph_stage *st;
    int ok = 0;

    if (utf8 != (locale_t)0)
        uselocale(utf8);
    ph_stage_adopt(x->parent); /* alongside the feeder: a concurrent stage */
    st = ph_stage_begin("collect", "extract: write the files", 0);
    a = archive_read_new();

    if (a == NULL) {
        ph_fail(&x->err, ENOMEM, "start the archive reader");
    } else {
        archive_read_support_format_tar(a); /* ustar, pax and GNU */
        /* Opening reads the first block to recognise the format. */
        if (archive_read_open(a, x, NULL, sock_read_cb, NULL) != ARCHIVE_OK) {
            if (x->received == 0)
                ph_fail(&x->err, 0, "the archive ended without its end-of-archive marker (empty stream)");
            else
                ph_fail(&x->err, 0, "read the archive: %s", archive_error_string(a));
        } else
            ok = extract_all(x, a, &x->err) == 0;
        archive_read_free(a);
    }
    dirs_pop(x, 0); /* the last directories' mtimes */
    if (ok) {
        /* Zero padding after the marker: read it, so the feeder never
         * sees EPIPE for a good archive. */
        ssize_t n;

        while ((n = read(x->sock[0], x->rbuf, sizeof x->rbuf)) != 0)
            if (n > 0) {
                x->trailing += (uint64_t)n;
                if (!stream_ok(x, x->received + x->trailing))
                    break;
            } else if (errno != EINTR) {
                break;
            }
    }
    /* Unblock a feeder still writing: it gets EPIPE. */
    shutdown(x->sock[0], SHUT_RDWR);
    ph_stage_bytes(st, x->received, x->stats.bytes);
    if (x->err != NULL)
        ph_stage_fail(st, x->err->msg);
    ph_stage_end(st);
    if (utf8 != (locale_t)0) {
        uselocale(LC_GLOBAL_LOCALE);
        freelocale(utf8);
    }
    return NULL;
}

/* ---- the caller's side -------------------------------------------------- */

/* Does the process's umask leave 0755 alone?  (Read, not set: umask(2)
 * would change it for every thread while it is being read.) */
static int
umask_harmless(void)
{
    char line[128];
    unsigned mask = 0777;
    FILE *f = fopen("/proc/self/status", "re");

    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &mask) == 1)
            break;
    if (f)
        fclose(f);
    return (mask & 0755) == 0;
}

/* LIMITS with its zero fields replaced by the defaults. */
static void
limits_resolve(ph_tar_extract *x, const ph_tar_limits *limits)
{
    if (limits)
        x->lim = *limits;
    if (x->lim.max_bytes == 0)
        x->lim.max_bytes = PH_TAR_DEFAULT_MAX_BYTES;
    if (x->lim.max_entries == 0)
        x->lim.max_entries = PH_TAR_DEFAULT_MAX_ENTRIES;
    x->lim.min_free_bytes = ph_tar_min_free_of(x->lim.min_free_bytes, x->dest_fd);
}

/* Both constructors: DEST_FD is the destination, owned from here on. */
static ph_tar_extract *
extract_new_fd(int dest_fd, int strip, const ph_tar_limits *limits, ph_tar_select_cb select_cb, void *ud,
               ph_error_t *err)
{
    ph_tar_extract *x = calloc(1, sizeof *x);
    sigset_t all, old;
    int r;

    if (x == NULL) {
        ph_fail(err, errno, "allocate the extractor");
        close(dest_fd);
        return NULL;
    }
    x->dest_fd = dest_fd;
    x->parent = ph_stage_current();
    x->strip = strip < 0 ? 0 : strip;
    x->select_cb = select_cb; /* before the thread that reads them starts */
    x->select_ud = ud;
    x->sock[0] = x->sock[1] = -1;
    x->lv[0].fd = -1; /* the destination is dest_fd, never closed by the stack */
    x->low = 1;
    x->use_openat2 = getenv("PH_TAR_NO_OPENAT2") == NULL; /* tests run the fallback too */
    x->umask_ok = umask_harmless();
    x->unchecked_bytes = FREE_CHECK_BYTES;                /* look before the first write */
    x->unchecked_entries = FREE_CHECK_ENTRIES - 1;
    limits_resolve(x, limits);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->sock) < 0) {
        ph_fail(err, errno, "socketpair");
        goto fail;
    }
    /* The thread inherits this mask: no signal handler ever runs on it. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&x->thread, NULL, reader_main, x);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        ph_fail(err, r, "start the extraction thread");
        goto fail;
    }
    x->started = 1;
    return x;
fail:
    ph_tar_extract_free(x);
    return NULL;
}

ph_tar_extract *
ph_tar_extract_new(const char *dest_dir, int strip, const ph_tar_limits *limits, ph_error_t *err)
{
    int fd = open(dest_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0) {
        ph_fail(err, errno, "open `%s`", dest_dir);
        return NULL;
    }
    return extract_new_fd(fd, strip, limits, NULL, NULL, err);
}

ph_tar_extract *
ph_tar_extract_new_select_at(int dirfd, int strip, const ph_tar_limits *limits, ph_tar_select_cb select_cb,
                             void *ud, ph_error_t *err)
{
    /* A description of our own (the caller's fd stays theirs), of the
     * very directory DIRFD is, whatever its name now points at. */
    int fd = dirfd < 0 ? -1 : openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0) {
        ph_fail(err, dirfd < 0 ? EBADF : errno, "open the destination directory (fd %d)", dirfd);
        return NULL;
    }
    return extract_new_fd(fd, strip, limits, select_cb, ud, err);
}

ph_tar_extract *
ph_tar_extract_new_at(int dirfd, int strip, const ph_tar_limits *limits, ph_error_t *err)
{
    return ph_tar_extract_new_select_at(dirfd, strip, limits, NULL, NULL, err);
}

/* Close our end (the reader sees end of file) and wait for the reader. */
static void
join(ph_tar_extract *x)
{
    if (x->sock[1] >= 0) {
        close(x->sock[1]);
        x->sock[1] = -1;
    }
    if (x->started) {
        pthread_join(x->thread, NULL);
        x->started = 0;
    }
}

/* Hand the reader's error (or a note that it was handed already) over. */
static int
take_error(ph_tar_extract *x, ph_error_t *err)
{
    if (x->err != NULL) {
        /* Like ph_error_make: an error already in *err is kept. */
        if (err != NULL && *err == NULL)
            *err = x->err;
        else
            ph_error_free(&x->err);
        x->err = NULL;
        x->failed = 1;
        return -1;
    }
    if (x->failed)
        return ph_fail(err, 0, "the archive extraction failed earlier");
    return 0;
}

int
ph_tar_extract_feed(ph_tar_extract *x, const void *data, size_t len, ph_error_t *err)
{
    const char *p = data;

    if (x->failed || x->sock[1] < 0)
        return take_error(x, err) < 0 ? -1 : ph_fail(err, 0, "feed the archive after its end");
    while (len > 0) {
        ssize_t n = send(x->sock[1], p, len, MSG_NOSIGNAL);

        if (n < 0) {
            int e = errno;

            if (e == EINTR)
                continue;
            join(x);
            if (take_error(x, err) < 0)
                return -1;
            x->failed = 1;
            return ph_fail(err, e, "feed the archive extractor");
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int
ph_tar_extract_finish(ph_tar_extract *x, ph_tar_stats *stats, ph_error_t *err)
{
    join(x);
    if (stats)
        *stats = x->stats;
    if (take_error(x, err) < 0)
        return -1;
    if (x->trailing > 0)
        ph_debug("%llu bytes after the end of the archive ignored", (unsigned long long)x->trailing);
    return 0;
}

void
ph_tar_extract_free(ph_tar_extract *x)
{
    if (x == NULL)
        return;
    join(x);
    dirs_pop(x, 0); /* nothing open when the thread never ran */
    if (x->sock[0] >= 0)
        close(x->sock[0]);
    if (x->dest_fd >= 0)
        close(x->dest_fd);
    free(x->refused);
    ph_error_free(&x->err);
    free(x);
}

int
ph_tar_extract_buffer(const void *data, size_t len, const char *dest_dir, int strip, const ph_tar_limits *limits,
                      ph_tar_stats *stats, ph_error_t *err)
{
    ph_tar_extract *x = ph_tar_extract_new(dest_dir, strip, limits, err);
    int rc;

    if (x == NULL)
        return -1;
    rc = ph_tar_extract_feed(x, data, len, err);
    if (rc == 0)
        rc = ph_tar_extract_finish(x, stats, err);
    else if (stats)
        *stats = x->stats;
    ph_tar_extract_free(x);
    return rc;
}
