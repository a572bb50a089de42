/* ph_sampler.c - the sampler's control, signal path and writer thread.
 *
 * Threads and signal context:
 * - SIGPROF (ITIMER_PROF: process CPU time, delivered to the thread that is
 *   running, so every thread is sampled, including ones created later) runs
 *   on_sigprof: it saves errno, walks frame pointers reading memory only
 *   after checking it is readable (a write() of it to a pipe fails with
 *   EFAULT instead of faulting), and adds the stack to a preallocated
 *   open-addressing table with atomic claims.  No malloc, no stdio, no lock;
 *   a sample that finds no slot is dropped and counted.
 * - The writer thread (all signals blocked) wakes every interval, on a
 *   flush request, or at the end, and writes the snapshot files; everything
 *   that allocates or symbolises happens there.
 * - SIGTERM/SIGINT: our handler asks the writer for a final snapshot and
 *   waits for it (bounded), then does what the service asked for: its
 *   handler (we interpose sigaction() and signal() so a handler installed
 *   after us is recorded, not installed), ignoring, or the default action,
 *   re-raised so the exit status says "killed by signal".
 * - fork: the child has no timer and no writer; it is marked off, so its
 *   exit writes nothing.  exec: LD_PRELOAD was removed from the environment.
 */
#include "ph_sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "ph_flame.h"
#include "ph_sampler_int.h"

#define SLOTS 8192
#define PROBES 16

typedef struct slot {
    _Atomic uint32_t state; /* 0 empty, 1 being written, 2 ready */
    uint32_t depth;
    uint64_t hash;
    _Atomic uint64_t count;
    uint64_t reported;      /* count at the last snapshot (delta mode) */
    uintptr_t pcs[PHS_MAX_DEPTH];
} slot;

static struct {
    _Atomic int on;          /* sampling */
    int pid;                 /* the process that started: a fork child is not it */
    char dir[4096];
    char title[512];
    int hz, interval_s, delta;
    slot *slots;
    _Atomic uint64_t samples, dropped;
    int probe_pipe[2];       /* readability checks */
    int wake_pipe[2];        /* to the writer: 'f' flush, 'q' final and quit */
    pthread_t writer;
    int writer_started;
    _Atomic int flush_seq, done_seq;
    int snapshot_n;
    struct timespec started;
    double cpu_started;
    struct sigaction app[NSIG]; /* what the service asked for SIGTERM/SIGINT */
    int app_set[NSIG];
    int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
    int final_written;
} S;

static void
say(const char *msg)
{
    /* One line; write(2) is all that is safe everywhere we may be. */
    ssize_t r = write(2, msg, strlen(msg));
    (void)r;
}

static void
disable(const char *why)
{
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    char line[512];

    if (!atomic_exchange(&S.on, 0))
        return;
    setitimer(ITIMER_PROF, &off, NULL);
    snprintf(line, sizeof line, "ph-sampler: %s; profiling disabled\n", why);
    say(line);
}

/* ---- the signal path -------------------------------------------------- */

static int
readable(const void *addr, uintptr_t *last_page)
{
    uintptr_t page = (uintptr_t)addr & ~(uintptr_t)4095;
    char drain[16];

    if (page == *last_page && ((uintptr_t)addr & 4095) <= 4096 - 16)
        return 1;
    if (write(S.probe_pipe[1], addr, 16) != 16)
        return 0;
    if (read(S.probe_pipe[0], drain, sizeof drain) < 0) {
    }
    *last_page = page;
    return 1;
}

/* Does RET follow a call instruction?  (e8 rel32, or ff /2 with the
 * common register and memory forms.)  Reads only checked memory. */
