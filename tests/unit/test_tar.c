/* test_tar.c - the tar module.  Extraction: hostile archives, built here
 * with libarchive's writer, lose every entry that could escape or plant
 * something (absolute names, `..`, escaping symlink chains, hard links out
 * or to refused entries, devices, FIFOs), keep exact modes and mtimes,
 * stream in random chunks and in bounded memory, and report truncation.
 * Build contexts: .dockerignore rules, sorted and byte-identical output,
 * the size limit. */
#include "test_util.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <dirent.h>
#include <inttypes.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ph_log.h"
#include "ph_tar.h"
#include "ph_util.h"

/* ---- writing test archives ------------------------------------------- */

/* gcc says __SANITIZE_ADDRESS__; clang 14 only __has_feature. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_HAS_ASAN 1
#endif
#endif
#ifndef TEST_HAS_ASAN
#define TEST_HAS_ASAN 0
#endif

typedef struct tarbuf {
    char *data;
    size_t len, cap;
    int closed; /* writes fail: the stream was cut */
} tarbuf;

static la_ssize_t
tb_write(struct archive *a, void *ud, const void *buf, size_t n)
{
    tarbuf *t = ud;

    (void)a;
    if (t->closed)
        return -1;
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2;
        t->data = realloc(t->data, t->cap);
        assert_non_null(t->data);
    }
    memcpy(t->data + t->len, buf, n);
    t->len += n;
    return (la_ssize_t)n;
}

/* An archive into T, unpadded: its length is its members plus the
 * 1024-byte end-of-archive marker.  Unblocked, each member is in T as
 * soon as it is written (for streams cut at a member's end). */
static struct archive *
tb_open_blocking(tarbuf *t, int unblocked)
{
    struct archive *a = archive_write_new();

    memset(t, 0, sizeof *t);
    archive_write_set_format_pax_restricted(a);
    if (unblocked)
        archive_write_set_bytes_per_block(a, 0);
    archive_write_set_bytes_in_last_block(a, 1);
    assert_int_equal(archive_write_open(a, t, NULL, tb_write, NULL), ARCHIVE_OK);
    return a;
}

static struct archive *
tb_open(tarbuf *t)
{
    return tb_open_blocking(t, 0);
}

static void
tb_close(struct archive *a)
{
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* N zero bytes after the archive, as tar's record padding. */
static void
tb_pad(tarbuf *t, size_t n)
{
    t->data = realloc(t->data, t->len + n);
    assert_non_null(t->data);
    memset(t->data + t->len, 0, n);
    t->len += n;
}

/* One member.  LINK is the symlink target for AE_IFLNK, else a hard link
 * target when non-NULL.  MTIME 0 leaves it unset. */
static void
tb_add_full(struct archive *a, const char *name, unsigned type, unsigned perm, const void *content, size_t len,
            const char *link, time_t mtime)
{
    struct archive_entry *e = archive_entry_new();

    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm);
    if (mtime)
        archive_entry_set_mtime(e, mtime, 0);
    if (link && type == AE_IFLNK)
        archive_entry_set_symlink(e, link);
    else if (link)
        archive_entry_set_hardlink(e, link);
    archive_entry_set_size(e, content && type == AE_IFREG ? (la_int64_t)len : 0);
    if (type == AE_IFCHR || type == AE_IFBLK)
        archive_entry_set_rdev(e, makedev(1, 3));
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    if (content && type == AE_IFREG)
        assert_int_equal(archive_write_data(a, content, len), (la_ssize_t)len);
    archive_entry_free(e);
}

static void
tb_add(struct archive *a, const char *name, unsigned type, unsigned perm, const char *content, const char *link)
{
    tb_add_full(a, name, type, perm, content, content ? strlen(content) : 0, link, 0);
}

/* ---- fixtures and checks ---------------------------------------------- */

static char dest[300];

static int
setup(void **state)
{
    (void)state;
    tu_mkdtemp();
    snprintf(dest, sizeof dest, "%s/dest", test_dir);
    assert_int_equal(mkdir(dest, 0755), 0);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    tu_rmdir();
    return 0;
}

/* dest/REL (static buffer, two in rotation). */
static const char *
dpath(const char *rel)
{
    static char buf[2][600];
    static int i;

    i ^= 1;
    snprintf(buf[i], sizeof buf[i], "%s/%s", dest, rel);
    return buf[i];
}

static int
exists_in(const char *rel)
{
    struct stat st;

    return lstat(dpath(rel), &st) == 0;
}

static mode_t
lmode_of(const char *rel)
{
    struct stat st;

    assert_int_equal(lstat(dpath(rel), &st), 0);
    return st.st_mode;
}

/* Contents of dest/REL, NUL-terminated (static buffer). */
static const char *
contents(const char *rel)
{
    static char buf[4096];
    FILE *f = fopen(dpath(rel), "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static uint64_t
fnv64(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#define FNV64_INIT 14695981039346656037ull

static uint64_t
file_fnv64(const char *path, uint64_t *size)
{
    char buf[65536];
    uint64_t h = FNV64_INIT;
    size_t n;
    FILE *f = fopen(path, "r");

    assert_non_null(f);
    *size = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        h = fnv64(h, buf, n);
        *size += n;
    }
    fclose(f);
    return h;
}

static int
extract(const tarbuf *t, int strip, ph_tar_stats *st, ph_error_t *err)
{
    int rc;

    tu_capture_begin();
    rc = ph_tar_extract_buffer(t->data, t->len, dest, strip, NULL, st, err);
    tu_capture_end();
    return rc;
}

/* Every symlink under dest that resolves at all resolves inside dest. */
static char real_dest[PATH_MAX];

static int
check_link_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    char real[PATH_MAX];

    (void)ftw;
    if (flag == FTW_SL && realpath(path, real) != NULL) {
        size_t n = strlen(real_dest);

        if (strncmp(real, real_dest, n) != 0 || (real[n] != '/' && real[n] != '\0'))
            fail_msg("`%s` resolves to `%s`, outside `%s`", path, real, real_dest);
    }
    (void)sb;
    return 0;
}

static void
assert_links_stay_inside(void)
{
    assert_non_null(realpath(dest, real_dest));
    assert_int_equal(nftw(dest, check_link_cb, 16, FTW_PHYS), 0);
}

/* ---- extraction: safety ---------------------------------------------- */

static void
test_hostile_entries_refused(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    const char *log;
    struct stat sb;
    char p[600];

    (void)state;
    tb_add(a, "run/", AE_IFDIR, 0755, NULL, NULL);
    tb_add(a, "run/good.log", AE_IFREG, 0600, "hello\n", NULL);
    tb_add(a, "run/tool", AE_IFREG, 04755, "#!/bin/sh\n", NULL);
    tb_add(a, "run/sgid", AE_IFREG, 02710, "x", NULL);
    tb_add(a, "run/stickydir/", AE_IFDIR, 01777, NULL, NULL);
    tb_add(a, "run/privdir/", AE_IFDIR, 0700, NULL, NULL);
    tb_add(a, "/etc/ph-absolute", AE_IFREG, 0644, "x", NULL);
    tb_add(a, "run/../escaped", AE_IFREG, 0644, "x", NULL);
    tb_add(a, "run/a/../../x", AE_IFREG, 0644, "x", NULL);
    tb_add(a, "../escaped2", AE_IFREG, 0644, "x", NULL);
    tb_add(a, "run/link", AE_IFLNK, 0777, NULL, "/etc");
    tb_add(a, "run/link/passwd", AE_IFREG, 0644, "through the link", NULL);
    tb_add(a, "run/up", AE_IFLNK, 0777, NULL, "../..");
    tb_add(a, "run/ok-link", AE_IFLNK, 0777, NULL, "good.log");
    tb_add(a, "run/hard", AE_IFREG, 0644, NULL, "/etc/passwd");
    tb_add(a, "run/dev", AE_IFCHR, 0644, NULL, NULL);
    tb_add(a, "run/blk", AE_IFBLK, 0644, NULL, NULL);
    tb_add(a, "run/fifo", AE_IFIFO, 0644, NULL, NULL);
    tb_close(a);

    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, NULL, &st, &err), 0);
    log = tu_capture_end();
    assert_null(err);
    assert_int_equal(st.files, 4);  /* good.log tool sgid link/passwd */
    assert_int_equal(st.dirs, 2);   /* stickydir privdir */
    assert_int_equal(st.links, 1);  /* ok-link */
    assert_int_equal(st.refused, 10);
    /* Each refusal names its entry. */
    assert_non_null(strstr(log, "`/etc/ph-absolute`"));
    assert_non_null(strstr(log, "`run/a/../../x`"));
    assert_non_null(strstr(log, "`run/link`"));
    assert_non_null(strstr(log, "`run/hard`"));
    assert_non_null(strstr(log, "`run/fifo`"));

    assert_string_equal(contents("good.log"), "hello\n");
    assert_string_equal(contents("ok-link"), "hello\n");
    assert_true(S_ISLNK(lmode_of("ok-link")));
    /* The escaping link was refused, so `link/passwd` is a plain path
     * inside the destination: a directory, never a symlink to /etc. */
    assert_true(S_ISDIR(lmode_of("link")));
    assert_string_equal(contents("link/passwd"), "through the link");
    assert_false(exists_in("up"));
    assert_false(exists_in("hard"));
    assert_false(exists_in("dev"));
    assert_false(exists_in("blk"));
    assert_false(exists_in("fifo"));
    assert_false(exists_in("etc"));
    assert_false(exists_in("x"));
    assert_int_equal(lstat("/etc/ph-absolute", &sb), -1);
    snprintf(p, sizeof p, "%s/escaped", test_dir);
    assert_int_equal(lstat(p, &sb), -1);
    snprintf(p, sizeof p, "%s/escaped2", test_dir);
    assert_int_equal(lstat(p, &sb), -1);
    snprintf(p, sizeof p, "%s/x", test_dir);
    assert_int_equal(lstat(p, &sb), -1);

    /* Modes: 0600 readable, set-id bits gone, directories 0755; our owner. */
    assert_int_equal(lmode_of("good.log") & 07777, 0644);
    assert_int_equal(lmode_of("tool") & 07777, 0755);
    assert_int_equal(lmode_of("sgid") & 07777, 0755);
    assert_int_equal(lmode_of("stickydir") & 07777, 0755);
    assert_int_equal(lmode_of("privdir") & 07777, 0755);
    assert_int_equal(stat(dpath("good.log"), &sb), 0);
    assert_int_equal(sb.st_uid, getuid());
    assert_links_stay_inside();
    free(t.data);
}

