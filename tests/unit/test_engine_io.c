/* test_engine_io.c - looking into containers and copying into them, and
 * reading one output stream of a container, against the real local Engine
 * (as test_engine.c: no Engine is a failure, everything made is labelled
 * with this process's pid, named ph-unittest-engine-io-<pid>-..., and
 * removed at the end, what a killed run left at the next start).
 *
 * These are what an image probe (does this image have apt-get? a C
 * library?), a converter (perf.data in, `perf script` text out) and a
 * conversion's results written back into a stopped container need. */
#include "test_engine_util.h"

#include <jansson.h>
#include <time.h>

#include "ph_engine.h"
#include "ph_tar.h"

#define IMAGE "debian:bookworm-slim"
#define LABEL_KEY "io.profharness.unittest.engine-io"

static ph_engine *e;
static char label_val[32];

typedef struct membuf {
    char data[8192];
    size_t len;
    int calls;
} membuf;

static int
collect_cb(void *ud, const char *data, size_t len)
{
    membuf *m = ud;

    assert_true(m->len + len < sizeof m->data);
    memcpy(m->data + m->len, data, len);
    m->len += len;
    m->data[m->len] = '\0';
    m->calls++;
    return 0;
}

/* Checks a stream of "one\ntwo\n" then x's, however it is cut. */
typedef struct checker {
    size_t n;
    int bad;
} checker;

static int
check_cb(void *ud, const char *data, size_t len)
{
    checker *c = ud;
    static const char head[] = "one\ntwo\n";

    for (size_t i = 0; i < len; i++, c->n++)
        c->bad |= data[i] != (c->n < 8 ? head[c->n] : 'x');
    return 0;
}

static int
refuse_cb(void *ud, const char *data, size_t len)
{
    (void)data;
    (void)len;
    return ph_fail((ph_error_t *)ud, 0, "the callback refused");
}

typedef struct reader {
    const char *data;
    size_t len, off;
} reader;

static ssize_t
read_cb(void *ud, char *buf, size_t len)
{
    reader *r = ud;
    size_t n = r->len - r->off < len ? r->len - r->off : len;

    memcpy(buf, r->data + r->off, n);
    r->off += n;
    return (ssize_t)n;
}

static char *
create(const char *suffix, const char *script)
{
    ph_error_t err = NULL;
    char name[96], *id = NULL;
    json_t *cfg = json_pack("{s:s, s:[s,s,s], s:{s:s}}", "Image", IMAGE, "Cmd", "sh", "-c", script, "Labels",
                            LABEL_KEY, label_val);

    snprintf(name, sizeof name, "ph-unittest-engine-io-%d-%s", (int)getpid(), suffix);
    if (ph_engine_container_create(e, name, cfg, &id, &err) < 0)
        fail_msg("%s", err->msg);
    json_decref(cfg);
    return id;
}

static int
setup(void **state)
{
    ph_error_t err = NULL;

    (void)state;
    tu_engine_sweep();
    snprintf(label_val, sizeof label_val, "%d", (int)getpid());
    e = ph_engine_new(&err);
    if (e == NULL || ph_engine_ping(e, &err) < 0) {
        fprintf(stderr, "test_engine_io: FAILED: no Docker Engine answers: %s\n", err ? err->msg : "?");
        ph_error_free(&err);
        return -1;
    }
    return tu_setup(state);
}

static int
teardown(void **state)
{
    char kv[96];
    const char *labels[] = { kv };
    json_t *list = NULL, *c;
    size_t i;

    snprintf(kv, sizeof kv, "%s=%s", LABEL_KEY, label_val);
    if (ph_engine_containers_by_label(e, labels, 1, &list, NULL) == 0)
        json_array_foreach(list, i, c)
            ph_engine_container_remove(e, json_string_value(json_object_get(c, "Id")), 1, NULL);
    json_decref(list);
    ph_engine_free(e);
    tu_engine_sweep();
    return tu_teardown(state);
}

/* Paths in a container that was created and never started: what the
 * image probe asks. */
