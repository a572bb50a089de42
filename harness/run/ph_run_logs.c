/* ph_run_logs.c - the `logs` command: what a service's workloads print.
 *
 * One workload: its output straight to stdout as the backend gives it
 * (followed with -f), as `docker logs` prints it.  Several (replicas, a
 * stack's tasks): each is asked of the backend by its own id (the backend
 * reads it where the workload runs: the Swarm backend on the task's
 * node), all at once, each on a thread with a handle of its own (a
 * handle is one thread's), into a pipe; this thread copies the pipes'
 * lines to stdout, each led by which workload it is ("task 1 on n1 | ",
 * as `docker service logs` leads them; "proj-front-2 | " on one Engine,
 * as `docker compose logs` does), so `logs -f` follows every one
 * and no line is cut by another's.  A line longer than LINE_MAX_BYTES is
 * printed in pieces, each led so.  One that cannot be read (its node
 * down) is said with why and the others are shown; the command then
 * fails.  With none left, the newest run's service.log
 * (ph_run_servicelog.c), each workload's in a run of several.
 *
 * What a workload printed is its own: copied as it is, as `docker logs`
 * copies it; the lead is ours, the node's name in it escaped.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_util.h"

#define LINE_MAX_BYTES 16384

/* Who W is among a service's several workloads: "task 1 on n1" where the
 * backend names a node, else its name ("proj-front-2", a tools container
 * attached), else its id; its state when it is not running.  The node,
 * the name and the state are the backend's answer: escaped. */
static void
workload_words(const ph_workload *w, char *out, size_t size)
{
    char node[128], state[32];
    size_t n;

    if (w->node != NULL && w->slot > 0)
        snprintf(out, size, "task %d on %s", w->slot, ph_escape(node, sizeof node, w->node));
    else if (w->name != NULL && w->name[0] != '\0')
        ph_escape(out, size, w->name);
    else
        snprintf(out, size, "%.12s", w->id);
    n = strlen(out);
    if (!ph_workload_running(w) && w->state_text[0] != '\0' && n < size)
        snprintf(out + n, size - n, " (%s)", ph_escape(state, sizeof state, w->state_text));
}

/* One workload being read: its handle, the pipe its output comes
 * through, the line it is in. */
typedef struct log_src {
    const ph_workload *w;
    ph_backend *nb;     /* its own handle (ph_backend_open) */
    int follow;
    int rfd, wfd;       /* the pipe: ours to read, the reader's to write */
    pthread_t tid;
    int started;
    int rc;             /* the backend's logs: 0, or -1 and err */
    ph_error_t err;
    char who[200];      /* "task 1 on n1" */
    char lead[224];     /* "task 1 on n1 | " */
    size_t len;
    char line[LINE_MAX_BYTES];
} log_src;

static void *
reader_main(void *arg)
{
    log_src *s = arg;

    s->rc = s->nb->ops->logs(s->nb, s->w->id, s->follow, -1, s->wfd, &s->err);
    close(s->wfd); /* the end of its output */
    s->wfd = -1;
    return NULL;
}

/* N bytes of S's output at P (a line, or a piece of one) to stdout, led,
 * with a newline when it has none: 0, or -1 (stdout is gone). */
static int
emit(const log_src *s, const char *p, size_t n)
{
    char out[sizeof s->lead + LINE_MAX_BYTES + 1];
    size_t l = strlen(s->lead);

    if (n == 0)
        return 0;
    memcpy(out, s->lead, l);
    memcpy(out + l, p, n);
    l += n;
    if (p[n - 1] != '\n')
        out[l++] = '\n';
    return ph_fs_write_all(1, out, l);
}

/* What came through S's pipe, each whole line emitted (a line that fills
 * the buffer emitted as a piece): 1 more to come, 0 at its end, -1 stdout
 * is gone. */
static int
take(log_src *s)
{
    ssize_t n = read(s->rfd, s->line + s->len, sizeof s->line - s->len);
    size_t start = 0;
    char *nl;

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    if (n <= 0) { /* its end (or a pipe that broke): the rest of its last line */
        n = emit(s, s->line, s->len);
        s->len = 0;
        return n < 0 ? -1 : 0;
    }
    s->len += (size_t)n;
    while ((nl = memchr(s->line + start, '\n', s->len - start)) != NULL) {
        size_t end = (size_t)(nl - s->line) + 1;

        if (emit(s, s->line + start, end - start) < 0)
            return -1;
        start = end;
    }
    if (start == 0 && s->len == sizeof s->line) {
        if (emit(s, s->line, s->len) < 0)
            return -1;
        start = s->len;
    }
    memmove(s->line, s->line + start, s->len - start);
    s->len -= start;
    return 1;
}

