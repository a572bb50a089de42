/* test_gopclntab.c - Go's function table reader (harness/symbol/
 * ph_gopclntab.c) on real Go programs and on tables made here.
 *
 * Real programs: the language test's Go service (tests/lang/go), built by
 * the Makefile into build/tests/go/ with this machine's golang-go: static
 * with `-ldflags="-s -w"`, a PIE the same way, and a cgo program stripped
 * by binutils' strip (as Debian's packages are).  The oracle is `go tool
 * nm -size` of the same program built with its symbols: every function
 * symbol of non-zero size is in the stripped program's table, at its
 * address and by its name, and nothing else is.  Two spellings differ by
 * design, and are compared as equal: the symbol table's ABI suffix
 * (`.abi0`, an assembly function's wrapper-free name) and the array
 * lengths the table writes as `[...]` in generated names.
 *
 * Made tables: each layout (Go 1.2, 1.16, 1.18, 1.20; 4 and 8-byte
 * pointers; both byte orders), then what a hostile file does: cut short
 * anywhere, counts and offsets past its end, addresses out of order,
 * names with no end. */
#include "test_util.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ph_gopclntab.h"

#ifndef GO_DIR
#define GO_DIR "build/tests/go"
#endif

/* ---- real programs ---------------------------------------------------------- */

typedef struct mapped {
    void *p;
    size_t len;
} mapped;

