/* main.c - profharness: profile services running in Docker containers.
 *
 * A thin CLI over the library (harness/util … harness/run): parse the global options, dispatch to one
 * subcommand (one file each), print an error once, exit with its status. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_cmds.h"
#include "ph_engine.h"
#include "ph_log.h"
#include "ph_otlp.h"
#include "ph_timing.h"

#define PH_VERSION "0.1.0"

typedef struct ph_cmd {
    const char *name;
    int (*fn)(const ph_global_opts *g, int argc, char **argv);
    const char *args;
    const char *help;
} ph_cmd;

static const ph_cmd commands[] = {
    { "setup", ph_cmd_setup, "[SERVICE...]", "build the service images and their profiling images" },
    { "start", ph_cmd_start, "--mode MODE [SERVICE...]", "restart services under a profiling mode" },
    { "stop", ph_cmd_stop, "[SERVICE...]", "stop profiled services gracefully and collect their artifacts" },
    { "restore", ph_cmd_restore, "[SERVICE...]", "run the services without profiling (collects first)" },
    { "collect", ph_cmd_collect, "[SERVICE...]", "copy the artifacts there are now, without stopping" },
    { "status", ph_cmd_status, "", "table: service, mode, state, since, run dir" },
    { "modes", ph_cmd_modes, "", "the modes found in the profiles directory" },
    { "logs", ph_cmd_logs, "[-f] SERVICE", "print (or follow) a service's output" },
    { "flamegraph", ph_cmd_flamegraph, "[OPTIONS] [FILE...]", "render folded stacks as an SVG flamegraph" },
    { "diff", ph_cmd_diff, "[-n] A.folded B.folded", "differential folded stacks from two profiles" },
};

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: profharness [-f FILE] [--profiles DIR] [-o OUTDIR] [-p PROJECT] [--context NAME] [-v]\n"
            "                   COMMAND [ARGS]\n"
            "\n"
            "Profile services defined in a compose file under strace, valgrind (massif,\n"
            "callgrind) or the built-in sampler, stop them so every profiler flushes,\n"
            "and collect the artifacts into OUTDIR/<service>/<UTC time>-<mode>/.\n"
            "\n"
            "options:\n"
            "  -f, --file FILE        compose file (default compose.yaml)\n"
            "      --profiles DIR     profile (mode) definitions (default profiles)\n"
            "  -o, --output DIR       where artifacts land (default contrib/profiling)\n"
            "  -p, --project NAME     project name (default: the compose file's `name:` or folder)\n"
            "      --context NAME     the Docker context to use (wins over DOCKER_HOST and DOCKER_CONTEXT)\n"
            "      --timings[=sorted] after the command, its stages and the time per category on stderr\n"
            "                         (also PH_TIMINGS=1 or sorted; PH_TIMINGS=off records nothing)\n"
            "  -v, --verbose          debug logging (also PH_LOG=debug)\n"
            "  -h, --help             this text\n"
            "      --version          print the version\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %-26s %s\n", commands[i].name, commands[i].args, commands[i].help);
    fprintf(out,
            "\n"
            "With no SERVICE a command applies to every service in the compose file.\n"
            "\n"
            "environment:\n"
            "  DOCKER_HOST            the Engine (unix:///var/run/docker.sock by default; tcp://HOST:PORT)\n"
            "  DOCKER_TLS_VERIFY, DOCKER_TLS, DOCKER_CERT_PATH   TLS to a tcp:// Engine, as for docker\n"
            "  DOCKER_CONTEXT, DOCKER_CONFIG                    the Docker context, as for docker\n"
            "  OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT  export each command's stages as OpenTelemetry spans\n"
            "                         (OTLP/HTTP; the other OTEL_* settings and TRACEPARENT are honoured)\n"
            "  PH_DATA_DIR            where images/ and build/ are (default: next to the binary)\n"
            "\n"
            "exit status: 0 ok, 1 failure (Engine, disk, a service), 2 usage or bad input.\n");
}

/* The error a command printed, for its span. */
static char last_error[2048];

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
    char args[1024] = "";
    size_t o = 0;

    for (int i = 1; i < argc && o < sizeof args - 1; i++) {
        if ((strcmp(argv[i], "--mode") == 0 || strcmp(argv[i], "-m") == 0) && i + 1 < argc)
            ph_stage_attr(ph_stage_current(), "profharness.mode", argv[i + 1]);
        else if (strncmp(argv[i], "--mode=", 7) == 0)
            ph_stage_attr(ph_stage_current(), "profharness.mode", argv[i] + 7);
        o += (size_t)snprintf(args + o, sizeof args - o, "%s%s", o ? " " : "", argv[i]);
    }
    ph_stage_attr(ph_stage_current(), "profharness.command", argv[0]);
    if (args[0])
        ph_stage_attr(ph_stage_current(), "profharness.args", args);
}

