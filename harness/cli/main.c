/* main.c - profharness: profile services running in Docker containers.
 *
 * A thin CLI over the library (harness/util … harness/run): parse the global options, dispatch to one
 * subcommand (one file each), print an error once, exit with its status. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_many.h"
#include "cli_timing.h"
#include "ph_cmds.h"
#include "ph_engine.h"
#include "ph_log.h"
#include "ph_suggest.h"
#include "ph_util.h"

#define PH_VERSION "0.1.0"

typedef struct ph_cmd {
    const char *name;
    int (*fn)(const ph_global_opts *g, int argc, char **argv);
    const char *args;
    const char *help;
} ph_cmd;

static const ph_cmd commands[] = {
    { "setup", ph_cmd_setup, "[SERVICE...]", "build the service images and their profiling images" },
    { "start", ph_cmd_start, "--mode MODE [OPTIONS] [SERVICE...]",
      "restart services under a profiling mode (--build, --allow-unnamed: `start --help`)" },
    { "attach", ph_cmd_attach, "--mode MODE [OPTIONS] [SERVICE...]",
      "profile running services without restarting them (--allow-unnamed)" },
    { "stop", ph_cmd_stop, "[--discard] [LIMITS] [SERVICE...]", "stop profiled services gracefully and collect their artifacts" },
    { "restore", ph_cmd_restore, "[LIMITS] [SERVICE...]", "run the services without profiling (collects first)" },
    { "down", ph_cmd_down, "[LIMITS] [SERVICE...]", "stop the services, whatever runs them (collects first)" },
    { "collect", ph_cmd_collect, "[LIMITS] [SERVICE...]", "copy the artifacts there are now, without stopping" },
    { "status", ph_cmd_status, "", "table: service, mode, state, since, run dir (compose's containers too)" },
    { "modes", ph_cmd_modes, "", "the modes there are (shipped, the project's profiles/, --profiles)" },
    { "logs", ph_cmd_logs, "[-f] SERVICE", "print (or follow) a service's output (its last run's, once gone)" },
    { "flamegraph", ph_cmd_flamegraph, "[OPTIONS] [FILE...]", "render folded stacks as an SVG flamegraph" },
    { "diff", ph_cmd_diff, "[-n] A.folded B.folded", "differential folded stacks from two profiles" },
    { "prune", ph_cmd_prune, "[--all]", "remove profiling images and old tools volumes no longer needed" },
    { "collapse", ph_cmd_collapse, "perf [OPTIONS] [FILE...]", "perf script output to folded stacks" },
    { "report", ph_cmd_report, "[RUN_DIR|SERVICE...]", "write each run's report.html and summary.json, and the index" },
    { "compare", ph_cmd_compare, "[OPTIONS] A [B]", "compare two runs (--fail-if EXPR for CI)" },
};

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: profharness [-f FILE]... [-p PROJECT] [--profile NAME]... [--env-file FILE]...\n"
            "                   [--project-directory DIR] [--profiles DIR] [-o OUTDIR] [-v] COMMAND [ARGS]\n"
            "\n"
            "Profile services defined in a compose file under strace, perf, valgrind\n"
            "(massif, callgrind) or the built-in sampler, in any image, restarted under the\n"
            "profiler or attached to while they run; stop them so every profiler flushes,\n"
            "and collect the artifacts into OUTDIR/<service>/<UTC time>-<mode>/.\n"
            "\n"
            "options:\n"
            "  -f, --file FILE        compose file; repeat to merge several, in order (default: COMPOSE_FILE,\n"
            "                         else compose.yaml, compose.yml, docker-compose.yml or docker-compose.yaml\n"
            "                         here or in a folder above, with its compose.override.* merged)\n"
            "  -p, --project NAME     project name (default: COMPOSE_PROJECT_NAME, `name:`, the folder's)\n"
            "      --profile NAME     enable a compose profile; repeatable (default: COMPOSE_PROFILES)\n"
            "      --env-file FILE    the project's environment file; repeatable (default: .env)\n"
            "      --project-directory DIR  where relative paths start (default: the first file's folder)\n"
            "      --profiles DIR     more modes, over the shipped ones and the project's own profiles/\n"
            "  -o, --output DIR       where artifacts land (default: contrib/profiling in the project directory)\n"
            "  -v, --verbose          debug logging (also PH_LOG=debug)\n"
            "      --context NAME     the Docker context to use (wins over DOCKER_HOST and DOCKER_CONTEXT);\n"
            "                         repeat it to run the command on several Engines at once (below)\n"
            "      --engine-stall SECONDS  a transfer that moves less than a byte a second this long has\n"
            "                         stalled: it fails, saying so (default 60; also PH_ENGINE_STALL)\n"
            "      --timings[=sorted] after the command, its stages and the time per category on stderr\n"
            "                         (also PH_TIMINGS=1 or sorted; PH_TIMINGS=off records nothing)\n"
            "  -h, --help             this text\n"
            "      --version          print the version\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %-34s %s\n", commands[i].name, commands[i].args, commands[i].help);
    fprintf(out,
            "\n"
            "With no SERVICE a command applies to every service in the compose file.\n"
            "LIMITS, on what one collection takes out of a container (`COMMAND --help`):\n"
            "  --max-bytes SIZE  --max-entries N  --min-free SIZE; the mode's `collect:` else.\n"
            "\n"
            "environment:\n"
            "  DOCKER_HOST            the Engine (unix:///var/run/docker.sock by default; tcp://HOST:PORT)\n"
            "  DOCKER_TLS_VERIFY, DOCKER_TLS, DOCKER_CERT_PATH   TLS to a tcp:// Engine, as for docker\n"
            "  DOCKER_CONTEXT, DOCKER_CONFIG                    the Docker context, as for docker\n"
            "  OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT  export each command's stages as OpenTelemetry spans\n"
            "                         (OTLP/HTTP; the other OTEL_* settings and TRACEPARENT are honoured)\n"
            "  PH_DATA_DIR            where profiles/ and images/ are (default: found from the binary:\n"
            "                         ../share/profharness when installed, .. in a build tree)\n"
            "  PH_CONTEXTS            a,b,...: Docker contexts, as --context a --context b (when no --context)\n"
            "  PH_JOBS                how many services stop at once (default 8; 1: one after the other)\n"
            "  PH_ENGINE_STALL        seconds (or 1m30s) without progress before a transfer has stalled\n"
            "  PH_SERVICE_LOG_MAX     how much of a service's output service.log keeps (default 256MiB)\n"
            "\n"
            "Several Engines (--context a --context b): the command runs on each at once, its lines\n"
            "prefixed with the context; each host's runs go to OUTDIR/@<context>/<service>/<run>/;\n"
            "after stop, collect, restore and down, a service's runs of the sampler and perf modes are\n"
            "merged into OUTDIR/<service>/<run>-merged/ (stacks added up, flamegraph, pprof, report),\n"
            "all listed in OUTDIR/index.html; the exit status is the worst of the hosts'.\n"
            "\n"
            "exit status: 0 ok, 1 failure (Engine, disk, a service), 2 usage or bad input,\n"
            "3 a `compare --fail-if` condition held, 130/143 interrupted by SIGINT/SIGTERM.\n"
            "stop: 0 = collected; 1 = a fault, the container is kept and the hint says how to\n"
            "retry (`stop --discard` gives a run up).\n");
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "file", required_argument, NULL, 'f' },
        { "profiles", required_argument, NULL, 'P' },
        { "output", required_argument, NULL, 'o' },
        { "project", required_argument, NULL, 'p' },
        { "project-name", required_argument, NULL, 'p' },
        { "profile", required_argument, NULL, 'R' },
        { "env-file", required_argument, NULL, 'E' },
        { "project-directory", required_argument, NULL, 'D' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "context", required_argument, NULL, 'C' },
        { PH_CLI_MANY_MEMBER, required_argument, NULL, 'M' },
        { "engine-stall", required_argument, NULL, 'S' },
        { "timings", optional_argument, NULL, 'T' },
        { NULL, 0, NULL, 0 },
    };
    ph_global_opts g = {
        .compose_file = NULL,
        .profiles_dir = NULL,
        .out_dir = NULL,
        .project = NULL,
    };
    /* Each repeatable option takes at most every argument. */
    const char **files = calloc((size_t)argc + 1, sizeof *files), **env_files = calloc((size_t)argc + 1, sizeof *files),
               **profiles = calloc((size_t)argc + 1, sizeof *files);
    int c, first, rc = 2;
    ph_cli_many many = { .n = 0 };
    const char *member = NULL; /* one of several Engines (cli_many.h) */

    if (files == NULL || env_files == NULL || profiles == NULL) {
        fprintf(stderr, "profharness: out of memory\n");
        rc = 1;
        goto out;
    }
    g.compose.files = files;
    g.compose.env_files = env_files;
    g.compose.profiles = profiles;

    while ((c = getopt_long(argc, argv, "+f:o:p:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            files[g.compose.n_files++] = optarg;
            if (g.compose_file == NULL)
                g.compose_file = optarg;
            break;
        case 'E': env_files[g.compose.n_env_files++] = optarg; break;
        case 'R': profiles[g.compose.n_profiles++] = optarg; break;
        case 'D': g.compose.project_dir = optarg; break;
        case 'P': g.profiles_dir = optarg; break;
        case 'o': g.out_dir = optarg; break;
        case 'p': g.project = g.compose.project = optarg; break;
        case 'v': ph_log_set_level(PH_LOG_DEBUG); break;
        case 'h': usage(stdout); rc = 0; goto out;
        case 'V': printf("profharness %s\n", PH_VERSION); rc = 0; goto out;
        case 'C': {
            ph_error_t err = NULL;

            if (ph_cli_many_add(&many, optarg, &err) < 0) {
                ph_error_wrap(&err, "--context");
                ph_error_report(&err);
                goto out;
            }
            break;
        }
        case 'M': member = optarg; break;
        case 'S': {
            ph_error_t err = NULL;
            long stall = 0;

            if (ph_engine_stall_parse(optarg, &stall, &err) < 0) {
                fprintf(stderr, "profharness: --engine-stall: %s\n", err->msg);
                ph_error_free(&err);
                goto out;
            }
            ph_engine_set_stall(stall);
            break;
        }
        case 'T':
            if (ph_cli_timings_set(optarg ? optarg : "1") < 0) {
                fprintf(stderr, "profharness: --timings=`%s`: expected --timings or --timings=sorted\n", optarg);
                goto out;
            }
            break;
        default: usage(stderr); goto out;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        goto out;
    }
    first = optind;
    if (member == NULL && many.n == 0 && getenv("PH_CONTEXTS") != NULL) {
        ph_error_t err = NULL;

        if (ph_cli_many_add_list(&many, getenv("PH_CONTEXTS"), &err) < 0) {
            ph_error_report(&err);
            goto out;
        }
    }
    if (member != NULL)
        ph_engine_set_context(member);
    else if (many.n == 1)
        ph_engine_set_context(many.contexts[0]);
    else if (many.n > 1 && ph_cli_many_fans_out(argv[first])) {
        rc = ph_cli_many_run(&g, &many, argc, argv, first);
        goto out;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[first], commands[i].name) == 0) {
            optind = 0; /* GNU getopt: 0 re-initialises for the subcommand's own options */
            rc = ph_cli_run_timed(commands[i].name, commands[i].fn, &g, argc - first, argv + first);
            goto out;
        }
    }
    {
        const char *names[PH_ARRAY_LEN(commands)];
        const char *near;

        for (size_t i = 0; i < PH_ARRAY_LEN(commands); i++)
            names[i] = commands[i].name;
        near = ph_suggest(argv[first], names, PH_ARRAY_LEN(names));
        if (near != NULL)
            fprintf(stderr, "profharness: unknown command `%s`; did you mean `%s`?\n", argv[first], near);
        else
            fprintf(stderr, "profharness: unknown command `%s` (see profharness --help)\n", argv[first]);
    }
out:
    free(files);
    free(env_files);
    free(profiles);
    return rc;
}
