/* ph_sampler_int.h - internals shared by the sampler's files (all hidden).
 *
 * ph_sampler.c owns the signal path and the control state; the writer side
 * (ph_sampler_snap.c: aggregation and snapshot files, ph_sampler_out.c:
 * symbols and pprof) only reads the sample tables after taking them out of
 * the signal path's hands (see phs_table below).
 */
#ifndef PH_SAMPLER_INT_H
#define PH_SAMPLER_INT_H

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#define PH_HIDDEN __attribute__((visibility("hidden")))

#define PHS_MAX_DEPTH 512            /* deeper stacks end in a "[truncated]" frame */
#define PHS_MAX_WORDS 1024           /* a stack's words with its Python frames (PHS_PY_WORDS each) */
#define PHS_TRUNCATED ((uintptr_t)1) /* marker pc, outermost frame of a cut stack */
#define PHS_OFFCPU ((uintptr_t)2)    /* marker pc, the leaf of a wall sample of a blocked thread */
#define PHS_SLOTS 4096               /* stacks per table between two drains */
#define PHS_ARENA (256u * 1024u)     /* pcs per table between two drains */
#define PHS_ITIMER_MAX_HZ 250        /* the kernel tick caps ITIMER_PROF (CONFIG_HZ) */

/* A stack's words are native pcs, or Python frames, tagged with the top
 * bit (no user-space code address has it).  On the signal path a Python
 * frame is PHS_PY_WORDS words: its code object | PHS_PY_TAG, PHS_PY_TAG |
 * first line << 32 | instruction index, and the code's qualified name
 * object (checked again when it is named).  The writer's drain turns each
 * such group into one word, PHS_PY_TAG | the id of its name in the
 * symbols' Python table, before the stack is aggregated. */
#define PHS_PY_TAG ((uintptr_t)1 << 63)
#define PHS_PY_WORDS 3
/* Java frames (ph_sampler_java.c) have the top two bits.  On the signal
 * path they follow the native words: PHS_JAVA_MARK | their number (|
 * PHS_JAVA_CUT when the outermost may be missing), then two words each,
 * PHS_JAVA_TAG | the bytecode index (32 bits) and the jmethodID.  The
 * drain turns them into PHS_JAVA_TAG | the id of the frame's name, in
 * place of the native frames in the JVM's code. */
#define PHS_TAG_KIND ((uintptr_t)7 << 61)
#define PHS_JAVA_TAG ((uintptr_t)3 << 62)
#define PHS_JAVA_MARK (PHS_JAVA_TAG | (uintptr_t)1 << 61)
#define PHS_JAVA_CUT ((uintptr_t)1 << 32)
static inline int
phs_is_tagged(uintptr_t w)
{
    return (w >> 63) != 0;
}
static inline int
phs_is_py(uintptr_t w)
{
    return (w >> 62) == 2;
}
static inline int
phs_is_java(uintptr_t w)
{
    return (w & PHS_TAG_KIND) == PHS_JAVA_TAG;
}
static inline int
phs_is_java_mark(uintptr_t w)
{
    return (w & PHS_TAG_KIND) == PHS_JAVA_MARK;
}

/* One recorded stack in a table.  A handler claims an empty slot (state
 * 0 -> 1) with a CAS, fills it, publishes it (state 2); later samples of
 * the same stack on the same thread only add to count. */
typedef struct phs_slot {
    _Atomic uint32_t state; /* 0 empty, 1 being filled, 2 ready */
    uint32_t depth;         /* 0: claimed but no room in the arena: matches nothing */
    uint32_t tid;
    uint32_t off;           /* first pc in the arena, innermost first */
    uint64_t hash;
    _Atomic uint64_t count;
} phs_slot;

/* Two tables: the signal path writes the active one; the writer flips
 * `active`, waits until no handler is inside the old one (inflight), reads
 * it and clears it.  So the signal path never waits and never sees a
 * table being cleared. */
typedef struct phs_table {
    _Atomic int inflight;
    _Atomic uint32_t used;  /* pcs taken from the arena */
    phs_slot slots[PHS_SLOTS];
    uintptr_t arena[PHS_ARENA];
} phs_table;

typedef struct phs_state {
    _Atomic int on;               /* sampling; the signal path checks it first */
    phs_table *tables[2];
    _Atomic int active;
    _Atomic uint64_t samples;     /* recorded */
    _Atomic uint64_t dropped;     /* no slot or no arena room, or the table was being flipped */
    _Atomic uint64_t truncated;
    _Atomic uint64_t own;         /* the sampler's cost, left out: periods on the writer, in a
                                   * phs_own section or in the library's code (below) */
    int hz;                       /* requested */
    int hz_nominal;               /* what the timer was set to after any cap */
    int use_perf;                 /* per-thread perf cpu-clock events feed the samples */
    int perf_sig;                 /* SIGTRAP or SIGPROF: what they send; 0: none */
    int timer_sig;                /* the POSIX timer's signal (PHS_TIMER_SIG); 0: setitimer's SIGPROF */
    int wall;                     /* PH_SAMPLER_CLOCK=wall: every thread at a wall-clock rate */
    _Atomic uint64_t perf_failed; /* threads that could not get a perf event */
    char source[160];             /* "perf_event cpu-clock" / "setitimer(ITIMER_PROF) ..." */
    int unwind_fp_only;           /* PH_SAMPLER_UNWIND=fp: no CFI tables */
} phs_state;

