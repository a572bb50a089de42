/* ph_sampler_wait.c - the wall clock's samples kept out of the waits the
 * kernel never restarts.
 *
 * signal(7): after a handler ran, poll, ppoll, select, pselect,
 * epoll_wait, epoll_pwait, nanosleep, clock_nanosleep, usleep, pause,
 * sigsuspend, sigtimedwait and sigwaitinfo fail with EINTR whatever
 * SA_RESTART says (and sleep returns early).  A wall-clock sample landing
 * while a thread blocks in one would hand the program an EINTR it did not
 * cause.  So in the wall mode each of them is interposed: our timer's
 * signal is blocked for the call (the service's own signals interrupt it
 * as ever), so the thread's timer stays pending, counting the periods it
 * expired (si_overrun), and is delivered as the call returns: one sample
 * standing for the whole wait, marked [off-cpu] under the call (the
 * frames below the interposed function dropped: phs_wait_trim).  Costs
 * two rt_sigprocmask calls per wait that can block (a zero timeout is
 * passed through untouched).  The socket calls that fail with EINTR
 * only once the socket has a timeout are ph_sampler_sock.c's.  Not
 * covered: these calls made by glibc itself (its resolver's poll), by
 * syscall(2) or by a runtime's own system calls (the Go runtime retries
 * EINTR itself), System V IPC (msgrcv, msgsnd, semop, semtimedop) and
 * io_getevents: there a sample can still make a call fail with EINTR.  A thread still in a
 * wait at a snapshot has that wait counted when it returns.
 *
 * Every function here is in the phs_wait section, which tells the
 * handler where our frames are. */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "ph_sampler_int.h"

extern const char __start_phs_wait[] PH_HIDDEN;
extern const char __stop_phs_wait[] PH_HIDDEN;

/* glibc's poll with _FORTIFY_SOURCE (bits/poll2.h) */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len);

static __thread int tls_wait __attribute__((tls_model("initial-exec")));

PHS_WAIT_FN int
phs_wait_begin(sigset_t *old)
{
    sigset_t ours;

    if (!phs.wall)
        return 0; /* (on or off: a timer's signal queued before the sampling stopped still arrives) */
    sigemptyset(&ours);
    sigaddset(&ours, PHS_TIMER_SIG);
    if (pthread_sigmask(SIG_BLOCK, &ours, old) != 0 || sigismember(old, PHS_TIMER_SIG))
        return 0; /* already blocked: the program's own doing, or an outer wait */
    tls_wait = 1;
    return 1;
}

PHS_WAIT_FN void
phs_wait_end(int on)
{
    sigset_t ours;
    int saved = errno;

    if (!on)
        return;
    sigemptyset(&ours);
    sigaddset(&ours, PHS_TIMER_SIG);
    pthread_sigmask(SIG_UNBLOCK, &ours, NULL);
    tls_wait = 0;
    errno = saved;
}

int
phs_wait_sampled(void)
{
    return tls_wait;
}

int
phs_wait_fn(uintptr_t pc)
{
    return pc >= (uintptr_t)__start_phs_wait && pc < (uintptr_t)__stop_phs_wait;
}

uint32_t
phs_wait_trim(uintptr_t *pcs, uint32_t depth)
{
    uint32_t j = 0, k;

    while (j < depth && !phs_wait_fn(pcs[j]))
        j++;
    if (j == depth)
        return depth;
    for (k = j; k + 1 < depth && phs_wait_fn(pcs[k + 1]); k++)
        ;
    /* pcs[k]: the interposed function, where the program called it */
    for (uint32_t i = k; i < depth; i++)
        pcs[i - k] = pcs[i];
    return depth - k;
}

/* A mask handed to the call (ppoll, pselect, epoll_pwait, sigsuspend)
 * replaces the thread's during it: ours added. */
static const sigset_t *
with_ours(const sigset_t *mask, sigset_t *copy, int on)
{
    if (!on || mask == NULL)
        return mask;
    *copy = *mask;
    sigaddset(copy, PHS_TIMER_SIG);
    return copy;
}

