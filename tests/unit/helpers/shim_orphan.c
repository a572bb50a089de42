/* shim_orphan.c - test helper for the init shim: leaves an orphan.
 *
 * usage: shim_orphan PIDFILE MILLISECONDS
 * Forks a grandchild-to-be that sleeps MILLISECONDS and exits, writes its
 * pid to PIDFILE (atomically), and exits at once: the sleeper is orphaned
 * and, when it exits, a zombie until whoever adopted it reaps it. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    char tmp[4096];
    struct timespec ts;
    long ms;
    FILE *f;
    pid_t g;

    if (argc < 3)
        return 2;
    ms = strtol(argv[2], NULL, 10);
    g = fork();
    if (g < 0)
        return 1;
    if (g == 0) {
        ts.tv_sec = ms / 1000;
        ts.tv_nsec = (ms % 1000) * 1000000L;
        while (nanosleep(&ts, &ts) < 0)
            ;
        _exit(0);
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    f = fopen(tmp, "w");
    if (f == NULL)
        return 1;
    fprintf(f, "%d\n", (int)g);
    fclose(f);
    return rename(tmp, argv[1]) == 0 ? 0 : 1;
}
