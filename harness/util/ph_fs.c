/* ph_fs.c - untrusted trees walked fd-relative, without recursion or links;
 * temp directories (see ph_fs.h). */
#include "ph_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ph_escape.h"

/* One directory on the way down: where it is, and which of its
 * subdirectories are still to visit. */
typedef struct level {
    dev_t dev;
    ino_t ino;
    struct stat st;   /* its own lstat, for the callback */
    char *name;       /* its name in the directory above */
    char **subdirs;
    size_t n, next, cap;
} level;

typedef struct walk {
    level *v;
    size_t depth, cap;
    const char *top;  /* for messages */
} walk;

static void
level_clear(level *l)
{
    for (size_t i = l->next; i < l->n; i++)
        free(l->subdirs[i]);
    free(l->subdirs);
    free(l->name);
    memset(l, 0, sizeof *l);
}

static int
walk_fail(walk *w, ph_error_t *err, int errnum, const char *what, const char *name)
{
    char esc[512];

    return ph_fail(err, errnum, "%s `%s` (%zu level%s below `%s`)", what, ph_escape(esc, sizeof esc, name),
                   w->depth, w->depth == 1 ? "" : "s", w->top);
}

static int
push_level(walk *w, const struct stat *st, const char *name, ph_error_t *err)
{
    level *l;

    if (w->depth == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 16;
        level *nv = realloc(w->v, nc * sizeof *nv);

        if (nv == NULL)
            return walk_fail(w, err, ENOMEM, "walk into", name);
        w->v = nv;
        w->cap = nc;
    }
    l = &w->v[w->depth];
    memset(l, 0, sizeof *l);
    l->name = strdup(name);
    if (l->name == NULL)
        return walk_fail(w, err, ENOMEM, "walk into", name);
    l->dev = st->st_dev;
    l->ino = st->st_ino;
    l->st = *st;
    w->depth++;
    return 0;
}

static int
add_subdir(level *l, const char *name)
{
    char *c;

    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 8;
        char **nv = realloc(l->subdirs, nc * sizeof *nv);

        if (nv == NULL)
            return -1;
        l->subdirs = nv;
        l->cap = nc;
    }
    c = strdup(name);
    if (c == NULL)
        return -1;
    l->subdirs[l->n++] = c;
    return 0;
}

DIR *
ph_fs_opendir_at(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d;

    if (fd < 0)
        return NULL;
    d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

/* Read the directory FD: visit what is not a directory, remember the
 * subdirectories.  FD stays open. */
static int
scan_dir(walk *w, int fd, ph_fs_visit_cb cb, void *ud, ph_error_t *err)
{
    level *l = &w->v[w->depth - 1];
    DIR *d = ph_fs_opendir_at(fd);
    struct dirent *de;
    int rc = 0;

    if (d == NULL)
        return walk_fail(w, err, errno, "read directory", l->name);
    for (;;) {
        struct stat st;

        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0)
                rc = walk_fail(w, err, errno, "read directory", l->name);
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue; /* gone since it was listed */
            rc = walk_fail(w, err, errno, "stat", de->d_name);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (add_subdir(l, de->d_name) < 0) {
                rc = walk_fail(w, err, ENOMEM, "remember", de->d_name);
                break;
            }
        } else if (cb(fd, de->d_name, &st, ud, err) < 0) {
            rc = -1;
            break;
        }
    }
    closedir(d);
    return rc;
}

