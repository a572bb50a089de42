/* test_image.c - profiling any image (ph_image_facts.c): the Dockerfile
 * written for each package manager and for none, exactly; package names
 * that are not refused; which shipped mode runs in which image; and what
 * the probe finds in images made of nothing but the files it looks for
 * (imported into the real Engine from tars written here, so the
 * Alpine/Fedora/UBI answers are checked without their registries).
 *
 * What a test makes in the Engine is tagged ph-unittest/probe:<pid>-...
 * and removed by its teardown, which runs whether its assertions passed
 * or not; the group's setup and teardown sweep what a killed run left
 * (tu_engine_sweep: this pid's and dead pids', never a live
 * suite's). */
#include "test_engine_util.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ph_backend_engine.h"
#include "ph_engine.h"
#include "ph_image.h"
#include "ph_profile.h"
#include "ph_tar.h"

static ph_image_facts
facts(const char *pm, const char *libc)
{
    ph_image_facts f = { .shell = pm[0] != '\0' };

    snprintf(f.pm, sizeof f.pm, "%s", pm);
    snprintf(f.libc, sizeof f.libc, "%s", libc);
    return f;
}

static char *
gen(const char *pm, const char *const *pkgs, size_t n)
{
    ph_image_facts f = facts(pm, "glibc");
    ph_strv v = { 0 };
    ph_error_t err = NULL;
    char *text = NULL;

    for (size_t i = 0; i < n; i++)
        assert_int_equal(ph_strv_push(&v, pkgs[i]), 0);
    if (ph_image_dockerfile(&f, "sha256:base", "profharness-tools:t", &v, &text, &err) < 0)
        fail_msg("%s", err->msg);
    ph_strv_free(&v);
    return text;
}

#define TAIL_PM "COPY opt/ /opt/profharness/\nRUN mkdir -p -m 1777 /opt/profiling\n"

