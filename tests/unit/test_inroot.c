/* test_inroot.c - a service's files from the tools container
 * (harness/attach/ph_inroot.c, compiled in) on a directory standing for
 * the service's root, with what a hostile service plants there: absolute
 * and `..` symlinks to this side's files, a stale temp file that is a
 * symlink, a FIFO, a device, names that are not plain or not the
 * sampler's, a mostly-holes file, more bytes than the budget, more files
 * and entries than a take looks at.  Nothing outside the root is written, read or
 * removed; what is taken is bounded. */
#include "test_util.h"

#include <errno.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "../../harness/attach/ph_inroot.c"

static char rootp[300], outside[300];
static int root = -1;

static int
setup(void **state)
{
    char cmd[1200];

    tu_setup(state);
    snprintf(rootp, sizeof rootp, "%s/root", test_dir);
    snprintf(outside, sizeof outside, "%s/outside", test_dir);
    /* the same absolute path exists inside the root too: a symlink to it
     * must land there, not here */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/tmp %s %s%s && chmod 1777 %s/tmp && echo secret > %s/secret", rootp,
             outside, rootp, outside, rootp, outside);
    assert_int_equal(system(cmd), 0);
    root = open(rootp, O_RDONLY | O_DIRECTORY);
    assert_true(root >= 0);
    return 0;
}

static int
teardown(void **state)
{
    close(root);
    return tu_teardown(state);
}

static int exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Is there anything (a link too) at the path FMT makes? */
static int
exists(const char *fmt, ...)
{
    char p[900];
    struct stat st;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(p, sizeof p, fmt, ap);
    va_end(ap);
    return lstat(p, &st) == 0;
}

/* Write TEXT to PATH: 0, or -1. */
static int
put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static void
test_absolute_symlink_stays_in_root(void **state)
{
    char p[600], why[512];

    (void)state;
    snprintf(p, sizeof p, "%s/tmp/.profharness-attach", rootp);
    assert_int_equal(symlink(outside, p), 0);
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.profharness-attach/lib", why, sizeof why), 0);
    assert_true(exists("%s%s/lib", rootp, outside));
    assert_false(exists("%s/lib", outside));
}

static void
test_dotdot_symlink_stops_at_root(void **state)
{
    char p[600], why[512];

    (void)state;
    snprintf(p, sizeof p, "%s/tmp/.profharness-attach", rootp);
    assert_int_equal(symlink("../../../../../../../../ph-escaped", p), 0);
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.profharness-attach", why, sizeof why), -1);
    assert_non_null(strstr(why, "a symlink to nothing"));
    assert_false(exists("%s/../ph-escaped", test_dir));
    assert_false(exists("/ph-escaped"));
}

static void
test_dir_of_another_user_refused(void **state)
{
    char p[600], why[512];

    (void)state;
    snprintf(p, sizeof p, "%s/tmp/.profharness-attach", rootp);
    assert_int_equal(mkdir(p, 0777), 0);
    assert_int_equal(chmod(p, 0777), 0);
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.profharness-attach", why, sizeof why), -1);
    assert_non_null(strstr(why, "mode 777"));
    assert_non_null(strstr(why, "remove it"));
}

static void
test_install_by_content(void **state)
{
    char src[600], got[600], again[600], why[512], p[900];
    struct stat a, b;

    (void)state;
    snprintf(src, sizeof src, "%s", tu_write("lib.so", "the sampler, version one"));
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.pa", why, sizeof why), 0);
    assert_int_equal(ph_inroot_install(root, src, "/tmp/.pa", "libphsampler.so", got, sizeof got, why, sizeof why),
                     0);
    assert_non_null(strstr(got, "/tmp/.pa/libphsampler-"));
    assert_string_equal(got + strlen(got) - 3, ".so");
    snprintf(p, sizeof p, "%s%s", rootp, got);
    assert_int_equal(stat(p, &a), 0);
    assert_int_equal(a.st_mode & 0777, 0644);
    /* the same content again: the same file, not rewritten (a JVM maps it) */
    assert_int_equal(ph_inroot_install(root, src, "/tmp/.pa", "libphsampler.so", again, sizeof again, why,
                                       sizeof why), 0);
    assert_string_equal(got, again);
    assert_int_equal(stat(p, &b), 0);
    assert_int_equal(a.st_ino, b.st_ino);
    /* a changed file under that name (planted): replaced by ours */
    tu_write("planted", "not ours");
    snprintf(again, sizeof again, "cp %s/planted %s", test_dir, p);
    assert_int_equal(system(again), 0);
    assert_int_equal(ph_inroot_install(root, src, "/tmp/.pa", "libphsampler.so", again, sizeof again, why,
                                       sizeof why), 0);
    assert_int_equal(stat(p, &b), 0);
    assert_int_not_equal(a.st_ino, b.st_ino);
    assert_int_equal(b.st_size, strlen("the sampler, version one"));
    /* another version: another name */
    tu_write("lib.so", "the sampler, version two");
    assert_int_equal(ph_inroot_install(root, src, "/tmp/.pa", "libphsampler.so", again, sizeof again, why,
                                       sizeof why), 0);
    assert_string_not_equal(got, again);
}

