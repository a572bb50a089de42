/* test_flame.c - the folded-stacks parser and the flamegraph renderer:
 * parsing (decimals, differential lines, bad lines with their numbers,
 * merging, streaming in any chunking), frames drawn and pruned (counts
 * worked out by hand and checked against flamegraph.pl), order modes,
 * icicles, differential colours of parents, escaping (random bytes give
 * valid UTF-8 and XML a real parser reads), label fitting,
 * thread safety, and golden SVGs (PH_UPDATE_GOLDEN=1 rewrites them). */
#include "test_util.h"

#include <math.h>
#include <pthread.h>

#include "ph_flame.h"
#include "ph_folded.h"

/* Render IN (LEN bytes) with O, into memory; the length in *LEN_OUT. */
static char *
render_n(const char *in, size_t len, const ph_flame_opts *o, ph_flame_stats *st, size_t *len_out)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ph_error_t err = NULL;

    assert_non_null(f);
    if (ph_flame_render_folded(in, len, o, f, st, &err) < 0)
        fail_msg("render failed: %s", err->msg);
    fclose(f);
    *len_out = n;
    return buf;
}

/* Render IN with O; returns the SVG (malloc'd) and fills ST. */
static char *
render(const char *in, const ph_flame_opts *o, ph_flame_stats *st)
{
    size_t len;

    return render_n(in, strlen(in), o, st, &len);
}

