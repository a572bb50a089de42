/* ph_collapse_dw.c - inlined functions from DWARF, for `collapse --inline`.
 *
 * elfutils' libdw reads the debug info (found beside the file, by build id
 * or .gnu_debuglink under /usr/lib/debug).  It is dlopen'd, only when
 * --inline is asked, so profharness runs where it is not installed; its
 * headers give the types.  Each file gets a Dwfl of its own, at its link
 * addresses (bias 0): perf prints addresses relative to a module's load,
 * and files would overlap in one address space.  Files are opened once;
 * one that cannot be read is remembered as such.
 */
#include "ph_collapse_int.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct dw_file {
    char *path;
    Dwfl *dwfl;       /* NULL: not readable */
    Dwfl_Module *mod;
    struct dw_file *next;
} dw_file;

struct ph_collapse_dw {
    void *lib;
    dw_file *files;
    char *debuginfo_path;
    Dwfl_Callbacks cb;
    Dwfl *(*begin)(const Dwfl_Callbacks *);
    void (*end)(Dwfl *);
    Dwfl_Module *(*report_elf)(Dwfl *, const char *, const char *, int, GElf_Addr, bool);
    int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *), void *);
    Dwarf_Die *(*addrdie)(Dwfl_Module *, Dwarf_Addr, Dwarf_Addr *);
    int (*getsymtab)(Dwfl_Module *);
    const char *(*getsym_info)(Dwfl_Module *, int, GElf_Sym *, GElf_Addr *, GElf_Word *, Elf **, Dwarf_Addr *);
    Dwfl_Line *(*getsrc)(Dwfl_Module *, Dwarf_Addr);
    const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
    int (*getscopes)(Dwarf_Die *, Dwarf_Addr, Dwarf_Die **);
    int (*getscopes_die)(Dwarf_Die *, Dwarf_Die **);
    int (*tag)(Dwarf_Die *);
    Dwarf_Attribute *(*attr_integrate)(Dwarf_Die *, unsigned int, Dwarf_Attribute *);
    const char *(*formstring)(Dwarf_Attribute *);
    int (*formudata)(Dwarf_Attribute *, Dwarf_Word *);
    int (*getsrcfiles)(Dwarf_Die *, Dwarf_Files **, size_t *);
    const char *(*filesrc)(Dwarf_Files *, size_t, Dwarf_Word *, Dwarf_Word *);
};

ph_collapse_dw *
ph_collapse_dw_open(ph_error_t *err)
{
    ph_collapse_dw *d = calloc(1, sizeof *d);
    int ok = 1;

    if (d == NULL) {
        ph_fail(err, ENOMEM, "collapse: out of memory");
        return NULL;
    }
    if ((d->lib = dlopen("libdw.so.1", RTLD_LAZY | RTLD_LOCAL)) == NULL) {
        ph_fail(err, 0, "collapse --inline: cannot load libdw.so.1 (%s)", dlerror());
        ph_error_hint(err, "install elfutils' libdw (Debian: libdw1), or leave out --inline");
        free(d);
        return NULL;
    }
#define SYM(field, name) ok &= (*(void **)&d->field = dlsym(d->lib, name)) != NULL
    SYM(begin, "dwfl_begin");
    SYM(end, "dwfl_end");
    SYM(report_elf, "dwfl_report_elf");
    SYM(report_end, "dwfl_report_end");
    SYM(addrdie, "dwfl_module_addrdie");
    SYM(getsymtab, "dwfl_module_getsymtab");
    SYM(getsym_info, "dwfl_module_getsym_info");
    SYM(getsrc, "dwfl_module_getsrc");
    SYM(lineinfo, "dwfl_lineinfo");
    SYM(getscopes, "dwarf_getscopes");
    SYM(getscopes_die, "dwarf_getscopes_die");
    SYM(tag, "dwarf_tag");
    SYM(attr_integrate, "dwarf_attr_integrate");
    SYM(formstring, "dwarf_formstring");
    SYM(formudata, "dwarf_formudata");
    SYM(getsrcfiles, "dwarf_getsrcfiles");
    SYM(filesrc, "dwarf_filesrc");
    SYM(cb.find_elf, "dwfl_build_id_find_elf");
    SYM(cb.find_debuginfo, "dwfl_standard_find_debuginfo");
#undef SYM
    if (!ok) {
        ph_fail(err, 0, "collapse --inline: libdw.so.1 lacks a function it should have");
        dlclose(d->lib);
        free(d);
        return NULL;
    }
    d->cb.debuginfo_path = &d->debuginfo_path; /* NULL: the default path */
    return d;
}

