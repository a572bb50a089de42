/* test_strace.c - the strace log parser against an independent count: a
 * real program (helpers/report_work.c sys: two threads, failing opens,
 * sleeps, a signal, exit 3) run under `strace -f -tt -T` as the strace
 * profile runs it; awk counts calls, errors and -T time per syscall and
 * calls per thread from the same log, and ours must equal them.  Then
 * the slowest calls, signals and exits, the timeline, the other line
 * formats (`[pid N]`, no pid, -ttt), midnight, bad and cut-short logs, and
 * any chunking. */
#include "report_test_util.h"

#include "ph_strace.h"

static char log_path[600];

static int
group_setup(void **state)
{
    int st;
    char *out;

    (void)state;
    tu_mkdtemp();
    snprintf(log_path, sizeof log_path, "%s/strace.log", test_dir);
    out = rt_run(&st, "strace -f -tt -T -e trace=all -s 256 -o %s " WORK " sys 2>&1", log_path);
    free(out);
    assert_int_equal(st, 3); /* report_work sys exits 3 */
    return 0;
}

static int
group_teardown(void **state)
{
    (void)state;
    tu_rmdir();
    return 0;
}

static ph_strace *
parse_buf(const char *buf, size_t len, size_t chunk)
{
    ph_error_t err = NULL;
    ph_strace *st = ph_strace_new(&err);

    assert_non_null(st);
    for (size_t o = 0; o < len; o += chunk)
        assert_int_equal(ph_strace_feed(st, buf + o, len - o < chunk ? len - o : chunk, &err), 0);
    assert_int_equal(ph_strace_finish(st, &err), 0);
    return st;
}

/* The independent count: NAME CALLS ERRORS MICROSECONDS MAX-MICROSECONDS
 * per syscall. */
static const char awk_per_syscall[] =
    "awk '{ body = $0; sub(/^[0-9]+ +[0-9:.]+ /, \"\", body);"
    "       if (body ~ /^(---|\\+\\+\\+)/) next;"
    "       if (body ~ /^<\\.\\.\\. /) { n = substr(body, 6); sub(/ .*/, \"\", n) }"
    "       else { n = body; sub(/\\(.*/, \"\", n); calls[n]++ };"
    "       if (body ~ / = (-1|\\?) E[A-Z0-9_]+/) errs[n]++;"
    "       if (match(body, /<[0-9]+\\.[0-9]+>$/)) { t = substr(body, RSTART + 1, RLENGTH - 2); split(t, a, \".\");"
    "           us[n] += a[1] * 1000000 + a[2]; if (a[1] * 1000000 + a[2] > mx[n]) mx[n] = a[1] * 1000000 + a[2] } }"
    "     END { for (n in calls) printf \"%%s %%d %%d %%d %%d\\n\", n, calls[n], errs[n], us[n], mx[n] }' %s";

static void
test_counts_equal_awk(void **state)
{
    ph_error_t err = NULL;
    const char *path = log_path;
    ph_strace *st = ph_strace_parse_files(&path, 1, &err);
    char *out = rt_must(awk_per_syscall, log_path), line[512];
    const char *p = out;
    const ph_strace_info *info;
    size_t names = 0;
    unsigned long long all = 0;

    (void)state;
    assert_non_null(st);
    info = ph_strace_get_info(st);
    assert_int_equal(info->bad_lines, 0);
    assert_string_equal(info->problem, "");
    while (rt_next_line(&p, line, sizeof line)) {
        char name[128];
        unsigned long long calls, errs, us, max;
        int i;
        ph_strace_sys s;

        assert_int_equal(sscanf(line, "%127s %llu %llu %llu %llu", name, &calls, &errs, &us, &max), 5);
        i = ph_strace_find_syscall(st, name);
        if (i < 0)
            fail_msg("%s: not found", name);
        s = ph_strace_get_syscall(st, (size_t)i);
        if (s.calls != calls || s.errors != errs || s.total_ns != us * 1000 || s.max_ns != max * 1000)
            fail_msg("%s: ours %llu calls, %llu errors, %llu ns, max %llu ns; awk %llu, %llu, %llu us, max %llu us",
                     name, (unsigned long long)s.calls, (unsigned long long)s.errors, (unsigned long long)s.total_ns,
                     (unsigned long long)s.max_ns, calls, errs, us, max);
        names++;
        all += calls;
    }
    assert_int_equal(names, ph_strace_n_syscalls(st));
    assert_int_equal(info->calls, all);
    /* what report_work did: 5 failing opens, a failing access (the loader may add its own) */
    assert_true(ph_strace_get_syscall(st, (size_t)ph_strace_find_syscall(st, "openat")).errors >= 5);
    assert_true(ph_strace_get_syscall(st, (size_t)ph_strace_find_syscall(st, "access")).errors >= 1);
    {
        int found = 0;
        for (size_t i = 0; i < ph_strace_n_errnos(st); i++) {
            ph_strace_errno e = ph_strace_get_errno(st, i);
            if (strcmp(ph_strace_get_syscall(st, e.sys).name, "openat") == 0) {
                assert_string_equal(e.name, "ENOENT");
                assert_true(e.count >= 5);
                found = 1;
            }
        }
        assert_true(found);
    }
    free(out);
    ph_strace_free(st);
}

