/* test_report_read.c - what is read of a run dir is bounded: a planted
 * completion record, conversion facts or sampler status of 20 or 300 MB
 * costs an fstat, never a read, wherever it is read (the report, the
 * index, the sample verdict); and the index reads only the harness's own
 * files.
 *
 * Bytes read are counted by the kernel (/proc/self/io `rchar`: every
 * read(2) of this process), so a reader that reads the file whole is seen
 * whatever it does with it afterwards.  The 300 MB files are sparse (no
 * disk); the 20 MB ones are JSON to their end (a parser reads them all). */
#include "report_test_util.h"

#include <errno.h>
#include <jansson.h>
#include <sys/stat.h>

#include "ph_report.h"
#include "ph_run_int.h"    /* ph_run_sample_verdict */
#include "ph_util.h"

#define HUGE (300LL << 20)

/* Bytes this process has read so far. */
static unsigned long long
rchar(void)
{
    char line[128];
    unsigned long long v = 0;
    FILE *f = fopen("/proc/self/io", "re");

    assert_non_null(f);
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "rchar: %llu", &v) == 1)
            break;
    fclose(f);
    assert_true(v > 0);
    return v;
}

/* test_dir/NAME: TEXT, then holes up to SIZE bytes (SIZE 0: TEXT only). */
static void
make_file(const char *name, const char *text, long long size)
{
    char path[600];
    int fd;

    snprintf(path, sizeof path, "%s/%s", test_dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    if (size > 0)
        assert_int_equal(ftruncate(fd, size), 0);
    close(fd);
}

/* test_dir/NAME: a JSON object of SIZE bytes, all of it real (a reader
 * that parses it reads it to the end): {"pad": "xxx...", "run_seconds": 99} */
#define BIG (20LL << 20)
static void
make_big_json(const char *name, long long size)
{
    static char chunk[1 << 20];
    const char *head = "{\"pad\": \"", *tail = "\", \"run_seconds\": 99}\n";
    char path[600];
    long long left = size - (long long)strlen(head) - (long long)strlen(tail);
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", test_dir, name);
    f = fopen(path, "we");
    assert_non_null(f);
    memset(chunk, 'x', sizeof chunk);
    fputs(head, f);
    for (; left > 0; left -= (long long)sizeof chunk)
        fwrite(chunk, 1, left < (long long)sizeof chunk ? (size_t)left : sizeof chunk, f);
    fputs(tail, f);
    assert_int_equal(fclose(f), 0);
}

static void
test_read_file_at(void **state)
{
    char *buf = NULL, path[600];
    size_t len = 0;
    ph_error_t err = NULL;
    unsigned long long before;
    int dfd = open(test_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    (void)state;
    assert_true(dfd >= 0);
    /* at the cap: read; one byte over: refused */
    make_file("max", "x", 4096);
    assert_int_equal(ph_read_file_at(dfd, "max", 4096, &buf, &len, &err), 0);
    assert_int_equal(len, 4096);
    free(buf);
    make_file("over", "x", 4097);
    assert_int_equal(ph_read_file_at(dfd, "over", 4096, &buf, &len, &err), -1);
    assert_null(buf);
    assert_int_equal(err->errnum, EFBIG);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "`over` is 4097 bytes (limit 4096)"));
    ph_error_free(&err);
    /* 300 MB: refused unread */
    make_file("huge", "{", HUGE);
    before = rchar();
    assert_int_equal(ph_read_file_at(dfd, "huge", PH_SMALL_JSON_MAX, &buf, &len, &err), -1);
    assert_true(rchar() - before < 4096);
    assert_int_equal(err->errnum, EFBIG);
    ph_error_free(&err);
    /* no link, no FIFO (never waited on), no directory; missing said so */
    snprintf(path, sizeof path, "%s/link", test_dir);
    assert_int_equal(symlink("max", path), 0);
    assert_int_equal(ph_read_file_at(dfd, "link", 1 << 20, &buf, &len, &err), -1);
    assert_int_equal(err->errnum, ELOOP);
    ph_error_free(&err);
    snprintf(path, sizeof path, "%s/fifo", test_dir);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(ph_read_file_at(dfd, "fifo", 1 << 20, &buf, &len, &err), -1);
    assert_int_equal(err->errnum, EINVAL);
    ph_error_free(&err);
    assert_int_equal(ph_read_file_at(dfd, ".", 1 << 20, &buf, &len, &err), -1);
    assert_int_equal(err->errnum, EINVAL);
    ph_error_free(&err);
    assert_int_equal(ph_read_file_at(dfd, "none", 1 << 20, &buf, &len, &err), -1);
    assert_int_equal(err->errnum, ENOENT);
    ph_error_free(&err);
    close(dfd);
}

#define RUN "front/20261122T101500Z-strace"

/* Write RUN's report; the problems it says, one a line, into OUT (static).
 * *READ gets how many bytes this took to read. */
