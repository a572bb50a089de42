/* ph_inroot.c - a running service's files from the tools container,
 * every path resolved inside the service's root (ph_inroot.h). */
#include "ph_inroot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define COPY_CHUNK 65536
#define SPARSE_MIN (1u << 20) /* a smaller file is never called sparse */

static int
inroot_fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

int
ph_inroot_open(int root, const char *path, int flags, mode_t mode)
{
    struct open_how how;

    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    while (*path == '/')
        path++;
    return (int)syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof how);
}

int
ph_inroot_plain_name(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > 255 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '_' || *c == '-'))
            return 0;
    return 1;
}

/* DIR's parent, opened in ROOT, and DIR's last component into NAME. */
static int
open_parent(int root, const char *dir, char *name, size_t name_len, char *why, size_t why_len)
{
    char parent[PATH_MAX];
    const char *slash;
    size_t n = strlen(dir);
    int fd;

    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n >= sizeof parent)
        return inroot_fail(why, why_len, "%s: path too long", dir);
    memcpy(parent, dir, n);
    parent[n] = '\0';
    slash = strrchr(parent, '/');
    if (!ph_inroot_plain_name(slash ? slash + 1 : parent) || strlen(slash ? slash + 1 : parent) >= name_len)
        return inroot_fail(why, why_len, "%s: not a plain name at its end", dir);
    snprintf(name, name_len, "%s", slash ? slash + 1 : parent);
    if (slash != NULL)
        parent[slash - parent + (slash == parent)] = '\0';
    else
        snprintf(parent, sizeof parent, "/");
    if ((fd = ph_inroot_open(root, parent, O_DIRECTORY | O_RDONLY, 0)) < 0)
        return inroot_fail(why, why_len, "%s in the service's root: %s", parent, strerror(errno));
    return fd;
}

int
ph_inroot_mkdirs(int root, const char *dir, char *why, size_t why_len)
{
    char prefix[PATH_MAX];
    size_t n = strlen(dir), at = 0;
    struct stat st;
    int fd = -1;

    if (n == 0 || n >= sizeof prefix)
        return inroot_fail(why, why_len, "`%s`: not a directory path", dir);
    while (at < n) {
        size_t end;

        while (at < n && dir[at] == '/')
            at++;
        if (at == n)
            break;
        for (end = at; end < n && dir[end] != '/'; end++)
            ;
        memcpy(prefix, dir, end);
        prefix[end] = '\0';
        if (fd >= 0)
            close(fd);
        fd = ph_inroot_open(root, prefix, O_DIRECTORY | O_RDONLY, 0);
        if (fd < 0 && errno == ENOENT) {
            char name[NAME_MAX + 1];
            int pfd = open_parent(root, prefix, name, sizeof name, why, why_len);

            if (pfd < 0)
                return -1;
            if (mkdirat(pfd, name, 0755) < 0 && errno != EEXIST) {
                inroot_fail(why, why_len, "make %s in the service's root: %s", prefix, strerror(errno));
                close(pfd);
                return -1;
            }
            close(pfd);
            fd = ph_inroot_open(root, prefix, O_DIRECTORY | O_RDONLY, 0);
        }
        if (fd < 0)
            return inroot_fail(why, why_len, "%s in the service's root: %s%s", prefix, strerror(errno),
                        errno == ENOENT ? " (a symlink to nothing)" : "");
        at = end;
    }
    if (fd < 0)
        return inroot_fail(why, why_len, "`%s`: not a directory path", dir);
    if (fstat(fd, &st) < 0) {
        close(fd);
        return inroot_fail(why, why_len, "%s: %s", dir, strerror(errno));
    }
    close(fd);
    if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
        return inroot_fail(why, why_len,
                    "%s in the service's container belongs to uid %u with mode %03o: another user could change what "
                    "is put there; remove it (it is profharness's), then attach again",
                    dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
    return 0;
}

static uint64_t
fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Do the open regular files A and B (from where they are) hold the same
 * bytes?  A regular file's read is short only at its end. */
static int
same_content(int a, int b)
{
    static unsigned char x[COPY_CHUNK], y[COPY_CHUNK];

    for (;;) {
        ssize_t n = read(a, x, sizeof x), m = read(b, y, sizeof y);

        if (n < 0 || m != n || memcmp(x, y, (size_t)n) != 0)
            return 0;
        if (n == 0)
            return 1;
    }
}

/* Copy at most MAX bytes from IN to OUT: the bytes copied, or -1. */
static int64_t
copy_fd(int in, int out, uint64_t max)
{
    static unsigned char buf[COPY_CHUNK];
    uint64_t done = 0;

    while (done < max) {
        size_t want = max - done < sizeof buf ? (size_t)(max - done) : sizeof buf;
        ssize_t n = read(in, buf, want);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));

            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return -1;
            off += w;
        }
        done += (uint64_t)n;
    }
    return (int64_t)done;
}

