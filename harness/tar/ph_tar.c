/* ph_tar.c - tar to and from the Engine with libarchive (see ph_tar.h).
 *
 * Extraction design.  The Engine's archive endpoint pushes bytes at us
 * (curl's write callback) while libarchive pulls them (a read callback).
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
 * Safety.  Every entry is written through openat() relative to the
 * destination, one component at a time with O_NOFOLLOW, so neither a `..`
 * nor a symlink planted earlier (by the archive or anyone else) can lead a
 * write outside it; an existing leaf is unlinked and recreated, never
 * written through.  Names must be relative without `..`.  Symlink targets
 * must be relative and may use `..` only as leading components, no more of
 * them than the link's depth: the link's own directories are real
 * directories (we created them without following links, and we never
 * replace a directory), so the leading `..` stay inside, and the rest
 * only descends, through names that are themselves directories or links
 * checked by the same rule.  A lexical check that allowed `x/..` would
 * be fooled by `x` being a link (`sub/x -> ..`, `sub/y -> x/..`).  Hard
 * links may only name a regular file already extracted inside the
 * destination and not a name refused earlier; they are never links to
 * symlinks, which would move a symlink to another depth.
 */
#include "ph_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_log.h"

#define READ_BLOCK (64 * 1024)
#define REFUSED_BUCKETS 256
#define REFUSED_MAX 4096    /* beyond this, every hard link is refused */
#define DIR_TIMES_MAX 65536 /* beyond this, directory mtimes are not restored */

typedef struct refused_name {
    struct refused_name *next;
    char name[];
} refused_name;

typedef struct dir_time {
    char *rel;
    struct timespec mtime;
} dir_time;

struct ph_tar_extract {
    int dest_fd;
    int strip;
    int sock[2];     /* [0] the reader's end, [1] ours */
    pthread_t thread;
    int started;
    int failed;      /* an error was handed to the caller */
    ph_tar_stats stats;
    ph_error_t err;  /* the reader's error, read after join */

    /* Reader-thread state. */
    char rbuf[READ_BLOCK];
    refused_name *refused[REFUSED_BUCKETS];
    size_t n_refused;
    dir_time *dirs;  /* directory mtimes, set once their contents are written */
    size_t n_dirs, cap_dirs;
    uint64_t received; /* bytes handed to libarchive */
    uint64_t trailing; /* bytes after the end-of-archive marker */
};

/* ---- names -------------------------------------------------------------- */

enum { NAME_OK, NAME_EMPTY, NAME_UNSAFE, NAME_LONG };

/* Normalise archive name NAME into OUT: drop empty and `.` components,
 * then STRIP leading ones.  NAME_EMPTY when nothing is left, NAME_UNSAFE
 * for an absolute name or any `..` component (even one that would be
 * stripped: such an archive is not what the Engine sends). */
