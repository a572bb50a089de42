/* sampler_jit.c - a JIT as small as one can be, for the sampler's perf map
 * naming (tests/unit/test_sampler_jit.c): a countdown loop copied into
 * anonymous executable memory (x86-64 machine code) and called there for
 * S CPU-seconds.  Its perf map, /tmp/perf-<pid>.map in HotSpot's 0x form
 * (`jit_spin(long)`), is written at the start (`early`) or only after
 * half of the time (`late`: the sampler has named the code [unknown] in
 * a snapshot by then); `none` writes none.
 *
 *   sampler_jit early|late|none S */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double
cpu(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
write_map(void *code, size_t len)
{
    char path[64];
    FILE *f;

    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    f = fopen(path, "w");
    if (f == NULL) {
        perror("sampler_jit: map");
        exit(1);
    }
    fprintf(f, "0x%016lx 0x%016lx jit_spin(long)\n", (unsigned long)code, (unsigned long)len);
    fclose(f);
}

int
main(int argc, char **argv)
{
#if defined(__x86_64__)
    /* mov rax, rdi; 1: dec rax; jnz 1b; ret */
    static const unsigned char spin[] = { 0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3 };
    double secs = argc > 2 ? atof(argv[2]) : 2;
    const char *when = argc > 1 ? argv[1] : "early";
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    long (*fn)(long);
    int late = strcmp(when, "late") == 0, mapped = 0;

    if (p == MAP_FAILED) {
        perror("sampler_jit: mmap");
        return 1;
    }
    memcpy(p, spin, sizeof spin);
    fn = (long (*)(long))p;
    if (strcmp(when, "early") == 0) {
        write_map(p, sizeof spin);
        mapped = 1;
    }
    while (cpu() < secs) {
        fn(1000000);
        if (late && !mapped && cpu() >= secs / 2) {
            write_map(p, sizeof spin);
            mapped = 1;
        }
    }
    return 0;
#else
    (void)argc;
    (void)argv;
    return 77; /* not x86-64: no machine code to run */
#endif
}
