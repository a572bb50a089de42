/* test_sampler_syms.c - the sampler's symbol tables (ph_sampler_out.c,
 * compiled in here: its functions are hidden in the library): what a
 * module's function table keeps of the host's memory, and that the names
 * read through it are the functions'. */
#include "test_util.h"

#include <malloc.h>

#include "../../harness/sampler/ph_sampler_out.c"

/* libc's module in S: its functions read by naming one of them. */
static elfmod *
libc_module(phs_symbols *s)
{
    const phs_frame *fr = NULL;
    int mod = -1;

    assert_true(phs_frames(s, (uintptr_t)&qsort + 1, &fr, &mod) >= 1);
    assert_true(mod >= 0);
    assert_string_equal(fr[0].name, "qsort");
    return &s->mods[mod];
}

/* A function is kept in 4 bytes (its symbol's number), not 16 (node 20's
 * 97,000 functions: 0.4 MB rather than 1.5): libc's table, by the
 * allocator's own count of the block. */
static void
test_function_table_bytes(void **state)
{
    phs_symbols *s = phs_symbols_new(0, NULL);
    elfmod *m;
    size_t bytes;

    (void)state;
    assert_non_null(s);
    m = libc_module(s);
    assert_true(m->n_syms > 1000);
    bytes = malloc_usable_size(m->syms);
    print_message("# libc: %zu functions, %zu bytes (%.1f each)\n", m->n_syms, bytes,
                  (double)bytes / (double)m->n_syms);
    assert_true(bytes <= 4 * m->n_syms + 4096);
    phs_symbols_free(s);
}

/* libc's table is in the order of the functions' starts, and every
 * function names its own start and its last byte, aliases aside: the
 * start, size and name read back from the file. */
static void
test_function_names_from_the_file(void **state)
{
    phs_symbols *s = phs_symbols_new(0, NULL);
    elfmod *m;
    size_t wrong = 0, checked = 0;

    (void)state;
    assert_non_null(s);
    m = libc_module(s);
    for (size_t k = 0; k < m->n_syms; k++) {
        const ElfW(Sym) *es = sym_of(m, &m->syms[k]);
        const char *want = m->tab_str[(m->syms[k].sym & SYM_TAB_BIT) != 0] + es->st_name, *got;
        uint32_t start = sym_start(m, &m->syms[k]);
        uintptr_t pc = m->bias + m->sym_base + start;

        wrong += k > 0 && sym_start(m, &m->syms[k - 1]) > start;
        if ((k > 0 && sym_start(m, &m->syms[k - 1]) == start) ||
            (k + 1 < m->n_syms && sym_start(m, &m->syms[k + 1]) == start) || es->st_size == 0)
            continue; /* aliases: any of them may answer */
        got = symtab_name(s, m, pc);
        wrong += got == NULL || strcmp(got, phs_demangle(s, want)) != 0;
        got = symtab_name(s, m, pc + es->st_size - 1);
        wrong += got == NULL || strcmp(got, phs_demangle(s, want)) != 0;
        checked++;
    }
    print_message("# %zu functions checked\n", checked);
    assert_true(checked > 1000);
    assert_int_equal(wrong, 0);
    phs_symbols_free(s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_function_table_bytes),
        cmocka_unit_test(test_function_names_from_the_file),
    };
    return cmocka_run_group_tests_name("sampler_syms", tests, NULL, NULL);
}
