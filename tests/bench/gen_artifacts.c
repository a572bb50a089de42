/* gen_artifacts.c - large, valid profiler outputs for bench-summaries.sh,
 * the same bytes for the same arguments (a fixed pseudo-random sequence):
 *
 *   gen_artifacts callgrind MB   callgrind.out as `--dump-instr=yes
 *        --dump-line=yes` writes it: `positions: instr line`, the 13
 *        events of the callgrind profile (cache and branch simulation),
 *        compressed names, relative positions, calls with their
 *        inclusive cost lines, jumps, a `totals:` line that adds up; a
 *        program of 20,000 functions in 400 files, each calling the
 *        same four others (a larger file is a longer run of the same
 *        program, as with a real profiler)
 *   gen_artifacts massif SNAPSHOTS   massif.out with that many snapshots,
 *        every tenth detailed (a tree of a few hundred nodes), one peak
 *   gen_artifacts strace MB      an `strace -f -tt -T` log of 16 threads:
 *        complete calls, unfinished/resumed pairs, errors, signals, exits
 *
 * Output on stdout, until about MB megabytes (callgrind, strace).  A third
 * argument seeds the sequence (another run of "the same" program). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

#define NEV 13
#define NFILES 400
#define NFNS 20000

static void
callgrind(long long limit)
{
    static unsigned char file_seen[NFILES], fn_seen[NFNS];
    uint64_t totals[NEV] = { 0 };
    long long written = 0;
    uint64_t addr = 0x400000;

    written += printf("# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 4242\ncmd:  demo-front\n"
                      "part: 1\n\ndesc: I1 cache: 32768 B, 64 B, 8-way associative\n"
                      "desc: D1 cache: 49152 B, 64 B, 12-way associative\n"
                      "desc: LL cache: 276824064 B, 64 B, 33-way associative\n\n"
                      "desc: Timerange: Basic block 0 - 999999999\ndesc: Trigger: Program termination\n\n"
                      "positions: instr line\n"
                      "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim\n\n");
    written += printf("ob=(1) /usr/local/bin/demo-front\n");
    while (written < limit) {
        uint32_t fn = rnd(NFNS), file = fn % NFILES, lines = 20 + rnd(60), line = 10 + rnd(2000);

        if (file_seen[file])
            written += printf("fl=(%u)\n", file + 1);
        else
            written += printf("fl=(%u) /src/module_%u/file_%u.c\n", file + 1, file % 17, file), file_seen[file] = 1;
        if (fn_seen[fn])
            written += printf("fn=(%u)\n", fn + 1);
        else
            written += printf("fn=(%u) bench_function_%u_of_module_%u\n", fn + 1, fn, file % 17), fn_seen[fn] = 1;
        addr = 0x400000 + (uint64_t)fn * 0x400;
        written += printf("0x%llx %u", (unsigned long long)addr, line);
        for (uint32_t k = 0; k < lines; k++) {
            uint64_t c[NEV] = { 0 };
            int last = 0;

            c[0] = 1 + rnd(4);
            if (rnd(3) == 0)
                c[1] = 1, last = 1;
            if (rnd(5) == 0)
                c[2] = 1, last = 2;
            if (rnd(50) == 0)
                c[4] = 1, last = 4;
            if (rnd(7) == 0)
                c[9] = 1, c[10] = rnd(4) == 0, last = 10;
            if (k > 0)
                written += printf("+%u %s", 1 + rnd(6), rnd(3) ? "*" : rnd(2) ? "+1" : "-2");
            for (int e = 0; e <= last; e++) {
                written += printf(" %llu", (unsigned long long)c[e]);
                totals[e] += c[e];
            }
            written += printf("\n");
            if (rnd(12) == 0) {
                /* a program's call graph: each function calls the same few others */
                uint32_t callee = (fn * 31 + 7 * rnd(4) + 1) % NFNS, cfile = callee % NFILES;

                /* the callee's file, when it is another one, as callgrind writes it */
                if (cfile != file) {
                    if (file_seen[cfile])
                        written += printf("cfi=(%u)\n", cfile + 1);
                    else
                        written += printf("cfi=(%u) /src/module_%u/file_%u.c\n", cfile + 1, cfile % 17, cfile),
                            file_seen[cfile] = 1;
                }
                if (!fn_seen[callee])
                    written += printf("cfn=(%u) bench_function_%u_of_module_%u\n", callee + 1, callee,
                                      (callee % NFILES) % 17),
                        fn_seen[callee] = 1;
                else
                    written += printf("cfn=(%u)\n", callee + 1);
                written += printf("calls=%u 0x%llx %u\n* * %u %u %u\n", 1 + rnd(100),
                                  (unsigned long long)(0x400000 + (uint64_t)callee * 0x400), 10, 1000 + rnd(100000),
                                  rnd(20000), rnd(9000));
            } else if (rnd(15) == 0) {
                written += printf("jcnd=%u/%u +%u *\n* *\n", rnd(50), 50 + rnd(50), rnd(40));
            }
        }
        written += printf("\n");
    }
    printf("totals:");
    for (int e = 0; e < NEV; e++)
        printf(" %llu", (unsigned long long)totals[e]);
    printf("\n");
}

