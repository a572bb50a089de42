/* ph-jattach.c - ask running HotSpot JVMs to run a command over their
 * dynamic attach socket, as the JDK's jcmd does, where the image has a
 * JRE only (no jcmd, no jattach): what the perf modes need to get a JVM's
 * perf map now (`jcmd Compiler.perfmap`, JDK 17+) before a stop, a
 * snapshot, or at the end of an attached run.
 *
 *   ph-jattach [-t SECONDS] PID|all COMMAND [ARG...]
 *
 * `all`: every JVM in this PID namespace (a process that maps libjvm.so);
 * no other process is ever signalled.  Exit status: 0 every JVM answered
 * with result 0 (or `all` found none), 1 a JVM could not be attached to
 * or its command failed (one line on stderr each, saying why), 2 usage.
 * The JVMs' output goes to stdout as they wrote it.
 *
 * Where it runs: from the tools volume (/opt/profharness/bin), static and
 * libc only, so it runs in any image: in the service's own container
 * (start-mode runs, the backend's exec), or in the tools container that
 * joined the service's PID namespace (attach).  Either way the JVM's
 * files are reached through /proc/PID/root and /proc/PID/cwd, so the
 * JVM's mount namespace is never entered (setns would need
 * CAP_SYS_ADMIN).  The protocol: ph_jattach.h.
 *
 * Each JVM is handled in a child process of its own, which takes the
 * JVM's effective uid, gid and groups first when it runs as another user
 * (as root: setgroups, setgid, setuid), because the JVM accepts only a
 * peer of its own uid and gid or root, and /proc/PID/root of another
 * user's process is closed to a root without CAP_SYS_PTRACE (a service
 * container).  Then, in order, every step bounded by one deadline
 * (-t, 10 s by default; an alarm two seconds later ends a child stuck in
 * a system call):
 *   - it must map libjvm.so (SIGQUIT kills most other programs);
 *   - an attach socket that is there and answers is used as it is;
 *   - otherwise the JVM must catch SIGQUIT (SigCgt: not under -Xrs, not
 *     still starting, which SIGQUIT would kill) and must not have
 *     -XX:+DisableAttachMechanism in its command line or its
 *     JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, _JAVA_OPTIONS (it would print a
 *     thread dump and never listen);
 *   - `.attach_pid<N>` is created in the JVM's /tmp (else its working
 *     directory: /tmp leaves nothing among the service's own files), as
 *     the JVM's user, SIGQUIT sent (through a pidfd where the kernel has
 *     them, so a recycled pid is never signalled), the socket waited for
 *     and the trigger removed; no socket by the deadline means attach is
 *     off in that JVM (a flag in a file ph-jattach does not read), and is
 *     said so;
 *   - the socket must belong to the JVM's user (another user's socket
 *     at that name is not the JVM's);
 *   - the request is written and the reply read until the JVM closes the
 *     connection (at most 16 MiB of output).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ph_inroot.h"
#include "ph_jattach.h"

#define DEFAULT_TIMEOUT_S 10
#define MAX_TIMEOUT_S 3600
#define BACKSTOP_S 2             /* the alarm after the deadline */
#define OUTPUT_MAX (16u << 20)   /* of one JVM's reply */
#define CMDLINE_MAX (128u << 10) /* of /proc/PID/cmdline and environ read */
#define STATUS_MAX 8192
#define WHY_MAX 512
#define RESEND_MS 2000           /* without a socket after SIGQUIT: sent again (start_listener) */
#define RESENDS 2

/* A child's exit status: the JVM answered 0; it could not be attached to
 * or its command failed (said); not a JVM (`all` skips it quietly). */
enum { ONE_OK = 0, ONE_FAILED = 1, ONE_NOT_JVM = 3 };

static const char *prog = "ph-jattach";

