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
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ph_tar.h"
#include "ph_util.h"

/* ---- writing test archives ------------------------------------------- */

typedef struct tarbuf {
    char *data;
    size_t len, cap;
} tarbuf;

static la_ssize_t
tb_write(struct archive *a, void *ud, const void *buf, size_t n)
{
    tarbuf *t = ud;

    (void)a;
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
 * 1024-byte end-of-archive marker. */
static struct archive *
tb_open(tarbuf *t)
{
    struct archive *a = archive_write_new();

    memset(t, 0, sizeof *t);
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    assert_int_equal(archive_write_open(a, t, NULL, tb_write, NULL), ARCHIVE_OK);
    return a;
}

static void
tb_close(struct archive *a)
{
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
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
    rc = ph_tar_extract_buffer(t->data, t->len, dest, strip, st, err);
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
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &st, &err), 0);
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
    tb_close(a);
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
    x = ph_tar_extract_new(dest, 1, &err);
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
    x = ph_tar_extract_new(dest, 1, &err);
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
    assert_int_equal(ph_tar_extract_buffer("", 0, dest, 1, &st, &err), -1);
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
    size_t padded;

    (void)state;
    tb_add(a, "run/f", AE_IFREG, 0644, "f", NULL);
    tb_close(a);
    padded = t.len + (1u << 20);
    t.data = realloc(t.data, padded);
    memset(t.data + t.len, 0, padded - t.len);
    t.len = padded;
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
    x = ph_tar_extract_new(dest, 1, &err);
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
    assert_int_equal(ph_tar_extract_buffer(text, sizeof text, dest, 1, &st, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "read the archive: "));
    assert_int_equal(err->status, PH_EXIT_FAILURE);
    ph_error_free(&err);
    assert_null(ph_tar_extract_new("/nonexistent/dir", 1, &err));
    assert_non_null(strstr(err->msg, "open `/nonexistent/dir`"));
    assert_int_equal(err->errnum, ENOENT);
    ph_error_free(&err);
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
    x = ph_tar_extract_new(dest, 1, &err);
    assert_non_null(x);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_feed(x, t.data, 50000, &err), 0);
    ph_tar_extract_free(x);
    tu_capture_end();
    assert_true(exists_in("whole"));
    assert_false(exists_in("partial"));

    x = ph_tar_extract_new(dest, 1, &err);
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
    assert_int_equal(ph_tar_extract_buffer(tar, len, dest, 0, NULL, &err), 0);
    assert_string_equal(contents("docs/README.md"), "docs/README.md");
    assert_string_equal(contents("extra.txt"), "in memory");
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hostile_entries_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_chains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hardlinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_symlink_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modes_and_mtimes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streamed_in_small_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounded_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_in_a_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_between_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trailing_padding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_midstream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_tar, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandon_and_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_dockerignore_and_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_limit, setup, teardown),
    };
    return cmocka_run_group_tests_name("tar", tests, NULL, NULL);
}
