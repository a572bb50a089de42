/* demo_common.h - what the two demo services share: a line protocol over
 * TCP, the SIGTERM flag, and the test knobs DEMO_IGNORE_SIGTERM (the
 * service ignores SIGTERM, so the harness must escalate) and
 * DEMO_CRASH_AFTER=N (abort() after N requests). */
#ifndef DEMO_COMMON_H
#define DEMO_COMMON_H

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t demo_stop;

static void
demo_on_signal(int sig)
{
    (void)sig;
    demo_stop = 1;
}

static void
demo_install_signals(const char *who)
{
    struct sigaction sa;
    const char *ign = getenv("DEMO_IGNORE_SIGTERM");

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = demo_on_signal; /* no SA_RESTART: accept() returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    if (ign && strcmp(ign, "1") == 0) {
        fprintf(stderr, "%s: ignoring SIGTERM (DEMO_IGNORE_SIGTERM=1)\n", who);
        signal(SIGTERM, SIG_IGN);
    } else {
        sigaction(SIGTERM, &sa, NULL);
    }
    signal(SIGPIPE, SIG_IGN);
}

/* Count a request (thread-safe); abort() once DEMO_CRASH_AFTER is passed,
 * so tests can see that a crash mid-run keeps what the profiler wrote. */
static long
demo_count_request(const char *who, long *counter, pthread_mutex_t *lock)
{
    static long crash_after = -1;
    long mine;

    pthread_mutex_lock(lock);
    if (crash_after < 0) {
        const char *s = getenv("DEMO_CRASH_AFTER");
        crash_after = s ? strtol(s, NULL, 10) : 0;
    }
    mine = ++*counter;
    pthread_mutex_unlock(lock);
    if (crash_after > 0 && mine > crash_after) {
        fprintf(stderr, "%s: crashing after %ld requests (DEMO_CRASH_AFTER)\n", who, crash_after);
        abort();
    }
    return mine;
}

static int
demo_listen(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Read one line (without the newline) into BUF; -1 on EOF or error. */
static int
demo_read_line(int fd, char *buf, size_t len)
{
    size_t n = 0;

    while (n + 1 < len) {
        char c;
        ssize_t r = read(fd, &c, 1);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (c == '\n')
            break;
        buf[n++] = c;
    }
    buf[n] = '\0';
    return (int)n;
}

static int
demo_write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

#endif
