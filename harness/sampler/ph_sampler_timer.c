/* ph_sampler_timer.c - the sampler's timer below the kernel tick, and the
 * signal path's scratch buffers.
 *
 * The timer is a POSIX timer on the process's CPU clock
 * (CLOCK_PROCESS_CPUTIME_ID) that sends a real-time signal, PHS_TIMER_SIG,
 * carrying &phs as its value: the same samples setitimer(ITIMER_PROF)
 * gave (process CPU time; since Linux 6.3 the kernel hands a process
 * timer's signal to the thread that is running, as it does ITIMER_PROF's
 * SIGPROF: "posix-timers: Prefer delivery of signals to the current
 * thread"), on a signal runtimes leave to others.  The Go runtime takes
 * SIGPROF and every other signal for itself at its start, after our
 * constructor, and keeps asynchronous signals rather than forwarding them;
 * on a real-time signal ph_sampler.c can stand in front of it again, as it
 * does of SIGTRAP, telling its timer's signals (SI_TIMER, our value) from
 * the service's own, which go on to the handler it replaced.  Before 6.3
 * such a signal went to the main thread whenever it could take it, busy
 * or not: there the sampler keeps setitimer(ITIMER_PROF) and SIGPROF
 * (a Go program then says the service replaced the handler).
 *
 * Scratch: the handler's stacks (PHS_MAX_DEPTH native pcs and the words
 * with Python frames, 12 KiB) live in a preallocated pool, not on the
 * stack the handler runs on: it runs SA_ONSTACK where the handler it
 * stands in front of did (the Go runtime's, whose signal stack is 32
 * KiB; other programs' alternate stacks are smaller: Rust's threads have
 * 8 KiB, minus the kernel's frame).  A
 * handler claims a free slot with a CAS; with none free the sample is
 * dropped, never waited for.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ph_sampler_int.h"

#define SCRATCH_SLOTS 64

static struct {
    timer_t id;
    int have;                      /* this process owns a timer */
    phs_scratch *scratch;          /* SCRATCH_SLOTS of them */
    _Atomic int busy[SCRATCH_SLOTS];
} T;

int
phs_timer_create(char *why, size_t len)
{
    struct sigevent ev;

    if (T.have)
        return 0;
    if (!phs_kernel_at_least(6, 3)) { /* the running thread gets the signal from 6.3 on */
        snprintf(why, len, "Linux before 6.3 gives a process timer's signal to the main thread");
        return -1;
    }
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = PHS_TIMER_SIG;
    ev.sigev_value.sival_ptr = &phs;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &T.id) < 0) {
        snprintf(why, len, "timer_create: %s", strerror(errno));
        return -1;
    }
    T.have = 1;
    return 0;
}

int
phs_timer_set(int hz)
{
    struct itimerspec it;

    if (!T.have)
        return -1;
    memset(&it, 0, sizeof it);
    if (hz > 0) {
        it.it_interval.tv_nsec = 1000000000L / hz;
        it.it_value = it.it_interval;
    }
    return timer_settime(T.id, 0, &it, NULL);
}

int
phs_timer_is_ours(const siginfo_t *si)
{
    return si->si_code == SI_TIMER && (si->si_value.sival_ptr == (void *)&phs || phs_wall_slot(si) >= 0);
}

void
phs_timer_forget(void)
{
    /* A fork child: timers are not inherited; the id is the parent's. */
    T.have = 0;
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        atomic_store(&T.busy[i], 0);
}

int
phs_scratch_init(void)
{
    void *p;

    if (T.scratch != NULL)
        return 0;
    /* Untouched pages cost nothing: a slot is touched when a handler
     * first takes it, and only as deep as its stacks go. */
    p = mmap(NULL, SCRATCH_SLOTS * sizeof *T.scratch, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    T.scratch = p;
    return 0;
}

phs_scratch *
phs_scratch_get(unsigned hint)
{
    if (T.scratch == NULL)
        return NULL;
    for (unsigned i = 0; i < SCRATCH_SLOTS; i++) {
        unsigned k = (hint + i) % SCRATCH_SLOTS;
        int zero = 0;

        if (atomic_load_explicit(&T.busy[k], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&T.busy[k], &zero, 1))
            return &T.scratch[k];
    }
    return NULL;
}

void
phs_scratch_put(phs_scratch *s)
{
    atomic_store(&T.busy[s - T.scratch], 0);
}
