/* test_engine_stream.c - streamed answers: the log demultiplexer (a pure
 * core, split at every byte), and what a stalled or endless Engine does
 * to a transfer, against a fake Engine on a unix socket
 * (tests/unit/data/fake-engine.py): an archive that promises 10 GB and
 * stalls after one block, one that drips a byte every 2 s, one without
 * end, a log cut inside a frame header, a log without end read up to a
 * cap, a wait the Engine answers only after a silence.
 *
 * The stall limit is set to 2 or 3 s here; nothing asserts on elapsed time:
 * each test runs under alarm(60), whose default action ends the binary
 * (a failure run-unit.sh counts) if a transfer hangs. */
#include "test_engine_util.h"

#include <jansson.h>
#include <signal.h>

#include "ph_engine.h"
#include "ph_signal.h"

#define HANG_BOUND_S 60

static tu_fake fake;
static char fake_host[300];

static int
setup(void **state)
{
    char sock[300];

    tu_setup(state);
    snprintf(sock, sizeof sock, "%s/fake.sock", test_dir);
    snprintf(fake_host, sizeof fake_host, "unix://%s", sock);
    tu_fake_start(&fake, "unix", sock, NULL);
    return 0;
}

static int
teardown(void **state)
{
    tu_fake_stop(&fake);
    return tu_teardown(state);
}

/* A client of the fake Engine with stall limit STALL_S. */
static ph_engine *
fake_engine(long stall_s)
{
    ph_error_t err = NULL;
    ph_engine *x;
    char *saved = getenv("DOCKER_HOST") ? strdup(getenv("DOCKER_HOST")) : NULL;

    setenv("DOCKER_HOST", fake_host, 1);
    ph_engine_set_stall(stall_s);
    x = ph_engine_new(&err);
    ph_engine_set_stall(0);
    if (saved)
        setenv("DOCKER_HOST", saved, 1);
    else
        unsetenv("DOCKER_HOST");
    free(saved);
    if (x == NULL)
        fail_msg("%s", err->msg);
    return x;
}

/* ---- the demultiplexer, a pure core ------------------------------------ */

typedef struct sink {
    char data[4096];
    size_t len;
} sink;

static int
sink_cb(void *ud, const char *d, size_t n)
{
    sink *s = ud;

    assert_true(s->len + n <= sizeof s->data);
    memcpy(s->data + s->len, d, n);
    s->len += n;
    return 0;
}

static size_t
frame(char *out, int stream, const char *payload, size_t n)
{
    out[0] = (char)stream;
    out[1] = out[2] = out[3] = 0;
    out[4] = (char)(n >> 24);
    out[5] = (char)(n >> 16);
    out[6] = (char)(n >> 8);
    out[7] = (char)n;
    memcpy(out + 8, payload, n);
    return 8 + n;
}

static void
test_demux_split_anywhere(void **state)
{
    char in[1024], big[300], want[1024];
    size_t n = 0, wn = 0;
    ph_error_t err = NULL;

    (void)state;
    memset(big, 'z', sizeof big);
    n += frame(in + n, 1, "hello ", 6);
    n += frame(in + n, 2, "world\n", 6);
    n += frame(in + n, 1, "", 0);
    n += frame(in + n, 1, big, sizeof big);
    n += frame(in + n, 2, "!", 1);
    memcpy(want, "hello world\n", 12);
    wn = 12;
    memcpy(want + wn, big, sizeof big);
    wn += sizeof big;
    want[wn++] = '!';

    /* Two chunks, split at every byte. */
    for (size_t cut = 0; cut <= n; cut++) {
        ph_engine_demux d = { 0 };
        sink s = { .len = 0 };

        assert_int_equal(ph_engine_demux_feed(&d, in, cut, sink_cb, &s, &err), 0);
        assert_int_equal(ph_engine_demux_feed(&d, in + cut, n - cut, sink_cb, &s, &err), 0);
        assert_int_equal(ph_engine_demux_finish(&d, &err), 0);
        assert_int_equal(s.len, wn);
        assert_memory_equal(s.data, want, wn);
    }
    /* One byte at a time. */
    {
        ph_engine_demux d = { 0 };
        sink s = { .len = 0 };

        for (size_t i = 0; i < n; i++)
            assert_int_equal(ph_engine_demux_feed(&d, in + i, 1, sink_cb, &s, &err), 0);
        assert_int_equal(ph_engine_demux_finish(&d, &err), 0);
        assert_int_equal(s.len, wn);
        assert_memory_equal(s.data, want, wn);
    }
    /* Cut short inside a frame's payload, and inside a header: both are
     * a truncated stream, wherever the cut fell. */
    for (size_t cut = 1; cut < n; cut++) {
        ph_engine_demux d = { 0 };
        sink s = { .len = 0 };
        int boundary = cut == 14 || cut == 28 || cut == 36 || cut == 344;

        assert_int_equal(ph_engine_demux_feed(&d, in, cut, sink_cb, &s, &err), 0);
        assert_int_equal(ph_engine_demux_finish(&d, &err), boundary ? 0 : -1);
        if (!boundary) {
            assert_non_null(strstr(err->msg, "ends inside a frame"));
            ph_error_free(&err);
        }
    }
    /* Not a framed stream (a TTY's raw text). */
    {
        ph_engine_demux d = { 0 };
        sink s = { .len = 0 };

        assert_int_equal(ph_engine_demux_feed(&d, "hello world\n", 12, sink_cb, &s, &err), -1);
        assert_non_null(strstr(err->msg, "bad frame header at byte 0"));
        assert_int_equal(s.len, 0);
        ph_error_free(&err);
    }
}

