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
 * Parked threads: waking a blocked thread for every sample is what a
 * wall-clock sampler costs (a signal, two context switches, the call
 * restarted: 50 idle threads at 100 Hz took ~20 % of a CPU here,
 * tests/bench/bench-wall.sh), and its stack does not change while it
 * stays blocked.  So a blocked sample parks its thread: its timer stops
 * and its stack is kept; the writer looks at the thread's CPU clock every
 * sampling period (phs_wall_poll; one clock_gettime, no signal) and, while
 * it has not moved, counts the periods gone by on that stack.  Once it
 * moved, the thread ran: the periods up to when it woke (now less the CPU
 * time it used and the time it waited for a CPU since, from its
 * schedstat) are counted there, the rest (running since, or waiting to)
 * on the stack of its last sample on CPU (or its next sample's, if none),
 * and its timer starts again at the next period's end.  (A thread that
 * wakes and blocks elsewhere within PARK_SLACK_NS of CPU before the
 * writer's first look is taken as blocked where it was: the kernel's
 * clock also moves for the handler's own return to the call.)
 *
 * EINTR: the calls SA_RESTART restarts (read, write, recv, accept,
 * futex waits, wait4, flock, ...) never see the samples.  The calls the
 * kernel never restarts after a handler ran would return EINTR to the
 * program at a sample that lands while they block: glibc's are
 * interposed and keep the signal out while they wait (ph_sampler_wait.c,
 * which says what remains).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "ph_sampler_int.h"

#define PARK_SLACK_NS 200000 /* the handler's return to the call, in the thread's CPU time */
#define STACK_WORDS (PHS_MAX_DEPTH + 1)

static struct {
    phs_tset t;                         /* a thread's timer: its timer_t */
    char tag[PHS_MAX_THREADS];          /* &tag[i]: slot i's timer's sigev_value */
    _Atomic int parked[PHS_MAX_THREADS]; /* 0 sampled; 1 parked by its handler; 2 and its CPU time seen by the writer */
    _Atomic uint64_t debt[PHS_MAX_THREADS]; /* periods its next sample stands for too */
    int64_t cpu[PHS_MAX_THREADS];       /* its CPU time when parked, ns */
    int64_t at[PHS_MAX_THREADS];        /* when it was parked (CLOCK_MONOTONIC, ns) */
    uint64_t counted[PHS_MAX_THREADS];  /* periods counted since (writer) */
    int64_t next[PHS_MAX_THREADS];      /* when the writer looks at it again */
    int64_t delay[PHS_MAX_THREADS];     /* its time waiting for a CPU at the writer's first look, ns; -1 unknown */
    uint32_t depth[PHS_MAX_THREADS];
    uint32_t on_depth[PHS_MAX_THREADS]; /* its last on-CPU sample's depth; 0: none yet */
    uintptr_t *stacks;                  /* 2 x STACK_WORDS a slot (parked, last on CPU), mapped by the writer, touched as used */
} W;

static int64_t
clock_ns(clockid_t c)
{
    struct timespec ts;

    if (clock_gettime(c, &ts) < 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t
period_ns(void)
{
    return 1000000000LL / phs.hz_nominal;
}

/* Slot I's timer: periodic, the first expiry after FIRST_NS.  0 or -1. */
static int
wall_arm(int i, long first_ns)
{
    struct itimerspec it;

    memset(&it, 0, sizeof it);
    it.it_interval.tv_nsec = (long)period_ns();
    it.it_value.tv_nsec = first_ns;
    return timer_settime((timer_t)W.t.h[i], 0, &it, NULL);
}

/* A timer on CLOCK_MONOTONIC at phs.hz_nominal signalling thread TID into
 * *H.  0 or -1. */
static int
wall_open_cb(int tid, intptr_t *h)
{
    struct sigevent ev;
    timer_t id;
    int i = (int)(h - W.t.h);

    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = PHS_TIMER_SIG;
    ev.sigev_value.sival_ptr = &W.tag[i];
#ifdef __GLIBC__
    ev._sigev_un._tid = tid;
#else /* musl names the union's member */
    ev.sigev_notify_thread_id = tid;
#endif
    atomic_store(&W.parked[i], 0);
    atomic_store(&W.debt[i], 0);
    W.on_depth[i] = 0;
    if (timer_create(CLOCK_MONOTONIC, &ev, &id) < 0)
        return -1;
    *h = (intptr_t)id;
    /* Threads sampled out of step with one another, so they are not all
     * woken at once: the first expiry spread over one period by tid. */
    if (wall_arm(i, 1 + (long)((unsigned)tid * 2654435761u % (unsigned)period_ns())) < 0) {
        timer_delete(id);
        return -1;
    }
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
    if (W.stacks == NULL) {
        void *p = mmap(NULL, sizeof *W.stacks * 2 * STACK_WORDS * PHS_MAX_THREADS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (p != MAP_FAILED)
            W.stacks = p; /* else nothing is parked: every sample signalled */
    }
    phs_tset_scan(&W.t, self_tid, wall_open_cb, wall_close_cb);
}



void
phs_wall_disarm_all(void)
{
    struct itimerspec off;

    memset(&off, 0, sizeof off);
    for (int i = 0; i < PHS_MAX_THREADS; i++) {
        if (W.t.tid[i] != 0)
            timer_settime((timer_t)W.t.h[i], 0, &off, NULL); /* (parked threads still counted: blocked all the same) */
    }
}

void
phs_wall_arm_all(void)
{
    for (int i = 0; i < PHS_MAX_THREADS; i++) {
        if (W.t.tid[i] != 0) {
            atomic_store(&W.parked[i], 0);
            wall_arm(i, 1);
        }
    }
}

void
phs_wall_forget(void)
{
    /* A fork child: timers are not inherited. */
    phs_tset_close_all(&W.t, NULL);
    for (int i = 0; i < PHS_MAX_THREADS; i++)
        atomic_store(&W.parked[i], 0);
}

int
phs_wall_slot(const siginfo_t *si)
{
    const char *p = si->si_value.sival_ptr;

    return p >= W.tag && p < W.tag + PHS_MAX_THREADS ? (int)(p - W.tag) : -1;
}

void
phs_wall_park(int slot, const uintptr_t *pcs, uint32_t depth)
{
    struct itimerspec off;

    if (W.stacks == NULL || atomic_load_explicit(&W.parked[slot], memory_order_relaxed) != 0 || depth > STACK_WORDS)
        return;
    memcpy(W.stacks + (size_t)slot * 2 * STACK_WORDS, pcs, depth * sizeof *pcs);
    W.depth[slot] = depth;
    W.cpu[slot] = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    W.at[slot] = clock_ns(CLOCK_MONOTONIC);
    W.counted[slot] = 0;
    W.next[slot] = 0;
    memset(&off, 0, sizeof off);
    if (W.cpu[slot] < 0 || W.at[slot] < 0 || timer_settime((timer_t)W.t.h[slot], 0, &off, NULL) < 0)
        return;
    atomic_store_explicit(&W.parked[slot], 1, memory_order_release);
}

void
phs_wall_oncpu(int slot, const uintptr_t *pcs, uint32_t depth)
{
    if (W.stacks == NULL || depth > STACK_WORDS)
        return;
    memcpy(W.stacks + ((size_t)slot * 2 + 1) * STACK_WORDS, pcs, depth * sizeof *pcs);
    W.on_depth[slot] = depth;
}

uint64_t
phs_wall_debt(int slot)
{
    if (atomic_load_explicit(&W.debt[slot], memory_order_relaxed) == 0)
        return 0;
    return atomic_exchange(&W.debt[slot], 0);
}

/* Count slot I's periods on its parked stack up to UNTIL (CLOCK_MONOTONIC
 * ns). */
static void
count_until(int i, int64_t until)
{
    uint64_t k = until > W.at[i] ? (uint64_t)((until - W.at[i]) / period_ns()) : 0;

    if (k > W.counted[i]) {
        phs_commit_as(W.t.tid[i], W.stacks + (size_t)i * 2 * STACK_WORDS, W.depth[i], k - W.counted[i]);
        W.counted[i] = k;
    }
}

/* The time thread TID has spent waiting for a CPU (the second field of
 * its schedstat), ns; -1 if unknown.  Writer. */
static int64_t
run_delay(int tid)
{
    char path[64], buf[128];
    long long cpu, delay;
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return sscanf(buf, "%lld %lld", &cpu, &delay) == 2 ? delay : -1;
}

/* Every parked thread due a look: still blocked (its CPU clock has not
 * moved), its periods counted; ran, counted up to when it woke and
 * sampled again.  A thread blocked for long is looked at less often (an
 * eighth of the time it has been blocked, at most CHECK_MAX_NS apart): 50
 * idle threads looked at every period cost 1 % of a CPU in clock reads.
 * The periods it ran before the look are its next sample's. */
#define CHECK_MAX_NS 100000000
static void
wall_tick(int all)
{
    int64_t t = clock_ns(CLOCK_MONOTONIC);

    if (!atomic_load(&phs.on))
        return; /* nothing counted once sampling is off */
    for (int i = 0; i < PHS_MAX_THREADS; i++) {
        int state = W.t.tid[i] != 0 ? atomic_load_explicit(&W.parked[i], memory_order_acquire) : 0;
        int64_t cpu, now, ran, gap;

        if (state == 0 || (!all && state == 2 && t < W.next[i]))
            continue;
        /* the thread's CPU clock (CPUCLOCK_SCHED of a thread, as
         * pthread_getcpuclockid makes it); -1: it ended (the scan closes it) */
        cpu = clock_ns((clockid_t)((~(unsigned)W.t.tid[i] << 3) | 6));
        now = clock_ns(CLOCK_MONOTONIC);
        ran = cpu - W.cpu[i];
        if (cpu >= 0 && (ran == 0 || (state == 1 && ran <= PARK_SLACK_NS))) {
            if (state == 1)
                W.delay[i] = run_delay(W.t.tid[i]);
            W.cpu[i] = cpu;
            atomic_store_explicit(&W.parked[i], 2, memory_order_relaxed);
            count_until(i, now);
            gap = (now - W.at[i]) / 8;
            W.next[i] = now + (gap < period_ns() ? period_ns() : gap > CHECK_MAX_NS ? CHECK_MAX_NS : gap);
            continue;
        }
        /* the periods up to now that are not counted are its next
         * sample's, at the next period's end, as if never parked */
        if (cpu >= 0) {
            /* it woke before it ran and before it waited for a CPU (on a
             * busy machine that wait is the most of it) */
            int64_t d = state == 2 && W.delay[i] >= 0 ? run_delay(W.t.tid[i]) : -1;

            uint64_t rest;

            count_until(i, now - ran - (d >= W.delay[i] ? d - W.delay[i] : 0));
            /* since: running or waiting to, on the stack it last ran on
             * (a writer late on a busy machine looks after the thread
             * has blocked again: its next sample would be off CPU) */
            rest = (uint64_t)((now - W.at[i]) / period_ns()) - W.counted[i];
            if (rest > 0 && W.on_depth[i] > 0)
                phs_commit_as(W.t.tid[i], W.stacks + ((size_t)i * 2 + 1) * STACK_WORDS, W.on_depth[i], rest);
            else
                atomic_fetch_add(&W.debt[i], rest);
        }
        atomic_store(&W.parked[i], 0);
        wall_arm(i, cpu >= 0 ? (long)(period_ns() - (now - W.at[i]) % period_ns()) : 1);
    }
}

void
phs_wall_close_all(void)
{
    wall_tick(1); /* the parked threads' periods up to now */
    phs_tset_close_all(&W.t, wall_close_cb);
}

int
phs_wall_poll(struct pollfd *pfd, int timeout_ms)
{
    int64_t end = clock_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
    int step = (int)(period_ns() / 1000000);

    for (;;) {
        int64_t left = (end - clock_ns(CLOCK_MONOTONIC)) / 1000000;
        int r;

        if (left <= 0)
            return 0;
        r = poll(pfd, 1, left < step ? (int)left : step > 0 ? step : 1);
        if (r != 0)
            return r;
        wall_tick(0);
    }
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
