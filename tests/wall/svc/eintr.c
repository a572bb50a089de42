/* eintr.c - the wall mode's EINTR test service (tests/69-wall.bats, the
 * sampler's unit tests; issue 21): one named thread per blocking call,
 * each blocking in it over and over (~30 ms a time), EINTR fatal to every
 * one of them: "EINTR in <call>" and exit 5.  The calls SA_RESTART
 * restarts (read, a futex wait, accept, pthread_cond_wait) and those the
 * kernel never restarts after a handler (signal(7): poll, ppoll, select,
 * epoll_wait, nanosleep, clock_nanosleep, usleep, sigtimedwait), which
 * the sampler keeps its samples out of (ph_sampler_wait.c), and the
 * socket calls the kernel never restarts once the socket has a timeout
 * (SO_RCVTIMEO/SO_SNDTIMEO, 1 s here): recv on a TCP socket accepted
 * from a listener that has the timeout (the socket inherits it, never
 * set on it), read on a socket given one, accept on a listener none
 * connects to (it times out), connect to a listener whose backlog is
 * full (it times out).  poll and epoll_wait alternate a 30 ms timeout
 * with a wait for ever (-1, an event loop's) on a pipe of their own.  A
 * ticker thread wakes the read, the futex, the accept, the condition, the
 * two socket reads and the two waits for ever every 30 ms.  Every second (or at the end, after argv[1] seconds; 0 or none:
 * forever) it prints the fewest calls any one thread has made:
 *   calls=<n>
 * The threads are named after their call (pthread_setname_np), so the
 * wall mode's per-thread view shows them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

enum {
    READ,
    FUTEX,
    ACCEPT,
    COND,
    POLL,
    PPOLL,
    SELECT,
    EPOLL,
    NANOSLEEP,
    CLOCK_NANOSLEEP,
    USLEEP,
    SIGTIMEDWAIT,
    RECV_TO,
    READ_TO,
    ACCEPT_TO,
    CONNECT_TO,
    NCALLS
};
static const char *const names[NCALLS] = { "read",         "futex",   "accept",    "cond",        "poll",
                                           "ppoll",        "select",  "epoll",     "nanosleep",   "clock_nsleep",
                                           "usleep",       "sigtimedwait", "recv_timeo", "read_timeo", "accept_timeo",
                                           "connect_timeo" };
static _Atomic long calls[NCALLS];
static int pipefd[2], listen_fd, epfd;
/* the waits for ever: poll's pipe, and epoll_wait's (in forever_epfd) */
static int poll_pipe[2], epoll_pipe[2], forever_epfd;
static _Atomic uint32_t futex_word;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long cond_seq;
static struct sockaddr_un addr, quiet_addr, full_addr;
/* the socket calls with a timeout: a TCP connection accepted from a
 * listener with the timeout, for recv, and a connected pair for read
 * (the ticker writes their other ends), a listener none connects to, a
 * listener whose backlog of one is taken */
static int recv_pair[2], read_pair[2], quiet_fd, full_fd;

static void
check(int which, long r)
{
    if (r < 0 && errno == EINTR) {
        printf("EINTR in %s\n", names[which]);
        exit(5);
    }
    if (r < 0 && errno != ETIMEDOUT && errno != EAGAIN) {
        printf("%s: %s\n", names[which], strerror(errno));
        exit(4);
    }
    calls[which]++;
}

static const struct timespec ms30 = { 0, 30 * 1000 * 1000 };

static void
with_timeout(int fd, int opt, int ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

    if (setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv) < 0)
        exit(2);
}

/* PAIR: [0] accepted from a loopback TCP listener that has a receive
 * timeout (inherited: the accepted socket is never given one), [1] the
 * connecting end.  -1 on failure. */
static int
tcp_pair(int pair[2])
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) < 0)
        return -1;
    with_timeout(l, SO_RCVTIMEO, 1000);
    if ((pair[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        connect(pair[1], (struct sockaddr *)&a, sizeof a) < 0 || (pair[0] = accept(l, NULL, NULL)) < 0)
        return -1;
    close(l);
    return 0;
}

/* A listener on an abstract name "ph-eintr-TAG-PID", into ADDR. */
static int
listener(struct sockaddr_un *a, const char *tag, int backlog)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    a->sun_family = AF_UNIX;
    snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "ph-eintr-%s-%d", tag, (int)getpid());
    if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof *a) < 0 || listen(fd, backlog) < 0)
        exit(2);
    return fd;
}

