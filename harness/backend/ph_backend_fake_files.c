/* ph_backend_fake_files.c - the files of a workload or an image in the
 * fake backend (ph_backend_fake_int.h), and the tars the archive
 * endpoint gives (a path's last part as the top entry, as the Engine's)
 * and takes.
 */
#include "ph_backend_fake_int.h"

#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

/* ---- files ---------------------------------------------------------------- */

void
ph_fake_fs_clear(fake_files *fs)
{
    for (size_t i = 0; i < fs->n; i++) {
        free(fs->v[i].path);
        free(fs->v[i].data);
        free(fs->v[i].link);
    }
    free(fs->v);
    memset(fs, 0, sizeof *fs);
}

/* PATH (made absolute, no trailing '/') set in FS, replacing one there. */
int
ph_fake_fs_set(fake_files *fs, const char *path, const void *data, size_t len, unsigned mode, const char *link)
{
    fake_file nf = { 0 };
    size_t n = strlen(path), i;

    while (n > 1 && path[n - 1] == '/')
        n--;
    if (asprintf(&nf.path, "%s%.*s", path[0] == '/' ? "" : "/", (int)n, path) < 0)
        return -1;
    nf.len = len;
    nf.mode = mode;
    if ((len > 0 && (nf.data = malloc(len)) == NULL) || (link != NULL && (nf.link = strdup(link)) == NULL)) {
        free(nf.path);
        free(nf.data);
        return -1;
    }
    if (len > 0)
        memcpy(nf.data, data, len);
    for (i = 0; i < fs->n && strcmp(fs->v[i].path, nf.path) != 0; i++)
        ;
    if (i < fs->n) {
        free(fs->v[i].path);
        free(fs->v[i].data);
        free(fs->v[i].link);
        fs->v[i] = nf;
        return 0;
    }
    if (GROW(fs->v, fs->n) < 0) {
        free(nf.path);
        free(nf.data);
        free(nf.link);
        return -1;
    }
    fs->v[fs->n++] = nf;
    return 0;
}

int
ph_fake_fs_copy(fake_files *dst, const fake_files *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (ph_fake_fs_set(dst, src->v[i].path, src->v[i].data, src->v[i].len, src->v[i].mode, src->v[i].link) < 0)
            return -1;
    return 0;
}

/* FILE is PATH or below it. */
int
ph_fake_fs_under(const char *file, const char *path)
{
    size_t n = strlen(path);

    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 1 && path[0] == '/')
        return 1;
    return strncmp(file, path, n) == 0 && (file[n] == '\0' || file[n] == '/');
}

/* Whether PATH is in FS: a file, or a directory some file is under. */
int
ph_fake_fs_has(const fake_files *fs, const char *path)
{
    for (size_t i = 0; i < fs->n; i++)
        if (ph_fake_fs_under(fs->v[i].path, path))
            return 1;
    return 0;
}

/* ---- the tar archive_get streams ---------------------------------------- */


la_ssize_t
ph_fake_mem_write(struct archive *a, void *ud, const void *buf, size_t len)
{
    membuf *m = ud;

    (void)a;
    if (m->n + len > m->cap) {
        size_t cap = (m->n + len) * 2 + 4096;
        char *p = realloc(m->p, cap);

        if (p == NULL) {
            m->bad = 1;
            return -1;
        }
        m->p = p;
        m->cap = cap;
    }
    memcpy(m->p + m->n, buf, len);
    m->n += len;
    return (la_ssize_t)len;
}

static int
tar_entry(struct archive *a, const char *name, const fake_file *f, int dir)
{
    struct archive_entry *e = archive_entry_new();
    int rc;

    if (e == NULL)
        return -1;
    archive_entry_set_pathname(e, name);
    archive_entry_set_mtime(e, FAKE_MTIME, 0);
    if (dir || (f != NULL && S_ISDIR(f->mode))) {
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, f != NULL ? f->mode & 07777 : 0755);
    } else if (f->link != NULL) {
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_perm(e, 0777);
        archive_entry_set_symlink(e, f->link);
    } else {
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, f->mode & 07777 ? f->mode & 07777 : 0644);
        archive_entry_set_size(e, (la_int64_t)f->len);
    }
    rc = archive_write_header(a, e) == ARCHIVE_OK ? 0 : -1;
    if (rc == 0 && f != NULL && !dir && !S_ISDIR(f->mode) && f->link == NULL && f->len > 0 &&
        archive_write_data(a, f->data, f->len) != (la_ssize_t)f->len)
        rc = -1;
    archive_entry_free(e);
    return rc;
}

