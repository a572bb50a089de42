/* sampler_sockmark.c - which of its blocking calls the wall mode holds
 * the sampler's signal back from (ph_sampler_sock.c), for
 * test_sampler_sig.c: a thread blocks in a call, another sends it SIGUSR1,
 * and the handler reads the mask the call ran with (the signal frame's
 * uc_sigmask): a held call has a signal blocked that the thread did not
 * block itself (the sampler's timer's).
 *   - timed: read on a socket with SO_RCVTIMEO: held (the check's own
 *     check: the kernel would end it with EINTR after a handler);
 *   - read, write: on a pipe whose two fds were, just before, sockets
 *     with SO_RCVTIMEO and SO_SNDTIMEO, closed: their numbers reused by
 *     pipe(), which is no socket: never held (a mark left on a closed fd
 *     would hold them).
 * Prints "timed held=1 read held=0 write held=0" (each 0 or 1) and exits
 * 0; 3 when pipe() did not reuse the numbers in 51 tries (the sampler's
 * writer takes fds of its own now and then), 4 on another failure. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static sigset_t base;
static volatile sig_atomic_t seen, held;
static _Atomic int tid;

static void
on_usr1(int sig, siginfo_t *si, void *ctx)
{
    const ucontext_t *uc = ctx;

    (void)si;
    held = 0;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGUSR1 && sigismember(&uc->uc_sigmask, s) == 1 && sigismember(&base, s) != 1)
            held = 1;
    (void)sig;
    seen = 1;
}

typedef struct call {
    int fd, write;
} call;

static void *
blocker(void *arg)
{
    const call *c = arg;
    char buf[1] = { 'x' };

    tid = (int)syscall(SYS_gettid);
    /* a handler with SA_RESTART: the pipe's calls go on after it; the
     * timed socket's read ends (EINTR), as the kernel has it */
    if ((c->write ? write(c->fd, buf, 1) : read(c->fd, buf, 1)) < 0 && errno != EINTR)
        exit(4);
    return NULL;
}

/* Whether thread T sleeps now (its state in /proc: S). */
static int
sleeping(int t)
{
    char path[64], buf[256], *p;
    FILE *f;
    int s = 0;

    snprintf(path, sizeof path, "/proc/self/task/%d/stat", t);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    if (fgets(buf, sizeof buf, f) && (p = strrchr(buf, ')')) != NULL)
        s = p[2] == 'S';
    fclose(f);
    return s;
}

/* Block a thread in the call C, signal it there, let it go with UNBLOCK;
 * whether the call was held. */
static int
probe(const call *c, void (*unblock)(void))
{
    struct timespec ms = { 0, 1000 * 1000 };
    pthread_t t;

    seen = 0;
    tid = 0;
    if (pthread_create(&t, NULL, blocker, (void *)c) != 0)
        exit(4);
    for (int i = 0; i < 10000 && (tid == 0 || !sleeping(tid)); i++)
        nanosleep(&ms, NULL);
    if (tid == 0)
        exit(4);
    pthread_kill(t, SIGUSR1);
    for (int i = 0; i < 10000 && !seen; i++)
        nanosleep(&ms, NULL);
    if (!seen)
        exit(4);
    unblock();
    pthread_join(t, NULL);
    return held;
}

static int pair[2], pipefd[2];

static void
unblock_pair(void)
{
    /* (its read ended with EINTR already; a byte in case it had not) */
    if (write(pair[1], "x", 1) != 1)
        exit(4);
}

static void
unblock_read(void)
{
    if (write(pipefd[1], "x", 1) != 1)
        exit(4);
}

static void
unblock_write(void)
{
    char buf[65536];

    while (read(pipefd[0], buf, sizeof buf) == (ssize_t)sizeof buf)
        ;
}

static int
timed_socket(int opt)
{
    struct timeval tv = { 10, 0 };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv) < 0)
        exit(4);
    return fd;
}

int
main(void)
{
    struct sigaction sa;
    struct timeval tv = { 10, 0 };
    call timed, rd, wr;
    char fill[4096];
    int r, w, fl, t_held, r_held, w_held;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_sigmask(SIG_BLOCK, NULL, &base);

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0 ||
        setsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
        return 4;
    timed = (call){ pair[0], 0 };
    t_held = probe(&timed, unblock_pair);

    /* the sampler's writer thread opens short-lived fds of its own, and
     * one may take a number between the close and pipe(): tried again */
    for (int tries = 0;; tries++) {
        r = timed_socket(SO_RCVTIMEO);
        w = timed_socket(SO_SNDTIMEO);
        close(r);
        close(w);
        if (pipe(pipefd) < 0)
            return 4;
        if (pipefd[0] == r && pipefd[1] == w)
            break;
        if (tries == 50) {
            printf("pipe() took fds %d %d, not %d %d\n", pipefd[0], pipefd[1], r, w);
            return 3;
        }
        close(pipefd[0]);
        close(pipefd[1]);
        nanosleep(&(struct timespec){ 0, 2 * 1000 * 1000 }, NULL);
    }
    rd = (call){ pipefd[0], 0 };
    r_held = probe(&rd, unblock_read);
    /* the pipe full, so that a write blocks */
    fl = fcntl(pipefd[1], F_GETFL);
    memset(fill, 'f', sizeof fill);
    if (fl < 0 || fcntl(pipefd[1], F_SETFL, fl | O_NONBLOCK) < 0)
        return 4;
    while (write(pipefd[1], fill, sizeof fill) > 0)
        ;
    if (errno != EAGAIN || fcntl(pipefd[1], F_SETFL, fl) < 0)
        return 4;
    wr = (call){ pipefd[1], 1 };
    w_held = probe(&wr, unblock_write);
    printf("timed held=%d read held=%d write held=%d\n", t_held, r_held, w_held);
    return 0;
}
