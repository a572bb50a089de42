/* heap_alloc: an allocation-heavy workload for tests/bench/bench-heap.sh.
 * A live set of SLOTS blocks (16 B to 1 KiB, mostly small, as a service's
 * objects are) is replaced one at a time for ITERS iterations, every 64th
 * iteration also a 64 KiB buffer allocated and freed; build_cache keeps
 * 8 MiB from the start, so the peak is known: 8 MiB + the live set.
 * Prints the loop's own wall time and its thread's CPU time (steadier
 * on a shared machine; the sampler's writer thread is not in it).  Usage: heap_alloc [ITERS] [SLOTS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *cache[128];

__attribute__((noinline)) static void
build_cache(void)
{
    for (int i = 0; i < 128; i++) {
        cache[i] = malloc(65536);
        memset(cache[i], 1, 65536);
    }
}

__attribute__((noinline)) static void *
new_object(unsigned long long *x)
{
    size_t n;

    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    n = 16 + (*x % 64) * ((*x >> 8) % 16 == 0 ? 16 : 1); /* 16..79 B mostly, up to 1 KiB */
    return malloc(n);
}

__attribute__((noinline)) static void
buffer_round(void)
{
    char *b = malloc(65536);

    b[0] = 1;
    b[65535] = 2;
    free(b);
}

int
main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 5000000, slots = argc > 2 ? atol(argv[2]) : 100000;
    void **live = calloc((size_t)slots, sizeof *live);
    unsigned long long x = 88172645463325252ULL;
    struct timespec t0, t1, c0, c1;

    if (live == NULL)
        return 1;
    build_cache();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    for (long i = 0; i < iters; i++) {
        long k = (long)(x % (unsigned long long)slots);

        free(live[k]);
        live[k] = new_object(&x);
        if (i % 64 == 0)
            buffer_round();
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("heap_alloc: %ld iterations in %.3f s, %.3f CPU-s\n", iters,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9);
    return 0;
}