static int
count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* "a;b;c" for stack I of F. */
static const char *
stack_str(const ph_folded *f, size_t i, char *buf, size_t len)
{
    ph_folded_stack s = ph_folded_get_stack(f, i);
    size_t o = 0;

    buf[0] = '\0';
    for (uint32_t d = 0; d < s.depth; d++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", d ? ";" : "", ph_folded_name(f, s.frames[d], NULL));
    return buf;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- parsing ----------------------------------------------------------- */

static void
test_parse_counts_and_bad_lines(void **state)
{
    const char *in = "main;a;b 10\n"
                     "main;a;c 5.25\n"
                     "not a stack\n"
                     "\n"
                     "# a comment\n"
                     "main;a;b 2.5\r\n"
                     "main;d -3\n"     /* a negative count is not a count */
                     "main;e 1.2.3\n"  /* nor is this */
                     "5 7\n"           /* the stack "5", count 7: one count needs a name */
                     "main;f; 4  \n"   /* trailing ';' and blanks ignored, as Perl's split does */
                     " 9\n"            /* no stack */
                     "main;g .5\n"     /* a fraction needs its integer part */
                     "main;h;; 99999999999999999999\n"; /* 20 digits: past 64 bits, still read */
    ph_error_t err = NULL;
    ph_folded *f = ph_folded_parse(in, strlen(in), 0, &err);
    const ph_folded_stats *st;
    char buf[128];

    (void)state;
    assert_non_null(f);
    st = ph_folded_get_stats(f);
    assert_int_equal(st->lines, 13);
    assert_int_equal(st->bad_lines, 5);
    assert_int_equal(st->bad_line_numbers[0], 3);
    assert_int_equal(st->bad_line_numbers[1], 7);
    assert_int_equal(st->bad_line_numbers[2], 8);
    assert_int_equal(st->bad_line_numbers[3], 11);
    assert_int_equal(st->bad_line_numbers[4], 12);
    assert_int_equal(st->bad_line_numbers[5], 0);
    assert_int_equal(st->stacks, 5); /* main;a;b merged */
    assert_false(st->differential);
    assert_true(st->total == 10 + 5.25 + 2.5 + 7 + 4 + 1e20);
    assert_string_equal(stack_str(f, 0, buf, sizeof buf), "main;a;b");
    assert_true(ph_folded_get_stack(f, 0).count == 12.5);
    assert_true(ph_folded_get_stack(f, 0).before == 12.5);
    assert_string_equal(stack_str(f, 1, buf, sizeof buf), "main;a;c");
    assert_string_equal(stack_str(f, 2, buf, sizeof buf), "5");
    assert_true(ph_folded_get_stack(f, 2).count == 7);
    assert_string_equal(stack_str(f, 3, buf, sizeof buf), "main;f");
    assert_string_equal(stack_str(f, 4, buf, sizeof buf), "main;h");
    assert_true(ph_folded_get_stack(f, 4).count == 1e20);
    /* names are interned: main, a, b, c, 5, f, h */
    assert_int_equal(st->names, 7);
    ph_folded_free(f);
}

static void
test_parse_differential_and_modes(void **state)
{
    const char *in = "m;x 10 30\nm;y 20 5\nm;x 1 2\nm;z 3\n";
    ph_error_t err = NULL;
    ph_folded *f = ph_folded_parse(in, strlen(in), 0, &err);
    char buf[128];

    (void)state;
    assert_non_null(f);
    assert_true(ph_folded_get_stats(f)->differential);
    assert_int_equal(ph_folded_n_stacks(f), 3);
    assert_true(ph_folded_get_stack(f, 0).before == 11);
    assert_true(ph_folded_get_stack(f, 0).count == 32);
    assert_true(ph_folded_get_stack(f, 2).before == 3); /* one count: before == after */
    assert_true(ph_folded_get_stats(f)->total == 40);
    assert_true(ph_folded_get_stats(f)->total_before == 34);
    ph_folded_free(f);

    /* a flame chart keeps every line, in order */
    f = ph_folded_parse(in, strlen(in), PH_FOLDED_KEEP_ORDER, &err);
    assert_int_equal(ph_folded_n_stacks(f), 4);
    assert_string_equal(stack_str(f, 2, buf, sizeof buf), "m;x");
    ph_folded_free(f);

    f = ph_folded_parse("a;b;c 1\n", 8, PH_FOLDED_REVERSE, &err);
    assert_string_equal(stack_str(f, 0, buf, sizeof buf), "c;b;a");
    ph_folded_free(f);
}

/* Any chunking gives the same result as one buffer, including a last line
 * without a newline. */
static void
test_parse_streamed(void **state)
{
    const char *in = "main;alpha;beta 10\nmain;alpha 3.5\nbad\nmain;gamma;beta 2 4\nmain;alpha;beta 1";
    size_t len = strlen(in);
    ph_error_t err = NULL;

    (void)state;
    for (size_t chunk = 1; chunk <= len; chunk++) {
        ph_folded *f = ph_folded_new(0, &err);
        const ph_folded_stats *st;
        char buf[128];

        assert_non_null(f);
        for (size_t o = 0; o < len; o += chunk)
            assert_int_equal(ph_folded_feed(f, in + o, o + chunk > len ? len - o : chunk, &err), 0);
        assert_int_equal(ph_folded_finish(f, &err), 0);
        st = ph_folded_get_stats(f);
        assert_int_equal(st->lines, 5);
        assert_int_equal(st->bad_lines, 1);
        assert_int_equal(st->bad_line_numbers[0], 3);
        assert_int_equal(ph_folded_n_stacks(f), 3);
        assert_true(ph_folded_get_stack(f, 0).count == 11);
        assert_string_equal(stack_str(f, 2, buf, sizeof buf), "main;gamma;beta");
        assert_true(ph_folded_get_stack(f, 2).before == 2);
        ph_folded_free(f);
    }
}

/* The limits the header states: any depth a line can hold; a line of
 * PH_FOLDED_MAX_LINE bytes is read, one byte more is a bad line counted
 * as too long (whole or split across feeds), and the next line is read. */
static void
test_parse_limits(void **state)
{
    enum { DEEP = 100000 };
    size_t max = PH_FOLDED_MAX_LINE, len;
    char *in = malloc(max + 64), *p = in;
    ph_error_t err = NULL;
    ph_folded *f;
    const ph_folded_stats *st;
    ph_flame_stats fst;
    FILE *null;

    (void)state;
    for (int i = 0; i < DEEP; i++)
        p += sprintf(p, "%sf%d", i ? ";" : "", i % 7);
    p += sprintf(p, " 3\n");
    f = ph_folded_parse(in, (size_t)(p - in), 0, &err);
    assert_non_null(f);
    assert_int_equal(ph_folded_get_stats(f)->bad_lines, 0);
    assert_int_equal(ph_folded_get_stack(f, 0).depth, DEEP);
    null = fopen("/dev/null", "w");
    assert_int_equal(ph_flame_render(f, NULL, null, &fst, &err), 0);
    assert_int_equal(fst.frames_drawn, DEEP + 1);
    fclose(null);
    ph_folded_free(f);

    for (int extra = 0; extra <= 1; extra++) {
        /* one name filling the line: "nnn...n 1" of MAX (+1) bytes */
        len = max + (size_t)extra;
        memset(in, 'n', len - 2);
        memcpy(in + len - 2, " 1\nnext 2\n", 10); /* the line ends; 7 more bytes */
        for (size_t chunk = len + 8; chunk >= (1u << 20); chunk = chunk == len + 8 ? (1u << 22) - 3 : chunk / 4) {
            f = ph_folded_new(0, &err);
            for (size_t o = 0; o < len + 8; o += chunk)
                assert_int_equal(ph_folded_feed(f, in + o, o + chunk > len + 8 ? len + 8 - o : chunk, &err), 0);
            assert_int_equal(ph_folded_finish(f, &err), 0);
            st = ph_folded_get_stats(f);
            assert_int_equal(st->lines, 2);
            assert_int_equal(st->bad_lines, (size_t)extra);
            assert_int_equal(st->long_lines, (size_t)extra);
            assert_int_equal(st->bad_line_numbers[0], extra ? 1 : 0);
            assert_int_equal(ph_folded_n_stacks(f), 2 - (size_t)extra);
            assert_true(st->total == (extra ? 2 : 3));
            ph_folded_free(f);
        }
    }
    /* one feed already too long, its newline in the next */
    memset(in, 'n', max + 1);
    f = ph_folded_new(0, &err);
    assert_int_equal(ph_folded_feed(f, in, max + 1, &err), 0);
    assert_int_equal(ph_folded_feed(f, "x 1\nnext 2\n", 11, &err), 0);
    assert_int_equal(ph_folded_finish(f, &err), 0);
    assert_int_equal(ph_folded_get_stats(f)->lines, 2);
    assert_int_equal(ph_folded_get_stats(f)->long_lines, 1);
    assert_int_equal(ph_folded_n_stacks(f), 1);
    ph_folded_free(f);
    /* without a final newline: held, then counted by finish */
    memset(in, 'n', max);
    f = ph_folded_new(0, &err);
    assert_int_equal(ph_folded_feed(f, in, max - 5, &err), 0);
    assert_int_equal(ph_folded_feed(f, in, 6, &err), 0);
    assert_int_equal(ph_folded_finish(f, &err), 0);
    assert_int_equal(ph_folded_get_stats(f)->long_lines, 1);
    assert_int_equal(ph_folded_get_stats(f)->bad_line_numbers[0], 1);
    ph_folded_free(f);
    free(in);
}

/* " 5 7" has one blank before its first count: the stack " 5", 7 samples,
 * not a differential line with an empty stack. */
static void
test_parse_blank_stack_names(void **state)
{
    const char *in = " 5 7\n";
    ph_error_t err = NULL;
    ph_folded *f = ph_folded_parse(in, strlen(in), 0, &err);
    char buf[64];

    (void)state;
    assert_non_null(f);
    assert_int_equal(ph_folded_get_stats(f)->bad_lines, 0);
    assert_false(ph_folded_get_stats(f)->differential);
    assert_int_equal(ph_folded_n_stacks(f), 1);
    assert_string_equal(stack_str(f, 0, buf, sizeof buf), " 5");
    assert_true(ph_folded_get_stack(f, 0).count == 7);
    assert_true(ph_folded_get_stack(f, 0).before == 7);
    ph_folded_free(f);

    /* One blank separates the count, as flamegraph.pl's /^(.*)\s+?(\d+)$/
     * reads it: more blanks belong to the last frame, so a frame of only
     * spaces (FlameGraph's own perf test data has "write0;  3") is kept. */
    in = "a;  3\nb;c\t\t4\nd;e 1  2\n";
    f = ph_folded_parse(in, strlen(in), 0, &err);
    assert_int_equal(ph_folded_get_stats(f)->bad_lines, 0);
    assert_int_equal(ph_folded_n_stacks(f), 3);
    assert_int_equal(ph_folded_get_stack(f, 0).depth, 2);
    assert_string_equal(stack_str(f, 0, buf, sizeof buf), "a; ");
    assert_string_equal(stack_str(f, 1, buf, sizeof buf), "b;c\t");
    /* "1 " is not a count: one stack "d;e 1 " of 2, as flamegraph.pl reads it */
    assert_string_equal(stack_str(f, 2, buf, sizeof buf), "d;e 1 ");
    assert_true(ph_folded_get_stack(f, 2).before == 2 && ph_folded_get_stack(f, 2).count == 2);
    assert_false(ph_folded_get_stats(f)->differential);
    ph_folded_free(f);
    /* reversed, the blank frame is a root of its own */
    {
        ph_flame_opts o;
        ph_flame_stats st;
        char *svg;
        ph_flame_opts_init(&o);
        o.reverse = 1;
        svg = render("a;  3\na 1\n", &o, &st);
        assert_int_equal(st.frames_drawn, 4); /* all, " ", a above it, a */
        assert_non_null(strstr(svg, "<title>  (3 samples"));
        free(svg);
    }
}

/* More bad lines than are remembered: all counted, the first
 * PH_FOLDED_BAD_KEPT kept, nothing else in the stats overwritten. */
static void
test_parse_many_bad_lines(void **state)
{
    char in[4096], *p = in;
    ph_error_t err = NULL;
    ph_folded *f;
    const ph_folded_stats *st;

    (void)state;
    p += sprintf(p, "ok;a 1 2\n");
    for (int i = 0; i < 100; i++)
        p += sprintf(p, "bad line %c\n", 'a' + i % 26);
    p += sprintf(p, "ok;b 5\n");
    f = ph_folded_parse(in, (size_t)(p - in), 0, &err);
    assert_non_null(f);
    st = ph_folded_get_stats(f);
    assert_int_equal(st->lines, 102);
    assert_int_equal(st->bad_lines, 100);
    for (size_t i = 0; i < PH_FOLDED_BAD_KEPT; i++)
        assert_int_equal(st->bad_line_numbers[i], i + 2);
    assert_int_equal(st->long_lines, 0);
    assert_int_equal(st->stacks, 2);
    assert_int_equal(st->names, 3);
    assert_true(st->differential);
    assert_true(st->total == 7);
    assert_true(st->total_before == 6);
    ph_folded_free(f);
}

static void
test_diff_folded(void **state)
{
    const char *a = "m;x 10\nm;y 10\nbad line\n", *b = "m;x 30\nm;z 10";
    char *buf = NULL;
    size_t len = 0, bad_a = 0, bad_b = 0;
    FILE *f = open_memstream(&buf, &len);
    ph_error_t err = NULL;

    (void)state;
    assert_int_equal(ph_folded_diff(a, strlen(a), b, strlen(b), 0, f, &bad_a, &bad_b, &err), 0);
    fclose(f);
    assert_string_equal(buf, "m;x 10 30\nm;y 10 0\nm;z 0 10\n");
    assert_int_equal(bad_a, 1);
    assert_int_equal(bad_b, 0);
    free(buf);
    /* -n: A scaled to B's total (40 / 20), like difffolded.pl */
    f = open_memstream(&buf, &len);
    assert_int_equal(ph_folded_diff(a, strlen(a), b, strlen(b), 1, f, NULL, NULL, &err), 0);
    fclose(f);
    assert_string_equal(buf, "m;x 20 30\nm;y 20 0\nm;z 0 10\n");
    free(buf);
    /* scaled counts keep three decimals (10 / 3) */
    f = open_memstream(&buf, &len);
    assert_int_equal(ph_folded_diff("a 3\n", 4, "a 10\n", 5, 1, f, NULL, NULL, &err), 0);
    fclose(f);
    assert_string_equal(buf, "a 10 10\n");
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(ph_folded_diff("a 1\nb 2\n", 8, "a 10\n", 5, 1, f, NULL, NULL, &err), 0);
    fclose(f);
    assert_string_equal(buf, "a 3.333 10\nb 6.667 0\n");
    free(buf);
}

/* ---- frames: merging, pruning, order ------------------------------------ */

static void
test_merge_and_titles(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render("main;a;b 10\nmain;a;c 5\nmain;d 5\nnot a stack\nmain;a;b 2.5\n\n# comment\n", &o, &st);
    assert_int_equal(st.lines, 7);
    assert_int_equal(st.stacks, 3);
    assert_int_equal(st.bad_lines, 1);
    assert_int_equal(st.bad_line_numbers[0], 4);
    assert_int_equal(st.frames_drawn, 6); /* all, main, a, b, c, d */
    assert_int_equal(count(svg, "<g><title>"), 6);
    assert_true(st.total == 22.5);
    assert_non_null(strstr(svg, "<title>all (22.500 samples, 100.00%)</title>"));
    assert_non_null(strstr(svg, "<title>b (12.500 samples, 55.56%)</title>"));
    assert_non_null(strstr(svg, "<title>a (17.500 samples, 77.78%)</title>"));
    assert_non_null(strstr(svg, "<title>d (5 samples, 22.22%)</title>"));
    /* the interactive contract */
    assert_non_null(strstr(svg, ">Reset Zoom</text>"));
    assert_non_null(strstr(svg, "'Matched: '"));
    assert_non_null(strstr(svg, "history.replaceState"));
    assert_non_null(strstr(svg, "e.ctrlKey&&e.key==='f'"));
    assert_non_null(strstr(svg, "e.ctrlKey&&e.key==='i'"));
    assert_non_null(strstr(svg, "data-charw=\"7.23\""));
    assert_null(strstr(svg, "href")); /* self-contained */
    free(svg);
}

/* flamegraph.pl keeps a frame when etime - stime >= minwidth / widthpertime
 * (or >= total * P / 100 with "P%").  Here the 1180 px of a 1200 px image
 * hold 1011 samples: 1.167 px a sample, so 0.1 px is 0.086 samples, 10 px
 * is 8.57 samples (e, 1 sample, goes) and 2% is 20.2 samples (d goes too).
 * flamegraph.pl draws 6, 5 and 4 frames for these (checked). */
static void
test_minwidth_prunes(void **state)
{
    const char *in = "a;b;c 1000\na;b;d 10\na;e 1\n";
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    free(render(in, &o, &st));
    assert_int_equal(st.frames_drawn, 6);
    o.minwidth = 10;
    svg = render(in, &o, &st);
    assert_int_equal(st.frames_drawn, 5);
    assert_null(strstr(svg, "<title>e ("));
    free(svg);
    o.minwidth = 2;
    o.minwidth_percent = 1;
    svg = render(in, &o, &st);
    assert_int_equal(st.frames_drawn, 4);
    assert_null(strstr(svg, "<title>d ("));
    free(svg);
    /* a pruned parent takes its children with it */
    ph_flame_opts_init(&o);
    o.width = 1020; /* 1000 px: 1 sample of 10000 is 0.1 px, kept at 0.1, not at 0.5 */
    free(render("big 9999\ntiny;leaf 1\n", &o, &st));
    assert_int_equal(st.frames_drawn, 4);
    o.minwidth = 0.5;
    free(render("big 9999\ntiny;leaf 1\n", &o, &st));
    assert_int_equal(st.frames_drawn, 2);
}

/* A frame exactly minwidth wide is kept, wherever it closes: here `a`
 * closes when `b` starts (not at the end of the sweep).  1000 px for
 * 1000 samples: 10 px is 10 samples exactly, as is 1%. */
static void
test_minwidth_boundary(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    o.width = 1020;
    o.minwidth = 10;
    svg = render("a;x 10\nb;y 9\nc 981\n", &o, &st);
    assert_non_null(strstr(svg, "<title>a (10 "));
    assert_non_null(strstr(svg, "<title>x (10 "));
    assert_null(strstr(svg, "<title>b ("));
    assert_int_equal(st.frames_drawn, 4); /* all, a, x, c */
    free(svg);
    o.minwidth = 1;
    o.minwidth_percent = 1;
    svg = render("a;x 10\nb;y 9\nc 981\n", &o, &st);
    assert_int_equal(st.frames_drawn, 4);
    assert_null(strstr(svg, "<title>y ("));
    free(svg);
}

/* The library refuses widths with no room for a frame (the CLI asks for
 * 100 px or more); 2 * 10 px of padding + 10 px is the least. */
static void
test_width_range(void **state)
{
    ph_error_t err = NULL;
    ph_flame_opts o;
    FILE *null = fopen("/dev/null", "w");

    (void)state;
    ph_flame_opts_init(&o);
    for (int i = 0; i < 5; i++) {
        static const double bad[] = { 0, -1, 29.99, NAN, INFINITY };
        o.width = bad[i];
        assert_int_equal(ph_flame_render_folded("a 1\n", 4, &o, null, NULL, &err), -1);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        assert_non_null(strstr(err->msg, "width"));
        ph_error_free(&err);
    }
    o.width = 30;
    assert_int_equal(ph_flame_render_folded("a 1\n", 4, &o, null, NULL, &err), 0);
    o.minwidth = -0.5;
    assert_int_equal(ph_flame_render_folded("a 1\n", 4, &o, null, NULL, &err), -1);
    ph_error_free(&err);
    fclose(null);
}

/* flamegraph.pl sorts whole lines, so "f 1" < "f1 1" < "f;g 1" and f is
 * drawn twice (5 frames, checked); frame-by-frame order draws it once. */
static void
test_one_frame_per_name_and_parent(void **state)
{
    ph_flame_stats st;
    char *svg;

    (void)state;
    svg = render("f 1\nf1 1\nf;g 1\n", NULL, &st);
    assert_int_equal(st.frames_drawn, 4); /* all, f, f1, g */
    assert_int_equal(count(svg, "<title>f ("), 1);
    assert_non_null(strstr(svg, "<title>f (2 samples"));
    free(svg);
}

/* Children are in name order (merged), or in input order with
 * --flamechart, where a stack merges only with the one just before it. */
static void
test_order_modes(void **state)
{
    const char *in = "m;z 1\nm;a 1\nm;z 1\n";
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render(in, &o, &st);
    assert_int_equal(st.frames_drawn, 4); /* all, m, a, z */
    assert_true(strstr(svg, "<title>a (") < strstr(svg, "<title>z ("));
    assert_non_null(strstr(svg, "<title>z (2 samples"));
    assert_non_null(strstr(svg, ">Flame Graph<"));
    free(svg);
    o.flamechart = 1;
    svg = render(in, &o, &st);
    assert_int_equal(st.frames_drawn, 5); /* all, m, z, a, z: time order kept */
    assert_int_equal(count(svg, "<title>z (1 samples"), 2);
    assert_true(strstr(svg, "<title>z (") < strstr(svg, "<title>a ("));
    assert_non_null(strstr(svg, ">Flame Chart<"));
    free(svg);
    /* consecutive stacks still share their common frames in a chart */
    svg = render("m;a 1\nm;b 1\nm;a 1\n", &o, &st);
    assert_int_equal(count(svg, "<title>m (3 samples"), 1);
    free(svg);
    ph_flame_opts_init(&o);
    o.reverse = 1;
    svg = render("root;mid;leaf 3\nroot;mid2;leaf 1\n", &o, &st);
    /* reversed: leaf is the base frame (4 samples) with mid and mid2 on it */
    assert_non_null(strstr(svg, "<title>leaf (4 samples"));
    assert_int_equal(count(svg, "<title>root ("), 2);
    assert_int_equal(st.frames_drawn, 6);
    free(svg);
}

/* Frames of SVG as "depth x w name" lines (x, w in samples from fg:x,
 * fg:w; depth from y), sorted, in one malloc'd string. */
static char *
frame_list(const char *svg, int inverted)
{
    char **rows = NULL, *out, *o;
    size_t n = 0, len = 1;
    double ymax = -1, ymin = 1e9;

    for (int pass = 0; pass < 2; pass++) {
        for (const char *p = svg; (p = strstr(p, "<g><title>")) != NULL; p++) {
            char name[256];
            double y, x, w;
            const char *t = p + 10, *e = strstr(t, "</title>"), *paren = e;
            while (paren > t && !(paren[0] == ' ' && paren[1] == '('))
                paren--;
            snprintf(name, sizeof name, "%.*s", (int)(paren - t), t);
            assert_int_equal(sscanf(strstr(e, " y=\"") + 4, "%lf", &y), 1);
            assert_int_equal(sscanf(strstr(e, "fg:x=\"") + 6, "%lf", &x), 1);
            assert_int_equal(sscanf(strstr(e, "fg:w=\"") + 6, "%lf", &w), 1);
            if (pass == 0) {
                ymax = y > ymax ? y : ymax;
                ymin = y < ymin ? y : ymin;
                n++;
                continue;
            }
            if (rows == NULL)
                rows = calloc(n, sizeof *rows);
            assert_true(asprintf(&rows[len - 1], "%d %g %g %s", (int)((inverted ? y - ymin : ymax - y) / 16), x, w,
                                 name) > 0);
            len++;
        }
    }
    qsort(rows, n, sizeof *rows, cmp_str);
    len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(rows[i]) + 1;
    out = o = malloc(len);
    for (size_t i = 0; i < n; i++) {
        o += sprintf(o, "%s\n", rows[i]);
        free(rows[i]);
    }
    *o = '\0';
    free(rows);
    return out;
}

/* The reference: a tree of the stacks, each node's children ordered as
 * flamegraph.pl's line sort orders them (name then ';' when the child has
 * children of its own, name then ' ' when it has none), one node per name
 * and parent; frames listed like frame_list. */
typedef struct ref_node {
    const char *name;
    double count, total;
    struct ref_node *kids[16];
    int nkids;
} ref_node;

static ref_node *
ref_child(ref_node *n, const char *name)
{
    for (int i = 0; i < n->nkids; i++)
        if (strcmp(n->kids[i]->name, name) == 0)
            return n->kids[i];
    assert_true(n->nkids < 16);
    n->kids[n->nkids] = calloc(1, sizeof(ref_node));
    n->kids[n->nkids]->name = name;
    return n->kids[n->nkids++];
}

static int
ref_cmp(const void *a, const void *b)
{
    const ref_node *x = *(ref_node *const *)a, *y = *(ref_node *const *)b;
    char kx[64], ky[64];

    snprintf(kx, sizeof kx, "%s%c", x->name, x->nkids ? ';' : ' ');
    snprintf(ky, sizeof ky, "%s%c", y->name, y->nkids ? ';' : ' ');
    return strcmp(kx, ky);
}

static double
ref_walk(ref_node *n, int depth, double x, char **rows, size_t *nrows)
{
    double end = x + n->count;

    qsort(n->kids, (size_t)n->nkids, sizeof n->kids[0], ref_cmp);
    for (int i = 0; i < n->nkids; i++)
        end = ref_walk(n->kids[i], depth + 1, end, rows, nrows);
    assert_true(asprintf(&rows[(*nrows)++], "%d %g %g %s", depth, x, end - x, depth ? n->name : "all") > 0);
    for (int i = 0; i < n->nkids; i++)
        free(n->kids[i]);
    return end;
}

/* Siblings in flamegraph.pl's order: `a` before `a-b` as a leaf, after it
 * with children of its own; `f10` before `f1;x` but after a leaf `f1`.
 * Random stacks over names that are prefixes of each other, checked
 * against the reference, plain and reversed. */
static void
test_sibling_order(void **state)
{
    static const char *const names[] = { "a", "a-b", "a1", "a10", "a b", "b", "f1", "f10", "f1.cold", "f" };
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg, *got;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render("x;a 1\nx;a-b 2\ny;a;c 3\ny;a-b 4\nz;f1;x 5\nz;f10 6\nw;f1 7\nw;f10 8\n", &o, &st);
    got = frame_list(svg, 0);
    /* depth 1 is w, x, y, z */
    assert_non_null(strstr(got, "2 0 7 f1\n"));    /* w: f1 (leaf), then f10 */
    assert_non_null(strstr(got, "2 7 8 f10\n"));
    assert_non_null(strstr(got, "2 15 1 a\n"));    /* x: a (leaf), then a-b */
    assert_non_null(strstr(got, "2 16 2 a-b\n"));
    assert_non_null(strstr(got, "2 18 4 a-b\n"));  /* y: a-b, then a (with c) */
    assert_non_null(strstr(got, "2 22 3 a\n"));
    assert_non_null(strstr(got, "2 25 6 f10\n"));  /* z: f10, then f1 (with x) */
    assert_non_null(strstr(got, "2 31 5 f1\n"));
    free(got);
    free(svg);

    for (int round = 0; round < 40; round++) {
        uint32_t seed = 99u + (uint32_t)round;
        char in[8192], *p = in, *want, *wp;
        char *rows[4096];
        size_t nrows = 0, len = 1;
        ref_node root = { 0 };
        int rev = round % 2;

#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 8) & 0xffffff)
        for (int i = 0; i < 60; i++) {
            const char *fr[4];
            int depth = 1 + (int)(RND() % 4), c = 1 + (int)(RND() % 9);
            ref_node *n = &root;
            for (int d = 0; d < depth; d++) {
                fr[d] = names[RND() % (sizeof names / sizeof names[0])];
                p += sprintf(p, "%s%s", d ? ";" : "", fr[d]);
            }
            p += sprintf(p, " %d\n", c);
            for (int d = 0; d < depth; d++)
                n = ref_child(n, fr[rev ? depth - 1 - d : d]);
            n->count += c;
        }
#undef RND
        ref_walk(&root, 0, 0, rows, &nrows);
        qsort(rows, nrows, sizeof *rows, cmp_str);
        for (size_t i = 0; i < nrows; i++)
            len += strlen(rows[i]) + 1;
        want = wp = malloc(len);
        for (size_t i = 0; i < nrows; i++) {
            wp += sprintf(wp, "%s\n", rows[i]);
            free(rows[i]);
        }
        ph_flame_opts_init(&o);
        o.minwidth = 0;
        o.reverse = rev;
        svg = render(in, &o, &st);
        got = frame_list(svg, 0);
        if (strcmp(got, want) != 0)
            fail_msg("round %d (reverse %d): frames differ from the reference\n%s---\nwant:\n%s---\ngot:\n%s", round, rev,
                     in, want, got);
        free(got);
        free(want);
        free(svg);
    }
}

static double
rect_attr(const char *svg, const char *name, const char *attr)
{
    char want[64];
    const char *p;
    double v = -1;

    snprintf(want, sizeof want, "<title>%s (", name);
    p = strstr(svg, want);
    assert_non_null(p);
    snprintf(want, sizeof want, " %s=\"", attr);
    p = strstr(p, want);
    assert_non_null(p);
    sscanf(p + strlen(want), "%lf", &v);
    return v;
}

static void
test_inverted_and_geometry(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render("root;leaf 1\nroot;other 2\n", &o, &st);
    assert_true(rect_attr(svg, "leaf", "y") < rect_attr(svg, "root", "y")); /* flames grow up */
    assert_true(rect_attr(svg, "root", "y") == rect_attr(svg, "all", "y") - 16);
    /* widths: 1180 px for 3 samples, children tile their parent exactly */
    assert_true(rect_attr(svg, "all", "width") == 1180);
    assert_true(rect_attr(svg, "leaf", "x") == 10);
    assert_true(rect_attr(svg, "leaf", "width") == 393.33);
    assert_true(rect_attr(svg, "other", "x") == 403.33);
    assert_true(rect_attr(svg, "other", "width") == 786.67);
    free(svg);
    o.inverted = 1;
    svg = render("root;leaf 1\n", &o, &st);
    assert_true(rect_attr(svg, "leaf", "y") > rect_attr(svg, "root", "y")); /* icicles hang down */
    assert_true(rect_attr(svg, "all", "y") < rect_attr(svg, "root", "y"));
    assert_non_null(strstr(svg, ">Icicle Graph<"));
    assert_non_null(strstr(svg, "data-inverted=\"1\""));
    free(svg);
}

/* Many names (so several ranks pack into one sort key and stacks cross
 * key blocks) and shared prefixes: with no pruning, the frames drawn must
 * be exactly the distinct prefixes (one frame per tree node) plus the
 * root, also reversed - counted here the slow way, with strings. */
static void
test_random_against_reference(void **state)
{
    enum { N = 3000, MAXD = 26 };
    static int stacks[N][MAXD], depth[N];
    uint32_t seed = 12345;
    size_t cap = (size_t)N * MAXD, np = 0, unique = 0;
    char **prefixes = calloc(cap, sizeof *prefixes), *in, *p;
    ph_flame_opts o;
    ph_flame_stats st;

    (void)state;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 8) & 0xffffff)
    for (int i = 0; i < N; i++) {
        int keep = 0;
        depth[i] = 1 + (int)(RND() % MAXD);
        if (i > 0 && RND() % 10 < 8) { /* grow from an earlier stack's prefix */
            int j = (int)(RND() % (uint32_t)i);
            keep = depth[j] < depth[i] ? depth[j] : depth[i];
            keep = (int)(RND() % (uint32_t)keep) + 1;
            memcpy(stacks[i], stacks[j], sizeof(int) * (size_t)keep);
        }
        for (int d = keep; d < depth[i]; d++)
            stacks[i][d] = (int)(RND() % 5000);
    }
#undef RND
    in = p = malloc((size_t)N * MAXD * 8 + 1);
    for (int i = 0; i < N; i++) {
        for (int d = 0; d < depth[i]; d++)
            p += sprintf(p, "%sn%d", d ? ";" : "", stacks[i][d]);
        p += sprintf(p, " %d\n", 1 + i % 7);
    }
    for (int rev = 0; rev < 2; rev++) {
        np = 0;
        for (int i = 0; i < N; i++) {
            char buf[MAXD * 8] = "";
            size_t off = 0;
            for (int d = 0; d < depth[i]; d++) {
                int fr = rev ? stacks[i][depth[i] - 1 - d] : stacks[i][d];
                off += (size_t)sprintf(buf + off, "%sn%d", d ? ";" : "", fr);
                prefixes[np++] = strdup(buf);
            }
        }
        qsort(prefixes, np, sizeof *prefixes, cmp_str);
        unique = 0;
        for (size_t i = 0; i < np; i++)
            unique += i == 0 || strcmp(prefixes[i - 1], prefixes[i]) != 0;
        for (size_t i = 0; i < np; i++)
            free(prefixes[i]);
        ph_flame_opts_init(&o);
        o.minwidth = 0;
        o.reverse = rev;
        free(render(in, &o, &st));
        assert_int_equal(st.frames_drawn, unique + 1);
    }
    free(prefixes);
    free(in);
}

