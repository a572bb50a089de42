/* ph_signal.c - deferred interrupts (see ph_signal.h). */
#include "ph_signal.h"

#include <signal.h>
#include <stddef.h>
#include <string.h>

static const int deferred[] = { SIGINT, SIGTERM, SIGHUP };
#define N_DEFERRED (sizeof deferred / sizeof deferred[0])

static volatile sig_atomic_t caught;
static volatile sig_atomic_t count; /* every signal caught, the first and the ones after */
/* Atomic: stop's worker threads nest sections inside the one the main
 * thread holds around them, so only the main thread ever reaches 0. */
static int depth;
static struct sigaction saved[N_DEFERRED];

static void
on_signal(int sig)
{
    if (caught == 0)
        caught = sig;
    count++;
}

void
ph_interrupt_begin(void)
{
    struct sigaction sa;

    if (__atomic_fetch_add(&depth, 1, __ATOMIC_SEQ_CST) > 0)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* blocking calls go on; the loop polls the flag */
    for (size_t i = 0; i < N_DEFERRED; i++) {
        sigaction(deferred[i], NULL, &saved[i]);
        if (saved[i].sa_handler != SIG_IGN)
            sigaction(deferred[i], &sa, NULL);
    }
}

void
ph_interrupt_end(void)
{
    int d = __atomic_load_n(&depth, __ATOMIC_SEQ_CST);

    if (d == 0 || __atomic_sub_fetch(&depth, 1, __ATOMIC_SEQ_CST) > 0)
        return;
    for (size_t i = 0; i < N_DEFERRED; i++)
        sigaction(deferred[i], &saved[i], NULL);
}

int
ph_interrupted(void)
{
    return caught;
}

int
ph_interrupt_count(void)
{
    return count;
}

int
ph_interrupt_fail(ph_error_t *err, int sig)
{
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";

    return ph_error_make(err, 0, PH_EXIT_SIGNAL + sig, "interrupted by %s", name);
}
