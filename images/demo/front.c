/* front.c - the demo's front service, on port 8080.  A client sends lines
 * "REQ <size>"; for each, the front parses it, checksums a payload (the hot
 * CPU function), asks the worker over the project network, builds a reply
 * in heap buffers kept in a small cache (so massif shows the heap grow and
 * settle), and answers "OK <size> <checksum> <worker digest>".
 * Connections are served by a fixed pool of threads, so a sampler sees
 * several threads. */
#define _GNU_SOURCE /* accept4, pthread_timedjoin_np: before any system header */
#include <pthread.h>
#include <stdint.h>

#include "demo_common.h"

#define POOL 3
#define QUEUE 64
#define CACHE 32

static struct {
    int fds[QUEUE];
    int head, tail, count;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} queue = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static struct {
    char *buf[CACHE];
    size_t next;
    pthread_mutex_t lock;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static long requests;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static long
front_parse_request(const char *line)
{
    char word[16];
    long size = 0;

    if (sscanf(line, "%15s %ld", word, &size) != 2 || strcmp(word, "REQ") != 0)
        return -1;
    return size < 1 ? 1 : size > 4096 ? 4096 : size;
}

/* The hot function: a few hundred thousand multiply-xor rounds. */
__attribute__((noinline)) static uint64_t
front_checksum_payload(long size)
{
    uint64_t h = 1469598103934665603ULL;

    for (long round = 0; round < 64; round++)
        for (long i = 0; i < size * 4; i++) {
            h ^= (uint64_t)(i * 31 + round);
            h *= 1099511628211ULL;
            h ^= h >> 29;
        }
    return h;
}

__attribute__((noinline)) static int
front_call_worker(int *wfd, long size, uint64_t seed, char *digest, size_t len)
{
    char line[128];

    for (int attempt = 0; attempt < 2; attempt++) {
        if (*wfd < 0) {
            const char *addr = getenv("WORKER_ADDR");
            char host[128] = "worker", port[16] = "9090";
            struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;

            if (addr && sscanf(addr, "%127[^:]:%15s", host, port) < 1)
                return -1;
            if (getaddrinfo(host, port, &hints, &res) != 0)
                return -1;
            *wfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (*wfd >= 0 && connect(*wfd, res->ai_addr, res->ai_addrlen) < 0) {
                close(*wfd);
                *wfd = -1;
            }
            freeaddrinfo(res);
            if (*wfd < 0)
                return -1;
        }
        snprintf(line, sizeof line, "WORK %ld %lu\n", size * 8, (unsigned long)(seed & 0xffffffff));
        if (demo_write_all(*wfd, line, strlen(line)) == 0 && demo_read_line(*wfd, line, sizeof line) > 0) {
            snprintf(digest, len, "%s", strncmp(line, "OK ", 3) == 0 ? line + 3 : "error");
            return 0;
        }
        close(*wfd); /* the worker restarted: reconnect once */
        *wfd = -1;
    }
    return -1;
}

__attribute__((noinline)) static char *
front_build_response(long size, uint64_t sum, const char *digest)
{
    size_t cap = 64, len;
    char *out = malloc(cap), *old;

    if (out == NULL)
        return NULL;
    len = (size_t)snprintf(out, cap, "OK %ld %016llx %s\n", size, (unsigned long long)sum, digest);
    /* Grow a second buffer the way a templating layer would, and keep it
     * in the cache: the heap grows, then old entries are freed. */
    {
        size_t bcap = 16, blen = 0;
        char *body = malloc(bcap);

        for (long i = 0; body && i < size; i++) {
            if (blen + 2 > bcap) {
                char *nb = realloc(body, bcap * 2);
                if (nb == NULL)
                    break;
                body = nb;
                bcap *= 2;
            }
            body[blen++] = (char)('a' + i % 26);
        }
        if (body)
            body[blen] = '\0';
        pthread_mutex_lock(&cache.lock);
        old = cache.buf[cache.next % CACHE];
        cache.buf[cache.next % CACHE] = body;
        cache.next++;
        pthread_mutex_unlock(&cache.lock);
        free(old);
    }
    (void)len;
    return out;
}

static void
front_serve_connection(int fd, int *wfd)
{
    char line[256];

    while (demo_read_line(fd, line, sizeof line) >= 0) {
        long size = front_parse_request(line);
        uint64_t sum;
        char digest[64] = "", *reply;

        if (size < 0) {
            demo_write_all(fd, "ERR bad request\n", 16);
            continue;
        }
        demo_count_request("front", &requests, &count_lock);
        sum = front_checksum_payload(size);
        if (front_call_worker(wfd, size, sum, digest, sizeof digest) < 0)
            snprintf(digest, sizeof digest, "worker-unreachable");
        reply = front_build_response(size, sum, digest);
        if (reply == NULL || demo_write_all(fd, reply, strlen(reply)) < 0) {
            free(reply);
            break;
        }
        free(reply);
    }
    close(fd);
}

static void *
front_pool_thread(void *arg)
{
    int wfd = -1;

    (void)arg;
    for (;;) {
        int fd;

        pthread_mutex_lock(&queue.lock);
        while (queue.count == 0 && !demo_stop)
            pthread_cond_wait(&queue.cond, &queue.lock);
        if (queue.count == 0) {
            pthread_mutex_unlock(&queue.lock);
            break;
        }
        fd = queue.fds[queue.head];
        queue.head = (queue.head + 1) % QUEUE;
        queue.count--;
        pthread_mutex_unlock(&queue.lock);
        front_serve_connection(fd, &wfd);
    }
    if (wfd >= 0)
        close(wfd);
    return NULL;
}

int
main(void)
{
    pthread_t pool[POOL];
    int lfd;

    setvbuf(stdout, NULL, _IOLBF, 0);
    demo_install_signals("front");
    lfd = demo_listen(8080);
    if (lfd < 0) {
        perror("front: listen :8080");
        return 1;
    }
    for (int i = 0; i < POOL; i++)
        pthread_create(&pool[i], NULL, front_pool_thread, NULL);
    printf("front: listening on :8080 (worker at %s)\n", getenv("WORKER_ADDR") ? getenv("WORKER_ADDR") : "worker:9090");
    while (!demo_stop) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0)
            continue;
        pthread_mutex_lock(&queue.lock);
        if (queue.count == QUEUE) {
            pthread_mutex_unlock(&queue.lock);
            close(fd);
            continue;
        }
        queue.fds[queue.tail] = fd;
        queue.tail = (queue.tail + 1) % QUEUE;
        queue.count++;
        pthread_cond_signal(&queue.cond);
        pthread_mutex_unlock(&queue.lock);
    }
    /* Wake the pool; connections in flight finish when their clients go. */
    pthread_mutex_lock(&queue.lock);
    pthread_cond_broadcast(&queue.cond);
    pthread_mutex_unlock(&queue.lock);
    close(lfd);
    for (int i = 0; i < POOL; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 2;
        if (pthread_timedjoin_np(pool[i], NULL, &ts) != 0)
            pthread_detach(pool[i]);
    }
    printf("front: shutting down after %ld requests\n", requests);
    for (size_t i = 0; i < CACHE; i++)
        free(cache.buf[i]);
    return 0;
}
