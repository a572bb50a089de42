/* ph_init_say.c - how the init shim speaks: one bounded line to stderr
 * per message, in one write(), errno kept.  Its own file so that both
 * ph-init.c (the supervisor) and ph_init_record.c (the record) call down
 * into it, and neither calls the other back. */
#include "ph_init.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

int ph_init_verbose;

/* One line to stderr in one write(), "ph-init: " first; bounded. */
__attribute__((format(printf, 1, 0))) static void
vsay(const char *fmt, va_list ap)
{
    char line[512];
    int n = snprintf(line, sizeof line, "ph-init: ");

    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    while (write(STDERR_FILENO, line, (size_t)n) < 0 && errno == EINTR)
        ;
}

void
ph_init_warn(const char *fmt, ...)
{
    va_list ap;
    int saved = errno;

    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    errno = saved;
}

void
ph_init_log(const char *fmt, ...)
{
    va_list ap;
    int saved = errno;

    if (!ph_init_verbose)
        return;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    errno = saved;
}
