/* sampler_fakepy37.c - sampler_fakepy310 saying it is a CPython 3.7, a
 * version whose frames are not read. */
#define FAKE_MINOR 7
#include "sampler_fakepy310.c"