static int
name_normalise(const char *name, int strip, char *out, size_t outsz)
{
    size_t len = 0;
    int skipped = 0;

    if (name[0] == '/')
        return NAME_UNSAFE;
    out[0] = '\0';
    for (const char *c = name; *c;) {
        size_t n = strcspn(c, "/");

        if (n == 2 && c[0] == '.' && c[1] == '.')
            return NAME_UNSAFE;
        if (n > 0 && !(n == 1 && c[0] == '.')) {
            if (skipped < strip) {
                skipped++;
            } else {
                if (len + (len > 0) + n >= outsz)
                    return NAME_LONG;
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
    return len > 0 ? NAME_OK : NAME_EMPTY;
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
    for (const char *c = target; *c;) {
        size_t n = strcspn(c, "/");

        if (n == 2 && c[0] == '.' && c[1] == '.') {
            if (descended || --depth < 0)
                return 0;
        } else if (n > 0 && !(n == 1 && c[0] == '.')) {
            descended = 1;
        }
        c += n;
        while (*c == '/')
            c++;
    }
    return 1;
}

/* Open the directory holding REL (normalised, writable copy) under DEST
 * without following symlinks, creating missing directories when CREATE;
 * *leaf points at the last component.  -1 and errno on failure (ELOOP or
 * ENOTDIR: a component is a symlink or not a directory). */
static int
open_parent(int dest, char *rel, int create, char **leaf)
{
    int fd = fcntl(dest, F_DUPFD_CLOEXEC, 0);
    char *p = rel, *slash;

    while (fd >= 0 && (slash = strchr(p, '/')) != NULL) {
        int next, e;

        *slash = '\0';
        if (create && mkdirat(fd, p, 0755) == 0)
            fchmodat(fd, p, 0755, 0); /* whatever the umask: the user reads it */
        next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        e = errno;
        *slash = '/';
        close(fd);
        fd = next;
        errno = e;
        p = slash + 1;
    }
    *leaf = p;
    return fd;
}

/* ---- the refused-name set (for hard links) ------------------------------ */

static unsigned
name_hash(const char *s)
{
    unsigned h = 2166136261u; /* FNV-1a */

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h % REFUSED_BUCKETS;
}

static void
refused_add(ph_tar_extract *x, const char *rel)
{
    unsigned h = name_hash(rel);
    size_t n = strlen(rel);
    refused_name *r;

    if (x->n_refused >= REFUSED_MAX) {
        x->n_refused = REFUSED_MAX + 1; /* full: refuse every hard link */
        return;
    }
    r = malloc(sizeof *r + n + 1);
    if (r == NULL) {
        x->n_refused = REFUSED_MAX + 1;
        return;
    }
    memcpy(r->name, rel, n + 1);
    r->next = x->refused[h];
    x->refused[h] = r;
    x->n_refused++;
}

static int
refused_has(const ph_tar_extract *x, const char *rel)
{
    if (x->n_refused > REFUSED_MAX)
        return 1;
    for (const refused_name *r = x->refused[name_hash(rel)]; r; r = r->next)
        if (strcmp(r->name, rel) == 0)
            return 1;
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

/* ---- writing entries ---------------------------------------------------- */

static void
set_times(int dirfd, const char *leaf, struct archive_entry *e, int flags)
{
    struct timespec ts[2];

    if (!archive_entry_mtime_is_set(e))
        return;
    ts[0].tv_sec = ts[1].tv_sec = archive_entry_mtime(e);
    ts[0].tv_nsec = ts[1].tv_nsec = archive_entry_mtime_nsec(e);
    utimensat(dirfd, leaf, ts, flags); /* cosmetic: a failure is no reason to stop */
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
write_file(ph_tar_extract *x, struct archive *a, struct archive_entry *e, const char *name, char *rel,
           ph_error_t *err)
{
    mode_t mode = (archive_entry_perm(e) & 0111) ? 0755 : 0644;
    char *leaf;
    int dir, fd, rc = -1;

    dir = open_parent(x->dest_fd, rel, 1, &leaf);
    if (dir < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return refuse(x, name, rel, "a parent is a symlink or not a directory");
        return ph_fail(err, errno, "create the directories of `%s`", rel);
    }
    if (clear_leaf(dir, leaf) < 0) {
        close(dir);
        return refuse(x, name, rel, "a directory is in the way");
    }
    fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        ph_fail(err, errno, "create `%s`", rel);
        close(dir);
        return -1;
    }
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
        if (len > 0 && pwrite(fd, buf, len, off) != (ssize_t)len) {
            ph_fail(err, errno ? errno : EIO, "write `%s`", rel);
            goto out;
        }
        x->stats.bytes += len;
    }
    /* A sparse member may end in a hole. */
    if (archive_entry_size_is_set(e) && ftruncate(fd, archive_entry_size(e)) < 0) {
        ph_fail(err, errno, "truncate `%s`", rel);
        goto out;
    }
    fchmod(fd, mode); /* the umask must not make it unreadable */
    if (close(fd) < 0) {
        fd = -1;
        ph_fail(err, errno, "close `%s`", rel);
        goto out;
    }
    fd = -1;
    set_times(dir, leaf, e, 0);
    x->stats.files++;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlinkat(dir, leaf, 0); /* no half file that looks complete */
    close(dir);
    return rc;
}

static int
write_dir(ph_tar_extract *x, struct archive_entry *e, const char *name, const char *rel, ph_error_t *err)
{
    char path[PATH_MAX + 2], *leaf;
    int fd;

    snprintf(path, sizeof path, "%s/", rel);
    fd = open_parent(x->dest_fd, path, 1, &leaf);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return refuse(x, name, rel, "it or a parent is a symlink or not a directory");
        return ph_fail(err, errno, "create directory `%s`", rel);
    }
    fchmod(fd, 0755);
    close(fd);
    x->stats.dirs++;
    /* Its mtime is set at the end: writing its contents would change it. */
    if (archive_entry_mtime_is_set(e) && x->n_dirs < DIR_TIMES_MAX) {
        if (x->n_dirs == x->cap_dirs) {
            size_t cap = x->cap_dirs ? x->cap_dirs * 2 : 64;
            dir_time *d = realloc(x->dirs, cap * sizeof *d);

            if (d == NULL)
                return ph_fail(err, ENOMEM, "remember directory `%s`", rel);
            x->dirs = d;
            x->cap_dirs = cap;
        }
        x->dirs[x->n_dirs].rel = strdup(rel);
        if (x->dirs[x->n_dirs].rel == NULL)
            return ph_fail(err, ENOMEM, "remember directory `%s`", rel);
        x->dirs[x->n_dirs].mtime.tv_sec = archive_entry_mtime(e);
        x->dirs[x->n_dirs].mtime.tv_nsec = archive_entry_mtime_nsec(e);
        x->n_dirs++;
    }
    return 0;
}

static int
write_symlink(ph_tar_extract *x, struct archive_entry *e, const char *name, char *rel, ph_error_t *err)
{
    const char *target = archive_entry_symlink(e);
    char *leaf;
    int dir;

    if (target == NULL || !symlink_target_ok(rel, target))
        return refuse(x, name, rel, "symbolic link that may lead outside the destination");
    dir = open_parent(x->dest_fd, rel, 1, &leaf);
    if (dir < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return refuse(x, name, rel, "a parent is a symlink or not a directory");
        return ph_fail(err, errno, "create the directories of `%s`", rel);
    }
    if (clear_leaf(dir, leaf) < 0) {
        close(dir);
        return refuse(x, name, rel, "a directory is in the way");
    }
    if (symlinkat(target, dir, leaf) < 0) {
        ph_fail(err, errno, "symlink `%s`", rel);
        close(dir);
        return -1;
    }
    set_times(dir, leaf, e, AT_SYMLINK_NOFOLLOW);
    close(dir);
    x->stats.links++;
    return 0;
}

static int
write_hardlink(ph_tar_extract *x, const char *name, char *rel, const char *link, ph_error_t *err)
{
    char target[PATH_MAX], *tleaf, *leaf;
    int tdir = -1, dir = -1, rc = 0;
    struct stat st;

    if (name_normalise(link, x->strip, target, sizeof target) != NAME_OK)
        return refuse(x, name, rel, "hard link to a name outside the destination");
    if (refused_has(x, target))
        return refuse(x, name, rel, "hard link to a refused entry");
    tdir = open_parent(x->dest_fd, target, 0, &tleaf);
    if (tdir < 0 || fstatat(tdir, tleaf, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
        rc = refuse(x, name, rel, "hard link to something not a regular file extracted here");
        goto out;
    }
    dir = open_parent(x->dest_fd, rel, 1, &leaf);
    if (dir < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            rc = refuse(x, name, rel, "a parent is a symlink or not a directory");
        else
            rc = ph_fail(err, errno, "create the directories of `%s`", rel);
        goto out;
    }
    if (clear_leaf(dir, leaf) < 0) {
        rc = refuse(x, name, rel, "a directory is in the way");
        goto out;
    }
    if (linkat(tdir, tleaf, dir, leaf, 0) < 0) {
        rc = ph_fail(err, errno, "hard link `%s` to `%s`", rel, target);
        goto out;
    }
    x->stats.links++;
out:
    if (tdir >= 0)
        close(tdir);
    if (dir >= 0)
        close(dir);
    return rc;
}

static int
extract_entry(ph_tar_extract *x, struct archive *a, struct archive_entry *e, ph_error_t *err)
{
    const char *name = archive_entry_pathname(e);
    const char *link = archive_entry_hardlink(e);
    char rel[PATH_MAX];

    if (name == NULL)
        return refuse(x, "(unnamed)", NULL, "no name");
    switch (name_normalise(name, x->strip, rel, sizeof rel)) {
    case NAME_EMPTY:
        return 0; /* the stripped top directory itself */
    case NAME_UNSAFE:
        return refuse(x, name, NULL, "absolute path or `..` component");
    case NAME_LONG:
        return refuse(x, name, NULL, "name too long");
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

/* Directory mtimes, once nothing more is written into them. */
static void
restore_dir_times(ph_tar_extract *x)
{
    for (size_t i = x->n_dirs; i-- > 0;) {
        char path[PATH_MAX + 2], *leaf;
        struct timespec ts[2] = { x->dirs[i].mtime, x->dirs[i].mtime };
        int fd;

        snprintf(path, sizeof path, "%s/", x->dirs[i].rel);
        fd = open_parent(x->dest_fd, path, 0, &leaf);
        if (fd >= 0) {
            futimens(fd, ts);
            close(fd);
        }
        free(x->dirs[i].rel);
    }
    free(x->dirs);
    x->dirs = NULL;
    x->n_dirs = x->cap_dirs = 0;
}

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

static la_ssize_t
sock_read_cb(struct archive *a, void *ud, const void **buf)
{
    ph_tar_extract *x = ud;

    for (;;) {
        ssize_t n = read(x->sock[0], x->rbuf, sizeof x->rbuf);

        if (n >= 0) {
            x->received += (uint64_t)n;
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
    struct archive *a = archive_read_new();
    int ok = 0;

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
    restore_dir_times(x);
    if (ok) {
        /* Zero padding after the marker: read it, so the feeder never
         * sees EPIPE for a good archive. */
        ssize_t n;

        while ((n = read(x->sock[0], x->rbuf, sizeof x->rbuf)) != 0)
            if (n > 0)
                x->trailing += (uint64_t)n;
            else if (errno != EINTR)
                break;
    }
    /* Unblock a feeder still writing: it gets EPIPE. */
    shutdown(x->sock[0], SHUT_RDWR);
    return NULL;
}

ph_tar_extract *
ph_tar_extract_new(const char *dest_dir, int strip, ph_error_t *err)
{
    ph_tar_extract *x = calloc(1, sizeof *x);
    sigset_t all, old;
    int r;

    if (x == NULL) {
        ph_fail(err, errno, "allocate the extractor");
        return NULL;
    }
    x->strip = strip < 0 ? 0 : strip;
    x->sock[0] = x->sock[1] = -1;
    x->dest_fd = open(dest_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (x->dest_fd < 0) {
        ph_fail(err, errno, "open `%s`", dest_dir);
        goto fail;
    }
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
    if (x->sock[0] >= 0)
        close(x->sock[0]);
    if (x->dest_fd >= 0)
        close(x->dest_fd);
    for (size_t i = 0; i < REFUSED_BUCKETS; i++)
        for (refused_name *r = x->refused[i], *next; r; r = next) {
            next = r->next;
            free(r);
        }
    for (size_t i = 0; i < x->n_dirs; i++)
        free(x->dirs[i].rel);
    free(x->dirs);
    ph_error_free(&x->err);
    free(x);
}

int
ph_tar_extract_buffer(const void *data, size_t len, const char *dest_dir, int strip, ph_tar_stats *stats,
                      ph_error_t *err)
{
    ph_tar_extract *x = ph_tar_extract_new(dest_dir, strip, err);
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

/* ---- building contexts -------------------------------------------------- */

typedef struct membuf {
    char *data;
    size_t len, cap, max;
    int overflow;
} membuf;

static la_ssize_t
mem_write_cb(struct archive *a, void *ud, const void *buf, size_t n)
{
    membuf *m = ud;

    if (n > m->max - m->len) {
        m->overflow = 1;
        archive_set_error(a, EFBIG, "more than %zu bytes", m->max);
        return -1;
    }
    if (m->len + n > m->cap) {
        size_t cap = m->cap ? m->cap : 65536;
        char *d;

        while (cap < m->len + n)
            cap *= 2;
        if (cap > m->max)
            cap = m->max;
        d = realloc(m->data, cap);
        if (d == NULL) {
            archive_set_error(a, ENOMEM, "out of memory");
            return -1;
        }
        m->data = d;
        m->cap = cap;
    }
    memcpy(m->data + m->len, buf, n);
    m->len += n;
    return (la_ssize_t)n;
}

/* .dockerignore rules: Docker's, as its CLI applies them (moby's
 * patternmatcher): a path is excluded when the last pattern matching it,
 * or one of its parent directories, is not a `!` exception. */
typedef struct ignore_rules {
    char **pat;
    int *negate;
    size_t n;
    int any_negate;
} ignore_rules;

static int
ignore_add(ignore_rules *r, const char *pat, int neg)
{
    char **np = realloc(r->pat, (r->n + 1) * sizeof *np);
    int *nn;

    if (np == NULL)
        return -1;
    r->pat = np;
    nn = realloc(r->negate, (r->n + 1) * sizeof *nn);
    if (nn == NULL)
        return -1;
    r->negate = nn;
    r->pat[r->n] = strdup(pat);
    if (r->pat[r->n] == NULL)
        return -1;
    r->negate[r->n++] = neg;
    r->any_negate |= neg;
    return 0;
}

static int
ignore_load(const char *dir, ignore_rules *r, ph_error_t *err)
{
    char path[PATH_MAX], line[4096];
    FILE *f;
    int rc = 0;

    snprintf(path, sizeof path, "%s/.dockerignore", dir);
    f = fopen(path, "re");
    if (f == NULL)
        return errno == ENOENT ? 0 : ph_fail(err, errno, "open `%s`", path);
    while (fgets(line, sizeof line, f)) {
        char *s = line, *end, clean[sizeof line];
        size_t n = 0;
        int neg = 0;

        s[strcspn(s, "\r\n")] = '\0';
        if (s[0] == '#')
            continue;
        while (*s == ' ' || *s == '\t')
            s++;
        end = s + strlen(s);
        while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (*s == '!') {
            neg = 1;
            s++;
            while (*s == ' ' || *s == '\t')
                s++;
        }
        /* Clean like Go's filepath.Clean for what matters here: no leading
         * `/` or `./`, no empty or `.` components, no trailing `/`. */
        for (const char *c = s; *c;) {
            size_t k = strcspn(c, "/");

            if (k > 0 && !(k == 1 && c[0] == '.')) {
                if (n > 0)
                    clean[n++] = '/';
                memcpy(clean + n, c, k);
                n += k;
            }
            c += k;
            while (*c == '/')
                c++;
        }
        clean[n] = '\0';
        if (n == 0)
            continue;
        if (ignore_add(r, clean, neg) < 0) {
            rc = ph_fail(err, ENOMEM, "load `%s`", path);
            break;
        }
    }
    fclose(f);
    return rc;
}

static void
ignore_free(ignore_rules *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->pat[i]);
    free(r->pat);
    free(r->negate);
}

/* Match slash-separated path P against pattern G: `*`, `?` and classes
 * within one component (fnmatch on the component), `**` across any number
 * of components, zero included: the pattern `**` + `/x.o` matches `x.o`. */
static int
glob_match(const char *g, const char *p)
{
    size_t gn = strcspn(g, "/"), pn = strcspn(p, "/");
    char gseg[NAME_MAX + 1], pseg[NAME_MAX + 1];

    if (*g == '\0')
        return *p == '\0';
    if (gn == 2 && g[0] == '*' && g[1] == '*') {
        const char *rest = g[2] == '/' ? g + 3 : g + 2;

        for (const char *q = p;; q += strcspn(q, "/") + 1) {
            if (glob_match(rest, q))
                return 1;
            if (*q == '\0' || q[strcspn(q, "/")] == '\0')
                return *rest == '\0';
        }
    }
    if (*p == '\0' || gn > NAME_MAX || pn > NAME_MAX)
        return 0;
    memcpy(gseg, g, gn);
    gseg[gn] = '\0';
    memcpy(pseg, p, pn);
    pseg[pn] = '\0';
    if (fnmatch(gseg, pseg, 0) != 0)
        return 0;
    return glob_match(g[gn] ? g + gn + 1 : g + gn, p[pn] ? p + pn + 1 : p + pn);
}

static int
ignored(const ignore_rules *r, const char *rel)
{
    int ign = 0;

    for (size_t i = 0; i < r->n; i++) {
        int m = glob_match(r->pat[i], rel);
        char prefix[PATH_MAX];

        /* A pattern naming a parent directory covers what is below it. */
        for (const char *s = strchr(rel, '/'); s && !m; s = strchr(s + 1, '/')) {
            snprintf(prefix, sizeof prefix, "%.*s", (int)(s - rel), rel);
            m = glob_match(r->pat[i], prefix);
        }
        if (m)
            ign = !r->negate[i];
    }
    return ign;
}

/* Add one entry.  Owner root, no user or group names, the mtime to the
 * second: the bytes depend only on names, contents, modes and mtimes. */
static int
add_entry(struct archive *a, const char *name, mode_t type, mode_t perm, time_t mtime, const char *link_target,
          int fd, la_int64_t size, const void *data, ph_error_t *err)
{
    struct archive_entry *e = archive_entry_new();
    int rc = 0;

    if (e == NULL)
        return ph_fail(err, ENOMEM, "allocate an archive entry");
    archive_entry_set_pathname(e, name);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    archive_entry_set_mtime(e, mtime, 0);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm & 0777);
    if (type == AE_IFLNK)
        archive_entry_set_symlink(e, link_target);
    if (type == AE_IFREG)
        archive_entry_set_size(e, size);
    if (archive_write_header(a, e) < ARCHIVE_WARN) {
        rc = ph_fail(err, 0, "add `%s`: %s", name, archive_error_string(a));
        goto out;
    }
    if (data != NULL) {
        if (archive_write_data(a, data, (size_t)size) != (la_ssize_t)size)
            rc = ph_fail(err, 0, "add `%s`: %s", name, archive_error_string(a));
    } else if (fd >= 0) {
        char buf[65536];
        la_int64_t left = size;
        ssize_t n = 0;

        while (left > 0 && (n = read(fd, buf, sizeof buf)) > 0) {
            if (n > left)
                n = (ssize_t)left;
            if (archive_write_data(a, buf, (size_t)n) != n) {
                rc = ph_fail(err, 0, "add `%s`: %s", name, archive_error_string(a));
                goto out;
            }
            left -= n;
        }
        if (left > 0)
            rc = ph_fail(err, n < 0 ? errno : 0, "read `%s`%s", name, n < 0 ? "" : ": it shrank while being archived");
    }
out:
    archive_entry_free(e);
    return rc;
}

static int
name_cmp(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name); /* bytes, not the locale's order */
}

typedef struct tree_ctx {
    struct archive *a;
    const char *root;
    const ignore_rules *ig;
    const ph_tar_extra *extra;
    size_t n_extra;
} tree_ctx;

/* Docker's CLI always sends these two, even when .dockerignore names them. */
static int
always_sent(const char *rel)
{
    return strcmp(rel, ".dockerignore") == 0 || strcmp(rel, "Dockerfile") == 0;
}

static int
replaced_by_extra(const tree_ctx *t, const char *rel)
{
    for (size_t i = 0; i < t->n_extra; i++)
        if (strcmp(t->extra[i].name, rel) == 0)
            return 1;
    return 0;
}

static int
add_tree(const tree_ctx *t, const char *rel, ph_error_t *err)
{
    char dirpath[PATH_MAX], child[PATH_MAX], full[PATH_MAX];
    struct dirent **list = NULL;
    int n, rc = 0;

    snprintf(dirpath, sizeof dirpath, "%s%s%s", t->root, rel[0] ? "/" : "", rel);
    n = scandir(dirpath, &list, NULL, name_cmp);
    if (n < 0)
        return ph_fail(err, errno, "read directory `%s`", dirpath);
    for (int i = 0; i < n && rc == 0; i++) {
        const char *nm = list[i]->d_name;
        struct stat st;
        int skip;

        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        if ((size_t)snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", nm) >= sizeof child ||
            (size_t)snprintf(full, sizeof full, "%s/%s", t->root, child) >= sizeof full) {
            rc = ph_fail(err, ENAMETOOLONG, "add `%s/%s`", dirpath, nm);
            break;
        }
        if (lstat(full, &st) < 0) {
            rc = ph_fail(err, errno, "stat `%s`", full);
            break;
        }
        skip = ignored(t->ig, child) && !always_sent(child);
        if (S_ISDIR(st.st_mode)) {
            /* An excluded directory may still hold `!` exceptions. */
            if (!skip)
                rc = add_entry(t->a, child, AE_IFDIR, st.st_mode, st.st_mtim.tv_sec, NULL, -1, 0, NULL, err);
            if (rc == 0 && (!skip || t->ig->any_negate))
                rc = add_tree(t, child, err);
        } else if (skip || replaced_by_extra(t, child)) {
            continue;
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t l = readlink(full, target, sizeof target - 1);

            if (l < 0) {
                rc = ph_fail(err, errno, "readlink `%s`", full);
                break;
            }
            target[l] = '\0';
            rc = add_entry(t->a, child, AE_IFLNK, 0777, st.st_mtim.tv_sec, target, -1, 0, NULL, err);
        } else if (S_ISREG(st.st_mode)) {
            int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

            if (fd < 0) {
                rc = ph_fail(err, errno, "open `%s`", full);
                break;
            }
            rc = add_entry(t->a, child, AE_IFREG, st.st_mode, st.st_mtim.tv_sec, NULL, fd, st.st_size, NULL, err);
            close(fd);
        } else {
            ph_debug("build context: `%s` is not a file, directory or symlink: skipped", full);
        }
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    return rc;
}

static int
add_extra(struct archive *a, const ph_tar_extra *x, ph_error_t *err)
{
    struct stat st;
    char clean[PATH_MAX];
    int fd, rc;

    if (x->name == NULL || name_normalise(x->name, 0, clean, sizeof clean) != NAME_OK)
        return ph_bad_input(err, "build context extra `%s`: not a relative name without `..`",
                            x->name ? x->name : "(null)");
    if (x->path == NULL && x->data == NULL && x->len > 0)
        return ph_bad_input(err, "build context extra `%s`: no path and no data", x->name);
    if (x->path == NULL)
        return add_entry(a, x->name, AE_IFREG, x->mode ? x->mode : 0644, 0, NULL, -1, (la_int64_t)x->len,
                         x->data ? x->data : "", err);
    fd = open(x->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ph_fail(err, errno, "open `%s`", x->path);
    if (fstat(fd, &st) < 0) {
        rc = ph_fail(err, errno, "stat `%s`", x->path);
    } else if (!S_ISREG(st.st_mode)) {
        rc = ph_fail(err, 0, "`%s` is not a regular file", x->path);
    } else {
        rc = add_entry(a, x->name, AE_IFREG, x->mode ? x->mode : st.st_mode, st.st_mtim.tv_sec, NULL, fd,
                       st.st_size, NULL, err);
    }
    close(fd);
    return rc;
}

int
ph_tar_context_build(const char *dir, const ph_tar_extra *extra, size_t n_extra, size_t max_bytes, void **out,
                     size_t *out_len, ph_error_t *err)
{
    struct archive *a = archive_write_new();
    membuf m = { .max = max_bytes };
    ignore_rules ig = { 0 };
    int rc = -1, had_error = err != NULL && *err != NULL;

    *out = NULL;
    *out_len = 0;
    if (a == NULL)
        return ph_fail(err, ENOMEM, "start the build context");
    /* ustar headers, pax records only for what ustar cannot hold (long
     * names, big files); no padding to 10 kB records. */
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open(a, &m, NULL, mem_write_cb, NULL) != ARCHIVE_OK) {
        ph_fail(err, 0, "start the build context: %s", archive_error_string(a));
        goto out;
    }
    if (dir != NULL) {
        tree_ctx t = { .a = a, .root = dir, .ig = &ig, .extra = extra, .n_extra = n_extra };

        if (ignore_load(dir, &ig, err) < 0 || add_tree(&t, "", err) < 0)
            goto out;
    }
    for (size_t i = 0; i < n_extra; i++)
        if (add_extra(a, &extra[i], err) < 0)
            goto out;
    if (archive_write_close(a) != ARCHIVE_OK) {
        ph_fail(err, 0, "finish the build context: %s", archive_error_string(a));
        goto out;
    }
    *out = m.data;
    *out_len = m.len;
    m.data = NULL;
    rc = 0;
out:
    if (rc < 0 && m.overflow && !had_error) {
        /* The precise error is the size, whichever entry crossed it. */
        ph_error_free(err);
        ph_fail(err, 0, "build context of `%s` is larger than the limit of %zu bytes", dir ? dir : "(extras)",
                max_bytes);
        ph_error_hint(err, "list large files that the image does not need in .dockerignore");
    }
    archive_write_free(a);
    ignore_free(&ig);
    free(m.data);
    return rc;
}
