/* sampler_fakepy38.c - sampler_fakepy310 as a CPython 3.8: 3.8's layout
 * and co_lnotab. */
#define FAKE_MINOR 8
#include "sampler_fakepy310.c"
