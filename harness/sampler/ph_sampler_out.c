/* ph_sampler_out.c - what the sampler's writer thread needs and the signal
 * path must never do: naming addresses from the ELF files of the
 * executable and every shared library, and encoding pprof profiles.
 * Writer thread only; everything here allocates.
 *
 * Symbols: dl_iterate_phdr lists each loaded object with its load bias,
 * segments and build id; the object's file (/proc/self/exe for the main
 * program, PIE or not) is mapped read-only and its .symtab (static
 * functions too, when not stripped) and .dynsym are read into a sorted
 * table, once.  An address outside every known object makes us list the
 * objects again (a dlopen since), at most once a second.  Names are
 * demangled by libiberty (C++, Rust legacy and v0), linked in statically.
 * When a module has debug info (its own sections, or a separate file
 * under /usr/lib/debug), ph_sampler_dwarf.c adds source lines and the
 * functions inlined at the address, and names what the symbol tables do
 * not cover.  libdw's state (its reading of the debug files: their sections
 * mapped, decompressed and indexed, tens of MB for a libpython or a libc
 * with libc6-dbg) is built when a snapshot first needs it and released
 * after the snapshot (phs_symbols_release): the names and files it gave
 * are copied into strings of our own, interned, so the cache outlives it,
 * and the next snapshot reads again only for addresses not seen before.
 * A Go program stripped of both (`-ldflags="-s -w"`, a
 * distribution's strip) is named from Go's own function table, which
 * stripping keeps (ph_gopclntab, read in place in the mapped file).  An address outside every object is JIT code: named from
 * the perf map the runtime writes for this process (/tmp/perf-<pid>.map,
 * read through ph_perfmap, the perf conversion's reader; re-read at each
 * snapshot when it changed), its names marked `_[j]`; else
 * `[unknown]+0xaddr`.  An address nothing covers is `module+0xoffset`,
 * never dropped.  Frames are cached per address (JIT ones until the map
 * changes).
 *
 * pprof: profile.proto written by hand (varints and length-delimited
 * fields; https://github.com/google/pprof/blob/main/proto/profile.proto),
 * gzip'd with zlib.
 */
#include <elf.h>
#include <fcntl.h>
#include <libiberty/demangle.h>
#include <link.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "ph_gopclntab.h"
#include "ph_intern.h"
#include "ph_sampler_int.h"
#include "ph_perfmap.h"

/* A function of a module's symbol tables, 4 bytes (node 20 has 97,000 of
 * them: 0.4 MB of the host's memory kept, 1.5 MB at 16 bytes): which
 * symbol it is, its table (SYM_TAB_BIT) and its number there; its start,
 * size and name are read from the mapped file, whose pages a snapshot's
 * search touches and phs_symbols_release drops.  Sorted by start.  Its
 * demangled name, once used, is in the module's PRETTY. */
typedef struct sym {
    uint32_t sym;
} fsym;
#define SYM_TAB_BIT 0x80000000u /* the second symbol table read (of .symtab, .dynsym) */

/* A function while the tables are read: its size and name to sort by. */
typedef struct sym_read {
    uint32_t start, size;
    uint32_t name; /* offset in the mapped file */
    uint32_t sym;
} fsym_read;

/* A demangled name used, by the number of its function in SYMS (+ 1: 0
 * is a free slot). */
typedef struct pretty_slot {
    uint32_t key;
    const char *name;
} pretty_slot;

typedef struct module {
    char path[4096];
    const char *base;      /* base name for module+0xoff */
    uintptr_t bias;
    uintptr_t lo, hi;      /* runtime range of its PT_LOAD segments */
    uintptr_t file_off;    /* file offset of the lowest PT_LOAD */
    char build_id[64];     /* hex, "" if none */
    fsym *syms;
    size_t n_syms;
    uintptr_t sym_base;    /* file virtual address syms' starts count from */
    const ElfW(Sym) *tab[2]; /* the symbol tables SYMS come from, in the mapped file */
    const char *tab_str[2];  /* their names */
    pretty_slot *pretty;   /* open addressing, a power of two; demangled names used */
    size_t n_pretty, cap_pretty;
    void *map;
    size_t map_len;
    int loaded;
    int has_dw;            /* it has debug info: reported to libdw when a lookup needs it */
    void *dwmod;           /* libdw's module while libdw is open */
    ph_gopclntab go;       /* Go's function table, when the file has one */
} elfmod;

typedef struct pc_name {
    uintptr_t pc;          /* 0: empty */
    const phs_frame *frames;
    int n;
    int module;
} pc_name;

struct phs_symbols {
    elfmod *mods;
    size_t n_mods, cap_mods;
    void **owned;          /* everything allocated for names and frames */
    size_t n_owned, cap_owned;
    pc_name *cache;
    size_t n_cache, cap_cache;
    time_t listed_at;
    int debuginfo;         /* 0: PH_SAMPLER_DEBUGINFO=0, or libdw absent */
    phs_dwarf *dw;         /* open from the first lookup that needs it to phs_symbols_release */
    ph_intern *strs;       /* our copies of libdw's strings, one of each */
    phs_pytab *py;         /* Python frames' names */
    ph_perfmap *jit;       /* this process's perf map, NULL if none */
    struct stat jit_st;    /* the map file as read (ino, size, mtime) */
};

/* The bytes of libdw's names and files kept (past it, "??"). */
#define PHS_INTERN_MAX (64u << 20)

/* ---- modules ------------------------------------------------------------ */

static void
read_build_id(elfmod *m, const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const char *p, *end;

        if (ph->p_type != PT_NOTE)
            continue;
        p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const unsigned char *desc = (const unsigned char *)p + sizeof *nh + ((nh->n_namesz + 3) & ~3u);

            if ((const char *)desc + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(p + sizeof *nh, "GNU", 4) == 0) {
                for (size_t k = 0; k < nh->n_descsz && 2 * k + 2 < sizeof m->build_id; k++)
                    snprintf(m->build_id + 2 * k, 3, "%02x", desc[k]);
                return;
            }
            p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
}

