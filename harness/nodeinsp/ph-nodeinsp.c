/* ph-nodeinsp - a running Node's CPU profile through its own inspector.
 *
 *   ph-nodeinsp OUT PID HZ CLOCK [TITLE]
 *
 * Run by ph-attach-sampler in the tools container of `attach --mode
 * flamegraph` (CLOCK cpu) or `--mode wall` (CLOCK wall), which shares the service's PID namespace and (the mode's
 * `attach.network: service`) its network namespace, so 127.0.0.1 is the
 * service's loopback.  Static, nothing but libc (as ph-jattach).
 *
 *   refused, before anything is sent: PID does not catch SIGUSR1 (a node
 *     built --without-inspector or started with --disable-sigusr1: the
 *     signal's default action would end it), it was started with
 *     --inspect* (the user's inspector: its sessions are not ours to
 *     close), or something listens on 127.0.0.1:9229 already;
 *   SIGUSR1 -> node opens its inspector on 127.0.0.1:9229 -> GET
 *     /json/list names the target's WebSocket -> Profiler.enable,
 *     setSamplingInterval (1e6 / HZ us), start;
 *   SIGINT or SIGTERM (`stop`, through ph-init) -> Profiler.stop: its
 *     profile is written as OUT/profile.cpuprofile (Chrome DevTools opens
 *     it) and folded (ph_cdp_fold): CLOCK cpu into OUT/stacks.folded (the
 *     harness draws it), CLOCK wall into the wall mode's own files
 *     (ph_stackset.h: stacks-, offcpu-, oncpu-, flamegraph-, profile-
 *     with wall/nanoseconds, TITLE on the SVG), and the inspector is
 *     closed again (see close_inspector) -> exit 0.
 *
 * V8's profiler samples the JS thread on its own clock every interval,
 * whatever the thread does: a sample taken while it waits in the event
 * loop is `(idle)`.  CLOCK cpu leaves those out (the time the thread was
 * not running JavaScript or V8's own work); CLOCK wall keeps them as
 * `(idle);[off-cpu]` (V8 puts its (idle) node under the root: what the
 * loop waits for is not in the profile).  `(program)` (V8's and Node's
 * native work outside JavaScript) and `(garbage collector)` are on the
 * CPU in both.  A thread blocked in a synchronous call
 * (fs.readFileSync) is under that call either way: V8 does not know it
 * blocks.  Only the main thread is sampled (workers have inspectors of
 * their own).
 *
 * Everything the inspector sends is the service's: the HTTP reply is read
 * to at most 64 KiB, a message to at most PROFILE_MAX, and nothing of it
 * reaches a terminal or a file but through ph_cdp's parsers (the folded
 * names cleaned) or as the profile's own bytes (profile.cpuprofile).
 */
#include "ph_cdp.h"
#include "ph_fs.h"
#include "ph_stackset.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PORT 9229
#define HTTP_MAX 65536
#define PROFILE_MAX (512u << 20)
#define OPEN_WAIT_MS 10000
#define REPLY_WAIT_MS 20000
#define CLOSE_WAIT_MS 3000
#define CLOSE_DELAY_MS "250" /* (a string: it goes into the expression) */

static volatile sig_atomic_t stop_requested;

