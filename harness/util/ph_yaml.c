/* ph_yaml.c - YAML files as small trees (see ph_yaml.h).
 *
 * The tree is built from libyaml's events rather than with its loader:
 * the loader recurses, registers an anchor before its node is complete
 * (so `&a [*a]` is a cycle), checks no key twice, and lets the scanner's
 * per-token cost grow with the nesting.  Here the open collections are an
 * array of PH_YAML_MAX_DEPTH frames, an anchor exists once its node ends,
 * and each mapping's keys go through a hash when it ends.
 */
#include "ph_yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "ph_util.h"

struct ph_ysrc {
    int refs;
    char *base; /* what relative paths in the file are relative to; NULL: the caller's default */
    char path[];
};

/* ---- nodes ------------------------------------------------------------ */

static ph_ysrc *
src_new(const char *path)
{
    size_t n = strlen(path);
    ph_ysrc *s = malloc(sizeof *s + n + 1);

    if (s == NULL)
        return NULL;
    s->refs = 1;
    s->base = NULL;
    memcpy(s->path, path, n + 1);
    return s;
}

static void
src_unref(ph_ysrc *s)
{
    if (s != NULL && --s->refs == 0) {
        free(s->base);
        free(s);
    }
}

static ph_ynode *
node_new(ph_ykind kind, ph_ysrc *src, int line, int col)
{
    ph_ynode *n = calloc(1, sizeof *n);

    if (n == NULL)
        return NULL;
    n->kind = kind;
    n->refs = 1;
    n->line = line;
    n->col = col;
    n->height = kind == PH_Y_SCALAR ? 0 : 1;
    n->src = src;
    if (src)
        src->refs++;
    return n;
}

ph_ynode *
ph_ynode_new(ph_ykind kind, const ph_ynode *at)
{
    return node_new(kind, at ? at->src : NULL, at ? at->line : 0, at ? at->col : 0);
}

ph_ynode *
ph_ynode_new_scalar(const char *s, const ph_ynode *at)
{
    ph_ynode *n = ph_ynode_new(PH_Y_SCALAR, at);

    if (n == NULL)
        return NULL;
    n->len = strlen(s);
    n->str = strdup(s);
    if (n->str == NULL) {
        ph_ynode_unref(n);
        return NULL;
    }
    return n;
}

ph_ynode *
ph_ynode_ref(ph_ynode *n)
{
    if (n)
        n->refs++;
    return n;
}

/* Recursion is bounded: a loaded tree is at most PH_YAML_MAX_DEPTH deep. */
void
ph_ynode_unref(ph_ynode *n)
{
    if (n == NULL || --n->refs > 0)
        return;
    for (size_t i = 0; n->kind == PH_Y_SEQ && i < n->n; i++)
        ph_ynode_unref(n->items[i]);
    for (size_t i = 0; n->kind == PH_Y_MAP && i < n->n; i++) {
        ph_ynode_unref(n->pairs[i].key);
        ph_ynode_unref(n->pairs[i].value);
    }
    free(n->items);
    free(n->pairs);
    free(n->str);
    free(n->tag);
    src_unref(n->src);
    free(n);
}

static int
grow(ph_ynode *n, size_t elem)
{
    size_t cap = n->cap ? n->cap * 2 : 4;
    void *p;

    if (n->n < n->cap)
        return 0;
    p = realloc(n->kind == PH_Y_SEQ ? (void *)n->items : (void *)n->pairs, cap * elem);
    if (p == NULL)
        return -1;
    if (n->kind == PH_Y_SEQ)
        n->items = p;
    else
        n->pairs = p;
    n->cap = cap;
    return 0;
}

int
ph_ynode_push(ph_ynode *seq, ph_ynode *item)
{
    if (grow(seq, sizeof *seq->items) < 0) {
        ph_ynode_unref(item);
        return -1;
    }
    seq->items[seq->n++] = item;
    if (item->height + 1 > seq->height)
        seq->height = item->height + 1;
    return 0;
}