static mapped
map_file(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    mapped m = { NULL, 0 };

    if (fd < 0)
        fail_msg("%s: not built (the Makefile builds it with golang-go: make tests-build)", path);
    assert_int_equal(fstat(fd, &st), 0);
    m.len = (size_t)st.st_size;
    m.p = mmap(NULL, m.len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    assert_true(m.p != MAP_FAILED);
    return m;
}

/* NAME as the table spells it: no ABI suffix, array lengths as [...]. */
static void
normalize(const char *name, char *out, size_t cap)
{
    size_t n = 0;

    for (const char *p = name; *p && n + 6 < cap; p++) {
        if (*p == '[' && p[1] >= '0' && p[1] <= '9') {
            const char *q = p + 1;
            while (*q >= '0' && *q <= '9')
                q++;
            if (*q == ']') {
                memcpy(out + n, "[...]", 5);
                n += 5;
                p = q;
                continue;
            }
        }
        out[n++] = *p;
    }
    out[n] = '\0';
    if (n > 5 && strcmp(out + n - 5, ".abi0") == 0)
        out[n - 5] = '\0';
}

/* Check the stripped program STRIPPED against NM (`go tool nm -size` of
 * it built with symbols).  ALL: the table holds nothing the symbols do
 * not (a cgo program's symbols also name C functions the table does not
 * have, so not there).  Returns how many functions matched. */
static size_t
check_against_nm(const char *stripped, const char *nm, int all)
{
    mapped m = map_file(stripped);
    ph_gopclntab t;
    FILE *f = fopen(nm, "r");
    char line[4096];
    size_t matched = 0, main_funcs = 0, by_name = 0;

    assert_non_null(f);
    assert_int_equal(ph_gopclntab_elf(&t, m.p, m.len), 0);
    assert_true(t.version >= 118); /* golang-go is 1.19 or newer here */
    while (fgets(line, sizeof line, f)) {
        unsigned long long addr, size;
        char type, name[2048], want[2048];
        uint64_t start = 0, end = 0;
        const char *got;
        int at = 0;

        /* `ADDR SIZE TYPE NAME`, the name to the line's end (spaces in it) */
        if (sscanf(line, " %llx %llu %c %n", &addr, &size, &type, &at) != 3 || at == 0 || (type != 'T' && type != 't') ||
            size == 0)
            continue;
        snprintf(name, sizeof name, "%.*s", (int)strcspn(line + at, "\n"), line + at);
        got = ph_gopclntab_find(&t, addr, &start, &end);
        if (got == NULL && !all)
            continue; /* C code, outside Go's table */
        assert_non_null(got);
        normalize(name, want, sizeof want);
        if (strcmp(got, want) != 0)
            fail_msg("%s at 0x%llx: the table says `%s`, the symbols `%s`", stripped, addr, got, want);
        assert_int_equal(start, addr);
        assert_true(end >= addr + size); /* the table's function covers the symbol, padding too */
        assert_string_equal(ph_gopclntab_find(&t, addr + size - 1, NULL, NULL), got);
        matched++;
        if (strcmp(got, "main.hot_seventy_five") == 0 || strcmp(got, "main.cool_twenty_five") == 0)
            main_funcs++;
        /* by name too, as the sampler finds runtime.asyncPreempt */
        if (strcmp(want, "runtime.asyncPreempt") == 0 || strcmp(want, "main.hot_seventy_five") == 0) {
            uint64_t s = 0, e = 0;

            assert_int_equal(ph_gopclntab_by_name(&t, want, &s, &e), 0);
            assert_int_equal(s, addr);
            assert_int_equal(e, end);
            by_name++;
        }
    }
    fclose(f);
    assert_int_equal(main_funcs, 2); /* the service's own two */
    assert_int_equal(by_name, 2);
    assert_int_equal(ph_gopclntab_by_name(&t, "main.no_such_function", NULL, NULL), -1);
    if (all)
        assert_int_equal(matched, t.nfunc);
    munmap(m.p, m.len);
    return matched;
}

static void
test_static_sw(void **state)
{
    (void)state;
    assert_true(check_against_nm(GO_DIR "/static-sw", GO_DIR "/static.nm", 1) > 1000);
}

static void
test_pie_sw(void **state)
{
    (void)state;
    assert_true(check_against_nm(GO_DIR "/pie-sw", GO_DIR "/pie.nm", 1) > 1000);
}

static void
test_cgo_strip(void **state)
{
    (void)state;
    assert_true(check_against_nm(GO_DIR "/cgo-strip", GO_DIR "/cgo.nm", 0) > 1000);
}

/* The stripped program really has no symbols: what names it is the table. */
static void
test_no_symtab(void **state)
{
    (void)state;
    mapped m = map_file(GO_DIR "/static-sw");

    assert_null(memmem(m.p, m.len, ".symtab", 8));
    munmap(m.p, m.len);
}

/* ---- made tables ------------------------------------------------------------ */

typedef struct fn {
    uint64_t start;
    const char *name;
} fn;

static const fn three[] = { { 0x401000, "main.main" }, { 0x401040, "runtime.goexit" }, { 0x4010a0, "a/b.(*T).M" } };
#define END 0x401100

typedef struct buf {
    unsigned char b[4096];
    size_t n;
    int be;
} buf;

static void
put(buf *b, size_t at, unsigned n, uint64_t v)
{
    assert_true(at + n <= sizeof b->b);
    for (unsigned i = 0; i < n; i++)
        b->b[at + (b->be ? n - 1 - i : i)] = (unsigned char)(v >> (8 * i));
    if (at + n > b->n)
        b->n = at + n;
}

/* A table of layout VERSION (12, 116, 118, 120) naming THREE; where its
 * parts are in *FUNCTAB (the function table) and *NAMES. */
static void
make_table(buf *b, int version, unsigned ptr, int be, size_t *functab_at, size_t *names_at)
{
    unsigned words = version == 12 ? 1 : version == 116 ? 7 : 8, field = version >= 118 ? 4 : ptr;
    uint32_t magic = version == 12 ? 0xfffffffb : version == 116 ? 0xfffffffa : version == 118 ? 0xfffffff0 : 0xfffffff1;
    size_t hdr = 8 + words * ptr, names, functab, funcdata, fdata, nameoff[3], n = 0;
    uint64_t text = three[0].start;

    memset(b, 0, sizeof *b);
    b->be = be;
    put(b, 0, 4, magic);
    b->b[6] = 1;
    b->b[7] = (unsigned char)ptr;
    /* 1.2: the function table right after the header, each function's
     * data, then the names (at offsets from the table's start); later
     * ones: the names (at offsets from the names table's start), then
     * the function table and each function's data */
    functab = version == 12 ? hdr : 0;
    names = version == 12 ? hdr + 7 * field + 3 * 16 : hdr;
    for (int i = 0; i < 3; i++) {
        nameoff[i] = n + (version == 12 ? names : 0);
        memcpy(b->b + names + n, three[i].name, strlen(three[i].name) + 1);
        n += strlen(three[i].name) + 1;
        if (names + n > b->n)
            b->n = names + n;
    }
    if (version != 12)
        functab = (names + n + 7) & ~(size_t)7;
    funcdata = version == 12 ? 0 : functab;
    fdata = functab + 7 * field;
    for (int i = 0; i < 3; i++) {
        size_t at = fdata + (size_t)i * 16;
        uint64_t entry = version >= 118 ? three[i].start - text : three[i].start;

        put(b, functab + 2 * i * field, field, entry);
        put(b, functab + (2 * i + 1) * field, field, at - funcdata);
        put(b, at, version >= 118 ? 4 : ptr, entry);
        put(b, at + (version >= 118 ? 4 : ptr), 4, nameoff[i]);
    }
    put(b, functab + 6 * field, field, version >= 118 ? END - text : END);
    put(b, 8, ptr, 3);
    if (version == 116) {
        put(b, 8 + 2 * ptr, ptr, names);
        put(b, 8 + 6 * ptr, ptr, functab);
    } else if (version >= 118) {
        put(b, 8 + 2 * ptr, ptr, text);
        put(b, 8 + 3 * ptr, ptr, names);
        put(b, 8 + 7 * ptr, ptr, functab);
    }
    if (functab_at)
        *functab_at = functab;
    if (names_at)
        *names_at = names;
}

static void
test_layouts(void **state)
{
    static const int versions[] = { 12, 116, 118, 120 };

    (void)state;
    for (size_t v = 0; v < 4; v++)
        for (unsigned ptr = 4; ptr <= 8; ptr += 4)
            for (int be = 0; be < 2; be++) {
                buf b;
                ph_gopclntab t;
                uint64_t s = 0, e = 0;

                make_table(&b, versions[v], ptr, be, NULL, NULL);
                print_message("Go %d, %u-byte pointers, %s\n", versions[v], ptr, be ? "big-endian" : "little-endian");
                assert_int_equal(ph_gopclntab_parse(&t, b.b, b.n, 0), 0);
                assert_int_equal(t.version, versions[v]);
                assert_int_equal(t.nfunc, 3);
                assert_null(ph_gopclntab_find(&t, three[0].start - 1, NULL, NULL));
                for (int i = 0; i < 3; i++) {
                    uint64_t next = i < 2 ? three[i + 1].start : END;

                    assert_string_equal(ph_gopclntab_find(&t, three[i].start, &s, &e), three[i].name);
                    assert_int_equal(s, three[i].start);
                    assert_int_equal(e, next);
                    assert_string_equal(ph_gopclntab_find(&t, next - 1, NULL, NULL), three[i].name);
                }
                assert_null(ph_gopclntab_find(&t, END, NULL, NULL));
            }
}

/* 1.18+ with a text start of 0 in the header (a linker leaving it to a
 * relocation): the .text address given is used. */
static void
test_text_start_zero(void **state)
{
    buf b;
    ph_gopclntab t;

    (void)state;
    make_table(&b, 120, 8, 0, NULL, NULL);
    put(&b, 8 + 2 * 8, 8, 0);
    assert_int_equal(ph_gopclntab_parse(&t, b.b, b.n, three[0].start), 0);
    assert_string_equal(ph_gopclntab_find(&t, three[1].start, NULL, NULL), three[1].name);
}

/* Every length short of the whole: either not a table, or a table whose
 * answers all lie inside the bytes given (the names last, so a cut one
 * is NULL, never read past). */
static void
test_cut_short(void **state)
{
    static const int versions[] = { 12, 116, 118, 120 };

    (void)state;
    for (size_t v = 0; v < 4; v++) {
        buf b;

        make_table(&b, versions[v], 8, 0, NULL, NULL);
        for (size_t len = 0; len < b.n; len++) {
            unsigned char *copy = malloc(len ? len : 1);
            ph_gopclntab t;

            memcpy(copy, b.b, len);
            if (ph_gopclntab_parse(&t, copy, len, 0) == 0)
                for (int i = 0; i < 3; i++) {
                    const char *name = ph_gopclntab_func(&t, (size_t)i, NULL, NULL);
                    if (name != NULL)
                        assert_true(name >= (const char *)copy && name + strlen(name) < (const char *)copy + len);
                }
            free(copy);
        }
    }
}

static void
test_hostile(void **state)
{
    buf b, bad;
    size_t functab, names;
    ph_gopclntab t;

    (void)state;
    make_table(&b, 118, 8, 0, &functab, &names);
    assert_int_equal(ph_gopclntab_parse(&t, b.b, b.n, 0), 0);

    bad = b; /* more functions than the section holds */
    put(&bad, 8, 8, 1000);
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);
    put(&bad, 8, 8, UINT64_MAX / 2);
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);
    put(&bad, 8, 8, 0);
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);

    bad = b; /* the function table past the end */
    put(&bad, 8 + 7 * 8, 8, bad.n - 4);
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);
    put(&bad, 8 + 7 * 8, 8, UINT64_MAX - 3);
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);

    bad = b; /* a text start where an entry would wrap */
    put(&bad, 8 + 2 * 8, 8, UINT64_MAX - 16);
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);

    bad = b; /* addresses out of order */
    put(&bad, functab + 2 * 4, 4, 0xb0); /* past the next one's 0xa0 */
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);

    bad = b; /* a function's data past the end: that function has no name, the others do */
    put(&bad, functab + 1 * 4, 4, bad.n);
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), 0);
    assert_null(ph_gopclntab_find(&t, three[0].start, NULL, NULL));
    assert_string_equal(ph_gopclntab_find(&t, three[1].start, NULL, NULL), three[1].name);
    put(&bad, functab + 1 * 4, 4, UINT32_MAX);
    assert_null(ph_gopclntab_find(&t, three[0].start, NULL, NULL));

    bad = b; /* a name past the end, before the names, or with no NUL */
    put(&bad, functab + 7 * 4 + 4, 4, bad.n);
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), 0);
    assert_null(ph_gopclntab_find(&t, three[0].start, NULL, NULL));
    put(&bad, functab + 7 * 4 + 4, 4, (uint32_t)-8);
    assert_null(ph_gopclntab_find(&t, three[0].start, NULL, NULL));
    memset(bad.b + bad.n - 8, 'x', 8);
    put(&bad, functab + 7 * 4 + 4, 4, bad.n - 8 - names);
    assert_null(ph_gopclntab_find(&t, three[0].start, NULL, NULL));

    bad = b; /* not a table: a wrong magic, pad, quantum or pointer size */
    bad.b[0] = 0xfe;
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);
    bad = b;
    bad.b[4] = 1;
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);
    bad = b;
    bad.b[6] = 3;
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);
    bad = b;
    bad.b[7] = 2;
    assert_int_equal(ph_gopclntab_parse(&t, bad.b, bad.n, 0), -1);
    assert_null(ph_gopclntab_find(&t, three[0].start, NULL, NULL)); /* a failed parse leaves nothing to find */
}

