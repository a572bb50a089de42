/* sampler_work.c - workloads for the sampler tests, one per argv[1]:
 *   split S    ~75% of CPU in work_heavy, ~25% in work_light, for S seconds
 *              of CPU time (a busy machine stretches the run, it does not
 *              thin the samples)
 *   deep S [N] recursion N (default 500) frames deep, S CPU-seconds
 *   short S    threads living ~20 ms each, one after another, doing the
 *              same work as the main thread does between them
 *              (short_thread_work vs main_thread_work), S CPU-seconds
 *   threads S  four busy threads, named busy-0..3, started after the
 *              sampler is running, S CPU-seconds each
 *   api S DIR MARKER  preloaded but inert (no PH_SAMPLER_DIR): installs its
 *              own SIGTERM handler (writing MARKER), then starts the sampler
 *              through the C API (found with dlsym), checks that
 *              ph_sampler_flush() wrote a snapshot, spins S seconds and
 *              stops it; exits 0 when all went as expected
 *   env        prints which of LD_PRELOAD / PH_SAMPLER_DIR it can see
 *   handler S  installs its own SIGTERM handler that writes argv[3]; spins
 *   default S  spins with SIGTERM at its default action
 *   forkexec S a child execs this program again ("split"), then the parent spins
 *   forkwork S a forked child (no exec) spends S CPU-seconds in work_heavy,
 *              the parent as long in work_light
 *   forkdl S   forks children that call dl_iterate_phdr and leave, one
 *              after another from its first instant, for S CPU-seconds,
 *              loading and unloading a library now and then between two
 *              forks, so the sampler's writer rebuilds its unwind tables
 *              (inside dl_iterate_phdr) at each of its ticks; a child that
 *              inherited the loader's lock held hangs, and so does the
 *              parent waiting for it.  (Never a dlopen during a fork: that
 *              would leave the child the same lock, sampler or not.)
 *   eintr S    SIGTERM handler without SA_RESTART; blocks in read() and
 *              exits 0 when the read is interrupted, as servers do
 *   varied S M like handler, but through recursions of every depth up to
 *              300: hundreds of deep stacks, so the final snapshot is
 *              real work for the sampler's writer; after SIGTERM it spins
 *              a little more, so the snapshot at exit exists and counts
 *              what the SIGTERM one cost
 *   mapped S   split for S CPU-seconds (the sampler's snapshots read
 *              symbols and debug info meanwhile), then prints "mapped 1"
 *              when a 1 MiB block is still one glibc mapped by itself
 *              (IS_MMAPPED in its chunk header), as without the sampler
 *   names S    (CPU-seconds) functions under C++, legacy Rust and Rust v0 symbol names
 *              (asm labels: this program links neither libstdc++ nor Rust),
 *              and a function inlined into another (lines marked LINE:)
 *   names-late M S  the inlined function of `names` until the file M
 *              exists, then another (holds_late) for S CPU-seconds
 *   entry S    S CPU-seconds in entry_spin, most of its samples at its
 *              very first byte (its loop's slow instruction just below it)
 *   trap S     a SIGTRAP handler of its own (SA_SIGINFO), and a raise(SIGTRAP)
 *              every 20 ms of S CPU-seconds; prints what the handler saw
 *              and exits 0 when it saw each of its own and no perf event's
 *   trapdefault S  spins S CPU-seconds, then raise(SIGTRAP) at its default
 *              action (no core file)
 *   trapignored S  SIGTRAP ignored; spins S CPU-seconds in work_heavy,
 *              raising one SIGTRAP on the way
 *   trapblocked S  a thread that blocks every signal spins beside the main
 *              thread, both in work_heavy, for S CPU-seconds
 *   torn S     (x86-64) spins with garbage in the frame pointer, so that
 *              both unwinders follow it (this file keeps frame pointers,
 *              so its call frame information computes the caller's frame
 *              from rbp too): null, tiny, misaligned, unmapped,
 *              PROT_NONE, non-canonical and kernel addresses, vsyscall's
 *              execute-only page, the last word below the stack's top,
 *              fake frames on the stack and on the heap that lead to all
 *              of those; on a stack of its own between PROT_NONE pages;
 *              in a thread on a stack it was given, PROT_NONE above it;
 *              and in code outside every object (as a JIT's), with a
 *              garbage word where its return address would be.  Exits 0
 *              if it lived; S CPU-seconds in all.
 *   bigframes S  frame_9k and frame_64k (9 and 64 KiB of locals) spin in a
 *              callee, in turn, for S/2 CPU-seconds from main, then S/2
 *              from big_context, on a 1 MiB stack of the workload's own
 *              (swapcontext: bounds the sampler does not know)
 *   hugeframe S  frame_9m (9 MiB of locals) spins S/2 CPU-seconds on a
 *              thread with a 32 MiB stack started while sampling
 *              (huge_thread), then S/2 on the main thread switched to a
 *              32 MiB stack of its own (swapcontext: bounds the sampler
 *              does not know)
 *   forklate S the parent spins S CPU-seconds in work_light (so it has
 *              been sampled), then forks a child (no exec) that spins as
 *              long in work_heavy */
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

