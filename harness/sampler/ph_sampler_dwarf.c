/* ph_sampler_dwarf.c - source lines and inlined functions from debug info,
 * for the writer thread only.
 *
 * elfutils' libdw does the reading (DWARF 2-5, split and compressed
 * sections, separate debug files found by build id or .gnu_debuglink under
 * /usr/lib/debug).  The service need not have it: libdw.so.1 is dlopen'd
 * the first time a module turns out to carry debug info, the service's
 * own, else the tools tree's beside this library (../tools/lib: the tools
 * volume mounted into the service's own image; its search path leads to
 * the tree's libelf, the service's libc is the one loaded), and when
 * neither loads, or PH_SAMPLER_DEBUGINFO=0, names come from the symbol tables
 * alone and lines are 0.  Its headers are used for the types only; the
 * library is never linked.
 *
 * Modules are reported to one Dwfl as they are first met (report_begin_add),
 * each at its load bias, so a module libdw cannot read costs one attempt. */
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "ph_sampler_int.h"

struct phs_dwarf {
    void *lib;
    Dwfl *dwfl;
    char *debuginfo_path;
    Dwfl_Callbacks cb;
    Dwfl *(*begin)(const Dwfl_Callbacks *);
    void (*end)(Dwfl *);
    void (*report_begin_add)(Dwfl *);
    Dwfl_Module *(*report_elf)(Dwfl *, const char *, const char *, int, GElf_Addr, bool);
    int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *), void *);
    const char *(*addrinfo)(Dwfl_Module *, GElf_Addr, GElf_Off *, GElf_Sym *, GElf_Word *, Elf **, Dwarf_Addr *);
    Dwarf_Die *(*addrdie)(Dwfl_Module *, Dwarf_Addr, Dwarf_Addr *);
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

/* <dir>/../REL, DIR this library's own (the tools tree's root when it is
 * loaded from /opt/profharness/lib): 0, or -1 when it does not fit. */
static int
beside_self(const char *rel, char *path, size_t len)
{
    Dl_info info;
    const char *slash;

    if (dladdr((void *)beside_self, &info) == 0 || info.dli_fname == NULL ||
        (slash = strrchr(info.dli_fname, '/')) == NULL)
        return -1;
    return (size_t)snprintf(path, len, "%.*s/../%s", (int)(slash - info.dli_fname), info.dli_fname, rel) < len ? 0
                                                                                                          : -1;
}

int
phs_tree_debug_dir(char *path, size_t len)
{
    return beside_self("debug", path, len);
}

#ifdef __GLIBC__
/* The tools tree's libdw, beside this library: <dir>/../tools/lib. */
static void *
tree_libdw(void)
{
    char path[4096];

    if (beside_self("tools/lib/libdw.so.1", path, sizeof path) < 0)
        return NULL;
    return dlopen(path, RTLD_LAZY | RTLD_LOCAL);
}
#endif

phs_dwarf *
phs_dwarf_open(void)
{
    phs_dwarf *d = calloc(1, sizeof *d);
    void *lib;
    int ok = 1;

    if (d == NULL)
        return NULL;
    lib = dlopen("libdw.so.1", RTLD_LAZY | RTLD_LOCAL);
#ifdef __GLIBC__ /* the tree's libdw is glibc's: never into a musl process */
    if (lib == NULL)
        lib = tree_libdw();
#endif
    if (lib == NULL) {
        free(d);
        return NULL;
    }
    d->lib = lib;
#define SYM(field, name) ok &= (*(void **)&d->field = dlsym(lib, name)) != NULL
    SYM(begin, "dwfl_begin");
    SYM(end, "dwfl_end");
    SYM(report_begin_add, "dwfl_report_begin_add");
    SYM(report_elf, "dwfl_report_elf");
    SYM(report_end, "dwfl_report_end");
    SYM(addrinfo, "dwfl_module_addrinfo");
    SYM(addrdie, "dwfl_module_addrdie");
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
    {
        /* elfutils' default path, then the tools tree's debug files (by
         * build id: the tree carries Debian's libc6-dbg, which names glibc's
         * internal functions when the service's libc is that build) */
        char tree[4096], buf[4200];

        if (phs_tree_debug_dir(tree, sizeof tree) == 0 &&
            (size_t)snprintf(buf, sizeof buf, ":.debug:/usr/lib/debug:%s", tree) < sizeof buf)
            d->debuginfo_path = strdup(buf);
    }
    d->cb.debuginfo_path = &d->debuginfo_path; /* NULL: the default path */
    if (ok)
        d->dwfl = d->begin(&d->cb);
    if (d->dwfl == NULL) {
        dlclose(lib);
        free(d->debuginfo_path);
        free(d);
        return NULL;
    }
    return d;
}

