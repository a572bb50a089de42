/* ph_sampler_out.c - what the sampler's writer thread needs and the signal
 * path must never do: symbolising addresses from the ELF files of the
 * executable and every shared library, and writing pprof profiles.
 *
 * Symbols: dl_iterate_phdr lists each loaded object with its load bias and
 * segments; the object's file (/proc/self/exe for the main program) is
 * mapped and its .symtab (static functions too, when not stripped) and
 * .dynsym are read into a sorted table.  C++ names are demangled when the
 * process has __cxa_demangle.  An address no symbol covers is shown as
 * `module+0xoffset`, never dropped.
 *
 * pprof: profile.proto written by hand (a few varint and length-delimited
 * fields), gzip'd with zlib.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ph_sampler_int.h"

typedef struct sym {
    uintptr_t start, size; /* file virtual addresses */
    const char *name;
} sym;

typedef struct module {
    char path[4096];
    const char *base;      /* base name for module+0xoff */
    uintptr_t bias;
    uintptr_t lo, hi;      /* runtime range of its PT_LOAD segments */
    sym *syms;
    size_t n_syms;
    void *map;
    size_t map_len;
    int loaded;
} module;

struct phs_symbols {
    module *mods;
    size_t n_mods, cap_mods;
    char **strings;        /* everything we allocated for names */
    size_t n_strings, cap_strings;
    char *(*demangle)(const char *, char *, size_t *, int *);
};

static int
collect_cb(struct dl_phdr_info *info, size_t size, void *ud)
{
    phs_symbols *s = ud;
    module *m;
    uintptr_t lo = UINTPTR_MAX, hi = 0;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < lo)
            lo = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
            hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    if (hi == 0)
        return 0;
    if (s->n_mods == s->cap_mods) {
        size_t cap = s->cap_mods ? s->cap_mods * 2 : 32;
        module *nm = realloc(s->mods, cap * sizeof *nm);
        if (nm == NULL)
            return 1;
        s->mods = nm;
        s->cap_mods = cap;
    }
    m = &s->mods[s->n_mods++];
    memset(m, 0, sizeof *m);
    if (info->dlpi_name && info->dlpi_name[0])
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    else if (s->n_mods == 1) {
        ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        m->path[n > 0 ? n : 0] = '\0';
    }
    m->base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
    if (m->base[0] == '\0')
        m->base = "[vdso]";
    m->bias = info->dlpi_addr;
    m->lo = lo;
    m->hi = hi;
    return 0;
}

static int
cmp_sym(const void *a, const void *b)
{
    const sym *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

/* Read .symtab and .dynsym of M's file. */
static void
load_module(module *m)
{
    int fd;
    struct stat st;
    const ElfW(Ehdr) *eh;
    const ElfW(Shdr) *sh;
    size_t cap = 0;

    m->loaded = 1;
    if (m->path[0] == '\0' || (fd = open(m->path, O_RDONLY | O_CLOEXEC)) < 0)
        return;
    if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof *eh) {
        close(fd);
        return;
    }
    m->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m->map == MAP_FAILED) {
        m->map = NULL;
        return;
    }
    m->map_len = (size_t)st.st_size;
    eh = m->map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shoff == 0 ||
        eh->e_shoff + (size_t)eh->e_shnum * sizeof *sh > m->map_len)
        return;
    sh = (const ElfW(Shdr) *)((const char *)m->map + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        const ElfW(Sym) *syms;
        const char *strtab;
        size_t n;

        if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
            continue;
        if (sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset + sh[i].sh_size > m->map_len ||
            sh[sh[i].sh_link].sh_offset + sh[sh[i].sh_link].sh_size > m->map_len)
            continue;
        syms = (const ElfW(Sym) *)((const char *)m->map + sh[i].sh_offset);
        strtab = (const char *)m->map + sh[sh[i].sh_link].sh_offset;
        n = sh[i].sh_size / sizeof *syms;
        for (size_t k = 0; k < n; k++) {
            if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC || syms[k].st_value == 0 ||
                syms[k].st_name >= sh[sh[i].sh_link].sh_size)
                continue;
            if (m->n_syms == cap) {
                size_t nc = cap ? cap * 2 : 256;
                sym *ns = realloc(m->syms, nc * sizeof *ns);
                if (ns == NULL)
                    return;
                m->syms = ns;
                cap = nc;
            }
            m->syms[m->n_syms++] = (sym){ syms[k].st_value, syms[k].st_size, strtab + syms[k].st_name };
        }
    }
    qsort(m->syms, m->n_syms, sizeof *m->syms, cmp_sym);
}

