/* cmd_collapse.c - `profharness collapse perf [OPTIONS] [FILE...]`: perf
 * script output (the FILEs in turn, or stdin) to folded stacks on stdout,
 * as stackcollapse-perf.pl prints them (see ph_collapse.h).  Input is
 * streamed through a 4 MiB buffer; unrecognized lines and skipped events
 * are reported on stderr and never stop the output. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_cmds.h"
#include "ph_collapse.h"
#include "ph_log.h"

#define READ_CHUNK (4u << 20)

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
    "  --map-dir DIR       read perf-PID.map files (JIT symbols) from DIR, not where perf script says\n"
    "Exit status: 0 ok, 1 failure (read, write, libdw), 2 usage.\n";

#define MAP_WINDOW (16u << 20)

/* A regular file fed straight from the page cache, a window at a time,
 * each unmapped once read: no copy into BUF, and resident memory stays a
 * window whatever the size.  1 if done this way, 0 if FD is not a file
 * mmap can read (then read() it), -1 on error. */
static int
feed_mapped(ph_collapse *c, int fd, const char *name, ph_error_t *err)
{
    struct stat st;

    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return 0;
    for (off_t off = 0; off < st.st_size; off += MAP_WINDOW) {
        size_t len = (size_t)(st.st_size - off < MAP_WINDOW ? st.st_size - off : MAP_WINDOW);
        void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, off);
        int rc;
        if (p == MAP_FAILED)
            return off == 0 ? 0 : ph_fail(err, errno, "read `%s`", name);
        rc = ph_collapse_feed(c, p, len, err);
        munmap(p, len);
        if (rc < 0)
            return ph_error_wrap(err, "`%s`", name);
    }
    return 1;
}

/* Feed the file at PATH ("-" = stdin) into C through BUF. */
static int
feed_file(ph_collapse *c, const char *path, char *buf, ph_error_t *err)
{
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    const char *name = fd == STDIN_FILENO ? "stdin" : path;
    int rc = 0;

    if (fd < 0)
        return ph_error_make(err, errno, PH_EXIT_USAGE, "open `%s`", path);
    if ((rc = feed_mapped(c, fd, name, err)) != 0) {
        rc = rc < 0 ? -1 : 0;
        goto done;
    }
    for (;;) {
        ssize_t n = read(fd, buf, READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = ph_fail(err, errno, "read `%s`", name);
            break;
        }
        if (n == 0)
            break;
        if (ph_collapse_feed(c, buf, (size_t)n, err) < 0) {
            rc = ph_error_wrap(err, "`%s`", name);
            break;
        }
    }
done:
    if (fd != STDIN_FILENO)
        close(fd);
    /* a last line without a newline ends with its file */
    if (rc == 0 && ph_collapse_finish(c, err) < 0)
        rc = -1;
    return rc;
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
    char *buf;
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
    if ((buf = malloc(READ_CHUNK)) == NULL) {
        ph_fail(&err, ENOMEM, "collapse: read the input");
        ph_collapse_free(c);
        return ph_error_report(&err);
    }
    if (optind == argc)
        rc = feed_file(c, "-", buf, &err);
    for (int i = optind; i < argc && rc == 0; i++)
        rc = feed_file(c, argv[i], buf, &err);
    free(buf);
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
