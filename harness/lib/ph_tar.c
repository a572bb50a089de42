/* ph_tar.c - tar to and from the Engine with libarchive (see ph_tar.h).
 *
 * Extraction design.  The Engine's archive endpoint pushes bytes at us
 * (curl's write callback) while libarchive pulls them (a read callback).
 * libarchive cannot resume a read that ran out of data, so the reader runs
 * in its own thread on one end of a socketpair and ph_tar_extract_feed
 * writes into the other: the socket buffer is the only queue, so memory
 * stays bounded whatever the archive's size, and a reader that stopped on
 * an error makes the next feed fail (EPIPE, without SIGPIPE) instead of
 * blocking.  The thread only touches the destination directory and its own
 * state; the caller reads that state after joining it.
 *
 * Safety: every entry is written through openat() relative to the
 * destination, one component at a time with O_NOFOLLOW, so neither a `..`
 * nor a symlink planted by an earlier entry can lead outside it.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_log.h"

struct ph_tar_extract {
    int dest_fd;
    int strip;
    int sock[2];       /* [0] the reader's end, [1] ours */
    pthread_t thread;
    int started;
    ph_tar_stats stats;
    ph_error_t err;    /* the reader's error, read after join */
};

/* ---- path checks -------------------------------------------------------- */

/* Drop STRIP leading components; NULL when nothing is left. */
static const char *
strip_path(const char *p, int strip)
{
    while (*p == '/')
        p++;
    for (int i = 0; i < strip; i++) {
        const char *slash = strchr(p, '/');
        if (slash == NULL)
            return NULL;
        p = slash + 1;
        while (*p == '/')
            p++;
    }
    while (p[0] == '.' && p[1] == '/')
        p += 2;
    return *p ? p : NULL;
}

/* A relative path without `..` components. */
static int
path_is_safe(const char *p)
{
    if (p[0] == '/')
        return 0;
    for (const char *c = p; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return 0;
        c += n;
        while (*c == '/')
            c++;
    }
    return 1;
}

/* Does a symlink at REL (relative path) pointing to TARGET stay inside? */
static int
link_stays_inside(const char *rel, const char *target)
{
    int depth = 0;

    if (target[0] == '/' || target[0] == '\0')
        return 0;
    /* Depth of the link's directory. */
    for (const char *c = rel; *c; c++)
        if (*c == '/')
            depth++;
    for (const char *c = target; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            depth--;
        else if (!(n == 1 && c[0] == '.') && n > 0)
            depth++;
        if (depth < 0)
            return 0;
        c += n;
        while (*c == '/')
            c++;
    }
    return 1;
}

/* Open (creating as needed) the parent directory of REL under DEST without
 * following symlinks; *leaf points at the last component.  -1 on failure. */
static int
open_parent(int dest, char *rel, char **leaf)
{
    int fd = dup(dest);
    char *p = rel, *slash;

    while (fd >= 0 && (slash = strchr(p, '/')) != NULL) {
        int next;

        *slash = '\0';
        if (*p != '\0' && strcmp(p, ".") != 0) {
            if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
                close(fd);
                return -1;
            }
            next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            close(fd);
            fd = next;
        }
        *slash = '/';
        p = slash + 1;
    }
    *leaf = p;
    return fd;
}

static void
refuse(ph_tar_extract *x, const char *name, const char *why)
{
    x->stats.refused++;
    ph_warn("archive entry `%s` refused: %s", name, why);
}

static int
write_file(ph_tar_extract *x, struct archive *a, struct archive_entry *e, const char *rel, ph_error_t *err)
{
    char path[PATH_MAX], *leaf;
    int dir, fd;
    mode_t mode = (archive_entry_mode(e) & 0111) ? 0755 : 0644;
    const void *buf;
    size_t len;
    la_int64_t off;
    struct timespec ts[2];

    if (strlen(rel) >= sizeof path)
        return ph_fail(err, ENAMETOOLONG, "extract `%s`", rel);
    strcpy(path, rel);
    dir = open_parent(x->dest_fd, path, &leaf);
    if (dir < 0) {
        refuse(x, rel, "its directory is not a plain directory inside the run dir");
        return 0;
    }
    unlinkat(dir, leaf, 0); /* replace, never write through an existing entry */
    fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        int e2 = errno;
        close(dir);
        return ph_fail(err, e2, "create `%s`", rel);
    }
    for (;;) {
        int r = archive_read_data_block(a, &buf, &len, &off);

        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            ph_fail(err, 0, "read `%s` from the archive: %s", rel, archive_error_string(a));
            close(fd);
            close(dir);
            return -1;
        }
        if (pwrite(fd, buf, len, off) != (ssize_t)len) {
            int e2 = errno;
            close(fd);
            close(dir);
            return ph_fail(err, e2 ? e2 : EIO, "write `%s`", rel);
        }
        x->stats.bytes += len;
    }
    /* Sparse tails: make the size right. */
    if (ftruncate(fd, archive_entry_size(e)) < 0) {
        int e2 = errno;
        close(fd);
        close(dir);
        return ph_fail(err, e2, "truncate `%s`", rel);
    }
    fchmod(fd, mode); /* the umask must not make it unreadable */
    ts[0].tv_sec = ts[1].tv_sec = archive_entry_mtime(e);
    ts[0].tv_nsec = ts[1].tv_nsec = archive_entry_mtime_nsec(e);
    futimens(fd, ts);
    if (close(fd) < 0) {
        int e2 = errno;
        close(dir);
        return ph_fail(err, e2, "close `%s`", rel);
    }
    close(dir);
    x->stats.files++;
    return 0;
}