static int
after_call(uintptr_t ret, uintptr_t *last_page)
{
    const unsigned char *p;

    if (ret < 4096 + 7 || !readable((const void *)(ret - 7), last_page))
        return 0; /* the probe covers ret-7 .. ret+8 */
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

static void
on_sigprof(int sig, siginfo_t *si, void *ctx)
{
    int saved = errno;
    ucontext_t *uc = ctx;
    uintptr_t pcs[PHS_MAX_DEPTH], fp, sp, last_page = 0;
    uint32_t depth = 0;
    uint64_t h = 1469598103934665603ULL;

    (void)sig;
    (void)si;
    if (!atomic_load_explicit(&S.on, memory_order_relaxed) || getpid() != S.pid)
        goto out;
    pcs[depth++] = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    /* A leaf function often has no frame of its own (compilers omit leaf
     * frame pointers): then its return address is at the stack pointer,
     * and the frame pointer still belongs to its caller's caller. */
    if (readable((const void *)sp, &last_page)) {
        uintptr_t top = ((uintptr_t *)sp)[0];
        uintptr_t framed = fp >= sp && fp - sp < (8u << 20) && !(fp & 7) && readable((void *)fp, &last_page)
                               ? ((uintptr_t *)fp)[1]
                               : 0;

        if (top != framed && top != pcs[0] && after_call(top, &last_page))
            pcs[depth++] = top - 1;
    }
    /* A frame pointer must lie above the stack pointer, within 8 MB, be
     * aligned and grow with each frame; anything else ends the walk. */
    while (depth < PHS_MAX_DEPTH) {
        uintptr_t next, ret;

        if (fp < sp || fp - sp > (8u << 20) || (fp & 7) || !readable((void *)fp, &last_page))
            break;
        next = ((uintptr_t *)fp)[0];
        ret = ((uintptr_t *)fp)[1];
        if (ret < 4096)
            break;
        pcs[depth++] = ret - 1; /* inside the call instruction */
        if (next <= fp)
            break;
        fp = next;
    }
    if (depth == PHS_MAX_DEPTH)
        pcs[depth - 1] = PHS_TRUNCATED;
    for (uint32_t i = 0; i < depth; i++) {
        h ^= pcs[i];
        h *= 1099511628211ULL;
    }
    for (uint32_t p = 0; p < PROBES; p++) {
        slot *s = &S.slots[(h + p) & (SLOTS - 1)];
        uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire), zero = 0;

        if (st == 2 && s->hash == h && s->depth == depth && memcmp(s->pcs, pcs, depth * sizeof *pcs) == 0) {
            atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&S.samples, 1, memory_order_relaxed);
            goto out;
        }
        if (st == 0 && atomic_compare_exchange_strong(&s->state, &zero, 1)) {
            s->hash = h;
            s->depth = depth;
            memcpy(s->pcs, pcs, depth * sizeof *pcs);
            atomic_store_explicit(&s->count, 1, memory_order_relaxed);
            atomic_store_explicit(&s->state, 2, memory_order_release);
            atomic_fetch_add_explicit(&S.samples, 1, memory_order_relaxed);
            goto out;
        }
    }
    atomic_fetch_add_explicit(&S.dropped, 1, memory_order_relaxed);
out:
    errno = saved;
}

/* ---- snapshots (writer thread only) ------------------------------------ */

static double
cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct membuf {
    char *data;
    size_t len;
    FILE *f;
} membuf;

