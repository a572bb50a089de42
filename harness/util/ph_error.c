/* ph_error.c - making, wrapping and reporting errors (see ph_error.h). */
#include "ph_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_escape.h"

static ph_error oom_error = {
    .status = PH_EXIT_FAILURE, .errnum = 12, .msg = "out of memory", .hint = "",
};

int
ph_error_makev(ph_error_t *err, int errnum, int status, const char *fmt, va_list ap)
{
    ph_error *e;
    size_t n;

    if (err == NULL || *err != NULL)
        return -1;
    e = calloc(1, sizeof *e);
    if (e == NULL) {
        *err = &oom_error;
        return -1;
    }
    e->status = status;
    e->errnum = errnum;
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    n = strlen(e->msg);
    if (errnum != 0 && n < sizeof e->msg)
        snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(errnum));
    *err = e;
    return -1;
}

int
ph_error_make(ph_error_t *err, int errnum, int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ph_error_makev(err, errnum, status, fmt, ap);
    va_end(ap);
    return -1;
}

int
ph_error_wrap(ph_error_t *err, const char *fmt, ...)
{
    char ctx[1024], old[sizeof((ph_error *)0)->msg];
    va_list ap;

    if (err == NULL || *err == NULL || *err == &oom_error)
        return -1;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    memcpy(old, (*err)->msg, sizeof old);
    snprintf((*err)->msg, sizeof (*err)->msg, "%s: %s", ctx, old);
    return -1;
}

int
ph_error_hint(ph_error_t *err, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || *err == NULL || *err == &oom_error)
        return -1;
    va_start(ap, fmt);
    vsnprintf((*err)->hint, sizeof (*err)->hint, fmt, ap);
    va_end(ap);
    return -1;
}

void
ph_error_free(ph_error_t *err)
{
    if (err == NULL || *err == NULL)
        return;
    if (*err != &oom_error)
        free(*err);
    *err = NULL;
}

static void (*report_hook)(const ph_error *e); /* ph_error_on_report */

int
ph_error_report(ph_error_t *err)
{
    char esc[2 * sizeof((ph_error *)0)->msg];
    int status;

    if (report_hook != NULL && err != NULL && *err != NULL)
        report_hook(*err);
    if (err == NULL || *err == NULL)
        return PH_EXIT_OK;
    /* Messages quote the Engine and names from containers: escaped. */
    ph_escape_mem(esc, sizeof esc, (*err)->msg, strlen((*err)->msg), 0);
    fprintf(stderr, "profharness: error: %s\n", esc);
    if ((*err)->hint[0] != '\0') {
        ph_escape_mem(esc, sizeof esc, (*err)->hint, strlen((*err)->hint), 0);
        fprintf(stderr, "profharness: hint: %s\n", esc);
    }
    status = (*err)->status;
    ph_error_free(err);
    return status;
}

void
ph_error_on_report(void (*hook)(const ph_error *e))
{
    report_hook = hook;
}