static int
collect_cb(struct dl_phdr_info *info, size_t size, void *ud)
{
    phs_symbols *s = ud;
    elfmod *m;
    uintptr_t lo = UINTPTR_MAX, hi = 0, off = 0;
    char path[4096] = "";

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < lo) {
            lo = info->dlpi_addr + ph->p_vaddr;
            off = ph->p_offset;
        }
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
            hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    if (hi == 0)
        return 0;
    if (info->dlpi_name && info->dlpi_name[0]) {
        snprintf(path, sizeof path, "%s", info->dlpi_name);
    } else if (s->n_mods == 0) {
        /* dl_iterate_phdr lists the executable first, without a name. */
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = '\0';
    }
    for (size_t i = 0; i < s->n_mods; i++)
        if (s->mods[i].bias == info->dlpi_addr && s->mods[i].lo == lo && s->mods[i].hi == hi)
            return 0; /* already known (a refresh) */
    if (s->n_mods == s->cap_mods) {
        size_t cap = s->cap_mods ? s->cap_mods * 2 : 32;
        elfmod *nm = realloc(s->mods, cap * sizeof *nm);
        if (nm == NULL)
            return 1;
        s->mods = nm;
        s->cap_mods = cap;
        /* base points into path: fix it up after the move */
        for (size_t i = 0; i < s->n_mods; i++) {
            const char *b = strrchr(s->mods[i].path, '/');
            s->mods[i].base = s->mods[i].path[0] == '\0' ? "[vdso]" : b ? b + 1 : s->mods[i].path;
        }
    }
    m = &s->mods[s->n_mods++];
    memset(m, 0, sizeof *m);
    memcpy(m->path, path, sizeof m->path);
    m->base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
    if (m->path[0] == '\0')
        m->base = "[vdso]";
    m->bias = info->dlpi_addr;
    m->lo = lo;
    m->hi = hi;
    m->file_off = off;
    read_build_id(m, info);
    return 0;
}

static int
cmp_sym(const void *a, const void *b)
{
    const fsym_read *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

static int
file_exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Whether M has debug info for libdw: its own .debug_info, or a separate
 * file by build id, or by .gnu_debuglink where gdb looks for one. */
static int
has_debuginfo(const elfmod *m, const ElfW(Shdr) *sh, int shnum, const char *shstr, size_t shstr_len)
{
    char path[4400], dir[4096];
    const char *slash;

    for (int i = 0; i < shnum; i++) {
        const char *n = sh[i].sh_name < shstr_len ? shstr + sh[i].sh_name : "";

        if (strcmp(n, ".debug_info") == 0 || strcmp(n, ".zdebug_info") == 0)
            return 1;
    }
    if (m->build_id[0] && m->build_id[1]) {
        snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug", m->build_id, m->build_id + 2);
        if (file_exists(path))
            return 1;
        if (phs_tree_debug_dir(dir, sizeof dir) == 0 &&
            (size_t)snprintf(path, sizeof path, "%s/.build-id/%.2s/%s.debug", dir, m->build_id, m->build_id + 2) <
                sizeof path &&
            file_exists(path))
            return 1;
    }
    slash = strrchr(m->path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - m->path) : 0, m->path);
    for (int i = 0; i < shnum; i++) {
        const char *n = sh[i].sh_name < shstr_len ? shstr + sh[i].sh_name : "", *link;

        if (strcmp(n, ".gnu_debuglink") != 0 || sh[i].sh_offset >= m->map_len ||
            sh[i].sh_size > m->map_len - sh[i].sh_offset || sh[i].sh_size < 2)
            continue;
        link = (const char *)m->map + sh[i].sh_offset;
        if (memchr(link, '\0', sh[i].sh_size) == NULL || strchr(link, '/') != NULL)
            return 0;
        snprintf(path, sizeof path, "/usr/lib/debug%s/%s", dir, link);
        if (file_exists(path))
            return 1;
        snprintf(path, sizeof path, "%s/.debug/%s", dir, link);
        if (file_exists(path))
            return 1;
    }
    return 0;
}

/* The section headers of M's mapped file (*SHNUM of them), or NULL when
 * it is not a 64-bit ELF file whose headers lie within it. */
