/* cmd_flamegraph.c - `profharness flamegraph [OPTIONS] [FILE...]`: folded
 * stacks (files, or stdin) to an SVG on stdout; and `profharness diff`. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"
#include "ph_flame.h"
#include "ph_log.h"

#define PH_FOLDED_MAX ((size_t)8 << 30) /* 8 GiB: larger input is a mistake */

/* Append all of F to *buf. */
static int
slurp(FILE *f, const char *name, char **buf, size_t *len, size_t *cap, ph_error_t *err)
{
    for (;;) {
        size_t n;

        if (*cap - *len < 65536) {
            size_t nc = *cap ? *cap * 2 : 1 << 20;
            char *nb;

            if (nc > PH_FOLDED_MAX)
                return ph_bad_input(err, "`%s`: input larger than %zu bytes", name, PH_FOLDED_MAX);
            nb = realloc(*buf, nc);
            if (nb == NULL)
                return ph_fail(err, ENOMEM, "read `%s`", name);
            *buf = nb;
            *cap = nc;
        }
        n = fread(*buf + *len, 1, *cap - *len, f);
        *len += n;
        if (n == 0) {
            if (ferror(f))
                return ph_fail(err, errno, "read `%s`", name);
            return 0;
        }
    }
}

static int
read_inputs(int argc, char **argv, char **buf, size_t *len, ph_error_t *err)
{
    size_t cap = 0;

    *buf = NULL;
    *len = 0;
    if (argc == 0)
        return slurp(stdin, "stdin", buf, len, &cap, err);
    for (int i = 0; i < argc; i++) {
        FILE *f = strcmp(argv[i], "-") == 0 ? stdin : fopen(argv[i], "re");
        int rc;

        if (f == NULL)
            return ph_error_make(err, errno, PH_EXIT_USAGE, "open `%s`", argv[i]);
        rc = slurp(f, argv[i], buf, len, &cap, err);
        if (f != stdin)
            fclose(f);
        if (rc < 0)
            return -1;
        /* Files may lack a final newline; keep the next file's first line apart. */
        if (*len > 0 && (*buf)[*len - 1] != '\n') {
            if (*len == cap) {
                char *nb = realloc(*buf, cap + 1);
                if (nb == NULL)
                    return ph_fail(err, ENOMEM, "read `%s`", argv[i]);
                *buf = nb;
                cap++;
            }
            (*buf)[(*len)++] = '\n';
        }
    }
    return 0;
}

static void report_bad_lines(const ph_flame_stats *st);

static const char usage[] =
    "usage: profharness flamegraph [OPTIONS] [FILE...]   (folded stacks in, SVG on stdout)\n"
    "  --title TEXT       --subtitle TEXT     --countname NAME (samples, ns, bytes, ...)\n"
    "  --colors PALETTE   hot (default), mem, io; differential input is coloured red/blue\n"
    "  --width PX         (1200)              --minwidth PX  prune narrower frames (0.1)\n"
    "  --inverted         icicle graph        --reverse      reverse each stack\n"
    "  --flamechart       keep input order (time), do not merge across it\n";

int
ph_cmd_flamegraph(const ph_global_opts *g, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "title", required_argument, NULL, 't' },      { "subtitle", required_argument, NULL, 's' },
        { "countname", required_argument, NULL, 'c' },  { "colors", required_argument, NULL, 'p' },
        { "palette", required_argument, NULL, 'p' },    { "width", required_argument, NULL, 'w' },
        { "minwidth", required_argument, NULL, 'm' },   { "inverted", no_argument, NULL, 'i' },
        { "reverse", no_argument, NULL, 'r' },          { "flamechart", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },             { NULL, 0, NULL, 0 },
    };
    ph_flame_opts o;
    ph_flame_stats st;
    ph_error_t err = NULL;
    char *buf = NULL, *end;
    size_t len = 0;
    int c;

    (void)g;
    ph_flame_opts_init(&o);
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': o.title = optarg; break;
        case 's': o.subtitle = optarg; break;
        case 'c': o.countname = optarg; break;
        case 'p':
            if (strcmp(optarg, "hot") && strcmp(optarg, "mem") && strcmp(optarg, "io")) {
                fprintf(stderr, "profharness: --colors: `%s` is not one of hot, mem, io\n", optarg);
                return 2;
            }
            o.palette = optarg;
            break;
        case 'w':
        case 'm': {
            double v = strtod(optarg, &end);
            if (*end != '\0' || v < 0 || (c == 'w' && v < 100)) {
                fprintf(stderr, "profharness: --%s: `%s` is not a valid width\n", c == 'w' ? "width" : "minwidth", optarg);
                return 2;
            }
            if (c == 'w')
                o.width = v;
            else
                o.minwidth = v;
            break;
        }
        case 'i': o.inverted = 1; break;
        case 'r': o.reverse = 1; break;
        case 'f': o.flamechart = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    /* One regular file is mapped, not copied: the renderer only indexes it. */
    if (argc - optind == 1 && strcmp(argv[optind], "-") != 0) {
        int fd = open(argv[optind], O_RDONLY | O_CLOEXEC);
        struct stat sb;

        if (fd < 0) {
            ph_error_make(&err, errno, PH_EXIT_USAGE, "open `%s`", argv[optind]);
            return ph_error_report(&err);
        }
        if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
            void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

            close(fd);
            if (m != MAP_FAILED) {
                madvise(m, (size_t)sb.st_size, MADV_SEQUENTIAL);
                if (ph_flame_render_folded(m, (size_t)sb.st_size, &o, stdout, &st, &err) == 0)
                    report_bad_lines(&st);
                munmap(m, (size_t)sb.st_size);
                return ph_error_report(&err);
            }
        } else {
            close(fd);
        }
    }
    if (read_inputs(argc - optind, argv + optind, &buf, &len, &err) == 0 &&
        ph_flame_render_folded(buf, len, &o, stdout, &st, &err) == 0)
        report_bad_lines(&st);
    free(buf);
    return ph_error_report(&err);
}

static void
report_bad_lines(const ph_flame_stats *st)
{
    if (st->bad_lines > 0) {
        char lines[128] = "";
        for (size_t i = 0; i < 8 && st->bad_line_numbers[i]; i++)
            snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "%s%zu", i ? ", " : "", st->bad_line_numbers[i]);
        ph_warn("%zu of %zu lines are not folded stacks and were skipped (lines %s%s)", st->bad_lines, st->lines, lines,
                st->bad_lines > 8 ? ", ..." : "");
    }
}

int
ph_cmd_diff(const ph_global_opts *g, int argc, char **argv)
{
    ph_error_t err = NULL;
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    int c, normalise = 0;

    (void)g;
    while ((c = getopt(argc, argv, "+nh")) != -1) {
        switch (c) {
        case 'n': normalise = 1; break;
        case 'h': puts("usage: profharness diff [-n] BEFORE.folded AFTER.folded  (-n: scale AFTER to BEFORE's total)"); return 0;
        default: fputs("usage: profharness diff [-n] BEFORE.folded AFTER.folded\n", stderr); return 2;
        }
    }
    if (argc - optind != 2) {
        fputs("usage: profharness diff [-n] BEFORE.folded AFTER.folded\n", stderr);
        return 2;
    }
    if (read_inputs(1, argv + optind, &a, &alen, &err) == 0 && read_inputs(1, argv + optind + 1, &b, &blen, &err) == 0)
        ph_flame_diff_folded(a, alen, b, blen, normalise, stdout, &err);
    free(a);
    free(b);
    return ph_error_report(&err);
}