/* PH_TIMINGS / --timings: -1 not even recorded, 0 no tables, 1 tables,
 * 2 sorted tables. */
static int
timings_mode(const char *v, int *out)
{
    if (v != NULL && strcmp(v, "off") == 0)
        *out = -1;
    else if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0)
        *out = 0;
    else if (strcmp(v, "1") == 0 || strcmp(v, "flow") == 0)
        *out = 1;
    else if (strcmp(v, "sorted") == 0)
        *out = 2;
    else
        return -1;
    return 0;
}

/* Run one command timed: its stages are recorded; afterwards the tables
 * (--timings), or for stop one summary line, go to stderr, and the spans
 * to an OpenTelemetry collector when one is configured. */
static int
run_timed(const ph_cmd *cmd, const ph_global_opts *g, int argc, char **argv, int timings)
{
    ph_error_t err = NULL;
    int rc;

    if (timings < 0) /* PH_TIMINGS=off: no tree, no line, no export */
        return cmd->fn(g, argc, argv);
    ph_error_on_report(note_error);
    ph_otlp_trace_current(); /* decided before any work: TRACEPARENT or a new trace */
    ph_timing_start(cmd->name);
    describe_command(argc, argv);
    rc = cmd->fn(g, argc, argv);
    ph_timing_finish(rc != 0, last_error[0] ? last_error : NULL);
    fflush(stdout);
    if (timings)
        ph_timing_print(stderr, ph_timing_root(), timings == 2 ? PH_TIMING_SORTED : 0, &err);
    else if (strcmp(cmd->name, "stop") == 0)
        ph_timing_print_line(stderr, ph_timing_root(), &err);
    ph_error_free(&err);
    ph_otlp_export(ph_timing_root());
    ph_timing_reset();
    return rc;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "file", required_argument, NULL, 'f' },
        { "profiles", required_argument, NULL, 'P' },
        { "output", required_argument, NULL, 'o' },
        { "project", required_argument, NULL, 'p' },
        { "context", required_argument, NULL, 'C' },
        { "timings", optional_argument, NULL, 'T' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    ph_global_opts g = {
        .compose_file = "compose.yaml",
        .profiles_dir = "profiles",
        .out_dir = "contrib/profiling",
        .project = NULL,
    };
    int c, first, timings = 0;

    if (timings_mode(getenv("PH_TIMINGS"), &timings) < 0) {
        fprintf(stderr, "profharness: PH_TIMINGS=`%s`: expected 1 or sorted\n", getenv("PH_TIMINGS"));
        return 2;
    }
    while ((c = getopt_long(argc, argv, "+f:o:p:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': g.compose_file = optarg; break;
        case 'P': g.profiles_dir = optarg; break;
        case 'o': g.out_dir = optarg; break;
        case 'p': g.project = optarg; break;
        case 'C': ph_engine_set_context(optarg); break;
        case 'T':
            if (optarg == NULL) {
                timings = 1;
            } else if (timings_mode(optarg, &timings) < 0) {
                fprintf(stderr, "profharness: --timings=`%s`: expected --timings or --timings=sorted\n", optarg);
                return 2;
            }
            break;
        case 'v': ph_log_set_level(PH_LOG_DEBUG); break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("profharness %s\n", PH_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    first = optind;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[first], commands[i].name) == 0) {
            optind = 0; /* GNU getopt: 0 re-initialises for the subcommand's own options */
            return run_timed(&commands[i], &g, argc - first, argv + first, timings);
        }
    }
    fprintf(stderr, "profharness: unknown command `%s` (see profharness --help)\n", argv[first]);
    return 2;
}