/* A callback that has had enough stops the feed where it is. */
static int
enough_cb(void *ud, const char *d, size_t n)
{
    sink_cb(ud, d, n);
    return PH_ENGINE_DATA_ENOUGH;
}

static void
test_demux_enough(void **state)
{
    char in[64];
    size_t n = 0;
    ph_engine_demux d = { 0 };
    sink s = { .len = 0 };
    ph_error_t err = NULL;

    (void)state;
    n += frame(in + n, 1, "first", 5);
    n += frame(in + n, 1, "second", 6);
    assert_int_equal(ph_engine_demux_feed(&d, in, n, enough_cb, &s, &err), PH_ENGINE_DATA_ENOUGH);
    assert_int_equal(s.len, 5);
    assert_memory_equal(s.data, "first", 5);
}

/* ---- a stalled Engine --------------------------------------------------- */

typedef struct counter {
    unsigned long long bytes;
    int raise_sig; /* raise this signal at the first data */
} counter;

static int
count_cb(void *ud, const char *data, size_t len)
{
    counter *c = ud;

    (void)data;
    if (c->bytes == 0 && c->raise_sig)
        raise(c->raise_sig);
    c->bytes += len;
    return 0;
}

/* An archive that promises 10 GB, sends one block and goes silent, and one
 * that drips a byte every 2 s (more often than the 3 s limit, but less than
 * a byte a second): both end as stalled, naming the request and the limit. */
static void
test_stalled_archive(void **state)
{
    static const char *const names[] = { "stall", "drip" };
    ph_engine *x = fake_engine(3);

    (void)state;
    alarm(HANG_BOUND_S);
    for (size_t i = 0; i < 2; i++) {
        ph_error_t err = NULL;
        counter c = { 0 };
        char want[300];

        assert_int_equal(ph_engine_archive_get(x, names[i], "/opt/out", count_cb, &c, &err), -1);
        snprintf(want, sizeof want,
                 "copy `/opt/out` out of container `%s`: the Docker Engine at %s stalled: less than a byte a "
                 "second for 3 s",
                 names[i], fake_host);
        assert_string_equal(err->msg, want);
        assert_int_equal(err->status, PH_EXIT_FAILURE);
        assert_non_null(strstr(err->hint, "PH_ENGINE_STALL"));
        assert_true(c.bytes >= 1 && c.bytes <= 512);
        ph_error_free(&err);
    }
    alarm(0);
    ph_engine_free(x);
}

/* A wait is silent by nature: the Engine answers when the container ends.
 * No stall limit applies to it (its own timeout does). */
static void
test_quiet_wait_is_no_stall(void **state)
{
    ph_engine *x = fake_engine(2);
    ph_error_t err = NULL;
    long code = -1;
    int timed_out = 1;

    (void)state;
    alarm(HANG_BOUND_S);
    if (ph_engine_container_wait(x, "slow", 30, &code, &timed_out, &err) < 0)
        fail_msg("%s", err->msg);
    assert_false(timed_out);
    assert_int_equal(code, 0);
    alarm(0);
    ph_engine_free(x);
}

/* A signal caught in a deferred-interrupt section ends the transfer under
 * way, silent (a stalled archive, with no stall limit to end it) or busy
 * (an archive without end): the error is the interrupt's, status 128+N.
 * A transfer begun after the signal is not ended by it. */
