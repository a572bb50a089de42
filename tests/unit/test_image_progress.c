/* test_image_progress.c - what an image build shows (ph_image_progress.c):
 * bytes in (the context's bytes sent, the builder's text lines as the
 * Engine sends them), the terminal's or the log's bytes out, with a fake
 * terminal width.  On a terminal: one status line redrawn with "\r" and
 * ESC[K only when its text changes, cut to the width, one line left at the
 * end; elsewhere no carriage return, a line per step that runs, one line
 * for a cached build; a failure's tail; every line escaped. */
#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ph_image.h"
#include "ph_util.h"

/* What a sink was given: bytes, and how many calls. */
typedef struct sink {
    char *data;
    size_t len, cap;
    size_t calls;
} sink;

static void
sink_cb(void *ud, const char *text, size_t len)
{
    sink *s = ud;

    if (s->len + len + 1 > s->cap) {
        s->cap = (s->len + len + 1) * 2;
        s->data = realloc(s->data, s->cap);
        assert_non_null(s->data);
    }
    memcpy(s->data + s->len, text, len);
    s->len += len;
    s->data[s->len] = '\0';
    s->calls++;
}

static size_t
count(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

typedef struct fixture {
    sink out, log;
    ph_image_progress *p;
} fixture;

static void
open_view(fixture *f, const char *who, int tty, int width, int quiet)
{
    ph_image_progress_opts o = { .who = who, .tty = tty, .width = width, .quiet = quiet,
                                 .out = sink_cb, .out_ud = &f->out, .log = sink_cb, .log_ud = &f->log };

    memset(f, 0, sizeof *f);
    f->p = ph_image_progress_new(&o);
    assert_non_null(f->p);
}

static void
close_view(fixture *f)
{
    ph_image_progress_free(f->p);
    free(f->out.data);
    free(f->log.data);
}

static void
feed(fixture *f, const char *const *lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ph_image_progress_line(f->p, lines[i]);
}

/* The demo's front built with every step in the build cache, as the Engine
 * sent it (one "stream" text line each). */
static const char *const cached[] = {
    "Step 1/8 : ARG BASE_IMAGE=debian:bookworm-slim",
    "Step 2/8 : FROM ${BASE_IMAGE} AS build",
    " ---> eab82eb3132d",
    "Step 3/8 : RUN apt-get update -qq  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
    "--no-install-recommends gcc libc6-dev >/dev/null",
    " ---> Using cache",
    " ---> f63fb2485e85",
    "Step 4/8 : COPY front.c worker.c demo_common.h /src/",
    " ---> Using cache",
    " ---> 6c17a2349410",
    "Step 5/8 : RUN cd /src  && gcc -O2 -g -o demo-front front.c",
    " ---> Using cache",
    " ---> e059c081e702",
    "Step 6/8 : FROM ${BASE_IMAGE}",
    " ---> eab82eb3132d",
    "Step 7/8 : COPY --from=build /src/demo-front /usr/local/bin/demo-front",
    " ---> Using cache",
    " ---> b276adb066a2",
    "Step 8/8 : COPY --from=build /src/demo-worker /usr/local/bin/demo-worker",
    " ---> Using cache",
    " ---> f08d2594ff63",
    "Successfully built f08d2594ff63",
    "Successfully tagged demo:latest",
};

/* The tools image with two steps run: a COPY (its new layer's id only) and
 * a RUN (its container), the rest from the cache. */
static const char *const partly[] = {
    "Step 1/4 : FROM debian:bookworm-slim",
    " ---> eab82eb3132d",
    "Step 2/4 : ARG TOOLS=\"strace perf\"",
    " ---> Using cache",
    " ---> 2c99df877907",
    "Step 3/4 : COPY opt/ /opt/profharness/",
    " ---> 8616fde8ddd1",
    "Step 4/4 : RUN mkdir -p -m 1777 /opt/profiling",
    " ---> Running in b063075fc6d3",
    "Removing intermediate container b063075fc6d3",
    " ---> e7c7e33f1674",
    "Successfully built e7c7e33f1674",
};

/* Each redraw on a terminal is "\r" TEXT ESC[K; TEXT's display columns
 * (a UTF-8 sequence of U+1100 or above counting two, as it may) must stay
 * under WIDTH. */
static void
assert_draws_fit(const char *out, int width)
{
    for (const char *p = out; (p = strchr(p, '\r')) != NULL;) {
        const char *end = strstr(p, "\x1b[K");
        int cols = 0;

        assert_non_null(end);
        for (const unsigned char *c = (const unsigned char *)p + 1; c < (const unsigned char *)end; c++) {
            if (*c < 0x80)
                cols++;
            else if (*c >= 0xc0)
                cols += *c >= 0xe1 ? 2 : 1;
        }
        assert_true(cols < width);
        p = end;
    }
}

static void
test_tty_upload_redrawn_when_its_text_changes(void **state)
{
    fixture f;
    const unsigned long long total = 80ull << 20;
    size_t calls = 0;

    (void)state;
    open_view(&f, "front", 1, 100, 0);
    ph_image_progress_say(f.p, "building demo:latest from /src/app");
    assert_string_equal(f.out.data, "\rprofharness: front: building demo:latest from /src/app\x1b[K");
    for (unsigned long long sent = 64u << 10; sent <= total; sent += 64u << 10, calls++)
        ph_image_progress_sent(f.p, sent, total);
    assert_int_equal(calls, 1280);
    /* one redraw per MiB shown, not per call; no line ended */
    assert_true(count(f.out.data, "\r") <= 1 + 81 + 1);
    assert_true(count(f.out.data, "\r") >= 80);
    assert_non_null(strstr(f.out.data, "\rprofharness: front: sending build context 34 MiB / 80 MiB\x1b[K"));
    assert_null(strchr(f.out.data, '\n'));
    /* all of it sent: what the builder does with it next */
    assert_non_null(strstr(f.out.data, "\rprofharness: front: build context sent (80 MiB)"));
    assert_draws_fit(f.out.data, 100);
    close_view(&f);
}

static void
test_tty_small_context_in_kib(void **state)
{
    fixture f;

    (void)state;
    open_view(&f, "front", 1, 100, 0);
    ph_image_progress_sent(f.p, 3u << 10, 40u << 10);
    assert_string_equal(f.out.data, "\rprofharness: front: sending build context 3 KiB / 40 KiB\x1b[K");
    close_view(&f);
}

/* KiB and MiB are binary: 100 KiB is 102,400 bytes, not 102 thousand. */
static void
test_tty_context_units_binary(void **state)
{
    fixture f;

    (void)state;
    open_view(&f, "front", 1, 100, 0);
    ph_image_progress_sent(f.p, 100u << 10, 900u << 10);
    assert_string_equal(f.out.data, "\rprofharness: front: sending build context 100 KiB / 900 KiB\x1b[K");
    close_view(&f);
}

static void
test_tty_steps_then_one_line_left(void **state)
{
    fixture f;
    const char *last;

    (void)state;
    open_view(&f, "front", 1, 60, 0);
    feed(&f, cached, PH_ARRAY_LEN(cached));
    /* each step is drawn once, cut to the width */
    assert_non_null(strstr(f.out.data, "\rprofharness: front: step 3/8 RUN apt-get update -qq  && ..."));
    assert_non_null(strstr(f.out.data, "\rprofharness: front: step 8/8 COPY --from=build /src/demo..."));
    assert_int_equal(count(f.out.data, "\r"), 8);
    assert_draws_fit(f.out.data, 60);
    /* the builder's own lines are not shown */
    assert_null(strstr(f.out.data, "Using cache"));
    assert_null(strstr(f.out.data, "Successfully"));
    assert_null(strchr(f.out.data, '\n'));
    ph_image_progress_done(f.p, "demo:latest");
    /* the status line replaced by the result, and that line left */
    last = strrchr(f.out.data, '\r');
    assert_string_equal(last, "\rprofharness: front: demo:latest up to date, from the build cache (8 steps)\x1b[K\n");
    assert_int_equal(count(f.out.data, "\n"), 1);
    close_view(&f);
}

static void
test_tty_cut_counts_wide_characters(void **state)
{
    fixture f;
    char step[600];

    (void)state;
    open_view(&f, "front", 1, 60, 0);
    snprintf(step, sizeof step, "Step 1/1 : RUN echo %s", "日本語の行日本語の行日本語の行日本語の行日本語の行");
    ph_image_progress_line(f.p, step);
    assert_draws_fit(f.out.data, 60);
    assert_non_null(strstr(f.out.data, "echo 日本語"));
    assert_non_null(strstr(f.out.data, "...\x1b[K"));
    close_view(&f);
}

static void
test_builder_text_escaped(void **state)
{
    fixture f;

    (void)state;
    open_view(&f, "front", 1, 200, 0);
    ph_image_progress_line(f.p, "Step 1/2 : RUN echo \x1b]0;pwned\x07 \x1b[2J \xc2\x9b");
    ph_image_progress_line(f.p, " ---> Running in 1234");
    ph_image_progress_line(f.p, "\x1b[8mhidden");
    ph_image_progress_failed(f.p);
    /* no escape reaches the terminal but the harness's own ESC[K */
    assert_int_equal(count(f.out.data, "\x1b"), count(f.out.data, "\x1b[K"));
    assert_null(strchr(f.out.data, '\a'));
    assert_null(strstr(f.out.data, "\xc2\x9b"));
    assert_non_null(strstr(f.out.data, "step 1/2 RUN echo \\x1b]0;pwned\\x07 \\x1b[2J \\u009b"));
    assert_non_null(strstr(f.out.data, "  [front] \\x1b[8mhidden\n"));
    /* and the log the same */
    assert_null(strchr(f.log.data, '\x1b'));
    assert_non_null(strstr(f.log.data, "\\x1b[8mhidden\n"));
    close_view(&f);
}

static void
test_pipe_cached_build_is_one_line(void **state)
{
    fixture f;

    (void)state;
    open_view(&f, "front", 0, 0, 0);
    ph_image_progress_say(f.p, "building demo:latest from /src/app");
    ph_image_progress_sent(f.p, 1u << 20, 80u << 20);
    ph_image_progress_sent(f.p, 80u << 20, 80u << 20);
    feed(&f, cached, PH_ARRAY_LEN(cached));
    ph_image_progress_done(f.p, "demo:latest");
    assert_string_equal(f.out.data, "profharness: front: demo:latest up to date, from the build cache (8 steps)\n");
    close_view(&f);
}

static void
test_pipe_a_line_per_step_run(void **state)
{
    fixture f;

    (void)state;
    open_view(&f, "tools image", 0, 0, 0);
    feed(&f, partly, PH_ARRAY_LEN(partly));
    ph_image_progress_done(f.p, "tools:1");
    assert_string_equal(f.out.data, "profharness: tools image: step 3/4 COPY opt/ /opt/profharness/\n"
                                    "profharness: tools image: step 4/4 RUN mkdir -p -m 1777 /opt/profiling\n"
                                    "profharness: tools image: built tools:1 (4 steps: 2 run, 1 from the build cache)\n");
    close_view(&f);
}

/* A RUN's output that looks like a step's line opens none. */
static void
test_step_lines_in_output_open_no_step(void **state)
{
    fixture f;

    (void)state;
    open_view(&f, "front", 0, 0, 0);
    feed(&f, partly, 9); /* into step 4's RUN */
    ph_image_progress_line(f.p, "Step 1/1 : RUN pretend");
    ph_image_progress_line(f.p, "Step 2/4 : RUN pretend");
    ph_image_progress_line(f.p, "Step 5/4 : RUN pretend");
    ph_image_progress_line(f.p, "Step 5/9 : RUN pretend");
    ph_image_progress_line(f.p, " ---> Running in 99");
    feed(&f, partly + 9, PH_ARRAY_LEN(partly) - 9);
    ph_image_progress_done(f.p, "tools:1");
    assert_null(strstr(f.out.data, "pretend"));
    assert_non_null(strstr(f.out.data, "built tools:1 (4 steps: 2 run, 1 from the build cache)\n"));
    close_view(&f);
}

static void
test_no_steps_known(void **state)
{
    fixture f;

    (void)state;
    open_view(&f, "front", 0, 0, 0);
    ph_image_progress_line(f.p, "something else");
    ph_image_progress_done(f.p, "x:1");
    assert_string_equal(f.out.data, "profharness: front: built x:1\n");
    close_view(&f);
}

static void
test_pipe_long_step_bounded(void **state)
{
    fixture f;
    char step[8192];

    (void)state;
    open_view(&f, "front", 0, 0, 0);
    memset(step, 'x', sizeof step - 1);
    step[sizeof step - 1] = '\0';
    memcpy(step, "Step 1/1 : RUN ", 15);
    ph_image_progress_line(f.p, step);
    ph_image_progress_line(f.p, " ---> Running in 1");
    assert_null(strchr(f.out.data, '\r'));
    assert_int_equal(count(f.out.data, "\n"), 1);
    assert_true(f.out.len <= PH_IMAGE_PROGRESS_LINE_MAX + 1);
    assert_non_null(strstr(f.out.data, "...\n"));
    close_view(&f);
}

/* A RUN that printed 100 lines, then failed. */
static void
fail_at_step_6(fixture *f)
{
    char line[64];

    feed(f, cached, 12); /* up to step 5's cache hit ... */
    ph_image_progress_line(f->p, "Step 6/8 : RUN make all");
    ph_image_progress_line(f->p, " ---> Running in 0123");
    for (int i = 1; i <= 100; i++) {
        snprintf(line, sizeof line, "output line %d", i);
        ph_image_progress_line(f->p, line);
    }
    ph_image_progress_failed(f->p);
}

static void
test_failed_shows_its_step_and_tail(void **state)
{
    fixture f;
    char want[64];
    const char *p;

    (void)state;
    open_view(&f, "front", 0, 0, 0);
    fail_at_step_6(&f);
    p = strstr(f.out.data, "  [front] Step 6/8 : RUN make all\n  [front] ... 81 lines");
    assert_non_null(p);
    assert_null(strstr(f.out.data, "output line 80\n"));
    for (int i = 81; i <= 100; i++) {
        snprintf(want, sizeof want, "  [front] output line %d\n", i);
        assert_non_null(strstr(p, want));
    }
    assert_null(strchr(f.out.data, '\r'));
    /* the whole log has every line */
    assert_int_equal(count(f.log.data, "\n"), 12 + 2 + 100);
    assert_non_null(strstr(f.log.data, "output line 1\n"));
    close_view(&f);
}

static void
test_tty_failed_clears_the_status_line(void **state)
{
    fixture f;
    const char *p;

    (void)state;
    open_view(&f, "front", 1, 80, 0);
    fail_at_step_6(&f);
    p = strstr(f.out.data, "\r\x1b[K  [front] Step 6/8 : RUN make all\n");
    assert_non_null(p);
    assert_null(strchr(p + 1, '\r'));
    assert_non_null(strstr(p, "  [front] output line 100\n"));
    close_view(&f);
}

static void
test_quiet_says_only_a_failure(void **state)
{
    fixture f;

    (void)state;
    open_view(&f, "front", 1, 80, 1);
    ph_image_progress_say(f.p, "building");
    ph_image_progress_sent(f.p, 1, 2);
    feed(&f, cached, PH_ARRAY_LEN(cached));
    ph_image_progress_done(f.p, "demo:latest");
    assert_int_equal(f.out.len, 0);
    close_view(&f);
    open_view(&f, "front", 1, 80, 1);
    fail_at_step_6(&f);
    assert_non_null(strstr(f.out.data, "  [front] output line 100\n"));
    assert_null(strchr(f.out.data, '\r'));
    close_view(&f);
}

static void
test_free_null(void **state)
{
    (void)state;
    ph_image_progress_free(NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tty_upload_redrawn_when_its_text_changes),
        cmocka_unit_test(test_tty_small_context_in_kib),
        cmocka_unit_test(test_tty_context_units_binary),
        cmocka_unit_test(test_tty_steps_then_one_line_left),
        cmocka_unit_test(test_tty_cut_counts_wide_characters),
        cmocka_unit_test(test_builder_text_escaped),
        cmocka_unit_test(test_pipe_cached_build_is_one_line),
        cmocka_unit_test(test_pipe_a_line_per_step_run),
        cmocka_unit_test(test_step_lines_in_output_open_no_step),
        cmocka_unit_test(test_no_steps_known),
        cmocka_unit_test(test_pipe_long_step_bounded),
        cmocka_unit_test(test_failed_shows_its_step_and_tail),
        cmocka_unit_test(test_tty_failed_clears_the_status_line),
        cmocka_unit_test(test_quiet_says_only_a_failure),
        cmocka_unit_test(test_free_null),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
