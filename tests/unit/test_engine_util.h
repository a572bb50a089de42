/* test_engine_util.h - for the Engine unit suites: a misbehaving fake
 * Engine (tests/unit/data/fake-engine.py) and a sweep of what the suites
 * make in the real one.
 *
 * The sweep is by name: every container, network and volume the suites
 * make is named ph-unittest-engine-<pid>-... (or -io-<pid>-...), every
 * image tagged ph-unittest/<name>:<pid>[-...].  At a group's start and
 * end, tu_engine_sweep removes those of this process and those of
 * processes that are gone (a suite killed or crashed before its
 * teardown), never another live suite's.  It uses an Engine client of
 * its own, so a test that changed its client (a body bound, DOCKER_HOST)
 * cannot stop the cleanup. */
#ifndef PH_TEST_ENGINE_UTIL_H
#define PH_TEST_ENGINE_UTIL_H

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "ph_engine.h"
#include "test_util.h"

#define TU_ENGINE_PREFIX "ph-unittest-engine-"

/* Is NAME (with or without the leading '/') ours to remove: our prefix,
 * then (after "io-" or such) a pid that is ours or gone? */
TU_UNUSED static int
tu_engine_sweepable(const char *name)
{
    const char *p;
    char *end = NULL;
    long pid;

    if (name == NULL)
        return 0;
    if (name[0] == '/')
        name++;
    if (strncmp(name, TU_ENGINE_PREFIX, strlen(TU_ENGINE_PREFIX)) != 0)
        return 0;
    p = name + strlen(TU_ENGINE_PREFIX);
    while (*p && (*p < '0' || *p > '9'))
        p++;
    pid = strtol(p, &end, 10);
    if (end == p || pid <= 0 || (*end != '\0' && *end != '-'))
        return 0;
    return pid == (long)getpid() || (kill((pid_t)pid, 0) < 0 && errno == ESRCH);
}

/* DELETE COLLECTION/<name> for each sweepable name GET COLLECTION lists
 * (under KEY of the answer, or the answer itself). */
TU_UNUSED static void
tu_engine_sweep_named(ph_engine *x, const char *collection, const char *key)
{
    json_t *list = NULL, *c;
    size_t i;

    if (ph_engine_request(x, "GET", collection, NULL, &list, NULL, NULL) == 0)
        json_array_foreach(key ? json_object_get(list, key) : list, i, c) {
            const char *name = json_string_value(json_object_get(c, "Name"));
            char p[300];

            if (tu_engine_sweepable(name)) {
                snprintf(p, sizeof p, "%s/%s", collection, name);
                ph_engine_request(x, "DELETE", p, NULL, NULL, NULL, NULL);
            }
        }
    json_decref(list);
}

/* Is the image tag REF ours to remove: ph-unittest/<name>:<pid>[-...],
 * the pid ours or gone (as tu_engine_sweepable)? */
TU_UNUSED static int
tu_image_sweepable(const char *ref)
{
    const char *colon = ref ? strrchr(ref, ':') : NULL;
    char *end = NULL;
    long pid;

    if (colon == NULL || strncmp(ref, "ph-unittest/", 12) != 0 || strchr(colon, '/') != NULL)
        return 0;
    pid = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || pid <= 0 || (*end != '\0' && *end != '-'))
        return 0;
    return pid == (long)getpid() || (kill((pid_t)pid, 0) < 0 && errno == ESRCH);
}

/* Remove what tu_engine_sweepable names (containers, networks,
 * volumes) and what tu_image_sweepable names (images, and first the
 * containers made of them: the image probe's, left by a process killed
 * inside a probe).  Returns how many containers and images were removed. */
TU_UNUSED static int
tu_engine_sweep(void)
{
    ph_error_t err = NULL;
    ph_engine *x = ph_engine_new(&err);
    json_t *list = NULL, *c, *t;
    size_t i, k;
    int n = 0;

    if (x == NULL) {
        ph_error_free(&err);
        return 0;
    }
    if (ph_engine_containers_all(x, 1, &list, NULL) == 0)
        json_array_foreach(list, i, c)
            if ((tu_engine_sweepable(json_string_value(json_array_get(json_object_get(c, "Names"), 0))) ||
                 tu_image_sweepable(json_string_value(json_object_get(c, "Image")))) &&
                ph_engine_container_remove(x, json_string_value(json_object_get(c, "Id")), 1, NULL) == 0)
                n++;
    json_decref(list);
    tu_engine_sweep_named(x, "/networks", NULL);
    tu_engine_sweep_named(x, "/volumes", "Volumes");
    list = NULL;
    if (ph_engine_images_list(x, NULL, &list, NULL) == 0)
        json_array_foreach(list, i, c)
            json_array_foreach(json_object_get(c, "RepoTags"), k, t)
                if (tu_image_sweepable(json_string_value(t)) &&
                    ph_engine_image_remove(x, json_string_value(t), 1, NULL) == 0)
                    n++;
    json_decref(list);
    ph_engine_free(x);
    return n;
}

/* ---- the fake Engine ---------------------------------------------------- */

typedef struct tu_fake {
    pid_t pid;
    int keep; /* the write end of its stdin: it exits when this closes (or we die) */
    int port; /* tls: the port it chose */
} tu_fake;

/* Start fake-engine.py with ARGS ("unix", PATH / "tls", CERT, KEY) and wait
 * for its "ready" line. */
TU_UNUSED static void
tu_fake_start(tu_fake *f, const char *a1, const char *a2, const char *a3)
{
    int in[2], out[2];
    char line[64] = "";
    ssize_t n;
    size_t have = 0;

    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    f->pid = fork();
    assert_true(f->pid >= 0);
    if (f->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execlp("python3", "python3", "tests/unit/data/fake-engine.py", a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    f->keep = in[1];
    while (have + 1 < sizeof line && strchr(line, '\n') == NULL &&
           (n = read(out[0], line + have, sizeof line - 1 - have)) > 0) {
        have += (size_t)n;
        line[have] = '\0';
    }
    close(out[0]);
    if (strncmp(line, "ready", 5) != 0)
        fail_msg("the fake Engine did not start (python3 tests/unit/data/fake-engine.py %s): `%s`", a1, line);
    f->port = atoi(line + 5);
}

TU_UNUSED static void
tu_fake_stop(tu_fake *f)
{
    int st;

    if (f->pid <= 0)
        return;
    close(f->keep);
    kill(f->pid, SIGKILL);
    waitpid(f->pid, &st, 0);
    f->pid = -1;
}

#endif
