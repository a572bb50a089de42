/* ph_image_facts.c - profiling any image: what a service's image offers,
 * whether a mode can run there, and the Dockerfile of its profiling image
 * (the images are built in ph_image.c).
 *
 * What an image offers is asked of the image itself, not guessed from its
 * name: a workload is created from it (never started) where the images
 * are (ph_backend_ops.images) and its files are asked whether a package
 * manager (apt-get, apk, dnf, microdnf, yum) and a C library's loader
 * (glibc's, musl's) are there (ph_image_probe).
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
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_backend.h"
#include "ph_tar.h"
#include "ph_util.h"

/* ---- what an image offers ---------------------------------------------- */

/* The probe workload *ID removed from B; RC, or -1 when that fails, the
 * error saying what was being done (WHAT `IMAGE`). */
static int
probe_done(ph_backend *b, char **id, int rc, const char *image, const char *what, ph_error_t *err)
{
    if (b->ops->remove(b, *id, 1, rc < 0 ? NULL : err) < 0)
        rc = -1;
    free(*id);
    *id = NULL;
    if (rc < 0)
        ph_error_wrap(err, "%s `%s`", what, image);
    return rc;
}

/* A workload of IMAGE on B (where the images are: ops.images) to ask
 * about its files; never started: the entrypoint need not exist, and
 * nothing runs. */
static int
probe_create(ph_backend *b, const char *image, char **id, ph_error_t *err)
{
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    int rc = -1;

    spec.image = image;
    spec.set_entrypoint = spec.set_cmd = 1;
    spec.network_none = 1;
    if (ph_strv_push(&spec.entrypoint, "/.profharness-probe") < 0 || ph_kvv_set(&spec.labels, PH_LABEL_PROBE, "1") < 0)
        ph_fail(err, ENOMEM, "allocate");
    else
        rc = b->ops->create(b, &spec, id, err);
    spec.image = NULL;
    ph_workload_spec_clear(&spec);
    return rc < 0 ? ph_error_wrap(err, "look into image `%s`", image) : 0;
}

int
ph_image_probe(ph_backend *b, const char *image, ph_image_facts *out, ph_error_t *err)
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
    char *id = NULL;
    int found = 0, shell = 0, rc = -1;

    memset(out, 0, sizeof *out);
    if ((b = b->ops->images(b, err)) == NULL || probe_create(b, image, &id, err) < 0)
        return -1;
    if (b->ops->archive_stat(b, id, "/bin/sh", &shell, err) < 0)
        goto out;
    for (size_t i = 0; i < PH_ARRAY_LEN(pms) && out->pm[0] == '\0'; i++) {
        if (b->ops->archive_stat(b, id, pms[i].path, &found, err) < 0)
            goto out;
        /* A package manager is run by a shell-form RUN: it needs /bin/sh. */
        if (found && shell)
            snprintf(out->pm, sizeof out->pm, "%s", pms[i].pm);
    }
    for (size_t i = 0; i < PH_ARRAY_LEN(loaders) && out->libc[0] == '\0'; i++) {
        if (b->ops->archive_stat(b, id, loaders[i].path, &found, err) < 0)
            goto out;
        if (found)
            snprintf(out->libc, sizeof out->libc, "%s", loaders[i].libc);
    }
    out->shell = shell;
    if (b->ops->archive_stat(b, id, "/tmp", &out->tmp, err) < 0)
        goto out;
    rc = 0;
out:
    return probe_done(b, &id, rc, image, "look into image", err);
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

/* ---- whether a program can take an LD_PRELOAD ----------------------------- */

static uint64_t
elf_word(const unsigned char *p, int n, int le)
{
    uint64_t v = 0;

    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[le ? i : n - 1 - i] << (8 * i);
    return v;
}

/* An ELF program's program headers, checked: 0 and *H, or -1 (not an
 * ELF program, or its header table starts past LEN). */
