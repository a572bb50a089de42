/* shim_sigrec.c - test helper for the init shim: the profiled process.
 *
 * usage: shim_sigrec FILE EXIT_SIG [ignore-term]
 * Catches every catchable signal and appends its number, one per line, to
 * FILE (from the handler, with write(), so none is lost between two
 * pause()s); exits 0 after recording EXIT_SIG (0: never).  With ignore-term
 * SIGTERM is ignored instead (a service that will not stop on it).  Creates
 * FILE.ready once the handlers are in place, so a test knows when to start. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rec_fd = -1;
static volatile sig_atomic_t exit_now;
static int exit_on;

static void
on_signal_cb(int s)
{
    char line[8];
    int n = 0;

    if (s >= 10)
        line[n++] = (char)('0' + s / 10);
    line[n++] = (char)('0' + s % 10);
    line[n++] = '\n';
    if (write(rec_fd, line, (size_t)n) < 0) {
        /* nothing to do in a handler; the test will notice the gap */
    }
    if (s == exit_on)
        exit_now = 1;
}

int
main(int argc, char **argv)
{
    struct sigaction sa;
    sigset_t none;
    char ready[4096];
    int fd;

    if (argc < 3)
        return 2;
    exit_on = (int)strtol(argv[2], NULL, 10);
    rec_fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (rec_fd < 0)
        return 3;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal_cb;
    sigfillset(&sa.sa_mask);
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &sa, NULL);
    if (argc > 3 && strcmp(argv[3], "ignore-term") == 0)
        signal(SIGTERM, SIG_IGN);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    snprintf(ready, sizeof ready, "%s.ready", argv[1]);
    fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0)
        close(fd);
    while (!exit_now)
        pause();
    return 0;
}
