/* report_work.c - small real programs for the report tests, run under
 * valgrind massif, valgrind callgrind and strace, whose output the tests
 * read with our parsers and with the upstream tools (ms_print,
 * callgrind_annotate, awk over the strace log) and compare:
 *   alloc     heap that grows through three allocation sites, is partly
 *             freed, and grows again (a peak in the middle)
 *   cpu       a checksum loop, a recursion (fib) and a call from two
 *             callers, for self and inclusive costs and call edges
 *   threads   like cpu, in two threads (callgrind --separate-threads)
 *   sys       syscalls from two threads: reads and writes, failing opens
 *             (ENOENT), sleeps, a signal to itself, then exit 3
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char *keep[3000];

__attribute__((noinline)) static void *
report_cache_put(size_t n)
{
    char *p = malloc(n);

    memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void *
report_build_response(size_t n)
{
    char *p = calloc(1, n);

    return p;
}

__attribute__((noinline)) static void *
report_small_meta(void)
{
    return malloc(24);
}

static int
do_alloc(void)
{
    for (int i = 0; i < 3000; i++) {
        if (i % 7 == 0)
            keep[i] = report_small_meta();
        else if (i % 3 == 0)
            keep[i] = report_build_response(200 + (size_t)i);
        else
            keep[i] = report_cache_put(100 + (size_t)i);
        if (i == 1500) /* the peak is here: free the first half */
            for (int j = 0; j < 1200; j++) {
                free(keep[j]);
                keep[j] = NULL;
            }
    }
    for (int i = 0; i < 3000; i++)
        free(keep[i]);
    return 0;
}

__attribute__((noinline)) static unsigned long
report_checksum(const unsigned char *p, size_t n)
{
    unsigned long s = 0;

    for (size_t i = 0; i < n; i++)
        s = s * 31 + p[i];
    return s;
}

__attribute__((noinline)) static unsigned long
report_fib(int n)
{
    return n < 2 ? (unsigned long)n : report_fib(n - 1) + report_fib(n - 2);
}

__attribute__((noinline)) static unsigned long
report_left(const unsigned char *p)
{
    return report_checksum(p, 4096);
}

__attribute__((noinline)) static unsigned long
report_right(const unsigned char *p)
{
    return report_checksum(p, 1024) + report_fib(12);
}

static void *
cpu_work(void *arg)
{
    static unsigned char buf[4096];
    unsigned long s = 0;

    (void)arg;
    for (int i = 0; i < 200; i++) {
        buf[i] = (unsigned char)i;
        s += report_left(buf);
        if (i % 4 == 0)
            s += report_right(buf);
    }
    s += report_fib(16);
    return (void *)s;
}

static void
on_usr1(int sig)
{
    (void)sig;
}

static void *
sys_thread(void *arg)
{
    char buf[64];
    struct timespec ts = { 0, 2000000 };

    (void)arg;
    for (int i = 0; i < 5; i++) {
        int fd = open("/nonexistent/report-work", O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            close(fd);
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 3; i++) {
        int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof buf);
            (void)n;
            close(fd);
        }
    }
    return NULL;
}

static int
do_sys(void)
{
    pthread_t t;
    int p[2];
    char c = 'x';
    struct timespec ts = { 0, 5000000 };

    signal(SIGUSR1, on_usr1);
    if (pipe(p) < 0)
        return 1;
    pthread_create(&t, NULL, sys_thread, NULL);
    for (int i = 0; i < 10; i++) {
        if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
            return 1;
    }
    nanosleep(&ts, NULL);
    kill(getpid(), SIGUSR1);
    pthread_join(t, NULL);
    if (access("/nonexistent/again", F_OK) == 0)
        return 1;
    close(p[0]);
    close(p[1]);
    return 3;
}

int
main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";

    if (strcmp(mode, "alloc") == 0)
        return do_alloc();
    if (strcmp(mode, "cpu") == 0)
        return cpu_work(NULL) == NULL ? 1 : 0;
    if (strcmp(mode, "threads") == 0) {
        pthread_t t;
        void *r;

        pthread_create(&t, NULL, cpu_work, NULL);
        cpu_work(NULL);
        pthread_join(t, &r);
        return 0;
    }
    if (strcmp(mode, "sys") == 0)
        return do_sys();
    fprintf(stderr, "usage: report_work alloc|cpu|threads|sys\n");
    return 2;
}