/* The lines of the subtitle (the tspans of #subtitle), each in LINES[i]
 * (static); returns how many. */
static int
subtitle_lines(const char *svg, char lines[][512], int max)
{
    const char *p = strstr(svg, "<text id=\"subtitle\""), *end;
    int n = 0;

    if (p == NULL)
        return 0;
    end = strstr(p, "</text>");
    while (n < max && (p = strstr(p, "<tspan")) != NULL && p < end) {
        const char *t = strchr(p, '>') + 1, *e = strstr(t, "</tspan>");
        snprintf(lines[n++], 512, "%.*s", (int)(e - t), t);
        p = e;
    }
    return n;
}

/* ---- differential ------------------------------------------------------- */

static const char *
fill_of(const char *svg, const char *name)
{
    static char fill[64];
    char want[64];
    const char *p;

    snprintf(want, sizeof want, "<title>%s (", name);
    p = strstr(svg, want);
    assert_non_null(p);
    p = strstr(p, "fill=\"");
    assert_non_null(p);
    sscanf(p + 6, "%63[^\"]", fill);
    return fill;
}

/* A parent's colour follows its subtree's change: q has no samples of
 * its own, its child c grew, so q is red (flamegraph.pl paints it white,
 * "0.00%", checked); p's children cancel out, so p is neutral. */
