/* ph_collapse.c - perf script output to folded stacks (see ph_collapse.h).
 *
 * Design, for speed (the benchmark is 300 MB of perf script text; Perl
 * reads ~21 MB/s): one pass over the bytes, line by line, no regular
 * expressions - each of stackcollapse-perf.pl's is matched by hand, with
 * its backtracking worked out (the comments say how).  A frame line costs
 * a scan for its parts and one hash lookup: the tidied result of a frame
 * depends only on its symbol (offset stripped), dso and whether the
 * process is java, so that text is interned in a ph_folded used as a
 * table (`keys`) whose ids index the tidied names' ids, computed once.
 * Names and stacks go to a second ph_folded (`out`), which merges equal
 * stacks by their ids; memory is the distinct frames and stacks.  The
 * stacks are sorted only at the end, by ranks of their names, into the
 * byte order Perl's sort gives the joined lines.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* memrchr, qsort_r, memmem */
#endif
#define LINE_SLOTS 4096
#define LINE_TEXT 120
#include "ph_collapse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_collapse_int.h"
#include "ph_folded.h"
#include "ph_gopclntab.h"
#include "ph_lines.h"
#include "ph_perfmap.h"
#include "ph_signal.h"

typedef struct span {
    const char *p;
    size_t n;
} span;

enum { MOD_UNNAMED = 1, MOD_NAMED = 2 };

/* A program of elf_dirs, looked at once: its Go table, if it has one. */
#define GO_FILES_MAX 64
#define GO_FILE_MAX_BYTES ((size_t)4 << 30)
typedef struct gofile {
    char *path; /* as perf script names it */
    void *map;
    size_t len;
    ph_gopclntab t; /* empty: none */
} gofile;

struct ph_collapse {
    ph_collapse_opts o;
    gofile go[GO_FILES_MAX];
    size_t go_n;
    ph_collapse_stats st;
    char *event_filter; /* NULL until set (given, or the first event) */
    int event_defaulted;

    ph_folded *out;  /* the tidied names and the stacks */
    ph_folded *keys; /* frame texts met, as names: their ids index kv */
    ph_folded *mods; /* dsos met, as names */
    uint8_t *modf; /* per dso id: MOD_UNNAMED, MOD_NAMED frames met */
    size_t modf_cap;
    struct recent_mod {
        const char *s; /* the interned name */
        size_t n;
        uint32_t id;
    } recent[16]; /* dsos repeat: most are found here, without hashing */
    struct line_slot {
        uint32_t id;                  /* the key's */
        uint8_t used, java, name_n, mod_n;
        char text[LINE_TEXT];         /* the symbol (offset stripped), then the dso */
    } *fast; /* LINE_SLOTS frames by a hash of their ends: most lines are found here */
    struct kv {
        uint32_t off, len; /* key id -> its names' ids in pool */
    } *kv;
    size_t kv_n, kv_cap;
    uint32_t *pool;
    size_t pool_n, pool_cap;
    char *scratch; /* a key or a name being built */
    size_t scratch_cap;

    /* the sample being read (Perl's $pname, @stack, $m_period) */
    int have_pname, java;
    uint32_t pname;
    double period;
    uint32_t *cur; /* frame ids, leaf first; a line's several ids reversed */
    size_t cur_n, cur_cap;

    /* The perf map files of map_dir, by the file name perf script gives
     * (its path's last component: two paths of one name are one file
     * there), each read once: map_names' ids index maps (NULL: not there,
     * or unreadable).  A table, not a list: the input names as many maps
     * as it likes. */
    ph_folded *map_names;
    ph_perfmap **maps;
    size_t maps_n, maps_cap;
    ph_collapse_dw *dw;

    ph_lines lines; /* the bytes fed, as lines; a line split across feeds is held there */
    int line_failed; /* the last line's parse failed, *err set: not the splitter */
};

/* ---- small helpers ------------------------------------------------------- */

/* Perl's \s, \w, \d on bytes (no locale, no UTF-8: ASCII only), and
 * [\da-f], by table: the scans are the hot loops. */
enum { C_SPACE = 1, C_WORD = 2, C_DIGIT = 4, C_XLOWER = 8 };
#define R10(c, v) [c] = v, [c + 1] = v, [c + 2] = v, [c + 3] = v, [c + 4] = v, [c + 5] = v, [c + 6] = v, [c + 7] = v, \
                  [c + 8] = v, [c + 9] = v
static const unsigned char cls[256] = {
    [' '] = C_SPACE, ['\t'] = C_SPACE, ['\n'] = C_SPACE, ['\r'] = C_SPACE, ['\f'] = C_SPACE, ['\v'] = C_SPACE,
    R10('0', C_WORD | C_DIGIT | C_XLOWER), R10('A', C_WORD), R10('K', C_WORD), ['U'] = C_WORD, ['V'] = C_WORD,
    ['W'] = C_WORD, ['X'] = C_WORD, ['Y'] = C_WORD, ['Z'] = C_WORD, ['_'] = C_WORD,
    ['a'] = C_WORD | C_XLOWER, ['b'] = C_WORD | C_XLOWER, ['c'] = C_WORD | C_XLOWER, ['d'] = C_WORD | C_XLOWER,
    ['e'] = C_WORD | C_XLOWER, ['f'] = C_WORD | C_XLOWER, R10('g', C_WORD), ['q'] = C_WORD, ['r'] = C_WORD,
    ['s'] = C_WORD, ['t'] = C_WORD, ['u'] = C_WORD, ['v'] = C_WORD, ['w'] = C_WORD, ['x'] = C_WORD, ['y'] = C_WORD,
    ['z'] = C_WORD,
};
#undef R10

static inline int
is_space(unsigned char c)
{
    return cls[c] & C_SPACE;
}

