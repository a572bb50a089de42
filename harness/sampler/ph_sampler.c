/* ph_sampler.c - the sampler's signal path, its timers, the chaining of the
 * signals it stands in front of (SIGTERM/SIGINT, and SIGTRAP when perf
 * events deliver samples with it) and the writer thread's loop.
 *
 * What runs where:
 * - Signal context (the timer's real-time signal, SIGPROF or SIGTRAP, any
 *   thread): sample(), its stacks in a scratch slot, not on the stack.  It walks
 *   the interrupted stack, reading a word only after proving it readable
 *   (write(2) of it into a pipe fails with EFAULT instead of faulting), and
 *   records the stack in the active preallocated table (phs_table, see
 *   ph_sampler_int.h) with atomic claims.  No malloc, no stdio, no lock: a
 *   sample that finds no room is counted as dropped.  Only raw syscalls
 *   (write, read, gettid) are made.
 * - Where samples come from: up to 250 Hz, a POSIX timer on the process's
 *   CPU clock sending a real-time signal (ph_sampler_timer.c; before
 *   Linux 6.3 setitimer(ITIMER_PROF) and SIGPROF), process CPU time: the
 *   kernel signals the thread that is
 *   running, so every thread is sampled, threads created later too, with
 *   no bookkeeping.  The kernel tick (CONFIG_HZ, 250 here) caps it, so
 *   above 250 Hz each thread gets its own perf_event_open software
 *   cpu-clock event (an hrtimer) that signals that very thread: SIGTRAP
 *   through attr.sigtrap where the kernel holds it safely (6.1 on: the
 *   cheapest delivery, no interrupt to the CPU), SIGPROF through O_ASYNC
 *   otherwise.  The writer attaches one to every thread in
 *   /proc/self/task every tick, and at once when pthread_create
 *   (interposed) starts one, so a thread is sampled within ~2 ms of its
 *   start; it closes those of threads that ended.  When perf events are
 *   not allowed (perf_event_paranoid, seccomp) the rate is capped at 250
 *   Hz and the cap is reported.  The delivered rate is always measured
 *   (samples per CPU-second) and written in the outputs.
 * - The writer thread (a normal thread, every signal blocked but the timer's,
 *   whose samples there are counted as the sampler's own cost) wakes every
 *   tick (250 ms): it drains the active table into its own heap
 *   aggregate, so the signal-side tables only hold one tick of samples,
 *   and every interval, on a flush request and at the end it writes the
 *   snapshot files (ph_sampler_snap.c).  Everything that allocates,
 *   symbolises or blocks happens there.
 * - SIGTERM/SIGINT (any thread): on_stop_signal asks the writer for a final
 *   snapshot and waits for it, at most 5 s, then does what the service
 *   asked for: its handler (we interpose sigaction() and signal(), so a
 *   handler installed after us is recorded and called by ours; the writer
 *   also re-checks the dispositions every tick for services that install
 *   handlers behind our back), nothing when ignored, or the default
 *   action, re-raised, so the exit status still says "killed by signal".
 * - SIGTRAP, when our perf events send it: on_sigtrap takes the samples
 *   (si_code TRAP_PERF with our sig_data) and hands every other SIGTRAP
 *   (breakpoints, the service's own perf events) to what the service
 *   asked for, the same way.  A debugger attached to the service sees a
 *   SIGTRAP per sample: sample at 250 Hz or less when debugging.
 * - The timer's real-time signal: on_timer takes our timer's (SI_TIMER
 *   with our value) and hands every other to what the service asked for,
 *   the same way.  The writer's re-check each tick puts ours back in
 *   front of a handler installed behind our back: the Go runtime installs
 *   its own for every signal at its start, after our constructor, and
 *   keeps the asynchronous ones to itself.  SA_ONSTACK as that handler
 *   had it (Go requires it of every handler).
 * - fork: the child turns sampling off (atfork), has no writer and closes
 *   the perf fds it inherited; timers are not inherited.  With
 *   PH_SAMPLER_FOLLOW=all it starts a sampler of its own.  fork waits
 *   while the writer is inside dl_iterate_phdr (phs_dl_iterate), or the
 *   child would inherit the loader's lock held.  exec: LD_PRELOAD and
 *   PH_SAMPLER_* were removed from the environment at start; the exec
 *   family is interposed (ph_sampler_proc.c) to give them back to the
 *   programs that are followed, and an exec in place stops the timer (it
 *   would survive into the next program and kill it) after the final
 *   snapshot.
 * - Status and requests: the writer keeps sampler-status-<pid>.json and
 *   serves DIR/.snapshot-request each tick (ph_sampler_proc.c).
 * - The sampler's own work on a service thread (the stop handler's wait,
 *   an exec's, exit's or a flush's, a new thread's stack noted, the
 *   heap's bookkeeping, setup) is never the service's: phs_own sections
 *   and the library's code range (ph_sampler_int.h) make sample() count
 *   it as the sampler's cost, and cut the library's frames from the
 *   service's stacks.
 */
#include "ph_sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "ph_sampler_attach.h"
#include "ph_sampler_int.h"

#define TICK_MS 250
#define YOUNG_TICK_MS 20 /* a Python's first second: its code named while the program still holds it */
#define YOUNG_MS 1000
#define STOP_SIGNAL_WAIT_MS 5000 /* SIGTERM/SIGINT: never hold up termination longer */
#define EXIT_WAIT_MS 10000       /* exit(): the first snapshot may read big symbol tables */
#define FLUSH_WAIT_MS 30000
#define STATUS_EVERY_MS 5000
#define CHILDREN_WAIT_MS 3000 /* within STOP_SIGNAL_WAIT_MS */
#define MAX_HZ 10000


static struct {
    int pid;
    char dir[4096];
    char title[512];
    int interval_s;
    int delta;
    int mode_from_env;          /* the preload constructor read PH_SAMPLER_MODE */
    int no_debuginfo;           /* PH_SAMPLER_DEBUGINFO=0: libdw left alone */
    int wall;                   /* PH_SAMPLER_CLOCK=wall */
    int wake_pipe[2];           /* to the writer: 'w' wake, 'r' status */
    pthread_t writer;
    _Atomic int writer_running;
    _Atomic int flush_seq, done_seq;
    _Atomic unsigned commands;  /* CMD_* asked by request_and_wait, set before its flush_seq */
    _Atomic int said;           /* the one "profiling disabled" line was printed */
    _Atomic int wake_pending;   /* a 'w' for a new thread is in the pipe */
    int atfork_done, atexit_done;
    _Atomic int n_snapshots;    /* written by this image (and earlier ones of this pid) */
    long request;               /* the last .snapshot-request served */
    char last_snapshot[256];    /* the newest folded file's name */
    char why[300];              /* why profiling was disabled */
    double status_at;           /* when the status was last written (mono_ms) */
    double cpu_sampled0;        /* process CPU (less the writer's) when the timer started */
    char exec_path[1024];       /* the program an exec in place starts */
    int exec_handed;            /* ... and whether it got the settings */
    int handler_lost;           /* the service replaced our SIGPROF handler */
    struct sigaction app[NSIG]; /* what the service asked for SIGTERM/SIGINT */
    _Atomic int app_set[NSIG];  /* ours is in front of this signal */
    int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
    int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
} S = { .wake_pipe = { -1, -1 } };

