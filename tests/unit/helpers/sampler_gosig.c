/* sampler_gosig.c - a service that treats signals the way the Go runtime
 * does at its start (runtime.initsig), for the sampler tests:
 *   sampler_gosig S
 * After the preloaded sampler's constructor has run, it gives its thread a
 * 32 KiB alternate signal stack (Go's gsignal stack; a PROT_NONE page
 * under it, so a handler that needs more faults), and installs a handler
 * of its own, SA_ONSTACK, for every signal but the synchronous faults,
 * through libc's own sigaction (the Go runtime makes the raw system call:
 * no interposer sees it).  Like Go's, the handler takes asynchronous
 * signals itself and forwards none of them.  It spins S CPU-seconds in
 * go_hot, then queues itself each real-time signal and SIGPROF once
 * (sigqueue, value 42) and waits for each to reach its handler, then
 * spins S/4 CPU-seconds more.  It prints what it saw, and the most of
 * the alternate stack any handler used (and the sampler's handler alone:
 * what sampling used less the kernel's frame), and exits 0 when every queued
 * signal arrived exactly once, on the alternate stack, and no signal it
 * did not send (a profiler's timer) reached it during the last spin.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ALT_SIZE (32u << 10)
#define PAGE 4096u
#define MARK 0xa5

static volatile sig_atomic_t mine[NSIG], stray[NSIG], off_stack;
static volatile int counting_strays;
static uintptr_t alt_lo, alt_hi;
static volatile uintptr_t frame_lo = UINTPTR_MAX; /* the lowest context the kernel put on the stack */
static volatile unsigned long sink;

static double
cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
go_hot(void)
{
    for (long i = 0; i < 1000000; i++)
        sink = sink * 6364136223846793005UL + (unsigned long)i;
}

static void
on_signal(int sig, siginfo_t *si, void *ctx)
{
    char here;

    if ((uintptr_t)ctx < frame_lo)
        frame_lo = (uintptr_t)ctx;
    if ((uintptr_t)&here < alt_lo || (uintptr_t)&here >= alt_hi)
        off_stack++;
    if (si->si_code == SI_QUEUE && si->si_value.sival_int == 42)
        mine[sig]++;
    else if (counting_strays)
        stray[sig]++;
}

/* How much of the alternate stack at LO was ever written: from its top
 * down to the lowest byte that lost the mark. */
static size_t
stack_used(const unsigned char *lo)
{
    size_t used = ALT_SIZE;

    while (used > 0 && lo[ALT_SIZE - used] == MARK)
        used--;
    return used;
}

static int
is_fault(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGKILL || sig == SIGSTOP;
}

int
main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1;
    int (*libc_sigaction)(int, const struct sigaction *, struct sigaction *);
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    unsigned char *map;
    stack_t ss;
    struct sigaction sa;
    size_t used, sampling;
    int bad = 0;

    libc_sigaction = libc ? (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(libc, "sigaction") : NULL;
    if (libc_sigaction == NULL)
        return 2;
    map = mmap(NULL, ALT_SIZE + PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED || mprotect(map, PAGE, PROT_NONE) < 0)
        return 3;
    memset(map + PAGE, MARK, ALT_SIZE);
    alt_lo = (uintptr_t)map + PAGE;
    alt_hi = alt_lo + ALT_SIZE;
    ss.ss_sp = map + PAGE;
    ss.ss_size = ALT_SIZE;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) < 0)
        return 4;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigfillset(&sa.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (!is_fault(sig))
            libc_sigaction(sig, &sa, NULL); /* 32 and 33 are glibc's: refused */

    while (cpu_seconds() < secs)
        go_hot();
    sampling = stack_used(map + PAGE);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX + 1; sig++) {
        int s = sig > SIGRTMAX ? SIGPROF : sig;
        union sigval v = { .sival_int = 42 };

        if (sigqueue(getpid(), s, v) < 0)
            return 5;
        for (int i = 0; i < 20000 && mine[s] == 0; i++) /* a hang bound, 20 s */
            usleep(1000);
    }
    counting_strays = 1;
    for (double until = cpu_seconds() + secs / 4; cpu_seconds() < until;)
        go_hot();
    counting_strays = 0;

    used = stack_used(map + PAGE);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX + 1; sig++) {
        int s = sig > SIGRTMAX ? SIGPROF : sig;

        if (mine[s] != 1 || stray[s] != 0) {
            printf("signal %d: %d queued seen, %d others\n", s, (int)mine[s], (int)stray[s]);
            bad = 1;
        }
    }
    printf("alternate stack used: %zu of %u bytes; while only sampled %zu: the kernel's frame %zu, the sampler's "
           "handler %zu; handlers off it: %d\n",
           used, ALT_SIZE, sampling, (size_t)(alt_hi - frame_lo), sampling - (size_t)(alt_hi - frame_lo),
           (int)off_stack);
    return bad || off_stack ? 1 : 0;
}
