/* ph_sampler_fortify.c - the musl build's glibc fortify entry points.
 *
 * Why: the sampler links Debian's libz.a and three objects of its
 * libiberty.a, both compiled against glibc with _FORTIFY_SOURCE: they call
 * __sprintf_chk, __snprintf_chk and __vsnprintf_chk, which musl does not
 * have.  Linked into libphsampler-musl.so only (the Makefile's
 * SAMPLER_MUSL_PIC), hidden, so the service never sees them.
 *
 * Contract: each formats as its unchecked function does and aborts, as
 * glibc's does, when the length the caller declared exceeds the object
 * the compiler knew (OBJLEN; (size_t)-1 when unknown).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ph_sampler_int.h"

PH_HIDDEN int __vsnprintf_chk(char *s, size_t n, int flag, size_t objlen, const char *fmt, va_list ap);
PH_HIDDEN int __snprintf_chk(char *s, size_t n, int flag, size_t objlen, const char *fmt, ...);
PH_HIDDEN int __sprintf_chk(char *s, int flag, size_t objlen, const char *fmt, ...);

int
__vsnprintf_chk(char *s, size_t n, int flag, size_t objlen, const char *fmt, va_list ap)
{
    (void)flag;
    if (n > objlen)
        abort();
    return vsnprintf(s, n, fmt, ap);
}

int
__snprintf_chk(char *s, size_t n, int flag, size_t objlen, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = __vsnprintf_chk(s, n, flag, objlen, fmt, ap);
    va_end(ap);
    return r;
}

/* sprintf into an object of OBJLEN bytes: what does not fit aborts. */
int
__sprintf_chk(char *s, int flag, size_t objlen, const char *fmt, ...)
{
    va_list ap;
    int r;

    (void)flag;
    va_start(ap, fmt);
    /* (size_t)-1, unknown: musl's vsnprintf takes no length past INT_MAX */
    r = objlen > INT_MAX ? vsprintf(s, fmt, ap) : vsnprintf(s, objlen, fmt, ap);
    va_end(ap);
    if (r < 0 || (size_t)r >= objlen)
        abort();
    return r;
}