typedef struct elf_head {
    int is64, le;
    uint64_t phoff, phentsize, phnum;
} elf_head;

static int
elf_head_read(const unsigned char *b, size_t len, elf_head *h)
{
    uint64_t type;

    if (len < 52 || memcmp(b, "\177ELF", 4) != 0 || (b[4] != 1 && b[4] != 2) || (b[5] != 1 && b[5] != 2))
        return -1;
    h->is64 = b[4] == 2;
    h->le = b[5] == 1;
    if (h->is64 && len < 64)
        return -1;
    type = elf_word(b + 16, 2, h->le);
    if (type != 2 && type != 3) /* ET_EXEC, ET_DYN */
        return -1;
    h->phoff = h->is64 ? elf_word(b + 32, 8, h->le) : elf_word(b + 28, 4, h->le);
    h->phentsize = elf_word(b + (h->is64 ? 54 : 42), 2, h->le);
    h->phnum = elf_word(b + (h->is64 ? 56 : 44), 2, h->le);
    if (h->phentsize < (h->is64 ? 56u : 32u) || h->phnum == 0 || h->phnum == 0xffff || h->phoff > len)
        return -1;
    return 0;
}

int
ph_image_elf_interp(const void *head, size_t len)
{
    const unsigned char *b = head;
    elf_head h;

    if (elf_head_read(b, len, &h) < 0)
        return -1;
    for (uint64_t i = 0; i < h.phnum; i++) {
        uint64_t off = h.phoff + i * h.phentsize;

        if (off > len || len - off < 4)
            return -1; /* past what was read: not known */
        if (elf_word(b + off, 4, h.le) == 3) /* PT_INTERP */
            return 1;
    }
    return 0;
}

/* Whether the notes at B[0..N) hold a GNU build-id, notes aligned to
 * ALIGN (4, or 8 for a segment of 8-aligned notes).  The notes are the
 * image's (untrusted): every size is compared with what is left of the
 * segment before a byte of it is read or skipped, so OFF never passes
 * N.  (Sizes are 32-bit: padded, they cannot wrap a uint64_t.)  A last
 * note whose description is not padded to the segment's end ends the
 * walk; stepping over its padding once read past the segment. */
static int
notes_build_id(const unsigned char *b, uint64_t n, uint64_t align, int le)
{
    uint64_t off = 0;

    while (n - off >= 12) {
        uint64_t namesz = elf_word(b + off, 4, le), descsz = elf_word(b + off + 4, 4, le);
        uint64_t type = elf_word(b + off + 8, 4, le), name = off + 12, desc;
        uint64_t name_pad = (namesz + align - 1) & ~(align - 1), desc_pad = (descsz + align - 1) & ~(align - 1);

        if (name_pad > n - name)
            return 0;
        desc = name + name_pad;
        if (descsz > n - desc)
            return 0;
        if (type == 3 && namesz == 4 && memcmp(b + name, "GNU", 4) == 0 && descsz > 0) /* NT_GNU_BUILD_ID */
            return 1;
        if (desc_pad > n - desc)
            return 0;
        off = desc + desc_pad;
    }
    return 0;
}

int
ph_image_elf_build_id(const void *head, size_t len)
{
    const unsigned char *b = head;
    elf_head h;
    int unknown = 0;

    if (elf_head_read(b, len, &h) < 0)
        return -1;
    for (uint64_t i = 0; i < h.phnum; i++) {
        uint64_t off = h.phoff + i * h.phentsize, foff, fsz, align;

        if (off > len || len - off < h.phentsize)
            return -1;
        if (elf_word(b + off, 4, h.le) != 4) /* PT_NOTE */
            continue;
        foff = h.is64 ? elf_word(b + off + 8, 8, h.le) : elf_word(b + off + 4, 4, h.le);
        fsz = h.is64 ? elf_word(b + off + 32, 8, h.le) : elf_word(b + off + 16, 4, h.le);
        align = (h.is64 ? elf_word(b + off + 48, 8, h.le) : elf_word(b + off + 28, 4, h.le)) == 8 ? 8 : 4;
        if (foff > len || fsz > len - foff) {
            unknown = 1; /* past what was read */
            continue;
        }
        if (notes_build_id(b + foff, fsz, align, h.le))
            return 1;
    }
    return unknown ? -1 : 0;
}