static void
test_differential_parents(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render("p;a 10 20\np;b 10 0\nq;c 5 15\n", &o, &st);
    assert_true(st.differential);
    assert_true(st.total == 35); /* widths follow the "after" profile */
    assert_non_null(strstr(svg, "<title>q (15 samples, 42.86%; +28.57%)</title>"));
    assert_non_null(strstr(svg, "<title>p (20 samples, 57.14%; 0.00%)</title>"));
    /* c and q changed by +10, the most of any frame: full red */
    assert_string_equal(fill_of(svg, "q"), "rgb(255,0,0)");
    assert_string_equal(fill_of(svg, "c"), "rgb(255,0,0)");
    assert_string_equal(fill_of(svg, "a"), "rgb(255,0,0)");
    assert_string_equal(fill_of(svg, "p"), "rgb(250,250,250)");
    assert_string_equal(fill_of(svg, "all"), "rgb(255,0,0)"); /* 25 -> 35, beyond the scale */
    free(svg);
    svg = render("main;grow;x 10 30\nmain;shrink;y 20 5\n", &o, &st);
    assert_string_equal(fill_of(svg, "grow"), "rgb(255,0,0)");
    assert_string_equal(fill_of(svg, "shrink"), "rgb(52,52,255)"); /* -15 of max 20 */
    assert_string_equal(fill_of(svg, "main"), "rgb(255,157,157)"); /* +5 of 20 */
    free(svg);
    /* the root's change is not on the scale: beyond it, full colour, never
     * a negative channel */
    svg = render("a 10 20\nb 10 20\n", &o, &st);
    assert_string_equal(fill_of(svg, "all"), "rgb(255,0,0)");
    assert_string_equal(fill_of(svg, "a"), "rgb(255,0,0)");
    free(svg);
    svg = render("a 2000000000000 1\nb 1 1\n", &o, &st); /* and no overflow */
    assert_string_equal(fill_of(svg, "all"), "rgb(0,0,255)");
    free(svg);
    /* forced off: an ordinary graph of the after counts */
    o.differential = 0;
    svg = render("main;grow;x 10 30\n", &o, &st);
    assert_false(st.differential);
    assert_non_null(strstr(svg, "<title>x (30 samples, 100.00%)</title>"));
    free(svg);
}