/* The workloads of LIST (two or more) read at once through B, each
 * line led by which it is; *FAILED: how many could not be read, each
 * said.  -1 and *ERR only when nothing could be set going. */
static int
logs_several(const char *service, ph_backend *b, const ph_workload_list *list, int follow, size_t *failed,
             ph_error_t *err)
{
    log_src *src = calloc(list->n, sizeof *src);
    struct pollfd *pf = calloc(list->n, sizeof *pf);
    size_t open_n = 0, k;
    int gone = 0, rc = -1;

    *failed = 0;
    fflush(stdout); /* what this command printed before comes first */
    if (src == NULL || pf == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    for (k = 0; k < list->n; k++) {
        log_src *s = &src[k];
        int fds[2];

        s->w = &list->v[k];
        s->follow = follow;
        s->rfd = s->wfd = -1;
        workload_words(s->w, s->who, sizeof s->who);
        snprintf(s->lead, sizeof s->lead, "%s | ", s->who);
        if (pipe2(fds, O_CLOEXEC) < 0) {
            ph_fail(&s->err, errno, "pipe");
            s->rc = -1;
            continue;
        }
        s->rfd = fds[0];
        s->wfd = fds[1];
        if ((s->nb = ph_backend_open(b, &s->err)) == NULL ||
            (errno = pthread_create(&s->tid, NULL, reader_main, s)) != 0) {
            if (s->nb != NULL)
                ph_fail(&s->err, errno, "start a thread to read it");
            s->rc = -1;
            close(s->wfd);
            s->wfd = -1;
            continue;
        }
        s->started = 1;
        open_n++;
    }
    /* every pipe until each ends (with -f: until the workload does) */
    while (open_n > 0 && !gone) {
        size_t m = 0;

        for (k = 0; k < list->n; k++)
            if (src[k].started && src[k].rfd >= 0) {
                pf[m].fd = src[k].rfd;
                pf[m].events = POLLIN;
                pf[m].revents = 0;
                m++;
            }
        if (poll(pf, m, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (k = 0, m = 0; k < list->n && !gone; k++) {
            int t;

            if (!src[k].started || src[k].rfd < 0)
                continue;
            if ((pf[m++].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
                continue;
            if ((t = take(&src[k])) < 0)
                gone = 1;
            else if (t == 0) {
                close(src[k].rfd);
                src[k].rfd = -1;
                open_n--;
            }
        }
    }
    /* stdout gone: the readers' pipes are closed under them, so each ends */
    for (k = 0; k < list->n; k++)
        if (src[k].rfd >= 0) {
            close(src[k].rfd);
            src[k].rfd = -1;
        }
    for (k = 0; k < list->n; k++) {
        log_src *s = &src[k];

        if (s->started)
            pthread_join(s->tid, NULL);
        ph_backend_close(s->nb);
        if (s->rc == 0)
            continue;
        (*failed)++;
        ph_warn("%s: %s: its output is not read: %s%s", service, s->who,
                s->err ? s->err->msg : "?", b->ops->lost(b, s->w, NULL) == 1 ? " (its node is down)" : "");
        ph_error_free(&s->err);
    }
    rc = gone ? ph_fail(err, errno, "write the output") : 0;
out:
    free(src);
    free(pf);
    return rc;
}

int
ph_run_logs(ph_run *r, const char *service, int follow, ph_error_t *err)
{
    ph_workload_list list = { 0 };
    ph_backend *b;
    size_t failed = 0;
    int rc;

    if (ph_compose_service(r->compose, service) == NULL)
        return ph_run_bad_service(r, service, err);
    if (ph_run_backend(r, &b, err) < 0 || ph_run_list(r, service, &list, err) < 0)
        return -1;
    if (list.n == 0) /* gone with its workloads: the last run kept it */
        rc = ph_run_print_last_log(r, service, stdout, err);
    else if (list.n == 1)
        rc = b->ops->logs(b, list.v[0].id, follow, -1, 1, err);
    else if ((rc = logs_several(service, b, &list, follow, &failed, err)) == 0 && failed > 0)
        rc = ph_fail(err, 0, "%s: the output of %zu of its %zu workloads is not read (each said above)", service,
                     failed, list.n);
    ph_workload_list_free(&list);
    return rc < 0 ? -1 : 0;
}