int
ph_fs_walk_at(int dirfd, const char *name, ph_fs_visit_cb cb, void *ud, ph_error_t *err)
{
    walk w = { .top = name };
    struct stat st;
    int fd = -1, rc = -1;

    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno != ENOTDIR && errno != ELOOP)
            return ph_fail(err, errno, "open `%s`", name);
        /* A file or a link: it alone. */
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return errno == ENOENT ? 0 : ph_fail(err, errno, "stat `%s`", name);
        return cb(dirfd, name, &st, ud, err);
    }
    if (fstat(fd, &st) < 0 || push_level(&w, &st, name, err) < 0) {
        if (err != NULL && *err == NULL)
            ph_fail(err, errno, "stat `%s`", name);
        goto out;
    }
    if (scan_dir(&w, fd, cb, ud, err) < 0)
        goto out;
    while (w.depth > 0) {
        level *l = &w.v[w.depth - 1];

        if (l->next < l->n) {
            /* Down into the next subdirectory. */
            char *sub = l->subdirs[l->next++];
            int child = openat(fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (child < 0) {
                int e = errno;

                if (e == ENOENT) {
                    free(sub);
                    continue;
                }
                /* Replaced by something else since it was listed: visit
                 * that, never follow it. */
                if ((e == ENOTDIR || e == ELOOP) && fstatat(fd, sub, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                    int r = cb(fd, sub, &st, ud, err);
                    free(sub);
                    if (r < 0)
                        goto out;
                    continue;
                }
                walk_fail(&w, err, e, "open directory", sub);
                free(sub);
                goto out;
            }
            if (fstat(child, &st) < 0 || push_level(&w, &st, sub, err) < 0) {
                if (err != NULL && *err == NULL)
                    walk_fail(&w, err, errno, "stat", sub);
                close(child);
                free(sub);
                goto out;
            }
            free(sub);
            close(fd);
            fd = child;
            if (scan_dir(&w, fd, cb, ud, err) < 0)
                goto out;
            continue;
        }
        /* Everything below L is done: up, then L itself. */
        if (w.depth == 1) {
            close(fd);
            fd = -1;
            if (cb(dirfd, l->name, &l->st, ud, err) < 0)
                goto out;
            level_clear(l);
            w.depth--;
            break;
        }
        {
            level *up = &w.v[w.depth - 2];
            int parent = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            struct stat pst;

            if (parent < 0 || fstat(parent, &pst) < 0 || pst.st_dev != up->dev || pst.st_ino != up->ino) {
                int e = parent < 0 ? errno : 0;

                if (parent >= 0)
                    close(parent);
                walk_fail(&w, err, e, e ? "go back up from" : "the tree moved while walking it; stopped at",
                          l->name);
                goto out;
            }
            close(fd);
            fd = parent;
            if (cb(fd, l->name, &l->st, ud, err) < 0)
                goto out;
            level_clear(l);
            w.depth--;
        }
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    while (w.depth > 0)
        level_clear(&w.v[--w.depth]);
    free(w.v);
    return rc;
}

static int
remove_cb(int parent, const char *name, const struct stat *st, void *ud, ph_error_t *err)
{
    char esc[512];

    (void)ud;
    if (strcmp(name, ".") == 0)
        return 0; /* the top given as "." is emptied, not removed */
    if (unlinkat(parent, name, S_ISDIR(st->st_mode) ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
        return ph_fail(err, errno, "remove `%s`", ph_escape(esc, sizeof esc, name));
    return 0;
}

int
ph_fs_remove_tree_at(int dirfd, const char *name, ph_error_t *err)
{
    return ph_fs_walk_at(dirfd, name, remove_cb, NULL, err);
}

typedef struct owner {
    uid_t uid;
    gid_t gid;
} owner;

static int
chown_cb(int parent, const char *name, const struct stat *st, void *ud, ph_error_t *err)
{
    const owner *o = ud;
    char esc[512];

    (void)st;
    if (fchownat(parent, name, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0)
        return ph_fail(err, errno, "give `%s` to %ld:%ld", ph_escape(esc, sizeof esc, name), (long)o->uid,
                       (long)o->gid);
    return 0;
}

int
ph_fs_chown_tree_at(int dirfd, const char *name, uid_t uid, gid_t gid, ph_error_t *err)
{
    owner o = { uid, gid };

    return ph_fs_walk_at(dirfd, name, chown_cb, &o, err);
}

void
ph_fs_random_name(char *buf, size_t n)
{
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char rnd[64];
    size_t got = 0;

    while (n > 0) {
        size_t k = n < sizeof rnd ? n : sizeof rnd;
        ssize_t r = getrandom(rnd, k, GRND_NONBLOCK);

        if (r <= 0) {
            /* No entropy yet (early boot): unpredictable enough for a
             * name that is created with O_EXCL semantics anyway. */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)buf ^ got;
            for (size_t i = 0; i < k; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                rnd[i] = (unsigned char)x;
            }
            r = (ssize_t)k;
        }
        for (ssize_t i = 0; i < r; i++)
            buf[got + (size_t)i] = chars[rnd[i] % (sizeof chars - 1)];
        got += (size_t)r;
        n -= (size_t)r;
    }
}

int
ph_fs_mkdtemp_at(int dirfd, const char *prefix, mode_t mode, char *name, size_t len, ph_error_t *err)
{
    size_t plen = strlen(prefix);

    if (plen + 13 > len)
        return ph_fail(err, ENAMETOOLONG, "make a temp dir `%sXXXXXXXXXXXX`", prefix);
    memcpy(name, prefix, plen);
    for (int tries = 0; tries < 100; tries++) {
        ph_fs_random_name(name + plen, 12);
        name[plen + 12] = '\0';
        if (mkdirat(dirfd, name, mode) == 0)
            return 0;
        if (errno != EEXIST)
            return ph_fail(err, errno, "mkdir `%s`", name);
    }
    return ph_fail(err, EEXIST, "make a temp dir `%sXXXXXXXXXXXX` (100 names taken)", prefix);
}

int
ph_fs_write_atomic(const char *dir, const char *name, int (*fill)(FILE *, const void *, ph_error_t *), const void *ud,
                   ph_error_t *err)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    FILE *f;
    int fd, e;

    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path ||
        (size_t)snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, name) >= sizeof tmp)
        return ph_fail(err, ENAMETOOLONG, "write `%s/%s`", dir, name);
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
        return ph_fail(err, errno, "create `%s`", tmp);
    if ((f = fdopen(fd, "w")) == NULL) {
        e = errno;
        close(fd);
        unlink(tmp);
        return ph_fail(err, e, "open `%s`", tmp);
    }
    if (fchmod(fd, 0644) < 0) {
        e = errno;
        fclose(f);
        unlink(tmp);
        return ph_fail(err, e, "write `%s`", path);
    }
    if (fill(f, ud, err) < 0) {
        fclose(f);
        unlink(tmp);
        return ph_error_wrap(err, "write `%s`", path);
    }
    if (fclose(f) != 0) {
        e = errno;
        unlink(tmp);
        return ph_fail(err, e, "write `%s`", path);
    }
    if (rename(tmp, path) < 0) {
        e = errno;
        unlink(tmp);
        return ph_fail(err, e, "rename `%s` to `%s`", tmp, path);
    }
    return 0;
}

typedef struct bytes {
    const void *data;
    size_t len;
} bytes;

static int
fill_bytes(FILE *f, const void *ud, ph_error_t *err)
{
    const bytes *b = ud;

    if (b->len > 0 && fwrite(b->data, 1, b->len, f) != b->len)
        return ph_fail(err, errno, "fwrite");
    return 0;
}

int
ph_fs_write_bytes(const char *dir, const char *name, const void *data, size_t len, ph_error_t *err)
{
    bytes b = { data, len };

    return ph_fs_write_atomic(dir, name, fill_bytes, &b, err);
}

int
ph_fs_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = write(fd, c, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}
