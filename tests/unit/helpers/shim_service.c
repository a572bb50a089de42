/* shim_service.c - test helper for the init shim: a service that ends in a
 * chosen way, for the record's fault matrix.
 *
 * usage: shim_service READY BEHAVIOUR
 *   term         exits 0 on SIGTERM
 *   ignore       ignores SIGTERM: only an escalation ends it
 *   segv         on SIGUSR1, reads through a null pointer: the kernel's SIGSEGV
 *   exit         on SIGUSR1, exits 7 by itself
 *   oom          allocates and touches memory until the kernel kills it
 *   orphan       forks a child, then behaves as term; the child outlives
 *                it, ignores SIGTERM and only appends "15" to READY.child
 *                for each one (so a test knows it got one)
 *   orphan-term  the same, but the child dies of SIGTERM
 * READY, holding our pid, is created once the handlers are in place and
 * any child runs; READY.childpid holds the child's pid. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got_term, got_usr1;
static int child_fd = -1;

static void
on_signal_cb(int s)
{
    if (s == SIGTERM)
        got_term = 1;
    else if (s == SIGUSR1)
        got_usr1 = 1;
}

static void
child_term_cb(int s)
{
    (void)s;
    if (write(child_fd, "15\n", 3) < 0) {
        /* nothing to do in a handler; the test will wait in vain */
    }
}

static void
touch(const char *path, const char *text)
{
    char tmp[4096];
    FILE *f;

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "w");
    if (f == NULL)
        exit(3);
    fputs(text, f);
    fclose(f);
    if (rename(tmp, path) < 0)
        exit(3);
}

/* The orphan-to-be: sleeps until killed. */
static pid_t
fork_child(const char *ready, int stubborn)
{
    char path[4096], pid[32];
    pid_t c;

    snprintf(path, sizeof path, "%s.child", ready);
    child_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (child_fd < 0)
        exit(3);
    c = fork();
    if (c < 0)
        exit(3);
    if (c == 0) {
        sigset_t none;

        signal(SIGTERM, stubborn ? child_term_cb : SIG_DFL);
        signal(SIGUSR1, SIG_DFL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (;;)
            pause();
    }
    snprintf(path, sizeof path, "%s.childpid", ready);
    snprintf(pid, sizeof pid, "%d\n", (int)c);
    touch(path, pid);
    return c;
}

int
main(int argc, char **argv)
{
    struct sigaction sa;
    sigset_t block, wait_mask;
    volatile int *volatile nowhere = NULL;
    const char *b;

    if (argc != 3)
        return 2;
    b = argv[2];
    /* Blocked except inside sigsuspend: no signal falls between a check
     * of the flags and the wait. */
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, &wait_mask);
    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGUSR1);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal_cb;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    if (strcmp(b, "ignore") == 0)
        signal(SIGTERM, SIG_IGN);
    if (strcmp(b, "orphan") == 0 || strcmp(b, "orphan-term") == 0)
        fork_child(argv[1], strcmp(b, "orphan") == 0);
    {
        char pid[32];

        snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        touch(argv[1], pid);
    }
    if (strcmp(b, "oom") == 0) {
        for (;;) {
            char *p = malloc(1 << 20);

            if (p)
                memset(p, 1, 1 << 20);
        }
    }
    for (;;) {
        if (got_term)
            return 0;
        if (got_usr1 && strcmp(b, "segv") == 0)
            return *nowhere;
        if (got_usr1 && strcmp(b, "exit") == 0)
            return 7;
        sigsuspend(&wait_mask);
    }
}
