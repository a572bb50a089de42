/* fuzz_profile.c - libFuzzer target for the profile loader (harness/profile):
 * any bytes as profiles/fuzz.yaml.
 *
 * What it checks beyond "no crash, no leak, no undefined behaviour": every
 * error is bad input (status 2) naming the file; a profile that loads
 * keeps what ph_profile.h promises (its name is the file's, it changes
 * something, the stop target is `wrapper` or `tracee`, signals are SIG
 * names, escalation is never empty, artifact globs stay inside the output
 * directory and `latest` links are plain names), and every wrap word and
 * environment value expands. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_profile.h"

static char dir[64], path[96];

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_profile p;
    ph_error_t err = NULL;
    FILE *f;

    if (dir[0] == '\0') {
        snprintf(dir, sizeof dir, "/tmp/ph-fuzz-profile-XXXXXX");
        if (mkdtemp(dir) == NULL)
            abort();
        ph_log_set_level(PH_LOG_ERROR); /* unknown keys warn: not what is checked */
        snprintf(path, sizeof path, "%s/fuzz.yaml", dir);
    }
    f = fopen(path, "w");
    if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();

    if (ph_profile_load(path, &p, &err) < 0) {
        if (err == NULL || (err->status != PH_EXIT_USAGE && err->errnum == 0))
            abort();
        if (err->status == PH_EXIT_USAGE && strncmp(err->msg, path, strlen(path)) != 0)
            abort();
        ph_error_free(&err);
        return 0;
    }
    if (err != NULL || strcmp(p.name, "fuzz") != 0 || (p.wrap.n == 0 && p.environment.n == 0))
        abort();
    if (strcmp(p.stop_target, "wrapper") != 0 && strcmp(p.stop_target, "tracee") != 0)
        abort();
    if (strncmp(p.stop_signal, "SIG", 3) != 0 || p.escalate.n == 0)
        abort();
    for (size_t i = 0; i < p.escalate.n; i++)
        if (strncmp(p.escalate.v[i], "SIG", 3) != 0)
            abort();
    for (size_t i = 0; i < p.n_artifacts; i++) {
        const ph_artifact_spec *a = &p.artifacts[i];

        if (a->glob == NULL || a->glob[0] == '/' || strstr(a->glob, "..") != NULL)
            abort();
        if (a->latest && (strchr(a->latest, '/') != NULL || a->latest[0] == '.'))
            abort();
    }
    for (size_t i = 0; i < p.wrap.n; i++) {
        char *w = ph_profile_expand(p.wrap.v[i], "/opt/profiling/s", "s", "fuzz", "run");

        if (w == NULL)
            abort();
        free(w);
    }
    for (size_t i = 0; i < p.environment.n; i++) {
        char *w;

        if (p.environment.v[i].value == NULL)
            abort();
        w = ph_profile_expand(p.environment.v[i].value, "/opt/profiling/s", "s", "fuzz", "run");
        if (w == NULL)
            abort();
        free(w);
    }
    ph_profile_free(&p);
    return 0;
}
