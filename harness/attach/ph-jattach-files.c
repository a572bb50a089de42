/* ph-jattach-files.c - `ph-jattach files PID COMMAND ...`: a JVM's files
 * in its own root, for the sampler's attach (images/tools/ph-attach-sampler),
 * through ph_inroot.h:
 *
 *   files PID mkdirs DIR                  DIR made, root's and closed to others
 *   files PID install SRC DIR BASE        SRC put into DIR by its content's
 *                                         hash; the path printed
 *   files PID mkout DIR UID GID           a fresh DIR of UID:GID, 0700
 *   files PID take DIR OUT MAX            DIR's plain files into OUT (at most
 *                                         MAX bytes), then DIR removed
 *   files PID copy PATH DEST LEFT         the process's mapped file PATH to
 *                                         DEST (ph_inroot_copy_mapped): its
 *                                         size printed, or exit 3 and why
 *   files PID mapped INSTALLED            refused (1) when the process maps
 *                                         a sampler library but INSTALLED
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_inroot.h"

static int
usage(void)
{
    fprintf(stderr, "usage: ph-jattach files PID mkdirs DIR | install SRC DIR BASE | mkout DIR UID GID | "
                    "take DIR OUT MAX | copy PATH DEST LEFT | mapped INSTALLED\n");
    return 2;
}

/* A decimal at most MAX into *V: 0, or -1. */
static int
number(const char *s, uint64_t max, uint64_t *v)
{
    char *end;
    unsigned long long n;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    n = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || n > max)
        return -1;
    *v = n;
    return 0;
}

int
ph_jattach_files_main(int argc, char **argv)
{
    char why[2 * PATH_MAX + 512] = "", path[PATH_MAX];
    uint64_t pid, a, b;
    int root, rc = 2;

    if (argc < 4 || number(argv[1], INT32_MAX, &pid) < 0 || pid == 0)
        return usage();
    snprintf(path, sizeof path, "/proc/%" PRIu64 "/root", pid);
    if ((root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "ph-jattach: files: %s: %s\n", path, strerror(errno));
        return 1;
    }
    umask(022);
    if (strcmp(argv[2], "mkdirs") == 0 && argc == 4) {
        rc = ph_inroot_mkdirs(root, argv[3], why, sizeof why) < 0;
    } else if (strcmp(argv[2], "install") == 0 && argc == 6) {
        rc = ph_inroot_install(root, argv[3], argv[4], argv[5], path, sizeof path, why, sizeof why) < 0;
        if (rc == 0)
            printf("%s\n", path);
    } else if (strcmp(argv[2], "mkout") == 0 && argc == 6) {
        if (number(argv[4], UINT32_MAX - 1, &a) < 0 || number(argv[5], UINT32_MAX - 1, &b) < 0)
            rc = usage();
        else
            rc = ph_inroot_mkout(root, argv[3], (uid_t)a, (gid_t)b, why, sizeof why) < 0;
    } else if (strcmp(argv[2], "take") == 0 && argc == 6) {
        ph_inroot_taken t;

        if (number(argv[5], UINT64_MAX, &a) < 0)
            rc = usage();
        else if ((rc = ph_inroot_take(root, argv[3], argv[4], a, &t, why, sizeof why) < 0) == 0)
            fprintf(stderr, "ph-jattach: took %u file%s (%" PRIu64 " bytes) from %s%s\n", t.files + t.truncated,
                    t.files + t.truncated == 1 ? "" : "s", t.bytes, argv[3], t.truncated ? ", some cut" : "");
    } else if (strcmp(argv[2], "copy") == 0 && argc == 6) {
        uint64_t size = 0;
        int r = number(argv[5], UINT64_MAX, &a) < 0 ? 2
                                                     : ph_inroot_copy_mapped(root, argv[3], argv[4], a, &size, why,
                                                                             sizeof why);

        if (r == 1)
            printf("%" PRIu64 "\n", size);
        else if (r == 0)
            printf("%s\n", why);
        rc = r == 2 ? usage() : r == 1 ? 0 : r == 0 ? 3 : 1;
    } else if (strcmp(argv[2], "mapped") == 0 && argc == 4) {
        char other[PATH_MAX + 16];
        FILE *maps;

        snprintf(path, sizeof path, "/proc/%" PRIu64 "/maps", pid);
        if ((maps = fopen(path, "re")) == NULL) {
            snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
            rc = 1;
        } else {
            rc = ph_inroot_sampler_mapped(maps, argv[3], other, sizeof other) < 0;
            fclose(maps);
            if (rc == 1)
                snprintf(why, sizeof why,
                         "process %" PRIu64 " maps %s, a sampler library that is not this profharness's (%s): "
                         "an earlier attach's of another version, or the service's own; it is not loaded, "
                         "and ours is not put beside it (both would take the same signals): restart the "
                         "service to attach to it, or use `start`",
                         pid, other, argv[3]);
        }
    } else {
        rc = usage();
    }
    if (rc == 1)
        fprintf(stderr, "ph-jattach: files: %s\n", why);
    close(root);
    return rc;
}