/* The tar of PATH in FS as the Engine's archive endpoint gives it: the top
 * entry named as PATH's last part, then what is below it, directories
 * before what they hold.  -1 on ENOMEM. */
int
ph_fake_fs_tar(const fake_files *fs, const char *path, membuf *out)
{
    struct archive *a = archive_write_new();
    const char *base = strrchr(path, '/');
    char top[512];
    ph_strv dirs = { 0 };
    int rc = -1;

    memset(out, 0, sizeof *out);
    base = base && base[1] ? base + 1 : path;
    snprintf(top, sizeof top, "%s", base);
    if (a == NULL || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        archive_write_open(a, out, NULL, ph_fake_mem_write, NULL) != ARCHIVE_OK)
        goto out;
    for (size_t i = 0; i < fs->n; i++) {
        const fake_file *f = &fs->v[i];
        size_t pl = strlen(path);
        char name[1024];

        while (pl > 1 && path[pl - 1] == '/')
            pl--;
        if (!ph_fake_fs_under(f->path, path))
            continue;
        /* the directories leading to it, each once */
        for (const char *s = f->path + pl; (s = strchr(s, '/')) != NULL; s++) {
            int seen = 0;

            snprintf(name, sizeof name, "%s%.*s/", top, (int)(s - (f->path + pl)), f->path + pl);
            for (size_t k = 0; k < dirs.n; k++)
                seen |= strcmp(dirs.v[k], name) == 0;
            if (!seen && (ph_strv_push(&dirs, name) < 0 || tar_entry(a, name, NULL, 1) < 0))
                goto out;
        }
        snprintf(name, sizeof name, "%s%s%s", top, f->path + pl, S_ISDIR(f->mode) ? "/" : "");
        if (!S_ISDIR(f->mode) || f->path[pl] != '\0' || dirs.n == 0)
            if (tar_entry(a, name, f, 0) < 0)
                goto out;
    }
    if (archive_write_close(a) == ARCHIVE_OK && !out->bad)
        rc = 0;
out:
    if (a != NULL)
        archive_write_free(a);
    ph_strv_free(&dirs);
    if (rc < 0) {
        free(out->p);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

/* A tar (DATA, LEN) unpacked into FS under PATH. */
int
ph_fake_fs_untar(fake_files *fs, const char *path, const char *data, size_t len, ph_error_t *err)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    int rc = 0, r;

    if (a == NULL || archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
        rc = ph_fail(err, 0, "fake backend: archive_put: not a tar (%s)", a ? archive_error_string(a) : "?");
        goto out;
    }
    while (rc == 0 && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(e);
        char full[1024], *buf = NULL;
        size_t n = (size_t)archive_entry_size(e);

        while (name[0] == '.' && name[1] == '/')
            name += 2;
        if (name[0] == '\0' || strcmp(name, ".") == 0)
            continue;
        snprintf(full, sizeof full, "%s/%s", strcmp(path, "/") == 0 ? "" : path, name);
        if (archive_entry_filetype(e) == AE_IFDIR) {
            rc = ph_fake_fs_set(fs, full, NULL, 0, S_IFDIR | (archive_entry_perm(e) & 07777), NULL);
            continue;
        }
        if (archive_entry_filetype(e) == AE_IFLNK) {
            rc = ph_fake_fs_set(fs, full, NULL, 0, 0777, archive_entry_symlink(e));
            continue;
        }
        if (n > 0 && ((buf = malloc(n)) == NULL || archive_read_data(a, buf, n) != (la_ssize_t)n))
            rc = ph_fail(err, 0, "fake backend: archive_put: a short member `%s`", name);
        if (rc == 0)
            rc = ph_fake_fs_set(fs, full, buf, n, archive_entry_perm(e) & 07777, NULL);
        free(buf);
    }
    if (rc == 0 && r != ARCHIVE_EOF)
        rc = ph_fail(err, 0, "fake backend: archive_put: %s", archive_error_string(a));
out:
    if (a != NULL)
        archive_read_free(a);
    return rc < 0 ? -1 : 0;
}