PH_HIDDEN extern phs_state phs;

/* ---- the sampler's own work on the service's threads: ph_sampler_core.c ----
 *
 * The profile never holds the sampler's frames.  Where a service thread
 * runs the sampler's own code (its stop handler waiting for the final
 * snapshot, an exec or a flush waiting for the writer, a new thread's
 * stack noted, the heap's bookkeeping, the JVMTI agent's callbacks), that
 * code is inside phs_own_begin/phs_own_end: the thread's samples there are
 * the sampler's cost (phs.own), never the service's, and it allocates
 * nothing the heap profile sees.  A count, so sections nest; set and read
 * by the thread itself and its signal handlers only (a handler that
 * enters leaves before it returns).  What no section covers, the signal
 * path tells by address (phs_own_pc): a sample whose innermost frame is
 * the library's code is its cost too, and the library's frames under the
 * service's (its handler called from ours, an interposer's call of the
 * real function) are cut from the stack (phs_own_cut).  Async-signal-safe. */
PH_HIDDEN extern __thread volatile int phs_tls_own __attribute__((tls_model("initial-exec")));
static inline void
phs_own_begin(void)
{
    phs_tls_own++;
    atomic_signal_fence(memory_order_seq_cst);
}
static inline void
phs_own_end(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    phs_tls_own--;
}
/* Is PC in the library's code?  (0 when it is linked into a program,
 * libphsampler.a, where its code cannot be told by address.) */
PH_HIDDEN int phs_own_pc(uintptr_t pc);
/* PCS[0..DEPTH) (innermost first) without the library's frames from
 * index FROM on (callers, by their return addresses); the new depth. */
PH_HIDDEN uint32_t phs_own_cut(uintptr_t *pcs, uint32_t from, uint32_t depth);
/* Find the library's code range (once, at start: dl_iterate_phdr). */
PH_HIDDEN void phs_own_find(void);

/* dl_iterate_phdr, never while the process forks: a child would inherit
 * the loader's lock held by a thread it does not have (glibc resets its
 * other locks, not that one), and hang in its own first call.  Writer
 * thread only. */
struct dl_phdr_info;
PH_HIDDEN int phs_dl_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);
/* The lock phs_dl_iterate takes: held across fork (atfork's prepare and
 * parent), made anew in the child. */
PH_HIDDEN void phs_dl_lock(void);
PH_HIDDEN void phs_dl_unlock(void);
PH_HIDDEN void phs_dl_reset(void);

/* ---- perf events: ph_sampler_perf.c (writer thread, start, atfork) ----- */

#define PHS_PERF_COOKIE 0x7068735f73616d70ULL /* our events' sig_data: "phs_samp" */
/* A set of threads, each with a handle of the writer's (a perf event's
 * fd, a wall timer): tid 0 is a free entry.  Writer thread only. */
#define PHS_MAX_THREADS 1024
typedef struct phs_tset {
    int tid[PHS_MAX_THREADS];
    intptr_t h[PHS_MAX_THREADS];
} phs_tset;
/* Every thread in /proc/self/task but SELF_TID gets a handle from OPEN_CB
 * (0, or -1: counted in phs.perf_failed); those of ended threads go to
 * CLOSE_CB. */
PH_HIDDEN void phs_tset_scan(phs_tset *t, int self_tid, int (*open_cb)(int, intptr_t *), void (*close_cb)(intptr_t));
/* Every handle to CLOSE_CB (NULL: forgotten), the set emptied. */
PH_HIDDEN void phs_tset_close_all(phs_tset *t, void (*close_cb)(intptr_t));
PH_HIDDEN int phs_perf_choose(int hz);
/* Every thread but SELF_TID gets an event; those of ended threads close. */
PH_HIDDEN void phs_perf_scan(int self_tid);
PH_HIDDEN void phs_perf_close_all(void);
PH_HIDDEN void phs_perf_forget(void);

/* ---- the timer and the handler's scratch: ph_sampler_timer.c --------- */

/* The real-time signal the timer sends: one the Go runtime (and glibc,
 * which keeps 32 and 33) leaves to others. */
#define PHS_TIMER_SIG (SIGRTMAX - 7)
/* Is the running kernel Linux MAJOR.MINOR or later?  (ph_sampler_core.c) */
PH_HIDDEN int phs_kernel_at_least(int major, int minor);
/* A POSIX timer on the process's CPU time sending PHS_TIMER_SIG: 0, or -1
 * with why not in WHY (the caller falls back to setitimer). */
PH_HIDDEN int phs_timer_create(char *why, size_t len);
/* Arm it at HZ (0: disarm).  0 or -1.  Async-signal-safe. */
PH_HIDDEN int phs_timer_set(int hz);
/* Is SI one of our timer's signals?  Async-signal-safe. */
PH_HIDDEN int phs_timer_is_ours(const siginfo_t *si);
/* A fork child: the parent's timer is not its own, nor its scratch. */
PH_HIDDEN void phs_timer_forget(void);

/* ---- the wall clock: ph_sampler_wall.c ------------------------------- */

