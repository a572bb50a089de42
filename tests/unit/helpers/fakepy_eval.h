/* fakepy_eval.h - the fake CPythons' (sampler_fakepy*.c) CPU spent in a
 * function named like CPython's eval loop. */
#ifndef FAKEPY_EVAL_H
#define FAKEPY_EVAL_H

#include <time.h>

static double
cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double _PyEval_EvalFrameDefault(double seconds);

/* SECONDS of CPU time. */
__attribute__((noinline)) double
_PyEval_EvalFrameDefault(double seconds)
{
    volatile double x = 0;
    double end = cpu_now() + seconds;

    while (cpu_now() < end)
        for (int i = 0; i < 10000; i++)
            x += i * 0.5;
    return x;
}

#endif
