/* jitimg.c - a JIT as small as one can be, for the perf map tests
 * (tests/61-any-image.bats): machine code copied into anonymous
 * executable memory and run there in a loop, and the perf map a JIT
 * writes for it (HotSpot's form: `0xSTART 0xSIZE name`), in the run's
 * perf-maps/ (JIT_MAP_DIR), where profharness's conversion reads maps
 * from.  perf names such code /tmp/perf-<pid>.map, a file that is in no
 * container the conversion runs in.  It says when it has made 10,000
 * calls (about a second of CPU).  x86-64 only.  SIGTERM/SIGINT end it
 * cleanly. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t jit_stop;

static void
jit_on_signal(int sig)
{
    (void)sig;
    jit_stop = 1;
}

int
main(void)
{
    /* mov ecx, 200000; 1: dec ecx; jnz 1b; ret */
    static const unsigned char code[] = { 0xb9, 0x40, 0x0d, 0x03, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3 };
    const char *dir = getenv("JIT_MAP_DIR");
    char path[512];
    struct sigaction sa;
    void *p;
    FILE *f;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = jit_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("jitimg: mmap");
        return 1;
    }
    memcpy(p, code, sizeof code);
    if (dir != NULL) {
        snprintf(path, sizeof path, "%s", dir);
        for (char *s = path + 1; (s = strchr(s, '/')) != NULL; s++) { /* mkdir -p */
            *s = '\0';
            mkdir(path, 0777);
            *s = '/';
        }
        if (mkdir(path, 0777) < 0 && errno != EEXIST)
            perror("jitimg: mkdir");
        snprintf(path, sizeof path, "%s/perf-%d.map", dir, (int)getpid());
        if ((f = fopen(path, "w")) == NULL) {
            perror("jitimg: map");
            return 1;
        }
        fprintf(f, "0x%016lx 0x%016lx jit_hot_loop(long)\n", (unsigned long)p, (unsigned long)sizeof code);
        fclose(f);
    }
    printf("jitimg: running\n");
    fflush(stdout);
    for (unsigned long calls = 1; !jit_stop; calls++) {
        ((void (*)(void))p)();
        if (calls == 10000) { /* about a second of CPU in the JIT code */
            printf("jitimg: %lu calls\n", calls);
            fflush(stdout);
        }
    }
    printf("jitimg: stopped\n");
    return 0;
}
