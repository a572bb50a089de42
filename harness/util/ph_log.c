/* ph_log.c - stderr logging with levels (see ph_log.h). */
#include "ph_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_escape.h"

static enum ph_log_level current_level = PH_LOG_INFO;
static int level_from_env = 0;

void
ph_log_set_level(enum ph_log_level level)
{
    current_level = level;
    level_from_env = 1;
}

enum ph_log_level
ph_log_get_level(void)
{
    const char *s;

    if (!level_from_env) {
        level_from_env = 1;
        s = getenv("PH_LOG");
        if (s != NULL && strcmp(s, "debug") == 0)
            current_level = PH_LOG_DEBUG;
        else if (s != NULL && strcmp(s, "warn") == 0)
            current_level = PH_LOG_WARN;
        else if (s != NULL && strcmp(s, "error") == 0)
            current_level = PH_LOG_ERROR;
    }
    return current_level;
}

void
ph_log(enum ph_log_level level, const char *fmt, ...)
{
    static const char *const names[] = { "error", "warning", "", "debug" };
    char line[4096], esc[2 * sizeof line];
    va_list ap;
    int n;

    if (level > ph_log_get_level())
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* Log lines carry names and messages from containers and the Engine:
     * no byte of them may reach the terminal as a control. */
    ph_escape_mem(esc, sizeof esc, line, strlen(line), 0);
    if (level == PH_LOG_INFO)
        fprintf(stderr, PH_LOG_PREFIX "%s\n", esc);
    else
        fprintf(stderr, PH_LOG_PREFIX "%s: %s\n", names[level], esc);
}
