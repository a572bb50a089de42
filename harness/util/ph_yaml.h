/* ph_yaml.h - libyaml document helpers shared by the compose and profile
 * loaders: load a file, walk nodes, and make errors that name
 * FILE:LINE:COL (1-based) at the node where the problem is.
 *
 * ph_yaml_load() checks what libyaml leaves to its callers, once, for the
 * whole document: every mapping key is a scalar, no mapping repeats a key,
 * there is one document only, and `<<: *anchor` merge keys (which compose
 * files use with `x-` blocks) are resolved in place.  After a successful
 * load every key in every mapping can therefore be read with ph_yaml_key().
 */
#ifndef PH_YAML_H
#define PH_YAML_H

#include <yaml.h>
#include "ph_strings.h"
#include "ph_error.h"

typedef struct ph_yaml {
    const char *path;
    yaml_document_t doc;
    int loaded;
} ph_yaml;

/* Load PATH; an empty file is an error.  PH_EXIT_USAGE errors. */
int ph_yaml_load(ph_yaml *y, const char *path, ph_error_t *err);
void ph_yaml_free(ph_yaml *y);
yaml_node_t *ph_yaml_root(ph_yaml *y);
yaml_node_t *ph_yaml_node(ph_yaml *y, int index);

int ph_yaml_line(const yaml_node_t *n);
int ph_yaml_col(const yaml_node_t *n);
/* "what is wrong" at node N: returns -1 with PH_EXIT_USAGE. */
int ph_yaml_error(ph_yaml *y, const yaml_node_t *n, ph_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The key of a mapping pair (always a scalar after ph_yaml_load). */
const char *ph_yaml_key(ph_yaml *y, const yaml_node_pair_t *pair);
/* A YAML null: `key:` with nothing, `~`, `null` (plain, not quoted). */
int ph_yaml_is_null(const yaml_node_t *n);

/* The scalar's text, or an error naming KEY when N is not a scalar. */
const char *ph_yaml_scalar(ph_yaml *y, yaml_node_t *n, const char *key, ph_error_t *err);
/* Like ph_yaml_scalar, but an empty or null value is an error too. */
const char *ph_yaml_nonempty(ph_yaml *y, yaml_node_t *n, const char *key, ph_error_t *err);
/* Replace *DST with a copy of the scalar N (non-empty).  -1 and *err otherwise. */
int ph_yaml_dup(ph_yaml *y, yaml_node_t *n, const char *key, char **dst, ph_error_t *err);
/* A list of scalars, or a single scalar when ALLOW_SCALAR (then split by
 * shell rules when SPLIT).  Appends to OUT. */
int ph_yaml_strv(ph_yaml *y, yaml_node_t *n, const char *key, int allow_scalar, int split, ph_strv *out,
                 ph_error_t *err);
/* A map of scalars, or a list of "K=V"/"K" strings.  Appends to OUT; a
 * bare `K` or a null value gives a NULL value. */
int ph_yaml_kvv(ph_yaml *y, yaml_node_t *n, const char *key, ph_kvv *out, ph_error_t *err);
int ph_yaml_bool(ph_yaml *y, yaml_node_t *n, const char *key, int *out, ph_error_t *err);
int ph_yaml_duration(ph_yaml *y, yaml_node_t *n, const char *key, long long *out, ph_error_t *err);

/* Duplicate keys in a mapping are an error (YAML says so; libyaml does not
 * check).  ph_yaml_load already ran it on every mapping. */
int ph_yaml_check_dups(ph_yaml *y, yaml_node_t *map, ph_error_t *err);

#define PH_YAML_FOREACH_PAIR(map, pair) \
    for (yaml_node_pair_t *pair = (map)->data.mapping.pairs.start; pair < (map)->data.mapping.pairs.top; pair++)

/* Signal names: "TERM", "SIGTERM", "15" -> "SIGTERM"; NULL if unknown. */
const char *ph_signal_normalise(const char *s, char buf[16]);

#endif