/* Writer: a CLOCK_MONOTONIC timer at phs.hz_nominal sending PHS_TIMER_SIG
 * to every thread of the process but SELF_TID; those of ended threads
 * deleted.  (Close all: at the end; forget: a fork child.) */
PH_HIDDEN void phs_wall_scan(int self_tid);
PH_HIDDEN void phs_wall_close_all(void);
PH_HIDDEN void phs_wall_forget(void);
/* Stop every timer without touching the table.  Async-signal-safe. */
PH_HIDDEN void phs_wall_disarm_all(void);
/* Was the thread interrupted at CTX (a ucontext_t) blocked in a system
 * call?  Async-signal-safe. */
PH_HIDDEN int phs_wall_blocked(const void *ctx);
/* Arm every thread's timer again (after a failed exec).
 * Async-signal-safe. */
PH_HIDDEN void phs_wall_arm_all(void);
/* The slot of the wall timer SI came from, or -1 (not a wall timer's).
 * Async-signal-safe. */
PH_HIDDEN int phs_wall_slot(const siginfo_t *si);
/* Handler of the thread of SLOT, blocked: its timer stops, its stack
 * PCS[0..DEPTH) (the [off-cpu] leaf first) is kept for the writer to
 * count while it stays blocked.  Async-signal-safe. */
PH_HIDDEN void phs_wall_park(int slot, const uintptr_t *pcs, uint32_t depth);
/* Handler of the thread of SLOT, on CPU: PCS[0..DEPTH) kept as its last
 * stack on CPU.  Async-signal-safe. */
PH_HIDDEN void phs_wall_oncpu(int slot, const uintptr_t *pcs, uint32_t depth);
/* Handler: the periods of SLOT's thread the writer did not count, which
 * its next sample stands for too (taken).  Async-signal-safe. */
PH_HIDDEN uint64_t phs_wall_debt(int slot);
/* Writer: poll(2) on PFD for at most TIMEOUT_MS, counting the parked
 * threads' periods every sampling period meanwhile. */
struct pollfd;
PH_HIDDEN int phs_wall_poll(struct pollfd *pfd, int timeout_ms);
/* ph_sampler_wait.c: is this thread's sample the one its wall timer
 * held back while it waited in a call the kernel never restarts?  Then
 * PCS[0..DEPTH) loses the frames below the interposed call: the new
 * depth.  Async-signal-safe. */
PH_HIDDEN int phs_wait_sampled(void);
PH_HIDDEN uint32_t phs_wait_trim(uintptr_t *pcs, uint32_t depth);
/* Is PC in the phs_wait section (an interposed wait, what a trimmed
 * stack ends in)?  Async-signal-safe. */
PH_HIDDEN int phs_wait_fn(uintptr_t pc);
/* An interposer: the C library's function NAME as the library exports
 * it (exports.map), defined in C as phs_NAME, so that the project's own
 * names keep its prefix and no reader of the code takes the calls the
 * rest of the project makes to the C library for calls into the sampler.
 * Declared with it just before its definition:
 *     void *phs_malloc(size_t n) PHS_LIBC(malloc); */
#define PHS_LIBC(name) __asm__(#name)
/* The functions that hold our timer's signal back for a wait live in
 * the phs_wait section: phs_wait_trim tells our frames by it. */
#define PHS_WAIT_FN __attribute__((section("phs_wait"), noinline))
/* Block our timer's signal for a wait (wall mode): 1 if this call did
 * (OLD: the mask before), 0 if nothing is to be done.  Then
 * phs_wait_end(that) lets it in again: a sample held back is taken
 * then, as off CPU, standing for the whole wait. */
PH_HIDDEN int phs_wait_begin(sigset_t *old);
PH_HIDDEN void phs_wait_end(int on);
/* Record W samples of PCS[0..DEPTH) for thread TID, from the signal path
 * or the writer (ph_sampler_core.c). */
PH_HIDDEN void phs_commit_as(int tid, const uintptr_t *pcs, uint32_t depth, uint64_t w);

/* A handler's working stacks, off the (alternate) signal stack. */
typedef struct phs_scratch {
    uintptr_t native[PHS_MAX_DEPTH + 1]; /* + an [off-cpu] leaf */
    uintptr_t merged[PHS_MAX_WORDS];
} phs_scratch;
PH_HIDDEN int phs_scratch_init(void);
/* A free slot (tried from HINT on), or NULL: drop the sample.
 * Async-signal-safe, as is giving it back. */
PH_HIDDEN phs_scratch *phs_scratch_get(unsigned hint);
PH_HIDDEN void phs_scratch_put(phs_scratch *s);

/* ---- the stack walk: ph_sampler_unwind.c ------------------------------ */

/* The probe's pipe: at start (0 or -1); a fork child's own sampler drops
 * the parent's first. */
PH_HIDDEN int phs_unwind_init(void);
PH_HIDDEN void phs_unwind_forget(void);
/* Note this thread's stack bounds, where a thread starts (not
 * async-signal-safe). */
PH_HIDDEN void phs_note_stack(void);
/* Walk the interrupted context UC (a ucontext_t) into PCS (PHS_MAX_DEPTH,
 * innermost first); by frame pointers only when FP_ONLY.  Returns the
 * depth.  Async-signal-safe. */