phs_symbols *
phs_symbols_new(void)
{
    phs_symbols *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    dl_iterate_phdr(collect_cb, s);
    s->demangle = (char *(*)(const char *, char *, size_t *, int *))dlsym(RTLD_DEFAULT, "__cxa_demangle");
    return s;
}

static const char *
keep_string(phs_symbols *s, char *str)
{
    if (str == NULL)
        return "??";
    if (s->n_strings == s->cap_strings) {
        size_t cap = s->cap_strings ? s->cap_strings * 2 : 256;
        char **ns = realloc(s->strings, cap * sizeof *ns);
        if (ns == NULL) {
            free(str);
            return "??";
        }
        s->strings = ns;
        s->cap_strings = cap;
    }
    s->strings[s->n_strings++] = str;
    return str;
}

const char *
phs_symbolise(phs_symbols *s, uintptr_t pc)
{
    char buf[512];

    if (pc == PHS_TRUNCATED)
        return "[truncated]";
    for (size_t i = 0; i < s->n_mods; i++) {
        module *m = &s->mods[i];
        uintptr_t va;
        size_t lo = 0, hi;

        if (pc < m->lo || pc >= m->hi)
            continue;
        if (!m->loaded)
            load_module(m);
        va = pc - m->bias;
        hi = m->n_syms;
        while (lo < hi) { /* last symbol starting at or before va */
            size_t mid = (lo + hi) / 2;
            if (m->syms[mid].start <= va)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0) {
            const sym *sy = &m->syms[lo - 1];
            if (va < sy->start + (sy->size ? sy->size : 1)) {
                if (s->demangle && sy->name[0] == '_' && sy->name[1] == 'Z') {
                    int status = -1;
                    char *d = s->demangle(sy->name, NULL, NULL, &status);
                    if (status == 0 && d)
                        return keep_string(s, d);
                    free(d);
                }
                return sy->name;
            }
        }
        snprintf(buf, sizeof buf, "%s+0x%lx", m->base, (unsigned long)va);
        return keep_string(s, strdup(buf));
    }
    snprintf(buf, sizeof buf, "[unknown]+0x%lx", (unsigned long)pc);
    return keep_string(s, strdup(buf));
}

void
phs_symbols_free(phs_symbols *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_mods; i++) {
        free(s->mods[i].syms);
        if (s->mods[i].map)
            munmap(s->mods[i].map, s->mods[i].map_len);
    }
    free(s->mods);
    for (size_t i = 0; i < s->n_strings; i++)
        free(s->strings[i]);
    free(s->strings);
    free(s);
}

/* ---- pprof ------------------------------------------------------------ */

typedef struct pb {
    unsigned char *d;
    size_t len, cap;
    int oom;
} pb;

static void
pb_bytes(pb *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        unsigned char *nd;
        while (cap < b->len + n)
            cap *= 2;
        nd = realloc(b->d, cap);
        if (nd == NULL) {
            b->oom = 1;
            return;
        }
        b->d = nd;
        b->cap = cap;
    }
    memcpy(b->d + b->len, p, n);
    b->len += n;
}

static void
pb_varint(pb *b, uint64_t v)
{
    unsigned char t[10];
    size_t n = 0;

    do {
        t[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            t[n] |= 0x80;
        n++;
    } while (v);
    pb_bytes(b, t, n);
}

static void
pb_int(pb *b, int field, uint64_t v)
{
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}

static void
pb_msg(pb *b, int field, const pb *m)
{
    pb_varint(b, ((uint64_t)field << 3) | 2);
    pb_varint(b, m->len);
    pb_bytes(b, m->d, m->len);
}

static void
pb_str(pb *b, int field, const char *s)
{
    pb m = { (unsigned char *)(uintptr_t)s, strlen(s), 0, 0 };
    pb_msg(b, field, &m);
}

/* String table: index of S, appended when new (linear; small tables). */
typedef struct strtab {
    const char **v;
    size_t n, cap;
} strtab;

static uint64_t
str_id(strtab *t, const char *s)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i], s) == 0)
            return i;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        const char **nv = realloc(t->v, cap * sizeof *nv);
        if (nv == NULL)
            return 0;
        t->v = nv;
        t->cap = cap;
    }
    t->v[t->n] = s;
    return t->n++;
}

