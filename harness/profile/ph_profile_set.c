/* ph_profile_set.c - the modes there are: the shipped profiles, then a
 * project's own and --profiles over them by name (see ph_profile.h), and
 * their names for did-you-mean. */
#include "ph_profile.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int
holds_yaml(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int found = 0;

    if (d == NULL)
        return 0;
    while (!found && (de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);

        found = de->d_name[0] != '.' && n > 5 && strcmp(de->d_name + n - 5, ".yaml") == 0;
    }
    closedir(d);
    return found;
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(((const ph_profile *)a)->name, ((const ph_profile *)b)->name);
}

/* Move every profile of TOP into OUT, replacing those of the same name;
 * TOP is left empty. */
static int
overlay(ph_profile_set *out, ph_profile_set *top, ph_error_t *err)
{
    ph_profile *nv = realloc(out->v, (out->n + top->n + 1) * sizeof *nv);

    if (nv == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    out->v = nv;
    for (size_t i = 0; i < top->n; i++) {
        size_t j;

        for (j = 0; j < out->n; j++)
            if (strcmp(out->v[j].name, top->v[i].name) == 0)
                break;
        if (j < out->n)
            ph_profile_free(&out->v[j]);
        else
            out->n++;
        out->v[j] = top->v[i];
    }
    free(top->v);
    top->v = NULL;
    top->n = 0;
    return 0;
}

int
ph_profiles_load_dirs(const ph_profile_dir *dirs, size_t n, ph_profile_set *out, ph_error_t *err)
{
    char seen[8][PATH_MAX];
    size_t n_seen = 0;

    out->v = NULL;
    out->n = 0;
    for (size_t i = 0; i < n; i++) {
        ph_profile_set layer = { 0 };
        char real[PATH_MAX];
        int dup = 0;

        if (dirs[i].path == NULL)
            continue;
        if (dirs[i].optional && !holds_yaml(dirs[i].path))
            continue;
        if (realpath(dirs[i].path, real) != NULL) {
            for (size_t j = 0; j < n_seen; j++)
                dup |= strcmp(seen[j], real) == 0;
            if (dup)
                continue;
            if (n_seen < sizeof seen / sizeof seen[0])
                memcpy(seen[n_seen++], real, sizeof real);
        }
        if (ph_profiles_load_dir(dirs[i].path, &layer, err) < 0 || overlay(out, &layer, err) < 0) {
            ph_profiles_free(&layer);
            ph_profiles_free(out);
            return -1;
        }
    }
    if (out->n == 0)
        return ph_bad_input(err, "no profiles (*.yaml) in `%s`", n > 0 && dirs[0].path ? dirs[0].path : "?");
    qsort(out->v, out->n, sizeof *out->v, by_name);
    return 0;
}

size_t
ph_profiles_names(const ph_profile_set *set, const char **names, size_t cap, int with_aliases)
{
    size_t k = 0;

    if (cap == 0)
        return 0;
    for (size_t i = 0; i < set->n && k + 1 < cap; i++) {
        names[k++] = set->v[i].name;
        for (size_t j = 0; with_aliases && j < set->v[i].aliases.n && k + 1 < cap; j++)
            names[k++] = set->v[i].aliases.v[j];
    }
    names[k] = NULL;
    return k;
}
