/* test_massif.c - the massif.out parser against ms_print: a real program
 * (helpers/report_work.c alloc) run under valgrind massif with the massif
 * profile's flags; every snapshot's figures and the peak tree, line by
 * line at ms_print's threshold, must equal what ms_print prints.  Then the
 * multi-line `cmd:` ms_print refuses, bad input of every kind (truncated,
 * empty, garbage, a tree cut short), any chunking, and thinning past
 * PH_MASSIF_MAX_POINTS snapshots. */
#include "report_test_util.h"

#include "ph_fmt.h"
#include "ph_massif.h"

static char massif_path[600];

static int
group_setup(void **state)
{
    (void)state;
    tu_mkdtemp();
    snprintf(massif_path, sizeof massif_path, "%s/massif.out", test_dir);
    free(rt_must("valgrind -q --tool=massif --massif-out-file=%s --time-unit=B --detailed-freq=10 "
                 "--max-snapshots=100 --threshold=0.5 " WORK " alloc 2>&1",
                 massif_path));
    return 0;
}

static int
group_teardown(void **state)
{
    (void)state;
    tu_rmdir();
    return 0;
}

static ph_massif *
parse_buf(const char *buf, size_t len, size_t chunk)
{
    ph_error_t err = NULL;
    ph_massif *m = ph_massif_new(&err);

    assert_non_null(m);
    for (size_t o = 0; o < len; o += chunk)
        assert_int_equal(ph_massif_feed(m, buf + o, len - o < chunk ? len - o : chunk, &err), 0);
    assert_int_equal(ph_massif_finish(m, &err), 0);
    return m;
}

/* ms_print's snapshot table rows, in order. */
typedef struct row {
    unsigned long long n, time, total, heap, extra, stacks;
} row;

static size_t
ms_rows(const char *out, row *rows, size_t cap)
{
    const char *p = out;
    char line[4096], c[6][64];
    size_t n = 0;

    while (rt_next_line(&p, line, sizeof line)) {
        char tail;
        if (sscanf(line, " %63[0-9] %63[0-9,] %63[0-9,] %63[0-9,] %63[0-9,] %63[0-9,] %c", c[0], c[1], c[2], c[3], c[4],
                   c[5], &tail) != 6)
            continue;
        assert_true(n < cap);
        rows[n++] = (row){ rt_uncommify(c[0], strlen(c[0])), rt_uncommify(c[1], strlen(c[1])),
                           rt_uncommify(c[2], strlen(c[2])), rt_uncommify(c[3], strlen(c[3])),
                           rt_uncommify(c[4], strlen(c[4])), rt_uncommify(c[5], strlen(c[5])) };
    }
    return n;
}

/* The lines of our walk, written the way ms_print writes them. */
typedef struct text {
    char *buf;
    size_t len;
    FILE *f;
} text;

static int
print_line_cb(void *ctx, const ph_massif_line *l)
{
    text *t = ctx;
    char bytes[PH_FMT_LEN];

    /* the tree-drawing prefix is ms_print's business; depth is ours to get right */
    if (l->group)
        fprintf(t->f, "%u %05.2f%% (%sB) in %u+ places, all below ms_print's threshold (01.00%%)\n", l->depth,
                l->percent, ph_fmt_commify(bytes, l->bytes), l->places);
    else
        fprintf(t->f, "%u %05.2f%% (%sB) %s\n", l->depth, l->percent, ph_fmt_commify(bytes, l->bytes), l->details);
    return 0;
}

