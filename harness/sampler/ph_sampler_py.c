/* ph_sampler_py.c - CPython's own frames in the sampler's stacks: the
 * functions a Python service runs, by their qualified names, files and
 * lines, where a native stack shows only the interpreter's eval loop.
 *
 * How (py-spy --native, echion and perforator merge stacks the same way):
 * - The writer (phs_py_detect) looks for a CPython in the process: the
 *   symbols _PyRuntime and _PyEval_EvalFrameDefault in the program or a
 *   loaded libpython, its version from Py_Version (3.11 and later: a
 *   `const unsigned long`, PY_VERSION_HEX) or, before 3.11, from its
 *   name (python3.X, libpython3.X) and the PY_VERSION string in its
 *   memory (the "3.X.Y" that Py_GetVersion() formats: copied, never
 *   called), and the layout of that version (ph_sampler_pylayout.h),
 *   checked against PyCode_Type's (and PyFrame_Type's) tp_basicsize; for
 *   3.13 the offsets themselves are read from the _Py_DebugOffsets
 *   CPython publishes at the start of _PyRuntime (cookie, version and the
 *   structs' sizes checked).  An unknown version is not read: the status
 *   and the snapshots say "Python X.Y.Z: frames not read (unknown
 *   version)", never names read with wrong offsets.
 * - The signal path (phs_py_merge), after the native unwind: the thread
 *   state holding the GIL (3.8 to 3.11: _PyRuntime.gilstate.
 *   tstate_current; 3.12: the GIL the main interpreter's ceval.gil points
 *   to, 3.13: the main interpreter's own, its last_holder while locked;
 *   from 3.12 on the current thread state is thread-local, which a
 *   handler cannot read for another module), when its thread_id is this
 *   thread's pthread_self() (another thread's frames are never charged
 *   to this one); else (a thread blocked in a call that released the
 *   GIL: time.sleep, select, a socket's recv; the wall clock's off-CPU
 *   samples) this thread's own state, found in the main interpreter's
 *   list of threads by that thread_id and remembered (thread-local);
 *   then its current frame chain
 *   (3.8 to 3.10: frame, f_back...; 3.11, 3.12: cframe->current_frame;
 *   3.13: current_frame; previous...).  Going from the innermost native
 *   frame outward, each _PyEval_EvalFrameDefault frame is replaced by the
 *   Python frames it runs: before 3.11 exactly one (each frame has an
 *   eval loop call of its own); then up to and including the next entry
 *   frame (is_entry in 3.11), or up to the entry frame the loop pushed
 *   (owned by the C stack, 3.12 and 3.13).  C extensions' frames stay
 *   where they are.  Only
 *   raw words are recorded (the code object, its first line and the
 *   instruction index, its qualified name object); every word is read
 *   after proving its page readable (ph_sampler.c's probe, a few pages
 *   per sample, cached within the sample), the chain is bounded by the
 *   room in the stack, and any read that fails leaves the rest native.
 *   The frame chain read is the interrupted thread's own, which only it
 *   pushes and pops, each frame holding its code object: what is read is
 *   consistent whether or not it holds the GIL.
 * - The writer's drain (phs_py_resolve), within a tick (250 ms) of the
 *   sample: each code object is read again, by copies that cannot fault
 *   (process_vm_readv of our own memory; the probe where that syscall is
 *   refused), and named only if it still is a code object (its type is
 *   PyCode_Type) with the same qualified name object and first line as
 *   sampled; its strings (compact str objects, type checked) and line
 *   table (bytes: 3.8, 3.9 co_lnotab, 3.10 co_linetable, 3.11+ the
 *   location table) are copied then.  Before 3.11 a code object has no
 *   qualified name: the name is co_name.  The writer holds no GIL, so a code
 *   object freed in between is not named: "[python: code freed]".  What
 *   is guaranteed: a name shown was, when copied, the name of a live code
 *   object at the sampled address with the sampled name object and first
 *   line; a reader racing a free reads garbage at worst, never faults.
 *   Names are cached by (code, first line + instruction, name object),
 *   and each code object as first read (its name, file and line table:
 *   pycode) by (code, name object, first line), so a later instruction of
 *   it is named after it is freed: a program's last samples are drained
 *   after its interpreter finalized.  In a Python's first second the
 *   writer's ticks are 20 ms (ph_sampler.c), so a program that ends
 *   within a tick has its code read while it lives.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ph_sampler_int.h"
#include "ph_sampler_pylayout.h"

#define MAX_CHAIN 1024       /* Python frames one eval frame may stand for */
#define MAX_THREADS_WALKED 256 /* thread states looked at for our own */
#define MAX_NAME 512         /* bytes of a name or file kept */
#define MAX_LINETABLE (1u << 20)
#define MAX_KEYS (1u << 20)  /* cached (code, instruction) names; past it, read each time */
#define MAX_CODES (1u << 18) /* code objects kept as first read (pycode) */
#define MAX_TABLES_KEPT (4u << 20) /* their line tables' bytes */

enum { PY_UNDECIDED, PY_NONE, PY_READING, PY_UNKNOWN };

static struct {
    _Atomic int state;       /* PY_*; the signal path reads frames only in PY_READING */
    uintptr_t runtime, eval_lo, eval_hi;
    uintptr_t code_type, unicode_type, bytes_type;
    const phs_py_layout *L;
    phs_py_layout from_process; /* a row filled from _Py_DebugOffsets */
    size_t scanned;          /* modules looked at */
    time_t looked_at;
    int vm_refused;          /* process_vm_readv refused: probe instead */
    pid_t target;            /* 0: this process; else the one read from outside (phs_py_target) */
    char desc[120];
} PY;

void
phs_py_target(pid_t pid)
{
    if (pid == PY.target)
        return;
    /* another process: what was found is not its */
    memset(&PY, 0, sizeof PY);
    PY.target = pid;
}

int
phs_py_active(void)
{
    return atomic_load_explicit(&PY.state, memory_order_acquire) == PY_READING;
}

const char *
phs_py_describe(void)
{
    return PY.desc;
}

static const phs_py_layout *
layout_of(unsigned long version)
{
    if (((version >> 24) & 0xff) != 3)
        return NULL;
    for (size_t i = 0; i < sizeof phs_py_layouts / sizeof *phs_py_layouts; i++)
        if (phs_py_layouts[i].minor == ((version >> 16) & 0xff))
            return &phs_py_layouts[i];
    return NULL;
}

