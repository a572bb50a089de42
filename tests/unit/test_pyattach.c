/* test_pyattach.c - a running CPython read from outside it (harness/
 * pyattach, the sampler's frame reader over process_vm_readv): a child
 * python3 with a busy main thread and a thread asleep, its modules and
 * symbols found from /proc, its frames named; on the CPU clock only the
 * running thread is counted, on the wall clock the sleeping one too,
 * ending in [off-cpu]; the snapshot's files written; a process that runs
 * no CPython refused before any sample; a python3 in a root of its own
 * (chroot, as a service in its container) where each file it maps was
 * replaced by an absolute symlink to that file's path: resolved in its
 * root (where it leads nowhere), never read from this side.  Sampling is
 * polled, a bounded number of samples, never timed. */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <sys/stat.h>

#include "ph_pyattach.h"
#include "ph_util.h"

#define SAMPLES_MAX 20000 /* samples looked at for what must show, at 1 ms apart */

/* ready once the idle thread sleeps (in nanosleep: x86-64's 35 and 230,
 * arm64's 101 and 115): before, it runs pyattach_idle on a CPU for a
 * moment, which a loaded machine stretches into the CPU clock's samples */
static const char script[] =
    "import threading, time\n"
    "def pyattach_idle():\n"
    "    time.sleep(3600)\n"
    "def pyattach_busy():\n"
    "    x = 0\n"
    "    while True:\n"
    "        x += 1\n"
    "t = threading.Thread(target=pyattach_idle, daemon=True)\n"
    "t.start()\n"
    "while open('/proc/self/task/%d/syscall' % t.native_id).read().split()[0] not in ('35', '230', '101', '115'):\n"
    "    time.sleep(0.001)\n"
    "print('ready', flush=True)\n"
    "pyattach_busy()\n";

static pid_t child = -1;

/* The host's python3 running CODE (ARG its argument, or NULL), once
 * it says it runs. */