/* One node of a massif tree: BYTES split among KIDS children, DEPTH levels. */
static void
massif_tree(int depth, uint64_t bytes, int indent, int top)
{
    int kids = depth > 0 ? (top ? 12 : 1 + rnd(3)) : 0;
    uint64_t left = bytes;

    printf("%*sn%d: %llu ", indent, "", kids, (unsigned long long)bytes);
    if (top)
        printf("(heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n");
    else
        printf("0x%X: bench_alloc_site_%u (alloc_%u.c:%u)\n", 0x400000 + rnd(1 << 20), rnd(500), rnd(40),
               1 + rnd(900));
    for (int i = 0; i < kids; i++) {
        uint64_t part = i + 1 == kids ? left : left / 2;
        massif_tree(depth - 1, part, indent + 1, 0);
        left -= part;
    }
}

static void
massif(long n)
{
    uint64_t heap = 0, peak_at = (uint64_t)n * 2 / 3;

    printf("desc: --massif-out-file=massif.out --time-unit=B --detailed-freq=10 --max-snapshots=%ld --threshold=0.5\n"
           "cmd: demo-front\ntime_unit: B\n",
           n);
    for (long i = 0; i < n; i++) {
        const char *tree = (uint64_t)i == peak_at ? "peak" : i % 10 == 0 ? "detailed" : "empty";

        heap = (uint64_t)i < peak_at ? heap + rnd(4096) : heap - (heap > 4096 ? rnd(4096) : 0);
        printf("#-----------\nsnapshot=%ld\n#-----------\ntime=%llu\nmem_heap_B=%llu\nmem_heap_extra_B=%llu\n"
               "mem_stacks_B=0\nheap_tree=%s\n",
               i, (unsigned long long)i * 4096, (unsigned long long)heap, (unsigned long long)heap / 16, tree);
        if (strcmp(tree, "empty") != 0)
            massif_tree(5, heap, 0, 1);
    }
}

/* One complete call of a busy network service, with its -T time. */
static long long
strace_call(int fd)
{
    unsigned r = rnd(9999);

    switch (rnd(8)) {
    case 0: return printf("read(%d, \"GET /item/%u HTTP/1.1\\r\\nHost: front\\r\\n\\r\\n\", 4096) = 42", fd, r);
    case 1: return printf("write(%d, \"HTTP/1.1 200 OK\\r\\nContent-Length: 512\\r\\n\\r\\n\"..., 560) = 560", fd);
    case 2:
        return printf("openat(AT_FDCWD, \"/var/cache/front/%u\", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or "
                      "directory)",
                      r);
    case 3: return printf("epoll_wait(4, [{events=EPOLLIN, data={u32=%d, u64=%d}}], 64, 1000) = 1", fd, fd);
    case 4: return printf("futex(0x7f00001234, FUTEX_WAKE_PRIVATE, 1) = %u", r % 2);
    case 5: return printf("close(%d) = 0", fd);
    case 6:
        return printf("accept4(3, {sa_family=AF_INET, sin_port=htons(%u), sin_addr=inet_addr(\"127.0.0.1\")}, [16], "
                      "SOCK_CLOEXEC) = %d",
                      30000 + r, fd);
    default: return printf("mmap(NULL, %u, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f12%08x", 4096 * (1 + r % 64), r);
    }
}

static void
strace(long long limit)
{
    long long written = 0;
    uint64_t t = (uint64_t)10 * 3600 * 1000000; /* 10:00:00, in µs */
    int pending[16] = { 0 };

    while (written < limit) {
        int th = (int)rnd(16), pid = 1000 + th;

        t += 1 + rnd(40);
        written += printf("%d  %02u:%02u:%02u.%06u ", pid, (unsigned)(t / 3600000000ULL % 24),
                          (unsigned)(t / 60000000 % 60), (unsigned)(t / 1000000 % 60), (unsigned)(t % 1000000));
        if (pending[th]) {
            written += printf("<... futex resumed>) = 0 <0.%06u>\n", rnd(900000));
            pending[th] = 0;
        } else if (rnd(40) == 0) {
            written += printf("futex(0x7f00001234, FUTEX_WAIT_PRIVATE, 2, NULL <unfinished ...>\n");
            pending[th] = 1;
        } else if (rnd(5000) == 0) {
            written += printf("--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=%u, si_uid=0} ---\n", rnd(9999));
        } else {
            written += strace_call(5 + (int)rnd(200));
            written += printf(" <0.%06u>\n", rnd(2000));
        }
    }
    for (int th = 0; th < 16; th++) {
        char ts[32];
        t += 1;
        snprintf(ts, sizeof ts, "%02u:%02u:%02u.%06u", (unsigned)(t / 3600000000ULL % 24), (unsigned)(t / 60000000 % 60),
                 (unsigned)(t / 1000000 % 60), (unsigned)(t % 1000000));
        if (pending[th])
            printf("%d  %s <... futex resumed>) = 0 <0.000001>\n", 1000 + th, ts);
        printf("%d  %s +++ exited with 0 +++\n", 1000 + th, ts);
    }
}

int
main(int argc, char **argv)
{
    long long n = argc > 2 ? atoll(argv[2]) : 0;

    if (argc == 4) {
        rng ^= (uint64_t)atoll(argv[3]) * 0x2545f4914f6cdd1dULL;
        argc = 3;
    }
    if (argc == 3 && n > 0 && strcmp(argv[1], "callgrind") == 0)
        callgrind(n << 20);
    else if (argc == 3 && n > 0 && strcmp(argv[1], "massif") == 0)
        massif((long)n);
    else if (argc == 3 && n > 0 && strcmp(argv[1], "strace") == 0)
        strace(n << 20);
    else {
        fprintf(stderr, "usage: gen_artifacts callgrind MB | massif SNAPSHOTS | strace MB\n");
        return 2;
    }
    return ferror(stdout) ? 1 : 0;
}
