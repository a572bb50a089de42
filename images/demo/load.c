/* load.c - the demo's load driver, built and run on the host (make
 * build/demo-load):
 *
 *   demo-load [-c CONCURRENCY] [-n REQUESTS] [-d SECONDS] [-w WAIT] [HOST:PORT]
 *
 * CONCURRENCY connections (default 2) send REQUESTS line-protocol requests
 * in all ("REQ <n>", see front.c) to the front service, by default at
 * 127.0.0.1:18080 - loopback only unless told otherwise, HOST must be an
 * IPv4 address.  Bounded in count (-n, default 100) and time (-d, default
 * 120 s); -w waits up to WAIT seconds for one full request to succeed
 * first (a service under valgrind starts slowly).  A reply counts as good
 * when it is "OK <the n asked for> ..." and the worker was reachable.
 * Prints requests done, errors, throughput, median and p99 latency; exits
 * 1 when no request succeeded, 2 on bad arguments. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in target;
static long total = 100, conc = 2, deadline_ms;
static double *lat;
static long n_lat, n_err;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static double
load_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static int
load_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = { 30, 0 }; /* a wedged service fails requests, never hangs us */

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&target, sizeof target) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One request on FD; 0 when the reply is good.  Replies are one short
 * line, and one request is in flight per connection, so reading byte by
 * byte never eats into the next reply. */
static int
load_request(int fd, long size)
{
    char line[256];
    size_t n = 0;
    long got = -1;
    int len = snprintf(line, sizeof line, "REQ %ld\n", size);

    if (send(fd, line, (size_t)len, MSG_NOSIGNAL) != len)
        return -1;
    while (n + 1 < sizeof line) {
        ssize_t r = read(fd, line + n, 1);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    if (sscanf(line, "OK %ld ", &got) != 1 || got != size || strstr(line, "worker-unreachable") != NULL)
        return -1;
    return 0;
}

static void *
load_thread(void *arg)
{
    long id = (long)arg;
    long mine = total / conc + (id < total % conc); /* exactly TOTAL in all */
    int fd = load_connect();

    for (long i = 0; i < mine && load_now_ms() < deadline_ms; i++) {
        double t0 = load_now_ms();
        int ok = fd >= 0 && load_request(fd, 256 + (id * 131 + i * 17) % 1024) == 0;

        pthread_mutex_lock(&load_lock);
        if (ok)
            lat[n_lat++] = load_now_ms() - t0;
        else
            n_err++;
        pthread_mutex_unlock(&load_lock);
        if (!ok) {
            if (fd >= 0)
                close(fd);
            fd = load_connect();
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int
load_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
    long secs = 120, wait_s = 0;
    const char *addr = "127.0.0.1:18080";
    char host[64] = "127.0.0.1";
    int port = 18080, c;
    pthread_t *th;
    double t0, elapsed;

    while ((c = getopt(argc, argv, "c:n:d:w:h")) != -1) {
        switch (c) {
        case 'c': conc = strtol(optarg, NULL, 10); break;
        case 'n': total = strtol(optarg, NULL, 10); break;
        case 'd': secs = strtol(optarg, NULL, 10); break;
        case 'w': wait_s = strtol(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: demo-load [-c CONCURRENCY] [-n REQUESTS] [-d SECONDS] [-w WAIT] [HOST:PORT]\n");
            return 2;
        }
    }
    if (optind < argc)
        addr = argv[optind];
    if (sscanf(addr, "%63[^:]:%d", host, &port) != 2 || conc < 1 || conc > 64 || total < 1 ||
        total > 1000000 || secs < 1 || port < 1 || port > 65535) {
        fprintf(stderr, "demo-load: bad arguments\n");
        return 2;
    }
    memset(&target, 0, sizeof target);
    target.sin_family = AF_INET;
    target.sin_port = htons((unsigned short)port);
    if (inet_pton(AF_INET, host, &target.sin_addr) != 1) {
        fprintf(stderr, "demo-load: %s is not an IPv4 address\n", host);
        return 2;
    }
    /* Wait until one full request succeeds: the service and its worker are up. */
    for (double until = load_now_ms() + (double)wait_s * 1000.0;;) {
        int fd = load_connect();
        int ok = fd >= 0 && load_request(fd, 16) == 0;

        if (fd >= 0)
            close(fd);
        if (ok)
            break;
        if (load_now_ms() >= until) {
            if (wait_s > 0)
                fprintf(stderr, "demo-load: %s did not answer within %ld s\n", addr, wait_s);
            break;
        }
        usleep(200000);
    }
    if (conc > total)
        conc = total;
    lat = calloc((size_t)total, sizeof *lat);
    th = calloc((size_t)conc, sizeof *th);
    if (lat == NULL || th == NULL)
        return 1;
    t0 = load_now_ms();
    deadline_ms = (long)(t0 + (double)secs * 1000.0);
    for (long i = 0; i < conc; i++)
        pthread_create(&th[i], NULL, load_thread, (void *)i);
    for (long i = 0; i < conc; i++)
        pthread_join(th[i], NULL);
    qsort(lat, (size_t)n_lat, sizeof *lat, load_cmp_double);
    elapsed = (load_now_ms() - t0) / 1000.0;
    printf("demo-load: %ld ok, %ld errors in %.1f s (%.1f req/s)", n_lat, n_err, elapsed,
           elapsed > 0 ? (double)n_lat / elapsed : 0.0);
    if (n_lat > 0)
        printf("; latency median %.2f ms, p99 %.2f ms", lat[n_lat / 2], lat[(n_lat * 99) / 100]);
    printf("\n");
    return n_lat > 0 ? 0 : 1;
}
