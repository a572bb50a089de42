/* ph_run_replicas.c - a run of several workloads of one service: its run
 * dir <out>/<service>/<run>/ holds a sub-dir per workload, each a run dir
 * completed by the store (ph_rundir), and tasks.json, which says for each
 * whether it was collected or why not.  The shape is the same for the
 * replicas of a service on one Engine (sub-dir `<replica>`) and for the
 * tasks of a Swarm service (`<slot>-<node>`, ph_run_placed.c).
 *
 * On one Engine each replica is stopped and collected as a lone container
 * is (ph_run_collect.c), into its sub-dir; tasks.json is written again
 * after each, from what is there: a sub-dir that is in place is complete
 * (the store's promise), a replica without one is named with its kept
 * container, so a retry (`profharness stop SERVICE`) after a failure only
 * adds what was missing and the list stays whole.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
ph_run_open_run_dir(ph_run *r, int svcfd, const char *service, const char *run, int *runfd_out, ph_error_t *err)
{
    char shown[PATH_MAX];
    int fd;

    if (mkdirat(svcfd, run, 0755) == 0)
        ph_rundir_give_at(svcfd, run);
    else if (errno != EEXIST)
        return ph_fail(err, errno, "create `%s/%s/%s`", r->opts.out_dir, service, run);
    if ((fd = openat(svcfd, run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ph_fail(err, errno, "open `%s/%s/%s`", r->opts.out_dir, service, run);
    snprintf(shown, sizeof shown, "%s/%s", service, run);
    ph_run_remove_stale_temps(r, fd, shown);
    *runfd_out = fd;
    return 0;
}

json_t *
ph_run_tasks_new(const char *service, const char *mode, const char *run)
{
    return json_pack("{s:s, s:s?, s:s, s:[]}", "service", service, "mode", mode, "run", run, "tasks");
}

int
ph_run_tasks_add(json_t *tasks, int slot, const char *node, const char *id, const char *dir, const char *lost)
{
    json_t *e = json_pack("{s:i, s:s?, s:s?, s:s, s:b, s:s?}", "slot", slot, "node", node, "task", id, "dir", dir,
                          "collected", lost == NULL, "lost", lost);

    return e != NULL && json_array_append_new(json_object_get(tasks, "tasks"), e) == 0 ? 0 : -1;
}

void
ph_run_replica_dir_name(int slot, char *out, size_t size)
{
    snprintf(out, size, "%d", slot);
}

int
ph_run_replicas_write(ph_run *r, int runfd, const ph_workload *c, const char *why_this, size_t *lost_out,
                      ph_error_t *err)
{
    ph_workload_list list = { 0 };
    json_t *tasks = ph_run_tasks_new(c->service, c->mode, c->run);
    char shown[PATH_MAX];
    size_t lost = 0;
    int rc = -1;

    if (tasks == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    /* the replicas still there: those of this run not collected (yet) */
    if (ph_run_list(r, c->service, &list, err) < 0)
        goto out;
    for (int k = 1; k <= c->replicas; k++) {
        const ph_workload *kept = NULL;
        char dir[16], why[256];
        struct stat st;
        int in_place;

        /* "<k>", or where the store put it when that name was taken ("<k>.2"...) */
        ph_run_replica_dir_name(k, dir, sizeof dir);
        in_place = fstatat(runfd, dir, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        for (int n = 2; !in_place && n <= 9; n++) {
            snprintf(dir, sizeof dir, "%d.%d", k, n);
            in_place = fstatat(runfd, dir, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        }
        if (!in_place)
            ph_run_replica_dir_name(k, dir, sizeof dir);
        for (size_t i = 0; i < list.n && kept == NULL; i++)
            if (!list.v[i].by_compose && list.v[i].slot == k && list.v[i].run != NULL &&
                strcmp(list.v[i].run, c->run) == 0)
                kept = &list.v[i];
        if (in_place) { /* complete once in place (ph_rundir.h), its container removed or not */
            if (ph_run_tasks_add(tasks, k, NULL, kept ? kept->id : NULL, dir, NULL) < 0)
                goto oom;
            continue;
        }
        lost++;
        if (kept != NULL)
            snprintf(why, sizeof why, "not collected: %s (its container %.12s is kept: `profharness stop %s`)",
                     kept->id != NULL && c->id != NULL && strcmp(kept->id, c->id) == 0 && why_this != NULL
                         ? why_this : "not stopped yet",
                     kept->id ? kept->id : "?", c->service);
        else
            snprintf(why, sizeof why, "no container of the run and no run dir: removed without a collection");
        if (ph_run_tasks_add(tasks, k, NULL, kept ? kept->id : NULL, dir, why) < 0)
            goto oom;
    }
    snprintf(shown, sizeof shown, "%s/%s/%s/%s", r->opts.out_dir, c->service, c->run, PH_RUN_TASKS_NAME);
    if (ph_rundir_write_json_at(runfd, shown, PH_RUN_TASKS_NAME, tasks, err) < 0)
        goto out;
    ph_rundir_give_at(runfd, PH_RUN_TASKS_NAME);
    if (lost_out != NULL)
        *lost_out = lost;
    rc = 0;
    goto out;
oom:
    ph_fail(err, ENOMEM, "allocate");
out:
    json_decref(tasks);
    ph_workload_list_free(&list);
    return rc;
}