static const ElfW(Shdr) *
sections(const elfmod *m, int *shnum)
{
    const ElfW(Ehdr) *eh = m->map;

    if (m->map == NULL || m->map_len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 || eh->e_shoff > m->map_len ||
        (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > m->map_len - eh->e_shoff)
        return NULL;
    *shnum = eh->e_shnum;
    return (const ElfW(Shdr) *)((const char *)m->map + eh->e_shoff);
}

/* Section I when it is a symbol table (.symtab, .dynsym) whose symbols
 * and strings lie within M's file: how many symbols (0 otherwise), in
 * *SYMS, their names in *STRTAB (*STRSIZE bytes). */
static size_t
symbol_table(const elfmod *m, const ElfW(Shdr) *sh, int shnum, int i, const ElfW(Sym) **syms, const char **strtab,
             size_t *strsize)
{
    const ElfW(Shdr) *strsh;

    if ((sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) || sh[i].sh_link >= (unsigned)shnum)
        return 0;
    strsh = &sh[sh[i].sh_link];
    if (sh[i].sh_offset > m->map_len || sh[i].sh_size > m->map_len - sh[i].sh_offset ||
        strsh->sh_offset > m->map_len || strsh->sh_size > m->map_len - strsh->sh_offset || strsh->sh_size == 0)
        return 0;
    *syms = (const ElfW(Sym) *)((const char *)m->map + sh[i].sh_offset);
    *strtab = (const char *)m->map + strsh->sh_offset;
    *strsize = strsh->sh_size;
    return sh[i].sh_size / sizeof **syms;
}

/* M's file read whole (its symbol tables, a search by name): its pages
 * leave our RSS (a node's or a libpython's are tens of MB); the few names
 * used later fault back in from the page cache. */
static void
drop_pages(elfmod *m)
{
    if (m->map)
        madvise(m->map, m->map_len, MADV_DONTNEED);
}

/* Read .symtab and .dynsym of M's file; note whether it has debug info. */
static void
load_module(phs_symbols *s, elfmod *m)
{
    int fd;
    struct stat st;
    const ElfW(Ehdr) *eh;
    const ElfW(Shdr) *sh;
    fsym_read *rd = NULL;
    size_t cap = 0, kept = 0, n_rd = 0;
    int shnum = 0;

    m->loaded = 1;
    m->sym_base = m->lo - m->bias;
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
    if ((sh = sections(m, &shnum)) == NULL)
        return;
    (void)ph_gopclntab_elf(&m->go, m->map, m->map_len); /* none: m->go stays empty */
    if (s->debuginfo && eh->e_shstrndx < shnum && sh[eh->e_shstrndx].sh_offset < m->map_len &&
        sh[eh->e_shstrndx].sh_size <= m->map_len - sh[eh->e_shstrndx].sh_offset &&
        has_debuginfo(m, sh, shnum, (const char *)m->map + sh[eh->e_shstrndx].sh_offset,
                      sh[eh->e_shstrndx].sh_size))
        m->has_dw = 1;
    for (int i = 0, t = 0; i < shnum && t < 2; i++) {
        const ElfW(Sym) *syms = NULL;
        const char *strtab = NULL;
        size_t strsize = 0, n = symbol_table(m, sh, shnum, i, &syms, &strtab, &strsize);

        if (n == 0)
            continue;
        if (n > SYM_TAB_BIT - 1)
            n = SYM_TAB_BIT - 1; /* past what SYM_TAB_BIT leaves: not read */
        m->tab[t] = syms;
        m->tab_str[t] = strtab;
        for (size_t k = 0; k < n; k++) {
            int type = ELF64_ST_TYPE(syms[k].st_info);

            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || syms[k].st_value == 0 || syms[k].st_shndx == SHN_UNDEF ||
                syms[k].st_name >= strsize || memchr(strtab + syms[k].st_name, '\0', strsize - syms[k].st_name) == NULL ||
                syms[k].st_value < m->sym_base || syms[k].st_value - m->sym_base > UINT32_MAX ||
                (size_t)(strtab + syms[k].st_name - (const char *)m->map) > UINT32_MAX)
                continue; /* outside the image, or past what 32 bits hold */
            if (n_rd == cap) {
                size_t nc = cap ? cap * 2 : 256;
                fsym_read *nr = realloc(rd, nc * sizeof *nr);
                if (nr == NULL) {
                    free(rd);
                    return;
                }
                rd = nr;
                cap = nc;
            }
            rd[n_rd++] = (fsym_read){ (uint32_t)(syms[k].st_value - m->sym_base),
                                      syms[k].st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)syms[k].st_size,
                                      (uint32_t)(strtab + syms[k].st_name - (const char *)m->map),
                                      (uint32_t)k | (t ? SYM_TAB_BIT : 0) };
        }
        t++;
    }
    if (n_rd > 1)
        qsort(rd, n_rd, sizeof *rd, cmp_sym);
    /* .symtab repeats most of .dynsym: a function listed in both (same
     * start, size and name) is kept once. */
    for (size_t k = 0; k < n_rd; k++) {
        const fsym_read *a = &rd[k], *b = kept ? &rd[kept - 1] : NULL;

        if (b && a->start == b->start && a->size == b->size &&
            strcmp((const char *)m->map + a->name, (const char *)m->map + b->name) == 0)
            continue;
        rd[kept++] = *a;
    }
    if (kept > 0 && (m->syms = malloc(kept * sizeof *m->syms)) != NULL) {
        for (size_t k = 0; k < kept; k++)
            m->syms[k] = (fsym){ rd[k].sym };
        m->n_syms = kept;
    }
    free(rd);
    drop_pages(m);
}

/* libdw's module for M, libdw opened and M reported first if need be;
 * NULL when M has no debug info or libdw cannot read it. */
static void *
dw_module(phs_symbols *s, elfmod *m)
{
    if (!m->has_dw || !s->debuginfo)
        return NULL;
    if (m->dwmod)
        return m->dwmod;
    if (s->dw == NULL && (s->dw = phs_dwarf_open()) == NULL) {
        s->debuginfo = 0; /* no libdw here: symbol tables only */
        return NULL;
    }
    if ((m->dwmod = phs_dwarf_report(s->dw, m->path, m->bias)) == NULL)
        m->has_dw = 0; /* one attempt */
    return m->dwmod;
}

void
phs_symbols_release(phs_symbols *s)
{
    if (s == NULL)
        return;
    /* The names this snapshot read faulted their pages of the files
     * back in, a page each (node's .strtab: 1.6 MB after a CPU snapshot,
     * 5.2 MB after a heap one): out again; the next reads them from the
     * page cache. */
    for (size_t i = 0; i < s->n_mods; i++)
        drop_pages(&s->mods[i]);
    if (s->dw == NULL)
        return;
    phs_dwarf_close(s->dw);
    s->dw = NULL;
    for (size_t i = 0; i < s->n_mods; i++)
        s->mods[i].dwmod = NULL;
#ifdef __GLIBC__
    /* What libdw freed goes back to the system: glibc keeps freed memory
     * in its arenas (the writer's among them) otherwise. */
    malloc_trim(0);
#endif
}

