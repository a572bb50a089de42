/* ph_gopclntab.c - Go's function table read within bounds (see
 * ph_gopclntab.h).
 *
 * Every read goes through rd(), which is given an offset already checked
 * against the section's length, and reads byte by byte (the file is not
 * aligned for us, nor in our byte order).  Sizes are compared as
 * "what is left after the offset", never by adding to an offset, so no
 * sum can wrap.
 */
#include "ph_gopclntab.h"

#include <string.h>

enum { VER12 = 12, VER116 = 116, VER118 = 118, VER120 = 120 };

static uint64_t
rd(const unsigned char *p, unsigned n, int be)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[be ? n - 1 - i : i] << (8 * i);
    return v;
}

/* Whether N bytes at OFF lie inside LEN. */
static int
fits(size_t len, uint64_t off, uint64_t n)
{
    return off <= len && n <= len - off;
}

/* Word K of the header (after its 8 bytes), pointer-sized. */
static uint64_t
header_word(const ph_gopclntab *t, unsigned k)
{
    return rd(t->p + 8 + (size_t)k * t->ptrsize, t->ptrsize, t->big_endian);
}

/* Field K of the function table: even ones are addresses (or 1.18+
 * offsets from the text start), odd ones function data offsets. */
static uint64_t
functab_field(const ph_gopclntab *t, size_t k)
{
    return rd(t->p + t->functab + k * t->field, t->field, t->big_endian);
}

/* The address where function I starts (I == nfunc: where the last ends). */
static uint64_t
func_pc(const ph_gopclntab *t, size_t i)
{
    uint64_t v = functab_field(t, 2 * i);

    return t->version >= VER118 ? t->text_start + v : v;
}

int
ph_gopclntab_parse(ph_gopclntab *t, const void *p, size_t len, uint64_t text_addr)
{
    const unsigned char *b = p;
    unsigned words;
    uint64_t magic, nfunc, avail, v;

    memset(t, 0, sizeof *t);
    if (b == NULL || len < 8 || b[4] != 0 || b[5] != 0 || (b[6] != 1 && b[6] != 2 && b[6] != 4) ||
        (b[7] != 4 && b[7] != 8))
        return -1;
    t->p = b;
    t->len = len;
    t->ptrsize = b[7];
    /* the magics read the other way round are none of them */
    magic = rd(b, 4, 0);
    if ((magic & 0xfffffff0u) != 0xfffffff0u) {
        t->big_endian = 1;
        magic = rd(b, 4, 1);
    }
    switch (magic) {
    case 0xfffffffbu: t->version = VER12; words = 1; break;
    case 0xfffffffau: t->version = VER116; words = 7; break;
    case 0xfffffff0u: t->version = VER118; words = 8; break;
    case 0xfffffff1u: t->version = VER120; words = 8; break;
    default: goto bad;
    }
    if (!fits(len, 8, (uint64_t)words * t->ptrsize))
        goto bad;
    nfunc = header_word(t, 0);
    switch (t->version) {
    case VER12:
        t->field = t->ptrsize;
        t->functab = 8 + t->ptrsize;
        t->funcdata = 0;
        t->names = 0;
        break;
    case VER116:
        t->field = t->ptrsize;
        t->names = (size_t)header_word(t, 2);
        t->funcdata = t->functab = (size_t)header_word(t, 6);
        if (header_word(t, 2) > len || header_word(t, 6) > len)
            goto bad;
        break;
    default:
        t->field = 4;
        t->text_start = header_word(t, 2) ? header_word(t, 2) : text_addr;
        t->names = (size_t)header_word(t, 3);
        t->funcdata = t->functab = (size_t)header_word(t, 7);
        /* an entry is the text start plus 32 bits: that must not wrap */
        if (header_word(t, 3) > len || header_word(t, 7) > len || t->text_start > UINT64_MAX - UINT32_MAX)
            goto bad;
        break;
    }
    /* nfunc pairs and the end address, whole inside the section */
    avail = (len - t->functab) / t->field;
    if (nfunc == 0 || avail < 1 || nfunc > (avail - 1) / 2)
        goto bad;
    t->nfunc = (size_t)nfunc;
    /* in address order, or lookups would answer nonsense */
    v = func_pc(t, 0);
    for (size_t i = 1; i <= t->nfunc; i++) {
        uint64_t next = func_pc(t, i);

        if (next < v)
            goto bad;
        v = next;
    }
    return 0;
bad:
    memset(t, 0, sizeof *t);
    return -1;
}

const char *
ph_gopclntab_func(const ph_gopclntab *t, size_t i, uint64_t *start, uint64_t *end)
{
    /* the function's data: its entry (pointer-sized before 1.18, 32 bits
     * after), then its name's offset (int32) */
    uint64_t off, entry_size, name;
    const unsigned char *nul;
    int64_t nameoff;

    if (t->p == NULL || i >= t->nfunc)
        return NULL;
    if (start)
        *start = func_pc(t, i);
    if (end)
        *end = func_pc(t, i + 1);
    off = functab_field(t, 2 * i + 1);
    entry_size = t->version >= VER118 ? 4 : t->ptrsize;
    if (off > t->len - t->funcdata || !fits(t->len, t->funcdata + off, entry_size + 4))
        return NULL;
    nameoff = (int32_t)(uint32_t)rd(t->p + t->funcdata + off + entry_size, 4, t->big_endian);
    if (nameoff < 0 || (uint64_t)nameoff >= t->len - t->names)
        return NULL;
    name = t->names + (uint64_t)nameoff;
    nul = memchr(t->p + name, '\0', t->len - name);
    if (nul == NULL || nul == t->p + name)
        return NULL;
    return (const char *)t->p + name;
}

