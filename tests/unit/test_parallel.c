/* test_parallel.c - jobs on several services at once (ph_run_parallel):
 * they do run at the same time, never more than the bound, each worker
 * has an Engine slot of its own, each job's error lands at its index, and
 * a bound of 1 runs them in order on the caller's thread.
 *
 * "At the same time" is shown without a clock: each job waits (up to a
 * generous deadline) until all of the first MAX have started.  Run
 * concurrently they all get there; run one after the other the first
 * waits in vain and says so. */
#include "test_util.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "ph_run_int.h"
#include "ph_timing.h"

typedef struct shared {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t started, running, max_running, until;
    size_t order[32], n_order;
    pthread_t thread[32];
    ph_backend **slot[32];
    int fail_index;
    int wait_s;
} shared;

static int
job(ph_run *r, size_t i, void *ud, ph_error_t *err)
{
    shared *s = ud;
    struct timespec deadline;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += s->wait_s;
    pthread_mutex_lock(&s->lock);
    s->order[s->n_order++] = i;
    s->thread[i] = pthread_self();
    s->slot[i] = ph_run_backend_slot(r);
    s->started++;
    if (++s->running > s->max_running)
        s->max_running = s->running;
    pthread_cond_broadcast(&s->cond);
    /* Wait for the others of the first wave to have started too. */
    while (s->started < s->until && rc == 0)
        if (pthread_cond_timedwait(&s->cond, &s->lock, &deadline) == ETIMEDOUT)
            rc = -1;
    s->running--;
    pthread_mutex_unlock(&s->lock);
    if (rc < 0)
        return ph_fail(err, 0, "job %zu: the others never ran beside it", i);
    if ((int)i == s->fail_index)
        return ph_fail(err, 0, "job %zu failed on purpose", i);
    return 0;
}

static const char *
what(void *ud, size_t i)
{
    static char names[32][16];

    (void)ud;
    snprintf(names[i], sizeof names[i], "job %zu", i);
    return names[i];
}

static void
init(shared *s, size_t until, int fail_index)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->until = until;
    s->fail_index = fail_index;
    s->wait_s = 20;
}

static void
test_concurrent_and_bounded(void **state)
{
    ph_run r;
    shared s;
    ph_error_t errs[5];

    (void)state;
    memset(&r, 0, sizeof r);
    /* Five jobs, at most two at a time: the first two meet. */
    init(&s, 2, 3);
    assert_int_equal(ph_run_parallel(&r, 5, 2, job, what, &s, errs), 1);
    assert_int_equal(s.started, 5);
    assert_int_equal(s.max_running, 2);
    for (size_t i = 0; i < 5; i++) {
        if (i == 3) {
            assert_non_null(errs[i]);
            assert_string_equal(errs[i]->msg, "job 3 failed on purpose");
            ph_error_free(&errs[i]);
        } else {
            assert_null(errs[i]);
        }
        /* Workers have backend slots of their own, not the run's. */
        assert_ptr_not_equal(s.slot[i], &r.backend);
        assert_false(pthread_equal(s.thread[i], pthread_self()));
    }
    /* Two workers, so two distinct slots among the jobs. */
    {
        size_t distinct = 1;

        for (size_t i = 1; i < 5; i++)
            distinct += s.slot[i] != s.slot[0] && (i < 2 || s.slot[i] != s.slot[1]) ? 1 : 0;
        assert_true(distinct >= 2);
    }

    /* All eight at once: all eight meet. */
    init(&s, 8, -1);
    {
        ph_error_t e8[8];

        assert_int_equal(ph_run_parallel(&r, 8, 8, job, NULL, &s, e8), 0);
        assert_int_equal(s.max_running, 8);
    }
}

/* The bound holds: with two workers a wave of three cannot meet while
 * the first two wait (the third starts only when one of them has given
 * up), so at least one gives up; past the bound all three would meet. */
