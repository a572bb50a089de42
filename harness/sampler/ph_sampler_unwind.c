/* ph_sampler_unwind.c - the signal path's stack walk: the interrupted
 * thread's frames, by the call frame information ph_sampler_cfi.c
 * flattened beforehand or by frame pointers, every word read only once
 * proven readable.  Async-signal-safe but for phs_note_stack and the pipe's
 * setup.  (Apart from ph_sampler.c, which owns the timers, the handlers
 * and the writer.)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>
#include <unistd.h>

#include "ph_sampler_int.h"

/* The largest step the unwinder takes on a stack whose bounds it does not
 * know (a thread that was running before the sampler, a stack of the
 * service's own); on the thread's own stack the bound is its top. */
#define MAX_STEP (8u << 20)

static struct {
    int probe_pipe[2];          /* readability checks on the signal path */
    _Atomic uintptr_t go_preempt; /* runtime.asyncPreempt's entry in a Go program, or 0 */
} U = { .probe_pipe = { -1, -1 } };

/* A Go program preempts a goroutine by a signal (SIGURG) whose handler
 * makes the interrupted context call runtime.asyncPreempt: it pushes the
 * interrupted pc and sets the pc to that function's entry.  Our timer's
 * signal, pending meanwhile, is held while Go's handler runs (it blocks
 * every signal) and delivered as it returns: at that entry, with the
 * work it measured (the goroutine's) one pushed word away; 11 % of a
 * CPU-bound Go program's samples landed there, every one of them without
 * its callers.  Such a sample is the goroutine's: the walk starts from the
 * context before the push. */
void
phs_go_detect(phs_symbols *s)
{
    uintptr_t addr = 0, size = 0;

    if (atomic_load(&U.go_preempt) != 0 || phs_symbols_count(s, 0) == 0)
        return;
    if (phs_symbol_addr(s, 0, "runtime.asyncPreempt.abi0", &addr, &size) == 0 ||
        phs_symbol_addr(s, 0, "runtime.asyncPreempt", &addr, &size) == 0)
        atomic_store(&U.go_preempt, addr);
}

int
phs_unwind_init(void)
{
    if (U.probe_pipe[0] >= 0)
        return 0;
    return pipe2(U.probe_pipe, O_CLOEXEC | O_NONBLOCK);
}

void
phs_unwind_forget(void)
{
    /* A fork child starting a sampler of its own: the parent's pipe is
     * shared with it, and another process's reads would take our bytes. */
    for (int i = 0; i < 2; i++) {
        if (U.probe_pipe[i] >= 0)
            close(U.probe_pipe[i]);
        U.probe_pipe[i] = -1;
    }
}

/* This thread's stack, [lo, hi); hi 0: not known.  Set where the thread
 * starts: phs_note_stack() in ph_sampler_start for the thread that starts the
 * sampler, in thread_start for threads pthread_create starts later. */
static __thread uintptr_t tls_stack_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t tls_stack_hi __attribute__((tls_model("initial-exec")));

/* What one walk knows is readable: [lo, hi), from the interrupted stack
 * pointer to the top of the thread's stack when the stack pointer lies in
 * it (none of that can be unmapped while the thread runs on it), and the
 * page last proven readable by a probe. */
typedef struct walk {
    uintptr_t lo, hi;
    uintptr_t last_page;
} walk;

/* Can the LEN (at most 16) bytes at ADDR, off the stack, be read?  A
 * write(2) of them into a pipe says: from unmapped memory it fails with
 * EFAULT (or writes less).  The bytes are drained at once. */
static __attribute__((noinline)) int
probe(walk *w, uintptr_t addr, size_t len)
{
    uintptr_t page = addr & ~(uintptr_t)4095;
    char drain[16];

    if (page == w->last_page && (addr & 4095) <= 4096 - len)
        return 1;
    if (write(U.probe_pipe[1], (const void *)addr, len) != (ssize_t)len)
        return 0;
    if (read(U.probe_pipe[0], drain, sizeof drain) < 0) {
        /* nothing to do: another thread's read may have taken our bytes */
    }
    if ((addr & 4095) <= 4096 - len)
        w->last_page = page;
    return 1;
}

