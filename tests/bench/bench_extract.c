/* bench_extract.c - the driver of tests/bench/bench-extract.sh.
 *
 *   bench_extract make SHAPE FILE   write an archive of SHAPE to FILE
 *     big     one 1 GiB file of non-zero data
 *     small   50,000 files of 4 KiB in 50 directories
 *     deep    2,000 files of 16 KiB at depth 1,900 (a directory entry each)
 *   bench_extract extract FILE DIR  extract FILE into DIR (which must exist)
 *     through ph_tar, fed in 64 KiB chunks as collection feeds it; prints
 *     "SECONDS MBYTES CPU_SECONDS" (archive bytes / 1e6).
 *
 * Reading FILE in chunks keeps the archive out of memory, so the peak RSS
 * measured around `extract` is the extractor's. */
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ph_tar.h"

typedef struct buf {
    char *data;
    size_t len, cap;
} buf;

static la_ssize_t
buf_write(struct archive *a, void *ud, const void *p, size_t n)
{
    buf *b = ud;

    (void)a;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        if ((b->data = realloc(b->data, b->cap)) == NULL)
            abort();
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return (la_ssize_t)n;
}

/* Non-zero bytes: holes must not make a shape look fast. */
static void
fill(unsigned char *p, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        p[i] = (unsigned char)(*s | 1);
    }
}

static void
add(struct archive *a, const char *name, unsigned type, const unsigned char *data, size_t len)
{
    struct archive_entry *e = archive_entry_new();

    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, type == AE_IFDIR ? 0755 : 0644);
    archive_entry_set_mtime(e, 1700000000, 0);
    archive_entry_set_size(e, type == AE_IFREG ? (la_int64_t)len : 0);
    if (archive_write_header(a, e) != ARCHIVE_OK)
        abort();
    if (type == AE_IFREG && archive_write_data(a, data, len) != (la_ssize_t)len)
        abort();
    archive_entry_free(e);
}

static void
make(const char *shape, buf *b)
{
    static unsigned char data[1 << 20];
    static char name[8192];
    struct archive *a = archive_write_new();
    uint64_t s = 88172645463325252ull;

    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open(a, b, NULL, buf_write, NULL) != ARCHIVE_OK)
        abort();
    fill(data, sizeof data, &s);
    add(a, "run/", AE_IFDIR, NULL, 0);
    if (strcmp(shape, "big") == 0) {
        struct archive_entry *e = archive_entry_new();

        archive_entry_set_pathname(e, "run/big.out");
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, 1ll << 30);
        archive_write_header(a, e);
        archive_entry_free(e);
        for (int i = 0; i < 1024; i++) {
            data[i] ^= 0x5a; /* not one block repeated */
            archive_write_data(a, data, sizeof data);
        }
    } else if (strcmp(shape, "small") == 0) {
        for (int d = 0; d < 50; d++) {
            snprintf(name, sizeof name, "run/d%02d/", d);
            add(a, name, AE_IFDIR, NULL, 0);
            for (int f = 0; f < 1000; f++) {
                snprintf(name, sizeof name, "run/d%02d/f%04d.log", d, f);
                add(a, name, AE_IFREG, data + (size_t)(d * 1000 + f) * 16 % (sizeof data - 4096), 4096);
            }
        }
    } else if (strcmp(shape, "deep") == 0) {
        size_t n = (size_t)snprintf(name, sizeof name, "run/");

        for (int i = 0; i < 1900; i++) {
            name[n++] = 'd';
            name[n++] = '/';
            name[n] = '\0';
            add(a, name, AE_IFDIR, NULL, 0);
        }
        for (int f = 0; f < 2000; f++) {
            snprintf(name + n, sizeof name - n, "f%04d", f);
            add(a, name, AE_IFREG, data + (size_t)f * 64, 16384);
        }
    } else {
        fprintf(stderr, "bench_extract: unknown shape `%s`\n", shape);
        exit(2);
    }
    archive_write_close(a);
    archive_write_free(a);
}

static double
cpu(const struct rusage *u)
{
    return (double)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) + (u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1e6;
}

static int
extract(const char *file, const char *dir)
{
    static char chunk[65536];
    FILE *f = fopen(file, "rb");
    struct timespec t0, t1;
    struct rusage u0, u1;
    ph_error_t err = NULL;
    ph_tar_extract *x;
    ph_tar_stats st;
    uint64_t total = 0;
    size_t n;

    if (f == NULL) {
        perror(file);
        return 1;
    }
    getrusage(RUSAGE_SELF, &u0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    x = ph_tar_extract_new(dir, 1, NULL, &err);
    while (x && !err && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        ph_tar_extract_feed(x, chunk, n, &err);
        total += n;
    }
    if (x && !err)
        ph_tar_extract_finish(x, &st, &err);
    ph_tar_extract_free(x);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &u1);
    fclose(f);
    if (err) {
        fprintf(stderr, "bench_extract: %s\n", err->msg);
        return 1;
    }
    printf("%.4f %.1f %.4f\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           (double)total / 1e6, cpu(&u1) - cpu(&u0));
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "make") == 0) {
        FILE *f = fopen(argv[3], "wb");
        buf b = { 0 };

        if (f == NULL) {
            perror(argv[3]);
            return 1;
        }
        make(argv[2], &b);
        if (fwrite(b.data, 1, b.len, f) != b.len || fclose(f) != 0) {
            perror(argv[3]);
            return 1;
        }
        free(b.data);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "extract") == 0)
        return extract(argv[2], argv[3]);
    fprintf(stderr, "usage: bench_extract make big|small|deep FILE | extract FILE DIR\n");
    return 2;
}