static volatile sig_atomic_t stop;
static volatile unsigned long sink;
static const char *marker;

/* Seconds on CLOCK: CLOCK_MONOTONIC for wall time, CLOCK_PROCESS_CPUTIME_ID
 * for CPU time. */
static double
seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
now(void)
{
    return seconds(CLOCK_MONOTONIC);
}

__attribute__((noinline)) static void
spin(long n)
{
    for (long i = 0; i < n; i++)
        sink = sink * 6364136223846793005UL + (unsigned long)i;
}

__attribute__((noinline)) static void work_heavy(void) { spin(3000000); sink++; /* no tail call */ }
__attribute__((noinline)) static void work_light(void) { spin(1000000); sink++; }

__attribute__((noinline)) static void
recurse(int depth)
{
    if (depth > 0)
        recurse(depth - 1);
    else
        spin(2000000);
    sink += (unsigned long)depth; /* not a tail call */
}

/* Mangled names, each checked against binutils' c++filt when written. */
__attribute__((noinline)) void cpp_fn(int n) __asm__("_ZN4demo5inner7hot_cppEi");
__attribute__((noinline)) void rust_legacy_fn(void) __asm__("_ZN4demo4rust10hot_legacy17h0123456789abcdefE");
__attribute__((noinline)) void rust_v0_fn(void) __asm__("_RNvNtCs1234_4demo4rust6hot_v0");
__attribute__((noinline)) void rust_v0_method(void) __asm__("_RNvMNtCs1234_4demo4rustINtB2_3BoxlE3get");
void cpp_fn(int n) { spin(n); sink++; }
void rust_legacy_fn(void) { spin(1000000); sink++; }
void rust_v0_fn(void) { spin(1000000); sink++; }
void rust_v0_method(void) { spin(1000000); sink++; }

static inline __attribute__((always_inline)) void
inlined_mix(long n)
{
    /* one line, so that every instruction of the loop is on it */
    for (long i = 0; i < n; i++) sink = sink * 2862933555777941757UL + 3037000493UL; /* LINE:inline-body */
}

__attribute__((noinline)) static void
holds_inline(void)
{
    inlined_mix(2000000); /* LINE:inline-call */
    sink++;
}

/* The same shape, run only after `names-late`'s marker: addresses no
 * snapshot before it has named. */
static inline __attribute__((always_inline)) void
inlined_late(long n)
{
    for (long i = 0; i < n; i++) sink = sink * 6364136223846793005UL + 1442695040888963407UL; /* LINE:late-body */
}

__attribute__((noinline)) static void
holds_late(void)
{
    inlined_late(2000000); /* LINE:late-call */
    sink++;
}

/* entry_spin(N): N rounds of a loop whose slow instruction (pause) is
 * entry_pad, the function just below it, so the instruction a sample
 * finds next is mostly entry_spin's first byte (an interrupt is taken
 * after the instruction it waited for).  Each with its call frame
 * information. */
