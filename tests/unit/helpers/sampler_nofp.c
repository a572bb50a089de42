/* sampler_nofp.c - workloads built WITHOUT frame pointers (the Makefile
 * compiles this file with -O2 -fomit-frame-pointer), for the sampler's
 * unwinding tests:
 *   chain S   main -> nofp_outer -> nofp_middle -> nofp_hot, spinning S seconds
 *   qsort S   main -> libc's qsort -> nofp_cmp, sorting for S seconds: the
 *             comparator's callers are inside libc, which has no frame
 *             pointers either
 *   dlopen S  the chain, with a library loaded and unloaded between rounds,
 *             so the unwind tables are rebuilt while samples arrive
 * Every function keeps its own stack frame (a local array) and none is a
 * tail call, so the callers are really on the stack.  SECONDS are of CPU
 * time: a busy machine stretches the run, it does not thin the samples. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
nofp_hot(long n)
{
    volatile unsigned long local[8] = { 0 };

    for (long i = 0; i < n; i++)
        local[i & 7] = local[(i + 1) & 7] * 6364136223846793005UL + (unsigned long)i;
    sink += local[3];
}

__attribute__((noinline)) static void
nofp_middle(long n)
{
    volatile char pad[200];

    memset((char *)pad, (int)n, sizeof pad);
    nofp_hot(n);
    sink += (unsigned long)pad[n % 200];
}

__attribute__((noinline)) static void
nofp_outer(long n)
{
    volatile char pad[5000];

    memset((char *)pad, 1, sizeof pad);
    nofp_middle(n);
    sink += (unsigned long)pad[n % 5000];
}

__attribute__((noinline)) static int
nofp_cmp(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

    for (int i = 0; i < 40; i++) { /* a slow comparator: the time is spent here */
        x = x * 2862933555777941757UL + 3037000493UL;
        y = y * 2862933555777941757UL + 3037000493UL;
    }
    sink += x ^ y;
    return (*(const unsigned long *)a > *(const unsigned long *)b) - (*(const unsigned long *)a < *(const unsigned long *)b);
}

int
main(int argc, char **argv)
{
    double secs = argc > 2 ? atof(argv[2]) : 2, until = now() + secs;

    if (argc < 2) {
        fprintf(stderr, "usage: sampler_nofp chain|qsort|dlopen SECONDS\n");
        return 2;
    }
    if (strcmp(argv[1], "chain") == 0) {
        while (now() < until)
            nofp_outer(2000000);
    } else if (strcmp(argv[1], "dlopen") == 0) {
        while (now() < until) {
            void *h = dlopen("libresolv.so.2", RTLD_NOW | RTLD_LOCAL);

            if (h == NULL) {
                fprintf(stderr, "dlopen: %s\n", dlerror());
                return 1;
            }
            nofp_outer(600000);
            dlclose(h);
        }
    } else if (strcmp(argv[1], "qsort") == 0) {
        size_t n = 20000;
        unsigned long *v = malloc(n * sizeof *v);

        if (v == NULL)
            return 1;
        while (now() < until) {
            for (size_t i = 0; i < n; i++)
                v[i] = (i * 2654435761UL) % 1000003;
            qsort(v, n, sizeof *v, nofp_cmp);
        }
        free(v);
    } else {
        return 2;
    }
    printf("%lu\n", sink & 1);
    return 0;
}
