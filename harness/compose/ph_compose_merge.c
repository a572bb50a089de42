/* ph_compose_merge.c - compose's rules for merging one file's tree onto
 * another (override files, `extends`, what an `include` brings in).
 *
 * As compose-go's override.MergeYaml: mappings merge key by key, lists
 * append, anything else is replaced; but `command`, `entrypoint` and
 * `healthcheck.test` are replaced whole, the key/value lists (environment,
 * labels, build args, sysctls, ...) may be written as mappings or lists
 * and are appended as KEY=VALUE items (the later one wins when read),
 * `depends_on` and a service's `networks` merge as mappings whatever
 * their form, `build: DIR` is `build: {context: DIR}`, `logging` is
 * replaced when the driver changes, and a ulimit given as one number
 * replaces.  An empty value (null) keeps the base, except where the
 * value is replaced whole: there it is the image's default again.  A value
 * tagged `!reset` removes the key; one tagged `!override` replaces instead
 * of merging.
 *
 * Merging never changes its inputs (nodes are shared with aliases and
 * other files): what differs is new, the rest is referenced.  Duplicates
 * the appending leaves (two ports, two mounts on one target) are settled
 * when the service is read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_compose_int.h"
#include "ph_util.h"

#define MERGE_MAX_DEPTH PH_YAML_MAX_DEPTH

/* Aliases let a small file name a huge tree: merging walks it as a tree,
 * so the walk is bounded. */
#define MERGE_MAX_VISITS 1000000

typedef struct path {
    const char *k[MERGE_MAX_DEPTH + 2];
    size_t n;
    size_t visits;
} path;

/* PATTERN like "services.*.environment" against P: `*` is any one key. */
static int
path_is(const path *p, const char *pattern)
{
    size_t i = 0;
    const char *s = pattern;

    while (*s) {
        size_t len = strcspn(s, ".");

        if (i >= p->n)
            return 0;
        if (!(len == 1 && s[0] == '*') && (strlen(p->k[i]) != len || strncmp(p->k[i], s, len) != 0))
            return 0;
        i++;
        s += len;
        if (*s == '.')
            s++;
    }
    return i == p->n;
}

static const char *const to_sequence[] = {
    "services.*.annotations", "services.*.build.args", "services.*.build.labels",
    "services.*.build.additional_contexts", "services.*.deploy.labels", "services.*.environment",
    "services.*.labels", "services.*.sysctls", "services.*.dns", "services.*.dns_opt", "services.*.dns_search",
    "services.*.env_file", "services.*.label_file", "services.*.tmpfs", "services.*.extra_hosts",
    "services.*.build.extra_hosts", "networks.*.labels", "volumes.*.labels",
};
static const char *const replaced[] = {
    "services.*.command", "services.*.entrypoint", "services.*.healthcheck.test",
};
static const char *const as_mapping[] = {
    "services.*.depends_on", "services.*.networks",
};

static int
path_in(const path *p, const char *const *patterns, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (path_is(p, patterns[i]))
            return 1;
    return 0;
}

/* A mapping as a list: `K: V` as "K=V", `K:` (null) as "K"; a scalar as a
 * one-item list; a list as itself (a new reference). */
static ph_ynode *
as_sequence(ph_ynode *n, ph_error_t *err)
{
    ph_ynode *seq;

    if (n->kind == PH_Y_SEQ)
        return ph_ynode_ref(n);
    if ((seq = ph_ynode_new(PH_Y_SEQ, n)) == NULL)
        goto oom;
    if (n->kind == PH_Y_SCALAR) {
        if (ph_ynode_push(seq, ph_ynode_ref(n)) < 0)
            goto oom;
        return seq;
    }
    PH_YAML_FOREACH_PAIR(n, pair) {
        char *item = NULL;
        ph_ynode *it;

        if (pair->value->kind != PH_Y_SCALAR) {
            ph_ynode_unref(seq);
            ph_yaml_error(pair->value, err, "`%s` must be a string, number or boolean, not %s", ph_yaml_key(pair),
                          ph_yaml_kind(pair->value));
            return NULL;
        }
        if (ph_yaml_is_null(pair->value) ? asprintf(&item, "%s", ph_yaml_key(pair)) < 0
                                         : asprintf(&item, "%s=%s", ph_yaml_key(pair), pair->value->str) < 0)
            goto oom;
        it = ph_ynode_new_scalar(item, pair->key);
        free(item);
        if (it == NULL || ph_ynode_push(seq, it) < 0)
            goto oom;
    }
    return seq;
oom:
    ph_ynode_unref(seq);
    ph_fail(err, ENOMEM, "allocate");
    return NULL;
}