static int
real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (S.real_sigaction == NULL)
        S.real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
    if (S.real_sigaction == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return S.real_sigaction(sig, act, old);
}

static void
say(const char *msg)
{
    /* write(2): the one output that is safe wherever we are. */
    ssize_t r = write(2, msg, strlen(msg));
    (void)r;
}

/* The timer below the tick: the POSIX one (ph_sampler_timer.c), or
 * setitimer(ITIMER_PROF) where it cannot be had. */
static int
start_timer(void)
{
    struct itimerval it;

    if (phs.wall) {
        phs_wall_arm_all(); /* per-thread timers, the writer's (phs_wall_scan): again after a failed exec */
        return 0;
    }
    if (phs.timer_sig)
        return phs_timer_set(phs.hz_nominal);
    it.it_interval.tv_sec = 0;
    it.it_interval.tv_usec = 1000000 / phs.hz_nominal;
    it.it_value = it.it_interval;
    return setitimer(ITIMER_PROF, &it, NULL);
}

/* Async-signal-safe. */
static void
timer_off(void)
{
    struct itimerval off = { { 0, 0 }, { 0, 0 } };

    if (phs.wall)
        phs_wall_disarm_all();
    else if (phs.timer_sig)
        phs_timer_set(0);
    else
        setitimer(ITIMER_PROF, &off, NULL);
}

/* Perf events are closed by the writer (it owns them) when it sees `on`
 * drop. */
static void write_status(const char *state);

/* Turn profiling off for good with one line on stderr and the reason in
 * the status file.  Never from a signal handler. */
static void
disable(const char *why)
{
    char line[512];

    atomic_store(&phs.on, 0);
    timer_off();
    phs_heap_disable();
    if (atomic_exchange(&S.said, 1))
        return;
    snprintf(S.why, sizeof S.why, "%s", why);
    snprintf(line, sizeof line, "ph-sampler: %s; profiling disabled\n", why);
    say(line);
    if (S.dir[0])
        write_status("disabled");
}

/* ---- the signal path -------------------------------------------------- */

/* Per-thread cache: the tid costs a syscall.  initial-exec TLS: the
 * library is preloaded or linked, never dlopen'd, so reading it never
 * allocates. */
static __thread int tls_tid __attribute__((tls_model("initial-exec")));
static __thread int tls_pid __attribute__((tls_model("initial-exec")));
static __thread int tls_writer __attribute__((tls_model("initial-exec")));

static void
commit(const uintptr_t *pcs, uint32_t depth, uint64_t w)
{
    phs_commit_as(tls_tid, pcs, depth, w);
}

/* One sample of the interrupted context CTX, on this thread, standing for
 * W periods; WALL_SLOT: its wall timer's slot, or -1.  The stacks go into
 * a scratch slot, not onto the signal stack (ph_sampler_timer.c: an
 * alternate signal stack may be small).  The sampler's own work is never
 * the service's (ph_sampler_int.h): on the writer, inside a phs_own
 * section, or where the innermost frame is the library's code, the sample
 * is counted as the sampler's cost; the library's frames under the
 * service's are cut.  (A wall sample held back by an interposed wait ends
 * in that interposer: it names the call the thread waited in.) */
static void
sample(const void *ctx, uint64_t w, int wall_slot)
{
    phs_scratch *sc;
    uint32_t depth;
    int blocked = 0, mine;

    if (!atomic_load_explicit(&phs.on, memory_order_relaxed) || phs.tables[0] == NULL)
        return;
    if (tls_writer || phs_tls_own) { /* CPU (or time) the sampler spent: ours, not the service's */
        atomic_fetch_add_explicit(&phs.own, w, memory_order_relaxed);
        return;
    }
    if (tls_pid != S.pid || tls_tid == 0) {
        tls_tid = (int)syscall(SYS_gettid);
        tls_pid = S.pid;
    }
    if ((sc = phs_scratch_get((unsigned)tls_tid)) == NULL) {
        atomic_fetch_add_explicit(&phs.dropped, 1, memory_order_relaxed);
        return;
    }
    if (phs.wall && (phs_wait_sampled() || (blocked = phs_wall_blocked(ctx)))) {
        /* held back while it waited (ph_sampler_wait.c): that wait's; or a
         * blocked thread: its stack ends in the call it blocks in */
        sc->native[0] = PHS_OFFCPU;
        depth = phs_wait_trim(sc->native + 1, phs_unwind(ctx, sc->native + 1, phs.unwind_fp_only));
        mine = depth > 0 && phs_own_pc(sc->native[1]) && !phs_wait_fn(sc->native[1]);
        depth = 1 + phs_own_cut(sc->native + 1, 1, depth);
    } else {
        depth = phs_unwind(ctx, sc->native, phs.unwind_fp_only);
        mine = depth > 0 && phs_own_pc(sc->native[0]);
        depth = phs_own_cut(sc->native, 1, depth);
    }
    if (mine) {
        atomic_fetch_add_explicit(&phs.own, w, memory_order_relaxed);
    } else {
        if (wall_slot >= 0)
            w += phs_wall_debt(wall_slot);
        /* A JVM's threads: the Java frames after the native ones
         * (ph_sampler_java.c); CPython's eval loop frames become the Python
         * frames they run. */
        const uintptr_t *stack = sc->native;

        if (phs_java_active()) {
            depth = phs_java_merge(ctx, sc->native, depth, sc->merged, PHS_MAX_WORDS);
            stack = sc->merged;
        } else if (phs_py_active()) {
            depth = phs_py_merge(sc->native, depth, sc->merged, PHS_MAX_WORDS);
            stack = sc->merged;
        }
        commit(stack, depth, w);
        /* Blocked: no more signals until it runs again; the writer counts
         * its periods there meanwhile (ph_sampler_wall.c).  Language words
         * too: a parked thread's frames do not change, and its Java methods
         * and Python code objects are named when each count is drained, as
         * a sample's are. */
        if (blocked && wall_slot >= 0)
            phs_wall_park(wall_slot, stack, depth);
        else if (wall_slot >= 0 && stack[0] != PHS_OFFCPU)
            phs_wall_oncpu(wall_slot, stack, depth);
    }
    phs_scratch_put(sc);
}

static void
on_sigprof(int sig, siginfo_t *si, void *ctx)
{
    int saved = errno;

    (void)sig;
    (void)si;
    sample(ctx, 1, -1);
    errno = saved;
}

static void chain(int sig, siginfo_t *si, void *ctx, const struct sigaction *app);

/* The POSIX timer's real-time signal: our timer's are samples; any other
 * (the service's own, sent or queued) goes where the service wanted it,
 * to the handler ours was put in front of. */