/* Symlinks that stay inside one by one but escape together. */
static void
test_symlink_chains(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    char buf[64];
    ssize_t n;

    (void)state;
    tb_add(a, "run/sub/", AE_IFDIR, 0755, NULL, NULL);
    tb_add(a, "run/sub/x", AE_IFLNK, 0777, NULL, "..");           /* dest itself: fine */
    tb_add(a, "run/sub/y", AE_IFLNK, 0777, NULL, "x/..");         /* x is dest: dest/.. */
    tb_add(a, "run/l2", AE_IFLNK, 0777, NULL, ".");               /* fine */
    tb_add(a, "run/l1", AE_IFLNK, 0777, NULL, "l2/l2/..");        /* lexically inside */
    tb_add(a, "run/a/b/deep", AE_IFLNK, 0777, NULL, "../../good"); /* fine, dangling */
    tb_add(a, "run/a/b/tooup", AE_IFLNK, 0777, NULL, "../../../x");
    tb_add(a, "run/a/b/c", AE_IFLNK, 0777, NULL, "../b/../../..");
    tb_add(a, "run/a/b/abs", AE_IFLNK, 0777, NULL, "/tmp");
    tb_add(a, "run/l2/through.txt", AE_IFREG, 0644, "x", NULL);   /* parent is a link */
    tb_close(a);

    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_int_equal(st.links, 3);
    assert_int_equal(st.refused, 6);
    assert_true(S_ISLNK(lmode_of("sub/x")));
    assert_true(S_ISLNK(lmode_of("l2")));
    n = readlink(dpath("a/b/deep"), buf, sizeof buf - 1);
    assert_int_equal(n, 10);
    buf[n] = '\0';
    assert_string_equal(buf, "../../good");
    assert_false(exists_in("sub/y"));
    assert_false(exists_in("l1"));
    assert_false(exists_in("a/b/tooup"));
    assert_false(exists_in("a/b/c"));
    assert_false(exists_in("a/b/abs"));
    assert_false(exists_in("through.txt"));
    assert_links_stay_inside();
    free(t.data);
}

static void
test_hardlinks(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    struct stat s1, s2;

    (void)state;
    tb_add(a, "run/data.txt", AE_IFREG, 0644, "shared", NULL);
    tb_add(a, "run/sub/same", AE_IFREG, 0644, NULL, "run/data.txt");
    tb_add(a, "run/passwd", AE_IFREG, 0644, NULL, "/etc/passwd");
    tb_add(a, "run/esc", AE_IFREG, 0644, NULL, "run/../../x");
    tb_add(a, "run/dev", AE_IFCHR, 0644, NULL, NULL);
    tb_add(a, "run/to-dev", AE_IFREG, 0644, NULL, "run/dev");
    tb_add(a, "run/sym", AE_IFLNK, 0777, NULL, "data.txt");
    tb_add(a, "run/to-sym", AE_IFREG, 0644, NULL, "run/sym");
    tb_add(a, "run/to-missing", AE_IFREG, 0644, NULL, "run/nothing");
    /* A good file, then a refused entry of the same name: a hard link to
     * that name is refused although a regular file is there. */
    tb_add(a, "run/dup", AE_IFREG, 0644, "first", NULL);
    tb_add(a, "run/dup", AE_IFIFO, 0644, NULL, NULL);
    tb_add(a, "run/to-dup", AE_IFREG, 0644, NULL, "run/dup");
    tb_close(a);

    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_int_equal(st.files, 2);  /* data.txt dup */
    assert_int_equal(st.links, 2);  /* sub/same sym */
    assert_int_equal(st.refused, 8);
    assert_int_equal(stat(dpath("data.txt"), &s1), 0);
    assert_int_equal(lstat(dpath("sub/same"), &s2), 0);
    assert_true(S_ISREG(s2.st_mode));
    assert_true(s1.st_ino == s2.st_ino);
    assert_string_equal(contents("sub/same"), "shared");
    assert_string_equal(contents("dup"), "first");
    assert_false(exists_in("passwd"));
    assert_false(exists_in("esc"));
    assert_false(exists_in("to-dev"));
    assert_false(exists_in("to-sym"));
    assert_false(exists_in("to-missing"));
    assert_false(exists_in("to-dup"));
    free(t.data);
}

static void
test_existing_symlink_not_followed(void **state)
{
    tarbuf t;
    struct archive *a;
    ph_tar_stats st;
    ph_error_t err = NULL;
    char target[600], p[600];
    struct stat sb;

    (void)state;
    /* Links planted in the destination must not be written through. */
    snprintf(target, sizeof target, "%s/victim", test_dir);
    assert_int_equal(symlink(target, dpath("planted")), 0);
    assert_int_equal(symlink(test_dir, dpath("dirlink")), 0);
    a = tb_open(&t);
    tb_add(a, "run/planted", AE_IFREG, 0644, "data", NULL);
    tb_add(a, "run/dirlink/victim2", AE_IFREG, 0644, "data", NULL);
    tb_add(a, "run/dirlink/", AE_IFDIR, 0755, NULL, NULL);
    tb_close(a);
    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_int_equal(lstat(target, &sb), -1);
    snprintf(p, sizeof p, "%s/victim2", test_dir);
    assert_int_equal(lstat(p, &sb), -1);
    assert_true(S_ISREG(lmode_of("planted"))); /* replaced by a plain file */
    assert_string_equal(contents("planted"), "data");
    assert_true(S_ISLNK(lmode_of("dirlink")));
    assert_int_equal(st.refused, 2);
    assert_int_equal(st.files, 1);
    free(t.data);
}

/* ---- extraction: modes, times, strip --------------------------------- */

