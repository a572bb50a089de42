/* rss_idle.c - the RSS bench's C workload (tests/bench/bench-flamegraph-rss.sh):
 * THREADS threads idle in pthread_cond_wait (a pool's workers), the main
 * thread about a CPU-second of work in hot(), then "ready" on stdout and
 * blocked until killed, so what the process weighs is read while it
 * holds still.  Usage: rss_idle THREADS */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile unsigned long sink;

static void *
idle(void *arg)
{
    pthread_mutex_lock(&mu);
    for (;;)
        pthread_cond_wait(&cv, &mu);
    return arg;
}

__attribute__((noinline)) static void
hot(long n)
{
    for (long i = 0; i < n; i++)
        sink += (unsigned long)(i * i);
}

int
main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;

    for (int i = 0; i < threads; i++) {
        pthread_t t;

        if (pthread_create(&t, NULL, idle, NULL) != 0)
            return 1;
    }
    hot(300000000L);
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}