static void
on_timer(int sig, siginfo_t *si, void *ctx)
{
    int saved = errno;

    if (si != NULL && phs_timer_is_ours(si)) {
        /* Wall clock: the periods a thread's timer expired while its
         * signal was pending (a thread waiting for a CPU, in a call that
         * the signal cannot interrupt, or in a wait that blocks it:
         * ph_sampler_wait.c) are its stack's too. */
        sample(ctx, phs.wall && si->si_overrun > 0 ? 1 + (uint64_t)(si->si_overrun < 1 << 24 ? si->si_overrun : 1 << 24) : 1,
               phs.wall ? phs_wall_slot(si) : -1);
        errno = saved;
        return;
    }
    chain(sig, si, ctx, &S.app[sig]);
}

/* A perf event's SIGTRAP (attr.sigtrap) carries TRAP_PERF and the event's
 * sig_data in si_perf_data, which glibc's siginfo_t does not name yet:
 * the kernel's layout, checked against glibc's si_addr below. */
typedef struct perf_siginfo {
    int signo, errno_, code, pad_;
    void *addr;
    unsigned long data;
    uint32_t type, flags;
} perf_siginfo;
_Static_assert(offsetof(perf_siginfo, addr) == offsetof(siginfo_t, si_addr), "siginfo_t layout");

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif
#define TRAP_PERF_ASYNC 1u                      /* TRAP_PERF_FLAG_ASYNC: delivered late */

/* SIGTRAP: our perf events' samples; any other SIGTRAP (a breakpoint, the
 * service's own perf events) goes where the service wanted it. */
static void
on_sigtrap(int sig, siginfo_t *si, void *ctx)
{
    const perf_siginfo *p = (const perf_siginfo *)(const void *)si;
    int saved = errno;

    if (si != NULL && si->si_code == TRAP_PERF && p->data == PHS_PERF_COOKIE) {
        /* Held while the thread blocked SIGTRAP, it arrives where the
         * thread unblocked it, not where the CPU time went. */
        if (p->flags & TRAP_PERF_ASYNC)
            atomic_fetch_add_explicit(&phs.dropped, 1, memory_order_relaxed);
        else
            sample(ctx, 1, -1);
        errno = saved;
        return;
    }
    chain(sig, si, ctx, &S.app[sig]);
}

/* ---- the signals we stand in front of -------------------------------- */

/* The signals our samples come with: ours stands in front whatever the
 * service asked (ignored too, or the samples would be). */
static int
is_sampling(int sig)
{
    return (sig == SIGTRAP && phs.perf_sig == SIGTRAP) || (sig != 0 && sig == phs.timer_sig);
}

/* SIGTERM/SIGINT always (the final snapshot comes first), and the
 * sampling signals. */
static int
is_ours(int sig)
{
    return sig == SIGTERM || sig == SIGINT || is_sampling(sig);
}

/* What request_and_wait asks of the writer. */
enum {
    CMD_FLUSH = 1, /* a snapshot now */
    CMD_FINAL = 2, /* the last one (SIGTERM/SIGINT) */
    CMD_STOP = 4,  /* the last one, and the writer ends (exit, stop) */
    CMD_EXEC = 8,  /* the last one of this image (an exec in place) */
};

/* Ask the writer for COMMAND (CMD_*) and wait until it has done it, at
 * most TIMEOUT_MS: the sampler's own time, not the caller's thread's (a
 * phs_own section).  The command is set before the sequence number is
 * taken, so a writer that counts this request as served (it reads the
 * sequence, then takes the commands) has seen it; the pipe only wakes
 * it.  Async-signal-safe: write, phs_nap and lock-free atomics. */
static void
request_and_wait(unsigned command, int timeout_ms)
{
    int seq;
    char wake = 'w';
    struct timespec ts = { 0, 2 * 1000 * 1000 };

    phs_own_begin();
    if (atomic_load(&S.writer_running)) {
        atomic_fetch_or(&S.commands, command);
        seq = atomic_fetch_add(&S.flush_seq, 1) + 1;
        if (write(S.wake_pipe[1], &wake, 1) < 0) {
            /* a full pipe is a wake already on its way; the tick serves it anyway */
        }
        for (int waited = 0; waited < timeout_ms && atomic_load(&S.done_seq) < seq && atomic_load(&S.writer_running);
             waited += 2)
            phs_nap(&ts);
    }
    phs_own_end();
}

static void on_stop_signal(int sig, siginfo_t *si, void *ctx);

static int
exec_begin(const char *path, int handed)
{
    size_t i = 0;

    if (getpid() != S.pid || !atomic_load(&phs.on))
        return -1; /* a child, or nothing of ours runs here */
    phs_own_begin();
    /* setitimer's timers survive execve: the next tick would kill a
     * program with no SIGPROF handler yet. */
    timer_off();
    for (; path != NULL && path[i] && i < sizeof S.exec_path - 1; i++)
        S.exec_path[i] = path[i];
    S.exec_path[i] = '\0';
    S.exec_handed = handed;
    request_and_wait(CMD_EXEC, EXIT_WAIT_MS);
    phs_own_end();
    return atomic_load(&S.n_snapshots);
}

static void
exec_failed(void)
{
    char c = 'r';

    if (getpid() != S.pid || !atomic_load(&phs.on))
        return;
    phs_own_begin();
    if (!phs.use_perf && !phs_heap_wanted())
        start_timer();
    S.exec_path[0] = '\0';
    if (write(S.wake_pipe[1], &c, 1) < 0) {
        /* the next snapshot's status says "running" anyway */
    }
    phs_own_end();
}

static void
install_ours(int sig, const struct sigaction *app)
{
    struct sigaction ours;

    /* Ours stands in front but behaves as the service asked: without
     * SA_RESTART its blocking calls must still return EINTR; its mask
     * applies while the handlers run; on the alternate signal stack when
     * its handler asked for it (the Go runtime requires that of every
     * handler, goroutine stacks being small, and its own, which ours may
     * hand a signal to, checks it runs there; the sampler's stacks are
     * not on it: phs_scratch), not otherwise (a program's alternate stack
     * may be too small for the kernel's frame: MINSIGSTKSZ is 2 KiB, the
     * frame ~3 KiB with AVX-512). */
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = sig == SIGTRAP ? on_sigtrap : is_sampling(sig) ? on_timer : on_stop_signal;
    ours.sa_flags = SA_SIGINFO | (app->sa_flags & (SA_RESTART | SA_NODEFER | SA_ONSTACK));
    ours.sa_mask = app->sa_mask;
    if (app->sa_handler == SIG_DFL || app->sa_handler == SIG_IGN) {
        ours.sa_flags |= SA_RESTART; /* nobody else's calls to interrupt */
        sigemptyset(&ours.sa_mask);
    }
    if (is_sampling(sig))
        ours.sa_flags |= SA_RESTART; /* a sample must never make a call fail with EINTR */
    real_sigaction(sig, &ours, NULL);
}

/* Do what the service asked for SIG (APP, copied before anything else
 * could change it): its handler, nothing when ignored, or the default
 * action, re-raised, so the exit status still says "killed by SIG". */
