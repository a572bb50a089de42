/* fuzz_strings.c - libFuzzer target for the ground floor's parsers
 * (harness/util/ph_strings: durations, shell words, key/value lists) and
 * compose's ${VAR} interpolation (ph_interpolate), on any bytes taken as a
 * C string.
 *
 * Beyond "no crash, no leak, no undefined behaviour", each is checked
 * against what it promises or a simpler model:
 *   - a duration is never negative, and "<digits>s" is digits * 1e9;
 *   - shell words: without quotes and backslashes, splitting is splitting
 *     at blanks; with them, no word is longer than the input;
 *   - a key/value list holds the last value set for each key, once;
 *   - interpolation of a string without `$` is the string itself, `$$` is
 *     `$`, and every error is bad input naming where. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ph_compose.h"
#include "ph_strings.h"

/* Names starting with U are unset, E are empty, the rest are set to a value
 * that holds a `$` (it must not be expanded again). */
static const char *
lookup(const char *name, void *ud)
{
    (void)ud;
    if (name[0] == 'U')
        return NULL;
    if (name[0] == 'E')
        return "";
    return "v$X";
}

static void
check_duration(const char *s)
{
    long long ns = -1;
    size_t n = strlen(s);

    if (ph_duration_parse(s, &ns) < 0)
        return;
    if (ns < 0)
        abort();
    /* "<up to 9 digits>s" is exact. */
    if (n >= 2 && n <= 10 && s[n - 1] == 's' && strspn(s, "0123456789") == n - 1 &&
        ns != strtoll(s, NULL, 10) * 1000000000LL)
        abort();
}

static void
check_split(const char *s)
{
    ph_strv v = { 0 };
    ph_error_t err = NULL;
    size_t len = strlen(s);

    if (ph_shell_split(s, &v, &err) < 0) {
        if (err == NULL || (err->status != PH_EXIT_USAGE && err->errnum == 0))
            abort();
        ph_error_free(&err);
        ph_strv_free(&v);
        return;
    }
    if (v.n > 0 && v.v[v.n] != NULL)
        abort();
    for (size_t i = 0; i < v.n; i++)
        if (strlen(v.v[i]) > len)
            abort();
    if (strpbrk(s, "'\"\\") == NULL) {
        /* The model: words are the runs of non-blanks. */
        size_t i = 0;
        const char *p = s;

        for (;;) {
            size_t wl;

            p += strspn(p, " \t\n");
            if (*p == '\0')
                break;
            wl = strcspn(p, " \t\n");
            if (i >= v.n || strlen(v.v[i]) != wl || memcmp(v.v[i], p, wl) != 0)
                abort();
            i++;
            p += wl;
        }
        if (i != v.n)
            abort();
    }
    ph_strv_free(&v);
}

/* The words as keys, each set twice (the second value wins); then every
 * key is there once with its last value. */
static void
check_kvv(const char *s)
{
    ph_strv words = { 0 };
    ph_kvv kv = { 0 };
    ph_error_t err = NULL;

    /* The check is quadratic: a few dozen words say all it can. */
    if (ph_shell_split(s, &words, &err) < 0 || words.n > 64) {
        ph_error_free(&err);
        ph_strv_free(&words);
        return;
    }
    for (size_t i = 0; i < words.n; i++) {
        if (ph_kvv_set(&kv, words.v[i], "first") < 0 || ph_kvv_set(&kv, words.v[i], i % 2 ? NULL : words.v[i]) < 0)
            abort();
    }
    for (size_t i = 0; i < words.n; i++) {
        const char *got = ph_kvv_get(&kv, words.v[i]);
        size_t last = i, seen = 0;

        for (size_t j = 0; j < words.n; j++)
            if (strcmp(words.v[j], words.v[i]) == 0)
                last = j;
        if ((last % 2 ? got != NULL : got == NULL || strcmp(got, words.v[last]) != 0))
            abort();
        for (size_t j = 0; j < kv.n; j++)
            seen += strcmp(kv.v[j].key, words.v[i]) == 0;
        if (seen != 1)
            abort();
    }
    ph_kvv_free(&kv);
    ph_strv_free(&words);
}

static void
check_interpolate(const char *s)
{
    ph_error_t err = NULL;
    char *out = ph_interpolate(s, lookup, NULL, "fuzz.yaml:1", &err);

    if (out == NULL) {
        if (err == NULL)
            abort();
        if (err->status == PH_EXIT_USAGE && strncmp(err->msg, "fuzz.yaml:1: ", 13) != 0)
            abort();
        ph_error_free(&err);
        return;
    }
    if (err != NULL)
        abort();
    if (strchr(s, '$') == NULL && strcmp(out, s) != 0)
        abort();
    if (strncmp(s, "$$", 2) == 0 && out[0] != '$')
        abort();
    free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    check_duration(s);
    check_split(s);
    check_kvv(s);
    check_interpolate(s);
    free(s);
    return 0;
}
