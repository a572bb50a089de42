/* test_collapse.c - perf script output to folded stacks (ph_collapse):
 * stackcollapse-perf.pl's rules case by case (headers, events, tidying,
 * [unknown] frames, annotations, Perl's truth of "0", samples without a
 * blank line), byte order of the output, any chunking, perf map files
 * (and what naming from a hostile one costs), and --inline through libdw on a helper built with an inlined function.
 * The whole of FlameGraph's own suite is tests/43-collapse.bats. */
#include "test_util.h"

#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ph_collapse.h"
#include "ph_signal.h"

/* Collapse IN with O (NULL: defaults), fed in chunks of CHUNK bytes (0:
 * whole); the folded output, malloc'd; stats in *ST when not NULL. */
static char *
collapse(const char *in, const ph_collapse_opts *o, size_t chunk, ph_collapse_stats *st)
{
    ph_error_t err = NULL;
    ph_collapse *c = ph_collapse_new(o, &err);
    size_t len = strlen(in), outlen = 0;
    char *out = NULL;
    FILE *f;

    if (c == NULL)
        fail_msg("ph_collapse_new: %s", err->msg);
    if (chunk == 0)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len; off += chunk)
        assert_int_equal(ph_collapse_feed(c, in + off, off + chunk > len ? len - off : chunk, &err), 0);
    assert_int_equal(ph_collapse_finish(c, &err), 0);
    f = open_memstream(&out, &outlen);
    assert_int_equal(ph_collapse_write(c, f, &err), 0);
    fclose(f);
    if (st)
        *st = *ph_collapse_get_stats(c);
    ph_collapse_free(c);
    return out;
}

static void
expect(const char *in, const ph_collapse_opts *o, const char *want)
{
    char *got = collapse(in, o, 0, NULL);

    if (strcmp(got, want) != 0)
        fail_msg("collapsed:\n%s---\nwanted:\n%s---\nfrom:\n%s", got, want, in);
    free(got);
}

static void
test_headers_and_periods(void **state)
{
    ph_collapse_opts o;

    (void)state;
    /* stackcollapse-perf.pl's own example; no period: 1 */
    expect("swapper     0 [000] 158665.570607: cpu-clock:\n"
           "\tffffffff8103ce3b native_safe_halt ([kernel.kallsyms])\n"
           "\tffffffff8101c6a3 default_idle ([kernel.kallsyms])\n"
           "\tffffffff81aebbfe start_kernel ([kernel.kallsyms].init.text)\n"
           "\n",
           NULL, "swapper;start_kernel;default_idle;native_safe_halt 1\n");
    /* periods add up; offsets go; comm with a blank; output in byte order */
    {
        const char *in = "V8 WorkerThread 25607 4794564.109216: 104345 cycles:\n"
                         "\t7f00 leaf+0x1a (/x/lib.so)\n"
                         "\t7f10 main+0x2 (/x/bin)\n"
                         "\n"
                         "V8 WorkerThread 25607 4794564.109217: 5 cycles:\n"
                         "\t7f04 leaf+0x1e (/x/lib.so)\n"
                         "\t7f10 main+0x2 (/x/bin)\n"
                         "\n"
                         "java 24636/25607 [000] 94564.109216: 100 cycles: \n"
                         "\t7f10 run (/x/bin)\n"
                         "\n"
                         "java 12688 6544038.708352: 0 cycles:\n" /* Perl's truth: a period "0" counts 1 */
                         "\t7f10 run (/x/bin)\n"
                         "\n";
        expect(in, NULL, "V8_WorkerThread;main;leaf 104350\njava;run 101\n");
        ph_collapse_opts_init(&o);
        o.pid = 1;
        expect(in, &o, "V8_WorkerThread-?;main;leaf 104350\njava-24636;run 100\njava-?;run 1\n");
        o.tid = 1;
        expect(in, &o, "V8_WorkerThread-?/25607;main;leaf 104350\njava-24636/25607;run 100\njava-?/12688;run 1\n");
    }
    /* a tid of "0" is false in Perl: the pid moves over, as "?" */
    ph_collapse_opts_init(&o);
    o.tid = 1;
    expect("swapper 0/0 [000] 1.0: 7 cpu-clock:\n\tffff idle ([kernel.kallsyms])\n\n", &o, "swapper-?/0;idle 7\n");
}