/* A list of names as a mapping of names to nothing; a mapping as itself. */
static ph_ynode *
as_map(ph_ynode *n, ph_error_t *err)
{
    ph_ynode *m;

    if (n->kind == PH_Y_MAP)
        return ph_ynode_ref(n);
    if (n->kind != PH_Y_SEQ) {
        ph_yaml_error(n, err, "expected a list or a mapping, not a scalar");
        return NULL;
    }
    if ((m = ph_ynode_new(PH_Y_MAP, n)) == NULL)
        goto oom;
    PH_YAML_FOREACH_ITEM(n, it) {
        ph_ynode *null;

        if ((*it)->kind != PH_Y_SCALAR) {
            ph_ynode_unref(m);
            ph_yaml_error(*it, err, "expected a name, not %s", ph_yaml_kind(*it));
            return NULL;
        }
        if ((null = ph_ynode_new_scalar("", *it)) == NULL)
            goto oom;
        null->plain = 1;
        if (ph_ynode_put(m, ph_ynode_ref(*it), null) < 0)
            goto oom;
    }
    return m;
oom:
    ph_ynode_unref(m);
    ph_fail(err, ENOMEM, "allocate");
    return NULL;
}

static ph_ynode *merge_at(ph_ynode *base, ph_ynode *over, path *p, ph_error_t *err);

static int
is_tag(const ph_ynode *n, const char *tag)
{
    return n->tag != NULL && strcmp(n->tag, tag) == 0;
}

/* A copy of mapping BASE with OVER's keys merged in: new keys appended in
 * OVER's order, `!reset` ones dropped. */
static ph_ynode *
merge_maps(ph_ynode *base, ph_ynode *over, path *p, ph_error_t *err)
{
    ph_ynode *m = ph_ynode_new(PH_Y_MAP, base);
    unsigned char *used = calloc(over->n ? over->n : 1, 1);

    if (m == NULL || used == NULL)
        goto oom;
    /* Small mappings: a scan per key is cheaper than an index. */
    PH_YAML_FOREACH_PAIR(base, bp) {
        ph_ynode *v = NULL;
        size_t j;

        for (j = 0; j < over->n && strcmp(over->pairs[j].key->str, bp->key->str) != 0; j++)
            ;
        if (j == over->n) {
            v = ph_ynode_ref(bp->value);
        } else {
            ph_ynode *ov = over->pairs[j].value;

            used[j] = 1;
            if (is_tag(ov, "!reset"))
                continue;
            if (is_tag(ov, "!override")) {
                v = ph_ynode_ref(ov);
            } else {
                if (p->n >= MERGE_MAX_DEPTH) {
                    ph_yaml_error(ov, err, "nested too deeply to merge");
                    goto fail;
                }
                p->k[p->n++] = bp->key->str;
                v = merge_at(bp->value, ov, p, err);
                p->n--;
                if (v == NULL)
                    goto fail;
            }
        }
        if (ph_ynode_put(m, ph_ynode_ref(bp->key), v) < 0)
            goto oom;
    }
    PH_YAML_FOREACH_PAIR(over, op) {
        if (used[op - over->pairs] || is_tag(op->value, "!reset"))
            continue;
        if (ph_ynode_put(m, ph_ynode_ref(op->key), ph_ynode_ref(op->value)) < 0)
            goto oom;
    }
    free(used);
    return m;
oom:
    ph_fail(err, ENOMEM, "allocate");
fail:
    free(used);
    ph_ynode_unref(m);
    return NULL;
}

static ph_ynode *
append_seqs(ph_ynode *a, ph_ynode *b, ph_error_t *err)
{
    ph_ynode *s = ph_ynode_new(PH_Y_SEQ, a);

    if (s == NULL)
        goto oom;
    PH_YAML_FOREACH_ITEM(a, it)
        if (ph_ynode_push(s, ph_ynode_ref(*it)) < 0)
            goto oom;
    PH_YAML_FOREACH_ITEM(b, it)
        if (ph_ynode_push(s, ph_ynode_ref(*it)) < 0)
            goto oom;
    return s;
oom:
    ph_ynode_unref(s);
    ph_fail(err, ENOMEM, "allocate");
    return NULL;
}

