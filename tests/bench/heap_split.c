/* heap_split: the malloc-heavy program of issue 31 for
 * tests/bench/bench-heap.sh.  CALLS/2 mallocs of mixed sizes (16 B to
 * 4 KiB) and as many frees, through a live set of SLOTS blocks:
 * alloc_three asks for 3 bytes of every 4, alloc_one for the fourth (the
 * same sizes, three calls to one), so the bytes split 75/25 between them
 * in every view: allocated, in use at the end, at the peak.  The peak is
 * reached when the live set is full, then a sixth of it is freed.  It
 * prints the loop's thread CPU time and its own exact peak (requested
 * bytes, its two arrays included).  Usage: heap_split [CALLS] [SLOTS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long live_bytes, peak_bytes;

static size_t
size_for(unsigned long long *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return 16 + (*x % 256) * ((*x >> 9) % 8 == 0 ? 16 : 1); /* 16..271 B mostly, up to 4 KiB */
}

__attribute__((noipa)) static void *
alloc_three(size_t n)
{
    void *p = malloc(n);

    __asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call: this frame stays (noipa: nor folded into its twin) */
    return p;
}

__attribute__((noipa)) static void *
alloc_one(size_t n)
{
    void *p = malloc(n);

    __asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call: this frame stays (noipa: nor folded into its twin) */
    return p;
}

int
main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 4000000, slots = argc > 2 ? atol(argv[2]) : 200000;
    void **live = calloc((size_t)slots, sizeof *live);
    size_t *sz = calloc((size_t)slots, sizeof *sz);
    unsigned long long x = 88172645463325252ULL;
    struct timespec c0, c1;
    long k = 0;

    if (live == NULL || sz == NULL)
        return 1;
    live_bytes = peak_bytes = (long long)(2 * (size_t)slots * sizeof *sz); /* the two arrays */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    for (long i = 0; i < calls / 2; i++) {
        size_t n = size_for(&x);

        /* a full live set: replace at random; a sixth freed once, midway */
        if (i == calls / 4)
            for (long j = 0; j < slots / 6; j++) {
                free(live[j]);
                live_bytes -= (long long)sz[j];
                live[j] = NULL;
                sz[j] = 0;
            }
        k = i < slots ? i : (long)(x % (unsigned long long)slots);
        if (live[k] != NULL) {
            free(live[k]);
            live_bytes -= (long long)sz[k];
        }
        live[k] = i % 4 == 3 ? alloc_one(n) : alloc_three(n);
        sz[k] = n;
        live_bytes += (long long)n;
        if (live_bytes > peak_bytes)
            peak_bytes = live_bytes;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    printf("heap_split: %ld calls, peak %lld B, %.3f CPU-s\n", calls, peak_bytes,
           (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9);
    return 0;
}
