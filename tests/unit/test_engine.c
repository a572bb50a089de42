/* test_engine.c - the Engine client against the real local Engine.
 *
 * No Engine is a failure, not a skip: the group setup pings and fails
 * loudly, so cmocka reports the whole group as failed.  Everything created
 * carries a label unique to this process and a name with the pid
 * (ph-unittest-engine-<pid>-...); the group teardown removes whatever a
 * failed test left behind, and the setup what a killed run left
 * (tu_engine_sweep).  Every library
 * call has its own timeout; where the test waits for the container it polls
 * against a deadline instead of sleeping a fixed time.
 *
 * The demultiplexer and stalled transfers are test_engine_stream.c's; here
 * everything talks to the Engine.  The build context is a tar written by
 * hand below (ustar headers, 512-byte blocks). */
#include "test_engine_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "ph_engine.h"
#include "ph_engine_int.h" /* ph_engine_stage_name */
#include "ph_timing.h"
#include "ph_util.h"

#define IMAGE "debian:bookworm-slim"
#define LABEL_KEY "io.profharness.unittest.engine"

static ph_engine *e;
static char label_val[32];
static char label_kv[96]; /* LABEL_KEY=label_val */
static char tag[96];      /* has a '/' so that image paths need escaping */
static char *docker_host; /* the caller's DOCKER_HOST, restored after tests that change it */

static void
restore_docker_host(void)
{
    if (docker_host)
        setenv("DOCKER_HOST", docker_host, 1);
    else
        unsetenv("DOCKER_HOST");
}

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

/* Remove every container this process labelled, and its image. */
static void
cleanup_ours(void)
{
    const char *labels[] = { label_kv };
    json_t *list = NULL;
    size_t i;
    json_t *c;

    if (ph_engine_containers_by_label(e, labels, 1, &list, NULL) == 0) {
        json_array_foreach(list, i, c)
            ph_engine_container_remove(e, json_string_value(json_object_get(c, "Id")), 1, NULL);
    }
    json_decref(list);
    ph_engine_image_remove(e, tag, 1, NULL);
}

static int
setup(void **state)
{
    ph_error_t err = NULL;
    int found = 0;

    (void)state;
    tu_engine_sweep(); /* what a killed run of this suite left behind */
    /* The Engine under test is the caller's: DOCKER_HOST is honoured. */
    docker_host = getenv("DOCKER_HOST") ? strdup(getenv("DOCKER_HOST")) : NULL;
    snprintf(label_val, sizeof label_val, "%d", (int)getpid());
    snprintf(label_kv, sizeof label_kv, "%s=%s", LABEL_KEY, label_val);
    snprintf(tag, sizeof tag, "ph-unittest/engine-build:%d", (int)getpid());
    e = ph_engine_new(&err);
    if (e == NULL || ph_engine_ping(e, &err) < 0) {
        fprintf(stderr, "test_engine: FAILED: no Docker Engine answers: %s\n  hint: %s\n",
                err ? err->msg : "?", err ? err->hint : "");
        ph_error_free(&err);
        return -1;
    }
    if (ph_engine_image_inspect(e, IMAGE, NULL, &found, &err) < 0 || !found) {
        fprintf(stderr, "test_engine: FAILED: image %s is not on this Engine (%s); run scripts/base-image.sh\n",
                IMAGE, err ? err->msg : "not found");
        ph_error_free(&err);
        return -1;
    }
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    restore_docker_host();
    ph_engine_set_max_body(e, 0); /* a failed test may have left it low */
    cleanup_ours();
    ph_engine_free(e);
    free(docker_host);
    tu_engine_sweep(); /* by name, with a client of its own: what the labels missed */
    return 0;
}

/* ---- connection, negotiation, errors ----------------------------------- */

static void
test_ping_negotiates_version(void **state)
{
    ph_error_t err = NULL;
    json_t *v = NULL;
    const char *server;
    int smaj, smin;

    (void)state;
    assert_int_equal(ph_engine_ping(e, &err), 0);
    assert_int_equal(ph_engine_request(e, "GET", "/version", NULL, &v, NULL, &err), 0);
    server = json_string_value(json_object_get(v, "ApiVersion"));
    assert_non_null(server);
    assert_int_equal(sscanf(server, "%d.%d", &smaj, &smin), 2);
    /* The lower of the server's and ours. */
    if (smaj > 1 || (smaj == 1 && smin >= 41))
        assert_string_equal(ph_engine_api_version(e), PH_ENGINE_MAX_API);
    else
        assert_string_equal(ph_engine_api_version(e), server);
    json_decref(v);

    /* A fresh client negotiates lazily, on its first real call. */
    {
        ph_engine *x = ph_engine_new(&err);
        json_t *list = NULL;

        assert_non_null(x);
        assert_string_equal(ph_engine_api_version(x), "");
        assert_int_equal(ph_engine_request(x, "GET", "/containers/json?limit=1", NULL, &list, NULL, &err), 0);
        assert_true(json_is_array(list));
        assert_string_equal(ph_engine_api_version(x), ph_engine_api_version(e));
        json_decref(list);
        ph_engine_free(x);
    }
}

/* A 127.0.0.1 port nothing listens on: bind one, note it, close it. */
static int
dead_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
    socklen_t l = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void
