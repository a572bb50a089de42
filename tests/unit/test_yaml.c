/* test_yaml.c - the YAML layer under the compose and profile loaders:
 * limits (depth, aliases, size), duplicate keys in linear time, merge keys,
 * positions of errors, documents, and the value helpers. */
#include "test_util.h"

#include <sys/stat.h>

#include "ph_yaml.h"

/* A load that went quadratic would outlast this by far; the linear one
 * takes well under a second.  SIGALRM's default action ends the binary,
 * which run-unit.sh counts as a failure. */
#define DEADLINE_S 60

static ph_ynode *
load_ok(const char *text)
{
    ph_ynode *root = NULL;
    ph_error_t err = NULL;
    const char *path = tu_write("t.yaml", text);

    if (ph_yaml_load(path, &root, &err) < 0)
        fail_msg("load failed: %s", err->msg);
    return root;
}

/* The error for TEXT starts with "<path>:LINE:COL: " and contains FRAGMENT. */
static void
load_bad(const char *text, int line, int col, const char *fragment)
{
    ph_ynode *root = (ph_ynode *)&root;
    ph_error_t err = NULL;
    const char *path = tu_write("t.yaml", text);
    char where[600];

    assert_int_equal(ph_yaml_load(path, &root, &err), -1);
    assert_null(root);
    assert_non_null(err);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    snprintf(where, sizeof where, "%s:%d:%d: ", path, line, col);
    if (strncmp(err->msg, where, strlen(where)) != 0 || strstr(err->msg, fragment) == NULL)
        fail_msg("error `%.300s` does not start with `%s` or lacks `%s`", err->msg, where, fragment);
    ph_error_free(&err);
}

/* DEPTH nested flow lists around a scalar, on line 2 after "k: ". */
static char *
nested(size_t depth, const char *open, const char *close)
{
    size_t lo = strlen(open), lc = strlen(close);
    char *s = malloc(depth * (lo + lc) + 16), *p = s;

    assert_non_null(s);
    p += sprintf(p, "a: 1\nk: ");
    for (size_t i = 0; i < depth; i++, p += lo)
        memcpy(p, open, lo);
    *p++ = 'x';
    for (size_t i = 0; i < depth; i++, p += lc)
        memcpy(p, close, lc);
    strcpy(p, "\n");
    return s;
}

/* The root mapping is level 1: 63 lists inside it are the most there may be. */
static void
test_depth_boundary(void **state)
{
    char *s;
    ph_ynode *root;

    (void)state;
    s = nested(PH_YAML_MAX_DEPTH - 1, "[", "]");
    root = load_ok(s);
    assert_int_equal(root->height, PH_YAML_MAX_DEPTH);
    ph_ynode_unref(root);
    free(s);
    s = nested(PH_YAML_MAX_DEPTH, "[", "]");
    /* "k: " then 63 `[`: the 64th is at column 4 + 63. */
    load_bad(s, 2, 4 + PH_YAML_MAX_DEPTH - 1, "nested deeper than 64 levels");
    free(s);
    s = nested(PH_YAML_MAX_DEPTH, "{a: ", "}");
    load_bad(s, 2, 4 + 4 * (PH_YAML_MAX_DEPTH - 1), "nested deeper than 64 levels");
    free(s);
}

/* 100,000 levels: libyaml's scanner pays per token for every open level,
 * so the limit must stop it early for the load to stay linear. */
static void
test_depth_huge(void **state)
{
    char *s;

    (void)state;
    alarm(DEADLINE_S);
    s = nested(100000, "[", "]");
    load_bad(s, 2, 4 + PH_YAML_MAX_DEPTH - 1, "nested deeper than");
    free(s);
    alarm(0);
}

/* An alias counts as deep as the node it names. */
static void
test_alias_depth(void **state)
{
    ph_ynode *root;

    (void)state;
    /* a is 2 deep; placed at depth 2 (root, b) it reaches 4: fine. */
    root = load_ok("a: &a [[x]]\nb: [*a]\n");
    ph_ynode_unref(root);
    {
        /* Exactly at the limit through an alias: a is 62 deep, placed
         * inside the root (1) and one list (2) it reaches 64; one list
         * more and it passes. */
        char buf[512], *p = buf;
        int i;

        p += sprintf(p, "a: &a ");
        for (i = 0; i < 62; i++)
            *p++ = '[';
        *p++ = 'x';
        for (i = 0; i < 62; i++)
            *p++ = ']';
        strcpy(p, "\nb: [*a]\n");
        root = load_ok(buf);
        assert_int_equal(root->height, PH_YAML_MAX_DEPTH);
        ph_ynode_unref(root);
        strcpy(p, "\nb: [[*a]]\n");
        load_bad(buf, 2, 6, "nested deeper than 64 levels (through the alias `*a`)");
    }
    {
        /* Each anchor nests the previous one 30 deeper: the third passes 64. */
        char buf[4096], *p = buf;
        int i;

        p += sprintf(p, "a1: &a1 ");
        for (i = 0; i < 30; i++)
            *p++ = '[';
        *p++ = 'x';
        for (i = 0; i < 30; i++)
            *p++ = ']';
        p += sprintf(p, "\na2: &a2 ");
        for (i = 0; i < 30; i++)
            *p++ = '[';
        p += sprintf(p, "*a1");
        for (i = 0; i < 30; i++)
            *p++ = ']';
        p += sprintf(p, "\na3: ");
        for (i = 0; i < 30; i++)
            *p++ = '[';
        p += sprintf(p, "*a2");
        for (i = 0; i < 30; i++)
            *p++ = ']';
        strcpy(p, "\n");
        load_bad(buf, 3, 35, "through the alias `*a2`");
    }
}

