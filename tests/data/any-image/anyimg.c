/* anyimg.c - the service of the any-image tests (tests/61-any-image.bats),
 * built twice: static into a FROM scratch image (nothing but this file),
 * and dynamic into a distroless-like one (Debian's loader and libc, no
 * shell, no package manager, a non-root user).
 *
 * It loops: anyimg_hot (the hot function a sampling profiler must put on
 * top: a few ms of arithmetic), then a 20 ms nanosleep (syscalls for
 * strace), a line on stdout every 50 rounds.  SIGTERM/SIGINT end the loop
 * and it exits 0 after one last line, so a clean stop is visible. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t anyimg_stop;

static void
anyimg_on_signal(int sig)
{
    (void)sig;
    anyimg_stop = 1;
}

__attribute__((noinline, noclone)) static unsigned long
anyimg_hot(unsigned long n)
{
    unsigned long x = 0;

    for (unsigned long i = 0; i < n; i++)
        x = x * 2654435761u + i;
    return x;
}

static void
anyimg_say(const char *what, unsigned long rounds)
{
    char line[96];
    int n = snprintf(line, sizeof line, "anyimg: %s after %lu rounds\n", what, rounds);

    if (n > 0 && write(1, line, (size_t)n) < 0)
        anyimg_stop = 1;
}

int
main(void)
{
    struct sigaction sa;
    unsigned long rounds = 0, sum = 0;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = anyimg_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    anyimg_say("running", 0);
    while (!anyimg_stop) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };

        /* An argument that changes: a constant one lets the compiler see
         * the function is pure and call it once, before the loop. */
        sum += anyimg_hot(4000000 + rounds % 8);
        nanosleep(&ts, NULL);
        if (++rounds % 50 == 0)
            anyimg_say("still running", rounds);
    }
    anyimg_say(sum == 1 ? "stopping (sum 1)" : "stopping", rounds); /* sum is used: the work is done */
    return 0;
}
