/* fuzz_elf.c - libFuzzer target for what profharness reads of a service
 * image's program (ph_image_elf_interp, ph_image_elf_build_id): the file
 * is the image's, so untrusted, and read on the host.  Each input is read
 * from a heap copy of exactly its size (ASan sees one byte past it):
 *   - the first byte's low bit 0: the rest is the file's first bytes, as
 *     the archive endpoint gives them;
 *   - 1: the rest is a note segment, put after an ELF header whose one
 *     program header is a PT_NOTE of exactly those bytes, the end of what
 *     was read (the first byte's next bits: 32 or 64-bit, byte order,
 *     notes aligned to 4 or 8), so the note walker gets every input.
 * Beyond "no crash, no leak, no undefined behaviour":
 *   - each answer is -1, 0 or 1, the same on a second call (pure);
 *   - with a whole note segment in the input the answers are known:
 *     interp 0 (no PT_INTERP), build-id 0 or 1, never -1, and 1 exactly
 *     when a walk written here, bounds-checked its own way (in 128-bit
 *     arithmetic), finds a GNU build-id note whole inside the segment.
 * The seeds are ELF headers made as tests/unit/test_image.c makes them,
 * and the segment that read past its end (notes-unpadded-last). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ph_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
put(unsigned char *p, int n, int le, uint64_t v)
{
    for (int i = 0; i < n; i++)
        p[le ? i : n - 1 - i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
get(const unsigned char *p, int le)
{
    uint64_t v = 0;

    for (int i = 0; i < 4; i++)
        v |= (uint64_t)p[le ? i : 3 - i] << (8 * i);
    return v;
}

/* A GNU build-id note in the notes B[0..N), aligned to ALIGN: every
 * offset kept as an unsigned __int128, so nothing wraps, each compared
 * with N before a byte of it is read. */
static int
reference(const unsigned char *b, size_t n, unsigned align, int le)
{
    unsigned __int128 off = 0;

    while (off + 12 <= n) {
        uint64_t namesz = get(b + (size_t)off, le), descsz = get(b + (size_t)off + 4, le);
        uint64_t type = get(b + (size_t)off + 8, le);
        unsigned __int128 name = off + 12, desc = name + (namesz + align - 1) / align * align;
        unsigned __int128 end = desc + (descsz + align - 1) / align * align;

        if (desc > n || desc + descsz > n)
            return 0;
        if (type == 3 && namesz == 4 && memcmp(b + (size_t)name, "GNU", 4) == 0 && descsz > 0)
            return 1;
        off = end;
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *b;
    size_t len;
    int interp, id;

    if (size == 0)
        return 0;
    if ((data[0] & 1) == 0) {
        len = size - 1;
        if ((b = malloc(len ? len : 1)) == NULL)
            return 0;
        memcpy(b, data + 1, len);
    } else {
        int is64 = (data[0] >> 1) & 1, le = (data[0] >> 2) & 1;
        unsigned align = (data[0] >> 3) & 1 ? 8 : 4;
        size_t eh = is64 ? 64 : 52, ph = is64 ? 56 : 32, seg = size - 1;

        len = eh + ph + seg;
        if ((b = calloc(1, len)) == NULL)
            return 0;
        memcpy(b, "\177ELF", 4);
        b[4] = is64 ? 2 : 1;
        b[5] = le ? 1 : 2;
        b[6] = 1;
        put(b + 16, 2, le, 3); /* ET_DYN */
        put(b + (is64 ? 32 : 28), is64 ? 8 : 4, le, eh);
        put(b + (is64 ? 54 : 42), 2, le, ph);
        put(b + (is64 ? 56 : 44), 2, le, 1);
        put(b + eh, 4, le, 4); /* PT_NOTE */
        if (is64) {
            put(b + eh + 8, 8, le, eh + ph);
            put(b + eh + 32, 8, le, seg);
            put(b + eh + 48, 8, le, align);
        } else {
            put(b + eh + 4, 4, le, eh + ph);
            put(b + eh + 16, 4, le, seg);
            put(b + eh + 28, 4, le, align);
        }
        memcpy(b + eh + ph, data + 1, seg);
        if (ph_image_elf_interp(b, len) != 0)
            abort();
        id = ph_image_elf_build_id(b, len);
        if (id != reference(b + eh + ph, seg, align, le))
            abort();
    }
    interp = ph_image_elf_interp(b, len);
    id = ph_image_elf_build_id(b, len);
    if (interp < -1 || interp > 1 || id < -1 || id > 1)
        abort();
    if (ph_image_elf_interp(b, len) != interp || ph_image_elf_build_id(b, len) != id)
        abort();
    free(b);
    return 0;
}