static ph_ynode *
merge_at(ph_ynode *base, ph_ynode *over, path *p, ph_error_t *err)
{
    ph_ynode *a = NULL, *b = NULL, *r = NULL;

    if (++p->visits > MERGE_MAX_VISITS) {
        ph_yaml_error(over, err, "the files expand too far through aliases to merge (over %d nodes)",
                      MERGE_MAX_VISITS);
        return NULL;
    }
    /* An empty key keeps the base, but what is replaced whole is replaced
     * by nothing too (compose-go: its rules by path come first). */
    if (path_in(p, replaced, PH_ARRAY_LEN(replaced)))
        return ph_ynode_ref(over);
    if (ph_yaml_is_null(over))
        return ph_ynode_ref(base);
    if (path_in(p, to_sequence, PH_ARRAY_LEN(to_sequence))) {
        if ((a = as_sequence(base, err)) != NULL && (b = as_sequence(over, err)) != NULL)
            r = append_seqs(a, b, err);
    } else if (path_in(p, as_mapping, PH_ARRAY_LEN(as_mapping))) {
        if ((a = as_map(base, err)) != NULL && (b = as_map(over, err)) != NULL)
            r = merge_maps(a, b, p, err);
    } else if (path_is(p, "services.*.build") && (base->kind == PH_Y_SCALAR || over->kind == PH_Y_SCALAR)) {
        /* build: DIR is build: {context: DIR} */
        ph_ynode *in[2] = { base, over }, *m[2] = { NULL, NULL };

        for (int i = 0; i < 2; i++) {
            if (in[i]->kind == PH_Y_MAP) {
                m[i] = ph_ynode_ref(in[i]);
            } else if ((m[i] = ph_ynode_new(PH_Y_MAP, in[i])) == NULL ||
                       ph_ynode_put(m[i], ph_ynode_new_scalar("context", in[i]), ph_ynode_ref(in[i])) < 0) {
                ph_fail(err, ENOMEM, "allocate");
            }
        }
        if (m[0] && m[1] && *err == NULL)
            r = merge_maps(m[0], m[1], p, err);
        ph_ynode_unref(m[0]);
        ph_ynode_unref(m[1]);
    } else if (path_is(p, "services.*.logging") && base->kind == PH_Y_MAP && over->kind == PH_Y_MAP &&
               ph_yaml_get(base, "driver") && ph_yaml_get(over, "driver") &&
               strcmp(ph_yaml_get(base, "driver")->str ? ph_yaml_get(base, "driver")->str : "",
                      ph_yaml_get(over, "driver")->str ? ph_yaml_get(over, "driver")->str : "") != 0) {
        r = ph_ynode_ref(over); /* another driver: its options mean nothing to the first */
    } else if (path_is(p, "services.*.ulimits.*") && (base->kind != PH_Y_MAP || over->kind != PH_Y_MAP)) {
        r = ph_ynode_ref(over);
    } else if (base->kind == PH_Y_MAP && over->kind == PH_Y_MAP) {
        r = merge_maps(base, over, p, err);
    } else if (base->kind == PH_Y_SEQ && over->kind == PH_Y_SEQ) {
        r = append_seqs(base, over, err);
    } else if (base->kind != over->kind && base->kind != PH_Y_SCALAR && !ph_yaml_is_null(base)) {
        ph_yaml_error(over, err, "cannot merge %s into %s (at line %d of %s)", ph_yaml_kind(over), ph_yaml_kind(base),
                      base->line, ph_yaml_file(base));
    } else {
        r = ph_ynode_ref(over);
    }
    ph_ynode_unref(a);
    ph_ynode_unref(b);
    return r;
}

ph_ynode *
ph_compose_merge(ph_ynode *base, ph_ynode *over, const char *at, ph_error_t *err)
{
    path p = { .n = 0 };
    char buf[256], *save = NULL;

    /* AT: where the two trees sit ("" for files, "services.x" for a
     * service), so that the rules by path apply. */
    snprintf(buf, sizeof buf, "%s", at);
    for (char *k = strtok_r(buf, ".", &save); k && p.n < MERGE_MAX_DEPTH; k = strtok_r(NULL, ".", &save))
        p.k[p.n++] = k;
    if (base == NULL)
        return ph_ynode_ref(over);
    return merge_at(base, over, &p, err);
}
