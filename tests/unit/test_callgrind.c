/* test_callgrind.c - the callgrind.out parser against callgrind_annotate:
 * a real program (helpers/report_work.c) run under valgrind callgrind with
 * the callgrind profile's flags (--dump-instr=yes: hex and relative
 * positions, jumps, cache and branch events, system time), and again with
 * compressed names; every function callgrind_annotate lists, with every
 * event, self (default) and inclusive (--inclusive=yes), in its order,
 * and the program totals must equal ours to the digit.  Then threads in
 * separate files, call edges against --tree=caller, bad input (cut short,
 * damaged, empty, undefined compressed names), any chunking, and the
 * inclusive flamegraph's totals. */
#include "report_test_util.h"

#include "ph_callgrind.h"

static char plain_path[600], compressed_path[600], threads_prefix[600], threads_path[600], separated_path[600];

static int
group_setup(void **state)
{
    (void)state;
    tu_mkdtemp();
    snprintf(plain_path, sizeof plain_path, "%s/callgrind.out", test_dir);
    snprintf(compressed_path, sizeof compressed_path, "%s/callgrind-c.out", test_dir);
    snprintf(threads_prefix, sizeof threads_prefix, "%s/callgrind-t.out", test_dir);
    snprintf(threads_path, sizeof threads_path, "%s/callgrind-one.out", test_dir);
    snprintf(separated_path, sizeof separated_path, "%s/callgrind-sep.out", test_dir);
    free(rt_must("valgrind -q --tool=callgrind --callgrind-out-file=%s --cache-sim=yes --branch-sim=yes "
                 "--collect-jumps=yes --collect-systime=yes --dump-instr=yes --dump-line=yes --compress-strings=no "
                 WORK " cpu 2>&1",
                 plain_path));
    free(rt_must("valgrind -q --tool=callgrind --callgrind-out-file=%s --dump-instr=yes " WORK " cpu 2>&1",
                 compressed_path));
    /* each level of fib(16) a function of its own */
    free(rt_must("valgrind -q --tool=callgrind --callgrind-out-file=%s --dump-instr=yes --separate-recs=64 " WORK
                 " cpu 2>&1",
                 separated_path));
    free(rt_must("valgrind -q --tool=callgrind --callgrind-out-file=%s --separate-threads=yes " WORK " threads 2>&1",
                 threads_prefix));
    free(rt_must("valgrind -q --tool=callgrind --callgrind-out-file=%s " WORK " threads 2>&1", threads_path));
    return 0;
}

static int
group_teardown(void **state)
{
    (void)state;
    tu_rmdir();
    return 0;
}

static ph_callgrind *
parse_buf(const char *buf, size_t len, size_t chunk)
{
    ph_error_t err = NULL;
    ph_callgrind *cg = ph_callgrind_new(&err);

    assert_non_null(cg);
    for (size_t o = 0; o < len; o += chunk)
        assert_int_equal(ph_callgrind_feed(cg, buf + o, len - o < chunk ? len - o : chunk, &err), 0);
    assert_int_equal(ph_callgrind_finish(cg, &err), 0);
    return cg;
}

static ph_callgrind *
parse_path(const char *path)
{
    ph_error_t err = NULL;
    ph_callgrind *cg = ph_callgrind_parse_files(&path, 1, &err);

    if (cg == NULL)
        fail_msg("%s", err->msg);
    return cg;
}

/* One row of callgrind_annotate's output. */
typedef struct arow {
    unsigned long long v[PH_CG_MAX_EVENTS];
    char name[1024];
} arow;

/* Parse a row of E count columns (`1,234 (12.34%)`, `.` or `0`) and the
 * rest; 0 when LINE is not such a row. */
static int
parse_row(const char *line, size_t E, arow *r)
{
    const char *p = line;
    size_t n;
    char *br;

    for (size_t k = 0; k < E; k++) {
        const char *s;
        while (*p == ' ')
            p++;
        s = p;
        if (*p == '.') {
            p++;
        } else {
            while ((*p >= '0' && *p <= '9') || *p == ',')
                p++;
            if (p == s)
                return 0;
        }
        r->v[k] = rt_uncommify(s, (size_t)(p - s));
        if (*p != ' ')
            return 0;
        while (*p == ' ')
            p++;
        if (*p == '(') {
            const char *c = strchr(p, ')');
            if (c == NULL)
                return 0;
            p = c + 1;
        }
    }
    while (*p == ' ')
        p++;
    n = strlen(p);
    if (n == 0 || n >= sizeof r->name)
        return 0;
    memcpy(r->name, p, n + 1);
    /* " [object]" at the end is not part of the name */
    if (r->name[n - 1] == ']' && (br = strstr(r->name, " [")) != NULL) {
        char *last = br;
        while ((br = strstr(br + 1, " [")) != NULL)
            last = br;
        *last = '\0';
    }
    return 1;
}

