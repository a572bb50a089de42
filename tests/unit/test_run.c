/* test_run.c - the loop's host-side pieces that need no Engine: handing a
 * collected tree to the invoker (any depth, few fds, links never
 * followed), removing trees and making temp dirs (ph_fs), reading the
 * completion record, the service dir and its lock, links and run.json
 * written without following anything planted, deferred interrupts, and
 * what reaches the terminal from a container (ph_escape). */
#include "test_util.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_backend_engine.h"
#include "ph_run_int.h"
#include "ph_signal.h"

#define GIVE_UID 4242
#define GIVE_GID 4343

/* A chain DEPTH levels deep under test_dir/NAME: NAME/a/a/.../a, a file
 * `f` at each level.  Built fd-relative: the path is longer than PATH_MAX. */
static void
make_deep(const char *name, int depth)
{
    char top[512];
    int fd, next, ffd;

    snprintf(top, sizeof top, "%s/%s", test_dir, name);
    assert_int_equal(mkdir(top, 0755), 0);
    fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    for (int i = 0; i < depth; i++) {
        ffd = openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(ffd >= 0);
        close(ffd);
        assert_int_equal(mkdirat(fd, "a", 0755), 0);
        next = openat(fd, "a", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(next >= 0);
        close(fd);
        fd = next;
    }
    close(fd);
}

/* Entries under test_dir/NAME (the top included) not owned by UID, walking
 * fd-relative; *total gets how many were seen. */
static long
count_not_owned(const char *name, uid_t uid, long *total)
{
    char top[512];
    long bad = 0;
    struct stat st;
    int fd;

    *total = 0;
    snprintf(top, sizeof top, "%s/%s", test_dir, name);
    fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    for (;;) {
        int next;

        assert_int_equal(fstat(fd, &st), 0);
        bad += st.st_uid != uid;
        (*total)++;
        if (fstatat(fd, "f", &st, AT_SYMLINK_NOFOLLOW) == 0) {
            bad += st.st_uid != uid;
            (*total)++;
        }
        next = openat(fd, "a", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (next < 0)
            break;
        fd = next;
    }
    return bad;
}

/* Run the give-away walk in a child (a crash must fail the test, not end
 * the run), with at most MAX_FDS open files.  Returns its wait status. */
static int
give_in_child(const char *name, long max_fds)
{
    char top[512];
    pid_t pid;
    int status;

    snprintf(top, sizeof top, "%s/%s", test_dir, name);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = { (rlim_t)max_fds, (rlim_t)max_fds };

        ph_error_t err = NULL;

        if (max_fds > 0 && setrlimit(RLIMIT_NOFILE, &rl) < 0)
            _exit(3);
        if (ph_rundir_give_tree_at(AT_FDCWD, top, &err) < 0)
            _exit(ph_error_report(&err) == 0 ? 4 : 5);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void
setenv_sudo(void)
{
    setenv("SUDO_UID", "4242", 1);
    setenv("SUDO_GID", "4343", 1);
}

/* 2,030 levels: the recursive walk took a 4 KB frame per level and died. */
static void
test_give_tree_any_depth(void **state)
{
    long total, bad;
    int status;

    (void)state;
    if (geteuid() != 0)
        skip();
    setenv_sudo();
    make_deep("deep", 2030);
    status = give_in_child("deep", 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    bad = count_not_owned("deep", GIVE_UID, &total);
    assert_int_equal(total, 1 + 2030 * 2);
    assert_int_equal(bad, 0);
}

/* With few fds the walk must still reach every entry (it held a DIR per
 * level and silently stopped when they ran out). */
static void
test_give_tree_few_fds(void **state)
{
    long total, bad;
    int status;

    (void)state;
    if (geteuid() != 0)
        skip();
    setenv_sudo();
    make_deep("fds", 300);
    status = give_in_child("fds", 32);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    bad = count_not_owned("fds", GIVE_UID, &total);
    assert_int_equal(total, 1 + 300 * 2);
    assert_int_equal(bad, 0);
}

/* A link in the tree is given away itself; its target never is. */
static void
test_give_tree_links_not_followed(void **state)
{
    char top[512], outside[512], link[600];
    struct stat st;
    int status;

    (void)state;
    if (geteuid() != 0)
        skip();
    setenv_sudo();
    snprintf(outside, sizeof outside, "%s/outside", test_dir);
    assert_int_equal(mkdir(outside, 0755), 0);
    tu_write("outside/secret", "x");
    snprintf(top, sizeof top, "%s/tree", test_dir);
    assert_int_equal(mkdir(top, 0755), 0);
    snprintf(link, sizeof link, "%s/tree/dirlink", test_dir);
    assert_int_equal(symlink("../outside", link), 0);
    snprintf(link, sizeof link, "%s/tree/filelink", test_dir);
    assert_int_equal(symlink("../outside/secret", link), 0);
    status = give_in_child("tree", 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(lstat(link, &st), 0);
    assert_int_equal(st.st_uid, GIVE_UID);
    assert_int_equal(stat(outside, &st), 0);
    assert_int_equal(st.st_uid, 0);
    snprintf(link, sizeof link, "%s/outside/secret", test_dir);
    assert_int_equal(stat(link, &st), 0);
    assert_int_equal(st.st_uid, 0);
}

/* Whatever a caller passes, a log line carries no terminal control. */
static void
test_log_line_has_no_controls(void **state)
{
    const char *got;

    (void)state;
    tu_capture_begin();
    ph_warn("archive entry `%s` refused", "\r\x1b[2K\x1b]0;PWNED\a... all good\n\x1b[8m\x9b");
    got = tu_capture_end();
    for (const char *p = got; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n' && p[1] == '\0')
            break;
        assert_false(c < 0x20 || c == 0x7f);
    }
    assert_non_null(strstr(got, "\\r\\x1b[2K\\x1b]0;PWNED\\x07... all good\\n\\x1b[8m\\x9b"));
}


/* ---- ph_escape ---------------------------------------------------------- */

static const char *
esc_mem(const char *s, size_t n, unsigned flags)
{
    static char buf[1024];

    ph_escape_mem(buf, sizeof buf, s, n, flags);
    return buf;
}

static void
test_escape_controls(void **state)
{
    char buf[256];

    (void)state;
    assert_string_equal(esc_mem("a\nb\rc\td", 7, 0), "a\\nb\\rc\\td");
    assert_string_equal(esc_mem("\x1b[2J\a\x7f\x01\x1f", 8, 0), "\\x1b[2J\\x07\\x7f\\x01\\x1f");
    assert_string_equal(esc_mem("a\0b", 3, 0), "a\\x00b");
    /* printable ASCII is kept whole, the space and tilde included */
    assert_string_equal(esc_mem(" !~z", 4, 0), " !~z");
    /* backslashes: doubled by ph_escape (one string, unambiguous), kept at
     * the sink so text escaped earlier is not escaped twice */
    assert_string_equal(ph_escape(buf, sizeof buf, "a\\x1b"), "a\\\\x1b");
    assert_string_equal(esc_mem("a\\x1b", 5, 0), "a\\x1b");
    assert_string_equal(ph_escape(buf, sizeof buf, NULL), "(null)");
}

static void
test_escape_utf8(void **state)
{
    (void)state;
    /* valid UTF-8 is kept: 2, 3 and 4 bytes */
    assert_string_equal(esc_mem("\xc3\xa9\xe6\x97\xa5\xf0\x9f\x94\xa5", 9, 0), "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x94\xa5");
    /* C1 controls (U+0085 NEL, U+009B CSI) and the 8-bit CSI byte */
    assert_string_equal(esc_mem("\xc2\x85\xc2\x9b\x9b", 5, 0), "\\u0085\\u009b\\x9b");
    assert_string_equal(esc_mem("\xc2\x9f\xc2\x80", 4, 0), "\\u009f\\u0080");
    /* U+00A0 is past the C1 range: kept */
    assert_string_equal(esc_mem("\xc2\xa0", 2, 0), "\xc2\xa0");
    /* bidi overrides and isolates, line separators: Trojan Source */
    assert_string_equal(esc_mem("\xe2\x80\xae\xe2\x81\xa6\xe2\x80\xa8\xe2\x80\x8f\xd8\x9c", 14, 0),
                        "\\u202e\\u2066\\u2028\\u200f\\u061c");
    /* U+2069 is the last isolate, U+206A is not one */
    assert_string_equal(esc_mem("\xe2\x81\xa9\xe2\x81\xaa", 6, 0), "\\u2069\xe2\x81\xaa");
    /* invalid: overlong, surrogate, past U+10FFFF, lone continuation,
     * truncated at the end */
    assert_string_equal(esc_mem("\xc0\xaf", 2, 0), "\\xc0\\xaf");
    assert_string_equal(esc_mem("\xed\xa0\x80", 3, 0), "\\xed\\xa0\\x80");
    assert_string_equal(esc_mem("\xf4\x90\x80\x80", 4, 0), "\\xf4\\x90\\x80\\x80");
    assert_string_equal(esc_mem("\x80", 1, 0), "\\x80");
    assert_string_equal(esc_mem("a\xe6\x97", 3, 0), "a\\xe6\\x97");
    /* a sequence cut by the length given, though the bytes go on */
    assert_string_equal(esc_mem("a\xe6\x97\xa5", 3, 0), "a\\xe6\\x97");
    assert_string_equal(esc_mem("\xe0\x80\x80", 3, 0), "\\xe0\\x80\\x80");
    assert_string_equal(esc_mem("\xf0\x80\x80\x80", 4, 0), "\\xf0\\x80\\x80\\x80");
    assert_string_equal(esc_mem("\xe6\x41\x41", 3, 0), "\\xe6AA");
}

static void
test_escape_bounded(void **state)
{
    char small[8], big[64];
    char in[40];
    size_t n;

    (void)state;
    memset(in, 'x', sizeof in);
    n = ph_escape_mem(small, sizeof small, in, sizeof in, 0);
    assert_int_equal(n, strlen(small));
    assert_true(n < sizeof small);
    assert_string_equal(small, "xxxx...");
    /* an escape is never cut in half */
    memset(in, 0x1b, sizeof in);
    ph_escape_mem(big, 12, in, sizeof in, 0);
    assert_string_equal(big, "\\x1b\\x1b...");
    ph_escape_mem(big, 11, in, sizeof in, 0);
    assert_string_equal(big, "\\x1b...");
    /* exactly fitting text has no "..." */
    ph_escape_mem(big, 8, "abcdefg", 7, 0);
    assert_string_equal(big, "abcdefg");
    ph_escape_mem(big, 8, "abcdefgh", 8, 0);
    assert_string_equal(big, "abcd...");
    /* too small a buffer: empty, never overrun */
    big[0] = 'z';
    assert_int_equal(ph_escape_mem(big, 3, "abc", 3, 0), 0);
    assert_string_equal(big, "");
}

/* Text for stdout: every line escaped whole (no "..." however long: 300
 * bytes that grow past the stack buffer, 3,000 past any), the newlines
 * kept. */
static void
test_escape_write(void **state)
{
    char *out = NULL, *want, big[3000];
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    (void)state;
    memset(big, 0x1b, sizeof big);
    assert_int_equal(ph_escape_write(f, "a\x1b]0;t\x07\nb\\c\n\n", 13, PH_ESCAPE_BACKSLASH), 0);
    assert_int_equal(ph_escape_write(f, big, 300, 0), 0);
    assert_int_equal(ph_escape_write(f, "\n", 1, 0), 0);
    assert_int_equal(ph_escape_write(f, big, sizeof big, 0), 0);
    assert_int_equal(ph_escape_printf(f, "\n%s: %d\n", "\x9b\xc2\x85x", 7), 0);
    fclose(f);
    want = malloc(64 + 4 * (300 + sizeof big));
    assert_non_null(want);
    strcpy(want, "a\\x1b]0;t\\x07\nb\\\\c\n\n");
    for (size_t i = 0; i < 300 + sizeof big; i++)
        strcat(want + strlen(want), i == 300 ? "\n\\x1b" : "\\x1b");
    strcat(want, "\n\\x9b\\u0085x: 7\n");
    assert_int_equal(len, strlen(want));
    assert_string_equal(out, want);
    free(want);
    free(out);
}

/* ---- ph_fs -------------------------------------------------------------- */

static void
test_fs_remove_deep_and_links(void **state)
{
    char path[600], outside[512];
    struct stat st;
    ph_error_t err = NULL;

    (void)state;
    make_deep("deep", 2030);
    snprintf(outside, sizeof outside, "%s/outside", test_dir);
    assert_int_equal(mkdir(outside, 0755), 0);
    tu_write("outside/keep", "x");
    snprintf(path, sizeof path, "%s/deep/a/link", test_dir);
    assert_int_equal(symlink("../../outside", path), 0);
    snprintf(path, sizeof path, "%s/deep", test_dir);
    assert_int_equal(ph_fs_remove_tree_at(AT_FDCWD, path, &err), 0);
    assert_null(err);
    assert_int_equal(lstat(path, &st), -1);
    snprintf(path, sizeof path, "%s/outside/keep", test_dir);
    assert_int_equal(stat(path, &st), 0);
    /* a link given as the top: only the link goes */
    snprintf(path, sizeof path, "%s/toplink", test_dir);
    assert_int_equal(symlink("outside", path), 0);
    assert_int_equal(ph_fs_remove_tree_at(AT_FDCWD, path, &err), 0);
    assert_int_equal(lstat(path, &st), -1);
    snprintf(path, sizeof path, "%s/outside/keep", test_dir);
    assert_int_equal(stat(path, &st), 0);
    /* missing: nothing to do */
    snprintf(path, sizeof path, "%s/nothing", test_dir);
    assert_int_equal(ph_fs_remove_tree_at(AT_FDCWD, path, &err), 0);
}

static void
test_fs_remove_dot_empties(void **state)
{
    char path[600];
    struct stat st;
    ph_error_t err = NULL;
    int fd;

    (void)state;
    make_deep("d", 5);
    snprintf(path, sizeof path, "%s/d", test_dir);
    fd = open(path, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    assert_int_equal(ph_fs_remove_tree_at(fd, ".", &err), 0);
    close(fd);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(rmdir(path), 0); /* empty */
}

/* The walk goes up by "..": a tree moved under it is an error, never a
 * walk through somebody else's directories. */
static int
move_cb(int parent, const char *name, const struct stat *st, void *ud, ph_error_t *err)
{
    int *moved = ud;
    char from[600], to[600];

    (void)parent;
    (void)st;
    (void)err;
    if (!*moved && strcmp(name, "f") == 0) {
        snprintf(from, sizeof from, "%s/top/a", test_dir);
        snprintf(to, sizeof to, "%s/elsewhere/a", test_dir);
        assert_int_equal(rename(from, to), 0);
        *moved = 1;
    }
    return 0;
}

static void
test_fs_walk_tree_moved(void **state)
{
    char path[600];
    ph_error_t err = NULL;
    int moved = 0;

    (void)state;
    snprintf(path, sizeof path, "%s/elsewhere", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/top", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/top/a", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/top/a/b", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    tu_write("top/a/b/f", "x");
    snprintf(path, sizeof path, "%s/top", test_dir);
    assert_int_equal(ph_fs_walk_at(AT_FDCWD, path, move_cb, &moved, &err), -1);
    assert_int_equal(moved, 1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "moved"));
    ph_error_free(&err);
}

static int
count_cb(int parent, const char *name, const struct stat *st, void *ud, ph_error_t *err)
{
    long *n = ud;

    (void)parent;
    (void)name;
    (void)err;
    n[S_ISDIR(st->st_mode) ? 1 : 0]++;
    return 0;
}

static void
test_fs_walk_counts_wide(void **state)
{
    char path[600];
    ph_error_t err = NULL;
    long n[2] = { 0, 0 };

    (void)state;
    snprintf(path, sizeof path, "%s/w", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    for (int i = 0; i < 40; i++) {
        char sub[64];
        snprintf(path, sizeof path, "%s/w/d%d", test_dir, i);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(sub, sizeof sub, "w/d%d/f", i);
        tu_write(sub, "x");
        snprintf(sub, sizeof sub, "w/f%d", i);
        tu_write(sub, "x");
    }
    snprintf(path, sizeof path, "%s/w", test_dir);
    assert_int_equal(ph_fs_walk_at(AT_FDCWD, path, count_cb, n, &err), 0);
    assert_int_equal(n[0], 80);
    assert_int_equal(n[1], 41);
}

/* Two readers of one directory fd each see all of it (a dup() shares the
 * offset: the second saw nothing, and the `latest` links went missing). */
static void
test_fs_opendir_at_twice(void **state)
{
    int dfd = open(test_dir, O_RDONLY | O_DIRECTORY);

    (void)state;
    tu_write("a", "x");
    tu_write("b", "x");
    assert_true(dfd >= 0);
    for (int round = 0; round < 2; round++) {
        DIR *d = ph_fs_opendir_at(dfd);
        struct dirent *de;
        int n = 0;

        assert_non_null(d);
        while ((de = readdir(d)) != NULL)
            n += de->d_name[0] != '.';
        closedir(d);
        assert_int_equal(n, 2);
    }
    close(dfd);
}

static void
test_fs_mkdtemp_fresh(void **state)
{
    char names[50][64];
    ph_error_t err = NULL;
    struct stat st;
    int dfd = open(test_dir, O_RDONLY | O_DIRECTORY);

    (void)state;
    assert_true(dfd >= 0);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(ph_fs_mkdtemp_at(dfd, ".incoming-", 0700, names[i], sizeof names[i], &err), 0);
        assert_int_equal(strlen(names[i]), strlen(".incoming-") + 12);
        assert_int_equal(strncmp(names[i], ".incoming-", 10), 0);
        assert_int_equal(fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0700);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(names[i], names[j]);
    }
    /* no room for the random part: an error, nothing made */
    assert_int_equal(ph_fs_mkdtemp_at(dfd, ".incoming-", 0700, names[0], 15, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_fs_mkdtemp_at(dfd, ".incoming-", 0700, names[0], 22, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_fs_mkdtemp_at(dfd, ".incoming-", 0700, names[0], 23, &err), 0);
    assert_int_equal(strlen(names[0]), 22);
    close(dfd);
}

static int
fill_fails(FILE *f, const void *ud, ph_error_t *err)
{
    fputs(ud, f);
    return ph_fail(err, ENOSPC, "half written");
}

/* ph_fs_write_atomic: the whole file or the old one.  A link in the
 * file's place is replaced, never written through; a fill that fails
 * leaves the old file as it was and no temporary name beside it. */
static void
test_fs_write_atomic(void **state)
{
    char path[600], outside[600], buf[64] = "";
    ph_error_t err = NULL;
    struct stat st;
    struct dirent *de;
    DIR *d;
    FILE *f;
    int n = 0;

    (void)state;
    snprintf(outside, sizeof outside, "%s/outside", test_dir);
    assert_non_null(f = fopen(outside, "w"));
    fputs("theirs", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/stacks.folded", test_dir);
    assert_int_equal(symlink(outside, path), 0);
    assert_int_equal(ph_fs_write_bytes(test_dir, "stacks.folded", "ours", 4, &err), 0);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_non_null(f = fopen(outside, "r"));
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "theirs");

    assert_int_equal(ph_fs_write_atomic(test_dir, "stacks.folded", fill_fails, "half", &err), -1);
    assert_non_null(strstr(err->msg, "stacks.folded"));
    assert_non_null(strstr(err->msg, "half written"));
    ph_error_free(&err);
    assert_non_null(f = fopen(path, "r"));
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "ours");
    /* nothing beside stacks.folded and outside */
    assert_non_null(d = opendir(test_dir));
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    assert_int_equal(n, 2);
}

/* ---- the completion record ---------------------------------------------- */

#define GOOD_RECORD "{\"version\":1,\"command\":[\"x\"],\"exit_code\":0,\"signal\":null,\"escalations\":[]," \
                    "\"wrapper_killed\":false}"

static int
read_record(const char *name, json_t **rec, char *problem)
{
    int dfd = open(test_dir, O_RDONLY | O_DIRECTORY), rc;

    assert_true(dfd >= 0);
    rc = ph_run_record_read(dfd, name, rec, problem, 256);
    close(dfd);
    return rc;
}

static void
expect_refused(const char *text, const char *why)
{
    char problem[256];
    json_t *rec = (json_t *)1;

    tu_write("r.json", text);
    assert_int_equal(read_record("r.json", &rec, problem), -1);
    assert_null(rec);
    if (strstr(problem, why) == NULL)
        fail_msg("`%s`: problem `%s`, wanted `%s`", text, problem, why);
}

static void
test_record_fields(void **state)
{
    char problem[256];
    json_t *rec = NULL;

    (void)state;
    tu_write("ok.json", GOOD_RECORD "\n");
    assert_int_equal(read_record("ok.json", &rec, problem), 0);
    assert_non_null(rec);
    json_decref(rec);
    tu_write("new.json", "{\"version\":1,\"exit_code\":137,\"signal\":\"SIGKILL\",\"escalations\":[],"
                         "\"complete\":false,\"outcome\":\"oom_killed\",\"oom_kills\":1}");
    assert_int_equal(read_record("new.json", &rec, problem), 0);
    json_decref(rec);
    tu_write("sig.json", "{\"version\":2,\"exit_code\":137,\"signal\":\"SIGKILL\",\"escalations\":[\"SIGKILL\"]}");
    assert_int_equal(read_record("sig.json", &rec, problem), 0);
    json_decref(rec);

    expect_refused("[0]", "not a JSON object");
    expect_refused("\"x\"", "not JSON");
    expect_refused("{}", "version");
    expect_refused("{\"version\":0,\"exit_code\":0,\"signal\":null,\"escalations\":[]}", "version");
    expect_refused("{\"version\":\"1\",\"exit_code\":0,\"signal\":null,\"escalations\":[]}", "version");
    expect_refused("{\"version\":1,\"signal\":null,\"escalations\":[]}", "exit_code");
    expect_refused("{\"version\":1,\"exit_code\":0.5,\"signal\":null,\"escalations\":[]}", "exit_code");
    expect_refused("{\"version\":1,\"exit_code\":0,\"escalations\":[]}", "signal");
    expect_refused("{\"version\":1,\"exit_code\":0,\"signal\":9,\"escalations\":[]}", "signal");
    expect_refused("{\"version\":1,\"exit_code\":0,\"signal\":null}", "escalations");
    expect_refused("{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":{}}", "escalations");
    expect_refused("{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[\"SIGKILL\",3]}", "escalations");
    expect_refused("{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[],\"wrapper_killed\":\"no\"}",
                   "wrapper_killed");
    expect_refused("{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[],\"complete\":1}", "complete");
    expect_refused("{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[],\"outcome\":[]}", "outcome");
    expect_refused("{\"version\":1,\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[]}", "not JSON");
    expect_refused("{\"version\":1,", "not JSON");
    expect_refused("", "not JSON");
}

/* story(JSON, PRESENT) -> the sentence and level ph_run_record_story gives. */
static int
story_of(const char *json, const char *present, char *out, size_t len)
{
    json_error_t je;
    json_t *rec = json_loads(json, 0, &je);
    int rc;

    if (rec == NULL)
        fail_msg("bad test JSON `%s`: %s", json, je.text);
    rc = ph_run_record_story(rec, present, out, len);
    json_decref(rec);
    return rc;
}

#define STORY(level, want, present, json)                                          \
    do {                                                                           \
        char got_[1024];                                                           \
        int lv_ = story_of(json, present, got_, sizeof got_);                     \
        if (strcmp(got_, want) != 0 || lv_ != (level))                             \
            fail_msg("story %d `%s`, wanted %d `%s`", lv_, got_, level, want);     \
    } while (0)

#define REC "{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[],\"stop_signal\":\"SIGTERM\","

/* One sentence per outcome, from the shim's fields: what the matrix
 * cells print. */
static void
test_record_story(void **state)
{
    char out[16];

    (void)state;
    STORY(0, "stopped on SIGTERM in 4.0 ms; strace.log complete", "strace.log",
          REC "\"stop_requested\":true,\"stop_seconds\":0.004,\"outcome\":\"stopped\",\"complete\":true}");
    STORY(1, "the service ignored SIGTERM; escalated to SIGKILL after 3.00 s; strace.log complete", "strace.log",
          REC "\"stop_requested\":true,\"escalations\":[\"SIGKILL\"],\"grace_seconds\":3.0,"
              "\"outcome\":\"escalated\",\"complete\":true}");
    STORY(1, "the service ignored SIGTERM; escalated to SIGUSR2 then SIGKILL after 30.0 s; the profiler was "
             "killed before it finished: what it wrote may be incomplete", "massif.out",
          REC "\"stop_requested\":true,\"escalations\":[\"SIGUSR2\",\"SIGKILL\"],\"grace_seconds\":30,"
              "\"outcome\":\"escalated\",\"complete\":false}");
    STORY(1, "the service stopped on SIGTERM, but the profiler outlived it and had to be signalled; a complete",
          "a", REC "\"stop_requested\":true,\"outcome\":\"escalated\",\"wrapper_signals\":[\"SIGTERM\"]}");
    STORY(1, "the service crashed (SIGSEGV) before the stop; the profiler wrote none of its artifacts", "",
          REC "\"exit_code\":139,\"signal\":\"SIGSEGV\",\"service_signal\":\"SIGSEGV\","
              "\"stop_requested\":false,\"outcome\":\"crashed\",\"complete\":true}");
    STORY(1, "the service crashed (SIGABRT) during the stop; strace.log complete", "strace.log",
          REC "\"signal\":\"SIGABRT\",\"service_signal\":null,\"stop_requested\":true,\"outcome\":\"crashed\"}");
    STORY(1, "the kernel's OOM killer killed the service (SIGKILL, the container's memory limit); the profiler "
             "was killed before it finished: what it wrote may be incomplete", "",
          REC "\"service_signal\":\"SIGKILL\",\"outcome\":\"oom_killed\",\"complete\":false,\"oom_kills\":1}");
    STORY(1, "the service was killed (SIGKILL), not by profharness; strace.log complete", "strace.log",
          REC "\"service_signal\":\"SIGKILL\",\"outcome\":\"killed\",\"complete\":true}");
    STORY(1, "SIGINT, forwarded to the service, ended it before the stop; x complete", "x",
          REC "\"service_signal\":\"SIGINT\",\"outcome\":\"signalled\"}");
    STORY(0, "the service exited by itself with status 3 before the stop; x, y complete", "x, y",
          REC "\"exit_code\":3,\"service_exit_code\":3,\"outcome\":\"exited\",\"complete\":true}");
    STORY(0, "stopped on SIGTERM in 0 us; x complete; 2 leftover processes stopped (1 with SIGKILL)", "x",
          REC "\"outcome\":\"stopped\",\"leftovers_signalled\":2,\"leftovers_killed\":1,\"leftovers_survived\":0}");
    STORY(1, "stopped on SIGTERM in 0 us; x complete; 1 leftover process stopped; 1 process still running when "
             "ph-init gave up", "x", REC "\"outcome\":\"stopped\",\"leftovers_signalled\":1,\"leftovers_survived\":1}");
    /* An older record: complete from wrapper_killed. */
    STORY(1, "stopped on SIGTERM in 0 us; the profiler was killed before it finished: what it wrote may be "
             "incomplete", "x", REC "\"outcome\":\"stopped\",\"wrapper_killed\":true}");
    /* What the container wrote is escaped; an unknown outcome is named. */
    STORY(1, "the service ignored SIG\\x1b]0;X\\x07; escalated to SIGKILL after 0 us; x complete", "x",
          "{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[\"SIGKILL\"],"
          "\"stop_signal\":\"SIG\\u001b]0;X\\u0007\",\"outcome\":\"escalated\"}");
    STORY(1, "the service ended (outcome `vanished`, see ph-exit.json); x complete", "x", REC "\"outcome\":\"vanished\"}");
    STORY(-1, "", "x", REC "\"complete\":true}");
    /* Fields missing (found by fuzzing: an unset buffer was printed). */
    STORY(1, "the service ignored the stop signal; escalated to SIGKILL after 0 us; x complete", "x",
          "{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[\"SIGKILL\"],\"outcome\":\"escalated\"}");
    STORY(1, "the service crashed (a signal) before the stop; x complete", "x",
          REC "\"outcome\":\"crashed\",\"service_signal\":null}");
    STORY(1, "the service crashed (SIGBUS) before the stop; x complete", "x",
          "{\"version\":1,\"exit_code\":0,\"signal\":\"SIGBUS\",\"escalations\":[],\"outcome\":\"crashed\"}");
    /* Bounded: cut, terminated. */
    assert_int_equal(story_of(REC "\"outcome\":\"stopped\"}", "x", out, sizeof out), 0);
    assert_int_equal(strlen(out), sizeof out - 1);
}

/* A record of exactly SIZE bytes: the good one padded in a string. */
static void
write_record_of_size(const char *name, size_t size)
{
    const char *head = "{\"version\":1,\"exit_code\":0,\"signal\":null,\"escalations\":[],\"pad\":\"";
    char *buf = malloc(size + 1);

    assert_non_null(buf);
    assert_true(size > strlen(head) + 2);
    memset(buf, 'x', size);
    memcpy(buf, head, strlen(head));
    buf[size - 2] = '"';
    buf[size - 1] = '}';
    buf[size] = '\0';
    tu_write(name, buf);
    free(buf);
}

static void
test_record_size_cap(void **state)
{
    char problem[256];
    json_t *rec = NULL;

    (void)state;
    write_record_of_size("max.json", PH_RECORD_MAX);
    assert_int_equal(read_record("max.json", &rec, problem), 0);
    json_decref(rec);
    write_record_of_size("over.json", PH_RECORD_MAX + 1);
    assert_int_equal(read_record("over.json", &rec, problem), -1);
    assert_null(rec);
    assert_non_null(strstr(problem, "65537 bytes (limit 65536)"));
    write_record_of_size("big.json", 20u << 20);
    assert_int_equal(read_record("big.json", &rec, problem), -1);
    assert_non_null(strstr(problem, "limit 65536"));
}

static void
test_record_not_a_file(void **state)
{
    char problem[256], path[600];
    json_t *rec = NULL;

    (void)state;
    assert_int_equal(read_record("missing.json", &rec, problem), -1);
    assert_non_null(strstr(problem, "missing"));
    tu_write("real.json", GOOD_RECORD);
    snprintf(path, sizeof path, "%s/link.json", test_dir);
    assert_int_equal(symlink("real.json", path), 0);
    assert_int_equal(read_record("link.json", &rec, problem), -1);
    assert_non_null(strstr(problem, "symbolic link"));
    /* a FIFO must not block the harness */
    snprintf(path, sizeof path, "%s/fifo.json", test_dir);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(read_record("fifo.json", &rec, problem), -1);
    assert_non_null(strstr(problem, "not a regular file"));
    snprintf(path, sizeof path, "%s/dir.json", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(read_record("dir.json", &rec, problem), -1);
    assert_null(rec);
}

/* ---- the service dir, its lock, links, run.json -------------------------- */

static ph_run *
fake_run(const char *out)
{
    static ph_run r;

    memset(&r, 0, sizeof r);
    r.opts.out_dir = out;
    return &r;
}

static void
test_lock_service_cleans_and_refuses_links(void **state)
{
    char out[512], path[600];
    struct stat st;
    ph_error_t err = NULL;
    int svcfd = -1, lock = -1;

    (void)state;
    snprintf(out, sizeof out, "%s/out", test_dir);
    assert_int_equal(mkdir(out, 0755), 0);
    snprintf(path, sizeof path, "%s/out/front", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    make_deep("out/front/.incoming-dead", 50);
    snprintf(path, sizeof path, "%s/victim", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    tu_write("victim/keep", "x");
    snprintf(path, sizeof path, "%s/out/front/.incoming-link", test_dir);
    assert_int_equal(symlink("../../victim", path), 0);
    tu_write("out/front/20260101T000000Z-strace", "not a temp");

    assert_int_equal(ph_run_lock_service(fake_run(out), "front", &svcfd, &lock, &err), 0);
    assert_null(err);
    assert_true(svcfd >= 0 && lock >= 0);
    assert_int_equal(fstatat(svcfd, ".incoming-dead", &st, AT_SYMLINK_NOFOLLOW), -1);
    assert_int_equal(fstatat(svcfd, ".incoming-link", &st, AT_SYMLINK_NOFOLLOW), -1);
    assert_int_equal(fstatat(svcfd, "20260101T000000Z-strace", &st, AT_SYMLINK_NOFOLLOW), 0);
    snprintf(path, sizeof path, "%s/victim/keep", test_dir);
    assert_int_equal(stat(path, &st), 0);
    /* the lock is held: a second taker would wait */
    {
        int fd2 = openat(svcfd, ".lock", O_RDWR);
        assert_true(fd2 >= 0);
        assert_int_equal(flock(fd2, LOCK_EX | LOCK_NB), -1);
        close(fd2);
    }
    close(svcfd);
    close(lock);

    /* a link where the service dir should be: refused, nothing written there */
    snprintf(path, sizeof path, "%s/out/worker", test_dir);
    assert_int_equal(symlink("../victim", path), 0);
    assert_int_equal(ph_run_lock_service(fake_run(out), "worker", &svcfd, &lock, &err), -1);
    assert_non_null(strstr(err->msg, "symbolic link"));
    ph_error_free(&err);
    snprintf(path, sizeof path, "%s/victim/.lock", test_dir);
    assert_int_equal(lstat(path, &st), -1);
    /* a name that is a path is refused */
    assert_int_equal(ph_run_lock_service(fake_run(out), "../victim", &svcfd, &lock, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_run_lock_service(fake_run(out), ".", &svcfd, &lock, &err), -1);
    ph_error_free(&err);
    /* ... even where it would lead somewhere: out/a exists, so only the
     * name check stands between "a/b" and a lock in out/a/b */
    snprintf(path, sizeof path, "%s/out/a", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(ph_run_lock_service(fake_run(out), "a/b", &svcfd, &lock, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "no service name"));
    ph_error_free(&err);
    snprintf(path, sizeof path, "%s/out/a/b", test_dir);
    assert_int_equal(lstat(path, &st), -1);
    assert_int_equal(ph_run_lock_service(fake_run(out), "", &svcfd, &lock, &err), -1);
    ph_error_free(&err);
}

/* Under sudo only what the harness makes is given away. */
static void
test_only_created_is_given(void **state)
{
    char out[512], path[600];
    struct stat st;
    ph_error_t err = NULL;
    int svcfd = -1, lock = -1;

    (void)state;
    if (geteuid() != 0)
        skip();
    setenv_sudo();
    snprintf(out, sizeof out, "%s/exists/new/deeper", test_dir);
    snprintf(path, sizeof path, "%s/exists", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(ph_run_lock_service(fake_run(out), "front", &svcfd, &lock, &err), 0);
    assert_int_equal(stat(test_dir, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_uid, GIVE_UID);
    snprintf(path, sizeof path, "%s/exists/new", test_dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, GIVE_UID);
    assert_int_equal(fstat(svcfd, &st), 0);
    assert_int_equal(st.st_uid, GIVE_UID);
    assert_int_equal(fstat(lock, &st), 0);
    assert_int_equal(st.st_uid, GIVE_UID);
    close(svcfd);
    close(lock);
    /* existing service dir and lock: left as they are */
    snprintf(out, sizeof out, "%s/mine", test_dir);
    snprintf(path, sizeof path, "%s/mine/front", test_dir);
    assert_int_equal(ph_run_mkdir_p(path, &err), 0);
    assert_int_equal(chown(path, 0, 0), 0);
    tu_write("mine/front/.lock", "");
    snprintf(path, sizeof path, "%s/mine/front/.lock", test_dir);
    assert_int_equal(chown(path, 0, 0), 0);
    assert_int_equal(ph_run_lock_service(fake_run(out), "front", &svcfd, &lock, &err), 0);
    assert_int_equal(fstat(svcfd, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(fstat(lock, &st), 0);
    assert_int_equal(st.st_uid, 0);
    close(svcfd);
    close(lock);
}

static void
test_invoker_parsing(void **state)
{
    uid_t u;
    gid_t g;
    static const char *const bad[] = { "", "x", "12x", "-1", " 1", "+1", "99999999999999999999", "4294967295" };

    (void)state;
    if (geteuid() != 0)
        skip();
    setenv("SUDO_UID", "4242", 1);
    setenv("SUDO_GID", "4343", 1);
    assert_int_equal(ph_rundir_invoker(&u, &g), 1);
    assert_int_equal(u, 4242);
    assert_int_equal(g, 4343);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("SUDO_UID", bad[i], 1);
        assert_int_equal(ph_rundir_invoker(&u, &g), 0);
        setenv("SUDO_UID", "4242", 1);
        setenv("SUDO_GID", bad[i], 1);
        assert_int_equal(ph_rundir_invoker(&u, &g), 0);
        setenv("SUDO_GID", "4343", 1);
    }
    unsetenv("SUDO_GID");
    assert_int_equal(ph_rundir_invoker(&u, &g), 0);
    unsetenv("SUDO_UID");
    setenv("SUDO_GID", "4343", 1);
    assert_int_equal(ph_rundir_invoker(&u, &g), 0);
}

static void
test_link_replace(void **state)
{
    char buf[64], path[600];
    struct stat st;
    ph_error_t err = NULL;
    int dfd;
    ssize_t n;

    (void)state;
    snprintf(path, sizeof path, "%s/svc", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    dfd = open(path, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    tu_write("target", "x");
    /* a planted link at the name: replaced, its target untouched */
    assert_int_equal(symlinkat("../target", dfd, "latest"), 0);
    assert_int_equal(ph_rundir_link_replace(dfd, "run-2", "latest", &err), 0);
    n = readlinkat(dfd, "latest", buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "run-2");
    snprintf(path, sizeof path, "%s/target", test_dir);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    /* a directory at the name: an error, and no temp link left behind */
    assert_int_equal(mkdirat(dfd, "strace.log", 0755), 0);
    tu_write("svc/strace.log/inside", "x");
    assert_int_equal(ph_rundir_link_replace(dfd, "run-2/strace.log", "strace.log", &err), -1);
    ph_error_free(&err);
    {
        DIR *d = fdopendir(dup(dfd));
        struct dirent *de;
        assert_non_null(d);
        while ((de = readdir(d)) != NULL)
            assert_true(strncmp(de->d_name, ".incoming-", 10) != 0);
        closedir(d);
    }
    /* under sudo the new link is the invoker's, its target is not */
    if (geteuid() == 0) {
        setenv_sudo();
        assert_int_equal(ph_rundir_link_replace(dfd, "../target", "other", &err), 0);
        assert_int_equal(fstatat(dfd, "other", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(st.st_uid, GIVE_UID);
        assert_int_equal(lstat(path, &st), 0);
        assert_int_equal(st.st_uid, 0);
    }
    close(dfd);
}

static void
test_write_json_precision_and_links(void **state)
{
    char path[600], text[512];
    ph_error_t err = NULL;
    json_t *j = json_pack("{s:f, s:f}", "seconds", 1.189, "tiny", 0.000123456789);
    FILE *f;
    size_t n;
    struct stat st;
    int dfd = open(test_dir, O_RDONLY | O_DIRECTORY);

    (void)state;
    assert_true(dfd >= 0);
    tu_write("victim", "keep");
    snprintf(path, sizeof path, "%s/run.json", test_dir);
    assert_int_equal(symlink("victim", path), 0);
    assert_int_equal(ph_rundir_write_json_at(dfd, "run.json", "run.json", j, &err), 0);
    json_decref(j);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "\"seconds\": 1.189"));
    assert_null(strstr(text, "1.1890000"));
    assert_non_null(strstr(text, "0.000123456789"));
    snprintf(path, sizeof path, "%s/victim", test_dir);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_string_equal(text, "keep");
    close(dfd);
}

/* ---- deferred interrupts --------------------------------------------------- */

static void
test_interrupt_deferred(void **state)
{
    struct sigaction sa;
    ph_error_t err = NULL;

    (void)state;
    /* A background job of a shell without job control starts with SIGINT
     * ignored, and an ignored signal rightly stays ignored. */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_IGN);
    ph_interrupt_begin();
    ph_interrupt_begin(); /* nested */
    sigaction(SIGTERM, NULL, &sa);
    assert_true(sa.sa_handler == SIG_IGN); /* ignored on entry: stays ignored */
    sigaction(SIGINT, NULL, &sa);
    assert_true(sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
    assert_int_equal(ph_interrupted(), 0);
    raise(SIGINT); /* only a flag: the test goes on */
    assert_int_equal(ph_interrupted(), SIGINT);
    raise(SIGHUP);
    assert_int_equal(ph_interrupted(), SIGINT); /* the first one is kept */
    ph_interrupt_end();
    sigaction(SIGINT, NULL, &sa);
    assert_true(sa.sa_handler != SIG_DFL); /* still inside the outer section */
    ph_interrupt_end();
    sigaction(SIGINT, NULL, &sa);
    assert_true(sa.sa_handler == SIG_DFL);
    sigaction(SIGTERM, NULL, &sa);
    assert_true(sa.sa_handler == SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    ph_interrupt_end(); /* unbalanced: harmless */
    assert_int_equal(ph_interrupt_fail(&err, SIGINT), -1);
    assert_int_equal(err->status, 130);
    assert_string_equal(err->msg, "interrupted by SIGINT");
    ph_error_free(&err);
    ph_interrupt_fail(&err, SIGTERM);
    assert_int_equal(err->status, 143);
    ph_error_free(&err);
}

/* ---- stop: waves, budget; attach: which container ---------------------- */

static void
test_stop_budget(void **state)
{
    ph_strv esc = { 0 };
    ph_profile p = { .stop_grace_ns = 3000000000LL, .escalate_grace_ns = 5000000000LL };

    (void)state;
    assert_int_equal(ph_run_stop_budget_s(NULL), 600);
    assert_int_equal(ph_run_stop_budget_s(&p), 3 + 30); /* no escalation */
    ph_strv_push(&esc, "SIGUSR2");
    ph_strv_push(&esc, "SIGKILL");
    p.escalate = esc;
    assert_int_equal(ph_run_stop_budget_s(&p), 3 + 2 * 5 + 30);
    /* seconds, from nanoseconds: 120 s of grace is 120, not 120e9 or 0 */
    p.stop_grace_ns = 120000000000LL;
    p.escalate_grace_ns = 1500000000LL;
    assert_int_equal(ph_run_stop_budget_s(&p), 120 + 3 + 30);
    ph_strv_free(&esc);
}

static ph_service *
svc(const char *name, const char *dep1, const char *dep2)
{
    ph_service *s = calloc(1, sizeof *s);

    assert_non_null(s);
    s->name = strdup(name);
    if (dep1)
        ph_strv_push(&s->depends_on, dep1);
    if (dep2)
        ph_strv_push(&s->depends_on, dep2);
    return s;
}

static void
svc_free(ph_service *s)
{
    free(s->name);
    ph_strv_free(&s->depends_on);
    free(s);
}

static void
test_stop_waves(void **state)
{
    /* front -> api -> db, front -> cache; worker -> db; lone alone.  Given
     * in an order that puts what is depended on first. */
    ph_service *all[] = { svc("db", NULL, NULL), svc("cache", NULL, NULL), svc("api", "db", NULL),
                          svc("lone", NULL, NULL), svc("worker", "db", NULL), svc("front", "api", "cache") };
    ph_service *v[6];
    ph_svc_list sl = { v, 6 };
    size_t depth[6];
    const char *want[] = { "lone", "worker", "front", "cache", "api", "db" }; /* stable: the given order within a wave */
    const size_t want_depth[] = { 0, 0, 0, 1, 1, 2 };

    (void)state;
    memcpy(v, all, sizeof v);
    ph_run_stop_waves(&sl, depth);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(sl.v[i]->name, want[i]);
        assert_int_equal(depth[i], want_depth[i]);
    }
    /* a dependency outside the selection does not count; one service */
    sl.n = 1;
    sl.v[0] = all[2]; /* api, without db */
    ph_run_stop_waves(&sl, depth);
    assert_int_equal(depth[0], 0);
    /* a chain: each its own wave, dependants first */
    {
        ph_service *c[] = { svc("c", NULL, NULL), svc("b", "c", NULL), svc("a", "b", NULL) };
        ph_svc_list cl = { c, 3 };
        size_t d[3];

        ph_run_stop_waves(&cl, d);
        assert_string_equal(cl.v[0]->name, "a");
        assert_string_equal(cl.v[1]->name, "b");
        assert_string_equal(cl.v[2]->name, "c");
        assert_int_equal(d[0], 0);
        assert_int_equal(d[1], 1);
        assert_int_equal(d[2], 2);
        for (size_t i = 0; i < 3; i++)
            svc_free(c[i]);
    }
    for (size_t i = 0; i < 6; i++)
        svc_free(all[i]);
}

/* LIST as the Engine backend lists it. */
static const ph_workload_list *
listed(json_t *list, ph_workload_list *out)
{
    ph_workload_list_free(out);
    assert_int_equal(ph_backend_engine_merge_compose(list, NULL, out), 0);
    return out;
}

static void
test_attach_pick(void **state)
{
    json_t *list;
    ph_workload_list wl = { 0 };
    const char *id = NULL;
    ph_error_t err = NULL;

    (void)state;
    /* an exited container, then the running one: the running one */
    list = json_pack("[{s:s, s:s, s:{}}, {s:s, s:s, s:{}}]", "Id", "exited1", "State", "exited", "Labels", "Id",
                     "running1", "State", "running", "Labels");
    assert_int_equal(ph_run_attach_pick(listed(list, &wl), "front", "strace", &id, &err), 0);
    assert_string_equal(id, "running1");
    json_decref(list);
    ph_workload_list_free(&wl);
    /* none running: a usage error that says so */
    list = json_pack("[{s:s, s:s, s:{}}, {s:s, s:s, s:{}}]", "Id", "a", "State", "exited", "Labels", "Id", "b",
                     "State", "created", "Labels");
    assert_int_equal(ph_run_attach_pick(listed(list, &wl), "front", "strace", &id, &err), -1);
    assert_non_null(strstr(err->msg, "is not running"));
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    json_decref(list);
    ph_workload_list_free(&wl);
    /* profiled already (even when not running): refused */
    list = json_pack("[{s:s, s:s, s:{s:s}}, {s:s, s:s, s:{}}]", "Id", "p", "State", "exited", "Labels",
                     PH_LABEL_MODE, "massif", "Id", "r", "State", "running", "Labels");
    assert_int_equal(ph_run_attach_pick(listed(list, &wl), "front", "strace", &id, &err), -1);
    assert_non_null(strstr(err->msg, "already being profiled under massif"));
    ph_error_free(&err);
    json_decref(list);
    ph_workload_list_free(&wl);
}

/* A command run from the tools tree: its first word and every word that
 * names one of the mode's tools are the tree's programs (`env -u X
 * valgrind ...` runs the tree's valgrind), nothing else; without the tree
 * the words are as written. */
static void
test_tool_word(void **state)
{
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    const ph_profile *p;
    static const char *const wrap[][2] = {
        { "env", PH_TOOLS_BIN "/env" }, { "-u", "-u" }, { "HOSTNAME", "HOSTNAME" },
        { "valgrind", PH_TOOLS_BIN "/valgrind" }, { "--tool=massif", "--tool=massif" },
        { "vgdb", PH_TOOLS_BIN "/vgdb" }, { "valgrind.bin", "valgrind.bin" },
    };

    (void)state;
    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    p = ph_profiles_find(&set, "massif");
    assert_non_null(p);
    for (size_t i = 0; i < sizeof wrap / sizeof wrap[0]; i++) {
        char *w = ph_run_tool_word(p, i, strdup(wrap[i][0]), PH_TOOLS_BIN);

        assert_non_null(w);
        assert_string_equal(w, wrap[i][1]);
        free(w);
        w = ph_run_tool_word(p, i, strdup(wrap[i][0]), NULL);
        assert_string_equal(w, wrap[i][0]);
        free(w);
    }
    /* the first word is the tree's whatever it is (strace's wrap) */
    {
        char *w = ph_run_tool_word(p, 0, strdup("strace"), PH_TOOLS_BIN);

        assert_string_equal(w, PH_TOOLS_BIN "/strace");
        free(w);
    }
    assert_null(ph_run_tool_word(p, 1, NULL, PH_TOOLS_BIN));
    ph_profiles_free(&set);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_give_tree_any_depth, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_give_tree_few_fds, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_give_tree_links_not_followed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_log_line_has_no_controls, tu_setup, tu_teardown),
        cmocka_unit_test(test_escape_controls),
        cmocka_unit_test(test_tool_word),
        cmocka_unit_test(test_escape_utf8),
        cmocka_unit_test(test_escape_bounded),
        cmocka_unit_test(test_escape_write),
        cmocka_unit_test_setup_teardown(test_fs_remove_deep_and_links, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_fs_remove_dot_empties, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_fs_walk_tree_moved, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_fs_walk_counts_wide, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_fs_opendir_at_twice, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_fs_write_atomic, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_fs_mkdtemp_fresh, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_record_fields, tu_setup, tu_teardown),
        cmocka_unit_test(test_record_story),
        cmocka_unit_test_setup_teardown(test_record_size_cap, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_record_not_a_file, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_lock_service_cleans_and_refuses_links, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_only_created_is_given, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_invoker_parsing, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_link_replace, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_write_json_precision_and_links, tu_setup, tu_teardown),
        cmocka_unit_test(test_interrupt_deferred),
        cmocka_unit_test(test_stop_budget),
        cmocka_unit_test(test_stop_waves),
        cmocka_unit_test(test_attach_pick),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