void entry_spin(long n);
#if defined(__x86_64__)
__asm__(".text\n.type entry_pad, @function\nentry_pad:\n.cfi_startproc\n\tpause\n.cfi_endproc\n"
        ".size entry_pad, .-entry_pad\n"
        ".globl entry_spin\n.type entry_spin, @function\nentry_spin:\n.cfi_startproc\n"
        "\tdec %rdi\n\tjnz entry_pad\n\tret\n.cfi_endproc\n.size entry_spin, .-entry_spin\n");
#elif defined(__aarch64__)
__asm__(".text\n.type entry_pad, %function\nentry_pad:\n.cfi_startproc\n\tisb\n.cfi_endproc\n"
        ".size entry_pad, .-entry_pad\n"
        ".globl entry_spin\n.type entry_spin, %function\nentry_spin:\n.cfi_startproc\n"
        "\tsubs x0, x0, #1\n\tb.ne entry_pad\n\tret\n.cfi_endproc\n.size entry_spin, .-entry_spin\n");
#endif

__attribute__((noinline)) static void main_thread_work(void) { spin(6000000); sink++; }
__attribute__((noinline)) static void short_thread_work(void) { spin(6000000); sink++; }

static void *
thread_short(void *arg)
{
    (void)arg;
    short_thread_work();
    return NULL;
}

static void *
thread_busy(void *arg)
{
    /* CPU seconds of its own: a busy machine stretches the run, it does
     * not thin the samples */
    while (seconds(CLOCK_THREAD_CPUTIME_ID) < *(double *)arg && !stop)
        spin(100000);
    return NULL;
}

static volatile sig_atomic_t traps_seen, traps_perf;

static void
on_trap(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    if (si->si_code == 6) /* TRAP_PERF: a perf event's, not ours */
        traps_perf++;
    else
        traps_seen++;
}

static void *
thread_blocked(void *arg)
{
    sigset_t all;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (seconds(CLOCK_THREAD_CPUTIME_ID) < *(double *)arg)
        work_heavy();
    return NULL;
}

#if defined(__x86_64__)
/* Spin N rounds with rbp = BAD, touching no memory. */
__attribute__((noinline)) static void
torn_spin(uintptr_t bad, long n)
{
    __asm__ volatile("push %%rbp\n\t"
                     "mov %%rdi, %%rbp\n\t"
                     "1: dec %%rcx\n\t"
                     "jnz 1b\n\t"
                     "pop %%rbp\n\t"
                     : "+c"(n)
                     : "D"(bad)
                     : "cc", "memory");
}

/* The garbage: addresses that fault, and words of fake frames that lead
 * to them.  The fake frames live in FRAMES (on the stack or the heap). */
static uintptr_t torn_bad[24];
static int n_torn_bad;
static uintptr_t *torn_heap;

static void
torn_round(long n)
{
    uintptr_t frames[2 * 24];

    for (int i = 0; i < n_torn_bad; i++) {
        torn_spin(torn_bad[i], n);
        /* a frame on the stack whose saved rbp and return address are
         * garbage, and one on the heap (off every stack) */
        frames[2 * i] = torn_bad[i];
        frames[2 * i + 1] = torn_bad[(i + 1) % n_torn_bad];
        torn_spin((uintptr_t)&frames[2 * i], n);
        torn_heap[2 * i] = torn_bad[i];
        torn_heap[2 * i + 1] = torn_bad[(i + 3) % n_torn_bad];
        torn_spin((uintptr_t)&torn_heap[2 * i], n);
    }
}

static ucontext_t torn_main_ctx, torn_co_ctx;
static uintptr_t torn_co_top;

/* On a stack of our own with PROT_NONE above its top: rbp at the last
 * word, so the frame pointer's pair reaches into the guard. */
static void
torn_coroutine(void)
{
    torn_spin(torn_co_top - 8, 2000000);
    torn_spin(torn_co_top - 16, 2000000);
    torn_round(200000);
}