test_unreachable_engine(void **state)
{
    char tcp[64];
    const char *hosts[] = { "unix:///nonexistent.sock", tcp };
    ph_error_t err = NULL;

    (void)state;
    snprintf(tcp, sizeof tcp, "tcp://127.0.0.1:%d", dead_port());
    for (size_t i = 0; i < 2; i++) {
        ph_engine *x;
        json_t *out = NULL;
        int found = 1;
        char want[128];

        setenv("DOCKER_HOST", hosts[i], 1);
        x = ph_engine_new(&err);
        assert_non_null(x);
        assert_int_equal(ph_engine_ping(x, &err), -1);
        assert_non_null(err);
        snprintf(want, sizeof want, "cannot reach the Docker Engine at %s: Couldn't connect to server", hosts[i]);
        if (strstr(err->msg, want) == NULL)
            fail_msg("message `%s` lacks `%s`", err->msg, want);
        assert_int_equal(err->status, PH_EXIT_FAILURE);
        assert_string_equal(err->hint,
                            "is dockerd running? start one with scripts/engine-up.sh, or set DOCKER_HOST");
        ph_error_free(&err);
        /* The lazy ping of a wrapper says the same, with its context. */
        assert_int_equal(ph_engine_container_inspect(x, "whatever", &out, &found, &err), -1);
        assert_null(out);
        assert_false(found);
        assert_non_null(strstr(err->msg, want));
        assert_non_null(strstr(err->hint, "engine-up.sh"));
        ph_error_free(&err);
        ph_engine_free(x);
    }
    {
        /* The docker CLI's parsing: "unix://" and "tcp://" are its defaults,
         * so these are the ones still wrong (test_engine_endpoint has all). */
        static const char *const bad[] = { "ftp://nope", "tcp://h:x", "ssh://me@h", "/var/run/x" };

        for (size_t i = 0; i < PH_ARRAY_LEN(bad); i++) {
            setenv("DOCKER_HOST", bad[i], 1);
            assert_null(ph_engine_new(&err));
            assert_non_null(err);
            assert_int_equal(err->status, PH_EXIT_USAGE);
            assert_non_null(strstr(err->msg, "DOCKER_HOST"));
            assert_non_null(strstr(err->msg, bad[i]));
            ph_error_free(&err);
        }
    }
    restore_docker_host();
}

static void
test_engine_message_shown(void **state)
{
    ph_error_t err = NULL;
    json_t *out = NULL, *cfg;
    long st = 0;
    int found = 1;
    char name[96], want[160], *id = NULL, *id2 = NULL;

    (void)state;
    /* Not found through the wrapper is an answer, not an error... */
    assert_int_equal(ph_engine_container_inspect(e, "ph-no-such-container", &out, &found, &err), 0);
    assert_null(err);
    assert_false(found);
    assert_null(out);
    /* ...and through the raw call, a 404 carrying the Engine's words. */
    assert_int_equal(ph_engine_request(e, "GET", "/containers/ph-no-such-container/json", NULL, &out, &st, &err),
                     -1);
    assert_int_equal(st, 404);
    assert_null(out);
    assert_int_equal(err->status, PH_EXIT_FAILURE);
    assert_string_equal(err->msg,
                        "GET /containers/ph-no-such-container/json: No such container: ph-no-such-container");
    ph_error_free(&err);

    /* An invalid configuration: the Engine refuses it, in its own words. */
    snprintf(name, sizeof name, "ph-unittest-engine-%d-bad", (int)getpid());
    cfg = json_pack("{s:s, s:{s:s}, s:{s:i}}", "Image", IMAGE, "Labels", LABEL_KEY, label_val, "HostConfig",
                    "Memory", 1);
    assert_int_equal(ph_engine_container_create(e, name, cfg, &id, &err), -1);
    assert_null(id);
    snprintf(want, sizeof want, "create container `%s`: ", name);
    assert_int_equal(strncmp(err->msg, want, strlen(want)), 0);
    assert_non_null(strstr(err->msg, "Minimum memory limit"));
    ph_error_free(&err);
    json_decref(cfg);

    /* A name conflict: the brief's own example of the shape. */
    cfg = json_pack("{s:s, s:{s:s}}", "Image", IMAGE, "Labels", LABEL_KEY, label_val);
    assert_int_equal(ph_engine_container_create(e, name, cfg, &id, &err), 0);
    assert_non_null(id);
    assert_int_equal(ph_engine_container_create(e, name, cfg, &id2, &err), -1);
    assert_null(id2);
    snprintf(want, sizeof want, "create container `%s`: Conflict. The container name", name);
    if (strncmp(err->msg, want, strlen(want)) != 0)
        fail_msg("got `%s`", err->msg);
    ph_error_free(&err);
    /* An id or name is one path segment, escaped: with a `/`, `?`, `#`,
     * `%` or a blank it names no container (not this one by a prefix, not
     * another endpoint), and the Engine is told it byte for byte. */
    {
        static const char *const tails[] = { "/json?all=1", "#frag", "%2Fx", " x" };
        char odd[160];

        for (size_t i = 0; i < PH_ARRAY_LEN(tails); i++) {
            snprintf(odd, sizeof odd, "%s%s", name, tails[i]);
            found = 1;
            if (ph_engine_container_inspect(e, odd, &out, &found, &err) < 0)
                fail_msg("inspect `%s`: %s", odd, err->msg);
            if (found)
                fail_msg("inspect `%s` found a container", odd);
            assert_int_equal(ph_engine_container_start(e, odd, &err), -1);
            snprintf(want, sizeof want, "No such container: %s", odd);
            if (strstr(err->msg, want) == NULL)
                fail_msg("start `%s`: got `%s`", odd, err->msg);
            ph_error_free(&err);
        }
    }
    /* 304 is an answer for start and stop, a 404 is not. */
    assert_int_equal(ph_engine_container_start(e, "ph-no-such-container", &err), -1);
    assert_non_null(strstr(err->msg, "start container `ph-no-such-container`: No such container"));
    ph_error_free(&err);
    assert_int_equal(ph_engine_container_stop(e, "ph-no-such-container", 1, &err), -1);
    assert_non_null(strstr(err->msg, "No such container"));
    ph_error_free(&err);
    /* start -> 409 "is not running"?  No: kill of a created container. */
    assert_int_equal(ph_engine_container_kill(e, id, "SIGKILL", &err), -1);
    assert_non_null(strstr(err->msg, "is not running"));
    ph_error_free(&err);
    assert_int_equal(ph_engine_container_remove(e, id, 0, &err), 0);
    free(id);
    json_decref(cfg);
}