static int
extract_entry(ph_tar_extract *x, struct archive *a, struct archive_entry *e, ph_error_t *err)
{
    const char *name = archive_entry_pathname(e);
    const char *rel;
    char path[PATH_MAX], *leaf;
    int dir;

    if (name == NULL)
        return 0;
    rel = strip_path(name, x->strip);
    if (rel == NULL)
        return 0; /* the top directory itself */
    if (name[0] == '/' || !path_is_safe(rel)) {
        refuse(x, name, "absolute or `..` path");
        return 0;
    }
    switch (archive_entry_filetype(e)) {
    case AE_IFREG:
        if (archive_entry_hardlink(e) != NULL) {
            refuse(x, name, "hard link");
            return 0;
        }
        return write_file(x, a, e, rel, err);
    case AE_IFDIR:
        if (strlen(rel) + 2 >= sizeof path)
            return ph_fail(err, ENAMETOOLONG, "extract `%s`", rel);
        snprintf(path, sizeof path, "%s/", rel);
        dir = open_parent(x->dest_fd, path, &leaf);
        if (dir < 0) {
            refuse(x, name, "not a plain directory inside the run dir");
            return 0;
        }
        close(dir);
        x->stats.dirs++;
        return 0;
    case AE_IFLNK: {
        const char *target = archive_entry_symlink(e);

        if (target == NULL || !link_stays_inside(rel, target)) {
            refuse(x, name, "symbolic link leading outside the run dir");
            return 0;
        }
        if (strlen(rel) >= sizeof path)
            return ph_fail(err, ENAMETOOLONG, "extract `%s`", rel);
        strcpy(path, rel);
        dir = open_parent(x->dest_fd, path, &leaf);
        if (dir < 0) {
            refuse(x, name, "not inside the run dir");
            return 0;
        }
        unlinkat(dir, leaf, 0);
        if (symlinkat(target, dir, leaf) < 0) {
            int e2 = errno;
            close(dir);
            return ph_fail(err, e2, "symlink `%s`", rel);
        }
        close(dir);
        x->stats.links++;
        return 0;
    }
    default:
        if (archive_entry_hardlink(e) != NULL)
            refuse(x, name, "hard link");
        else
            refuse(x, name, "device node, FIFO or socket");
        return 0;
    }
}

static int
extract_all(ph_tar_extract *x, struct archive *a, ph_error_t *err)
{
    struct archive_entry *e;

    for (;;) {
        int r = archive_read_next_header(a, &e);

        if (r == ARCHIVE_EOF)
            return 0;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            return ph_fail(err, 0, "read the archive: %s", archive_error_string(a));
        if (extract_entry(x, a, e, err) < 0)
            return -1;
    }
}

static void *
reader_main(void *ud)
{
    ph_tar_extract *x = ud;
    struct archive *a = archive_read_new();

    if (a == NULL) {
        ph_fail(&x->err, ENOMEM, "archive_read_new");
    } else {
        archive_read_support_format_tar(a);
        if (archive_read_open_fd(a, x->sock[0], 64 * 1024) != ARCHIVE_OK)
            ph_fail(&x->err, 0, "open the archive stream: %s", archive_error_string(a));
        else
            extract_all(x, a, &x->err);
        archive_read_free(a);
    }
    /* Unblock a feeder still writing: it gets EPIPE. */
    shutdown(x->sock[0], SHUT_RDWR);
    return NULL;
}

ph_tar_extract *
ph_tar_extract_new(const char *dest_dir, int strip, ph_error_t *err)
{
    ph_tar_extract *x = calloc(1, sizeof *x);

    if (x == NULL) {
        ph_fail(err, errno, "allocate");
        return NULL;
    }
    x->strip = strip;
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
    if (pthread_create(&x->thread, NULL, reader_main, x) != 0) {
        ph_fail(err, errno, "start the extraction thread");
        goto fail;
    }
    x->started = 1;
    return x;
fail:
    ph_tar_extract_free(x);
    return NULL;
}