/* flamegraph.pl's colours on request: each frame by its own change, its
 * children's not counted.  `read` lost 10 samples itself while its child
 * `wait` gained 20: +10 with its children (red), -10 itself (blue).  The
 * subtitle says which colours the graph shows. */
static void
test_differential_self(void **state)
{
    const char *in = "main;read 20 10\nmain;read;wait 10 30\nmain;x 5 5\n";
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg, lines[8][512];
    int n;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render(in, &o, &st);
    assert_non_null(strstr(svg, "<title>read (40 samples, 88.89%; +22.22%)</title>"));
    assert_string_equal(fill_of(svg, "read"), "rgb(255,105,105)"); /* +10 of max 20 */
    n = subtitle_lines(svg, lines, 8);
    assert_int_equal(n, 1);
    assert_non_null(strstr(lines[0], "with its children"));
    free(svg);
    o.diff_self = 1;
    o.subtitle = "v1 to v2";
    svg = render(in, &o, &st);
    assert_non_null(strstr(svg, "<title>read (40 samples, 88.89%; -22.22%)</title>"));
    assert_string_equal(fill_of(svg, "read"), "rgb(105,105,255)"); /* -10 of max 20 (wait) */
    assert_string_equal(fill_of(svg, "wait"), "rgb(255,0,0)");
    assert_string_equal(fill_of(svg, "main"), "rgb(250,250,250)"); /* no samples of its own */
    assert_string_equal(fill_of(svg, "x"), "rgb(250,250,250)");
    assert_non_null(strstr(svg, "<title>main (45 samples, 100.00%; 0.00%)</title>"));
    n = subtitle_lines(svg, lines, 8);
    assert_int_equal(n, 2);
    assert_string_equal(lines[0], "v1 to v2");
    assert_non_null(strstr(lines[1], "itself"));
    free(svg);
    /* not differential: no note */
    svg = render("a 1\n", &o, &st);
    assert_int_equal(subtitle_lines(svg, lines, 8), 1);
    free(svg);
}

/* ---- text ----------------------------------------------------------------- */

static void
test_escaping_and_labels(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg, name[301], want[400];

    (void)state;
    ph_flame_opts_init(&o);
    o.countname = "ns";
    o.title = "A <b> & c";
    svg = render("std::vector<int>::push_back&x 1000000\nbad\xff\xfe\x01name 1000\n", &o, &st);
    assert_non_null(strstr(svg, "std::vector&lt;int&gt;::push_back&amp;x (1,000,000 ns, 99.90%)"));
    assert_non_null(strstr(svg, ">A &lt;b&gt; &amp; c</text>"));
    assert_null(strstr(svg, "<int>"));
    /* bytes that are not UTF-8 become U+FFFD; control characters are shown escaped */
    assert_non_null(strstr(svg, "<title>bad\xef\xbf\xbd\xef\xbf\xbd\\x01name ("));
    free(svg);
    /* a full-width frame fits floor((1180 - 6) / 7.23) = 162 characters */
    memset(name, 'n', 300);
    name[300] = '\0';
    snprintf(want, sizeof want, "%s 1\n", name);
    svg = render(want, NULL, &st);
    snprintf(want, sizeof want, ">%.160s..</text>", name);
    assert_int_equal(count(svg, want), 1);
    free(svg);
    /* room for 3 characters exactly: 6 px of padding + 3 * 7.23 = 27.69 px
     * (1180 px for 1000 samples: 24 samples are 28.32 px, 23 are 27.14) */
    svg = render("wide 976\nthree 24\n", NULL, &st);
    assert_non_null(strstr(strstr(svg, "<title>three ("), ">t..</text>"));
    free(svg);
    svg = render("wide 977\nthree 23\n", NULL, &st);
    assert_non_null(strstr(strstr(svg, "<title>three ("), "\"></text>"));
    free(svg);
    /* too narrow for 3 characters: no label */
    svg = render("wide 1000\nnarrow 10\n", NULL, &st);
    assert_non_null(strstr(strstr(svg, "<title>narrow ("), "\"></text>"));
    free(svg);
}

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past
 * U+10FFFF. */
static int
utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;

    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t len;
        unsigned lo = 0x80, hi = 0xbf;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        else
            return 0;
        if (i + len > n || p[i + 1] < lo || p[i + 1] > hi)
            return 0;
        for (size_t k = 2; k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

/* 1 if a real XML parser (python3's expat, through xml.dom.minidom) reads
 * SVG as a well-formed document; its complaint is printed otherwise. */
static int
xml_well_formed(const char *svg)
{
    char path[] = "/tmp/ph-flame-xml-XXXXXX", cmd[256];
    int fd = mkstemp(path), rc;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, svg, strlen(svg)), (ssize_t)strlen(svg));
    close(fd);
    snprintf(cmd, sizeof cmd, "python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' %s", path);
    rc = system(cmd);
    unlink(path);
    return rc == 0;
}

/* Any bytes in a frame name, title or subtitle give valid UTF-8 and
 * well-formed XML: stray bytes become U+FFFD, control characters and
 * characters XML forbids are shown escaped. */
static void
test_random_names_valid_xml(void **state)
{
    static const char *const nasty[] = {
        "\xff\x80\x80", "\xf5\x80\x80\x80", "\xed\xa0\x80" /* a surrogate */, "\xef\xbf\xbe" /* U+FFFE */,
        "\xc0\xaf" /* overlong '/' */, "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80" /* > U+10FFFF */,
        "\xc2\x85" /* NEL, a C1 control */, "x\x7f", "]]>", "\xe2\x82",
    };
    uint32_t seed = 2024;
    char *in = malloc(1 << 16), *p = in, *svg;
    ph_flame_opts o;
    ph_flame_stats st;

    (void)state;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 8) & 0xffffff)
    for (size_t i = 0; i < sizeof nasty / sizeof nasty[0]; i++)
        p += sprintf(p, "root;%s;leaf 1\n", nasty[i]);
    for (int i = 0; i < 400; i++) {
        p += sprintf(p, "root");
        for (int d = 0, depth = 1 + (int)(RND() % 3); d < depth; d++) {
            int len = 1 + (int)(RND() % 10);
            *p++ = ';';
            for (int k = 0; k < len; k++) {
                int c = (int)(RND() % 256);
                *p++ = (char)(c == '\n' || c == ';' ? 0x80 : c);
            }
        }
        p += sprintf(p, ";leaf %d\n", 1 + i % 5);
    }
    ph_flame_opts_init(&o);
    o.minwidth = 0;
    o.title = "t\xff\x80\x80\x01";
    o.subtitle = "s\xed\xa0\x80\x1b";
    {
        char *out = NULL;
        size_t outlen = 0;
        FILE *f = open_memstream(&out, &outlen);
        ph_error_t err = NULL;
        assert_int_equal(ph_flame_render_folded(in, (size_t)(p - in), &o, f, &st, &err), 0);
        fclose(f);
        svg = out;
        assert_int_equal(strlen(svg), outlen); /* no NUL byte went out */
    }
