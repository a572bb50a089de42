/* ph_run_record.c - the init shim's completion record, ph-exit.json, as
 * the host reads it: untrusted (it comes out of the container), so read
 * with a size cap, no link followed, and checked for the shim's fields
 * before any is believed; then told to the user in one sentence from its
 * `outcome` (the fields are documented in harness/shim/ph_init_record.c).
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_timing.h"
#include "ph_util.h"

static int
record_problem(char *problem, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
record_problem(char *problem, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(problem, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int
is_int_field(json_t *rec, const char *key)
{
    return json_is_integer(json_object_get(rec, key));
}

int
ph_run_record_check(json_t *rec, char *problem, size_t len)
{
    json_t *v, *x;
    size_t i;

    if (!json_is_object(rec))
        return record_problem(problem, len, "%s is not a JSON object", PH_RECORD_NAME);
    if (!is_int_field(rec, "version") || json_integer_value(json_object_get(rec, "version")) < 1)
        return record_problem(problem, len, "%s has no `version` (an integer >= 1)", PH_RECORD_NAME);
    if (!is_int_field(rec, "exit_code"))
        return record_problem(problem, len, "%s has no integer `exit_code`", PH_RECORD_NAME);
    v = json_object_get(rec, "signal");
    if (v == NULL || !(json_is_null(v) || json_is_string(v)))
        return record_problem(problem, len, "%s has no `signal` (a name or null)", PH_RECORD_NAME);
    v = json_object_get(rec, "escalations");
    if (!json_is_array(v))
        return record_problem(problem, len, "%s has no `escalations` (a list of signal names)", PH_RECORD_NAME);
    json_array_foreach(v, i, x) {
        if (!json_is_string(x))
            return record_problem(problem, len, "%s: `escalations` holds something other than a signal name",
                                  PH_RECORD_NAME);
    }
    v = json_object_get(rec, "wrapper_killed");
    if (v != NULL && !json_is_boolean(v))
        return record_problem(problem, len, "%s: `wrapper_killed` is not true or false", PH_RECORD_NAME);
    v = json_object_get(rec, "complete");
    if (v != NULL && !json_is_boolean(v))
        return record_problem(problem, len, "%s: `complete` is not true or false", PH_RECORD_NAME);
    v = json_object_get(rec, "outcome");
    if (v != NULL && !json_is_string(v))
        return record_problem(problem, len, "%s: `outcome` is not a string", PH_RECORD_NAME);
    return 0;
}

int
ph_run_record_complete(json_t *rec)
{
    json_t *c = json_object_get(rec, "complete");

    if (json_is_boolean(c))
        return json_is_true(c);
    return !json_is_true(json_object_get(rec, "wrapper_killed"));
}

int
ph_run_record_read(int dirfd, const char *name, json_t **out, char *problem, size_t len)
{
    ph_cleanup_free char *buf = NULL;
    size_t got = 0;
    json_error_t jerr;
    json_t *rec;
    ph_error_t err = NULL;

    *out = NULL;
    if (ph_read_file_at(dirfd, name, PH_RECORD_MAX, &buf, &got, &err) < 0) {
        record_problem(problem, len, "%s", err->msg);
        ph_error_free(&err);
        return -1;
    }
    rec = json_loadb(buf, got, JSON_REJECT_DUPLICATES, &jerr);
    if (rec == NULL)
        return record_problem(problem, len, "%s is not JSON (line %d: %s)", PH_RECORD_NAME, jerr.line, jerr.text);
    if (ph_run_record_check(rec, problem, len) < 0) {
        json_decref(rec);
        return -1;
    }
    *out = rec;
    return 0;
}


/* ---- the story ---------------------------------------------------------- */

/* Append to OUT (of LEN, used *O) like snprintf, never past the end. */
static void __attribute__((format(printf, 4, 5)))
put(char *out, size_t len, size_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*o >= len)
        return;
    va_start(ap, fmt);
    n = vsnprintf(out + *o, len - *o, fmt, ap);
    va_end(ap);
    *o = n < 0 ? *o : *o + (size_t)n >= len ? len - 1 : *o + (size_t)n;
}