/* The probe without a walk's cache, for the Python frame reader. */
int
phs_probe_mem(uintptr_t addr, size_t len)
{
    walk w = { 0, 0, 0 };

    return addr >= 4096 && len <= 16 && probe(&w, addr, len);
}

/* Can the LEN (at most 16) bytes at ADDR be read?  On the stack, yes;
 * elsewhere the probe says. */
static inline int
readable(walk *w, uintptr_t addr, size_t len)
{
    if (addr >= w->lo && addr < w->hi && w->hi - addr >= len)
        return 1;
    return probe(w, addr, len);
}

/* Record this thread's stack bounds (not async-signal-safe: at the
 * thread's start).  lo before hi: a sample in between sees "not known". */
void
phs_note_stack(void)
{
    pthread_attr_t a;
    void *addr = NULL;
    size_t size = 0;

    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &addr, &size) == 0 && size > 0) {
        tls_stack_hi = 0;
        atomic_signal_fence(memory_order_seq_cst);
        tls_stack_lo = (uintptr_t)addr;
        atomic_signal_fence(memory_order_seq_cst);
        tls_stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&a);
}

#if defined(__x86_64__)
/* Does RET follow a call instruction?  (e8 rel32, or ff /2 in its common
 * register and memory forms.)  Reads only memory proven readable. */
static int
after_call(uintptr_t ret, walk *w)
{
    const unsigned char *p;

    if (ret < 4096 + 7 || !readable(w, ret - 7, 16))
        return 0; /* ret-7 .. ret+8 */
    p = (const unsigned char *)ret;
    if (p[-5] == 0xe8)
        return 1;
    if (p[-2] == 0xff && ((p[-1] >> 3) & 7) == 2)
        return 1; /* call *%reg, call *(%reg) */
    if (p[-3] == 0xff && ((p[-2] >> 3) & 7) == 2)
        return 1; /* call *disp8(%reg) */
    if (p[-6] == 0xff && ((p[-5] >> 3) & 7) == 2)
        return 1; /* call *disp32(%reg), call *disp32(%rip) */
    return 0;
}
#endif

/* Walk the interrupted thread's stack into PCS (innermost first).
 *
 * Each frame is stepped by its call frame information when the tables of
 * ph_sampler_cfi.c cover its pc (built ahead of time on the writer thread:
 * no lock, no parsing here), by its frame pointer otherwise.  Not
 * libunwind: its local unwinder finds unwind tables through
 * dl_iterate_phdr, which takes the loader's lock, so a sample landing in
 * dlopen() would deadlock (gperftools documents this hang; pprof-rs saw
 * crashes with DWARF unwinding in production).  Every word is read only
 * after proving it readable (on the thread's own stack by its bounds, for
 * free; anywhere else by a probe), and every step must move the stack
 * pointer up, and stay within the thread's stack (MAX_STEP per step where
 * its bounds are not known): a wrong rule gives a shorter stack, never a
 * fault or a loop.  A walk that MAX_STEP or PHS_MAX_DEPTH stops before
 * the stack's end ends in the PHS_TRUNCATED marker and is counted: a frame
 * bigger than the bound is cut where it is seen, never silently. */