/* Every function row and the totals of `callgrind_annotate ARGS FILE`. */
static size_t
annotate(const char *args, const char *path, size_t E, arow *rows, size_t cap, arow *totals)
{
    /* from /: the current directory is stripped from file names otherwise */
    char *out = rt_must("cd / && callgrind_annotate --auto=no --threshold=100 %s %s", args, path);
    const char *p = out;
    char line[8192];
    size_t n = 0;
    int in_fns = 0;

    while (rt_next_line(&p, line, sizeof line)) {
        if (strstr(line, " file:function") != NULL) {
            in_fns = 1;
            continue;
        }
        if (strstr(line, "PROGRAM TOTALS") != NULL) {
            assert_true(parse_row(line, E, totals));
            continue;
        }
        if (!in_fns || strncmp(line, "-----", 5) == 0 || line[0] == '\0')
            continue;
        assert_true(n < cap);
        if (!parse_row(line, E, &rows[n]))
            fail_msg("not a row: %s", line);
        n++;
    }
    free(out);
    return n;
}

static int
find_fn(const ph_callgrind *cg, const char *name)
{
    for (uint32_t i = 0; i < ph_callgrind_n_fns(cg); i++)
        if (strcmp(ph_callgrind_get_fn(cg, i).name, name) == 0)
            return (int)i;
    return -1;
}

/* The position of F in TOP[0..M), or -1. */
static long
find_top(const uint32_t *top, size_t m, uint32_t f)
{
    for (size_t i = 0; i < m; i++)
        if (top[i] == f)
            return (long)i;
    return -1;
}

/* Whether function F reaches itself through the call edges of CG: it is
 * in a call cycle (recursion, direct or through others). */
static int
in_cycle(const ph_callgrind *cg, uint32_t f)
{
    size_t n = ph_callgrind_n_fns(cg), top = 0;
    uint32_t *stack = calloc(n + 1, sizeof *stack);
    unsigned char *seen = calloc(n + 1, 1);
    int found = 0;

    assert_non_null(stack);
    assert_non_null(seen);
    stack[top++] = f;
    while (top > 0 && !found) {
        uint32_t v = stack[--top];
        for (size_t c = 0; c < ph_callgrind_n_calls(cg) && !found; c++) {
            ph_cg_call e = ph_callgrind_get_call(cg, c);
            if (e.caller != v)
                continue;
            found = e.callee == f;
            if (!seen[e.callee]) {
                seen[e.callee] = 1;
                stack[top++] = e.callee;
            }
        }
    }
    free(stack);
    free(seen);
    return found;
}

/* Every function callgrind_annotate lists, self and --inclusive=yes, with
 * every event, equal to ours and in its order; except the inclusive cost
 * of a function in a call cycle, which callgrind_annotate counts once
 * per level of the recursion (report_fib'2 at 3.0 M under report_fib's
 * 0.41 M): ours counts it once, so it lies between the function's self
 * cost and callgrind_annotate's figure, and never above the totals
 * (test_recursion_equals_separated_annotate holds it to the digit). */
