/* ph_strings.c - string vectors, key/value lists, durations and shell words
 * (see ph_strings.h). */
#include "ph_strings.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ph_util.h"

/* ---- string vectors --------------------------------------------------- */

void
ph_strv_free(ph_strv *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i]);
    free(v->v);
    v->v = NULL;
    v->n = 0;
    v->cap = 0;
}

/* Doubling: a realloc per element is quadratic where realloc copies. */
static size_t
next_cap(size_t cap, size_t need)
{
    size_t c = cap ? cap : 4;

    while (c < need)
        c *= 2;
    return c;
}

int
ph_strv_push(ph_strv *v, const char *s)
{
    char *c;

    if (v->n + 2 > v->cap) {
        size_t cap = next_cap(v->cap, v->n + 2);
        char **nv = realloc(v->v, cap * sizeof *nv);

        if (nv == NULL)
            return -1;
        v->v = nv;
        v->cap = cap;
    }
    c = strdup(s);
    if (c == NULL)
        return -1;
    v->v[v->n++] = c;
    v->v[v->n] = NULL;
    return 0;
}

int
ph_strv_has(const ph_strv *v, const char *s)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->v[i], s) == 0)
            return 1;
    return 0;
}

int
ph_strv_push_all(ph_strv *v, const ph_strv *from)
{
    for (size_t i = 0; from != NULL && i < from->n; i++)
        if (ph_strv_push(v, from->v[i] ? from->v[i] : "") < 0)
            return -1;
    return 0;
}

void
ph_kvv_free(ph_kvv *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->v[i].key);
        free(v->v[i].value);
    }
    free(v->v);
    free(v->ix);
    v->v = NULL;
    v->n = 0;
    v->cap = 0;
    v->ix = NULL;
    v->ix_mask = 0;
}

#define KVV_INDEX_FROM 16 /* below this a scan is as fast */