static pid_t
start_python(const char *code, const char *arg)
{
    int fds[2];
    char buf[16] = "";
    pid_t pid;
    FILE *f;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execlp("python3", "python3", "-c", code, arg, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    f = fdopen(fds[0], "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "ready\n");
    return pid;
}

static int
setup(void **state)
{
    tu_setup(state);
    child = start_python(script, NULL);
    return 0;
}

static int
teardown(void **state)
{
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        child = -1;
    }
    return tu_teardown(state);
}

/* The folded text of T after sampling on CLOCK until it holds WANT (or
 * SAMPLES_MAX samples); malloc'd. */
static char *
sample_until(php_target *t, int clock, const char *want)
{
    ph_error_t err = NULL;
    char *folded = NULL;
    size_t len = 0;

    for (int i = 0; i < SAMPLES_MAX; i++) {
        assert_true(php_sample(t, clock) >= 0);
        if (i % 50 != 49)
            continue;
        free(folded);
        assert_int_equal(php_folded(t, 1, &folded, &len, &err), 0);
        if (strstr(folded, want) != NULL)
            break;
        usleep(1000);
    }
    return folded;
}

static void
test_cpu_names_the_running_thread(void **state)
{
    ph_error_t err = NULL;
    php_target *t = php_target_open(child, &err);
    char *folded;

    (void)state;
    if (t == NULL)
        fail_msg("%s", err->msg);
    assert_non_null(strstr(php_target_describe(t), ": frames read"));
    folded = sample_until(t, PHP_CLOCK_CPU, "pyattach_busy (<string>:");
    assert_non_null(strstr(folded, "<module> (<string>:13)_[p];pyattach_busy (<string>:"));
    /* asleep: never on the CPU clock */
    assert_null(strstr(folded, "pyattach_idle"));
    assert_null(strstr(folded, "[off-cpu]"));
    free(folded);
    php_target_close(t);
}

static void
test_wall_marks_the_sleeping_thread(void **state)
{
    ph_error_t err = NULL;
    php_target *t = php_target_open(child, &err);
    char *folded;

    (void)state;
    if (t == NULL)
        fail_msg("%s", err->msg);
    folded = sample_until(t, PHP_CLOCK_WALL, "pyattach_idle (<string>:3)_[p];[off-cpu] ");
    assert_non_null(strstr(folded, "pyattach_idle (<string>:3)_[p];[off-cpu] "));
    assert_non_null(strstr(folded, "pyattach_busy (<string>:"));
    free(folded);
    php_target_close(t);
}

static size_t
count_glob(const char *pattern)
{
    char path[512];
    glob_t g;
    size_t n;

    snprintf(path, sizeof path, "%s/%s", test_dir, pattern);
    if (glob(path, 0, NULL, &g) != 0)
        return 0;
    n = g.gl_pathc;
    globfree(&g);
    return n;
}

static void
test_run_writes_the_snapshot(void **state)
{
    volatile sig_atomic_t stop = 1; /* what was sampled before is written at once */
    ph_error_t err = NULL;
    php_target *t = php_target_open(child, &err);
    char *folded;

    (void)state;
    if (t == NULL)
        fail_msg("%s", err->msg);
    free(sample_until(t, PHP_CLOCK_WALL, "pyattach_busy"));
    if (php_run(t, 100, PHP_CLOCK_WALL, test_dir, "t <title>", &stop, &err) < 0)
        fail_msg("%s", err->msg);
    assert_int_equal(count_glob("stacks-*-1.folded"), 1);
    assert_int_equal(count_glob("offcpu-*-1.folded"), 1);
    assert_int_equal(count_glob("oncpu-*-1.folded"), 1);
    assert_int_equal(count_glob("flamegraph-*-1.svg"), 1);
    assert_int_equal(count_glob("profile-*-1.pb.gz"), 1);
    assert_int_equal(php_folded(t, 1, &folded, &(size_t){ 0 }, &err), 0);
    assert_non_null(strstr(folded, "pyattach_busy"));
    free(folded);
    php_target_close(t);
    /* the service runs on */
    assert_int_equal(kill(child, 0), 0);
}

/* A python3 whose sleeping thread names itself `idle;x` (its comm, what
 * a sample names the thread by), so the views' split and the name's
 * escape are seen in the files written. */
static const char named_script[] =
    "import threading, time\n"
    "def pyattach_idle():\n"
    "    open('/proc/self/task/%d/comm' % threading.get_native_id(), 'w').write('idle;x')\n"
    "    ready.set()\n"
    "    time.sleep(3600)\n"
    "def pyattach_busy():\n"
    "    x = 0\n"
    "    while True:\n"
    "        x += 1\n"
    "ready = threading.Event()\n"
    "threading.Thread(target=pyattach_idle, daemon=True).start()\n"
    "ready.wait()\n"
    "print('ready', flush=True)\n"
    "pyattach_busy()\n";

/* The content of the one file of TEST_DIR matching PATTERN; malloc'd. */
static char *
read_glob(const char *pattern)
{
    char path[512];
    glob_t g;
    char *text = NULL;
    size_t len = 0;
    ph_error_t err = NULL;

    snprintf(path, sizeof path, "%s/%s", test_dir, pattern);
    assert_int_equal(glob(path, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 1);
    if (ph_read_file(g.gl_pathv[0], 1u << 20, 0, &text, &len, &err) < 0)
        fail_msg("%s", err->msg);
    globfree(&g);
    return text;
}

static void
test_views_and_thread_names(void **state)
{
    volatile sig_atomic_t stop = 1;
    ph_error_t err = NULL;
    php_target *t;
    char *folded, *off, *on;

    (void)state;
    child = start_python(named_script, NULL);
    if ((t = php_target_open(child, &err)) == NULL)
        fail_msg("%s", err->msg);
    /* the thread found by its id (its comm read), its `;` not a frame's end */
    folded = sample_until(t, PHP_CLOCK_WALL, "idle:x;Thread._bootstrap (");
    assert_non_null(strstr(folded, "idle:x;Thread._bootstrap ("));
    assert_null(strstr(folded, "idle;x"));
    free(folded);
    free(sample_until(t, PHP_CLOCK_WALL, "pyattach_busy"));
    if (php_run(t, 100, PHP_CLOCK_WALL, test_dir, "views", &stop, &err) < 0)
        fail_msg("%s", err->msg);
    off = read_glob("offcpu-*-1.folded");
    on = read_glob("oncpu-*-1.folded");
    assert_non_null(strstr(off, "pyattach_idle (<string>:5)_[p];[off-cpu] "));
    assert_null(strstr(off, "_[p] ")); /* a line on the CPU ends in its frame */
    assert_null(strstr(on, "[off-cpu]"));
    assert_non_null(strstr(on, "pyattach_busy (<string>:"));
    free(off);
    free(on);
    php_target_close(t);
}

static void
test_refuses_what_runs_no_python(void **state)
{
    ph_error_t err = NULL;
    pid_t pid = fork();
    php_target *t;

    (void)state;
    assert_true(pid >= 0);
    if (pid == 0) {
        execlp("sleep", "sleep", "3600", (char *)NULL);
        _exit(127);
    }
    /* until sleep runs (its exe is sleep's, not this test's) */
    for (int i = 0; i < 10000; i++) {
        char exe[512] = "", path[64];
        ssize_t n;

        snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
        if ((n = readlink(path, exe, sizeof exe - 1)) > 0 && strstr(exe, "sleep") != NULL)
            break;
        usleep(1000);
    }
    t = php_target_open(pid, &err);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_null(t);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "no CPython"));
    ph_error_free(&err);
}