static void
test_install_temp_symlink_not_followed(void **state)
{
    char src[600], got[600], why[512], p[900], name[600];
    FILE *f;
    char line[64] = "";

    (void)state;
    snprintf(src, sizeof src, "%s", tu_write("lib.so", "ours"));
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.pa", why, sizeof why), 0);
    /* learn the name, then plant its temp file as a symlink to a file here */
    assert_int_equal(ph_inroot_install(root, src, "/tmp/.pa", "l.so", got, sizeof got, why, sizeof why), 0);
    snprintf(p, sizeof p, "%s%s", rootp, got);
    assert_int_equal(unlink(p), 0);
    snprintf(name, sizeof name, "%s/tmp/.pa/.%s.new", rootp, strrchr(got, '/') + 1);
    snprintf(p, sizeof p, "%s/secret", outside);
    assert_int_equal(symlink(p, name), 0);
    assert_int_equal(ph_inroot_install(root, src, "/tmp/.pa", "l.so", got, sizeof got, why, sizeof why), 0);
    f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "secret\n");
}

static void
test_take_only_plain_files_bounded(void **state)
{
    char p[900], why[512], out[600], cmd[1400];
    ph_inroot_taken t;
    struct stat st;
    int fd;

    (void)state;
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.pa", why, sizeof why), 0);
    assert_int_equal(ph_inroot_mkout(root, "/tmp/.pa/out-7", getuid(), getgid(), why, sizeof why), 0);
    snprintf(p, sizeof p, "%s/tmp/.pa/out-7", rootp);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* what the service's user leaves there */
    snprintf(cmd, sizeof cmd,
             "cd %s && head -c 3000 /dev/zero > stacks-1.folded && head -c 3000 /dev/zero > profile-1.pb.gz && "
             "ln -s %s/secret link.folded && ln -s / rootlink && mkfifo fifo && echo x > 'bad name' && "
             "truncate -s 64M holes.folded && mkdir sub",
             p, outside);
    assert_int_equal(system(cmd), 0);
    snprintf(out, sizeof out, "%s/collected", test_dir);
    assert_int_equal(ph_inroot_take(root, "/tmp/.pa/out-7", out, 4000, &t, why, sizeof why), 0);
    assert_int_equal(t.files, 1);
    assert_int_equal(t.truncated, 1);
    assert_int_equal(t.bytes, 4000);
    assert_int_equal(t.skipped, 6); /* the two links, the FIFO, the name, the holes, the sub-directory */
    assert_false(exists("%s/link.folded", out));
    assert_false(exists("%s/holes.folded", out));
    assert_false(exists("%s/fifo", out));
    /* the files are gone from the service's tree; the sub-directory keeps
     * its parent there */
    assert_false(exists("%s/stacks-1.folded", p));
    assert_false(exists("%s/link.folded", p));
    assert_true(exists("%s/sub", p));
    /* the secret here untouched */
    snprintf(cmd, sizeof cmd, "%s/secret", outside);
    assert_true((fd = open(cmd, O_RDONLY)) >= 0);
    close(fd);
    /* a fresh out dir replaces what is left of the old one's files; the
     * sub-directory, the service user's, is refused, said */
    assert_int_equal(ph_inroot_mkout(root, "/tmp/.pa/out-7", getuid(), getgid(), why, sizeof why), -1);
    assert_non_null(strstr(why, "out-7"));
}

/* An out dir the service's user filled: a FIFO and a device under the
 * sampler's names are never opened (inotify sees every open in the
 * directory), a file under another name is not taken, and at most
 * PH_INROOT_TAKE_FILES are copied of more. */
