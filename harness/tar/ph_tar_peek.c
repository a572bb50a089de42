/* ph_tar_peek.c - the first member of the beginning of a tar: what the
 * Engine's archive endpoint says of one path (a file's first bytes, a
 * symlink's target) without taking the whole file out. */
#include "ph_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int
ph_tar_peek(const void *data, size_t len, ph_tar_peek_t *out, void *buf, size_t cap, ph_error_t *err)
{
    struct archive *a = archive_read_new();
    struct archive_entry *ent;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (a == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    archive_read_support_format_tar(a);
    if (archive_read_open_memory(a, data, len) != ARCHIVE_OK || archive_read_next_header(a, &ent) != ARCHIVE_OK) {
        ph_fail(err, 0, "not a tar: %s", archive_error_string(a) ? archive_error_string(a) : "no header");
        goto out;
    }
    switch (archive_entry_filetype(ent)) {
    case AE_IFREG: {
        /* the data there is: the prefix may end inside the member, and
         * a read asking for more than is there gets nothing: by 512 */
        while (out->len < cap) {
            size_t want = cap - out->len < 512 ? cap - out->len : 512;
            la_ssize_t n = archive_read_data(a, (char *)buf + out->len, want);
            if (n <= 0)
                break;
            out->len += (size_t)n;
        }
        out->type = PH_TAR_PEEK_FILE;
        break;
    }
    case AE_IFLNK:
        out->type = PH_TAR_PEEK_SYMLINK;
        snprintf(out->target, sizeof out->target, "%s",
                 archive_entry_symlink(ent) ? archive_entry_symlink(ent) : "");
        break;
    default:
        out->type = PH_TAR_PEEK_OTHER;
        break;
    }
    rc = 0;
out:
    archive_read_free(a);
    return rc;
}
