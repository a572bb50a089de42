/* sampler_fakepy313_bad.c - sampler_fakepy313 whose _Py_DebugOffsets do
 * not carry CPython's cookie: offsets that may not be CPython's are not
 * read. */
#define FAKE_COOKIE "xdebugpz"
#include "sampler_fakepy313.c"