/* The build steps for every package manager, as the Engine gets them. */
static void
test_dockerfile_per_package_manager(void **state)
{
    static const char *const pkgs[] = { "strace", "valgrind", "linux-perf=6.1*" };
    static const struct {
        const char *pm, *want;
    } cases[] = {
        { "apt", "# Written by profharness (ph_image_facts.c) for an image with the package manager apt.\n"
                 "FROM sha256:base\nUSER 0\n"
                 "RUN set -e; apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                 "--no-install-recommends strace valgrind linux-perf=6.1* >/dev/null; rm -rf /var/lib/apt/lists/*\n"
                 TAIL_PM },
        { "apk", "# Written by profharness (ph_image_facts.c) for an image with the package manager apk.\n"
                 "FROM sha256:base\nUSER 0\n"
                 "RUN apk add --no-cache --quiet strace valgrind linux-perf=6.1*\n" TAIL_PM },
        { "dnf", "# Written by profharness (ph_image_facts.c) for an image with the package manager dnf.\n"
                 "FROM sha256:base\nUSER 0\n"
                 "RUN dnf install -y -q --setopt=install_weak_deps=False strace valgrind linux-perf=6.1* && "
                 "dnf clean all\n" TAIL_PM },
        { "microdnf", "# Written by profharness (ph_image_facts.c) for an image with the package manager microdnf.\n"
                      "FROM sha256:base\nUSER 0\n"
                      "RUN microdnf install -y --nodocs strace valgrind linux-perf=6.1* && microdnf clean all\n"
                      TAIL_PM },
        { "yum", "# Written by profharness (ph_image_facts.c) for an image with the package manager yum.\n"
                 "FROM sha256:base\nUSER 0\n"
                 "RUN yum install -y -q strace valgrind linux-perf=6.1* && yum clean all\n" TAIL_PM },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = gen(cases[i].pm, pkgs, 3);

        if (strcmp(text, cases[i].want) != 0)
            fail_msg("%s:\n--- got\n%s--- want\n%s", cases[i].pm, text, cases[i].want);
        free(text);
    }
    /* Nothing to install: no install step at all. */
    {
        char *text = gen("apk", NULL, 0);

        assert_null(strstr(text, "RUN apk"));
        assert_non_null(strstr(text, TAIL_PM));
        free(text);
    }
}

/* No package manager: the tools tree from the tools image, and a RUN
 * that needs no shell and no mkdir in the image; no user lookup either. */
static void
test_dockerfile_no_package_manager(void **state)
{
    static const char *const pkgs[] = { "ignored" };
    ph_image_facts f = facts("", "");
    ph_strv v = { 0 };
    ph_error_t err = NULL;
    char *text = NULL;

    (void)state;
    assert_int_equal(ph_strv_push(&v, pkgs[0]), 0);
    assert_int_equal(ph_image_dockerfile(&f, "sha256:scratchy", "profharness-tools:abc", &v, &text, &err), 0);
    assert_string_equal(text,
                        "# Written by profharness (ph_image_facts.c) for an image with no package manager and no C "
                        "library.\n"
                        "FROM profharness-tools:abc AS tools\n"
                        "FROM sha256:scratchy\n"
                        "USER 0\n"
                        "COPY --from=tools /opt/profharness/tools/ /opt/profharness/tools/\n"
                        "COPY opt/ /opt/profharness/\n"
                        "RUN [\"/opt/profharness/tools/bin/busybox\", \"mkdir\", \"-p\", \"-m\", \"1777\", "
                        "\"/opt/profiling\"]\n");
    free(text);
    /* It cannot be written without the tools image. */
    assert_int_equal(ph_image_dockerfile(&f, "sha256:scratchy", NULL, &v, &text, &err), -1);
    assert_null(text);
    assert_non_null(strstr(err->msg, "tools image"));
    ph_error_free(&err);
    ph_strv_free(&v);
}

/* Package names end up in a shell command: anything else is refused. */
static void
test_package_names(void **state)
{
    static const char *const bad[] = { "strace;reboot", "$(id)", "a b", "-o=Dpkg::x", "", "x`y`", "p|q", "a\nb",
                                       "x>y", "'q'" };
    static const char *const good[] = { "strace", "libstdc++6", "linux-perf=6.1.*", "gcc:amd64", "perf-6.1~rc1",
                                        "glibc-*" };
    ph_image_facts f = facts("apt", "glibc");

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ph_strv v = { 0 };
        ph_error_t err = NULL;
        char *text = (char *)"untouched";

        assert_int_equal(ph_strv_push(&v, "fine"), 0);
        assert_int_equal(ph_strv_push(&v, bad[i]), 0);
        assert_int_equal(ph_image_dockerfile(&f, "b", NULL, &v, &text, &err), -1);
        assert_null(text);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        assert_non_null(strstr(err->msg, "is not a package name"));
        ph_error_free(&err);
        ph_strv_free(&v);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ph_strv v = { 0 };
        ph_error_t err = NULL;
        char *text = NULL;

        assert_int_equal(ph_strv_push(&v, good[i]), 0);
        if (ph_image_dockerfile(&f, "b", NULL, &v, &text, &err) < 0)
            fail_msg("%s: %s", good[i], err->msg);
        assert_non_null(strstr(text, good[i]));
        free(text);
        ph_strv_free(&v);
    }
    /* A package manager the generator does not know. */
    {
        ph_image_facts z = facts("zypper", "glibc");
        ph_strv v = { 0 };
        ph_error_t err = NULL;
        char *text = NULL;

        assert_int_equal(ph_strv_push(&v, "strace"), 0);
        assert_int_equal(ph_image_dockerfile(&z, "b", NULL, &v, &text, &err), -1);
        assert_non_null(strstr(err->msg, "no way to install packages with `zypper`"));
        ph_error_free(&err);
        ph_strv_free(&v);
    }
}

/* Which shipped mode runs where, and the words when it cannot. */
static void
test_modes_per_image(void **state)
{
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    char why[1024];
    static const struct {
        const char *pm, *libc, *mode;
        const char *unfit; /* NULL: it runs there */
    } cases[] = {
        /* FROM scratch: a static program, nothing else. */
        { "", "", "strace", NULL },
        { "", "", "perf", NULL },
        { "", "", "massif", "needs the image's package manager, and the image has none: valgrind must start" },
        { "", "", "callgrind", "needs the image's package manager" },
        { "", "", "flamegraph", "needs a service linked against glibc or musl, and the image has no C library "
                                "loader (static binaries only): the sampler is loaded" },
        /* distroless: glibc, no package manager. */
        { "", "glibc", "strace", NULL },
        { "", "glibc", "perf", NULL },
        { "", "glibc", "flamegraph", NULL },
        { "", "glibc", "massif", NULL }, /* valgrind from the tree */
        { "", "glibc", "callgrind", NULL },
        /* no package manager, musl: valgrind from the tree too (musl's
         * malloc replaced by somalloc=NONE: profiles/massif.yaml) */
        { "", "musl", "massif", NULL },
        { "", "musl", "callgrind", NULL },
        /* ... the sampler's musl build from the tree */
        { "", "musl", "flamegraph", NULL },
        { "", "musl", "wall", NULL },
        { "", "musl", "heap", NULL },
        /* Alpine: apk and musl. */
        { "apk", "musl", "strace", NULL },
        { "apk", "musl", "perf", NULL },
        { "apk", "musl", "massif", NULL },
        { "apk", "musl", "flamegraph", NULL },
        { "apk", "musl", "wall", NULL },
        { "apk", "musl", "heap", NULL },
        /* Fedora, UBI: dnf, microdnf, yum and glibc: all of them. */
        { "dnf", "glibc", "flamegraph", NULL },
        { "microdnf", "glibc", "callgrind", NULL },
        { "yum", "glibc", "perf", NULL },
        { "apt", "glibc", "massif", NULL },
    };

    (void)state;
    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ph_image_facts f = facts(cases[i].pm, cases[i].libc);
        ph_profile *p = ph_profiles_find(&set, cases[i].mode);
        const char *got;

        assert_non_null(p);
        got = ph_image_unfit(p, &f, why, sizeof why);
        if (cases[i].unfit == NULL && got != NULL)
            fail_msg("%s in (%s, %s): unfit: %s", cases[i].mode, cases[i].pm, cases[i].libc, got);
        if (cases[i].unfit != NULL && (got == NULL || strstr(got, cases[i].unfit) == NULL))
            fail_msg("%s in (%s, %s): got `%s`, want `%s`", cases[i].mode, cases[i].pm, cases[i].libc,
                     got ? got : "(fit)", cases[i].unfit);
    }
    ph_profiles_free(&set);
}