static void
test_take_sampler_files_only_none_opened_bounded(void **state)
{
    char p[900], why[512], out[1000], ev[8192];
    ph_inroot_taken t;
    ssize_t n;
    int in;

    (void)state;
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.pa", why, sizeof why), 0);
    assert_int_equal(ph_inroot_mkout(root, "/tmp/.pa/out-8", getuid(), getgid(), why, sizeof why), 0);
    snprintf(p, sizeof p, "%s/tmp/.pa/out-8", rootp);
    snprintf(out, sizeof out, "%s/stacks-fifo-1.folded", p);
    assert_int_equal(mkfifo(out, 0644), 0);
    snprintf(out, sizeof out, "%s/profile-dev-1.pb.gz", p);
    assert_int_equal(mknod(out, S_IFCHR | 0644, makedev(1, 3)), 0);
    snprintf(out, sizeof out, "%s/run.sh", p);
    assert_int_equal(put(out, "not the sampler's"), 0);
    for (unsigned i = 0; i < PH_INROOT_TAKE_FILES + 10; i++) {
        snprintf(out, sizeof out, "%s/stacks-x-%u.folded", p, i);
        assert_int_equal(put(out, "main 1\n"), 0);
    }
    assert_true((in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) >= 0);
    assert_true(inotify_add_watch(in, p, IN_OPEN) >= 0);
    snprintf(out, sizeof out, "%s/collected", test_dir);
    assert_int_equal(ph_inroot_take(root, "/tmp/.pa/out-8", out, 1 << 20, &t, why, sizeof why), 0);
    assert_int_equal(t.files, PH_INROOT_TAKE_FILES);
    assert_int_equal(t.skipped, 2 + 1 + 10);
    assert_int_equal(t.left, 0);
    assert_false(exists("%s/run.sh", out));
    assert_false(exists("%s/stacks-fifo-1.folded", out));
    assert_false(exists("%s/profile-dev-1.pb.gz", out));
    while ((n = read(in, ev, sizeof ev)) > 0)
        for (char *e = ev; e < ev + n; e += sizeof(struct inotify_event) + ((struct inotify_event *)e)->len) {
            const struct inotify_event *ie = (const struct inotify_event *)e;

            if (ie->len == 0)
                continue; /* the directory itself, read */
            assert_string_not_equal(ie->name, "stacks-fifo-1.folded");
            assert_string_not_equal(ie->name, "profile-dev-1.pb.gz");
            assert_string_not_equal(ie->name, "run.sh");
        }
    close(in);
    assert_false(exists("%s", p));
}

/* More entries than a take looks at: the rest left in place, said. */
static void
test_take_entries_bounded(void **state)
{
    char p[900], why[512], out[1000];
    ph_inroot_taken t;

    (void)state;
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.pa", why, sizeof why), 0);
    assert_int_equal(ph_inroot_mkout(root, "/tmp/.pa/out-6", getuid(), getgid(), why, sizeof why), 0);
    snprintf(p, sizeof p, "%s/tmp/.pa/out-6", rootp);
    for (unsigned i = 0; i < PH_INROOT_TAKE_ENTRIES + 50; i++) {
        snprintf(out, sizeof out, "%s/junk%u", p, i);
        assert_int_equal(put(out, ""), 0);
    }
    snprintf(out, sizeof out, "%s/collected", test_dir);
    assert_int_equal(ph_inroot_take(root, "/tmp/.pa/out-6", out, 1 << 20, &t, why, sizeof why), 0);
    assert_int_equal(t.files, 0);
    assert_int_equal(t.left, 1);
    assert_int_equal(t.skipped, PH_INROOT_TAKE_ENTRIES);
    assert_true(exists("%s", p));
}

static void
test_out_dir_that_is_a_symlink(void **state)
{
    char p[900], why[512], out[600];
    ph_inroot_taken t;

    (void)state;
    assert_int_equal(ph_inroot_mkdirs(root, "/tmp/.pa", why, sizeof why), 0);
    snprintf(p, sizeof p, "%s/tmp/.pa/out-9", rootp);
    assert_int_equal(symlink(outside, p), 0);
    snprintf(out, sizeof out, "%s/collected", test_dir);
    /* taken: the link only, nothing through it */
    assert_int_equal(ph_inroot_take(root, "/tmp/.pa/out-9", out, 1 << 20, &t, why, sizeof why), 0);
    assert_int_equal(t.files, 0);
    assert_true(exists("%s/secret", outside));
    assert_false(exists("%s/secret", out));
    /* mkout over a link: the link goes, a directory comes */
    assert_int_equal(symlink(outside, p), 0);
    assert_int_equal(ph_inroot_mkout(root, "/tmp/.pa/out-9", getuid(), getgid(), why, sizeof why), 0);
    assert_true(exists("%s/secret", outside));
}