static inline int
is_word(unsigned char c)
{
    return cls[c] & C_WORD;
}

static inline int
is_digit(unsigned char c)
{
    return cls[c] & C_DIGIT;
}

static int
grow(void **v, size_t *cap, size_t used, size_t n, size_t size)
{
    size_t nc;
    void *nv;

    if (*cap - used >= n)
        return 0;
    nc = *cap ? *cap : 256;
    while (nc - used < n)
        nc *= 2;
    if ((nv = realloc(*v, nc * size)) == NULL)
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

static int
span_eq(span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static int
span_has(span s, const char *lit)
{
    return memmem(s.p, s.n, lit, strlen(lit)) != NULL;
}

/* m:/tmp/perf-\d+\.map: somewhere in S (Perl's jit test). */
static int
is_tmp_perfmap(span s)
{
    for (const char *p = s.p, *end = s.p + s.n; (p = memmem(p, (size_t)(end - p), "/tmp/perf-", 10)) != NULL; p++) {
        const char *q = p + 10;
        while (q < end && is_digit((unsigned char)*q))
            q++;
        if (q > p + 10 && end - q >= 4 && memcmp(q, ".map", 4) == 0)
            return 1;
    }
    return 0;
}

/* m/(perf-\d+.map|kernel\.|\[[^\]]+\])/ (Perl's --inline skip test; its
 * `.` before map matches any byte). */
static int
skip_inline(span s)
{
    const char *end = s.p + s.n;

    for (const char *p = s.p; p < end; p++) {
        if (end - p >= 5 && memcmp(p, "perf-", 5) == 0) {
            const char *q = p + 5;
            while (q < end && is_digit((unsigned char)*q))
                q++;
            if (q > p + 5 && end - q >= 4 && memcmp(q + 1, "map", 3) == 0)
                return 1;
        }
        if (end - p >= 7 && memcmp(p, "kernel.", 7) == 0)
            return 1;
        if (*p == '[') {
            const char *q = p + 1;
            while (q < end && *q != ']')
                q++;
            if (q < end && q > p + 1)
                return 1;
        }
    }
    return 0;
}

static uint64_t
parse_hex(span s, int *ok)
{
    uint64_t v = 0;

    *ok = s.n > 0 && s.n <= 16;
    for (size_t i = 0; i < s.n && *ok; i++) {
        unsigned char c = (unsigned char)s.p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            *ok = 0;
        v = v << 4 | (uint64_t)(d < 0 ? 0 : d);
    }
    return v;
}

/* ---- perf map files ------------------------------------------------------- */

/* The map file MOD names, read from map_dir (ph_perfmap: bounded, no
 * link), loaded once; NULL if there is no map_dir or it has no such file
 * (the frame then stays [perf-N.map], as in Perl).  Never the path MOD
 * names: perf script's /tmp/perf-<pid>.map is the profiled machine's (a
 * container's pid), and the file there, if any, is some other program's. */
static const ph_perfmap *
perfmap_get(ph_collapse *c, span mod)
{
    char path[4096];
    span base = mod;
    int64_t id;
    ph_error_t err = NULL;

    if (c->o.map_dir == NULL)
        return NULL;
    for (size_t i = 0; i < mod.n; i++)
        if (mod.p[i] == '/')
            base = (span){ mod.p + i + 1, mod.n - i - 1 };
    /* room first: an id interned has its slot */
    if (grow((void **)&c->maps, &c->maps_cap, c->maps_n, 1, sizeof *c->maps) < 0 ||
        (id = ph_folded_intern(c->map_names, base.p, base.n, &err)) < 0) {
        ph_error_free(&err);
        return NULL; /* out of memory: as if not there */
    }
    if ((size_t)id < c->maps_n)
        return c->maps[id];
    snprintf(path, sizeof path, "%s/%.*s", c->o.map_dir, (int)base.n, base.p);
    c->maps[c->maps_n] = ph_perfmap_open(path, NULL, &err); /* unreadable: as if not there */
    ph_error_free(&err);
    return c->maps[c->maps_n++];
}

/* ---- Go programs without symbols ------------------------------------------ */

/* The regular file REL (a relative path) under the directory DIRFD, every
 * component opened without following a link; -1 if there is none. */
static int
open_beneath(int dirfd, const char *rel, int want_dir)
{
    char part[256];
    int fd = dup(dirfd);

    while (fd >= 0 && *rel) {
        size_t n = strcspn(rel, "/");
        int next, last = rel[n] == '\0';

        if (n == 0 || n >= sizeof part) {
            close(fd);
            return -1;
        }
        memcpy(part, rel, n);
        part[n] = '\0';
        next = openat(fd, part, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (last && !want_dir ? 0 : O_DIRECTORY));
        close(fd);
        fd = next;
        rel += n + (last ? 0 : 1);
    }
    if (fd >= 0 && !want_dir) {
        struct stat st;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* PATH's copy under ROOT: ROOT/PATH, or perf's build-id cache entry
 * ROOT/PATH/<build-id>/elf; -1 if none. */
static int
open_copy(const char *root, const char *path)
{
    int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1, dfd;
    DIR *d;
    struct dirent *de;

    if (rfd < 0)
        return -1;
    if ((fd = open_beneath(rfd, path + 1, 0)) < 0 && (dfd = open_beneath(rfd, path + 1, 1)) >= 0) {
        if ((d = fdopendir(dfd)) == NULL) {
            close(dfd);
        } else {
            for (int k = 0; fd < 0 && k < 16 && (de = readdir(d)) != NULL; k++) {
                char rel[300];

                if (de->d_name[0] == '.')
                    continue;
                snprintf(rel, sizeof rel, "%s/elf", de->d_name);
                fd = open_beneath(dirfd(d), rel, 0);
            }
            closedir(d);
        }
    }
    close(rfd);
    return fd;
}

/* Whether PATH (MOD) is a clean absolute path: no empty, `.` or `..` part. */
static int
clean_path(span mod)
{
    if (mod.n < 2 || mod.n >= 4096 || mod.p[0] != '/' || memchr(mod.p, '\0', mod.n))
        return 0;
    for (size_t i = 1, start = 1; i <= mod.n; i++)
        if (i == mod.n || mod.p[i] == '/') {
            size_t n = i - start;
            if (n == 0 || (n == 1 && mod.p[start] == '.') || (n == 2 && mod.p[start] == '.' && mod.p[start + 1] == '.'))
                return 0;
            start = i + 1;
        }
    return 1;
}

/* The program MOD under one of elf_dirs with its Go table, NULL if none. */
static const gofile *
go_file(ph_collapse *c, span mod)
{
    gofile *g;
    struct stat st;
    int fd = -1;

    if (c->o.elf_dirs == NULL || !clean_path(mod))
        return NULL;
    for (size_t i = 0; i < c->go_n; i++)
        if (strlen(c->go[i].path) == mod.n && memcmp(c->go[i].path, mod.p, mod.n) == 0)
            return c->go[i].t.p ? &c->go[i] : NULL;
    if (c->go_n == GO_FILES_MAX || (c->go[c->go_n].path = strndup(mod.p, mod.n)) == NULL)
        return NULL;
    g = &c->go[c->go_n++];
    for (size_t r = 0; fd < 0 && c->o.elf_dirs[r] != NULL; r++)
        fd = open_copy(c->o.elf_dirs[r], g->path);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && st.st_size >= 64 && (uint64_t)st.st_size <= GO_FILE_MAX_BYTES) {
        g->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (g->map == MAP_FAILED)
            g->map = NULL;
        else
            g->len = (size_t)st.st_size;
    }
    close(fd);
    if (g->map == NULL || ph_gopclntab_elf(&g->t, g->map, g->len) < 0) {
        if (g->map)
            munmap(g->map, g->len);
        g->map = NULL;
        memset(&g->t, 0, sizeof g->t);
        return NULL;
    }
    return g;
}

/* ---- frames -------------------------------------------------------------- */

/* Intern the tidied name FUNC into out and add its id to the pool. */
static int
pool_name(ph_collapse *c, const char *s, size_t n, ph_error_t *err)
{
    int64_t id = ph_folded_intern(c->out, s, n, err);

    if (id < 0 || grow((void **)&c->pool, &c->pool_cap, c->pool_n, 1, sizeof *c->pool) < 0)
        return ph_fail(err, ENOMEM, "collapse: out of memory");
    c->pool[c->pool_n++] = (uint32_t)id;
    return 0;
}

/* One part of a frame's symbol (split at "->"), tidied as Perl does, into
 * the pool.  INDEX > 0: an inlined part. */
static int
tidy_part(ph_collapse *c, span func, span pc, span mod, int index, ph_error_t *err)
{
    char *b;
    size_t n = 0, need = func.n + mod.n + pc.n + 16;
    const char *sym = NULL;

    if (grow((void **)&c->scratch, &c->scratch_cap, 0, need, 1) < 0)
        return ph_fail(err, ENOMEM, "collapse: out of memory");
    b = c->scratch;
    if (span_eq(func, "[unknown]")) {
        const ph_perfmap *m;
        int ok;
        uint64_t addr;
        /* our addition: a JIT frame perf script could not name, named
         * from its perf map file */
        const gofile *go;
        uint64_t va;

        if (span_has(mod, "perf-") && (m = perfmap_get(c, mod)) != NULL && (addr = parse_hex(pc, &ok), ok)) {
            size_t steps;

            sym = ph_perfmap_find_counted(m, addr, &steps);
            c->st.map_lookups++;
            c->st.map_steps += steps;
        } else if ((go = go_file(c, mod)) != NULL && (addr = parse_hex(pc, &ok), ok) &&
                   ph_gopclntab_elf_addr(go->map, go->len, addr, &va) == 0) {
            /* a stripped Go program's own table; perf printed the file offset */
            sym = ph_gopclntab_find(&go->t, va, NULL, NULL);
        }
        if (sym != NULL) {
            size_t sn = strlen(sym);
            if (grow((void **)&c->scratch, &c->scratch_cap, 0, sn + 16, 1) < 0)
                return ph_fail(err, ENOMEM, "collapse: out of memory");
            b = c->scratch;
            memcpy(b, sym, sn);
            n = sn;
        } else {
            span name = { "unknown", 7 };
            if (!span_eq(mod, "[unknown]")) { /* the dso's name: s/.*\/// */
                name = mod;
                for (size_t i = 0; i < mod.n; i++)
                    if (mod.p[i] == '/')
                        name = (span){ mod.p + i + 1, mod.n - i - 1 };
            }
            b[n++] = '[';
            memcpy(b + n, name.p, name.n);
            n += name.n;
            if (c->o.addrs) {
                memcpy(b + n, " <", 2);
                memcpy(b + n + 2, pc.p, pc.n);
                n += pc.n + 2;
                b[n++] = '>';
            }
            b[n++] = ']';
        }
    } else {
        memcpy(b, func.p, func.n);
        n = func.n;
    }
    /* tidy_generic: ';' -> ':'; past the first '(' that is not
     * "(anonymous namespace)" is noise, unless it looks like a Go method
     * (/\.\(.*\)\./); quotes go */
    {
        const char *dp = memmem(b, n, ".(", 2), *go = NULL;
        size_t o = 0;
        if (dp)
            for (const char *q = b + n - 2; q > dp; q--)
                if (q[0] == ')' && q[1] == '.') {
                    go = q;
                    break;
                }
        for (size_t i = 0; i < n; i++)
            if (b[i] == ';')
                b[i] = ':';
        if (go == NULL) {
            for (size_t i = 0; i < n; i++)
                if (b[i] == '(' && !(n - i - 1 >= 20 && memcmp(b + i + 1, "anonymous namespace)", 20) == 0)) {
                    n = i;
                    break;
                }
        }
        for (size_t i = 0; i < n; i++)
            if (b[i] != '"' && b[i] != '\'')
                b[o++] = b[i];
        n = o;
    }
    /* tidy_java: Lorg/x -> org/x, in java processes */
    if (c->java && n > 0 && b[0] == 'L' && memchr(b, '/', n)) {
        memmove(b, b + 1, n - 1);
        n--;
    }
    /* annotations */
    if (index > 0) {
        if (!memmem(b, n, "_[i]", 4)) {
            memcpy(b + n, "_[i]", 4);
            n += 4;
        }
    } else if (c->o.kernel && ((mod.n > 0 && mod.p[0] == '[') || (mod.n >= 7 && memcmp(mod.p + mod.n - 7, "vmlinux", 7) == 0)) &&
               !span_has(mod, "unknown")) {
        memcpy(b + n, "_[k]", 4);
        n += 4;
    } else if ((c->o.jit || (c->o.jit_named && sym != NULL)) && is_tmp_perfmap(mod) && !memmem(b, n, "_[j]", 4)) {
        memcpy(b + n, "_[j]", 4);
        n += 4;
    }
    return pool_name(c, b, n, err);
}

/* --inline: the functions DWARF has at the frame's address, outermost
 * first, into the pool; 0 if there are none (the frame is then read as
 * without --inline), 1 if added, -1 on ENOMEM. */
static int
inline_frames(ph_collapse *c, span pc, span raw, span mod, ph_error_t *err)
{
    ph_collapse_dw_frame fr[64];
    char path[4096];
    uint64_t addr, off = 0;
    int ok, n, has_off = 0;
    span sym = raw;

    if (mod.n >= sizeof path)
        return 0;
    memcpy(path, mod.p, mod.n);
    path[mod.n] = '\0';
    addr = parse_hex(pc, &ok);
    if (!ok)
        return 0;
    {
        /* sym+0xoff: the symbol's address plus the offset, when the
         * address perf printed is not the file's */
        const char *plus = memrchr(raw.p, '+', raw.n);
        if (plus && raw.p + raw.n - plus > 3 && plus[1] == '0' && plus[2] == 'x') {
            off = parse_hex((span){ plus + 3, (size_t)(raw.p + raw.n - plus - 3) }, &has_off);
            if (has_off)
                sym = (span){ raw.p, (size_t)(plus - raw.p) };
        }
    }
    n = ph_collapse_dw_frames(c->dw, path, addr, sym.p, sym.n, off, has_off, fr, (int)(sizeof fr / sizeof fr[0]));
    for (int i = 0; i < n; i++) {
        char line[32] = "";
        const char *name = fr[i].name ? fr[i].name : "??", *file = fr[i].file;
        size_t nn = strlen(name), fn = 0;
        char *b;
        if (c->o.context) {
            if (file) {
                const char *slash = strrchr(file, '/');
                file = slash ? slash + 1 : file; /* addr2line -s */
                fn = strlen(file);
            } else {
                file = "??";
                fn = 2;
            }
            snprintf(line, sizeof line, ":%d", fr[i].line);
        }
        if (grow((void **)&c->scratch, &c->scratch_cap, 0, nn + fn + sizeof line + 8, 1) < 0)
            return ph_fail(err, ENOMEM, "collapse: out of memory");
        b = c->scratch;
        memcpy(b, name, nn);
        if (c->o.context) {
            b[nn++] = ':';
            memcpy(b + nn, file, fn);
            nn += fn;
            memcpy(b + nn, line, strlen(line));
            nn += strlen(line);
        }
        if (i > 0) { /* inlined into the one before */
            memcpy(b + nn, "_[i]", 4);
            nn += 4;
        }
        if (pool_name(c, b, nn, err) < 0)
            return -1;
    }
    return n > 0;
}

/* RAW without a trailing +0x offset: s/\+0x[\da-f]+$// */
static span
strip_offset(span raw)
{
    const char *q = raw.p + raw.n;

    while (q > raw.p && (cls[(unsigned char)q[-1]] & C_XLOWER))
        q--;
    if (q < raw.p + raw.n && q - raw.p >= 3 && q[-1] == 'x' && q[-2] == '0' && q[-3] == '+')
        raw.n = (size_t)(q - 3 - raw.p);
    return raw;
}

/* The names of a frame line, into the pool (Perl's stack-line branch
 * after its regex): RAW is the symbol with any +0x offset, MOD the dso. */
static int
frame_names(ph_collapse *c, span pc, span raw, span mod, ph_error_t *err)
{
    const char *end;
    int index = 0;

    if (c->o.inline_frames && !skip_inline(mod)) {
        int r = inline_frames(c, pc, raw, mod, err);
        if (r != 0)
            return r < 0 ? -1 : 0;
    }
    raw = strip_offset(raw);
    if (raw.n > 0 && raw.p[0] == '(') /* process names */
        return 0;
    /* split /->/: empty parts kept but trailing ones */
    end = raw.p + raw.n;
    while (end - raw.p >= 2 && end[-1] == '>' && end[-2] == '-')
        end -= 2;
    for (const char *p = raw.p; p < end; index++) {
        const char *arrow = memmem(p, (size_t)(end - p), "->", 2);
        const char *pe = arrow ? arrow : end;
        if (tidy_part(c, (span){ p, (size_t)(pe - p) }, pc, mod, index, err) < 0)
            return -1;
        if (arrow == NULL)
            break;
        p = arrow + 2;
    }
    return 0;
}

/* ---- lines --------------------------------------------------------------- */

static void
unrecognized(ph_collapse *c)
{
    if (c->st.unrecognized < PH_COLLAPSE_BAD_KEPT)
        c->st.unrecognized_line_numbers[c->st.unrecognized] = c->st.lines;
    c->st.unrecognized++;
}

/* A blank line: the sample is complete. */
static int
end_sample(ph_collapse *c, ph_error_t *err)
{
    uint32_t *ids;

    if (!c->have_pname) /* Perl: `next if not $pname`, @stack kept */
        return 0;
    if (grow((void **)&c->cur, &c->cur_cap, c->cur_n, 1, sizeof *c->cur) < 0)
        return ph_fail(err, ENOMEM, "collapse: out of memory");
    ids = c->cur;
    /* root first: the process name, then the frames from the outermost */
    ids[c->cur_n] = c->pname;
    for (size_t i = 0, j = c->cur_n; i < j; i++, j--) {
        uint32_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    if (ph_folded_add(c->out, ids, (uint32_t)(c->cur_n + 1), c->period, err) < 0)
        return -1;
    c->st.samples++;
    c->cur_n = 0;
    c->have_pname = 0;
    return 0;
}

/* Perl's header regex, /^(\S.+?)\s+(\d+)...\s+/: a comm, blanks, the pid's
 * digits, any slashes, the tid's digits if any, a blank.  The comm is the
 * shortest (at least 2 bytes) that the rest matches after. */
static int
match_header(const char *p, const char *end, span *comm, span *pid, span *tid)
{
    size_t len = (size_t)(end - p);

    if (len < 3 || is_space((unsigned char)p[0]))
        return 0;
    for (size_t k = 2; k < len; k++) {
        size_t q = k, d0, d1, t0;
        if (!is_space((unsigned char)p[k]))
            continue;
        while (q < len && is_space((unsigned char)p[q]))
            q++;
        for (d0 = q; q < len && is_digit((unsigned char)p[q]); q++)
            ;
        if ((d1 = q) == d0)
            continue;
        while (q < len && p[q] == '/')
            q++;
        for (t0 = q; q < len && is_digit((unsigned char)p[q]); q++)
            ;
        if (q < len && is_space((unsigned char)p[q])) {
            *comm = (span){ p, k };
            *pid = (span){ p + d0, d1 - d0 };
            *tid = (span){ p + t0, q - t0 };
            return 1;
        }
    }
    return 0;
}

/* Perl: /:\s*(\d+)*\s+(\S+):\s*$/.  (\S+) can only be the last token
 * before the final ':' (it follows \s+ and is followed by ':' and the
 * end), so the match is the first ':' after which only blanks, digits
 * and at least one blank come before that token. */
static int
match_event(const char *p, const char *end, span *period, span *event)
{
    const char *e = end, *ts, *c;

    while (e > p && is_space((unsigned char)e[-1]))
        e--;
    if (e == p || e[-1] != ':')
        return 0;
    e--;
    for (ts = e; ts > p && !is_space((unsigned char)ts[-1]); ts--)
        ;
    if (ts == e || ts == p)
        return 0;
    for (c = memchr(p, ':', (size_t)(ts - p)); c; c = memchr(c + 1, ':', (size_t)(ts - c - 1))) {
        const char *q = c + 1, *d0, *d1, *w0;
        while (q < ts && is_space((unsigned char)*q))
            q++;
        for (d0 = q; q < ts && is_digit((unsigned char)*q); q++)
            ;
        d1 = w0 = q;
        while (q < ts && is_space((unsigned char)*q))
            q++;
        if (q == ts && (d1 > d0 ? q > w0 : q > c + 1)) {
            *period = (span){ d0, (size_t)(d1 - d0) };
            *event = (span){ ts, (size_t)(e - ts) };
            return 1;
        }
    }
    return 0;
}

/* A sample header (Perl's "event record start" branch). */
static int
header(ph_collapse *c, const char *p, const char *end, span comm, span pid, span tid, ph_error_t *err)
{
    span period = { NULL, 0 }, event;
    char *b;
    size_t n;
    int64_t id;

    if ((tid.n == 0 || span_eq(tid, "0"))) { /* `if (not $tid)` */
        tid = pid;
        pid = (span){ "?", 1 };
    }
    if (match_event(p, end, &period, &event)) {
        if (c->event_filter == NULL) {
            if ((c->event_filter = strndup(event.p, event.n)) == NULL)
                return ph_fail(err, ENOMEM, "collapse: out of memory");
            c->event_defaulted = 1;
            snprintf(c->st.event, sizeof c->st.event, "%s", c->event_filter);
        } else if (!span_eq(event, c->event_filter)) {
            if (c->st.filtered++ == 0)
                snprintf(c->st.other_event, sizeof c->st.other_event, "%.*s", (int)event.n, event.p);
            return 0; /* `next`: the sample's name is not taken */
        }
    }
    if (period.n > 18) { /* no event counts 10^18 a sample: not a header (Perl sums it as a float) */
        unrecognized(c);
        return 0;
    }
    c->period = 1;
    if (period.n > 0 && !span_eq(period, "0")) { /* `if (not $period)` */
        double v = 0;
        for (size_t i = 0; i < period.n; i++)
            v = v * 10 + (period.p[i] - '0');
        c->period = v;
    }
    if (grow((void **)&c->scratch, &c->scratch_cap, 0, comm.n + pid.n + tid.n + 4, 1) < 0)
        return ph_fail(err, ENOMEM, "collapse: out of memory");
    b = c->scratch;
    memcpy(b, comm.p, comm.n);
    n = comm.n;
    if (c->o.tid || c->o.pid) {
        b[n++] = '-';
        memcpy(b + n, pid.p, pid.n);
        n += pid.n;
        if (c->o.tid) {
            b[n++] = '/';
            memcpy(b + n, tid.p, tid.n);
            n += tid.n;
        }
    }
    for (size_t i = 0; i < n; i++) /* tr/ /_/ */
        if (b[i] == ' ')
            b[i] = '_';
    if ((id = ph_folded_intern(c->out, b, n, err)) < 0)
        return -1;
    c->pname = (uint32_t)id;
    c->have_pname = !(n == 0 || (n == 1 && b[0] == '0')); /* Perl's truth */
    c->java = n >= 4 && memcmp(b, "java", 4) == 0;
    return 0;
}

/* Perl: /^\s*(\w+)\s*(.+) \((.*)\)/.  (.*) runs to the last ')'; (.+)
 * greedy ends at the last " (" before it.  When that " (" is inside the
 * blanks after the address (an empty symbol), Perl backtracks (.+) to one
 * byte before it, taken from the blanks or the address. */
static int
match_frame(const char *p, const char *end, span *pc, span *raw, span *mod)
{
    const char *ls = p, *pc0, *pc1, *w, *close, *open = NULL;

    while (ls < end && is_space((unsigned char)*ls))
        ls++;
    for (pc0 = ls; ls < end && is_word((unsigned char)*ls); ls++)
        ;
    if ((pc1 = ls) == pc0)
        return 0;
    for (w = pc1; w < end && is_space((unsigned char)*w); w++)
        ;
    if (end > pc1 && end[-1] == ')') /* as perf prints it */
        close = end - 1;
    else if ((close = memrchr(pc1, ')', (size_t)(end - pc1))) == NULL)
        return 0;
    for (const char *q = close; (q = memrchr(pc0, '(', (size_t)(q - pc0))) != NULL;)
        if (q > pc0 && q[-1] == ' ') {
            open = q - 1;
            break;
        }
    if (open == NULL)
        return 0;
    if (open > w) {
        *pc = (span){ pc0, (size_t)(pc1 - pc0) };
        *raw = (span){ w, (size_t)(open - w) };
    } else {
        if (open - 1 < pc0 + 1)
            return 0;
        *pc = (span){ pc0, (size_t)((open - 1 < pc1 ? open - 1 : pc1) - pc0) };
        *raw = (span){ open - 1, 1 };
    }
    *mod = (span){ open + 2, (size_t)(close - open - 2) };
    return 1;
}

/* The fast cache's slot for symbol NAME in dso MOD: a cheap hash of
 * their lengths and ends. */
static struct line_slot *
line_slot(ph_collapse *c, span name, span mod)
{
    uint64_t a = 0, b = 0, h;

    memcpy(&a, name.p, name.n < 8 ? name.n : 8);
    memcpy(&b, mod.p + (mod.n < 8 ? 0 : mod.n - 8), mod.n < 8 ? mod.n : 8);
    h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xff51afd7ed558ccdull) ^ (name.n << 8 | mod.n) ^ (uint64_t)c->java << 40;
    return &c->fast[(h ^ (h >> 31)) & (LINE_SLOTS - 1)];
}

/* The id of dso MOD among those met. */
static int64_t
mod_id(ph_collapse *c, span mod, ph_error_t *err)
{
    struct recent_mod *r = &c->recent[(mod.n ^ (mod.n ? (unsigned char)mod.p[mod.n - 1] : 0)) & 15];
    int64_t id;

    if (r->s != NULL && r->n == mod.n && memcmp(r->s, mod.p, mod.n) == 0)
        return r->id;
    if ((id = ph_folded_intern(c->mods, mod.p, mod.n, err)) < 0)
        return -1;
    *r = (struct recent_mod){ ph_folded_name(c->mods, (uint32_t)id, NULL), mod.n, (uint32_t)id };
    return id;
}

/* Whether a part of NAME (split at "->") is "[unknown]". */
static int
has_unknown(span name)
{
    if (memchr(name.p, '>', name.n))
        return memmem(name.p, name.n, "[unknown]", 9) != NULL; /* over-approximated: harmless */
    return span_eq(name, "[unknown]");
}

static int
frame_line(ph_collapse *c, span pc, span raw, span mod, ph_error_t *err)
{
    size_t need, n = 0;
    int pcdep;
    int64_t key, mid;
    uint32_t m;
    char *b;
    span name = c->o.inline_frames ? raw : strip_offset(raw);
    struct line_slot *slot = NULL;

    if (!c->have_pname) /* Perl: `next if not $pname` */
        return 0;
    /* the key: what the names depend on (the offset only with --inline,
     * the address for --inline, --addrs and perf map lookups) */
    pcdep = c->o.inline_frames ||
            (has_unknown(name) && (c->o.addrs || span_has(mod, "perf-") || (c->o.elf_dirs && mod.n > 0 && mod.p[0] == '/')));
    if (!pcdep && name.n + mod.n <= LINE_TEXT) {
        slot = line_slot(c, name, mod);
        if (slot->used && slot->java == c->java && slot->name_n == name.n && slot->mod_n == mod.n &&
            memcmp(slot->text, name.p, name.n) == 0 && memcmp(slot->text + name.n, mod.p, mod.n) == 0) {
            key = slot->id;
            goto known;
        }
    }
    if ((mid = mod_id(c, mod, err)) < 0)
        return -1;
    m = (uint32_t)mid;
    need = name.n + pc.n + sizeof m + 4;
    if (grow((void **)&c->scratch, &c->scratch_cap, 0, need, 1) < 0)
        return ph_fail(err, ENOMEM, "collapse: out of memory");
    b = c->scratch;
    b[n++] = (char)('0' + c->java);
    if (pcdep) {
        memcpy(b + n, pc.p, pc.n);
        n += pc.n;
    }
    b[n++] = '\0';
    memcpy(b + n, name.p, name.n);
    n += name.n;
    memcpy(b + n, &m, sizeof m); /* last, fixed size: no separator needed */
    n += sizeof m;
    if ((key = ph_folded_intern(c->keys, b, n, err)) < 0)
        return -1;
    if ((size_t)key == c->kv_n) { /* new: tidy it once */
        size_t first = c->pool_n;
        if (grow((void **)&c->kv, &c->kv_cap, c->kv_n, 1, sizeof *c->kv) < 0)
            return ph_fail(err, ENOMEM, "collapse: out of memory");
        if (m >= c->modf_cap) {
            size_t cap = c->modf_cap;
            if (grow((void **)&c->modf, &cap, c->modf_cap, m + 1 - c->modf_cap, 1) < 0)
                return ph_fail(err, ENOMEM, "collapse: out of memory");
            memset(c->modf + c->modf_cap, 0, cap - c->modf_cap);
            c->modf_cap = cap;
        }
        c->modf[m] |= span_eq(name, "[unknown]") ? MOD_UNNAMED : MOD_NAMED;
        if (frame_names(c, pc, raw, mod, err) < 0)
            return -1;
        c->kv[c->kv_n++] = (struct kv){ (uint32_t)first, (uint32_t)(c->pool_n - first) };
    }
    if (slot != NULL) {
        *slot = (struct line_slot){ (uint32_t)key, 1, (uint8_t)c->java, (uint8_t)name.n, (uint8_t)mod.n, { 0 } };
        memcpy(slot->text, name.p, name.n);
        memcpy(slot->text + name.n, mod.p, mod.n);
    }
known:
    /* the line's names, in reverse (the whole stack is reversed at its end) */
    n = c->kv[key].len;
    if (grow((void **)&c->cur, &c->cur_cap, c->cur_n, n + 1, sizeof *c->cur) < 0)
        return ph_fail(err, ENOMEM, "collapse: out of memory");
    for (size_t i = n; i > 0; i--)
        c->cur[c->cur_n++] = c->pool[c->kv[key].off + i - 1];
    return 0;
}

/* One line without its '\n'.  -1 only on ENOMEM. */
static int
parse_line(ph_collapse *c, const char *p, const char *end, ph_error_t *err)
{
    span a, b, d;

    c->st.lines++;
    if (p < end && *p == '#')
        return 0;
    if (p == end)
        return end_sample(c, err);
    if (match_header(p, end, &a, &b, &d))
        return header(c, p, end, a, b, d, err);
    if (match_frame(p, end, &a, &b, &d))
        return frame_line(c, a, b, d, err);
    unrecognized(c);
    return 0;
}

/* A line from the splitter, '\r' kept as Perl's chomp keeps it; NULL:
 * longer than PH_COLLAPSE_MAX_LINE. */
static inline int
line_cb(void *ctx, const char *line, size_t len, size_t lineno, ph_error_t *err)
{
    ph_collapse *c = ctx;
    int sig;

    /* A hostile input can make a line slow (a JIT map's names, deep
     * stacks): an interrupt ends the collapse at the next line. */
    if ((sig = ph_interrupted()) != 0) {
        c->line_failed = 1;
        return ph_interrupt_fail(err, sig);
    }
    if (line == NULL) {
        c->st.lines++;
        c->st.long_lines++;
        unrecognized(c);
        return 0;
    }
    if (parse_line(c, line, line + len, err) < 0) {
        c->line_failed = 1;
        return -1;
    }
    return 0;
}

/* ---- the API ------------------------------------------------------------- */

void
ph_collapse_opts_init(ph_collapse_opts *o)
{
    memset(o, 0, sizeof *o);
}

ph_collapse *
ph_collapse_new(const ph_collapse_opts *o, ph_error_t *err)
{
    ph_collapse *c = calloc(1, sizeof *c);

    if (c == NULL) {
        ph_fail(err, ENOMEM, "collapse: out of memory");
        return NULL;
    }
    if (o)
        c->o = *o;
    ph_lines_init(&c->lines, PH_COLLAPSE_MAX_LINE, PH_LINES_KEEP_CR, line_cb, c);
    if ((c->out = ph_folded_new(0, err)) == NULL || (c->keys = ph_folded_new(0, err)) == NULL ||
        (c->mods = ph_folded_new(0, err)) == NULL || (c->map_names = ph_folded_new(0, err)) == NULL)
        goto fail;
    if ((c->fast = calloc(LINE_SLOTS, sizeof *c->fast)) == NULL) {
        ph_fail(err, ENOMEM, "collapse: out of memory");
        goto fail;
    }
    if (c->o.event_filter && (c->event_filter = strdup(c->o.event_filter)) == NULL) {
        ph_fail(err, ENOMEM, "collapse: out of memory");
        goto fail;
    }
    if (c->event_filter)
        snprintf(c->st.event, sizeof c->st.event, "%s", c->event_filter);
    if (c->o.inline_frames && (c->dw = ph_collapse_dw_open(err)) == NULL)
        goto fail;
    return c;
fail:
    ph_collapse_free(c);
    return NULL;
}

void
ph_collapse_free(ph_collapse *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->maps_n; i++)
        ph_perfmap_free(c->maps[i]);
    for (size_t i = 0; i < c->go_n; i++) {
        if (c->go[i].map)
            munmap(c->go[i].map, c->go[i].len);
        free(c->go[i].path);
    }
    free(c->maps);
    ph_folded_free(c->map_names);
    ph_collapse_dw_close(c->dw);
    ph_folded_free(c->out);
    ph_folded_free(c->keys);
    ph_folded_free(c->mods);
    free(c->modf);
    free(c->event_filter);
    free(c->kv);
    free(c->fast);
    free(c->pool);
    free(c->scratch);
    free(c->cur);
    ph_lines_free(&c->lines);
    free(c);
}

/* The splitter's failures are its own (ENOMEM, holding a split line) or
 * a line's, whose error is already made. */
static int
lines_failed(ph_collapse *c, ph_error_t *err)
{
    if (c->line_failed) {
        c->line_failed = 0;
        return -1;
    }
    return ph_fail(err, ENOMEM, "collapse: out of memory");
}

int
ph_collapse_feed(ph_collapse *c, const char *buf, size_t len, ph_error_t *err)
{
    return ph_lines_feed_with(&c->lines, buf, len, line_cb, err) < 0 ? lines_failed(c, err) : 0;
}

int
ph_collapse_finish(ph_collapse *c, ph_error_t *err)
{
    return ph_lines_finish(&c->lines, err) < 0 ? lines_failed(c, err) : 0;
}

const ph_collapse_stats *
ph_collapse_get_stats(const ph_collapse *c)
{
    return &c->st;
}

/* Dso ID is a file perf named no frame of: a path (not `//anon`, a perf
 * map, `[vdso]`), frames met, none named. */
static int
unnamed_file(const ph_collapse *c, uint32_t id)
{
    size_t n;
    const char *s = ph_folded_name(c->mods, id, &n);

    return id < c->modf_cap && c->modf[id] == MOD_UNNAMED && n >= 2 && s[0] == '/' && s[1] != '/' &&
           !is_tmp_perfmap((span){ s, n });
}

size_t
ph_collapse_n_unnamed(const ph_collapse *c)
{
    size_t k = 0;

    for (size_t id = 0; id < ph_folded_n_names(c->mods) && k < PH_COLLAPSE_UNNAMED_MAX; id++)
        k += unnamed_file(c, (uint32_t)id);
    return k;
}

const char *
ph_collapse_unnamed(const ph_collapse *c, size_t i)
{
    for (size_t id = 0, k = 0; id < ph_folded_n_names(c->mods) && k < PH_COLLAPSE_UNNAMED_MAX; id++)
        if (unnamed_file(c, (uint32_t)id) && k++ == i)
            return ph_folded_name(c->mods, (uint32_t)id, NULL);
    return NULL;
}

/* ---- output -------------------------------------------------------------- */

/* Names followed by ';' (odd entries) or by the end of the line (even),
 * in byte order, END below every byte: Perl sorts the joined lines. */
static int
cmp_ended(const void *x, const void *y, void *arg)
{
    const ph_folded *f = arg;
    uint32_t ex = *(const uint32_t *)x, ey = *(const uint32_t *)y;
    size_t la, lb, n;
    const unsigned char *a = (const unsigned char *)ph_folded_name(f, ex / 2, &la);
    const unsigned char *b = (const unsigned char *)ph_folded_name(f, ey / 2, &lb);
    int ca, cb, r;

    n = la < lb ? la : lb;
    if ((r = memcmp(a, b, n)) != 0)
        return r;
    ca = la > n ? a[n] : ex & 1 ? ';' : -1;
    cb = lb > n ? b[n] : ey & 1 ? ';' : -1;
    if (ca != cb)
        return ca < cb ? -1 : 1;
    return la == lb ? 0 : la < lb ? -1 : 1;
}

typedef struct sort_ctx {
    const ph_folded *f;
    const uint32_t *rank; /* entry -> rank */
} sort_ctx;

static int
cmp_stacks(const void *x, const void *y, void *arg)
{
    const sort_ctx *s = arg;
    ph_folded_stack a = ph_folded_get_stack(s->f, *(const uint32_t *)x), b = ph_folded_get_stack(s->f, *(const uint32_t *)y);

    for (uint32_t i = 0;; i++) {
        uint32_t ra = s->rank[2 * a.frames[i] + (i + 1 < a.depth)], rb = s->rank[2 * b.frames[i] + (i + 1 < b.depth)];
        if (ra != rb)
            return ra < rb ? -1 : 1;
        if (i + 1 == a.depth || i + 1 == b.depth) /* equal entries: both end here */
            return 0;
    }
}

int
ph_collapse_write(ph_collapse *c, FILE *out, ph_error_t *err)
{
    size_t nn = ph_folded_n_names(c->out), n = ph_folded_n_stacks(c->out);
    uint32_t *ent = malloc((2 * nn + 1) * sizeof *ent), *rank = malloc((2 * nn + 1) * sizeof *rank);
    uint32_t *order = malloc((n + 1) * sizeof *order);
    sort_ctx sc = { c->out, rank };
    int rc = -1;

    if (ent == NULL || rank == NULL || order == NULL) {
        ph_fail(err, ENOMEM, "collapse: out of memory");
        goto out;
    }
    for (uint32_t e = 0; e < 2 * nn; e++)
        ent[e] = e;
    qsort_r(ent, 2 * nn, sizeof *ent, cmp_ended, c->out);
    for (uint32_t r = 0; r < 2 * nn; r++)
        rank[ent[r]] = r;
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, n, sizeof *order, cmp_stacks, &sc);
    for (size_t i = 0; i < n; i++) {
        ph_folded_stack s = ph_folded_get_stack(c->out, order[i]);
        int sig;

        if ((i & 4095) == 0 && (sig = ph_interrupted()) != 0) {
            ph_interrupt_fail(err, sig);
            goto out;
        }
        for (uint32_t d = 0; d < s.depth; d++) {
            size_t len;
            const char *name = ph_folded_name(c->out, s.frames[d], &len);
            if (d)
                putc(';', out);
            fwrite(name, 1, len, out);
        }
        fprintf(out, " %.0f\n", s.count);
    }
    c->st.stacks = n;
    if (fflush(out) != 0 || ferror(out)) {
        ph_fail(err, errno, "collapse: write the folded stacks");
        goto out;
    }
    rc = 0;
out:
    free(ent);
    free(rank);
    free(order);
    return rc;
}