/* The sampler named in the environment is the build for the image's C
 * library: musl's where musl's loader is, every occurrence in a value
 * (LD_PRELOAD beside the user's libraries, JAVA_TOOL_OPTIONS' -agentpath);
 * glibc's and a loaderless image's environment untouched. */
static void
test_sampler_env(void **state)
{
    static const char *const in[] = {
        "LD_PRELOAD=/opt/profharness/lib/libphsampler.so",
        "LD_PRELOAD=/usr/lib/libmine.so:/opt/profharness/lib/libphsampler.so",
        "JAVA_TOOL_OPTIONS=-Xss1m -agentpath:/opt/profharness/lib/libphsampler.so -agentpath:/opt/profharness/lib/libphsampler.so",
        "PH_SAMPLER_DIR=/opt/profiling/svc",
        "MINE=/usr/lib/libphsampler.so",
    };
    static const char *const musl[] = {
        "LD_PRELOAD=/opt/profharness/lib/libphsampler-musl.so",
        "LD_PRELOAD=/usr/lib/libmine.so:/opt/profharness/lib/libphsampler-musl.so",
        "JAVA_TOOL_OPTIONS=-Xss1m -agentpath:/opt/profharness/lib/libphsampler-musl.so -agentpath:/opt/profharness/lib/libphsampler-musl.so",
        "PH_SAMPLER_DIR=/opt/profiling/svc",
        "MINE=/usr/lib/libphsampler.so",
    };
    static const char *const libcs[] = { "glibc", "", "musl" };

    (void)state;
    for (size_t k = 0; k < sizeof libcs / sizeof libcs[0]; k++) {
        ph_strv env = { 0 };

        for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
            assert_int_equal(ph_strv_push(&env, in[i]), 0);
        assert_int_equal(ph_image_sampler_env(&env, libcs[k]), 0);
        assert_int_equal(env.n, sizeof in / sizeof in[0]);
        for (size_t i = 0; i < env.n; i++)
            assert_string_equal(env.v[i], strcmp(libcs[k], "musl") == 0 ? musl[i] : in[i]);
        ph_strv_free(&env);
    }
    assert_int_equal(ph_image_sampler_env(&(ph_strv){ 0 }, NULL), 0);
}

/* Whether the tools tree serves a mode: valgrind where the image has a
 * C library's loader (glibc's or musl's: the program runs on it), not in
 * an image of static programs only; strace and the sampler anywhere they
 * fit; the rest through the package manager (a profiling image). */
static void
test_tree_serves(void **state)
{
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    static const struct {
        const char *libc, *mode;
        int serves;
    } cases[] = {
        { "glibc", "massif", 1 }, { "glibc", "callgrind", 1 }, { "musl", "massif", 1 },
        { "musl", "callgrind", 1 }, { "", "massif", 0 }, { "musl", "strace", 1 },
        { "", "perf", 1 }, { "glibc", "flamegraph", 1 },
    };

    (void)state;
    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ph_image_facts f = facts("apt", cases[i].libc);
        ph_profile *p = ph_profiles_find(&set, cases[i].mode);

        assert_non_null(p);
        if (ph_image_tree_serves(p, &f) != cases[i].serves)
            fail_msg("%s with libc `%s`: tree serves %d, want %d", cases[i].mode, cases[i].libc,
                     !cases[i].serves, cases[i].serves);
    }
    ph_profiles_free(&set);
}

/* A mode that names packages for apt only cannot be installed by apk. */
static void
test_mode_without_packages_for_manager(void **state)
{
    ph_profile p;
    ph_error_t err = NULL;
    char why[1024];
    ph_image_facts apk = facts("apk", "musl"), apt = facts("apt", "glibc");
    const char *path = tu_write("aptonly.yaml", "name: aptonly\nwrap: [tracer, --]\npackages: [tracer]\n");

    (void)state;
    assert_int_equal(ph_profile_load(path, &p, &err), 0);
    assert_null(ph_image_unfit(&p, &apt, why, sizeof why));
    assert_non_null(ph_image_unfit(&p, &apk, why, sizeof why));
    assert_non_null(strstr(why, "mode `aptonly` names no `apk` packages (`packages: {apk: [...]}`"));
    ph_profile_free(&p);
}

/* ---- whether a program takes an LD_PRELOAD ----------------------------- */

static void
put_word(unsigned char *p, int n, int le, uint64_t v)
{
    for (int i = 0; i < n; i++)
        p[le ? i : n - 1 - i] = (unsigned char)(v >> (8 * i));
}

/* An ELF header (class IS64, byte order LE, e_type TYPE) with program
 * headers of TYPES at PHOFF. */
