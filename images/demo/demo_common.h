/* demo_common.h - what the two demo services share: the stop flag and its
 * signal handling, the test knobs, a buffered line reader, and a small
 * connection pool (a listening socket, an accept loop, N threads).
 *
 * Test knobs (environment), for the fault matrix (tests/35-fault-matrix.bats):
 *   DEMO_IGNORE_SIGTERM=1  SIGTERM is ignored (SIGINT still stops), so the
 *                          harness has to escalate to SIGKILL.
 *   DEMO_CRASH_AFTER=N     abort() on the request after the Nth (N > 0), so
 *                          a crash mid-run can be tested.
 *   DEMO_CRASH_SIGNAL=SEGV ... crash with a real SIGSEGV (a write to an
 *                          unmapped address) instead of abort().
 *   DEMO_EXIT_AFTER=N      exit(3) by itself on the request after the Nth.
 *   DEMO_HOG_MB=N          every request allocates and touches N MB more,
 *                          never freed: an OOM kill under a memory limit.
 *   DEMO_ORPHAN=1          at start, fork a child that ignores SIGTERM and
 *                          sleeps: it outlives the service.
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
#include <stdint.h>
#include <sys/prctl.h>
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

static long
demo_env_long(const char *name)
{
    const char *s = getenv(name);
    long v = s ? strtol(s, NULL, 10) : 0;

    return v > 0 ? v : 0;
}

/* An address nothing is mapped at, which the compiler cannot prove null
 * (a literal NULL store may be compiled into a trap: SIGILL, not SIGSEGV). */
static volatile uintptr_t demo_bad_address = 8;

/* Memory DEMO_HOG_MB keeps: a list threaded through the blocks. */
static void *demo_hog_head;

/* Count a request (thread-safe), then apply the knobs that act on the Nth
 * request: crash (DEMO_CRASH_AFTER, DEMO_CRASH_SIGNAL), exit by itself
 * (DEMO_EXIT_AFTER), grow (DEMO_HOG_MB). */
static long
demo_count_request(const char *who, long *counter, pthread_mutex_t *lock)
{
    static long crash_after = -1, exit_after, hog_mb;
    static int crash_segv;
    long mine;

    pthread_mutex_lock(lock);
    if (crash_after < 0) {
        const char *sig = getenv("DEMO_CRASH_SIGNAL");

        crash_after = demo_env_long("DEMO_CRASH_AFTER");
        crash_segv = sig != NULL && strcmp(sig, "SEGV") == 0;
        exit_after = demo_env_long("DEMO_EXIT_AFTER");
        hog_mb = demo_env_long("DEMO_HOG_MB");
    }
    mine = ++*counter;
    if (hog_mb > 0) {
        size_t n = (size_t)hog_mb << 20;
        void **block = malloc(n);

        if (block != NULL) {
            memset(block, 0xa5, n); /* touched: resident, charged to the cgroup */
            *block = demo_hog_head;
            demo_hog_head = block;
        }
    }
    pthread_mutex_unlock(lock);
    if (crash_after > 0 && mine > crash_after) {
        fprintf(stderr, "%s: crashing after %ld requests (DEMO_CRASH_AFTER%s)\n", who, crash_after,
                crash_segv ? ", SIGSEGV" : "");
        if (crash_segv)
            *(volatile int *)demo_bad_address = 1;
        abort();
    }
    if (exit_after > 0 && mine > exit_after) {
        fprintf(stderr, "%s: exiting by itself after %ld requests (DEMO_EXIT_AFTER)\n", who, exit_after);
        exit(3);
    }
    return mine;
}

/* DEMO_ORPHAN=1: a child that ignores SIGTERM and outlives the service.
 * Called before any thread exists. */
static void
demo_maybe_orphan(const char *who)
{
    const char *s = getenv("DEMO_ORPHAN");
    pid_t pid;

    if (s == NULL || strcmp(s, "1") != 0)
        return;
    pid = fork();
    if (pid == 0) {
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        prctl(PR_SET_NAME, "demo-orphan");
        for (;;)
            pause();
    }
    if (pid > 0)
        fprintf(stderr, "%s: forked %d, which ignores SIGTERM (DEMO_ORPHAN=1)\n", who, (int)pid);
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
    sigset_t wait_mask;
    struct timespec tick = { 1, 0 };
    int lfd;

    demo_maybe_orphan(who);
    wait_mask = demo_install_signals(who);

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
