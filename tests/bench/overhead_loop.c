/* overhead_loop.c - the sampler overhead workload: a CPU-bound loop 30
 * frames deep doing a fixed amount of work, timed by the caller
 * (tests/bench/bench-flamegraph-overhead.sh).  Prints the process CPU
 * seconds it used, so the caller can turn a sample count into a delivered
 * rate (samples per CPU-second) whatever else the machine is doing.
 *
 * With OVERHEAD_FLOOR_HZ=N it takes N samples per CPU-second itself, with
 * a handler that only counts: the cost of the timer and the signal alone,
 * which no signal-based profiler can go below, printed as floor_samples=.
 * OVERHEAD_FLOOR_SOURCE says how, as the sampler would do it:
 *   itimer        setitimer(ITIMER_PROF), SIGPROF (the default; the kernel
 *                 tick caps it, 250 Hz here)
 *   perf-sigprof  a perf_event_open cpu-clock event on the thread, its
 *                 overflows signalled as SIGPROF through O_ASYNC
 *   perf-sigtrap  the same event with attr.sigtrap: SIGTRAP sent to the
 *                 thread itself on its way back to user space
 * floor_source= echoes it, or says why the event was refused.
 *
 * start_s= is the main thread's CPU time at main()'s entry: what loading
 * (and a preloaded profiler's constructor) cost on the service's own
 * path before its first line runs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

static volatile unsigned long sink;
static volatile sig_atomic_t floor_samples;

static void
on_sample(int sig)
{
    (void)sig;
    floor_samples++;
}

__attribute__((noinline)) static void
level(int depth, long n)
{
    if (depth > 0) {
        level(depth - 1, n);
        sink++; /* not a tail call: every level keeps its frame */
        return;
    }
    for (long i = 0; i < n; i++)
        sink = sink * 6364136223846793005UL + (unsigned long)i;
}

/* A cpu-clock event on this thread at HZ; 0 or -errno. */
static int
perf_floor(int hz, int trap)
{
    struct perf_event_attr a;
    struct f_owner_ex owner = { F_OWNER_TID, (int)syscall(SYS_gettid) };
    int fd;

    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = 1000000000ULL / (unsigned)hz;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.sigtrap = trap;
    a.remove_on_exec = trap;
    fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (!trap && (fcntl(fd, F_SETFL, O_ASYNC) < 0 || fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
                  fcntl(fd, F_SETOWN_EX, &owner) < 0))
        return -errno;
    return 0;
}

int
main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 400;
    const char *floor_hz = getenv("OVERHEAD_FLOOR_HZ"), *how = getenv("OVERHEAD_FLOOR_SOURCE");
    char source[200] = "none";
    struct timespec ts, start;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);

    if (floor_hz != NULL && atoi(floor_hz) > 0) {
        int hz = atoi(floor_hz), r = 0;
        struct sigaction sa = { .sa_handler = on_sample, .sa_flags = SA_RESTART };

        if (how == NULL || *how == '\0')
            how = "itimer";
        sigaction(strcmp(how, "perf-sigtrap") == 0 ? SIGTRAP : SIGPROF, &sa, NULL);
        if (strcmp(how, "itimer") == 0) {
            struct itimerval it = { { 0, 1000000 / hz }, { 0, 1000000 / hz } };
            r = setitimer(ITIMER_PROF, &it, NULL) < 0 ? -errno : 0;
        } else if (strcmp(how, "perf-sigprof") == 0 || strcmp(how, "perf-sigtrap") == 0) {
            r = perf_floor(hz, strcmp(how, "perf-sigtrap") == 0);
        } else {
            fprintf(stderr, "overhead_loop: OVERHEAD_FLOOR_SOURCE=%s: want itimer, perf-sigprof or perf-sigtrap\n", how);
            return 2;
        }
        snprintf(source, sizeof source, "%s%s%s", how, r < 0 ? ":refused:" : "", r < 0 ? strerror(-r) : "");
    }
    for (long r = 0; r < rounds; r++)
        level(30, 1000000);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    printf("cpu_s=%.3f start_s=%.6f sink=%lu floor_samples=%d floor_source=%s\n",
           (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, (double)start.tv_sec + (double)start.tv_nsec / 1e9,
           sink & 1, (int)floor_samples, source);
    return 0;
}