int
ph_inroot_install(int root, const char *src, const char *dir, const char *base, char *installed, size_t len,
                  char *why, size_t why_len)
{
    static unsigned char buf[COPY_CHUNK];
    char name[NAME_MAX + 1], tmp[NAME_MAX + 1];
    const char *dot = strrchr(base, '.');
    uint64_t h = 14695981039346656037ull;
    int in, dfd, out, rc = -1;
    ssize_t n;

    if (!ph_inroot_plain_name(base) || strlen(base) > 200)
        return inroot_fail(why, why_len, "`%s`: not a plain file name", base);
    if ((in = open(src, O_RDONLY | O_CLOEXEC)) < 0)
        return inroot_fail(why, why_len, "%s: %s", src, strerror(errno));
    while ((n = read(in, buf, sizeof buf)) > 0)
        h = fnv1a(h, buf, (size_t)n);
    if (n < 0 || lseek(in, 0, SEEK_SET) < 0) {
        inroot_fail(why, why_len, "read %s: %s", src, strerror(errno));
        close(in);
        return -1;
    }
    if (dot == NULL || dot == base)
        dot = base + strlen(base);
    snprintf(name, sizeof name, "%.*s-%016" PRIx64 "%s", (int)(dot - base), base, h, dot);
    snprintf(tmp, sizeof tmp, ".%s.new", name);
    if (snprintf(installed, len, "%s/%s", dir, name) >= (int)len) {
        close(in);
        return inroot_fail(why, why_len, "%s/%s: path too long", dir, name);
    }
    if ((dfd = ph_inroot_open(root, dir, O_DIRECTORY | O_RDONLY, 0)) < 0) {
        inroot_fail(why, why_len, "%s in the service's root: %s", dir, strerror(errno));
        close(in);
        return -1;
    }
    /* one there already, ours by its content: kept (a JVM may map it) */
    if ((out = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) >= 0) {
        struct stat st;
        int same = fstat(out, &st) == 0 && S_ISREG(st.st_mode) && same_content(in, out);

        close(out);
        if (same) {
            rc = 0;
            goto out;
        }
        if (lseek(in, 0, SEEK_SET) < 0) {
            inroot_fail(why, why_len, "read %s: %s", src, strerror(errno));
            goto out;
        }
    }
    (void)unlinkat(dfd, tmp, 0); /* a last try's, or anything there: never followed */
    if ((out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0) {
        inroot_fail(why, why_len, "create %s/%s in the service's root: %s", dir, tmp, strerror(errno));
        goto out;
    }
    if (copy_fd(in, out, UINT64_MAX) < 0 || fchmod(out, 0644) < 0 || close(out) < 0) {
        inroot_fail(why, why_len, "write %s/%s in the service's root: %s", dir, tmp, strerror(errno));
        (void)unlinkat(dfd, tmp, 0);
        goto out;
    }
    if (renameat(dfd, tmp, dfd, name) < 0) {
        inroot_fail(why, why_len, "rename %s/%s in the service's root: %s", dir, tmp, strerror(errno));
        (void)unlinkat(dfd, tmp, 0);
        goto out;
    }
    rc = 0;
out:
    close(dfd);
    close(in);
    return rc;
}

/* Open ENTRY of DFD for reading if it is a regular file, without opening
 * it before that is known: an O_PATH descriptor is looked at first (no
 * open of a FIFO or a device the service's user put there, no symlink
 * followed), then reopened through /proc/self/fd, the same inode.  A
 * descriptor, or -1 (errno) and *ST for what it was. */
static int
open_regular(int dfd, const char *entry, struct stat *st)
{
    char self[64];
    int p = openat(dfd, entry, O_PATH | O_NOFOLLOW | O_CLOEXEC), fd;

    if (p < 0)
        return -1;
    if (fstat(p, st) < 0 || !S_ISREG(st->st_mode)) {
        close(p);
        errno = EINVAL;
        return -1;
    }
    snprintf(self, sizeof self, "/proc/self/fd/%d", p);
    fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    close(p);
    return fd;
}

int
ph_inroot_sampler_name(const char *name)
{
    static const char *const ends[] = { ".folded", ".svg", ".pb.gz", ".json" };
    size_t n = strlen(name);

    if (!ph_inroot_plain_name(name) || !((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z')))
        return 0;
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        if (n > strlen(ends[i]) && strcmp(name + n - strlen(ends[i]), ends[i]) == 0)
            return 1;
    return 0;
}

/* Copy (when OUT >= 0) and remove the entries of DFD but directories, at
 * most PH_INROOT_TAKE_ENTRIES of them (the rest left, said); the counts
 * into *T, and one line on stderr for what was not taken.  0, or -1
 * with WHY. */
static int
drain(int dfd, const char *dir, int out, uint64_t max, ph_inroot_taken *t, char *why, size_t why_len)
{
    unsigned odd = 0, unnamed = 0, holes = 0, over = 0, seen = 0;
    int lfd = dup(dfd);
    DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
    struct dirent *e;

    if (d == NULL) {
        if (lfd >= 0)
            close(lfd);
        return inroot_fail(why, why_len, "read %s in the service's root: %s", dir, strerror(errno));
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        int fd;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (++seen > PH_INROOT_TAKE_ENTRIES) {
            t->left = 1;
            break;
        }
        if (out < 0) {
            /* nothing to take */
        } else if (!ph_inroot_sampler_name(e->d_name)) {
            unnamed++;
        } else if ((fd = open_regular(dfd, e->d_name, &st)) < 0) {
            odd++;
        } else if (st.st_size > SPARSE_MIN && (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size / 2) {
            close(fd);
            holes++;
        } else if (t->files + t->truncated >= PH_INROOT_TAKE_FILES) {
            close(fd);
            over++;
        } else {
            int o = openat(out, e->d_name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
            uint64_t left = max > t->bytes ? max - t->bytes : 0;
            int64_t got = o < 0 ? -1 : copy_fd(fd, o, left);

            close(fd);
            if (o >= 0 && close(o) < 0)
                got = -1;
            if (got < 0) {
                closedir(d);
                return inroot_fail(why, why_len, "copy %s/%s: %s", dir, e->d_name, strerror(errno));
            }
            t->bytes += (uint64_t)got;
            if ((uint64_t)got < (uint64_t)st.st_size) {
                t->truncated++;
                fprintf(stderr, "ph-jattach: %s/%s cut at %" PRId64 " of its %jd bytes: the run's files "
                        "would pass %" PRIu64 " bytes\n", dir, e->d_name, got, (intmax_t)st.st_size, max);
            } else {
                t->files++;
            }
        }
        if (unlinkat(dfd, e->d_name, 0) < 0 && errno != EISDIR && errno != EPERM && errno != ENOENT)
            fprintf(stderr, "ph-jattach: could not remove an entry of %s: %s\n", dir, strerror(errno));
    }
    closedir(d);
    t->skipped += odd + unnamed + holes + over;
    if (odd + unnamed + holes + over > 0) {
        char said[512] = "";
        size_t n = 0;

        if (odd)
            n += (size_t)snprintf(said + n, sizeof said - n, ", %u not regular files", odd);
        if (unnamed && n < sizeof said)
            n += (size_t)snprintf(said + n, sizeof said - n, ", %u not named as the sampler names its files",
                                  unnamed);
        if (holes && n < sizeof said)
            n += (size_t)snprintf(said + n, sizeof said - n, ", %u mostly holes", holes);
        if (over && n < sizeof said)
            snprintf(said + n, sizeof said - n, ", %u past the %u files a run takes", over, PH_INROOT_TAKE_FILES);
        fprintf(stderr, "ph-jattach: not taken from %s:%s\n", dir, said + 1);
    }
    if (t->left)
        fprintf(stderr, "ph-jattach: %s holds more than %u entries: the rest left there, unread\n", dir,
                PH_INROOT_TAKE_ENTRIES);
    return 0;
}

/* Take away DIR (NAME in PFD) and its plain entries, copying them into
 * OUT when OUT >= 0.  A missing DIR is nothing to do. */
static int
take_at(int pfd, const char *name, const char *dir, int out, uint64_t max, ph_inroot_taken *t, char *why,
        size_t why_len)
{
    int dfd = openat(pfd, name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    if (dfd < 0 && errno == ENOENT)
        return 0;
    if (dfd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
        if (unlinkat(pfd, name, 0) < 0)
            return inroot_fail(why, why_len, "remove %s in the service's root: %s", dir, strerror(errno));
        return 0;
    }
    if (dfd < 0)
        return inroot_fail(why, why_len, "%s in the service's root: %s", dir, strerror(errno));
    if (drain(dfd, dir, out, max, t, why, why_len) < 0) {
        close(dfd);
        return -1;
    }
    close(dfd);
    if (unlinkat(pfd, name, AT_REMOVEDIR) < 0)
        fprintf(stderr, "ph-jattach: %s left in the service's container: %s\n", dir, strerror(errno));
    return 0;
}

int
ph_inroot_mkout(int root, const char *dir, uid_t uid, gid_t gid, char *why, size_t why_len)
{
    char name[NAME_MAX + 1];
    ph_inroot_taken t = { 0 };
    int pfd = open_parent(root, dir, name, sizeof name, why, why_len), fd, rc = -1;

    if (pfd < 0)
        return -1;
    if (take_at(pfd, name, dir, -1, 0, &t, why, why_len) < 0)
        goto out;
    if (mkdirat(pfd, name, 0700) < 0) {
        inroot_fail(why, why_len, "make %s in the service's root: %s", dir, strerror(errno));
        goto out;
    }
    if ((fd = openat(pfd, name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        inroot_fail(why, why_len, "%s in the service's root: %s", dir, strerror(errno));
        goto out;
    }
    if (fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0)
        inroot_fail(why, why_len, "give %s to %u:%u: %s", dir, (unsigned)uid, (unsigned)gid, strerror(errno));
    else
        rc = 0;
    close(fd);
out:
    close(pfd);
    return rc;
}

int
ph_inroot_take(int root, const char *dir, const char *out, uint64_t max, ph_inroot_taken *taken, char *why,
               size_t why_len)
{
    char name[NAME_MAX + 1];
    ph_inroot_taken t = { 0 };
    int pfd, ofd, rc;

    if (mkdir(out, 0755) < 0 && errno != EEXIST)
        return inroot_fail(why, why_len, "make %s: %s", out, strerror(errno));
    if ((ofd = open(out, O_DIRECTORY | O_RDONLY | O_CLOEXEC)) < 0)
        return inroot_fail(why, why_len, "%s: %s", out, strerror(errno));
    if ((pfd = open_parent(root, dir, name, sizeof name, why, why_len)) < 0) {
        close(ofd);
        return -1;
    }
    rc = take_at(pfd, name, dir, ofd, max, &t, why, why_len);
    close(pfd);
    close(ofd);
    if (taken != NULL)
        *taken = t;
    return rc;
}

/* Is the maps line LINE's file (after its five fields) a sampler library?
 * Its path into *PATH, its length into *N, whether it is deleted into
 * *GONE. */
static int
sampler_mapping(char *line, const char **path, size_t *n, int *gone)
{
    static const char deleted[] = " (deleted)";
    const char *base;
    char *p = line;
    size_t len;

    for (int f = 0; f < 5; f++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
    }
    while (*p == ' ')
        p++;
    len = strcspn(p, "\n");
    p[len] = '\0';
    *gone = len > sizeof deleted - 1 && strcmp(p + len - (sizeof deleted - 1), deleted) == 0;
    if (*gone)
        len -= sizeof deleted - 1;
    p[len] = '\0';
    if (*p != '/' || len < 3 || strcmp(p + len - 3, ".so") != 0)
        return 0;
    base = strrchr(p, '/') + 1;
    if (strncmp(base, "libphsampler", 12) != 0)
        return 0;
    *path = p;
    *n = len;
    return 1;
}

int
ph_inroot_sampler_mapped(FILE *maps, const char *installed, char *other, size_t other_len)
{
    char line[PATH_MAX + 256];
    int rc = 0;

    if (other_len > 0)
        other[0] = '\0';
    while (fgets(line, sizeof line, maps) != NULL) {
        const char *path;
        size_t n, o = 0;
        int gone;

        if (strchr(line, '\n') == NULL && !feof(maps)) {
            int c;

            while ((c = fgetc(maps)) != EOF && c != '\n')
                ; /* a longer line than a path: not one of ours */
        }
        if (!sampler_mapping(line, &path, &n, &gone))
            continue;
        if (!gone && strcmp(path, installed) == 0) {
            rc = rc < 0 ? rc : 1;
            continue;
        }
        for (size_t i = 0; i < n && o + 1 < other_len; i++) {
            char c = path[i];

            other[o++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                                 c == '.' || c == '_' || c == '-'
                             ? c
                             : '?';
        }
        if (other_len > 0)
            other[o < other_len ? o : other_len - 1] = '\0';
        if (gone && o + 11 < other_len)
            strcat(other, " (deleted)");
        return -1;
    }
    return rc;
}

int
ph_inroot_copy_mapped(int root, const char *path, const char *dest, uint64_t left, uint64_t *size, char *why,
                      size_t why_len)
{
    static const unsigned char elf[4] = { 0x7f, 'E', 'L', 'F' };
    unsigned char magic[4] = { 0 };
    char self[64];
    struct stat st;
    int p = ph_inroot_open(root, path, O_PATH | O_NOFOLLOW, 0), fd = -1, out = -1, rc = -1;
    int64_t got;

    if (p < 0 && errno == ENOENT) { /* gone since its maps were read: nothing to say */
        if (why_len > 0)
            why[0] = '\0';
        return 0;
    }
    if (p < 0)
        return inroot_fail(why, why_len, "%s in the service's root: %s", path, strerror(errno));
    if (fstat(p, &st) < 0) {
        inroot_fail(why, why_len, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = 0;
        inroot_fail(why, why_len, "not a regular file");
        goto out;
    }
    snprintf(self, sizeof self, "/proc/self/fd/%d", p);
    if ((fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0) {
        inroot_fail(why, why_len, "open %s in the service's root: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
    if (pread(fd, magic, sizeof magic, 0) != (ssize_t)sizeof magic || memcmp(magic, elf, sizeof elf) != 0) {
        inroot_fail(why, why_len, "not ELF: perf reads no symbols from it");
        goto out;
    }
    if ((uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size / 2) {
        inroot_fail(why, why_len, "%jd bytes, %jd of them on disk: a sparse file", (intmax_t)st.st_size,
                    (intmax_t)st.st_blocks * 512);
        goto out;
    }
    if ((uint64_t)st.st_size > left) {
        inroot_fail(why, why_len, "%jd bytes: the copies would pass the budget (--copy-max)", (intmax_t)st.st_size);
        goto out;
    }
    rc = -1;
    if ((out = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0) {
        inroot_fail(why, why_len, "create %s: %s", dest, strerror(errno));
        goto out;
    }
    /* what it holds now, within the size it had: a file that grew is cut */
    got = copy_fd(fd, out, (uint64_t)st.st_size);
    if (close(out) < 0 || got < 0) {
        inroot_fail(why, why_len, "copy %s to %s: %s", path, dest, strerror(errno));
        (void)unlink(dest);
        out = -1;
        goto out;
    }
    out = -1;
    *size = (uint64_t)got;
    rc = 1;
out:
    if (out >= 0)
        close(out);
    if (fd >= 0)
        close(fd);
    close(p);
    return rc;
}
