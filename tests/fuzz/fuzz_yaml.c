/* fuzz_yaml.c - libFuzzer target for the YAML helpers (harness/util/ph_yaml):
 * any bytes as a YAML file, through ph_yaml_load_all and every accessor the
 * loaders use, on every node.
 *
 * What it checks beyond "no crash, no leak, no undefined behaviour": the
 * promises of ph_yaml.h after a successful load (every mapping key is a
 * scalar, no mapping repeats a key, no `<<` is left, no node is nested
 * deeper than PH_YAML_MAX_DEPTH, heights are consistent, every node has a
 * line and a column), and that every error is bad input (exit status 2)
 * naming the file with a line and a column.  The input goes through a
 * memfd, so no file is written. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_yaml.h"

static int fd = -1;
static char path[64];

static void
check_error(ph_error_t *err)
{
    char prefix[80];

    if (*err == NULL)
        return;
    /* ENOMEM is a failure, not bad input; libFuzzer's -rss_limit_mb may
     * cause it. */
    if ((*err)->status != PH_EXIT_USAGE && (*err)->errnum == 0)
        abort();
    snprintf(prefix, sizeof prefix, "%s:", path);
    if ((*err)->status == PH_EXIT_USAGE && strncmp((*err)->msg, prefix, strlen(prefix)) != 0)
        abort();
    ph_error_free(err);
}

/* Every accessor on node N, each on its own error. */
static void
probe(const ph_ynode *n)
{
    ph_error_t err = NULL;
    ph_strv v = { 0 };
    ph_kvv kv = { 0 };
    char *dup = NULL;
    long long ns;
    int b;

    if (n->line < 1 || n->col < 1 || strcmp(ph_yaml_file(n), path) != 0)
        abort();
    ph_yaml_scalar(n, "k", &err);
    check_error(&err);
    ph_yaml_nonempty(n, "k", &err);
    check_error(&err);
    ph_yaml_dup(n, "k", &dup, &err);
    check_error(&err);
    free(dup);
    for (int allow = 0; allow < 2; allow++)
        for (int split = 0; split < 2; split++) {
            ph_yaml_strv(n, "k", allow, split, &v, &err);
            check_error(&err);
            ph_strv_free(&v);
        }
    ph_yaml_kvv(n, "k", &kv, &err);
    check_error(&err);
    ph_kvv_free(&kv);
    ph_yaml_bool(n, "k", &b, &err);
    check_error(&err);
    ph_yaml_duration(n, "k", &ns, &err);
    check_error(&err);
    (void)ph_yaml_is_null(n);
    if (n->kind == PH_Y_SCALAR) {
        char buf[16];
        const char *s = ph_signal_normalise(n->str, buf);

        if (s != NULL && strncmp(s, "SIG", 3) != 0)
            abort();
        if (strlen(n->str) != n->len)
            abort();
    }
}

/* Walk the tree (shared nodes once), checking what the load promises.
 * DEPTH counts the collections N sits in, N included. */
static void
walk(const ph_ynode *n, int depth, unsigned mark)
{
    int tallest = -1;

    probe(n);
    if (n->kind == PH_Y_SCALAR)
        return; /* a scalar is in DEPTH - 1 collections: 64 around it are allowed */
    if (depth > PH_YAML_MAX_DEPTH)
        abort();
    if (n->mark == mark)
        return;
    ((ph_ynode *)n)->mark = mark;
    for (size_t i = 0; n->kind == PH_Y_SEQ && i < n->n; i++) {
        walk(n->items[i], depth + 1, mark);
        if (n->items[i]->height > tallest)
            tallest = n->items[i]->height;
    }
    for (size_t i = 0; n->kind == PH_Y_MAP && i < n->n; i++) {
        const ph_ynode *k = n->pairs[i].key;

        if (k->kind != PH_Y_SCALAR || (k->plain && strcmp(k->str, "<<") == 0))
            abort();
        for (size_t j = 0; j < i && n->n < 64; j++)
            if (strcmp(n->pairs[j].key->str, k->str) == 0)
                abort();
        walk(n->pairs[i].value, depth + 1, mark);
        if (n->pairs[i].value->height > tallest)
            tallest = n->pairs[i].value->height;
    }
    /* A merge may leave the height one above what remains. */
    if (n->height < tallest + 1)
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_ynode **docs = NULL;
    size_t n = 0;
    ph_error_t err = NULL;

    if (fd < 0) {
        fd = memfd_create("fuzz.yaml", MFD_CLOEXEC);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ph_log_set_level(PH_LOG_ERROR);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();

    if (ph_yaml_load_all(path, &docs, &n, &err) < 0) {
        if (docs != NULL || n != 0)
            abort();
        check_error(&err);
        return 0;
    }
    if (n == 0)
        abort();
    for (size_t i = 0; i < n; i++) {
        walk(docs[i], docs[i]->kind == PH_Y_SCALAR ? 0 : 1, ph_yaml_next_mark());
        ph_ynode_unref(docs[i]);
    }
    free(docs);
    return 0;
}
