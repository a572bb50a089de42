/* report_test_util.h - what the report tests share: running the real
 * profilers and the upstream tools (valgrind, ms_print,
 * callgrind_annotate, strace, awk) and reading their output. */
#ifndef PH_REPORT_TEST_UTIL_H
#define PH_REPORT_TEST_UTIL_H

#include "test_util.h"

#include "ph_profile.h"

#include <sys/stat.h>
#include <sys/wait.h>

#define WORK "build/tests/helpers/report_work"

/* Run the shell command FMT...; returns its stdout (malloc'd) and sets
 * *STATUS to its exit status. */
TU_UNUSED __attribute__((format(printf, 2, 3))) static char *
rt_run(int *status, const char *fmt, ...)
{
    char cmd[4096], *out = NULL;
    size_t len = 0, cap = 0;
    va_list ap;
    FILE *p;
    int rc;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    p = popen(cmd, "r");
    assert_non_null(p);
    for (;;) {
        size_t n;
        if (cap - len < 65536) {
            cap = cap ? cap * 2 : 1 << 16;
            out = realloc(out, cap + 1);
            assert_non_null(out);
        }
        n = fread(out + len, 1, cap - len, p);
        len += n;
        if (n == 0)
            break;
    }
    out[len] = '\0';
    rc = pclose(p);
    if (status)
        *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
    return out;
}

/* Run FMT... and require exit status 0; returns stdout. */
#define rt_must(...)                                                          \
    ({                                                                         \
        int st_;                                                               \
        char *o_ = rt_run(&st_, __VA_ARGS__);                                  \
        if (st_ != 0)                                                          \
            fail_msg("command failed (%d): %s", st_, o_);                      \
        o_;                                                                    \
    })

/* The whole of PATH (malloc'd, NUL-terminated), *LEN its size. */
TU_UNUSED static char *
rt_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* "1,234,567" -> 1234567 */
TU_UNUSED static unsigned long long
rt_uncommify(const char *s, size_t n)
{
    unsigned long long v = 0;

    for (size_t i = 0; i < n; i++)
        if (s[i] >= '0' && s[i] <= '9')
            v = v * 10 + (unsigned long long)(s[i] - '0');
    return v;
}

/* The next line of *P (without '\n') into LINE; 0 at the end. */
TU_UNUSED static int
rt_next_line(const char **p, char *line, size_t cap)
{
    const char *s = *p, *e;
    size_t n;

    if (*s == '\0')
        return 0;
    e = strchr(s, '\n');
    n = e ? (size_t)(e - s) : strlen(s);
    if (n >= cap)
        n = cap - 1;
    memcpy(line, s, n);
    line[n] = '\0';
    *p = e ? e + 1 : s + strlen(s);
    return 1;
}

TU_UNUSED static const char *
rt_path(const char *name)
{
    static char path[4][600];
    static int k;

    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", test_dir, name);
    return path[k];
}

/* The shipped profiles (profiles/), loaded once. */
TU_UNUSED static ph_profile_set rt_profile_set;

TU_UNUSED static const ph_profile_set *
rt_profiles(void)
{
    ph_error_t err = NULL;

    if (rt_profile_set.n == 0 && ph_profiles_load_dir("profiles", &rt_profile_set, &err) < 0)
        fail_msg("%s", err->msg);
    return &rt_profile_set;
}

TU_UNUSED static void
rt_profiles_free(void)
{
    ph_profiles_free(&rt_profile_set);
}

#endif
