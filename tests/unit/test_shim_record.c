/* test_shim_record.c - the init shim's completion record, ph-exit.json:
 * its contents and escaping, what it says about each way a service can
 * end (the fault matrix, in every stop mode), and that nothing the service
 * plants in the artifacts dir blocks, redirects or keeps out the record.
 * ph-init runs as a subprocess, no Docker (helpers/shim_test.h). */
#include "helpers/shim_test.h"

#include <dirent.h>

/* ------------------------------------------------------------- the record */

static int
is_utc_ms(const char *s)
{
    /* 2026-01-02T03:04:05.678Z */
    static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";

    if (s == NULL || strlen(s) != sizeof pat - 1)
        return 0;
    for (size_t i = 0; pat[i]; i++)
        if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
            return 0;
    return 1;
}

static void
test_record_contents_escaping_and_dir_mode(void **state)
{
    char record[700], dir[700], tmp[720];
    char weird[] = "q\"b\\s\nn\tt\x01\x1f" "caf\xc3\xa9 \xff!";
    const char *weird_as_json = "q\"b\\s\nn\tt\x01\x1f" "caf\xc3\xa9 \xef\xbf\xbd!";
    char *argv[] = { SHIM, "--record", record, "--", "/bin/sh", "-c", "exit 7", weird, "", NULL };
    struct stat sb;
    mode_t old;
    json_t *j, *cmd;
    pid_t p;

    (void)state;
    snprintf(dir, sizeof dir, "%s/out/a/b", test_dir);
    snprintf(record, sizeof record, "%s/ph-exit.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", record);
    old = umask(077);
    p = spawn(argv);
    umask(old);
    assert_int_equal(wait_exit(p), 7);
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0777);
    snprintf(dir, sizeof dir, "%s/out", test_dir);
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0777);
    assert_int_equal(access(tmp, F_OK), -1);
    j = load_record(record);
    cmd = json_object_get(j, "command");
    assert_int_equal(json_array_size(cmd), 5);
    assert_string_equal(json_string_value(json_array_get(cmd, 0)), "/bin/sh");
    assert_string_equal(json_string_value(json_array_get(cmd, 2)), "exit 7");
    assert_string_equal(json_string_value(json_array_get(cmd, 3)), weird_as_json);
    assert_string_equal(json_string_value(json_array_get(cmd, 4)), "");
    assert_int_equal(jint(j, "exit_code"), 7);
    assert_true(json_is_null(json_object_get(j, "signal")));
    assert_true(json_is_false(json_object_get(j, "stop_requested")));
    assert_true(json_is_null(json_object_get(j, "stop_requested_at")));
    assert_true(json_is_null(json_object_get(j, "stop_seconds")));
    assert_true(json_is_false(json_object_get(j, "wrapper_killed")));
    assert_string_equal(jstr(j, "stop_signal"), "SIGTERM");
    assert_true(jint(j, "wrapper_pid") > 0);
    assert_true(is_utc_ms(jstr(j, "started_at")));
    assert_true(is_utc_ms(jstr(j, "ended_at")));
    assert_true(strcmp(jstr(j, "started_at"), jstr(j, "ended_at")) <= 0);
    assert_true(json_is_number(json_object_get(j, "run_seconds")));
    assert_true(json_number_value(json_object_get(j, "run_seconds")) >= 0);
    json_decref(j);
}

/* ------------------------------------------- a hostile artifacts dir */

/* The artifacts dir is writable by the service: whatever it plants there
 * must neither block ph-init nor redirect the record.  Each test runs
 * `ph-init --record D/ph-exit.json -- sh -c SCRIPT` (D = test_dir/art,
 * $D in SCRIPT), SCRIPT being the service that plants, then exiting 3;
 * ph-init's stderr goes to test_dir/stderr. */
static const char *
art(const char *name)
{
    static char bufs[4][700];
    static int k;
    char *b = bufs[k++ % 4];

    snprintf(b, sizeof bufs[0], "%s/art%s%s", test_dir, name[0] ? "/" : "", name);
    return b;
}

static int
run_hostile(const char *script)
{
    char record[700], env[800];
    char *argv[] = { SHIM, "--record", record, "--", "/bin/sh", "-c", (char *)script, NULL };

    snprintf(record, sizeof record, "%s", art("ph-exit.json"));
    snprintf(env, sizeof env, "%s", art(""));
    setenv("D", env, 1);
    setenv("T", test_dir, 1);
    return wait_exit(spawn_err(argv, tpath("stderr")));
}

/* Whether PATH is a regular file holding a record with exit_code 3. */
static int
is_record(const char *path)
{
    struct stat sb;
    json_t *j;
    int ok;

    if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1)
        return 0;
    j = load_record(path);
    ok = jint(j, "exit_code") == 3;
    json_decref(j);
    return ok;
}