/* ms_print's tree after the row of snapshot PEAK, as "depth line". */
static char *
ms_peak_tree(const char *out, unsigned long long peak)
{
    const char *p = out;
    char line[8192], want[64];
    text t = { 0 };
    int in = 0;

    t.f = open_memstream(&t.buf, &t.len);
    snprintf(want, sizeof want, "%llu", peak);
    while (rt_next_line(&p, line, sizeof line)) {
        char first[64] = "";
        sscanf(line, " %63s", first);
        if (!in) {
            in = strcmp(first, want) == 0 && strchr(line, ',') != NULL;
            continue;
        }
        if (strncmp(line, "-----", 5) == 0)
            break;
        {
            const char *s = line;
            size_t depth = 0;
            while (*s == '|' || *s == ' ')
                s++;
            if (*s == '\0')
                continue; /* a spacer line */
            if (strncmp(s, "->", 2) == 0) {
                depth = (size_t)(s - line) / 2 + 1;
                s += 2;
            }
            fprintf(t.f, "%zu %s\n", depth, s);
        }
    }
    fclose(t.f);
    return t.buf;
}

static void
test_figures_equal_ms_print(void **state)
{
    size_t len;
    char *file = rt_slurp(massif_path, &len);
    char *out = rt_must("cd / && ms_print %s", massif_path);
    ph_massif *m = parse_buf(file, len, 1 << 20);
    const ph_massif_info *info = ph_massif_get_info(m);
    static row rows[1000];
    size_t nr = ms_rows(out, rows, 1000);
    char *theirs, *ours;
    text t = { 0 };

    (void)state;
    assert_true(nr > 10);
    assert_int_equal(info->n_snapshots, nr);
    assert_int_equal(ph_massif_n_snapshots(m), nr);
    assert_int_equal(info->bad_lines, 0);
    assert_string_equal(info->problem, "");
    assert_string_equal(info->time_unit, "B");
    for (size_t i = 0; i < nr; i++) {
        const ph_massif_snapshot *s = ph_massif_get_snapshot(m, i);
        assert_int_equal(s->num, rows[i].n);
        assert_int_equal(s->time, rows[i].time);
        assert_int_equal(s->heap + s->extra + s->stacks, rows[i].total);
        assert_int_equal(s->heap, rows[i].heap);
        assert_int_equal(s->extra, rows[i].extra);
        assert_int_equal(s->stacks, rows[i].stacks);
    }
    /* the peak ms_print marks in "Detailed snapshots: [..., 23 (peak), ...]" */
    {
        char want[64];
        assert_true(info->peak >= 0);
        snprintf(want, sizeof want, "%llu (peak)", (unsigned long long)info->peak_num);
        assert_non_null(strstr(out, want));
    }
    theirs = ms_peak_tree(out, info->peak_num);
    t.f = open_memstream(&t.buf, &t.len);
    assert_int_equal(ph_massif_walk_peak(m, 1.0, print_line_cb, &t), 0);
    fclose(t.f);
    ours = t.buf;
    assert_true(strlen(theirs) > 100);
    assert_string_equal(ours, theirs);
    /* and the program's own sites are in it */
    assert_non_null(strstr(ours, "report_cache_put"));
    assert_non_null(strstr(ours, "report_build_response"));
    free(ours);
    free(theirs);
    free(out);
    free(file);
    ph_massif_free(m);
}

static void
test_any_chunking_same_result(void **state)
{
    size_t len;
    char *file = rt_slurp(massif_path, &len);
    ph_massif *a = parse_buf(file, len, 1 << 20), *b = parse_buf(file, len, 1), *c = parse_buf(file, len, 97);

    (void)state;
    for (ph_massif *x = b; x != NULL; x = x == b ? c : NULL) {
        assert_int_equal(ph_massif_n_snapshots(x), ph_massif_n_snapshots(a));
        assert_int_equal(ph_massif_n_peak_nodes(x), ph_massif_n_peak_nodes(a));
        assert_int_equal(ph_massif_get_info(x)->peak, ph_massif_get_info(a)->peak);
        for (size_t i = 0; i < ph_massif_n_peak_nodes(a); i++) {
            assert_int_equal(ph_massif_get_peak_node(x, i)->bytes, ph_massif_get_peak_node(a, i)->bytes);
            assert_string_equal(ph_massif_get_peak_node(x, i)->details, ph_massif_get_peak_node(a, i)->details);
        }
    }
    ph_massif_free(a);
    ph_massif_free(b);
    ph_massif_free(c);
    free(file);
}

