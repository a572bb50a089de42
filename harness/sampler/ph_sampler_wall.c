/* ph_sampler_wall.c - the `wall` clock (PH_SAMPLER_CLOCK=wall): every
 * thread sampled at a wall-clock rate, running or blocked.
 *
 * Each thread gets a POSIX timer on CLOCK_MONOTONIC that sends the
 * sampler's real-time signal (PHS_TIMER_SIG, our value) to that very
 * thread (SIGEV_THREAD_ID); the writer gives one to every thread in
 * /proc/self/task each tick (and at once when pthread_create starts one)
 * and deletes those of threads that ended, as it does perf events.
 *
 * Off CPU: a thread blocked in a system call is woken by the signal in the
 * kernel; the context the handler gets says so, for free (x86-64): with
 * SA_RESTART (ours has it) a call the kernel restarts is at its `syscall`
 * instruction again (rip points at 0f 05), and a call that is never
 * restarted (signal(7): poll, epoll_wait, select, nanosleep, ... ) returns
 * -EINTR (rax) just past it.  Such a sample's stack gets an `[off-cpu]`
 * leaf under the call it blocks in.  Not seen as off CPU: a thread in an
 * uninterruptible sleep (disk I/O, state D: the signal waits until the
 * call is done) and a runnable thread waiting for a CPU.
 *
 * EINTR: the calls SA_RESTART restarts (read, write, recv, accept,
 * futex waits, wait4, flock, ...) never see the samples.  The calls the
 * kernel never restarts after a handler ran return EINTR to the program at
 * a sample that lands while they block, as at any other signal: well
 * written programs retry them; one that treats their EINTR as fatal
 * cannot be sampled by wall clock (no signal-based sampler can prevent
 * it without hiding the program's own signals from it too).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "ph_sampler_int.h"

static struct {
    phs_tset t; /* a thread's timer: its timer_t */
} W;

/* A timer on CLOCK_MONOTONIC at phs.hz_nominal signalling thread TID into
 * *H.  0 or -1. */
static int
wall_open_cb(int tid, intptr_t *h)
{
    struct sigevent ev;
    struct itimerspec it;
    timer_t id;

    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = PHS_TIMER_SIG;
    ev.sigev_value.sival_ptr = &phs;
    ev._sigev_un._tid = tid;
    if (timer_create(CLOCK_MONOTONIC, &ev, &id) < 0)
        return -1;
    memset(&it, 0, sizeof it);
    it.it_interval.tv_nsec = 1000000000L / phs.hz_nominal;
    /* Threads sampled out of step with one another, so they are not all
     * woken at once: the first expiry spread over one period by tid. */
    it.it_value.tv_nsec = 1 + (long)((unsigned)tid * 2654435761u % (unsigned)it.it_interval.tv_nsec);
    if (timer_settime(id, 0, &it, NULL) < 0) {
        timer_delete(id);
        return -1;
    }
    *h = (intptr_t)id;
    return 0;
}

static void
wall_close_cb(intptr_t h)
{
    timer_delete((timer_t)h);
}

void
phs_wall_scan(int self_tid)
{
    phs_tset_scan(&W.t, self_tid, wall_open_cb, wall_close_cb);
}

void
phs_wall_close_all(void)
{
    phs_tset_close_all(&W.t, wall_close_cb);
}

void
phs_wall_disarm_all(void)
{
    struct itimerspec off;

    memset(&off, 0, sizeof off);
    for (int i = 0; i < PHS_MAX_THREADS; i++)
        if (W.t.tid[i] != 0)
            timer_settime((timer_t)W.t.h[i], 0, &off, NULL);
}

void
phs_wall_forget(void)
{
    /* A fork child: timers are not inherited. */
    phs_tset_close_all(&W.t, NULL);
}

int
phs_wall_blocked(const void *ctx)
{
#if defined(__x86_64__)
    const ucontext_t *uc = ctx;
    uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    long ax = (long)uc->uc_mcontext.gregs[REG_RAX];
    const unsigned char *p = (const unsigned char *)ip;

    if (ip < 4096 + 2 || !phs_probe_mem(ip - 2, 4))
        return 0;
    if (p[0] == 0x0f && p[1] == 0x05)
        return 1; /* restarted: the call is made again on return */
    return p[-2] == 0x0f && p[-1] == 0x05 && ax == -EINTR; /* never restarted: EINTR */
#else
    (void)ctx;
    return 0;
#endif
}
