/* ph_yaml.h - YAML files as small trees, for the compose and profile
 * loaders: load a file, walk its nodes, and make errors that name
 * FILE:LINE:COL (1-based) at the node where the problem is.
 *
 * ph_yaml_load() reads a file with libyaml's event parser into ph_ynode
 * trees and checks, once, what libyaml leaves to its callers:
 *   - nesting deeper than PH_YAML_MAX_DEPTH (aliases included) is refused
 *     where it happens, so every later walk may recurse, and libyaml's
 *     scanner, whose cost per token grows with the depth, stays linear;
 *   - every mapping key is a scalar and no mapping repeats a key (checked
 *     with a hash, in linear time);
 *   - an alias names an anchor already complete, so the tree has no cycle;
 *   - `<<: *anchor` merge keys (which compose files use with `x-` blocks)
 *     are resolved in place: explicit keys first, then the sources in order;
 *   - scalars hold no NUL byte; the file is at most PH_YAML_MAX_BYTES.
 * After a successful load every key can therefore be read as a string.
 *
 * Aliases share nodes (reference counted), as they do in the document: a
 * pass that changes nodes in place (interpolation) must visit each node
 * once, which ph_yaml_next_mark() helps with.  Nodes carry their file, so
 * trees built from several files still report the right one.
 */
#ifndef PH_YAML_H
#define PH_YAML_H

#include <stddef.h>
#include "ph_strings.h"
#include "ph_error.h"

#define PH_YAML_MAX_DEPTH 64           /* collections inside collections */
#define PH_YAML_MAX_BYTES (64u << 20)  /* a larger file is a mistake */

typedef enum ph_ykind { PH_Y_SCALAR = 1, PH_Y_SEQ, PH_Y_MAP } ph_ykind;

typedef struct ph_ynode ph_ynode;
typedef struct ph_ysrc ph_ysrc; /* the file a node comes from */

typedef struct ph_ypair {
    ph_ynode *key; /* always a scalar */
    ph_ynode *value;
} ph_ypair;

struct ph_ynode {
    ph_ykind kind;
    int refs;
    int line, col;       /* 1-based */
    int plain;           /* a scalar written without quotes and tag: may mean null, a bool, a number */
    int height;          /* 0 for a scalar, 1 + the tallest child for a collection */
    unsigned mark;       /* for passes over shared nodes, see ph_yaml_next_mark */
    char *tag;           /* as written ("!reset"), NULL when none */
    char *str;           /* scalar text, NUL-terminated */
    size_t len;
    ph_ynode **items;    /* PH_Y_SEQ: n items */
    ph_ypair *pairs;     /* PH_Y_MAP: n pairs */
    size_t n, cap;
    ph_ysrc *src;
};

/* Load PATH, which must hold one document (a second is an error; an empty
 * file too).  *ROOT is the caller's (ph_ynode_unref).  PH_EXIT_USAGE errors
 * for bad input. */
int ph_yaml_load(const char *path, ph_ynode **root, ph_error_t *err);
/* Every non-empty document of PATH, in order (at least one). */
int ph_yaml_load_all(const char *path, ph_ynode ***docs, size_t *n, ph_error_t *err);
/* The same from memory; NAME is what errors call the input. */
int ph_yaml_load_buf(const char *name, const char *buf, size_t len, int multi, ph_ynode ***docs, size_t *n,
                     ph_error_t *err);

ph_ynode *ph_ynode_ref(ph_ynode *n);
void ph_ynode_unref(ph_ynode *n); /* NULL is a no-op */

/* New nodes for trees built in code; they report SRC_NODE's place (may be
 * NULL: then no file).  NULL on ENOMEM. */
ph_ynode *ph_ynode_new(ph_ykind kind, const ph_ynode *src_node);
ph_ynode *ph_ynode_new_scalar(const char *s, const ph_ynode *src_node);
/* Append to a sequence / a mapping; they take over the references given.
 * -1 on ENOMEM (the references are dropped then). */
int ph_ynode_push(ph_ynode *seq, ph_ynode *item);
int ph_ynode_put(ph_ynode *map, ph_ynode *key, ph_ynode *value);

const char *ph_yaml_file(const ph_ynode *n); /* "" when built in code */
/* The directory relative paths of N's file are relative to, set for the
 * whole file (every node of one load shares it); NULL until set.  -1 on
 * ENOMEM. */
int ph_yaml_set_base(ph_ynode *n, const char *dir);
const char *ph_yaml_base(const ph_ynode *n);
/* A counter value no node holds yet: mark nodes with it to visit once. */
unsigned ph_yaml_next_mark(void);

/* "what is wrong" at node N: returns -1 with PH_EXIT_USAGE. */
int ph_yaml_error(const ph_ynode *n, ph_error_t *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The key of a pair. */
const char *ph_yaml_key(const ph_ypair *pair);
/* The value of KEY in MAP, or NULL (linear: for small mappings). */
ph_ynode *ph_yaml_get(const ph_ynode *map, const char *key);
/* A YAML null: `key:` with nothing, `~`, `null` (plain, not quoted). */
int ph_yaml_is_null(const ph_ynode *n);
/* "a scalar", "a list", "a mapping" */
const char *ph_yaml_kind(const ph_ynode *n);

/* The scalar's text, or an error naming KEY when N is not a scalar. */
const char *ph_yaml_scalar(const ph_ynode *n, const char *key, ph_error_t *err);
/* Like ph_yaml_scalar, but an empty or null value is an error too. */
const char *ph_yaml_nonempty(const ph_ynode *n, const char *key, ph_error_t *err);
/* Replace *DST with a copy of the scalar N (non-empty).  -1 and *err otherwise. */
int ph_yaml_dup(const ph_ynode *n, const char *key, char **dst, ph_error_t *err);
/* A list of scalars, or a single scalar when ALLOW_SCALAR (then split by
 * shell rules when SPLIT).  Appends to OUT. */
int ph_yaml_strv(const ph_ynode *n, const char *key, int allow_scalar, int split, ph_strv *out, ph_error_t *err);
/* A map of scalars, or a list of "K=V"/"K" strings.  Sets in OUT (a later
 * entry replaces an earlier one); a bare `K` or a null value gives a NULL
 * value. */
int ph_yaml_kvv(const ph_ynode *n, const char *key, ph_kvv *out, ph_error_t *err);
int ph_yaml_bool(const ph_ynode *n, const char *key, int *out, ph_error_t *err);
int ph_yaml_duration(const ph_ynode *n, const char *key, long long *out, ph_error_t *err);

/* (An empty collection has no array: no arithmetic on NULL.) */
#define PH_YAML_FOREACH_PAIR(map, pair) \
    for (ph_ypair *pair = (map)->pairs, *pair##_end_ = pair ? pair + (map)->n : NULL; pair != pair##_end_; pair++)
#define PH_YAML_FOREACH_ITEM(seq, item) \
    for (ph_ynode **item = (seq)->items, **item##_end_ = item ? item + (seq)->n : NULL; item != item##_end_; item++)

/* Signal names: "TERM", "SIGTERM", "15" -> "SIGTERM"; NULL if unknown. */
const char *ph_signal_normalise(const char *s, char buf[16]);

#endif
