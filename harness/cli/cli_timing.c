/* cli_timing.c - every command timed (see cli_timing.h). */
#include "cli_timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_error.h"
#include "ph_otlp.h"
#include "ph_timing.h"

enum { OFF = -1, QUIET = 0, FLOW = 1, SORTED = 2, UNSET = 3 };

static int timings = UNSET;

/* The error a command printed, for its span. */
static char last_error[2048];

static int
parse(const char *v, int *out)
{
    if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0)
        *out = QUIET;
    else if (strcmp(v, "off") == 0)
        *out = OFF;
    else if (strcmp(v, "1") == 0 || strcmp(v, "flow") == 0)
        *out = FLOW;
    else if (strcmp(v, "sorted") == 0)
        *out = SORTED;
    else
        return -1;
    return 0;
}

int
ph_cli_timings_set(const char *value)
{
    return parse(value, &timings);
}

static void
note_error(const ph_error *e)
{
    snprintf(last_error, sizeof last_error, "%s", e->msg);
}

/* What the command is about, on its root stage: its arguments, and the
 * mode of a start. */
static void
describe_command(int argc, char **argv)
{
    ph_stage *root = ph_stage_current();
    char args[1024] = "";
    size_t o = 0;

    for (int i = 1; i < argc && o < sizeof args - 1; i++) {
        if ((strcmp(argv[i], "--mode") == 0 || strcmp(argv[i], "-m") == 0) && i + 1 < argc)
            ph_stage_attr(root, "profharness.mode", argv[i + 1]);
        else if (strncmp(argv[i], "--mode=", 7) == 0)
            ph_stage_attr(root, "profharness.mode", argv[i] + 7);
        o += (size_t)snprintf(args + o, sizeof args - o, "%s%s", o ? " " : "", argv[i]);
    }
    ph_stage_attr(root, "profharness.command", argv[0]);
    if (args[0])
        ph_stage_attr(root, "profharness.args", args);
}

int
ph_cli_run_timed(const char *name, int (*fn)(const ph_global_opts *, int, char **), const ph_global_opts *g,
                 int argc, char **argv)
{
    ph_error_t err = NULL;
    int rc;

    if (timings == UNSET && parse(getenv("PH_TIMINGS"), &timings) < 0) {
        fprintf(stderr, "profharness: PH_TIMINGS=`%s`: expected 1, sorted or off\n", getenv("PH_TIMINGS"));
        return PH_EXIT_USAGE;
    }
    if (timings == OFF) /* no tree, no line, no export */
        return fn(g, argc, argv);
    ph_error_on_report(note_error);
    ph_otlp_trace_current(); /* decided before any work: TRACEPARENT or a new trace */
    ph_timing_start(name);
    describe_command(argc, argv);
    rc = fn(g, argc, argv);
    ph_timing_finish(rc != 0, last_error[0] ? last_error : NULL);
    fflush(stdout);
    if (timings == FLOW || timings == SORTED)
        ph_timing_print(stderr, ph_timing_root(), timings == SORTED ? PH_TIMING_SORTED : 0, &err);
    else if (strcmp(name, "stop") == 0 && rc == 0 && ph_timing_root() && ph_timing_root()->first_child)
        /* One line after a stop that did something; none after its
         * error, or its --help (--timings shows those too). */
        ph_timing_print_line(stderr, ph_timing_root(), &err);
    ph_error_free(&err);
    ph_otlp_export(ph_timing_root());
    ph_timing_reset();
    return rc;
}