static void
test_arguments_checked(void **state)
{
    ph_error_t err = NULL;
    json_t *out = NULL;
    int found = 0, timed_out = 0;
    long code = 0;
    char *id = NULL;
    const char *none[] = { NULL };

    (void)state;
#define EXPECT_BAD(call)                                                                                          \
    do {                                                                                                          \
        assert_int_equal((call), -1);                                                                             \
        assert_non_null(err);                                                                                     \
        assert_int_equal(err->status, PH_EXIT_USAGE);                                                             \
        ph_error_free(&err);                                                                                      \
    } while (0)
    EXPECT_BAD(ph_engine_ping(NULL, &err));
    EXPECT_BAD(ph_engine_request(NULL, "GET", "/info", NULL, &out, NULL, &err));
    EXPECT_BAD(ph_engine_request(e, "PATCH", "/info", NULL, &out, NULL, &err));
    EXPECT_BAD(ph_engine_request(e, "GET", "info", NULL, &out, NULL, &err));
    EXPECT_BAD(ph_engine_request(e, NULL, "/info", NULL, &out, NULL, &err));
    EXPECT_BAD(ph_engine_container_inspect(e, NULL, &out, &found, &err));
    EXPECT_BAD(ph_engine_container_inspect(e, "", &out, &found, &err));
    EXPECT_BAD(ph_engine_container_start(e, "", &err));
    EXPECT_BAD(ph_engine_container_kill(e, "x", "", &err));
    EXPECT_BAD(ph_engine_container_wait(e, "", 1, &code, &timed_out, &err));
    EXPECT_BAD(ph_engine_container_create(e, "x", NULL, &id, &err));
    EXPECT_BAD(ph_engine_containers_by_label(e, none, 0, &out, &err));
    EXPECT_BAD(ph_engine_containers_by_label(e, none, 1, &out, &err));
    EXPECT_BAD(ph_engine_archive_get(e, "x", "", NULL, NULL, &err));
    EXPECT_BAD(ph_engine_build(e, NULL, 0, NULL, "t", NULL, NULL, NULL, &id, &err));
    EXPECT_BAD(ph_engine_network_ensure(e, "", NULL, &err));
    EXPECT_BAD(ph_engine_container_logs(e, "x", 0, -1, -1, &err));
    /* A path past 64 KiB (labels travel in the URL) is refused before it
     * is sent. */
    {
        static char big[4000];
        const char *many[20];

        memset(big, 'l', sizeof big - 1);
        for (size_t i = 0; i < PH_ARRAY_LEN(many); i++)
            many[i] = big;
        assert_int_equal(ph_engine_containers_by_label(e, many, PH_ARRAY_LEN(many), &out, &err), -1);
        assert_non_null(strstr(err->msg, "the request path would be more than 65536 bytes"));
        assert_int_equal(err->status, PH_EXIT_USAGE);
        ph_error_free(&err);
    }
#undef EXPECT_BAD
    assert_null(out);
    assert_null(id);
    /* Cleanup paths may remove "nothing". */
    assert_int_equal(ph_engine_container_remove(e, NULL, 1, &err), 0);
    ph_engine_free(NULL);
    ph_engine_wait_free(NULL);
    assert_int_equal(ph_engine_container_wait_end(NULL, 1, &code, &timed_out, &err), 0);
}

static void
test_body_bounded_and_timeouts(void **state)
{
    ph_error_t err = NULL;
    json_t *out = NULL;
    long st = 0;

    (void)state;
    ph_engine_set_max_body(e, 100);
    assert_int_equal(ph_engine_request(e, "GET", "/info", NULL, &out, &st, &err), -1);
    assert_null(out);
    assert_non_null(strstr(err->msg, "exceeds 100 bytes"));
    ph_error_free(&err);
    ph_engine_set_max_body(e, 0);
    assert_int_equal(ph_engine_request(e, "GET", "/info", NULL, &out, &st, &err), 0);
    assert_int_equal(st, 200);
    assert_true(json_is_object(out));
    json_decref(out);
}

/* ---- containers -------------------------------------------------------- */

typedef struct collect {
    size_t bytes;
    char head[64 << 10]; /* the first 64 KiB */
} collect;

static int
collect_cb(void *ud, const char *data, size_t len)
{
    collect *c = ud;

    for (size_t i = 0; i < len && c->bytes + i < sizeof c->head; i++)
        c->head[c->bytes + i] = data[i];
    c->bytes += len;
    return 0;
}

/* A minimal ustar writer: regular files only, then the two zero blocks. */
static size_t
tar_add(char *out, size_t off, size_t cap, const char *name, const char *body)
{
    size_t len = strlen(body), need = 512 + (len + 511) / 512 * 512;
    unsigned sum = 0;
    char *h = out + off;

    assert_true(off + need + 1024 <= cap);
    assert_true(strlen(name) < 100);
    memset(h, 0, need);
    memcpy(h, name, strlen(name));
    snprintf(h + 100, 8, "%07o", 0644);
    snprintf(h + 108, 8, "%07o", 0);
    snprintf(h + 116, 8, "%07o", 0);
    snprintf(h + 124, 12, "%011zo", len);
    snprintf(h + 136, 12, "%011o", 1700000000);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6); /* magic "ustar\0", version "00" */
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8); /* the checksum counts its own field as spaces */
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)h[i];
    snprintf(h + 148, 8, "%06o", sum);
    memcpy(h + 512, body, len);
    return off + need;
}

static size_t
tar_end(char *out, size_t off)
{
    memset(out + off, 0, 1024);
    return off + 1024;
}

/* Feeds a buffer in 7-byte pieces: a body of unknown length, sent chunked. */
typedef struct dribble {
    const char *data;
    size_t len, off;
} dribble;

static ssize_t
dribble_cb(void *ud, char *buf, size_t len)
{
    dribble *d = ud;
    size_t n = d->len - d->off;

    if (n > 7)
        n = 7;
    if (n > len)
        n = len;
    memcpy(buf, d->data + d->off, n);
    d->off += n;
    return (ssize_t)n;
}

