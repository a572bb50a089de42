/* test_lines.c - the one line splitter (ph_lines) and the chunked file
 * reader under every streaming parser: the same lines whatever the
 * chunking, the limit exact whole or split, '\r' removed or kept, a last
 * line without a newline; a file read the same through read() and from
 * the page cache, across mmap windows. */
#include "test_util.h"

#include <errno.h>
#include <stdint.h>

#include "ph_lines.h"

/* The lines seen, as "LINENO:TEXT|" or "LINENO:LONG|". */
typedef struct seen {
    char s[512];
    size_t n;
} seen;

static int
line_cb(void *ctx, const char *line, size_t len, size_t lineno, ph_error_t *err)
{
    seen *sn = ctx;

    (void)err;
    if (line == NULL)
        sn->n += (size_t)snprintf(sn->s + sn->n, sizeof sn->s - sn->n, "%zu:LONG|", lineno);
    else
        sn->n += (size_t)snprintf(sn->s + sn->n, sizeof sn->s - sn->n, "%zu:%.*s|", lineno, (int)len, line);
    assert_true(sn->n < sizeof sn->s);
    return 0;
}

/* IN split with MAX_LINE and FLAGS, fed in chunks of every size (through
 * both feeds), must give WANT. */
static void
expect_lines(const char *in, size_t max_line, int flags, const char *want)
{
    size_t len = strlen(in);

    for (size_t chunk = 1; chunk <= len; chunk++) {
        for (int with = 0; with <= 1; with++) {
            ph_error_t err = NULL;
            seen sn = { "", 0 };
            ph_lines l;

            ph_lines_init(&l, max_line, flags, line_cb, &sn);
            for (size_t o = 0; o < len; o += chunk) {
                size_t n = o + chunk > len ? len - o : chunk;
                assert_int_equal(with ? ph_lines_feed_with(&l, in + o, n, line_cb, &err)
                                      : ph_lines_feed(&l, in + o, n, &err),
                                 0);
            }
            assert_int_equal(ph_lines_finish(&l, &err), 0);
            ph_lines_free(&l);
            if (strcmp(sn.s, want) != 0)
                fail_msg("chunks of %zu: got %s, wanted %s", chunk, sn.s, want);
        }
    }
}

/* A limit of 5: "eeeee" and "ffff\r" (the '\r' counts) are read, six
 * bytes are one LONG line and the next line is read; an empty line is a
 * line; the last one needs no newline. */
static void
test_split(void **state)
{
    const char *in = "a\r\nbb\n\neeeee\nffff\r\nxxxxxx\nyyyyyyyyyyyy\r\nd";

    (void)state;
    expect_lines(in, 5, 0, "1:a|2:bb|3:|4:eeeee|5:ffff|6:LONG|7:LONG|8:d|");
    expect_lines(in, 5, PH_LINES_KEEP_CR, "1:a\r|2:bb|3:|4:eeeee|5:ffff\r|6:LONG|7:LONG|8:d|");
    expect_lines("\r\n\r", 5, 0, "1:|2:|");
}

/* A file that stops on a callback's error: the error names the file; a
 * missing file is an error naming it. */
static int
fail_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    (void)ctx, (void)buf, (void)len;
    return ph_fail(err, EINVAL, "bad chunk");
}

typedef struct sum {
    uint64_t bytes, hash;
} sum;

static int
sum_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    sum *s = ctx;

    (void)err;
    for (size_t i = 0; i < len; i++)
        s->hash = (s->hash ^ (unsigned char)buf[i]) * 0x100000001b3ull;
    s->bytes += len;
    return 0;
}

/* 17 MiB + 5: two mmap windows, the second short; the same bytes in the
 * same order through read(), the page cache and a pipe. */
static void
test_read_chunks(void **state)
{
    size_t size = (17u << 20) + 5;
    char path[300], *data = malloc(size);
    sum want = { 0, 0xcbf29ce484222325ull };
    unsigned long long got_size = 0;
    ph_error_t err = NULL;
    int fd = -1, pfd[2] = { -1, -1 };
    FILE *f;

    (void)state;
    assert_non_null(data);
    for (size_t i = 0; i < size; i++)
        data[i] = (char)(i * 7 + (i >> 20));
    tu_mkdtemp();
    snprintf(path, sizeof path, "%s/in", test_dir);
    assert_non_null(f = fopen(path, "w"));
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
    sum_cb(&want, data, size, NULL);

    for (int flags = 0; flags <= PH_READ_MAP; flags += PH_READ_MAP) {
        sum s = { 0, 0xcbf29ce484222325ull };
        assert_true((fd = open(path, O_RDONLY)) >= 0);
        assert_int_equal(ph_read_fd_chunks(fd, "in", flags, sum_cb, &s, &got_size, &err), 0);
        close(fd);
        assert_int_equal(got_size, size);
        assert_int_equal(s.bytes, size);
        assert_true(s.hash == want.hash);
    }
    {
        sum s = { 0, 0xcbf29ce484222325ull };
        assert_int_equal(ph_read_file_chunks(path, sum_cb, &s, &got_size, &err), 0);
        assert_int_equal(got_size, size);
        assert_true(s.hash == want.hash);
    }
    /* a pipe cannot be mapped: read() */
    {
        sum s = { 0, 0xcbf29ce484222325ull };
        sum small = { 0, 0xcbf29ce484222325ull };
        assert_int_equal(pipe(pfd), 0);
        assert_int_equal(write(pfd[1], data, 4096), 4096);
        close(pfd[1]);
        assert_int_equal(ph_read_fd_chunks(pfd[0], "stdin", PH_READ_MAP, sum_cb, &s, &got_size, &err), 0);
        close(pfd[0]);
        sum_cb(&small, data, 4096, NULL);
        assert_int_equal(got_size, 4096);
        assert_true(s.hash == small.hash);
    }
    for (int flags = 0; flags <= PH_READ_MAP; flags += PH_READ_MAP) {
        assert_true((fd = open(path, O_RDONLY)) >= 0);
        assert_int_equal(ph_read_fd_chunks(fd, "in", flags, fail_cb, NULL, NULL, &err), -1);
        close(fd);
        assert_string_equal(err->msg, "`in`: bad chunk: Invalid argument");
        ph_error_free(&err);
    }
    snprintf(path, sizeof path, "%s/missing", test_dir);
    assert_int_equal(ph_read_file_chunks(path, sum_cb, &want, NULL, &err), -1);
    assert_non_null(strstr(err->msg, "open `"));
    ph_error_free(&err);
    free(data);
    tu_rmdir();
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_read_chunks),
    };
    return cmocka_run_group_tests_name("lines", tests, NULL, NULL);
}
