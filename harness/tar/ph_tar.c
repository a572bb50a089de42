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
#include <errno.h>
#include <fcntl.h>
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
#include "ph_tar_int.h"

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
        size_t n = strcspn(c, "/");

        if (n == 2 && c[0] == '.' && c[1] == '.')
            return PH_TAR_NAME_UNSAFE;
        if (n > 0 && !(n == 1 && c[0] == '.')) {
            if (skipped < strip) {
                skipped++;
            } else {
                if (len + (len > 0) + n >= outsz)
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

    if (ph_tar_name_normalise(link, x->strip, target, sizeof target) != PH_TAR_NAME_OK)
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
    switch (ph_tar_name_normalise(name, x->strip, rel, sizeof rel)) {
    case PH_TAR_NAME_EMPTY:
        return 0; /* the stripped top directory itself */
    case PH_TAR_NAME_UNSAFE:
        return refuse(x, name, NULL, "absolute path or `..` component");
    case PH_TAR_NAME_LONG:
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