static int
count_objects(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    ++*(int *)data;
    return 0;
}

static volatile int torn_done;
static pthread_t torn_thread;

/* A thread on a stack it was given, a PROT_NONE page right above: rbp at
 * the last word below the top, so the frame pointer's pair reaches into
 * the guard. */
static void *
torn_given_stack(void *arg)
{
    uintptr_t top = (uintptr_t)arg;

    while (!torn_done) {
        torn_spin(top - 8, 200000);
        torn_spin(top - 16, 200000);
    }
    return NULL;
}

static int
torn(double secs)
{
    long page = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *co = mmap(NULL, 66 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *jit = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_attr_t a;
    void *stack_lo = NULL;
    size_t stack_size = 0;

    if (m == MAP_FAILED || co == MAP_FAILED)
        return 20;
    munmap(m + page, page);                       /* a hole */
    mprotect(m + 2 * page, page, PROT_NONE);      /* a page that faults */
    torn_heap = (uintptr_t *)(void *)(m + 3 * page);
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &stack_lo, &stack_size);
        pthread_attr_destroy(&a);
    }
    {
        uintptr_t bad[] = { 0, 8, 0x1001, (uintptr_t)(m + page), (uintptr_t)(m + page + 8),
                            (uintptr_t)(m + 2 * page), (uintptr_t)(m + page - 8), (uintptr_t)(m + 2 * page - 8),
                            0x0000800000000000UL, 0x8000000000000000UL, 0xffffffffff600000UL,
                            0xffffffff81000000UL, 0xfffffffffffffff8UL,
                            (uintptr_t)stack_lo + stack_size - 8, (uintptr_t)stack_lo + stack_size - 16,
                            (uintptr_t)stack_lo - 8 };
        n_torn_bad = (int)(sizeof bad / sizeof *bad);
        memcpy(torn_bad, bad, sizeof bad);
    }
    /* the coroutine's stack: a guard page below and above */
    mprotect(co, page, PROT_NONE);
    mprotect(co + 65 * page, page, PROT_NONE);
    torn_co_top = (uintptr_t)(co + 65 * page);
    if (jit != MAP_FAILED) {
        /* movabs $garbage, %rax; push %rax; 1: dec %rcx; jnz 1b; pop %rax; ret
         * with rcx = n (first argument in rdi: mov %rdi, %rcx first) */
        unsigned char code[] = { 0x48, 0x89, 0xf9,                               /* mov %rdi,%rcx */
                                 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,              /* movabs $x,%rax */
                                 0x50,                                           /* push %rax */
                                 0x48, 0xff, 0xc9,                               /* dec %rcx */
                                 0x75, 0xfb,                                     /* jnz -5 */
                                 0x58,                                           /* pop %rax */
                                 0xc3 };                                         /* ret */
        uintptr_t x = (uintptr_t)(m + page) + 3; /* ret-7 readable, ret+8 in the hole */

        memcpy(code + 5, &x, sizeof x);
        memcpy(jit, code, sizeof code);
    }
    {
        size_t size = 64 * (size_t)page;
        char *given = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        pthread_attr_t ga;

        if (given == MAP_FAILED || mprotect(given + size, page, PROT_NONE) < 0 || pthread_attr_init(&ga) != 0 ||
            pthread_attr_setstack(&ga, given, size) != 0 ||
            pthread_create(&torn_thread, &ga, torn_given_stack, given + size) != 0)
            return 21;
        pthread_attr_destroy(&ga);
    }
    while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs) {
        torn_round(200000);
        if (jit != MAP_FAILED)
            ((void (*)(long))(void *)jit)(2000000);
        getcontext(&torn_co_ctx);
        torn_co_ctx.uc_stack.ss_sp = co + page;
        torn_co_ctx.uc_stack.ss_size = 64 * page;
        torn_co_ctx.uc_link = &torn_main_ctx;
        makecontext(&torn_co_ctx, torn_coroutine, 0);
        swapcontext(&torn_main_ctx, &torn_co_ctx);
    }
    torn_done = 1;
    pthread_join(torn_thread, NULL);
    return 0;
}
#else
static int
torn(double secs)
{
    (void)secs;
    printf("torn: x86-64 only\n");
    return 0;
}
#endif