PH_HIDDEN uint32_t phs_unwind(const void *uc, uintptr_t *pcs, int fp_only);
/* Writer: in a Go program, samples held behind its preemption signal are
 * walked from where the goroutine was (see ph_sampler_unwind.c). */
typedef struct phs_symbols phs_symbols;
PH_HIDDEN void phs_go_detect(phs_symbols *s);

/* ---- unwind tables: ph_sampler_cfi.c ----------------------------------- */

/* The rule of a stretch of an object's code, from its flattened call
 * frame information: the caller's stack pointer (the CFA) is rsp or rbp +
 * CFA_OFF, its return address is at CFA + RA_OFF and its rbp at CFA +
 * FP_OFF (0: rbp is unchanged).  An object holds each distinct rule once;
 * its rows are a code offset and the number of a rule. */
enum { PHS_CFA_NONE, PHS_CFA_SP, PHS_CFA_FP };
#define PHS_CFI_OUTERMOST 1 /* the return address is undefined: _start, a thread's start */
#define PHS_CFI_FP_LOST 2   /* rbp is not recoverable from here on */
typedef struct phs_cfi_rule {
    int32_t cfa_off;
    int16_t ra_off, fp_off;
    uint8_t cfa_reg, flags;
} phs_cfi_rule;

typedef struct phs_cfi phs_cfi;
/* Writer thread: build the tables, or rebuild them after a dlopen or
 * dlclose; cheap when nothing changed. */
PH_HIDDEN void phs_cfi_refresh(void);
/* "eh_frame CFI (N objects, M rows) ..." for the outputs' comments. */
PH_HIDDEN void phs_cfi_describe(char *buf, size_t len);
/* Signal path: enter, find rows, leave; the tables stay alive between. */
PH_HIDDEN const phs_cfi *phs_cfi_enter(void);
PH_HIDDEN void phs_cfi_leave(void);
/* The rule for PC, or NULL when no usable rule covers it.  *HINT (0 at a
 * walk's start) remembers the object last found, tried first next time. */
PH_HIDDEN const phs_cfi_rule *phs_cfi_find(const phs_cfi *t, uintptr_t pc, size_t *hint);

/* ---- writer side: ph_sampler_snap.c ------------------------------------ */

typedef struct phs_agg phs_agg;
PH_HIDDEN phs_agg *phs_agg_new(int delta, int debuginfo);
PH_HIDDEN void phs_agg_free(phs_agg *a);
/* Look for what the signal path may read besides native frames (a
 * CPython), before the timer starts; the drain looks again for what is
 * loaded later. */
PH_HIDDEN void phs_agg_prepare(phs_agg *a);
/* Take the active table out of the signal path's hands and merge it. */
PH_HIDDEN void phs_agg_drain(phs_agg *a);
/* Write snapshot N's files into DIR, named <kind>-<UTC><TAG>-<N>; FINAL
 * only changes the subtitle; the folded file's name into FOLDED (LEN).
 * 0; 1 when there is no sample to write (no file written); or -1
 * (earlier files left as they were; a *.tmp may remain). */
PH_HIDDEN int phs_agg_snapshot(phs_agg *a, const char *dir, const char *title, const char *tag, int n, int final,
                               char *folded, size_t len);
/* Samples merged since the last snapshot. */
PH_HIDDEN uint64_t phs_agg_pending(const phs_agg *a);
/* DATA to PATH through PATH.tmp and a rename.  0 or -1. */
PH_HIDDEN int phs_write_atomic(const char *path, const char *data, size_t len);
PH_HIDDEN double phs_cpu_seconds(clockid_t c);

/* ---- symbols and pprof: ph_sampler_out.c ------------------------------- */

/* Symbolisation, off the signal path.  Strings live until
 * phs_symbols_free.  DEBUGINFO 0 leaves libdw alone (PH_SAMPLER_DEBUGINFO=0).
 * PY, the Python frames' table its words are named from (the caller's,
 * who frees it after; may be NULL). */
typedef struct phs_symbols phs_symbols;
struct phs_pytab;
PH_HIDDEN phs_symbols *phs_symbols_new(int debuginfo, struct phs_pytab *py);
PH_HIDDEN void phs_symbols_free(phs_symbols *s);
/* Writer, after a snapshot: the pages of the objects' files its names
 * were read from leave the RSS; libdw's state goes (its debug files
 * unmapped, its memory freed); the names it gave stay, and the next
 * lookup that needs it opens it again. */
PH_HIDDEN void phs_symbols_release(phs_symbols *s);
/* Read this process's perf map (/tmp/perf-<pid>.map, written by a JIT:
 * node --perf-basic-prof, HotSpot's Compiler.perfmap) again if it changed
 * since the last call, so addresses outside every object are named from
 * it.  Writer thread, before naming a snapshot's frames. */
PH_HIDDEN void phs_symbols_jit_refresh(phs_symbols *s);

/* Functions inlined into one another at an address, deeper than this,
 * are cut (the outermost ones kept). */
#define PHS_MAX_INLINE 15

enum { PHS_KIND_NATIVE, PHS_KIND_PYTHON, PHS_KIND_JAVA };