static void
on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void
say(const char *fmt, ...)
{
    va_list ap;

    fputs("ph-nodeinsp: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static long long
now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void
nap_ms(int ms)
{
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

    nanosleep(&t, NULL);
}

static int
dial(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int
send_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;

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

/* Read what FD has into BUF (up to CAP), waiting until DEADLINE: bytes
 * read, 0 at its end, -1 on error or time out. */
static ssize_t
recv_some(int fd, void *buf, size_t cap, long long deadline)
{
    for (;;) {
        struct pollfd pf = { fd, POLLIN, 0 };
        long long left = deadline - now_ms();
        int r;

        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        r = poll(&pf, 1, left > 200 ? 200 : (int)left);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r > 0) {
            ssize_t n = recv(fd, buf, cap, 0);
            if (n < 0 && errno == EINTR)
                continue;
            return n;
        }
    }
}

/* An HTTP GET of PATH: its whole reply (headers too) into BUF, NUL-ended. */
static int
http_get(const char *path, char *buf, size_t cap, size_t *len)
{
    char req[512];
    int fd = dial(), n;
    size_t got = 0;

    if (fd < 0)
        return -1;
    n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", path, PORT);
    if (send_all(fd, req, (size_t)n) < 0) {
        close(fd);
        return -1;
    }
    for (;;) {
        ssize_t r = recv_some(fd, buf + got, cap - 1 - got, now_ms() + 2000);
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == cap - 1)
            break;
    }
    close(fd);
    buf[got] = '\0';
    *len = got;
    return 0;
}

/* ---- the session -------------------------------------------------------- */

typedef struct session {
    int fd;
    uint8_t *in;       /* bytes read, not yet a whole frame */
    size_t in_len, in_cap;
    char *msg;         /* the message being put together */
    size_t msg_len;
    long long next_id;
} session;

static int
ws_send(session *s, int opcode, const void *payload, size_t len)
{
    uint8_t mask[4], *frame;
    ssize_t n;
    int rc;

    if (getrandom(mask, sizeof mask, 0) != sizeof mask)
        memset(mask, 0x5a, sizeof mask);
    if ((frame = malloc(len + PH_CDP_WS_HEADER_MAX)) == NULL)
        return -1;
    n = ph_cdp_ws_encode(opcode, payload, len, mask, frame, len + PH_CDP_WS_HEADER_MAX);
    rc = n < 0 ? -1 : send_all(s->fd, frame, (size_t)n);
    free(frame);
    return rc;
}

/* The next whole message into S->msg[0..S->msg_len), pings answered:
 * 1, 0 when the inspector closed the session, -1 on error or at DEADLINE. */
static int
ws_next(session *s, long long deadline)
{
    char why[160];

    s->msg_len = 0;
    for (;;) {
        ph_cdp_ws_frame f;
        int r = ph_cdp_ws_decode(s->in, s->in_len, PROFILE_MAX, &f, why, sizeof why);

        if (r < 0) {
            say("the inspector sent %s", why);
            return -1;
        }
        if (r == 1) {
            uint8_t *pl = s->in + f.header;

            if (f.opcode == PH_CDP_WS_CLOSE)
                return 0;
            if (f.opcode == PH_CDP_WS_PING) {
                if (ws_send(s, PH_CDP_WS_PONG, pl, f.len) < 0)
                    return -1;
            } else if (f.opcode != PH_CDP_WS_PONG) {
                char *m;

                if (s->msg_len + f.len > PROFILE_MAX) {
                    say("the inspector sent a message of more than %u bytes", PROFILE_MAX);
                    return -1;
                }
                if ((m = realloc(s->msg, s->msg_len + f.len + 1)) == NULL)
                    return -1;
                s->msg = m;
                memcpy(s->msg + s->msg_len, pl, f.len);
                s->msg_len += f.len;
                s->msg[s->msg_len] = '\0';
            }
            memmove(s->in, s->in + f.header + f.len, s->in_len - f.header - f.len);
            s->in_len -= f.header + f.len;
            if (f.fin && f.opcode != PH_CDP_WS_PING && f.opcode != PH_CDP_WS_PONG)
                return 1;
            continue;
        }
        if (s->in_cap - s->in_len < 65536) {
            size_t nc = s->in_cap ? s->in_cap * 2 : 262144;
            uint8_t *ni;

            if (nc > (size_t)PROFILE_MAX + 65536 || (ni = realloc(s->in, nc)) == NULL) {
                say("out of memory for the inspector's message");
                return -1;
            }
            s->in = ni;
            s->in_cap = nc;
        }
        ssize_t got = recv_some(s->fd, s->in + s->in_len, s->in_cap - s->in_len, deadline);
        if (got == 0)
            return 0;
        if (got < 0)
            return -1;
        s->in_len += (size_t)got;
    }
}

/* Send METHOD with PARAMS (a JSON object, or NULL) and wait for its
 * reply: 0 with it in S->msg, -1 said (ERR_OK: an error reply is no
 * failure). */
static int
call(session *s, const char *method, const char *params, long long wait_ms)
{
    char req[1024], errmsg[256];
    long long id = s->next_id++, got;
    long long deadline = now_ms() + wait_ms;
    int n = snprintf(req, sizeof req, "{\"id\":%lld,\"method\":\"%s\"%s%s}", id, method, params ? ",\"params\":" : "",
                     params ? params : "");
    int error;

    if (n < 0 || (size_t)n >= sizeof req || ws_send(s, PH_CDP_WS_TEXT, req, (size_t)n) < 0) {
        say("%s: could not be sent: %s", method, strerror(errno));
        return -1;
    }
    for (;;) {
        int r = ws_next(s, deadline);

        if (r <= 0) {
            say("%s: %s", method, r == 0 ? "the inspector closed the session" : "no reply in time");
            return -1;
        }
        if (ph_cdp_reply(s->msg, s->msg_len, &got, &error, errmsg, sizeof errmsg) < 0 || got != id)
            continue; /* an event, or not ours */
        if (error) {
            for (char *c = errmsg; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                    *c = '?';
            say("%s: the inspector says: %s", method, errmsg);
            return -1;
        }
        return 0;
    }
}

static int
ws_open(session *s, const char *path)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint8_t nonce[16];
    char key[25], req[1024], reply[8192];
    size_t got = 0;
    char *end;
    int n;

    if (getrandom(nonce, sizeof nonce, 0) != sizeof nonce)
        return -1;
    for (int i = 0, o = 0; i < 16; i += 3) {
        unsigned v = (unsigned)nonce[i] << 16 | (i + 1 < 16 ? (unsigned)nonce[i + 1] << 8 : 0) |
                     (i + 2 < 16 ? nonce[i + 2] : 0);
        key[o++] = b64[v >> 18 & 63];
        key[o++] = b64[v >> 12 & 63];
        key[o++] = i + 1 < 16 ? b64[v >> 6 & 63] : '=';
        key[o++] = i + 2 < 16 ? b64[v & 63] : '=';
        key[o] = '\0';
    }
    if ((s->fd = dial()) < 0)
        return -1;
    n = snprintf(req, sizeof req,
                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
                 path, PORT, key);
    if (n < 0 || (size_t)n >= sizeof req || send_all(s->fd, req, (size_t)n) < 0)
        return -1;
    /* The reply's headers, up to the blank line; what follows is frames.
     * Its Sec-WebSocket-Accept is not checked: it proves the peer speaks
     * WebSocket, which the first reply proves as well, and SHA-1 would be
     * the only use of it here. */
    while ((end = memmem(reply, got, "\r\n\r\n", 4)) == NULL) {
        ssize_t r = recv_some(s->fd, reply + got, sizeof reply - 1 - got, now_ms() + 5000);
        if (r <= 0 || (got += (size_t)r) >= sizeof reply - 1)
            return -1;
    }
    if (strncmp(reply, "HTTP/1.1 101", 12) != 0)
        return -1;
    end += 4;
    s->in_cap = 262144;
    if ((s->in = malloc(s->in_cap)) == NULL)
        return -1;
    s->in_len = got - (size_t)(end - reply);
    memcpy(s->in, end, s->in_len);
    return 0;
}

/* ---- before anything is sent -------------------------------------------- */

/* "" when PID may be signalled, else why not. */
static const char *
refusal(pid_t pid)
{
    static char why[512];
    char path[64], buf[65536];
    FILE *f;
    int fd;
    ssize_t n;
    unsigned long long cgt = 0;
    int found = 0;

    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if ((f = fopen(path, "re")) == NULL) {
        snprintf(why, sizeof why, "node %d: %s: %s", (int)pid, path, strerror(errno));
        return why;
    }
    while (fgets(buf, sizeof buf, f) != NULL)
        if (strncmp(buf, "SigCgt:", 7) == 0)
            found = sscanf(buf + 7, "%llx", &cgt) == 1;
    fclose(f);
    if (!found || !(cgt & (1ull << (SIGUSR1 - 1)))) {
        snprintf(why, sizeof why, "node %d does not catch SIGUSR1: it was built without the inspector or started "
                 "with --disable-sigusr1 (the signal would end it); use `start --mode flamegraph`", (int)pid);
        return why;
    }
    /* its arguments, then its NODE_OPTIONS: --inspect, --inspect-brk,
     * --inspect-port... open the user's own inspector */
    for (int pass = 0; pass < 2; pass++) {
        snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, pass ? "environ" : "cmdline");
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            continue;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        for (char *w = buf; w < buf + n; w += strlen(w) + 1) {
            const char *opts = pass ? (strncmp(w, "NODE_OPTIONS=", 13) == 0 ? w + 13 : NULL) : w;

            if (opts != NULL && (strncmp(opts, "--inspect", 9) == 0 || strstr(opts, " --inspect") != NULL)) {
                snprintf(why, sizeof why, "node %d was started with its inspector open (--inspect): that one is "
                         "the user's; use `start --mode flamegraph`, or the inspector itself", (int)pid);
                return why;
            }
        }
    }
    if ((fd = dial()) >= 0) {
        close(fd);
        snprintf(why, sizeof why, "something listens on 127.0.0.1:%d in the service already (an inspector "
                 "opened by the user?): not ours to take over; use `start --mode flamegraph`", PORT);
        return why;
    }
    return "";
}

