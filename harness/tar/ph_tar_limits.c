/* ph_tar_limits.c - the extraction limits as users write them (see
 * ph_tar.h): names, parsing of sizes and counts, and sizes in messages. */
#include "ph_tar.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "ph_tar_int.h"

const char *
ph_tar_limit_name(ph_tar_limit limit)
{
    switch (limit) {
    case PH_TAR_LIMIT_BYTES:
        return "max_bytes";
    case PH_TAR_LIMIT_ENTRIES:
        return "max_entries";
    case PH_TAR_LIMIT_FREE:
        return "min_free";
    default:
        return "none";
    }
}

static const struct size_unit {
    const char *name;
    uint64_t factor;
} size_units[] = {
    { "B", 1 },
    { "KiB", 1ull << 10 }, { "MiB", 1ull << 20 }, { "GiB", 1ull << 30 }, { "TiB", 1ull << 40 },
    { "kB", 1000ull }, { "MB", 1000000ull }, { "GB", 1000000000ull }, { "TB", 1000000000000ull },
};

int
ph_tar_limit_parse(ph_tar_limit limit, const char *text, uint64_t *out, ph_error_t *err)
{
    int is_size = limit != PH_TAR_LIMIT_ENTRIES;
    const char *p = text, *unit;
    uint64_t v = 0, factor = 1;

    if (strcmp(text, "unlimited") == 0) {
        *out = PH_TAR_NO_LIMIT;
        return 0;
    }
    if (*p < '0' || *p > '9')
        goto bad;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return ph_bad_input(err, "`%s` is too large for `%s`", text, ph_tar_limit_name(limit));
        v = v * 10 + (uint64_t)(*p - '0');
    }
    unit = *p == ' ' ? p + 1 : p;
    if (*unit != '\0') {
        size_t i;

        if (!is_size)
            goto bad;
        for (i = 0; i < sizeof size_units / sizeof size_units[0]; i++)
            if (strcmp(unit, size_units[i].name) == 0)
                break;
        if (i == sizeof size_units / sizeof size_units[0])
            goto bad;
        factor = size_units[i].factor;
    } else if (*p != '\0') {
        goto bad; /* a trailing space */
    }
    if (v > UINT64_MAX / factor)
        return ph_bad_input(err, "`%s` is too large for `%s`", text, ph_tar_limit_name(limit));
    v *= factor;
    if (v == 0) {
        if (limit != PH_TAR_LIMIT_FREE)
            return ph_bad_input(err, "`%s` must be more than 0 (`unlimited` turns the limit off)",
                                ph_tar_limit_name(limit));
        v = PH_TAR_NO_LIMIT; /* keep nothing free: the check is off */
    }
    *out = v;
    return 0;
bad:
    if (is_size)
        return ph_bad_input(err, "`%s` is not a size for `%s` (bytes, or a number and a unit: 512MiB, 16GiB, 2TB; "
                                 "or `unlimited`)", text, ph_tar_limit_name(limit));
    return ph_bad_input(err, "`%s` is not a count for `%s` (a whole number, or `unlimited`)", text,
                        ph_tar_limit_name(limit));
}

/* See ph_tar_int.h. */
const char *
ph_tar_size_text(uint64_t v, char buf[32])
{
    static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    int u = 0;

    if (v == PH_TAR_NO_LIMIT) {
        snprintf(buf, 32, "unlimited");
        return buf;
    }
    while (u < 6 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(buf, 32, "%" PRIu64 " %s", v, units[u]);
    return buf;
}


uint64_t
ph_tar_min_free_of(uint64_t set, int fd)
{
    struct statvfs sv;

    if (set != 0)
        return set;
    if (fstatvfs(fd, &sv) == 0 && (uint64_t)sv.f_blocks * sv.f_frsize / 20 < PH_TAR_DEFAULT_MIN_FREE)
        return (uint64_t)sv.f_blocks * sv.f_frsize / 20;
    return PH_TAR_DEFAULT_MIN_FREE;
}

int
ph_tar_room(uint64_t avail, uint64_t min_free, uint64_t need)
{
    if (min_free == PH_TAR_NO_LIMIT)
        return 1;
    return avail >= min_free && avail - min_free >= need;
}

int
ph_tar_free_check(int fd, uint64_t min_free, uint64_t need, const char *rel, ph_error_t *err)
{
    struct statvfs sv;
    uint64_t avail;
    char a[32], n[32], v[32];

    if (min_free == PH_TAR_NO_LIMIT || fstatvfs(fd, &sv) < 0)
        return 0; /* off, or cannot tell: a write that fails will say why */
    avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    if (ph_tar_room(avail, min_free, need))
        return 0;
    ph_fail(err, 0, "writing `%s` would leave less free space (%s available, %s more to write): over the limit "
            "`%s` of %s", rel, ph_tar_size_text(avail, a), ph_tar_size_text(need, n),
            ph_tar_limit_name(PH_TAR_LIMIT_FREE), ph_tar_size_text(min_free, v));
    (*err)->errnum = ENOSPC;
    ph_error_hint(err, "if this is expected, raise `%s` (`unlimited` turns it off)",
                  ph_tar_limit_name(PH_TAR_LIMIT_FREE));
    return -1;
}