phs_symbols *
phs_symbols_new(int debuginfo, struct phs_pytab *py)
{
    phs_symbols *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    /* The objects are listed at the first lookup, on the writer thread:
     * this may run in a fork child (PH_SAMPLER_FOLLOW=all), where the
     * loader's lock can be held by a thread that no longer exists. */
    s->listed_at = 0;
    s->debuginfo = debuginfo;
    s->py = py;
    return s;
}

phs_pytab *
phs_symbols_py(phs_symbols *s)
{
    return s->py;
}

size_t
phs_symbols_count(phs_symbols *s, int relist)
{
    if (relist || s->n_mods == 0) {
        s->listed_at = time(NULL);
        phs_dl_iterate(collect_cb, s);
    }
    return s->n_mods;
}

int
phs_symbol_addr(phs_symbols *s, int i, const char *name, uintptr_t *addr, uintptr_t *size)
{
    const ElfW(Shdr) *sh;
    elfmod *m;
    uint64_t start = 0, end = 0;
    int shnum = 0;

    if (i < 0 || (size_t)i >= s->n_mods)
        return -1;
    m = &s->mods[i];
    if (!m->loaded)
        load_module(s, m);
    if ((sh = sections(m, &shnum)) == NULL)
        return -1;
    for (int k = 0; k < shnum; k++) {
        const ElfW(Sym) *syms = NULL;
        const char *strtab = NULL;
        size_t strsize = 0, n = symbol_table(m, sh, shnum, k, &syms, &strtab, &strsize);

        for (size_t j = 0; j < n; j++) {
            if (syms[j].st_shndx == SHN_UNDEF || syms[j].st_value == 0 || syms[j].st_name >= strsize ||
                strsize - syms[j].st_name <= strlen(name) || strcmp(strtab + syms[j].st_name, name) != 0)
                continue;
            *addr = m->bias + syms[j].st_value;
            *size = syms[j].st_size;
            drop_pages(m);
            return 0;
        }
    }
    drop_pages(m);
    /* a stripped Go program: its functions by Go's own table */
    if (ph_gopclntab_by_name(&m->go, name, &start, &end) == 0) {
        *addr = m->bias + (uintptr_t)start;
        *size = (uintptr_t)(end - start);
        return 0;
    }
    return -1;
}

int
phs_module_info(phs_symbols *s, int i, uintptr_t *lo, uintptr_t *hi, uintptr_t *file_off, const char **path)
{
    if (i < 0 || (size_t)i >= s->n_mods)
        return -1;
    *lo = s->mods[i].lo;
    *hi = s->mods[i].hi;
    *file_off = s->mods[i].file_off;
    *path = s->mods[i].path[0] ? s->mods[i].path : s->mods[i].base;
    return 0;
}

/* P (malloc'd, may be NULL) is freed with S; -1 (P freed) if it cannot be kept. */
static int
own(phs_symbols *s, void *p)
{
    if (p == NULL)
        return -1;
    if (s->n_owned == s->cap_owned) {
        size_t cap = s->cap_owned ? s->cap_owned * 2 : 256;
        void **no = realloc(s->owned, cap * sizeof *no);
        if (no == NULL) {
            free(p);
            return -1;
        }
        s->owned = no;
        s->cap_owned = cap;
    }
    s->owned[s->n_owned++] = p;
    return 0;
}

static const char *
keep_string(phs_symbols *s, char *str)
{
    return own(s, str) == 0 ? str : "??";
}

/* STR (NULL: NULL) as a string of S's own, one copy of each: libdw's
 * strings do not outlive phs_symbols_release. */
static const char *
intern(phs_symbols *s, const char *str)
{
    int64_t id;

    if (str == NULL)
        return NULL;
    if (s->strs == NULL && (s->strs = ph_intern_new(PHS_INTERN_MAX)) == NULL)
        return "??";
    id = ph_intern_add(s->strs, str, strlen(str));
    return id < 0 ? "??" : ph_intern_get(s->strs, (uint32_t)id);
}

/* ---- demangling ------------------------------------------------------ */

/* libiberty's demanglers (the ones binutils, gdb and perf use), in their
 * callback form: no malloc of their own, output into a bounded buffer.
 * Rust first, since a legacy Rust name is also a valid C++ one. */
typedef struct dmbuf {
    char b[1024];
    size_t n;
    int over;
} dmbuf;

static void
dm_put(const char *p, size_t n, void *ud)
{
    dmbuf *d = ud;

    if (n > sizeof d->b - 1 - d->n) {
        n = sizeof d->b - 1 - d->n;
        d->over = 1;
    }
    memcpy(d->b + d->n, p, n);
    d->n += n;
}

const char *
phs_demangle(phs_symbols *s, const char *name)
{
    dmbuf d = { .n = 0 };
    int ok;

    /* The demanglers keep per-name state on the stack: bound the input. */
    if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') || strlen(name) > 4096)
        return name;
    ok = rust_demangle_callback(name, DMGL_PARAMS | DMGL_ANSI, dm_put, &d);
    if (!ok && name[1] == 'Z') {
        d.n = 0;
        d.over = 0;
        ok = cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_ANSI, dm_put, &d);
    }
    if (!ok || d.n == 0)
        return name;
    if (d.over)
        memcpy(d.b + d.n - 3, "...", 3);
    d.b[d.n] = '\0';
    return keep_string(s, strdup(d.b));
}

/* ---- names by address ----------------------------------------------------- */

/* The module holding PC, its tables read; -1 when none does. */
static int
module_of(phs_symbols *s, uintptr_t pc)
{
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < s->n_mods; i++) {
            if (pc < s->mods[i].lo || pc >= s->mods[i].hi)
                continue;
            if (!s->mods[i].loaded)
                load_module(s, &s->mods[i]);
            return (int)i;
        }
        /* Not in any object we know: list them again (a dlopen since),
         * at most once a second. */
        if (pass == 0 && time(NULL) != s->listed_at) {
            s->listed_at = time(NULL);
            phs_dl_iterate(collect_cb, s);
            continue;
        }
        break;
    }
    return -1;
}

