/* demo_common.h - what the two demo services share: the stop flag and its
 * signal handling, the test knobs, a buffered line reader, and a small
 * connection pool (a listening socket, an accept loop, N threads).
 *
 * Test knobs (environment):
 *   DEMO_IGNORE_SIGTERM=1  SIGTERM is ignored (SIGINT still stops), so the
 *                          harness has to escalate to SIGKILL.
 *   DEMO_CRASH_AFTER=N     abort() on the request after the Nth (N > 0), so
 *                          a crash mid-run can be tested.
 *
 * Shutdown: the handler only sets demo_stop.  SIGTERM/SIGINT are blocked in
 * every thread but inside the main thread's ppoll(), which unblocks them
 * atomically: the signal lands there and the accept loop sees the flag at
 * once, with no window between checking the flag and blocking.  ppoll also
 * times out every second, because an LD_PRELOADed profiler may run the
 * handler on a thread of its own. */
#ifndef DEMO_COMMON_H
#define DEMO_COMMON_H

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define DEMO_MAX_THREADS 16
#define DEMO_QUEUE 64        /* accepted connections waiting for a thread */
#define DEMO_LINE_MAX 512    /* longest request line or header we accept */
#define DEMO_IO_TIMEOUT_S 30 /* idle peers and stuck sends give up; valgrind is slow, so generous */

static volatile sig_atomic_t demo_stop;

static void
demo_on_signal(int sig)
{
    (void)sig;
    demo_stop = 1;
}

/* Install the handlers; return the mask ppoll() should wait with (the
 * caller's mask without SIGTERM/SIGINT).  The calling thread, and every
 * thread it creates afterwards, keeps SIGTERM/SIGINT blocked. */
static sigset_t
demo_install_signals(const char *who)
{
    struct sigaction sa;
    sigset_t stops, wait_mask;
    const char *ign = getenv("DEMO_IGNORE_SIGTERM");

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = demo_on_signal; /* no SA_RESTART: ppoll returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    if (ign && strcmp(ign, "1") == 0) {
        fprintf(stderr, "%s: ignoring SIGTERM (DEMO_IGNORE_SIGTERM=1)\n", who);
        signal(SIGTERM, SIG_IGN);
    } else {
        sigaction(SIGTERM, &sa, NULL);
    }
    signal(SIGPIPE, SIG_IGN); /* a client that left is an error return, not a death */

    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stops, &wait_mask);
    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGINT);
    return wait_mask;
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
        if (crash_after < 0)
            crash_after = 0;
    }
    mine = ++*counter;
    pthread_mutex_unlock(lock);
    if (crash_after > 0 && mine > crash_after) {
        fprintf(stderr, "%s: crashing after %ld requests (DEMO_CRASH_AFTER)\n", who, crash_after);
        abort();
    }
    return mine;
}

/* Idle peers and peers that stop reading must not hold a thread forever. */
static void
demo_set_timeouts(int fd, int seconds)
{
    struct timeval tv = { seconds, 0 };

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* also bounds connect() */
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
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, DEMO_QUEUE) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A connection with a read buffer: one recv() per chunk, not per byte. */
typedef struct demo_conn {
    int fd;
    size_t off, len;
    char buf[2048];
} demo_conn;

static void
demo_conn_init(demo_conn *c, int fd)
{
    c->fd = fd;
    c->off = c->len = 0;
}

/* Read one line into LINE (without "\n" or "\r\n").  Returns its length,
 * -1 on EOF, error or timeout, -2 when the line is longer than LEN (the
 * rest of it is discarded). */
static int
demo_read_line(demo_conn *c, char *line, size_t len)
{
    size_t n = 0;
    int too_long = 0;

    for (;;) {
        if (c->off == c->len) {
            ssize_t r = recv(c->fd, c->buf, sizeof c->buf, 0);

            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return -1;
            c->off = 0;
            c->len = (size_t)r;
        }
        while (c->off < c->len) {
            char ch = c->buf[c->off++];

            if (ch == '\n') {
                if (n > 0 && line[n - 1] == '\r')
                    n--;
                line[n] = '\0';
                return too_long ? -2 : (int)n;
            }
            if (n + 1 < len)
                line[n++] = ch;
            else
                too_long = 1;
        }
    }
}

static int
demo_write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- the pool ------------------------------------------------------------
 * The main thread accepts; NTHREADS threads each serve one connection at a
 * time, to its end.  serve(fd, slot) runs on a pool thread; SLOT (0..N-1)
 * lets a service keep per-thread state without locks.  At shutdown the
 * connections being served are shut down for reading, so each thread
 * finishes the request in hand, sees EOF and returns; then all are joined. */

