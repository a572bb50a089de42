/* ph_sampler_heapmath.h - the heap sampler's arithmetic, alone so the unit
 * tests run the very code the allocation path runs.
 *
 * Sampling is a Poisson process over the bytes a thread allocates, as in
 * tcmalloc and jemalloc (and Go's runtime.MemProfileRate): the distance
 * to the next sampled byte is drawn from an exponential distribution of
 * mean T, an allocation is sampled when a sampled byte falls inside it,
 * and the distance is drawn again (as often as it takes to get past the
 * allocation: the process is memoryless, so a huge allocation holding
 * several sampled bytes is one sample, and nothing carries over).
 *
 * So an allocation of S bytes is sampled with probability 1 - exp(-S/T),
 * and each sampled one stands for 1 / (1 - exp(-S/T)) allocations of its
 * size: S / (1 - exp(-S/T)) bytes (pprof's and Go's scaleHeapSample).
 * The estimate is unbiased for every size: for S << T it tends to T (one
 * sample per T bytes), for S >> T to S itself (always sampled).
 *
 * Everything here is pure and allocation-free: it runs inside malloc.
 */
#ifndef PH_SAMPLER_HEAPMATH_H
#define PH_SAMPLER_HEAPMATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* xorshift64*: a thread's own generator (seeded non-zero). */
static inline uint64_t
phs_heap_rand(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1DULL;
}

/* The bytes to the next sampled byte: exponential with MEAN, at least 1. */
static inline int64_t
phs_heap_interval(uint64_t *rng, double mean)
{
    /* u in (0, 1]: 53 random bits, never 0 (log(0)) */
    double u = (double)((phs_heap_rand(rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
    double d = -log(u) * mean;

    return d < 1 ? 1 : d > 4e18 ? (int64_t)4e18 : (int64_t)d;
}

/* One allocation of N bytes against the thread's countdown *LEFT: 1 when
 * it is sampled (and *LEFT drawn again until it is past it), else 0. */
static inline int
phs_heap_step(int64_t *left, uint64_t *rng, double mean, size_t n)
{
    *left -= (int64_t)(n > (size_t)INT64_MAX / 2 ? (size_t)INT64_MAX / 2 : n);
    if (*left > 0)
        return 0;
    do
        *left += phs_heap_interval(rng, mean);
    while (*left <= 0);
    return n > 0;
}

/* How many allocations of SIZE bytes one sample stands for, at MEAN. */
static inline double
phs_heap_weight(double size, double mean)
{
    return size > 0 ? 1.0 / -expm1(-size / mean) : 0;
}

/* The expected number of samples of COUNT allocations of SIZE bytes. */
static inline double
phs_heap_expected(double count, double size, double mean)
{
    return size > 0 ? count * -expm1(-size / mean) : 0;
}

#endif