/* "a 1" sorts before "a;b": Perl sorts the joined lines */
static void
test_byte_order(void **state)
{
    (void)state;
    expect("pp 1 1.0: 1 e:\n\t1 b (m)\n\t2 a (m)\n\n"
           "pp 1 1.0: 1 e:\n\t2 a (m)\n\n"
           "pp 1 1.0: 1 e:\n\t1 a-b (m)\n\n"
           "pp 1 1.0: 1 e:\n\t3 b (m)\n\t2 a-b (m)\n\n"
           "qq 1 1.0: 1 e:\n\t2 a (m)\n\n"
           "pp-q 1 1.0: 1 e:\n\t2 a (m)\n\n",
           NULL, "pp-q;a 1\npp;a 1\npp;a-b 1\npp;a-b;b 1\npp;a;b 1\nqq;a 1\n");
}

/* Only samples of one event: the first seen, or the one asked for. */
static void
test_event_filter(void **state)
{
    const char *in = "pp 1 1.0: 3 cycles:\n\t1 a (m)\n\n"
                     "pp 1 1.0: 5 instructions:\n\t1 b (m)\n\n"
                     "pp 1 1.0: 7 cycles:u:\n\t1 c (m)\n\n"
                     "pp 1 1.0: 9 cycles:\n\t1 a (m)\n\n";
    ph_collapse_opts o;
    ph_collapse_stats st;
    char *out;

    (void)state;
    out = collapse(in, NULL, 0, &st);
    assert_string_equal(out, "pp;a 12\n");
    assert_int_equal(st.filtered, 2);
    assert_string_equal(st.event, "cycles");
    assert_string_equal(st.other_event, "instructions");
    assert_int_equal(st.samples, 2);
    free(out);
    ph_collapse_opts_init(&o);
    o.event_filter = "cycles:u";
    expect(in, &o, "pp;c 7\n");
    /* a filtered header leaves the sample before it open: no blank line,
     * so the frames after it join that sample, as in Perl */
    expect("pp 1 1.0: 3 cycles:\n\t1 a (m)\n"
           "pp 1 1.0: 5 instructions:\n\t1 b (m)\n\n",
           NULL, "pp;b;a 3\n");
}

static void
test_tidy(void **state)
{
    ph_collapse_opts o;

    (void)state;
    expect("pp 1 1.0: 1 e:\n"
           "\t1 foo(int, char const*)+0x10 (/bin/x)\n"
           "\t2 (anonymous namespace)::bar(int) (/bin/x)\n"
           "\t3 net/http.(*Client).Do (/bin/x)\n"
           "\t4 RegExp:[&<>\\\"'] (/tmp/perf-7539.map)\n"
           "\t5 a;b+0x1F (/bin/x)\n"
           "\t6 std::function<void (int)>::operator() (/bin/x)\n"
           "\t7 ns::(anonymous namespace)::baz(int) (/bin/x)\n"
           "\n",
           /* frame 2 starts with '(': Perl takes it for a process name and drops it */
           NULL, "pp;ns::(anonymous namespace)::baz;std::function<void ;a:b+0x1F;RegExp:[&<>\\];net/http.(*Client).Do;foo 1\n");
    /* java processes: Lorg/x -> org/x (only names with a '/') */
    expect("java 1 1.0: 1 e:\n\t1 Lorg/mozilla/Context;.call(Lorg/x;)V+0x2 (/tmp/perf-1.map)\n\t2 Lfoo (/x)\n\n"
           "javac 1 1.0: 1 e:\n\t1 Lorg/x;.y (/x)\n\n"
           "node 1 1.0: 1 e:\n\t1 Lorg/x;.y (/x)\n\n",
           NULL, "java;Lfoo;org/mozilla/Context:.call 1\njavac;org/x:.y 1\nnode;Lorg/x:.y 1\n");
    /* a frame that is a process name in parentheses goes; +0x with
     * capital hex stays (Perl's [\da-f]) */
    expect("pp 1 1.0: 1 e:\n\t1 (python3)+0x1 (m)\n\t2 g+0xAB (m)\n\n", NULL, "pp;g+0xAB 1\n");
    ph_collapse_opts_init(&o);
    o.kernel = 1;
    o.jit = 1;
    /* perf's inline chains: the inlined end in _[i] */
    expect("pp 1 1.0: 1 e:\n\t1 outer->inner->leaf ([kernel.kallsyms])\n\t2 ->x (m)\n\t3 y-> (m)\n\n", &o,
           "pp;y;;x_[i];outer_[k];inner_[i];leaf_[i] 1\n");
}

