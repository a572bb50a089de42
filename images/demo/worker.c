/* worker.c - the demo's back service, on port 9090.  The front sends it
 *
 *   "WORK <n> <seed>\n"  ->  "OK <digest>\n"   (n in 1..100000, else "ERR ...")
 *
 * and for each request it generates n records from the seed, sorts them,
 * run-length encodes the sorted bytes, keeps the result in a bounded store
 * and answers with a digest of it.  Each step is a named, never-inlined
 * function, so every profiler's view shows where time, heap and syscalls go:
 *   worker_generate_records  malloc + snprintf per record
 *   worker_sort_records      qsort (the worker's hot spot)
 *   worker_compress_rle      a byte loop
 *   worker_store_result      allocation kept in a ring (the oldest is freed)
 * Served by a pool of 8 threads: the front keeps one connection per thread
 * of its own 4, so there is always room.  Signals and the DEMO_* knobs: see
 * demo_common.h. */
#define _GNU_SOURCE /* accept4, ppoll: before any system header */
#include <stdint.h>

#include "demo_common.h"

#define WORKER_PORT 9090
#define WORKER_THREADS 8
#define WORKER_MAX_RECORDS 100000
#define WORKER_STORE_SLOTS 64
#define WORKER_STORE_MAX 4096 /* bytes kept per result */

#define WORKER_NAMED __attribute__((noinline, noclone)) /* one frame, one plain name */

typedef struct worker_record {
    uint32_t key;
    char name[12];
} worker_record;

static struct {
    char *data[WORKER_STORE_SLOTS];
    size_t next;
    pthread_mutex_t lock;
} worker_store = { .lock = PTHREAD_MUTEX_INITIALIZER };

static long worker_requests;
static pthread_mutex_t worker_count_lock = PTHREAD_MUTEX_INITIALIZER;

static int
worker_cmp_record(const void *a, const void *b)
{
    const worker_record *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return strcmp(x->name, y->name);
}

WORKER_NAMED static worker_record *
worker_generate_records(long n, uint32_t seed)
{
    worker_record *r = malloc((size_t)n * sizeof *r);

    for (long i = 0; r && i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        /* Few distinct keys, so runs survive the sort for the RLE to find. */
        r[i].key = (seed >> 16) & 0x3ff;
        snprintf(r[i].name, sizeof r[i].name, "r%08x", seed >> 4);
    }
    return r;
}

WORKER_NAMED static void
worker_sort_records(worker_record *r, long n)
{
    qsort(r, (size_t)n, sizeof *r, worker_cmp_record);
}

/* (count, byte) pairs; returns the bytes written, at most CAP. */
WORKER_NAMED static size_t
worker_compress_rle(const worker_record *r, long n, unsigned char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)r;
    size_t len = (size_t)n * sizeof *r, o = 0;

    for (size_t i = 0; i < len && o + 2 <= cap;) {
        size_t run = 1;

        while (i + run < len && p[i + run] == p[i] && run < 255)
            run++;
        out[o++] = (unsigned char)run;
        out[o++] = p[i];
        i += run;
    }
    return o;
}

/* Keep a copy of the result; the ring frees the oldest, so the heap grows
 * to a plateau and stays there. */
WORKER_NAMED static void
worker_store_result(const unsigned char *data, size_t len)
{
    char *copy, *old;

    if (len > WORKER_STORE_MAX)
        len = WORKER_STORE_MAX;
    copy = malloc(len + 1);
    if (copy == NULL)
        return;
    memcpy(copy, data, len);
    copy[len] = '\0';
    pthread_mutex_lock(&worker_store.lock);
    old = worker_store.data[worker_store.next % WORKER_STORE_SLOTS];
    worker_store.data[worker_store.next % WORKER_STORE_SLOTS] = copy;
    worker_store.next++;
    pthread_mutex_unlock(&worker_store.lock);
    free(old);
}

/* One request: returns the reply's digest, or -1 when out of memory. */
static int
worker_handle(long n, uint32_t seed, uint32_t *digest)
{
    size_t cap = (size_t)n * sizeof(worker_record) * 2, rl;
    worker_record *r = worker_generate_records(n, seed);
    unsigned char *rle;
    uint32_t h = 2166136261u;

    if (r == NULL)
        return -1;
    worker_sort_records(r, n);
    rle = malloc(cap);
    if (rle == NULL) {
        free(r);
        return -1;
    }
    rl = worker_compress_rle(r, n, rle, cap);
    for (size_t i = 0; i < rl; i++)
        h = (h ^ rle[i]) * 16777619u;
    worker_store_result(rle, rl);
    free(rle);
    free(r);
    *digest = h;
    return 0;
}

static void
worker_serve_connection(int fd, int slot)
{
    demo_conn c;
    char line[DEMO_LINE_MAX], reply[64];

    (void)slot;
    demo_conn_init(&c, fd);
    for (;;) {
        long n = 0;
        unsigned long seed = 1;
        uint32_t digest = 0;
        char extra;
        int r = demo_read_line(&c, line, sizeof line);

        if (r == -1)
            break;
        if (r == -2 || sscanf(line, "WORK %ld %lu %c", &n, &seed, &extra) != 2 || n <= 0 ||
            n > WORKER_MAX_RECORDS) {
            if (demo_write_all(fd, "ERR bad request\n", 16) < 0)
                break;
            continue;
        }
        demo_count_request("worker", &worker_requests, &worker_count_lock);
        if (worker_handle(n, (uint32_t)seed, &digest) < 0)
            snprintf(reply, sizeof reply, "ERR out of memory\n");
        else
            snprintf(reply, sizeof reply, "OK %08x\n", (unsigned)digest);
        if (demo_write_all(fd, reply, strlen(reply)) < 0)
            break;
    }
}

int
main(void)
{
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    rc = demo_serve("worker", WORKER_PORT, WORKER_THREADS, worker_serve_connection);
    if (rc != 0)
        return rc;
    printf("worker: shutting down after %ld requests\n", worker_requests);
    for (size_t i = 0; i < WORKER_STORE_SLOTS; i++)
        free(worker_store.data[i]);
    return 0;
}
