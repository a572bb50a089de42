/* collapse_inline.c - a function inlined into another, with debug info:
 * what `profharness collapse perf --inline` reads back from DWARF
 * (tests/unit/test_collapse.c). */
static volatile unsigned long sink;

static inline __attribute__((always_inline)) void
collapse_inlined(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink = sink * 31 + i;
}

__attribute__((noinline)) void collapse_outer(unsigned long n);

__attribute__((noinline)) void
collapse_outer(unsigned long n)
{
    collapse_inlined(n);
    sink ^= n;
}

int
main(int argc, char **argv)
{
    (void)argv;
    collapse_outer((unsigned long)argc * 1000);
    return 0;
}