/* ---- the end ------------------------------------------------------------ */

/* The inspector closed, as it was before SIGUSR1.  inspector.close() from
 * inside our own session would wait for that session to end (it blocks
 * until no session is left), and a close while the session's last reply
 * is still going out is the crash of nodejs/node#18761 (a response sent
 * into a session being torn down), so it is put off by CLOSE_DELAY_MS, by
 * which time we have hung up: the next turn of the event loop (what it
 * was) can come before the reply has left on a loaded machine.  Once,
 * there, a json-server under load died between Profiler.stop's answer
 * and the inspector's close, the service gone with no word.  `require`
 * is the console's (includeCommandLineAPI: Node puts it there for the
 * inspector's console); the closure keeps it past the evaluation. */
static void
close_inspector(session *s)
{
    static const char expr[] =
        "{\"expression\":\"(r => setTimeout(() => r('inspector').close(), " CLOSE_DELAY_MS "))(require)\","
        "\"includeCommandLineAPI\":true}";
    long long deadline;
    int fd;

    if (call(s, "Runtime.evaluate", expr, 5000) < 0)
        say("the inspector could not be asked to close: it stays open on 127.0.0.1:%d", PORT);
    ws_send(s, PH_CDP_WS_CLOSE, "\x03\xe8", 2);
    close(s->fd);
    s->fd = -1;
    deadline = now_ms() + CLOSE_WAIT_MS;
    while ((fd = dial()) >= 0 && now_ms() < deadline) {
        close(fd);
        nap_ms(50);
    }
    if (fd >= 0) {
        close(fd);
        say("the inspector still listens on 127.0.0.1:%d", PORT);
    } else {
        say("the inspector is closed again");
    }
}