#define PEEK_BYTES 8192
/* a tar header, and a PAX header before it (long names) */
#define PEEK_HEADERS 2048

typedef struct peek_buf {
    char *data;
    size_t cap, len;
    int full;
} peek_buf;

static int
peek_cb(void *ud, const char *data, size_t len)
{
    peek_buf *p = ud;
    size_t n = len < p->cap - p->len ? len : p->cap - p->len;

    memcpy(p->data + p->len, data, n);
    p->len += n;
    if (p->len == p->cap) {
        p->full = 1;
        return -1; /* enough: the rest of the file is not needed */
    }
    return 0;
}

int
ph_image_file_head(ph_backend *b, const char *id, const char *path, ph_tar_peek_t *t, void *buf, size_t cap,
                   ph_error_t *err)
{
    peek_buf p = { .cap = cap + PEEK_HEADERS };
    ph_error_t sub = NULL;
    int found = 0, rc;

    if (b->ops->archive_stat(b, id, path, &found, err) < 0)
        return -2;
    if (!found)
        return -1;
    if ((p.data = malloc(p.cap)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        return -2;
    }
    rc = b->ops->archive_get(b, id, path, peek_cb, &p, &sub);
    if (rc < 0 && !p.full) {
        free(p.data);
        if (err)
            *err = sub;
        else
            ph_error_free(&sub);
        return -2;
    }
    ph_error_free(&sub);
    rc = ph_tar_peek(p.data, p.len, t, buf, cap, NULL);
    free(p.data);
    return rc < 0 ? -1 : 0;
}

/* PATH with `.`, `..` and repeated slashes resolved lexically, in place
 * (what a link's target means; `..` above / stays at /). */
static void
path_clean(char *path)
{
    char out[PATH_MAX];
    size_t o = 0;

    for (char *p = path, *end; *p; p = end) {
        size_t n;

        while (*p == '/')
            p++;
        end = p + strcspn(p, "/");
        n = (size_t)(end - p);
        if (n == 0 || (n == 1 && p[0] == '.'))
            continue;
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 0 && out[--o] != '/')
                ;
            continue;
        }
        if (o + 1 + n >= sizeof out)
            break;
        out[o++] = '/';
        memcpy(out + o, p, n);
        o += n;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    memcpy(path, out, o + 1);
}

/* Whether PATH in container ID is an ELF program with an interpreter (1),
 * without (0), or neither or not there (-1): its symlinks followed (at
 * most 8), the first bytes read through the archive endpoint.  *REAL:
 * the file at the end of the links. */
static int
program_linked(ph_backend *b, const char *id, const char *path, char *real, size_t rlen, ph_error_t *err)
{
    char cur[PATH_MAX], next[PATH_MAX];
    static char head[PEEK_BYTES];

    snprintf(cur, sizeof cur, "%s", path);
    path_clean(cur);
    for (int hop = 0; hop < 8; hop++) {
        ph_tar_peek_t t;
        int rc = ph_image_file_head(b, id, cur, &t, head, sizeof head, err);

        if (rc < 0)
            return rc;
        if (t.type == PH_TAR_PEEK_OTHER)
            return -1;
        snprintf(real, rlen, "%s", cur);
        if (t.type == PH_TAR_PEEK_FILE)
            return ph_image_elf_interp(head, t.len);
        if (t.target[0] == '/') {
            snprintf(next, sizeof next, "%s", t.target);
        } else {
            char *slash = strrchr(cur, '/');
            snprintf(next, sizeof next, "%.*s/%s", slash ? (int)(slash - cur) : 0, cur, t.target);
        }
        snprintf(cur, sizeof cur, "%s", next);
        path_clean(cur);
    }
    return -1;
}