/* mkdir -p of PATH's directory */
static void
mkdirs_of(const char *path)
{
    char d[PATH_MAX];

    snprintf(d, sizeof d, "%s", path);
    for (char *c = d + 1; (c = strchr(c, '/')) != NULL; c++) {
        *c = '\0';
        if (mkdir(d, 0755) < 0)
            assert_int_equal(errno, EEXIST);
        *c = '/';
    }
}

static void
test_planted_symlinks_stay_in_its_root(void **state)
{
    static const char chrooted[] =
        "import os, sys, time\n"
        "os.chroot(sys.argv[1])\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    time.sleep(0.01)\n";
    char root[PATH_MAX - 64], link[PATH_MAX], line[PATH_MAX + 256];
    ph_error_t err = NULL;
    php_target *t;
    FILE *f;
    int planted = 0;
    pid_t pid;

    (void)state;
    if (geteuid() != 0)
        skip(); /* chroot: root, as the tools container is */
    snprintf(root, sizeof root, "%s/root", test_dir);
    assert_int_equal(mkdir(root, 0755), 0);
    pid = child = start_python(chrooted, root); /* teardown's to end */
    /* what it maps, as this side sees it; in its root, each a symlink to
     * this side's own path: the service's files are its to replace */
    snprintf(line, sizeof line, "/proc/%d/maps", (int)pid);
    assert_non_null(f = fopen(line, "re"));
    while (fgets(line, sizeof line, f) != NULL) {
        char file[PATH_MAX];

        if (sscanf(line, "%*s %*s %*s %*s %*s %4095s", file) != 1 || file[0] != '/')
            continue;
        snprintf(link, sizeof link, "%s%s", root, file);
        mkdirs_of(link);
        if (symlink(file, link) == 0)
            planted++;
        else
            assert_int_equal(errno, EEXIST);
    }
    fclose(f);
    assert_true(planted > 0);
    /* outside its root those links lead to this side's python3 and
     * libpython, which name a CPython; in it, to themselves */
    t = php_target_open(pid, &err);
    if (t != NULL)
        fail_msg("the planted links were followed out of its root: %s", php_target_describe(t));
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "no CPython"));
    ph_error_free(&err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cpu_names_the_running_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wall_marks_the_sleeping_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_writes_the_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_what_runs_no_python, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_planted_symlinks_stay_in_its_root, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_views_and_thread_names, tu_setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