typedef struct phs_frame {
    const char *name;       /* demangled, or "module+0xoff"; Python: the qualified name */
    const char *file;       /* source file from debug info, or NULL */
    int line;               /* 0: unknown */
    int inlined;            /* inlined into the frame before it */
    int kind;               /* PHS_KIND_* */
    const char *system;     /* pprof's system name, NULL: the name (Python: file:qualname) */
} phs_frame;

/* The frames at code address PC: [0] the function that holds it, then
 * those inlined into it, the innermost last.  Returns how many (at least
 * one, never more than PHS_MAX_INLINE + 1); *MODULE (may be NULL) gets the
 * module index or -1. */
PH_HIDDEN int phs_frames(phs_symbols *s, uintptr_t pc, const phs_frame **frames, int *module);
/* Java's words are named by FN (ph_sampler_java.c's phs_java_frame: the
 * sampler wires it at load, phs_frames_java), "[java]" until then. */
PH_HIDDEN void phs_frames_java(const phs_frame *(*fn)(uintptr_t word));
/* Python's words likewise, from the symbols' Python table
 * (ph_sampler_py.c's phs_py_frame), "[python]" until then. */
PH_HIDDEN void phs_frames_py(const phs_frame *(*fn)(struct phs_pytab *t, uintptr_t word));

/* The address to name for frame K of PCS (innermost first): a caller's is
 * its return address, which may already be the next line or, after a
 * call that does not return, the next function: look one byte back. */
static inline uintptr_t
phs_call_pc(const uintptr_t *pcs, uint32_t k)
{
    return k == 0 || pcs[k] == PHS_TRUNCATED || phs_is_tagged(pcs[k]) ? pcs[k] : pcs[k] - 1;
}

/* The index of the module that holds PC, or -1 (JIT code, the JVM's
 * code cache: anonymous memory). */
PH_HIDDEN int phs_module_of(phs_symbols *s, uintptr_t pc);
/* How many modules S knows (listing them again first when RELIST, or
 * when none is known yet). */
PH_HIDDEN size_t phs_symbols_count(phs_symbols *s, int relist);
/* The runtime address and size of the symbol NAME (a function or an
 * object) defined in module I's .dynsym or .symtab; 0, or -1. */
PH_HIDDEN int phs_symbol_addr(phs_symbols *s, int i, const char *name, uintptr_t *addr, uintptr_t *size);
/* The Python frames' names S keeps (ph_sampler_py.c). */
PH_HIDDEN struct phs_pytab *phs_symbols_py(phs_symbols *s);

/* Module I for pprof mappings: 0, or -1 past the end. */
PH_HIDDEN int phs_module_info(phs_symbols *s, int i, uintptr_t *lo, uintptr_t *hi, uintptr_t *file_off,
                              const char **path);
/* C++ and Rust (legacy and v0) names demangled by libiberty; returns NAME
 * itself when it is not mangled, or a string owned by S. */
PH_HIDDEN const char *phs_demangle(phs_symbols *s, const char *name);

/* ---- Python frames: ph_sampler_py.c ---------------------------------- */

/* Can the LEN (at most 16) bytes at ADDR be read?  ph_sampler.c's probe;
 * async-signal-safe. */
PH_HIDDEN int phs_probe_mem(uintptr_t addr, size_t len);

/* Writer: look for a CPython in the process (its symbols in the program
 * or a loaded libpython) and, when its version has a layout, let the
 * signal path read its frames.  Cheap once decided. */
PH_HIDDEN void phs_py_detect(phs_symbols *s);
/* "Python 3.11.2: frames read", "Python 3.15.0: frames not read (unknown
 * version)", or "" when the process runs no CPython. */
PH_HIDDEN const char *phs_py_describe(void);
/* Signal path: the native stack NATIVE[0..N) (innermost first) with each
 * frame of CPython's eval loop replaced by the Python frames it runs,
 * into OUT (MAX words); returns how many.  Without Python frames to read
 * (none detected, this thread holds no GIL, a bad read) OUT is NATIVE. */
PH_HIDDEN uint32_t phs_py_merge(const uintptr_t *native, uint32_t n, uintptr_t *out, uint32_t max);
PH_HIDDEN int phs_py_active(void);
/* Out of process (harness/pyattach): every read above goes to process
 * PID's memory (process_vm_readv, never a probe of ours), before
 * phs_py_detect, whose phs_symbols are then that process's.  0: this one. */
PH_HIDDEN void phs_py_target(pid_t pid);
/* Writer, out of process: the main interpreter's thread states, at most
 * MAX into TS; *HOLDER the one holding the GIL (0: none or unknown). */
PH_HIDDEN size_t phs_py_threads(uintptr_t *ts, size_t max, uintptr_t *holder);
/* The thread_id (its pthread_t) thread state TS says it is; 0 unread. */
PH_HIDDEN uintptr_t phs_py_thread_id(uintptr_t ts);
/* All of thread state TS's Python frames, innermost first, as the signal
 * path's groups (PHS_PY_WORDS each, for phs_py_resolve) into OUT (MAX
 * words, the last kept free); returns how many words. */
PH_HIDDEN uint32_t phs_py_walk(uintptr_t ts, uintptr_t *out, uint32_t max);

