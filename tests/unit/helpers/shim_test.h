/* shim_test.h - what the init shim's unit tests share (test_shim.c: the
 * process side; test_shim_record.c: the completion record): running
 * build/ph-init as a subprocess with a deadline on every wait, a teardown
 * that ends whatever a failed test left running, and record readers.
 * Included by the test files only; not a helper program. */
#ifndef SHIM_TEST_H
#define SHIM_TEST_H

#include "../test_util.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define SHIM "build/ph-init"
#define H(x) "build/tests/helpers/" x
/* How long a wait for something that must happen may take: generous, a
 * loaded machine must not fail these.  Graces meant never to run out are
 * longer still (100 s), so a wrong path shows as this timeout, not as a
 * pass that took a little longer. */
#define WAIT_S 30.0

TU_UNUSED static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

TU_UNUSED static void
nap(void)
{
    usleep(10 * 1000);
}

/* test_dir/NAME in one of a few rotating buffers. */
TU_UNUSED static const char *
tpath(const char *name)
{
    static char bufs[8][600];
    static int k;
    char *b = bufs[k++ % 8];

    snprintf(b, sizeof bufs[0], "%s/%s", test_dir, name);
    return b;
}

/* The last shim started and not yet waited for: a failed assertion leaves
 * it running, and the teardown ends it and the process group of every
 * shim the test started, so nothing holds the suite's output open
 * (children inherit stdout) or outlives the run. */
static pid_t live_pid, live_init, groups[32];
static int n_groups;

TU_UNUSED static int
shim_teardown(void **state)
{
    if (live_init > 0) { /* PID 1 of a namespace: its death ends all in it */
        kill(live_init, SIGKILL);
        live_init = 0;
    }
    if (live_pid > 0) {
        kill(live_pid, SIGKILL);
        waitpid(live_pid, NULL, 0);
        live_pid = 0;
    }
    /* Even after the shims exited: a broken one may leave its group behind. */
    while (n_groups > 0)
        kill(-groups[--n_groups], SIGKILL);
    return tu_teardown(state);
}

/* Run ARGV; stderr goes to ERRFILE when given. */
TU_UNUSED static pid_t
spawn_err(char *const argv[], const char *errfile)
{
    pid_t p = fork();

    assert_true(p >= 0);
    if (p == 0) {
        setpgid(0, 0); /* one group per shim: the teardown ends it whole */
        if (errfile) {
            int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0)
                dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(99);
    }
    live_pid = p;
    if (n_groups < (int)(sizeof groups / sizeof groups[0]))
        groups[n_groups++] = p;
    return p;
}

TU_UNUSED static pid_t
spawn(char *const argv[])
{
    return spawn_err(argv, NULL);
}

/* The exit code of P (which must exit, not be killed) within WAIT_S. */
TU_UNUSED static int
wait_exit(pid_t p)
{
    double until = now() + WAIT_S;
    int st;
    pid_t r;

    while ((r = waitpid(p, &st, WNOHANG)) == 0 && now() < until)
        nap();
    if (r == 0) {
        kill(-p, SIGKILL);
        kill(p, SIGKILL);
        waitpid(p, &st, 0);
        live_pid = 0;
        fail_msg("ph-init (pid %d) did not exit within %.0f s", (int)p, WAIT_S);
    }
    assert_int_equal(r, p);
    if (live_pid == p)
        live_pid = 0;
    if (!WIFEXITED(st))
        fail_msg("ph-init itself was killed by signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

TU_UNUSED static int
still_running(pid_t p)
{
    return waitpid(p, NULL, WNOHANG) == 0;
}

/* Whether the file at PATH has a line equal to LINE. */
TU_UNUSED static int
has_line(const char *path, const char *line)
{
    char buf[256];
    FILE *f = fopen(path, "r");
    int found = 0;

    if (f == NULL)
        return 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        found = strcmp(buf, line) == 0;
    }
    fclose(f);
    return found;
}

TU_UNUSED static int
has_sig(const char *path, int sig)
{
    char line[16];

    snprintf(line, sizeof line, "%d", sig);
    return has_line(path, line);
}

TU_UNUSED static int
wait_sig(const char *path, int sig)
{
    for (double until = now() + WAIT_S; now() < until; nap())
        if (has_sig(path, sig))
            return 1;
    return 0;
}

TU_UNUSED static int
wait_exists(const char *path)
{
    for (double until = now() + WAIT_S; now() < until; nap())
        if (access(path, F_OK) == 0)
            return 1;
    return 0;
}

TU_UNUSED static int
read_pid(const char *path)
{
    char buf[32] = "";
    FILE *f;

    assert_true(wait_exists(path));
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    return (int)strtol(buf, NULL, 10);
}

TU_UNUSED static json_t *
load_record(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);

    if (j == NULL)
        fail_msg("record %s: %s (line %d)", path, e.text, e.line);
    assert_true(json_is_object(j));
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
    return j;
}

TU_UNUSED static const char *
jstr(json_t *j, const char *key)
{
    return json_string_value(json_object_get(j, key));
}

TU_UNUSED static long long
jint(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);

    if (!json_is_integer(v))
        fail_msg("record: %s is not an integer", key);
    return (long long)json_integer_value(v);
}

/* The signal names in record array KEY joined by ',' ("" when empty). */
TU_UNUSED static const char *
jsigs(json_t *j, const char *key)
{
    static char out[256];
    json_t *a = json_object_get(j, key), *v;
    size_t i;

    assert_true(json_is_array(a));
    out[0] = '\0';
    json_array_foreach(a, i, v) {
        if (i)
            strncat(out, ",", sizeof out - strlen(out) - 1);
        strncat(out, json_string_value(v) ? json_string_value(v) : "?", sizeof out - strlen(out) - 1);
    }
    return out;
}

/* Whether the real strace runs here (ptrace may be forbidden). */
TU_UNUSED static int
strace_works(void)
{
    return system("strace -o /dev/null /bin/true >/dev/null 2>&1") == 0;
}

/* Whether the file at PATH contains TEXT (in its first 4 KiB). */
TU_UNUSED static int
file_has(const char *path, const char *text)
{
    char buf[4096] = "";
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, text) != NULL;
}

#endif