static void
check_against_annotate(const char *path)
{
    ph_callgrind *cg = parse_path(path);
    const ph_cg_info *info = ph_callgrind_get_info(cg);
    size_t E = info->n_events;
    static arow rows[8192];
    static uint32_t top[8192];
    arow totals;
    int cycles = 0;

    assert_string_equal(info->problem, "");
    assert_int_equal(info->bad_lines, 0);
    assert_true(E >= 1);
    for (int incl = 0; incl <= 1; incl++) {
        size_t n = annotate(incl ? "--inclusive=yes" : "", path, E, rows, 8192, &totals), m, t = 0;
        int seen_checksum = 0;

        assert_true(n > 20);
        for (size_t k = 0; k < E; k++)
            assert_int_equal(info->totals[k], totals.v[k]);
        m = ph_callgrind_top(cg, 0, incl, top, 8192);
        /* callgrind_annotate lists functions with no cost line too ("."): we may list fewer */
        assert_true(m <= n && m + 50 >= n);
        for (size_t i = 0; i < n; i++) {
            int f = find_fn(cg, rows[i].name);
            ph_cg_fn fn;
            int cyclic, costly = 0;

            if (f < 0)
                fail_msg("%s: `%s` not found", incl ? "inclusive" : "self", rows[i].name);
            fn = ph_callgrind_get_fn(cg, (uint32_t)f);
            cyclic = incl && in_cycle(cg, (uint32_t)f);
            cycles |= cyclic;
            for (size_t k = 0; k < E; k++) {
                uint64_t ours = (incl ? fn.incl : fn.self)[k];
                if (cyclic) {
                    if (ours > rows[i].v[k] || ours > info->totals[k])
                        fail_msg("inclusive %s of %s (recursive): ours %llu, callgrind_annotate %llu, totals %llu",
                                 info->events[k], rows[i].name, (unsigned long long)ours, rows[i].v[k],
                                 (unsigned long long)info->totals[k]);
                    if (ours < fn.self[k])
                        fail_msg("inclusive %s of %s (recursive): ours %llu, below its self cost %llu",
                                 info->events[k], rows[i].name, (unsigned long long)ours,
                                 (unsigned long long)fn.self[k]);
                } else if (ours != rows[i].v[k]) {
                    fail_msg("%s %s of %s: ours %llu, callgrind_annotate %llu", incl ? "inclusive" : "self",
                             info->events[k], rows[i].name, (unsigned long long)ours, rows[i].v[k]);
                }
                costly |= rows[i].v[k] != 0;
            }
            /* every function with a cost is in ours */
            if (costly && find_top(top, m, (uint32_t)f) < 0)
                fail_msg("%s: `%s` is not in our list", incl ? "inclusive" : "self", rows[i].name);
            /* the same order, recursion aside (its figures are not theirs) */
            if (cyclic)
                continue;
            while (t < m && incl && in_cycle(cg, top[t]))
                t++;
            if (t < m)
                assert_string_equal(ph_callgrind_get_fn(cg, top[t++]).name, rows[i].name);
            seen_checksum |= strstr(rows[i].name, "report_checksum") != NULL;
        }
        assert_true(seen_checksum);
    }
    /* report_work's fib recursion: the test looks at a cycle */
    assert_true(cycles);
    ph_callgrind_free(cg);
}

static void
test_plain_equals_annotate(void **state)
{
    (void)state;
    check_against_annotate(plain_path);
}

static void
test_compressed_equals_annotate(void **state)
{
    (void)state;
    check_against_annotate(compressed_path);
}

/* Recursion to the digit.  With --separate-recs deeper than the recursion
 * goes, callgrind names every level apart (report_fib, report_fib'2, ...
 * report_fib'16): no call runs inside another of the same function, and
 * callgrind_annotate --inclusive=yes is exact.  The same run with the
 * default (every level past the first is one report_fib'2 that calls
 * itself) must read, in ours, as that does: every function of a cycle of
 * ours that is in none once the levels are apart has its figure there. */
static void
test_recursion_equals_separated_annotate(void **state)
{
    ph_callgrind *cg = parse_path(compressed_path), *sep = parse_path(separated_path);
    const ph_cg_info *info = ph_callgrind_get_info(cg);
    size_t E = info->n_events, n, checked = 0;
    static arow rows[8192];
    arow totals;
    int fib2 = 0;

    (void)state;
    assert_int_equal(ph_callgrind_get_info(sep)->n_events, E);
    n = annotate("--inclusive=yes", separated_path, E, rows, 8192, &totals);
    /* the same program doing the same work: the premise */
    for (size_t k = 0; k < E; k++)
        assert_int_equal(info->totals[k], totals.v[k]);
    for (uint32_t f = 0; f < ph_callgrind_n_fns(cg); f++) {
        ph_cg_fn fn = ph_callgrind_get_fn(cg, f);
        int g;

        if (!in_cycle(cg, f) || (g = find_fn(sep, fn.name)) < 0 || in_cycle(sep, (uint32_t)g))
            continue;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(rows[i].name, fn.name) != 0)
                continue;
            for (size_t k = 0; k < E; k++)
                if (fn.incl[k] != rows[i].v[k])
                    fail_msg("inclusive %s of %s (recursive): ours %llu, callgrind_annotate with the levels apart %llu",
                             info->events[k], fn.name, (unsigned long long)fn.incl[k], rows[i].v[k]);
            checked++;
            fib2 |= strstr(fn.name, ":report_fib'2") != NULL;
        }
    }
    assert_true(checked >= 1);
    assert_true(fib2);
    ph_callgrind_free(cg);
    ph_callgrind_free(sep);
}