static void
test_unknown_and_annotations(void **state)
{
    const char *in = "pp 1 1.0: 1 cpu-clock:\n"
                     "\tffffffff81000130 entry_SYSCALL_64+0x76 ([kernel.kallsyms])\n"
                     "\t8c3453 tcp_sendmsg (/lib/modules/4.3.0/build/vmlinux)\n"
                     "\t7d8 ipv4_conntrack_local+0x7f8 ([nf_conntrack_ipv4])\n"
                     "\t7f722d142778 Ljava/io/PrintStream;::print (/tmp/perf-19982.map)\n"
                     "\t7f722d142779 cached_[j] (/tmp/perf-19982.map)\n"
                     "\t3033 [unknown] (/usr/bin/env)\n"
                     "\t0 [unknown] ([unknown])\n"
                     "\n";
    ph_collapse_opts o;

    (void)state;
    expect(in, NULL, "pp;[unknown];[env];cached_[j];Ljava/io/PrintStream:::print;ipv4_conntrack_local;tcp_sendmsg;"
                     "entry_SYSCALL_64 1\n");
    ph_collapse_opts_init(&o);
    o.kernel = o.jit = o.addrs = 1;
    expect(in, &o, "pp;[unknown <0>];[env <3033>];cached_[j];Ljava/io/PrintStream:::print_[j];ipv4_conntrack_local_[k];"
                   "tcp_sendmsg_[k];entry_SYSCALL_64_[k] 1\n");
    /* another address in the same dso is another frame under --addrs */
    expect("pp 1 1.0: 1 e:\n\t3033 [unknown] (/usr/bin/env)\n\npp 1 1.0: 1 e:\n\t3034 [unknown] (/usr/bin/env)\n\n", &o,
           "pp;[env <3033>] 1\npp;[env <3034>] 1\n");
    /* a blank after the dso: the last ')' still ends it */
    expect("pp 1 1.0: 1 e:\n\t3033 [unknown] (/usr/bin/env) \n\n", NULL, "pp;[env] 1\n");
    /* only "+0x<hex>" at the end is an offset */
    expect("pp 1 1.0: 1 e:\n\t1 f0x1f (m)\n\t2 g+0x (m)\n\t3 h+0x1+0x2 (m)\n\n", NULL, "pp;h+0x1;g+0x;f0x1f 1\n");
}

/* Perl's edges: frames before any header have no process and are not
 * kept, a sample with no blank line after it is not counted, other lines
 * are counted as unrecognized, comments skipped; a comm is at least two
 * bytes, so "p 1 1.0:" is the comm of "p 1 1.0: 1 e:". */
static void
test_edges(void **state)
{
    const char *in = "# ========\n"
                     "# cmdline : /usr/bin/perf record -g ./a.out\n"
                     "\t1 z (m)\n\n"
                     "pp 1 1.0: 1 e:\n\t1 a (m)\n\n"
                     "garbage\n"
                     "\r\n"
                     "pp 1 1.0: 1 e:\n\t1 b (m)\n"; /* no blank line: not counted */
    ph_collapse_stats st;
    char *out = collapse(in, NULL, 0, &st);

    (void)state;
    assert_string_equal(out, "pp;a 1\n");
    assert_int_equal(st.lines, 11);
    assert_int_equal(st.unrecognized, 2); /* "garbage", and "\r": a CRLF blank line is not blank to Perl */
    assert_int_equal(st.unrecognized_line_numbers[0], 8);
    assert_int_equal(st.unrecognized_line_numbers[1], 9);
    assert_int_equal(st.samples, 1);
    free(out);
    /* an empty symbol: Perl's regex takes its last byte of address */
    expect("pp 1 1.0: 1 e:\n\t7f3a (mod)\n\n", NULL, "pp;a 1\n");
    expect("p 1 1.0: 1 e:\n\t1 a (m)\n\n", NULL, "p_1_1.0:;a 1\n");
    /* a period of 19 digits is not one: the header is not read */
    out = collapse("pp 1 1.0: 1234567890123456789 e:\n\t1 a (m)\n\npp 1 1.0: 100000000000000 e:\n\t1 a (m)\n\n"
                   "pp 1 1.0: 123456789012345 e:\n\t1 a (m)\n\n",
                   NULL, 0, &st);
    assert_string_equal(out, "pp;a 223456789012345\n"); /* counts are exact to 2^53 */
    assert_int_equal(st.unrecognized, 1);
    free(out);
    /* an empty input has no stacks */
    expect("", NULL, "");
}

/* The same output whatever the chunking, lines split anywhere. */
/* The header's limit: a line of PH_COLLAPSE_MAX_LINE bytes is read (here
 * a comment), one byte more is counted unrecognized and too long, whole or
 * split across feeds, and the next line is read. */
