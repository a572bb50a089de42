/* ph_error.h - the one error convention of profharness.
 *
 * A fallible function takes `ph_error_t *err` as its last argument and
 * returns a negative value on failure (NULL for constructors).  The error is
 * made in one line at the failure site, with errno when there is one and the
 * subject in backquotes:
 *
 *     if (fd < 0)
 *         return ph_fail(err, errno, "open `%s`", path);
 *
 * Callers may add context on the way up (ph_error_wrap) and a recovery hint
 * (ph_error_hint).  Library code never prints an error and never exits: only
 * main() prints it, once, with ph_error_report(), whose return value is the
 * process exit status (1 failure, 2 usage or bad input, 128+N interrupted
 * by signal N).
 */
#ifndef PH_ERROR_H
#define PH_ERROR_H

#include <stdarg.h>

enum {
    PH_EXIT_OK = 0,
    PH_EXIT_FAILURE = 1, /* the environment failed: Engine, disk, a service */
    PH_EXIT_USAGE = 2,   /* the user's input is wrong: flags, YAML, names */
    PH_EXIT_SIGNAL = 128, /* + N: stopped early by signal N (ph_signal.h) */
};

typedef struct ph_error {
    int status;      /* PH_EXIT_FAILURE, PH_EXIT_USAGE or PH_EXIT_SIGNAL + N */
    int errnum;      /* errno at the failure site, 0 if none */
    char msg[2048];  /* "what failed: why" */
    char hint[512];  /* how to recover, "" if nothing to say */
} ph_error;

typedef ph_error *ph_error_t; /* NULL: no error */

/* Make an error.  Appends strerror(errnum) when errnum != 0.  If *err already
 * holds an error it is kept and the new one is dropped.  Always returns -1. */
int ph_error_make(ph_error_t *err, int errnum, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int ph_error_makev(ph_error_t *err, int errnum, int status, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

#define ph_fail(err, errnum, ...) ph_error_make((err), (errnum), PH_EXIT_FAILURE, __VA_ARGS__)
#define ph_bad_input(err, ...) ph_error_make((err), 0, PH_EXIT_USAGE, __VA_ARGS__)

/* Prepend "context: " to the message.  No-op when *err is NULL.  Returns -1. */
int ph_error_wrap(ph_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Set the recovery hint (replaces any earlier one).  Returns -1. */
int ph_error_hint(ph_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "profharness: error: MSG" (and "hint: HINT") on stderr, escaped
 * (ph_escape.h), free the error, and return its exit status (PH_EXIT_OK
 * when *err is NULL). */
int ph_error_report(ph_error_t *err);

/* HOOK sees every error ph_error_report is about to print (the CLI hands
 * it to the command's timing, so its span carries the message).  NULL:
 * none.  Set it from main, before threads. */
void ph_error_on_report(void (*hook)(const ph_error *e));

/* Free and set to NULL; no-op on NULL. */
void ph_error_free(ph_error_t *err);

#endif