static void
test_threads_equal_awk(void **state)
{
    ph_error_t err = NULL;
    const char *path = log_path;
    ph_strace *st = ph_strace_parse_files(&path, 1, &err);
    char *out = rt_must("awk '{ body = $0; sub(/^[0-9]+ +[0-9:.]+ /, \"\", body); "
                        "if (body !~ /^(---|\\+\\+\\+|<\\.\\.\\.)/) n[$1]++ } END { for (p in n) print p, n[p] }' %s",
                        log_path),
         line[256];
    const char *p = out;
    size_t threads = 0;
    int exited3 = 0, exited0 = 0;

    (void)state;
    while (rt_next_line(&p, line, sizeof line)) {
        long long pid;
        unsigned long long calls;
        int found = 0;

        assert_int_equal(sscanf(line, "%lld %llu", &pid, &calls), 2);
        for (size_t i = 0; i < ph_strace_n_threads(st); i++) {
            const ph_strace_thread *t = ph_strace_get_thread(st, i);
            if (t->pid == pid) {
                assert_int_equal(t->calls, calls);
                found = 1;
            }
        }
        assert_true(found);
        threads++;
    }
    assert_int_equal(threads, 2);
    assert_int_equal(ph_strace_n_threads(st), 2);
    for (size_t i = 0; i < ph_strace_n_threads(st); i++) {
        const ph_strace_thread *t = ph_strace_get_thread(st, i);
        exited3 |= strcmp(t->ended, "exited with 3") == 0;
        exited0 |= strcmp(t->ended, "exited with 0") == 0;
        /* the timeline spreads the thread's syscall time, all of it */
        {
            int64_t origin, width;
            const uint64_t *b = ph_strace_timeline(st, t->timeline, &origin, &width);
            uint64_t sum = 0;
            assert_non_null(b);
            for (size_t k = 0; k < PH_STRACE_BUCKETS; k++)
                sum += b[k];
            assert_int_equal(sum, t->total_ns);
            assert_true(origin + width * PH_STRACE_BUCKETS > ph_strace_get_info(st)->last_ns);
        }
    }
    assert_true(exited3 && exited0);
    assert_int_equal(ph_strace_n_signals(st), 1);
    assert_string_equal(ph_strace_get_signal(st, 0).name, "SIGUSR1");
    assert_int_equal(ph_strace_get_signal(st, 0).count, 1);
    free(out);
    ph_strace_free(st);
}

/* The slowest call is the largest <T> of the log (awk's max), shown with
 * the time it started. */
static void
test_slowest(void **state)
{
    ph_error_t err = NULL;
    const char *path = log_path;
    ph_strace *st = ph_strace_parse_files(&path, 1, &err);
    char *out = rt_must("awk 'match($0, /<[0-9]+\\.[0-9]+>$/) { t = substr($0, RSTART + 1, RLENGTH - 2); split(t, a, \".\"); "
                        "v = a[1] * 1000000 + a[2]; if (v > m) m = v } END { print m }' %s",
                        log_path);
    const ph_strace_call *c0 = ph_strace_get_slowest(st, 0);

    (void)state;
    assert_true(ph_strace_n_slowest(st) == PH_STRACE_SLOWEST);
    assert_int_equal(c0->dur_ns, strtoull(out, NULL, 10) * 1000);
    for (size_t i = 1; i < ph_strace_n_slowest(st); i++)
        assert_true(ph_strace_get_slowest(st, i)->dur_ns <= ph_strace_get_slowest(st, i - 1)->dur_ns);
    /* the futex the main thread waits in across the other thread's life, shown with the
     * time it started (unfinished then resumed when the other thread writes meanwhile) */
    {
        int futex = 0;
        for (size_t i = 0; i < ph_strace_n_slowest(st); i++) {
            const ph_strace_call *c = ph_strace_get_slowest(st, i);
            if (strncmp(c->text, "futex(", 6) == 0) {
                char want[96];
                futex = 1;
                assert_non_null(strstr(c->text, " = 0"));
                /* strace pads the pid column: one space or more */
                snprintf(want, sizeof want, "^%lld +%s futex\\(", (long long)c->pid, c->ts);
                free(rt_must("grep -qE '%s' %s", want, log_path));
            }
        }
        assert_true(futex);
    }
    free(out);
    ph_strace_free(st);
}