/* The container's logs, demultiplexed, in a memfd; returns its text. */
static const char *
read_logs(const char *id)
{
    static char text[4096];
    ph_error_t err = NULL;
    int fd = memfd_create("ph-logs", MFD_CLOEXEC);
    ssize_t n;

    assert_true(fd >= 0);
    if (ph_engine_container_logs(e, id, 0, -1, fd, &err) < 0)
        fail_msg("logs: %s", err->msg);
    n = pread(fd, text, sizeof text - 1, 0);
    assert_true(n >= 0);
    text[n] = '\0';
    close(fd);
    return text;
}

static char *
create_labelled(const char *suffix, const char *script)
{
    ph_error_t err = NULL;
    char name[96], *id = NULL;
    json_t *cfg = json_pack("{s:s, s:[s,s,s], s:{s:s}}", "Image", IMAGE, "Cmd", "sh", "-c", script, "Labels",
                            LABEL_KEY, label_val);

    snprintf(name, sizeof name, "ph-unittest-engine-%d-%s", (int)getpid(), suffix);
    if (ph_engine_container_create(e, name, cfg, &id, &err) < 0)
        fail_msg("%s", err->msg);
    json_decref(cfg);
    return id;
}

static void
test_container_lifecycle(void **state)
{
    static collect c;
    ph_error_t err = NULL;
    json_t *list = NULL, *info = NULL;
    const char *labels[] = { label_kv, LABEL_KEY };
    char *id;
    long code = -1;
    int timed_out = 0, found = 0;
    double t0, deadline;
    const char *logs = "";
    ph_engine_wait *w = NULL;

    (void)state;
    id = create_labelled("life", "mkdir -p /opt/out/sub && echo data > /opt/out/f.txt && echo hi && sleep 30");
    assert_int_equal(ph_engine_container_start(e, id, &err), 0);
    assert_int_equal(ph_engine_container_start(e, id, &err), 0); /* 304: already started */

    /* By label: exactly ours, whoever else runs on this Engine. */
    assert_int_equal(ph_engine_containers_by_label(e, labels, 2, &list, &err), 0);
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "Id")), id);
    json_decref(list);

    /* "hi" is echoed after the directory is made: poll the logs for it. */
    for (deadline = now_s() + 30; now_s() < deadline; nap_ms(50)) {
        logs = read_logs(id);
        if (strcmp(logs, "hi\n") == 0)
            break;
    }
    assert_string_equal(logs, "hi\n"); /* demultiplexed: no frame header bytes */

    /* A wait that times out is an answer, not an error. */
    t0 = now_s();
    assert_int_equal(ph_engine_container_wait(e, id, 1, &code, &timed_out, &err), 0);
    assert_null(err);
    assert_true(timed_out);
    assert_true(now_s() - t0 >= 0.9 && now_s() - t0 < 10);
    /* A generic request that times out is an error. */
    {
        char p[256];

        snprintf(p, sizeof p, "/containers/%s/wait", id);
        assert_int_equal(ph_engine_request_timeout(e, "POST", p, NULL, 1, NULL, NULL, &err), -1);
        assert_non_null(strstr(err->msg, "did not finish within 1 s"));
        ph_error_free(&err);
    }

    /* The directory as a tar stream. */
    assert_int_equal(ph_engine_archive_get(e, id, "/opt/out", collect_cb, &c, &err), 0);
    assert_true(c.bytes >= 3 * 512);
    assert_int_equal(c.bytes % 512, 0);
    assert_memory_equal(c.head + 257, "ustar", 5);
    assert_non_null(memmem(c.head, c.bytes, "out/f.txt", 9));
    assert_non_null(memmem(c.head, c.bytes, "data\n", 5));

    /* A body of unknown length goes chunked: upload a tar, read it back. */
    {
        static char tar[4096];
        size_t n = tar_end(tar, tar_add(tar, 0, sizeof tar, "up.txt", "uploaded chunked\n"));
        dribble d = { .data = tar, .len = n };
        long st = 0;
        char p[256];

        snprintf(p, sizeof p, "/containers/%s/archive?path=/opt/out/sub", id);
        assert_int_equal(ph_engine_stream(e, "PUT", p, "application/x-tar", dribble_cb, &d, -1, NULL, NULL, 60,
                                          &st, &err),
                         0);
        assert_int_equal(st, 200);
        assert_int_equal(d.off, n);
        memset(&c, 0, sizeof c);
        assert_int_equal(ph_engine_archive_get(e, id, "/opt/out/sub/up.txt", collect_cb, &c, &err), 0);
        assert_memory_equal(c.head + 257, "ustar", 5);
        assert_non_null(memmem(c.head, c.bytes, "uploaded chunked\n", 17));
    }

    /* Missing paths and containers say which. */
    assert_int_equal(ph_engine_archive_get(e, id, "/no/such dir", collect_cb, &c, &err), -1);
    assert_non_null(strstr(err->msg, "`/no/such dir`"));
    assert_non_null(strstr(err->msg, "no such path"));
    ph_error_free(&err);
    assert_int_equal(ph_engine_archive_get(e, "ph-no-such-container", "/", collect_cb, &c, &err), -1);
    assert_non_null(strstr(err->msg, "No such container"));
    ph_error_free(&err);

    /* Race-free: the wait is registered before the signal is sent. */
    assert_int_equal(ph_engine_container_wait_begin(e, id, &w, &err), 0);
    assert_non_null(w);
    assert_int_equal(ph_engine_container_kill(e, id, "SIGKILL", &err), 0);
    assert_int_equal(ph_engine_container_wait_end(w, 30, &code, &timed_out, &err), 0);
    assert_false(timed_out);
    assert_int_equal(code, 137);

    assert_int_equal(ph_engine_container_stop(e, id, 1, &err), 0); /* 304: not running */
    assert_int_equal(ph_engine_container_inspect(e, id, &info, &found, &err), 0);
    assert_true(found);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(info, "State"), "ExitCode")), 137);
    json_decref(info);
    assert_int_equal(ph_engine_container_remove(e, id, 0, &err), 0);
    assert_int_equal(ph_engine_container_remove(e, id, 0, &err), 0); /* gone is gone */
    assert_int_equal(ph_engine_container_inspect(e, id, &info, &found, &err), 0);
    assert_false(found);
    free(id);
}

