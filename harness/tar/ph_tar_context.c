/* ph_tar_context.c - build contexts for the Engine: an in-memory tar of a
 * directory, .dockerignore applied, plus extra files (see ph_tar.h for
 * the contract: deterministic bytes, Docker's ignore rules, a size cap). */
#include "ph_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_tar_int.h"

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
    archive_entry_set_perm(e, perm & (type == AE_IFDIR ? 07777 : 0777));
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

    if (x->name == NULL || ph_tar_name_normalise(x->name, 0, clean, sizeof clean) != PH_TAR_NAME_OK)
        return ph_bad_input(err, "build context extra `%s`: not a relative name without `..`",
                            x->name ? x->name : "(null)");
    if (x->path == NULL && x->data == NULL && x->len > 0)
        return ph_bad_input(err, "build context extra `%s`: no path and no data", x->name);
    if (x->path == NULL && (x->mode & S_IFMT) == S_IFDIR)
        return add_entry(a, x->name, AE_IFDIR, x->mode, 0, NULL, -1, 0, NULL, err);
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

/* See ph_tar_int.h. */
int
ph_tar_context_open(struct archive *a, void *ud, la_ssize_t (*write_cb)(struct archive *, void *, const void *, size_t),
                    ph_error_t *err)
{
    /* ustar headers, pax records only for what ustar cannot hold (long
     * names, big files); no padding to 10 kB records. */
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open(a, ud, NULL, write_cb, NULL) != ARCHIVE_OK)
        return ph_fail(err, 0, "start the archive: %s", archive_error_string(a));
    return 0;
}

/* See ph_tar_int.h. */
int
ph_tar_context_write(struct archive *a, const char *dir, const ph_tar_extra *extra, size_t n_extra, ph_error_t *err)
{
    ignore_rules ig = { 0 };
    int rc = -1;

    if (dir != NULL) {
        tree_ctx t = { .a = a, .root = dir, .ig = &ig, .extra = extra, .n_extra = n_extra };

        if (ignore_load(dir, &ig, err) < 0 || add_tree(&t, "", err) < 0)
            goto out;
    }
    for (size_t i = 0; i < n_extra; i++)
        if (add_extra(a, &extra[i], err) < 0)
            goto out;
    if (archive_write_close(a) != ARCHIVE_OK) {
        ph_fail(err, 0, "finish the archive: %s", archive_error_string(a));
        goto out;
    }
    rc = 0;
out:
    ignore_free(&ig);
    return rc;
}

int
ph_tar_context_build(const char *dir, const ph_tar_extra *extra, size_t n_extra, size_t max_bytes, void **out,
                     size_t *out_len, ph_error_t *err)
{
    struct archive *a = archive_write_new();
    membuf m = { .max = max_bytes };
    int rc = -1, had_error = err != NULL && *err != NULL;

    *out = NULL;
    *out_len = 0;
    if (a == NULL)
        return ph_fail(err, ENOMEM, "start the build context");
    if (ph_tar_context_open(a, &m, mem_write_cb, err) < 0 || ph_tar_context_write(a, dir, extra, n_extra, err) < 0)
        goto out;
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
    free(m.data);
    return rc;
}