unsigned long long
ph_str_hash(const char *s)
{
    unsigned long long h = 0xcbf29ce484222325ULL;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* The entry named KEY, or SIZE_MAX; *SLOT is where it is or would go. */
static size_t
kvv_find(const ph_kvv *v, const char *key, size_t *slot)
{
    if (v->ix == NULL) {
        for (size_t i = 0; i < v->n; i++)
            if (strcmp(v->v[i].key, key) == 0)
                return i;
        return SIZE_MAX;
    }
    for (size_t h = (size_t)ph_str_hash(key) & v->ix_mask;; h = (h + 1) & v->ix_mask) {
        if (v->ix[h] == 0) {
            *slot = h;
            return SIZE_MAX;
        }
        if (strcmp(v->v[v->ix[h] - 1].key, key) == 0)
            return v->ix[h] - 1;
    }
}

/* Keep the index at most half full: rebuild it at four times the entries. */
static int
kvv_reindex(ph_kvv *v)
{
    size_t size = 64, *ix;

    while (size < (v->n + 1) * 4)
        size *= 2;
    ix = calloc(size, sizeof *ix);
    if (ix == NULL)
        return -1;
    free(v->ix);
    v->ix = ix;
    v->ix_mask = size - 1;
    for (size_t i = 0; i < v->n; i++) {
        size_t h = (size_t)ph_str_hash(v->v[i].key) & v->ix_mask;

        while (ix[h] != 0)
            h = (h + 1) & v->ix_mask;
        ix[h] = i + 1;
    }
    return 0;
}

int
ph_kvv_set(ph_kvv *v, const char *key, const char *value)
{
    char *val = value ? strdup(value) : NULL;
    size_t at, slot = 0;

    if (value && val == NULL)
        return -1;
    if (v->n + 1 >= KVV_INDEX_FROM && (v->ix == NULL || (v->n + 1) * 2 > v->ix_mask + 1) && kvv_reindex(v) < 0) {
        free(val);
        return -1;
    }
    at = kvv_find(v, key, &slot);
    if (at != SIZE_MAX) {
        free(v->v[at].value);
        v->v[at].value = val;
        return 0;
    }
    if (v->n + 1 > v->cap) {
        size_t cap = next_cap(v->cap, v->n + 1);
        ph_kv *nv = realloc(v->v, cap * sizeof *nv);

        if (nv == NULL) {
            free(val);
            return -1;
        }
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n].key = strdup(key);
    v->v[v->n].value = val;
    if (v->v[v->n].key == NULL) {
        free(val);
        return -1;
    }
    if (v->ix)
        v->ix[slot] = v->n + 1;
    v->n++;
    return 0;
}

const char *
ph_kvv_get(const ph_kvv *v, const char *key)
{
    size_t slot, at = kvv_find(v, key, &slot);

    return at == SIZE_MAX ? NULL : v->v[at].value;
}

/* ---- durations and shell words --------------------------------------- */

/* Go's time.ParseDuration, which compose uses ("1h2m3.5s", "500ms"), in
 * integer arithmetic so that 1m30s is exactly 90 s, plus a bare number of
 * seconds, which older compose files use for healthchecks. */
int
ph_duration_parse(const char *s, long long *ns_out)
{
    static const struct {
        const char *suffix;
        long long ns;
    } units[] = {
        { "ns", 1LL }, { "us", 1000LL }, { "\xc2\xb5s", 1000LL }, { "ms", 1000000LL },
        { "h", 3600000000000LL }, { "m", 60000000000LL }, { "s", 1000000000LL },
    };
    long long total = 0;
    int any = 0;

    if (s == NULL || *s == '\0')
        return -1;
    while (*s) {
        long long whole = 0, frac = 0, frac_den = 1, unit = 0, part, v;
        int digits = 0;

        for (; isdigit((unsigned char)*s); s++, digits++) {
            if (whole > (LLONG_MAX - (*s - '0')) / 10)
                return -1;
            whole = whole * 10 + (*s - '0');
        }
        if (*s == '.') {
            for (s++; isdigit((unsigned char)*s); s++, digits++) {
                if (frac_den < 1000000000000LL) { /* more digits than ns matter are dropped */
                    frac = frac * 10 + (*s - '0');
                    frac_den *= 10;
                }
            }
        }
        if (digits == 0)
            return -1;
        for (size_t i = 0; i < PH_ARRAY_LEN(units); i++) {
            size_t l = strlen(units[i].suffix);
            if (strncmp(s, units[i].suffix, l) == 0) {
                unit = units[i].ns;
                s += l;
                break;
            }
        }
        if (unit == 0) {
            if (*s != '\0' || any)
                return -1;
            unit = 1000000000LL;
        }
        /* Every sum is checked before it is made: an overflow is undefined,
         * not negative. */
        part = (long long)((long double)frac * (long double)unit / (long double)frac_den);
        if (whole > (LLONG_MAX - part) / unit)
            return -1;
        v = whole * unit + part;
        if (total > LLONG_MAX - v)
            return -1;
        total += v;
        any = 1;
    }
    *ns_out = total;
    return 0;
}

int
ph_shell_split(const char *s, ph_strv *out, ph_error_t *err)
{
    char word[8192];
    size_t n = 0;
    int in_word = 0;
    char quote = 0;

    for (;; s++) {
        char c = *s;

        if (quote) {
            if (c == '\0')
                return ph_bad_input(err, "unterminated %c quote", quote);
            if (c == quote) {
                quote = 0;
                continue;
            }
            if (quote == '"' && c == '\\' && (s[1] == '"' || s[1] == '\\' || s[1] == '$' || s[1] == '`'))
                c = *++s;
        } else if (c == '\0' || c == ' ' || c == '\t' || c == '\n') {
            if (in_word) {
                word[n] = '\0';
                if (ph_strv_push(out, word) < 0)
                    return ph_fail(err, ENOMEM, "allocate");
                n = 0;
                in_word = 0;
            }
            if (c == '\0')
                return 0;
            continue;
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = 1;
            continue;
        } else if (c == '\\') {
            if (s[1] == '\0')
                return ph_bad_input(err, "trailing backslash");
            c = *++s;
        }
        if (n + 1 >= sizeof word)
            return ph_bad_input(err, "a word longer than %zu bytes", sizeof word - 1);
        word[n++] = c;
        in_word = 1;
    }
}
