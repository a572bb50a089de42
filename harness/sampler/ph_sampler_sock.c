/* ph_sampler_sock.c - the wall clock's samples kept out of the socket
 * calls the kernel never restarts once the socket has a timeout.
 *
 * signal(7): on a socket with SO_RCVTIMEO, accept, recv, recvfrom and
 * recvmsg, and with SO_SNDTIMEO, connect, send, sendto and sendmsg, fail
 * with EINTR after a handler ran, whatever SA_RESTART says; so do read,
 * readv, write and writev on such a socket (the kernel's socket path is
 * the same).  The wall mode samples a blocked thread once, so a service
 * blocking in such a call would see an EINTR of ours (the demo's front
 * did: a worker connection with SO_SNDTIMEO, "worker-unreachable").
 *
 * Which sockets have a timeout is learnt where the program sets one: an
 * interposed setsockopt marks the fd (a bitmap, one bit per direction),
 * close clears it, accept and accept4 ask the kernel whether the new
 * socket inherited its listener's (TCP copies them; AF_UNIX does not).
 * The calls above on a marked fd then hold our timer's signal back as
 * ph_sampler_wait.c does for the waits: one sample, off CPU under the
 * call, standing for the whole wait.  A call on any other fd, or with
 * MSG_DONTWAIT, costs one bit test.  Not covered: fds above
 * PHS_SOCK_FDS, timeouts set before the library was loaded or by glibc
 * itself, an fd made by dup/dup2/dup3/fcntl(F_DUPFD) (the copy is not
 * marked), recvmmsg and sendmmsg.
 *
 * The next functions are found once, at load: read and write are called
 * by the sampler itself, its signal handler included, where dlsym may
 * not run.  Before that they are the raw system calls. */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ph_sampler_int.h"

#define PHS_SOCK_FDS 65536
#define SOCK_WORD (8 * sizeof(unsigned long))

/* fd -> the socket has a receive (rcv) or send (snd) timeout */
static _Atomic unsigned long sock_rcv[PHS_SOCK_FDS / SOCK_WORD], sock_snd[PHS_SOCK_FDS / SOCK_WORD];

static ssize_t (*read_next)(int, void *, size_t);
static ssize_t (*write_next)(int, const void *, size_t);
static ssize_t (*readv_next)(int, const struct iovec *, int);
static ssize_t (*writev_next)(int, const struct iovec *, int);
static ssize_t (*read_chk_next)(int, void *, size_t, size_t);
static ssize_t (*recv_next)(int, void *, size_t, int);
static ssize_t (*recv_chk_next)(int, void *, size_t, size_t, int);
static ssize_t (*recvfrom_next)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
static ssize_t (*recvfrom_chk_next)(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
static ssize_t (*recvmsg_next)(int, struct msghdr *, int);
static ssize_t (*send_next)(int, const void *, size_t, int);
static ssize_t (*sendto_next)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*sendmsg_next)(int, const struct msghdr *, int);
static int (*connect_next)(int, const struct sockaddr *, socklen_t);
static int (*accept_next)(int, struct sockaddr *, socklen_t *);
static int (*accept4_next)(int, struct sockaddr *, socklen_t *, int);
static int (*setsockopt_next)(int, int, int, const void *, socklen_t);
static int (*close_next)(int);

/* glibc's with _FORTIFY_SOURCE (bits/unistd.h, bits/socket2.h) */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *from,
                       socklen_t *fromlen);

__attribute__((constructor(101))) static void
sock_resolve(void)
{
#define FIND(fn, name) fn##_next = (__typeof__(fn##_next))dlsym(RTLD_NEXT, name)
    FIND(read, "read");
    FIND(write, "write");
    FIND(readv, "readv");
    FIND(writev, "writev");
    FIND(read_chk, "__read_chk");
    FIND(recv, "recv");
    FIND(recv_chk, "__recv_chk");
    FIND(recvfrom, "recvfrom");
    FIND(recvfrom_chk, "__recvfrom_chk");
    FIND(recvmsg, "recvmsg");
    FIND(send, "send");
    FIND(sendto, "sendto");
    FIND(sendmsg, "sendmsg");
    FIND(connect, "connect");
    FIND(accept, "accept");
    FIND(accept4, "accept4");
    FIND(setsockopt, "setsockopt");
    FIND(close, "close");
#undef FIND
}

static int
sock_marked(_Atomic unsigned long *map, int fd)
{
    if (fd < 0 || fd >= PHS_SOCK_FDS)
        return 0;
    return (atomic_load_explicit(&map[fd / SOCK_WORD], memory_order_relaxed) >> (fd % SOCK_WORD)) & 1;
}

static void
sock_mark(_Atomic unsigned long *map, int fd, int on)
{
    unsigned long bit;

    if (fd < 0 || fd >= PHS_SOCK_FDS)
        return;
    bit = 1UL << (fd % SOCK_WORD);
    if (on)
        atomic_fetch_or_explicit(&map[fd / SOCK_WORD], bit, memory_order_relaxed);
    else
        atomic_fetch_and_explicit(&map[fd / SOCK_WORD], ~bit, memory_order_relaxed);
}