/* An anchor exists once its node ends: `&a [*a]` is no cycle. */
static void
test_alias_rules(void **state)
{
    ph_ynode *root;

    (void)state;
    load_bad("a: &a [*a]\n", 1, 8, "unknown anchor `a`");
    load_bad("a: *nope\n", 1, 4, "unknown anchor `nope`");
    /* A redefined anchor: later aliases mean the later node. */
    root = load_ok("a: &x one\nb: &x two\nc: *x\n");
    assert_string_equal(ph_yaml_get(root, "c")->str, "two");
    assert_true(ph_yaml_get(root, "c") == ph_yaml_get(root, "b"));
    assert_int_equal(ph_yaml_get(root, "b")->refs, 2);
    ph_ynode_unref(root);
    load_bad("? [a]\n: b\n", 1, 3, "keys must be strings, not a list");
}

/* 200,000 keys: found in one pass, and a duplicate at the very end is
 * reported at its place with the first one's line. */
static const char *
write_keys(size_t n, const char *extra)
{
    static char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/keys.yaml", test_dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("base: &b\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  k%zu: v%zu\n", i, i);
    fputs(extra, f);
    fputs("merged:\n  <<: *b\n  k7: mine\n", f);
    fclose(f);
    return path;
}

static void
test_many_keys(void **state)
{
    const size_t n = 200000;
    const char *path;
    ph_ynode *root = NULL;
    ph_error_t err = NULL;
    char want[700];

    (void)state;
    alarm(DEADLINE_S);
    path = write_keys(n, "");
    assert_int_equal(ph_yaml_load(path, &root, &err), 0);
    assert_int_equal(ph_yaml_get(root, "base")->n, n);
    assert_int_equal(ph_yaml_get(root, "merged")->n, n);
    assert_string_equal(ph_yaml_get(ph_yaml_get(root, "merged"), "k7")->str, "mine");
    assert_string_equal(ph_yaml_get(ph_yaml_get(root, "merged"), "k199999")->str, "v199999");
    ph_ynode_unref(root);
    path = write_keys(n, "  k5: again\n");
    assert_int_equal(ph_yaml_load(path, &root, &err), -1);
    snprintf(want, sizeof want, "%s:%zu:3: duplicate key `k5` (first at line 7)", path, n + 2);
    assert_string_equal(err->msg, want);
    ph_error_free(&err);
    alarm(0);
}

static void
test_duplicates(void **state)
{
    (void)state;
    load_bad("a: 1\nb: 2\na: 3\n", 3, 1, "duplicate key `a` (first at line 1)");
    load_bad("m:\n  x: 1\n  y: {p: 1, q: 2, p: 3}\n", 3, 19, "duplicate key `p` (first at line 3)");
    /* Quoting does not make another key. */
    load_bad("a: 1\n\"a\": 2\n", 2, 1, "duplicate key `a`");
}

