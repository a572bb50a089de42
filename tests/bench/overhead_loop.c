/* overhead_loop.c - the sampler overhead workload: a CPU-bound loop 30
 * frames deep, a fixed amount of work, timed by the caller. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void
level(int depth, long n)
{
    if (depth > 0) {
        level(depth - 1, n);
        sink++;
        return;
    }
    for (long i = 0; i < n; i++)
        sink = sink * 6364136223846793005UL + (unsigned long)i;
}

int
main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 400;

    for (long r = 0; r < rounds; r++)
        level(30, 1000000);
    printf("%lu\n", sink & 1);
    return 0;
}
