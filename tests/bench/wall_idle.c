/* wall_idle.c - the wall mode's cost workload (tests/bench/bench-wall.sh,
 * issue 21): IDLE threads blocked for the whole run in
 * pthread_cond_wait (a futex wait, as a pool's idle workers), beside the
 * wall test service's shape on the main thread: a fixed amount of work
 * (about 25 ms of it, calibrated before the idle threads start), then
 * 75 ms blocked in read(2) on a timerfd, ROUNDS times.  The work is a
 * fixed count, not a time, so a sampler's cost shows as more CPU time.
 * Prints the process's CPU seconds (every thread, the sampler's writer
 * included; start-up and the final write left out: the steady cost), the
 * wall seconds of the rounds, and how many times the idle threads were
 * woken in all (their voluntary context switches: a sampler that signals
 * a blocked thread wakes it):
 *   wall_idle: cpu_s=<s> wall_s=<s> idle_wakes=<n>
 * Usage: wall_idle ROUNDS IDLE */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int quit;
static _Atomic int *tids;

/* The voluntary context switches of thread TID. */
static long
wakes_of(int tid)
{
    char path[64], line[128];
    long n = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

static double
secs(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
work(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink = sink * 6364136223846793005UL + i;
}

static void *
idle_worker(void *arg)
{
    tids[(intptr_t)arg] = gettid();
    pthread_mutex_lock(&mu);
    while (!quit)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int
main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100, nidle = argc > 2 ? atoi(argv[2]) : 50;
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    struct itimerspec it = { { 0, 0 }, { 0, 75 * 1000 * 1000 } };
    pthread_t *th = calloc((size_t)(nidle > 0 ? nidle : 1), sizeof *th);
    unsigned long n = 1000000;
    struct rusage ru0, ru1;
    long wakes0 = 0, wakes1 = 0;
    double t0, t1, c;
    uint64_t x;

    tids = calloc((size_t)(nidle > 0 ? nidle : 1), sizeof *tids);
    if (tfd < 0 || th == NULL || tids == NULL)
        return 2;
    /* ~25 ms of work on this machine, by this thread's CPU time (the
     * machine may be busy), measured once */
    for (;;) {
        double t = secs(CLOCK_THREAD_CPUTIME_ID), d;

        work(n);
        if ((d = secs(CLOCK_THREAD_CPUTIME_ID) - t) >= 0.005) {
            n = (unsigned long)((double)n * 0.025 / d);
            break;
        }
        n *= 2;
    }
    for (int i = 0; i < nidle; i++)
        if (pthread_create(&th[i], NULL, idle_worker, (void *)(intptr_t)i) != 0)
            return 3;
    for (int i = 0; i < nidle; i++)
        while (tids[i] == 0)
            usleep(1000);
    usleep(10000); /* in their wait */
    for (int i = 0; i < nidle; i++)
        wakes0 += wakes_of(tids[i]);
    getrusage(RUSAGE_SELF, &ru0);
    t0 = secs(CLOCK_MONOTONIC);
    for (int r = 0; r < rounds; r++) {
        work(n);
        if (timerfd_settime(tfd, 0, &it, NULL) < 0 || read(tfd, &x, sizeof x) < 0)
            return 4;
    }
    t1 = secs(CLOCK_MONOTONIC);
    getrusage(RUSAGE_SELF, &ru1);
    for (int i = 0; i < nidle; i++)
        wakes1 += wakes_of(tids[i]);
    c = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
        (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    printf("wall_idle: cpu_s=%.4f wall_s=%.4f idle_wakes=%ld\n", c, t1 - t0, wakes1 - wakes0);
    pthread_mutex_lock(&mu);
    quit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < nidle; i++)
        pthread_join(th[i], NULL);
    return 0;
}