static void
test_line_limit(void **state)
{
    const char *tail = "\npp 1 1.0: 1 e:\n\t1 a (m)\n\n";
    size_t max = PH_COLLAPSE_MAX_LINE, chunks[] = { 0, (1u << 20) + 3 };
    char *in = malloc(max + 64);

    (void)state;
    assert_non_null(in);
    for (size_t extra = 0; extra <= 1; extra++) {
        memset(in, 'x', max + extra);
        in[0] = '#';
        strcpy(in + max + extra, tail);
        for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++) {
            ph_collapse_stats st;
            char *out = collapse(in, NULL, chunks[i], &st);

            assert_string_equal(out, "pp;a 1\n");
            assert_int_equal(st.lines, 4);
            assert_int_equal(st.long_lines, extra);
            assert_int_equal(st.unrecognized, extra);
            assert_int_equal(st.unrecognized_line_numbers[0], extra ? 1 : 0);
            free(out);
        }
    }
    free(in);
}

static void
test_chunks(void **state)
{
    const char *in = "java 24636/25607 [000] 94564.109216: 100 cycles:\n"
                     "\t7f722d142778 Ljava/io/PrintStream;::print (/tmp/perf-19982.map)\n"
                     "\tffffffff8103ce3b native_safe_halt ([kernel.kallsyms])\n"
                     "\n"
                     "sh 1 1.0: 3 cycles:\n\t1 a->b (m)\n\tjunk line\n\n";
    ph_collapse_opts o;
    char *whole, *part;

    (void)state;
    ph_collapse_opts_init(&o);
    o.tid = o.kernel = o.jit = 1;
    whole = collapse(in, &o, 0, NULL);
    for (size_t chunk = 1; chunk < strlen(in); chunk++) {
        part = collapse(in, &o, chunk, NULL);
        assert_string_equal(part, whole);
        free(part);
    }
    free(whole);
}

/* [unknown] frames of a perf map file are named from it (our addition):
 * here from a copy in map_dir, as when perf script ran where the file
 * was not. */
static void
test_perf_map(void **state)
{
    char map[300];
    ph_collapse_opts o;
    FILE *f;

    (void)state;
    tu_mkdtemp();
    snprintf(map, sizeof map, "%s/perf-4242.map", test_dir);
    f = fopen(map, "w");
    assert_non_null(f);
    fputs("7f0000001000 100 LazyCompile:*fib /app/x.js:3\n"
          "7f0000002000 40 Builtin:ArgumentsAdaptor\n"
          "7f0000002000 40 Builtin:Later\n" /* the same code written again: the first is taken, as perf does */
          "7f0000001080 10 inner \"quoted\"\n",
          f);
    fclose(f);
    ph_collapse_opts_init(&o);
    o.map_dir = test_dir;
    o.jit = 1;
    expect("node 4242 1.0: 1 cpu-clock:\n"
           "\t7f0000001010 [unknown] (/tmp/perf-4242.map)\n"
           "\t7f0000001085 [unknown] (/tmp/perf-4242.map)\n"
           "\t7f0000002028 [unknown] (/tmp/perf-4242.map)\n"
           "\t7f0000009999 [unknown] (/tmp/perf-4242.map)\n"
           "\t7f0000001090 [unknown] (/tmp/perf-4242.map)\n" /* just past inner's end: the nearest entry decides */
           "\n",
           &o, "node;[perf-4242.map]_[j];[perf-4242.map]_[j];Builtin:ArgumentsAdaptor_[j];inner quoted_[j];LazyCompile:*fib /app/x.js:3_[j] 1\n");
    tu_rmdir();
    /* no such file: as Perl has it */
    o.map_dir = "/nonexistent";
    expect("node 4242 1.0: 1 cpu-clock:\n\t7f0000001010 [unknown] (/tmp/perf-4242.map)\n\n", &o,
           "node;[perf-4242.map]_[j] 1\n");
}

/* Where perf script puts a frame it cannot name: the file offset of FUNC
 * (+ PLUS) in PROG, as hex text; FUNC's address from `go tool nm -size`'s
 * NM, the offset from the segment binutils' readelf says holds it. */
