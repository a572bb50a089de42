/* test_sampler_cfi.c - the sampler's unwind tables (ph_sampler_cfi.c,
 * compiled in here: its functions are hidden in the library), checked
 * against the plain answer: for every code address of every object this
 * process has loaded, the row phs_cfi_find returns (through the block
 * index and the object hint) is the last row at or below it, found by a
 * binary search of all the object's rows; addresses outside every object
 * have none.  Objects side by side and the last, partial block of an
 * object's code, on a table built by hand.  And the rows make sense for
 * code we know: a function's first instruction has CFA = rsp + 8 and the
 * return address just below.  Built with AddressSanitizer (the Makefile):
 * an index read one entry past its end fails. */
#include "test_util.h"

#include "../../harness/sampler/ph_sampler_cfi.c"

/* ph_sampler.c's guard against fork: not needed here. */
int
phs_dl_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    return dl_iterate_phdr(cb, data);
}

/* The allocator's bytes in use (the test is built with AddressSanitizer,
 * which keeps its own count; its header is not installed here). */
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t
allocated_bytes(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
static size_t
allocated_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}
#endif

#if defined(__x86_64__)

/* Row R's offset from O's bias: its block (the last whose first row is at
 * or below R) and its place in it; 0 below the code, UINT64_MAX past it. */