/* PROG as the kernel would find it: as it is with a slash (from WORKDIR
 * when relative), else the first PATH_VAR directory holding it, of its
 * first PH_IMAGE_PATH_DIRS distinct ones (the entries past them counted
 * in *SKIPPED).  0 and "" when there is none. */
static int
program_resolve(ph_backend *b, const char *id, const char *prog, const char *path_var, const char *workdir, char *out,
                size_t len, size_t *skipped, ph_error_t *err)
{
    struct {
        const char *d;
        size_t n;
    } looked[PH_IMAGE_PATH_DIRS];
    size_t n_looked = 0;

    out[0] = '\0';
    if (strchr(prog, '/') != NULL) {
        if (prog[0] == '/')
            snprintf(out, len, "%s", prog);
        else
            snprintf(out, len, "%s/%s", workdir && workdir[0] ? workdir : "", prog);
        return 0;
    }
    for (const char *d = path_var, *next; d != NULL && *d; d = next) {
        const char *colon = strchr(d, ':');
        size_t n = colon ? (size_t)(colon - d) : strlen(d), k;
        char cand[PATH_MAX];
        int found = 0;

        next = colon ? colon + 1 : NULL;
        if (n == 0 || d[0] != '/')
            continue;
        for (k = 0; k < n_looked; k++)
            if (looked[k].n == n && memcmp(looked[k].d, d, n) == 0)
                break;
        if (k < n_looked) /* looked in already */
            continue;
        if (n_looked == PH_IMAGE_PATH_DIRS) {
            (*skipped)++;
            continue;
        }
        looked[n_looked].d = d;
        looked[n_looked++].n = n;
        snprintf(cand, sizeof cand, "%.*s/%s", (int)n, d, prog);
        if (b->ops->archive_stat(b, id, cand, &found, err) < 0)
            return -1;
        if (found) {
            snprintf(out, len, "%s", cand);
            return 0;
        }
    }
    return 0;
}

/* The program a shell wrapper runs: `sh -c "exec prog ..."` or `sh -c
 * "prog ..."`, when the command's first word is a plain path; NULL else. */