/* How many entries of test_dir/art begin with PREFIX. */
static int
count_entries(const char *prefix)
{
    DIR *d = opendir(art(""));
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* A FIFO at the temporary name made ph-init block in open() for ever. */
static void
test_record_not_blocked_by_a_fifo(void **state)
{
    (void)state;
    assert_int_equal(run_hostile("mkfifo \"$D/ph-exit.json.tmp\" \"$D/ph-exit.json\" && exit 3"), 3);
    assert_true(is_record(art("ph-exit.json")));
}

/* A symlink or a hard link at either name: the record goes neither
 * through it nor to what it points at. */
static void
test_record_not_written_through_planted_links(void **state)
{
    const char *victim = tu_write("victim", "the service's target\n");
    static const char *const scripts[] = {
        "ln -s \"$T/victim\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln \"$T/victim\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln -s \"$T/victim\" \"$D/ph-exit.json\" && exit 3",
        "ln -s \"$T/nonexistent\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln -s \"$T/victim\" \"$D/ph-exit.json.tmp\" && ln -s \"$T/victim\" \"$D/ph-exit.json\" && exit 3",
    };

    (void)state;
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        char cmd[800];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", art(""));
        assert_int_equal(system(cmd), 0);
        if (run_hostile(scripts[i]) != 3)
            fail_msg("case %zu: wrong exit status", i);
        if (!file_has(victim, "the service's target\n") || access(tpath("nonexistent"), F_OK) == 0)
            fail_msg("case %zu (%s): the record was written through the link", i, scripts[i]);
        if (!is_record(art("ph-exit.json")))
            fail_msg("case %zu (%s): no record in place", i, scripts[i]);
    }
}

/* A directory at the record's name is moved aside, not lost, and the
 * record takes its place. */
static void
test_record_replaces_a_planted_directory(void **state)
{
    char moved[700];
    DIR *d;
    struct dirent *e;
    int found = 0;

    (void)state;
    assert_int_equal(run_hostile("mkdir -p \"$D/ph-exit.json/sub\" && echo data > \"$D/ph-exit.json/sub/f\" && exit 3"),
                     3);
    assert_true(is_record(art("ph-exit.json")));
    assert_true(file_has(tpath("stderr"), "ph-exit.json"));
    d = opendir(art(""));
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "ph-exit.json.", 13) == 0) {
            snprintf(moved, sizeof moved, "%s/%s/sub/f", art(""), e->d_name);
            found |= file_has(moved, "data\n");
        }
    closedir(d);
    assert_true(found);
}

/* The service replaces the artifacts dir by a symlink to another: the
 * record stays in the directory ph-init made, and says so on stderr. */
static void
test_record_dir_replaced_by_a_symlink(void **state)
{
    char moved[700];

    (void)state;
    assert_int_equal(mkdir(tpath("elsewhere"), 0755), 0);
    assert_int_equal(run_hostile("mv \"$D\" \"$T/moved\" && ln -s \"$T/elsewhere\" \"$D\" && exit 3"), 3);
    assert_int_equal(access(tpath("elsewhere/ph-exit.json"), F_OK), -1);
    snprintf(moved, sizeof moved, "%s/moved/ph-exit.json", test_dir);
    assert_true(is_record(moved));
    assert_true(file_has(tpath("stderr"), "moved or replaced"));
}

/* Thousands of entries at every name a simple scheme would try next. */
static void
test_record_despite_many_planted_names(void **state)
{
    char path[700];

    (void)state;
    assert_int_equal(mkdir(art(""), 0777), 0);
    assert_int_equal(mkdir(art("ph-exit.json.tmp"), 0777), 0);
    for (int i = 0; i < 5000; i++) {
        snprintf(path, sizeof path, "%s/ph-exit.json.tmp.%d", art(""), i);
        assert_int_equal(mkdir(path, 0777), 0);
        snprintf(path, sizeof path, "%s/ph-exit.json.tmp%d", art(""), i);
        assert_int_equal(mkdir(path, 0777), 0);
    }
    assert_int_equal(run_hostile("exit 3"), 3);
    assert_true(is_record(art("ph-exit.json")));
    assert_int_equal(count_entries("ph-exit.json"), 1 + 1 + 2 * 5000); /* no temporary left */
}

/* A full disk: the record cannot be written; ph-init says so, leaves no
 * partial file, and still exits with the command's status.  As root, on
 * a tiny tmpfs in a mount namespace of its own. */
static void
test_record_on_a_full_disk(void **state)
{
    char cmd[2000];
    const char *mnt = tpath("full");
    int rc;

    (void)state;
    if (geteuid() != 0 || system("unshare --mount true >/dev/null 2>&1") != 0)
        skip();
    assert_int_equal(mkdir(mnt, 0755), 0);
    snprintf(cmd, sizeof cmd,
             "unshare --mount sh -c 'mount -t tmpfs -o size=64k none %s || exit 90; "
             "dd if=/dev/zero of=%s/fill bs=4k >/dev/null 2>&1; "
             "%s --record %s/ph-exit.json -- /bin/sh -c \"exit 3\" 2> %s; rc=$?; "
             "ls -A %s > %s; exit $rc'",
             mnt, mnt, SHIM, mnt, tpath("stderr"), mnt, tpath("listing"));
    rc = system(cmd);
    assert_true(WIFEXITED(rc));
    if (WEXITSTATUS(rc) == 90)
        skip();
    assert_int_equal(WEXITSTATUS(rc), 3);
    assert_true(file_has(tpath("stderr"), "cannot write the record"));
    assert_true(file_has(tpath("stderr"), "No space left on device"));
    assert_true(file_has(tpath("listing"), "fill\n"));
    assert_false(file_has(tpath("listing"), "ph-exit"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_record_contents_escaping_and_dir_mode, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_not_blocked_by_a_fifo, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_not_written_through_planted_links, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_replaces_a_planted_directory, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_dir_replaced_by_a_symlink, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_despite_many_planted_names, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_on_a_full_disk, tu_setup, shim_teardown),
    };
    return cmocka_run_group_tests_name("shim_record", tests, NULL, NULL);
}
