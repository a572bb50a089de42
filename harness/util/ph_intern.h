/* ph_intern.h - the string table of every parser (folded stacks' frame
 * names, the report's files, functions and syscalls), and a 64-bit key
 * map: each distinct string stored once (in large blocks, so millions of
 * names cost no per-string allocation), numbered from 0 in first-seen
 * order, found again through a hash table.  Strings may hold any byte;
 * each stored copy is NUL-terminated (ph_intern_len tells the length of
 * one that holds a NUL).
 *
 * MAX_BYTES bounds the stored text: an insert that would pass it fails
 * with errno E2BIG and nothing changes, so a hostile input cannot grow the
 * table without limit.  Pure; one table belongs to one thread at a time.
 */
#ifndef PH_INTERN_H
#define PH_INTERN_H

#include <stddef.h>
#include <stdint.h>

typedef struct ph_intern ph_intern;

/* NULL on ENOMEM. */
ph_intern *ph_intern_new(size_t max_bytes);
void ph_intern_free(ph_intern *t);

/* The id of S (LEN bytes), adding it if new: >= 0, or -1 with errno
 * ENOMEM or E2BIG. */
int64_t ph_intern_add(ph_intern *t, const char *s, size_t len);
/* The id of S, or -1 when absent. */
int64_t ph_intern_find(const ph_intern *t, const char *s, size_t len);
size_t ph_intern_count(const ph_intern *t);
/* String ID; valid until ph_intern_free. */
const char *ph_intern_get(const ph_intern *t, uint32_t id);
size_t ph_intern_len(const ph_intern *t, uint32_t id);

/* A map from 64-bit keys to 32-bit values (open addressing, grows at
 * half full): pids to threads, (file, name) pairs to functions.  A
 * zeroed struct is an empty map. */
typedef struct ph_u64map {
    uint64_t *keys;
    uint32_t *vals; /* UINT32_MAX: empty slot */
    size_t cap, n;  /* cap: a power of two */
} ph_u64map;

/* The value of KEY, UINT32_MAX when absent. */
uint32_t ph_u64map_get(const ph_u64map *m, uint64_t key);
/* Set KEY to VAL (not UINT32_MAX); -1 on ENOMEM. */
int ph_u64map_put(ph_u64map *m, uint64_t key, uint32_t val);
void ph_u64map_free(ph_u64map *m);

/* FNV-1a, for the parsers' own hash tables. */
static inline uint64_t
ph_hash_bytes(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ULL;
    return h;
}
#define PH_HASH_INIT 0xcbf29ce484222325ULL

#endif