/* DATA (N bytes) as OUT/NAME, said on failure. */
static int
put(const char *out, const char *name, const char *data, size_t n)
{
    ph_error_t e = NULL;

    if (ph_fs_write_bytes(out, name, data, n, &e) == 0)
        return 0;
    say("%s", e->msg);
    ph_error_free(&e);
    return -1;
}

/* The wall mode's files (ph_stackset.h) of the folded TEXT in OUT: the
 * start's stacks-, offcpu-, oncpu-, flamegraph- and profile- files, as
 * the preloaded sampler names them, so the wall profile's artifacts,
 * collection and report take them as a started run's. */
static int
write_wall(const char *out, const char *text, size_t len, pid_t pid, long hz, double seconds, const char *title,
           const ph_cdp_fold_stats *st)
{
    char stamp[32], sub[256];
    struct tm tm;
    time_t now = time(NULL);
    ph_error_t e = NULL;
    ph_stackset_opts so = { .stamp = stamp, .pid = pid, .wall = 1, .period_ns = (uint64_t)(1000000000L / hz),
                            .duration_ns = (int64_t)(seconds * 1e9), .title = title, .subtitle = sub };

    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(sub, sizeof sub, "node %d, attached through its inspector at %ld Hz: %zu samples of the JavaScript "
             "thread (wall clock), %zu of them idle in the event loop (off the CPU)", (int)pid, hz, st->kept, st->idle);
    if (ph_stackset_write(out, text, len, &so, &e) < 0) {
        say("%s", e->msg);
        ph_error_free(&e);
        return -1;
    }
    return 0;
}

static int
fold_into(const char *out, const char *profile, size_t n, pid_t pid, long hz, int wall, double seconds,
          const char *title)
{
    char root[64], comm[32] = "node", path[64], why[256], *text = NULL;
    size_t len = 0;
    ph_cdp_fold_stats st;
    ph_cdp_fold_opts o = { .root = root, .wall = wall };
    FILE *m, *f;
    int rc;

    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if ((f = fopen(path, "re")) != NULL) {
        if (fgets(comm, sizeof comm, f) == NULL)
            snprintf(comm, sizeof comm, "node");
        fclose(f);
    }
    comm[strcspn(comm, "\n;")] = '\0';
    for (char *c = comm; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == ' ')
            *c = '_';
    snprintf(root, sizeof root, "%s", comm[0] ? comm : "node");
    if ((m = open_memstream(&text, &len)) == NULL)
        return -1;
    rc = ph_cdp_fold(profile, n, &o, m, &st, why, sizeof why);
    fclose(m);
    if (rc < 0) {
        say("the profile could not be read: %s (profile.cpuprofile is kept as it came)", why);
    } else {
        say("%zu samples (%zu idle%s), %zu nodes, %zu stacks%s", st.samples, st.idle,
            wall ? ": off the CPU, [off-cpu]" : ", left out", st.nodes, st.stacks,
            st.bad_ids || st.reparented || st.cut ? " (some of it malformed: kept apart)" : "");
        if (len > 0 && wall) {
            rc = write_wall(out, text, len, pid, hz, seconds, title, &st);
        } else if (len > 0 && put(out, "stacks.folded", text, len) < 0) {
            rc = -1;
        }
    }
    free(text);
    return rc;
}