static void
test_any_chunking_same_result(void **state)
{
    size_t len;
    char *file = rt_slurp(log_path, &len);
    ph_strace *a = parse_buf(file, len, 1 << 20), *b = parse_buf(file, len, 1), *c = parse_buf(file, len, 13);

    (void)state;
    for (ph_strace *x = b; x != NULL; x = x == b ? c : NULL) {
        assert_int_equal(ph_strace_get_info(x)->calls, ph_strace_get_info(a)->calls);
        assert_int_equal(ph_strace_get_info(x)->errors, ph_strace_get_info(a)->errors);
        assert_int_equal(ph_strace_get_info(x)->total_ns, ph_strace_get_info(a)->total_ns);
        assert_string_equal(ph_strace_get_slowest(x, 0)->text, ph_strace_get_slowest(a, 0)->text);
    }
    ph_strace_free(a);
    ph_strace_free(b);
    ph_strace_free(c);
    free(file);
}

static void
test_formats(void **state)
{
    /* without -f: no pid; -ttt: epoch seconds; [pid N] as strace writes on stderr */
    const char *nopid = "10:00:00.000100 read(0, \"\", 1) = 0 <0.000010>\n"
                        "10:00:00.000200 open(\"/x\", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000020>\n";
    const char *epoch = "7 1700000000.100000 write(1, \"a\", 1) = 1 <0.250000>\n"
                        "7 1700000000.500000 exit_group(0) = ?\n7 1700000000.500100 +++ exited with 0 +++\n";
    const char *bracket = "[pid  12] 10:00:00.000001 futex(0x1, FUTEX_WAIT, 0, NULL <unfinished ...>\n"
                          "[pid  13] 10:00:00.000002 close(3) = 0 <0.000001>\n"
                          "[pid  12] 10:00:01.000001 <... futex resumed>) = -1 EAGAIN (Resource temporarily unavailable) <1.000000>\n"
                          "[pid  12] 10:00:01.000002 read(3, 0x1, 4) = ? ERESTARTSYS (To be restarted if SA_RESTART is set) <0.000003>\n";
    const char *midnight = "1 23:59:59.900000 nanosleep({tv_sec=0, tv_nsec=200000000}, NULL) = 0 <0.200000>\n"
                           "1 00:00:00.100000 getpid() = 1 <0.000001>\n";
    ph_strace *st;

    (void)state;
    st = parse_buf(nopid, strlen(nopid), 7);
    assert_int_equal(ph_strace_get_info(st)->calls, 2);
    assert_int_equal(ph_strace_get_info(st)->errors, 1);
    assert_int_equal(ph_strace_get_info(st)->total_ns, 30000);
    assert_int_equal(ph_strace_n_threads(st), 1);
    assert_int_equal(ph_strace_get_info(st)->with_pids, 0);
    ph_strace_free(st);

    st = parse_buf(epoch, strlen(epoch), 5);
    assert_int_equal(ph_strace_get_info(st)->calls, 2);
    assert_int_equal(ph_strace_get_info(st)->total_ns, 250000000);
    assert_int_equal(ph_strace_get_info(st)->last_ns - ph_strace_get_info(st)->first_ns, 400100000);
    assert_string_equal(ph_strace_get_thread(st, 0)->ended, "exited with 0");
    assert_string_equal(ph_strace_get_info(st)->problem, "");
    ph_strace_free(st);

    st = parse_buf(bracket, strlen(bracket), 3);
    assert_int_equal(ph_strace_get_info(st)->bad_lines, 0);
    assert_int_equal(ph_strace_get_info(st)->calls, 3);
    assert_int_equal(ph_strace_get_info(st)->errors, 2); /* EAGAIN and ERESTARTSYS */
    assert_int_equal(ph_strace_n_threads(st), 2);
    assert_int_equal(ph_strace_get_slowest(st, 0)->dur_ns, 1000000000);
    assert_string_equal(ph_strace_get_slowest(st, 0)->ts, "10:00:00.000001");
    assert_string_equal(ph_strace_get_slowest(st, 0)->text,
                        "futex(0x1, FUTEX_WAIT, 0, NULL) = -1 EAGAIN (Resource temporarily unavailable)");
    ph_strace_free(st);

    /* a -T time too large to be one (found by fuzzing: signed overflow) is no time */
    {
        const char *huge = "1 10:00:00.1 read(0, \"\", 1) = 0 <99999999999.000001>\n";
        st = parse_buf(huge, strlen(huge), 64);
        assert_int_equal(ph_strace_get_info(st)->calls, 1);
        assert_int_equal(ph_strace_get_syscall(st, 0).timed, 0);
        assert_int_equal(ph_strace_get_info(st)->total_ns, 0);
        ph_strace_free(st);
    }

    st = parse_buf(midnight, strlen(midnight), 64);
    assert_int_equal(ph_strace_get_info(st)->last_ns - ph_strace_get_info(st)->first_ns, 200000000);
    ph_strace_free(st);
}