static void __attribute__((format(printf, 2, 3)))
say(long pid, const char *fmt, ...)
{
    char msg[WHY_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* what a JVM wrote may be in it: no control characters to a terminal */
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    if (pid > 0)
        fprintf(stderr, "%s: JVM %ld: %s\n", prog, pid, msg);
    else
        fprintf(stderr, "%s: %s\n", prog, msg);
}

static long long
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
left_ms(long long deadline)
{
    long long l = deadline - now_ms();

    return l < 0 ? 0 : l > 1000000 ? 1000000 : (int)l;
}

static void
pause_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Read FD into BUF until CAP bytes or its end: how many (fewer than CAP
 * only at the end), or -1 with errno. */
static ssize_t
read_full(int fd, char *buf, size_t cap)
{
    size_t got = 0;

    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* At most CAP bytes of PATH into BUF: how many, or -1 with errno. */
static ssize_t
read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), e;
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read_full(fd, buf, cap);
    e = errno;
    close(fd);
    errno = e;
    return n;
}

/* Does process PID map libjvm.so?  1, 0, or -1 with errno.  Read a
 * buffer of whole lines at a time: a JVM's maps run to hundreds of KiB. */
static int
is_jvm(pid_t pid)
{
    static char buf[64 << 10];
    char path[64];
    size_t have = 0;
    int fd, found = 0, e = 0;

    snprintf(path, sizeof path, "/proc/%ld/maps", (long)pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    for (;;) {
        ssize_t n = read_full(fd, buf + have, sizeof buf - have);
        char *nl;

        if (n < 0) {
            e = errno;
            found = -1;
            break;
        }
        have += (size_t)n;
        if (have < sizeof buf) { /* the end */
            found = ph_jattach_maps_jvm(buf, have);
            break;
        }
        nl = memrchr(buf, '\n', have);
        if (nl == NULL) {
            have = 0; /* a line longer than the buffer: no path of ours */
            continue;
        }
        if ((found = ph_jattach_maps_jvm(buf, (size_t)(nl + 1 - buf))) != 0)
            break;
        have -= (size_t)(nl + 1 - buf);
        memmove(buf, nl + 1, have);
    }
    close(fd);
    errno = e;
    return found;
}

/* Take the JVM's effective uid, gid and groups, when they are not ours. */
static int
become(const ph_jattach_proc *t, char *why, size_t len)
{
    if (geteuid() == t->uid && getegid() == t->gid)
        return 0;
    if (geteuid() != 0) {
        snprintf(why, len, "it runs as uid %ld gid %ld, and this as uid %ld gid %ld, which cannot take another's "
                 "(run it as root or as the JVM's user)", (long)t->uid, (long)t->gid, (long)geteuid(),
                 (long)getegid());
        return -1;
    }
    if (setgroups(t->n_groups, t->groups) < 0 || setgid(t->gid) < 0 || setuid(t->uid) < 0) {
        snprintf(why, len, "cannot take its uid %ld gid %ld: %s", (long)t->uid, (long)t->gid, strerror(errno));
        return -1;
    }
    return 0;
}

/* The attach socket of the JVM: /proc/PID/root/tmp/.java_pid<NSPID>. */
static void
socket_path(pid_t pid, long nspid, char *buf, size_t len)
{
    snprintf(buf, len, "/proc/%ld/root/tmp/.java_pid%ld", (long)pid, nspid);
}

/* Connect to PATH by DEADLINE: the fd, or -1 with errno (ENOENT,
 * ECONNREFUSED: nobody listens; ETIMEDOUT: the backlog stayed full). */
static int
connect_by(const char *path, long long deadline)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
        return -1;
    for (;;) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        if (errno == EINTR)
            continue;
        /* a UNIX socket's backlog full: EAGAIN, try again */
        if (errno != EAGAIN || left_ms(deadline) == 0) {
            int e = errno == EAGAIN ? ETIMEDOUT : errno;

            close(fd);
            errno = e;
            return -1;
        }
        pause_ms(20);
    }
}