/* --tree=caller: each "  N < caller (Kx)" line above a function is the
 * call edge's cost and count. */
static void
test_call_edges_equal_annotate(void **state)
{
    ph_callgrind *cg = parse_path(plain_path);
    size_t E = ph_callgrind_get_info(cg)->n_events, checked = 0;
    char *out = rt_must("cd / && callgrind_annotate --auto=no --threshold=100 --tree=caller %s", plain_path);
    const char *p = out;
    char line[8192], pending[64][1024];
    unsigned long long pend_v[64], pend_n[64];
    size_t np = 0;

    (void)state;
    while (rt_next_line(&p, line, sizeof line)) {
        char *lt = strstr(line, " < "), *star = strstr(line, " *  ");
        arow r;

        if (lt != NULL && star == NULL && np < 64) {
            char *x;
            *lt = '\0';
            assert_true(parse_row(line, E, &r) || parse_row(strcat(line, " x"), E, &r));
            snprintf(pending[np], sizeof pending[np], "%s", lt + 3);
            /* "caller (1,234x) [object]" */
            if ((x = strstr(pending[np], "x) [")) != NULL)
                x[2] = '\0';
            x = strrchr(pending[np], '(');
            assert_non_null(x);
            pend_n[np] = rt_uncommify(x, strlen(x));
            x[-1] = '\0';
            pend_v[np] = r.v[0];
            np++;
        } else if (star != NULL) {
            int callee;
            memmove(star, star + 3, strlen(star + 3) + 1);
            assert_true(parse_row(line, E, &r));
            callee = find_fn(cg, r.name);
            for (size_t i = 0; i < np && callee >= 0; i++) {
                int caller = find_fn(cg, pending[i]);
                int found = 0;
                for (size_t c = 0; c < ph_callgrind_n_calls(cg); c++) {
                    ph_cg_call call = ph_callgrind_get_call(cg, c);
                    if ((int)call.caller == caller && (int)call.callee == callee) {
                        assert_int_equal(call.cost[0], pend_v[i]);
                        assert_int_equal(call.count, pend_n[i]);
                        found = 1;
                        checked++;
                    }
                }
                if (!found)
                    fail_msg("no edge %s -> %s", pending[i], r.name);
            }
            np = 0;
        }
    }
    assert_true(checked > 20);
    free(out);
    ph_callgrind_free(cg);
}

/* --separate-threads=yes: one file per thread; read together they add up. */
static void
test_threads_add_up(void **state)
{
    char *list = rt_must("ls %s-*", threads_prefix), *p = list, *save = NULL;
    const char *paths[8];
    size_t n = 0;
    unsigned long long sum_ir = 0, sum_checksum = 0;
    ph_error_t err = NULL;
    ph_callgrind *cg;
    static arow rows[8192];
    arow totals;
    int f;

    (void)state;
    for (char *tok = strtok_r(p, "\n", &save); tok && n < 8; tok = strtok_r(NULL, "\n", &save))
        paths[n++] = tok;
    assert_true(n >= 2);
    for (size_t i = 0; i < n; i++) {
        size_t nr = annotate("", paths[i], 1, rows, 8192, &totals);
        sum_ir += totals.v[0];
        for (size_t k = 0; k < nr; k++)
            if (strstr(rows[k].name, ":report_checksum") != NULL)
                sum_checksum += rows[k].v[0];
    }
    cg = ph_callgrind_parse_files(paths, n, &err);
    assert_non_null(cg);
    assert_string_equal(ph_callgrind_get_info(cg)->problem, "");
    assert_int_equal(ph_callgrind_get_info(cg)->n_files, n);
    assert_int_equal(ph_callgrind_get_info(cg)->n_parts, n);
    assert_int_equal(ph_callgrind_get_info(cg)->totals[0], sum_ir);
    f = -1;
    for (uint32_t i = 0; i < ph_callgrind_n_fns(cg); i++)
        if (strstr(ph_callgrind_get_fn(cg, i).name, ":report_checksum") != NULL)
            f = (int)i;
    assert_true(f >= 0);
    assert_true(sum_checksum > 0);
    assert_int_equal(ph_callgrind_get_fn(cg, (uint32_t)f).self[0], sum_checksum);
    assert_non_null(ph_callgrind_get_part(cg, 1));
    assert_string_not_equal(ph_callgrind_get_part(cg, 1)->thread, "");
    ph_callgrind_free(cg);
    free(list);
}