static void
test_plain_names(void **state)
{
    (void)state;
    assert_true(ph_inroot_plain_name("stacks-20261202T1200-3.folded"));
    assert_true(ph_inroot_plain_name("sampler-status-12.json"));
    assert_false(ph_inroot_plain_name(".."));
    assert_false(ph_inroot_plain_name("a/b"));
    assert_false(ph_inroot_plain_name("a\nb"));
    assert_false(ph_inroot_plain_name(""));
    assert_true(ph_inroot_sampler_name("stacks-20261202T1200-3.folded"));
    assert_true(ph_inroot_sampler_name("profile-20261202T1200-3.pb.gz"));
    assert_true(ph_inroot_sampler_name("sampler-status-12.json"));
    assert_true(ph_inroot_sampler_name("offcpu-a-1.svg"));
    assert_false(ph_inroot_sampler_name(".folded"));
    assert_false(ph_inroot_sampler_name("-x.folded"));
    assert_false(ph_inroot_sampler_name("stacks-1.folded.tmp"));
    assert_false(ph_inroot_sampler_name("run.sh"));
    assert_false(ph_inroot_sampler_name("a b.json"));
}

/* The maps of a JVM, by what they hold of the sampler. */
static int
mapped(const char *maps, const char *installed, char *other, size_t len)
{
    FILE *f = fmemopen((void *)maps, strlen(maps), "r");
    int rc;

    assert_non_null(f);
    rc = ph_inroot_sampler_mapped(f, installed, other, len);
    fclose(f);
    return rc;
}

static void
test_sampler_mapped(void **state)
{
    static const char ours[] = "/tmp/.profharness-attach/lib/libphsampler-0123456789abcdef.so";
    static const char jvm[] = "7f1c00000000-7f1c00200000 r-xp 00000000 00:2a 1234   /opt/java/lib/server/libjvm.so\n"
                              "7f1c10000000-7f1c10001000 rw-p 00000000 00:00 0 \n"
                              "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n";
    char maps[4096], other[128];

    (void)state;
    assert_int_equal(mapped(jvm, ours, other, sizeof other), 0);
    /* ours, loaded by an earlier attach of this version: used again */
    snprintf(maps, sizeof maps, "%s7f1c20000000-7f1c20010000 r-xp 00000000 00:2a 99 %s\n", jvm, ours);
    assert_int_equal(mapped(maps, ours, other, sizeof other), 1);
    /* one the service planted where ours go and loaded itself */
    snprintf(maps, sizeof maps,
             "%s7f1c20000000-7f1c20010000 r-xp 00000000 00:2a 98 "
             "/tmp/.profharness-attach/lib/libphsampler-planted.so\n",
             jvm);
    assert_int_equal(mapped(maps, ours, other, sizeof other), -1);
    assert_string_equal(other, "/tmp/.profharness-attach/lib/libphsampler-planted.so");
    /* ... and then removed its dir, so that ours is placed fresh */
    snprintf(maps, sizeof maps,
             "%s7f1c20000000-7f1c20010000 r-xp 00000000 00:2a 98 "
             "/tmp/.profharness-attach/lib/libphsampler-x.so (deleted)\n",
             jvm);
    assert_int_equal(mapped(maps, ours, other, sizeof other), -1);
    assert_string_equal(other, "/tmp/.profharness-attach/lib/libphsampler-x.so (deleted)");
    /* our name on a file since replaced: what is mapped is not what we checked */
    snprintf(maps, sizeof maps, "%s7f1c20000000-7f1c20010000 r-xp 00000000 00:2a 99 %s (deleted)\n", jvm, ours);
    assert_int_equal(mapped(maps, ours, other, sizeof other), -1);
    /* ours and another: refused, whatever the order */
    snprintf(maps, sizeof maps,
             "%s7f1c20000000-7f1c20010000 r-xp 00000000 00:2a 99 %s\n"
             "7f1c30000000-7f1c30010000 r-xp 00000000 00:2a 97 /app/lib/libphsampler.so\n",
             jvm, ours);
    assert_int_equal(mapped(maps, ours, other, sizeof other), -1);
    assert_string_equal(other, "/app/lib/libphsampler.so");
    /* the service's bytes in a name are not printed as they are */
    snprintf(maps, sizeof maps, "%s7f1c30000000-7f1c30010000 r-xp 00000000 00:2a 97 /a\033[2J/libphsampler.so\n",
             jvm);
    assert_int_equal(mapped(maps, ours, other, sizeof other), -1);
    assert_string_equal(other, "/a??2J/libphsampler.so");
    /* a library merely named like it elsewhere in its name is not one */
    snprintf(maps, sizeof maps, "%s7f1c30000000-7f1c30010000 r-xp 00000000 00:2a 97 /libphsampler/libz.so\n",
             jvm);
    assert_int_equal(mapped(maps, ours, other, sizeof other), 0);
}