/* Writer: the Python frames' names, read while their code objects live. */
typedef struct phs_pytab phs_pytab;
PH_HIDDEN phs_pytab *phs_pytab_new(void);
PH_HIDDEN void phs_pytab_free(phs_pytab *t);
/* Rewrite the signal path's groups of PCS[0..DEPTH) in place into single
 * words; returns the new depth.  Reads the code objects now. */
PH_HIDDEN uint32_t phs_py_resolve(phs_pytab *t, uintptr_t *pcs, uint32_t depth);
/* The frame a resolved word stands for. */
PH_HIDDEN const phs_frame *phs_py_frame(phs_pytab *t, uintptr_t word);

/* ---- Java frames: ph_sampler_java.c ----------------------------------- */

/* Signal path: the JVMTI agent is loaded and the VM live. */
PH_HIDDEN int phs_java_active(void);
/* Signal path: NATIVE[0..N) into OUT (MAX words), followed by the Java
 * frames AsyncGetCallTrace finds in context CTX when this is a Java
 * thread; returns how many words. */
PH_HIDDEN uint32_t phs_java_merge(const void *ctx, const uintptr_t *native, uint32_t n, uintptr_t *out,
                                  uint32_t max);
/* Writer: the Java frames of W[0..DEPTH) named, in place of the native
 * frames in the JVM's code; returns the new depth (never more). */
PH_HIDDEN uint32_t phs_java_resolve(phs_symbols *s, uintptr_t *w, uint32_t depth);
/* The frame a resolved word stands for. */
PH_HIDDEN const phs_frame *phs_java_frame(uintptr_t word);
/* Writer: notice a JVM that did not load the agent; say a fallback once. */
PH_HIDDEN void phs_java_detect(phs_symbols *s);
/* "Java: frames read ...", "Java: frames not read (why) ...", or "" when
 * the process runs no JVM (that we know of). */
PH_HIDDEN const char *phs_java_describe(void);
/* Writer: it ends; its thread leaves the JVM it joined to name methods. */
PH_HIDDEN void phs_java_writer_end(void);
/* The JVMTI agent's start in VM (ph_sampler_agent.c's entry points call
 * it): LIVE, loaded into a running VM; 0 whatever happens.  The VM is a
 * phj_vm (ph_sampler_jvmti.h). */
PH_HIDDEN int phs_java_agent_start(void *vm, int live);
/* Loaded into a running VM by an attach (its threads have no ThreadStart):
 * set by the agent's attach, read by its stop. */
PH_HIDDEN void phs_java_set_live(void);
PH_HIDDEN int phs_java_live(void);
/* The heap mode's Java objects (JVMTI SampledObjectAlloc): a heap
 * stack's words are a class word (phs_java_heap_word), then the Java
 * frames as the signal path writes them.  Writer: such a stack named
 * into OUT (DEPTH words at most): `new <class>` innermost, then the
 * methods; its depth. */
PH_HIDDEN int phs_java_heap_word(uintptr_t w);
PH_HIDDEN uint32_t phs_java_heap_resolve(phs_symbols *s, const uintptr_t *raw, uint32_t depth, uintptr_t *out);
/* Writer, each tick: the heap stacks added since names their methods
 * while the JVM can still be asked. */
PH_HIDDEN void phs_java_heap_name(phs_symbols *s);
/* What the heap mode saw of a JVM's heap, a sentence; "" without one. */
PH_HIDDEN const char *phs_java_heap_describe(void);

/* ---- debug info: ph_sampler_dwarf.c (libdw, dlopen'd) ------------------- */

/* Sleep TS (CLOCK_MONOTONIC) by the system call itself: the sampler's own
 * waits never go through its interposed nanosleep (ph_sampler_wait.c), so
 * they are never taken for the service's.  Async-signal-safe. */
static inline void
phs_nap(const struct timespec *ts)
{
    syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, ts, NULL);
}

typedef struct phs_dwarf phs_dwarf;
/* The tools tree's debug files beside this library (<lib>/../debug: a
 * .build-id/ tree), writer only: 0, or -1 when the path does not fit. */
PH_HIDDEN int phs_tree_debug_dir(char *path, size_t len);
typedef struct phs_dwarf_frame {
    const char *name;       /* as in the debug info (maybe mangled), NULL if none */
    const char *file;
    int line;
} phs_dwarf_frame;
/* NULL when libdw.so.1 cannot be loaded. */
PH_HIDDEN phs_dwarf *phs_dwarf_open(void);
PH_HIDDEN void phs_dwarf_close(phs_dwarf *d);
/* The module at PATH loaded at BIAS; an opaque handle or NULL. */
PH_HIDDEN void *phs_dwarf_report(phs_dwarf *d, const char *path, uintptr_t bias);
/* Scopes at PC, innermost first (the inlined functions, then the function
 * holding them); fills at most MAX (the innermost dropped when there are
 * more), returns how many.  Strings are libdw's
 * and live until phs_dwarf_close (ph_sampler_out.c interns them). */
PH_HIDDEN int phs_dwarf_frames(phs_dwarf *d, void *module, uintptr_t pc, phs_dwarf_frame *out, int max);
/* A symbol's name for PC from libdw's tables (a separate debug file's), or NULL. */
PH_HIDDEN const char *phs_dwarf_symbol(phs_dwarf *d, void *module, uintptr_t pc);