/* Send SIGQUIT to the process PIDFD pins (or PID, without pidfds). */
static int
send_quit(pid_t pid, int pidfd)
{
#ifdef SYS_pidfd_send_signal
    if (pidfd >= 0) {
        if (syscall(SYS_pidfd_send_signal, pidfd, SIGQUIT, NULL, 0) == 0)
            return 0;
        if (errno != ENOSYS && errno != EPERM) /* EPERM: a seccomp profile without it */
            return -1;
    }
#endif
    return kill(pid, SIGQUIT);
}

/* Start the JVM's attach listener: the trigger file, SIGQUIT, the socket
 * waited for by DEADLINE, the trigger removed.  0, or -1 and WHY. */
static int
start_listener(pid_t pid, int pidfd, const ph_jattach_proc *t, const char *sock, long long deadline, char *why,
               size_t len)
{
    const char *const where[] = { "root/tmp", "cwd" };
    char trigger[96] = "";
    int fd = -1, mine = 0, err0 = 0, wait = 10;
    struct stat sb;

    for (size_t i = 0; i < 2 && fd < 0 && !mine; i++) {
        snprintf(trigger, sizeof trigger, "/proc/%ld/%s/.attach_pid%ld", (long)pid, where[i], t->nspid);
        fd = open(trigger, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            mine = 1;
            close(fd);
        } else if (errno == EEXIST) {
            break; /* someone's trigger is there already: it serves, and stays theirs */
        } else if (i == 0) {
            err0 = errno;
        } else {
            snprintf(why, len, "cannot create the attach trigger `.attach_pid%ld` in its /tmp (%s) nor in its "
                     "working directory (%s)", t->nspid, strerror(err0), strerror(errno));
            return -1;
        }
    }
    if (send_quit(pid, pidfd) < 0) {
        snprintf(why, len, "SIGQUIT: %s", strerror(errno));
        if (mine)
            unlink(trigger);
        return -1;
    }
    /* A JVM just started can lose the first listener: HotSpot starts its
     * signal dispatcher, then removes a stale /tmp/.java_pid<pid> at VM
     * start, which is the socket a SIGQUIT in between made.  The listener
     * counts as started, and since JDK 14 the next SIGQUIT that finds its
     * socket gone starts it again: so SIGQUIT once more after RESEND_MS
     * without a socket, at most RESENDS times (where the socket only came
     * late, a JVM prints a thread dump for it: the lesser harm). */
    for (long long waited = 0, resends = 0; !(stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode)) && left_ms(deadline) > 0;) {
        int step = wait < left_ms(deadline) ? wait : (int)left_ms(deadline);

        pause_ms(step);
        waited += step;
        wait = wait < 200 ? wait * 2 : 200;
        if (waited >= RESEND_MS * (resends + 1) && resends < RESENDS && !(stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode))) {
            resends++;
            if (send_quit(pid, pidfd) < 0)
                break;
        }
    }
    if (mine)
        unlink(trigger);
    if (!(stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode))) {
        snprintf(why, len, "no attach socket /tmp/.java_pid%ld after SIGQUIT: the JVM runs with "
                 "-XX:+DisableAttachMechanism (set where ph-jattach does not look: an @argfile, "
                 "-XX:Flags, -XX:VMOptionsFile), or its attach listener could not start", t->nspid);
        return -1;
    }
    return 0;
}