/* The YAML merge-key rules: explicit keys win, then earlier sources. */
static void
test_merge_keys(void **state)
{
    ph_ynode *root, *m;

    (void)state;
    root = load_ok("x: &x {a: 1, b: 1}\ny: &y {b: 2, c: 2}\n"
                   "m:\n  <<: [*x, *y]\n  c: 3\n"
                   "n:\n  c: 4\n  <<: *y\n");
    m = ph_yaml_get(root, "m");
    assert_int_equal(m->n, 3);
    assert_string_equal(ph_yaml_key(&m->pairs[0]), "c");
    assert_string_equal(ph_yaml_get(m, "a")->str, "1");
    assert_string_equal(ph_yaml_get(m, "b")->str, "1");
    assert_string_equal(ph_yaml_get(m, "c")->str, "3");
    assert_null(ph_yaml_get(m, "<<"));
    m = ph_yaml_get(root, "n");
    assert_string_equal(ph_yaml_get(m, "c")->str, "4");
    assert_string_equal(ph_yaml_get(m, "b")->str, "2");
    ph_ynode_unref(root);
    /* A merge of a merge: the source is resolved first. */
    root = load_ok("a: &a {p: 1}\nb: &b {<<: *a, q: 2}\nc: {<<: *b}\n");
    m = ph_yaml_get(root, "c");
    assert_int_equal(m->n, 2);
    assert_string_equal(ph_yaml_get(m, "p")->str, "1");
    ph_ynode_unref(root);
    /* A quoted "<<" is an ordinary key. */
    root = load_ok("a: &a {p: 1}\nb: {\"<<\": *a}\n");
    assert_non_null(ph_yaml_get(ph_yaml_get(root, "b"), "<<"));
    ph_ynode_unref(root);
    load_bad("a: {<<: 5}\n", 1, 9, "`<<` merges a mapping or a list of mappings, not a scalar");
    /* An alias has no place of its own: the node it names is reported. */
    load_bad("a: &a [1]\nb: {<<: [*a]}\n", 1, 4, "`<<` merges mappings, not a list");
}

/* A byte that is not UTF-8 is placed at its own line and column. */
static void
test_utf8_position(void **state)
{
    (void)state;
    load_bad("a: 1\nb: \"xy\xff\"\n", 2, 7, "invalid leading UTF-8 octet");
    load_bad("a: 1\nbb: \xc3\xa9\xc3(\n", 2, 6, "invalid trailing UTF-8 octet");
    load_bad("a: 1\nb: x\xc3(\n", 2, 5, "invalid trailing UTF-8 octet");
    load_bad("a: 1\n\n  c: \xe2\x82", 3, 6, "incomplete UTF-8 octet sequence");
}