/* One stack as the writer hands it to the pprof encoder. */
typedef struct phs_stack {
    uint32_t depth;
    uint32_t tid;
    uint64_t count;
    const uintptr_t *pcs;   /* innermost first */
    const char *thread;     /* thread name; NULL: no thread labels */
    const int64_t *values;  /* one per meta's sample type; NULL: count, count * period_ns */
} phs_stack;

#define PHS_PPROF_MAX_TYPES 4
typedef struct phs_pprof_meta {
    const char *type;       /* the value's sample type: "cpu" (NULL) or "wall", in nanoseconds */
    int64_t time_nanos, duration_nanos;
    int64_t period_ns;      /* cpu nanoseconds one sample stands for (or the period of period_type) */
    const char *comments[7];
    /* Sample types other than samples/count, cpu/nanoseconds: N_TYPES
     * (type, unit) pairs, the period's (type, unit) and the default
     * type.  Zeroed: the CPU profile's. */
    int n_types;
    const char *types[PHS_PPROF_MAX_TYPES][2];
    const char *period_type[2];
    const char *default_type;
} phs_pprof_meta;

/* Write a gzip'd pprof profile of STACKS to PATH (through PATH.tmp and a
 * rename).  0 or -1. */
PH_HIDDEN int phs_write_pprof(const char *path, const phs_stack *stacks, size_t n, phs_symbols *sym,
                              const phs_pprof_meta *meta);

/* Frames of PCS[0..DEPTH) (innermost first) as folded text, outermost
 * first, `;` between them (ph_sampler_snap.c). */
PH_HIDDEN void phs_put_stack(FILE *f, phs_symbols *sym, const uintptr_t *pcs, uint32_t depth);
/* The flamegraph of FOLDED (FLEN bytes) to PATH, atomically; COUNTNAME
 * and PALETTE NULL: the renderer's.  0 or -1. */
PH_HIDDEN int phs_write_svg(const char *path, const char *folded, size_t flen, const char *title, const char *subtitle,
                            const char *countname, const char *palette);
PH_HIDDEN phs_symbols *phs_agg_symbols(phs_agg *a);

/* ---- the heap sampler: ph_sampler_heap.c, ph_sampler_heapout.c ---------- */

/* Views of the heap profile, in the pprof's sample type order first. */
enum {
    PHS_HEAP_ALLOC_OBJECTS, PHS_HEAP_ALLOC_SPACE, PHS_HEAP_INUSE_OBJECTS, PHS_HEAP_INUSE_SPACE,
    PHS_HEAP_PEAK_OBJECTS, PHS_HEAP_PEAK_SPACE, PHS_HEAP_VIEWS
};
#define PHS_HEAP_OBJ 65536.0  /* objects are counted in 1/65536ths */

/* PH_SAMPLER_HEAP: the mean bytes between samples ("524288", "512K",
 * "1M"); NULL or "": no heap sampling.  0, or -1 with BAD filled. */
PH_HIDDEN int phs_heap_configure(const char *value, char *bad, size_t len);
PH_HIDDEN int phs_heap_wanted(void);
PH_HIDDEN double phs_heap_mean(void);
/* The tables (mmap'd, lazily touched), at start: 0 or -1. */
PH_HIDDEN int phs_heap_prepare(void);
/* Sampling on (the writer, once the unwind tables exist) or off. */
PH_HIDDEN void phs_heap_enable(void);
PH_HIDDEN void phs_heap_disable(void);
/* The calling thread's allocations are never sampled (the writer's). */
PH_HIDDEN void phs_heap_writer_thread(void);
/* In a fork child: off, or (KEEP) on afresh with tables of its own. */
PH_HIDDEN void phs_heap_forked(int keep);
PH_HIDDEN uint64_t phs_heap_samples(void);
PH_HIDDEN void phs_heap_describe(char *buf, size_t len);

/* Samples a runtime takes itself (the JVM's sampled objects), any
 * thread, not in a signal handler: the object KEY (unique, never an
 * address malloc returns: 16-byte aligned ones are; KEY & 15 == 8 is not)
 * of N bytes with the stack WORDS[0..DEPTH) in the live table, weighed as
 * a malloc sample of N bytes (the runtime samples with the same
 * exponential interval, phs_heap_mean).  0, or -1 when not kept in use
 * (sampling off, the live table full: counted). */
PH_HIDDEN int phs_heap_on(void);
PH_HIDDEN int phs_heap_record(uintptr_t key, size_t n, const uintptr_t *words, uint32_t depth);
/* The object KEY is gone (signal-safe: atomics only). */
PH_HIDDEN void phs_heap_release(uintptr_t key);
/* Writer, each tick: once a CPython whose frames are read is initialized,
 * its object allocator (PYMEM_DOMAIN_OBJ) wrapped with the GIL held, as
 * tracemalloc does: its objects sampled with their Python stacks.
 * phs_heap_py_state: 1 wrapped, 0 not (yet), -1 cannot be (*WHY). */
PH_HIDDEN void phs_heap_py_hook(void);
PH_HIDDEN int phs_heap_py_state(const char **why);
/* Writer: how many stacks the table has; the words of stack I (its
 * depth, 0 when it has none yet). */
