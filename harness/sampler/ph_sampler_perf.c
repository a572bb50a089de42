/* ph_sampler_perf.c - per-thread perf events, the sampler's source of
 * samples above the kernel tick (ph_sampler.c says when).
 *
 * Each thread gets a software cpu-clock event (an hrtimer on its CPU
 * time) that signals that very thread at every overflow: SIGTRAP through
 * attr.sigtrap where the kernel holds it safely, SIGPROF through O_ASYNC
 * otherwise.  The writer thread attaches events to threads as they appear
 * in /proc/self/task (and at once when pthread_create starts one) and
 * closes those of threads that ended; nothing here runs in a signal
 * handler.  The table of events belongs to the writer (and to the atfork
 * child handler, which runs alone).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ph_sampler_int.h"

static struct {
    phs_tset perf; /* a thread's event: its fd */
} P;

/* Perf events can deliver samples as SIGTRAP (attr.sigtrap): sent to the
 * thread itself on its way back to user space, where O_ASYNC's SIGPROF
 * goes through an interrupt to the CPU first (~2 against ~19 us a sample
 * on this VM, on top of ~23 us for the event's timer).  Before Linux 5.18
 * such a SIGTRAP was forced on a thread that blocked it, killing the
 * process; 6.1 is the first long-term kernel that holds it as pending. */
static int
sigtrap_safe(void)
{
    return phs_kernel_at_least(6, 1);
}

/* A cpu-clock event on thread TID at HZ signalling SIG (SIGTRAP: the
 * kernel's sigtrap delivery; SIGPROF: O_ASYNC), enabled when ENABLE.  An
 * fd, or -errno. */
static int
perf_open(int tid, int hz, int sig, int enable)
{
    struct perf_event_attr a;
    struct f_owner_ex owner = { F_OWNER_TID, tid };
    int fd;

    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK; /* an hrtimer on the thread's CPU time */
    a.sample_period = 1000000000ULL / (unsigned)hz;
    a.disabled = 1;
    /* perf_event_paranoid 2 (the default) refuses kernel sampling; the
     * signal lands in user space anyway. */
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    if (sig == SIGTRAP) {
        a.sigtrap = 1;
        a.remove_on_exec = 1; /* the kernel wants it; exec'd programs start their own */
        a.sig_data = PHS_PERF_COOKIE;
    }
    fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* Enabled once, it signals every overflow by itself (a signal still
     * pending swallows the next: one sample lost, never the thread's
     * sampling).  Re-arming it from the handler instead (REFRESH) cost a
     * system call and a restart of its timer per sample: ~11 us here. */
    if ((sig == SIGPROF && (fcntl(fd, F_SETFL, O_ASYNC) < 0 || fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
                            fcntl(fd, F_SETOWN_EX, &owner) < 0)) ||
        (enable && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

static void
perf_close_fd_cb(intptr_t h)
{
    close((int)h);
}

static void
perf_close_cb(intptr_t h)
{
    ioctl((int)h, PERF_EVENT_IOC_DISABLE, 0);
    close((int)h);
}

static int
perf_open_cb(int tid, intptr_t *h)
{
    int fd = perf_open(tid, phs.hz_nominal, phs.perf_sig, 1);

    if (fd < 0)
        return -1;
    *h = fd;
    return 0;
}

void
phs_perf_close_all(void)
{
    phs_tset_close_all(&P.perf, perf_close_cb);
}

/* Give every thread of the process an event and close those of threads
 * that ended.  The writer itself blocks SIGPROF and is not sampled. */
void
phs_perf_scan(int self_tid)
{
    phs_tset_scan(&P.perf, self_tid, perf_open_cb, perf_close_cb);
}

/* A set of threads, each with a handle of the writer's (a perf event, a
 * timer): tid 0 is a free entry. */
void
phs_tset_scan(phs_tset *t, int self_tid, int (*open_cb)(int, intptr_t *), void (*close_cb)(intptr_t))
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    char seen[PHS_MAX_THREADS] = { 0 };

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        int tid = atoi(de->d_name), free_i = -1, known = 0;

        if (tid <= 0 || tid == self_tid)
            continue;
        for (int i = 0; i < PHS_MAX_THREADS; i++) {
            if (t->tid[i] == tid) {
                seen[i] = known = 1;
                break;
            }
            if (t->tid[i] == 0 && free_i < 0)
                free_i = i;
        }
        if (known)
            continue;
        if (free_i < 0 || open_cb(tid, &t->h[free_i]) < 0) {
            atomic_fetch_add(&phs.perf_failed, 1);
            continue;
        }
        t->tid[free_i] = tid;
        seen[free_i] = 1;
    }
    closedir(d);
    for (int i = 0; i < PHS_MAX_THREADS; i++) {
        if (t->tid[i] != 0 && !seen[i]) {
            close_cb(t->h[i]);
            t->tid[i] = 0;
        }
    }
}

void
phs_tset_close_all(phs_tset *t, void (*close_cb)(intptr_t))
{
    for (int i = 0; i < PHS_MAX_THREADS; i++) {
        if (t->tid[i] != 0 && close_cb != NULL)
            close_cb(t->h[i]);
        t->tid[i] = 0;
    }
}

/* Which signal our events can send at HZ, tried on this thread with an
 * event never enabled (no handler is in place yet): phs.perf_sig set, 0;
 * or -errno when perf events are refused. */
int
phs_perf_choose(int hz)
{
    int fd = sigtrap_safe() ? perf_open((int)syscall(SYS_gettid), hz, SIGTRAP, 0) : -EINVAL;

    phs.perf_sig = SIGTRAP;
    if (fd < 0) {
        fd = perf_open((int)syscall(SYS_gettid), hz, SIGPROF, 0);
        phs.perf_sig = SIGPROF;
    }
    if (fd < 0) {
        phs.perf_sig = 0;
        return fd;
    }
    close(fd);
    return 0;
}

/* A fork child: the events of the parent's threads are not its business. */
void
phs_perf_forget(void)
{
    phs_tset_close_all(&P.perf, perf_close_fd_cb);
}