static void *
blocker(void *arg)
{
    int which = (int)(intptr_t)arg, forever = 0;
    char name[16];

    snprintf(name, sizeof name, "%s", names[which]);
    pthread_setname_np(pthread_self(), name);
    for (;;) {
        struct pollfd pfd = { pipefd[0], POLLIN, 0 }; /* never readable but by the ticker's byte, read by READ */
        struct epoll_event ev;
        struct timeval tv = { 0, 30000 };
        sigset_t set;
        char c;
        int fd;

        switch (which) {
        case READ:
            check(which, read(pipefd[0], &c, 1));
            break;
        case FUTEX: {
            uint32_t seen = futex_word;
            check(which, syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0));
            break;
        }
        case ACCEPT:
            fd = accept(listen_fd, NULL, NULL);
            check(which, fd);
            close(fd);
            break;
        case COND: {
            unsigned long seq;

            pthread_mutex_lock(&mu);
            for (seq = cond_seq; seq == cond_seq;)
                pthread_cond_wait(&cv, &mu); /* (never EINTR: POSIX) */
            pthread_mutex_unlock(&mu);
            calls[which]++;
            break;
        }
        case POLL:
            if (forever ^= 1) { /* for ever, until the ticker's byte */
                pfd.fd = poll_pipe[0];
                check(which, poll(&pfd, 1, -1));
                if (read(poll_pipe[0], &c, 1) != 1)
                    exit(4);
                break;
            }
            pfd.fd = -1; /* nothing to wait for but the timeout */
            check(which, poll(&pfd, 1, 30));
            break;
        case PPOLL:
            pfd.fd = -1;
            sigemptyset(&set); /* a mask for the wait: every signal let in */
            check(which, ppoll(&pfd, 1, &ms30, &set));
            break;
        case SELECT:
            check(which, select(0, NULL, NULL, NULL, &tv));
            break;
        case EPOLL:
            if (forever ^= 1) {
                check(which, epoll_wait(forever_epfd, &ev, 1, -1));
                if (read(epoll_pipe[0], &c, 1) != 1)
                    exit(4);
                break;
            }
            check(which, epoll_wait(epfd, &ev, 1, 30));
            break;
        case NANOSLEEP:
            check(which, nanosleep(&ms30, NULL));
            break;
        case CLOCK_NANOSLEEP: {
            int e = clock_nanosleep(CLOCK_MONOTONIC, 0, &ms30, NULL);

            errno = e;
            check(which, e ? -1 : 0);
            break;
        }
        case USLEEP:
            check(which, usleep(30000));
            break;
        case SIGTIMEDWAIT:
            sigemptyset(&set);
            sigaddset(&set, SIGUSR2); /* never sent */
            check(which, sigtimedwait(&set, NULL, &ms30));
            break;
        case RECV_TO:
            check(which, recv(recv_pair[0], &c, 1, 0));
            break;
        case READ_TO:
            check(which, read(read_pair[0], &c, 1));
            break;
        case ACCEPT_TO:
            check(which, fd = accept(quiet_fd, NULL, NULL)); /* EAGAIN after its 30 ms */
            break;
        case CONNECT_TO:
            if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
                exit(4);
            with_timeout(fd, SO_SNDTIMEO, 30);
            check(which, connect(fd, (struct sockaddr *)&full_addr, sizeof full_addr)); /* EAGAIN after 30 ms */
            close(fd);
            break;
        }
    }
    return NULL;
}

/* Every 30 ms: a byte for the read, a futex wake, a connection for the
 * accept, a signal for the condition. */
static void *
ticker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "ticker");
    for (;;) {
        int fd;

        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ms30, NULL) != 0)
            ; /* not under test here */
        if (write(pipefd[1], "x", 1) != 1)
            exit(6);
        if (write(recv_pair[1], "x", 1) != 1 || write(read_pair[1], "x", 1) != 1)
            exit(6);
        if (write(poll_pipe[1], "x", 1) != 1 || write(epoll_pipe[1], "x", 1) != 1)
            exit(6);
        futex_word++;
        syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
            connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
            exit(7);
        close(fd);
        pthread_mutex_lock(&mu);
        cond_seq++;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static long
fewest(void)
{
    long m = calls[0];

    for (int i = 1; i < NCALLS; i++)
        if (calls[i] < m)
            m = calls[i];
    return m;
}

int
main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0;
    pthread_t th;
    sigset_t usr2;

    setvbuf(stdout, NULL, _IOLBF, 0);
    /* SIGUSR2 blocked everywhere: sigtimedwait's to wait for */
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, NULL);
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "ph-eintr-%d", (int)getpid()); /* abstract */
    if (pipe(pipefd) < 0 || (listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(listen_fd, 64) < 0 ||
        (epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return 2;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, read_pair) < 0 || tcp_pair(recv_pair) < 0)
        return 2;
    {
        struct epoll_event in = { .events = EPOLLIN };

        if (pipe(poll_pipe) < 0 || pipe(epoll_pipe) < 0 || (forever_epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
            return 2;
        in.data.fd = epoll_pipe[0];
        if (epoll_ctl(forever_epfd, EPOLL_CTL_ADD, epoll_pipe[0], &in) < 0)
            return 2;
    }
    with_timeout(read_pair[0], SO_RCVTIMEO, 1000);
    quiet_fd = listener(&quiet_addr, "quiet", 4);
    with_timeout(quiet_fd, SO_RCVTIMEO, 30);
    /* a backlog of 0 takes one connection: this one, never accepted */
    full_fd = listener(&full_addr, "full", 0);
    {
        int filler = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        if (filler < 0 || connect(filler, (struct sockaddr *)&full_addr, sizeof full_addr) < 0)
            return 2;
    }
    for (int i = 0; i < NCALLS; i++)
        if (pthread_create(&th, NULL, blocker, (void *)(intptr_t)i) != 0)
            return 3;
    if (pthread_create(&th, NULL, ticker, NULL) != 0)
        return 3;
    for (int s = 1;; s++) {
        struct timespec one = { 1, 0 };

        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &one, NULL) != 0)
            ;
        printf("calls=%ld\n", fewest());
        if (secs > 0 && s >= secs)
            return 0;
    }
}