static void
test_wait_for_exit(void **state)
{
    ph_error_t err = NULL;
    char *id = create_labelled("exit", "exit 3");
    ph_engine_wait *w = NULL;
    long code = -1;
    int timed_out = 1;

    (void)state;
    assert_int_equal(ph_engine_container_start(e, id, &err), 0);
    assert_int_equal(ph_engine_container_wait(e, id, 30, &code, &timed_out, &err), 0);
    assert_false(timed_out);
    assert_int_equal(code, 3);
    /* Beginning a wait on an exited container ends at once. */
    assert_int_equal(ph_engine_container_wait_begin(e, id, &w, &err), 0);
    assert_int_equal(ph_engine_container_wait_end(w, 30, &code, &timed_out, &err), 0);
    assert_int_equal(code, 3);
    /* And a wait on nothing fails at the beginning, in the Engine's words. */
    assert_int_equal(ph_engine_container_wait_begin(e, "ph-no-such-container", &w, &err), -1);
    assert_null(w);
    assert_non_null(strstr(err->msg, "No such container"));
    ph_error_free(&err);
    /* A begun wait that times out. */
    free(id);
    id = create_labelled("slow", "sleep 30");
    assert_int_equal(ph_engine_container_start(e, id, &err), 0);
    assert_int_equal(ph_engine_container_wait_begin(e, id, &w, &err), 0);
    assert_int_equal(ph_engine_container_wait_end(w, 1, &code, &timed_out, &err), 0);
    assert_true(timed_out);
    assert_int_equal(ph_engine_container_remove(e, id, 1, &err), 0);
    free(id);
}

/* ---- build ------------------------------------------------------------- */

typedef struct lines {
    int n;
    int saw_step;
    int saw_newline;
} lines;

static void
line_cb(void *ud, const char *line)
{
    lines *l = ud;

    l->n++;
    /* "Step 2/3": the labels add a step of their own. */
    if (strncmp(line, "Step 2/", 7) == 0 && strstr(line, " : RUN echo built > /x"))
        l->saw_step = 1;
    if (strchr(line, '\n'))
        l->saw_newline = 1;
}

static void
test_build(void **state)
{
    static char tar[8192];
    ph_error_t err = NULL;
    char *id = NULL, want[160];
    lines l = { 0 };
    json_t *info = NULL, *labels;
    int found = 0;
    size_t n;

    (void)state;
    n = tar_end(tar, tar_add(tar, 0, sizeof tar, "Dockerfile", "FROM debian:bookworm-slim\nRUN echo built > /x\n"));
    labels = json_pack("{s:s}", LABEL_KEY, label_val);
    assert_int_equal(ph_engine_build(e, tar, n, "Dockerfile", tag, NULL, labels,
                                     &(ph_engine_build_watch){ .line_cb = line_cb, .ud = &l }, &id, &err), 0);
    assert_non_null(id);
    assert_int_equal(strncmp(id, "sha256:", 7), 0);
    assert_true(l.n >= 2);
    assert_true(l.saw_step);
    assert_false(l.saw_newline);
    /* The tag has a '/': the path to it must be escaped. */
    assert_int_equal(ph_engine_image_inspect(e, tag, &info, &found, &err), 0);
    assert_true(found);
    assert_string_equal(json_string_value(json_object_get(info, "Id")), id);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(info, "Config"), "Labels"), LABEL_KEY)),
        label_val);
    json_decref(info);
    free(id);
    id = NULL;
    assert_int_equal(ph_engine_image_remove(e, tag, 1, &err), 0);
    assert_int_equal(ph_engine_image_inspect(e, tag, NULL, &found, &err), 0);
    assert_false(found);

    /* A failing step: the builder's error text, not a generic one. */
    n = tar_end(tar, tar_add(tar, 0, sizeof tar, "Dockerfile", "FROM debian:bookworm-slim\nRUN false\n"));
    assert_int_equal(ph_engine_build(e, tar, n, "Dockerfile", tag, NULL, labels, NULL, &id, &err), -1);
    assert_null(id);
    snprintf(want, sizeof want, "build `%s`: The command '/bin/sh -c false' returned a non-zero code: 1", tag);
    assert_string_equal(err->msg, want);
    ph_error_free(&err);

    /* A missing Dockerfile: the Engine refuses the request itself. */
    assert_int_equal(ph_engine_build(e, tar, n, "Nope.Dockerfile", tag, NULL, labels, NULL, &id, &err), -1);
    assert_non_null(strstr(err->msg, "Nope.Dockerfile"));
    ph_error_free(&err);
    json_decref(labels);
}

/* ---- a fake Engine: the build stream split into 5-byte chunks ----------
 *
 * A child process serves a unix socket with canned answers, in the spirit
 * of curl's data-driven tests: the bytes the Engine would send, cut where a
 * real one rarely cuts them.  It says API 1.40, so the client must also
 * negotiate down and prefix its paths with /v1.40. */

static pid_t fake_pid = -1;
static char fake_host[300];

static void
fake_write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w <= 0)
            _exit(3);
        p += w;
        n -= (size_t)w;
    }
}

static void
fake_reply(int fd, int status, const char *extra_headers, const char *body)
{
    char head[512];

    snprintf(head, sizeof head, "HTTP/1.1 %d X\r\n%sContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
             status, extra_headers, strlen(body));
    fake_write_all(fd, head, strlen(head));
    fake_write_all(fd, body, strlen(body));
}

/* The body in chunked encoding, CHUNK bytes at a time. */
static void
fake_reply_chunked(int fd, const char *body, size_t len, size_t chunk)
{
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    char size[32];

    fake_write_all(fd, head, strlen(head));
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;

        snprintf(size, sizeof size, "%zx\r\n", n);
        fake_write_all(fd, size, strlen(size));
        fake_write_all(fd, body + off, n);
        fake_write_all(fd, "\r\n", 2);
    }
    fake_write_all(fd, "0\r\n\r\n", 5);
}