/* A mapped file copied for perf's symbols (ph-attach --copy-mapped):
 * a directory on its path that became an absolute symlink stays in the
 * service's root; a FIFO is never opened; what is not ELF, mostly holes
 * or past the budget is said and left. */
static void
test_copy_mapped(void **state)
{
    static const char elfbytes[] = "\177ELF and the rest of a library";
    char p[900], dest[900], why[512], ev[4096];
    uint64_t size = 0;
    ssize_t n;
    int in;

    (void)state;
    /* this side's ELF "secret" and the root's own file at the same path */
    snprintf(p, sizeof p, "%s/libsecret.so", outside);
    assert_int_equal(put(p, "\177ELF this container's"), 0);
    snprintf(p, sizeof p, "%s%s/libsecret.so", rootp, outside);
    assert_int_equal(put(p, elfbytes), 0);
    snprintf(p, sizeof p, "%s/app", rootp);
    assert_int_equal(symlink(outside, p), 0);
    snprintf(dest, sizeof dest, "%s/copied.so", test_dir);
    assert_int_equal(ph_inroot_copy_mapped(root, "/app/libsecret.so", dest, 1 << 20, &size, why, sizeof why), 1);
    assert_int_equal(size, strlen(elfbytes));
    {
        char got[64] = "";
        FILE *f = fopen(dest, "r");

        assert_non_null(f);
        assert_non_null(fgets(got, sizeof got, f));
        fclose(f);
        assert_string_equal(got, elfbytes);
    }
    /* the destination is never written through or over */
    assert_int_equal(ph_inroot_copy_mapped(root, "/app/libsecret.so", dest, 1 << 20, &size, why, sizeof why), -1);
    /* not ELF; past the budget; gone */
    snprintf(p, sizeof p, "%s/data.bin", rootp);
    assert_int_equal(put(p, "not an ELF file at all"), 0);
    snprintf(dest, sizeof dest, "%s/data.bin", test_dir);
    assert_int_equal(ph_inroot_copy_mapped(root, "/data.bin", dest, 1 << 20, &size, why, sizeof why), 0);
    assert_non_null(strstr(why, "not ELF"));
    assert_false(exists("%s", dest));
    snprintf(dest, sizeof dest, "%s/big.so", test_dir);
    assert_int_equal(ph_inroot_copy_mapped(root, "/app/libsecret.so", dest, 4, &size, why, sizeof why), 0);
    assert_non_null(strstr(why, "budget"));
    assert_int_equal(ph_inroot_copy_mapped(root, "/nothing.so", dest, 1 << 20, &size, why, sizeof why), 0);
    assert_string_equal(why, "");
    /* a FIFO under a library's name: not opened, not copied */
    snprintf(p, sizeof p, "%s/lib.so", rootp);
    assert_int_equal(mkfifo(p, 0644), 0);
    assert_true((in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) >= 0);
    assert_true(inotify_add_watch(in, p, IN_OPEN) >= 0);
    snprintf(dest, sizeof dest, "%s/fifo.so", test_dir);
    assert_int_equal(ph_inroot_copy_mapped(root, "/lib.so", dest, 1 << 20, &size, why, sizeof why), 0);
    assert_non_null(strstr(why, "not a regular file"));
    n = read(in, ev, sizeof ev);
    assert_true(n < 0 && errno == EAGAIN);
    close(in);
    assert_false(exists("%s", dest));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_absolute_symlink_stays_in_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dotdot_symlink_stops_at_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_of_another_user_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_install_by_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_install_temp_symlink_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_only_plain_files_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_sampler_files_only_none_opened_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_entries_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_dir_that_is_a_symlink, setup, teardown),
        cmocka_unit_test(test_plain_names),
        cmocka_unit_test(test_sampler_mapped),
        cmocka_unit_test_setup_teardown(test_copy_mapped, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
