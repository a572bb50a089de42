/* shim_sigrec.c - test helper: records every signal it receives, one
 * number per line, in the file named by argv[1]; exits 0 on the signal
 * number given in argv[2] (after recording it).  With argv[3] = "ignore-term"
 * it ignores SIGTERM.  Writes "ready" to argv[1].ready when set up. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t last;

static void
on_sig(int s)
{
    last = s;
}

int
main(int argc, char **argv)
{
    struct sigaction sa;
    sigset_t none;
    char ready[512];
    int exit_on, fd;

    if (argc < 3)
        return 2;
    exit_on = atoi(argv[2]);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
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
    for (;;) {
        pause();
        if (last) {
            int s = last;
            char line[16];
            int n = snprintf(line, sizeof line, "%d\n", s);

            last = 0;
            fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                if (write(fd, line, (size_t)n) < 0) {
                }
                close(fd);
            }
            if (s == exit_on)
                return 0;
        }
    }
}