static int
write_file_atomic(const char *path, const char *data, size_t len)
{
    char tmp[4200];
    int fd;
    ssize_t w;

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    w = write(fd, data, len);
    if (close(fd) < 0 || w != (ssize_t)len || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int
snapshot(int final)
{
    phs_stack *stacks = malloc(SLOTS * sizeof *stacks);
    phs_symbols *sym = phs_symbols_new();
    char *folded = NULL, stamp[32], path[4200], sub[256];
    size_t flen = 0, n = 0;
    FILE *ff = open_memstream(&folded, &flen);
    struct timespec now;
    struct tm tm;
    double cpu = cpu_now() - S.cpu_started, hz_eff;
    uint64_t total = 0;
    int rc = -1;

    if (stacks == NULL || sym == NULL || ff == NULL)
        goto out;
    for (size_t i = 0; i < SLOTS; i++) {
        slot *s = &S.slots[i];
        uint64_t c;

        if (atomic_load_explicit(&s->state, memory_order_acquire) != 2)
            continue;
        c = atomic_load_explicit(&s->count, memory_order_relaxed);
        if (S.delta) {
            uint64_t d = c - s->reported;
            s->reported = c;
            c = d;
        }
        if (c == 0)
            continue;
        stacks[n++] = (phs_stack){ s->depth, c, s->pcs };
        total += c;
    }
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = stacks[i].depth; k-- > 0;) {
            fputs(phs_symbolise(sym, stacks[i].pcs[k]), ff);
            if (k)
                fputc(';', ff);
        }
        fprintf(ff, " %llu\n", (unsigned long long)stacks[i].count);
    }
    if (fclose(ff) != 0) {
        ff = NULL;
        goto out;
    }
    ff = NULL;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    S.snapshot_n++;
    snprintf(path, sizeof path, "%s/stacks-%s-%d.folded", S.dir, stamp, S.snapshot_n);
    if (write_file_atomic(path, folded, flen) < 0)
        goto out;
    hz_eff = cpu > 0 ? (double)atomic_load(&S.samples) / cpu : 0;
    snprintf(sub, sizeof sub, "%s%s: %llu samples over %.1f s of CPU; requested %d Hz, delivered %.0f Hz; %llu dropped",
             final ? "final" : "interval", S.delta ? " (delta)" : "", (unsigned long long)total, cpu, S.hz, hz_eff,
             (unsigned long long)atomic_load(&S.dropped));
    if (total > 0) {
        char *svg = NULL;
        size_t slen = 0;
        FILE *sf = open_memstream(&svg, &slen);
        ph_flame_opts o;
        ph_error_t err = NULL;
        int r;

        ph_flame_opts_init(&o);
        o.title = S.title[0] ? S.title : "CPU";
        o.subtitle = sub;
        r = sf ? ph_flame_render_folded(folded, flen, &o, sf, NULL, &err) : -1;
        if (sf)
            fclose(sf);
        ph_error_free(&err);
        snprintf(path, sizeof path, "%s/flamegraph-%s-%d.svg", S.dir, stamp, S.snapshot_n);
        if (r == 0 && write_file_atomic(path, svg, slen) < 0) {
            free(svg);
            goto out;
        }
        free(svg);
    }
    snprintf(path, sizeof path, "%s/profile-%s-%d.pb.gz", S.dir, stamp, S.snapshot_n);
    if (phs_write_pprof(path, stacks, n, sym, S.hz, (int64_t)S.started.tv_sec * 1000000000LL + S.started.tv_nsec,
                        (int64_t)((double)(now.tv_sec - S.started.tv_sec) * 1e9 + (double)(now.tv_nsec - S.started.tv_nsec))) < 0)
        goto out;
    rc = 0;
out:
    if (ff)
        fclose(ff);
    free(folded);
    free(stacks);
    phs_symbols_free(sym);
    if (rc < 0)
        disable("cannot write a snapshot");
    return rc;
}

static void *
writer_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct timeval tv = { S.interval_s > 0 ? S.interval_s : 3600, 0 };
        fd_set rd;
        char c = 0;
        int r;

        FD_ZERO(&rd);
        FD_SET(S.wake_pipe[0], &rd);
        r = select(S.wake_pipe[0] + 1, &rd, NULL, NULL, &tv);
        if (r > 0 && read(S.wake_pipe[0], &c, 1) != 1)
            c = 0;
        if (r == 0 && S.interval_s <= 0)
            continue;
        if (c == 'q') {
            if (!S.final_written) {
                S.final_written = 1;
                snapshot(1);
            }
            atomic_store(&S.done_seq, atomic_load(&S.flush_seq));
            continue; /* stay: the process decides when to end */
        }
        if (atomic_load(&S.on))
            snapshot(0);
        atomic_store(&S.done_seq, atomic_load(&S.flush_seq));
    }
    return NULL;
}