static int
join(ph_tar_extract *x)
{
    if (!x->started)
        return 0;
    if (x->sock[1] >= 0) {
        close(x->sock[1]);
        x->sock[1] = -1;
    }
    pthread_join(x->thread, NULL);
    x->started = 0;
    return 0;
}

int
ph_tar_extract_feed(ph_tar_extract *x, const void *data, size_t len, ph_error_t *err)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = send(x->sock[1], p, len, MSG_NOSIGNAL);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            join(x);
            if (x->err != NULL) {
                *err = x->err;
                x->err = NULL;
                return -1;
            }
            return ph_fail(err, errno, "extract the archive");
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
    if (x->err != NULL) {
        *err = x->err;
        x->err = NULL;
        return -1;
    }
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
    if (x->sock[1] >= 0)
        close(x->sock[1]);
    if (x->dest_fd >= 0)
        close(x->dest_fd);
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
    ph_tar_extract_free(x);
    return rc;
}

/* ---- building contexts ------------------------------------------------ */

typedef struct membuf {
    char *data;
    size_t len, cap, max;
    int overflow;
} membuf;

static la_ssize_t
mem_write_cb(struct archive *a, void *ud, const void *buf, size_t n)
{
    membuf *m = ud;

    if (m->len + n > m->max) {
        m->overflow = 1;
        archive_set_error(a, EFBIG, "build context larger than %zu bytes", m->max);
        return -1;
    }
    if (m->len + n > m->cap) {
        size_t cap = m->cap ? m->cap : 65536;
        char *d;

        while (cap < m->len + n)
            cap *= 2;
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

typedef struct ignore_rules {
    char **pat;
    int *negate;
    size_t n;
} ignore_rules;

static void
ignore_load(const char *dir, ignore_rules *r)
{
    char path[PATH_MAX], line[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/.dockerignore", dir);
    f = fopen(path, "re");
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f)) {
        char *s = line, *end;
        int neg = 0;
        char **np;
        int *nn;

        s[strcspn(s, "\r\n")] = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        end = s + strlen(s);
        while (end > s && (end[-1] == ' ' || end[-1] == '/'))
            *--end = '\0';
        if (*s == '\0' || *s == '#')
            continue;
        if (*s == '!') {
            neg = 1;
            s++;
        }
        while (s[0] == '.' && s[1] == '/')
            s += 2;
        np = realloc(r->pat, (r->n + 1) * sizeof *np);
        if (np == NULL)
            break;
        r->pat = np;
        nn = realloc(r->negate, (r->n + 1) * sizeof *nn);
        if (nn == NULL)
            break;
        r->negate = nn;
        r->pat[r->n] = strdup(s);
        r->negate[r->n] = neg;
        if (r->pat[r->n])
            r->n++;
    }
    fclose(f);
}

static void
ignore_free(ignore_rules *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->pat[i]);
    free(r->pat);
    free(r->negate);
}

/* Docker's rule: the last matching pattern wins; a pattern matching a
 * directory excludes what is below it. */
static int
ignored(const ignore_rules *r, const char *rel)
{
    int ign = 0;

    for (size_t i = 0; i < r->n; i++) {
        const char *p = r->pat[i];
        int flags = strstr(p, "**") ? 0 : FNM_PATHNAME;
        int m = fnmatch(p, rel, flags) == 0;

        if (!m) {
            /* A match of a leading directory. */
            char prefix[PATH_MAX];
            for (const char *s = strchr(rel, '/'); s && !m; s = strchr(s + 1, '/')) {
                snprintf(prefix, sizeof prefix, "%.*s", (int)(s - rel), rel);
                m = fnmatch(p, prefix, flags) == 0;
            }
        }
        if (m)
            ign = !r->negate[i];
    }
    return ign;
}

static int
add_entry(struct archive *a, const char *name, const struct stat *st, const char *link_target, int fd,
          const void *data, size_t len, ph_error_t *err)
{
    struct archive_entry *e = archive_entry_new();
    char buf[65536];
    int rc = 0;

    if (e == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    archive_entry_set_pathname(e, name);
    /* Fixed owner and time: identical inputs give identical bytes, which
     * the profiling image's cache key relies on. */
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    archive_entry_set_mtime(e, 0, 0);
    if (S_ISDIR(st->st_mode)) {
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
    } else if (S_ISLNK(st->st_mode)) {
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_perm(e, 0777);
        archive_entry_set_symlink(e, link_target);
    } else {
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, st->st_mode & 0777);
        archive_entry_set_size(e, data ? (la_int64_t)len : st->st_size);
    }
    if (archive_write_header(a, e) != ARCHIVE_OK) {
        rc = ph_fail(err, 0, "tar `%s`: %s", name, archive_error_string(a));
        goto out;
    }
    if (data != NULL) {
        if (archive_write_data(a, data, len) != (la_ssize_t)len)
            rc = ph_fail(err, 0, "tar `%s`: %s", name, archive_error_string(a));
    } else if (fd >= 0) {
        ssize_t n;
        la_int64_t left = st->st_size;

        while (left > 0 && (n = read(fd, buf, sizeof buf)) > 0) {
            if (n > left)
                n = (ssize_t)left;
            if (archive_write_data(a, buf, (size_t)n) != n) {
                rc = ph_fail(err, 0, "tar `%s`: %s", name, archive_error_string(a));
                goto out;
            }
            left -= n;
        }
        if (left > 0)
            rc = ph_fail(err, errno ? errno : EIO, "read `%s` (it changed while being archived?)", name);
    }
out:
    archive_entry_free(e);
    return rc;
}

