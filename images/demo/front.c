/* front.c - the demo's front service, on port 8080, the one the harness
 * profiles by default.  Two protocols on the same port:
 *
 *   line:      "REQ <n>\n"                -> "OK <n> <sum> <worker> <len> <body>\n"
 *   HTTP/1.0:  "GET /work?n=<n> HTTP/1.0" -> 200, the same line as the body
 *
 * (n is clamped to 1..4096; "ERR ..." or a 4xx answers a bad request.)
 * Each request goes through distinct, named, never-inlined steps, so that
 * every profiler has something to show:
 *   front_parse_request     string work (tokens, the query string)
 *   front_checksum_payload  the hot function: ~1-2 ms of hashing, most CPU
 *   front_call_worker       syscalls: connect/send/recv to the worker
 *   front_build_response    heap: realloc-grown buffers, bodies kept in a
 *                           small LRU cache (front_render_body), so massif
 *                           sees the heap grow, then old entries freed
 * Connections are served by a pool of 4 threads (demo_common.h), so a
 * sampler sees several threads.  SIGTERM/SIGINT stop it cleanly; see
 * demo_common.h for DEMO_IGNORE_SIGTERM and DEMO_CRASH_AFTER. */
#define _GNU_SOURCE /* accept4, ppoll: before any system header */
#include <stdint.h>

#include "demo_common.h"

#define FRONT_PORT 8080
#define FRONT_THREADS 4
#define FRONT_MAX_N 4096
#define FRONT_CACHE 32      /* rendered bodies kept; the LRU one is freed */
#define FRONT_MAX_HEADERS 64 /* an HTTP client sending more is cut off */

/* noclone too: no ".constprop.0"/".isra.0" copies, one plain name a frame. */
#define FRONT_NAMED __attribute__((noinline, noclone))

typedef struct front_request {
    int http;   /* 1: answer in HTTP/1.0 and close */
    int status; /* 200, 400, 404 */
    long n;
} front_request;

typedef struct front_cache_entry {
    long n;            /* key; 0 = empty */
    unsigned long used; /* LRU stamp */
    char *body;
    size_t len;
    uint32_t digest;
} front_cache_entry;

static struct {
    front_cache_entry e[FRONT_CACHE];
    unsigned long clock;
    pthread_mutex_t lock;
} front_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* One persistent worker connection per pool thread: indexed by slot, so
 * no lock is needed. */
static struct {
    int open;
    demo_conn c;
} front_worker[FRONT_THREADS];

static const char *front_worker_addr = "worker:9090";
static long front_requests;
static pthread_mutex_t front_count_lock = PTHREAD_MUTEX_INITIALIZER;

/* Parse "n=<digits>" out of a query string "a=1&n=42&b". */
static long
front_query_n(const char *q)
{
    while (q && *q) {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);

        if (len > 2 && q[0] == 'n' && q[1] == '=') {
            char num[16];
            char *end;
            long v;

            if (len - 2 >= sizeof num)
                return -1;
            memcpy(num, q + 2, len - 2);
            num[len - 2] = '\0';
            v = strtol(num, &end, 10);
            return *end == '\0' ? v : -1;
        }
        q = amp ? amp + 1 : NULL;
    }
    return -1;
}

FRONT_NAMED static int
front_parse_request(const char *line, front_request *req)
{
    char method[8], target[256], version[16];
    int fields;

    memset(req, 0, sizeof *req);
    req->status = 400;
    if (strncmp(line, "REQ ", 4) == 0) {
        char *end;

        req->n = strtol(line + 4, &end, 10);
        if (end == line + 4 || *end != '\0')
            return -1;
    } else {
        fields = sscanf(line, "%7s %255s %15s", method, target, version);
        if (fields != 3 || strcmp(method, "GET") != 0 || strncmp(version, "HTTP/1.", 7) != 0)
            return -1;
        req->http = 1;
        {
            char *query = strchr(target, '?');

            if (query)
                *query++ = '\0';
            if (strcmp(target, "/work") != 0) {
                req->status = 404;
                return -1;
            }
            req->n = front_query_n(query);
            if (req->n < 0)
                return -1;
        }
    }
    req->n = req->n < 1 ? 1 : req->n > FRONT_MAX_N ? FRONT_MAX_N : req->n;
    req->status = 200;
    return 0;
}

/* The hot function, on purpose: 128 passes of FNV-1a over a generated
 * payload of 16*n bytes.  Each step depends on the last (a multiply
 * chain), so the compiler cannot vectorise it away. */