static void
test_any_chunking_same_result(void **state)
{
    size_t len;
    char *file = rt_slurp(compressed_path, &len);
    ph_callgrind *a = parse_buf(file, len, 1 << 20), *b = parse_buf(file, len, 1), *c = parse_buf(file, len, 61);

    (void)state;
    for (ph_callgrind *x = b; x != NULL; x = x == b ? c : NULL) {
        assert_int_equal(ph_callgrind_n_fns(x), ph_callgrind_n_fns(a));
        assert_int_equal(ph_callgrind_n_calls(x), ph_callgrind_n_calls(a));
        for (uint32_t i = 0; i < ph_callgrind_n_fns(a); i++) {
            assert_string_equal(ph_callgrind_get_fn(x, i).name, ph_callgrind_get_fn(a, i).name);
            assert_int_equal(ph_callgrind_get_fn(x, i).incl[0], ph_callgrind_get_fn(a, i).incl[0]);
        }
    }
    ph_callgrind_free(a);
    ph_callgrind_free(b);
    ph_callgrind_free(c);
    free(file);
}

static void
test_bad_inputs(void **state)
{
    size_t len;
    char *file = rt_slurp(plain_path, &len);
    static const struct {
        const char *in, *problem;
        size_t bad;
    } cases[] = {
        { "", "the file is empty", 0 },
        { "hello\nworld\n", "no events: line: not a callgrind profile", 2 },
        { "events: Ir\nfl=a.c\nfn=f\n1 5\ntotals: 5\n", "", 0 },
        { "events: Ir\nfl=a.c\nfn=f\n1 5\ntotals: 6\n", "part 1: the costs do not add up to its totals: line (the file is damaged)", 0 },
        { "events: Ir\nfl=a.c\nfn=f\n1 5\n", "part 1 of the profile has no totals: line: the file is cut short", 0 },
        { "events: Ir\nfl=(1)\nfn=(2) f\n1 5\ntotals: 5\n", "", 1 },     /* (1) never defined */
        { "events: Ir\nfl=(5) a.c\nfl=(3)\nfn=f\n1 5\ntotals: 5\n", "", 1 }, /* (3) never defined, (5) was */
        { "events: Ir\nfl=a.c\nfn=f\n1 5 6\nx y\n1 zz\ntotals: 0\n", "", 3 },
        { "events: Ir\n1 5\ntotals: 0\n", "", 1 },                       /* a cost before any fn= */
        { "events: Ir\nfl=a.c\nfn=f\nfi=b.h\n+1 5\nfe=a.c\n* 2\ntotals: 7\n", "", 0 },
        { "fn=f\nfl=a.c\nevents: Ir\nfn=g\n1 3\ntotals: 3\n", "", 0 },  /* names before events */
        { "events: Ir\nfl=a.c\nfn=f\n1 99999999999999999999999\n1 2\ntotals: 2\n", "", 1 }, /* a count past 64 bits */
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ph_callgrind *cg = parse_buf(cases[i].in, strlen(cases[i].in), 2);
        const ph_cg_info *info = ph_callgrind_get_info(cg);
        if (strcmp(info->problem, cases[i].problem) != 0 || info->bad_lines != cases[i].bad)
            fail_msg("case %zu: problem \"%s\" (%zu bad), expected \"%s\" (%zu)", i, info->problem, info->bad_lines,
                     cases[i].problem, cases[i].bad);
        ph_callgrind_free(cg);
    }
    /* the inlined cost went to b.h:f, the rest to a.c:f */
    {
        const char *in = "events: Ir\nfl=a.c\nfn=f\nfi=b.h\n+1 5\nfe=a.c\n* 2\ntotals: 7\n";
        ph_callgrind *cg = parse_buf(in, strlen(in), 1000);
        assert_int_equal(ph_callgrind_get_fn(cg, (uint32_t)find_fn(cg, "b.h:f")).self[0], 5);
        assert_int_equal(ph_callgrind_get_fn(cg, (uint32_t)find_fn(cg, "a.c:f")).self[0], 2);
        ph_callgrind_free(cg);
    }
    /* a real profile cut in the middle: what was read is kept, and the report is told */
    {
        ph_callgrind *cg = parse_buf(file, len / 2, 4096);
        const ph_cg_info *info = ph_callgrind_get_info(cg);
        assert_non_null(strstr(info->problem, "cut short"));
        assert_true(ph_callgrind_n_fns(cg) > 10);
        assert_true(info->totals[0] > 0);
        ph_callgrind_free(cg);
    }
    free(file);
}

