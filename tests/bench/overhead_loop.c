/* overhead_loop.c - the sampler overhead workload: a CPU-bound loop 30
 * frames deep doing a fixed amount of work, timed by the caller
 * (tests/bench/bench-flamegraph-overhead.sh).  Prints the process CPU
 * seconds it used, so the caller can turn a sample count into a delivered
 * rate (samples per CPU-second) whatever else the machine is doing.
 *
 * With OVERHEAD_FLOOR_HZ=N it takes SIGPROF itself at N Hz (setitimer
 * ITIMER_PROF, a handler that only counts): the cost of the timer and the
 * signal alone, which no signal-based profiler can go below, printed as
 * floor_samples=. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;
static volatile sig_atomic_t floor_samples;

static void
on_prof(int sig)
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

int
main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 400;
    const char *floor_hz = getenv("OVERHEAD_FLOOR_HZ");
    struct timespec ts;

    if (floor_hz != NULL && atoi(floor_hz) > 0) {
        struct itimerval it = { { 0, 1000000 / atoi(floor_hz) }, { 0, 1000000 / atoi(floor_hz) } };
        struct sigaction sa = { .sa_handler = on_prof, .sa_flags = SA_RESTART };

        sigaction(SIGPROF, &sa, NULL);
        setitimer(ITIMER_PROF, &it, NULL);
    }
    for (long r = 0; r < rounds; r++)
        level(30, 1000000);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    printf("cpu_s=%.3f sink=%lu floor_samples=%d\n", (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, sink & 1,
           (int)floor_samples);
    return 0;
}