/* The top-level sites of each detailed snapshot add up to its heap (less
 * what massif folded into "below threshold"), and the names carry no
 * address. */
static void
test_detailed_sites(void **state)
{
    ph_error_t err = NULL;
    ph_massif *m = ph_massif_parse_file(massif_path, &err);
    size_t with_sites = 0;

    (void)state;
    assert_non_null(m);
    for (size_t i = 0; i < ph_massif_n_snapshots(m); i++) {
        const ph_massif_snapshot *s = ph_massif_get_snapshot(m, i);
        const ph_massif_site_bytes *v;
        size_t n = ph_massif_detail_sites(m, s->detail, &v);
        uint64_t sum = 0;

        if (s->tree == PH_MASSIF_EMPTY) {
            assert_int_equal(s->detail, -1);
            continue;
        }
        assert_true(s->detail >= 0);
        for (size_t k = 0; k < n; k++) {
            const char *name = ph_massif_site_name(m, v[k].site);
            assert_false(strncmp(name, "0x", 2) == 0 && strchr(name, ':') != NULL);
            sum += v[k].bytes;
        }
        assert_int_equal(sum, s->heap);
        with_sites += n > 0;
    }
    assert_true(with_sites > 3);
    /* the sites are the root's children, not the root ("(heap allocation
     * functions) ..."): at the peak, each of its depth-1 nodes (as the peak
     * tree keeps them, ms_print's) is one site with the same bytes */
    {
        const ph_massif_info *in = ph_massif_get_info(m);
        const ph_massif_snapshot *pk;
        const ph_massif_site_bytes *v;
        const ph_massif_node *root;
        size_t n, children = 0;

        assert_true(in->peak >= 0);
        pk = ph_massif_get_snapshot(m, (size_t)in->peak);
        n = ph_massif_detail_sites(m, pk->detail, &v);
        root = ph_massif_get_peak_node(m, 0);
        assert_non_null(root);
        assert_int_equal(root->depth, 0);
        assert_true(root->n_children > 1);
        assert_int_equal(n, root->n_children < PH_MASSIF_MAX_SITES_PER ? root->n_children : PH_MASSIF_MAX_SITES_PER);
        for (size_t k = 0; k < n; k++)
            assert_null(strstr(ph_massif_site_name(m, v[k].site), "(heap allocation functions)"));
        for (size_t i = 1; i < ph_massif_n_peak_nodes(m); i++) {
            const ph_massif_node *nd = ph_massif_get_peak_node(m, i);
            const char *want = nd->details;
            size_t k;

            if (nd->depth != 1)
                continue;
            children++;
            if (strncmp(want, "0x", 2) == 0 && strchr(want, ':') != NULL)
                want = strchr(want, ':') + 1 + strspn(strchr(want, ':') + 1, " ");
            for (k = 0; k < n; k++)
                if (strcmp(ph_massif_site_name(m, v[k].site), want) == 0 && v[k].bytes == nd->bytes)
                    break;
            if (k == n)
                fail_msg("the peak's child `%s` (%llu B) is no site of the peak snapshot", nd->details,
                         (unsigned long long)nd->bytes);
        }
        assert_true(children > 1);
    }
    /* past the end: nothing, not the next slot */
    {
        const ph_massif_site_bytes *v;
        assert_null(ph_massif_get_snapshot(m, ph_massif_n_snapshots(m)));
        assert_null(ph_massif_get_peak_node(m, ph_massif_n_peak_nodes(m)));
        assert_int_equal(ph_massif_detail_sites(m, -1, &v), 0);
        assert_int_equal(ph_massif_detail_sites(m, INT32_MAX, &v), 0);
    }
    ph_massif_free(m);
}

