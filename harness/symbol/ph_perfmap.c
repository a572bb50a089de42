/* ph_perfmap.c - perf map files read (see ph_perfmap.h).
 *
 * The entries are sorted by start, in the order written among equal
 * starts, and then only the first of each start is kept: a lookup names
 * an address by the first entry written at the nearest start, so the
 * others can never be named.  Kept, they cost every lookup a walk back
 * over them (a map of a million entries at one start made a conversion
 * take 466 s of host time); dropped, a lookup is one binary search. */
#include "ph_perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct pm_entry {
    uint64_t start, end;
    size_t name; /* offset in names */
} pm_entry;

struct ph_perfmap {
    pm_entry *v;
    size_t n;
    char *names;
    ph_perfmap_stats st;
};

/* A hex number of a map line, with or without 0x; at most 16 digits. */
static int
parse_hex(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;

    if (n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
        n -= 2;
    }
    if (n == 0 || n > 16)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

static int
cmp_entry(const void *a, const void *b)
{
    const pm_entry *x = a, *y = b;

    /* by start, then in the order written (names are laid out in it) */
    return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->name > y->name) - (x->name < y->name);
}

/* One line (no line end) into M; names has room for it and the suffix. */
static void
add_line(ph_perfmap *m, const char *line, size_t len, const char *suffix, size_t suffix_n, size_t max_entries,
         size_t *names_n)
{
    const char *sp1 = memchr(line, ' ', len), *sp2, *name, *end = line + len;
    uint64_t start, size;
    size_t nn;

    m->st.lines++;
    if (sp1 == NULL || (sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1))) == NULL ||
        parse_hex(line, (size_t)(sp1 - line), &start) < 0 || parse_hex(sp1 + 1, (size_t)(sp2 - sp1 - 1), &size) < 0) {
        m->st.bad_lines++;
        return;
    }
    name = sp2 + 1;
    while (end > name && end[-1] == '\r')
        end--;
    nn = (size_t)(end - name);
    if (memchr(name, '\0', nn) != NULL)
        nn = strlen(name);
    if (nn == 0) {
        m->st.bad_lines++;
        return;
    }
    if (m->n >= max_entries) {
        m->st.dropped++;
        return;
    }
    m->v[m->n++] = (pm_entry){ start, size > UINT64_MAX - start ? UINT64_MAX : start + size, *names_n };
    memcpy(m->names + *names_n, name, nn);
    memcpy(m->names + *names_n + nn, suffix, suffix_n);
    *names_n += nn + suffix_n;
    m->names[(*names_n)++] = '\0';
}

ph_perfmap *
ph_perfmap_parse(const char *text, size_t len, const ph_perfmap_opts *o, ph_error_t *err)
{
    size_t max_bytes = o && o->max_bytes ? o->max_bytes : PH_PERFMAP_MAX_BYTES;
    size_t max_entries = o && o->max_entries ? o->max_entries : PH_PERFMAP_MAX_ENTRIES;
    const char *suffix = o && o->suffix ? o->suffix : "";
    size_t suffix_n = strlen(suffix), lines = 0, names_n = 0, cap;
    ph_perfmap *m = calloc(1, sizeof *m);

    if (m == NULL)
        goto oom;
    if (len > max_bytes) {
        /* what is past the bound is not read; a line cut there is dropped */
        m->st.cut = 1;
        len = max_bytes;
        while (len > 0 && text[len - 1] != '\n')
            len--;
    }
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    lines++;
    cap = lines < max_entries ? lines : max_entries;
    /* every name is at most its line, plus the suffix and a NUL */
    if ((m->v = calloc(cap ? cap : 1, sizeof *m->v)) == NULL ||
        (m->names = malloc(len + lines * (suffix_n + 1) + 1)) == NULL)
        goto oom;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

        if (n > 0)
            add_line(m, p, n, suffix, suffix_n, max_entries, &names_n);
        p += n + 1;
    }
    m->st.entries = m->n;
    qsort(m->v, m->n, sizeof *m->v, cmp_entry);
    {
        size_t kept = 0;

        for (size_t i = 0; i < m->n; i++)
            if (kept == 0 || m->v[i].start != m->v[kept - 1].start)
                m->v[kept++] = m->v[i];
        m->n = kept;
    }
    return m;
oom:
    ph_perfmap_free(m);
    ph_fail(err, ENOMEM, "perf map: out of memory");
    return NULL;
}

ph_perfmap *
ph_perfmap_open(const char *path, const ph_perfmap_opts *o, ph_error_t *err)
{
    size_t max_bytes = o && o->max_bytes ? o->max_bytes : PH_PERFMAP_MAX_BYTES;
    size_t len = 0, cap;
    char *buf = NULL;
    ph_perfmap *m = NULL;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

    if (fd < 0) {
        ph_fail(err, errno, "open `%s`", path);
        return NULL;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        ph_fail(err, errno ? errno : EINVAL, "`%s` is not a regular file", path);
        goto out;
    }
    /* One byte past the bound tells a cut input from one that fits. */
    cap = (size_t)st.st_size + 4096 < max_bytes + 1 ? (size_t)st.st_size + 4096 : max_bytes + 1;
    if ((buf = malloc(cap)) == NULL) {
        ph_fail(err, ENOMEM, "perf map: out of memory");
        goto out;
    }
    for (;;) {
        ssize_t r;

        if (len == cap) {
            size_t ncap = cap * 2 < max_bytes + 1 ? cap * 2 : max_bytes + 1;
            char *nb;
            if (ncap == cap)
                break;
            if ((nb = realloc(buf, ncap)) == NULL) {
                ph_fail(err, ENOMEM, "perf map: out of memory");
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ph_fail(err, errno, "read `%s`", path);
            goto out;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    m = ph_perfmap_parse(buf, len, o, err);
out:
    free(buf);
    close(fd);
    return m;
}

const char *
ph_perfmap_find_counted(const ph_perfmap *m, uint64_t pc, size_t *steps)
{
    size_t lo = 0, hi = m ? m->n : 0, k = 0;

    while (lo < hi) { /* the first entry starting after pc */
        size_t mid = lo + (hi - lo) / 2;

        k++;
        if (m->v[mid].start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (steps)
        *steps = k;
    /* the one before it starts nearest at or before pc (one per start) */
    return lo > 0 && pc < m->v[lo - 1].end ? m->names + m->v[lo - 1].name : NULL;
}

const char *
ph_perfmap_find(const ph_perfmap *m, uint64_t pc)
{
    return ph_perfmap_find_counted(m, pc, NULL);
}

const ph_perfmap_stats *
ph_perfmap_get_stats(const ph_perfmap *m)
{
    return &m->st;
}

void
ph_perfmap_free(ph_perfmap *m)
{
    if (m == NULL)
        return;
    free(m->v);
    free(m->names);
    free(m);
}
