/* fuzz_tar.c - libFuzzer target for archive extraction (ph_tar.h).
 *
 * The input is the archive stream, fed in two pieces (split where its
 * first byte says) into a fresh destination inside a parent temp dir, as
 * collection does with the Engine's stream.  Whatever the input, after
 * the extraction:
 *   - nothing exists in the parent but the destination;
 *   - nothing under it is a device, FIFO or socket, has set-id bits or a
 *     mode other than 0644/0755, or is a symlink resolving outside it;
 * and then everything is removed for the next input. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_tar.h"

static char parent[64], dest[96], real_dest[PATH_MAX];

static void
fail(const char *what, const char *path)
{
    fprintf(stderr, "fuzz_tar: %s: %s\n", what, path);
    abort();
}

static int
check_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    size_t n = strlen(dest);
    char real[PATH_MAX];

    (void)ftw;
    if (strcmp(path, parent) == 0)
        return 0;
    if (strncmp(path, dest, n) != 0 || (path[n] != '/' && path[n] != '\0'))
        fail("written outside the destination", path);
    if (path[n] == '\0')
        return 0;
    if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) || S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode))
        fail("a device, FIFO or socket", path);
    if ((S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) && (st->st_mode & 07777) != 0644 &&
        (st->st_mode & 07777) != 0755)
        fail("a mode other than 0644 or 0755", path);
    if (flag == FTW_SL && realpath(path, real) != NULL) {
        size_t m = strlen(real_dest);

        if (strncmp(real, real_dest, m) != 0 || (real[m] != '/' && real[m] != '\0'))
            fail("a symlink resolving outside the destination", path);
    }
    return 0;
}

static int
remove_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    ph_log_set_level(PH_LOG_ERROR); /* a refusal warns; thousands per second is noise */
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small limits: an input may declare a terabyte. */
    const ph_tar_limits lim = { .max_bytes = 64 << 20, .max_entries = 10000 };
    ph_error_t err = NULL;
    ph_tar_extract *x;
    size_t cut = size > 0 ? (size_t)data[0] * size / 256 : 0;

    snprintf(parent, sizeof parent, "/tmp/ph-fuzz-tar-XXXXXX");
    if (mkdtemp(parent) == NULL)
        abort();
    snprintf(dest, sizeof dest, "%s/dest", parent);
    if (mkdir(dest, 0755) < 0 || realpath(dest, real_dest) == NULL)
        abort();
    x = ph_tar_extract_new(dest, 1, &lim, &err);
    if (x == NULL)
        abort();
    if (ph_tar_extract_feed(x, data, cut, &err) == 0 && ph_tar_extract_feed(x, data + cut, size - cut, &err) == 0)
        ph_tar_extract_finish(x, NULL, &err);
    ph_tar_extract_free(x);
    ph_error_free(&err);
    if (nftw(parent, check_cb, 64, FTW_PHYS) != 0)
        abort();
    nftw(parent, remove_cb, 64, FTW_DEPTH | FTW_PHYS);
    return 0;
}