static void
test_modes_and_mtimes(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    struct stat sb;
    mode_t old;

    (void)state;
    tb_add_full(a, "run/d/", AE_IFDIR, 0700, NULL, 0, NULL, 1200000000);
    tb_add_full(a, "run/d/f", AE_IFREG, 0400, "ro", 2, NULL, 1000000000);
    tb_add_full(a, "run/d/x", AE_IFREG, 0100, "exec", 4, NULL, 1100000000);
    tb_add_full(a, "run/d/l", AE_IFLNK, 0777, NULL, 0, "f", 1300000000);
    tb_add_full(a, "run/there/", AE_IFDIR, 0755, NULL, 0, NULL, 0);
    tb_close(a);
    assert_int_equal(mkdir(dpath("there"), 0700), 0); /* there before, with other bits */
    old = umask(077); /* modes must not depend on the caller's umask */
    assert_int_equal(extract(&t, 1, &st, &err), 0);
    umask(old);
    assert_int_equal(stat(dpath("d"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0755);
    assert_int_equal(sb.st_mtime, 1200000000); /* despite the files written after it */
    assert_int_equal(stat(dpath("d/f"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0644);
    assert_int_equal(sb.st_mtime, 1000000000);
    assert_int_equal(sb.st_uid, getuid());
    assert_int_equal(stat(dpath("d/x"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0755);
    assert_int_equal(sb.st_mtime, 1100000000);
    assert_int_equal(lstat(dpath("d/l"), &sb), 0);
    assert_int_equal(sb.st_mtime, 1300000000);
    assert_int_equal(lmode_of("there") & 07777, 0755);
    free(t.data);
    /* The same under the usual umask, where created files need no fchmod:
     * a directory that was there keeps needing it. */
    a = tb_open(&t);
    tb_add(a, "run/there2/", AE_IFDIR, 0755, NULL, NULL);
    tb_close(a);
    assert_int_equal(mkdir(dpath("there2"), 0700), 0);
    old = umask(022);
    assert_int_equal(extract(&t, 1, &st, &err), 0);
    umask(old);
    assert_int_equal(lmode_of("there2") & 07777, 0755);
    free(t.data);
}

static void
test_strip(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;

    (void)state;
    tb_add(a, "run/", AE_IFDIR, 0755, NULL, NULL);
    tb_add(a, "run/top.txt", AE_IFREG, 0644, "top", NULL);
    tb_add(a, "run/d/inner.txt", AE_IFREG, 0644, "inner", NULL);
    tb_add(a, "./run//dot.txt", AE_IFREG, 0644, "dot", NULL);
    tb_add(a, "single.txt", AE_IFREG, 0644, "single", NULL);
    tb_close(a);

    assert_int_equal(extract(&t, 0, &st, &err), 0);
    assert_int_equal(st.files, 4);
    assert_string_equal(contents("run/top.txt"), "top");
    assert_string_equal(contents("run/d/inner.txt"), "inner");
    assert_string_equal(contents("run/dot.txt"), "dot");
    assert_string_equal(contents("single.txt"), "single");
    tu_rmdir();
    setup(NULL);

    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_int_equal(st.files, 3);
    assert_int_equal(st.refused, 0); /* too short a name is skipped, not refused */
    assert_string_equal(contents("top.txt"), "top");
    assert_string_equal(contents("d/inner.txt"), "inner");
    assert_string_equal(contents("dot.txt"), "dot");
    assert_false(exists_in("single.txt"));
    assert_false(exists_in("run"));
    tu_rmdir();
    setup(NULL);

    assert_int_equal(extract(&t, 2, &st, &err), 0);
    assert_int_equal(st.files, 1);
    assert_string_equal(contents("inner.txt"), "inner");
    assert_false(exists_in("top.txt"));
    assert_false(exists_in("d"));
    free(t.data);
}

/* ---- extraction: streaming -------------------------------------------- */

static void
test_streamed_in_small_chunks(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    size_t big_len = (3u << 20) + 12345, off = 0;
    unsigned char *big = malloc(big_len);
    unsigned seed = 7;
    uint64_t size, sum;

    (void)state;
    for (size_t i = 0; i < big_len; i++)
        big[i] = (unsigned char)rand_r(&seed);
    tb_add(a, "run/small-before", AE_IFREG, 0644, "a", NULL);
    tb_add_full(a, "run/big.out", AE_IFREG, 0644, big, big_len, NULL, 0);
    tb_add(a, "run/small-after", AE_IFREG, 0644, "b", NULL);
    tb_close(a);
    x = ph_tar_extract_new(dest, 1, NULL, &err);
    assert_non_null(x);
    while (off < t.len) {
        size_t n = 1 + (size_t)(rand_r(&seed) % 7000);

        if (n > t.len - off)
            n = t.len - off;
        assert_int_equal(ph_tar_extract_feed(x, t.data + off, n, &err), 0);
        off += n;
    }
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    ph_tar_extract_free(x);
    assert_int_equal(st.files, 3);
    assert_true(st.bytes == big_len + 2);
    sum = file_fnv64(dpath("big.out"), &size);
    assert_true(size == big_len);
    assert_true(sum == fnv64(FNV64_INIT, big, big_len));
    assert_string_equal(contents("small-before"), "a");
    assert_string_equal(contents("small-after"), "b");
    free(big);
    free(t.data);
}

static long
vm_hwm_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* Bring VmHWM down to the current RSS, so earlier tests' peaks cannot
 * hide this one's (Linux >= 4.0). */
static void
vm_hwm_reset(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, "5", 1), 1);
    close(fd);
}

static la_ssize_t
feed_write_cb(struct archive *a, void *ud, const void *buf, size_t n)
{
    ph_error_t err = NULL;

    (void)a;
    if (ph_tar_extract_feed(ud, buf, n, &err) < 0) {
        fprintf(stderr, "feed: %s\n", err->msg);
        ph_error_free(&err);
        return -1;
    }
    return (la_ssize_t)n;
}

/* 200 MiB made on the fly by libarchive's writer, whose output goes
 * straight into the extractor: peak RSS must not follow the size. */
static void
test_bounded_memory(void **state)
{
    const la_int64_t size = 200ll << 20;
    static unsigned char chunk[65536];
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    uint64_t sum = FNV64_INIT, got_size, got_sum;
    long before, after;

    (void)state;
    vm_hwm_reset();
    before = vm_hwm_kb();
    x = ph_tar_extract_new(dest, 1, NULL, &err);
    assert_non_null(x);
    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open(a, x, NULL, feed_write_cb, NULL), ARCHIVE_OK);
    archive_entry_set_pathname(e, "run/huge.bin");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, size);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    archive_entry_free(e);
    /* Sparse-like: zeros with a counter at the start of each chunk. */
    for (la_int64_t done = 0, i = 0; done < size; done += (la_int64_t)sizeof chunk, i++) {
        memcpy(chunk, &i, sizeof i);
        sum = fnv64(sum, chunk, sizeof chunk);
        assert_int_equal(archive_write_data(a, chunk, sizeof chunk), (la_ssize_t)sizeof chunk);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    ph_tar_extract_free(x);
    after = vm_hwm_kb();
    print_message("# peak RSS growth for a %lld-byte archive: %ld kB\n", (long long)size, after - before);
    assert_true(before > 0);
    assert_true(st.bytes == (uint64_t)size);
    if (after - before > 32 * 1024)
        fail_msg("peak RSS grew by %ld kB for a %lld-byte archive", after - before, (long long)size);
    got_sum = file_fnv64(dpath("huge.bin"), &got_size);
    assert_true(got_size == (uint64_t)size);
    assert_true(got_sum == sum);
    unlink(dpath("huge.bin"));
}

/* ---- extraction: holes, shapes, names --------------------------------- */

/* A member of SIZE bytes streamed straight into X by libarchive's writer:
 * zeros, except the bytes ISLANDS[i] = i + 1 at offsets AT[i]. */
static void
stream_member(ph_tar_extract *x, const char *name, la_int64_t size, const la_int64_t *at, size_t n_at)
{
    static unsigned char chunk[65536];
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();

    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open(a, x, NULL, feed_write_cb, NULL), ARCHIVE_OK);
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, size);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    archive_entry_free(e);
    for (la_int64_t done = 0; done < size;) {
        size_t n = size - done < (la_int64_t)sizeof chunk ? (size_t)(size - done) : sizeof chunk;

        memset(chunk, 0, n);
        for (size_t i = 0; i < n_at; i++)
            if (at[i] >= done && at[i] < done + (la_int64_t)n)
                chunk[at[i] - done] = (unsigned char)(i + 1);
        assert_int_equal(archive_write_data(a, chunk, n), (la_ssize_t)n);
        done += (la_int64_t)n;
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* A container's `truncate -s 1G` file arrives as 1 GiB of zeros (the
 * Engine streams holes as zeros): on the host it must stay a hole, not
 * take a gigabyte of disk, and read back byte for byte. */
static void
test_zeros_stay_holes(void **state)
{
    const la_int64_t size = 1ll << 30;
    const la_int64_t at[] = { 0, 4095, 4096, 65535, 65536 + 511, size / 2, size - 1 };
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    struct stat sb;
    unsigned char b;
    int fd;

    (void)state;
    x = ph_tar_extract_new(dest, 1, NULL, &err);
    assert_non_null(x);
    stream_member(x, "run/big", size, at, PH_ARRAY_LEN(at));
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    ph_tar_extract_free(x);
    assert_int_equal(stat(dpath("big"), &sb), 0);
    assert_true(sb.st_size == size);
    print_message("# a 1 GiB member of zeros with %zu bytes set: %lld blocks of 512 bytes\n", PH_ARRAY_LEN(at),
                  (long long)sb.st_blocks);
    /* Each set byte costs at most one filesystem block (4 KiB here). */
    if (sb.st_blocks > 8 * (long long)PH_ARRAY_LEN(at))
        fail_msg("%lld blocks used: the zeros were written", (long long)sb.st_blocks);
    fd = open(dpath("big"), O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    for (size_t i = 0; i < PH_ARRAY_LEN(at); i++) {
        assert_int_equal(pread(fd, &b, 1, at[i]), 1);
        assert_int_equal(b, i + 1);
        if (at[i] > 0) {
            assert_int_equal(pread(fd, &b, 1, at[i] - 1), 1);
            assert_int_equal(b, at[i] - 1 == at[i - 1] ? i : 0);
        }
    }
    close(fd);
    unlink(dpath("big"));
}

/* Zeros that end a member, and a member of zeros only: the size is exact. */
static void
test_trailing_zeros_keep_size(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    static char zeros[300000], tail_zero[200000];
    ph_tar_stats st;
    ph_error_t err = NULL;
    struct stat sb;
    uint64_t size, sum;

    (void)state;
    memset(tail_zero, 'x', 1000);
    tb_add_full(a, "run/zeros", AE_IFREG, 0644, zeros, sizeof zeros, NULL, 0);
    tb_add_full(a, "run/tail", AE_IFREG, 0644, tail_zero, sizeof tail_zero, NULL, 0);
    tb_close(a);
    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_int_equal(stat(dpath("zeros"), &sb), 0);
    assert_int_equal(sb.st_size, sizeof zeros);
    sum = file_fnv64(dpath("tail"), &size);
    assert_int_equal(size, sizeof tail_zero);
    assert_true(sum == fnv64(FNV64_INIT, tail_zero, sizeof tail_zero));
    assert_true(st.bytes == sizeof zeros + sizeof tail_zero);
    free(t.data);
}

/* A name of PATH_MAX - 1 bytes fits; one of PATH_MAX does not, and is
 * refused without writing past a buffer (run this under ASan too); so is
 * a component longer than NAME_MAX, and extraction goes on after both. */
static void
test_name_of_path_max(void **state)
{
    char name[PATH_MAX + 16], rel[PATH_MAX + 16];
    tarbuf t;
    struct archive *a;
    ph_tar_stats st;
    ph_error_t err = NULL;
    const char *log;
    size_t n = 0;
    int rc, dfd, fd;

    (void)state;
    /* 16 directories of 240 bytes and a file name of 239: 4095 bytes; one
     * more in the file name is PATH_MAX, every component within NAME_MAX. */
    for (int i = 0; i < 16; i++) {
        memset(rel + n, 'a' + i, 240);
        n += 240;
        rel[n++] = '/';
    }
    memset(rel + n, 'z', PATH_MAX - 1 - n);
    rel[PATH_MAX - 1] = '\0';
    assert_int_equal(strlen(rel) - n, 239);
    a = tb_open(&t);
    snprintf(name, sizeof name, "run/%s", rel);
    tb_add(a, name, AE_IFREG, 0644, "fits", NULL);
    snprintf(name, sizeof name, "run/%sZ", rel);
    tb_add(a, name, AE_IFREG, 0644, "one too many", NULL);
    memset(name, 'c', sizeof name);
    memcpy(name, "run/", 4);
    name[4 + NAME_MAX + 1] = '\0';
    tb_add(a, name, AE_IFREG, 0644, "component too long", NULL);
    tb_add(a, "run/after", AE_IFREG, 0644, "after", NULL);
    tb_close(a);
    tu_capture_begin();
    rc = ph_tar_extract_buffer(t.data, t.len, dest, 1, NULL, &st, &err);
    log = tu_capture_end();
    if (rc < 0)
        fail_msg("extraction failed: %s", err->msg);
    assert_int_equal(st.files, 2);
    assert_int_equal(st.refused, 2);
    assert_non_null(strstr(log, "name too long"));
    rel[PATH_MAX - 1] = 'Z';
    rel[PATH_MAX] = '\0';
    dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_int_equal(faccessat(dfd, rel, F_OK, AT_SYMLINK_NOFOLLOW), -1);
    close(dfd);
    rel[PATH_MAX - 1] = '\0';
    dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    fd = openat(dfd, rel, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, name, sizeof name), 4);
    assert_memory_equal(name, "fits", 4);
    close(fd);
    close(dfd);
    assert_string_equal(contents("after"), "after");
    free(t.data);
}

/* A regular file `d` after the directory `d/` is refused, the directory
 * and what is in it stay, and extraction goes on; so are entries under a
 * regular file. */
static void
test_file_over_directory(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    const char *log;

    (void)state;
    tb_add(a, "run/d/", AE_IFDIR, 0755, NULL, NULL);
    tb_add(a, "run/d/inner", AE_IFREG, 0644, "inner", NULL);
    tb_add(a, "run/d", AE_IFREG, 0644, "file over a directory", NULL);
    tb_add(a, "run/d", AE_IFLNK, 0777, NULL, "inner");
    tb_add(a, "run/f", AE_IFREG, 0644, "a file", NULL);
    tb_add(a, "run/f/under", AE_IFREG, 0644, "under a file", NULL);
    tb_add(a, "run/f/dir/", AE_IFDIR, 0755, NULL, NULL);
    tb_add(a, "run/after", AE_IFREG, 0644, "after", NULL);
    tb_close(a);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, NULL, &st, &err), 0);
    log = tu_capture_end();
    assert_null(err);
    assert_int_equal(st.refused, 4);
    assert_int_equal(st.files, 3);
    assert_string_equal(contents("f"), "a file");
    assert_non_null(strstr(log, "a directory is in the way"));
    assert_true(S_ISDIR(lmode_of("d")));
    assert_string_equal(contents("d/inner"), "inner");
    assert_string_equal(contents("after"), "after");
    free(t.data);
}

