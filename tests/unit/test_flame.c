/* test_flame.c - the renderer: parsing (decimals, differential, bad
 * lines), merging, pruning, ordering modes, and the SVG's contents. */
#include "test_util.h"

#include "ph_flame.h"

/* Render IN with O; returns the SVG (malloc'd) and fills ST. */
static char *
render(const char *in, const ph_flame_opts *o, ph_flame_stats *st)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ph_error_t err = NULL;

    assert_non_null(f);
    if (ph_flame_render_folded(in, strlen(in), o, f, st, &err) < 0)
        fail_msg("render failed: %s", err->msg);
    fclose(f);
    return buf;
}

static int
count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void
test_merge_and_titles(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render("main;a;b 10\nmain;a;c 5\nmain;d 5\nnot a stack\nmain;a;b 2.5\n\n# comment\n", &o, &st);
    assert_int_equal(st.stacks, 4);
    assert_int_equal(st.bad_lines, 1);
    assert_int_equal(st.bad_line_numbers[0], 4);
    assert_int_equal(st.frames_drawn, 6); /* all, main, a, b, c, d */
    assert_true(st.total == 22.5);
    assert_non_null(strstr(svg, "<title>b (12.500 samples, 55.56%)</title>"));
    assert_non_null(strstr(svg, "<title>a (17.500 samples, 77.78%)</title>"));
    assert_non_null(strstr(svg, "<title>d (5 samples, 22.22%)</title>"));
    assert_non_null(strstr(svg, "Reset Zoom"));
    assert_non_null(strstr(svg, "Matched: "));
    assert_non_null(strstr(svg, "history.replaceState"));
    free(svg);
}

static void
test_escaping_and_countname(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    o.countname = "ns";
    o.title = "A <b> & c";
    svg = render("std::vector<int>::push_back&x 1000000\n", &o, &st);
    assert_non_null(strstr(svg, "std::vector&lt;int&gt;::push_back&amp;x (1,000,000 ns, 100.00%)"));
    assert_non_null(strstr(svg, ">A &lt;b&gt; &amp; c</text>"));
    assert_null(strstr(svg, "<int>"));
    free(svg);
}

static void
test_minwidth_prunes(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    o.width = 1020; /* 1000 px for the data after padding: 1 sample of 10000 = 0.1 px */
    /* tiny;leaf is 1 of 10000 samples = 0.1 px: kept at minwidth 0.1,
     * dropped (with its child) at 0.5. */
    svg = render("big 9999\ntiny;leaf 1\n", &o, &st);
    assert_int_equal(st.frames_drawn, 4);
    free(svg);
    o.minwidth = 0.5;
    svg = render("big 9999\ntiny;leaf 1\n", &o, &st);
    assert_int_equal(st.frames_drawn, 2);
    assert_null(strstr(svg, "tiny"));
    free(svg);
}

/* Children are alphabetical (merged), or in input order with --flamechart,
 * where a stack merges only with the one just before it. */
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
    free(svg);
    o.flamechart = 1;
    svg = render(in, &o, &st);
    assert_int_equal(st.frames_drawn, 5); /* all, m, z, a, z: time order kept */
    assert_int_equal(count(svg, "<title>z (1 samples"), 2);
    assert_true(strstr(svg, "<title>z (") < strstr(svg, "<title>a ("));
    free(svg);
    o.flamechart = 0;
    o.reverse = 1;
    svg = render("root;mid;leaf 3\n", &o, &st);
    /* reversed: leaf is now the base frame, directly above "all" */
    assert_non_null(strstr(svg, "<title>leaf (3 samples"));
    free(svg);
}

static double
rect_y(const char *svg, const char *name)
{
    char want[64];
    const char *p;
    double y = -1;

    snprintf(want, sizeof want, "<title>%s (", name);
    p = strstr(svg, want);
    assert_non_null(p);
    p = strstr(p, " y=\"");
    assert_non_null(p);
    sscanf(p + 4, "%lf", &y);
    return y;
}