static void
test_bound_holds(void **state)
{
    ph_run r;
    shared s;
    ph_error_t errs[3];

    (void)state;
    memset(&r, 0, sizeof r);
    init(&s, 3, -1);
    s.wait_s = 1;
    assert_true(ph_run_parallel(&r, 3, 2, job, NULL, &s, errs) >= 1);
    assert_int_equal(s.max_running, 2);
    for (size_t i = 0; i < 3; i++)
        ph_error_free(&errs[i]);
}

/* A bound of 1: in order, on this thread, with the run's own Engine; and
 * the meeting test fails then, which shows it can. */
static void
test_one_at_a_time(void **state)
{
    ph_run r;
    shared s;
    ph_error_t errs[3];

    (void)state;
    memset(&r, 0, sizeof r);
    init(&s, 0, -1);
    assert_int_equal(ph_run_parallel(&r, 3, 1, job, what, &s, errs), 0);
    assert_int_equal(s.max_running, 1);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(s.order[i], i);
        assert_true(pthread_equal(s.thread[i], pthread_self()));
        assert_ptr_equal(s.slot[i], &r.backend);
    }
    init(&s, 2, -1);
    s.wait_s = 1;
    setenv("PH_JOBS", "1", 1);
    assert_int_equal(ph_run_jobs_max(), 1);
    unsetenv("PH_JOBS");
    /* One at a time the first job waits for a second that cannot start
     * before it ends: it gives up, whatever the machine's speed. */
    s.wait_s = 1;
    assert_int_equal(ph_run_parallel(&r, 2, 1, job, what, &s, errs), 1);
    assert_non_null(strstr(errs[0]->msg, "never ran beside it"));
    assert_null(errs[1]); /* the second found the first had started */
    ph_error_free(&errs[0]);
}

static void
test_jobs_from_environment(void **state)
{
    (void)state;
    unsetenv("PH_JOBS");
    assert_int_equal(ph_run_jobs_max(), PH_RUN_JOBS_MAX);
    setenv("PH_JOBS", "3", 1);
    assert_int_equal(ph_run_jobs_max(), 3);
    setenv("PH_JOBS", "1000", 1);
    assert_int_equal(ph_run_jobs_max(), 64);
    setenv("PH_JOBS", "0", 1);
    assert_int_equal(ph_run_jobs_max(), PH_RUN_JOBS_MAX);
    setenv("PH_JOBS", "4x", 1);
    assert_int_equal(ph_run_jobs_max(), PH_RUN_JOBS_MAX);
    unsetenv("PH_JOBS");
}

/* Each job is a stage of its own in the timing tree, under the stage
 * the caller was in (not the root), beside the others. */
static void
test_job_stages(void **state)
{
    ph_run r;
    shared s;
    ph_error_t errs[3];
    const ph_stage *root, *c;
    ph_stage *outer;
    int jobs = 0, concurrent = 0;

    (void)state;
    memset(&r, 0, sizeof r);
    init(&s, 3, -1);
    assert_int_equal(ph_timing_start("test"), 0);
    outer = ph_stage_begin("harness", "stop", 0);
    assert_int_equal(ph_run_parallel(&r, 3, 3, job, what, &s, errs), 0);
    ph_stage_end(outer);
    ph_timing_finish(0, NULL);
    root = ph_timing_root();
    assert_non_null(root->first_child);
    assert_string_equal(root->first_child->name, "stop");
    assert_null(root->first_child->next); /* nothing beside it: the jobs are in it */
    for (c = root->first_child->first_child; c != NULL; c = c->next) {
        if (strncmp(c->name, "job ", 4) == 0)
            jobs++;
        concurrent += (c->flags & PH_STAGE_CONCURRENT) != 0;
    }
    assert_int_equal(jobs, 3);
    assert_int_equal(concurrent, 3);
    ph_timing_reset();
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_and_bounded),
        cmocka_unit_test(test_bound_holds),
        cmocka_unit_test(test_one_at_a_time),
        cmocka_unit_test(test_jobs_from_environment),
        cmocka_unit_test(test_job_stages),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