/* massif writes the command line as it is; with a newline in an argument
 * ms_print 3.19 dies ("missing 'time_unit' line").  We read it, and the
 * figures equal ms_print's on the same file with the command on one line. */
static void
test_multiline_cmd(void **state)
{
    const char *ml = rt_path("massif-ml.out"), *fixed = rt_path("massif-fixed.out");
    int st;
    char *out, *fixed_out, *file;
    size_t len;
    ph_massif *m;
    const ph_massif_info *info;
    static row rows[1000];
    size_t nr;

    (void)state;
    free(rt_must("valgrind -q --tool=massif --massif-out-file=%s --time-unit=B " WORK " alloc \"$(printf 'x\\ny')\" 2>&1",
                 ml));
    out = rt_run(&st, "ms_print %s 2>&1", ml);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(out, "time_unit"));
    free(out);
    /* join the command's lines, the way a person would fix the file by hand */
    free(rt_must("awk 'done || !/^cmd:/ { print; next } { c = $0; while ((getline l) > 0 && l !~ /^time_unit:/) c = c \" \" l; "
                 "print c; print l; done = 1 }' %s > %s",
                 ml, fixed));
    fixed_out = rt_must("ms_print %s", fixed);
    nr = ms_rows(fixed_out, rows, 1000);
    file = rt_slurp(ml, &len);
    m = parse_buf(file, len, 4096);
    info = ph_massif_get_info(m);
    assert_int_equal(info->cmd_lines, 2);
    assert_non_null(strstr(info->cmd, "alloc x\ny"));
    assert_string_equal(info->problem, "");
    assert_int_equal(info->bad_lines, 0);
    assert_true(nr > 5);
    assert_int_equal(info->n_snapshots, nr);
    for (size_t i = 0; i < nr; i++)
        assert_int_equal(ph_massif_get_snapshot(m, i)->heap, rows[i].heap);
    ph_massif_free(m);
    free(file);
    free(fixed_out);
}

static void
test_truncated_in_tree(void **state)
{
    size_t len;
    char *file = rt_slurp(massif_path, &len);
    char *cut = strstr(file, "heap_tree=peak");
    ph_massif *m;
    const ph_massif_info *info;

    (void)state;
    assert_non_null(cut);
    cut = strchr(cut, '\n') + 1;
    cut = strchr(cut, '\n') + 1; /* the root, then a partial line */
    cut += 7;
    m = parse_buf(file, (size_t)(cut - file), 4096);
    info = ph_massif_get_info(m);
    assert_non_null(strstr(info->problem, "ends early"));
    assert_true(info->n_snapshots > 0);
    assert_true(info->peak >= 0);
    ph_massif_free(m);
    free(file);
}