static uint64_t
row_loc(const cfi_obj *o, size_t r)
{
    size_t lo = 0, hi = o->n_index + 1;

    if (r < first_row(o, 0))
        return 0;
    if (r >= first_row(o, o->n_index))
        return UINT64_MAX;
    while (lo < hi) { /* the first block whose first row is past R */
        size_t mid = lo + (hi - lo) / 2;

        if (first_row(o, mid) <= r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint64_t)(o->lo - o->bias) + ((uint64_t)(lo - 1) << BLOCK_SHIFT) + o->at[r];
}

/* The row a plain search of all of O's rows gives for PC. */
static const phs_cfi_rule *
plain_find(const cfi_obj *o, uintptr_t pc)
{
    uint64_t off = pc - o->bias;
    size_t lo = 0, hi = o->n;
    const phs_cfi_rule *r;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (row_loc(o, mid) <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    assert_true(row_rule(o, lo - 1) < o->n_rules);
    r = &o->rules[row_rule(o, lo - 1)];
    return r->cfa_reg == PHS_CFA_NONE ? NULL : r;
}

static void
test_every_address_finds_its_row(void **state)
{
    const phs_cfi *t;
    size_t wrong = 0, checked = 0, hint = 0, with_rows = 0;

    (void)state;
    phs_cfi_refresh();
    t = phs_cfi_enter();
    assert_non_null(t);
    assert_true(t->n >= 2); /* this program and libc at least */
    for (size_t i = 0; i < t->n; i++) {
        const cfi_obj *o = t->spans[i].obj;

        with_rows += o->n > 0;
        /* every address, in turn from the object before and after: the
         * hint is then sometimes right, sometimes stale */
        for (uintptr_t pc = o->lo; pc < o->hi; pc++) {
            size_t h = (pc & 1) ? hint : (i + 1) % t->n;

            wrong += phs_cfi_find(t, pc, &h) != plain_find(o, pc);
            hint = h;
            checked++;
        }
        /* around the object: nothing, or the neighbour's */
        if (i + 1 == t->n || t->spans[i + 1].lo > o->hi) {
            size_t h = i;
            assert_null(phs_cfi_find(t, o->hi, &h));
        }
    }
    phs_cfi_leave();
    print_message("# %zu objects, %zu addresses checked\n", t->n, checked);
    assert_true(with_rows >= 2);
    if (wrong)
        fail_msg("%zu of %zu addresses got another row than a plain search gives", wrong, checked);
}

/* Two objects side by side, built by hand (through compact_rows): an
 * address at the end of the first is the second's, whatever the hint
 * says; the last partial block of code has its index entry; a rule met
 * twice is kept once and both its rows find it. */
static void
test_adjacent_objects_and_last_block(void **state)
{
    const phs_cfi_row ra[] = { { 0x000, { 8, -8, 0, PHS_CFA_SP, 0 } }, { 0x010, { 16, -8, 0, PHS_CFA_SP, 0 } },
                               { 0x100, { 8, -8, 0, PHS_CFA_SP, 0 } }, { 0x2f0, { 24, -8, -16, PHS_CFA_SP, 0 } } };
    const phs_cfi_row rb[] = { { 0x000, { 32, -8, 0, PHS_CFA_SP, 0 } }, { 0x100, { 0, 0, 0, PHS_CFA_NONE, 0 } } };
    cfi_obj a = { .bias = 0x10000, .lo = 0x10000, .hi = 0x10300 }, b = { .bias = 0x10300, .lo = 0x10300, .hi = 0x10480 };
    struct {
        size_t n;
        cfi_span spans[2];
    } table = { 2, { { a.lo, a.hi, &a }, { b.lo, b.hi, &b } } };
    const phs_cfi *t = (const phs_cfi *)(const void *)&table;
    const phs_cfi_rule *r;
    size_t h;

    (void)state;
    assert_int_equal(compact_rows(&a, ra, 4), 0);
    assert_int_equal(compact_rows(&b, rb, 2), 0);
    assert_int_equal(a.n, 4);
    assert_int_equal(a.n_rules, 3); /* CFA = rsp + 8 once, for two rows */
    h = 0;
    r = phs_cfi_find(t, 0x102ff, &h);
    assert_non_null(r);
    assert_int_equal(r->cfa_off, 24);
    assert_int_equal(r->fp_off, -16);
    h = 0;
    assert_ptr_equal(phs_cfi_find(t, 0x10005, &h), phs_cfi_find(t, 0x10100, &h)); /* the shared rule */
    assert_int_equal(phs_cfi_find(t, 0x10100, &h)->cfa_off, 8);
    assert_int_equal(phs_cfi_find(t, 0x100ff, &h)->cfa_off, 16);
    h = 0; /* the hint says the first object: the address is the second's */
    r = phs_cfi_find(t, 0x10300, &h);
    assert_non_null(r);
    assert_int_equal(r->cfa_off, 32);
    assert_int_equal(h, 1);
    h = 1;
    assert_int_equal(phs_cfi_find(t, 0x102ff, &h)->cfa_off, 24);
    h = 1;
    assert_null(phs_cfi_find(t, 0x10400, &h)); /* a row without a rule */
    h = 1;
    assert_int_equal(phs_cfi_find(t, 0x103ff, &h)->cfa_off, 32);
    h = 0; /* in the last, partial block */
    assert_null(phs_cfi_find(t, 0x1047f, &h));
    h = 1;
    assert_null(phs_cfi_find(t, 0x10480, &h)); /* past every object */
    assert_null(phs_cfi_find(t, 0xffff, &h));
    clear_rows(&a);
    clear_rows(&b);
}

/* Past 256 distinct rules a row's number takes a second byte: 300 rules,
 * one a row, each row found with its own; rows on either side of a block
 * boundary and a block without rows (its addresses take the row before). */
static void
test_many_rules_and_empty_blocks(void **state)
{
    enum { N = 300 };
    phs_cfi_row in[N];
    cfi_obj o = { .bias = 0x40000, .lo = 0x40000, .hi = 0x40000 + N * 0x80 + 0x400 };
    struct {
        size_t n;
        cfi_span spans[1];
    } table = { 1, { { o.lo, o.hi, &o } } };
    const phs_cfi *t = (const phs_cfi *)(const void *)&table;
    size_t h = 0, wrong = 0;

    (void)state;
    for (int i = 0; i < N; i++) /* every 0x80 bytes, but none from 0x2000 to 0x2400 */
        in[i] = (phs_cfi_row){ (uint32_t)(i * 0x80 + (i >= 0x40 ? 0x400 : 0)), { 8 + 8 * i, -8, 0, PHS_CFA_SP, 0 } };
    assert_int_equal(compact_rows(&o, in, N), 0);
    assert_int_equal(o.n_rules, N);
    assert_non_null(o.rule_hi);
    for (int i = 0; i < N; i++) {
        uintptr_t first = o.bias + in[i].loc, last = i + 1 < N ? o.bias + in[i + 1].loc - 1 : o.hi - 1;
        const phs_cfi_rule *a = phs_cfi_find(t, first, &h), *z = phs_cfi_find(t, last, &h);

        wrong += a == NULL || a->cfa_off != 8 + 8 * i || z == NULL || z->cfa_off != 8 + 8 * i;
    }
    assert_int_equal(wrong, 0);
    assert_int_equal(phs_cfi_find(t, 0x40000 + 0x2200, &h)->cfa_off, 8 + 8 * 0x3f); /* the empty blocks */
    clear_rows(&o);
}

/* A function's first instruction: the call just pushed the return
 * address, so CFA = rsp + 8 and the return address is at CFA - 8. */
static void
test_function_entry_rule(void **state)
{
    const phs_cfi *t;
    const phs_cfi_rule *r;
    size_t hint = 0;

    (void)state;
    phs_cfi_refresh();
    t = phs_cfi_enter();
    r = phs_cfi_find(t, (uintptr_t)&test_function_entry_rule, &hint);
    assert_non_null(r);
    assert_int_equal(r->cfa_reg, PHS_CFA_SP);
    assert_int_equal(r->cfa_off, 8);
    assert_int_equal(r->ra_off, -8);
    r = phs_cfi_find(t, (uintptr_t)&qsort, &hint); /* libc's, through the hint's miss */
    assert_non_null(r);
    assert_int_equal(r->cfa_reg, PHS_CFA_SP);
    assert_int_equal(r->cfa_off, 8);
    phs_cfi_leave();
}

/* libc's loaded object, for test_eh_frame_pages_dropped. */
typedef struct found {
    struct dl_phdr_info info;
    int ok;
} found;

static int
libc_cb(struct dl_phdr_info *info, size_t size, void *ud)
{
    found *f = ud;

    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so")) {
        f->info = *info;
        f->ok = 1;
        return 1;
    }
    return 0;
}

/* Pages of [LO, HI) present in this process (/proc/self/pagemap bit 63). */
static size_t
present_pages(uintptr_t lo, uintptr_t hi)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    size_t n = 0;
    FILE *f = fopen("/proc/self/pagemap", "rb");

    assert_non_null(f);
    for (uintptr_t a = lo; a < hi; a += page) {
        uint64_t e = 0;

        assert_int_equal(fseeko(f, (off_t)(a / page * 8), SEEK_SET), 0);
        assert_int_equal(fread(&e, sizeof e, 1, f), 1);
        n += (e >> 63) & 1;
    }
    fclose(f);
    return n;
}

