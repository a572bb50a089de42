/* cmd_flamegraph.c - `profharness flamegraph [OPTIONS] [FILE...]`: folded
 * stacks (files, or stdin) to an SVG on stdout or in `-o FILE`; and
 * `profharness diff A.folded B.folded`: the differential folded input on
 * stdout.
 *
 * Input is streamed through a 1 MiB buffer into ph_folded, never held
 * whole: memory is the interned stacks, not the (often tens of MB of)
 * text.  Bad lines are reported on stderr with their count and the first
 * line numbers; they never stop the graph.
 *
 * When nothing can be drawn (no input, or no valid line) the exit status
 * is 2 either way; stdout gets a small SVG saying why (flamegraph.pl does
 * the same), so `> out.svg` is not left invalid, while `-o FILE` is left
 * as it was.  `-o FILE` is written to a temporary file beside it and
 * renamed over it only when the whole graph is written: a failure (disk
 * full, an error) never leaves half an SVG there. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_common.h"
#include "ph_flame.h"
#include "ph_folded.h"
#include "ph_log.h"
#include "ph_util.h"

static int
chunk_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_folded_feed(ctx, buf, len, err);
}

static ph_folded *
read_inputs(int flags, int argc, char **argv, ph_error_t *err)
{
    ph_folded *f = ph_folded_new(flags, err);
    int rc = 0;

    if (f == NULL)
        return NULL;
    /* each file finished: one without a final newline must not run into
     * the next */
    if (argc == 0)
        rc = ph_cli_read_input("-", 0, chunk_cb, f, err) < 0 ? -1 : ph_folded_finish(f, err);
    for (int i = 0; i < argc && rc == 0; i++)
        rc = ph_cli_read_input(argv[i], 0, chunk_cb, f, err) < 0 ? -1 : ph_folded_finish(f, err);
    if (rc < 0) {
        ph_folded_free(f);
        return NULL;
    }
    return f;
}

static void
report_bad_lines(const char *what, const ph_folded_stats *st)
{
    char lines[160] = "";
    size_t o = 0;

    if (st->bad_lines == 0)
        return;
    for (size_t i = 0; i < PH_FOLDED_BAD_KEPT && i < st->bad_lines; i++)
        o += (size_t)snprintf(lines + o, sizeof lines - o, "%s%zu", i ? ", " : "", st->bad_line_numbers[i]);
    ph_warn("%s%zu of %zu lines are not folded stacks and were skipped (line%s %s%s)%s", what, st->bad_lines, st->lines,
            st->bad_lines > 1 ? "s" : "", lines, st->bad_lines > PH_FOLDED_BAD_KEPT ? ", ..." : "",
            st->long_lines ? "; lines longer than 16 MiB are not read" : "");
}

/* The output file PATH, atomically: opened as a temporary file beside it
 * (its name in TMP), made PATH by out_commit, removed by out_abort. */
static FILE *
out_open(const char *path, char *tmp, size_t tmplen, ph_error_t *err)
{
    int fd = -1;
    mode_t mask = umask(0);
    FILE *f;

    umask(mask);
    if ((size_t)snprintf(tmp, tmplen, "%s.XXXXXX", path) >= tmplen) {
        ph_bad_input(err, "-o: `%s`: path too long", path);
        return NULL;
    }
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
        ph_fail(err, errno, "create a temporary file for `%s`", path);
        return NULL;
    }
    /* mkostemp makes it 0600; a graph is for reading, as a new file is */
    if (fchmod(fd, 0666 & ~mask) < 0 || (f = fdopen(fd, "w")) == NULL) {
        ph_fail(err, errno, "open `%s`", tmp);
        close(fd);
        unlink(tmp);
        return NULL;
    }
    return f;
}

