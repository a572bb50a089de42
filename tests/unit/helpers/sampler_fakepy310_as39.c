/* sampler_fakepy310_as39.c - sampler_fakepy310 (3.10's frame objects,
 * 360 bytes) saying it is a CPython 3.9, whose frame objects are 368:
 * the layout is not the version's, and must not be read. */
#define FAKE_VERSION_CLAIMED "3.9.18"
#include "sampler_fakepy310.c"