static void
chain(int sig, siginfo_t *si, void *ctx, const struct sigaction *app_now)
{
    int saved = errno;
    struct sigaction app;

    phs_own_begin(); /* ours up to the service's handler */
    app = *app_now;
    if (app.sa_handler == SIG_IGN) {
        phs_own_end();
        return;
    }
    if (app.sa_handler == SIG_DFL) {
        struct sigaction dfl;
        sigset_t set;

        /* Die as the service would have: by this signal. */
        timer_off();
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        real_sigaction(sig, &dfl, NULL);
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        /* Still here (a blocked signal elsewhere?): stay in front. */
        install_ours(sig, &app);
        phs_own_end();
        errno = saved;
        return;
    }
    if (app.sa_flags & SA_RESETHAND) {
        /* One-shot, as asked: the next one takes the default action. */
        memset(&S.app[sig], 0, sizeof S.app[sig]);
        S.app[sig].sa_handler = SIG_DFL;
    }
    phs_own_end();
    errno = saved;
    if (app.sa_flags & SA_SIGINFO)
        app.sa_sigaction(sig, si, ctx);
    else
        app.sa_handler(sig);
}

static void
on_stop_signal(int sig, siginfo_t *si, void *ctx)
{
    int saved = errno;
    struct sigaction app;

    phs_own_begin();
    app = S.app[sig];
    if (getpid() == S.pid && atomic_load(&phs.on))
        request_and_wait(CMD_FINAL, STOP_SIGNAL_WAIT_MS);
    phs_own_end();
    errno = saved;
    chain(sig, si, ctx, &app);
}

/* Interposed: the service's handlers for the signals we stand in front of
 * are recorded and run by ours (for SIGTERM/SIGINT after the final
 * snapshot); everything else passes through. */
int phs_sigaction(int sig, const struct sigaction *act, struct sigaction *old) PHS_LIBC(sigaction);
int
phs_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig > 0 && sig < NSIG && is_ours(sig) && atomic_load(&S.app_set[sig])) {
        if (old)
            *old = S.app[sig];
        if (act == NULL)
            return 0;
        S.app[sig] = *act;
        install_ours(sig, act);
        return 0;
    }
    return real_sigaction(sig, act, old);
}

sighandler_t phs_signal(int sig, sighandler_t handler) PHS_LIBC(signal);
sighandler_t
phs_signal(int sig, sighandler_t handler)
{
    struct sigaction act, old;

    /* glibc's signal() has BSD semantics: restart, no reset. */
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, &act, &old) < 0) {
        errno = EINVAL;
        return SIG_ERR;
    }
    return old.sa_handler;
}

typedef struct thread_arg {
    void *(*fn)(void *);
    void *arg;
} thread_arg;

/* A new thread's first code: note its stack, then become the service's
 * start routine.  A tail call, so no frame of ours stays under the
 * thread's own (the threads test checks the frame under it). */
static void *
thread_start(void *p)
{
    thread_arg a;

    phs_own_begin();
    a = *(thread_arg *)p;
    free(p);
    phs_note_stack();
    phs_own_end();
    return a.fn(a.arg);
}

/* Interposed: a thread started while sampling learns its stack bounds
 * first (thread_start).  Above the tick a new thread is sampled only once
 * the writer has given it a perf event, so the writer is woken at once
 * rather than at its next tick: a thread that lives 20 ms is not missed. */
int phs_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
    void *arg) PHS_LIBC(pthread_create);
int
phs_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    thread_arg *w = NULL;
    int r;

    if (S.real_pthread_create == NULL)
        S.real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
            RTLD_NEXT, "pthread_create");
    if (S.real_pthread_create == NULL)
        return EAGAIN;
    if (atomic_load_explicit(&phs.on, memory_order_relaxed)) {
        phs_own_begin();
        w = malloc(sizeof *w);
        phs_own_end();
    }
    if (w != NULL) {
        w->fn = fn;
        w->arg = arg;
        r = S.real_pthread_create(t, attr, thread_start, w);
        if (r != 0)
            free(w);
    } else {
        r = S.real_pthread_create(t, attr, fn, arg);
    }
    /* One wake-up outstanding at most: a service starting threads in a
     * loop never fills the pipe (nor blocks on it). */
    if (r == 0 && (phs.use_perf || phs.wall) && atomic_load_explicit(&phs.on, memory_order_relaxed) && getpid() == S.pid &&
        atomic_exchange(&S.wake_pending, 1) == 0) {
        char c = 'w';

        phs_own_begin();
        if (write(S.wake_pipe[1], &c, 1) < 0) {
            /* nothing to do: the next tick scans anyway */
        }
        phs_own_end();
    }
    return r;
}

/* Put ours in front of the signals we own, keeping what the service has.
 * An ignored SIGTERM/SIGINT stays ignored (nohup) until the service sets
 * a handler; SIGTRAP gets ours whatever it was, or the samples would be
 * ignored with it. */
static void
take_signals(void)
{
    for (int sig = 1; sig < NSIG; sig++) {
        if (!is_ours(sig) || atomic_load(&S.app_set[sig]))
            continue;
        if (real_sigaction(sig, NULL, &S.app[sig]) < 0)
            continue;
        if (is_sampling(sig) || S.app[sig].sa_handler != SIG_IGN)
            install_ours(sig, &S.app[sig]);
        atomic_store(&S.app_set[sig], 1);
    }
}

/* A handler installed behind our back (a direct syscall, a static libc,
 * the Go runtime at its start): record it and get in front again. */
static void
recheck_signals(void)
{
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction cur;

        if (!is_ours(sig) || !atomic_load(&S.app_set[sig]) || real_sigaction(sig, NULL, &cur) < 0)
            continue;
        if ((cur.sa_flags & SA_SIGINFO) &&
            (cur.sa_sigaction == on_stop_signal || cur.sa_sigaction == on_sigtrap || cur.sa_sigaction == on_timer))
            continue;
        if (!is_sampling(sig) && cur.sa_handler == SIG_IGN && S.app[sig].sa_handler == SIG_IGN)
            continue;
        S.app[sig] = cur;
        if (is_sampling(sig) || cur.sa_handler != SIG_IGN)
            install_ours(sig, &cur);
    }
}

/* ---- the writer thread ---------------------------------------------------- */

static double
mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Why there is no sample, into BUF; "" when there are some.  CPU is the
 * process's less the writer's; what it used before sampling started (the
 * loader, constructors, the unwind tables) could not be sampled. */