/* A function only ever seen as a callee (no fn= of its own, its body in
 * no file the profile describes): callgrind_annotate --inclusive=yes
 * lists it with what its calls cost; so do we (the totals count its cost,
 * as callgrind's do: no figure is ever above them). */
static void
test_callee_only_function(void **state)
{
    const char *in = "events: Ir\nfl=a.c\nfn=main\n1 1\ncfi=b.c\ncfn=g\ncalls=1 1\n1 5\ntotals: 6\n";
    const char *path = tu_write("callee-only.out", in);
    ph_callgrind *cg = parse_path(path);
    uint32_t top[8];
    size_t n = ph_callgrind_top(cg, 0, 1, top, 8);
    char *out = rt_must("cd / && callgrind_annotate --auto=no --inclusive=yes %s", path);
    int found = 0;

    (void)state;
    assert_non_null(strstr(out, "b.c:g"));
    for (size_t i = 0; i < n; i++)
        if (strcmp(ph_callgrind_get_fn(cg, top[i]).name, "b.c:g") == 0) {
            assert_int_equal(ph_callgrind_get_fn(cg, top[i]).incl[0], 5);
            found = 1;
        }
    assert_true(found);
    /* and it is no function of its own in the self list */
    n = ph_callgrind_top(cg, 0, 0, top, 8);
    assert_int_equal(n, 1);
    free(out);
    ph_callgrind_free(cg);
}

/* The inclusive cost of the function named NAME in the callgrind.out IN. */
static uint64_t
incl_of(const char *in, const char *name)
{
    ph_callgrind *cg = parse_buf(in, strlen(in), 5);
    int f = find_fn(cg, name);
    uint64_t v;

    if (f < 0)
        fail_msg("no `%s`", name);
    v = ph_callgrind_get_fn(cg, (uint32_t)f).incl[0];
    ph_callgrind_free(cg);
    return v;
}

/* Recursion counted once.  callgrind_annotate adds up every call into a
 * function, and a recursive call runs inside another call of the same
 * function, so it counts the inner ones again: a `start_thread'2` at
 * 11.7 G of a 1.66 G total.  Calls, as callgrind writes them (a call's
 * cost is everything under it):
 *   f'2, callgrind's name for f's recursion (--separate-recs): main(5) ->
 *     f(5) -> f'2(10) -> f'2(15); f'2 costs 25 (annotate: 40 of a 35 total);
 *   a and b calling each other: main(10) -> a(5) -> b(10) -> a(5) ->
 *     b(20); a costs 40, the cycle's whole (annotate: 65 of 50), b at most
 *     that (35 in truth, annotate's 55);
 *   b calling itself within a's cycle: main(10) -> a(10) -> x(100), and
 *     a -> b(5) -> b(5) -> a(5); b costs 15 (its call to itself not
 *     counted again: 25 under the cycle's 120), a 120;
 * and a damaged file (a call dearer than the totals) is held to them. */
