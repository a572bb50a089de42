/* fuzz_compose.c - libFuzzer target for the compose loader (harness/compose):
 * any bytes as a compose file, loaded from a directory of its own, and the
 * same bytes through ${VAR} interpolation.
 *
 * An input may carry a `.env` for the project after a line `%%ENV%%`, so
 * the dotenv reader is fuzzed too.  The directory also holds `app.env`,
 * which env_file entries may name, and a FIFO `fifo.env`, which must be
 * refused, never waited on.
 *
 * What it checks beyond "no crash, no leak, no undefined behaviour, no
 * hang": every error is bad input (status 2) naming a file of the project
 * directory (a failure only with an errno); after a successful load every
 * service has an image or a build, absolute volume targets and bind
 * sources, valid ports, dependencies that exist; the project name is what
 * compose allows; every service translates to an Engine configuration (or
 * fails with a message); interpolation either fails as bad input or
 * returns a string no longer than its ceiling. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_backend_engine_compose.h"
#include "ph_log.h"
#include "ph_compose.h"

static char dir[64], path[96], env_path[96];

static void
check_error(ph_error_t *err, const char *prefix)
{
    if (*err == NULL)
        abort();
    if ((*err)->status != PH_EXIT_USAGE && (*err)->errnum == 0)
        abort();
    if ((*err)->status == PH_EXIT_USAGE && strncmp((*err)->msg, prefix, strlen(prefix)) != 0)
        abort();
    ph_error_free(err);
}

static int
valid_port(const char *s)
{
    char *end;
    long lo = strtol(s, &end, 10), hi = lo;

    if (*end == '-')
        hi = strtol(end + 1, &end, 10);
    return *end == '\0' && lo >= 1 && hi >= lo && hi <= 65535;
}

static void
check_compose(ph_compose *c)
{
    const char *p = c->project;

    if (p == NULL || !((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= '0' && p[0] <= '9')))
        abort();
    if (strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(p))
        abort();
    if (c->n_services == 0)
        abort();
    for (size_t i = 0; i < c->n_services; i++) {
        ph_service *s = &c->services[i];

        if (s->name == NULL || ph_compose_service(c, s->name) != s)
            abort();
        if (s->image == NULL && !s->has_build)
            abort();
        if (s->has_build && (s->build_context == NULL || s->build_context[0] != '/'))
            abort();
        for (size_t k = 0; k < s->n_ports; k++)
            if (!valid_port(s->ports[k].container_port) ||
                (s->ports[k].host_port && !valid_port(s->ports[k].host_port)))
                abort();
        for (size_t k = 0; k < s->n_volumes; k++)
            if (s->volumes[k].target[0] != '/' || (s->volumes[k].bind && s->volumes[k].source[0] != '/'))
                abort();
        for (size_t k = 0; k < s->depends_on.n; k++)
            if (ph_compose_service(c, s->depends_on.v[k]) == NULL || strcmp(s->depends_on.v[k], s->name) == 0)
                abort();
        for (size_t k = 0; k < s->environment.n; k++)
            if (s->environment.v[k].key == NULL || s->environment.v[k].key[0] == '\0')
                abort();
    }
}

static const char *
container_of(void *ud, const char *service)
{
    (void)ud;
    return service[0] == 'a' ? NULL : "ctr";
}

/* Every service through the Engine translation: an object, or an error
 * with a message; the files to write have targets and contents. */
static void
check_engine(ph_compose *c)
{
    ph_backend_engine_runtime rt = { .image = "img", .container_name = "ctr-1", .all_endpoints = 1,
                                     .container_of = container_of };

    for (size_t i = 0; i < c->n_services; i++) {
        ph_error_t err = NULL;
        json_t *cfg = ph_backend_engine_compose_config(c, &c->services[i], &rt, &err);
        ph_backend_engine_file *files = NULL;
        size_t n = 0;

        if ((cfg == NULL) == (err == NULL) || (cfg && !json_is_object(json_object_get(cfg, "HostConfig"))))
            abort();
        json_decref(cfg);
        ph_error_free(&err);
        if (ph_backend_engine_compose_files(c, &c->services[i], &files, &n, &err) == 0) {
            for (size_t k = 0; k < n; k++)
                if (files[k].target == NULL || files[k].target[0] != '/' || files[k].content == NULL)
                    abort();
        } else if (err == NULL) {
            abort();
        }
        free(files);
        ph_error_free(&err);
    }
    for (size_t i = 0; i < c->networks.n; i++)
        json_decref(ph_backend_engine_compose_network(c, &c->nets[i], NULL));
    for (size_t i = 0; i < c->volumes.n; i++)
        json_decref(ph_backend_engine_compose_volume(c, &c->vols[i], NULL));
}

static const char *
lookup(const char *name, void *ud)
{
    static char big[4096];

    (void)ud;
    if (big[0] == '\0')
        memset(big, 'b', sizeof big - 1);
    if (strcmp(name, "SET") == 0)
        return "v";
    if (strcmp(name, "EMPTY") == 0)
        return "";
    if (strcmp(name, "BIG") == 0)
        return big;
    return NULL;
}

static void
write_file(const char *p, const uint8_t *data, size_t size)
{
    FILE *f = fopen(p, "w");

    if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char marker[] = "\n%%ENV%%\n";
    const uint8_t *env = memmem(data, size, marker, sizeof marker - 1);
    size_t yaml_size = env ? (size_t)(env - data) : size;
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    char *text, *out;

    if (dir[0] == '\0') {
        char p[128];

        snprintf(dir, sizeof dir, "/tmp/ph-fuzz-compose-XXXXXX");
        if (mkdtemp(dir) == NULL)
            abort();
        ph_log_set_level(PH_LOG_ERROR); /* unknown keys warn: not what is checked */
        snprintf(path, sizeof path, "%s/compose.yaml", dir);
        snprintf(env_path, sizeof env_path, "%s/.env", dir);
        snprintf(p, sizeof p, "%s/app.env", dir);
        write_file(p, (const uint8_t *)"A=1\nB=\"two words\"\n", 19);
        snprintf(p, sizeof p, "%s/fifo.env", dir);
        if (mkfifo(p, 0600) < 0)
            abort();
    }
    write_file(path, data, yaml_size);
    if (env != NULL)
        write_file(env_path, env + sizeof marker - 1, size - yaml_size - (sizeof marker - 1));
    else
        unlink(env_path);

    if (ph_compose_load(path, NULL, &c, &err) < 0) {
        if (c != NULL)
            abort();
        check_error(&err, dir);
    } else {
        if (err != NULL)
            abort();
        check_compose(c);
        check_engine(c);
        ph_compose_free(c);
    }

    text = strndup((const char *)data, yaml_size);
    if (text == NULL)
        return 0;
    out = ph_interpolate(text, lookup, NULL, "fuzz:1", &err);
    if (out == NULL)
        check_error(&err, "fuzz:1: ");
    else if (err != NULL || strlen(out) >= (1u << 20))
        abort();
    free(out);
    free(text);
    return 0;
}