static const char build_ok[] = "{\"stream\":\"Step 1/1 : FROM scratch\"}\n{\"stream\":\"\\n\"}\r\n"
                               "{\"stream\":\"line a\\nline b\\n\"}\n"
                               "{\"status\":\"Pulling\",\"progressDetail\":{\"current\":1}}\n"
                               "not json at all\n"
                               "{\"aux\":{\"ID\":\"sha256:fake\"}}\n{\"stream\":\"Successfully built\\n\"}\n"
                               "{\"stream\":\"no newline at the end\"}";
static const char build_noaux[] = "{\"stream\":\"Step 1/1 : FROM scratch\\n\"}\n";

static void
fake_serve(int cfd)
{
    static char req[1 << 16];
    size_t have = 0;

    for (;;) {
        char *end, path[1024] = "";
        long clen = 0;
        const char *cl;
        ssize_t r;

        while ((end = memmem(req, have, "\r\n\r\n", 4)) == NULL) {
            r = read(cfd, req + have, sizeof req - have);
            if (r <= 0)
                return;
            have += (size_t)r;
        }
        end += 4;
        sscanf(req, "%*s %1023s", path);
        cl = memmem(req, (size_t)(end - req), "Content-Length: ", 16);
        if (cl)
            clen = atol(cl + 16);
        /* Drain the body (the build context). */
        {
            size_t hlen = (size_t)(end - req), body_have = have - hlen;

            while ((long)body_have < clen) {
                char junk[4096];

                r = read(cfd, junk, sizeof junk);
                if (r <= 0)
                    return;
                body_have += (size_t)r;
            }
            have = 0;
        }
        if (strcmp(path, "/_ping") == 0) {
            fake_reply(cfd, 200, "Api-Version: 1.40\r\n", "OK");
        } else if (strncmp(path, "/v1.40/build?t=ok&", 18) == 0) {
            fake_reply_chunked(cfd, build_ok, strlen(build_ok), 5);
        } else if (strncmp(path, "/v1.40/build?t=noaux&", 21) == 0) {
            fake_reply_chunked(cfd, build_noaux, strlen(build_noaux), 3);
        } else if (strncmp(path, "/v1.40/build?t=long&", 20) == 0) {
            /* A 300 KiB line (past the line bound), then the error. */
            size_t n = 300 << 10;
            char *b = malloc(n + 200);

            if (b == NULL)
                _exit(4);
            memcpy(b, "{\"stream\":\"", 11);
            memset(b + 11, 'x', n);
            strcpy(b + 11 + n, "\"}\n{\"errorDetail\":{\"message\":\"boom\"},\"error\":\"boom\"}\n");
            fake_reply_chunked(cfd, b, strlen(b), 4000);
            free(b);
        } else if (strncmp(path, "/v1.40/containers/stopme/stop", 29) == 0) {
            char body[1200];

            /* the query the stop was sent with, said back */
            snprintf(body, sizeof body, "{\"message\":\"fake: asked %s\"}", path);
            fake_reply(cfd, 500, "", body);
        } else if (strcmp(path, "/v1.40/images/noaux/json") == 0) {
            fake_reply(cfd, 200, "", "{\"Id\":\"sha256:inspected\"}");
        } else {
            char body[1200];

            snprintf(body, sizeof body, "{\"message\":\"fake: no route %s\"}", path);
            fake_reply(cfd, 404, "", body);
        }
    }
}

static void
fake_engine_start(void)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int fd;

    tu_mkdtemp();
    snprintf(a.sun_path, sizeof a.sun_path, "%s/fake.sock", test_dir);
    snprintf(fake_host, sizeof fake_host, "unix://%s", a.sun_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 8), 0);
    fake_pid = fork();
    assert_true(fake_pid >= 0);
    if (fake_pid == 0) {
        alarm(60); /* never outlive a wedged test */
        for (;;) {
            int cfd = accept(fd, NULL, NULL);

            if (cfd < 0)
                _exit(0);
            fake_serve(cfd);
            close(cfd);
        }
    }
    close(fd);
}

static void
fake_engine_stop(void)
{
    int st;

    if (fake_pid > 0) {
        kill(fake_pid, SIGKILL);
        waitpid(fake_pid, &st, 0);
        fake_pid = -1;
    }
    tu_rmdir();
}

/* The fake Engine started, and a client of it (the caller's to free; fake_engine_stop ends the fake). */
static ph_engine *
fake_engine_client(void)
{
    ph_error_t err = NULL;
    ph_engine *x;

    fake_engine_start();
    setenv("DOCKER_HOST", fake_host, 1);
    x = ph_engine_new(&err);
    restore_docker_host();
    if (x == NULL)
        fail_msg("a client of the fake Engine: %s", err ? err->msg : "?");
    return x;
}

typedef struct seen {
    char text[8][64];
    int n;
    unsigned long long sent, total; /* the last the upload told */
    int sent_calls, backwards;
} seen;

static void
sent_cb(void *ud, unsigned long long sent, unsigned long long total)
{
    seen *s = ud;

    s->backwards |= sent < s->sent || sent > total;
    s->sent = sent;
    s->total = total;
    s->sent_calls++;
}

static void
seen_cb(void *ud, const char *line)
{
    seen *s = ud;

    if (s->n < 8)
        snprintf(s->text[s->n], sizeof s->text[0], "%s", line);
    s->n++;
}