static void
test_interrupt_ends_transfer(void **state)
{
    static const char *const names[] = { "stall", "endless" };
    ph_engine *x = fake_engine(PH_ENGINE_STALL_MAX_S);
    ph_error_t err = NULL;
    json_t *out = NULL;
    long st = 0;

    (void)state;
    alarm(HANG_BOUND_S);
    ph_interrupt_begin();
    for (size_t i = 0; i < 2; i++) {
        counter c = { .raise_sig = SIGTERM };
        char want[300];

        assert_int_equal(ph_engine_archive_get(x, names[i], "/opt/out", count_cb, &c, &err), -1);
        snprintf(want, sizeof want, "copy `/opt/out` out of container `%s`: interrupted by SIGTERM", names[i]);
        assert_string_equal(err->msg, want);
        assert_int_equal(err->status, PH_EXIT_SIGNAL + SIGTERM);
        ph_error_free(&err);
    }
    /* After the interrupt: the cleanup's own calls still run. */
    assert_int_equal(ph_engine_request(x, "GET", "/info", NULL, &out, &st, &err), -1);
    assert_int_equal(st, 404);
    assert_non_null(strstr(err->msg, "fake: no route"));
    ph_error_free(&err);
    ph_interrupt_end();
    alarm(0);
    ph_engine_free(x);
}

/* ---- logs --------------------------------------------------------------- */

typedef struct capped {
    unsigned long long bytes, max;
} capped;

static int
capped_cb(void *ud, const char *data, size_t len)
{
    capped *c = ud;

    (void)data;
    c->bytes += len;
    return c->bytes >= c->max ? PH_ENGINE_DATA_ENOUGH : 0;
}

/* A log without end is read up to the callback's cap, and the call ends
 * there, successfully (not at the 10-minute timeout). */
static void
test_log_read_to_a_cap(void **state)
{
    ph_engine *x = fake_engine(2);
    ph_error_t err = NULL;
    capped c = { .max = 1 << 20 };

    (void)state;
    alarm(HANG_BOUND_S);
    if (ph_engine_container_log_all(x, "endless", capped_cb, &c, &err) < 0)
        fail_msg("%s", err->msg);
    assert_true(c.bytes >= c.max && c.bytes < c.max + (64 << 10) + 8);
    alarm(0);
    ph_engine_free(x);
}

/* A log that ends inside a frame header is a truncated log. */
static void
test_log_cut_in_header(void **state)
{
    ph_engine *x = fake_engine(2);
    ph_error_t err = NULL;
    capped c = { .max = 1 << 20 };

    (void)state;
    alarm(HANG_BOUND_S);
    assert_int_equal(ph_engine_container_log_all(x, "hdrcut", capped_cb, &c, &err), -1);
    assert_non_null(strstr(err->msg, "ends inside a frame at byte 18"));
    assert_int_equal(c.bytes, 6);
    ph_error_free(&err);
    alarm(0);
    ph_engine_free(x);
}

/* The setting: seconds or a duration, 1 s to a day. */
static void
test_stall_parse(void **state)
{
    ph_error_t err = NULL;
    long s = 0;

    (void)state;
    assert_int_equal(ph_engine_stall_parse("60", &s, &err), 0);
    assert_int_equal(s, 60);
    assert_int_equal(ph_engine_stall_parse("1m30s", &s, &err), 0);
    assert_int_equal(s, 90);
    assert_int_equal(ph_engine_stall_parse("1", &s, &err), 0);
    assert_int_equal(s, 1);
    assert_int_equal(ph_engine_stall_parse("0", &s, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    assert_int_equal(ph_engine_stall_parse("500ms", &s, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_engine_stall_parse("soon", &s, &err), -1);
    assert_non_null(strstr(err->msg, "`soon` is no stall limit"));
    ph_error_free(&err);
    assert_int_equal(ph_engine_stall_parse("86401", &s, &err), -1);
    ph_error_free(&err);
    /* The environment's, refused when bad, at the client's making. */
    setenv("PH_ENGINE_STALL", "never", 1);
    assert_null(ph_engine_new(&err));
    unsetenv("PH_ENGINE_STALL");
    assert_non_null(strstr(err->msg, "PH_ENGINE_STALL: `never` is no stall limit"));
    ph_error_free(&err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demux_split_anywhere),
        cmocka_unit_test(test_demux_enough),
        cmocka_unit_test(test_stall_parse),
        cmocka_unit_test(test_stalled_archive),
        cmocka_unit_test(test_quiet_wait_is_no_stall),
        cmocka_unit_test(test_interrupt_ends_transfer),
        cmocka_unit_test(test_log_read_to_a_cap),
        cmocka_unit_test(test_log_cut_in_header),
    };

    return cmocka_run_group_tests_name("engine_stream", tests, setup, teardown);
}