FRONT_NAMED static uint64_t
front_checksum_payload(long n)
{
    uint64_t h = 14695981039346656037ULL;
    size_t len = (size_t)n * 16;

    for (int pass = 0; pass < 128; pass++) {
        for (size_t i = 0; i < len; i++) {
            unsigned char byte = (unsigned char)((i * 2654435761u + (size_t)pass) >> 13);

            h ^= byte;
            h *= 1099511628211ULL;
        }
        h ^= h >> 31;
    }
    return h;
}

/* Connect this slot's worker connection (bounded by the socket timeouts). */
static int
front_connect_worker(int slot)
{
    char host[128] = "worker", port[16] = "9090";
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
    int fd = -1;

    if (sscanf(front_worker_addr, "%127[^:]:%15s", host, port) < 1)
        return -1;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        demo_set_timeouts(fd, DEMO_IO_TIMEOUT_S);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -1;
    demo_conn_init(&front_worker[slot].c, fd);
    front_worker[slot].open = 1;
    return 0;
}

static void
front_close_worker(int slot)
{
    if (front_worker[slot].open)
        close(front_worker[slot].c.fd);
    front_worker[slot].open = 0;
}

/* Ask the worker to sort 8*n records seeded by SEED; its digest goes in
 * DIGEST.  The connection is kept; a worker that restarted (EOF) gets
 * one reconnect. */
FRONT_NAMED static int
front_call_worker(int slot, long n, uint64_t seed, char *digest, size_t len)
{
    char line[128];

    for (int attempt = 0; attempt < 2; attempt++) {
        if (!front_worker[slot].open && front_connect_worker(slot) < 0)
            return -1;
        snprintf(line, sizeof line, "WORK %ld %lu\n", n * 8, (unsigned long)(seed & 0xffffffffu));
        if (demo_write_all(front_worker[slot].c.fd, line, strlen(line)) == 0 &&
            demo_read_line(&front_worker[slot].c, line, sizeof line) >= 0) {
            if (strncmp(line, "OK ", 3) != 0)
                return -1;
            {
                size_t k = strlen(line + 3);

                if (k >= len)
                    k = len - 1; /* a worker's digest longer than ours is cut, on purpose */
                memcpy(digest, line + 3, k);
                digest[k] = '\0';
            }
            return 0;
        }
        front_close_worker(slot);
    }
    return -1;
}

/* Append to a heap buffer, doubling it as needed (what a templating layer
 * does); -1 when out of memory, BUF left as it was. */
static int
front_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t ncap = *cap ? *cap : 64;
        char *nb;

        while (*len + n + 1 > ncap)
            ncap *= 2;
        nb = realloc(*buf, ncap);
        if (nb == NULL)
            return -1;
        *buf = nb;
        *cap = ncap;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return 0;
}

/* Render the body for N: n lines, grown by realloc; about 24 bytes a line,
 * so 4096 gives ~100 KB and a full cache is a few MB of heap. */
FRONT_NAMED static char *
front_render_body(long n, size_t *out_len)
{
    char *body = NULL, piece[48];
    size_t len = 0, cap = 0;

    for (long i = 0; i < n; i++) {
        int k = snprintf(piece, sizeof piece, "row %05ld value %08lx\n", i, (unsigned long)(i * 2654435761u));

        if (front_append(&body, &len, &cap, piece, (size_t)k) < 0) {
            free(body);
            return NULL;
        }
    }
    *out_len = len;
    return body;
}