static void
test_inverted(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render("root;leaf 1\n", &o, &st);
    assert_true(rect_y(svg, "leaf") < rect_y(svg, "root")); /* flames grow up */
    assert_non_null(strstr(svg, ">Flame Graph<"));
    free(svg);
    o.inverted = 1;
    svg = render("root;leaf 1\n", &o, &st);
    assert_true(rect_y(svg, "leaf") > rect_y(svg, "root")); /* icicles hang down */
    assert_non_null(strstr(svg, ">Icicle Graph<"));
    free(svg);
}

/* A parent's colour follows its subtree's change, not only the leaves'. */
static void
test_differential(void **state)
{
    ph_flame_opts o;
    ph_flame_stats st;
    char *svg, *grow, *shrink;

    (void)state;
    ph_flame_opts_init(&o);
    svg = render("main;grow;x 10 30\nmain;shrink;y 20 5\n", &o, &st);
    assert_true(st.differential);
    assert_true(st.total == 35); /* widths follow the "after" profile */
    grow = strstr(svg, "<title>grow (");
    shrink = strstr(svg, "<title>shrink (");
    assert_non_null(grow);
    assert_non_null(shrink);
    assert_non_null(strstr(grow, "+20)"));
    assert_non_null(strstr(shrink, "-15)"));
    assert_non_null(strstr(strstr(grow, "fill=\""), "fill=\"rgb(255,"));   /* red: grew */
    assert_int_equal(strncmp(strstr(shrink, "fill=\"") + 6, "rgb(", 4), 0);
    assert_non_null(strstr(strstr(shrink, "fill=\""), ",255)")); /* blue: shrank */
    free(svg);
}

static void
test_diff_folded(void **state)
{
    const char *a = "m;x 10\nm;y 10\n", *b = "m;x 30\nm;z 10\n";
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ph_error_t err = NULL;

    (void)state;
    assert_int_equal(ph_flame_diff_folded(a, strlen(a), b, strlen(b), 0, f, &err), 0);
    fclose(f);
    assert_string_equal(buf, "m;x 10 30\nm;y 10 0\nm;z 0 10\n");
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(ph_flame_diff_folded(a, strlen(a), b, strlen(b), 1, f, &err), 0);
    fclose(f);
    assert_string_equal(buf, "m;x 10 15\nm;y 10 0\nm;z 0 5\n");
    free(buf);
}

static void
test_nothing_to_draw(void **state)
{
    ph_error_t err = NULL;
    FILE *f = fopen("/dev/null", "w");

    (void)state;
    assert_int_equal(ph_flame_render_folded("garbage\nmore garbage\n", 21, NULL, f, NULL, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "2 not in the folded format"));
    ph_error_free(&err);
    fclose(f);
}

/* Golden files pin the whole SVG, script included: a change to the output
 * must be deliberate (PH_UPDATE_GOLDEN=1 rewrites them; review the diff). */
static void
golden(const char *name, const ph_flame_opts *o)
{
    char in_path[256], svg_path[256], *in, *svg, *want;
    FILE *f;
    long n;
    ph_flame_stats st;

    snprintf(in_path, sizeof in_path, "tests/unit/data/flame/%s.folded", name);
    snprintf(svg_path, sizeof svg_path, "tests/unit/data/flame/%s.svg", name);
    f = fopen(in_path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    in = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(in, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    svg = render(in, o, &st);
    if (getenv("PH_UPDATE_GOLDEN")) {
        f = fopen(svg_path, "w");
        assert_non_null(f);
        fputs(svg, f);
        fclose(f);
    }
    f = fopen(svg_path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    want = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(want, 1, (size_t)n, f), (size_t)n);
    fclose(f);
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
    golden("basic", &o);
    ph_flame_opts_init(&o);
    o.countname = "bytes";
    o.palette = "mem";
    o.inverted = 1;
    golden("diff", &o);
    ph_flame_opts_init(&o);
    o.flamechart = 1;
    o.subtitle = "time order";
    golden("chart", &o);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_and_titles),  cmocka_unit_test(test_escaping_and_countname),
        cmocka_unit_test(test_minwidth_prunes),   cmocka_unit_test(test_order_modes),
        cmocka_unit_test(test_inverted),          cmocka_unit_test(test_differential),
        cmocka_unit_test(test_diff_folded),       cmocka_unit_test(test_nothing_to_draw),
        cmocka_unit_test(test_golden_files),
    };
    return cmocka_run_group_tests_name("flame", tests, NULL, NULL);
}
