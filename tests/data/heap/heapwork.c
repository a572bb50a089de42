/* heapwork: the heap mode's fidelity workload (tests/68-heap.bats and
 * tests/unit/test_sampler_heap.c).  keep_three_mib keeps 3 MiB live,
 * keep_one_mib 1 MiB, churn_hundred_mib allocates and frees 100 MiB;
 * then it says "heapwork: ready" and waits for SIGTERM (exit 0), so what
 * is in use at the end is 3 : 1 : 0 and what was allocated 3 : 1 : 100.
 * Sizes vary (64 B to 64 KiB) so the estimates' weights are exercised;
 * calloc, realloc, posix_memalign and aligned_alloc are used too.
 * `heapwork once` exits at once after the work, without waiting.
 * `heapwork threads` instead runs 8 threads at once, each keeping 256 KiB
 * from thread_keeps and churning 16 MiB through thread_churns (the
 * sampler's tables claimed concurrently), and exits.
 * `heapwork peak` keeps 1 MiB from keep_one_mib, then burst_eight_mib
 * holds 8 MiB at once and frees it, and exits: at the peak of what is in
 * use burst_eight_mib holds 8 of 9 MiB, at the end nothing.
 * `heapwork grow` keeps 1 MiB from keep_one_mib, then grow_four_mib
 * allocates 256 blocks of 4 KiB, each with a small one after it
 * (fence_block: a realloc cannot grow the block where it is), and
 * reallocs each to 16 KiB, kept: it moves, and the addresses it leaves are
 * never handed out again.  In use at the end: 1 MiB, 4 MiB under
 * grow_four_mib's realloc and nothing under its malloc.  It says
 * "heapwork: grown, N moved" and exits.
 * `heapwork leak` instead, round after round until SIGTERM (10 ms each):
 * leak_steadily keeps 64 KiB more, constant_set replaces 16 of its 512
 * blocks of 4 KiB (2 MiB in use, always), churn_steadily allocates and
 * frees 256 KiB; it says "heapwork: leaked N KiB" every 1 MiB, so
 * between two snapshots what grew is leak_steadily's, and only that
 * (it stops leaking at 128 MiB).
 * `heapwork exact` counts what it asks for itself (every allocation
 * function, realloc grown, shrunk and to 0, blocks freed by other threads
 * than theirs), peaks with burst_sixteen_mib, and says "heapwork: exact
 * peak P in use N": the true figures the sampler's exact count must give.
 * `heapwork late DIR` makes blocks through every allocation function
 * before the sampler starts, then starts it through its C API (preloaded
 * without PH_SAMPLER_DIR, it waits for that), then grows half of those
 * blocks with realloc, asks their usable size and frees them all among
 * new ones: it aborts when a block's bytes changed under it, and says
 * "heapwork: late ok". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024u * 1024u)

static void *kept[1 << 16];
static size_t n_kept;
static volatile sig_atomic_t done;

static size_t
size_of(unsigned i)
{
    static const size_t sizes[] = { 64, 200, 1024, 4096, 16384, 65536 };
    return sizes[i % (sizeof sizes / sizeof *sizes)];
}

static void
keep(void *p, size_t n)
{
    if (p == NULL)
        abort();
    memset(p, 1, n);
    kept[n_kept++] = p;
}

__attribute__((noinline)) static void
keep_three_mib(void)
{
    size_t got = 0;

    for (unsigned i = 0; got < 3 * MIB; i++) {
        size_t n = size_of(i);
        void *p = NULL;

        if (n > 3 * MIB - got)
            n = 3 * MIB - got;
        switch (i % 3) {
        case 0: p = malloc(n); break;
        case 1: p = calloc(1, n); break;
        default: if (posix_memalign(&p, 64, n) != 0) p = NULL; break;
        }
        keep(p, n);
        got += n;
    }
}

__attribute__((noinline)) static void
keep_one_mib(void)
{
    size_t got = 0;

    for (unsigned i = 0; got < MIB; i++) {
        size_t n = size_of(i + 1);
        void *p;

        if (n > MIB - got)
            n = MIB - got;
        p = i % 2 ? aligned_alloc(64, (n + 63) & ~(size_t)63) : malloc(n);
        if (i % 2)
            n = (n + 63) & ~(size_t)63;
        keep(p, n);
        got += n;
    }
}

__attribute__((noinline)) static void
churn_hundred_mib(void)
{
    size_t got = 0;

    for (unsigned i = 0; got < 100 * MIB; i++) {
        size_t n = size_of(i + 2);
        char *p = malloc(n);

        if (p == NULL)
            abort();
        p[0] = (char)i;
        if (i % 7 == 0) { /* grown once, then freed */
            char *q = realloc(p, 2 * n);
            if (q == NULL)
                abort();
            p = q;
            got += 2 * n; /* n, then 2n by realloc: 3n in all */
        }
        free(p);
        got += n;
    }
}