static void
no_samples_reason(char *buf, size_t len, uint64_t samples, double cpu, double children)
{
    char kids[200] = "";

    buf[0] = '\0';
    if (S.why[0]) {
        snprintf(buf, len, "profiling disabled: %s", S.why);
        return;
    }
    if (samples > 0)
        return;
    cpu = cpu > S.cpu_sampled0 ? cpu - S.cpu_sampled0 : 0;
    if (children >= 0.01)
        snprintf(kids, sizeof kids, "; its child processes used %.2f CPU-s (PH_SAMPLER_FOLLOW=%s)", children,
                 phs_proc_follow_name());
    if (S.handler_lost)
        snprintf(buf, len, "the service replaced the sampler's SIGPROF handler: no sample arrived%s", kids);
    else if (cpu * (phs.hz_nominal > 0 ? phs.hz_nominal : 1) < 1)
        snprintf(buf, len, "no CPU time used (%.3f CPU-s while sampling, less than one sample period)%s", cpu, kids);
    else
        snprintf(buf, len, "no sample arrived in %.2f CPU-s of sampling: %s blocked or ignored in the threads that ran%s", cpu,
                 phs.perf_sig == SIGTRAP ? "SIGTRAP" : phs.timer_sig ? "the timer's signal" : "SIGPROF", kids);
}

/* sampler-status-<pid>.json: STATE and the counts (see ph_sampler_proc.c). */
static void
write_status(const char *state)
{
    char reason[600], heap[640];
    struct rusage ru;
    phs_status st;

    memset(&st, 0, sizeof st);
    st.state = state;
    st.samples = atomic_load(&phs.samples);
    st.dropped = atomic_load(&phs.dropped);
    st.truncated = atomic_load(&phs.truncated);
    st.cpu_s = phs_cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - (tls_writer ? phs_cpu_seconds(CLOCK_THREAD_CPUTIME_ID) : 0);
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
        st.children_cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    st.hz = phs.hz_nominal;
    st.timer = phs.source;
    st.snapshots = atomic_load(&S.n_snapshots);
    st.last_snapshot = S.last_snapshot;
    st.request = S.request;
    st.python = phs_py_describe();
    st.java = phs_java_describe();
    if (strcmp(state, "exec") == 0)
        snprintf(reason, sizeof reason, "replaced by %s, which %s", S.exec_path[0] ? S.exec_path : "another program",
                 S.exec_handed ? "got the settings (PH_SAMPLER_FOLLOW)"
                               : "is not profiled (PH_SAMPLER_FOLLOW: not a wrapper, or none)");
    else if (phs_heap_wanted() && !S.why[0])
        phs_heap_reason(reason, sizeof reason);
    else
        no_samples_reason(reason, sizeof reason, st.samples, st.cpu_s, st.children_cpu_s);
    if (phs_heap_wanted()) {
        /* heap mode: the samples are the allocations sampled */
        st.samples = phs_heap_samples();
        phs_heap_json(heap, sizeof heap);
        st.heap = heap;
    }
    st.reason = reason;
    phs_status_write(S.dir, &st);
    S.status_at = mono_ms();
}

/* The writer's stack: its lowest usable byte (0: unknown). */
static uintptr_t writer_stack_lo;

static void
note_writer_stack(void)
{
    pthread_attr_t at;
    void *lo;
    size_t size;

    if (pthread_getattr_np(pthread_self(), &at) != 0)
        return;
    if (pthread_attr_getstack(&at, &lo, &size) == 0)
        writer_stack_lo = (uintptr_t)lo;
    pthread_attr_destroy(&at);
}

/* The writer's stack below this call leaves the RSS: what a snapshot's
 * naming, encoding and rendering touched there (60 kB in a C program,
 * 150 kB in a node) is dead once it is written; a page used again comes
 * back zeroed.  Every signal blocked meanwhile: the timer's handler runs
 * on this stack, below here.  The margin covers the calls made from
 * here. */
static void __attribute__((noinline))
drop_writer_stack(void)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), hi;
    sigset_t all, old;

    hi = ((uintptr_t)__builtin_frame_address(0) - 16384) & ~(page - 1);
    if (writer_stack_lo == 0 || hi <= writer_stack_lo)
        return;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    madvise((void *)writer_stack_lo, hi - writer_stack_lo, MADV_DONTNEED);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void *
