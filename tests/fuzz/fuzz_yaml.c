/* fuzz_yaml.c - libFuzzer target for the YAML helpers (harness/util/ph_yaml):
 * any bytes as a YAML file, through ph_yaml_load and every accessor the
 * loaders use, on every node.
 *
 * What it checks beyond "no crash, no leak, no undefined behaviour": the
 * promises of ph_yaml.h after a successful load (every mapping key is a
 * scalar, no mapping repeats a key, no `<<` is left), and that every error
 * is bad input (exit status 2) naming the file with a line and a column.
 * The input goes through a memfd, so no file is written. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
probe(ph_yaml *y, yaml_node_t *n)
{
    ph_error_t err = NULL;
    ph_strv v = { 0 };
    ph_kvv kv = { 0 };
    char *dup = NULL;
    long long ns;
    int b;

    if (ph_yaml_line(n) < 1 || ph_yaml_col(n) < 1)
        abort();
    ph_yaml_scalar(y, n, "k", &err);
    check_error(&err);
    ph_yaml_nonempty(y, n, "k", &err);
    check_error(&err);
    ph_yaml_dup(y, n, "k", &dup, &err);
    check_error(&err);
    free(dup);
    for (int allow = 0; allow < 2; allow++)
        for (int split = 0; split < 2; split++) {
            ph_yaml_strv(y, n, "k", allow, split, &v, &err);
            check_error(&err);
            ph_strv_free(&v);
        }
    ph_yaml_kvv(y, n, "k", &kv, &err);
    check_error(&err);
    ph_kvv_free(&kv);
    ph_yaml_bool(y, n, "k", &b, &err);
    check_error(&err);
    ph_yaml_duration(y, n, "k", &ns, &err);
    check_error(&err);
    (void)ph_yaml_is_null(n);
    if (n->type == YAML_SCALAR_NODE) {
        char buf[16];
        const char *s = ph_signal_normalise((const char *)n->data.scalar.value, buf);
        if (s != NULL && strncmp(s, "SIG", 3) != 0)
            abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_yaml y;
    ph_error_t err = NULL;

    if (fd < 0) {
        fd = memfd_create("fuzz.yaml", MFD_CLOEXEC);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();

    if (ph_yaml_load(&y, path, &err) < 0) {
        check_error(&err);
        return 0;
    }
    for (yaml_node_t *n = y.doc.nodes.start; n < y.doc.nodes.top; n++) {
        if (n->type == YAML_MAPPING_NODE) {
            PH_YAML_FOREACH_PAIR(n, pair) {
                yaml_node_t *k = ph_yaml_node(&y, pair->key);
                if (k == NULL || k->type != YAML_SCALAR_NODE || ph_yaml_node(&y, pair->value) == NULL)
                    abort();
                if (k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strcmp(ph_yaml_key(&y, pair), "<<") == 0)
                    abort();
            }
            if (ph_yaml_check_dups(&y, n, &err) < 0)
                abort();
        }
        probe(&y, n);
    }
    ph_yaml_free(&y);
    return 0;
}