typedef void (*demo_serve_fn)(int fd, int slot);

static struct {
    int nthreads;
    pthread_t threads[DEMO_MAX_THREADS];
    int active[DEMO_MAX_THREADS]; /* fd each thread is serving, or -1 */
    int fds[DEMO_QUEUE];
    int head, tail, count;
    int quit; /* set by the main thread, under lock */
    demo_serve_fn serve;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} demo_pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void *
demo_pool_thread(void *arg)
{
    int slot = (int)(long)arg;

    for (;;) {
        int fd;

        pthread_mutex_lock(&demo_pool.lock);
        while (demo_pool.count == 0 && !demo_pool.quit)
            pthread_cond_wait(&demo_pool.cond, &demo_pool.lock);
        if (demo_pool.quit) {
            pthread_mutex_unlock(&demo_pool.lock);
            break;
        }
        fd = demo_pool.fds[demo_pool.head];
        demo_pool.head = (demo_pool.head + 1) % DEMO_QUEUE;
        demo_pool.count--;
        demo_pool.active[slot] = fd;
        pthread_mutex_unlock(&demo_pool.lock);

        demo_pool.serve(fd, slot);

        /* Forget the fd before closing it, so shutdown never touches a
         * number the kernel has already handed to someone else. */
        pthread_mutex_lock(&demo_pool.lock);
        demo_pool.active[slot] = -1;
        pthread_mutex_unlock(&demo_pool.lock);
        close(fd);
    }
    return NULL;
}

/* Listen on PORT and serve until SIGTERM/SIGINT.  Returns 0 after a clean
 * stop (all pool threads joined), 1 when it could not start. */
static int
demo_serve(const char *who, int port, int nthreads, demo_serve_fn serve)
{
    sigset_t wait_mask = demo_install_signals(who);
    struct timespec tick = { 1, 0 };
    int lfd;

    if (nthreads < 1 || nthreads > DEMO_MAX_THREADS)
        return 1;
    lfd = demo_listen(port);
    if (lfd < 0) {
        fprintf(stderr, "%s: listen on :%d: %s\n", who, port, strerror(errno));
        return 1;
    }
    demo_pool.serve = serve;
    demo_pool.nthreads = 0;
    for (int i = 0; i < nthreads; i++) {
        demo_pool.active[i] = -1;
        /* The threads inherit this thread's mask: SIGTERM/SIGINT blocked. */
        if (pthread_create(&demo_pool.threads[i], NULL, demo_pool_thread, (void *)(long)i) != 0)
            break;
        demo_pool.nthreads++;
    }
    if (demo_pool.nthreads == 0) {
        fprintf(stderr, "%s: no threads\n", who);
        close(lfd);
        return 1;
    }
    printf("%s: listening on :%d with %d threads\n", who, port, demo_pool.nthreads);

    while (!demo_stop) {
        struct pollfd p = { .fd = lfd, .events = POLLIN };
        int fd;

        if (ppoll(&p, 1, &tick, &wait_mask) <= 0)
            continue; /* EINTR (a stop signal) or the tick: the loop checks the flag */
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        demo_set_timeouts(fd, DEMO_IO_TIMEOUT_S);
        pthread_mutex_lock(&demo_pool.lock);
        if (demo_pool.count == DEMO_QUEUE) {
            pthread_mutex_unlock(&demo_pool.lock);
            close(fd); /* overloaded: refuse rather than queue without bound */
            continue;
        }
        demo_pool.fds[demo_pool.tail] = fd;
        demo_pool.tail = (demo_pool.tail + 1) % DEMO_QUEUE;
        demo_pool.count++;
        pthread_cond_signal(&demo_pool.cond);
        pthread_mutex_unlock(&demo_pool.lock);
    }

    close(lfd);
    pthread_mutex_lock(&demo_pool.lock);
    demo_pool.quit = 1;
    for (int i = 0; i < demo_pool.nthreads; i++)
        if (demo_pool.active[i] >= 0)
            shutdown(demo_pool.active[i], SHUT_RD); /* finish the request in hand, then EOF */
    while (demo_pool.count > 0) { /* accepted but never served */
        close(demo_pool.fds[demo_pool.head]);
        demo_pool.head = (demo_pool.head + 1) % DEMO_QUEUE;
        demo_pool.count--;
    }
    pthread_cond_broadcast(&demo_pool.cond);
    pthread_mutex_unlock(&demo_pool.lock);
    for (int i = 0; i < demo_pool.nthreads; i++)
        pthread_join(demo_pool.threads[i], NULL);
    return 0;
}

#endif