static int
highest_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int max = -1;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        if (atoi(de->d_name) > max)
            max = atoi(de->d_name);
    closedir(d);
    return max;
}

/* 2,000 nested directories, each with its entry and mtime, and files at
 * the bottom: extracted with a bounded number of fds (the soft limit is
 * lowered around it) and bounded memory, every mtime kept. */
static void
test_deep_tree(void **state)
{
    enum { DEPTH = 2000, FILES = 20 };
    static char name[PATH_MAX];
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    struct rlimit old, low;
    struct stat sb;
    long before, after;
    size_t n;
    int rc;

    (void)state;
    n = (size_t)snprintf(name, sizeof name, "run/");
    for (int i = 0; i < DEPTH; i++) {
        name[n++] = 'd';
        name[n++] = '/';
        name[n] = '\0';
        tb_add_full(a, name, AE_IFDIR, 0755, NULL, 0, NULL, 1000000000 + i);
    }
    for (int i = 0; i < FILES; i++) {
        snprintf(name + n, sizeof name - n, "f%02d", i);
        tb_add_full(a, name, AE_IFREG, 0644, "x", 1, NULL, 1500000000);
    }
    /* And back up to the top, into a sibling. */
    tb_add_full(a, "run/top", AE_IFREG, 0644, "top", 3, NULL, 1500000000);
    tb_close(a);

    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)highest_fd() + 1 + 80; /* 64 directories and a few more */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    vm_hwm_reset();
    before = vm_hwm_kb();
    rc = extract(&t, 1, &st, &err);
    after = vm_hwm_kb();
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    if (rc < 0)
        fail_msg("extraction failed: %s", err->msg);
    print_message("# peak RSS growth for %d nested directories: %ld kB\n", DEPTH, after - before);
    assert_int_equal(st.dirs, DEPTH);
    assert_int_equal(st.files, FILES + 1);
#if !defined(__SANITIZE_ADDRESS__) && !TEST_HAS_ASAN /* shadow memory and quarantine grow RSS */
    if (after - before > 1024)
        fail_msg("peak RSS grew by %ld kB for %d nested directories", after - before, DEPTH);
#endif
    /* Every directory's mtime, the deepest first. */
    {
        int fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        assert_true(fd >= 0);
        for (int i = 0; i < DEPTH; i++) {
            int next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            assert_true(next >= 0);
            close(fd);
            fd = next;
            assert_int_equal(fstat(fd, &sb), 0);
            if (sb.st_mtime != 1000000000 + i)
                fail_msg("level %d: mtime %lld", i + 1, (long long)sb.st_mtime);
        }
        assert_int_equal(fstatat(fd, "f19", &sb, 0), 0);
        close(fd);
    }
    assert_string_equal(contents("top"), "top");
    free(t.data);
}

/* ---- extraction: limits ----------------------------------------------- */

static void
assert_limit_error(ph_error_t *err, const ph_tar_stats *st, ph_tar_limit which, int errnum, const char *what)
{
    assert_non_null(*err);
    if (strstr((*err)->msg, what) == NULL || strstr((*err)->msg, ph_tar_limit_name(which)) == NULL)
        fail_msg("error `%s` lacks `%s` or `%s`", (*err)->msg, what, ph_tar_limit_name(which));
    assert_int_equal((*err)->errnum, errnum);
    assert_non_null(strstr((*err)->hint, ph_tar_limit_name(which)));
    assert_int_equal(st->limit, which);
    ph_error_free(err);
}

/* A member whose size passes max_bytes is refused at its header: the
 * stream holds nothing of its data (a 10 TiB hole would take hours to
 * stream), and the error names the limit. */
static void
test_limit_max_bytes(void **state)
{
    static char data[300000];
    const ph_tar_limits lim = { .max_bytes = 1 << 20 };
    tarbuf t;
    struct archive *a = tb_open_blocking(&t, 1);
    struct archive_entry *e = archive_entry_new();
    ph_tar_stats st;
    ph_error_t err = NULL;

    (void)state;
    memset(data, 'd', sizeof data);
    tb_add_full(a, "run/first", AE_IFREG, 0644, data, sizeof data, NULL, 0);
    tb_add_full(a, "run/second", AE_IFREG, 0644, data, sizeof data, NULL, 0);
    archive_entry_set_pathname(e, "run/sparse-10T");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, 10ll << 40);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    archive_entry_free(e);
    /* The stream stops here, where the 10 TiB of data would begin. */
    t.closed = 1;
    archive_write_free(a);

    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &lim, &st, &err), -1);
    tu_capture_end();
    assert_limit_error(&err, &st, PH_TAR_LIMIT_BYTES, EFBIG, "`run/sparse-10T` (10 TiB)");
    assert_int_equal(st.files, 2);
    assert_true(exists_in("first"));
    assert_true(exists_in("second"));
    assert_false(exists_in("sparse-10T"));

    /* Over by one byte. */
    free(t.data);
    a = tb_open(&t);
    tb_add_full(a, "run/a", AE_IFREG, 0644, data, 1000, NULL, 0);
    tb_add_full(a, "run/b", AE_IFREG, 0644, data, 25, NULL, 0);
    tb_close(a);
    {
        const ph_tar_limits exact = { .max_bytes = 1025 }, under = { .max_bytes = 1024 };

        tu_rmdir();
        setup(NULL);
        assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &exact, &st, &err), 0);
        assert_int_equal(st.size, 1025);
        tu_rmdir();
        setup(NULL);
        tu_capture_begin();
        assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &under, &st, &err), -1);
        tu_capture_end();
        assert_limit_error(&err, &st, PH_TAR_LIMIT_BYTES, EFBIG, "`run/b` (25 bytes)");
        assert_true(exists_in("a"));
        assert_false(exists_in("b"));
    }
    free(t.data);
}

/* A sparse member (pax GNU.sparse) counts with its holes, lands with them,
 * and its size is exact though it ends in a hole. */
static void
test_sparse_member(void **state)
{
    const la_int64_t size = 64ll << 20, mid = 32ll << 20;
    static char block[8192], zeros[4096];
    tarbuf t;
    struct archive *a = tb_open(&t);
    struct archive_entry *e = archive_entry_new();
    const ph_tar_limits small = { .max_bytes = 32 << 20 };
    ph_tar_stats st;
    ph_error_t err = NULL;
    struct stat sb;
    char b;
    int fd;

    (void)state;
    memset(block, 'A', 4096);
    memset(block + 4096, 'B', 4096);
    archive_entry_set_pathname(e, "run/sparse");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, size);
    archive_entry_sparse_add_entry(e, 0, 4096);
    archive_entry_sparse_add_entry(e, mid, 4096);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    archive_entry_free(e);
    /* The writer takes the whole contents and leaves out the holes. */
    assert_int_equal(archive_write_data(a, block, 4096), 4096);
    for (la_int64_t off = 4096; off < mid; off += 4096)
        assert_int_equal(archive_write_data(a, zeros, 4096), 4096);
    assert_int_equal(archive_write_data(a, block + 4096, 4096), 4096);
    tb_close(a);
    assert_true(t.len < 64 * 1024); /* the holes are not in the stream */

    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_int_equal(stat(dpath("sparse"), &sb), 0);
    assert_true(sb.st_size == size);
    assert_true(sb.st_blocks <= 64);
    assert_true(st.size == (uint64_t)size);
    fd = open(dpath("sparse"), O_RDONLY | O_CLOEXEC);
    assert_int_equal(pread(fd, &b, 1, 4095), 1);
    assert_int_equal(b, 'A');
    assert_int_equal(pread(fd, &b, 1, 4096), 1);
    assert_int_equal(b, 0);
    assert_int_equal(pread(fd, &b, 1, mid), 1);
    assert_int_equal(b, 'B');
    assert_int_equal(pread(fd, &b, 1, size - 1), 1);
    assert_int_equal(b, 0);
    close(fd);

    /* Its full size is what max_bytes counts, not its stream. */
    tu_rmdir();
    setup(NULL);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &small, &st, &err), -1);
    tu_capture_end();
    assert_limit_error(&err, &st, PH_TAR_LIMIT_BYTES, EFBIG, "`run/sparse` (64 MiB)");
    assert_false(exists_in("sparse"));
    free(t.data);
}

/* One entry too many stops the extraction; refused entries count; the
 * entries before it stay. */
static void
test_limit_max_entries(void **state)
{
    const ph_tar_limits lim = { .max_entries = 5 };
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    char name[32];

    (void)state;
    tb_add(a, "run/", AE_IFDIR, 0755, NULL, NULL);       /* 1 */
    tb_add(a, "run/fifo", AE_IFIFO, 0644, NULL, NULL);   /* 2, refused */
    for (int i = 0; i < 10; i++) {                       /* 3, 4, 5, then one too many */
        snprintf(name, sizeof name, "run/f%d", i);
        tb_add(a, name, AE_IFREG, 0644, "x", NULL);
    }
    tb_close(a);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &lim, &st, &err), -1);
    tu_capture_end();
    assert_limit_error(&err, &st, PH_TAR_LIMIT_ENTRIES, EMLINK, "`run/f3` is one too many");
    assert_non_null(strstr(ph_tar_limit_name(PH_TAR_LIMIT_ENTRIES), "max_entries"));
    assert_int_equal(st.entries, 6);
    assert_int_equal(st.files, 3);
    assert_int_equal(st.refused, 1);
    assert_true(exists_in("f2"));
    assert_false(exists_in("f3"));
    /* At the limit exactly: fine. */
    {
        const ph_tar_limits enough = { .max_entries = 12 };

        tu_rmdir();
        setup(NULL);
        tu_capture_begin();
        assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &enough, &st, &err), 0);
        tu_capture_end();
        assert_int_equal(st.entries, 12);
        assert_int_equal(st.limit, PH_TAR_LIMIT_NONE);
    }
    free(t.data);
}

