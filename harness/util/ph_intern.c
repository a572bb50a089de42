/* ph_intern.c - a bounded string table and a 64-bit key map; see ph_intern.h. */
#include "ph_intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (1u << 16)

typedef struct entry {
    const char *s;
    uint32_t len;
    uint32_t hash; /* compared before the bytes; reused when the table grows */
} entry;

struct ph_intern {
    entry *v;          /* by id */
    size_t n, cap;
    uint32_t *slots;   /* open addressing: id + 1, 0 = empty */
    size_t nslots;     /* a power of two */
    char **blocks;     /* text storage */
    size_t nblocks, blocks_cap;
    size_t used;       /* bytes used in the last block */
    size_t block_size; /* of the last block */
    size_t bytes, max_bytes;
};

ph_intern *
ph_intern_new(size_t max_bytes)
{
    ph_intern *t = calloc(1, sizeof *t);

    if (t == NULL)
        return NULL;
    t->nslots = 1024;
    t->slots = calloc(t->nslots, sizeof *t->slots);
    if (t->slots == NULL) {
        free(t);
        return NULL;
    }
    t->max_bytes = max_bytes;
    return t;
}

void
ph_intern_free(ph_intern *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nblocks; i++)
        free(t->blocks[i]);
    free(t->blocks);
    free(t->slots);
    free(t->v);
    free(t);
}

/* Eight bytes at a time: names average ~15 bytes, so this is two or three
 * multiplies a name instead of fifteen (folded stacks intern every frame
 * of every line). */
static inline __attribute__((always_inline)) uint32_t
hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;

    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    }
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return (uint32_t)h;
}

static inline __attribute__((always_inline)) size_t
find_slot(const ph_intern *t, const char *s, size_t len, uint32_t h)
{
    size_t mask = t->nslots - 1, i = h & mask;

    for (;; i = (i + 1) & mask) {
        uint32_t id = t->slots[i];
        if (id == 0)
            return i;
        if (t->v[id - 1].hash == h && t->v[id - 1].len == len && memcmp(t->v[id - 1].s, s, len) == 0)
            return i;
    }
}

int64_t
ph_intern_find(const ph_intern *t, const char *s, size_t len)
{
    size_t i = find_slot(t, s, len, hash_bytes(s, len));

    return t->slots[i] ? (int64_t)t->slots[i] - 1 : -1;
}

static int
grow_slots(ph_intern *t)
{
    size_t n = t->nslots * 2;
    uint32_t *ns = calloc(n, sizeof *ns);

    if (ns == NULL)
        return -1;
    for (size_t id = 0; id < t->n; id++) {
        size_t i = t->v[id].hash & (n - 1);
        while (ns[i])
            i = (i + 1) & (n - 1);
        ns[i] = (uint32_t)id + 1;
    }
    free(t->slots);
    t->slots = ns;
    t->nslots = n;
    return 0;
}

/* Room for N bytes of text; NULL on ENOMEM. */
static char *
store(ph_intern *t, size_t n)
{
    if (t->nblocks == 0 || t->used + n > t->block_size) {
        size_t size = n > BLOCK ? n : BLOCK;
        char *b;

        if (t->nblocks == t->blocks_cap) {
            size_t cap = t->blocks_cap ? t->blocks_cap * 2 : 16;
            char **nb = realloc(t->blocks, cap * sizeof *nb);
            if (nb == NULL)
                return NULL;
            t->blocks = nb;
            t->blocks_cap = cap;
        }
        b = malloc(size);
        if (b == NULL)
            return NULL;
        t->blocks[t->nblocks++] = b;
        t->used = 0;
        t->block_size = size;
    }
    t->used += n;
    return t->blocks[t->nblocks - 1] + t->used - n;
}

int64_t
ph_intern_add(ph_intern *t, const char *s, size_t len)
{
    uint32_t h = hash_bytes(s, len);
    size_t i = find_slot(t, s, len, h);
    char *copy;

    if (t->slots[i])
        return (int64_t)t->slots[i] - 1;
    if (len > UINT32_MAX || t->n >= UINT32_MAX - 1 || t->bytes + len + 1 > t->max_bytes) {
        errno = E2BIG;
        return -1;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        entry *nv = realloc(t->v, cap * sizeof *nv);
        if (nv == NULL) {
            errno = ENOMEM;
            return -1;
        }
        t->v = nv;
        t->cap = cap;
    }
    if ((t->n + 1) * 2 > t->nslots) {
        if (grow_slots(t) < 0) {
            errno = ENOMEM;
            return -1;
        }
        i = find_slot(t, s, len, h);
    }
    copy = store(t, len + 1);
    if (copy == NULL) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(copy, s, len);
    copy[len] = '\0';
    t->v[t->n] = (entry){ copy, (uint32_t)len, h };
    t->slots[i] = (uint32_t)t->n + 1;
    t->n++;
    t->bytes += len + 1;
    return (int64_t)t->n - 1;
}

size_t
ph_intern_count(const ph_intern *t)
{
    return t->n;
}

const char *
ph_intern_get(const ph_intern *t, uint32_t id)
{
    return id < t->n ? t->v[id].s : NULL;
}

size_t
ph_intern_len(const ph_intern *t, uint32_t id)
{
    return id < t->n ? t->v[id].len : 0;
}

/* ---- ph_u64map ---------------------------------------------------------- */

static inline uint64_t
mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

uint32_t
ph_u64map_get(const ph_u64map *m, uint64_t key)
{
    size_t mask = m->cap - 1;

    if (m->cap == 0)
        return UINT32_MAX;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->vals[i] == UINT32_MAX)
            return UINT32_MAX;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

int
ph_u64map_put(ph_u64map *m, uint64_t key, uint32_t val)
{
    size_t mask;

    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        uint64_t *nk = malloc(nc * sizeof *nk);
        uint32_t *nv = malloc(nc * sizeof *nv);

        if (nk == NULL || nv == NULL) {
            free(nk);
            free(nv);
            return -1;
        }
        memset(nv, 0xff, nc * sizeof *nv);
        for (size_t i = 0; i < m->cap; i++) {
            if (m->vals[i] == UINT32_MAX)
                continue;
            size_t j = mix64(m->keys[i]) & (nc - 1);
            while (nv[j] != UINT32_MAX)
                j = (j + 1) & (nc - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = nc;
    }
    mask = m->cap - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->vals[i] == UINT32_MAX) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->n++;
            return 0;
        }
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return 0;
        }
    }
}

void
ph_u64map_free(ph_u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
