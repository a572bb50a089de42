/* overhead_loop.c - the sampler overhead workload: a CPU-bound loop 30
 * frames deep doing a fixed amount of work, timed by the caller
 * (tests/bench/bench-flamegraph-overhead.sh).  Prints the process CPU
 * seconds it used, so the caller can turn a sample count into a delivered
 * rate (samples per CPU-second) whatever else the machine is doing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

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
    struct timespec ts;

    for (long r = 0; r < rounds; r++)
        level(30, 1000000);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    printf("cpu_s=%.3f sink=%lu\n", (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, sink & 1);
    return 0;
}