static void
on_term(int sig)
{
    (void)sig;
    FILE *f = fopen(marker, "w");
    if (f) {
        fputs("handler ran\n", f);
        fclose(f);
    }
    stop = 1;
}

/* A frame holding BYTES of locals, spinning in a callee until CLOCK
 * reads UNTIL.  (With -fstack-clash-protection its prologue touches every
 * page of it.) */
#define BIG_FRAME(name, bytes)                                                                                     \
    __attribute__((noinline)) static void name(clockid_t clock, double until)                                     \
    {                                                                                                              \
        volatile char pad[bytes];                                                                                  \
                                                                                                                   \
        pad[0] = 1;                                                                                                \
        pad[sizeof pad - 1] = 2;                                                                                   \
        while (seconds(clock) < until)                                                                             \
            spin(100000);                                                                                          \
        sink += (unsigned long)pad[0] + (unsigned long)pad[sizeof pad - 1]; /* no tail call */                    \
    }
BIG_FRAME(frame_9k, 9 * 1024)
BIG_FRAME(frame_64k, 64 * 1024)
BIG_FRAME(frame_9m, 9 * 1024 * 1024)

static double huge_until;
static ucontext_t huge_main_ctx, huge_co_ctx;

/* Run FN on a fresh stack of SIZE bytes (swapcontext): 0, or 1. */
static int
on_own_stack(void (*fn)(void), size_t size)
{
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                       -1, 0);

    if (stack == MAP_FAILED)
        return 1;
    getcontext(&huge_co_ctx);
    huge_co_ctx.uc_stack.ss_sp = stack;
    huge_co_ctx.uc_stack.ss_size = size;
    huge_co_ctx.uc_link = &huge_main_ctx;
    makecontext(&huge_co_ctx, fn, 0);
    if (swapcontext(&huge_main_ctx, &huge_co_ctx) < 0)
        return 1;
    munmap(stack, size);
    return 0;
}

static void
big_frames_until(double until)
{
    while (seconds(CLOCK_PROCESS_CPUTIME_ID) < until) {
        frame_9k(CLOCK_PROCESS_CPUTIME_ID, seconds(CLOCK_PROCESS_CPUTIME_ID) + 0.02);
        frame_64k(CLOCK_PROCESS_CPUTIME_ID, seconds(CLOCK_PROCESS_CPUTIME_ID) + 0.02);
    }
}

__attribute__((noinline)) static void
big_context(void)
{
    big_frames_until(huge_until);
    sink++;
}

static void *
huge_thread(void *arg)
{
    frame_9m(CLOCK_THREAD_CPUTIME_ID, *(double *)arg);
    sink++;
    return NULL;
}

static void
huge_context(void)
{
    frame_9m(CLOCK_THREAD_CPUTIME_ID, huge_until);
    sink++;
}

static int
hugeframe(double secs)
{
    size_t size = 32u << 20;
    pthread_attr_t a;
    pthread_t t;
    double half = secs / 2;

    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, size);
    if (pthread_create(&t, &a, huge_thread, &half) != 0)
        return 1;
    pthread_join(t, NULL);
    huge_until = seconds(CLOCK_THREAD_CPUTIME_ID) + half;
    return on_own_stack(huge_context, size);
}