writer_main(void *arg)
{
    phs_agg *agg = arg;
    int self = (int)syscall(SYS_gettid), n = phs_proc_seq0(), stop = 0;
    char tag[24] = "";
    double born = mono_ms(), next = born + (S.interval_s > 0 ? S.interval_s * 1e3 : 1e18);
    sigset_t prof;

    /* Created with every signal blocked, so the service's signals go to
     * its own threads; SIGPROF alone let in.  ITIMER_PROF counts the
     * writer's CPU time too, and the kernel gives the signal to the thread
     * that used the time unless that thread blocks it: blocked here, the
     * writer's work (symbols, debug info, rendering) would land on some
     * sleeping service thread as samples of wherever it sleeps.  Here it
     * is counted as our own cost.  poll() below may see EINTR: a tick. */
    tls_writer = 1;
    phs_heap_writer_thread();
    note_writer_stack();
    sigemptyset(&prof);
    sigaddset(&prof, phs.timer_sig ? phs.timer_sig : SIGPROF);
    pthread_sigmask(SIG_UNBLOCK, &prof, NULL);

    /* The unwind tables (a few ms for libc-sized programs) here, beside
     * the service rather than in front of it; sampling starts once they
     * exist, so every sample has its callers. */
    if (!phs.unwind_fp_only)
        phs_cfi_refresh();
    /* A CPython in the process: its frames from the first sample on. */
    phs_agg_prepare(agg);
    S.cpu_sampled0 = phs_cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - phs_cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    if (phs_heap_wanted())
        ; /* heap mode: allocations (sampled since start), no timer */
    else if (phs.use_perf && atomic_load(&phs.on))
        phs_perf_scan(self);
    else if (phs.wall && atomic_load(&phs.on))
        phs_wall_scan(self);
    else if (atomic_load(&phs.on) && start_timer() < 0)
        disable("cannot start the profiling timer");
    /* A request already there when we start is served: we have nothing
     * older to show. */
    S.request = phs_request_read(S.dir) > 0 ? phs_request_read(S.dir) : 0;
    if (phs_proc_followed() || getpid() != phs_proc_root())
        snprintf(tag, sizeof tag, "-%d", (int)getpid());
    if (atomic_load(&phs.on))
        write_status("running");

    while (!stop) {
        struct pollfd pfd = { S.wake_pipe[0], POLLIN, 0 };
        int want, final, exec, status = 0, seq, r, tick;
        unsigned cmd;
        long request;
        char cmds[64];
        struct sigaction cur;

        /* A program that ends within a tick would have its Python code
         * objects freed before their first drain names them (the
         * interpreter frees them as it finalizes; ph_sampler_py.c): in a
         * Python's first second, ticks are short. */
        tick = phs_py_active() && mono_ms() - born < YOUNG_MS ? YOUNG_TICK_MS : TICK_MS;
        r = phs.wall && atomic_load(&phs.on) ? phs_wall_poll(&pfd, tick) : poll(&pfd, 1, tick);
        /* Requests up to SEQ are served below: their commands were set
         * before their number, so they are all in CMD (a request whose
         * wake is still on its way, or that came while poll returned,
         * included: served on a timeout as well). */
        seq = atomic_load(&S.flush_seq);
        cmd = atomic_exchange(&S.commands, 0);
        want = (cmd & (CMD_FLUSH | CMD_FINAL | CMD_STOP | CMD_EXEC)) != 0;
        final = (cmd & (CMD_FINAL | CMD_STOP | CMD_EXEC)) != 0;
        stop = (cmd & CMD_STOP) != 0;
        exec = (cmd & CMD_EXEC) != 0;
        if (r > 0) {
            ssize_t got = read(S.wake_pipe[0], cmds, sizeof cmds);

            atomic_store(&S.wake_pending, 0); /* threads started from here on wake us again */
            for (ssize_t i = 0; i < got; i++)
                status |= cmds[i] == 'r'; /* 'w': just wake */
        }
        if (!atomic_load(&phs.on)) {
            phs_perf_close_all();
            phs_wall_close_all();
            atomic_store(&S.done_seq, seq);
            if (stop)
                break;
            continue;
        }
        if (stop || exec) {
            /* (An exec in place may come before we started the timer:
             * it must not survive into the next program.) */
            timer_off();
            phs_perf_close_all(); /* the final snapshot holds everything sampled */
            phs_wall_close_all();
        }
        else if (phs.use_perf)
            phs_perf_scan(self);
        else if (phs.wall)
            phs_wall_scan(self);
        recheck_signals();
        if (!phs.unwind_fp_only)
            phs_cfi_refresh(); /* after a dlopen or dlclose */
        /* With SIGPROF, ours is the only handler the samples can come
         * through; a service that takes SIGPROF gets it (we would only
         * fight it), and its status says so. */
        if (((!phs.use_perf && !phs.timer_sig) || phs.perf_sig == SIGPROF) && real_sigaction(SIGPROF, NULL, &cur) == 0 &&
            !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigprof))
            S.handler_lost = 1;
        phs_agg_drain(agg);
        if (phs_heap_wanted()) {
            phs_heap_py_hook();
            phs_heap_name_py(agg);
        }
        if (S.interval_s > 0 && mono_ms() >= next) {
            want = 1;
            next = mono_ms() + S.interval_s * 1e3;
        }
        request = phs_request_read(S.dir);
        want |= request > S.request;
        if (final && !exec) {
            /* Before our last word: children we handed the settings to
             * write theirs (a wrapper dying of SIGTERM leaves its child
             * to be killed without one). */
            phs_proc_children_snapshot(S.dir, request > S.request ? request : S.request, CHILDREN_WAIT_MS);
            request = phs_request_read(S.dir);
        }
        /* A final snapshot with nothing new since the last one (SIGTERM,
         * then exit) would only repeat it. */
        if (want && (!final || n == 0 || (phs_heap_wanted() ? !phs_heap_final_written() : phs_agg_pending(agg) > 0))) {
            char name[256];
            int w = phs_heap_wanted() ? phs_heap_snapshot(agg, S.dir, S.title, tag, n + 1, final, name, sizeof name)
                                      : phs_agg_snapshot(agg, S.dir, S.title, tag, n + 1, final, name, sizeof name);

            /* Named: libdw's tens of MB go until the next snapshot
             * (before the status, which tells the files are in place). */
            phs_symbols_release(phs_agg_symbols(agg));
            drop_writer_stack();

            if (w < 0) {
                disable("cannot write a snapshot");
            } else if (w == 0) {
                n++;
                atomic_store(&S.n_snapshots, n);
                snprintf(S.last_snapshot, sizeof S.last_snapshot, "%s", name);
            }
        }
        if (request > S.request)
            S.request = request;
        /* After the files: a status that says "served" or "final" means
         * they are in place. */
        /* Every 5 s at least while running: a process killed without a
         * word (SIGKILL) is told by its status no longer being updated. */
        status |= mono_ms() - S.status_at >= STATUS_EVERY_MS;
        if ((want || status) && atomic_load(&phs.on))
            write_status(exec ? "exec" : stop ? "exited" : final ? "terminated" : "running");
        atomic_store(&S.done_seq, seq);
    }
    phs_agg_free(agg);
    phs_java_writer_end();
    atomic_store(&S.writer_running, 0);
    return NULL;
}

/* ---- start and stop --------------------------------------------------- */


/* fork waits until the writer is out of dl_iterate_phdr (a few ms at
 * most, rebuilding tables after a dlopen). */
static void
atfork_prepare(void)
{
    phs_own_begin();
    phs_dl_lock();
    phs_own_end();
}

static void
atfork_parent(void)
{
    phs_dl_unlock();
}

static void
atfork_child(void)
{
    char dir[sizeof S.dir], title[sizeof S.title];

    phs_dl_reset();

    /* The child is not the process being profiled: no samples, no
     * writer, and the perf events of the parent's threads are not its
     * business. */
    atomic_store(&phs.on, 0);
    atomic_store(&S.writer_running, 0);
    phs_perf_forget();
    phs_heap_forked(phs_proc_follows_forks() && S.dir[0] != '\0');
    phs_timer_forget();
    phs_wall_forget();
    if (!phs_proc_follows_forks() || S.dir[0] == '\0')
        return;
    /* PH_SAMPLER_FOLLOW=all: a sampler of its own, from scratch: its own
     * pipes (the parent's are shared), empty tables (the copies hold the
     * parent's samples), counts from zero.  The unwind tables are valid
     * as they are. */
    phs_unwind_forget();
    for (int i = 0; i < 2; i++) {
        close(S.wake_pipe[i]);
        S.wake_pipe[i] = -1;
        if (phs.tables[i] != NULL)
            munmap(phs.tables[i], sizeof *phs.tables[i]);
        phs.tables[i] = NULL;
    }
    atomic_store(&phs.active, 0);
    atomic_store(&S.n_snapshots, 0);
    S.request = 0;
    S.last_snapshot[0] = S.why[0] = S.exec_path[0] = '\0';
    S.handler_lost = 0;
    phs_proc_forked();
    snprintf(dir, sizeof dir, "%s", S.dir);
    snprintf(title, sizeof title, "%s", S.title);
    ph_sampler_start(dir, phs.hz, S.interval_s, title);
}

static void
at_exit(void)
{
    if (getpid() == S.pid && atomic_load(&phs.on)) {
        timer_off();
        request_and_wait(CMD_STOP, EXIT_WAIT_MS);
        atomic_store(&phs.on, 0);
    }
}

/* _exit() (interposed: shells leave so) skips atexit: the same final
 * snapshot.  Async-signal-safe, as _exit is. */
static void
exit_begin(void)
{
    at_exit();
}

