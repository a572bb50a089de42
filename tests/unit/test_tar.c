/* test_tar.c - extraction refuses what could escape the run dir, keeps
 * what is safe, streams in bounded memory; contexts are deterministic. */
#include "test_util.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ph_tar.h"

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

static struct archive *
tb_open(tarbuf *t)
{
    struct archive *a = archive_write_new();

    memset(t, 0, sizeof *t);
    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open(a, t, NULL, tb_write, NULL), ARCHIVE_OK);
    return a;
}

static void
tb_add(struct archive *a, const char *name, unsigned type, unsigned perm, const char *content, const char *link)
{
    struct archive_entry *e = archive_entry_new();

    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm);
    if (link && type == AE_IFLNK)
        archive_entry_set_symlink(e, link);
    else if (link)
        archive_entry_set_hardlink(e, link);
    archive_entry_set_size(e, content && type == AE_IFREG ? (la_int64_t)strlen(content) : 0);
    if (type == AE_IFCHR)
        archive_entry_set_rdev(e, makedev(1, 3));
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    if (content && type == AE_IFREG)
        archive_write_data(a, content, strlen(content));
    archive_entry_free(e);
}

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

static int
exists_in(const char *rel)
{
    char p[600];
    struct stat st;

    snprintf(p, sizeof p, "%s/%s", dest, rel);
    return lstat(p, &st) == 0;
}

static void
test_hostile_entries_refused(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_stats st;
    ph_error_t err = NULL;
    char outside[400];
    struct stat sb;

    (void)state;
    snprintf(outside, sizeof outside, "%s/escaped", test_dir);
    tb_add(a, "run/", AE_IFDIR, 0755, NULL, NULL);
    tb_add(a, "run/good.log", AE_IFREG, 0600, "hello\n", NULL);
    tb_add(a, "run/tool", AE_IFREG, 04755, "#!/bin/sh\n", NULL);
    tb_add(a, "/etc/absolute", AE_IFREG, 0644, "x", NULL);
    tb_add(a, "run/../escaped", AE_IFREG, 0644, "x", NULL);
    tb_add(a, "run/a/../../../escaped", AE_IFREG, 0644, "x", NULL);
    tb_add(a, "run/link", AE_IFLNK, 0777, NULL, "/etc");
    tb_add(a, "run/link/passwd", AE_IFREG, 0644, "through the link", NULL);
    tb_add(a, "run/up", AE_IFLNK, 0777, NULL, "../..");
    tb_add(a, "run/ok-link", AE_IFLNK, 0777, NULL, "good.log");
    tb_add(a, "run/hard", AE_IFREG, 0644, NULL, "/etc/passwd");
    tb_add(a, "run/dev", AE_IFCHR, 0644, NULL, NULL);
    tb_add(a, "run/fifo", AE_IFIFO, 0644, NULL, NULL);
    archive_write_close(a);
    archive_write_free(a);

    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &st, &err), 0);
    tu_capture_end();
    assert_null(err);
    assert_true(exists_in("good.log"));
    assert_true(exists_in("ok-link"));
    /* The escaping link was refused, so `link/passwd` is a plain path
     * inside the run dir: a directory, never a symlink to /etc. */
    {
        char lp[600];
        snprintf(lp, sizeof lp, "%s/link", dest);
        assert_int_equal(lstat(lp, &sb), 0);
        assert_true(S_ISDIR(sb.st_mode));
    }
    assert_true(exists_in("link/passwd"));
    assert_false(exists_in("up"));
    assert_false(exists_in("hard"));
    assert_false(exists_in("dev"));
    assert_false(exists_in("fifo"));
    assert_false(exists_in("etc"));
    assert_int_equal(lstat(outside, &sb), -1);
    assert_int_equal(st.files, 3);
    assert_int_equal(st.links, 1);
    assert_int_equal(st.refused, 8);
    /* 0600 becomes readable, setuid is dropped */
    {
        char p[600];
        snprintf(p, sizeof p, "%s/good.log", dest);
        assert_int_equal(stat(p, &sb), 0);
        assert_int_equal(sb.st_mode & 07777, 0644);
        assert_int_equal(sb.st_uid, getuid());
        snprintf(p, sizeof p, "%s/tool", dest);
        assert_int_equal(stat(p, &sb), 0);
        assert_int_equal(sb.st_mode & 07777, 0755);
    }
    free(t.data);
}

static void
test_existing_symlink_not_followed(void **state)
{
    tarbuf t;
    struct archive *a;
    ph_tar_stats st;
    ph_error_t err = NULL;
    char p[600], target[600];
    struct stat sb;

    (void)state;
    /* A link planted in the destination must not be written through. */
    snprintf(target, sizeof target, "%s/victim", test_dir);
    snprintf(p, sizeof p, "%s/planted", dest);
    assert_int_equal(symlink(target, p), 0);
    snprintf(p, sizeof p, "%s/dirlink", dest);
    assert_int_equal(symlink(test_dir, p), 0);
    a = tb_open(&t);
    tb_add(a, "run/planted", AE_IFREG, 0644, "data", NULL);
    tb_add(a, "run/dirlink/victim2", AE_IFREG, 0644, "data", NULL);
    archive_write_close(a);
    archive_write_free(a);
    tu_capture_begin();
    assert_int_equal(ph_tar_extract_buffer(t.data, t.len, dest, 1, &st, &err), 0);
    tu_capture_end();
    assert_int_equal(lstat(target, &sb), -1);
    snprintf(p, sizeof p, "%s/victim2", test_dir);
    assert_int_equal(lstat(p, &sb), -1);
    snprintf(p, sizeof p, "%s/planted", dest);
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISREG(sb.st_mode)); /* replaced by a plain file */
    assert_int_equal(st.refused, 1);
    free(t.data);
}

