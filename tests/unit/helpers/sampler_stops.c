/* sampler_stops.c - a service that makes the sampler work on its threads
 * as much as it can, for test_sampler_own.c: ROUNDS times (argv[1]) it
 *   - computes (service_compute), allocates and frees (service_churn:
 *     every malloc and free goes through the sampler's interposers) and
 *     blocks in poll and nanosleep (service_block);
 *   - sends itself SIGTERM: the sampler's handler asks its writer for a
 *     final snapshot and waits for it, then runs ours (service_on_term),
 *     which computes and allocates too, under the sampler's frames;
 *   - asks for a snapshot through the C API (ph_sampler_flush, found with
 *     dlsym: the library is preloaded) and waits for it;
 *   - starts a thread (service_thread) that computes and allocates, and
 *     joins it: the sampler notes each new thread's stack first.
 * Prints "rounds=N terms=N" and exits 0 (the sampler's final snapshot at
 * exit). */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t terms;
static volatile unsigned long sink;
static void *volatile kept[64];

__attribute__((noinline)) static void
service_compute(long n)
{
    for (long i = 0; i < n; i++)
        sink = sink * 6364136223846793005UL + (unsigned long)i;
}

__attribute__((noinline)) static void
service_churn(int n)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc((size_t)(16 + (i * 37) % 4000));
        unsigned k = (unsigned)i % 64;

        free(kept[k]);
        kept[k] = p;
    }
}

__attribute__((noinline)) static void
service_block(void)
{
    struct timespec ts = { 0, 2 * 1000 * 1000 };

    poll(NULL, 0, 2);
    nanosleep(&ts, NULL);
}

static void
service_on_term(int sig)
{
    (void)sig;
    terms++;
    service_compute(3000000);
    service_churn(2000);
}

static void *
service_thread(void *arg)
{
    (void)arg;
    service_compute(100000);
    service_churn(100);
    return NULL;
}

int
main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    int (*flush)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "ph_sampler_flush");
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = service_on_term;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    for (int r = 0; r < rounds; r++) {
        pthread_t t;

        service_compute(3000000);
        service_churn(20000);
        service_block();
        kill(getpid(), SIGTERM);
        if (flush != NULL)
            flush();
        if (pthread_create(&t, NULL, service_thread, NULL) == 0)
            pthread_join(t, NULL);
    }
    printf("rounds=%d terms=%d flush=%s\n", rounds, (int)terms, flush ? "api" : "none");
    return terms == rounds ? 0 : 1;
}