static size_t
mk_elf(unsigned char *b, size_t cap, int is64, int le, int type, uint64_t phoff, const uint32_t *types, int n)
{
    size_t phent = is64 ? 56 : 32, end = (size_t)phoff + (size_t)n * phent;

    assert_true(end <= cap);
    memset(b, 0, cap);
    memcpy(b, "\177ELF", 4);
    b[4] = is64 ? 2 : 1;
    b[5] = le ? 1 : 2;
    b[6] = 1;
    put_word(b + 16, 2, le, (uint64_t)type);
    if (is64) {
        put_word(b + 32, 8, le, phoff);
        put_word(b + 54, 2, le, phent);
        put_word(b + 56, 2, le, (uint64_t)n);
    } else {
        put_word(b + 28, 4, le, phoff);
        put_word(b + 42, 2, le, phent);
        put_word(b + 44, 2, le, (uint64_t)n);
    }
    for (int i = 0; i < n; i++)
        put_word(b + phoff + (size_t)i * phent, 4, le, types[i]);
    return end;
}

/* The first LEN bytes of the file PATH. */
static size_t
head_of(const char *path, unsigned char *b, size_t len)
{
    FILE *f = fopen(path, "rb");
    size_t n;

    assert_non_null(f);
    n = fread(b, 1, len, f);
    fclose(f);
    return n;
}

/* PT_INTERP or not, on real programs (the static shim, this dynamic test)
 * and on headers made here: both classes and byte orders, static-pie
 * (ET_DYN without PT_INTERP), and what is not known (not ELF, cut short,
 * program headers past what was read, not a program). */
static void
test_elf_interp(void **state)
{
    static const uint32_t dyn[] = { 6, 3, 1, 1, 2 }, stat[] = { 1, 1, 7, 0x6474e551 }, spie[] = { 6, 1, 2, 0x6474e552 },
                          late[] = { 6, 1, 1, 2, 3 };
    unsigned char b[4096];
    size_t n;

    (void)state;
    n = head_of("build/ph-init", b, 1024);
    assert_int_equal(ph_image_elf_interp(b, n), 0);
    n = head_of("/proc/self/exe", b, 1024);
    assert_int_equal(ph_image_elf_interp(b, n), 1);
    assert_int_equal(ph_image_elf_interp(b, 64), -1); /* its program headers are past 64 bytes */
    assert_int_equal(ph_image_elf_interp(b, 40), -1);
    n = mk_elf(b, sizeof b, 1, 1, 2, 64, dyn, 5);
    assert_int_equal(ph_image_elf_interp(b, n), 1);
    assert_int_equal(ph_image_elf_interp(b, 64 + 56 + 4), 1); /* PT_INTERP is read: enough */
    n = mk_elf(b, sizeof b, 1, 1, 2, 64, late, 5);
    assert_int_equal(ph_image_elf_interp(b, n), 1);
    assert_int_equal(ph_image_elf_interp(b, n - 53), -1); /* the last one is not */
    n = mk_elf(b, sizeof b, 1, 1, 2, 64, stat, 4);
    assert_int_equal(ph_image_elf_interp(b, n), 0);
    n = mk_elf(b, sizeof b, 1, 1, 3, 64, spie, 4); /* static-pie */
    assert_int_equal(ph_image_elf_interp(b, n), 0);
    n = mk_elf(b, sizeof b, 0, 1, 2, 52, dyn, 5); /* 32-bit */
    assert_int_equal(ph_image_elf_interp(b, n), 1);
    n = mk_elf(b, sizeof b, 0, 0, 2, 52, stat, 4); /* big-endian */
    assert_int_equal(ph_image_elf_interp(b, n), 0);
    n = mk_elf(b, sizeof b, 1, 0, 3, 200, dyn, 5);
    assert_int_equal(ph_image_elf_interp(b, n), 1);
    n = mk_elf(b, sizeof b, 1, 1, 1, 64, dyn, 5); /* ET_REL: not a program */
    assert_int_equal(ph_image_elf_interp(b, n), -1);
    n = mk_elf(b, sizeof b, 1, 1, 2, 64, dyn, 0); /* no program headers */
    assert_int_equal(ph_image_elf_interp(b, n + 64), -1);
    n = mk_elf(b, sizeof b, 1, 1, 2, 64, dyn, 5);
    put_word(b + 32, 8, 1, UINT64_MAX - 8); /* an offset that wraps */
    assert_int_equal(ph_image_elf_interp(b, n), -1);
    assert_int_equal(ph_image_elf_interp("#!/bin/sh\nexec app\n" "..................................................", 60),
                     -1);
}

/* Program header I of the ELF in B (as mk_elf made it) a PT_NOTE of the
 * SIZE bytes at OFF, notes aligned to ALIGN. */
static void
note_phdr(unsigned char *b, int is64, int le, int i, uint64_t phoff, uint64_t off, uint64_t size, uint64_t align)
{
    unsigned char *p = b + phoff + (size_t)i * (is64 ? 56 : 32);

    put_word(p, 4, le, 4);
    if (is64) {
        put_word(p + 8, 8, le, off);
        put_word(p + 32, 8, le, size);
        put_word(p + 48, 8, le, align);
    } else {
        put_word(p + 4, 4, le, off);
        put_word(p + 16, 4, le, size);
        put_word(p + 28, 4, le, align);
    }
}

/* A note NAME (with its NUL) of TYPE and DESCSZ bytes at B, padded to
 * ALIGN: its size. */