static void
test_bad_inputs(void **state)
{
    static const struct {
        const char *in, *problem;
        size_t bad;
    } cases[] = {
        { "", "the log is empty", 0 },
        { "hello world\n\n", "no syscall in the log (1 lines, none of them strace's)", 1 },
        { "1 10:00:00.1 read(0, <unfinished ...>\n", "1 call never returned in the log (the process was killed, or the log is cut short)", 0 },
        { "1 10:00:00.1 read(0, \"\", 1) = 0 <0.1>\n1 10:00:00.2 <... write resumed>) = 1 <0.1>\n", "", 1 },
        { "1 10:00:00.1 read(0, \"\", 1) = 0\n", "", 0 },
        { "read(0, \"\", 1) = 0\n", "no timestamps: strace ran without -tt", 0 },
        { "1 10:00:00.1 write(1, \"x\"..., 4096 <detached ...>\n", "1 call never returned in the log (the process was killed, or the log is cut short)", 0 },
        { "1 99:99 read(\n1 10:00:00.1 (\n1 10:00:00.1 x\n", "no syscall in the log (3 lines, none of them strace's)", 3 },
        /* numbers too large to be a pid or a time (found by fuzzing: signed overflow) */
        { "[pid 1111111111111111111111] 10:00:00.1 read(0, \"\", 1) = 0 <0.1>\n1 10:00:00.2 read(0, \"\", 1) = 0\n", "", 1 },
        { "1 888888888888.5 read(0, \"\", 1) = 0 <0.1>\n1 10:00:00.2 read(0, \"\", 1) = 0\n", "", 1 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ph_strace *st = parse_buf(cases[i].in, strlen(cases[i].in), 4);
        const ph_strace_info *info = ph_strace_get_info(st);
        if (strcmp(info->problem, cases[i].problem) != 0 || info->bad_lines != cases[i].bad)
            fail_msg("case %zu: problem \"%s\" (%zu bad), expected \"%s\" (%zu)", i, info->problem, info->bad_lines,
                     cases[i].problem, cases[i].bad);
        ph_strace_free(st);
    }
}

/* A line longer than the limit, in pieces: one bad line, then reading
 * goes on; memory does not hold it. */
static void
test_overlong_line(void **state)
{
    size_t big = PH_STRACE_MAX_LINE * 2;
    char *junk = malloc(big);
    const char *ok = "1 10:00:00.1 read(0, \"\", 1) = 0 <0.1>\n";
    ph_error_t err = NULL;
    ph_strace *st = ph_strace_new(&err);

    (void)state;
    memset(junk, 'x', big);
    for (size_t o = 0; o < big; o += 65536)
        assert_int_equal(ph_strace_feed(st, junk + o, 65536, &err), 0);
    assert_int_equal(ph_strace_feed(st, "\n", 1, &err), 0);
    assert_int_equal(ph_strace_feed(st, ok, strlen(ok), &err), 0);
    /* and one too long inside a single chunk */
    junk[big - 1] = '\n';
    assert_int_equal(ph_strace_feed(st, junk, big, &err), 0);
    assert_int_equal(ph_strace_feed(st, ok, strlen(ok), &err), 0);
    assert_int_equal(ph_strace_finish(st, &err), 0);
    assert_int_equal(ph_strace_get_info(st)->bad_lines, 2);
    assert_int_equal(ph_strace_get_info(st)->bad_line_numbers[0], 1);
    assert_int_equal(ph_strace_get_info(st)->bad_line_numbers[1], 3);
    assert_int_equal(ph_strace_get_info(st)->calls, 2);
    ph_strace_free(st);
    free(junk);
}

/* The real log cut in the middle of a line: what was read counts. */
static void
test_cut_short(void **state)
{
    size_t len;
    char *file = rt_slurp(log_path, &len);
    ph_strace *st = parse_buf(file, len * 2 / 3, 4096);

    (void)state;
    assert_true(ph_strace_get_info(st)->calls > 20);
    assert_true(ph_strace_get_info(st)->bad_lines <= 1);
    ph_strace_free(st);
    free(file);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_equal_awk),
        cmocka_unit_test(test_threads_equal_awk),
        cmocka_unit_test(test_slowest),
        cmocka_unit_test(test_any_chunking_same_result),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_overlong_line),
        cmocka_unit_test(test_cut_short),
    };

    return cmocka_run_group_tests_name("strace", tests, group_setup, group_teardown);
}