int
phs_module_of(phs_symbols *s, uintptr_t pc)
{
    return module_of(s, pc);
}

/* SY's symbol in M's mapped file. */
static const ElfW(Sym) *
sym_of(const elfmod *m, const fsym *sy)
{
    return &m->tab[(sy->sym & SYM_TAB_BIT) != 0][sy->sym & ~SYM_TAB_BIT];
}

/* Where SY starts, from M's lowest file virtual address (it was read
 * only if that fits 32 bits). */
static uint32_t
sym_start(const elfmod *m, const fsym *sy)
{
    return (uint32_t)(sym_of(m, sy)->st_value - m->sym_base);
}

static uint32_t
sym_size(const elfmod *m, const fsym *sy)
{
    uint64_t size = sym_of(m, sy)->st_size;

    return size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
}

/* The demangled name of M's function K (its number in SYMS), demangled
 * once and kept in M's PRETTY; NULL out of memory. */
static const char *
pretty_name(phs_symbols *s, elfmod *m, size_t k)
{
    const ElfW(Sym) *es = sym_of(m, &m->syms[k]);
    uint32_t key = (uint32_t)k + 1;
    size_t mask, h;
    const char *p;

    if (m->cap_pretty) {
        mask = m->cap_pretty - 1;
        for (h = (key * 0x9e3779b1u) & mask; m->pretty[h].key != 0; h = (h + 1) & mask)
            if (m->pretty[h].key == key)
                return m->pretty[h].name;
    }
    if ((p = phs_demangle(s, m->tab_str[(m->syms[k].sym & SYM_TAB_BIT) != 0] + es->st_name)) == NULL)
        return NULL;
    if (2 * (m->n_pretty + 1) > m->cap_pretty) { /* at most half full */
        size_t nc = m->cap_pretty ? m->cap_pretty * 2 : 64;
        pretty_slot *np = calloc(nc, sizeof *np);

        if (np == NULL)
            return p;
        for (size_t i = 0; i < m->cap_pretty; i++) {
            if (m->pretty[i].key == 0)
                continue;
            for (h = (m->pretty[i].key * 0x9e3779b1u) & (nc - 1); np[h].key != 0; h = (h + 1) & (nc - 1))
                ;
            np[h] = m->pretty[i];
        }
        free(m->pretty);
        m->pretty = np;
        m->cap_pretty = nc;
    }
    mask = m->cap_pretty - 1;
    for (h = (key * 0x9e3779b1u) & mask; m->pretty[h].key != 0; h = (h + 1) & mask)
        ;
    m->pretty[h] = (pretty_slot){ key, p };
    m->n_pretty++;
    return p;
}

