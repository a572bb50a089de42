/* wall.c - the wall-clock test service: forever (or for argv[1] seconds,
 * as a workload of the sampler's unit tests, then a last line and exit
 * 0), 25 ms of computing in
 * compute_quarter, then 75 ms blocked in read(2) on a timerfd in
 * wait_three_quarters.  EINTR is fatal to it, as to some servers: a read
 * that fails with it prints "EINTR" and exits 5.  Every 10 rounds it
 * prints, since its start, the share of its wall time spent in
 * wait_three_quarters and the share blocked by the kernel's account
 * (wall less CPU time less time waiting for a CPU, from
 * /proc/thread-self/schedstat). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
compute_quarter(void)
{
    for (double until = now() + 0.025; now() < until;)
        for (int i = 0; i < 1000; i++)
            sink = sink * 6364136223846793005UL + (unsigned long)i;
}

__attribute__((noinline)) static void
wait_three_quarters(int tfd)
{
    struct itimerspec it = { { 0, 0 }, { 0, 75 * 1000 * 1000 } };
    uint64_t expirations;

    if (timerfd_settime(tfd, 0, &it, NULL) < 0)
        exit(3);
    if (read(tfd, &expirations, sizeof expirations) < 0) {
        printf("%s in read\n", errno == EINTR ? "EINTR" : strerror(errno));
        exit(errno == EINTR ? 5 : 4);
    }
    sink++; /* no tail call */
}

static void
sched(double *cpu, double *delay)
{
    unsigned long long c = 0, d = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");

    if (f == NULL || fscanf(f, "%llu %llu", &c, &d) != 2)
        exit(6);
    fclose(f);
    *cpu = (double)c / 1e9;
    *delay = (double)d / 1e9;
}

int
main(int argc, char **argv)
{
    double t0 = now(), waiting = 0, cpu0, delay0, secs = argc > 1 ? atof(argv[1]) : 0;
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

    if (tfd < 0)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    sched(&cpu0, &delay0);
    for (int rounds = 1;; rounds++) {
        double w, cpu, delay, wall;

        compute_quarter();
        w = now();
        wait_three_quarters(tfd);
        waiting += now() - w;
        if (rounds % 10 == 0 || (secs > 0 && now() - t0 >= secs)) {
            sched(&cpu, &delay);
            wall = now() - t0;
            printf("rounds=%d waiting=%.3f blocked=%.3f\n", rounds, waiting / wall,
                   (wall - (cpu - cpu0) - (delay - delay0)) / wall);
            if (secs > 0 && wall >= secs)
                return 0;
        }
    }
}
