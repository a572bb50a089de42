/* fuzz_gopclntab.c - libFuzzer target for Go's function table reader
 * (ph_gopclntab_parse, ph_gopclntab_elf, ph_gopclntab_elf_addr): the program is the service's,
 * so untrusted, and read in the sampler's writer inside the service.
 * Each input is read from a heap copy of exactly its size (ASan sees one
 * byte past it):
 *   - the first byte's low bit 0: the rest is a .gopclntab section, its
 *     .text address (for a 1.18+ header that gives none) 0x401000;
 *   - 1: the rest is a whole ELF file.
 * Beyond "no crash, no leak, no undefined behaviour":
 *   - each answer is the same on a second call (pure);
 *   - a table not read is empty: nothing is found in it;
 *   - a table read has functions in address order, each ending where the
 *     next starts; every name returned ends (its NUL) inside the input;
 *   - a lookup at a function's first address answers a function starting
 *     there (the last of several that start there: the one covering it),
 *     with the name function-by-index gives; nothing is found before the
 *     first function or at the last one's end.
 * The seeds are tables of each layout made by make-gopclntab-seeds.py,
 * bare and in a small ELF file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ph_gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_name(const char *name, const unsigned char *b, size_t len)
{
    if (name == NULL)
        return;
    if ((const unsigned char *)name < b || (const unsigned char *)name >= b + len ||
        memchr(name, '\0', len - (size_t)((const unsigned char *)name - b)) == NULL)
        abort();
}

static void
check(const ph_gopclntab *t, int rc, const unsigned char *b, size_t len)
{
    uint64_t first = 0, last = 0, prev_end = 0;
    size_t n;

    if (rc != 0) {
        if (rc != -1 || t->nfunc != 0 || ph_gopclntab_find(t, 0, NULL, NULL) != NULL ||
            ph_gopclntab_func(t, 0, NULL, NULL) != NULL)
            abort();
        return;
    }
    if (t->nfunc == 0)
        abort();
    /* every function when few, else the first and last 256 */
    n = t->nfunc;
    for (size_t k = 0; k < n && k < 512; k++) {
        size_t i = k < 256 ? k : n - 512 + k;
        uint64_t s = 1, e = 0, s2 = 0, e2 = 0;
        const char *name = ph_gopclntab_func(t, i, &s, &e), *found;

        if (n > 512 && k == 256)
            prev_end = 0;
        check_name(name, b, len);
        if (e < s || (i > 0 && prev_end != 0 && s != prev_end))
            abort();
        prev_end = e;
        if (i == 0)
            first = s;
        if (i == n - 1)
            last = e;
        if (s == e)
            continue;
        found = ph_gopclntab_find(t, s, &s2, &e2);
        check_name(found, b, len);
        if (s2 != s || e2 <= s)
            abort();
        if (e2 == e && found != name)
            abort();
    }
    if (ph_gopclntab_func(t, n, NULL, NULL) != NULL)
        abort();
    if ((first > 0 && ph_gopclntab_find(t, first - 1, NULL, NULL) != NULL) ||
        ph_gopclntab_find(t, last, NULL, NULL) != NULL)
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_gopclntab t, again;
    unsigned char *b;
    size_t len;
    int rc;

    if (size == 0)
        return 0;
    len = size - 1;
    if ((b = malloc(len ? len : 1)) == NULL)
        return 0;
    memcpy(b, data + 1, len);
    if ((data[0] & 1) == 0) {
        rc = ph_gopclntab_parse(&t, b, len, 0x401000);
        if (ph_gopclntab_parse(&again, b, len, 0x401000) != rc || memcmp(&t, &again, sizeof t) != 0)
            abort();
    } else {
        uint64_t addr = 0;

        rc = ph_gopclntab_elf(&t, b, len);
        if (ph_gopclntab_elf(&again, b, len) != rc || memcmp(&t, &again, sizeof t) != 0)
            abort();
        /* a file offset to an address: within bounds whatever the headers */
        for (uint64_t off = 0; off < 3 * (uint64_t)len + 2; off += len / 4 + 1)
            if (ph_gopclntab_elf_addr(b, len, off, &addr) < -1)
                abort();
    }
    check(&t, rc, b, len);
    free(b);
    return 0;
}