/* The symbol table's name for PC in M, demangled; NULL if none covers it. */
static const char *
symtab_name(phs_symbols *s, elfmod *m, uintptr_t pc)
{
    uintptr_t va = pc - m->bias - m->sym_base;
    size_t lo = 0, hi = m->n_syms;

    while (lo < hi) { /* last symbol starting at or before va */
        size_t mid = (lo + hi) / 2;
        if (sym_start(m, &m->syms[mid]) <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (pc - m->bias < m->sym_base)
        return NULL;
    /* Several symbols may share a start (aliases): any covers. */
    while (lo > 0) {
        const fsym *sy = &m->syms[lo - 1];
        uint32_t size = sym_size(m, sy), start = sym_start(m, sy);

        if (va < (uintptr_t)start + (size ? size : 1))
            return pretty_name(s, m, lo - 1);
        if (lo < 2 || sym_start(m, &m->syms[lo - 2]) != start)
            break;
        lo--;
    }
    return NULL;
}

/* Fill F (room for PHS_MAX_INLINE + 1) for PC; returns how many. */
static int
lookup(phs_symbols *s, uintptr_t pc, phs_frame *f, int *mod_out)
{
    phs_dwarf_frame dw[PHS_MAX_INLINE + 1];
    char buf[600];
    const char *name = NULL;
    elfmod *m;
    void *dwmod;
    int mod, n = 0;

    *mod_out = -1;
    memset(f, 0, sizeof *f);
    if (pc == PHS_TRUNCATED) {
        f->name = "[truncated]";
        return 1;
    }
    if (pc == PHS_OFFCPU) {
        f->name = "[off-cpu]";
        return 1;
    }
    if ((mod = module_of(s, pc)) < 0) {
        if ((f->name = ph_perfmap_find(s->jit, pc)) != NULL)
            return 1;
        snprintf(buf, sizeof buf, "[unknown]+0x%lx", (unsigned long)pc);
        f->name = keep_string(s, strdup(buf));
        return 1;
    }
    *mod_out = mod;
    m = &s->mods[mod];
    if ((dwmod = dw_module(s, m)) != NULL)
        n = phs_dwarf_frames(s->dw, dwmod, pc, dw, PHS_MAX_INLINE + 1);
    for (int i = 0; i < n; i++) { /* libdw's strings, ours from here */
        dw[i].name = intern(s, dw[i].name);
        dw[i].file = intern(s, dw[i].file);
    }
    /* The function holding PC: by the symbol table, as without debug
     * info, then by libdw (a separate debug file's symbols), then by Go's
     * function table, else the module and offset. */
    name = symtab_name(s, m, pc);
    if (name == NULL && dwmod && (name = phs_dwarf_symbol(s->dw, dwmod, pc)) != NULL)
        name = phs_demangle(s, intern(s, name));
    if (name == NULL && n > 0 && dw[n - 1].name)
        name = phs_demangle(s, dw[n - 1].name);
    if (name == NULL)
        name = ph_gopclntab_find(&m->go, pc - m->bias, NULL, NULL);
    if (name == NULL) {
        snprintf(buf, sizeof buf, "%s+0x%lx", m->base, (unsigned long)(pc - m->lo + m->file_off));
        name = keep_string(s, strdup(buf));
    }
    f[0].name = name;
    if (n == 0)
        return 1;
    f[0].file = dw[n - 1].file;
    f[0].line = dw[n - 1].line;
    /* then what was inlined into it, outermost first */
    for (int i = n - 2, k = 1; i >= 0; i--, k++) {
        f[k] = (phs_frame){ dw[i].name ? phs_demangle(s, dw[i].name) : "[inlined]", dw[i].file, dw[i].line, 1, PHS_KIND_NATIVE, NULL };
    }
    return n;
}

static size_t
pc_hash(uintptr_t pc, size_t cap)
{
    return (size_t)((pc * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

static const phs_frame *(*java_frame)(uintptr_t word);
static const phs_frame *(*py_frame)(struct phs_pytab *t, uintptr_t word);

void
phs_frames_java(const phs_frame *(*fn)(uintptr_t word))
{
    java_frame = fn;
}

void
phs_frames_py(const phs_frame *(*fn)(struct phs_pytab *t, uintptr_t word))
{
    py_frame = fn;
}

int
phs_frames(phs_symbols *s, uintptr_t pc, const phs_frame **frames, int *mod_out)
{
    static const phs_frame oom = { "??", NULL, 0, 0, PHS_KIND_NATIVE, NULL };
    static const phs_frame java = { "[java]", NULL, 0, 0, PHS_KIND_JAVA, NULL };
    static const phs_frame python = { "[python]", NULL, 0, 0, PHS_KIND_PYTHON, NULL };
    phs_frame f[PHS_MAX_INLINE + 1], *kept;
    size_t k = 0;
    int mod, n;

    if (phs_is_java(pc)) {
        if (mod_out)
            *mod_out = -1;
        *frames = java_frame != NULL ? java_frame(pc) : &java;
        return 1;
    }
    if (phs_is_py(pc)) {
        if (mod_out)
            *mod_out = -1;
        *frames = py_frame != NULL && s->py != NULL ? py_frame(s->py, pc) : &python;
        return 1;
    }
    if (s->n_cache * 2 >= s->cap_cache) {
        size_t cap = s->cap_cache ? s->cap_cache * 2 : 1024;
        pc_name *nc = calloc(cap, sizeof *nc);

        if (nc != NULL) {
            for (size_t i = 0; i < s->cap_cache; i++) {
                if (s->cache[i].pc == 0)
                    continue;
                for (k = pc_hash(s->cache[i].pc, cap); nc[k].pc; k = (k + 1) & (cap - 1))
                    ;
                nc[k] = s->cache[i];
            }
            free(s->cache);
            s->cache = nc;
            s->cap_cache = cap;
        }
    }
    if (s->cap_cache > 0) {
        for (k = pc_hash(pc, s->cap_cache); s->cache[k].pc; k = (k + 1) & (s->cap_cache - 1))
            if (s->cache[k].pc == pc) {
                if (mod_out)
                    *mod_out = s->cache[k].module;
                *frames = s->cache[k].frames;
                return s->cache[k].n;
            }
    }
    n = lookup(s, pc, f, &mod);
    if (mod_out)
        *mod_out = mod;
    kept = malloc((size_t)n * sizeof *kept);
    if (own(s, kept) < 0) {
        *frames = &oom;
        return 1;
    }
    memcpy(kept, f, (size_t)n * sizeof *kept);
    if (s->cap_cache > 0 && s->n_cache * 2 < s->cap_cache && pc != 0) {
        s->cache[k] = (pc_name){ pc, kept, n, mod };
        s->n_cache++;
    }
    *frames = kept;
    return n;
}

/* The cache less the addresses outside every object: named from a map
 * that is being replaced. */
static void
forget_jit(phs_symbols *s)
{
    pc_name *nc;

    if (s->cap_cache == 0)
        return;
    if ((nc = calloc(s->cap_cache, sizeof *nc)) == NULL) {
        memset(s->cache, 0, s->cap_cache * sizeof *s->cache); /* all looked up anew */
        s->n_cache = 0;
        return;
    }
    s->n_cache = 0;
    for (size_t i = 0; i < s->cap_cache; i++) {
        size_t k;

        if (s->cache[i].pc == 0 || s->cache[i].module < 0)
            continue;
        for (k = pc_hash(s->cache[i].pc, s->cap_cache); nc[k].pc; k = (k + 1) & (s->cap_cache - 1))
            ;
        nc[k] = s->cache[i];
        s->n_cache++;
    }
    free(s->cache);
    s->cache = nc;
}

void
phs_symbols_jit_refresh(phs_symbols *s)
{
    char path[64];
    struct stat st;
    ph_perfmap *m;
    ph_error_t err = NULL;
    ph_perfmap_opts o = { .suffix = "_[j]" };

    snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)getpid());
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return; /* none (yet): JIT frames stay [unknown] */
    if (s->jit != NULL && st.st_ino == s->jit_st.st_ino && st.st_size == s->jit_st.st_size &&
        st.st_mtim.tv_sec == s->jit_st.st_mtim.tv_sec && st.st_mtim.tv_nsec == s->jit_st.st_mtim.tv_nsec)
        return;
    if ((m = ph_perfmap_open(path, &o, &err)) == NULL) {
        ph_error_free(&err);
        return;
    }
    forget_jit(s);
    ph_perfmap_free(s->jit);
    s->jit = m;
    s->jit_st = st;
}

void
phs_symbols_free(phs_symbols *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_mods; i++) {
        free(s->mods[i].syms);
        free(s->mods[i].pretty);
        if (s->mods[i].map)
            munmap(s->mods[i].map, s->mods[i].map_len);
    }
    free(s->mods);
    for (size_t i = 0; i < s->n_owned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->cache);
    ph_intern_free(s->strs);
    ph_perfmap_free(s->jit);
    phs_dwarf_close(s->dw);
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
    if (b->oom || n == 0)
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

/* A varint field; zero is the default and is left out, as protobuf does. */
static void
pb_int(pb *b, int field, uint64_t v)
{
    if (v == 0)
        return;
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}

static void
pb_msg(pb *b, int field, const pb *m)
{
    pb_varint(b, ((uint64_t)field << 3) | 2);
    pb_varint(b, m->len);
    pb_bytes(b, m->d, m->len);
    if (m->oom)
        b->oom = 1;
}

static void
pb_str(pb *b, int field, const char *s)
{
    size_t n = strlen(s);

    pb_varint(b, ((uint64_t)field << 3) | 2);
    pb_varint(b, n);
    pb_bytes(b, s, n);
}

/* The string table: index by content (hash of the text). */
typedef struct strtab {
    const char **v;
    size_t n, cap;
    uint32_t *idx;          /* open addressing: index + 1, 0 empty */
    size_t cap_idx;
    int oom;
} strtab;

static uint64_t
str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t
str_id(strtab *t, const char *s)
{
    size_t k;

    if (t->n * 2 >= t->cap_idx) {
        size_t cap = t->cap_idx ? t->cap_idx * 2 : 1024;
        uint32_t *ni = calloc(cap, sizeof *ni);

        if (ni == NULL) {
            t->oom = 1;
            return 0;
        }
        for (size_t i = 0; i < t->n; i++) {
            for (k = str_hash(t->v[i]) & (cap - 1); ni[k]; k = (k + 1) & (cap - 1))
                ;
            ni[k] = (uint32_t)i + 1;
        }
        free(t->idx);
        t->idx = ni;
        t->cap_idx = cap;
    }
    for (k = str_hash(s) & (t->cap_idx - 1); t->idx[k]; k = (k + 1) & (t->cap_idx - 1))
        if (strcmp(t->v[t->idx[k] - 1], s) == 0)
            return t->idx[k] - 1;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        const char **nv = realloc(t->v, cap * sizeof *nv);
        if (nv == NULL) {
            t->oom = 1;
            return 0;
        }
        t->v = nv;
        t->cap = cap;
    }
    t->v[t->n] = s;
    t->idx[k] = (uint32_t)t->n + 1;
    return t->n++;
}

/* pc -> location id (1-based), open addressing. */
typedef struct locmap {
    uintptr_t *pcs;         /* in id order */
    size_t n, cap;
    uint32_t *idx;
    size_t cap_idx;
} locmap;

static uint64_t
loc_id(locmap *l, uintptr_t pc)
{
    size_t k;

    if (l->n * 2 >= l->cap_idx) {
        size_t cap = l->cap_idx ? l->cap_idx * 2 : 1024;
        uint32_t *ni = calloc(cap, sizeof *ni);

        if (ni == NULL)
            return 0;
        for (size_t i = 0; i < l->n; i++) {
            for (k = pc_hash(l->pcs[i], cap); ni[k]; k = (k + 1) & (cap - 1))
                ;
            ni[k] = (uint32_t)i + 1;
        }
        free(l->idx);
        l->idx = ni;
        l->cap_idx = cap;
    }
    for (k = pc_hash(pc, l->cap_idx); l->idx[k]; k = (k + 1) & (l->cap_idx - 1))
        if (l->pcs[l->idx[k] - 1] == pc)
            return l->idx[k];
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        uintptr_t *np = realloc(l->pcs, cap * sizeof *np);
        if (np == NULL)
            return 0;
        l->pcs = np;
        l->cap = cap;
    }
    l->pcs[l->n] = pc;
    l->idx[k] = (uint32_t)l->n + 1;
    return ++l->n;
}

static int
gzip_to(const char *path, const pb *out)
{
    char tmp[4200];
    gzFile gz;

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    gz = gzopen(tmp, "wb");
    if (gz == NULL)
        return -1;
    if (out->len > 0 && gzwrite(gz, out->d, (unsigned)out->len) != (int)out->len) {
        gzclose(gz);
        unlink(tmp);
        return -1;
    }
    if (gzclose(gz) != Z_OK || chmod(tmp, 0644) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int
phs_write_pprof(const char *path, const phs_stack *stacks, size_t n, phs_symbols *syms, const phs_pprof_meta *meta)
{
    pb out = { 0 }, m = { 0 }, sub = { 0 }, fn = { 0 }, funcs = { 0 };
    strtab st = { 0 };
    locmap lm = { 0 };
    uint64_t *fn_of_str = NULL; /* string id of a name -> function id */
    size_t cap_fn = 0, n_fn = 0;
    uint64_t s_thread, s_thread_id;
    const char *types[PHS_PPROF_MAX_TYPES][2] = { { "samples", "count" }, { "cpu", "nanoseconds" } };
    const char *type = meta->type ? meta->type : "cpu"; /* cpu, or wall */
    int n_types = meta->n_types > 0 && meta->n_types <= PHS_PPROF_MAX_TYPES ? meta->n_types : 2, rc = -1;

    if (meta->n_types > 0)
        memcpy(types, meta->types, sizeof types);
    else
        types[1][0] = type;
    str_id(&st, "");
    /* sample_type: samples/count, cpu/nanoseconds, or the meta's */
    for (int t = 0; t < n_types; t++) {
        m.len = 0;
        pb_int(&m, 1, str_id(&st, types[t][0]));
        pb_int(&m, 2, str_id(&st, types[t][1]));
        pb_msg(&out, 1, &m);
    }
    s_thread = str_id(&st, "thread");
    s_thread_id = str_id(&st, "thread_id");
    for (size_t i = 0; i < n; i++) {
        m.len = 0;
        sub.len = 0;
        for (uint32_t k = 0; k < stacks[i].depth; k++) /* leaf first, as pprof wants */
            pb_varint(&sub, loc_id(&lm, phs_call_pc(stacks[i].pcs, k)));
        pb_msg(&m, 1, &sub); /* packed location_id */
        sub.len = 0;
        if (stacks[i].values != NULL) {
            for (int t = 0; t < n_types; t++)
                pb_varint(&sub, (uint64_t)stacks[i].values[t]);
        } else {
            pb_varint(&sub, stacks[i].count);
            pb_varint(&sub, stacks[i].count * (uint64_t)meta->period_ns);
        }
        pb_msg(&m, 2, &sub); /* packed value */
        if (stacks[i].thread == NULL) {
            pb_msg(&out, 2, &m);
            continue;
        }
        sub.len = 0;
        pb_int(&sub, 1, s_thread);
        pb_int(&sub, 2, str_id(&st, stacks[i].thread));
        pb_msg(&m, 3, &sub);
        sub.len = 0;
        pb_int(&sub, 1, s_thread_id);
        pb_int(&sub, 3, stacks[i].tid);
        pb_msg(&m, 3, &sub);
        pb_msg(&out, 2, &m);
    }
    /* mappings: every object loaded (ids are module index + 1) */
    for (int i = 0;; i++) {
        uintptr_t lo, hi, off;
        const char *file;

        if (phs_module_info(syms, i, &lo, &hi, &off, &file) < 0)
            break;
        m.len = 0;
        pb_int(&m, 1, (uint64_t)i + 1);
        pb_int(&m, 2, lo);
        pb_int(&m, 3, hi);
        pb_int(&m, 4, off);
        pb_int(&m, 5, str_id(&st, file));
        if (syms->mods[i].build_id[0])
            pb_int(&m, 6, str_id(&st, syms->mods[i].build_id));
        pb_int(&m, 7, 1); /* has_functions */
        pb_msg(&out, 3, &m);
    }
    /* Locations, and one function per distinct name.  A location's lines
     * are the functions inlined at it, innermost first, then the one that
     * holds it, as profile.proto has them. */
    for (size_t i = 0; i < lm.n; i++) {
        int mod = -1;
        const phs_frame *fr;
        int nf = phs_frames(syms, lm.pcs[i], &fr, &mod);

        m.len = 0;
        pb_int(&m, 1, i + 1);
        if (mod >= 0)
            pb_int(&m, 2, (uint64_t)mod + 1);
        if (!phs_is_tagged(lm.pcs[i])) /* a Python or Java frame has no address: its function and line say it all */
            pb_int(&m, 3, lm.pcs[i]);
        for (int j = nf - 1; j >= 0; j--) {
            /* One function per system name: a Python frame's is
             * file:qualname, so every module's <module> is its own. */
            uint64_t sname = str_id(&st, fr[j].name), sys = fr[j].system ? str_id(&st, fr[j].system) : sname, fid;

            if (sys >= cap_fn) {
                size_t cap = cap_fn ? cap_fn : 256;
                uint64_t *nfn;
                while (cap <= sys)
                    cap *= 2;
                nfn = realloc(fn_of_str, cap * sizeof *nfn);
                if (nfn == NULL)
                    goto out;
                memset(nfn + cap_fn, 0, (cap - cap_fn) * sizeof *nfn);
                fn_of_str = nfn;
                cap_fn = cap;
            }
            fid = fn_of_str[sys];
            if (fid == 0) {
                fid = fn_of_str[sys] = ++n_fn;
                fn.len = 0;
                pb_int(&fn, 1, fid);
                pb_int(&fn, 2, sname);
                pb_int(&fn, 3, sys);
                if (fr[j].file && fr[j].file[0])
                    pb_int(&fn, 4, str_id(&st, fr[j].file));
                else if (mod >= 0)
                    pb_int(&fn, 4, str_id(&st, syms->mods[mod].path[0] ? syms->mods[mod].path
                                                                        : syms->mods[mod].base));
                pb_msg(&funcs, 5, &fn);
            }
            sub.len = 0;
            pb_int(&sub, 1, fid);
            if (fr[j].line > 0)
                pb_int(&sub, 2, (uint64_t)fr[j].line);
            pb_msg(&m, 4, &sub);
        }
        pb_msg(&out, 4, &m);
    }
    pb_bytes(&out, funcs.d, funcs.len);
    pb_int(&out, 9, (uint64_t)meta->time_nanos);
    pb_int(&out, 10, (uint64_t)meta->duration_nanos);
    m.len = 0;
    pb_int(&m, 1, str_id(&st, meta->period_type[0] ? meta->period_type[0] : type));
    pb_int(&m, 2, str_id(&st, meta->period_type[1] ? meta->period_type[1] : "nanoseconds"));
    pb_msg(&out, 11, &m);
    pb_int(&out, 12, (uint64_t)meta->period_ns);
    for (size_t i = 0; i < sizeof meta->comments / sizeof *meta->comments; i++)
        if (meta->comments[i])
            pb_int(&out, 13, str_id(&st, meta->comments[i]));
    pb_int(&out, 14, str_id(&st, meta->default_type ? meta->default_type : type)); /* default_sample_type */
    /* the string table last: every id above is known by now */
    for (size_t i = 0; i < st.n; i++)
        pb_str(&out, 6, st.v[i]);
    if (out.oom || m.oom || sub.oom || st.oom || fn.oom || funcs.oom)
        goto out;
    rc = gzip_to(path, &out);
out:
    free(out.d);
    free(m.d);
    free(sub.d);
    free(fn.d);
    free(funcs.d);
    free(st.v);
    free(st.idx);
    free(lm.pcs);
    free(lm.idx);
    free(fn_of_str);
    return rc;
}