static void
perf_addr(const char *prog, const char *nm, const char *func, unsigned long long plus, char *out, size_t len)
{
    FILE *f = fopen(nm, "r");
    char line[1024], name[512], cmd[600];
    unsigned long long addr = 0, size, off, va, pa, filesz;
    char type;
    int found = 0;

    assert_non_null(f);
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, " %llx %llu %c %511s", &addr, &size, &type, name) == 4 && strcmp(name, func) == 0;
    fclose(f);
    assert_true(found);
    addr += plus;
    snprintf(cmd, sizeof cmd, "readelf -lW '%s'", prog);
    f = popen(cmd, "r");
    assert_non_null(f);
    out[0] = '\0';
    while (fgets(line, sizeof line, f))
        if (sscanf(line, " LOAD %llx %llx %llx %llx", &off, &va, &pa, &filesz) == 4 && addr >= va && addr < va + filesz)
            snprintf(out, len, "%llx", addr - va + off);
    pclose(f);
    assert_true(out[0] != '\0');
}

/* A stripped Go program perf could not name (`-ldflags="-s -w"`, static
 * or PIE, or cgo then strip): with a copy of it in elf_dirs (the run's
 * symfs/, or perf's build-id cache: PATH/<build-id>/elf), its frames are
 * named from Go's own table, perf's file offsets taken to the addresses
 * the unstripped build's `go tool nm` gives; a path with `..`, a link and
 * no elf_dirs stay `[program]`. */
static void
test_go_stripped(void **state)
{
    char cmd[2048], hot[32], mainf[32], chot[32], phot[32], in[2048], want[256], symfs[600], cache[600];
    const char *dirs[3] = { symfs, cache, NULL };
    ph_collapse_opts o;

    (void)state;
    tu_mkdtemp();
    snprintf(cmd, sizeof cmd,
             "mkdir -p %1$s/symfs/usr/local/bin %1$s/cache/usr/bin/svc/0123abcd && "
             "cp " GO_DIR "/static-sw %1$s/symfs/usr/local/bin/lang-go && "
             "cp " GO_DIR "/pie-sw %1$s/symfs/usr/local/bin/lang-pie && "
             "ln -s lang-go %1$s/symfs/usr/local/bin/link && "
             "cp " GO_DIR "/cgo-strip %1$s/cache/usr/bin/svc/0123abcd/elf",
             test_dir);
    assert_int_equal(system(cmd), 0);
    perf_addr(GO_DIR "/static-sw", GO_DIR "/static.nm", "main.hot_seventy_five", 9, hot, sizeof hot);
    perf_addr(GO_DIR "/static-sw", GO_DIR "/static.nm", "main.main", 30, mainf, sizeof mainf);
    perf_addr(GO_DIR "/pie-sw", GO_DIR "/pie.nm", "main.hot_seventy_five", 9, phot, sizeof phot);
    perf_addr(GO_DIR "/cgo-strip", GO_DIR "/cgo.nm", "main.hot_seventy_five", 9, chot, sizeof chot);
    snprintf(symfs, sizeof symfs, "%s/symfs", test_dir);
    snprintf(cache, sizeof cache, "%s/cache", test_dir);
    ph_collapse_opts_init(&o);
    o.elf_dirs = dirs;
    snprintf(in, sizeof in,
             "lang-go 8 1.0: 1 cpu-clock:\n\t%1$s [unknown] (/usr/local/bin/lang-go)\n"
             "\t%2$s [unknown] (/usr/local/bin/lang-go)\n\n"
             "lang-go 8 2.0: 1 cpu-clock:\n\t%1$s [unknown] (/usr/local/bin/../bin/lang-go)\n"
             "\t%1$s [unknown] (/usr/local/bin/link)\n\t%4$s [unknown] (/usr/local/bin/lang-pie)\n\n"
             "svc 9 3.0: 1 cpu-clock:\n\t%3$s [unknown] (/usr/bin/svc)\n\n",
             hot, mainf, chot, phot);
    snprintf(want, sizeof want, "lang-go;main.hot_seventy_five;[link];[lang-go] 1\n"
                                "lang-go;main.main;main.hot_seventy_five 1\nsvc;main.hot_seventy_five 1\n");
    expect(in, &o, want);
    o.elf_dirs = NULL;
    expect(in, &o, "lang-go;[lang-go];[lang-go] 1\nlang-go;[lang-pie];[link];[lang-go] 1\nsvc;[svc] 1\n");
    tu_rmdir();
}

/* HotSpot writes its map with 0x before both numbers (perf reads both
 * forms): `0x00007f7be8ed5d80 0x00000000000000d8 long X.hot(long, long)`. */
