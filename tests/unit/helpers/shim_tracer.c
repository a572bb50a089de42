/* shim_tracer.c - test helper standing in for strace: forks its argv as a
 * child, ignores SIGTERM itself (as strace with -o does), waits for the
 * child and exits with its status.  Writes its child's pid to
 * $SHIM_TRACER_PIDFILE. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    const char *pf = getenv("SHIM_TRACER_PIDFILE");
    pid_t c;
    int st;

    if (argc < 2)
        return 2;
    signal(SIGTERM, SIG_IGN);
    c = fork();
    if (c == 0) {
        signal(SIGTERM, SIG_DFL);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    if (pf) {
        FILE *f = fopen(pf, "w");
        if (f) {
            fprintf(f, "%d\n", (int)c);
            fclose(f);
        }
    }
    while (waitpid(c, &st, 0) < 0)
        ;
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}