/* Bytes that are no member's data (here: padding after the marker) are
 * bounded too: max_bytes plus 16 KiB of headers per entry. */
static void
test_limit_stream(void **state)
{
    const ph_tar_limits lim = { .max_bytes = 64 << 10 };
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;

    (void)state;
    tb_add(a, "run/f", AE_IFREG, 0644, "f", NULL);
    tb_close(a);
    tb_pad(&t, 4u << 20);
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &lim, &st, &err), -1);
    assert_limit_error(&err, &st, PH_TAR_LIMIT_BYTES, EFBIG, "stream passed");
    assert_string_equal(contents("f"), "f");
    /* Without the limit the same padding is ignored. */
    {
        const ph_tar_limits off = { .max_bytes = PH_TAR_NO_LIMIT };

        assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &off, &st, &err), 0);
    }
    free(t.data);
}

/* Free space, on a filesystem of our own (an 8 MiB tmpfs). */
static char fs_dir[400];

static int
setup_tmpfs(void **state)
{
    setup(state);
    snprintf(fs_dir, sizeof fs_dir, "%s/fs", test_dir);
    assert_int_equal(mkdir(fs_dir, 0755), 0);
    if (mount("ph-unit", fs_dir, "tmpfs", 0, "size=8m") < 0) {
        print_message("# no tmpfs (%s): the free-space test is skipped\n", strerror(errno));
        fs_dir[0] = '\0';
        return 0;
    }
    snprintf(dest, sizeof dest, "%s/dest", fs_dir);
    assert_int_equal(mkdir(dest, 0755), 0);
    return 0;
}

static int
teardown_tmpfs(void **state)
{
    if (fs_dir[0] != '\0')
        umount2(fs_dir, MNT_DETACH);
    return teardown(state);
}

static void
test_limit_min_free(void **state)
{
    const ph_tar_limits lim = { .min_free_bytes = 3 << 20 };
    static unsigned char data[4 << 20];
    unsigned seed = 3;
    tarbuf t;
    struct archive *a;
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    const la_int64_t at[] = { 12345 };

    (void)state;
    if (fs_dir[0] == '\0')
        skip();
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(rand_r(&seed) | 1);
    a = tb_open(&t);
    tb_add_full(a, "run/one", AE_IFREG, 0644, data, 2 << 20, NULL, 0);
    tb_add_full(a, "run/two", AE_IFREG, 0644, data, sizeof data, NULL, 0);
    tb_add_full(a, "run/three", AE_IFREG, 0644, "3", 1, NULL, 0);
    tb_close(a);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &lim, &st, &err), -1);
    tu_capture_end();
    assert_limit_error(&err, &st, PH_TAR_LIMIT_FREE, ENOSPC, "writing `two` would leave less free space");
    assert_true(exists_in("one"));
    assert_false(exists_in("two")); /* half written: removed */
    assert_false(exists_in("three"));
    unlink(dpath("one"));

    /* The defaults (5 % of 8 MiB kept free here) take a gigabyte of
     * zeros: holes cost nothing. */
    x = ph_tar_extract_new(dest, 1, NULL, &err);
    assert_non_null(x);
    stream_member(x, "run/zeros", 1ll << 30, at, 1);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    ph_tar_extract_free(x);
    free(t.data);
}

static void
test_limit_parse(void **state)
{
    static const struct {
        ph_tar_limit which;
        const char *text;
        uint64_t want;
    } good[] = {
        { PH_TAR_LIMIT_BYTES, "1", 1 },
        { PH_TAR_LIMIT_BYTES, "512MiB", 512ull << 20 },
        { PH_TAR_LIMIT_BYTES, "16GiB", 16ull << 30 },
        { PH_TAR_LIMIT_BYTES, "16 GiB", 16ull << 30 },
        { PH_TAR_LIMIT_BYTES, "2TB", 2000000000000ull },
        { PH_TAR_LIMIT_BYTES, "3KiB", 3072 },
        { PH_TAR_LIMIT_BYTES, "3kB", 3000 },
        { PH_TAR_LIMIT_BYTES, "7MB", 7000000 },
        { PH_TAR_LIMIT_BYTES, "1GB", 1000000000 },
        { PH_TAR_LIMIT_BYTES, "4TiB", 4ull << 40 },
        { PH_TAR_LIMIT_BYTES, "10B", 10 },
        { PH_TAR_LIMIT_BYTES, "unlimited", PH_TAR_NO_LIMIT },
        { PH_TAR_LIMIT_BYTES, "18446744073709551614", 18446744073709551614ull },
        { PH_TAR_LIMIT_ENTRIES, "200000", 200000 },
        { PH_TAR_LIMIT_ENTRIES, "unlimited", PH_TAR_NO_LIMIT },
        { PH_TAR_LIMIT_FREE, "0", PH_TAR_NO_LIMIT },
        { PH_TAR_LIMIT_FREE, "1GiB", 1ull << 30 },
    };
    static const struct {
        ph_tar_limit which;
        const char *text, *fragment;
    } bad[] = {
        { PH_TAR_LIMIT_BYTES, "", "is not a size for `max_bytes`" },
        { PH_TAR_LIMIT_BYTES, "16G", "is not a size" },
        { PH_TAR_LIMIT_BYTES, "GiB", "is not a size" },
        { PH_TAR_LIMIT_BYTES, "-1", "is not a size" },
        { PH_TAR_LIMIT_BYTES, "1.5GiB", "is not a size" },
        { PH_TAR_LIMIT_BYTES, "16GiB ", "is not a size" },
        { PH_TAR_LIMIT_BYTES, "16 ", "is not a size" },
        { PH_TAR_LIMIT_BYTES, "0", "`max_bytes` must be more than 0" },
        { PH_TAR_LIMIT_BYTES, "0GiB", "must be more than 0" },
        { PH_TAR_LIMIT_BYTES, "18446744073709551616", "too large for `max_bytes`" },
        { PH_TAR_LIMIT_BYTES, "99999999TiB", "too large" },
        { PH_TAR_LIMIT_ENTRIES, "0", "`max_entries` must be more than 0" },
        { PH_TAR_LIMIT_ENTRIES, "10k", "is not a count for `max_entries`" },
        { PH_TAR_LIMIT_ENTRIES, "1KiB", "is not a count" },
        { PH_TAR_LIMIT_FREE, "lots", "is not a size for `min_free`" },
    };

    (void)state;
    for (size_t i = 0; i < PH_ARRAY_LEN(good); i++) {
        uint64_t v = 0;
        ph_error_t err = NULL;

        if (ph_tar_limit_parse(good[i].which, good[i].text, &v, &err) != 0)
            fail_msg("`%s`: %s", good[i].text, err->msg);
        if (v != good[i].want)
            fail_msg("`%s`: %" PRIu64 ", not %" PRIu64, good[i].text, v, good[i].want);
    }
    for (size_t i = 0; i < PH_ARRAY_LEN(bad); i++) {
        uint64_t v = 42;
        ph_error_t err = NULL;

        if (ph_tar_limit_parse(bad[i].which, bad[i].text, &v, &err) != -1)
            fail_msg("`%s` parsed as %" PRIu64, bad[i].text, v);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        if (strstr(err->msg, bad[i].fragment) == NULL)
            fail_msg("`%s`: error `%s` lacks `%s`", bad[i].text, err->msg, bad[i].fragment);
        assert_int_equal(v, 42);
        ph_error_free(&err);
    }
    assert_string_equal(ph_tar_limit_name(PH_TAR_LIMIT_BYTES), "max_bytes");
    assert_string_equal(ph_tar_limit_name(PH_TAR_LIMIT_ENTRIES), "max_entries");
    assert_string_equal(ph_tar_limit_name(PH_TAR_LIMIT_FREE), "min_free");
    assert_string_equal(ph_tar_limit_name(PH_TAR_LIMIT_NONE), "none");
}

/* ---- extraction: races -------------------------------------------------- */

/* Poll (deadline 30 s) until dest/REL has mtime MTIME: the extractor set
 * it last, so it is done with that member. */
static void
wait_for_member(const char *rel, time_t mtime)
{
    struct stat sb;

    for (int i = 0; i < 30000; i++) {
        if (lstat(dpath(rel), &sb) == 0 && sb.st_mtime == mtime)
            return;
        usleep(1000);
    }
    fail_msg("`%s` was not extracted within 30 s", rel);
}

/* Something racing the extraction replaces a directory the extractor had
 * entered, and whose fd it has closed since (deeper than 64 levels), by a
 * symlink to where that directory went: outside the destination (LINK
 * absolute) or inside it (relative).  Entries below it are refused, never
 * written through the link, whether it is the last component reopened or
 * one before it. */
