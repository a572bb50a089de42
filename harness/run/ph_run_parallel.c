/* ph_run_parallel.c - work on several services at once, bounded.
 *
 * Stopping a service is mostly waiting: for its profiler to flush (a
 * callgrind dump can take minutes), for the Engine to stream the
 * artifacts.  Stopping eight one after the other waits eight times; here
 * each service's stop is a job, and up to PH_RUN_JOBS_MAX jobs run at
 * once on threads of their own (PH_JOBS in the environment lowers or
 * raises the bound, 1 is one at a time).
 *
 * What a job may share.  A backend handle is not thread-safe, so each
 * worker thread gets its own from ph_run_backend (made on its
 * first call, freed when the thread ends); the compose model and the
 * profiles are only read; everything a stop writes on the host is under
 * the service's own directory, behind the service's lock.  Each job has
 * its own error.  The timing tree has a stage per job, nested under the
 * caller's current stage and marked concurrent (ph_stage_adopt).
 *
 * Jobs are taken in order, so with a bound of 1 (or one job) the order is
 * the caller's, on the caller's thread.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ph_log.h"
#include "ph_timing.h"

/* This thread's backend when it is a worker; the run's otherwise. */
static __thread int worker;
static __thread ph_backend *worker_backend;

ph_backend **
ph_run_backend_slot(ph_run *r)
{
    return worker ? &worker_backend : &r->backend;
}

typedef struct pool {
    ph_run *r;
    size_t n, next;
    ph_run_job_cb cb;
    ph_run_job_what_cb what;
    void *ud;
    ph_error_t *errs;
    size_t failed;
    ph_stage *parent;
    pthread_mutex_t lock;
} pool;

static void
run_job(pool *p, size_t i)
{
    ph_error_t err = NULL;
    ph_stage *st = p->what ? ph_stage_beginf("harness", 0, "%s", p->what(p->ud, i)) : NULL;

    if (p->cb(p->r, i, p->ud, &err) < 0 && err == NULL)
        ph_fail(&err, 0, "job %zu failed", i);
    if (err != NULL)
        ph_stage_fail(st, err->msg);
    ph_stage_end(st);
    pthread_mutex_lock(&p->lock);
    p->errs[i] = err;
    p->failed += err != NULL;
    pthread_mutex_unlock(&p->lock);
}

static void *
worker_main(void *arg)
{
    pool *p = arg;

    worker = 1;
    ph_stage_adopt(p->parent);
    for (;;) {
        size_t i;

        pthread_mutex_lock(&p->lock);
        i = p->next < p->n ? p->next++ : p->n;
        pthread_mutex_unlock(&p->lock);
        if (i == p->n)
            break;
        run_job(p, i);
    }
    ph_backend_close(worker_backend);
    worker_backend = NULL;
    return NULL;
}

size_t
ph_run_jobs_max(void)
{
    const char *s = getenv("PH_JOBS");
    char *end = NULL;
    long v;

    if (s == NULL || s[0] == '\0')
        return PH_RUN_JOBS_MAX;
    v = strtol(s, &end, 10);
    if (*end != '\0' || v < 1) {
        ph_warn("PH_JOBS=`%s` is not a number of jobs; using %d", s, PH_RUN_JOBS_MAX);
        return PH_RUN_JOBS_MAX;
    }
    return v > 64 ? 64 : (size_t)v;
}

size_t
ph_run_parallel(ph_run *r, size_t n, size_t max_jobs, ph_run_job_cb cb, ph_run_job_what_cb what, void *ud,
                ph_error_t *errs)
{
    pool p = { .r = r, .n = n, .cb = cb, .what = what, .ud = ud, .errs = errs, .parent = ph_stage_current(),
               .lock = PTHREAD_MUTEX_INITIALIZER };
    pthread_t tid[64];
    size_t threads = 0;

    for (size_t i = 0; i < n; i++)
        errs[i] = NULL;
    if (max_jobs > 64)
        max_jobs = 64;
    /* One job, or one at a time: on this thread, in order. */
    if (n <= 1 || max_jobs <= 1) {
        for (size_t i = 0; i < n; i++)
            run_job(&p, i);
        return p.failed;
    }
    for (; threads < max_jobs && threads < n; threads++) {
        int rc = pthread_create(&tid[threads], NULL, worker_main, &p);

        if (rc != 0) {
            ph_debug("pthread_create: %s; %zu worker(s) then", strerror(rc), threads);
            break;
        }
    }
    if (threads == 0) { /* no thread at all: this one does the work */
        for (size_t i = 0; i < n; i++)
            run_job(&p, i);
        return p.failed;
    }
    for (size_t t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    return p.failed;
}
