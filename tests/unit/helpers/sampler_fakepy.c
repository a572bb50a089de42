/* sampler_fakepy.c - a program that looks like a CPython the sampler
 * does not know: the symbols it looks for (_PyRuntime,
 * _PyEval_EvalFrameDefault, Py_Version and the type objects) with a
 * version that has no layout (3.15.0), and its CPU spent in a function
 * named like the eval loop.  The sampler must say it did not read its
 * frames, and show the native ones.  Argument: CPU-seconds to spend. */
#include <stdlib.h>
#include "fakepy_eval.h"

__attribute__((used)) const unsigned long Py_Version = 0x030f00f0; /* 3.15.0 final */
__attribute__((used)) char _PyRuntime[4096];
__attribute__((used)) char PyCode_Type[512], PyUnicode_Type[512], PyBytes_Type[512];

int
main(int argc, char **argv)
{
    _PyEval_EvalFrameDefault(argc > 1 ? atof(argv[1]) : 1.0, 0);
    return 0;
}