static void *
map_zeroed(size_t len)
{
    /* Untouched pages cost nothing: the tables are mostly empty. */
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

static int
start_failed(const char *why)
{
    disable(why);
    return -1;
}

static int
start_sampling(const char *dir, int hz, int interval_s, const char *title)
{
    struct sigaction sa;
    struct stat st;
    sigset_t all, old;
    phs_agg *agg;
    int fd;

    if (atomic_load(&phs.on) || atomic_load(&S.writer_running))
        return -1;
    if (dir == NULL || *dir == '\0' || strlen(dir) >= sizeof S.dir || hz <= 0 || hz > MAX_HZ || interval_s < 0)
        return start_failed("bad arguments (directory, 1..10000 Hz, interval >= 0)");
    if (real_sigaction(SIGPROF, NULL, NULL) < 0)
        return start_failed("cannot find sigaction");
    if (mkdir(dir, 0777) < 0 && errno != EEXIST)
        return start_failed("cannot create the output directory");
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK) < 0)
        return start_failed("the output directory is not a writable directory");
    snprintf(S.dir, sizeof S.dir, "%s", dir);
    snprintf(S.title, sizeof S.title, "%s", title ? title : "");
    S.interval_s = interval_s;
    S.pid = getpid();
    phs_own_find();
    phs_note_stack(); /* threads that exist already, but for this one, are probed */
    if (!S.mode_from_env) {
        const char *m = getenv("PH_SAMPLER_MODE"), *u = getenv("PH_SAMPLER_UNWIND");
        const char *g = getenv("PH_SAMPLER_DEBUGINFO"), *c = getenv("PH_SAMPLER_CLOCK");
        S.wall = c != NULL && strcmp(c, "wall") == 0;
        S.delta = m != NULL && strcmp(m, "delta") == 0;
        phs.unwind_fp_only = u != NULL && strcmp(u, "fp") == 0;
        S.no_debuginfo = g != NULL && strcmp(g, "0") == 0;
        if (phs_heap_configure(getenv("PH_SAMPLER_HEAP"), S.why, sizeof S.why) < 0)
            return start_failed("bad PH_SAMPLER_HEAP");
    }
    if (phs_heap_prepare() < 0)
        return start_failed("cannot allocate the heap tables");
    phs.hz = hz;
    phs.hz_nominal = hz;
    phs.use_perf = 0;
    phs.wall = S.wall;
    atomic_store(&phs.samples, 0);
    atomic_store(&phs.dropped, 0);
    atomic_store(&phs.truncated, 0);
    atomic_store(&phs.perf_failed, 0);
    atomic_store(&phs.own, 0);
    atomic_store(&S.said, 0);
    for (int i = 0; i < 2; i++) {
        if (phs.tables[i] == NULL)
            phs.tables[i] = map_zeroed(sizeof *phs.tables[i]);
        if (phs.tables[i] == NULL)
            return start_failed("cannot allocate the sample tables");
    }
    if (phs_unwind_init() < 0)
        return start_failed("cannot create a pipe");
    if (S.wake_pipe[0] < 0 && pipe2(S.wake_pipe, O_CLOEXEC) < 0)
        return start_failed("cannot create a pipe");
    agg = phs_agg_new(S.delta, !S.no_debuginfo);
    if (agg == NULL)
        return start_failed("cannot allocate");

    /* Above the tick, perf events (SIGTRAP where the kernel delivers it
     * safely, else SIGPROF) or a reported cap. */
    phs.perf_sig = 0;
    if (phs.wall) {
        snprintf(phs.source, sizeof phs.source, "timer_create(CLOCK_MONOTONIC) per thread, SIGRTMAX-%d: wall clock",
                 SIGRTMAX - PHS_TIMER_SIG);
    } else if (hz > PHS_ITIMER_MAX_HZ) {
        fd = phs_perf_choose(hz);
        if (fd == 0) {
            phs.use_perf = 1;
            snprintf(phs.source, sizeof phs.source, "perf_event cpu-clock per thread, %s",
                     phs.perf_sig == SIGTRAP ? "SIGTRAP" : "SIGPROF");
        } else {
            char line[300];

            phs.hz_nominal = PHS_ITIMER_MAX_HZ;
            snprintf(phs.source, sizeof phs.source, "setitimer(ITIMER_PROF), capped at %d Hz: perf_event_open: %s",
                     PHS_ITIMER_MAX_HZ, strerror(-fd));
            snprintf(line, sizeof line, "ph-sampler: %d Hz needs perf_event_open (%s); sampling at %d Hz\n", hz,
                     strerror(-fd), PHS_ITIMER_MAX_HZ);
            say(line);
        }
    } else {
        snprintf(phs.source, sizeof phs.source, "setitimer(ITIMER_PROF)");
    }
    /* Below the tick (or capped there): the POSIX timer on its
     * real-time signal where the kernel delivers it as setitimer does. */
    phs.timer_sig = phs.wall ? PHS_TIMER_SIG : 0;
    if (!phs.use_perf && !phs.wall) {
        char why[120], was[sizeof phs.source];

        if (phs_timer_create(why, sizeof why) == 0) {
            phs.timer_sig = PHS_TIMER_SIG;
            snprintf(was, sizeof was, "%s", phs.source + strlen("setitimer(ITIMER_PROF)"));
            snprintf(phs.source, sizeof phs.source, "timer_create(CLOCK_PROCESS_CPUTIME_ID), SIGRTMAX-%d%s",
                     SIGRTMAX - PHS_TIMER_SIG, was);
        }
    }
    if (phs_scratch_init() < 0) {
        phs_agg_free(agg);
        return start_failed("cannot allocate the handler's buffers");
    }
    if (phs_heap_wanted())
        phs_heap_describe(phs.source, sizeof phs.source);

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (!phs.timer_sig && real_sigaction(SIGPROF, &sa, NULL) < 0) {
        phs_agg_free(agg);
        return start_failed("cannot install the SIGPROF handler");
    }
    /* Before the writer, which enables the perf events. */
    take_signals();
    /* The heap sampler from the service's first allocation on: what it
     * allocates first (its caches, at start) is often what it keeps.  So
     * the unwind tables now, in front of the service (a few ms), not on
     * the writer. */
    if (phs_heap_wanted() && !phs.unwind_fp_only)
        phs_cfi_refresh();

    /* On before the writer starts: it starts the timer, or attaches the
     * perf events, once it has built the unwind tables, if sampling is
     * on by then.  (Nothing signals us before that.) */
    atomic_store(&phs.on, 1);
    /* The writer: all signals blocked, so no handler of ours or the
     * service's ever runs on it. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_store(&S.commands, 0); /* nothing a writer before this one left */
    atomic_store(&S.writer_running, 1);
    if (pthread_create(&S.writer, NULL, writer_main, agg) != 0) {
        atomic_store(&S.writer_running, 0);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        phs_agg_free(agg);
        return start_failed("cannot start the writer thread");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_detach(S.writer);
    phs_heap_enable(); /* after the writer's start: its stack is ours, not the service's */
    if (!S.atfork_done && pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0)
        S.atfork_done = 1;
    if (!S.atexit_done && atexit(at_exit) == 0)
        S.atexit_done = 1;
    return 0;
}

/* The sampler's setup, on the thread that starts it: its own work (what
 * it allocates is not the service's). */
int
ph_sampler_start(const char *dir, int hz, int interval_s, const char *title)
{
    int r;

    phs_own_begin();
    r = start_sampling(dir, hz, interval_s, title);
    phs_own_end();
    return r;
}

