/* jattach_fakejvm.c - a stand-in for a HotSpot JVM's attach listener, for
 * tests/unit/test_jattach.c: it does what HotSpot does when it gets
 * SIGQUIT (ph_jattach.h: the trigger file, the socket, the peer check)
 * and records what it was sent, so a test can hold ph-jattach to the
 * exact bytes and to the credentials it connects with.
 *
 *   jattach_fakejvm DIR MODE [REPLY]
 *
 * It maps DIR/libjvm.so (the test makes it), so it looks like a JVM, and
 * writes DIR/ready once its handler is in place.  MODE:
 *   answer     on SIGQUIT with a trigger of the right owner: listen at
 *              /tmp/.java_pid<pid>, take one connection, write the peer's
 *              "uid gid" to DIR/peer and the request's bytes to
 *              DIR/request, answer REPLY, exit 0;
 *   mute       the same, but never answer (exits after 30 s);
 *   silent     take SIGQUIT and never listen (attach disabled);
 *   starting   a JVM just started: the first SIGQUIT with a trigger starts
 *              a listener whose socket VM start then removes (HotSpot's
 *              stale-file sweep), so it never shows; the next one finds
 *              the socket gone and listens as `answer`;
 *   nohandler  no SIGQUIT handler at all (-Xrs): SIGQUIT ends it.
 * A SIGQUIT without a trigger prints "thread dump" and goes on, as a JVM
 * does.  An alarm ends it after 60 s whatever happens.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static volatile sig_atomic_t quits;

static void
on_quit(int sig)
{
    (void)sig;
    quits++;
}

static void
put(const char *dir, const char *name, const void *data, size_t len)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((f = fopen(path, "w")) == NULL) {
        perror(path);
        exit(3);
    }
    fwrite(data, 1, len, f);
    fclose(f);
}

/* Is there a trigger file HotSpot would take? */
static int
triggered(void)
{
    char fn[128];
    struct stat sb;

    snprintf(fn, sizeof fn, ".attach_pid%ld", (long)getpid());
    if (stat(fn, &sb) != 0) {
        snprintf(fn, sizeof fn, "/tmp/.attach_pid%ld", (long)getpid());
        if (stat(fn, &sb) != 0)
            return 0;
    }
    return sb.st_uid == geteuid() || sb.st_uid == 0;
}

static int
serve(const char *dir, int mute, const char *reply)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct ucred cr;
    socklen_t crl = sizeof cr;
    char req[4096], peer[64];
    size_t got = 0;
    int nuls = 0, ls, c;

    snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/.java_pid%ld", (long)getpid());
    unlink(sa.sun_path);
    if ((ls = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        chmod(sa.sun_path, 0600) < 0 || listen(ls, 5) < 0) {
        perror("listen");
        return 3;
    }
    for (;;) {
        if ((c = accept(ls, NULL, NULL)) < 0) {
            perror("accept");
            return 3;
        }
        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0) {
            perror("SO_PEERCRED");
            return 3;
        }
        snprintf(peer, sizeof peer, "%ld %ld\n", (long)cr.uid, (long)cr.gid);
        put(dir, "peer", peer, strlen(peer));
        /* HotSpot: the peer's uid and gid must be ours, or root's */
        if (cr.uid == 0 || (cr.uid == geteuid() && cr.gid == getegid()))
            break;
        close(c);
    }
    while (nuls < 5 && got < sizeof req) {
        ssize_t n = read(c, req + got, 1);

        if (n <= 0)
            break;
        nuls += req[got] == '\0';
        got++;
    }
    put(dir, "request", req, got);
    if (mute) {
        sleep(30);
        return 0;
    }
    if (write(c, reply, strlen(reply)) < 0)
        perror("write");
    close(c);
    unlink(sa.sun_path);
    return 0;
}

int
main(int argc, char **argv)
{
    char lib[512];
    struct sigaction sa;
    sigset_t block, old;
    const char *dir, *mode;
    int fd, lost_one = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: jattach_fakejvm DIR answer|mute|silent|starting|nohandler [REPLY]\n");
        return 2;
    }
    dir = argv[1];
    mode = argv[2];
    alarm(60);
    snprintf(lib, sizeof lib, "%s/libjvm.so", dir);
    if ((fd = open(lib, O_RDONLY)) < 0 || mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
        perror(lib);
        return 3;
    }
    if (strcmp(mode, "nohandler") == 0) {
        put(dir, "ready", "", 0);
        for (;;)
            pause();
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_quit;
    sigaction(SIGQUIT, &sa, NULL);
    sigemptyset(&block);
    sigaddset(&block, SIGQUIT);
    sigprocmask(SIG_BLOCK, &block, &old);
    put(dir, "ready", "", 0);
    for (;;) {
        while (quits == 0)
            sigsuspend(&old);
        quits = 0;
        if (!triggered()) {
            printf("thread dump\n");
            fflush(stdout);
            continue;
        }
        if (strcmp(mode, "silent") == 0)
            continue;
        if (strcmp(mode, "starting") == 0 && !lost_one) {
            lost_one = 1;
            continue;
        }
        return serve(dir, strcmp(mode, "mute") == 0, argc > 3 ? argv[3] : "0\n");
    }
}
