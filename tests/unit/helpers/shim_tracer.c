/* shim_tracer.c - test helper for the init shim: stands in for strace.
 *
 * usage: shim_tracer [-s SIGFILE] [-p PIDFILE] [-H] -- COMMAND [ARG...]
 * Runs COMMAND as its only child and waits for it, then exits with its
 * status (128+N if it was killed by signal N), as strace does.  Like
 * `strace -o FILE PROG` it does not die of SIGTERM & co: it catches every
 * catchable signal and appends its number to SIGFILE.  -p writes the
 * child's pid to PIDFILE (atomically).  -H: after the child ended, hang
 * (a profiler that does not exit by itself). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int sig_fd = -1;

static void
on_signal_cb(int s)
{
    char line[8];
    int n = 0;

    if (sig_fd < 0)
        return;
    if (s >= 10)
        line[n++] = (char)('0' + s / 10);
    line[n++] = (char)('0' + s % 10);
    line[n++] = '\n';
    if (write(sig_fd, line, (size_t)n) < 0) {
        /* nothing to do in a handler */
    }
}

int
main(int argc, char **argv)
{
    const char *sigfile = NULL, *pidfile = NULL;
    struct sigaction sa, dfl;
    int hang = 0, i, status;
    pid_t c;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
            sigfile = argv[++i];
        else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
            pidfile = argv[++i];
        else if (strcmp(argv[i], "-H") == 0)
            hang = 1;
        else
            return 2;
    }
    if (i + 1 >= argc)
        return 2;
    if (sigfile)
        sig_fd = open(sigfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    memset(&sa, 0, sizeof sa);
    memset(&dfl, 0, sizeof dfl);
    sa.sa_handler = on_signal_cb;
    sa.sa_flags = SA_RESTART;
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD)
            sigaction(s, &sa, NULL);
    c = fork();
    if (c < 0)
        return 1;
    if (c == 0) {
        for (int s = 1; s < 32; s++)
            if (s != SIGKILL && s != SIGSTOP)
                sigaction(s, &dfl, NULL);
        execvp(argv[i + 1], argv + i + 1);
        _exit(127);
    }
    if (pidfile) {
        char tmp[4096];
        FILE *f;

        snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
        f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%d\n", (int)c);
            fclose(f);
            rename(tmp, pidfile);
        }
    }
    while (waitpid(c, &status, 0) < 0)
        if (errno != EINTR)
            return 1;
    while (hang)
        pause();
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