static const char *
report_problems(unsigned long long *read)
{
    static char out[4096];
    ph_report_headline h;
    ph_error_t err = NULL;
    unsigned long long before = rchar();
    json_t *sum, *p;
    size_t i;

    if (ph_report_write_run(rt_path(RUN), NULL, &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    *read = rchar() - before;
    sum = json_load_file(rt_path(RUN "/summary.json"), 0, NULL);
    assert_non_null(sum);
    out[0] = '\0';
    json_array_foreach(json_object_get(sum, "problems"), i, p) {
        strncat(out, json_string_value(p), sizeof out - strlen(out) - 2);
        strcat(out, "\n");
    }
    json_decref(sum);
    return out;
}

/* The report of a run whose container planted a 20 MB ph-exit.json and
 * convert.json (JSON to the end): written, both said to be refused,
 * neither read; a link by such a name is not followed. */
static void
test_report_refuses_huge_records(void **state)
{
    unsigned long long read;
    const char *problems;

    (void)state;
    assert_int_equal(mkdir(rt_path("front"), 0755), 0);
    assert_int_equal(mkdir(rt_path(RUN), 0755), 0);
    make_file(RUN "/run.json",
              "{\"service\": \"front\", \"mode\": \"strace\", \"run\": \"20261122T101500Z-strace\", "
              "\"completion\": null}\n", 0);
    make_big_json(RUN "/ph-exit.json", BIG);
    make_big_json(RUN "/convert.json", BIG);
    problems = report_problems(&read);
    assert_true(read < (1u << 20));
    if (strstr(problems, "`ph-exit.json` is 20971520 bytes (limit 65536)") == NULL ||
        strstr(problems, "`convert.json` is 20971520 bytes (limit 65536)") == NULL)
        fail_msg("problems: %s", problems);

    assert_int_equal(unlink(rt_path(RUN "/convert.json")), 0);
    assert_int_equal(symlink("run.json", rt_path(RUN "/convert.json")), 0);
    problems = report_problems(&read);
    if (strstr(problems, "`convert.json` is a symbolic link") == NULL)
        fail_msg("problems: %s", problems);
}

/* The index reads run.json and summary.json only: how long a run ran and
 * whether it had a record come from run.json's checked `completion`, never
 * from a ph-exit.json, however big or whatever it says. */
static void
test_index_reads_own_files(void **state)
{
    char *html = NULL;
    size_t len = 0;
    ph_error_t err = NULL;
    unsigned long long before;
    const char *a, *b;

    (void)state;
    assert_int_equal(mkdir(rt_path("svc"), 0755), 0);
    assert_int_equal(mkdir(rt_path("svc/20261122T101500Z-strace"), 0755), 0);
    assert_int_equal(mkdir(rt_path("svc/20261122T111500Z-strace"), 0755), 0);
    /* collected with a record: 7 s; a 20 MB ph-exit.json beside it */
    make_file("svc/20261122T101500Z-strace/run.json",
              "{\"service\": \"svc\", \"mode\": \"strace\", \"completion\": {\"version\": 1, \"exit_code\": 0, "
              "\"signal\": null, \"escalations\": [], \"run_seconds\": 7}}\n",
              0);
    make_big_json("svc/20261122T101500Z-strace/ph-exit.json", BIG);
    /* a snapshot (no record), with a ph-exit.json planted after it */
    make_file("svc/20261122T111500Z-strace/run.json",
              "{\"service\": \"svc\", \"mode\": \"strace\", \"completion\": null}\n", 0);
    make_file("svc/20261122T111500Z-strace/ph-exit.json",
              "{\"version\": 1, \"exit_code\": 0, \"signal\": null, \"escalations\": [], \"run_seconds\": 99}\n", 0);
    before = rchar();
    if (ph_report_write_index(test_dir, &err) < 0)
        fail_msg("index: %s", err->msg);
    assert_true(rchar() - before < (1u << 20));
    assert_int_equal(ph_read_file(rt_path("index.html"), 1 << 20, 0, &html, &len, &err), 0);
    a = strstr(html, "id=\"svc--20261122T101500Z-strace\"");
    b = strstr(html, "id=\"svc--20261122T111500Z-strace\"");
    assert_non_null(a);
    assert_non_null(b);
    assert_true(b < a); /* newest first */
    assert_non_null(strstr(a, "7.00 s"));
    assert_null(strstr(html, "1 min 39 s"));
    assert_non_null(strstr(b, "snapshot / unknown"));
    free(html);
}

/* A sampler status over the cap is skipped unread; the others count. */
static void
test_sample_status_bounded(void **state)
{
    char why[512];
    unsigned long long before;
    int fd;

    (void)state;
    assert_int_equal(mkdir(rt_path("status"), 0755), 0);
    make_big_json("status/sampler-status-1.json", BIG);
    make_file("status/sampler-status-2.json",
              "{\"pid\": 2, \"program\": \"/bin/sh\", \"samples\": 0, \"reason\": \"no CPU time used\"}\n", 0);
    fd = open(rt_path("status"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    before = rchar();
    assert_int_equal(ph_run_sample_verdict(fd, why, sizeof why), 2);
    assert_true(rchar() - before < 4096);
    assert_string_equal(why, "/bin/sh (pid 2): no CPU time used");
    close(fd);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_file_at),
        cmocka_unit_test(test_report_refuses_huge_records),
        cmocka_unit_test(test_index_reads_own_files),
        cmocka_unit_test(test_sample_status_bounded),
    };

    return cmocka_run_group_tests_name("report_read", tests, tu_setup, tu_teardown);
}