static void
test_recursion_counted_once(void **state)
{
    const char *self_rec = "events: Ir\nfl=r.c\nfn=main\n1 5\ncfn=f\ncalls=1 1\n1 30\n"
                           "fn=f\n1 5\ncfn=f'2\ncalls=1 1\n1 25\n"
                           "fn=f'2\n1 25\ncfn=f'2\ncalls=1 1\n1 15\ntotals: 35\n";
    const char *mutual = "events: Ir\nfl=m.c\nfn=main\n1 10\ncfn=a\ncalls=1 1\n1 40\n"
                         "fn=a\n1 10\ncfn=b\ncalls=2 1\n1 55\n"
                         "fn=b\n1 30\ncfn=a\ncalls=1 1\n1 25\ntotals: 50\n";
    const char *both = "events: Ir\nfl=s.c\nfn=main\n1 10\ncfn=a\ncalls=1 1\n1 120\n"
                       "fn=a\n1 10\ncfn=x\ncalls=1 1\n1 100\ncfn=b\ncalls=1 1\n1 15\n"
                       "fn=b\n1 10\ncfn=b\ncalls=1 1\n1 10\ncfn=a\ncalls=1 1\n1 5\n"
                       "fn=x\n1 100\ntotals: 130\n";
    const char *damaged = "events: Ir\nfl=a.c\nfn=main\n1 1\ncfi=b.c\ncfn=g\ncalls=1 1\n1 5\ntotals: 1\n";

    (void)state;
    assert_int_equal(incl_of(self_rec, "r.c:f'2"), 25);
    assert_int_equal(incl_of(self_rec, "r.c:f"), 30);
    assert_int_equal(incl_of(self_rec, "r.c:main"), 35);
    assert_int_equal(incl_of(mutual, "m.c:a"), 40);
    assert_int_equal(incl_of(mutual, "m.c:b"), 40);
    assert_int_equal(incl_of(mutual, "m.c:main"), 50);
    assert_int_equal(incl_of(both, "s.c:b"), 15);
    assert_int_equal(incl_of(both, "s.c:a"), 120);
    assert_int_equal(incl_of(both, "s.c:x"), 100);
    assert_int_equal(incl_of(both, "s.c:main"), 130);
    assert_int_equal(incl_of(damaged, "b.c:g"), 1);
    assert_int_equal(incl_of(damaged, "a.c:main"), 1);
}

/* A program whose every function calls four others, layer after layer
 * (four callers each, so the paths multiply: 1000 * 4^5 of them): the
 * flamegraph stays small (PH_CG_FOLDED_MAX_STACKS) and still adds up to
 * the total.  The costs are consistent, as callgrind's are: a call costs
 * a quarter of its callee's inclusive cost. */
static void
test_flamegraph_bounded(void **state)
{
    enum { W = 1000, L = 6 };
    char *in = NULL, *buf = NULL, line[65536];
    size_t len = 0, blen = 0;
    FILE *f = open_memstream(&in, &len), *out;
    ph_callgrind *cg;
    ph_error_t err = NULL;
    long n;
    double sum = 0;
    const char *p;

    (void)state;
    fputs("events: Ir\nfl=a.c\nfn=main\n", f);
    for (int i = 0; i < W; i++)
        fprintf(f, "cfn=f0_%d\ncalls=1 1\n1 4096\n", i);
    for (int l = 0; l < L; l++)
        for (int i = 0; i < W; i++) {
            fprintf(f, "fn=f%d_%d\n", l, i);
            if (l + 1 == L)
                fputs("1 4096\n", f);
            else
                for (int k = 0; k < 4; k++)
                    fprintf(f, "cfn=f%d_%d\ncalls=1 1\n1 1024\n", l + 1, (i * 31 + 7 * k + 1) % W);
        }
    fprintf(f, "totals: %d\n", W * 4096);
    fclose(f);
    cg = parse_buf(in, len, 1 << 16);
    assert_string_equal(ph_callgrind_get_info(cg)->problem, "");
    out = open_memstream(&buf, &blen);
    n = ph_callgrind_write_folded(cg, 0, out, &err);
    fclose(out);
    assert_true(n > 0 && n <= PH_CG_FOLDED_MAX_STACKS);
    for (p = buf; rt_next_line(&p, line, sizeof line);)
        sum += strtod(strrchr(line, ' ') + 1, NULL);
    assert_true(sum > W * 4096.0 - (double)n && sum < W * 4096.0 + (double)n);
    free(buf);
    free(in);
    ph_callgrind_free(cg);
}

/* Two parts in one file (callgrind_control -d appends them so): both
 * described, both added up. */
static void
test_two_parts_in_one_file(void **state)
{
    const char *in = "events: Ir\npart: 1\nfl=a.c\nfn=f\n1 5\ntotals: 5\n"
                     "part: 2\nfl=a.c\nfn=f\n1 7\nfn=g\n2 1\ntotals: 8\n";
    ph_callgrind *cg = parse_buf(in, strlen(in), 3);
    const ph_cg_info *info = ph_callgrind_get_info(cg);

    (void)state;
    assert_string_equal(info->problem, "");
    assert_int_equal(info->n_parts, 2);
    assert_int_equal(info->totals[0], 13);
    assert_string_equal(ph_callgrind_get_part(cg, 1)->part, "2");
    assert_int_equal(ph_callgrind_get_part(cg, 1)->first_event_total, 8);
    assert_int_equal(ph_callgrind_get_fn(cg, (uint32_t)find_fn(cg, "a.c:f")).self[0], 12);
    ph_callgrind_free(cg);
}