/* Ask the writer for a snapshot and wait for it, at most TIMEOUT_MS.
 * Async-signal-safe: write, nanosleep and atomics only. */
static void
request_and_wait(char what, int timeout_ms)
{
    int seq = atomic_fetch_add(&S.flush_seq, 1) + 1;
    struct timespec ts = { 0, 5 * 1000 * 1000 };

    if (!S.writer_started || write(S.wake_pipe[1], &what, 1) != 1)
        return;
    for (int waited = 0; waited < timeout_ms && atomic_load(&S.done_seq) < seq; waited += 5)
        nanosleep(&ts, NULL);
}

/* ---- SIGTERM/SIGINT: flush, then what the service asked for ------------ */

static void
on_stop_signal(int sig, siginfo_t *si, void *ctx)
{
    int saved = errno;
    struct sigaction *app = &S.app[sig];

    if (getpid() == S.pid && atomic_load(&S.on)) {
        struct itimerval off = { { 0, 0 }, { 0, 0 } };

        request_and_wait('q', 5000);
        if (app->sa_handler == SIG_DFL)
            setitimer(ITIMER_PROF, &off, NULL);
    }
    errno = saved;
    if (app->sa_handler == SIG_IGN)
        return;
    if (app->sa_handler == SIG_DFL) {
        struct sigaction dfl;
        sigset_t set;

        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        S.real_sigaction(sig, &dfl, NULL);
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        return;
    }
    if (app->sa_flags & SA_SIGINFO)
        app->sa_sigaction(sig, si, ctx);
    else
        app->sa_handler(sig);
}

static int
is_stop_signal(int sig)
{
    return sig == SIGTERM || sig == SIGINT;
}

/* Interposed: the service's SIGTERM/SIGINT handlers are recorded and run
 * by ours after the final snapshot; everything else passes through. */
int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (S.real_sigaction == NULL)
        S.real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
    if (S.real_sigaction == NULL) {
        errno = ENOSYS;
        return -1;
    }
    if (sig > 0 && sig < NSIG && is_stop_signal(sig) && S.app_set[sig]) {
        struct sigaction ours;

        if (old)
            *old = S.app[sig];
        if (act == NULL)
            return 0;
        S.app[sig] = *act;
        /* Ours stays in front but behaves as the service asked: without
         * SA_RESTART its blocking calls must return EINTR so it sees its
         * own flag; its mask applies while handlers run. */
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = on_stop_signal;
        ours.sa_flags = SA_SIGINFO | (act->sa_flags & (SA_RESTART | SA_NODEFER | SA_ONSTACK));
        ours.sa_mask = act->sa_mask;
        return S.real_sigaction(sig, &ours, NULL);
    }
    return S.real_sigaction(sig, act, old);
}

sighandler_t
signal(int sig, sighandler_t handler)
{
    struct sigaction act, old;

    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}

/* ---- start and stop --------------------------------------------------- */

static void
atfork_child(void)
{
    atomic_store(&S.on, 0);
    S.writer_started = 0; /* the writer thread does not exist here */
}

static void
at_exit(void)
{
    if (getpid() == S.pid && atomic_load(&S.on))
        ph_sampler_stop();
}