static size_t
mk_note(unsigned char *b, int le, const char *name, uint32_t type, uint32_t descsz, size_t align)
{
    size_t nl = strlen(name) + 1, at = 12 + ((nl + align - 1) & ~(align - 1));

    put_word(b, 4, le, nl);
    put_word(b + 4, 4, le, descsz);
    put_word(b + 8, 4, le, type);
    memcpy(b + 12, name, nl);
    memset(b + at, 0xab, descsz);
    return at + ((descsz + align - 1) & ~(align - 1));
}

/* A GNU build-id note or not (what perf's build-id cache needs): this
 * test (gcc, Debian: one), headers made here (a Go note only, as a static
 * Go binary has; an ABI tag; 8-aligned notes; 32-bit and big-endian), and
 * what is not known (notes past what was read) or malformed (sizes past
 * the segment: none, never read past it). */
static void
test_elf_build_id(void **state)
{
    static const uint32_t t[] = { 6, 1, 1, 1 };
    static unsigned char b[65536];
    size_t n, m;

    (void)state;
    n = head_of("/proc/self/exe", b, sizeof b);
    assert_int_equal(ph_image_elf_build_id(b, n), 1);
    assert_int_equal(ph_image_elf_build_id(b, 40), -1);

    /* a Go binary: its own note ("Go", type 4), no GNU one */
    n = mk_elf(b, sizeof b, 1, 1, 2, 64, t, 4);
    m = mk_note(b + 1024, 1, "Go", 4, 20, 4);
    note_phdr(b, 1, 1, 1, 64, 1024, m, 4);
    assert_int_equal(ph_image_elf_build_id(b, 4096), 0);
    assert_int_equal(ph_image_elf_build_id(b, 1030), -1); /* the notes are past what was read */
    /* and a GNU build-id after it, in the same segment */
    m += mk_note(b + 1024 + m, 1, "GNU", 3, 20, 4);
    note_phdr(b, 1, 1, 1, 64, 1024, m, 4);
    assert_int_equal(ph_image_elf_build_id(b, 4096), 1);
    /* an ABI tag (GNU, type 1) is not a build-id; 8-aligned notes */
    n = mk_elf(b, sizeof b, 1, 1, 3, 64, t, 4);
    m = mk_note(b + 1024, 1, "GNU", 1, 20, 8); /* 20: padded to 24 */
    note_phdr(b, 1, 1, 2, 64, 1024, m, 8);
    assert_int_equal(ph_image_elf_build_id(b, 4096), 0);
    m += mk_note(b + 1024 + m, 1, "GNU", 3, 20, 8);
    note_phdr(b, 1, 1, 2, 64, 1024, m, 8);
    assert_int_equal(ph_image_elf_build_id(b, 4096), 1);
    /* 32-bit, big-endian */
    n = mk_elf(b, sizeof b, 0, 0, 2, 52, t, 4);
    m = mk_note(b + 512, 0, "GNU", 3, 20, 4);
    note_phdr(b, 0, 0, 3, 52, 512, m, 4);
    assert_int_equal(ph_image_elf_build_id(b, n + 1024), 1);
    /* malformed: a descsz past the segment, a name past it */
    n = mk_elf(b, sizeof b, 1, 1, 2, 64, t, 4);
    m = mk_note(b + 1024, 1, "GNU", 3, 20, 4);
    put_word(b + 1024 + 4, 4, 1, 0xffffffffu);
    note_phdr(b, 1, 1, 1, 64, 1024, m, 4);
    assert_int_equal(ph_image_elf_build_id(b, 4096), 0);
    put_word(b + 1024, 4, 1, 0xfffffff0u);
    assert_int_equal(ph_image_elf_build_id(b, 4096), 0);
    (void)n;
}

/* LEN bytes that end where an unreadable page begins: a read one byte
 * past them faults, in any build (and ASan says where). */
