/* test_engine.c - the Engine client against the real local Engine (the
 * test runner starts one): negotiation, error messages, the container
 * lifecycle, streaming archive and logs.  No Engine is a failure, not a skip. */
#include "test_util.h"

#include <jansson.h>

#include "ph_engine.h"

static ph_engine *e;
static char *cid;
static char label[64];

static int
setup(void **state)
{
    ph_error_t err = NULL;

    (void)state;
    unsetenv("DOCKER_HOST");
    e = ph_engine_new(&err);
    if (e == NULL || ph_engine_ping(e, &err) < 0) {
        fprintf(stderr, "no Docker Engine answers: %s\n", err ? err->msg : "?");
        return -1;
    }
    snprintf(label, sizeof label, "io.profharness.unittest=%d", (int)getpid());
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    if (cid)
        ph_engine_container_remove(e, cid, 1, NULL);
    free(cid);
    ph_engine_free(e);
    return 0;
}

static void
test_version_negotiated(void **state)
{
    const char *v = ph_engine_api_version(e);
    int maj = 0, min = 0;

    (void)state;
    assert_int_equal(sscanf(v, "%d.%d", &maj, &min), 2);
    assert_int_equal(maj, 1);
    assert_true(min >= 24 && min <= 41);
}

static void
test_unreachable_engine(void **state)
{
    static const char *const hosts[] = { "unix:///nonexistent/docker.sock", "tcp://127.0.0.1:1" };
    ph_error_t err = NULL;

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        ph_engine *x;

        setenv("DOCKER_HOST", hosts[i], 1);
        x = ph_engine_new(&err);
        assert_non_null(x);
        assert_int_equal(ph_engine_ping(x, &err), -1);
        assert_non_null(strstr(err->msg, hosts[i]));
        assert_non_null(strstr(err->hint, "engine-up.sh"));
        ph_error_free(&err);
        ph_engine_free(x);
    }
    setenv("DOCKER_HOST", "ftp://nope", 1);
    assert_null(ph_engine_new(&err));
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "DOCKER_HOST"));
    ph_error_free(&err);
    unsetenv("DOCKER_HOST");
}

static void
test_engine_message_shown(void **state)
{
    ph_error_t err = NULL;
    json_t *out = NULL;
    long st = 0;
    int found = 1;

    (void)state;
    assert_int_equal(ph_engine_container_inspect(e, "ph-no-such-container", &out, &found, &err), 0);
    assert_false(found);
    assert_int_equal(ph_engine_request(e, "GET", "/containers/ph-no-such-container/json", NULL, &out, &st, &err), -1);
    assert_int_equal(st, 404);
    assert_non_null(strstr(err->msg, "No such container"));
    ph_error_free(&err);
    /* A bad configuration: the Engine's own words come back. */
    {
        json_t *cfg = json_pack("{s:s, s:{s:s}}", "Image", "debian:bookworm-slim", "HostConfig", "NetworkMode",
                                "ph-no-such-network");
        char *id = NULL;

        assert_int_equal(ph_engine_container_create(e, NULL, cfg, &id, &err), 0);
        assert_int_equal(ph_engine_container_start(e, id, &err), -1);
        assert_non_null(strstr(err->msg, "ph-no-such-network"));
        ph_error_free(&err);
        ph_engine_container_remove(e, id, 1, NULL);
        free(id);
        json_decref(cfg);
    }
}

typedef struct counter {
    size_t bytes;
    char head[512];
} counter;

static int
count_cb(void *ud, const char *data, size_t len)
{
    counter *c = ud;

    for (size_t i = 0; i < len && c->bytes + i < sizeof c->head; i++)
        c->head[c->bytes + i] = data[i];
    c->bytes += len;
    return 0;
}