int
ph_sampler_start(const char *dir, int hz, int interval_s, const char *title)
{
    struct sigaction sa;
    struct itimerval it;
    sigset_t all, old;
    struct stat st;

    if (atomic_load(&S.on))
        return -1;
    if (S.real_sigaction == NULL)
        S.real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
    if (S.real_sigaction == NULL) {
        say("ph-sampler: cannot find sigaction; profiling disabled\n");
        return -1;
    }
    if (dir == NULL || strlen(dir) >= sizeof S.dir || hz <= 0 || hz > 10000) {
        say("ph-sampler: bad arguments; profiling disabled\n");
        return -1;
    }
    if (stat(dir, &st) < 0 && mkdir(dir, 0777) < 0 && errno != EEXIST) {
        say("ph-sampler: cannot create the output directory; profiling disabled\n");
        return -1;
    }
    snprintf(S.dir, sizeof S.dir, "%s", dir);
    snprintf(S.title, sizeof S.title, "%s", title ? title : "");
    S.hz = hz;
    S.interval_s = interval_s;
    S.pid = getpid();
    S.slots = calloc(SLOTS, sizeof *S.slots);
    if (S.slots == NULL || pipe2(S.probe_pipe, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(S.wake_pipe, O_CLOEXEC) < 0) {
        say("ph-sampler: cannot allocate; profiling disabled\n");
        return -1;
    }
    clock_gettime(CLOCK_REALTIME, &S.started);
    S.cpu_started = cpu_now();

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&S.writer, NULL, writer_main, NULL) != 0) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        say("ph-sampler: cannot start the writer thread; profiling disabled\n");
        return -1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_detach(S.writer);
    S.writer_started = 1;
    pthread_atfork(NULL, NULL, atfork_child);
    atexit(at_exit);

    /* SIGTERM/SIGINT: keep what the service had, put ours in front. */
    for (int sig = 1; sig < NSIG; sig++) {
        if (!is_stop_signal(sig))
            continue;
        S.real_sigaction(sig, NULL, &S.app[sig]);
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_stop_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigfillset(&sa.sa_mask);
        if (S.app[sig].sa_handler != SIG_IGN)
            S.real_sigaction(sig, &sa, NULL);
        S.app_set[sig] = 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    atomic_store(&S.on, 1);
    if (S.real_sigaction(SIGPROF, &sa, NULL) < 0) {
        disable("cannot install the SIGPROF handler");
        return -1;
    }
    it.it_interval.tv_sec = 0;
    it.it_interval.tv_usec = 1000000 / hz > 0 ? 1000000 / hz : 1;
    it.it_value = it.it_interval;
    if (setitimer(ITIMER_PROF, &it, NULL) < 0) {
        disable("cannot start the profiling timer");
        return -1;
    }
    return 0;
}

int
ph_sampler_flush(void)
{
    if (!atomic_load(&S.on))
        return -1;
    request_and_wait('f', 30000);
    return 0;
}

void
ph_sampler_stop(void)
{
    struct itimerval off = { { 0, 0 }, { 0, 0 } };

    if (!atomic_load(&S.on))
        return;
    setitimer(ITIMER_PROF, &off, NULL);
    request_and_wait('q', 30000);
    atomic_store(&S.on, 0);
}

static int
env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    char *end;
    long n;

    if (v == NULL || *v == '\0')
        return dflt;
    n = strtol(v, &end, 10);
    return *end == '\0' && n >= 0 && n < 1000000 ? (int)n : dflt;
}

__attribute__((constructor)) static void
preload_start(void)
{
    char dir[4096], title[512];
    const char *d = getenv("PH_SAMPLER_DIR"), *t = getenv("PH_SAMPLER_TITLE"), *m = getenv("PH_SAMPLER_MODE");
    int hz, interval;

    if (d == NULL || *d == '\0')
        return;
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(title, sizeof title, "%s", t ? t : "");
    hz = env_int("PH_SAMPLER_HZ", 150);
    interval = env_int("PH_SAMPLER_INTERVAL", 120);
    S.delta = m != NULL && strcmp(m, "delta") == 0;
    /* Children this service execs must not be profiled by accident. */
    unsetenv("LD_PRELOAD");
    unsetenv("PH_SAMPLER_DIR");
    unsetenv("PH_SAMPLER_HZ");
    unsetenv("PH_SAMPLER_INTERVAL");
    unsetenv("PH_SAMPLER_TITLE");
    unsetenv("PH_SAMPLER_MODE");
    ph_sampler_start(dir, hz, interval, title);
}