int
main(int argc, char **argv)
{
    double secs = argc > 2 ? atof(argv[2]) : 2, until = now() + secs;

    if (argc < 2)
        return 2;
    if (strcmp(argv[1], "split") == 0) {
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs) {
            work_heavy();
            work_light();
        }
    } else if (strcmp(argv[1], "mapped") == 0) {
        char *b;
        size_t h;

        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs) {
            work_heavy();
            work_light();
        }
        if ((b = malloc(1 << 20)) == NULL)
            return 1;
        __asm__ volatile("" : "+r"(b)); /* glibc's header before B is read, not ours */
        memcpy(&h, b - sizeof h, sizeof h);
        printf("mapped %d\n", (h & 2) != 0);
        free(b);
    } else if (strcmp(argv[1], "deep") == 0) {
        int depth = argc > 3 ? atoi(argv[3]) : 500;
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs)
            recurse(depth);
    } else if (strcmp(argv[1], "short") == 0) {
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs) {
            pthread_t t;

            main_thread_work();
            if (pthread_create(&t, NULL, thread_short, NULL) != 0)
                return 1;
            pthread_join(t, NULL);
        }
    } else if (strcmp(argv[1], "threads") == 0) {
        pthread_t t[4];
        usleep(100000);
        for (int i = 0; i < 4; i++) {
            char name[16];
            pthread_create(&t[i], NULL, thread_busy, &secs);
            snprintf(name, sizeof name, "busy-%d", i);
            pthread_setname_np(t[i], name);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
    } else if (strcmp(argv[1], "handler") == 0 || strcmp(argv[1], "default") == 0) {
        if (strcmp(argv[1], "handler") == 0) {
            marker = argv[3];
            signal(SIGTERM, on_term);
        }
        printf("ready\n");
        fflush(stdout);
        while (!stop && now() < until + 30)
            spin(100000);
    } else if (strcmp(argv[1], "varied") == 0) {
        marker = argv[3];
        signal(SIGTERM, on_term);
        printf("ready\n");
        fflush(stdout);
        for (int i = 0; !stop && now() < until + 30; i++) {
            int d = i % 300;
            if (d == 0)
                spin(100000);
            else
                recurse(d);
        }
        spin(20000000);
    } else if (strcmp(argv[1], "eintr") == 0) {
        struct sigaction sa;
        int fds[2];
        char c;

        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        marker = "/dev/null";
        sigaction(SIGTERM, &sa, NULL);
        if (pipe(fds) < 0)
            return 3;
        spin(50000000); /* some CPU to sample */
        printf("ready\n");
        fflush(stdout);
        return read(fds[0], &c, 1) < 0 && stop ? 0 : 4;
    } else if (strcmp(argv[1], "forkexec") == 0) {
        pid_t c = fork();
        if (c == 0) {
            execl("/proc/self/exe", argv[0], "split", "1", (char *)NULL);
            _exit(127);
        }
        while (now() < until)
            spin(100000);
        waitpid(c, NULL, 0);
    } else if (strcmp(argv[1], "forkwork") == 0) {
        int st;
        pid_t c = fork();

        if (c == 0) {
            while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs)
                work_heavy();
            exit(0);
        }
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs)
            work_light();
        return waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 12;
    } else if (strcmp(argv[1], "forkdl") == 0) {
        int forks = 0;

        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs) {
            int st;
            pid_t c = fork();

            if (c == 0) {
                int n = 0;

                dl_iterate_phdr(count_objects, &n);
                _exit(n > 0 ? 0 : 13);
            }
            if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return 14;
            if (++forks % 50 == 0) {
                /* a big one: its tables take the writer milliseconds */
                void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);

                if (h != NULL)
                    dlclose(h);
            }
        }
        printf("forks=%d\n", forks);
    } else if (strcmp(argv[1], "api") == 0 && argc > 4) {
        int (*start)(const char *, int, int, const char *) =
            (int (*)(const char *, int, int, const char *))dlsym(RTLD_DEFAULT, "ph_sampler_start");
        int (*flush)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "ph_sampler_flush");
        void (*stopper)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "ph_sampler_stop");
        DIR *d;
        struct dirent *de;
        int files = 0;

        if (!start || !flush || !stopper)
            return 5;
        marker = argv[4];
        signal(SIGTERM, on_term); /* before the sampler starts */
        if (start(argv[3], 200, 0, "api") != 0)
            return 6;
        /* 0.2 CPU-s sampled: ~40 samples expected at 200 Hz, never none
         * (a fixed spin was a few ms on a fast CPU: no sample, no file) */
        for (double t0 = seconds(CLOCK_PROCESS_CPUTIME_ID); seconds(CLOCK_PROCESS_CPUTIME_ID) < t0 + 0.2;)
            spin(100000);
        if (flush() != 0)
            return 7;
        if ((d = opendir(argv[3])) == NULL)
            return 8;
        while ((de = readdir(d)) != NULL)
            files += strncmp(de->d_name, "stacks-", 7) == 0;
        closedir(d);
        if (files != 1)
            return 9;
        printf("ready\n");
        fflush(stdout);
        while (!stop && now() < until)
            spin(100000);
        stopper();
        return 0;
    } else if (strcmp(argv[1], "entry") == 0) {
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs)
            entry_spin(1000000);
    } else if (strcmp(argv[1], "names") == 0) {
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs) {
            cpp_fn(1000000);
            rust_legacy_fn();
            rust_v0_fn();
            rust_v0_method();
            holds_inline();
        }
    } else if (strcmp(argv[1], "names-late") == 0) {
        /* names-late MARKER SECS: holds_inline until MARKER exists, then
         * holds_late for SECS more CPU seconds */
        double late_until;

        while (access(argv[2], F_OK) != 0)
            holds_inline();
        late_until = seconds(CLOCK_PROCESS_CPUTIME_ID) + atof(argv[3]);
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < late_until)
            holds_late();
    } else if (strcmp(argv[1], "trap") == 0) {
        struct sigaction sa;
        int raised = 0;
        double next = 0;

        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_trap;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigaction(SIGTRAP, &sa, NULL);
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs) {
            work_light();
            if (seconds(CLOCK_PROCESS_CPUTIME_ID) >= next) {
                raise(SIGTRAP);
                raised++;
                next = seconds(CLOCK_PROCESS_CPUTIME_ID) + 0.02;
            }
        }
        printf("raised=%d seen=%d perf=%d\n", raised, (int)traps_seen, (int)traps_perf);
        return traps_seen == raised && traps_perf == 0 ? 0 : 10;
    } else if (strcmp(argv[1], "trapdefault") == 0) {
        struct rlimit none = { 0, 0 };

        setrlimit(RLIMIT_CORE, &none);
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs)
            work_light();
        raise(SIGTRAP);
        return 11;
    } else if (strcmp(argv[1], "trapignored") == 0) {
        signal(SIGTRAP, SIG_IGN);
        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs)
            work_heavy();
        raise(SIGTRAP);
    } else if (strcmp(argv[1], "trapblocked") == 0) {
        pthread_t t;

        if (pthread_create(&t, NULL, thread_blocked, &secs) != 0)
            return 1;
        while (seconds(CLOCK_THREAD_CPUTIME_ID) < secs)
            work_heavy();
        pthread_join(t, NULL);
    } else if (strcmp(argv[1], "torn") == 0) {
        return torn(secs);
    } else if (strcmp(argv[1], "bigframes") == 0) {
        big_frames_until(secs / 2);
        huge_until = secs;
        return on_own_stack(big_context, 1u << 20);
    } else if (strcmp(argv[1], "hugeframe") == 0) {
        return hugeframe(secs);
    } else if (strcmp(argv[1], "forklate") == 0) {
        int st;
        pid_t c;

        while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs)
            work_light();
        c = fork();
        if (c == 0) {
            while (seconds(CLOCK_PROCESS_CPUTIME_ID) < secs)
                work_heavy();
            exit(0);
        }
        return c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 12;
    } else if (strcmp(argv[1], "env") == 0) {
        printf("LD_PRELOAD=%s PH_SAMPLER_DIR=%s\n", getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "(unset)",
               getenv("PH_SAMPLER_DIR") ? getenv("PH_SAMPLER_DIR") : "(unset)");
    } else {
        return 2;
    }
    return 0;
}
