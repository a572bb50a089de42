/* shim_tracer.c - test helper for the init shim: stands in for strace.
 *
 * usage: shim_tracer [-s SIGFILE] [-p PIDFILE] [-P PROBEFILE] [-H] -- COMMAND [ARG...]
 * Runs COMMAND as its child and waits for it, then exits with its status,
 * or, if it was killed by signal N, kills itself with N, as strace does.  Like
 * `strace -o FILE PROG` it does not die of SIGTERM & co: it catches every
 * catchable signal and appends its number to SIGFILE.  -p writes the
 * child's pid to PIDFILE (atomically).  -H: after the child ended, hang
 * (a profiler that does not exit by itself).
 * -P: first fork a probe child that runs no program and lives until a
 * signal ends it, as strace 6 forks children to test ptrace before it
 * starts COMMAND; its pid goes to PROBEFILE.  Any signal the tracer itself
 * catches ends the probe too, then COMMAND starts. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int sig_fd = -1;
static volatile sig_atomic_t probe_pid;

static void
write_pid(const char *path, pid_t pid)
{
    char tmp[4096];
    FILE *f;

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%d\n", (int)pid);
        fclose(f);
        rename(tmp, path);
    }
}

static void
on_signal_cb(int s)
{
    char line[8];
    int n = 0;

    if (probe_pid > 0)
        kill((pid_t)probe_pid, SIGKILL);
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

/* In a child: every signal's default action again. */
static void
default_signals(void)
{
    struct sigaction dfl;

    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
}

int
main(int argc, char **argv)
{
    const char *sigfile = NULL, *pidfile = NULL, *probefile = NULL;
    struct sigaction sa;
    int hang = 0, i, status;
    pid_t c;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
            sigfile = argv[++i];
        else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
            pidfile = argv[++i];
        else if (strcmp(argv[i], "-P") == 0 && i + 1 < argc)
            probefile = argv[++i];
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
    sa.sa_handler = on_signal_cb;
    sa.sa_flags = SA_RESTART;
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD)
            sigaction(s, &sa, NULL);
    if (probefile) {
        pid_t probe = fork();

        if (probe < 0)
            return 1;
        if (probe == 0) {
            default_signals();
            for (;;)
                pause();
        }
        probe_pid = probe;
        write_pid(probefile, probe);
        while (waitpid(probe, &status, 0) < 0)
            if (errno != EINTR)
                return 1;
        probe_pid = 0;
    }
    c = fork();
    if (c < 0)
        return 1;
    if (c == 0) {
        default_signals();
        execvp(argv[i + 1], argv + i + 1);
        _exit(127);
    }
    if (pidfile)
        write_pid(pidfile, c);
    while (waitpid(c, &status, 0) < 0)
        if (errno != EINTR)
            return 1;
    while (hang)
        pause();
    if (WIFSIGNALED(status)) {
        sigset_t none;

        signal(WTERMSIG(status), SIG_DFL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        raise(WTERMSIG(status));
        return 128 + WTERMSIG(status); /* a signal that does not kill */
    }
    return WEXITSTATUS(status);
}
