/* test_util.h - small helpers for the cmocka unit tests: temp dirs,
 * writing fixture files, capturing stderr. */
#ifndef PH_TEST_UTIL_H
#define PH_TEST_UTIL_H

#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#define TU_UNUSED __attribute__((unused))

static char test_dir[256];

TU_UNUSED static void
tu_mkdtemp(void)
{
    snprintf(test_dir, sizeof test_dir, "/tmp/ph-unit-XXXXXX");
    assert_non_null(mkdtemp(test_dir));
}

TU_UNUSED static void
tu_rmdir(void)
{
    char cmd[300];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_dir);
    assert_int_equal(system(cmd), 0);
}

/* cmocka setup/teardown: a fresh temp dir per test (group). */
TU_UNUSED static int
tu_setup(void **state)
{
    (void)state;
    tu_mkdtemp();
    return 0;
}

TU_UNUSED static int
tu_teardown(void **state)
{
    (void)state;
    tu_rmdir();
    return 0;
}

/* Write TEXT to test_dir/NAME; returns the path (static buffer). */
TU_UNUSED static const char *
tu_write(const char *name, const char *text)
{
    static char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", test_dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* V's N words joined by blanks (a static buffer): what a message shows of
 * an argv. */
TU_UNUSED static const char *
tu_join(char *const *v, size_t n)
{
    static char buf[8192];
    size_t o = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && o < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? " " : "", v[i]);
    return buf;
}

/* Capture stderr between tu_capture_begin and tu_capture_end. */
static int saved_stderr = -1;
static char capture_path[512];

TU_UNUSED static void
tu_capture_begin(void)
{
    int fd;

    fflush(stderr);
    snprintf(capture_path, sizeof capture_path, "%s/stderr.txt", test_dir);
    fd = open(capture_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    saved_stderr = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* Returns the captured text (static buffer). */
TU_UNUSED static const char *
tu_capture_end(void)
{
    static char buf[8192];
    FILE *f;
    size_t n;

    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    f = fopen(capture_path, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* CHILD run in a child process (a caught interrupt stays caught for a
 * process's life, so a test of one cannot share the suite's): it returns
 * 0, or which of its checks failed, and the test fails saying WHAT. */
TU_UNUSED static void
tu_in_child(int (*child)(void), const char *what)
{
    pid_t pid;
    int st;

    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child());
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s: check %d failed (status %#x)", what, WIFEXITED(st) ? WEXITSTATUS(st) : -1, st);
}

#endif