int
ph_ynode_put(ph_ynode *map, ph_ynode *key, ph_ynode *value)
{
    if (grow(map, sizeof *map->pairs) < 0) {
        ph_ynode_unref(key);
        ph_ynode_unref(value);
        return -1;
    }
    map->pairs[map->n].key = key;
    map->pairs[map->n].value = value;
    map->n++;
    if (value->height + 1 > map->height)
        map->height = value->height + 1;
    return 0;
}

const char *
ph_yaml_file(const ph_ynode *n)
{
    return n && n->src ? n->src->path : "";
}

int
ph_yaml_set_base(ph_ynode *n, const char *dir)
{
    char *d;

    if (n == NULL || n->src == NULL)
        return 0;
    if ((d = strdup(dir)) == NULL)
        return -1;
    free(n->src->base);
    n->src->base = d;
    return 0;
}

const char *
ph_yaml_base(const ph_ynode *n)
{
    return n && n->src ? n->src->base : NULL;
}

unsigned
ph_yaml_next_mark(void)
{
    static unsigned counter;

    return ++counter;
}

/* ---- a string index: open addressing over caller-owned entries -------- */

typedef const char *(*name_fn)(const void *entries, size_t i);

typedef struct strix {
    size_t *slot; /* entry index + 1; 0 is empty */
    size_t mask;
} strix;

static int
strix_init(strix *ix, size_t expect)
{
    size_t size = 16;

    while (size < expect * 2)
        size *= 2;
    ix->slot = calloc(size, sizeof *ix->slot);
    ix->mask = size - 1;
    return ix->slot ? 0 : -1;
}

/* The entry named like entry I if there is one (I is not added then), else
 * I is added and SIZE_MAX returned.  The table never fills: it is sized for
 * twice the entries at init. */
static size_t
strix_add(strix *ix, const void *entries, name_fn name, size_t i)
{
    const char *s = name(entries, i);

    for (size_t h = (size_t)ph_str_hash(s) & ix->mask;; h = (h + 1) & ix->mask) {
        if (ix->slot[h] == 0) {
            ix->slot[h] = i + 1;
            return SIZE_MAX;
        }
        if (strcmp(name(entries, ix->slot[h] - 1), s) == 0)
            return ix->slot[h] - 1;
    }
}

static const char *
pair_name(const void *entries, size_t i)
{
    return ((const ph_ypair *)entries)[i].key->str;
}

/* ---- errors ------------------------------------------------------------ */

