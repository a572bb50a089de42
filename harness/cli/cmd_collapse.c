/* cmd_collapse.c - `profharness collapse perf [OPTIONS] [FILE...]`: perf
 * script output (the FILEs in turn, or stdin) to folded stacks on stdout,
 * as stackcollapse-perf.pl prints them (see ph_collapse.h).  Input is
 * streamed: a regular file from the page cache, a pipe through a 1 MiB
 * buffer; unrecognized lines and skipped events are reported on stderr and
 * never stop the output. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_common.h"
#include "ph_collapse.h"
#include "ph_log.h"

static const char usage[] =
    "usage: profharness collapse perf [OPTIONS] [FILE...]   (perf script output in, folded stacks out)\n"
    "Reads `perf script` output from the FILEs in turn, or stdin, and prints one\n"
    "`comm;root;...;leaf count` line per distinct stack, as stackcollapse-perf.pl does.\n"
    "  --pid               process names with their PID (comm-PID)\n"
    "  --tid               ... and TID (comm-PID/TID)\n"
    "  --kernel            annotate kernel frames: name_[k]\n"
    "  --jit               annotate JIT frames (of /tmp/perf-PID.map): name_[j]\n"
    "  --all               --kernel and --jit\n"
    "  --addrs             keep the address of frames without a symbol: [dso <addr>]\n"
    "  --event-filter EV   keep samples of event EV (default: the first event seen)\n"
    "  --inline            add the functions inlined at each address, from DWARF (libdw): name_[i]\n"
    "  --context           with --inline: each function's file:line\n"
    "  --map-dir DIR       name JIT frames perf script left [unknown] from DIR/perf-PID.map\n"
    "                      (no map is read without it; --map-dir /tmp for this machine's)\n"
    "Exit status: 0 ok, 1 failure (read, write, libdw), 2 usage.\n";

static int
chunk_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_collapse_feed(ctx, buf, len, err);
}

/* Feed the file at PATH ("-" = stdin) into C: a regular file straight
 * from the page cache. */
static int
feed_file(ph_collapse *c, const char *path, ph_error_t *err)
{
    if (ph_cli_read_input(path, PH_READ_MAP, chunk_cb, c, err) < 0)
        return -1;
    /* a last line without a newline ends with its file */
    return ph_collapse_finish(c, err);
}

static void
report(const ph_collapse_stats *st)
{
    if (st->filtered)
        ph_warn("collapse: kept the samples of event `%s` only; %zu of `%s` and others skipped (--event-filter picks one)",
                st->event, st->filtered, st->other_event);
    if (st->unrecognized) {
        char lines[160] = "";
        size_t o = 0;
        for (size_t i = 0; i < PH_COLLAPSE_BAD_KEPT && i < st->unrecognized; i++)
            o += (size_t)snprintf(lines + o, sizeof lines - o, "%s%zu", i ? ", " : "", st->unrecognized_line_numbers[i]);
        ph_warn("collapse: %zu of %zu lines are not perf script output and were skipped (line%s %s%s)%s",
                st->unrecognized, st->lines, st->unrecognized > 1 ? "s" : "", lines,
                st->unrecognized > PH_COLLAPSE_BAD_KEPT ? ", ..." : "",
                st->long_lines ? "; lines longer than 16 MiB are not read" : "");
    }
}

int
ph_cmd_collapse(const ph_global_opts *g, int argc, char **argv)
{
    enum { O_PID = 256, O_TID, O_KERNEL, O_JIT, O_ALL, O_ADDRS, O_EVENT, O_INLINE, O_CONTEXT, O_MAPDIR };
    static const struct option longopts[] = {
        { "pid", no_argument, NULL, O_PID },           { "tid", no_argument, NULL, O_TID },
        { "kernel", no_argument, NULL, O_KERNEL },     { "jit", no_argument, NULL, O_JIT },
        { "all", no_argument, NULL, O_ALL },           { "addrs", no_argument, NULL, O_ADDRS },
        { "event-filter", required_argument, NULL, O_EVENT },
        { "inline", no_argument, NULL, O_INLINE },     { "context", no_argument, NULL, O_CONTEXT },
        { "map-dir", required_argument, NULL, O_MAPDIR }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static char obuf[1u << 20];
    ph_collapse_opts o;
    ph_error_t err = NULL;
    ph_collapse *c;
    int ch, rc = 0;

    (void)g;
    ph_collapse_opts_init(&o);
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        fputs(usage, stdout);
        return PH_EXIT_OK;
    }
    if (argc < 2 || strcmp(argv[1], "perf") != 0) {
        ph_bad_input(&err, "collapse: %s%s%s: the format collapsed is `perf` (perf script output)", argc < 2 ? "no format" : "`",
                     argc < 2 ? "" : argv[1], argc < 2 ? "" : "`");
        ph_error_hint(&err, "profharness collapse perf [OPTIONS] [FILE...]");
        return ph_error_report(&err);
    }
    argc--; /* "perf" is the subcommand's argv[0] from here */
    argv++;
    while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (ch) {
        case O_PID: o.pid = 1; break;
        case O_TID: o.tid = 1; break;
        case O_KERNEL: o.kernel = 1; break;
        case O_JIT: o.jit = 1; break;
        case O_ALL: o.kernel = o.jit = 1; break;
        case O_ADDRS: o.addrs = 1; break;
        case O_EVENT: o.event_filter = optarg; break;
        case O_INLINE: o.inline_frames = 1; break;
        case O_CONTEXT: o.context = 1; break;
        case O_MAPDIR: o.map_dir = optarg; break;
        case 'h': fputs(usage, stdout); return PH_EXIT_OK;
        default: fputs(usage, stderr); return PH_EXIT_USAGE;
        }
    }
    if ((c = ph_collapse_new(&o, &err)) == NULL)
        return ph_error_report(&err);
    if (optind == argc)
        rc = feed_file(c, "-", &err);
    for (int i = optind; i < argc && rc == 0; i++)
        rc = feed_file(c, argv[i], &err);
    if (rc == 0) {
        setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
        report(ph_collapse_get_stats(c));
        if (ph_collapse_write(c, stdout, &err) == 0)
            ph_debug("collapse: %zu samples, %zu stacks", ph_collapse_get_stats(c)->samples,
                     ph_collapse_get_stats(c)->stacks);
    }
    ph_collapse_free(c);
    return ph_error_report(&err);
}
