/* ph-pyattach.c - sample a running CPython's Python frames from outside it.
 *
 *   ph-pyattach [-F HZ] [-c cpu|wall] [-t TITLE] -o DIR PID
 *   ph-pyattach -n PID      only say whether PID's frames can be read
 *
 * Run by images/tools/ph-attach-sampler, in a tools container in the
 * service's PID namespace with CAP_SYS_PTRACE (process_vm_readv of
 * another user's process).  The version is checked first: one the frame
 * reader has no layout for is refused (exit 2) before any sample, saying
 * why.  Then PID is sampled at HZ until SIGINT or SIGTERM (the handlers
 * set a flag; the loop wakes within a period) or until it ends, and the
 * snapshot's files are written into DIR (ph_pyattach.h).  PID runs on
 * untouched: it is never stopped, signalled or written to.
 *
 * Exit status: 0 written, 1 failure, 2 usage or a process it cannot read. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_pyattach.h"

static volatile sig_atomic_t stop;

static void
on_stop(int sig)
{
    int saved = errno;

    stop = 1;
    errno = saved;
}

static int
usage(void)
{
    fprintf(stderr, "usage: ph-pyattach [-F HZ] [-c cpu|wall] [-t TITLE] -o DIR PID | -n PID\n");
    return 2;
}

int
main(int argc, char **argv)
{
    const char *dir = NULL, *title = "python (attached)";
    struct sigaction sa;
    ph_error_t err = NULL;
    php_target *t;
    int hz = 100, clock = PHP_CLOCK_CPU, check = 0, c, rc;
    char *end;
    long pid;

    while ((c = getopt(argc, argv, "F:c:t:o:n")) != -1) {
        switch (c) {
        case 'F':
            hz = (int)strtol(optarg, &end, 10);
            if (*end || hz < 1 || hz > 1000)
                return usage();
            break;
        case 'c':
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "wall") != 0)
                return usage();
            clock = strcmp(optarg, "wall") == 0 ? PHP_CLOCK_WALL : PHP_CLOCK_CPU;
            break;
        case 't': title = optarg; break;
        case 'o': dir = optarg; break;
        case 'n': check = 1; break;
        default: return usage();
        }
    }
    if ((dir == NULL && !check) || optind + 1 != argc)
        return usage();
    pid = strtol(argv[optind], &end, 10);
    if (*end || pid < 1)
        return usage();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if ((t = php_target_open((pid_t)pid, &err)) == NULL) {
        fprintf(stderr, "ph-pyattach: %s\n", err->msg);
        ph_error_free(&err);
        return 2;
    }
    if (check) {
        fprintf(stderr, "ph-pyattach: process %ld: %s\n", pid, php_target_describe(t));
        php_target_close(t);
        return 0;
    }
    fprintf(stderr, "ph-pyattach: process %ld: %s; sampling at %d Hz (%s clock)\n", pid, php_target_describe(t), hz,
            clock == PHP_CLOCK_WALL ? "wall" : "CPU");
    fprintf(stderr, "ph-attach: joined process %ld (its Python frames read from outside)\n", pid); /* attach.ready */
    rc = php_run(t, hz, clock, dir, title, &stop, &err);
    if (rc < 0)
        fprintf(stderr, "ph-pyattach: %s\n", err->msg);
    else
        fprintf(stderr, "ph-pyattach: process %ld: %llu samples written into %s\n", pid,
                (unsigned long long)php_samples(t), dir);
    ph_error_free(&err);
    php_target_close(t);
    return rc < 0 ? 1 : 0;
}