int
ph_yaml_error(const ph_ynode *n, ph_error_t *err, const char *fmt, ...)
{
    char what[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ph_bad_input(err, "%s:%d:%d: %s", ph_yaml_file(n), n->line, n->col, what);
}

/* Line and column of byte OFFSET in BUF, counting characters (UTF-8 lead
 * bytes), for reader errors, which libyaml reports as an offset only.  A
 * broken sequence is placed at its lead byte, not at the octet after it. */
static void
offset_position(const char *buf, size_t len, size_t offset, int trailing, size_t *line, size_t *col)
{
    if (offset > len)
        offset = len;
    for (size_t back = 1; trailing && back <= 3 && back <= offset; back++) {
        if (((unsigned char)buf[offset - back] & 0xc0) == 0xc0) {
            offset -= back;
            break;
        }
    }
    *line = 1;
    *col = 1;
    for (size_t at = 0; at < offset; at++) {
        unsigned char ch = (unsigned char)buf[at];

        if (ch == '\n') {
            (*line)++;
            *col = 1;
        } else if ((ch & 0xc0) != 0x80) {
            (*col)++;
        }
    }
}

static int
parser_error(yaml_parser_t *p, const char *name, const char *buf, size_t len, ph_error_t *err)
{
    size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;
    const char *problem = p->problem ? p->problem : "malformed YAML";

    if (p->error == YAML_MEMORY_ERROR)
        return ph_fail(err, ENOMEM, "parse `%s`", name);
    if (p->error == YAML_READER_ERROR) {
        offset_position(buf, len, p->problem_offset, strstr(problem, "trailing") != NULL, &line, &col);
        return ph_bad_input(err, "%s:%zu:%zu: %s", name, line, col, problem);
    }
    if (p->context)
        return ph_bad_input(err, "%s:%zu:%zu: %s (%s at %zu:%zu)", name, line, col, problem, p->context,
                            p->context_mark.line + 1, p->context_mark.column + 1);
    return ph_bad_input(err, "%s:%zu:%zu: %s", name, line, col, problem);
}

static int
mark_error(const char *name, const yaml_mark_t *m, ph_error_t *err, const char *what)
{
    return ph_bad_input(err, "%s:%zu:%zu: %s", name, m->line + 1, m->column + 1, what);
}

/* ---- merge keys -------------------------------------------------------- */

static int
is_merge_key(const ph_ynode *k)
{
    return k->plain && strcmp(k->str, "<<") == 0;
}

typedef struct merge_state {
    unsigned done, busy;
} merge_state;

static int merge_walk(ph_ynode *n, merge_state *ms, ph_error_t *err);

/* Replace the `<<` pairs of M by the pairs of the mappings they name:
 * explicit keys first so that they win, then earlier sources before later
 * ones (the YAML merge-key rules). */
static int
merge_one(ph_ynode *m, merge_state *ms, ph_error_t *err)
{
    ph_ynode **src = NULL;
    size_t nsrc = 0, total = 0, np = 0;
    ph_ypair *pairs = NULL;
    strix ix = { 0 };
    int rc = -1;

    PH_YAML_FOREACH_PAIR(m, pair) {
        ph_ynode *v = pair->value;

        if (!is_merge_key(pair->key))
            continue;
        if (v->kind == PH_Y_SEQ) {
            PH_YAML_FOREACH_ITEM(v, it)
                if ((*it)->kind != PH_Y_MAP)
                    return ph_yaml_error(*it, err, "`<<` merges mappings, not %s", ph_yaml_kind(*it));
            nsrc += v->n;
        } else if (v->kind == PH_Y_MAP) {
            nsrc++;
        } else {
            return ph_yaml_error(v, err, "`<<` merges a mapping or a list of mappings, not a scalar");
        }
    }
    src = calloc(nsrc ? nsrc : 1, sizeof *src);
    if (src == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    nsrc = 0;
    total = m->n;
    PH_YAML_FOREACH_PAIR(m, pair) {
        if (!is_merge_key(pair->key))
            continue;
        if (pair->value->kind == PH_Y_MAP)
            src[nsrc++] = pair->value;
        else
            PH_YAML_FOREACH_ITEM(pair->value, it)
                src[nsrc++] = *it;
    }
    for (size_t i = 0; i < nsrc; i++) {
        if (merge_walk(src[i], ms, err) < 0)
            goto out;
        total += src[i]->n;
    }
    pairs = calloc(total ? total : 1, sizeof *pairs);
    if (pairs == NULL || strix_init(&ix, total) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    PH_YAML_FOREACH_PAIR(m, pair) {
        if (is_merge_key(pair->key))
            continue;
        pairs[np] = *pair;
        strix_add(&ix, pairs, pair_name, np);
        np++;
    }
    for (size_t i = 0; i < nsrc; i++) {
        PH_YAML_FOREACH_PAIR(src[i], pair) {
            pairs[np] = *pair;
            if (strix_add(&ix, pairs, pair_name, np) != SIZE_MAX)
                continue;
            ph_ynode_ref(pair->key);
            ph_ynode_ref(pair->value);
            np++;
        }
    }
    PH_YAML_FOREACH_PAIR(m, pair) {
        if (is_merge_key(pair->key)) {
            ph_ynode_unref(pair->key);
            ph_ynode_unref(pair->value);
        }
    }
    free(m->pairs);
    m->pairs = pairs;
    m->n = np;
    m->cap = total ? total : 1;
    pairs = NULL;
    rc = 0;
out:
    free(pairs);
    free(ix.slot);
    free(src);
    return rc;
}

/* Resolve the merges of every mapping under N, each node once. */
static int
merge_walk(ph_ynode *n, merge_state *ms, ph_error_t *err)
{
    int has_merge = 0;

    if (n->kind == PH_Y_SCALAR || n->mark == ms->done)
        return 0;
    if (n->mark == ms->busy)
        return ph_yaml_error(n, err, "`<<` merges a mapping into itself");
    n->mark = ms->busy;
    for (size_t i = 0; n->kind == PH_Y_SEQ && i < n->n; i++)
        if (merge_walk(n->items[i], ms, err) < 0)
            return -1;
    for (size_t i = 0; n->kind == PH_Y_MAP && i < n->n; i++) {
        has_merge |= is_merge_key(n->pairs[i].key);
        if (merge_walk(n->pairs[i].value, ms, err) < 0)
            return -1;
    }
    if (has_merge && merge_one(n, ms, err) < 0)
        return -1;
    n->mark = ms->done;
    return 0;
}

/* ---- loading ----------------------------------------------------------- */

typedef struct anchor {
    char *name;
    ph_ynode *node;
} anchor;

static const char *
anchor_name(const void *entries, size_t i)
{
    return ((const anchor *)entries)[i].name;
}

typedef struct frame {
    ph_ynode *node;
    ph_ynode *key; /* a mapping's key waiting for its value */
    char *anchor;
} frame;

typedef struct builder {
    const char *name;
    ph_ysrc *src;
    frame stack[PH_YAML_MAX_DEPTH];
    size_t depth;
    ph_ynode *root;
    anchor *anchors;
    size_t n_anchors, cap_anchors;
    strix anchor_ix;
} builder;

static void
anchors_clear(builder *b)
{
    for (size_t i = 0; i < b->n_anchors; i++) {
        free(b->anchors[i].name);
        ph_ynode_unref(b->anchors[i].node);
    }
    b->n_anchors = 0;
    if (b->anchor_ix.slot)
        memset(b->anchor_ix.slot, 0, (b->anchor_ix.mask + 1) * sizeof *b->anchor_ix.slot);
}

static int
anchor_set(builder *b, const char *name, ph_ynode *node)
{
    size_t at;

    if (b->n_anchors == b->cap_anchors) {
        size_t cap = b->cap_anchors ? b->cap_anchors * 2 : 16;
        anchor *na = realloc(b->anchors, cap * sizeof *na);
        strix ix;

        if (na == NULL || strix_init(&ix, cap) < 0) {
            if (na)
                b->anchors = na;
            return -1;
        }
        b->anchors = na;
        b->cap_anchors = cap;
        free(b->anchor_ix.slot);
        b->anchor_ix = ix;
        for (size_t i = 0; i < b->n_anchors; i++)
            strix_add(&b->anchor_ix, b->anchors, anchor_name, i);
    }
    b->anchors[b->n_anchors].name = strdup(name);
    if (b->anchors[b->n_anchors].name == NULL)
        return -1;
    b->anchors[b->n_anchors].node = ph_ynode_ref(node);
    at = strix_add(&b->anchor_ix, b->anchors, anchor_name, b->n_anchors);
    if (at == SIZE_MAX) {
        b->n_anchors++;
    } else {
        /* A redefined anchor: later aliases mean the new node. */
        free(b->anchors[b->n_anchors].name);
        ph_ynode_unref(b->anchors[at].node);
        b->anchors[at].node = node;
    }
    return 0;
}

static ph_ynode *
anchor_get(builder *b, const char *name)
{
    for (size_t h = (size_t)ph_str_hash(name) & b->anchor_ix.mask; b->anchor_ix.slot[h]; h = (h + 1) & b->anchor_ix.mask)
        if (strcmp(b->anchors[b->anchor_ix.slot[h] - 1].name, name) == 0)
            return b->anchors[b->anchor_ix.slot[h] - 1].node;
    return NULL;
}

/* Give NODE (a reference) to the open collection, or make it the root. */
static int
attach(builder *b, ph_ynode *node, ph_error_t *err)
{
    frame *f;

    if (b->depth == 0) {
        b->root = node;
        return 0;
    }
    f = &b->stack[b->depth - 1];
    if (f->node->kind == PH_Y_SEQ)
        return ph_ynode_push(f->node, node) < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
    if (f->key == NULL) {
        if (node->kind != PH_Y_SCALAR) {
            ph_yaml_error(node, err, "keys must be strings, not %s", ph_yaml_kind(node));
            ph_ynode_unref(node);
            return -1;
        }
        f->key = node;
        return 0;
    }
    if (ph_ynode_put(f->node, f->key, node) < 0) {
        f->key = NULL;
        return ph_fail(err, ENOMEM, "allocate");
    }
    f->key = NULL;
    return 0;
}

/* A mapping just ended: no key twice (YAML says so; libyaml does not check). */
static int
check_dups(ph_ynode *m, ph_error_t *err)
{
    strix ix;
    int rc = 0;

    if (m->n < 2)
        return 0;
    if (strix_init(&ix, m->n) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    for (size_t i = 0; rc == 0 && i < m->n; i++) {
        size_t first = strix_add(&ix, m->pairs, pair_name, i);

        if (first != SIZE_MAX)
            rc = ph_yaml_error(m->pairs[i].key, err, "duplicate key `%s` (first at line %d)", m->pairs[i].key->str,
                               m->pairs[first].key->line);
    }
    free(ix.slot);
    return rc;
}

static int
on_event(builder *b, yaml_event_t *ev, ph_error_t *err)
{
    const yaml_mark_t *m = &ev->start_mark;
    ph_ynode *n;
    const char *anchor_name_ = NULL;
    char what[128];

    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        n = anchor_get(b, (const char *)ev->data.alias.anchor);
        if (n == NULL) {
            snprintf(what, sizeof what, "unknown anchor `%.64s` (an alias must follow its anchor's whole node)",
                     (const char *)ev->data.alias.anchor);
            return mark_error(b->name, m, err, what);
        }
        if (b->depth + (size_t)n->height > PH_YAML_MAX_DEPTH) {
            snprintf(what, sizeof what, "nested deeper than %d levels (through the alias `*%.64s`)", PH_YAML_MAX_DEPTH,
                     (const char *)ev->data.alias.anchor);
            return mark_error(b->name, m, err, what);
        }
        return attach(b, ph_ynode_ref(n), err);
    case YAML_SCALAR_EVENT:
        if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length) != NULL)
            return mark_error(b->name, m, err, "a NUL character in a value");
        n = node_new(PH_Y_SCALAR, b->src, (int)m->line + 1, (int)m->column + 1);
        if (n == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        n->str = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        n->len = ev->data.scalar.length;
        n->tag = ev->data.scalar.tag ? strdup((const char *)ev->data.scalar.tag) : NULL;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && ev->data.scalar.tag == NULL;
        if (n->str == NULL || (ev->data.scalar.tag && n->tag == NULL)) {
            ph_ynode_unref(n);
            return ph_fail(err, ENOMEM, "allocate");
        }
        if (ev->data.scalar.anchor && anchor_set(b, (const char *)ev->data.scalar.anchor, n) < 0) {
            ph_ynode_unref(n);
            return ph_fail(err, ENOMEM, "allocate");
        }
        return attach(b, n, err);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int seq = ev->type == YAML_SEQUENCE_START_EVENT;
        const yaml_char_t *tag = seq ? ev->data.sequence_start.tag : ev->data.mapping_start.tag;
        const yaml_char_t *anc = seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor;
        frame *f;

        if (b->depth == PH_YAML_MAX_DEPTH) {
            snprintf(what, sizeof what, "nested deeper than %d levels", PH_YAML_MAX_DEPTH);
            return mark_error(b->name, m, err, what);
        }
        n = node_new(seq ? PH_Y_SEQ : PH_Y_MAP, b->src, (int)m->line + 1, (int)m->column + 1);
        if (n == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        f = &b->stack[b->depth++];
        f->node = n;
        f->key = NULL;
        f->anchor = NULL;
        if ((tag && (n->tag = strdup((const char *)tag)) == NULL) ||
            (anc && (f->anchor = strdup((const char *)anc)) == NULL))
            return ph_fail(err, ENOMEM, "allocate");
        return 0;
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: {
        frame f = b->stack[--b->depth];
        int rc = 0;

        n = f.node;
        if (n->kind == PH_Y_MAP)
            rc = check_dups(n, err);
        anchor_name_ = f.anchor;
        if (rc == 0 && anchor_name_ && anchor_set(b, anchor_name_, n) < 0)
            rc = ph_fail(err, ENOMEM, "allocate");
        free(f.anchor);
        ph_ynode_unref(f.key);
        if (rc < 0) {
            ph_ynode_unref(n);
            return -1;
        }
        return attach(b, n, err);
    }
    default:
        return 0;
    }
}

static void
builder_reset(builder *b)
{
    while (b->depth > 0) {
        frame *f = &b->stack[--b->depth];

        ph_ynode_unref(f->node);
        ph_ynode_unref(f->key);
        free(f->anchor);
    }
    ph_ynode_unref(b->root);
    b->root = NULL;
    anchors_clear(b);
}

static void
docs_free(ph_ynode **docs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ph_ynode_unref(docs[i]);
    free(docs);
}

int
ph_yaml_load_buf(const char *name, const char *buf, size_t len, int multi, ph_ynode ***docs_out, size_t *n_out,
                 ph_error_t *err)
{
    yaml_parser_t p;
    yaml_event_t ev;
    builder b = { .name = name };
    ph_ynode **docs = NULL;
    size_t n_docs = 0;
    int rc = -1, done = 0;

    *docs_out = NULL;
    *n_out = 0;
    b.src = src_new(name);
    if (b.src == NULL || strix_init(&b.anchor_ix, 8) < 0) {
        src_unref(b.src);
        return ph_fail(err, ENOMEM, "allocate");
    }
    if (!yaml_parser_initialize(&p)) {
        src_unref(b.src);
        free(b.anchor_ix.slot);
        return ph_fail(err, ENOMEM, "initialise libyaml");
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    while (!done) {
        int r = 0;

        if (!yaml_parser_parse(&p, &ev)) {
            parser_error(&p, name, buf, len, err);
            goto out;
        }
        if (ev.type == YAML_STREAM_END_EVENT) {
            done = 1;
        } else if (ev.type == YAML_DOCUMENT_START_EVENT) {
            builder_reset(&b);
        } else if (ev.type == YAML_DOCUMENT_END_EVENT) {
            merge_state ms = { ph_yaml_next_mark(), ph_yaml_next_mark() };
            ph_ynode **nd;

            if (b.root != NULL && !(b.root->kind == PH_Y_SCALAR && ph_yaml_is_null(b.root))) {
                if (!multi && n_docs == 1) {
                    r = ph_yaml_error(b.root, err, "a second YAML document (`---`): one document per file");
                } else if ((r = merge_walk(b.root, &ms, err)) == 0) {
                    nd = realloc(docs, (n_docs + 1) * sizeof *nd);
                    if (nd == NULL) {
                        r = ph_fail(err, ENOMEM, "allocate");
                    } else {
                        docs = nd;
                        docs[n_docs++] = b.root;
                        b.root = NULL;
                    }
                }
            }
            builder_reset(&b);
        } else {
            r = on_event(&b, &ev, err);
        }
        yaml_event_delete(&ev);
        if (r < 0)
            goto out;
    }
    if (n_docs == 0) {
        ph_bad_input(err, "%s:1:1: the file is empty", name);
        goto out;
    }
    *docs_out = docs;
    *n_out = n_docs;
    docs = NULL;
    n_docs = 0;
    rc = 0;
out:
    builder_reset(&b);
    free(b.anchors);
    free(b.anchor_ix.slot);
    src_unref(b.src);
    yaml_parser_delete(&p);
    docs_free(docs, n_docs);
    return rc;
}

int
ph_yaml_load_all(const char *path, ph_ynode ***docs, size_t *n, ph_error_t *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    *docs = NULL;
    *n = 0;
    if (ph_read_file(path, PH_YAML_MAX_BYTES, 1, &buf, &len, err) < 0)
        return -1;
    rc = ph_yaml_load_buf(path, buf, len, 1, docs, n, err);
    free(buf);
    return rc;
}

int
ph_yaml_load(const char *path, ph_ynode **root, ph_error_t *err)
{
    char *buf = NULL;
    size_t len = 0, n = 0;
    ph_ynode **docs = NULL;
    int rc;

    *root = NULL;
    if (ph_read_file(path, PH_YAML_MAX_BYTES, 1, &buf, &len, err) < 0)
        return -1;
    rc = ph_yaml_load_buf(path, buf, len, 0, &docs, &n, err);
    free(buf);
    if (rc == 0) {
        *root = docs[0];
        free(docs);
    }
    return rc;
}

/* ---- reading values ---------------------------------------------------- */

const char *
ph_yaml_key(const ph_ypair *pair)
{
    return pair->key->str;
}

ph_ynode *
ph_yaml_get(const ph_ynode *map, const char *key)
{
    if (map == NULL || map->kind != PH_Y_MAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->pairs[i].key->str, key) == 0)
            return map->pairs[i].value;
    return NULL;
}

int
ph_yaml_is_null(const ph_ynode *n)
{
    const char *s = n->str;

    if (n->kind != PH_Y_SCALAR || !n->plain)
        return 0;
    return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
}

const char *
ph_yaml_kind(const ph_ynode *n)
{
    switch (n->kind) {
    case PH_Y_SCALAR: return "a scalar";
    case PH_Y_SEQ: return "a list";
    case PH_Y_MAP: return "a mapping";
    default: return "nothing";
    }
}

const char *
ph_yaml_scalar(const ph_ynode *n, const char *key, ph_error_t *err)
{
    if (n->kind != PH_Y_SCALAR) {
        ph_yaml_error(n, err, "`%s` must be a string, not %s", key, ph_yaml_kind(n));
        return NULL;
    }
    return n->str;
}

const char *
ph_yaml_nonempty(const ph_ynode *n, const char *key, ph_error_t *err)
{
    const char *s = ph_yaml_scalar(n, key, err);

    if (s != NULL && (s[0] == '\0' || ph_yaml_is_null(n))) {
        ph_yaml_error(n, err, "`%s` is empty", key);
        return NULL;
    }
    return s;
}

int
ph_yaml_dup(const ph_ynode *n, const char *key, char **dst, ph_error_t *err)
{
    const char *s = ph_yaml_nonempty(n, key, err);
    char *c;

    if (s == NULL)
        return -1;
    c = strdup(s);
    if (c == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    free(*dst);
    *dst = c;
    return 0;
}

int
ph_yaml_strv(const ph_ynode *n, const char *key, int allow_scalar, int split, ph_strv *out, ph_error_t *err)
{
    if (n->kind == PH_Y_SCALAR && allow_scalar) {
        if (split) {
            ph_strv tmp = { 0 };

            if (ph_shell_split(n->str, &tmp, err) < 0) {
                ph_strv_free(&tmp);
                return ph_error_wrap(err, "%s:%d:%d: `%s`", ph_yaml_file(n), n->line, n->col, key);
            }
            for (size_t i = 0; i < tmp.n; i++)
                if (ph_strv_push(out, tmp.v[i]) < 0) {
                    ph_strv_free(&tmp);
                    return ph_fail(err, ENOMEM, "allocate");
                }
            ph_strv_free(&tmp);
            return 0;
        }
        return ph_strv_push(out, n->str) < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
    }
    if (n->kind != PH_Y_SEQ)
        return ph_yaml_error(n, err, "`%s` must be a list%s, not %s", key, allow_scalar ? " or a string" : "",
                             ph_yaml_kind(n));
    PH_YAML_FOREACH_ITEM(n, it) {
        if ((*it)->kind != PH_Y_SCALAR)
            return ph_yaml_error(*it, err, "items of `%s` must be strings, not %s", key, ph_yaml_kind(*it));
        if (ph_strv_push(out, (*it)->str) < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

int
ph_yaml_kvv(const ph_ynode *n, const char *key, ph_kvv *out, ph_error_t *err)
{
    if (n->kind == PH_Y_MAP) {
        PH_YAML_FOREACH_PAIR(n, pair) {
            const ph_ynode *v = pair->value;

            if (v->kind != PH_Y_SCALAR)
                return ph_yaml_error(v, err, "`%s.%s` must be a string, number or boolean, not %s", key,
                                     ph_yaml_key(pair), ph_yaml_kind(v));
            /* `KEY:` with nothing after it is null: take it from the environment. */
            if (ph_kvv_set(out, ph_yaml_key(pair), ph_yaml_is_null(v) ? NULL : v->str) < 0)
                return ph_fail(err, ENOMEM, "allocate");
        }
        return 0;
    }
    if (n->kind != PH_Y_SEQ)
        return ph_yaml_error(n, err, "`%s` must be a mapping or a list of KEY=VALUE, not %s", key, ph_yaml_kind(n));
    PH_YAML_FOREACH_ITEM(n, it) {
        const char *s = ph_yaml_scalar(*it, key, err);
        const char *eq;
        char *k;
        int rc;

        if (s == NULL)
            return -1;
        eq = strchr(s, '=');
        k = eq ? strndup(s, (size_t)(eq - s)) : strdup(s);
        if (k == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        if (k[0] == '\0') {
            free(k);
            return ph_yaml_error(*it, err, "`%s` entry `%s` has no name", key, s);
        }
        rc = ph_kvv_set(out, k, eq ? eq + 1 : NULL);
        free(k);
        if (rc < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

int
ph_yaml_bool(const ph_ynode *n, const char *key, int *out, ph_error_t *err)
{
    const char *s = ph_yaml_scalar(n, key, err);

    if (s == NULL)
        return -1;
    if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on") || !strcmp(s, "1"))
        *out = 1;
    else if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off") || !strcmp(s, "0"))
        *out = 0;
    else
        return ph_yaml_error(n, err, "`%s` must be true or false, not `%s`", key, s);
    return 0;
}

int
ph_yaml_duration(const ph_ynode *n, const char *key, long long *out, ph_error_t *err)
{
    const char *s = ph_yaml_scalar(n, key, err);

    if (s == NULL)
        return -1;
    if (ph_duration_parse(s, out) < 0)
        return ph_yaml_error(n, err, "`%s`: `%s` is not a duration (like 30s, 1m30s, 500ms)", key, s);
    return 0;
}

const char *
ph_signal_normalise(const char *s, char buf[16])
{
    static const char *const names[] = {
        "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE",
        "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ",
        "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
    };
    char *end;
    long n;

    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            snprintf(buf, 16, "SIG%s", names[i]);
            return buf;
        }
    }
    n = strtol(s, &end, 10);
    if (*s && *end == '\0' && n >= 1 && n <= (long)(sizeof names / sizeof names[0])) {
        snprintf(buf, 16, "SIG%s", names[n - 1]);
        return buf;
    }
    return NULL;
}
