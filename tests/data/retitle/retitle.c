/* retitle.c - a service that rewrites its environment and process title
 * the way redis does (setproctitle: the environment moved to the heap,
 * the title written over argv and the old environment), then burns a
 * little CPU forever.  valgrind 3.19's vgdb, without an explicit
 * --vgdb-prefix, then looks for FIFOs of other names, and
 * `callgrind_control --dump` killed such a service (tests/71-collect.bats). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static volatile unsigned long sink;

__attribute__((noinline)) static void
spin(void)
{
    for (unsigned long i = 0; i < 2000000; i++)
        sink += i ^ (sink >> 3);
}

int
main(int argc, char **argv)
{
    char *end = argv[argc - 1] + strlen(argv[argc - 1]);
    size_t n = 0;
    char **copy;

    for (size_t i = 0; environ[i] != NULL; i++, n++)
        if (environ[i] == end + 1)
            end = environ[i] + strlen(environ[i]);
    copy = calloc(n + 1, sizeof *copy);
    for (size_t i = 0; copy != NULL && i < n; i++)
        copy[i] = strdup(environ[i]);
    if (copy == NULL || clearenv() != 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (copy[i] != NULL)
            putenv(copy[i]);
    memset(argv[0], 0, (size_t)(end - argv[0]));
    snprintf(argv[0], (size_t)(end - argv[0]), "retitle: serving");
    printf("retitled\n");
    fflush(stdout);
    for (;;) {
        spin();
        usleep(20000);
    }
}