static int
add_tree(struct archive *a, const char *root, const char *rel, const ignore_rules *ig, ph_error_t *err)
{
    char dirpath[PATH_MAX], child_rel[PATH_MAX], full[PATH_MAX];
    struct dirent **list = NULL;
    int n, rc = 0;

    snprintf(dirpath, sizeof dirpath, "%s%s%s", root, rel[0] ? "/" : "", rel);
    n = scandir(dirpath, &list, NULL, alphasort);
    if (n < 0)
        return ph_fail(err, errno, "read directory `%s`", dirpath);
    for (int i = 0; i < n; i++) {
        const char *nm = list[i]->d_name;
        struct stat st;

        if (rc < 0 || strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        snprintf(child_rel, sizeof child_rel, "%s%s%s", rel, rel[0] ? "/" : "", nm);
        snprintf(full, sizeof full, "%s/%s", root, child_rel);
        if (ignored(ig, child_rel) || lstat(full, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            rc = add_entry(a, child_rel, &st, NULL, -1, NULL, 0, err);
            if (rc == 0)
                rc = add_tree(a, root, child_rel, ig, err);
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t l = readlink(full, target, sizeof target - 1);

            if (l >= 0) {
                target[l] = '\0';
                rc = add_entry(a, child_rel, &st, target, -1, NULL, 0, err);
            }
        } else if (S_ISREG(st.st_mode)) {
            int fd = open(full, O_RDONLY | O_CLOEXEC);

            if (fd < 0) {
                rc = ph_fail(err, errno, "open `%s`", full);
            } else {
                rc = add_entry(a, child_rel, &st, NULL, fd, NULL, 0, err);
                close(fd);
            }
        }
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    return rc;
}

int
ph_tar_context_build(const char *dir, const ph_tar_extra *extra, size_t n_extra, size_t max_bytes, void **out,
                     size_t *out_len, ph_error_t *err)
{
    struct archive *a = archive_write_new();
    membuf m = { .max = max_bytes };
    ignore_rules ig = { 0 };
    int rc = -1;

    *out = NULL;
    *out_len = 0;
    if (a == NULL)
        return ph_fail(err, ENOMEM, "archive_write_new");
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open(a, &m, NULL, mem_write_cb, NULL) != ARCHIVE_OK) {
        ph_fail(err, 0, "start the build context: %s", archive_error_string(a));
        goto out;
    }
    if (dir != NULL) {
        ignore_load(dir, &ig);
        if (add_tree(a, dir, "", &ig, err) < 0)
            goto out;
    }
    for (size_t i = 0; i < n_extra; i++) {
        struct stat st = { .st_mode = S_IFREG | (extra[i].mode ? extra[i].mode : 0644) };

        if (extra[i].path != NULL) {
            int fd = open(extra[i].path, O_RDONLY | O_CLOEXEC);
            struct stat real;
            int r;

            if (fd < 0 || fstat(fd, &real) < 0) {
                ph_fail(err, errno, "open `%s`", extra[i].path);
                if (fd >= 0)
                    close(fd);
                goto out;
            }
            st.st_size = real.st_size;
            r = add_entry(a, extra[i].name, &st, NULL, fd, NULL, 0, err);
            close(fd);
            if (r < 0)
                goto out;
        } else if (add_entry(a, extra[i].name, &st, NULL, -1, extra[i].data, extra[i].len, err) < 0) {
            goto out;
        }
    }
    if (archive_write_close(a) != ARCHIVE_OK) {
        ph_fail(err, m.overflow ? EFBIG : 0, "finish the build context: %s", archive_error_string(a));
        goto out;
    }
    *out = m.data;
    *out_len = m.len;
    m.data = NULL;
    rc = 0;
out:
    if (rc < 0 && m.overflow && *err == NULL)
        ph_fail(err, EFBIG, "build context of `%s` exceeds %zu bytes", dir ? dir : "-", max_bytes);
    archive_write_free(a);
    ignore_free(&ig);
    free(m.data);
    return rc;
}