static void
test_perf_map_0x(void **state)
{
    ph_collapse_opts o;

    (void)state;
    tu_mkdtemp();
    tu_write("perf-77.map", "0x00007f7be8ed5d80 0x00000000000000d8 long LangJava.hot_seventy_five(long, long)\n"
                            "0X00007F7BE8ED6000 0x10 Interpreter\n"
                            "7f7be8ed7000 20 bare\n"
                            "0x 0x10 not-an-address\n");
    ph_collapse_opts_init(&o);
    o.map_dir = test_dir;
    expect("java 77 1.0: 1 cpu-clock:\n"
           "\t7f7be8ed5e00 [unknown] (/tmp/perf-77.map)\n"
           "\t7f7be8ed6008 [unknown] (/tmp/perf-77.map)\n"
           "\t7f7be8ed7010 [unknown] (/tmp/perf-77.map)\n"
           "\t7f7be8ed5d80 [unknown] (/tmp/perf-77.map)\n"
           "\n",
           &o, "java;long LangJava.hot_seventy_five;bare;Interpreter;long LangJava.hot_seventy_five 1\n");
    /* jit_named (the perf conversion): the frames named from the map are
     * JIT code, _[j]; one it could not name stays [perf-N.map] as it is,
     * for the report to say the map is missing */
    o.jit_named = 1;
    expect("java 77 1.0: 1 cpu-clock:\n"
           "\t7f7be8ed5e00 [unknown] (/tmp/perf-77.map)\n"
           "\t7f7be8ed9000 [unknown] (/tmp/perf-77.map)\n"
           "\t401000 main (/usr/bin/java)\n"
           "\n",
           &o, "java;main;[perf-77.map];long LangJava.hot_seventy_five_[j] 1\n");
    tu_rmdir();
}

/* Maps come only from the directory given: a map file at the path the
 * input names (the host's /tmp, seen from a container's pid) is never
 * opened, so an unrelated program's map cannot name the frames. */
static void
test_perf_map_not_from_input_path(void **state)
{
    char in[600];
    ph_collapse_opts o;

    (void)state;
    tu_mkdtemp();
    snprintf(in, sizeof in, "%s/tmp", test_dir);
    assert_int_equal(mkdir(in, 0700), 0);
    tu_write("tmp/perf-12345.map", "7f0000001000 100 planted\n");
    snprintf(in, sizeof in, "node 12345 1.0: 1 cpu-clock:\n\t7f0000001010 [unknown] (%s/tmp/perf-12345.map)\n\n",
             test_dir);
    ph_collapse_opts_init(&o);
    expect(in, &o, "node;[perf-12345.map] 1\n");
    /* and with a map dir that has no such map, neither */
    o.map_dir = "/nonexistent";
    expect(in, &o, "node;[perf-12345.map] 1\n");
    tu_rmdir();
}

/* ceil(log2(n + 1)): the most a binary search over n entries compares. */
static size_t
log_bound(size_t n)
{
    size_t k = 0;

    for (; n > 0; n >>= 1)
        k++;
    return k;
}

/* The review's map: 200,000 entries at one start (a million in the
 * review: 466 s of host time for one stop), with random call chains 100
 * deep through it, many samples repeating addresses.  Each distinct
 * address is looked up once, and a lookup compares at most log2 of the
 * map's entries (counted, not timed). */