static unsigned char *
guarded(size_t len, void **map, size_t *map_len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page * page;
    unsigned char *p = mmap(NULL, n + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    assert_true(p != MAP_FAILED);
    assert_int_equal(mprotect(p + n, page, PROT_NONE), 0);
    *map = p;
    *map_len = n + page;
    return p + n - len;
}

/* An image's program is untrusted: a note segment whose last note is not
 * padded to the segment's end (a descsz of 5 in 4-aligned notes), the
 * segment the end of what was read.  The walk stepped past the segment's
 * end and read the next "header" there: a heap-buffer-overflow under
 * ASan, a fault against an unreadable page.  Then the same with every
 * length the walk reads at each boundary: descriptions up to the
 * segment's end, cut by it, a name past it; a build-id before such a
 * note or as the last one; 8-aligned notes; a segment shorter than a
 * note's header. */
static void
test_elf_notes_never_read_past_the_segment(void **state)
{
    static const uint32_t t[] = { 6, 1, 1, 4 }; /* PT_NOTE last: the segment is the end of the head */
    unsigned char proto[4096];
    size_t n, m;

    (void)state;
    for (size_t align = 4; align <= 8; align += 4) {
        for (uint32_t descsz = 0; descsz <= 9; descsz++) {
            for (int c = 0; c < 6; c++) {
                int id_first = c >= 3, extra = c % 3, want;
                unsigned char *b;
                void *map;
                size_t map_len, seg, last;

                memset(proto, 0, sizeof proto);
                n = mk_elf(proto, sizeof proto, 1, 1, 2, 64, t, 4);
                /* a GNU build-id (or an ABI tag, not one), then a Go note
                 * whose description ends the segment, unpadded */
                m = mk_note(proto + n, 1, "GNU", id_first ? 3 : 1, 16, align);
                last = n + m;
                seg = m + 12 + ((3 + align - 1) & ~(align - 1)) + descsz;
                mk_note(proto + last, 1, "Go", 4, descsz, align);
                if (extra == 1 && descsz > 0)
                    seg -= 1; /* the description cut by the segment's end */
                if (extra == 2)
                    put_word(proto + last, 4, 1, seg - m - 12 + 1); /* a name one byte past it */
                note_phdr(proto, 1, 1, 3, 64, n, seg, align);
                want = id_first;
                /* on the heap, exactly (what ASan watches), then against
                 * a page that cannot be read (what any build sees) */
                b = malloc(n + seg);
                assert_non_null(b);
                memcpy(b, proto, n + seg);
                assert_int_equal(ph_image_elf_build_id(b, n + seg), want);
                free(b);
                b = guarded(n + seg, &map, &map_len);
                memcpy(b, proto, n + seg);
                if (ph_image_elf_build_id(b, n + seg) != want)
                    fail_msg("align %zu, descsz %u, case %d: want %d", align, descsz, c, want);
                munmap(map, map_len);
            }
        }
    }
    /* a segment shorter than one note header, and empty */
    for (size_t seg = 0; seg < 12; seg++) {
        unsigned char *b;
        void *map;
        size_t map_len;

        memset(proto, 0, sizeof proto);
        n = mk_elf(proto, sizeof proto, 0, 0, 2, 52, t, 4); /* 32-bit, big-endian */
        memset(proto + n, 0xff, 12);
        note_phdr(proto, 0, 0, 3, 52, n, seg, 4);
        b = guarded(n + seg, &map, &map_len);
        memcpy(b, proto, n + seg);
        assert_int_equal(ph_image_elf_build_id(b, n + seg), 0);
        munmap(map, map_len);
    }
}

/* ---- the probe, on images imported from tars ------------------------- */

static ph_engine *e;
static ph_backend *be; /* the Engine backend around E */

/* What a killed run of this suite left: gone before the first test and
 * after the last. */
static int
group_sweep(void **state)
{
    (void)state;
    tu_engine_sweep();
    return 0;
}

/* A test that talks to the Engine: the backend and a temp dir; after it,
 * whether its assertions held or not, its images and theirs probe
 * containers removed, the backend closed, the temp dir removed. */
static int
engine_setup(void **state)
{
    ph_error_t err = NULL;

    be = ph_backend_engine_new(&err);
    if (be == NULL) {
        fprintf(stderr, "test_image: no Docker Engine answers: %s\n", err ? err->msg : "?");
        ph_error_free(&err);
        return -1;
    }
    e = ph_backend_engine_client(be);
    return tu_setup(state);
}

static int
engine_teardown(void **state)
{
    tu_engine_sweep();
    ph_backend_close(be);
    be = NULL;
    e = NULL;
    return tu_teardown(state);
}

/* Probe containers of this process's images still there. */
static int
ours_left(void)
{
    const char *labels[] = { "io.profharness.probe" };
    json_t *list = NULL, *c;
    char mine[64];
    size_t k;
    int n = 0;

    snprintf(mine, sizeof mine, "ph-unittest/probe:%d-", (int)getpid());
    assert_int_equal(ph_engine_containers_by_label(e, labels, 1, &list, NULL), 0);
    json_array_foreach(list, k, c) {
        const char *img = json_string_value(json_object_get(c, "Image"));

        n += img != NULL && strncmp(img, mine, strlen(mine)) == 0;
    }
    json_decref(list);
    return n;
}

static ssize_t
read_cb(void *ud, char *buf, size_t len)
{
    size_t *m = ud; /* m[0] data pointer, m[1] length, m[2] offset */
    size_t n = m[1] - m[2] < len ? m[1] - m[2] : len;

    memcpy(buf, (const char *)m[0] + m[2], n);
    m[2] += n;
    return (ssize_t)n;
}

/* An image ph-unittest/probe:TAG of DIR (NULL: none) and EXTRA. */
static void
import_tar(const char *tag, const char *dir, const ph_tar_extra *extra, size_t n)
{
    ph_error_t err = NULL;
    void *tar = NULL;
    size_t tar_len = 0, m[3];
    long st = 0;
    char path[512];

    assert_int_equal(ph_tar_context_build(dir, extra, n, 64 << 20, &tar, &tar_len, &err), 0);
    m[0] = (size_t)tar;
    m[1] = tar_len;
    m[2] = 0;
    snprintf(path, sizeof path, "/images/create?fromSrc=-&repo=ph-unittest/probe&tag=%s", tag);
    if (ph_engine_stream(e, "POST", path, "application/x-tar", read_cb, m, (long long)tar_len, NULL, NULL, 120, &st,
                         &err) < 0)
        fail_msg("import: %s", err->msg);
    free(tar);
}

/* An image of exactly FILES (empty files: the probe never runs them). */
static void
import(const char *tag, const char *const *files, size_t n)
{
    ph_tar_extra extra[16];

    assert_true(n <= 16);
    for (size_t i = 0; i < n; i++)
        extra[i] = (ph_tar_extra){ .name = files[i], .data = "", .len = 0, .mode = 0755 };
    import_tar(tag, NULL, extra, n);
}

static void
test_probe(void **state)
{
    static const char *const scratch[] = { "hello" };
    static const char *const distroless[] = { "lib64/ld-linux-x86-64.so.2", "usr/bin/app" };
    static const char *const alpine[] = { "bin/sh", "sbin/apk", "lib/ld-musl-x86_64.so.1" };
    static const char *const ubi_micro[] = { "bin/sh", "usr/bin/microdnf", "lib64/ld-linux-x86-64.so.2" };
    static const char *const fedora[] = { "bin/sh", "usr/bin/dnf", "usr/bin/yum", "lib64/ld-linux-x86-64.so.2" };
    static const char *const no_shell[] = { "usr/bin/apt-get", "lib64/ld-linux-x86-64.so.2" };
    static const struct {
        const char *name;
        const char *const *files;
        size_t n;
        const char *pm, *libc;
        int shell;
    } cases[] = {
        { "scratch", scratch, 1, "", "", 0 },
        { "distroless", distroless, 2, "", "glibc", 0 },
        { "alpine", alpine, 3, "apk", "musl", 1 },
        { "ubimicro", ubi_micro, 3, "microdnf", "glibc", 1 },
        { "fedora", fedora, 4, "dnf", "glibc", 1 },
        /* A package manager with no shell to run it is none. */
        { "noshell", no_shell, 2, "", "glibc", 0 },
    };
    ph_error_t err = NULL;

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tag[128], ref[200];
        ph_image_facts f;

        snprintf(tag, sizeof tag, "%d-%s", (int)getpid(), cases[i].name);
        snprintf(ref, sizeof ref, "ph-unittest/probe:%s", tag);
        import(tag, cases[i].files, cases[i].n);
        memset(&f, 0x55, sizeof f);
        if (ph_image_probe(be, ref, &f, &err) < 0)
            fail_msg("%s: %s", cases[i].name, err->msg);
        if (strcmp(f.pm, cases[i].pm) != 0 || strcmp(f.libc, cases[i].libc) != 0 || f.shell != cases[i].shell)
            fail_msg("%s: got (%s, %s, %d), want (%s, %s, %d)", cases[i].name, f.pm, f.libc, f.shell, cases[i].pm,
                     cases[i].libc, cases[i].shell);
        assert_int_equal(ph_engine_image_remove(e, ref, 1, &err), 0);
    }
    /* The probe's containers are gone. */
    assert_int_equal(ours_left(), 0);
    /* An image that is not there says so, naming it. */
    {
        ph_image_facts f;

        assert_int_equal(ph_image_probe(be, "ph-unittest/probe:no-such-image", &f, &err), -1);
        assert_non_null(strstr(err->msg, "look into image `ph-unittest/probe:no-such-image`"));
        ph_error_free(&err);
    }
}