static int copy_in(void *dst, uintptr_t src, size_t len);

/* ---- the writer's copies ---------------------------------------------- */

/* LEN bytes at SRC into DST without ever faulting; 0 or -1.  The one
 * read of the target's memory every other read goes through: this
 * process's, or the one phs_py_target named (there no probe: its pages
 * are not ours to touch). */
static int
copy_in(void *dst, uintptr_t src, size_t len)
{
    if (src < 4096 || src + len < src)
        return -1;
    if (PY.target != 0 || !PY.vm_refused) {
        struct iovec l = { dst, len }, r = { (void *)src, len };
        ssize_t n = process_vm_readv(PY.target != 0 ? PY.target : getpid(), &l, 1, &r, 1, 0);

        if (n == (ssize_t)len)
            return 0;
        if (PY.target != 0 || n >= 0 || (errno != ENOSYS && errno != EPERM))
            return -1;
        PY.vm_refused = 1; /* seccomp, or an old kernel */
    }
    for (uintptr_t p = src; p < src + len; p = (p & ~(uintptr_t)4095) + 4096)
        if (!phs_probe_mem(p, 1))
            return -1;
    if (!phs_probe_mem(src + len - 1, 1))
        return -1;
    memcpy(dst, (const void *)src, len);
    return 0;
}

static uintptr_t
word_at(const unsigned char *p)
{
    uintptr_t w;

    memcpy(&w, p, sizeof w);
    return w;
}

/* ---- detection (writer) ------------------------------------------------- */

/* The uint64_t at AT of the debug offsets D into *OUT, when it is below
 * LIMIT (the size of the struct it is an offset into) and fits the row's
 * 16 bits; else 0. */
static int
dbg_field(const unsigned char *d, uint16_t at, uint64_t limit, uint16_t *out)
{
    uint64_t v;

    memcpy(&v, d + at, sizeof v);
    if (v >= limit || v >= PHS_PY_NO_FIELD)
        return 0;
    *out = (uint16_t)v;
    return 1;
}

/* ROW filled from the _Py_DebugOffsets at RT (the start of _PyRuntime)
 * of a CPython of VERSION, after TEMPLATE; NULL with *WHY when they are
 * not there or not as this minor version's are. */
static const phs_py_layout *
from_debug_offsets(const phs_py_layout *template, uintptr_t rt, unsigned long version, phs_py_layout *row,
                   const char **why)
{
    const phs_py_dbg *D = &phs_py_dbg313;
    unsigned char d[1024];
    uint64_t v, ts, fr, co, ob, bytes, str;
    phs_py_layout L = *template;
    int ok;

    *why = "its _Py_DebugOffsets are not as expected";
    if (((version >> 4) & 0xf) != 0xf && ((version >> 8) & 0xff) == 0) {
        *why = "a pre-release";
        return NULL; /* 3.13.0 alpha to rc: the struct changed until rc2 */
    }
    if (D->size > sizeof d || copy_in(d, rt, D->size) < 0 || memcmp(d, "xdebugpy", 8) != 0)
        return NULL;
    memcpy(&v, d + D->version, sizeof v);
    if (v != version)
        return NULL;
    memcpy(&v, d + D->free_threaded, sizeof v);
    if (v != 0) {
        *why = "a free-threaded build";
        return NULL;
    }
    memcpy(&ts, d + D->ts_size, sizeof ts);
    memcpy(&fr, d + D->fr_size, sizeof fr);
    memcpy(&co, d + D->co_size, sizeof co);
    memcpy(&ob, d + D->b_size, sizeof ob);
    bytes = ob;
    memcpy(&str, d + D->u_size, sizeof str);
    /* the runtime and interpreter state: only their fields' offsets */
    ok = dbg_field(d, D->interpreters_head, PHS_PY_NO_FIELD, &L.rt_interp_head) &&
         dbg_field(d, D->interpreters_head, PHS_PY_NO_FIELD, &L.rt_interp) &&
         dbg_field(d, D->threads_head, PHS_PY_NO_FIELD, &L.is_threads_head) && dbg_field(d, D->ts_next, ts, &L.ts_next) &&
         dbg_field(d, D->gil_locked, PHS_PY_NO_FIELD, &L.is_gil_locked) &&
         dbg_field(d, D->gil_holder, PHS_PY_NO_FIELD, &L.is_gil_holder) &&
         dbg_field(d, D->ts_current_frame, ts, &L.cf_current_frame) &&
         dbg_field(d, D->ts_thread_id, ts, &L.ts_thread_id) && dbg_field(d, D->fr_executable, fr, &L.fr_code) &&
         dbg_field(d, D->fr_previous, fr, &L.fr_previous) && dbg_field(d, D->fr_instr_ptr, fr, &L.fr_prev_instr) &&
         dbg_field(d, D->fr_owner, fr, &L.fr_owner) && dbg_field(d, D->co_filename, co, &L.co_filename) &&
         dbg_field(d, D->co_qualname, co, &L.co_qualname) && dbg_field(d, D->co_linetable, co, &L.co_linetable) &&
         dbg_field(d, D->co_firstlineno, co, &L.co_firstlineno) &&
         dbg_field(d, D->co_code_adaptive, co + 1, &L.co_code) && dbg_field(d, D->b_ob_size, bytes, &L.b_size) &&
         dbg_field(d, D->b_ob_sval, bytes + 1, &L.b_data) && dbg_field(d, D->u_state, str, &L.u_state) &&
         dbg_field(d, D->u_length, str, &L.u_length) &&
         dbg_field(d, D->u_asciiobject_size, str + 1, &L.u_ascii_data);
    memcpy(&v, d + D->ob_type, sizeof v);
    if (!ok || v != PHS_PY_OB_TYPE)
        return NULL;
    L.u_compact_data = (uint16_t)(L.u_ascii_data + template->u_compact_data);
    *row = L;
    return row;
}

/* 3.MINOR from a program or library named python3.MINOR or
 * libpython3.MINOR (Debian's and the python images' names), or -1. */
