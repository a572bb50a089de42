/* shim_orphan.c - test helper: forks a grandchild that outlives it by a
 * moment and exits, writing the grandchild's pid to argv[1], then exits 0
 * at once.  The grandchild is an orphan the init must reap. */
#include <stdio.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    pid_t g;

    if (argc < 2)
        return 2;
    g = fork();
    if (g == 0) {
        usleep(300000);
        _exit(0);
    }
    FILE *f = fopen(argv[1], "w");
    if (f) {
        fprintf(f, "%d\n", (int)g);
        fclose(f);
    }
    return 0;
}