/* Write LEN bytes of BUF to FD by DEADLINE. */
static int
write_by(int fd, const char *buf, size_t len, long long deadline)
{
    while (len > 0) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        ssize_t n;

        if (poll(&p, 1, left_ms(deadline)) == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if ((n = write(fd, buf, len)) < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The reply on FD, read by DEADLINE: its output to stdout (at most
 * OUTPUT_MAX), *CODE the result code, the output's first line into
 * FIRST.  0, or -1 and WHY. */
static int
read_reply(int fd, long long deadline, int *code, char *first, size_t first_len, char *why, size_t len)
{
    char buf[8192], head[32];
    size_t nhead = 0, out = 0, nfirst = 0;
    int have_code = 0;

    first[0] = '\0';
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;
        const char *body = buf;
        size_t blen;

        if (poll(&p, 1, left_ms(deadline)) == 0) {
            snprintf(why, len, "no %s within the deadline", have_code ? "end of its answer" : "answer");
            return -1;
        }
        if ((n = read(fd, buf, sizeof buf)) < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            snprintf(why, len, "read its answer: %s", strerror(errno));
            return -1;
        }
        if (n == 0)
            break;
        blen = (size_t)n;
        if (!have_code) {
            size_t take = blen < sizeof head - nhead ? blen : sizeof head - nhead, at;
            int r;

            memcpy(head + nhead, buf, take);
            r = ph_jattach_reply_code(head, nhead + take, code, &at);
            if (r < 0) {
                snprintf(why, len, "its answer does not start with a result code");
                return -1;
            }
            if (r == 0) {
                nhead += take;
                continue;
            }
            have_code = 1;
            /* the output starts AT bytes into head: (at - nhead) into buf */
            body = buf + (at - nhead);
            blen -= at - nhead;
        }
        for (size_t i = 0; i < blen && nfirst + 1 < first_len && (nfirst == 0 || first[nfirst - 1] != '\n'); i++)
            first[nfirst++] = body[i];
        first[nfirst] = '\0';
        if (out + blen > OUTPUT_MAX) {
            snprintf(why, len, "its answer is over %u MiB", OUTPUT_MAX >> 20);
            return -1;
        }
        if (blen > 0 && fwrite(body, 1, blen, stdout) != blen) {
            snprintf(why, len, "write its answer: %s", strerror(errno));
            return -1;
        }
        out += blen;
    }
    if (!have_code) {
        snprintf(why, len, "it closed the connection without a result code");
        return -1;
    }
    if (nfirst > 0 && first[nfirst - 1] == '\n')
        first[nfirst - 1] = '\0';
    return 0;
}

/* The whole attach to PID, in a child of its own. */
static int
attach_one(pid_t pid, int named, const char *req, size_t req_len, const char *shown, int timeout_s)
{
    static char cmdline[CMDLINE_MAX], environ_[CMDLINE_MAX];
    char path[96], sock[96], status[STATUS_MAX], why[WHY_MAX] = "", first[200];
    long long deadline = now_ms() + (long long)timeout_s * 1000;
    ph_jattach_proc t;
    ssize_t n, ncmd, nenv;
    int pidfd = -1, fd = -1, code = 0, r;
    struct stat sb;

    alarm((unsigned)(timeout_s + BACKSTOP_S));
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* first: the process the checks below read */
#endif
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    if ((n = read_file(path, status, sizeof status)) < 0 || ph_jattach_status_parse(status, (size_t)n, &t) < 0) {
        if (named)
            say(pid, "no such process, or its status cannot be read");
        return named ? ONE_FAILED : ONE_NOT_JVM;
    }
    if (t.state == 'Z' || t.state == 'X')
        return named ? (say(pid, "it has exited"), ONE_FAILED) : ONE_NOT_JVM;
    if (become(&t, why, sizeof why) < 0) {
        char comm[64] = "";

        /* another user's process: in `all`, said only if it looks like a JVM */
        snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
        if ((n = read_file(path, comm, sizeof comm - 1)) > 0)
            comm[n] = '\0';
        if (!named && strcmp(comm, "java\n") != 0)
            return ONE_NOT_JVM;
        say(pid, "%s", why);
        return ONE_FAILED;
    }
    if ((r = is_jvm(pid)) <= 0) {
        if (named && r < 0)
            say(pid, "its maps cannot be read (%s): not signalled", strerror(errno));
        else if (named)
            say(pid, "it is not a JVM (no libjvm.so mapped): not signalled");
        return named ? ONE_FAILED : ONE_NOT_JVM;
    }
    socket_path(pid, t.nspid, sock, sizeof sock);
    if (stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode))
        fd = connect_by(sock, deadline); /* a listener from an earlier attach */
    if (fd < 0) {
        snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
        ncmd = read_file(path, cmdline, sizeof cmdline);
        snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
        nenv = read_file(path, environ_, sizeof environ_);
        if (ph_jattach_attach_disabled(cmdline, ncmd > 0 ? (size_t)ncmd : 0, nenv > 0 ? environ_ : NULL,
                                       nenv > 0 ? (size_t)nenv : 0)) {
            say(pid, "it runs with -XX:+DisableAttachMechanism: it has no attach socket (not signalled)");
            return ONE_FAILED;
        }
        if (!t.catches_quit) {
            say(pid, "it does not catch SIGQUIT (started with -Xrs, or still starting), which would end it: "
                "not signalled");
            return ONE_FAILED;
        }
        if (start_listener(pid, pidfd, &t, sock, deadline, why, sizeof why) < 0) {
            say(pid, "%s", why);
            return ONE_FAILED;
        }
        if ((fd = connect_by(sock, deadline)) < 0) {
            say(pid, "connect to its attach socket /tmp/.java_pid%ld: %s", t.nspid, strerror(errno));
            return ONE_FAILED;
        }
    }
    if (stat(sock, &sb) < 0 || sb.st_uid != t.uid) {
        say(pid, "its attach socket belongs to uid %ld, not to the JVM's uid %ld: not used",
            (long)(stat(sock, &sb) == 0 ? sb.st_uid : (uid_t)-1), (long)t.uid);
        close(fd);
        return ONE_FAILED;
    }
    if (write_by(fd, req, req_len, deadline) < 0) {
        say(pid, "send `%s`: %s", shown, strerror(errno));
        close(fd);
        return ONE_FAILED;
    }
    if (read_reply(fd, deadline, &code, first, sizeof first, why, sizeof why) < 0) {
        say(pid, "`%s`: %s", shown, why);
        close(fd);
        return ONE_FAILED;
    }
    close(fd);
    fflush(stdout);
    if (code != 0) {
        say(pid, "`%s` failed with result %d%s%s", shown, code, first[0] ? ": " : "", first);
        return ONE_FAILED;
    }
    return ONE_OK;
}

/* Run attach_one for PID in a child; its status (ONE_*). */
static int
attach_child(pid_t pid, int named, const char *req, size_t req_len, const char *shown, int timeout_s)
{
    pid_t c;
    int st;

    fflush(NULL);
    if ((c = fork()) < 0) {
        say(pid, "fork: %s", strerror(errno));
        return ONE_FAILED;
    }
    if (c == 0)
        _exit(attach_one(pid, named, req, req_len, shown, timeout_s));
    while (waitpid(c, &st, 0) < 0)
        if (errno != EINTR)
            return ONE_FAILED;
    if (WIFEXITED(st))
        return WEXITSTATUS(st) == ONE_NOT_JVM ? ONE_NOT_JVM : WEXITSTATUS(st) == 0 ? ONE_OK : ONE_FAILED;
    if (WTERMSIG(st) == SIGALRM)
        say(pid, "no answer within %d s", timeout_s);
    else
        say(pid, "ph-jattach's child died of signal %d", WTERMSIG(st));
    return ONE_FAILED;
}

static int
usage(void)
{
    fprintf(stderr,
            "usage: %s [-t SECONDS] PID|all COMMAND [ARG...]\n"
            "  Run COMMAND (e.g. `jcmd Compiler.perfmap`) in a HotSpot JVM over its attach socket.\n"
            "  all: every JVM in this PID namespace.  -t: each JVM's deadline (default %d s).\n"
            "  Exit: 0 answered, 1 a JVM not attached or its command failed, 2 usage.\n"
            "       %s files PID mkdirs|install|mkout|take ...: the JVM's files in its own root\n",
            prog, DEFAULT_TIMEOUT_S, prog);
    return 2;
}

int
main(int argc, char **argv)
{
    char req[PH_JATTACH_REQUEST_MAX], joined[PH_JATTACH_REQUEST_MAX], shown[256];
    const char *args[PH_JATTACH_ARGS];
    size_t n_args;
    ssize_t req_len;
    int timeout_s = DEFAULT_TIMEOUT_S, i = 1, failed = 0, found = 0;

    signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && strcmp(argv[1], "files") == 0) /* the JVM's files, not its socket */
        return ph_jattach_files_main(argc - 1, argv + 1);
    if (i < argc && (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)) {
        usage();
        return 0;
    }
    if (i + 1 < argc && strcmp(argv[i], "-t") == 0) {
        char *end;
        long v = strtol(argv[i + 1], &end, 10);

        if (*argv[i + 1] == '\0' || *end != '\0' || v < 1 || v > MAX_TIMEOUT_S) {
            fprintf(stderr, "%s: -t takes whole seconds, 1 to %d, not `%s`\n", prog, MAX_TIMEOUT_S, argv[i + 1]);
            return 2;
        }
        timeout_s = (int)v;
        i += 2;
    }
    if (argc - i < 2)
        return usage();
    /* jcmd takes its command line as one argument, as the JDK's jcmd sends it */
    n_args = (size_t)(argc - i - 2);
    if (strcmp(argv[i + 1], "jcmd") == 0 && n_args > 1) {
        joined[0] = '\0';
        for (int k = i + 2; k < argc; k++) {
            size_t at = strlen(joined), l = strlen(argv[k]);

            if (at + l + 2 > sizeof joined) {
                fprintf(stderr, "%s: the command is too long\n", prog);
                return 2;
            }
            if (at)
                joined[at++] = ' ';
            memcpy(joined + at, argv[k], l + 1);
        }
        args[0] = joined;
        n_args = 1;
    } else if (n_args > PH_JATTACH_ARGS) {
        fprintf(stderr, "%s: `%s` takes at most %d arguments\n", prog, argv[i + 1], PH_JATTACH_ARGS);
        return 2;
    } else {
        for (size_t k = 0; k < n_args; k++)
            args[k] = argv[i + 2 + (int)k];
    }
    if ((req_len = ph_jattach_request(req, sizeof req, argv[i + 1], args, n_args)) < 0) {
        fprintf(stderr, "%s: the command is too long\n", prog);
        return 2;
    }
    snprintf(shown, sizeof shown, "%s%s%s", argv[i + 1], n_args ? " " : "", n_args ? args[0] : "");

    if (strcmp(argv[i], "all") == 0) {
        DIR *d = opendir("/proc");
        struct dirent *e;

        if (d == NULL) {
            say(0, "open /proc: %s", strerror(errno));
            return 1;
        }
        while ((e = readdir(d)) != NULL) {
            char *end;
            long pid = strtol(e->d_name, &end, 10);

            if (*end != '\0' || pid <= 0 || pid == (long)getpid())
                continue;
            switch (attach_child((pid_t)pid, 0, req, (size_t)req_len, shown, timeout_s)) {
            case ONE_OK:
                found++;
                break;
            case ONE_FAILED:
                found++;
                failed++;
                break;
            }
        }
        closedir(d);
        if (found == 0)
            say(0, "no JVM in this PID namespace");
    } else {
        char *end;
        long pid = strtol(argv[i], &end, 10);

        if (*argv[i] == '\0' || *end != '\0' || pid <= 0 || pid > INT_MAX) {
            fprintf(stderr, "%s: `%s` is neither a pid nor `all`\n", prog, argv[i]);
            return 2;
        }
        failed = attach_child((pid_t)pid, 1, req, (size_t)req_len, shown, timeout_s) != ONE_OK;
    }
    return failed ? 1 : 0;
}