static int
minor_of_name(const char *base)
{
    const char *p = strstr(base, "python3.");
    int minor = 0, digits = 0;

    if (p == NULL)
        return -1;
    for (p += 8; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
        minor = minor * 10 + (*p - '0');
    return digits == 0 || digits > 2 || (*p >= '0' && *p <= '9') ? -1 : minor;
}

/* The version (PY_VERSION_HEX's major, minor and micro; release level
 * final) of the string "3.MINOR.MICRO[a|b|rc N][+]" starting at P (N
 * bytes, NUL-terminated within them), or 0. */
static unsigned long
version_string(const unsigned char *p, size_t n)
{
    unsigned long part[2] = { 0, 0 };
    size_t i = 2;

    if (n < 6 || p[0] != '3' || p[1] != '.')
        return 0;
    for (int k = 0; k < 2; k++) {
        size_t d = 0;

        for (; i < n && p[i] >= '0' && p[i] <= '9' && d < 3; i++, d++)
            part[k] = part[k] * 10 + (p[i] - '0');
        if (d == 0 || d > 2 || i >= n || (k == 0 && p[i++] != '.'))
            return 0;
    }
    if (i + 1 < n && (p[i] == 'a' || p[i] == 'b'))
        i++;
    else if (i + 2 < n && p[i] == 'r' && p[i + 1] == 'c')
        i += 2;
    while (i < n && p[i] >= '0' && p[i] <= '9' && p[i - 1] != '.')
        i++;
    if (i < n && p[i] == '+')
        i++;
    if (i >= n || p[i] != '\0')
        return 0;
    return 0x03000000ul | part[0] << 16 | part[1] << 8 | 0xf0;
}

/* The PY_VERSION string in the module's memory [LO, HI) (a NUL, "3.X.Y",
 * a NUL): of 3.MINOR, or when MINOR is -1 of a 3.4 to 3.10 (the versions
 * without Py_Version) when only one such version is there; 0 when none
 * is, or several are.  The writer's copies, a page at a time (a page not
 * mapped, between the module's segments, is passed over), once per
 * CPython found. */
static unsigned long
version_in_memory(uintptr_t lo, uintptr_t hi, int minor)
{
    enum { PAGE = 4096, KEEP = 24 }; /* KEEP: past the longest such string */
    static unsigned char buf[KEEP + PAGE];
    unsigned long found = 0;
    size_t kept = 0; /* the end of the page before, at the start of buf */

    if (hi <= lo || hi - lo > (256u << 20))
        return 0;
    for (uintptr_t at = lo & ~(uintptr_t)(PAGE - 1); at < hi; at += PAGE) {
        uintptr_t from = at < lo ? lo : at, to = hi - at < PAGE ? hi : at + PAGE;
        size_t n = kept + (size_t)(to - from);

        if (copy_in(buf + kept, from, (size_t)(to - from)) < 0) {
            kept = 0;
            continue;
        }
        /* a string across the pages is seen whole here, and may have been
         * seen in part before: as a part it was no version */
        for (size_t i = 0; i + 1 < n; i++) {
            unsigned long v;

            if (buf[i] != '\0' || buf[i + 1] != '3' || (v = version_string(buf + i + 1, n - i - 1)) == 0)
                continue;
            if (minor >= 0 ? ((v >> 16) & 0xff) != (unsigned long)minor
                           : ((v >> 16) & 0xff) < 4 || ((v >> 16) & 0xff) > 10)
                continue;
            if (found != 0 && found != v)
                return 0; /* two versions: neither is sure */
            found = v;
        }
        kept = n < KEEP ? n : KEEP;
        memmove(buf, buf + n - kept, kept);
    }
    return found;
}

/* The tp_basicsize of the type object NAME in module MOD is SIZE. */
static int
type_size_is(phs_symbols *s, int mod, const char *name, uint16_t size)
{
    uintptr_t addr = 0, len = 0;
    intptr_t basic = 0;

    return phs_symbol_addr(s, mod, name, &addr, &len) == 0 && copy_in(&basic, addr + 32, sizeof basic) == 0 &&
           basic == (intptr_t)size; /* PyVarObject_HEAD, tp_name, then tp_basicsize */
}

/* Look in modules not looked at yet: the program, and libpython*. */
void
phs_py_detect(phs_symbols *s)
{
    uintptr_t eval = 0, eval_size = 0, rt = 0, rt_size = 0, ver_addr = 0, size = 0, mlo = 0, mhi = 0, moff = 0;
    unsigned long version = 0;
    const char *why = "unknown version", *mpath = "";
    char minor_only[16] = "";
    size_t n;
    int mod = -1, minor;

    if (atomic_load(&PY.state) != PY_UNDECIDED && atomic_load(&PY.state) != PY_NONE)
        return;
    if (PY.scanned > 0 && time(NULL) == PY.looked_at)
        return; /* a dlopen is looked for at most once a second */
    PY.looked_at = time(NULL);
    n = phs_symbols_count(s, PY.scanned > 0);
    for (size_t i = PY.scanned; i < n && mod < 0; i++) {
        uintptr_t lo, hi, off;
        const char *path, *base;

        if (phs_module_info(s, (int)i, &lo, &hi, &off, &path) < 0)
            continue;
        base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        if (i != 0 && strncmp(base, "libpython3", 10) != 0)
            continue;
        if (phs_symbol_addr(s, (int)i, "_PyEval_EvalFrameDefault", &eval, &eval_size) == 0 &&
            phs_symbol_addr(s, (int)i, "_PyRuntime", &rt, &rt_size) == 0)
            mod = (int)i;
    }
    PY.scanned = n;
    if (mod < 0) {
        atomic_store(&PY.state, PY_NONE);
        return;
    }
    if (phs_symbol_addr(s, mod, "Py_Version", &ver_addr, &size) < 0 || size != sizeof version ||
        copy_in(&version, ver_addr, sizeof version) < 0)
        version = 0;
    if (version == 0 && phs_module_info(s, mod, &mlo, &mhi, &moff, &mpath) == 0) {
        /* before 3.11: the name says the minor version, the string the micro */
        const char *base = strrchr(mpath, '/') ? strrchr(mpath, '/') + 1 : mpath;

        minor = minor_of_name(base);
        version = version_in_memory(mlo, mhi, minor);
        if (version == 0 && minor >= 0) {
            version = 0x03000000ul | (unsigned long)minor << 16 | 0xf0;
            snprintf(minor_only, sizeof minor_only, "3.%d", minor);
        }
    }
    PY.L = layout_of(version);
    if (PY.L != NULL && PY.L->from_debug_offsets)
        PY.L = from_debug_offsets(PY.L, rt, version, &PY.from_process, &why);
    if (PY.L != NULL && ((PY.L->code_size && !type_size_is(s, mod, "PyCode_Type", PY.L->code_size)) ||
                         (PY.L->frame_size && !type_size_is(s, mod, "PyFrame_Type", PY.L->frame_size)))) {
        why = "its code or frame objects are not of this version's size";
        PY.L = NULL;
    }
    PY.runtime = rt;
    PY.eval_lo = eval;
    PY.eval_hi = eval + (eval_size ? eval_size : 1);
    if (phs_symbol_addr(s, mod, "PyCode_Type", &PY.code_type, &size) < 0 ||
        phs_symbol_addr(s, mod, "PyUnicode_Type", &PY.unicode_type, &size) < 0 ||
        phs_symbol_addr(s, mod, "PyBytes_Type", &PY.bytes_type, &size) < 0)
        PY.L = NULL;
    if (version == 0)
        snprintf(PY.desc, sizeof PY.desc, "Python (before 3.11, no Py_Version): frames not read (unknown version)");
    else if (minor_only[0])
        snprintf(PY.desc, sizeof PY.desc, "Python %s: frames %s%s%s", minor_only, PY.L ? "read" : "not read (",
                 PY.L ? "" : why, PY.L ? "" : ")");
    else
        snprintf(PY.desc, sizeof PY.desc, "Python %lu.%lu.%lu: frames %s%s%s", (version >> 24) & 0xff,
                 (version >> 16) & 0xff, (version >> 8) & 0xff, PY.L ? "read" : "not read (",
                 PY.L ? "" : why, PY.L ? "" : ")");
    atomic_store_explicit(&PY.state, PY.L ? PY_READING : PY_UNKNOWN, memory_order_release);
}

/* ---- the signal path ------------------------------------------------------ */

/* Pages proven readable within one sample. */
typedef struct reader {
    uintptr_t pages[8];
    unsigned n;
} reader;

static int
page_ok(reader *r, uintptr_t addr)
{
    uintptr_t page = addr & ~(uintptr_t)4095;

    for (unsigned i = 0; i < r->n && i < 8; i++)
        if (r->pages[i] == page)
            return 1;
    if (!phs_probe_mem(page < addr ? addr : page, 1))
        return 0;
    r->pages[r->n++ % 8] = page;
    return 1;
}

/* Out of process, the blocks of the target read within one walk
 * (remote_fresh empties them): a frame's or a code object's fields are
 * a block or two, one process_vm_readv each rather than one per field.
 * The writer's only (one thread); the signal path never reads another
 * process. */
#define RBLOCK 256
static struct {
    uintptr_t at[4];
    unsigned char data[4][RBLOCK];
    unsigned n;
} RB;

static void
remote_fresh(void)
{
    RB.n = 0;
}

static int
remote_get(uintptr_t addr, void *dst, size_t len)
{
    uintptr_t base = addr & ~(uintptr_t)(RBLOCK - 1);
    unsigned k;

    if (addr - base + len > RBLOCK)
        return copy_in(dst, addr, len) == 0;
    for (k = 0; k < RB.n && k < 4; k++)
        if (RB.at[k] == base)
            break;
    if (k == RB.n || k == 4) {
        k = RB.n++ % 4;
        RB.at[k] = 0;
        /* a block past the end of a mapping: the field alone */
        if (base < 4096 || copy_in(RB.data[k], base, RBLOCK) < 0)
            return copy_in(dst, addr, len) == 0;
        RB.at[k] = base;
    }
    memcpy(dst, RB.data[k] + (addr - base), len);
    return 1;
}

/* LEN (at most 8) bytes at ADDR into DST, each page proven first. */
static int
get(reader *r, uintptr_t addr, void *dst, size_t len)
{
    if (PY.target != 0)
        return remote_get(addr, dst, len); /* another process: nothing of ours can fault */
    if (addr < 4096 || addr + len < addr || !page_ok(r, addr) || !page_ok(r, addr + len - 1))
        return 0;
    memcpy(dst, (const void *)addr, len);
    return 1;
}

/* The Python frames from *FRAME up to and including the next entry frame,
 * into OUT from *O (room for MAX words); *FRAME moves past them, to 0 when
 * the chain cannot be read further.  Returns -1 when out of room. */
static int
emit_eval(reader *r, const phs_py_layout *L, uintptr_t *frame, uintptr_t *out, uint32_t *o, uint32_t max)
{
    uintptr_t f = *frame;

    for (int i = 0; f != 0 && i < MAX_CHAIN; i++) {
        uintptr_t code = 0, prev = 0, instr = 0, type = 0, qual = 0, idx = 0;
        unsigned char entry = 0, owner = 0;
        int32_t first = 0, lasti = 0;

        if (!get(r, f + L->fr_code, &code, 8) || !get(r, f + L->fr_previous, &prev, 8) ||
            (L->lasti_int ? !get(r, f + L->fr_prev_instr, &lasti, 4) : !get(r, f + L->fr_prev_instr, &instr, 8)) ||
            (L->entry_owner >= 0 && !get(r, f + L->fr_owner, &owner, 1)) ||
            (L->fr_is_entry != PHS_PY_NO_FIELD && !get(r, f + L->fr_is_entry, &entry, 1))) {
            *frame = 0;
            return 0;
        }
        if (L->entry_owner >= 0 && owner == (unsigned char)L->entry_owner) {
            *frame = prev; /* the shim that marks an entry: no code of its own */
            return 0;
        }
        if (!get(r, code + PHS_PY_OB_TYPE, &type, 8) || type != PY.code_type ||
            !get(r, code + L->co_qualname, &qual, 8) || !get(r, code + L->co_firstlineno, &first, 4)) {
            *frame = 0;
            return 0;
        }
        if (*o + PHS_PY_WORDS >= max)
            return -1; /* the last word is kept for the truncation marker */
        if (L->lasti_int)
            idx = (uint32_t)lasti; /* -1: not started */
        else if (instr >= code + L->co_code)
            idx = (instr - (code + L->co_code)) / 2;
        out[(*o)++] = PHS_PY_TAG | code;
        out[(*o)++] = PHS_PY_TAG | ((uintptr_t)((uint32_t)first & 0x7fffffff) << 32) |
                      (idx > 0xffffffffu ? 0xffffffffu : idx);
        out[(*o)++] = qual;
        f = prev;
        if (L->each_eval || (L->entry_owner < 0 && entry))
            break;
    }
    *frame = f;
    return 0;
}

/* Whether TS is this thread's state. */
static int
is_mine(reader *r, const phs_py_layout *L, uintptr_t ts)
{
    uintptr_t tid = 0;

    return ts != 0 && get(r, ts + L->ts_thread_id, &tid, 8) && tid == (uintptr_t)pthread_self();
}

/* This thread's state as last found (0: none yet). */
static __thread uintptr_t tls_ts __attribute__((tls_model("initial-exec")));

/* This thread's own state when it does not hold the GIL (blocked in a
 * call that released it, or waiting to take it back): the one found last
 * time if it still is this thread's, else the oldest in the main
 * interpreter's list of threads (newest first) whose thread_id is ours;
 * 0 if none.  The oldest: up to 3.11 a thread starting another makes the
 * child's state itself, with its own thread_id until the child runs, at
 * the head of the list; a thread's own state is older than any it made.
 * The list may be changing under us (another thread starting or ending,
 * without the GIL): every read is proven first, the walk is bounded, and
 * only a state that says it is this thread's is taken. */
static uintptr_t
own_tstate(reader *r, const phs_py_layout *L)
{
    uintptr_t interp = 0, ts = 0, mine = 0;

    if (is_mine(r, L, tls_ts))
        return tls_ts;
    if (L->rt_interp == PHS_PY_NO_FIELD || !get(r, PY.runtime + L->rt_interp, &interp, 8) || interp == 0 ||
        !get(r, interp + L->is_threads_head, &ts, 8))
        return 0;
    for (int i = 0; ts != 0 && i < MAX_THREADS_WALKED; i++) {
        if (is_mine(r, L, ts))
            mine = ts;
        if (!get(r, ts + L->ts_next, &ts, 8))
            break;
    }
    return mine != 0 ? (tls_ts = mine) : 0;
}

/* The thread state holding the GIL, or 0. */
static uintptr_t
gil_holder(reader *r, const phs_py_layout *L)
{
    uintptr_t ts = 0, interp = 0;
    int32_t locked = 0;

    if (L->ts_via == PHS_PY_TS_RUNTIME)
        return get(r, PY.runtime + L->rt_tstate_current, &ts, 8) ? ts : 0;
    if (!get(r, PY.runtime + L->rt_interp_head, &interp, 8) || interp == 0)
        return 0;
    if (L->ts_via == PHS_PY_TS_GILPTR && (!get(r, interp + L->is_gil, &interp, 8) || interp == 0))
        return 0; /* interp: now the GIL itself */
    if (!get(r, interp + L->is_gil_locked, &locked, 4) || locked == 0 || !get(r, interp + L->is_gil_holder, &ts, 8))
        return 0;
    return ts;
}

/* The innermost frame of thread state TS, or 0. */
static uintptr_t
current_frame(reader *r, const phs_py_layout *L, uintptr_t ts)
{
    uintptr_t cf = 0, frame = 0;

    if (ts == 0)
        return 0;
    if (L->ts_cframe == PHS_PY_NO_FIELD)
        return get(r, ts + L->cf_current_frame, &frame, 8) ? frame : 0;
    if (!get(r, ts + L->ts_cframe, &cf, 8) || !get(r, cf + L->cf_current_frame, &frame, 8))
        return 0;
    return frame;
}

size_t
phs_py_threads(uintptr_t *ts, size_t max, uintptr_t *holder)
{
    const phs_py_layout *L = PY.L;
    reader r = { { 0 }, 0 };
    uintptr_t interp = 0, t = 0;
    size_t n = 0;

    *holder = 0;
    remote_fresh();
    if (!phs_py_active() || L == NULL || L->rt_interp == PHS_PY_NO_FIELD ||
        !get(&r, PY.runtime + L->rt_interp, &interp, 8) || interp == 0 || !get(&r, interp + L->is_threads_head, &t, 8))
        return 0;
    for (int i = 0; t != 0 && n < max && i < MAX_THREADS_WALKED; i++) {
        ts[n++] = t;
        if (!get(&r, t + L->ts_next, &t, 8))
            break;
    }
    *holder = gil_holder(&r, L);
    return n;
}

uintptr_t
phs_py_thread_id(uintptr_t ts)
{
    reader r = { { 0 }, 0 };
    uintptr_t tid = 0;

    remote_fresh();
    return PY.L != NULL && get(&r, ts + PY.L->ts_thread_id, &tid, 8) ? tid : 0;
}

uint32_t
phs_py_walk(uintptr_t ts, uintptr_t *out, uint32_t max)
{
    const phs_py_layout *L = PY.L;
    reader r = { { 0 }, 0 };
    uintptr_t frame;
    uint32_t o = 0;

    if (!phs_py_active() || L == NULL)
        return 0;
    remote_fresh();
    frame = current_frame(&r, L, ts);
    /* each call stands for one eval loop's frames, and moves past them */
    for (int i = 0; frame != 0 && i < MAX_CHAIN; i++)
        if (emit_eval(&r, L, &frame, out, &o, max) < 0)
            break;
    return o;
}

uint32_t
phs_py_merge(const uintptr_t *native, uint32_t n, uintptr_t *out, uint32_t max)
{
    const phs_py_layout *L = PY.L;
    reader r = { { 0 }, 0 };
    uintptr_t ts = 0, frame = 0;
    uint32_t o = 0;

    if (n > max)
        n = max;
    /* this thread's state: the GIL's holder when that is us, else our own
     * found without it */
    if (phs_py_active() && L != NULL) {
        if (is_mine(&r, L, ts = gil_holder(&r, L)))
            tls_ts = ts;
        else
            ts = own_tstate(&r, L);
    }
    frame = current_frame(&r, L, ts);
    for (uint32_t k = 0; k < n; k++) {
        uintptr_t pc = native[k];

        if (frame != 0 && pc >= PY.eval_lo && pc < PY.eval_hi) {
            uint32_t before = o;

            if (emit_eval(&r, L, &frame, out, &o, max) < 0) {
                out[o++] = PHS_TRUNCATED;
                atomic_fetch_add_explicit(&phs.truncated, 1, memory_order_relaxed);
                return o;
            }
            if (o != before)
                continue;
        }
        if (o >= max - 1 && k + 1 < n) {
            out[o++] = PHS_TRUNCATED;
            atomic_fetch_add_explicit(&phs.truncated, 1, memory_order_relaxed);
            return o;
        }
        out[o++] = pc;
    }
    return o;
}

/* ---- names (writer) ---------------------------------------------------- */

typedef struct pykey {
    uintptr_t code, meta, qual; /* code 0: empty */
    uint32_t id;
} pykey;

typedef struct pyname {
    phs_frame f;
    uint64_t hash;
} pyname;

/* A code object as its first naming read it: a later sample of it at
 * another instruction is named from here once the object is gone (a
 * program that ends: the drain after its last samples comes after the
 * interpreter freed its code).  What is shown is still what was copied
 * from a live code object at that address, with that name object and
 * first line. */
typedef struct pycode {
    uintptr_t code, qual;       /* code 0: empty */
    int first;
    uint32_t frame;             /* the frame its naming interned: its name and file */
    unsigned char *table;       /* its line table as copied; NULL: none kept (the first line) */
    uint32_t size;
} pycode;

struct phs_pytab {
    pykey *keys;
    size_t n_keys, cap_keys;
    pycode *codes;              /* open addressing by (code, qual, first line) */
    size_t n_codes, cap_codes;
    size_t table_bytes;         /* the kept line tables' bytes (at most MAX_TABLES_KEPT) */
    pyname *names;              /* by id, distinct (name, file, line) */
    size_t n, cap;
    uint32_t *by_text;          /* open addressing over names: id + 1 */
    size_t cap_text;
};

phs_pytab *
phs_pytab_new(void)
{
    return calloc(1, sizeof(phs_pytab));
}

void
phs_pytab_free(phs_pytab *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free((char *)t->names[i].f.name);
        free((char *)t->names[i].f.file);
        free((char *)t->names[i].f.system);
    }
    for (size_t i = 0; i < t->cap_codes; i++)
        free(t->codes[i].table);
    free(t->codes);
    free(t->names);
    free(t->keys);
    free(t->by_text);
    free(t);
}

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= ((const unsigned char *)p)[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* Append code point C as UTF-8. */
static size_t
put_utf8(char *out, size_t o, size_t cap, uint32_t c)
{
    unsigned char b[4];
    size_t n;

    if (c < 0x20)
        c = '?';
    if (c < 0x80) {
        b[0] = (unsigned char)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (unsigned char)(0xc0 | c >> 6);
        b[1] = (unsigned char)(0x80 | (c & 0x3f));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (unsigned char)(0xe0 | c >> 12);
        b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
        b[2] = (unsigned char)(0x80 | (c & 0x3f));
        n = 3;
    } else {
        if (c > 0x10ffff)
            c = 0xfffd;
        b[0] = (unsigned char)(0xf0 | c >> 18);
        b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
        b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
        b[3] = (unsigned char)(0x80 | (c & 0x3f));
        n = 4;
    }
    if (o + n >= cap)
        return o;
    memcpy(out + o, b, n);
    return o + n;
}

/* The str object at ADDR as UTF-8 into OUT (CAP), cut at MAX_NAME; 0 or
 * -1 (not a compact str). */
static int
read_str(const phs_py_layout *L, uintptr_t addr, char *out, size_t cap)
{
    unsigned char head[96], data[MAX_NAME * 4];
    uint32_t state;
    intptr_t len;
    unsigned kind;
    size_t o = 0;

    /* The ASCII header first: a short str may end before a compact one's
     * would (and its page with it). */
    if (L->u_compact_data > sizeof head || copy_in(head, addr, L->u_ascii_data) < 0 ||
        word_at(head + PHS_PY_OB_TYPE) != PY.unicode_type)
        return -1;
    memcpy(&state, head + L->u_state, sizeof state);
    if (!((state >> 6) & 1) &&
        copy_in(head + L->u_ascii_data, addr + L->u_ascii_data, L->u_compact_data - L->u_ascii_data) < 0)
        return -1;
    memcpy(&len, head + L->u_length, sizeof len);
    kind = (state >> 2) & 7;
    if (!((state >> 5) & 1) || len < 0 || (kind != 1 && kind != 2 && kind != 4))
        return -1; /* not compact: a legacy string, never a code object's */
    if (len > MAX_NAME)
        len = MAX_NAME;
    if (copy_in(data, addr + ((state >> 6) & 1 ? L->u_ascii_data : L->u_compact_data), (size_t)len * kind) < 0)
        return -1;
    for (intptr_t i = 0; i < len; i++) {
        uint32_t c = kind == 1 ? data[i] : kind == 2 ? ((const uint16_t *)(const void *)data)[i]
                                                      : ((const uint32_t *)(const void *)data)[i];
        o = put_utf8(out, o, cap, c);
    }
    out[o] = '\0';
    return 0;
}

/* CPython 3.11's location table (Objects/locations.md): entries of a
 * first byte 1cccclll (code, length - 1 in code units) and continuation
 * bytes below 0x80; varints of 6 bits with 0x40 for "more". */
static unsigned
varint(const unsigned char *p, size_t n, size_t *i)
{
    unsigned v = 0, shift = 0, b;

    do {
        if (*i >= n || shift > 28)
            return v;
        b = p[(*i)++];
        v |= (b & 63u) << shift;
        shift += 6;
    } while (b & 64);
    return v;
}

/* The line of instruction IDX, or 0 when it has none. */
static int
line_of(const unsigned char *p, size_t n, int first, uint32_t idx)
{
    int line = first;
    uint64_t addr = 0;
    size_t i = 0;

    while (i < n) {
        unsigned b = p[i++], code = (b >> 3) & 15, len = (b & 7) + 1;

        if (!(b & 0x80))
            return 0;
        if (code == 14 || code == 13) {
            unsigned u = varint(p, n, &i);
            line += (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
        } else if (code >= 10 && code <= 12) {
            line += (int)code - 10;
        }
        if (idx < addr + len)
            return code == 15 ? 0 : line;
        addr += len;
        while (i < n && !(p[i] & 0x80))
            i++;
    }
    return 0;
}

/* CPython 3.8 and 3.9's co_lnotab (Objects/lnotab_notes.txt): (bytes,
 * line delta) pairs, the delta a signed byte taken once its bytes are
 * passed; the line of byte offset ADDR (negative: not started). */
static int
line_of_lnotab(const unsigned char *p, size_t n, int first, int32_t addr)
{
    int line = first;
    int64_t at = 0;

    for (size_t i = 0; i + 1 < n; i += 2) {
        at += p[i];
        if (at > addr)
            break;
        line += (signed char)p[i + 1];
    }
    return line;
}

/* CPython 3.10's co_linetable (Objects/lnotab_notes.txt of 3.10): (bytes,
 * line delta) pairs, each a range of that many bytes at the line moved by
 * the delta, -128 for none (the line does not move then); a pair of no
 * bytes moves the line only.  The line of instruction IDX (negative: not
 * started, the first line), 0 when it has none. */
static int
line_of_310(const unsigned char *p, size_t n, int first, int32_t idx)
{
    int line = first;
    int64_t end = 0, addr = (int64_t)idx * 2;

    if (idx < 0)
        return first;
    for (size_t i = 0; i + 1 < n; i += 2) {
        int64_t start = end;
        int delta = (signed char)p[i + 1];

        end += p[i];
        if (delta != -128)
            line += delta;
        if (start != end && addr < end)
            return delta == -128 ? 0 : line;
    }
    return 0;
}

/* The line of instruction META (its low 32 bits) in the line TABLE
 * (SIZE bytes) of a code object whose first line is FIRST; FIRST when
 * there is no table or it says none. */
static int
line_at(const unsigned char *table, size_t size, int first, uintptr_t meta)
{
    const phs_py_layout *L = PY.L;
    int line;

    if (table == NULL || L == NULL)
        return first;
    line = L->lines == PHS_PY_LINES_LNOTAB ? line_of_lnotab(table, size, first, (int32_t)meta)
           : L->lines == PHS_PY_LINES_310  ? line_of_310(table, size, first, (int32_t)meta)
                                           : line_of(table, size, first, (uint32_t)meta);
    return line > 0 ? line : first;
}

/* CODE read now, when it still is the code object sampled (its type,
 * its name object QUAL, its first line FIRST): its name and file into
 * NAME and FILE (CAP bytes each), its line table into *TABLE (malloc'd,
 * *SIZE bytes; NULL when it cannot be read).  0; -1 with NAME saying
 * why (freed, or its name unreadable). */
static int
read_code(uintptr_t code, uintptr_t qual, int first, char *name, char *file, size_t cap, unsigned char **table,
          size_t *size)
{
    const phs_py_layout *L = PY.L;
    unsigned char co[512], bh[64];
    uintptr_t lt;
    intptr_t n;

    *table = NULL;
    *size = 0;
    file[0] = '\0';
    if (L == NULL || L->co_code > sizeof co || copy_in(co, code, L->co_code) < 0 ||
        word_at(co + PHS_PY_OB_TYPE) != PY.code_type || word_at(co + L->co_qualname) != qual ||
        (int)*(const int32_t *)(const void *)(co + L->co_firstlineno) != first) {
        snprintf(name, cap, "[python: code freed]");
        return -1;
    }
    if (read_str(L, qual, name, cap) < 0) {
        snprintf(name, cap, "[python: unreadable name]");
        return -1;
    }
    if (read_str(L, word_at(co + L->co_filename), file, cap) < 0)
        file[0] = '\0';
    lt = word_at(co + L->co_linetable);
    if (L->b_data <= sizeof bh && copy_in(bh, lt, L->b_data) == 0 && word_at(bh + PHS_PY_OB_TYPE) == PY.bytes_type) {
        memcpy(&n, bh + L->b_size, sizeof n);
        if (n > 0 && n <= (intptr_t)MAX_LINETABLE && (*table = malloc((size_t)n)) != NULL) {
            if (copy_in(*table, lt + L->b_data, (size_t)n) == 0) {
                *size = (size_t)n;
            } else {
                free(*table);
                *table = NULL;
            }
        }
    }
    return 0;
}

static uint32_t
intern_frame(phs_pytab *t, const char *name, const char *file, int line)
{
    uint64_t h = fnv(fnv(fnv(1469598103934665603ULL, name, strlen(name) + 1), file, strlen(file) + 1), &line,
                     sizeof line);
    size_t k;

    if (t->n * 2 >= t->cap_text) {
        size_t cap = t->cap_text ? t->cap_text * 2 : 256;
        uint32_t *nt = calloc(cap, sizeof *nt);

        if (nt == NULL)
            return UINT32_MAX;
        for (size_t i = 0; i < t->n; i++) {
            for (k = t->names[i].hash & (cap - 1); nt[k]; k = (k + 1) & (cap - 1))
                ;
            nt[k] = (uint32_t)i + 1;
        }
        free(t->by_text);
        t->by_text = nt;
        t->cap_text = cap;
    }
    for (k = h & (t->cap_text - 1); t->by_text[k]; k = (k + 1) & (t->cap_text - 1)) {
        const pyname *p = &t->names[t->by_text[k] - 1];
        if (p->hash == h && p->f.line == line && strcmp(p->f.name, name) == 0 && strcmp(p->f.file, file) == 0)
            return t->by_text[k] - 1;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        pyname *nn = realloc(t->names, cap * sizeof *nn);
        if (nn == NULL)
            return UINT32_MAX;
        t->names = nn;
        t->cap = cap;
    }
    {
        size_t sn = strlen(file) + strlen(name) + 2;
        char *sys = malloc(sn);

        if (sys != NULL)
            snprintf(sys, sn, "%s:%s", file, name);
        t->names[t->n].f = (phs_frame){ strdup(name), strdup(file), line, 0, PHS_KIND_PYTHON, sys };
    }
    t->names[t->n].hash = h;
    if (t->names[t->n].f.name == NULL || t->names[t->n].f.file == NULL || t->names[t->n].f.system == NULL) {
        free((char *)t->names[t->n].f.name);
        free((char *)t->names[t->n].f.file);
        free((char *)t->names[t->n].f.system);
        return UINT32_MAX;
    }
    t->by_text[k] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

static uint64_t
code_hash(uintptr_t code, uintptr_t qual, int first)
{
    return fnv(fnv(fnv(1469598103934665603ULL, &code, sizeof code), &qual, sizeof qual), &first, sizeof first);
}

/* The slot of (CODE, QUAL, FIRST) in T's codes: its entry, or the empty
 * slot it would take; NULL when the table is full and it is not there. */
static pycode *
code_slot(phs_pytab *t, uintptr_t code, uintptr_t qual, int first)
{
    size_t k;

    if (t->n_codes * 2 >= t->cap_codes && t->n_codes < MAX_CODES) {
        size_t cap = t->cap_codes ? t->cap_codes * 2 : 256;
        pycode *nc = calloc(cap, sizeof *nc);

        if (nc != NULL) {
            for (size_t i = 0; i < t->cap_codes; i++) {
                const pycode *e = &t->codes[i];

                if (e->code == 0)
                    continue;
                for (k = code_hash(e->code, e->qual, e->first) & (cap - 1); nc[k].code; k = (k + 1) & (cap - 1))
                    ;
                nc[k] = *e;
            }
            free(t->codes);
            t->codes = nc;
            t->cap_codes = cap;
        }
    }
    if (t->cap_codes == 0)
        return NULL;
    for (k = code_hash(code, qual, first) & (t->cap_codes - 1); t->codes[k].code; k = (k + 1) & (t->cap_codes - 1))
        if (t->codes[k].code == code && t->codes[k].qual == qual && t->codes[k].first == first)
            return &t->codes[k];
    return t->n_codes * 2 < t->cap_codes ? &t->codes[k] : NULL;
}

/* The frame id of (CODE, META, QUAL) named now: from the code object
 * as its first naming kept it (pycode), else read live and kept. */
static uint32_t
name_now(phs_pytab *t, uintptr_t code, uintptr_t meta, uintptr_t qual)
{
    char name[MAX_NAME * 4 + 1], file[MAX_NAME * 4 + 1];
    int first = (int)((meta >> 32) & 0x7fffffff);
    pycode *pc = code_slot(t, code, qual, first);
    unsigned char *table;
    size_t size;
    uint32_t id;

    if (pc != NULL && pc->code != 0) {
        const char *n = t->names[pc->frame].f.name, *f = t->names[pc->frame].f.file; /* kept: names grow */

        return intern_frame(t, n, f, line_at(pc->table, pc->size, first, meta));
    }
    if (read_code(code, qual, first, name, file, sizeof name, &table, &size) < 0)
        return intern_frame(t, name, "", 0);
    id = intern_frame(t, name, file, line_at(table, size, first, meta));
    if (pc != NULL && id != UINT32_MAX) {
        if (table != NULL && t->table_bytes + size > MAX_TABLES_KEPT) {
            free(table); /* named from here on by its first line */
            table = NULL;
        }
        *pc = (pycode){ code, qual, first, id, table, (uint32_t)size };
        t->n_codes++;
        t->table_bytes += table ? size : 0;
        return id;
    }
    free(table);
    return id;
}

/* The id for the signal path's group (CODE, META, QUAL). */
static uint32_t
id_of(phs_pytab *t, uintptr_t code, uintptr_t meta, uintptr_t qual)
{
    uint64_t h = fnv(fnv(fnv(1469598103934665603ULL, &code, sizeof code), &meta, sizeof meta), &qual, sizeof qual);
    size_t k = 0;
    uint32_t id;

    if (t->n_keys * 2 >= t->cap_keys && t->n_keys < MAX_KEYS) {
        size_t cap = t->cap_keys ? t->cap_keys * 2 : 1024;
        pykey *nk = calloc(cap, sizeof *nk);

        if (nk != NULL) {
            for (size_t i = 0; i < t->cap_keys; i++) {
                const pykey *e = &t->keys[i];
                uint64_t eh;

                if (e->code == 0)
                    continue;
                eh = fnv(fnv(fnv(1469598103934665603ULL, &e->code, sizeof e->code), &e->meta, sizeof e->meta),
                         &e->qual, sizeof e->qual);
                for (k = eh & (cap - 1); nk[k].code; k = (k + 1) & (cap - 1))
                    ;
                nk[k] = *e;
            }
            free(t->keys);
            t->keys = nk;
            t->cap_keys = cap;
        }
    }
    if (t->cap_keys > 0)
        for (k = h & (t->cap_keys - 1); t->keys[k].code; k = (k + 1) & (t->cap_keys - 1))
            if (t->keys[k].code == code && t->keys[k].meta == meta && t->keys[k].qual == qual)
                return t->keys[k].id;
    id = name_now(t, code, meta, qual);
    if (id != UINT32_MAX && t->cap_keys > 0 && t->n_keys * 2 < t->cap_keys) {
        t->keys[k] = (pykey){ code, meta, qual, id };
        t->n_keys++;
    }
    return id;
}

uint32_t
phs_py_resolve(phs_pytab *t, uintptr_t *pcs, uint32_t depth)
{
    uint32_t o = 0;

    for (uint32_t k = 0; k < depth;) {
        uint32_t id;

        if (!phs_is_py(pcs[k])) {
            pcs[o++] = pcs[k++];
            continue;
        }
        if (k + PHS_PY_WORDS > depth)
            break; /* cannot happen: the signal path writes whole groups */
        id = id_of(t, pcs[k] & ~PHS_PY_TAG, pcs[k + 1] & ~PHS_PY_TAG, pcs[k + 2]);
        k += PHS_PY_WORDS;
        if (id != UINT32_MAX)
            pcs[o++] = PHS_PY_TAG | id;
    }
    return o;
}

const phs_frame *
phs_py_frame(phs_pytab *t, uintptr_t word)
{
    static const phs_frame none = { "[python]", NULL, 0, 0, PHS_KIND_PYTHON, NULL };
    uintptr_t id = word & ~PHS_PY_TAG;

    return t != NULL && id < t->n ? &t->names[id].f : &none;
}