#undef RND
    assert_int_equal(st.bad_lines, 0);
    assert_true(utf8_valid(svg, strlen(svg)));
    assert_true(xml_well_formed(svg));
    /* control characters are shown, escaped, not dropped */
    assert_non_null(strstr(svg, ">t\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\\x01</text>"));
    assert_non_null(strstr(svg, "<title>x\\x7f ("));
    assert_non_null(strstr(svg, "<title>\\u0085 ("));
    assert_non_null(strstr(svg, "<title>\\uFFFE ("));
    assert_non_null(strstr(svg, "<title>]]&gt; ("));
    free(svg);
    /* the edges of C1: U+009F is escaped, U+00A0 (no-break space) is itself */
    svg = render("a;\xc2\x9f 1\na;\xc2\xa0 1\n", NULL, &st);
    assert_non_null(strstr(svg, "<title>\\u009F ("));
    assert_non_null(strstr(svg, "<title>\xc2\xa0 ("));
    free(svg);
    free(in);
}

/* A bidi control in a name (U+202E right-to-left override and its kin)
 * would reorder the title and label around it, so one frame reads as
 * another: shown as \uNNNN (six characters, and the label is fitted to
 * them), as C1 controls are; the graph's title and subtitle too. */
static void
test_bidi_names_shown(void **state)
{
    static const struct {
        const char *bytes, *shown;
    } v[] = {
        { "\xe2\x80\xae", "\\u202E" }, { "\xe2\x80\xaa", "\\u202A" }, { "\xe2\x81\xa6", "\\u2066" },
        { "\xe2\x81\xa9", "\\u2069" }, { "\xe2\x80\x8e", "\\u200E" }, { "\xe2\x80\x8f", "\\u200F" },
        { "\xd8\x9c", "\\u061C" },
    };
    ph_flame_opts o;
    ph_flame_stats st;
    char in[512], want[128];
    char *svg;

    (void)state;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        snprintf(in, sizeof in, "main;evil%sgnp.exe 1\n", v[i].bytes);
        ph_flame_opts_init(&o);
        o.title = "t\xe2\x80\xaet";
        o.subtitle = "s\xe2\x81\xa7s";
        svg = render(in, &o, &st);
        assert_null(strstr(svg, v[i].bytes));
        snprintf(want, sizeof want, "<title>evil%sgnp.exe (", v[i].shown);
        assert_non_null(strstr(svg, want));
        snprintf(want, sizeof want, ">evil%sgnp.exe</text>", v[i].shown); /* the label: 18 characters fit */
        assert_non_null(strstr(svg, want));
        assert_non_null(strstr(svg, ">t\\u202Et</text>"));
        assert_non_null(strstr(svg, ">s\\u2067s</tspan>"));
        free(svg);
    }
    /* a label is fitted to what it shows: 6 characters for one control */
    ph_flame_opts_init(&o);
    o.width = 20 + 6 + 7.23 * 8 + 1; /* room for 8 characters */
    svg = render("\xe2\x80\xae\xe2\x80\xae 1\n", &o, &st);
    assert_non_null(strstr(svg, ">\\u202E..</text>"));
    free(svg);
}

/* ---- bounds (the report's graphs) --------------------------------------- */

/* A stack deeper than max_depth is drawn to max_depth - 1 frames, then
 * one frame saying how many were cut; stacks cut by different amounts
 * under one parent share it ("up to"); shallower ones are as they were. */
static void
test_max_depth_marker(void **state)
{
    enum { DEEP = 100000 };
    char *in = malloc(DEEP * 8 + 256), *p = in, *svg;
    ph_flame_opts o;
    ph_flame_stats st;
    size_t len;

    (void)state;
    for (int i = 0; i < DEEP; i++)
        p += sprintf(p, "%sf%d", i ? ";" : "", i % 7);
    p += sprintf(p, " 3\n");
    ph_flame_opts_init(&o);
    o.max_depth = 64;
    svg = render_n(in, (size_t)(p - in), &o, &st, &len);
    /* the root, 63 frames, the marker for the other 99,937 */
    assert_int_equal(st.frames_drawn, 65);
    assert_int_equal(st.stacks_cut, 1);
    assert_int_equal(count(svg, "<g><title>"), 65);
    assert_non_null(strstr(svg, "<title>[99,937 frames cut] (3 samples, 100.00%)</title>"));
    assert_non_null(strstr(svg, "<title>f6 (3 samples, 100.00%)</title>"));
    assert_true(len < 40000);
    free(svg);

    /* two stacks cut by different amounts share the marker; one that
     * ends before the cut has its own frames */
    ph_flame_opts_init(&o);
    o.max_depth = 3;
    svg = render("a;b;c;d;e 2\na;b;x;y 1\na;b;z 4\na;q 1\n", &o, &st);
    assert_int_equal(st.stacks_cut, 2);
    assert_non_null(strstr(svg, "<title>[up to 3 frames cut] (3 samples, 37.50%)</title>"));
    assert_non_null(strstr(svg, "<title>z (4 samples, 50.00%)</title>"));
    assert_non_null(strstr(svg, "<title>q (1 samples, 12.50%)</title>"));
    assert_null(strstr(svg, "<title>c ("));
    assert_null(strstr(svg, "<title>x ("));
    free(svg);
    free(in);
}

/* With collapse, siblings narrower than minwidth are one frame where
 * they were, not a gap; narrow frames above them are not drawn. */
static void
test_collapse_narrow_siblings(void **state)
{
    char *in = malloc(20000 * 24 + 64), *p = in, *svg;
    ph_flame_opts o;
    ph_flame_stats st;
    size_t len;

    (void)state;
    p += sprintf(p, "main;big 10000\n");
    for (int i = 0; i < 10000; i++) /* 0.059 px each */
        p += sprintf(p, "main;n%05d;above 1\n", i);
    p += sprintf(p, "main;zz 100\n");
    ph_flame_opts_init(&o);
    o.minwidth = 1;
    o.collapse = 1;
    svg = render_n(in, (size_t)(p - in), &o, &st, &len);
    assert_non_null(strstr(svg, "<title>[10,000 narrow frames] (10,000 samples, 49.75%)</title>"));
    assert_int_equal(st.frames_merged, 10000);
    assert_int_equal(st.frames_drawn, 5); /* all, main, big, the narrow ones, zz */
    assert_null(strstr(svg, "<title>above ("));
    free(svg);
    /* without it they are left out, as flamegraph.pl leaves them */
    o.collapse = 0;
    svg = render_n(in, (size_t)(p - in), &o, &st, &len);
    assert_null(strstr(svg, "narrow frames"));
    assert_int_equal(st.frames_drawn, 4);
    free(svg);
    free(in);
}

/* max_bytes holds the SVG to its size however wide and deep the stacks,
 * merging the narrowest frames first, and says so; the widest frames
 * and the totals stay.  Names past PH_FLAME_NAME_SHOWN characters are
 * cut in tooltips. */
static void
test_max_bytes(void **state)
{
    enum { STACKS = 1000, DEPTH = 40 };
    char *in = malloc((size_t)STACKS * DEPTH * 12 + 4096 + 20000), *p = in, *svg;
    ph_flame_opts o;
    ph_flame_stats st;
    size_t len, full;

    (void)state;
    /* 1,000 stacks of 40 frames: 40,000 frames */
    for (int i = 0; i < STACKS; i++) {
        p += sprintf(p, "main");
        for (int d = 0; d < DEPTH; d++)
            p += sprintf(p, ";s%dd%d", i, d);
        p += sprintf(p, " 1\n");
    }
    p += sprintf(p, "main;hot;hotter %d\n", STACKS / 10); /* a wide one: the others are 1.07 px each */
    ph_flame_opts_init(&o);
    o.minwidth = 1;
    o.collapse = 1;
    svg = render_n(in, (size_t)(p - in), &o, &st, &full);
    assert_true(full > (4u << 20)); /* unbounded: over 4 MiB */
    free(svg);
    for (size_t max = 64 << 10; max <= (2u << 20); max *= 4) {
        o.max_bytes = max;
        svg = render_n(in, (size_t)(p - in), &o, &st, &len);
        if (len > max)
            fail_msg("max_bytes %zu: %zu bytes written", max, len);
        if (max >= (256u << 10))
            assert_true(len > max / 2); /* what fits is drawn */
        else /* not even the 1,000 first frames fit: one stand-in for them */
            assert_non_null(strstr(svg, "<title>[1,000 narrow frames] (1,000 samples, 90.91%)</title>"));
        assert_true(xml_well_formed(svg));
        assert_non_null(strstr(svg, "<title>all (1,100 samples, 100.00%)</title>"));
        assert_non_null(strstr(svg, "<title>hotter (100 samples, 9.09%)</title>"));
        assert_non_null(strstr(svg, " merged: the graph is held to "));
        assert_true(st.minwidth_px > 1);
        free(svg);
    }
    /* stand-ins a cut makes: 1,000 frames of 2 samples, each with two of
     * 1 above it; cut between them, each pair becomes one "[2 narrow
     * frames]" the frames below did not pay for (2 px a sample: each
     * frame is drawn).  Every budget from what the widest frames need to
     * the whole graph is kept. */
    o.width = 2 * 2000 + 20;
    p = in;
    for (int i = 0; i < 1000; i++)
        p += sprintf(p, "m;a%d;b%d 1\nm;a%d;c%d 1\n", i, i, i, i);
    o.max_bytes = 0;
    svg = render_n(in, (size_t)(p - in), &o, &st, &full);
    free(svg);
    for (size_t max = 16 << 10; max < full; max += 6 << 10) {
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);
        ph_error_t err = NULL;
        o.max_bytes = max;
        if (ph_flame_render_folded(in, (size_t)(p - in), &o, f, &st, &err) < 0)
            fail_msg("max_bytes %zu: %s", max, err->msg);
        fclose(f);
        if (n > max)
            fail_msg("max_bytes %zu: %zu bytes written", max, n);
        free(buf);
    }
    /* a name of 20,000 characters: its tooltip shows PH_FLAME_NAME_SHOWN */
    memset(in, 'n', 20000);
    snprintf(in + 20000, 64, " 1\n");
    o.max_bytes = 1 << 20;
    svg = render_n(in, strlen(in), &o, &st, &len);
    assert_true(len < 30000);
    {
        char *t = strstr(svg, "<title>nnn");
        assert_non_null(t);
        assert_int_equal(strspn(t + 7, "n"), PH_FLAME_NAME_SHOWN - 2);
        assert_memory_equal(t + 7 + PH_FLAME_NAME_SHOWN - 2, ".. (1 samples", 13);
    }
    free(svg);
    /* no room even for the title: an error, nothing half written */
    {
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);
        ph_error_t err = NULL;
        o.max_bytes = 1000;
        assert_int_equal(ph_flame_render_folded("a;b 1\n", 6, &o, f, &st, &err), -1);
        assert_non_null(strstr(err->msg, "cannot be held to 1000 bytes"));
        ph_error_free(&err);
        fclose(f);
        assert_int_equal(n, 0);
        free(buf);
    }
    free(in);
}

