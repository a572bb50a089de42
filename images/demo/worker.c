/* worker.c - the demo's back service.  The front sends it a line
 * "WORK <n> <seed>"; it generates n records, sorts them, run-length
 * encodes a digest, keeps the result in a bounded store, and answers
 * "OK <digest>".  Each step is a named function so every profiler's view
 * shows where the time, the heap and the syscalls go. */
#define _GNU_SOURCE /* accept4, pthread_timedjoin_np: before any system header */
#include <pthread.h>
#include <stdint.h>

#include "demo_common.h"

#define STORE_SLOTS 64

typedef struct record {
    uint32_t key;
    char name[12];
} record;

static struct {
    char *data[STORE_SLOTS];
    size_t next;
    pthread_mutex_t lock;
} store = { .lock = PTHREAD_MUTEX_INITIALIZER };

static long requests;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static int
cmp_record(const void *a, const void *b)
{
    const record *x = a, *y = b;

    return x->key < y->key ? -1 : x->key > y->key;
}

__attribute__((noinline)) static record *
worker_generate_records(long n, uint32_t seed)
{
    record *r = malloc((size_t)n * sizeof *r);

    for (long i = 0; r && i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        r[i].key = seed;
        snprintf(r[i].name, sizeof r[i].name, "r%08x", seed >> 4);
    }
    return r;
}

__attribute__((noinline)) static void
worker_sort_records(record *r, long n)
{
    qsort(r, (size_t)n, sizeof *r, cmp_record);
}

__attribute__((noinline)) static size_t
worker_compress_rle(const record *r, long n, unsigned char *out, size_t cap)
{
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)r;
    size_t len = (size_t)n * sizeof *r;

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

__attribute__((noinline)) static void
worker_store_result(const unsigned char *data, size_t len)
{
    char *copy = malloc(len + 1);

    if (copy == NULL)
        return;
    memcpy(copy, data, len);
    copy[len] = '\0';
    pthread_mutex_lock(&store.lock);
    free(store.data[store.next % STORE_SLOTS]);
    store.data[store.next % STORE_SLOTS] = copy;
    store.next++;
    pthread_mutex_unlock(&store.lock);
}

static void *
worker_serve_connection(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char line[256], reply[128];

    while (demo_read_line(fd, line, sizeof line) >= 0) {
        long n = 0;
        unsigned long seed = 1;
        record *r;
        unsigned char *rle;
        size_t rl;
        uint32_t digest = 2166136261u;

        if (sscanf(line, "WORK %ld %lu", &n, &seed) != 2 || n <= 0 || n > 100000) {
            demo_write_all(fd, "ERR bad request\n", 16);
            continue;
        }
        demo_count_request("worker", &requests, &count_lock);
        r = worker_generate_records(n, (uint32_t)seed);
        if (r == NULL)
            break;
        worker_sort_records(r, n);
        rle = malloc((size_t)n * sizeof *r * 2);
        rl = rle ? worker_compress_rle(r, n, rle, (size_t)n * sizeof *r * 2) : 0;
        for (size_t i = 0; i < rl; i++)
            digest = (digest ^ rle[i]) * 16777619u;
        worker_store_result(rle, rl < 4096 ? rl : 4096);
        free(rle);
        free(r);
        snprintf(reply, sizeof reply, "OK %08x\n", digest);
        if (demo_write_all(fd, reply, strlen(reply)) < 0)
            break;
    }
    close(fd);
    return NULL;
}

int
main(void)
{
    int lfd;

    setvbuf(stdout, NULL, _IOLBF, 0);
    demo_install_signals("worker");
    lfd = demo_listen(9090);
    if (lfd < 0) {
        perror("worker: listen :9090");
        return 1;
    }
    printf("worker: listening on :9090\n");
    while (!demo_stop) {
        pthread_t t;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0)
            continue; /* EINTR on SIGTERM: the loop checks the flag */
        if (pthread_create(&t, NULL, worker_serve_connection, (void *)(intptr_t)fd) != 0)
            close(fd);
        else
            pthread_detach(t);
    }
    printf("worker: shutting down after %ld requests\n", requests);
    close(lfd);
    pthread_mutex_lock(&store.lock);
    for (size_t i = 0; i < STORE_SLOTS; i++)
        free(store.data[i]);
    pthread_mutex_unlock(&store.lock);
    return 0;
}
