/* fakepy_eval.h - the fake CPythons' (sampler_fakepy*.c) CPU spent in a
 * function named like CPython's eval loop, NESTED calls of it deep (one
 * per Python frame, as CPython before 3.11 runs them). */
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

__attribute__((noinline)) double _PyEval_EvalFrameDefault(double seconds, int nested);

/* SECONDS of CPU time, in the innermost of NESTED + 1 calls. */
__attribute__((noinline)) double
_PyEval_EvalFrameDefault(double seconds, int nested)
{
    volatile double x = 0;
    double end;

    if (nested > 0)
        return x + _PyEval_EvalFrameDefault(seconds, nested - 1); /* not a tail call: x is volatile */
    end = cpu_now() + seconds;
    while (cpu_now() < end)
        for (int i = 0; i < 10000; i++)
            x += i * 0.5;
    return x;
}

#endif