/* REC's string KEY escaped into BUF, or DFLT when it has none. */
static const char *
str_of(json_t *rec, const char *key, const char *dflt, char *buf, size_t len)
{
    const char *v = json_string_value(json_object_get(rec, key));

    if (v == NULL) {
        snprintf(buf, len, "%s", dflt);
        return buf;
    }
    return ph_escape(buf, len, v);
}

/* Seconds KEY of REC as "3 s", "250 ms". */
static const char *
secs_of(json_t *rec, const char *key, char *buf, size_t len)
{
    double s = json_number_value(json_object_get(rec, key));

    return ph_timing_fmt_ns(s > 0 ? (uint64_t)(s * 1e9 + 0.5) : 0, buf, len);
}

int
ph_run_record_story(json_t *rec, const char *present, char *out, size_t len)
{
    const char *outcome = json_string_value(json_object_get(rec, "outcome"));
    json_t *esc = json_object_get(rec, "escalations"), *x;
    char sig[64], stop[64], t[32], a[160];
    long long left = json_integer_value(json_object_get(rec, "leftovers_signalled"));
    long long killed = json_integer_value(json_object_get(rec, "leftovers_killed"));
    long long survived = json_integer_value(json_object_get(rec, "leftovers_survived"));
    int before = !json_is_true(json_object_get(rec, "stop_requested")), warn = 1;
    size_t o = 0, i;

    if (len == 0)
        return 0;
    out[0] = '\0';
    if (outcome == NULL)
        return -1;
    /* How the service ended, as the profiler saw it, else ph-init's own. */
    str_of(rec, json_is_string(json_object_get(rec, "service_signal")) ? "service_signal" : "signal", "a signal",
           sig, sizeof sig);
    str_of(rec, "stop_signal", "the stop signal", stop, sizeof stop);
    if (strcmp(outcome, "stopped") == 0) {
        put(out, len, &o, "stopped on %s in %s", stop, secs_of(rec, "stop_seconds", t, sizeof t));
        warn = 0;
    } else if (strcmp(outcome, "escalated") == 0 && json_array_size(esc) > 0) {
        put(out, len, &o, "the service ignored %s; escalated to ", stop);
        json_array_foreach(esc, i, x)
            put(out, len, &o, "%s%s", i ? " then " : "", ph_escape(a, sizeof a, json_string_value(x) ? json_string_value(x) : "?"));
        put(out, len, &o, " after %s", secs_of(rec, "grace_seconds", t, sizeof t));
    } else if (strcmp(outcome, "escalated") == 0) {
        put(out, len, &o, "the service stopped on %s, but the profiler outlived it and had to be signalled", stop);
    } else if (strcmp(outcome, "crashed") == 0) {
        put(out, len, &o, "the service crashed (%s) %s the stop", sig, before ? "before" : "during");
    } else if (strcmp(outcome, "oom_killed") == 0) {
        put(out, len, &o, "the kernel's OOM killer killed the service (SIGKILL, the container's memory limit)");
    } else if (strcmp(outcome, "killed") == 0) {
        put(out, len, &o, "the service was killed (%s), not by profharness", sig);
    } else if (strcmp(outcome, "signalled") == 0) {
        put(out, len, &o, "%s, forwarded to the service, ended it before the stop", sig);
    } else if (strcmp(outcome, "exited") == 0) {
        put(out, len, &o, "the service exited by itself with status %lld before the stop",
            json_integer_value(json_object_get(rec, "service_exit_code")));
        warn = 0;
    } else {
        put(out, len, &o, "the service ended (outcome `%s`, see %s)", ph_escape(a, sizeof a, outcome), PH_RECORD_NAME);
    }
    if (!ph_run_record_complete(rec)) {
        put(out, len, &o, "; the profiler was killed before it finished: what it wrote may be incomplete");
        warn = 1;
    } else if (present != NULL && present[0] != '\0') {
        put(out, len, &o, "; %s complete", present);
    } else {
        put(out, len, &o, "; the profiler wrote none of its artifacts");
        warn = 1;
    }
    if (left > 0) {
        put(out, len, &o, "; %lld leftover process%s stopped", left, left == 1 ? "" : "es");
        if (killed > 0)
            put(out, len, &o, " (%lld with SIGKILL)", killed);
    }
    if (survived > 0) {
        put(out, len, &o, "; %lld process%s still running when ph-init gave up", survived, survived == 1 ? "" : "es");
        warn = 1;
    }
    return warn;
}