/* Once an object's rows are built, the pages of its .eh_frame that we read
 * (whole pages inside it) are no longer in the process's memory: libc's
 * here, every page touched first, rows built afresh. */
static void
test_eh_frame_pages_dropped(void **state)
{
    found f = { .ok = 0 };
    const ElfW(Phdr) *eh = NULL;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), frame, lo, hi;
    const uint8_t *p;
    build b = { 0 };
    size_t saved = C.n_objs, touched;
    volatile uint8_t sink = 0;

    (void)state;
    dl_iterate_phdr(libc_cb, &f);
    assert_true(f.ok);
    for (int i = 0; i < f.info.dlpi_phnum; i++)
        if (f.info.dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = &f.info.dlpi_phdr[i];
    assert_non_null(eh);
    {
        const uint8_t *hdr = (const uint8_t *)(f.info.dlpi_addr + eh->p_vaddr);
        rd r = { hdr, hdr + 64, 0 };
        uint8_t enc;

        rd_u(&r, 1);
        enc = (uint8_t)rd_u(&r, 1);
        rd_u(&r, 2);
        frame = rd_ptr(&r, enc);
        assert_false(r.bad);
    }
    /* its end: the terminator after the last entry, every page read */
    for (p = (const uint8_t *)frame; *(const uint32_t *)p != 0; p += 4 + *(const uint32_t *)p)
        sink ^= *p;
    lo = (frame + page - 1) & ~(page - 1);
    hi = (uintptr_t)p & ~(page - 1);
    for (uintptr_t a = lo; a < hi; a += page)
        sink ^= *(const volatile uint8_t *)a;
    (void)sink;
    touched = present_pages(lo, hi);
    print_message("# libc's .eh_frame: %zu whole pages, %zu present before\n", (size_t)((hi - lo) / page), touched);
    assert_true(hi > lo);
    assert_int_equal(touched, (hi - lo) / page);
    C.n_objs = 0; /* nothing to reuse: libc's rows are built again */
    assert_int_equal(object_cb(&f.info, sizeof f.info, &b), 0);
    C.n_objs = saved;
    assert_int_equal(b.n, 1);
    assert_true(b.objs[0]->n > 1000);
    assert_int_equal(present_pages(lo, hi), 0);
    free_obj(b.objs[0]);
    free(b.objs);
}

/* What an object's rows keep of the host's memory once built: libc's
 * rows built afresh, the allocator's bytes in use before and after (the
 * build's buffers freed): at most 3 bytes a row (2 with 256 rules or
 * fewer), 2 a block of code and 4 every 64 blocks, and the rules. */
static void
test_rows_bytes(void **state)
{
    found f = { .ok = 0 };
    build b = { 0 };
    size_t saved = C.n_objs, before, after, n, bound;
    const cfi_obj *o;

    (void)state;
    dl_iterate_phdr(libc_cb, &f);
    assert_true(f.ok);
    C.n_objs = 0; /* nothing to reuse: libc's rows are built again */
    before = allocated_bytes();
    assert_int_equal(object_cb(&f.info, sizeof f.info, &b), 0);
    after = allocated_bytes();
    C.n_objs = saved;
    assert_int_equal(b.n, 1);
    o = b.objs[0];
    n = o->n;
    assert_true(n > 1000);
    bound = (o->n_rules > 256 ? 3 : 2) * n + 2 * (o->n_index + 1) + 4 * ((o->n_index >> 6) + 1) +
            (o->n_rules > 32 ? 2 * o->n_rules : 64) * sizeof(phs_cfi_rule) +
            sizeof *o + 32 * sizeof(void *) /* the list B */;
    print_message("# libc: %zu rows, %zu rules, %zu blocks: %zu bytes kept (%.2f a row), bound %zu\n", n, o->n_rules,
                  o->n_index, after - before, (double)(after - before) / (double)n, bound);
    assert_true(after - before <= bound);
    free_obj(b.objs[0]);
    free(b.objs);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_address_finds_its_row),
        cmocka_unit_test(test_adjacent_objects_and_last_block),
        cmocka_unit_test(test_many_rules_and_empty_blocks),
        cmocka_unit_test(test_function_entry_rule),
        cmocka_unit_test(test_eh_frame_pages_dropped),
        cmocka_unit_test(test_rows_bytes),
    };
    return cmocka_run_group_tests_name("sampler_cfi", tests, NULL, NULL);
}

#else

int
main(void)
{
    printf("[==========] 0 test(s) run.\n[  PASSED  ] 0 test(s).\n");
    return 0;
}

#endif