/* Is a call on FD in direction MAP (FLAGS: the call's, 0 where it has
 * none) one to hold our signal back from? */
static inline int
sock_held(_Atomic unsigned long *map, int fd, int flags)
{
    return phs.wall && !(flags & MSG_DONTWAIT) && sock_marked(map, fd);
}

/* Which timeouts FD has, asked of the kernel (a socket accept made). */
static void
sock_learn(int fd)
{
    struct timeval tv;
    socklen_t len;
    static const char zero[sizeof tv];

    if (fd < 0 || fd >= PHS_SOCK_FDS)
        return;
    len = sizeof tv;
    sock_mark(sock_rcv, fd,
              getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0 && memcmp(&tv, zero, sizeof tv) != 0);
    len = sizeof tv;
    sock_mark(sock_snd, fd,
              getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) == 0 && memcmp(&tv, zero, sizeof tv) != 0);
}

/* R, accepted from listener FD: its timeouts, inherited or not (an fd
 * number closed behind our back may carry stale bits: cleared). */
static void
sock_accepted(int fd, int r)
{
    if (r < 0)
        return;
    if (sock_marked(sock_rcv, fd) || sock_marked(sock_snd, fd)) {
        sock_learn(r);
    } else {
        sock_mark(sock_rcv, r, 0);
        sock_mark(sock_snd, r, 0);
    }
}

int phs_setsockopt(int fd, int level, int name, const void *val, socklen_t len) PHS_LIBC(setsockopt);
int
phs_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    int r = setsockopt_next ? setsockopt_next(fd, level, name, val, len)
                            : (int)syscall(SYS_setsockopt, fd, level, name, val, len);
    int rcv = 0, snd = 0, set = 0;

    if (r != 0 || level != SOL_SOCKET)
        return r;
#ifdef SO_RCVTIMEO_OLD
    rcv = name == SO_RCVTIMEO_OLD || name == SO_RCVTIMEO_NEW;
    snd = name == SO_SNDTIMEO_OLD || name == SO_SNDTIMEO_NEW;
#else
    rcv = name == SO_RCVTIMEO;
    snd = name == SO_SNDTIMEO;
#endif
    if (!rcv && !snd)
        return r;
    for (socklen_t i = 0; val != NULL && i < len; i++) /* any layout: a zero timeout is all zero bytes */
        set |= ((const unsigned char *)val)[i] != 0;
    sock_mark(rcv ? sock_rcv : sock_snd, fd, set);
    return r;
}

int phs_close(int fd) PHS_LIBC(close);
int
phs_close(int fd)
{
    sock_mark(sock_rcv, fd, 0);
    sock_mark(sock_snd, fd, 0);
    return close_next ? close_next(fd) : (int)syscall(SYS_close, fd);
}

/* CALL with our signal held back when FD is a marked socket in MAP;
 * else CALL alone, a tail call: no frame of ours in the service's
 * stacks. */
#define SOCK_CALL(map, fd, flags, call)                                                                                \
    do {                                                                                                               \
        sigset_t old_;                                                                                                 \
        int on_;                                                                                                       \
        __typeof__(call) r_;                                                                                           \
                                                                                                                       \
        if (!sock_held(map, fd, flags))                                                                                \
            return call;                                                                                               \
        on_ = phs_wait_begin(&old_);                                                                                   \
        r_ = call;                                                                                                     \
        phs_wait_end(on_);                                                                                             \
        return r_;                                                                                                     \
    } while (0)

ssize_t phs_read(int fd, void *buf, size_t n) PHS_LIBC(read);
PHS_WAIT_FN ssize_t
phs_read(int fd, void *buf, size_t n)
{
    SOCK_CALL(sock_rcv, fd, 0, read_next ? read_next(fd, buf, n) : syscall(SYS_read, fd, buf, n));
}

ssize_t phs___read_chk(int fd, void *buf, size_t n, size_t buflen) PHS_LIBC(__read_chk);
PHS_WAIT_FN ssize_t
phs___read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    SOCK_CALL(sock_rcv, fd, 0,
              read_chk_next ? read_chk_next(fd, buf, n, buflen) : syscall(SYS_read, fd, buf, n < buflen ? n : buflen));
}

ssize_t phs_readv(int fd, const struct iovec *iov, int n) PHS_LIBC(readv);
PHS_WAIT_FN ssize_t
phs_readv(int fd, const struct iovec *iov, int n)
{
    SOCK_CALL(sock_rcv, fd, 0, readv_next ? readv_next(fd, iov, n) : syscall(SYS_readv, fd, iov, n));
}

ssize_t phs_write(int fd, const void *buf, size_t n) PHS_LIBC(write);
PHS_WAIT_FN ssize_t
phs_write(int fd, const void *buf, size_t n)
{
    SOCK_CALL(sock_snd, fd, 0, write_next ? write_next(fd, buf, n) : syscall(SYS_write, fd, buf, n));
}