/* A call cycle (a -> b -> a): the flamegraph cuts it where it closes, so
 * no stack has a function twice, and the costs still add up. */
static void
test_flamegraph_cuts_cycles(void **state)
{
    const char *in = "events: Ir\nfl=x.c\nfn=main\n1 10\ncfn=a\ncalls=1 1\n1 90\n"
                     "fn=a\n1 20\ncfn=b\ncalls=3 1\n1 70\n"
                     "fn=b\n1 40\ncfn=a\ncalls=2 1\n1 30\ntotals: 70\n";
    ph_callgrind *cg = parse_buf(in, strlen(in), 7);
    char *buf = NULL, line[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ph_error_t err = NULL;
    const char *p;
    double sum = 0;

    (void)state;
    assert_true(ph_callgrind_write_folded(cg, 0, f, &err) > 0);
    fclose(f);
    for (p = buf; rt_next_line(&p, line, sizeof line);) {
        char *sp = strrchr(line, ' ');
        int a = 0;
        sum += strtod(sp + 1, NULL);
        *sp = '\0';
        for (char *t = strtok(line, ";"); t; t = strtok(NULL, ";"))
            a += strcmp(t, "a") == 0;
        assert_true(a <= 2); /* a, and at most the closing a where the cycle is cut */
    }
    /* main's inclusive cost: 10 + 90 */
    assert_true(sum > 99 && sum < 101);
    free(buf);
    ph_callgrind_free(cg);
}

typedef struct fold_sum {
    double total, checksum;
    size_t lines, bad;
} fold_sum;

static void
check_flamegraph(const char *path)
{
    ph_callgrind *cg = parse_path(path);
    char *buf = NULL, line[16384];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ph_error_t err = NULL;
    long n = ph_callgrind_write_folded(cg, 0, f, &err);
    const char *p;
    fold_sum s = { 0 };
    double ir = (double)ph_callgrind_get_info(cg)->totals[0];
    uint32_t top = 0;
    double checksum_incl;

    fclose(f);
    assert_true(n > 10);
    for (p = buf; rt_next_line(&p, line, sizeof line);) {
        char *sp = strrchr(line, ' ');
        double v = strtod(sp + 1, NULL);
        assert_non_null(sp);
        s.total += v;
        s.lines++;
        *sp = '\0';
        if (strstr(line, "report_checksum") != NULL)
            s.checksum += v;
    }
    assert_int_equal(s.lines, (size_t)n);
    /* every stack rounded to a whole count: the sum is off by less than one a stack */
    assert_true(s.total > ir - (double)n && s.total < ir + (double)n);
    /* checksum is not recursive: its stacks add up to its inclusive cost, to the rounding */
    for (uint32_t i = 0; i < ph_callgrind_n_fns(cg); i++)
        if (strstr(ph_callgrind_get_fn(cg, i).name, ":report_checksum") != NULL)
            top = i;
    checksum_incl = (double)ph_callgrind_get_fn(cg, top).incl[0];
    assert_true(s.checksum > checksum_incl * 0.999 && s.checksum < checksum_incl * 1.001);
    free(buf);
    ph_callgrind_free(cg);
}

static void
test_inclusive_flamegraph(void **state)
{
    (void)state;
    check_flamegraph(plain_path);
}

/* Threads in one file: a thread's work enters the graph at clone(), whose
 * caller (pthread_create, in the parent) paid almost nothing for it; the
 * flamegraph must still show all of it. */
static void
test_inclusive_flamegraph_threads(void **state)
{
    (void)state;
    check_flamegraph(threads_path);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_equals_annotate),
        cmocka_unit_test(test_compressed_equals_annotate),
        cmocka_unit_test(test_recursion_equals_separated_annotate),
        cmocka_unit_test(test_call_edges_equal_annotate),
        cmocka_unit_test(test_threads_add_up),
        cmocka_unit_test(test_any_chunking_same_result),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_inclusive_flamegraph),
        cmocka_unit_test(test_inclusive_flamegraph_threads),
        cmocka_unit_test(test_callee_only_function),
        cmocka_unit_test(test_flamegraph_bounded),
        cmocka_unit_test(test_two_parts_in_one_file),
        cmocka_unit_test(test_flamegraph_cuts_cycles),
        cmocka_unit_test(test_recursion_counted_once),
    };

    return cmocka_run_group_tests_name("callgrind", tests, group_setup, group_teardown);
}
