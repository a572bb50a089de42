/* ph_strings.h - the ground floor's small containers and parsers: string
 * vectors, ordered key/value lists, Go-style durations and shell word
 * splitting.  Used by the compose and profile loaders, the YAML helpers and
 * the loop; they depend on nothing but libc and ph_error. */
#ifndef PH_STRINGS_H
#define PH_STRINGS_H

#include <stddef.h>
#include "ph_error.h"

typedef struct ph_kv {
    char *key;
    char *value; /* NULL for a bare `KEY` in a list (take it from the environment) */
} ph_kv;

typedef struct ph_strv {
    char **v;       /* NULL-terminated when n > 0 */
    size_t n;
    size_t cap;     /* slots allocated; 0 = unknown (grown on the next push) */
} ph_strv;

/* Ordered; a key appears once.  Build it with ph_kvv_set only: past a few
 * entries a hash index (private) keeps setting and getting linear. */
typedef struct ph_kvv {
    ph_kv *v;
    size_t n;
    size_t cap;      /* as in ph_strv */
    size_t *ix;      /* entry index + 1, 0 empty; NULL while small */
    size_t ix_mask;
} ph_kvv;

/* Parse a duration like compose does ("1m30s", "10s", "500ms", "2h") into ns. */
int ph_duration_parse(const char *s, long long *ns_out);

/* Split a command string like a POSIX shell word-splitter (no expansion).
 * Returns 0 or -1 and *err on an unterminated quote. */
int ph_shell_split(const char *s, ph_strv *out, ph_error_t *err);

void ph_strv_free(ph_strv *v);
int ph_strv_push(ph_strv *v, const char *s); /* copies s; -1 on ENOMEM */
int ph_strv_push_all(ph_strv *v, const ph_strv *from); /* copies each of FROM (NULL: none); -1 on ENOMEM */
int ph_strv_has(const ph_strv *v, const char *s);      /* 1 when S is one of V's strings */
void ph_kvv_free(ph_kvv *v);
/* FNV-1a of a string: for the hash indexes of the loaders. */
unsigned long long ph_str_hash(const char *s);
int ph_kvv_set(ph_kvv *v, const char *key, const char *value); /* replaces an existing key */
const char *ph_kvv_get(const ph_kvv *v, const char *key);

#endif