#define THREADS 8
static void *thread_kept[THREADS][4096];

__attribute__((noinline)) static void
thread_keeps(void **slots)
{
    size_t got = 0;

    for (unsigned i = 0; got < 256 * 1024; i++) {
        size_t n = size_of(i);

        if (n > 256 * 1024 - got)
            n = 256 * 1024 - got;
        slots[i] = malloc(n);
        if (slots[i] == NULL)
            abort();
        memset(slots[i], 2, n);
        got += n;
    }
}

__attribute__((noinline)) static void
thread_churns(void)
{
    size_t got = 0;

    for (unsigned i = 0; got < 16 * MIB; i++) {
        size_t n = size_of(i + 3);
        char *p = malloc(n);

        if (p == NULL)
            abort();
        p[n - 1] = 1;
        free(p);
        got += n;
    }
}

static void *
thread_main(void *arg)
{
    thread_keeps(arg);
    thread_churns();
    return NULL;
}

static int
threads(void)
{
    pthread_t t[THREADS];

    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, thread_main, thread_kept[i]) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("heapwork: threads done\n");
    return 0;
}

__attribute__((noinline)) static void
burst_eight_mib(void)
{
    static void *held[128];

    for (int i = 0; i < 128; i++)
        keep(held[i] = malloc(65536), 65536), n_kept--;
    for (int i = 0; i < 128; i++)
        free(held[i]);
}

static void *fences[256];

__attribute__((noinline)) static void
fence_block(unsigned i)
{
    if ((fences[i] = malloc(64)) == NULL)
        abort();
}

__attribute__((noinline)) static unsigned
grow_four_mib(void)
{
    static char *small[256];
    unsigned moved = 0;

    for (unsigned i = 0; i < 256; i++) {
        if ((small[i] = malloc(4096)) == NULL)
            abort();
        small[i][0] = 1;
        fence_block(i);
    }
    for (unsigned i = 0; i < 256; i++) {
        char *q = realloc(small[i], 16384);

        if (q == NULL)
            abort();
        moved += q != small[i];
        keep(q, 16384);
    }
    return moved;
}

static void *leaked[8192];
static size_t n_leaked;
static void *set[512];

__attribute__((noinline)) static void
leak_steadily(void)
{
    for (int i = 0; i < 4 && n_leaked < sizeof leaked / sizeof *leaked; i++) {
        void *p = i % 2 ? malloc(16384) : calloc(1, 16384);

        if (p == NULL)
            abort();
        memset(p, 3, 16384);
        leaked[n_leaked++] = p;
    }
}

__attribute__((noinline)) static void
constant_set(unsigned round)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned k = (round * 16 + i) % 512;

        free(set[k]);
        if ((set[k] = malloc(4096)) == NULL)
            abort();
        memset(set[k], 4, 4096);
    }
}