/* The program a command runs, found in an image as the kernel would find
 * it (PATH, links, a relative path, a shell wrapper's exec), and whether
 * it is static: the static shim as the app, a dynamic shell beside it. */
static void
test_program(void **state)
{
    static const struct {
        const char *argv[4];
        int argc;
        const char *path;
        int linked;
    } cases[] = {
        { { "/app" }, 1, "/app", 0 },
        { { "app-link" }, 1, "/app", 0 },                           /* PATH, then ../../../app */
        { { "./app" }, 1, "/app", 0 },                              /* from the working dir */
        { { "dyn" }, 1, "/usr/bin/dyn", 1 },
        { { "sh", "-c", "exec /app --serve" }, 3, "/app", 0 },       /* the wrapper's program */
        { { "/usr/bin/sh", "-c", "  app-link" }, 3, "/app", 0 },
        { { "sh", "-c", "exec dyn" }, 3, "/usr/bin/sh", 1 },
        { { "sh", "-c", "echo hi; /app" }, 3, "/usr/bin/sh", 1 },  /* not plain: the shell is what is known */
        { { "missing" }, 1, "", -1 },
        { { "/notes.txt" }, 1, "/notes.txt", -1 },
    };
    char dir[600], cmd[1400], tag[64], ref[128];
    ph_error_t err = NULL;

    (void)state;
    snprintf(dir, sizeof dir, "%s/root", test_dir);
    snprintf(cmd, sizeof cmd,
             "set -e; mkdir -p %s/usr/bin %s/usr/local/bin; cp build/ph-init %s/app; cp /bin/true %s/usr/bin/dyn; "
             "cp /bin/dash %s/usr/bin/sh; ln -s ../../../app %s/usr/local/bin/app-link; echo hi > %s/notes.txt",
             dir, dir, dir, dir, dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(tag, sizeof tag, "%d-program", (int)getpid());
    snprintf(ref, sizeof ref, "ph-unittest/probe:%s", tag);
    import_tar(tag, dir, NULL, 0); /* links stay links */
    if (getenv("PH_TEST_IMAGE_FAIL"))
        fail_msg("failed on purpose (PH_TEST_IMAGE_FAIL), the image imported");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ph_image_program_t p;

        if (ph_image_program(be, ref, (char *const *)cases[i].argv, (size_t)cases[i].argc, "/usr/bin:/usr/local/bin",
                             "/", &p, &err) < 0)
            fail_msg("%s: %s", cases[i].argv[0], err->msg);
        if (p.linked != cases[i].linked || strcmp(p.path, cases[i].path) != 0)
            fail_msg("case %zu (%s): got %s %d, want %s %d", i, cases[i].argv[0], p.path, p.linked, cases[i].path,
                     cases[i].linked);
    }
    assert_int_equal(ph_engine_image_remove(e, ref, 1, &err), 0);
}

