/* test_run.c - the loop's host-side pieces that need no Engine: handing a
 * collected tree to the invoker (any depth, few fds, links never
 * followed), and what reaches the terminal from a container. */
#include "test_util.h"

#include <errno.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ph_log.h"
#include "ph_run_int.h"

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
        if (ph_run_give_tree_at(AT_FDCWD, top, &err) < 0)
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_give_tree_any_depth, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_give_tree_few_fds, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_give_tree_links_not_followed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_log_line_has_no_controls, tu_setup, tu_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