static void
test_perf_map_hostile(void **state)
{
    enum { SAME = 200000, POOL = 3000, SAMPLES = 400, DEPTH = 100 };
    static uint64_t pool[POOL];
    static unsigned char used[POOL];
    size_t cap = (size_t)SAME * 32 + 4096, len = 0, distinct = 0;
    char *map = malloc(cap), *in, *out, path[400];
    ph_collapse_opts o;
    ph_collapse_stats st;
    uint64_t seed = 7;
    FILE *f;

    (void)state;
    assert_non_null(map);
    tu_mkdtemp();
    /* the first entry at 7f0000100000 covers 1 MiB; the rest repeat it */
    for (int k = 0; k < SAME; k++)
        len += (size_t)snprintf(map + len, cap - len, "7f0000100000 %x same%d\n", k == 0 ? 0x100000 : 0x40, k);
    for (int k = 0; k < 64; k++) /* and some code beside it */
        len += (size_t)snprintf(map + len, cap - len, "7f0000300%03x 40 other%d\n", k * 0x40, k);
    snprintf(path, sizeof path, "%s/perf-99.map", test_dir);
    assert_non_null(f = fopen(path, "w"));
    assert_int_equal(fwrite(map, 1, len, f), len);
    fclose(f);
    for (int i = 0; i < POOL; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        /* distinct by construction: i in its own 256 bytes, or at 0x...300000 + i */
        pool[i] = i % 3 ? 0x7f0000100000 + 0x100 * (uint64_t)i + (seed >> 33) % 0x100 : 0x7f0000300000 + (uint64_t)i;
    }
    in = malloc((size_t)SAMPLES * (DEPTH * 48 + 64));
    assert_non_null(in);
    len = 0;
    for (int s = 0; s < SAMPLES; s++) {
        len += (size_t)sprintf(in + len, "node 99 1.0: 1 cpu-clock:\n");
        for (int d = 0; d < DEPTH; d++) {
            size_t i;

            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            i = (seed >> 33) % POOL;
            distinct += !used[i];
            used[i] = 1;
            len += (size_t)sprintf(in + len, "\t%llx [unknown] (/tmp/perf-99.map)\n", (unsigned long long)pool[i]);
        }
        len += (size_t)sprintf(in + len, "\n");
    }
    ph_collapse_opts_init(&o);
    o.map_dir = test_dir;
    o.jit_named = 1;
    out = collapse(in, &o, 0, &st);
    assert_int_equal(st.samples, SAMPLES);
    assert_non_null(strstr(out, "same0_[j]"));
    assert_null(strstr(out, "same1_")); /* the first written names the address */
    assert_int_equal(st.map_lookups, distinct);
    print_message("%zu lookups, %zu entries compared (at most %zu each)\n", st.map_lookups, st.map_steps,
                  log_bound(SAME + 64));
    assert_true(st.map_steps <= st.map_lookups * log_bound(SAME + 64));
    free(out);
    free(in);
    free(map);
    tu_rmdir();
}

/* --inline: a function inlined into collapse_outer (the helper, built
 * -O1 -g) is read back from DWARF at some of its addresses; at every
 * address the real function comes first. */
static void
test_inline(void **state)
{
    const char *helper = "build/tests/helpers/collapse_inline";
    char cmd[512], line[256], in[65536], abs[4096], *p = in, *out;
    unsigned long addr = 0, size = 0;
    ph_collapse_opts o;
    FILE *nm;
    int inlined = 0, context = 0;

    (void)state;
    assert_non_null(realpath(helper, abs));
    snprintf(cmd, sizeof cmd, "nm -S %s", helper);
    nm = popen(cmd, "r");
    assert_non_null(nm);
    while (fgets(line, sizeof line, nm))
        if (strstr(line, " T collapse_outer\n"))
            assert_int_equal(sscanf(line, "%lx %lx", &addr, &size), 2);
    pclose(nm);
    assert_true(addr != 0 && size > 0 && size < 1000);
    /* each address of the function as its own sample: the address alone,
     * then (as perf prints run-time addresses) one DWARF cannot place,
     * found again from the symbol and offset */
    for (unsigned long off = 0; off < size; off++)
        p += sprintf(p, "tt 1 1.0: 1 e:\n\t%lx collapse_outer+0x%lx (%s)\n\n", off % 2 ? addr + off : 0x7f0000000000 + off,
                     off, abs);
    ph_collapse_opts_init(&o);
    o.inline_frames = 1;
    out = collapse(in, &o, 0, NULL);
    for (char *l = out; *l; l = strchr(l, '\n') + 1) {
        assert_true(strncmp(l, "tt;collapse_outer", 17) == 0);
        inlined += strncmp(l, "tt;collapse_outer;collapse_inlined_[i] ", 39) == 0;
    }
    assert_true(inlined == 1);
    free(out);
    o.context = 1;
    out = collapse(in, &o, 0, NULL);
    /* called at line 18; its loop is lines 9 and 10 */
    context = strstr(out, "tt;collapse_outer:collapse_inline.c:18;collapse_inlined:collapse_inline.c:9_[i] ") != NULL ||
              strstr(out, "tt;collapse_outer:collapse_inline.c:18;collapse_inlined:collapse_inline.c:10_[i] ") != NULL;
    if (!context)
        fail_msg("no inlined frame with its lines in:\n%s", out);
    free(out);
}

/* The files perf named no frame of are listed (what a second pass may
 * be given), once each, in first-seen order, bounded: not [vdso], //anon,
 * a perf map or [unknown], nor a file some of whose frames have names
 * (perf had its symbols: a stripped part is not helped by the file). */