/* rgb(R,G,B) of a frame's fill, in *R, *G, *B. */
static void
rgb_of(const char *svg, const char *name, int *r, int *g, int *b)
{
    assert_int_equal(sscanf(fill_of(svg, name), "rgb(%d,%d,%d)", r, g, b), 3);
}

/* Annotations (_[k] kernel, _[j] JIT, _[i] inlined, _[w] waker, _[p] Python) are left
 * out of labels and tooltips, as flamegraph.pl does, and colour the frame
 * in any palette; only a trailing one counts. */
static void
test_annotations(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;
    int r, g, b;

    (void)state;
    ph_flame_opts_init(&o);
    o.minwidth = 0;
    svg = render("a;sys_read_[k] 1\na;jitted_[j] 1\na;inl_[i] 1\na;wk_[w] 1\na;mid_[k]x 1\n", &o, &st);
    assert_null(strstr(svg, "_[k] ("));
    assert_null(strstr(svg, ">sys_read_[k]<"));
    assert_non_null(strstr(svg, "<title>sys_read (1 samples"));
    assert_non_null(strstr(svg, "<title>mid_[k]x (1 samples"));
    free(svg);
    svg = render("a;_[k] 1\na;x[k] 1\n", &o, &st); /* only "_[k]": an empty name; "[k]" alone stays */
    assert_non_null(strstr(svg, "<title> (1 samples"));
    assert_non_null(strstr(svg, "<title>x[k] (1 samples"));
    free(svg);
    svg = render("a;sys_read_[k] 1\na;jitted_[j] 1\na;inl_[i] 1\na;wk_[w] 1\na;mid_[k]x 1\n", &o, &st);
    rgb_of(svg, "sys_read", &r, &g, &b); /* orange */
    assert_true(r >= 190 && g >= 90 && g <= 155 && b == 0);
    rgb_of(svg, "jitted", &r, &g, &b); /* green */
    assert_true(g >= 200 && r == b && r >= 50 && r <= 110);
    rgb_of(svg, "inl", &r, &g, &b); /* aqua */
    assert_true(r >= 50 && r <= 110 && g >= 165 && g == b);
    rgb_of(svg, "wk", &r, &g, &b);
    assert_true(r >= 50 && r <= 110 && g >= 165 && g == b);
    rgb_of(svg, "mid_[k]x", &r, &g, &b); /* hot */
    assert_true(r >= 205 && b <= 55);
    /* the label is fitted without the annotation */
    assert_non_null(strstr(svg, ">sys_read</text>"));
    free(svg);
    /* a Python function (the sampler's CPython frames): blue, its own kind */
    svg = render("a;py_fn_[p] 1\na;native 1\n", &o, &st);
    assert_non_null(strstr(svg, "<title>py_fn (1 samples"));
    rgb_of(svg, "py_fn", &r, &g, &b);
    assert_true(r >= 80 && r <= 140 && g >= 80 && g <= 140 && b >= 205);
    free(svg);
}

/* The sampler's Python frames (`_[p]`) are blue in every palette, and
 * read without the annotation. */
static void
test_python_frames(void **state)
{
    const char *palettes[] = { "hot", "java", "js", "mem" };
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;
    int r, g, b;

    (void)state;
    for (size_t i = 0; i < sizeof palettes / sizeof *palettes; i++) {
        ph_flame_opts_init(&o);
        o.minwidth = 0;
        o.palette = palettes[i];
        svg = render("main;_PyEval_Vector;hot_seventy_five (work.py:9)_[p] 3\nmain;other 1\n", &o, &st);
        assert_non_null(strstr(svg, "<title>hot_seventy_five (work.py:9) (3 samples"));
        rgb_of(svg, "hot_seventy_five (work.py:9)", &r, &g, &b);
        assert_true(r >= 80 && r <= 140 && g >= 80 && g <= 140 && b >= 205);
        free(svg);
    }
}

/* flamegraph.pl's multi palettes pick a colour by what a name looks like;
 * `--` and `-` (separators of combined stacks) are grey. */
static void
test_multi_palettes(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;
    int r, g, b;

    (void)state;
    ph_flame_opts_init(&o);
    o.minwidth = 0;
    o.palette = "java";
    svg = render("m;java/lang/Thread.run 1\nm;Ljdk/x 1\nm;Foo::bar 1\nm;vm_[k] 1\nm;plain 1\nm;--;x 1\nm;- 1\n"
                 "m;Lfoo/Bar:::baz 1\nm;Foo::inl_[i] 1\n", &o, &st);
    rgb_of(svg, "Lfoo/Bar:::baz", &r, &g, &b); /* perf-map-agent's Java methods */
    assert_true(g >= 200 && r == b);
    rgb_of(svg, "Foo::inl", &r, &g, &b); /* the annotation before the name */
    assert_true(g >= 165 && g == b && r <= 110);
    rgb_of(svg, "java/lang/Thread.run", &r, &g, &b);
    assert_true(g >= 200 && r == b);
    rgb_of(svg, "Ljdk/x", &r, &g, &b);
    assert_true(g >= 200 && r == b);
    rgb_of(svg, "Foo::bar", &r, &g, &b); /* yellow */
    assert_true(r == g && r >= 175 && b >= 50 && b <= 70);
    rgb_of(svg, "vm", &r, &g, &b);
    assert_true(r >= 190 && b == 0);
    rgb_of(svg, "plain", &r, &g, &b); /* red */
    assert_true(r >= 200 && g == b && g <= 130);
    assert_string_equal(fill_of(svg, "--"), "rgb(160,160,160)");
    assert_string_equal(fill_of(svg, "-"), "rgb(200,200,200)");
    free(svg);
    o.palette = "js";
    svg = render("m;/app/main.js:run 1\nm;Builtin:Apply 1\nm;node::Start 1\nm;lazy_[j] 1\nm;/a/b_[j] 1\n", &o, &st);
    rgb_of(svg, "/app/main.js:run", &r, &g, &b);
    assert_true(g >= 200 && r == b);
    rgb_of(svg, "Builtin:Apply", &r, &g, &b);
    assert_true(g >= 165 && g == b && r <= 110);
    rgb_of(svg, "node::Start", &r, &g, &b);
    assert_true(r == g && b <= 70);
    rgb_of(svg, "lazy", &r, &g, &b);
    assert_true(g >= 165 && g == b && r <= 110);
    rgb_of(svg, "/a/b", &r, &g, &b);
    assert_true(g >= 200 && r == b);
    free(svg);
    o.palette = "chain";
    svg = render("m;off;--;waker_[w] 1\n", &o, &st);
    rgb_of(svg, "waker", &r, &g, &b);
    assert_true(g >= 165 && g == b && r <= 110);
    rgb_of(svg, "off", &r, &g, &b); /* blue */
    assert_true(b >= 205 && r == g);
    free(svg);
    assert_true(ph_flame_palette_valid("perl") && ph_flame_palette_valid("wakeup") && !ph_flame_palette_valid("plaid"));
}

/* A subtitle wider than the image is wrapped at blanks (or anywhere, in a
 * word too long for a line), at most 3 lines, the last cut with "..";
 * every line fits, at 7.23 px a character, and the image grows to hold
 * them.  A title too long is cut with "..". */