int
phs_write_pprof(const char *path, const phs_stack *stacks, size_t n, phs_symbols *symbols, int hz, int64_t time_nanos,
                int64_t duration_nanos)
{
    pb out = { 0 }, m = { 0 };
    strtab st = { 0 };
    uintptr_t *locs = NULL;
    size_t n_locs = 0, cap_locs = 0;
    uint64_t period = 1000000000ULL / (uint64_t)(hz > 0 ? hz : 1);
    char tmp[4200];
    gzFile gz;
    int rc = -1;

    str_id(&st, "");
    /* sample_type: samples/count, cpu/nanoseconds */
    pb_int(&m, 1, str_id(&st, "samples"));
    pb_int(&m, 2, str_id(&st, "count"));
    pb_msg(&out, 1, &m);
    m.len = 0;
    pb_int(&m, 1, str_id(&st, "cpu"));
    pb_int(&m, 2, str_id(&st, "nanoseconds"));
    pb_msg(&out, 1, &m);
    for (size_t i = 0; i < n; i++) {
        pb ids = { 0 }, vals = { 0 };

        m.len = 0;
        for (uint32_t k = 0; k < stacks[i].depth; k++) {
            uintptr_t pc = stacks[i].pcs[k];
            size_t id;

            for (id = 0; id < n_locs && locs[id] != pc; id++)
                ;
            if (id == n_locs) {
                if (n_locs == cap_locs) {
                    size_t cap = cap_locs ? cap_locs * 2 : 256;
                    uintptr_t *nl = realloc(locs, cap * sizeof *nl);
                    if (nl == NULL)
                        goto out;
                    locs = nl;
                    cap_locs = cap;
                }
                locs[n_locs++] = pc;
            }
            pb_varint(&ids, id + 1);
        }
        pb_varint(&vals, stacks[i].count);
        pb_varint(&vals, stacks[i].count * period);
        pb_varint(&m, (1 << 3) | 2);
        pb_varint(&m, ids.len);
        pb_bytes(&m, ids.d, ids.len);
        pb_varint(&m, (2 << 3) | 2);
        pb_varint(&m, vals.len);
        pb_bytes(&m, vals.d, vals.len);
        free(ids.d);
        free(vals.d);
        pb_msg(&out, 2, &m);
    }
    /* one location and one function per address: names from the symboliser */
    for (size_t i = 0; i < n_locs; i++) {
        pb line = { 0 };

        m.len = 0;
        pb_int(&m, 1, i + 1);
        pb_int(&m, 3, locs[i]);
        pb_int(&line, 1, i + 1);
        pb_msg(&m, 4, &line);
        free(line.d);
        pb_msg(&out, 4, &m);
    }
    for (size_t i = 0; i < n_locs; i++) {
        uint64_t name = str_id(&st, phs_symbolise(symbols, locs[i]));

        m.len = 0;
        pb_int(&m, 1, i + 1);
        pb_int(&m, 2, name);
        pb_int(&m, 3, name);
        pb_msg(&out, 5, &m);
    }
    for (size_t i = 0; i < st.n; i++)
        pb_str(&out, 6, st.v[i]);
    pb_int(&out, 9, (uint64_t)time_nanos);
    pb_int(&out, 10, (uint64_t)duration_nanos);
    m.len = 0;
    pb_int(&m, 1, str_id(&st, "cpu"));
    pb_int(&m, 2, str_id(&st, "nanoseconds"));
    pb_msg(&out, 11, &m);
    pb_int(&out, 12, period);
    if (out.oom || m.oom)
        goto out;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    gz = gzopen(tmp, "wb");
    if (gz == NULL)
        goto out;
    if (gzwrite(gz, out.d, (unsigned)out.len) != (int)out.len) {
        gzclose(gz);
        unlink(tmp);
        goto out;
    }
    if (gzclose(gz) != Z_OK || rename(tmp, path) < 0) {
        unlink(tmp);
        goto out;
    }
    chmod(path, 0644);
    rc = 0;
out:
    free(out.d);
    free(m.d);
    free(st.v);
    free(locs);
    return rc;
}