static void
test_documents(void **state)
{
    ph_ynode **docs = NULL, *root = NULL;
    ph_error_t err = NULL;
    size_t n = 0;
    const char *path;

    (void)state;
    load_bad("a: 1\n---\nb: 2\n", 3, 1, "a second YAML document");
    path = tu_write("multi.yaml", "a: 1\n---\n---\n# empty\n---\nb: 2\n");
    assert_int_equal(ph_yaml_load_all(path, &docs, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(ph_yaml_get(docs[1], "b")->str, "2");
    assert_string_equal(ph_yaml_file(docs[1]), path);
    assert_int_equal(ph_yaml_get(docs[1], "b")->line, 6);
    ph_ynode_unref(docs[0]);
    ph_ynode_unref(docs[1]);
    free(docs);
    /* Anchors belong to their document. */
    path = tu_write("multi.yaml", "a: &x 1\n---\nb: *x\n");
    assert_int_equal(ph_yaml_load_all(path, &docs, &n, &err), -1);
    assert_non_null(strstr(err->msg, "multi.yaml:3:4: unknown anchor `x`"));
    ph_error_free(&err);
    load_bad("# nothing\n", 1, 1, "the file is empty");
    load_bad("", 1, 1, "the file is empty");
    load_bad("a: \"x\\0y\"\n", 1, 4, "a NUL character");
    path = tu_write("dir.yaml", "");
    unlink(path);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(ph_yaml_load(path, &root, &err), -1);
    assert_non_null(strstr(err->msg, "is not a regular file"));
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    assert_int_equal(ph_yaml_load("/nonexistent/x.yaml", &root, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
}

static void
test_values(void **state)
{
    ph_ynode *root;
    ph_error_t err = NULL;
    ph_strv v = { 0 };
    ph_kvv kv = { 0 };
    int b = -1;
    long long ns = 0;

    (void)state;
    root = load_ok("n1:\nn2: ~\nn3: null\nq: \"null\"\nt: !!str null\ne: ''\ns: \"a b\"\n"
                   "l: [a, 'b c']\nc: run -x 'a b'\nm: {K: v, E: , Z: \"\"}\nkl: [A=1, B, A=2]\n"
                   "yes: yes\noff: off\nbad: maybe\nd: 1m30s\nnoname: [A=1, =x]\n");
    assert_true(ph_yaml_is_null(ph_yaml_get(root, "n1")));
    assert_true(ph_yaml_is_null(ph_yaml_get(root, "n2")));
    assert_true(ph_yaml_is_null(ph_yaml_get(root, "n3")));
    assert_false(ph_yaml_is_null(ph_yaml_get(root, "q")));
    assert_false(ph_yaml_is_null(ph_yaml_get(root, "t")));
    assert_string_equal(ph_yaml_get(root, "t")->tag, "tag:yaml.org,2002:str");
    assert_false(ph_yaml_is_null(ph_yaml_get(root, "e")));
    assert_false(ph_yaml_is_null(ph_yaml_get(root, "l")));
    assert_null(ph_yaml_nonempty(ph_yaml_get(root, "e"), "e", &err));
    assert_non_null(strstr(err->msg, ":6:4: `e` is empty"));
    ph_error_free(&err);
    assert_null(ph_yaml_nonempty(ph_yaml_get(root, "n1"), "n1", &err));
    ph_error_free(&err);
    assert_null(ph_yaml_scalar(ph_yaml_get(root, "l"), "l", &err));
    assert_non_null(strstr(err->msg, "`l` must be a string, not a list"));
    ph_error_free(&err);
    assert_int_equal(ph_yaml_strv(ph_yaml_get(root, "l"), "l", 0, 0, &v, &err), 0);
    assert_int_equal(ph_yaml_strv(ph_yaml_get(root, "c"), "c", 1, 1, &v, &err), 0);
    assert_int_equal(v.n, 5);
    assert_string_equal(v.v[1], "b c");
    assert_string_equal(v.v[4], "a b");
    assert_null(v.v[5]);
    ph_strv_free(&v);
    assert_int_equal(ph_yaml_strv(ph_yaml_get(root, "c"), "c", 0, 0, &v, &err), -1);
    assert_non_null(strstr(err->msg, "`c` must be a list, not a scalar"));
    ph_error_free(&err);
    assert_int_equal(ph_yaml_kvv(ph_yaml_get(root, "m"), "m", &kv, &err), 0);
    assert_string_equal(ph_kvv_get(&kv, "K"), "v");
    assert_null(ph_kvv_get(&kv, "E"));
    assert_string_equal(ph_kvv_get(&kv, "Z"), "");
    assert_int_equal(ph_yaml_kvv(ph_yaml_get(root, "l"), "l", &kv, &err), 0);
    assert_int_equal(ph_yaml_kvv(ph_yaml_get(root, "noname"), "noname", &kv, &err), -1);
    assert_non_null(strstr(err->msg, "`noname` entry `=x` has no name"));
    ph_error_free(&err);
    assert_int_equal(ph_yaml_kvv(ph_yaml_get(root, "kl"), "kl", &kv, &err), 0);
    assert_int_equal(kv.n, 7);
    assert_string_equal(ph_kvv_get(&kv, "A"), "2");
    assert_null(ph_kvv_get(&kv, "b c"));
    assert_null(ph_kvv_get(&kv, "B"));
    ph_kvv_free(&kv);
    assert_int_equal(ph_yaml_bool(ph_yaml_get(root, "yes"), "yes", &b, &err), 0);
    assert_int_equal(b, 1);
    assert_int_equal(ph_yaml_bool(ph_yaml_get(root, "off"), "off", &b, &err), 0);
    assert_int_equal(b, 0);
    assert_int_equal(ph_yaml_bool(ph_yaml_get(root, "bad"), "bad", &b, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_yaml_duration(ph_yaml_get(root, "d"), "d", &ns, &err), 0);
    assert_true(ns == 90000000000LL);
    ph_ynode_unref(root);
    ph_ynode_unref(NULL);
}

/* The key/value list keeps its order and its last value, at any size. */
static void
test_kvv_index(void **state)
{
    ph_kvv kv = { 0 };
    char k[32], v[32];

    (void)state;
    alarm(DEADLINE_S); /* an index that stopped growing would fill and spin */
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "k%d", i % 300);
        snprintf(v, sizeof v, "%d", i);
        assert_int_equal(ph_kvv_set(&kv, k, v), 0);
    }
    assert_int_equal(kv.n, 300);
    for (int i = 0; i < 300; i++) {
        snprintf(k, sizeof k, "k%d", i);
        assert_string_equal(kv.v[i].key, k);
        snprintf(v, sizeof v, "%d", i + (i < 100 ? 900 : 600));
        assert_string_equal(ph_kvv_get(&kv, k), v);
    }
    assert_null(ph_kvv_get(&kv, "k300"));
    assert_int_equal(ph_kvv_set(&kv, "n", NULL), 0);
    assert_null(ph_kvv_get(&kv, "n"));
    assert_int_equal(kv.n, 301);
    ph_kvv_free(&kv);
    assert_null(ph_kvv_get(&kv, "k1"));
    alarm(0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depth_boundary),
        cmocka_unit_test(test_depth_huge),
        cmocka_unit_test(test_alias_depth),
        cmocka_unit_test(test_alias_rules),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_merge_keys),
        cmocka_unit_test(test_utf8_position),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_kvv_index),
    };
    return cmocka_run_group_tests_name("yaml", tests, tu_setup, tu_teardown);
}