static void
test_build_stream_parsing(void **state)
{
    static const char tar[1024]; /* the fake does not look at it */
    ph_error_t err = NULL;
    ph_engine *x;
    char *id = NULL;
    seen s = { .n = 0 };
    json_t *out = NULL;
    long st = 0;

    (void)state;
    x = fake_engine_client();
    assert_int_equal(ph_engine_ping(x, &err), 0);
    assert_string_equal(ph_engine_api_version(x), "1.40"); /* the lower of 1.40 and ours */
    /* Paths carry the negotiated version (the fake answers /v1.40 only). */
    assert_int_equal(ph_engine_request(x, "GET", "/nothing", NULL, &out, &st, &err), -1);
    assert_int_equal(st, 404);
    assert_string_equal(err->msg, "GET /nothing: fake: no route /v1.40/nothing");
    ph_error_free(&err);

    /* Lines split every 5 bytes, "stream" text split across lines, a
     * progress bar (not shown), a line that is not JSON (skipped), a last
     * line without a newline. */
    assert_int_equal(ph_engine_build(x, tar, sizeof tar, NULL, "ok", NULL, NULL,
                                     &(ph_engine_build_watch){ .line_cb = seen_cb, .sent_cb = sent_cb, .ud = &s },
                                     &id, &err), 0);
    /* the context's bytes told as they went, all of them at the end */
    assert_true(s.sent_calls >= 1);
    assert_false(s.backwards);
    assert_int_equal(s.sent, sizeof tar);
    assert_int_equal(s.total, sizeof tar);
    assert_string_equal(id, "sha256:fake");
    free(id);
    id = NULL;
    assert_int_equal(s.n, 5);
    assert_string_equal(s.text[0], "Step 1/1 : FROM scratch");
    assert_string_equal(s.text[1], "line a");
    assert_string_equal(s.text[2], "line b");
    assert_string_equal(s.text[3], "Successfully built");
    assert_string_equal(s.text[4], "no newline at the end");

    /* No aux ID: the image is found by its tag. */
    assert_int_equal(ph_engine_build(x, tar, sizeof tar, NULL, "noaux", NULL, NULL, NULL, &id, &err), 0);
    assert_string_equal(id, "sha256:inspected");
    free(id);
    id = NULL;

    /* A line past the bound is dropped, and the error after it still wins. */
    assert_int_equal(ph_engine_build(x, tar, sizeof tar, NULL, "long", NULL, NULL, NULL, &id, &err), -1);
    assert_null(id);
    assert_string_equal(err->msg, "build `long`: boom");
    ph_error_free(&err);
    ph_engine_free(x);
    fake_engine_stop();
}

/* A stop's grace goes to the Engine as its `t`, 0 too: without it the
 * Engine waits its own default (10 s) before the kill. */