uint32_t
phs_unwind(const void *ctx, uintptr_t *pcs, int fp_only)
{
    const ucontext_t *uc = ctx;
#if defined(__x86_64__)
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    /* Same frame record as x86-64: [fp] = caller's fp, [fp+8] = return
     * address.  (Untested here: the machines we run on are x86-64.) */
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.regs[29];
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.sp;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
#else
#error "the sampler's unwinder knows x86-64 and aarch64 only"
#endif
    uintptr_t lookup = pc;
    uint32_t depth = 0;
    const phs_cfi *cfi = fp_only ? NULL : phs_cfi_enter();
    walk w = { 0, 0, 0 };
    size_t hint = 0;
    int cut = 0;

    if (tls_stack_hi != 0 && sp >= tls_stack_lo && sp < tls_stack_hi) {
        w.lo = sp;
        w.hi = tls_stack_hi;
    }
#if defined(__x86_64__)
    if (pc != 0 && pc == atomic_load_explicit(&U.go_preempt, memory_order_relaxed) && !(sp & 7) &&
        readable(&w, sp, 8)) {
        pc = *(const uintptr_t *)sp; /* Go's preemption call, not made yet */
        sp += 8;
        lookup = pc;
    }
#endif

    pcs[depth++] = pc;
    while (depth < PHS_MAX_DEPTH) {
        const phs_cfi_rule *row = phs_cfi_find(cfi, lookup, &hint);
        uintptr_t ret;

        if (row != NULL) {
            uintptr_t cfa = (row->cfa_reg == PHS_CFA_SP ? sp : fp) + (uintptr_t)(intptr_t)row->cfa_off;
            uintptr_t at = cfa + (uintptr_t)(intptr_t)row->ra_off;

            if (row->flags & PHS_CFI_OUTERMOST)
                break;
            if (cfa <= sp || (at & 7) || (w.hi != 0 && cfa > w.hi))
                break;
            if (w.hi == 0 && cfa - sp > MAX_STEP) {
                cut = 1;
                break;
            }
            if (!readable(&w, at, 8))
                break;
            ret = *(const uintptr_t *)at;
            if (row->fp_off != 0) {
                at = cfa + (uintptr_t)(intptr_t)row->fp_off;
                if ((at & 7) || !readable(&w, at, 8))
                    break;
                fp = *(const uintptr_t *)at;
            } else if (row->flags & PHS_CFI_FP_LOST) {
                fp = 0;
            }
            sp = cfa;
        } else {
#if defined(__x86_64__)
            /* A leaf with no rule and no frame of its own (or stopped
             * before it pushed one): its caller's return address is at
             * the stack pointer, and the frame pointer still belongs to
             * the caller's caller.  Take that word only when it follows
             * a call instruction. */
            if (depth == 1 && !(sp & 7) && readable(&w, sp, 8)) {
                uintptr_t top = ((const uintptr_t *)sp)[0];
                uintptr_t framed = fp >= sp && fp - sp < MAX_STEP && !(fp & 7) && readable(&w, fp, 16)
                                       ? ((const uintptr_t *)fp)[1]
                                       : 0;

                if (top != framed && top != pcs[0] && after_call(top, &w))
                    pcs[depth++] = top - 1;
            }
#endif
            if (fp < sp || (fp & 7) || (w.hi != 0 && fp + 16 > w.hi))
                break;
            if (w.hi == 0 && fp - sp > MAX_STEP) {
                cut = 1;
                break;
            }
            if (!readable(&w, fp, 16))
                break;
            ret = ((const uintptr_t *)fp)[1];
            sp = fp + 16;
            fp = ((const uintptr_t *)fp)[0];
        }
        if (ret < 4096 || depth == PHS_MAX_DEPTH)
            break;
        pcs[depth++] = ret - 1; /* inside the call instruction: the caller's line */
        lookup = ret - 1;
    }
    if (!fp_only)
        phs_cfi_leave();
    if (depth == PHS_MAX_DEPTH || cut) {
        /* Cut, and said so: the marker is the outermost frame. */
        if (depth == PHS_MAX_DEPTH)
            depth--;
        pcs[depth++] = PHS_TRUNCATED;
        atomic_fetch_add_explicit(&phs.truncated, 1, memory_order_relaxed);
    }
    return depth;
}

/* The stack from PC, SP and FP (the heap sampler's walk, from inside
 * the allocator): the signal path's unwinder over a made-up context. */
uint32_t
phs_unwind_regs(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t *pcs)
{
    ucontext_t uc;

#if defined(__x86_64__)
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
    uc.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
    uc.uc_mcontext.gregs[REG_RBP] = (greg_t)fp;
#else
    uc.uc_mcontext.pc = pc;
    uc.uc_mcontext.sp = sp;
    uc.uc_mcontext.regs[29] = fp;
#endif
    return phs_unwind(&uc, pcs, phs.unwind_fp_only);
}