/* Loaded into a running JVM (ph_sampler_attach.h): the settings are the
 * agent's options, not the environment's. */
PH_HIDDEN int
phs_attach_start(const phs_attach_opts *o)
{
    S.delta = 0;
    phs.unwind_fp_only = 0;
    S.no_debuginfo = 0;
    S.wall = o->wall;
    S.mode_from_env = 1;
    return ph_sampler_start(o->dir, o->hz, o->interval_s, o->title);
}

int
ph_sampler_flush(void)
{
    if (!atomic_load(&phs.on) || !atomic_load(&S.writer_running))
        return -1;
    request_and_wait(CMD_FLUSH, FLUSH_WAIT_MS);
    return 0;
}

void
ph_sampler_stop(void)
{
    if (!atomic_load(&phs.on))
        return;
    timer_off();
    request_and_wait(CMD_STOP, FLUSH_WAIT_MS);
    atomic_store(&phs.on, 0);
}

/* ---- LD_PRELOAD ----------------------------------------------------------- */

static int
env_int(const char *v, int dflt)
{
    char *end;
    long n;

    if (v == NULL || *v == '\0')
        return dflt;
    errno = 0;
    n = strtol(v, &end, 10);
    return *end == '\0' && errno == 0 && n >= 0 && n <= 1000000 ? (int)n : -1;
}

/* Drop our own entry from LD_PRELOAD (others stay: they are not ours to
 * remove), so programs the service execs are not profiled. */
static void
unpreload(void)
{
    const char *v = getenv("LD_PRELOAD");
    char out[4096] = "", item[4096];
    size_t o = 0;

    if (v == NULL)
        return;
    while (*v) {
        size_t n = strcspn(v, ": ");
        const char *base;

        if (n > 0 && n < sizeof item) {
            memcpy(item, v, n);
            item[n] = '\0';
            base = strrchr(item, '/') ? strrchr(item, '/') + 1 : item;
            if (strncmp(base, "libphsampler", 12) != 0 && o + n + 2 < sizeof out) {
                if (o)
                    out[o++] = ':';
                memcpy(out + o, item, n);
                o += n;
                out[o] = '\0';
            }
        }
        v += n;
        v += strspn(v, ": ");
    }
    if (o)
        setenv("LD_PRELOAD", out, 1);
    else
        unsetenv("LD_PRELOAD");
}

static void
preload(void)
{
    char dir[4096], title[512], bad[200] = "";
    int sample = 1;
    const char *d = getenv("PH_SAMPLER_DIR"), *t = getenv("PH_SAMPLER_TITLE"), *m = getenv("PH_SAMPLER_MODE");
    const char *u = getenv("PH_SAMPLER_UNWIND"), *g = getenv("PH_SAMPLER_DEBUGINFO");
    const char *h = getenv("PH_SAMPLER_HZ"), *iv = getenv("PH_SAMPLER_INTERVAL"), *hp = getenv("PH_SAMPLER_HEAP");
    const char *c = getenv("PH_SAMPLER_CLOCK");
    int hz = env_int(h, 150), interval = env_int(iv, 120);

    if (d == NULL || *d == '\0')
        return; /* inert */
    /* Copy first: unsetenv may free the strings getenv returned.  The
     * first bad setting is named with its value. */
    if (hz <= 0 || hz > MAX_HZ)
        snprintf(bad, sizeof bad, "PH_SAMPLER_HZ=%.40s: want samples per second, 1 to %d", h, MAX_HZ);
    else if (interval < 0)
        snprintf(bad, sizeof bad, "PH_SAMPLER_INTERVAL=%.40s: want whole seconds (0: the final snapshot only)", iv);
    else if (m != NULL && *m != '\0' && strcmp(m, "delta") != 0 && strcmp(m, "cumulative") != 0)
        snprintf(bad, sizeof bad, "PH_SAMPLER_MODE=%.40s: want cumulative or delta", m);
    else if (u != NULL && *u != '\0' && strcmp(u, "fp") != 0 && strcmp(u, "cfi") != 0)
        snprintf(bad, sizeof bad, "PH_SAMPLER_UNWIND=%.40s: want cfi or fp", u);
    else if (g != NULL && *g != '\0' && strcmp(g, "0") != 0 && strcmp(g, "1") != 0)
        snprintf(bad, sizeof bad, "PH_SAMPLER_DEBUGINFO=%.40s: want 1 or 0", g);
    else if (phs_heap_configure(hp, bad, sizeof bad) < 0)
        ; /* said in BAD */
    else if (c != NULL && *c != '\0' && strcmp(c, "cpu") != 0 && strcmp(c, "wall") != 0)
        snprintf(bad, sizeof bad, "PH_SAMPLER_CLOCK=%.40s: want cpu or wall", c);
    else
        phs_proc_init(bad, sizeof bad, &sample); /* PH_SAMPLER_FOLLOW; the settings saved to hand on */
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(title, sizeof title, "%s", t ? t : "");
    S.delta = m != NULL && strcmp(m, "delta") == 0;
    phs.unwind_fp_only = u != NULL && strcmp(u, "fp") == 0;
    S.no_debuginfo = g != NULL && strcmp(g, "0") == 0;
    S.wall = c != NULL && strcmp(c, "wall") == 0;
    S.mode_from_env = 1;
    unpreload();
    unsetenv("PH_SAMPLER_DIR");
    unsetenv("PH_SAMPLER_HZ");
    unsetenv("PH_SAMPLER_INTERVAL");
    unsetenv("PH_SAMPLER_TITLE");
    unsetenv("PH_SAMPLER_MODE");
    unsetenv("PH_SAMPLER_UNWIND");
    unsetenv("PH_SAMPLER_DEBUGINFO");
    unsetenv("PH_SAMPLER_CLOCK");
    unsetenv("PH_SAMPLER_FOLLOW");
    unsetenv("PH_SAMPLER_HEAP");
    unsetenv("PH_SAMPLER_ROOT");
    unsetenv("PH_SAMPLER_SEQ");
    if (bad[0]) {
        /* Said where the harness looks too, if the directory is usable. */
        if (mkdir(dir, 0777) == 0 || errno == EEXIST)
            snprintf(S.dir, sizeof S.dir, "%s", dir);
        disable(bad);
        return;
    }
    if (!sample) {
        /* A pattern this program does not match: said in its status. */
        if (mkdir(dir, 0777) == 0 || errno == EEXIST)
            phs_proc_not_sampled(dir);
        return;
    }
    ph_sampler_start(dir, hz, interval, title);
}

/* The exec and _exit interposers' calls up (ph_sampler_proc.c). */
static const phs_proc_hooks proc_hooks = { exec_begin, exec_failed, exit_begin };

__attribute__((constructor)) static void
preload_start(void)
{
    phs_proc_hooks_set(&proc_hooks);
    phs_frames_java(phs_java_frame);
    phs_frames_py(phs_py_frame);
    phs_own_begin();
    preload();
    phs_own_end();
}