void
phs_dwarf_close(phs_dwarf *d)
{
    if (d == NULL)
        return;
    d->end(d->dwfl);
    dlclose(d->lib);
    free(d->debuginfo_path);
    free(d);
}

void *
phs_dwarf_report(phs_dwarf *d, const char *path, uintptr_t bias)
{
    Dwfl_Module *m;

    d->report_begin_add(d->dwfl);
    m = d->report_elf(d->dwfl, path, path, -1, bias, true);
    d->report_end(d->dwfl, NULL, NULL);
    return m;
}

/* The linkage name (mangled, qualified) when there is one, else the name. */
static const char *
die_name(phs_dwarf *d, Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *n;

    if ((d->attr_integrate(die, DW_AT_linkage_name, &a) || d->attr_integrate(die, DW_AT_MIPS_linkage_name, &a)) &&
        (n = d->formstring(&a)) != NULL)
        return n;
    if (d->attr_integrate(die, DW_AT_name, &a) && (n = d->formstring(&a)) != NULL)
        return n;
    return NULL;
}

int
phs_dwarf_frames(phs_dwarf *d, void *module, uintptr_t pc, phs_dwarf_frame *out, int max)
{
    Dwfl_Module *m = module;
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu, *scopes = NULL;
    Dwfl_Line *ln;
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    const char *file = NULL;
    int line = 0, n = 0, ns;

    if (m == NULL || max < 1)
        return 0;
    if ((ln = d->getsrc(m, pc)) != NULL)
        file = d->lineinfo(ln, NULL, &line, NULL, NULL, NULL);
    cu = d->addrdie(m, pc, &bias);
    ns = cu ? d->getscopes(cu, pc - bias, &scopes) : 0;
    if (cu && d->getsrcfiles(cu, &files, &nfiles) != 0)
        files = NULL;
    /* Innermost first: each inlined_subroutine up to the subprogram that
     * holds them.  A frame's line is where PC is; its caller's line is
     * the inlined call's DW_AT_call_file/line.  Past an inlined instance
     * dwarf_getscopes goes on with the scopes of its abstract definition;
     * the concrete ones, where it was inlined, are dwarf_getscopes_die's. */
    for (int i = 0, hops = 0; i < ns; i++) {
        int tag = d->tag(&scopes[i]);
        Dwarf_Attribute a;
        Dwarf_Word v;

        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
            continue;
        if (n == max) { /* deeper than MAX: the innermost go */
            memmove(out, out + 1, (size_t)(max - 1) * sizeof *out);
            n--;
        }
        out[n].name = die_name(d, &scopes[i]);
        out[n].file = file;
        out[n].line = line;
        n++;
        if (tag == DW_TAG_subprogram)
            break;
        file = NULL;
        line = 0;
        if (d->attr_integrate(&scopes[i], DW_AT_call_file, &a) && d->formudata(&a, &v) == 0 && files && v < nfiles)
            file = d->filesrc(files, v, NULL, NULL);
        if (d->attr_integrate(&scopes[i], DW_AT_call_line, &a) && d->formudata(&a, &v) == 0)
            line = (int)v;
        if (hops++ < 64) {
            Dwarf_Die *outer = NULL;
            int no = d->getscopes_die(&scopes[i], &outer);

            if (no > 0) { /* outer[0] is this instance again */
                free(scopes);
                scopes = outer;
                ns = no;
                i = 0;
            } else {
                free(outer);
            }
        }
    }
    free(scopes);
    if (n == 0 && (file != NULL || line != 0)) { /* lines, but no DIE for PC */
        out[0] = (phs_dwarf_frame){ NULL, file, line };
        n = 1;
    }
    return n;
}

const char *
phs_dwarf_symbol(phs_dwarf *d, void *module, uintptr_t pc)
{
    GElf_Sym sym;
    GElf_Off off;

    if (module == NULL)
        return NULL;
    return d->addrinfo(module, pc, &off, &sym, NULL, NULL, NULL);
}
