/* ph_paths.c - the harness's own files, and paths as the user reads them
 * (see ph_paths.h). */
#include "ph_paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* DIR/NAME is there and of type TYPE (S_IFDIR, S_IFREG). */
static int
is_a(const char *dir, const char *name, mode_t type)
{
    char p[PATH_MAX + 64];
    struct stat st;

    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && (st.st_mode & S_IFMT) == type;
}

void
ph_paths_lib_dir(const char *data, char *buf, size_t len)
{
    char cand[PATH_MAX + 32];

    snprintf(cand, sizeof cand, "%s/../../lib/profharness", data);
    if (!is_a(data, "build/ph-init", S_IFREG) && is_a(cand, "ph-init", S_IFREG)) {
        if (ph_paths_absolute(cand, buf, len, NULL) < 0)
            snprintf(buf, len, "%s", cand);
        return;
    }
    snprintf(buf, len, "%s/build", data);
}

void
ph_paths_lib_file(const char *data, const char *name, char *buf, size_t len)
{
    char dir[PATH_MAX];

    ph_paths_lib_dir(data, dir, sizeof dir);
    snprintf(buf, len, "%s/%s", dir, name);
}

int
ph_paths_layout(const char *exe, const char *data_env, ph_layout *out, ph_error_t *err)
{
    char self[PATH_MAX], *real = NULL, *slash;

    if (data_env != NULL && data_env[0] != '\0') {
        if (ph_paths_absolute(data_env, out->data, sizeof out->data, err) < 0)
            return ph_error_wrap(err, "PH_DATA_DIR");
        ph_paths_lib_dir(out->data, out->lib, sizeof out->lib);
        return 0;
    }
    if (exe == NULL) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

        if (n <= 0)
            return ph_fail(err, errno, "find the profharness binary (/proc/self/exe)");
        self[n] = '\0';
        exe = self;
    }
    /* Links to the binary (a symlink in ~/bin) lead back to where it is. */
    real = realpath(exe, NULL);
    if (real == NULL)
        return ph_fail(err, errno, "find the profharness binary `%s`", exe);
    slash = strrchr(real, '/');
    if (slash != NULL)
        *slash = '\0';
    if (is_a(real, "../share/profharness/profiles", S_IFDIR)) {
        snprintf(out->data, sizeof out->data, "%s/../share/profharness", real);
    } else if (is_a(real, "../profiles", S_IFDIR) && is_a(real, "../images", S_IFDIR)) {
        snprintf(out->data, sizeof out->data, "%s/..", real);
    } else {
        ph_fail(err, 0, "profharness's profiles/ and images/ are neither in `%s/../share/profharness` (installed) "
                "nor in `%s/..` (a build tree)", real, real);
        free(real);
        return ph_error_hint(err, "install it with `make install PREFIX=...`, run it from its build tree, or "
                             "set PH_DATA_DIR to the folder holding profiles/ and images/");
    }
    free(real);
    /* Folded, so that messages name the folder plainly. */
    if (ph_paths_absolute(out->data, out->data, sizeof out->data, err) < 0)
        return -1;
    ph_paths_lib_dir(out->data, out->lib, sizeof out->lib);
    return 0;
}

int
ph_paths_absolute(const char *path, char *buf, size_t len, ph_error_t *err)
{
    char in[PATH_MAX * 2], outp[PATH_MAX];
    size_t o = 0;

    if (path == NULL || path[0] == '\0')
        return ph_bad_input(err, "an empty path");
    if (path[0] == '/') {
        if (strlen(path) >= sizeof in)
            return ph_fail(err, ENAMETOOLONG, "`%.64s...`", path);
        snprintf(in, sizeof in, "%s", path);
    } else {
        char cwd[PATH_MAX];

        if (getcwd(cwd, sizeof cwd) == NULL)
            return ph_fail(err, errno, "the working directory");
        if (strlen(cwd) + 1 + strlen(path) >= sizeof in)
            return ph_fail(err, ENAMETOOLONG, "`%.64s...`", path);
        snprintf(in, sizeof in, "%s/%s", cwd, path);
    }
    /* Segment by segment: "." dropped, ".." takes the last one back. */
    for (const char *p = in; *p != '\0';) {
        size_t sl = strcspn(p, "/");

        if (sl == 0 || (sl == 1 && p[0] == '.')) {
            /* nothing */
        } else if (sl == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 0 && outp[o - 1] != '/')
                o--;
            if (o > 0)
                o--; /* the '/' before it */
        } else {
            if (o + 1 + sl >= sizeof outp)
                return ph_fail(err, ENAMETOOLONG, "`%.64s...`", path);
            outp[o++] = '/';
            memcpy(outp + o, p, sl);
            o += sl;
        }
        p += sl;
        if (*p == '/')
            p++;
    }
    if (o == 0)
        outp[o++] = '/';
    outp[o] = '\0';
    if (o >= len)
        return ph_fail(err, ENAMETOOLONG, "`%.64s...`", path);
    memcpy(buf, outp, o + 1);
    return 0;
}

int
ph_paths_cache_dir(char *buf, size_t len, int make)
{
    const char *base = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;

    if (base != NULL && base[0] == '/')
        n = snprintf(buf, len, "%s/profharness", base);
    else if (home != NULL && home[0] == '/')
        n = snprintf(buf, len, "%s/.cache/profharness", home);
    else
        return -1;
    if (n < 0 || (size_t)n >= len)
        return -1;
    if (!make)
        return 0;
    for (char *sl = buf + 1; (sl = strchr(sl, '/')) != NULL; sl++) { /* mkdir -p */
        *sl = '\0';
        mkdir(buf, 0700);
        *sl = '/';
    }
    return mkdir(buf, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

void
ph_paths_safe_name(char *buf, size_t len, const char *s)
{
    size_t n = 0;

    for (; len > 0 && s[n] != '\0' && n + 1 < len; n++) {
        unsigned char ch = (unsigned char)s[n];

        buf[n] = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ? (char)ch : '-';
    }
    if (len > 0)
        buf[n] = '\0';
}