static void
race_replaced_directory(int outside)
{
    static char name[2048], deep[2048];
    tarbuf t;
    struct archive *a = tb_open_blocking(&t, 1);
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    char moved[700], p[900];
    size_t part1, n = 0;
    struct stat sb;

    n = (size_t)snprintf(deep, sizeof deep, "a/l1/l2");
    for (int i = 3; i < 80; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "/l%d", i);
    snprintf(name, sizeof name, "run/%s/first", deep);
    tb_add_full(a, name, AE_IFREG, 0644, "1", 1, NULL, 1234567890);
    assert_int_equal(archive_write_finish_entry(a), ARCHIVE_OK); /* its padding */
    part1 = t.len;
    tb_add_full(a, "run/a/l1/l2/other/f", AE_IFREG, 0644, "through", 7, NULL, 0); /* l1: a link before */
    tb_add_full(a, "run/a/l1/l2/l3/g", AE_IFREG, 0644, "through", 7, NULL, 0);
    tb_add_full(a, "run/a/l1/h", AE_IFREG, 0644, "through", 7, NULL, 0);      /* l1: the last */
    tb_add_full(a, "run/after", AE_IFREG, 0644, "after", 5, NULL, 0);
    tb_close(a);

    x = ph_tar_extract_new(dest, 1, NULL, &err);
    assert_non_null(x);
    assert_int_equal(ph_tar_extract_feed(x, t.data, part1, &err), 0);
    snprintf(name, sizeof name, "%s/first", deep);
    wait_for_member(name, 1234567890);
    /* The race: a/l1 moves, and a link to it takes its place. */
    if (outside)
        snprintf(moved, sizeof moved, "%s/moved", test_dir);
    else
        snprintf(moved, sizeof moved, "%s", dpath("a/moved"));
    assert_int_equal(rename(dpath("a/l1"), moved), 0);
    assert_int_equal(symlink(outside ? moved : "moved", dpath("a/l1")), 0);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_feed(x, t.data + part1, t.len - part1, &err), 0);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    tu_capture_end();
    ph_tar_extract_free(x);
    assert_int_equal(st.refused, 3);
    assert_string_equal(contents("after"), "after");
    snprintf(p, sizeof p, "%s/l2/other", moved);
    assert_int_equal(lstat(p, &sb), -1);
    snprintf(p, sizeof p, "%s/l2/l3/g", moved);
    assert_int_equal(lstat(p, &sb), -1);
    snprintf(p, sizeof p, "%s/h", moved);
    assert_int_equal(lstat(p, &sb), -1);
    free(t.data);
}

static void
test_race_replaced_directory(void **state)
{
    (void)state;
    race_replaced_directory(1);
    tu_rmdir();
    setup(NULL);
    race_replaced_directory(0);
}

/* The same where openat2 is missing (old kernels, seccomp filters): the
 * O_NOFOLLOW walk from the destination refuses it too. */
static void
test_race_replaced_directory_no_openat2(void **state)
{
    assert_int_equal(setenv("PH_TAR_NO_OPENAT2", "1", 1), 0);
    test_race_replaced_directory(state);
    unsetenv("PH_TAR_NO_OPENAT2");
}

/* A hard link to itself, or made twice, is no failure; one over a file
 * replaces it. */
static void
test_hardlink_to_itself(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;

    (void)state;
    tb_add(a, "run/x", AE_IFREG, 0644, "x", NULL);
    tb_add(a, "run/x", AE_IFREG, 0644, NULL, "run/x");
    tb_add(a, "run/y", AE_IFREG, 0644, NULL, "run/x");
    tb_add(a, "run/y", AE_IFREG, 0644, NULL, "run/x");
    tb_add(a, "run/z", AE_IFREG, 0644, "old z", NULL);
    tb_add(a, "run/z", AE_IFREG, 0644, NULL, "run/x"); /* replaces the file */
    tb_close(a);
    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_int_equal(st.links, 4);
    assert_string_equal(contents("x"), "x");
    assert_string_equal(contents("y"), "x");
    assert_string_equal(contents("z"), "x");
    free(t.data);
}

/* Consecutive entries in directories whose names share a prefix: the
 * stack must not take `ab` for `a`, nor `a` for `ab`. */
static void
test_sibling_prefixes(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;

    (void)state;
    tb_add(a, "run/p/a/f1", AE_IFREG, 0644, "1", NULL);
    tb_add(a, "run/p/ab/f2", AE_IFREG, 0644, "2", NULL);
    tb_add(a, "run/p/a/f3", AE_IFREG, 0644, "3", NULL);
    tb_add(a, "run/p/a/b/f4", AE_IFREG, 0644, "4", NULL);
    tb_add(a, "run/p/ab/c/f5", AE_IFREG, 0644, "5", NULL);
    tb_add(a, "run/p/f6", AE_IFREG, 0644, "6", NULL);
    tb_add(a, "run/pq/f7", AE_IFREG, 0644, "7", NULL);
    tb_close(a);
    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_string_equal(contents("p/a/f1"), "1");
    assert_string_equal(contents("p/ab/f2"), "2");
    assert_string_equal(contents("p/a/f3"), "3");
    assert_string_equal(contents("p/a/b/f4"), "4");
    assert_string_equal(contents("p/ab/c/f5"), "5");
    assert_string_equal(contents("p/f6"), "6");
    assert_string_equal(contents("pq/f7"), "7");
    assert_false(exists_in("p/a/ab"));
    assert_false(exists_in("p/ab/f1"));
    free(t.data);
}

/* Once too many names were refused to remember them all, every hard link
 * is refused: one could name a refused entry. */
static void
test_refused_set_full(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    enum ph_log_level level;
    char name[32];

    (void)state;
    tb_add(a, "run/good", AE_IFREG, 0644, "good", NULL);
    tb_add(a, "run/early", AE_IFREG, 0644, NULL, "run/good");
    for (int i = 0; i < 4096; i++) {
        snprintf(name, sizeof name, "run/fifo%d", i);
        tb_add(a, name, AE_IFIFO, 0644, NULL, NULL);
    }
    tb_add(a, "run/late", AE_IFREG, 0644, NULL, "run/good");
    tb_close(a);
    level = ph_log_get_level();
    ph_log_set_level(PH_LOG_ERROR); /* 4,097 warnings */
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, NULL, &st, &err), 0);
    tu_capture_end();
    ph_log_set_level(level);
    assert_int_equal(st.refused, 4097);
    assert_true(exists_in("early"));
    assert_false(exists_in("late"));
    free(t.data);
}

/* ---- extraction: bad streams ------------------------------------------ */

static void
test_truncated_in_a_member(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    char *payload = calloc(1, 200000);

    (void)state;
    memset(payload, 'q', 199999);
    tb_add(a, "run/first.txt", AE_IFREG, 0644, "complete", NULL);
    tb_add(a, "run/second.bin", AE_IFREG, 0644, payload, NULL);
    tb_close(a);
    t.len = 4096;
    assert_int_equal(extract(&t, 1, &st, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "run/second.bin"));
    assert_non_null(strstr(err->msg, "runcated")); /* libarchive's "Truncated tar archive" */
    assert_string_equal(contents("first.txt"), "complete");
    assert_false(exists_in("second.bin")); /* no half file */
    assert_int_equal(st.files, 1);
    ph_error_free(&err);
    free(payload);
    free(t.data);
}

/* A stream cut between members: libarchive alone would call it a clean
 * end; the missing end-of-archive marker is what tells. */
static void
test_truncated_between_members(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;

    (void)state;
    tb_add(a, "run/first.txt", AE_IFREG, 0644, "complete", NULL);
    tb_close(a);
    assert_int_equal(t.len, 2048); /* header, data block, marker */
    t.len -= 1024;
    assert_int_equal(extract(&t, 1, &st, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "end-of-archive marker"));
    assert_string_equal(contents("first.txt"), "complete");
    ph_error_free(&err);

    /* Nothing at all is no archive either. */
    assert_int_equal(ph_tar_extract_buffer("", 0, dest, 1, NULL, &st, &err), -1);
    assert_non_null(strstr(err->msg, "end-of-archive marker"));
    ph_error_free(&err);
    free(t.data);
}

/* Zero padding after the marker (tar's 10 kB records and more) is fine,
 * whatever the chunking. */
static void
test_trailing_padding(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;

    (void)state;
    tb_add(a, "run/f", AE_IFREG, 0644, "f", NULL);
    tb_close(a);
    tb_pad(&t, 1u << 20);
    assert_int_equal(extract(&t, 1, &st, &err), 0);
    assert_null(err);
    assert_string_equal(contents("f"), "f");
    free(t.data);
}

/* A damaged header in the middle of a long stream: the feed fails at
 * once instead of blocking, and so does everything after. */
static void
test_error_midstream(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    static char junk[65536];
    int rc = 0;

    (void)state;
    tb_add(a, "run/ok.txt", AE_IFREG, 0644, "ok", NULL);
    tb_close(a);
    t.len -= 1024; /* drop the marker */
    memset(junk, 'J', sizeof junk);
    alarm(60); /* a hang kills the test */
    x = ph_tar_extract_new(dest, 1, NULL, &err);
    assert_non_null(x);
    assert_int_equal(ph_tar_extract_feed(x, t.data, t.len, &err), 0);
    for (int i = 0; i < 1000 && rc == 0; i++) /* 64 MiB of junk, far more than the socket holds */
        rc = ph_tar_extract_feed(x, junk, sizeof junk, &err);
    alarm(0);
    assert_int_equal(rc, -1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "read the archive: "));
    ph_error_free(&err);
    assert_int_equal(ph_tar_extract_feed(x, "more", 4, &err), -1);
    assert_non_null(strstr(err->msg, "failed earlier"));
    ph_error_free(&err);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), -1);
    assert_non_null(err);
    ph_error_free(&err);
    ph_tar_extract_free(x);
    assert_int_equal(st.files, 1);
    assert_string_equal(contents("ok.txt"), "ok");
    free(t.data);
}

static void
test_not_a_tar(void **state)
{
    ph_tar_stats st;
    ph_error_t err = NULL;
    static char text[4096];

    (void)state;
    memset(text, 'x', sizeof text);
    assert_int_equal(ph_tar_extract_buffer(text, sizeof text, dest, 1, NULL, &st, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "read the archive: "));
    assert_int_equal(err->status, PH_EXIT_FAILURE);
    ph_error_free(&err);
    assert_null(ph_tar_extract_new("/nonexistent/dir", 1, NULL, &err));
    assert_non_null(strstr(err->msg, "open `/nonexistent/dir`"));
    assert_int_equal(err->errnum, ENOENT);
    ph_error_free(&err);
}

/* Into a directory fd: the files land in the directory the fd is, after
 * its name was moved away and a link to elsewhere put in its place; the
 * caller's fd stays open; an O_PATH fd will do; a bad fd is an error. */