ssize_t phs_writev(int fd, const struct iovec *iov, int n) PHS_LIBC(writev);
PHS_WAIT_FN ssize_t
phs_writev(int fd, const struct iovec *iov, int n)
{
    SOCK_CALL(sock_snd, fd, 0, writev_next ? writev_next(fd, iov, n) : syscall(SYS_writev, fd, iov, n));
}

ssize_t phs_recv(int fd, void *buf, size_t n, int flags) PHS_LIBC(recv);
PHS_WAIT_FN ssize_t
phs_recv(int fd, void *buf, size_t n, int flags)
{
    SOCK_CALL(sock_rcv, fd, flags,
              recv_next ? recv_next(fd, buf, n, flags) : syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL));
}

ssize_t phs___recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) PHS_LIBC(__recv_chk);
PHS_WAIT_FN ssize_t
phs___recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    SOCK_CALL(sock_rcv, fd, flags,
              recv_chk_next ? recv_chk_next(fd, buf, n, buflen, flags)
                            : syscall(SYS_recvfrom, fd, buf, n < buflen ? n : buflen, flags, NULL, NULL));
}

ssize_t phs_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
    socklen_t *fromlen) PHS_LIBC(recvfrom);
PHS_WAIT_FN ssize_t
phs_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *fromlen)
{
    SOCK_CALL(sock_rcv, fd, flags,
              recvfrom_next ? recvfrom_next(fd, buf, n, flags, from, fromlen)
                            : syscall(SYS_recvfrom, fd, buf, n, flags, from, fromlen));
}

ssize_t phs___recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *from,
    socklen_t *fromlen) PHS_LIBC(__recvfrom_chk);
PHS_WAIT_FN ssize_t
phs___recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *from, socklen_t *fromlen)
{
    SOCK_CALL(sock_rcv, fd, flags,
              recvfrom_chk_next ? recvfrom_chk_next(fd, buf, n, buflen, flags, from, fromlen)
                                : syscall(SYS_recvfrom, fd, buf, n < buflen ? n : buflen, flags, from, fromlen));
}

ssize_t phs_recvmsg(int fd, struct msghdr *msg, int flags) PHS_LIBC(recvmsg);
PHS_WAIT_FN ssize_t
phs_recvmsg(int fd, struct msghdr *msg, int flags)
{
    SOCK_CALL(sock_rcv, fd, flags, recvmsg_next ? recvmsg_next(fd, msg, flags) : syscall(SYS_recvmsg, fd, msg, flags));
}

ssize_t phs_send(int fd, const void *buf, size_t n, int flags) PHS_LIBC(send);
PHS_WAIT_FN ssize_t
phs_send(int fd, const void *buf, size_t n, int flags)
{
    SOCK_CALL(sock_snd, fd, flags,
              send_next ? send_next(fd, buf, n, flags) : syscall(SYS_sendto, fd, buf, n, flags, NULL, 0));
}

ssize_t phs_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
    socklen_t tolen) PHS_LIBC(sendto);
PHS_WAIT_FN ssize_t
phs_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen)
{
    SOCK_CALL(sock_snd, fd, flags,
              sendto_next ? sendto_next(fd, buf, n, flags, to, tolen) : syscall(SYS_sendto, fd, buf, n, flags, to, tolen));
}

ssize_t phs_sendmsg(int fd, const struct msghdr *msg, int flags) PHS_LIBC(sendmsg);
PHS_WAIT_FN ssize_t
phs_sendmsg(int fd, const struct msghdr *msg, int flags)
{
    SOCK_CALL(sock_snd, fd, flags, sendmsg_next ? sendmsg_next(fd, msg, flags) : syscall(SYS_sendmsg, fd, msg, flags));
}

int phs_connect(int fd, const struct sockaddr *to, socklen_t tolen) PHS_LIBC(connect);
PHS_WAIT_FN int
phs_connect(int fd, const struct sockaddr *to, socklen_t tolen)
{
    SOCK_CALL(sock_snd, fd, 0, connect_next ? connect_next(fd, to, tolen) : (int)syscall(SYS_connect, fd, to, tolen));
}

int phs_accept(int fd, struct sockaddr *from, socklen_t *fromlen) PHS_LIBC(accept);
PHS_WAIT_FN int
phs_accept(int fd, struct sockaddr *from, socklen_t *fromlen)
{
    sigset_t old;
    int on = sock_held(sock_rcv, fd, 0) && phs_wait_begin(&old);
    int r = accept_next ? accept_next(fd, from, fromlen) : (int)syscall(SYS_accept, fd, from, fromlen);

    phs_wait_end(on);
    sock_accepted(fd, r);
    return r;
}

int phs_accept4(int fd, struct sockaddr *from, socklen_t *fromlen, int flags) PHS_LIBC(accept4);
PHS_WAIT_FN int
phs_accept4(int fd, struct sockaddr *from, socklen_t *fromlen, int flags)
{
    sigset_t old;
    int on = sock_held(sock_rcv, fd, 0) && phs_wait_begin(&old);
    int r = accept4_next ? accept4_next(fd, from, fromlen, flags)
                         : (int)syscall(SYS_accept4, fd, from, fromlen, flags);

    phs_wait_end(on);
    sock_accepted(fd, r);
    return r;
}