static void
test_unnamed_dsos(void **state)
{
    ph_error_t err = NULL;
    ph_collapse *c = ph_collapse_new(NULL, &err);
    const char *in = "lang-go 9 1.0: 1 cpu-clock:\n"
                     "\t2be40 [unknown] (/usr/local/bin/lang-go)\n"
                     "\t23d5f [unknown] (/usr/local/bin/lang-go)\n"
                     "\t1 [unknown] ([vdso])\n"
                     "\t2 [unknown] (//anon)\n"
                     "\t3 [unknown] (/tmp/perf-9.map)\n"
                     "\t4 [unknown] ([unknown])\n"
                     "\t5 main (/usr/bin/named)\n"
                     "\t6 [unknown] (/lib/libz.so.1)\n"
                     "\t7 [unknown] (/usr/bin/python3)\n"
                     "\t8 _PyEval_EvalFrameDefault (/usr/bin/python3)\n"
                     "\n";
    char buf[256];

    (void)state;
    assert_non_null(c);
    assert_int_equal(ph_collapse_feed(c, in, strlen(in), &err), 0);
    assert_int_equal(ph_collapse_finish(c, &err), 0);
    assert_int_equal(ph_collapse_n_unnamed(c), 2);
    assert_string_equal(ph_collapse_unnamed(c, 0), "/usr/local/bin/lang-go");
    assert_string_equal(ph_collapse_unnamed(c, 1), "/lib/libz.so.1");
    assert_null(ph_collapse_unnamed(c, 2));
    ph_collapse_free(c);

    /* bounded: the first PH_COLLAPSE_UNNAMED_MAX */
    c = ph_collapse_new(NULL, &err);
    assert_non_null(c);
    for (int i = 0; i < PH_COLLAPSE_UNNAMED_MAX + 5; i++) {
        snprintf(buf, sizeof buf, "p 1 1.0: 1 e:\n\t1 [unknown] (/lib/l%d.so)\n\n", i);
        assert_int_equal(ph_collapse_feed(c, buf, strlen(buf), &err), 0);
    }
    assert_int_equal(ph_collapse_n_unnamed(c), PH_COLLAPSE_UNNAMED_MAX);
    assert_string_equal(ph_collapse_unnamed(c, PH_COLLAPSE_UNNAMED_MAX - 1), "/lib/l15.so");
    ph_collapse_free(c);
}

/* An interrupt ends a collapse at its next line, and its writing: a
 * hostile map can make each line slow (issue: Ctrl-C waited 281 s for
 * the whole collapse).  In a child: a caught interrupt stays caught for
 * the process's life.  The child's exit: 0, or which check failed. */
static int
interrupted_child(void)
{
    static const char sample[] = "demo 1/1 1.0: 1 cycles:\n\t 401000 main+0x0 (/usr/bin/demo)\n\n";
    ph_error_t err = NULL;
    ph_collapse *c = ph_collapse_new(NULL, &err);
    char *out = NULL;
    size_t outlen = 0;
    FILE *f;

    if (c == NULL || ph_collapse_feed(c, sample, strlen(sample), &err) != 0)
        return 1;
    signal(SIGINT, SIG_DFL);
    ph_interrupt_begin();
    raise(SIGINT); /* only a flag inside the section */
    if (ph_collapse_feed(c, sample, strlen(sample), &err) != -1)
        return 2;
    if (err == NULL || err->status != 130 || strcmp(err->msg, "interrupted by SIGINT") != 0)
        return 3;
    ph_error_free(&err);
    if (ph_collapse_get_stats(c)->samples != 1)
        return 4; /* the line after the signal was not parsed */
    f = open_memstream(&out, &outlen);
    if (ph_collapse_write(c, f, &err) != -1 || err == NULL || err->status != 130)
        return 5;
    fclose(f);
    free(out);
    ph_error_free(&err);
    ph_collapse_free(c);
    return 0;
}

static void
test_interrupted(void **state)
{
    (void)state;
    tu_in_child(interrupted_child, "the interrupted collapse");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headers_and_periods),
        cmocka_unit_test(test_byte_order),
        cmocka_unit_test(test_event_filter),
        cmocka_unit_test(test_tidy),
        cmocka_unit_test(test_unknown_and_annotations),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_line_limit),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_perf_map),
        cmocka_unit_test(test_perf_map_0x),
        cmocka_unit_test(test_perf_map_not_from_input_path),
        cmocka_unit_test(test_perf_map_hostile),
        cmocka_unit_test(test_inline),
        cmocka_unit_test(test_unnamed_dsos),
        cmocka_unit_test(test_interrupted),
        cmocka_unit_test(test_go_stripped),
    };
    return cmocka_run_group_tests_name("collapse", tests, NULL, NULL);
}