static void
test_stat(void **state)
{
    ph_error_t err = NULL;
    char *id = create("stat", "true");
    int found = -1;

    (void)state;
    assert_int_equal(ph_engine_archive_stat(e, id, "/bin/sh", &found, &err), 0);
    assert_int_equal(found, 1);
    /* bookworm's /lib64/ld-linux-x86-64.so.2 is a link: it counts. */
    assert_int_equal(ph_engine_archive_stat(e, id, "/usr/bin/apt-get", &found, &err), 0);
    assert_int_equal(found, 1);
    assert_int_equal(ph_engine_archive_stat(e, id, "/sbin/apk", &found, &err), 0);
    assert_int_equal(found, 0);
    assert_int_equal(ph_engine_archive_stat(e, id, "/no/such dir/x", &found, &err), 0);
    assert_int_equal(found, 0);
    /* A missing container is an error, not a missing path. */
    found = -1;
    assert_int_equal(ph_engine_archive_stat(e, "ph-no-such-container", "/bin/sh", &found, &err), -1);
    assert_int_equal(found, 0);
    assert_non_null(strstr(err->msg, "No such container"));
    assert_non_null(strstr(err->msg, "`/bin/sh`"));
    ph_error_free(&err);
    assert_int_equal(ph_engine_archive_stat(e, id, "/bin/sh", NULL, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    free(id);
}

/* A tar in, into a container never started and into one that ended; the
 * files are there after. */
static void
test_put(void **state)
{
    static const ph_tar_extra files[] = {
        { .name = "in/a.txt", .data = "alpha\n", .len = 6, .mode = 0644 },
        { .name = "in/sub/b.txt", .data = "beta\n", .len = 5, .mode = 0600 },
    };
    ph_error_t err = NULL;
    char *id = create("put", "cat /tmp/in/a.txt /tmp/in/sub/b.txt");
    void *tar = NULL;
    size_t tar_len = 0;
    reader r;
    membuf out = { 0 };
    long code = -1;
    int timed_out = 0, found = 0;

    (void)state;
    assert_int_equal(ph_tar_context_build(NULL, files, 2, 1 << 20, &tar, &tar_len, &err), 0);
    r = (reader){ tar, tar_len, 0 };
    assert_int_equal(ph_engine_archive_put(e, id, "/tmp", read_cb, &r, (long long)tar_len, &err), 0);
    assert_int_equal(r.off, tar_len);
    assert_int_equal(ph_engine_container_start(e, id, &err), 0);
    assert_int_equal(ph_engine_container_wait(e, id, 60, &code, &timed_out, &err), 0);
    assert_false(timed_out);
    assert_int_equal(code, 0);
    assert_int_equal(ph_engine_container_output(e, id, 1, collect_cb, &out, &err), 0);
    assert_string_equal(out.data, "alpha\nbeta\n");

    /* Into the stopped container, where its files are. */
    r = (reader){ tar, tar_len, 0 };
    assert_int_equal(ph_engine_archive_put(e, id, "/opt", read_cb, &r, -1, &err), 0);
    assert_int_equal(ph_engine_archive_stat(e, id, "/opt/in/sub/b.txt", &found, &err), 0);
    assert_int_equal(found, 1);

    /* A directory that is not there is the Engine's error, with ours. */
    r = (reader){ tar, tar_len, 0 };
    assert_int_equal(ph_engine_archive_put(e, id, "/no/such/dir", read_cb, &r, (long long)tar_len, &err), -1);
    assert_non_null(strstr(err->msg, "copy a tar into `/no/such/dir`"));
    ph_error_free(&err);
    assert_int_equal(ph_engine_archive_put(e, id, "/opt", NULL, NULL, 0, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    free(tar);
    free(id);
}

/* One stream of the output: stdout without stderr's lines, and the other
 * way round; a refusing callback's error is the one reported. */
static void
test_output(void **state)
{
    ph_error_t err = NULL;
    char *id = create("out", "echo one; echo err1 >&2; echo two; echo err2 >&2; head -c 20000 /dev/zero | tr '\\0' x");
    membuf out = { 0 }, errs = { 0 };
    checker chk = { 0 };
    long code = -1;
    int timed_out = 0;

    (void)state;
    assert_int_equal(ph_engine_container_start(e, id, &err), 0);
    assert_int_equal(ph_engine_container_wait(e, id, 60, &code, &timed_out, &err), 0);
    assert_int_equal(code, 0);
    assert_int_equal(ph_engine_container_output(e, id, 2, collect_cb, &errs, &err), 0);
    assert_string_equal(errs.data, "err1\nerr2\n");
    /* 20 kB: more than one frame, all of it in order. */
    assert_int_equal(ph_engine_container_output(e, id, 1, check_cb, &chk, &err), 0);
    assert_int_equal(chk.n, 8 + 20000);
    assert_false(chk.bad);
    assert_int_equal(ph_engine_container_output(e, id, 1, refuse_cb, &err, &err), -1);
    assert_string_equal(err->msg, "the callback refused");
    ph_error_free(&err);
    assert_int_equal(ph_engine_container_output(e, id, 3, collect_cb, &out, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    free(id);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat),
        cmocka_unit_test(test_put),
        cmocka_unit_test(test_output),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