static void
test_subtitle_fits(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg, sub[2048], lines[8][512], *p = sub;
    int n, h1, h3;

    (void)state;
    for (int i = 0; i < 40; i++)
        p += sprintf(p, "%sword%02d", i ? " " : "", i); /* 40 * 7 - 1 = 279 characters */
    ph_flame_opts_init(&o);
    o.subtitle = "short";
    svg = render("a 1\n", &o, &st);
    assert_int_equal(subtitle_lines(svg, lines, 8), 1);
    assert_string_equal(lines[0], "short");
    assert_int_equal(sscanf(strstr(svg, "height=\""), "height=\"%d\"", &h1), 1);
    free(svg);
    o.subtitle = sub;
    svg = render("a 1\n", &o, &st);
    n = subtitle_lines(svg, lines, 8);
    assert_int_equal(n, 2);
    assert_int_equal(strlen(lines[0]), 160); /* 163 fit: the last blank before is after word22 */
    assert_true(strncmp(lines[1], "word23 ", 7) == 0);
    assert_true(strlen(lines[1]) <= 163);
    free(svg);
    o.width = 300; /* 280 px: 38 characters a line */
    svg = render("a 1\n", &o, &st);
    n = subtitle_lines(svg, lines, 8);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++)
        assert_true(strlen(lines[i]) <= 38);
    assert_non_null(strstr(lines[2], ".."));
    assert_int_equal(sscanf(strstr(svg, "height=\""), "height=\"%d\"", &h3), 1);
    assert_int_equal(h3, h1 + 2 * 16);
    free(svg);
    memset(sub, 'x', 100); /* one word longer than a line */
    sub[100] = '\0';
    svg = render("a 1\n", &o, &st);
    n = subtitle_lines(svg, lines, 8);
    assert_int_equal(n, 3);
    assert_int_equal(strlen(lines[0]), 38);
    assert_int_equal(strlen(lines[1]), 38);
    assert_int_equal(strlen(lines[2]), 24);
    free(svg);
    memset(sub, 'x', 200); /* cut: 36 characters and ".." */
    sub[200] = '\0';
    svg = render("a 1\n", &o, &st);
    assert_int_equal(subtitle_lines(svg, lines, 8), 3);
    assert_int_equal(strlen(lines[2]), 38);
    assert_string_equal(lines[2] + 36, "..");
    free(svg);
    sub[100] = '\0';
    o.subtitle = NULL;
    o.title = sub; /* 100 characters in 300 px: cut */
    svg = render("a 1\n", &o, &st);
    assert_non_null(strstr(svg, "xx..</text>"));
    assert_null(strstr(svg, sub));
    free(svg);
    /* a blank right where a line is full: the line is full */
    memset(sub, 'y', 100);
    sub[10] = sub[38] = ' ';
    o.title = NULL;
    o.subtitle = sub;
    o.width = 300;
    svg = render("a 1\n", &o, &st);
    n = subtitle_lines(svg, lines, 8);
    assert_int_equal(strlen(lines[0]), 38);
    assert_int_equal(strlen(lines[1]), 38);
    free(svg);
}

static void
test_nothing_to_draw(void **state)
{
    ph_error_t err = NULL;
    ph_flame_opts o;
    FILE *f = fopen("/dev/null", "w");

    (void)state;
    assert_int_equal(ph_flame_render_folded("garbage\nmore garbage\n", 21, NULL, f, NULL, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "2 not in the folded format"));
    ph_error_free(&err);
    assert_int_equal(ph_flame_render_folded("a 0\n", 4, NULL, f, NULL, &err), -1);
    ph_error_free(&err);
    ph_flame_opts_init(&o);
    o.palette = "plaid";
    assert_int_equal(ph_flame_render_folded("a 1\n", 4, &o, f, NULL, &err), -1);
    assert_non_null(strstr(err->msg, "plaid"));
    ph_error_free(&err);
    fclose(f);
}

/* What stands in for a graph when there is none: a valid SVG of the
 * asked width that says why, the message escaped and wrapped. */
static void
test_error_svg(void **state)
{
    char *svg = NULL, msg[400];
    size_t len = 0;
    FILE *f = open_memstream(&svg, &len);
    ph_error_t err = NULL;
    ph_flame_opts o;

    (void)state;
    ph_flame_opts_init(&o);
    o.width = 400;
    memset(msg, 'm', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    memcpy(msg, "no <stack> & \x01", 14);
    assert_int_equal(ph_flame_render_error(msg, &o, f, &err), 0);
    fclose(f);
    assert_non_null(strstr(svg, "width=\"400\""));
    /* wrapped at the last blank before the long word */
    assert_non_null(strstr(svg, ">ERROR: no &lt;stack&gt; &amp;</tspan>"));
    assert_non_null(strstr(svg, "\">\\x01mmm"));
    assert_non_null(strstr(svg, "..</tspan>"));
    assert_true(utf8_valid(svg, len));
    assert_true(xml_well_formed(svg));
    free(svg);
}

/* Renders from several threads at once give identical bytes: no hidden
 * shared state (the sampler renders from its writer thread). */
static const char *thread_in = "main;a;b 10\nmain;a;c 5\nmain;d 5\nx;y;z 3 4\n";

static void *
render_thread(void *arg)
{
    char **out = arg;

    for (int i = 0; i < 50; i++) {
        free(*out);
        *out = render(thread_in, NULL, NULL);
    }
    return NULL;
}

static void
test_threads(void **state)
{
    pthread_t t[4];
    char *out[4] = { NULL, NULL, NULL, NULL };

    (void)state;
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, render_thread, &out[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int i = 1; i < 4; i++)
        assert_string_equal(out[0], out[i]);
    for (int i = 0; i < 4; i++)
        free(out[i]);
}

/* ---- golden files ------------------------------------------------------- */

static char *
read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    long n;
    char *s;

    if (f == NULL)
        fail_msg("open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    s = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

/* Golden files pin the whole SVG, script included: a change to the output
 * must be deliberate (PH_UPDATE_GOLDEN=1 rewrites them; review the diff). */
static void
golden(const char *name, const char *input, const ph_flame_opts *o)
{
    char in_path[256], svg_path[256], *in, *svg, *want;
    ph_flame_stats st;

    snprintf(in_path, sizeof in_path, "tests/unit/data/flame/%s.folded", input);
    snprintf(svg_path, sizeof svg_path, "tests/unit/data/flame/%s.svg", name);
    in = read_all(in_path);
    svg = render(in, o, &st);
    if (getenv("PH_UPDATE_GOLDEN")) {
        FILE *f = fopen(svg_path, "w");
        assert_non_null(f);
        fputs(svg, f);
        fclose(f);
    }
    want = read_all(svg_path);
    if (strcmp(svg, want) != 0)
        fail_msg("%s differs from the rendering of %s (PH_UPDATE_GOLDEN=1 to accept)", svg_path, in_path);
    free(in);
    free(svg);
    free(want);
}

static void
test_golden_files(void **state)
{
    ph_flame_opts o;

    (void)state;
    ph_flame_opts_init(&o);
    o.title = "basic";
    golden("basic", "basic", &o);
    ph_flame_opts_init(&o);
    o.countname = "bytes";
    o.palette = "mem";
    o.inverted = 1;
    golden("diff", "diff", &o);
    ph_flame_opts_init(&o);
    o.flamechart = 1;
    o.subtitle = "time order";
    golden("chart", "chart", &o);
    ph_flame_opts_init(&o);
    o.reverse = 1;
    o.palette = "io";
    o.width = 600;
    golden("reverse", "basic", &o);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_counts_and_bad_lines),
        cmocka_unit_test(test_parse_differential_and_modes),
        cmocka_unit_test(test_parse_streamed),
        cmocka_unit_test(test_parse_limits),
        cmocka_unit_test(test_parse_blank_stack_names),
        cmocka_unit_test(test_parse_many_bad_lines),
        cmocka_unit_test(test_diff_folded),
        cmocka_unit_test(test_merge_and_titles),
        cmocka_unit_test(test_minwidth_prunes),
        cmocka_unit_test(test_minwidth_boundary),
        cmocka_unit_test(test_width_range),
        cmocka_unit_test(test_one_frame_per_name_and_parent),
        cmocka_unit_test(test_order_modes),
        cmocka_unit_test(test_sibling_order),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_inverted_and_geometry),
        cmocka_unit_test(test_differential_parents),
        cmocka_unit_test(test_differential_self),
        cmocka_unit_test(test_escaping_and_labels),
        cmocka_unit_test(test_bidi_names_shown),
        cmocka_unit_test(test_max_depth_marker),
        cmocka_unit_test(test_collapse_narrow_siblings),
        cmocka_unit_test(test_max_bytes),
        cmocka_unit_test(test_random_names_valid_xml),
        cmocka_unit_test(test_annotations),
        cmocka_unit_test(test_python_frames),
        cmocka_unit_test(test_multi_palettes),
        cmocka_unit_test(test_subtitle_fits),
        cmocka_unit_test(test_nothing_to_draw),
        cmocka_unit_test(test_error_svg),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_golden_files),
    };
    return cmocka_run_group_tests_name("flame", tests, NULL, NULL);
}