int
main(int argc, char **argv)
{
    static const char *const profile_key[] = { "result", "profile", NULL };
    char body[HTTP_MAX], path[512], params[64];
    session s = { .fd = -1, .next_id = 1 };
    struct sigaction sa = { .sa_handler = on_stop };
    const char *out, *why, *title;
    char *reply = NULL;
    pid_t pid;
    long hz;
    int wall, rc = 1;
    size_t len, off, plen;
    long long deadline, started;
    double seconds;

    if ((argc != 5 && argc != 6) || (hz = strtol(argv[3], NULL, 10)) <= 0 || hz > 10000 ||
        (strcmp(argv[4], "cpu") != 0 && strcmp(argv[4], "wall") != 0) || (pid = (pid_t)atoi(argv[2])) <= 0) {
        fprintf(stderr, "usage: ph-nodeinsp OUT PID HZ cpu|wall [TITLE]\n");
        return 2;
    }
    out = argv[1];
    title = argc == 6 ? argv[5] : NULL;
    wall = strcmp(argv[4], "wall") == 0;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if ((why = refusal(pid))[0] != '\0') {
        say("%s", why);
        return 2;
    }
    if (kill(pid, SIGUSR1) < 0) {
        say("node %d: SIGUSR1: %s", (int)pid, strerror(errno));
        return 1;
    }
    deadline = now_ms() + OPEN_WAIT_MS;
    for (;;) {
        if (http_get("/json/list", body, sizeof body, &len) == 0 && ph_cdp_ws_path(body, len, path, sizeof path) == 0)
            break;
        if (now_ms() > deadline || stop_requested) {
            say("node %d opened no inspector on 127.0.0.1:%d within %d s of SIGUSR1 (a SIGUSR1 listener of its "
                "own?); use `start --mode flamegraph`", (int)pid, PORT, OPEN_WAIT_MS / 1000);
            return 1;
        }
        nap_ms(50);
    }
    if (ws_open(&s, path) < 0) {
        say("the inspector's WebSocket %s did not open", path);
        goto out;
    }
    snprintf(params, sizeof params, "{\"interval\":%ld}", 1000000L / hz);
    if (call(&s, "Profiler.enable", NULL, REPLY_WAIT_MS) < 0 ||
        call(&s, "Profiler.setSamplingInterval", params, REPLY_WAIT_MS) < 0 ||
        call(&s, "Profiler.start", NULL, REPLY_WAIT_MS) < 0) {
        close_inspector(&s);
        goto out;
    }
    say("V8's profiler samples node %d every %ld us (%ld Hz, %s)", (int)pid, 1000000L / hz, hz, wall ? "wall" : "cpu");
    fprintf(stderr, "ph-attach: joined node %d (its inspector's profiler)\n", (int)pid); /* attach.ready */
    started = now_ms();
    while (!stop_requested) {
        /* events are read and dropped (none is asked for); the session
         * ending means node did */
        int r = ws_next(&s, now_ms() + 250);
        if (r == 0) {
            say("node %d closed the session (it exited?): no profile", (int)pid);
            goto out;
        }
    }
    seconds = (double)(now_ms() - started) / 1000;
    if (call(&s, "Profiler.stop", NULL, REPLY_WAIT_MS) < 0) {
        close_inspector(&s);
        goto out;
    }
    if (ph_cdp_find(s.msg, s.msg_len, profile_key, &off, &plen) < 0) {
        say("Profiler.stop answered without a profile");
        close_inspector(&s);
        goto out;
    }
    /* the reply is ours now: the calls below read theirs into s.msg */
    reply = s.msg;
    s.msg = NULL;
    s.msg_len = 0;
    (void)put(out, "profile.cpuprofile", reply + off, plen);
    call(&s, "Profiler.disable", NULL, 5000);
    close_inspector(&s);
    rc = fold_into(out, reply + off, plen, pid, hz, wall, seconds, title) < 0;
out:
    free(reply);
    if (s.fd >= 0)
        close(s.fd);
    free(s.in);
    free(s.msg);
    return rc;
}