static void
test_extract_new_at(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    char moved[600], other[600];
    int fd, pfd;

    (void)state;
    tb_add(a, "run/inside", AE_IFREG, 0644, "here", NULL);
    tb_add(a, "run/sub/deeper", AE_IFREG, 0644, "too", NULL);
    tb_close(a);
    snprintf(moved, sizeof moved, "%s/moved", test_dir);
    snprintf(other, sizeof other, "%s/other", test_dir);
    assert_int_equal(mkdir(other, 0755), 0);
    fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(rename(dest, moved), 0);
    assert_int_equal(symlink(other, dest), 0);
    x = ph_tar_extract_new_at(fd, 1, NULL, &err);
    assert_non_null(x);
    assert_int_equal(ph_tar_extract_feed(x, t.data, t.len, &err), 0);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    ph_tar_extract_free(x);
    assert_null(err);
    assert_int_equal(st.files, 2);
    assert_int_equal(faccessat(fd, "inside", F_OK, 0), 0);
    assert_int_equal(faccessat(fd, "sub/deeper", F_OK, 0), 0);
    assert_false(exists_in("inside"));           /* through the link: other/ */
    assert_int_equal(fcntl(fd, F_GETFD), FD_CLOEXEC); /* still the caller's */
    close(fd);

    /* O_PATH, and a limit applies as with a path. */
    pfd = open(other, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(pfd >= 0);
    x = ph_tar_extract_new_at(pfd, 1, &(ph_tar_limits){ .max_entries = 1 }, &err);
    assert_non_null(x);
    tu_capture_begin();
    ph_tar_extract_feed(x, t.data, t.len, &err);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), -1);
    tu_capture_end();
    ph_tar_extract_free(x);
    assert_int_equal(st.limit, PH_TAR_LIMIT_ENTRIES);
    ph_error_free(&err);
    close(pfd);

    assert_null(ph_tar_extract_new_at(-1, 1, NULL, &err));
    assert_int_equal(err->errnum, EBADF);
    ph_error_free(&err);
    fd = open(tu_write("plain", "x"), O_RDONLY | O_CLOEXEC);
    assert_null(ph_tar_extract_new_at(fd, 1, NULL, &err));
    assert_int_equal(err->errnum, ENOTDIR);
    ph_error_free(&err);
    close(fd);
    free(t.data);
}

/* What the select callback was shown, and what it takes: regular files
 * named `take*` directly in the top directory. */
typedef struct seen {
    char names[16][64];
    unsigned types[16];
    uint64_t sizes[16];
    int n;
} seen;

static int
select_cb(void *ud, const char *rel, unsigned type, uint64_t size)
{
    seen *s = ud;

    if (s->n < 16) {
        snprintf(s->names[s->n], sizeof s->names[0], "%s", rel);
        s->types[s->n] = type;
        s->sizes[s->n] = size;
        s->n++;
    }
    return type == S_IFREG && strncmp(rel, "take", 4) == 0 && strchr(rel, '/') == NULL;
}

/* Only what the callback takes is written; it sees each entry's name as
 * it would be written (stripped), its type and size; passed-over entries
 * are counted, and count against the limits all the same; a hard link to
 * a file passed over is refused, not followed. */
static void
test_extract_select(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    seen s = { .n = 0 };
    int fd;

    (void)state;
    tb_add(a, "tmp/", AE_IFDIR, 01777, NULL, NULL);
    tb_add(a, "tmp/take-1.map", AE_IFREG, 0644, "0x10 4 hot", NULL);
    tb_add(a, "tmp/other.log", AE_IFREG, 0644, "no", NULL);
    tb_add(a, "tmp/sub/", AE_IFDIR, 0755, NULL, NULL);
    tb_add(a, "tmp/sub/take-2.map", AE_IFREG, 0644, "deeper", NULL);
    tb_add(a, "tmp/take-link", AE_IFLNK, 0777, NULL, "/etc/passwd");
    tb_add(a, "tmp/take-hard", AE_IFREG, 0644, NULL, "tmp/other.log");
    tb_close(a);
    fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    x = ph_tar_extract_new_select_at(fd, 1, NULL, select_cb, &s, &err);
    assert_non_null(x);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_feed(x, t.data, t.len, &err), 0);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    tu_capture_end();
    ph_tar_extract_free(x);
    assert_null(err);
    assert_string_equal(contents("take-1.map"), "0x10 4 hot");
    assert_false(exists_in("other.log"));
    assert_false(exists_in("sub"));
    assert_false(exists_in("take-link"));
    assert_false(exists_in("take-hard")); /* its target was passed over */
    assert_int_equal(st.files, 1);
    assert_int_equal(st.skipped, 4);
    assert_int_equal(st.refused, 1);
    /* the stripped top directory is not shown; names as written */
    assert_int_equal(s.n, 6);
    assert_string_equal(s.names[0], "take-1.map");
    assert_int_equal(s.types[0], S_IFREG);
    assert_int_equal(s.sizes[0], 10);
    assert_string_equal(s.names[2], "sub");
    assert_int_equal(s.types[2], S_IFDIR);
    assert_string_equal(s.names[3], "sub/take-2.map");
    assert_int_equal(s.types[4], S_IFLNK);
    assert_int_equal(s.types[5], S_IFREG); /* a hard link is shown as a file */

    /* what is passed over still counts: 10 bytes taken, 18 read */
    tu_rmdir();
    setup(NULL);
    close(fd);
    fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    s.n = 0;
    x = ph_tar_extract_new_select_at(fd, 1, &(ph_tar_limits){ .max_bytes = 12 }, select_cb, &s, &err);
    assert_non_null(x);
    tu_capture_begin();
    ph_tar_extract_feed(x, t.data, t.len, &err);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), -1);
    tu_capture_end();
    ph_tar_extract_free(x);
    assert_int_equal(st.limit, PH_TAR_LIMIT_BYTES);
    ph_error_free(&err);
    close(fd);
    free(t.data);
}

/* Given up half way (curl failed): free must not hang, nor leave a half
 * file; a feed after finish is an error. */
static void
test_abandon_and_misuse(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    static char payload[100000];

    (void)state;
    memset(payload, 'p', sizeof payload - 1);
    tb_add(a, "run/whole", AE_IFREG, 0644, "w", NULL);
    tb_add(a, "run/partial", AE_IFREG, 0644, payload, NULL);
    tb_close(a);
    x = ph_tar_extract_new(dest, 1, NULL, &err);
    assert_non_null(x);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_feed(x, t.data, 50000, &err), 0);
    ph_tar_extract_free(x);
    tu_capture_end();
    assert_true(exists_in("whole"));
    assert_false(exists_in("partial"));

    x = ph_tar_extract_new(dest, 1, NULL, &err);
    assert_non_null(x);
    assert_int_equal(ph_tar_extract_feed(x, t.data, t.len, &err), 0);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    assert_int_equal(st.files, 2);
    assert_int_equal(ph_tar_extract_feed(x, "x", 1, &err), -1);
    assert_non_null(err);
    ph_error_free(&err);
    ph_tar_extract_free(x);
    ph_tar_extract_free(NULL);
    free(t.data);
}

/* ---- build contexts --------------------------------------------------- */