static void
test_streamed_in_small_chunks(void **state)
{
    tarbuf t;
    struct archive *a = tb_open(&t);
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    size_t big_len = 3u << 20, off = 0;
    char *big = malloc(big_len + 1), p[600];
    unsigned seed = 7;
    FILE *f;

    (void)state;
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + (i * 7 + i / 4096) % 26);
    big[big_len] = '\0';
    tb_add(a, "run/big.out", AE_IFREG, 0644, big, NULL);
    archive_write_close(a);
    archive_write_free(a);
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
    assert_true(st.bytes == big_len);
    snprintf(p, sizeof p, "%s/big.out", dest);
    f = fopen(p, "r");
    assert_non_null(f);
    {
        char *back = malloc(big_len + 1);
        assert_int_equal(fread(back, 1, big_len + 1, f), big_len);
        assert_memory_equal(back, big, big_len);
        free(back);
    }
    fclose(f);
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

/* 256 MiB through the extractor, generated on the fly: peak RSS must not
 * follow the archive's size. */
static void
test_bounded_memory(void **state)
{
    ph_tar_extract *x;
    ph_tar_stats st;
    ph_error_t err = NULL;
    char hdr[512], chunk[65536];
    unsigned long size = 256ul << 20, sum = 0;
    long before, after;

    (void)state;
    before = vm_hwm_kb();
    memset(hdr, 0, sizeof hdr);
    strcpy(hdr, "run/huge.bin");
    strcpy(hdr + 100, "0000644");
    strcpy(hdr + 108, "0000000");
    strcpy(hdr + 116, "0000000");
    snprintf(hdr + 124, 12, "%011lo", size);
    strcpy(hdr + 136, "00000000000");
    hdr[156] = '0';
    memcpy(hdr + 257, "ustar\0" "00", 8);
    memset(hdr + 148, ' ', 8);
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)hdr[i];
    snprintf(hdr + 148, 8, "%06lo", sum);
    x = ph_tar_extract_new(dest, 1, &err);
    assert_non_null(x);
    assert_int_equal(ph_tar_extract_feed(x, hdr, sizeof hdr, &err), 0);
    memset(chunk, 'z', sizeof chunk);
    for (unsigned long done = 0; done < size; done += sizeof chunk)
        assert_int_equal(ph_tar_extract_feed(x, chunk, sizeof chunk, &err), 0);
    memset(chunk, 0, sizeof chunk);
    assert_int_equal(ph_tar_extract_feed(x, chunk, 1024, &err), 0);
    assert_int_equal(ph_tar_extract_finish(x, &st, &err), 0);
    ph_tar_extract_free(x);
    after = vm_hwm_kb();
    assert_true(st.bytes == size);
    if (after - before > 32 * 1024)
        fail_msg("peak RSS grew by %ld kB for a %lu-byte archive", after - before, size);
    {
        char p[600];
        snprintf(p, sizeof p, "%s/huge.bin", dest);
        unlink(p);
    }
}

static void
test_truncated_archive(void **state)
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
    archive_write_close(a);
    archive_write_free(a);
    assert_int_equal(ph_tar_extract_buffer(t.data, 4096, dest, 1, &st, &err), -1);
    assert_non_null(err);
    assert_true(exists_in("first.txt"));
    ph_error_free(&err);
    free(payload);
    free(t.data);
}

static void
test_context_deterministic_and_ignored(void **state)
{
    char ctx[400], p[600];
    void *a = NULL, *b = NULL;
    size_t al, bl;
    ph_error_t err = NULL;
    ph_tar_stats st;
    const ph_tar_extra extra[] = { { .name = "extra.txt", .data = "in memory", .len = 9, .mode = 0644 } };

    (void)state;
    snprintf(ctx, sizeof ctx, "%s/ctx", test_dir);
    mkdir(ctx, 0755);
    snprintf(p, sizeof p, "%s/ctx/sub", test_dir);
    mkdir(p, 0755);
    tu_write("ctx/Dockerfile", "FROM scratch\n");
    tu_write("ctx/keep.c", "int x;\n");
    tu_write("ctx/secret.key", "no\n");
    tu_write("ctx/important.key", "yes\n");
    tu_write("ctx/sub/build.o", "obj\n");
    tu_write("ctx/.dockerignore", "# comment\n*.key\n!important.key\n**/*.o\n");
    assert_int_equal(ph_tar_context_build(ctx, extra, 1, 1 << 20, &a, &al, &err), 0);
    sleep(1);
    tu_write("ctx/keep.c", "int x;\n"); /* same bytes, newer mtime */
    assert_int_equal(ph_tar_context_build(ctx, extra, 1, 1 << 20, &b, &bl, &err), 0);
    assert_int_equal(al, bl);
    assert_memory_equal(a, b, al);
    assert_int_equal(ph_tar_extract_buffer(a, al, dest, 0, &st, &err), 0);
    assert_true(exists_in("Dockerfile"));
    assert_true(exists_in("keep.c"));
    assert_true(exists_in("important.key"));
    assert_true(exists_in("extra.txt"));
    assert_false(exists_in("secret.key"));
    assert_false(exists_in("sub/build.o"));
    free(a);
    free(b);
    assert_int_equal(ph_tar_context_build(ctx, NULL, 0, 100, &a, &al, &err), -1);
    assert_non_null(err);
    ph_error_free(&err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hostile_entries_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_symlink_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streamed_in_small_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounded_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_archive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_deterministic_and_ignored, setup, teardown),
    };
    return cmocka_run_group_tests_name("tar", tests, NULL, NULL);
}