void
ph_collapse_dw_close(ph_collapse_dw *d)
{
    if (d == NULL)
        return;
    while (d->files) {
        dw_file *n = d->files->next;
        if (d->files->dwfl)
            d->end(d->files->dwfl);
        free(d->files->path);
        free(d->files);
        d->files = n;
    }
    dlclose(d->lib);
    free(d);
}

/* PATH's module, opened the first time; NULL if it cannot be read. */
static dw_file *
dw_get(ph_collapse_dw *d, const char *path)
{
    dw_file *f;

    for (f = d->files; f; f = f->next)
        if (strcmp(f->path, path) == 0)
            return f->mod ? f : NULL;
    if ((f = calloc(1, sizeof *f)) == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return NULL;
    }
    f->next = d->files;
    d->files = f;
    if ((f->dwfl = d->begin(&d->cb)) == NULL)
        return NULL;
    f->mod = d->report_elf(f->dwfl, path, path, -1, 0, false);
    d->report_end(f->dwfl, NULL, NULL);
    return f->mod ? f : NULL;
}

/* The address of symbol SYM in M, or 0. */
static GElf_Addr
sym_addr(ph_collapse_dw *d, Dwfl_Module *m, const char *sym, size_t n)
{
    int count = d->getsymtab(m);

    for (int i = 1; i < count; i++) {
        GElf_Sym s;
        GElf_Addr addr;
        const char *name = d->getsym_info(m, i, &s, &addr, NULL, NULL, NULL);
        if (name && strlen(name) == n && memcmp(name, sym, n) == 0 && GELF_ST_TYPE(s.st_info) == STT_FUNC)
            return addr;
    }
    return 0;
}

static const char *
die_name(ph_collapse_dw *d, Dwarf_Die *die)
{
    Dwarf_Attribute a;

    return d->attr_integrate(die, DW_AT_name, &a) ? d->formstring(&a) : NULL;
}

int
ph_collapse_dw_frames(ph_collapse_dw *d, const char *path, uint64_t pc, const char *sym, size_t symlen,
                      uint64_t off, int has_off, ph_collapse_dw_frame *out, int max)
{
    dw_file *f = dw_get(d, path);
    Dwarf_Addr bias = 0, addr = pc;
    Dwarf_Die *cu, *scopes = NULL;
    Dwarf_Files *files = NULL;
    Dwfl_Line *ln;
    size_t nfiles = 0;
    const char *file = NULL;
    int line = 0, n = 0, ns;

    if (f == NULL || max < 1)
        return 0;
    if ((cu = d->addrdie(f->mod, addr, &bias)) == NULL && has_off) {
        GElf_Addr base = sym_addr(d, f->mod, sym, symlen);
        addr = base ? base + off : 0;
        cu = addr ? d->addrdie(f->mod, addr, &bias) : NULL;
    }
    if (cu == NULL || (ns = d->getscopes(cu, addr - bias, &scopes)) <= 0)
        return 0;
    if ((ln = d->getsrc(f->mod, addr)) != NULL)
        file = d->lineinfo(ln, NULL, &line, NULL, NULL, NULL);
    if (d->getsrcfiles(cu, &files, &nfiles) != 0)
        files = NULL;
    /* innermost first: each inlined instance, its file:line where PC is
     * (then where it was inlined, for the next), until the function that
     * holds them.  Past an inlined instance dwarf_getscopes gives its
     * abstract definition's scopes; the concrete ones, where it was
     * inlined, come from dwarf_getscopes_die. */
    for (int i = 0, hops = 0; i < ns && n < max; i++) {
        int tag = d->tag(&scopes[i]);
        Dwarf_Attribute a;
        Dwarf_Word v;
        Dwarf_Die *outer = NULL;
        int no;

        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
            continue;
        out[n++] = (ph_collapse_dw_frame){ die_name(d, &scopes[i]), file, line };
        if (tag == DW_TAG_subprogram)
            break;
        file = NULL;
        line = 0;
        if (d->attr_integrate(&scopes[i], DW_AT_call_file, &a) && d->formudata(&a, &v) == 0 && files && v < nfiles)
            file = d->filesrc(files, v, NULL, NULL);
        if (d->attr_integrate(&scopes[i], DW_AT_call_line, &a) && d->formudata(&a, &v) == 0)
            line = (int)v;
        if (hops++ < 64 && (no = d->getscopes_die(&scopes[i], &outer)) > 0) { /* outer[0] is this instance */
            free(scopes);
            scopes = outer;
            ns = no;
            i = 0;
        } else {
            free(outer);
        }
    }
    free(scopes);
    for (int i = 0, j = n - 1; i < j; i++, j--) { /* outermost first */
        ph_collapse_dw_frame t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    return n;
}
