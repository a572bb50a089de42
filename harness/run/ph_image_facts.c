/* ph_image_facts.c - profiling any image: what a service's image offers,
 * whether a mode can run there, and the Dockerfile of its profiling image
 * (the images are built in ph_image.c).
 *
 * What an image offers is asked of the image itself, not guessed from its
 * name: a container is created from it (never started) and the Engine is
 * asked whether a package manager (apt-get, apk, dnf, microdnf, yum) and
 * a C library's loader (glibc's, musl's) are there (ph_image_probe).
 *
 * The profiling image's Dockerfile is then written for what was found
 * (ph_image_dockerfile, a pure function): the profiles' packages through
 * the image's own package manager, or, where there is none (FROM scratch,
 * distroless), the tools tree copied from the tools image, which needs
 * nothing of the image's userland (each program carries its libraries and
 * its own loader: images/tools/assemble.sh).  Without a shell in the image
 * the only RUN is an exec-form one of the tree's static busybox.
 *
 * The tools image (images/tools/Dockerfile) is built once from Debian: it
 * holds that tree, and serves attach (ph_run_attach.c) and conversions.
 *
 * Whether a mode can run in an image is the mode's data: `tools` (it can
 * run from the tree), `libc` (what an LD_PRELOAD mode needs), `limits`
 * (why not, in words); ph_image_unfit applies them.
 */
#include "ph_image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_run.h"
#include "ph_tar.h"
#include "ph_util.h"

/* ---- what an image offers ---------------------------------------------- */

int
ph_image_probe(ph_engine *e, const char *image, ph_image_facts *out, ph_error_t *err)
{
    /* In order of preference: an image with dnf and yum uses dnf. */
    static const struct {
        const char *path, *pm;
    } pms[] = {
        { "/usr/bin/apt-get", "apt" }, { "/sbin/apk", "apk" }, { "/usr/bin/dnf", "dnf" },
        { "/usr/bin/microdnf", "microdnf" }, { "/usr/bin/yum", "yum" },
    };
    static const struct {
        const char *path, *libc;
    } loaders[] = {
        { "/lib64/ld-linux-x86-64.so.2", "glibc" }, { "/lib/ld-linux-aarch64.so.1", "glibc" },
        { "/lib/ld-musl-x86_64.so.1", "musl" }, { "/lib/ld-musl-aarch64.so.1", "musl" },
    };
    json_t *cfg;
    char *id = NULL;
    int found = 0, shell = 0, rc = -1;

    memset(out, 0, sizeof *out);
    /* Never started: the entrypoint need not exist, and nothing runs. */
    cfg = json_pack("{s:s, s:[s], s:[], s:{s:s}, s:b}", "Image", image, "Entrypoint", "/.profharness-probe", "Cmd",
                    "Labels", PH_LABEL_PROBE, "1", "NetworkDisabled", 1);
    if (cfg == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (ph_engine_container_create(e, NULL, cfg, &id, err) < 0) {
        json_decref(cfg);
        return ph_error_wrap(err, "look into image `%s`", image);
    }
    json_decref(cfg);
    if (ph_engine_archive_stat(e, id, "/bin/sh", &shell, err) < 0)
        goto out;
    for (size_t i = 0; i < PH_ARRAY_LEN(pms) && out->pm[0] == '\0'; i++) {
        if (ph_engine_archive_stat(e, id, pms[i].path, &found, err) < 0)
            goto out;
        /* A package manager is run by a shell-form RUN: it needs /bin/sh. */
        if (found && shell)
            snprintf(out->pm, sizeof out->pm, "%s", pms[i].pm);
    }
    for (size_t i = 0; i < PH_ARRAY_LEN(loaders) && out->libc[0] == '\0'; i++) {
        if (ph_engine_archive_stat(e, id, loaders[i].path, &found, err) < 0)
            goto out;
        if (found)
            snprintf(out->libc, sizeof out->libc, "%s", loaders[i].libc);
    }
    out->shell = shell;
    rc = 0;
out:
    if (ph_engine_container_remove(e, id, 1, rc < 0 ? NULL : err) < 0)
        rc = -1;
    free(id);
    if (rc < 0)
        ph_error_wrap(err, "look into image `%s`", image);
    return rc;
}

const char *
ph_image_facts_pm(const ph_image_facts *f)
{
    return f->pm[0] ? f->pm : "none";
}

const char *
ph_image_facts_libc(const ph_image_facts *f)
{
    return f->libc[0] ? f->libc : "none";
}

/* ---- can a mode run there ---------------------------------------------- */

const char *
ph_image_unfit(const ph_profile *p, const ph_image_facts *f, char *buf, size_t len)
{
    const char *why = p->limits ? p->limits : "";
    const char *sep = p->limits ? ": " : "";

    if (f->pm[0] == '\0' && !p->has_tools) {
        snprintf(buf, len, "mode `%s` needs the image's package manager, and the image has none%s%s", p->name, sep,
                 why);
        return buf;
    }
    if (f->pm[0] != '\0' && p->wrap.n > 0 && ph_profile_packages(p, f->pm)->n == 0 && p->packages.n > 0) {
        snprintf(buf, len, "mode `%s` names no `%s` packages (`packages: {%s: [...]}` in %s), so its tools cannot "
                 "be installed in this image", p->name, f->pm, strcmp(f->pm, "apt") == 0 || strcmp(f->pm, "apk") == 0
                 ? f->pm : "dnf", p->path);
        return buf;
    }
    if (p->libc.n > 0) {
        for (size_t i = 0; i < p->libc.n; i++)
            if (strcmp(p->libc.v[i], f->libc) == 0)
                return NULL;
        snprintf(buf, len, "mode `%s` needs a service linked against %s, and the image has %s%s%s%s", p->name,
                 p->libc.v[0], f->libc[0] ? f->libc : "no C library loader (static binaries only)",
                 f->libc[0] ? "'s loader" : "", sep, why);
        return buf;
    }
    return NULL;
}

/* ---- the profiling image's Dockerfile ----------------------------------- */

/* Package names go into a shell command: only what package names are
 * made of (apt's `name=version`, `name:arch`, dnf's globs and `name-1.2`). */
static int
package_name_ok(const char *s)
{
    if (s[0] == '\0' || s[0] == '-')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("._+:=~*-", *s)))
            return 0;
    return 1;
}