static void
set_mtime(const char *rel, time_t t)
{
    char p[600];
    struct timespec ts[2] = { { t, 0 }, { t, 0 } };

    snprintf(p, sizeof p, "%s/%s", test_dir, rel);
    assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void
mkdir_in(const char *rel)
{
    char p[600];

    snprintf(p, sizeof p, "%s/%s", test_dir, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

/* "name type perm mtime size [-> target]" per member, in archive order. */
static char *
listing(const void *data, size_t len)
{
    static char out[8192];
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    size_t n = 0;

    archive_read_support_format_tar(a);
    assert_int_equal(archive_read_open_memory(a, data, len), ARCHIVE_OK);
    out[0] = '\0';
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        unsigned type = archive_entry_filetype(e);

        assert_int_equal(archive_entry_uid(e), 0);
        assert_int_equal(archive_entry_gid(e), 0);
        n += (size_t)snprintf(out + n, sizeof out - n, "%s %c %04o %lld %lld%s%s\n", archive_entry_pathname(e),
                              type == AE_IFDIR ? 'd' : type == AE_IFLNK ? 'l' : 'f', archive_entry_perm(e),
                              (long long)archive_entry_mtime(e), (long long)archive_entry_size(e),
                              type == AE_IFLNK ? " -> " : "", type == AE_IFLNK ? archive_entry_symlink(e) : "");
    }
    archive_read_free(a);
    return out;
}

static void
make_context(void)
{
    static const char *const files[] = {
        "ctx/Dockerfile", "ctx/keep.c", "ctx/secret.key", "ctx/important.key", "ctx/top.o",
        "ctx/sub/build.o", "ctx/sub/a.tmp", "ctx/sub/ab.tmp", "ctx/sub/keep.h", "ctx/build/out.bin",
        "ctx/docs/README.md", "ctx/docs/other.md", "ctx/abs.txt", "ctx/.dockerignore",
    };
    char p[600];

    mkdir_in("ctx");
    mkdir_in("ctx/sub");
    mkdir_in("ctx/build");
    mkdir_in("ctx/docs");
    for (size_t i = 0; i < PH_ARRAY_LEN(files); i++)
        tu_write(files[i], strchr(files[i], '/') + 1); /* its own name as contents */
    tu_write("ctx/.dockerignore", "# comment\n"
                                  "*.key\n"
                                  "!important.key\n"
                                  "**/*.o\n"
                                  "build/\n"
                                  "docs\n"
                                  "  !docs/README.md  \n"
                                  "/abs.txt\n"
                                  "sub/?.tmp\n"
                                  "Dockerfile\n"
                                  "\n");
    snprintf(p, sizeof p, "%s/ctx/sub/keep.h", test_dir);
    assert_int_equal(chmod(p, 0755), 0);
    snprintf(p, sizeof p, "%s/ctx/link", test_dir);
    assert_int_equal(symlink("keep.c", p), 0);
    for (size_t i = 0; i < PH_ARRAY_LEN(files); i++)
        set_mtime(files[i], 1500000000 + (time_t)i);
    set_mtime("ctx/link", 1600000000);
    set_mtime("ctx/sub", 1700000000);
    set_mtime("ctx/docs", 1700000001);
}

static void
test_context_dockerignore_and_order(void **state)
{
    char ctx[400];
    void *tar = NULL;
    size_t len;
    ph_error_t err = NULL;
    const ph_tar_extra extra[] = {
        { .name = "extra.txt", .data = "in memory", .len = 9, .mode = 0755 },
    };

    (void)state;
    make_context();
    snprintf(ctx, sizeof ctx, "%s/ctx", test_dir);
    assert_int_equal(ph_tar_context_build(ctx, extra, 1, 1 << 20, &tar, &len, &err), 0);
    assert_null(err);
    /* Sorted bytewise, directories before their contents; excluded
     * directories leave only their `!` exceptions; the Dockerfile and
     * .dockerignore always go; modes and mtimes as on disk. */
    assert_string_equal(listing(tar, len), ".dockerignore f 0644 1500000013 101\n"
                                           "Dockerfile f 0644 1500000000 10\n"
                                           "docs/README.md f 0644 1500000010 14\n"
                                           "important.key f 0644 1500000003 13\n"
                                           "keep.c f 0644 1500000001 6\n"
                                           "link l 0777 1600000000 0 -> keep.c\n"
                                           "sub/ d 0755 1700000000 0\n"
                                           "sub/ab.tmp f 0644 1500000007 10\n"
                                           "sub/keep.h f 0755 1500000008 10\n"
                                           "extra.txt f 0755 0 9\n");
    /* And it extracts to the same. */
    assert_int_equal(ph_tar_extract_buffer(tar, len, dest, 0, NULL, NULL, &err), 0);
    assert_string_equal(contents("docs/README.md"), "docs/README.md");
    assert_string_equal(contents("extra.txt"), "in memory");
    free(tar);
}

/* A directory extra (no path, S_IFDIR in its mode): what a profiled
 * container's artifacts directory is put in as, sticky bit and all. */
static void
test_context_extra_dir(void **state)
{
    void *tar = NULL;
    size_t len;
    ph_error_t err = NULL;
    const ph_tar_extra extra[] = {
        { .name = "front", .mode = S_IFDIR | 01777 },
        { .name = "front/f", .data = "x", .len = 1 },
    };

    (void)state;
    assert_int_equal(ph_tar_context_build(NULL, extra, 2, 1 << 20, &tar, &len, &err), 0);
    assert_null(err);
    assert_string_equal(listing(tar, len), "front/ d 1777 0 0\n"
                                           "front/f f 0644 0 1\n");
    free(tar);
}

static void
test_context_deterministic(void **state)
{
    char ctx[400], path[600];
    void *a = NULL, *b = NULL, *c = NULL;
    size_t al, bl, cl;
    ph_error_t err = NULL;
    ph_tar_extra extra[] = {
        { .name = "keep.c", .data = "replaced", .len = 8 },
        { .name = "opt/bin/tool", .path = path, .mode = 0755 },
    };

    (void)state;
    make_context();
    snprintf(ctx, sizeof ctx, "%s/ctx", test_dir);
    snprintf(path, sizeof path, "%s/ctx/abs.txt", test_dir);
    assert_int_equal(ph_tar_context_build(ctx, extra, 2, 1 << 20, &a, &al, &err), 0);
    assert_int_equal(ph_tar_context_build(ctx, extra, 2, 1 << 20, &b, &bl, &err), 0);
    assert_int_equal(al, bl);
    assert_memory_equal(a, b, al);
    /* An extra replaces the context's file of that name; one from disk
     * keeps its file's mtime, the given mode. */
    assert_non_null(strstr(listing(a, al), "\nkeep.c f 0644 0 8\n"));
    assert_null(strstr(listing(a, al), "keep.c f 0644 1500000001"));
    assert_non_null(strstr(listing(a, al), "\nopt/bin/tool f 0755 1500000012 7\n"));
    /* Mtimes are part of the bytes: a touched file changes them. */
    set_mtime("ctx/sub/keep.h", 1500000100);
    assert_int_equal(ph_tar_context_build(ctx, extra, 2, 1 << 20, &c, &cl, &err), 0);
    assert_true(cl != al || memcmp(a, c, al) != 0);
    free(a);
    free(b);
    free(c);
}

static void
test_context_limit(void **state)
{
    char ctx[400];
    void *tar = (void *)1;
    size_t len = 1;
    ph_error_t err = NULL;
    const ph_tar_extra extra[] = { { .name = "only", .data = "x", .len = 1 } };

    (void)state;
    make_context();
    snprintf(ctx, sizeof ctx, "%s/ctx", test_dir);
    assert_int_equal(ph_tar_context_build(ctx, NULL, 0, 4000, &tar, &len, &err), -1);
    assert_null(tar);
    assert_int_equal(len, 0);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "larger than the limit of 4000 bytes"));
    assert_true(err->hint[0] != '\0');
    ph_error_free(&err);
    /* Without a directory: the extras alone. */
    assert_int_equal(ph_tar_context_build(NULL, extra, 1, 4000, &tar, &len, &err), 0);
    assert_int_equal(len, 2048);
    assert_string_equal(listing(tar, len), "only f 0644 0 1\n");
    free(tar);
    {
        const ph_tar_extra bad[] = { { .name = "../up", .data = "x", .len = 1 } };

        assert_int_equal(ph_tar_context_build(NULL, bad, 1, 4000, &tar, &len, &err), -1);
        assert_non_null(strstr(err->msg, "`../up`"));
        assert_int_equal(err->status, PH_EXIT_USAGE);
        ph_error_free(&err);
    }
    assert_int_equal(ph_tar_context_build("/nonexistent/ctx", NULL, 0, 4000, &tar, &len, &err), -1);
    assert_non_null(strstr(err->msg, "/nonexistent/ctx"));
    ph_error_free(&err);
}

/* Read stream S to its end in chunks of CHUNK bytes: the bytes, malloc'd. */
static char *
stream_all(ph_tar_stream *s, size_t chunk, size_t *len, ssize_t *last)
{
    size_t cap = 1 << 16;
    char *out = malloc(cap);
    ssize_t n;

    *len = 0;
    assert_non_null(out);
    do {
        if (cap - *len < chunk) {
            cap *= 2;
            assert_non_null(out = realloc(out, cap));
        }
        n = ph_tar_stream_read(s, out + *len, chunk);
        if (n > 0)
            *len += (size_t)n;
    } while (n > 0);
    *last = n;
    return out;
}

/* A tree streamed (ph_tar_stream) is the build context's bytes, whatever
 * the reader's chunks, and the reader knows it got the whole of it. */
static void
test_stream_same_bytes(void **state)
{
    char ctx[400];
    void *tar = NULL;
    char *got;
    size_t len, got_len;
    ssize_t last;
    ph_error_t err = NULL;
    const ph_tar_extra extra[] = { { .name = "extra.txt", .data = "in memory", .len = 9 } };

    (void)state;
    make_context();
    tu_write("ctx/big.bin", ""); /* more than the socket holds at once */
    {
        char p[600];
        FILE *f;

        snprintf(p, sizeof p, "%s/ctx/big.bin", test_dir);
        assert_non_null(f = fopen(p, "w"));
        for (int i = 0; i < (3 << 20) / 8; i++)
            fwrite("01234567", 1, 8, f);
        fclose(f);
    }
    snprintf(ctx, sizeof ctx, "%s/ctx", test_dir);
    assert_int_equal(ph_tar_context_build(ctx, extra, 1, 16 << 20, &tar, &len, &err), 0);
    for (size_t chunk = 1000; chunk <= 1 << 16; chunk *= 8) {
        ph_tar_stream *s = ph_tar_stream_new(ctx, extra, 1, &err);

        assert_non_null(s);
        got = stream_all(s, chunk, &got_len, &last);
        assert_int_equal(last, 0);
        assert_int_equal(ph_tar_stream_finish(s, &err), 0);
        assert_null(err);
        assert_int_equal(got_len, len);
        assert_int_equal(ph_tar_stream_bytes(s), len);
        assert_memory_equal(got, tar, len);
        ph_tar_stream_free(s);
        free(got);
    }
    free(tar);
}

/* A writer that fails (a directory it cannot read) makes the reader's
 * read fail, and finish gives the writer's error in place of the
 * reader's caller's; a reader that stops early ends the writer (free
 * does not hang) and finish says the stream was not read to its end. */
static void
test_stream_failures(void **state)
{
    char ctx[400], buf[512];
    size_t got_len;
    ssize_t last;
    char *got;
    ph_error_t err = NULL;
    ph_tar_stream *s;

    (void)state;
    s = ph_tar_stream_new("/nonexistent/ctx", NULL, 0, &err);
    assert_non_null(s);
    got = stream_all(s, 4096, &got_len, &last);
    free(got);
    assert_int_equal(last, -1);
    ph_fail(&err, 0, "the upload's own error");
    assert_int_equal(ph_tar_stream_finish(s, &err), -1);
    assert_non_null(strstr(err->msg, "/nonexistent/ctx"));
    ph_error_free(&err);
    ph_tar_stream_free(s);

    make_context();
    tu_write("ctx/big.bin", "");
    {
        char p[600];

        snprintf(p, sizeof p, "%s/ctx/big.bin", test_dir);
        assert_int_equal(truncate(p, 64 << 20), 0); /* a hole: quick to make, 64 MiB to send */
    }
    snprintf(ctx, sizeof ctx, "%s/ctx", test_dir);
    assert_non_null(s = ph_tar_stream_new(ctx, NULL, 0, &err));
    assert_true(ph_tar_stream_read(s, buf, sizeof buf) > 0);
    ph_fail(&err, 0, "the upload stopped");
    assert_int_equal(ph_tar_stream_finish(s, &err), -1);
    assert_string_equal(err->msg, "the upload stopped"); /* the writer's EPIPE is a consequence */
    ph_error_free(&err);
    assert_int_equal(ph_tar_stream_finish(s, &err), -1);
    assert_non_null(strstr(err->msg, "not read to its end"));
    ph_error_free(&err);
    ph_tar_stream_free(s);
    ph_tar_stream_free(NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hostile_entries_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extract_new_at, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extract_select, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_chains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hardlinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_symlink_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modes_and_mtimes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streamed_in_small_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounded_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zeros_stay_holes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trailing_zeros_keep_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_of_path_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_over_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deep_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_max_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sparse_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_max_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_min_free, setup_tmpfs, teardown_tmpfs),
        cmocka_unit_test(test_limit_parse),
        cmocka_unit_test_setup_teardown(test_race_replaced_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_replaced_directory_no_openat2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hardlink_to_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sibling_prefixes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_set_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_in_a_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_between_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trailing_padding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_midstream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_tar, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandon_and_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_dockerignore_and_order, setup, teardown),
        cmocka_unit_test(test_context_extra_dir),
        cmocka_unit_test_setup_teardown(test_context_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_same_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_failures, setup, teardown),
    };
    return cmocka_run_group_tests_name("tar", tests, NULL, NULL);
}