PH_HIDDEN uint32_t phs_heap_n_stacks(void);
PH_HIDDEN uint32_t phs_heap_stack(uint32_t i, const uintptr_t **words);

typedef struct phs_heap_row {
    const uintptr_t *pcs;   /* innermost first */
    uint32_t depth;
    uint64_t samples;
    int64_t v[PHS_HEAP_VIEWS];
} phs_heap_row;
typedef struct phs_heap_totals {
    int64_t v[PHS_HEAP_VIEWS];
    uint64_t samples, dropped, stacks, live;
    double mean;
    int exact;                   /* malloc's bytes counted exactly: */
    int64_t exact_live, exact_peak; /* in use now and at the peak */
    uint64_t tables_kb;          /* the sampler's heap tables resident (mincore) */
} phs_heap_totals;
/* Writer: every stack with its views into ROWS (at most MAX; may be
 * NULL with 0), the totals of all into T; how many rows. */
PH_HIDDEN size_t phs_heap_rows(phs_heap_row *rows, size_t max, phs_heap_totals *t);
/* Writer, each tick: the Python frames of the heap stacks added since
 * named while their code objects live (the names are cached). */
PH_HIDDEN void phs_heap_name_py(phs_agg *a);
/* Writer: the snapshot's files (see ph_sampler_heapout.c), as
 * phs_agg_snapshot: 0, 1 (nothing sampled: none written) or -1. */
PH_HIDDEN int phs_heap_snapshot(phs_agg *a, const char *dir, const char *title, const char *tag, int n, int final,
                                char *folded, size_t len);
/* A final snapshot was written (SIGTERM, exit, exec): the first is the
 * last word, what the service frees while it shuts down is not "in use
 * at the end". */
PH_HIDDEN int phs_heap_final_written(void);
/* For the status: "" while there are samples, else why there are none;
 * and the heap's figures as a JSON object. */
PH_HIDDEN void phs_heap_reason(char *buf, size_t len);
PH_HIDDEN void phs_heap_json(char *buf, size_t len);
/* ph_sampler_unwind.c: the stack of the calling thread from a frame's
 * registers (the heap sampler's walk; the CPU sampler's unwinder). */
PH_HIDDEN uint32_t phs_unwind_regs(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t *pcs);

/* ---- across processes: ph_sampler_proc.c -------------------------------- */

/* What sampler-status-<pid>.json says (see ph_sampler_proc.c). */
typedef struct phs_status {
    const char *state, *timer, *last_snapshot, *reason;
    const char *python;     /* phs_py_describe(), NULL or "": no CPython */
    const char *heap;       /* a JSON object (phs_heap_json), NULL: none */
    const char *java;       /* phs_java_describe(), NULL or "": no JVM */
    uint64_t samples, dropped, truncated;
    double cpu_s, children_cpu_s;
    int hz, snapshots;
    long request;
} phs_status;

/* At load, before the settings leave the environment: read
 * PH_SAMPLER_FOLLOW and save what a followed program needs; *SAMPLE says
 * whether this process samples.  NULL, or BAD filled with what is wrong. */
PH_HIDDEN const char *phs_proc_init(char *bad, size_t len, int *sample);
PH_HIDDEN int phs_proc_followed(void);         /* started by a profiled process */
PH_HIDDEN int phs_proc_root(void);             /* the tree's first profiled process */
PH_HIDDEN int phs_proc_seq0(void);             /* snapshots an earlier image of this pid wrote */
PH_HIDDEN int phs_proc_follows_forks(void);    /* PH_SAMPLER_FOLLOW=all */
PH_HIDDEN void phs_proc_forked(void);          /* ... and this is such a fork child */
PH_HIDDEN const char *phs_proc_follow_name(void);
PH_HIDDEN int phs_status_write(const char *dir, const phs_status *st);
/* The number in DIR/.snapshot-request, or -1. */
PH_HIDDEN long phs_request_read(const char *dir);
PH_HIDDEN void phs_proc_not_sampled(const char *dir);
/* Writer, at the final snapshot: ask the followed children still running
 * for a snapshot (a request after LAST) and wait for them, at most
 * TIMEOUT_MS. */
PH_HIDDEN void phs_proc_children_snapshot(const char *dir, long last, int timeout_ms);

/* What the exec and _exit interposers ask of the sampler above them
 * (ph_sampler.c gives it at load, phs_proc_hooks_set; until then they ask
 * nothing: nothing samples yet).  Async-signal-safe, all three.
 *   exec_begin   before an exec of PATH (NULL: unknown) that hands the
 *                settings on (HANDED) or not: when it is an exec in
 *                place of a sampling process, the timer stopped, the final
 *                snapshot and the status written, and the number of
 *                snapshots written so far returned; else -1;
 *   exec_failed  that exec failed: sampling again;
 *   exit_begin   before _exit(): the final snapshot, as at exit(). */
typedef struct phs_proc_hooks {
    int (*exec_begin)(const char *path, int handed);
    void (*exec_failed)(void);
    void (*exit_begin)(void);
} phs_proc_hooks;
PH_HIDDEN void phs_proc_hooks_set(const phs_proc_hooks *h);

#endif