__attribute__((noinline)) static void
churn_steadily(void)
{
    for (unsigned i = 0; i < 64; i++) {
        char *p = malloc(4096);

        if (p == NULL)
            abort();
        p[4095] = (char)i;
        free(p);
    }
}

/* ---- exact: the true bytes in use, counted here as the sampler should */

static _Atomic long long ex_live, ex_peak;
static void *ex_main[4096];
static size_t ex_main_n[4096];
static void *ex_thread[4][256];

static void
ex_add(long long n)
{
    long long now = __atomic_add_fetch(&ex_live, n, __ATOMIC_SEQ_CST), top = __atomic_load_n(&ex_peak, __ATOMIC_SEQ_CST);

    while (now > top && !__atomic_compare_exchange_n(&ex_peak, &top, now, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

static void *
ex_got(void *p, size_t n)
{
    if (p == NULL)
        abort();
    memset(p, 7, n);
    ex_add((long long)n);
    return p;
}

/* Block I of the main set, N bytes, by one function or another. */
static void *
ex_alloc(unsigned i, size_t n)
{
    void *p = NULL;

    switch (i % 6) {
    case 0: return ex_got(malloc(n), n);
    case 1: return ex_got(calloc(1, n), n);
    case 2: return ex_got(memalign(64, n), n);
    case 3: return posix_memalign(&p, 4096, n) == 0 ? ex_got(p, n) : NULL;
    case 4: return ex_got(aligned_alloc(256, (n + 255) & ~(size_t)255), (n + 255) & ~(size_t)255);
    default: return ex_got(valloc(n), n);
    }
}

static void *
ex_worker(void *arg)
{
    unsigned t = (unsigned)(size_t)arg;

    /* a quarter of main's blocks freed here, not where they were made */
    for (unsigned i = t; i < 4096; i += 4) {
        free(ex_main[i]);
        ex_add(-(long long)ex_main_n[i]);
    }
    /* blocks main frees after the join */
    for (unsigned i = 0; i < 256; i++)
        ex_thread[t][i] = ex_got(malloc(24 + i * 8), 24 + i * 8);
    return NULL;
}

__attribute__((noinline)) static void
burst_sixteen_mib(void)
{
    static void *b[256];

    for (unsigned i = 0; i < 256; i++)
        b[i] = ex_got(malloc(65536), 65536);
    for (unsigned i = 0; i < 256; i++) {
        /* the bytes malloc_usable_size says are the service's to write */
        size_t u = malloc_usable_size(b[i]);
        if (u < 65536)
            abort();
        memset(b[i], 9, u);
        free(b[i]);
        ex_add(-65536);
    }
}

static int
exact(void)
{
    pthread_t th[4];

    for (unsigned i = 0; i < 4096; i++) {
        size_t n = 16 + (i * 2654435761u) % 4000;

        ex_main[i] = ex_alloc(i, n);
        ex_main_n[i] = i % 6 == 4 ? (n + 255) & ~(size_t)255 : n;
    }
    /* realloc: grown, shrunk, to 0 (freed: glibc gives NULL) */
    for (unsigned i = 0; i < 4096; i += 3) {
        size_t n = i % 2 ? ex_main_n[i] * 3 : ex_main_n[i] / 2 + 1;
        void *p = realloc(ex_main[i], n);

        if (p == NULL)
            abort();
        /* the bytes kept are the service's: nothing of the sampler's in them */
        for (size_t b = 0; b < n && b < ex_main_n[i]; b++)
            if (((unsigned char *)p)[b] != 7)
                abort();
        ex_add((long long)n - (long long)ex_main_n[i]);
        ex_main[i] = p;
        ex_main_n[i] = n;
    }
    {
        void *z = ex_got(malloc(100), 100), *z0 = realloc(z, 0);

        /* glibc frees it and gives NULL; musl gives a block of 0 bytes */
        ex_add(-100);
        free(z0);
    }
    for (unsigned t = 0; t < 4; t++)
        if (pthread_create(&th[t], NULL, ex_worker, (void *)(size_t)t) != 0)
            abort();
    for (unsigned t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    for (unsigned t = 0; t < 4; t++)
        for (unsigned i = 0; i < 256; i += 2) {
            free(ex_thread[t][i]);
            ex_add(-(long long)(24 + i * 8));
        }
    burst_sixteen_mib();
    printf("heapwork: exact peak %lld in use %lld\n", (long long)ex_peak, (long long)ex_live);
    return 0;
}

/* ---- late: blocks from before the sampler started ------------------ */

static void
same_bytes(const void *p, size_t n)
{
    for (size_t b = 0; b < n; b++)
        if (((const unsigned char *)p)[b] != 7)
            abort();
}

static int
late(const char *dir)
{
    static void *early[384], *fresh[384];
    static size_t n[384];
    int (*start)(const char *, int, int, const char *);

    for (unsigned i = 0; i < 384; i++) {
        n[i] = 16 + (i * 2654435761u) % 3000;
        early[i] = ex_alloc(i, n[i]);
        if (i % 6 == 4)
            n[i] = (n[i] + 255) & ~(size_t)255;
    }
    *(void **)&start = dlsym(RTLD_DEFAULT, "ph_sampler_start");
    if (start == NULL || start(dir, 100, 0, "late") != 0) {
        printf("heapwork: no sampler to start\n");
        return 2;
    }
    for (unsigned i = 0; i < 384; i++) {
        if (malloc_usable_size(early[i]) < n[i])
            abort();
        same_bytes(early[i], n[i]);
        if (i % 2 == 0) {
            void *p = realloc(early[i], 2 * n[i]);

            if (p == NULL)
                abort();
            same_bytes(p, n[i]);
            memset(p, 7, 2 * n[i]);
            early[i] = p;
            n[i] *= 2;
        }
        fresh[i] = ex_alloc(i, n[i]);
    }
    for (unsigned i = 0; i < 384; i++) {
        same_bytes(early[i], n[i]);
        free(early[i]);
        free(fresh[i]);
    }
    printf("heapwork: late ok\n");
    return 0;
}

static int
leak(void)
{
    struct timespec ten_ms = { 0, 10 * 1000 * 1000 };

    for (unsigned k = 0; k < 512; k++)
        if ((set[k] = malloc(4096)) == NULL)
            abort();
    printf("heapwork: leaking\n");
    fflush(stdout);
    for (unsigned round = 0; !done; round++) {
        size_t before = n_leaked;

        leak_steadily();
        constant_set(round);
        churn_steadily();
        if (n_leaked != before && n_leaked % 64 == 0) {
            printf("heapwork: leaked %zu KiB\n", n_leaked * 16);
            fflush(stdout);
        }
        nanosleep(&ten_ms, NULL);
    }
    printf("heapwork: stopped\n");
    return 0;
}

static void
on_term(int sig)
{
    (void)sig;
    done = 1;
}

int
main(int argc, char **argv)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    if (argc > 1 && strcmp(argv[1], "threads") == 0)
        return threads();
    if (argc > 1 && strcmp(argv[1], "leak") == 0)
        return leak();
    if (argc > 1 && strcmp(argv[1], "exact") == 0)
        return exact();
    if (argc > 2 && strcmp(argv[1], "late") == 0)
        return late(argv[2]);
    if (argc > 1 && strcmp(argv[1], "grow") == 0) {
        unsigned moved;

        keep_one_mib();
        moved = grow_four_mib();
        printf("heapwork: grown, %u moved\n", moved);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "peak") == 0) {
        keep_one_mib();
        burst_eight_mib();
        return 0;
    }
    keep_three_mib();
    keep_one_mib();
    churn_hundred_mib();
    printf("heapwork: ready (%zu blocks kept)\n", n_kept);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "once") == 0)
        return 0;
    while (!done)
        pause();
    printf("heapwork: stopped\n");
    return 0;
}