/* Whether a wait of TIMEOUT ms (poll, epoll_wait) can block: any but 0,
 * -1 (for ever, an event loop's) most of all. */
static inline __attribute__((always_inline)) int
may_block_ms(int timeout)
{
    return timeout != 0;
}

#define NEXT(fn)                                                                                                       \
    static __typeof__(&fn) fn##_next;                                                                                  \
    if (fn##_next == NULL)                                                                                             \
    fn##_next = (__typeof__(&fn))dlsym(RTLD_NEXT, #fn)
#define MISSING(fn) (fn##_next == NULL ? (errno = ENOSYS, 1) : 0)

int phs_poll(struct pollfd *fds, nfds_t n, int timeout) PHS_LIBC(poll);
PHS_WAIT_FN int
phs_poll(struct pollfd *fds, nfds_t n, int timeout)
{
    sigset_t old;
    int on, r;

    NEXT(poll);
    if (MISSING(poll))
        return -1;
    on = may_block_ms(timeout) && phs_wait_begin(&old);
    r = poll_next(fds, n, timeout);
    phs_wait_end(on);
    return r;
}

int phs___poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len) PHS_LIBC(__poll_chk);
PHS_WAIT_FN int
phs___poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len)
{
    sigset_t old;
    int on, r;

    NEXT(__poll_chk);
    if (MISSING(__poll_chk))
        return -1;
    on = may_block_ms(timeout) && phs_wait_begin(&old);
    r = __poll_chk_next(fds, n, timeout, len);
    phs_wait_end(on);
    return r;
}

int phs_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask) PHS_LIBC(ppoll);
PHS_WAIT_FN int
phs_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    sigset_t old, copy;
    int on, r;

    NEXT(ppoll);
    if (MISSING(ppoll))
        return -1;
    on = !(ts != NULL && ts->tv_sec == 0 && ts->tv_nsec == 0) && phs_wait_begin(&old);
    r = ppoll_next(fds, n, ts, with_ours(mask, &copy, on));
    phs_wait_end(on);
    return r;
}

int phs_select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv) PHS_LIBC(select);
PHS_WAIT_FN int
phs_select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
    sigset_t old;
    int on, r;

    NEXT(select);
    if (MISSING(select))
        return -1;
    on = !(tv != NULL && tv->tv_sec == 0 && tv->tv_usec == 0) && phs_wait_begin(&old);
    r = select_next(n, rd, wr, ex, tv);
    phs_wait_end(on);
    return r;
}

int phs_pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts,
    const sigset_t *mask) PHS_LIBC(pselect);
PHS_WAIT_FN int
phs_pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask)
{
    sigset_t old, copy;
    int on, r;

    NEXT(pselect);
    if (MISSING(pselect))
        return -1;
    on = !(ts != NULL && ts->tv_sec == 0 && ts->tv_nsec == 0) && phs_wait_begin(&old);
    r = pselect_next(n, rd, wr, ex, ts, with_ours(mask, &copy, on));
    phs_wait_end(on);
    return r;
}

int phs_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout) PHS_LIBC(epoll_wait);
PHS_WAIT_FN int
phs_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout)
{
    sigset_t old;
    int on, r;

    NEXT(epoll_wait);
    if (MISSING(epoll_wait))
        return -1;
    on = may_block_ms(timeout) && phs_wait_begin(&old);
    r = epoll_wait_next(fd, ev, max, timeout);
    phs_wait_end(on);
    return r;
}

int phs_epoll_pwait(int fd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask) PHS_LIBC(epoll_pwait);
PHS_WAIT_FN int
phs_epoll_pwait(int fd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
    sigset_t old, copy;
    int on, r;

    NEXT(epoll_pwait);
    if (MISSING(epoll_pwait))
        return -1;
    on = may_block_ms(timeout) && phs_wait_begin(&old);
    r = epoll_pwait_next(fd, ev, max, timeout, with_ours(mask, &copy, on));
    phs_wait_end(on);
    return r;
}