const char *
ph_gopclntab_find(const ph_gopclntab *t, uint64_t pc, uint64_t *start, uint64_t *end)
{
    size_t lo = 0, hi;

    if (t->p == NULL || t->nfunc == 0 || pc < func_pc(t, 0) || pc >= func_pc(t, t->nfunc))
        return NULL;
    hi = t->nfunc;
    while (hi - lo > 1) { /* the last function starting at or before pc */
        size_t mid = lo + (hi - lo) / 2;

        if (func_pc(t, mid) <= pc)
            lo = mid;
        else
            hi = mid;
    }
    return ph_gopclntab_func(t, lo, start, end);
}

int
ph_gopclntab_by_name(const ph_gopclntab *t, const char *name, uint64_t *start, uint64_t *end)
{
    for (size_t i = 0; i < t->nfunc; i++) {
        const char *n = ph_gopclntab_func(t, i, start, end);

        if (n != NULL && strcmp(n, name) == 0)
            return 0;
    }
    return -1;
}

/* ---- ELF ----------------------------------------------------------------- */

/* An ELF file's ident, read within LEN: 64-bit or not, big-endian or not.
 * -1 when FILE is no ELF file (or too short for its header). */
static int
elf_ident(const unsigned char *b, size_t len, int *is64, int *be)
{
    if (b == NULL || len < 52 || memcmp(b, "\177ELF", 4) != 0 || (b[4] != 1 && b[4] != 2) || (b[5] != 1 && b[5] != 2))
        return -1;
    *is64 = b[4] == 2;
    *be = b[5] == 2;
    return *is64 && len < 64 ? -1 : 0;
}

int
ph_gopclntab_elf(ph_gopclntab *t, const void *file, size_t len)
{
    const unsigned char *b = file;
    uint64_t shoff, shentsize, shnum, shstrndx, str_off, str_size, text_addr = 0;
    uint64_t tab_off = 0, tab_size = 0;
    int is64, be, found = 0;
    unsigned a; /* the address fields' size */

    memset(t, 0, sizeof *t);
    if (elf_ident(b, len, &is64, &be) < 0)
        return -1;
    a = is64 ? 8 : 4;
    shoff = rd(b + (is64 ? 0x28 : 0x20), a, be);
    shentsize = rd(b + (is64 ? 0x3a : 0x2e), 2, be);
    shnum = rd(b + (is64 ? 0x3c : 0x30), 2, be);
    shstrndx = rd(b + (is64 ? 0x3e : 0x32), 2, be);
    if (shentsize < (is64 ? 64u : 40u) || shstrndx >= shnum || shoff > len || shnum > (len - shoff) / shentsize)
        return -1;
    /* sh_flags, sh_addr, sh_offset, sh_size: the four address-sized fields
     * after sh_name and sh_type (at 8 + k * a) */
#define SHA(i, k) rd(b + shoff + (i) * shentsize + 8 + (k) * a, a, be)
    str_off = SHA(shstrndx, 2);
    str_size = SHA(shstrndx, 3);
    if (!fits(len, str_off, str_size))
        return -1;
    for (uint64_t i = 0; i < shnum; i++) {
        uint64_t name = rd(b + shoff + i * shentsize, 4, be), type = rd(b + shoff + i * shentsize + 4, 4, be);
        const char *n;

        if (name >= str_size || memchr(b + str_off + name, '\0', str_size - name) == NULL || type == 8 /* NOBITS */)
            continue;
        n = (const char *)b + str_off + name;
        if (strcmp(n, ".text") == 0)
            text_addr = SHA(i, 1);
        else if (!found && (strcmp(n, ".gopclntab") == 0 || strcmp(n, ".data.rel.ro.gopclntab") == 0)) {
            tab_off = SHA(i, 2);
            tab_size = SHA(i, 3);
            found = fits(len, tab_off, tab_size);
        }
    }
#undef SHA
    if (!found)
        return -1;
    return ph_gopclntab_parse(t, b + tab_off, (size_t)tab_size, text_addr);
}

int
ph_gopclntab_elf_addr(const void *file, size_t len, uint64_t off, uint64_t *addr)
{
    const unsigned char *b = file;
    uint64_t phoff, phentsize, phnum;
    int is64, be;
    unsigned a;

    if (elf_ident(b, len, &is64, &be) < 0)
        return -1;
    a = is64 ? 8 : 4;
    phoff = rd(b + (is64 ? 0x20 : 0x1c), a, be);
    phentsize = rd(b + (is64 ? 0x36 : 0x2a), 2, be);
    phnum = rd(b + (is64 ? 0x38 : 0x2c), 2, be);
    if (phentsize < (is64 ? 56u : 32u) || phoff > len || phnum > (len - phoff) / phentsize)
        return -1;
    for (uint64_t i = 0; i < phnum; i++) {
        const unsigned char *ph = b + phoff + i * phentsize;
        /* 64-bit: type, flags, offset, vaddr, paddr, filesz; 32-bit: type,
         * offset, vaddr, paddr, filesz */
        uint64_t type = rd(ph, 4, be), p_off = rd(ph + (is64 ? 8 : 4), a, be), vaddr = rd(ph + (is64 ? 16 : 8), a, be);
        uint64_t filesz = rd(ph + (is64 ? 32 : 16), a, be);

        if (type != 1 /* PT_LOAD */ || off < p_off || off - p_off >= filesz || vaddr > UINT64_MAX - (off - p_off))
            continue;
        *addr = vaddr + (off - p_off);
        return 0;
    }
    return -1;
}