static const char *
wrapped_program(char *const *argv, size_t argc, char *buf, size_t len)
{
    const char *sh = argc > 0 ? strrchr(argv[0], '/') : NULL, *c;
    size_t n;

    sh = sh ? sh + 1 : argc > 0 ? argv[0] : "";
    if (argc < 3 || strcmp(argv[1], "-c") != 0 ||
        (strcmp(sh, "sh") != 0 && strcmp(sh, "bash") != 0 && strcmp(sh, "dash") != 0 && strcmp(sh, "ash") != 0))
        return NULL;
    c = argv[2] + strspn(argv[2], " \t");
    if (strncmp(c, "exec ", 5) == 0)
        c += 5 + strspn(c + 5, " \t");
    n = strspn(c, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-");
    if (n == 0 || n >= len || (c[n] != '\0' && c[n] != ' ' && c[n] != '\t'))
        return NULL;
    snprintf(buf, len, "%.*s", (int)n, c);
    return buf;
}

int
ph_image_program_in(ph_backend *b, const char *id, char *const *argv, size_t argc, const char *path_var,
                    const char *workdir, ph_image_program_t *out, ph_error_t *err)
{
    char path[PATH_MAX], word[PATH_MAX];
    const char *inner;

    memset(out, 0, sizeof *out);
    out->linked = -1;
    if (argc == 0)
        return 0;
    if (program_resolve(b, id, argv[0], path_var, workdir, path, sizeof path, &out->path_skipped, err) < 0)
        return -1;
    if (path[0] != '\0' && (out->linked = program_linked(b, id, path, out->path, sizeof out->path, err)) == -2)
        return -1;
    snprintf(out->runs, sizeof out->runs, "%s", out->path);
    /* a shell wrapper: what it execs is what the sampler must get into */
    if (out->linked == 1 && (inner = wrapped_program(argv, argc, word, sizeof word)) != NULL) {
        int linked;

        if (program_resolve(b, id, inner, path_var, workdir, path, sizeof path, &out->path_skipped, err) < 0)
            return -1;
        if (path[0] != '\0') {
            if ((linked = program_linked(b, id, path, word, sizeof word, err)) == -2)
                return -1;
            if (linked >= 0)
                snprintf(out->runs, sizeof out->runs, "%s", word);
            if (linked == 0) {
                out->linked = 0;
                snprintf(out->path, sizeof out->path, "%s", word);
            }
        }
    }
    return 0;
}

int
ph_image_program(ph_backend *b, const char *image, char *const *argv, size_t argc, const char *path_var,
                 const char *workdir, ph_image_program_t *out, ph_error_t *err)
{
    char *id = NULL;
    int rc;

    memset(out, 0, sizeof *out);
    out->linked = -1;
    if (argc == 0)
        return 0;
    if ((b = b->ops->images(b, err)) == NULL || probe_create(b, image, &id, err) < 0)
        return -1;
    rc = ph_image_program_in(b, id, argv, argc, path_var, workdir, out, err);
    return probe_done(b, &id, rc, image, "look at the program of image", err);
}

/* ---- can a mode run there ---------------------------------------------- */

int
ph_image_tree_serves(const ph_profile *p, const ph_image_facts *f)
{
    if (!p->has_tools)
        return 0;
    for (size_t i = 0; i < p->tools_libc.n; i++)
        if (strcmp(p->tools_libc.v[i], f->libc) == 0)
            return 1;
    return p->tools_libc.n == 0;
}

const char *
ph_image_unfit(const ph_profile *p, const ph_image_facts *f, char *buf, size_t len)
{
    const char *why = p->limits ? p->limits : "";
    const char *sep = p->limits ? ": " : "";

    if (f->pm[0] == '\0' && !ph_image_tree_serves(p, f)) {
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
        char libcs[64] = "";

        for (size_t i = 0; i < p->libc.n; i++) {
            if (strcmp(p->libc.v[i], f->libc) == 0)
                return NULL;
            snprintf(libcs + strlen(libcs), sizeof libcs - strlen(libcs), "%s%s", i ? " or " : "", p->libc.v[i]);
        }
        snprintf(buf, len, "mode `%s` needs a service linked against %s, and the image has %s%s%s%s", p->name,
                 libcs, f->libc[0] ? f->libc : "no C library loader (static binaries only)",
                 f->libc[0] ? "'s loader" : "", sep, why);
        return buf;
    }
    return NULL;
}

int
ph_image_sampler_env(ph_strv *env, const char *libc)
{
    static const char glibc[] = PH_TOOLS_MOUNT "/lib/" PH_SAMPLER_GLIBC, musl[] = PH_TOOLS_MOUNT "/lib/" PH_SAMPLER_MUSL;

    if (libc == NULL || strcmp(libc, "musl") != 0)
        return 0;
    for (size_t i = 0; i < env->n; i++) {
        const char *at, *from = env->v[i];
        char *r = NULL;
        size_t n = 0;
        FILE *m;

        if (strstr(from, glibc) == NULL)
            continue;
        if ((m = open_memstream(&r, &n)) == NULL)
            return -1;
        /* every occurrence: LD_PRELOAD may name it beside other libraries */
        while ((at = strstr(from, glibc)) != NULL) {
            fprintf(m, "%.*s%s", (int)(at - from), from, musl);
            from = at + strlen(glibc);
        }
        fputs(from, m);
        if (fclose(m) != 0 || r == NULL) {
            free(r);
            return -1;
        }
        free(env->v[i]);
        env->v[i] = r;
    }
    return 0;
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