static void
test_lifecycle_logs_archive(void **state)
{
    ph_error_t err = NULL;
    json_t *cfg, *list = NULL;
    const char *labels[] = { label };
    long code = -1;
    int timed_out = 0;
    counter c = { 0 };
    char logpath[300];

    (void)state;
    tu_mkdtemp();
    cfg = json_pack("{s:s, s:[s,s,s], s:{s:s}}", "Image", "debian:bookworm-slim", "Cmd", "sh", "-c",
                    "mkdir -p /opt/out && echo data > /opt/out/f.txt && echo hi && sleep 30", "Labels",
                    "io.profharness.unittest", label + strlen("io.profharness.unittest="));
    assert_int_equal(ph_engine_container_create(e, NULL, cfg, &cid, &err), 0);
    json_decref(cfg);
    assert_int_equal(ph_engine_container_start(e, cid, &err), 0);
    assert_int_equal(ph_engine_containers_by_label(e, labels, 1, &list, &err), 0);
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);

    assert_int_equal(ph_engine_container_wait(e, cid, 1, &code, &timed_out, &err), 0);
    assert_true(timed_out);

    assert_int_equal(ph_engine_archive_get(e, cid, "/opt/out", count_cb, &c, &err), 0);
    assert_true(c.bytes >= 1024);
    assert_memory_equal(c.head + 257, "ustar", 5);
    assert_int_equal(ph_engine_archive_get(e, cid, "/no/such/dir", count_cb, &c, &err), -1);
    assert_non_null(strstr(err->msg, "/no/such/dir"));
    ph_error_free(&err);

    assert_int_equal(ph_engine_container_kill(e, cid, "SIGKILL", &err), 0);
    assert_int_equal(ph_engine_container_wait(e, cid, 30, &code, &timed_out, &err), 0);
    assert_false(timed_out);
    assert_int_equal(code, 137);
    {
        int fd;
        snprintf(logpath, sizeof logpath, "%s/logs", test_dir);
        fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ph_engine_container_logs(e, cid, 0, -1, fd, &err), 0);
        close(fd);
    }
    {
        FILE *f = fopen(logpath, "r");
        char buf[64] = "";
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof buf, f));
        fclose(f);
        assert_string_equal(buf, "hi\n"); /* demultiplexed: no 8-byte frame header */
    }
    assert_int_equal(ph_engine_container_remove(e, cid, 0, &err), 0);
    free(cid);
    cid = NULL;
    tu_rmdir();
}

static void
progress(void *ud, const char *line)
{
    (*(int *)ud)++;
    (void)line;
}

/* A minimal in-memory tar of one Dockerfile, written by hand. */
static size_t
one_file_tar(const char *name, const char *body, char *out, size_t cap)
{
    size_t len = strlen(body), total = 512 + ((len + 511) / 512) * 512 + 1024;
    unsigned sum = 0;
    char *h = out;

    assert_true(total <= cap);
    memset(out, 0, total);
    snprintf(h, 100, "%s", name);
    snprintf(h + 100, 8, "0000644");
    snprintf(h + 108, 8, "0000000");
    snprintf(h + 116, 8, "0000000");
    snprintf(h + 124, 12, "%011zo", len);
    snprintf(h + 136, 12, "%011o", 0);
    h[156] = '0';
    memcpy(h + 257, "ustar\0" "00", 8);
    memset(h + 148, ' ', 8);
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)h[i];
    snprintf(h + 148, 8, "%06o", sum);
    memcpy(out + 512, body, len);
    return total;
}

static void
test_build(void **state)
{
    static char tar[8192];
    ph_error_t err = NULL;
    char tag[64], *id = NULL;
    int lines = 0;
    size_t n;

    (void)state;
    snprintf(tag, sizeof tag, "ph-unittest-build:%d", (int)getpid());
    n = one_file_tar("Dockerfile", "FROM debian:bookworm-slim\nRUN echo built > /x\n", tar, sizeof tar);
    assert_int_equal(ph_engine_build(e, tar, n, "Dockerfile", tag, NULL, NULL, progress, &lines, &id, &err), 0);
    assert_non_null(id);
    assert_int_equal(strncmp(id, "sha256:", 7), 0);
    assert_true(lines >= 2);
    free(id);
    id = NULL;
    {
        char p[128];
        long st;
        snprintf(p, sizeof p, "/images/%s?force=1", tag);
        ph_engine_request(e, "DELETE", p, NULL, NULL, &st, NULL);
    }
    n = one_file_tar("Dockerfile", "FROM debian:bookworm-slim\nRUN exit 3\n", tar, sizeof tar);
    assert_int_equal(ph_engine_build(e, tar, n, "Dockerfile", tag, NULL, NULL, NULL, NULL, &id, &err), -1);
    assert_non_null(strstr(err->msg, "returned a non-zero code: 3"));
    ph_error_free(&err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_negotiated),
        cmocka_unit_test(test_unreachable_engine),
        cmocka_unit_test(test_engine_message_shown),
        cmocka_unit_test(test_lifecycle_logs_archive),
        cmocka_unit_test(test_build),
    };
    return cmocka_run_group_tests_name("engine", tests, setup, teardown);
}