static void
test_stop_grace_sent(void **state)
{
    ph_error_t err = NULL;
    ph_engine *x;

    (void)state;
    x = fake_engine_client();
    assert_int_equal(ph_engine_container_stop(x, "stopme", 0, &err), -1);
    if (strstr(err->msg, "fake: asked /v1.40/containers/stopme/stop?t=0") == NULL)
        fail_msg("a grace of 0: %s", err->msg);
    ph_error_free(&err);
    assert_int_equal(ph_engine_container_stop(x, "stopme", 30, &err), -1);
    if (strstr(err->msg, "fake: asked /v1.40/containers/stopme/stop?t=30") == NULL)
        fail_msg("a grace of 30: %s", err->msg);
    ph_error_free(&err);
    assert_int_equal(ph_engine_container_stop(x, "stopme", -1, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    ph_engine_free(x);
    fake_engine_stop();
}

/* The API version where the Engine takes every network in the create
 * call: 1.44 itself and later, not 1.43; what is no version is none.
 * (Negotiated, the version is at most PH_ENGINE_MAX_API, 1.41:
 * test_ping_negotiates_version.) */
static void
test_version_at_least(void **state)
{
    (void)state;
    assert_true(ph_engine_version_at_least("1.44", 1, 44));
    assert_true(ph_engine_version_at_least("1.45", 1, 44));
    assert_true(ph_engine_version_at_least("1.100", 1, 44));
    assert_true(ph_engine_version_at_least("2.0", 1, 44));
    assert_false(ph_engine_version_at_least("1.43", 1, 44));
    assert_false(ph_engine_version_at_least("1.4", 1, 44));
    assert_false(ph_engine_version_at_least("0.99", 1, 44));
    assert_false(ph_engine_version_at_least("", 1, 44));
    assert_false(ph_engine_version_at_least(NULL, 1, 44));
    assert_false(ph_engine_version_at_least("1.44beta", 1, 44));
    assert_true(ph_engine_version_at_least(PH_ENGINE_MAX_API, 1, 41));
    assert_false(ph_engine_version_at_least(PH_ENGINE_MAX_API, 1, 44));
}

/* ---- timing: every call is a stage, by itself ---------------------------- */

static void
test_stage_names(void **state)
{
    static const struct {
        const char *method, *path, *want;
    } v[] = {
        { "GET", "/containers/abc/json", "GET /containers/{id}/json" },
        { "GET", "/containers/json?all=1&filters=x", "GET /containers/json" },
        { "POST", "/images/create?fromImage=debian&tag=x", "POST /images/create" },
        { "POST", "/networks/proj_default/connect", "POST /networks/{id}/connect" },
        { "DELETE", "/volumes/v1", "DELETE /volumes/{id}" },
        { "GET", "/_ping", "GET /_ping" },
        { "POST", "/build?t=x", "POST /build" },
        { "POST", "/containers/{id}/start", "POST /containers/{id}/start" }, /* a template stays one */
        { "GET", "/info", "GET /info" },
    };
    char out[128];

    (void)state;
    for (size_t i = 0; i < PH_ARRAY_LEN(v); i++) {
        ph_engine_stage_name(v[i].method, v[i].path, out, sizeof out);
        assert_string_equal(out, v[i].want);
    }
    ph_engine_stage_name("GET", "/containers/a-very-long-name-indeed/json", out, 12);
    assert_int_equal(strlen(out), 11);
}

static const ph_stage *
child_named(const ph_stage *parent, const char *name, int nth)
{
    for (const ph_stage *c = parent->first_child; c; c = c->next)
        if (strcmp(c->name, name) == 0 && nth-- == 0)
            return c;
    fail_msg("no stage `%s` under `%s`", name, parent->name);
    return NULL;
}

static const char *
attr(const ph_stage *s, const char *key)
{
    for (int i = 0; i < PH_STAGE_ATTRS && s->attr_key[i]; i++)
        if (strcmp(s->attr_key[i], key) == 0)
            return s->attr_val[i];
    return NULL;
}

static void
test_calls_are_stages(void **state)
{
    ph_error_t err = NULL;
    ph_engine *x;
    const ph_stage *root, *st;
    json_t *out = NULL, *cfg;
    int found = 1, timed_out = 0;
    long code = 0;
    char *id = NULL, name[96];
    ph_engine_wait *w = NULL;

    (void)state;
    x = ph_engine_new(&err);
    assert_non_null(x);
    assert_int_equal(ph_timing_start("unit"), 0);
    /* The first call pings: a stage of its own, before the call's. */
    assert_int_equal(ph_engine_container_inspect(x, "ph-no-such-container", &out, &found, &err), 0);
    assert_int_equal(ph_engine_request(x, "GET", "/containers/ph-no-such-container/json", NULL, &out, NULL, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_engine_request(x, "GET", "/info", NULL, &out, NULL, &err), 0);
    json_decref(out);
    cfg = json_pack("{s:s, s:[s, s], s:{s:s}}", "Image", IMAGE, "Cmd", "sleep", "30", "Labels", LABEL_KEY, label_val);
    snprintf(name, sizeof name, "ph-unittest-engine-%d-stages", (int)getpid());
    assert_int_equal(ph_engine_container_create(x, name, cfg, &id, &err), 0);
    json_decref(cfg);
    assert_int_equal(ph_engine_container_start(x, id, &err), 0);
    assert_int_equal(ph_engine_container_wait_begin(x, id, &w, &err), 0);
    assert_int_equal(ph_engine_container_kill(x, id, "SIGKILL", &err), 0);
    assert_int_equal(ph_engine_container_wait_end(w, 30, &code, &timed_out, &err), 0);
    assert_int_equal(ph_engine_container_remove(x, id, 1, &err), 0);
    ph_timing_finish(0, NULL);

    root = ph_timing_root();
    st = root->first_child;
    assert_string_equal(st->name, "GET /_ping");
    assert_string_equal(st->category, "engine");
    assert_true(st->bytes_in > 0);
    st = child_named(root, "GET /containers/{id}/json", 0);
    assert_false(st->failed); /* 404 is an answer here */
    assert_string_equal(attr(st, "container.id"), "ph-no-such-container");
    assert_string_equal(attr(st, "http.response.status_code"), "404");
    assert_string_equal(attr(st, "http.request.method"), "GET");
    st = child_named(root, "GET /containers/{id}/json", 1); /* the raw path, templated */
    assert_true(st->failed);
    assert_non_null(strstr(st->error, "No such container"));
    st = child_named(root, "GET /info", 0);
    assert_true(st->bytes_in > 100);
    st = child_named(root, "POST /containers/create", 0);
    assert_true(st->bytes_out > 20); /* the JSON config */
    /* The wait began before the kill and ended after it: detached and
     * concurrent, so the kill is its sibling, not its child. */
    st = child_named(root, "POST /containers/{id}/wait", 0);
    assert_true(st->flags & PH_STAGE_CONCURRENT);
    assert_null(st->first_child);
    assert_true(st->end_ns >= child_named(root, "POST /containers/{id}/kill", 0)->end_ns);
    assert_string_equal(attr(st, "container.id"), id);
    child_named(root, "DELETE /containers/{id}", 0);
    ph_timing_reset();

    /* Not recording: calls make no stages and cost no more. */
    assert_int_equal(ph_engine_request(x, "GET", "/info", NULL, &out, NULL, &err), 0);
    json_decref(out);
    assert_null(ph_timing_root());
    free(id);
    ph_engine_free(x);
}

/* ---- networks and volumes ---------------------------------------------- */

static void
test_network_volume_ensure(void **state)
{
    ph_error_t err = NULL;
    json_t *labels = json_pack("{s:s}", LABEL_KEY, label_val), *out = NULL;
    char name[96], p[256];
    long st = 0;

    (void)state;
    snprintf(name, sizeof name, "ph-unittest-engine-%d", (int)getpid());
    for (int i = 0; i < 2; i++) { /* create, then find */
        assert_int_equal(ph_engine_network_ensure(e, name, labels, &err), 0);
        assert_int_equal(ph_engine_volume_ensure(e, name, labels, &err), 0);
    }
    snprintf(p, sizeof p, "/networks/%s", name);
    assert_int_equal(ph_engine_request(e, "GET", p, NULL, &out, &st, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "Labels"), LABEL_KEY)), label_val);
    json_decref(out);
    assert_int_equal(ph_engine_request(e, "DELETE", p, NULL, NULL, &st, &err), 0);
    snprintf(p, sizeof p, "/volumes/%s", name);
    assert_int_equal(ph_engine_request(e, "GET", p, NULL, &out, &st, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "Labels"), LABEL_KEY)), label_val);
    json_decref(out);
    assert_int_equal(ph_engine_request(e, "DELETE", p, NULL, NULL, &st, &err), 0);
    json_decref(labels);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping_negotiates_version),
        cmocka_unit_test(test_stop_grace_sent),
        cmocka_unit_test(test_version_at_least),
        cmocka_unit_test(test_unreachable_engine),
        cmocka_unit_test(test_engine_message_shown),
        cmocka_unit_test(test_arguments_checked),
        cmocka_unit_test(test_body_bounded_and_timeouts),
        cmocka_unit_test(test_container_lifecycle),
        cmocka_unit_test(test_wait_for_exit),
        cmocka_unit_test(test_build),
        cmocka_unit_test(test_build_stream_parsing),
        cmocka_unit_test(test_network_volume_ensure),
        cmocka_unit_test(test_stage_names),
        cmocka_unit_test(test_calls_are_stages),
    };
    return cmocka_run_group_tests_name("engine", tests, setup, teardown);
}
