/* ph_suggest.c - did-you-mean by edit distance (see ph_suggest.h).
 *
 * The distance is the optimal string alignment one (Levenshtein plus the
 * swap of two neighbours, which is the commonest slip: `cwroker`), three
 * rows of at most PH_SUGGEST_MAX + 1 cells on the stack. */
#include "ph_suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static size_t
min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;

    return m < c ? m : c;
}

static int
same(char a, char b)
{
    return tolower((unsigned char)a) == tolower((unsigned char)b);
}

size_t
ph_suggest_distance(const char *a, const char *b)
{
    size_t rows[3][PH_SUGGEST_MAX + 1];
    size_t la = strlen(a), lb = strlen(b);
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

    if (la > PH_SUGGEST_MAX || lb > PH_SUGGEST_MAX)
        return PH_SUGGEST_MAX + 1;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t *t;

        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = same(a[i - 1], b[j - 1]) ? 0 : 1;

            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]) && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

static int
starts_with(const char *name, const char *prefix)
{
    for (; *prefix; prefix++, name++)
        if (*name == '\0' || !same(*name, *prefix))
            return 0;
    return 1;
}

const char *
ph_suggest(const char *typed, const char *const *names, size_t n)
{
    size_t len, allowed, best_d = (size_t)-1;
    const char *best = NULL, *prefixed = NULL;
    int n_prefixed = 0;

    if (typed == NULL || names == NULL)
        return NULL;
    len = strlen(typed);
    if (len == 0 || len > PH_SUGGEST_MAX)
        return NULL;
    allowed = len / 3 > 0 ? len / 3 : 1;
    for (size_t i = 0; i < n; i++) {
        size_t d;

        if (names[i] == NULL)
            continue;
        d = ph_suggest_distance(typed, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
        if (len >= 3 && starts_with(names[i], typed)) {
            n_prefixed++;
            prefixed = names[i];
        }
    }
    if (best != NULL && best_d <= allowed)
        return best;
    return n_prefixed == 1 ? prefixed : NULL;
}

char *
ph_suggest_list(char *buf, size_t len, const char *const *names, size_t n)
{
    static const char more[] = ", ...";
    size_t o = 0;

    if (len == 0)
        return buf;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t need;

        if (names[i] == NULL)
            continue;
        need = (o ? 2 : 0) + strlen(names[i]);
        /* Room for this name, and for ", ..." should another not fit. */
        if (o + need + (i + 1 < n ? sizeof more - 1 : 0) >= len) {
            if (o + sizeof more <= len)
                memcpy(buf + o, o ? more : more + 2, sizeof more - (o ? 0 : 2));
            return buf;
        }
        o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", names[i]);
    }
    return buf;
}