int phs_nanosleep(const struct timespec *req, struct timespec *rem) PHS_LIBC(nanosleep);
PHS_WAIT_FN int
phs_nanosleep(const struct timespec *req, struct timespec *rem)
{
    sigset_t old;
    int on, r;

    NEXT(nanosleep);
    if (MISSING(nanosleep))
        return -1;
    on = phs_wait_begin(&old);
    r = nanosleep_next(req, rem);
    phs_wait_end(on);
    return r;
}

int phs_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
    struct timespec *rem) PHS_LIBC(clock_nanosleep);
PHS_WAIT_FN int
phs_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    sigset_t old;
    int on, r;

    NEXT(clock_nanosleep);
    if (MISSING(clock_nanosleep))
        return ENOSYS; /* (it returns the error) */
    on = phs_wait_begin(&old);
    r = clock_nanosleep_next(clock, flags, req, rem);
    phs_wait_end(on);
    return r;
}

int phs_usleep(useconds_t us) PHS_LIBC(usleep);
PHS_WAIT_FN int
phs_usleep(useconds_t us)
{
    sigset_t old;
    int on, r;

    NEXT(usleep);
    if (MISSING(usleep))
        return -1;
    on = us != 0 && phs_wait_begin(&old);
    r = usleep_next(us);
    phs_wait_end(on);
    return r;
}

unsigned phs_sleep(unsigned s) PHS_LIBC(sleep);
PHS_WAIT_FN unsigned
phs_sleep(unsigned s)
{
    sigset_t old;
    int on;
    unsigned r;

    NEXT(sleep);
    if (sleep_next == NULL)
        return s;
    on = s != 0 && phs_wait_begin(&old);
    r = sleep_next(s);
    phs_wait_end(on);
    return r;
}

int phs_pause(void) PHS_LIBC(pause);
PHS_WAIT_FN int
phs_pause(void)
{
    sigset_t old;
    int on, r;

    NEXT(pause);
    if (MISSING(pause))
        return -1;
    on = phs_wait_begin(&old);
    r = pause_next();
    phs_wait_end(on);
    return r;
}

int phs_sigsuspend(const sigset_t *mask) PHS_LIBC(sigsuspend);
PHS_WAIT_FN int
phs_sigsuspend(const sigset_t *mask)
{
    sigset_t old, copy;
    int on, r;

    NEXT(sigsuspend);
    if (MISSING(sigsuspend))
        return -1;
    on = phs_wait_begin(&old);
    r = sigsuspend_next(with_ours(mask, &copy, on));
    phs_wait_end(on);
    return r;
}

int phs_sigtimedwait(const sigset_t *set, siginfo_t *si, const struct timespec *ts) PHS_LIBC(sigtimedwait);
PHS_WAIT_FN int
phs_sigtimedwait(const sigset_t *set, siginfo_t *si, const struct timespec *ts)
{
    sigset_t old;
    int on, r;

    NEXT(sigtimedwait);
    if (MISSING(sigtimedwait))
        return -1;
    on = !(ts != NULL && ts->tv_sec == 0 && ts->tv_nsec == 0) && phs_wait_begin(&old);
    r = sigtimedwait_next(set, si, ts);
    phs_wait_end(on);
    return r;
}

int phs_sigwaitinfo(const sigset_t *set, siginfo_t *si) PHS_LIBC(sigwaitinfo);
PHS_WAIT_FN int
phs_sigwaitinfo(const sigset_t *set, siginfo_t *si)
{
    sigset_t old;
    int on, r;

    NEXT(sigwaitinfo);
    if (MISSING(sigwaitinfo))
        return -1;
    on = phs_wait_begin(&old);
    r = sigwaitinfo_next(set, si);
    phs_wait_end(on);
    return r;
}
