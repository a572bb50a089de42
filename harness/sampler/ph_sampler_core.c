/* ph_sampler_core.c - what every part of the sampler reads and calls,
 * below all of them: the shared state (phs), the sampler's own sections
 * and its code's range (phs_own_*), the sample tables' recording
 * (phs_commit_as), dl_iterate_phdr behind the lock fork waits on, and
 * the kernel's version.  ph_sampler.c, the top, starts and stops it all;
 * nothing here calls up.
 * Async-signal-safe but for phs_own_find and the dl lock.
 */
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/utsname.h>

#include "ph_sampler_int.h"

phs_state phs;

int
phs_kernel_at_least(int major, int minor)
{
    struct utsname u;
    int ma = 0, mi = 0;

    if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
        return 0;
    return ma > major || (ma == major && mi >= minor);
}

/* ---- the sampler's own work (ph_sampler_int.h) ------------------------- */

__thread volatile int phs_tls_own __attribute__((tls_model("initial-exec")));

/* The library's code: its executable segment, [own_lo, own_hi), found
 * once at start (phs_own_find).  Linked into another object
 * (libphsampler.a), its code is that object's: nothing is told by address
 * there. */
static uintptr_t own_lo, own_hi;

static int
own_range_cb(struct dl_phdr_info *info, size_t size, void *ud)
{
    uintptr_t me = (uintptr_t)&own_range_cb;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

    (void)size;
    (void)ud;
    base = base ? base + 1 : info->dlpi_name ? info->dlpi_name : "";
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || me < lo || me - lo >= ph->p_memsz)
            continue;
        if (strncmp(base, "libphsampler", 12) == 0) {
            own_lo = lo;
            own_hi = lo + ph->p_memsz;
        }
        return 1;
    }
    return 0;
}

int
phs_own_pc(uintptr_t pc)
{
    return pc >= own_lo && pc < own_hi;
}

uint32_t
phs_own_cut(uintptr_t *pcs, uint32_t from, uint32_t depth)
{
    uint32_t k = from;

    if (depth <= from)
        return depth;
    for (uint32_t i = from; i < depth; i++)
        if (!phs_own_pc(phs_call_pc(pcs, i)))
            pcs[k++] = pcs[i];
    return k;
}

void
phs_own_find(void)
{
    if (own_hi == 0)
        dl_iterate_phdr(own_range_cb, NULL);
}

/* ---- the sample tables --------------------------------------------------- */

/* Add W samples of PCS[0..DEPTH) on thread TID to table T. */
static int
record(phs_table *t, uint32_t tid, const uintptr_t *pcs, uint32_t depth, uint64_t w)
{
    uint64_t h = 1469598103934665603ULL ^ tid;

    for (uint32_t i = 0; i < depth; i++) {
        h ^= pcs[i];
        h *= 1099511628211ULL;
    }
    for (uint32_t p = 0; p < 32; p++) {
        phs_slot *s = &t->slots[(h + p) & (PHS_SLOTS - 1)];
        uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire), zero = 0;

        if (st == 2 && s->hash == h && s->depth == depth && s->tid == tid &&
            memcmp(&t->arena[s->off], pcs, depth * sizeof *pcs) == 0) {
            atomic_fetch_add_explicit(&s->count, w, memory_order_relaxed);
            return 0;
        }
        if (st == 0 && atomic_compare_exchange_strong(&s->state, &zero, 1)) {
            uint32_t off = atomic_fetch_add(&t->used, depth);

            s->hash = h;
            s->tid = tid;
            if (off > PHS_ARENA - depth || off + depth > PHS_ARENA) {
                s->depth = 0; /* a dead slot until the next drain */
                atomic_store_explicit(&s->state, 2, memory_order_release);
                return -1;
            }
            memcpy(&t->arena[off], pcs, depth * sizeof *pcs);
            s->off = off;
            s->depth = depth;
            atomic_store_explicit(&s->count, w, memory_order_relaxed);
            atomic_store_explicit(&s->state, 2, memory_order_release);
            return 0;
        }
    }
    return -1;
}

/* Record PCS[0..DEPTH) as W samples of thread TID. */
void
phs_commit_as(int tid, const uintptr_t *pcs, uint32_t depth, uint64_t w)
{
    int a;
    phs_table *t;

    /* Enter the active table; if the writer flipped it meanwhile, leave:
     * it may already be reading that one.  (seq_cst on both sides: either
     * we see the flip or the writer sees us inside.) */
    a = atomic_load(&phs.active);
    t = phs.tables[a];
    atomic_fetch_add(&t->inflight, 1);
    if (atomic_load(&phs.active) != a || record(t, (uint32_t)tid, pcs, depth, w) < 0)
        atomic_fetch_add_explicit(&phs.dropped, w, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&phs.samples, w, memory_order_relaxed);
    atomic_fetch_sub(&t->inflight, 1);
}

/* ---- the loader's list, never while forking ------------------------------ */

static pthread_mutex_t dl_guard = PTHREAD_MUTEX_INITIALIZER;

int
phs_dl_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    int r;

    pthread_mutex_lock(&dl_guard);
    r = dl_iterate_phdr(cb, data);
    pthread_mutex_unlock(&dl_guard);
    return r;
}

void
phs_dl_lock(void)
{
    pthread_mutex_lock(&dl_guard);
}

void
phs_dl_unlock(void)
{
    pthread_mutex_unlock(&dl_guard);
}

void
phs_dl_reset(void)
{
    pthread_mutex_init(&dl_guard, NULL);
}