static void
test_bad_inputs(void **state)
{
    static const struct {
        const char *in, *problem;
        size_t bad;
    } cases[] = {
        { "", "the file is empty", 0 },
        { "hello\nworld\n", "no snapshot in the file", 2 },
        { "desc: x\ncmd: y\ntime_unit: B\nsnapshot=0\ntime=0\nmem_heap_B=5\n", "the file ends inside snapshot 0", 0 },
        { "desc: x\ncmd: y\ntime_unit: B\nsnapshot=0\ntime=0\nmem_heap_B=5\nheap_tree=empty\n",
          "snapshot 0 is incomplete or has a bad heap_tree (line 7)", 1 },
        { "cmd: y\ntime_unit: B\nsnapshot=0\ntime=1\nmem_heap_B=x\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=empty\n",
          "snapshot 0 is incomplete or has a bad heap_tree (line 8)", 2 },
        { "cmd: y\ntime_unit: B\nsnapshot=0\ntime=1\nmem_heap_B=10\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=detailed\n"
          "n2: 10 (heap allocation functions)\n n0: 6 0x1: f (a.c:1)\nsnapshot=1\n",
          "the tree of snapshot 0 ends early (line 11)", 1 },
        { "cmd: y\ntime_unit: B\nsnapshot=0\ntime=1\nmem_heap_B=10\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=bogus\n",
          "snapshot 0 is incomplete or has a bad heap_tree (line 8)", 1 },
        { "cmd: y\nsnapshot=0\ntime=1\nmem_heap_B=10\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=empty\n",
          "no time_unit line", 0 },
        { "cmd: y\ntime_unit: B\nsnapshot=99999999999999999999999\n", "no snapshot in the file", 1 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ph_massif *m = parse_buf(cases[i].in, strlen(cases[i].in), 3);
        const ph_massif_info *info = ph_massif_get_info(m);
        if (strcmp(info->problem, cases[i].problem) != 0 || info->bad_lines != cases[i].bad)
            fail_msg("case %zu: problem \"%s\" (%zu bad), expected \"%s\" (%zu)", i, info->problem, info->bad_lines,
                     cases[i].problem, cases[i].bad);
        ph_massif_free(m);
    }
}

/* A tree whose node counts say more children than there are, nested
 * deeper than the limit, and a peak with children below 0.1 %: walked
 * with the dropped ones counted in the group line. */
static void
test_tree_shapes(void **state)
{
    const char *in = "cmd: t\ntime_unit: i\n"
                     "snapshot=0\ntime=5\nmem_heap_B=100000\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=peak\n"
                     "n4: 100000 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n"
                     " n1: 90000 0xA: big (a.c:1)\n"
                     "  n0: 90000 0xB: main (a.c:9)\n"
                     " n0: 9000 0xC: mid (a.c:2)\n"
                     " n0: 950 0xD: small (a.c:3)\n"
                     " n0: 50 0xE: tiny (a.c:4)\n";
    ph_massif *m = parse_buf(in, strlen(in), 5);
    text t = { 0 };

    (void)state;
    assert_string_equal(ph_massif_get_info(m)->problem, "");
    assert_int_equal(ph_massif_n_peak_nodes(m), 5); /* tiny (0.05 %) is not kept */
    assert_int_equal(ph_massif_get_peak_node(m, 0)->dropped, 1);
    t.f = open_memstream(&t.buf, &t.len);
    assert_int_equal(ph_massif_walk_peak(m, 1.0, print_line_cb, &t), 0);
    fclose(t.f);
    assert_string_equal(t.buf, "0 100.00% (100,000B) (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n"
                               "1 90.00% (90,000B) 0xA: big (a.c:1)\n"
                               "2 90.00% (90,000B) 0xB: main (a.c:9)\n"
                               "1 09.00% (9,000B) 0xC: mid (a.c:2)\n"
                               "1 01.00% (1,000B) in 2+ places, all below ms_print's threshold (01.00%)\n");
    free(t.buf);
    ph_massif_free(m);
}

/* Two peak trees (massif writes one; a file can hold two): the second
 * replaces the first, nothing of the first is left in the tree. */
static void
test_second_peak_replaces(void **state)
{
    const char *in = "cmd: t\ntime_unit: i\n"
                     "snapshot=0\ntime=5\nmem_heap_B=100\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=peak\n"
                     "n1: 100 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n"
                     " n0: 100 0xA: first (a.c:1)\n"
                     "snapshot=1\ntime=9\nmem_heap_B=300\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=peak\n"
                     "n1: 300 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n"
                     " n0: 300 0xB: second (a.c:2)\n";
    ph_massif *m = parse_buf(in, strlen(in), 7);
    text t = { 0 };

    (void)state;
    assert_string_equal(ph_massif_get_info(m)->problem, "");
    assert_int_equal(ph_massif_get_info(m)->peak_num, 1);
    assert_int_equal(ph_massif_n_peak_nodes(m), 2);
    t.f = open_memstream(&t.buf, &t.len);
    assert_int_equal(ph_massif_walk_peak(m, 1.0, print_line_cb, &t), 0);
    fclose(t.f);
    assert_string_equal(t.buf, "0 100.00% (300B) (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n"
                               "1 100.00% (300B) 0xB: second (a.c:2)\n");
    free(t.buf);
    ph_massif_free(m);
}

/* Windows line ends and no final newline read the same. */
static void
test_crlf(void **state)
{
    const char *in = "cmd: t\r\ntime_unit: ms\r\nsnapshot=0\r\ntime=5\r\nmem_heap_B=100\r\nmem_heap_extra_B=4\r\n"
                     "mem_stacks_B=0\r\nheap_tree=peak\r\nn0: 100 (heap allocation functions) malloc\r\nsnapshot=1\r\n"
                     "time=9\r\nmem_heap_B=50\r\nmem_heap_extra_B=2\r\nmem_stacks_B=0\r\nheap_tree=empty";
    ph_massif *m = parse_buf(in, strlen(in), 4);

    (void)state;
    assert_string_equal(ph_massif_get_info(m)->problem, "");
    assert_int_equal(ph_massif_get_info(m)->bad_lines, 0);
    assert_string_equal(ph_massif_get_info(m)->time_unit, "ms");
    assert_int_equal(ph_massif_n_snapshots(m), 2);
    assert_string_equal(ph_massif_get_peak_node(m, 0)->details, "(heap allocation functions) malloc");
    ph_massif_free(m);
}

/* More snapshots than the chart keeps: counts stay exact, the peak and
 * the last snapshot stay, memory does not follow the input. */
static void
test_thinning(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    size_t total = 3 * PH_MASSIF_MAX_POINTS + 17, peak = 100000;
    ph_massif *m;
    const ph_massif_info *info;
    const ph_massif_snapshot *s;

    (void)state;
    fputs("desc: big\ncmd: gen\ntime_unit: ms\n", f);
    for (size_t i = 0; i < total; i++) {
        const char *tree = i == peak ? "peak" : i % 10 == 0 ? "detailed" : "empty";
        fprintf(f, "#-----------\nsnapshot=%zu\n#-----------\ntime=%zu\nmem_heap_B=%zu\nmem_heap_extra_B=8\nmem_stacks_B=0\n"
                   "heap_tree=%s\n",
                i, i * 3, i == peak ? 9999999 : i % 1000, tree);
        if (strcmp(tree, "empty") != 0)
            fprintf(f, "n1: %zu (heap allocation functions) malloc\n n0: %zu 0x%zx: site%zu (x.c:1)\n",
                    i == peak ? 9999999 : i % 1000, i == peak ? 9999999 : i % 1000, i, i % 5);
    }
    fclose(f);
    m = parse_buf(buf, len, 1 << 16);
    info = ph_massif_get_info(m);
    assert_int_equal(info->n_snapshots, total);
    assert_int_equal(info->n_detailed, total / 10 + 1); /* the peak is one of the tenth */
    assert_true(ph_massif_n_snapshots(m) <= PH_MASSIF_MAX_POINTS);
    assert_true(info->peak >= 0);
    s = ph_massif_get_snapshot(m, (size_t)info->peak);
    assert_int_equal(s->num, peak);
    assert_int_equal(s->heap, 9999999);
    assert_true(s->detail >= 0);
    s = ph_massif_get_snapshot(m, ph_massif_n_snapshots(m) - 1);
    assert_int_equal(s->num, total - 1);
    assert_int_equal(info->end_time, (total - 1) * 3);
    assert_int_equal(info->max_total, 9999999 + 8);
    ph_massif_free(m);
    free(buf);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figures_equal_ms_print),
        cmocka_unit_test(test_any_chunking_same_result),
        cmocka_unit_test(test_detailed_sites),
        cmocka_unit_test(test_multiline_cmd),
        cmocka_unit_test(test_truncated_in_tree),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_tree_shapes),
        cmocka_unit_test(test_second_peak_replaces),
        cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_thinning),
    };

    return cmocka_run_group_tests_name("massif", tests, group_setup, group_teardown);
}