static uint32_t
front_digest32(const char *p, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

/* The body of N from the cache, rendering it on a miss and evicting the
 * least recently used entry.  Rendering happens outside the lock. */
static int
front_cached_body(long n, size_t *len, uint32_t *digest)
{
    front_cache_entry fresh = { .n = n };
    int victim = 0;
    char *old = NULL;

    pthread_mutex_lock(&front_cache.lock);
    for (int i = 0; i < FRONT_CACHE; i++)
        if (front_cache.e[i].n == n) {
            front_cache.e[i].used = ++front_cache.clock;
            *len = front_cache.e[i].len;
            *digest = front_cache.e[i].digest;
            pthread_mutex_unlock(&front_cache.lock);
            return 0;
        }
    pthread_mutex_unlock(&front_cache.lock);

    fresh.body = front_render_body(n, &fresh.len);
    if (fresh.body == NULL)
        return -1;
    fresh.digest = front_digest32(fresh.body, fresh.len);
    *len = fresh.len;
    *digest = fresh.digest;

    pthread_mutex_lock(&front_cache.lock);
    for (int i = 1; i < FRONT_CACHE; i++)
        if (front_cache.e[i].used < front_cache.e[victim].used)
            victim = i; /* empty entries have used == 0: they go first */
    old = front_cache.e[victim].body;
    fresh.used = ++front_cache.clock;
    front_cache.e[victim] = fresh;
    pthread_mutex_unlock(&front_cache.lock);
    free(old); /* the heap shrinks here, as well as growing above */
    return 0;
}

/* Build the whole reply in a realloc-grown buffer; the caller frees it. */
FRONT_NAMED static char *
front_build_response(const front_request *req, uint64_t sum, const char *worker, size_t *out_len)
{
    char line[256], head[160];
    char *out = NULL;
    size_t len = 0, cap = 0, blen = 0;
    uint32_t bdigest = 0;
    int k;

    if (front_cached_body(req->n, &blen, &bdigest) < 0)
        return NULL;
    k = snprintf(line, sizeof line, "OK %ld %016llx %s %zu %08x\n", req->n, (unsigned long long)sum, worker, blen,
                 (unsigned)bdigest);
    if (req->http) {
        int h = snprintf(head, sizeof head,
                         "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", k);
        if (front_append(&out, &len, &cap, head, (size_t)h) < 0)
            return NULL;
    }
    if (front_append(&out, &len, &cap, line, (size_t)k) < 0) {
        free(out);
        return NULL;
    }
    *out_len = len;
    return out;
}

static int
front_send_error(int fd, const front_request *req)
{
    char buf[256];
    const char *why = req->status == 404 ? "not found (try GET /work?n=100)" : "bad request";
    int k;

    if (!req->http)
        k = snprintf(buf, sizeof buf, "ERR %s\n", why);
    else
        k = snprintf(buf, sizeof buf,
                     "HTTP/1.0 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
                     req->status, req->status == 404 ? "Not Found" : "Bad Request", strlen(why) + 1, why);
    return demo_write_all(fd, buf, (size_t)k);
}

/* Skip an HTTP request's headers, up to the blank line. */
static int
front_skip_headers(demo_conn *c)
{
    char line[DEMO_LINE_MAX];

    for (int i = 0; i < FRONT_MAX_HEADERS; i++) {
        int r = demo_read_line(c, line, sizeof line);

        if (r == 0)
            return 0;
        if (r == -1)
            return -1;
    }
    return -1;
}

static void
front_serve_connection(int fd, int slot)
{
    demo_conn c;
    char line[DEMO_LINE_MAX];

    demo_conn_init(&c, fd);
    for (;;) {
        front_request req;
        char worker[64], *reply;
        size_t rlen = 0;
        uint64_t sum;
        int r = demo_read_line(&c, line, sizeof line);

        if (r == -1)
            break;
        if (r == -2) { /* too long to parse: say so in the protocol it seems to speak */
            memset(&req, 0, sizeof req);
            req.status = 400;
            req.http = strncmp(line, "GET ", 4) == 0;
        }
        if (r == -2 || front_parse_request(line, &req) < 0) {
            if (req.http)
                front_skip_headers(&c);
            if (front_send_error(fd, &req) < 0 || req.http)
                break;
            continue;
        }
        if (req.http && front_skip_headers(&c) < 0)
            break;
        demo_count_request("front", &front_requests, &front_count_lock);
        sum = front_checksum_payload(req.n);
        if (front_call_worker(slot, req.n, sum, worker, sizeof worker) < 0)
            snprintf(worker, sizeof worker, "worker-unreachable");
        reply = front_build_response(&req, sum, worker, &rlen);
        if (reply == NULL || demo_write_all(fd, reply, rlen) < 0) {
            free(reply);
            break;
        }
        free(reply);
        if (req.http)
            break; /* HTTP/1.0: one request per connection */
    }
}

int
main(void)
{
    const char *addr = getenv("WORKER_ADDR");
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (addr && *addr)
        front_worker_addr = addr;
    printf("front: worker at %s\n", front_worker_addr);
    rc = demo_serve("front", FRONT_PORT, FRONT_THREADS, front_serve_connection);
    if (rc != 0)
        return rc;
    printf("front: shutting down after %ld requests\n", front_requests);
    for (int i = 0; i < FRONT_THREADS; i++)
        front_close_worker(i);
    for (int i = 0; i < FRONT_CACHE; i++)
        free(front_cache.e[i].body);
    return 0;
}