int
ph_image_dockerfile(const ph_image_facts *f, const char *base, const char *tools_image, const ph_strv *packages,
                    char **out, ph_error_t *err)
{
    char *text = NULL, *pkgs = NULL;
    size_t size = 0, plen = 0;
    FILE *m = NULL, *pm = NULL;
    int rc = -1;

    *out = NULL;
    if (f->pm[0] == '\0' && (tools_image == NULL || tools_image[0] == '\0'))
        return ph_bad_input(err, "an image with no package manager needs the tools image");
    if ((pm = open_memstream(&pkgs, &plen)) == NULL)
        return ph_fail(err, errno, "allocate");
    for (size_t i = 0; packages && i < packages->n; i++) {
        if (!package_name_ok(packages->v[i])) {
            fclose(pm);
            free(pkgs);
            return ph_bad_input(err, "`%s` is not a package name", packages->v[i]);
        }
        fprintf(pm, " %s", packages->v[i]);
    }
    fclose(pm);
    if ((m = open_memstream(&text, &size)) == NULL) {
        free(pkgs);
        return ph_fail(err, errno, "allocate");
    }
    fprintf(m, "# Written by profharness (ph_image_facts.c) for an image with %s%s%s.\n",
            f->pm[0] ? "the package manager " : "no package manager", f->pm, f->libc[0] ? "" : " and no C library");
    if (f->pm[0] == '\0')
        fprintf(m, "FROM %s AS tools\n", tools_image);
    fprintf(m, "FROM %s\n", base);
    /* By number: an image without /etc/passwd has no user `root`. */
    fprintf(m, "USER 0\n");
    if (f->pm[0] == '\0') {
        fprintf(m, "COPY --from=tools /opt/profharness/tools/ /opt/profharness/tools/\n");
    } else if (plen > 0) {
        if (strcmp(f->pm, "apt") == 0)
            fprintf(m, "RUN set -e; apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                       "--no-install-recommends%s >/dev/null; rm -rf /var/lib/apt/lists/*\n", pkgs);
        else if (strcmp(f->pm, "apk") == 0)
            fprintf(m, "RUN apk add --no-cache --quiet%s\n", pkgs);
        else if (strcmp(f->pm, "dnf") == 0)
            fprintf(m, "RUN dnf install -y -q --setopt=install_weak_deps=False%s && dnf clean all\n", pkgs);
        else if (strcmp(f->pm, "microdnf") == 0)
            fprintf(m, "RUN microdnf install -y --nodocs%s && microdnf clean all\n", pkgs);
        else if (strcmp(f->pm, "yum") == 0)
            fprintf(m, "RUN yum install -y -q%s && yum clean all\n", pkgs);
        else
            goto bad_pm;
    }
    fprintf(m, "COPY opt/ /opt/profharness/\n");
    /* Any user the service runs as must be able to write its artifacts.
     * An image with no package manager may have no shell nor mkdir: the
     * tree's static busybox, in an exec-form RUN, needs neither. */
    if (f->pm[0] != '\0')
        fprintf(m, "RUN mkdir -p -m 1777 %s\n", PH_CONTAINER_OUT);
    else
        fprintf(m, "RUN [\"/opt/profharness/tools/bin/busybox\", \"mkdir\", \"-p\", \"-m\", \"1777\", \"%s\"]\n",
                PH_CONTAINER_OUT);
    rc = 0;
    goto done;
bad_pm:
    ph_bad_input(err, "no way to install packages with `%s`", f->pm);
done:
    fclose(m);
    free(pkgs);
    if (rc == 0)
        *out = text;
    else
        free(text);
    return rc;
}
