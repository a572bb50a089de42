/* pollrace.c - preloaded in front of the sampler by test_sampler's
 * SIGTERM-at-the-tick test: the sampler's writer calls poll() each tick
 * (one pipe, 250 ms); the first such call that times out after
 * PH_TEST_POLLRACE_MS sends the process SIGTERM and returns only once the
 * stop handler has asked for its final snapshot (200 ms later), so the
 * request lands between the writer's poll and its reading of the
 * requests: the order a busy machine makes by preempting the writer
 * there.  The writer must still serve it. */
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int pollrace_fired;

static double
pollrace_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
poll(struct pollfd *fds, nfds_t n, int timeout)
{
    static int (*real_poll)(struct pollfd *, nfds_t, int);
    static double t0;
    const char *after = getenv("PH_TEST_POLLRACE_MS");
    struct timespec pause = { 0, 200 * 1000 * 1000 };
    int r;

    if (real_poll == NULL)
        real_poll = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
    if (t0 == 0)
        t0 = pollrace_now_ms();
    r = real_poll(fds, n, timeout);
    if (r == 0 && n == 1 && timeout == 250 && after != NULL && pollrace_now_ms() - t0 >= atof(after) &&
        atomic_exchange(&pollrace_fired, 1) == 0) {
        kill(getpid(), SIGTERM);
        nanosleep(&pause, NULL);
    }
    return r;
}