static int
out_commit(FILE *f, const char *tmp, const char *path, ph_error_t *err)
{
    if (fflush(f) != 0 || fsync(fileno(f)) < 0 || ferror(f)) {
        ph_fail(err, errno, "write `%s`", tmp);
        fclose(f);
        unlink(tmp);
        return -1;
    }
    if (fclose(f) != 0 || rename(tmp, path) < 0) {
        ph_fail(err, errno, "write `%s`", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void
out_abort(FILE *f, const char *tmp)
{
    fclose(f);
    unlink(tmp);
}

static const char usage[] =
    "usage: profharness flamegraph [OPTIONS] [FILE...]   (folded stacks in, SVG on stdout)\n"
    "Reads `frame;frame;leaf COUNT` lines (or `stack BEFORE AFTER`: a differential graph)\n"
    "from the FILEs in turn, or stdin.\n"
    "  -o, --output FILE   write the SVG to FILE (replaced only once it is complete)\n"
    "  --title TEXT        --subtitle TEXT     --countname NAME (samples, ns, bytes, ...)\n"
    "  --colors PALETTE    hot (default), mem, io, red, green, blue, yellow, purple, aqua, orange;\n"
    "                      by name: java, js, perl, wakeup, chain.  Annotated frames (name_[k] kernel,\n"
    "                      _[j] JIT, _[i] inlined, _[w] waker) are shown without the annotation,\n"
    "                      orange, green, aqua, aqua in any palette\n"
    "  --width PX          image width (1200)\n"
    "  --minwidth PX|P%    omit frames narrower than PX pixels or P% of the total (0.1)\n"
    "  --inverted          icicle graph: root at the top\n"
    "  --reverse           reverse each stack (leaf becomes root)\n"
    "  --flamechart        keep input order as time order; merge only consecutive stacks\n"
    "  --no-differential   draw two-count input as an ordinary graph of the AFTER counts\n"
    "  --diff-colors HOW   differential colours: `subtree` (default), each frame's change with its\n"
    "                      children; `self`, its own change alone, as flamegraph.pl colours\n"
    "Exit status: 0 ok, 1 failure (read, write), 2 usage or no valid stack (stdout then gets\n"
    "a small SVG saying so; -o FILE is left as it was).\n";

int
ph_cmd_flamegraph(const ph_global_opts *g, int argc, char **argv)
{
    enum { O_TITLE = 256, O_SUB, O_COUNT, O_COLORS, O_WIDTH, O_MINW, O_INV, O_REV, O_CHART, O_NODIFF, O_DIFFCOL };
    static const struct option longopts[] = {
        { "title", required_argument, NULL, O_TITLE },      { "subtitle", required_argument, NULL, O_SUB },
        { "countname", required_argument, NULL, O_COUNT },  { "colors", required_argument, NULL, O_COLORS },
        { "palette", required_argument, NULL, O_COLORS },   { "width", required_argument, NULL, O_WIDTH },
        { "minwidth", required_argument, NULL, O_MINW },    { "inverted", no_argument, NULL, O_INV },
        { "reverse", no_argument, NULL, O_REV },            { "flamechart", no_argument, NULL, O_CHART },
        { "no-differential", no_argument, NULL, O_NODIFF }, { "diff-colors", required_argument, NULL, O_DIFFCOL },
        { "output", required_argument, NULL, 'o' },         { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *output = NULL;
    char tmp[4096];
    FILE *out = stdout;
    ph_flame_opts o;
    ph_flame_stats st;
    ph_error_t err = NULL;
    ph_folded *f;
    char *end;
    int c;

    (void)g;
    ph_flame_opts_init(&o);
    while ((c = getopt_long(argc, argv, "+ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case O_TITLE: o.title = optarg; break;
        case O_SUB: o.subtitle = optarg; break;
        case O_COUNT: o.countname = optarg; break;
        case O_COLORS:
            if (!ph_flame_palette_valid(optarg)) {
                ph_bad_input(&err, "--colors: `%s` is not a palette", optarg);
                ph_error_hint(&err, "one of hot, mem, io, red, green, blue, yellow, purple, aqua, orange, java, js, perl, "
                                    "wakeup, chain");
                return ph_error_report(&err);
            }
            o.palette = optarg;
            break;
        case O_WIDTH:
            o.width = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(o.width >= 100 && o.width <= 1e6)) {
                ph_bad_input(&err, "--width: `%s` is not a width in pixels (100 to 1000000)", optarg);
                return ph_error_report(&err);
            }
            break;
        case O_MINW:
            o.minwidth = strtod(optarg, &end);
            o.minwidth_percent = *end == '%';
            if (end == optarg || end[o.minwidth_percent] != '\0' || !(o.minwidth >= 0 && o.minwidth <= 1e6)) {
                ph_bad_input(&err, "--minwidth: `%s` is not a width in pixels or a percentage", optarg);
                return ph_error_report(&err);
            }
            break;
        case O_INV: o.inverted = 1; break;
        case O_REV: o.reverse = 1; break;
        case O_CHART: o.flamechart = 1; break;
        case O_NODIFF: o.differential = 0; break;
        case O_DIFFCOL:
            if (strcmp(optarg, "self") != 0 && strcmp(optarg, "subtree") != 0) {
                ph_bad_input(&err, "--diff-colors: `%s` is neither `subtree` nor `self`", optarg);
                return ph_error_report(&err);
            }
            o.diff_self = strcmp(optarg, "self") == 0;
            break;
        case 'h': fputs(usage, stdout); return PH_EXIT_OK;
        default: fputs(usage, stderr); return PH_EXIT_USAGE;
        }
    }
    f = read_inputs(o.flamechart ? PH_FOLDED_KEEP_ORDER : 0, argc - optind, argv + optind, &err);
    if (f == NULL)
        return ph_error_report(&err);
    report_bad_lines("", ph_folded_get_stats(f));
    if (output && (out = out_open(output, tmp, sizeof tmp, &err)) == NULL) {
        ph_folded_free(f);
        return ph_error_report(&err);
    }
    if (ph_flame_render(f, &o, out, &st, &err) == 0) {
        ph_debug("flamegraph: %zu stacks, %zu frames drawn", st.stacks, st.frames_drawn);
        if (output)
            out_commit(out, tmp, output, &err);
    } else if (output) {
        out_abort(out, tmp);
        if (err->status == PH_EXIT_USAGE)
            ph_error_hint(&err, "`%s` was left as it was", output);
    } else if (err->status == PH_EXIT_USAGE) {
        ph_flame_render_error(err->msg, &o, stdout, NULL); /* a valid SVG that says why */
    }
    ph_folded_free(f);
    return ph_error_report(&err);
}

/* The whole of PATH in *BUF (diff needs both files at once). */
static int
slurp(const char *path, char **buf, size_t *len, ph_error_t *err)
{
    ph_cleanup_fclose FILE *fp = strcmp(path, "-") == 0 ? NULL : fopen(path, "re");
    FILE *in = strcmp(path, "-") == 0 ? stdin : fp;
    size_t cap = 0;

    *buf = NULL;
    *len = 0;
    if (in == NULL)
        return ph_error_make(err, errno, PH_EXIT_USAGE, "open `%s`", path);
    for (;;) {
        size_t n;
        if (cap - *len < 65536) {
            size_t nc = cap ? cap * 2 : 1u << 20;
            char *nb = realloc(*buf, nc);
            if (nb == NULL)
                return ph_fail(err, ENOMEM, "read `%s`", path);
            *buf = nb;
            cap = nc;
        }
        n = fread(*buf + *len, 1, cap - *len, in);
        *len += n;
        if (n == 0)
            return ferror(in) ? ph_fail(err, errno, "read `%s`", path) : 0;
    }
}

static const char diff_usage[] =
    "usage: profharness diff [-n] BEFORE.folded AFTER.folded   (differential folded stacks on stdout)\n"
    "Writes `stack COUNT_BEFORE COUNT_AFTER` for every stack of either file, for\n"
    "`profharness flamegraph` (frames coloured red where AFTER grew, blue where it shrank).\n"
    "  -n   normalise: scale BEFORE's counts to AFTER's total\n"
    "Exit status: 0 ok, 1 failure (read, write), 2 usage.\n";

int
ph_cmd_diff(const ph_global_opts *g, int argc, char **argv)
{
    ph_error_t err = NULL;
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0, bad_a = 0, bad_b = 0;
    int c, normalise = 0;

    (void)g;
    while ((c = getopt(argc, argv, "+nh")) != -1) {
        switch (c) {
        case 'n': normalise = 1; break;
        case 'h': fputs(diff_usage, stdout); return PH_EXIT_OK;
        default: fputs(diff_usage, stderr); return PH_EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        fputs(diff_usage, stderr);
        return PH_EXIT_USAGE;
    }
    if (slurp(argv[optind], &a, &alen, &err) == 0 && slurp(argv[optind + 1], &b, &blen, &err) == 0 &&
        ph_folded_diff(a, alen, b, blen, normalise, stdout, &bad_a, &bad_b, &err) == 0) {
        if (bad_a)
            ph_warn("`%s`: %zu line%s not in the folded format, skipped", argv[optind], bad_a, bad_a > 1 ? "s" : "");
        if (bad_b)
            ph_warn("`%s`: %zu line%s not in the folded format, skipped", argv[optind + 1], bad_b, bad_b > 1 ? "s" : "");
    }
    free(a);
    free(b);
    return ph_error_report(&err);
}