/* An ELF file whose section headers or names lie outside it is no table. */
static void
test_elf_hostile(void **state)
{
    mapped m = map_file(GO_DIR "/static-sw");
    unsigned char *copy = malloc(m.len);
    ph_gopclntab t;
    uint64_t shoff;

    (void)state;
    uint64_t a = 0, phoff;

    memcpy(copy, m.p, m.len);
    assert_int_equal(ph_gopclntab_elf(&t, copy, m.len), 0);
    /* a file offset to its address (the first segment: offset 0 at
     * 0x400000, readelf -l), and not past the headers */
    assert_int_equal(ph_gopclntab_elf_addr(copy, m.len, 0x1234, &a), 0);
    assert_int_equal(a, 0x401234);
    assert_int_equal(ph_gopclntab_elf_addr(copy, m.len, m.len + 1, &a), -1);
    memcpy(&phoff, copy + 0x20, 8);
    assert_int_equal(ph_gopclntab_elf_addr(copy, (size_t)phoff + 10, 0x1234, &a), -1);
    memcpy(&shoff, copy + 0x28, 8);
    assert_int_equal(ph_gopclntab_elf(&t, copy, (size_t)shoff + 64), -1); /* the headers cut */
    assert_int_equal(ph_gopclntab_elf(&t, copy, 63), -1);
    copy[0x3e] = 0xff; /* the names' section past the last */
    assert_int_equal(ph_gopclntab_elf(&t, copy, m.len), -1);
    memcpy(copy, m.p, m.len);
    shoff = m.len - 10;
    memcpy(copy + 0x28, &shoff, 8);
    assert_int_equal(ph_gopclntab_elf(&t, copy, m.len), -1);
    free(copy);
    munmap(m.p, m.len);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_sw),   cmocka_unit_test(test_pie_sw),     cmocka_unit_test(test_cgo_strip),
        cmocka_unit_test(test_no_symtab),   cmocka_unit_test(test_layouts),    cmocka_unit_test(test_text_start_zero),
        cmocka_unit_test(test_cut_short),   cmocka_unit_test(test_hostile),    cmocka_unit_test(test_elf_hostile),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