/* A test that fails leaves nothing in the Engine: test_program run alone
 * in a child of this suite, made to fail right after it imported its
 * image; then neither its image nor a probe container of it is left. */
static void
test_a_failed_test_leaves_nothing(void **state)
{
    char self[PATH_MAX], ref[128];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    int st, found = 1;
    ph_error_t err = NULL;
    pid_t p;

    (void)state;
    assert_true(n > 0);
    self[n] = '\0';
    p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        int fd = open("/dev/null", O_WRONLY);

        dup2(fd, 1);
        dup2(fd, 2);
        setenv("PH_TEST_IMAGE_ONLY", "test_program", 1);
        setenv("PH_TEST_IMAGE_FAIL", "1", 1);
        execl(self, self, (char *)NULL);
        _exit(127);
    }
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 127); /* it failed, as made to */
    snprintf(ref, sizeof ref, "ph-unittest/probe:%d-program", (int)p);
    assert_int_equal(ph_engine_image_inspect(e, ref, NULL, &found, &err), 0);
    if (found)
        fail_msg("the failed test left %s", ref);
}

/* The sweep at a group's start: the images of a run that is gone (a
 * killed suite) are removed, another live suite's are not. */
static void
test_sweep_takes_dead_runs_only(void **state)
{
    static const ph_tar_extra file = { .name = "x", .data = "", .len = 0, .mode = 0644 };
    char dead[64], live[64], ref[128];
    ph_error_t err = NULL;
    int st, found = 0;
    pid_t p = fork();

    (void)state;
    assert_true(p >= 0);
    if (p == 0)
        _exit(0);
    assert_int_equal(waitpid(p, &st, 0), p); /* P is gone */
    snprintf(dead, sizeof dead, "%d-left", (int)p);
    snprintf(live, sizeof live, "%d-alive", (int)getppid()); /* the shell or runner that started us: alive */
    import_tar(dead, NULL, &file, 1);
    import_tar(live, NULL, &file, 1);
    tu_engine_sweep();
    snprintf(ref, sizeof ref, "ph-unittest/probe:%s", dead);
    assert_int_equal(ph_engine_image_inspect(e, ref, NULL, &found, &err), 0);
    assert_false(found);
    snprintf(ref, sizeof ref, "ph-unittest/probe:%s", live);
    assert_int_equal(ph_engine_image_inspect(e, ref, NULL, &found, &err), 0);
    assert_true(found);
    assert_int_equal(ph_engine_image_remove(e, ref, 1, &err), 0);
}

/* The short name an image's tag is made from: the last path element,
 * without tag or digest, lowercase letters, digits and -_. only; bounded. */
static void
test_short_name(void **state)
{
    char out[64], small[8];

    (void)state;
    ph_image_short_name("registry.example:5000/team/app:1.2", out, sizeof out);
    assert_string_equal(out, "app");
    ph_image_short_name("team/app@sha256:0123abcd", out, sizeof out);
    assert_string_equal(out, "app");
    ph_image_short_name("My_App.v2", out, sizeof out);
    assert_string_equal(out, "-y_-pp.v2");
    memset(small, 'X', sizeof small);
    ph_image_short_name("abcdef", small, 4);
    assert_string_equal(small, "abc");
    assert_int_equal(small[4], 'X'); /* nothing written past LEN */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dockerfile_per_package_manager),
        cmocka_unit_test(test_short_name),
        cmocka_unit_test(test_dockerfile_no_package_manager),
        cmocka_unit_test(test_package_names),
        cmocka_unit_test(test_modes_per_image),
        cmocka_unit_test(test_sampler_env),
        cmocka_unit_test(test_tree_serves),
        cmocka_unit_test_setup_teardown(test_mode_without_packages_for_manager, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_probe, engine_setup, engine_teardown),
        cmocka_unit_test(test_elf_interp),
        cmocka_unit_test(test_elf_build_id),
        cmocka_unit_test(test_elf_notes_never_read_past_the_segment),
        cmocka_unit_test_setup_teardown(test_program, engine_setup, engine_teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_test_leaves_nothing, engine_setup, engine_teardown),
        cmocka_unit_test_setup_teardown(test_sweep_takes_dead_runs_only, engine_setup, engine_teardown),
    };

    /* (PH_TEST_IMAGE_ONLY: one test, as test_a_failed_test_leaves_nothing runs it) */
    if (getenv("PH_TEST_IMAGE_ONLY"))
        cmocka_set_test_filter(getenv("PH_TEST_IMAGE_ONLY"));
    return cmocka_run_group_tests(tests, group_sweep, group_sweep);
}
