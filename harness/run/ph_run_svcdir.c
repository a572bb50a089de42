/* ph_run_svcdir.c - <out>/<service>: the service's directory, made and
 * opened without following a link, its .lock taken, and what a harness
 * that died under the lock left there (.incoming-*) removed.  Below
 * every file that writes a run (collect, replicas, the placed files).
 */
#include "ph_run_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_rundir.h"
#include "ph_util.h"

#define TEMP_PREFIX PH_RUNDIR_TEMP_PREFIX

/* The run label names a directory: nothing but [A-Za-z0-9._-], no leading
 * dot, bounded. */
int
ph_run_safe_name(const char *s)
{
    size_t n = 0;

    if (s == NULL || s[0] == '\0' || s[0] == '.')
        return 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return n < 128;
}

/* Open <out>/<service> (made when missing; what is made is the invoker's),
 * refusing a link there: everything below it is reached through this fd. */
static int
open_service_dir(ph_run *r, const char *service, int *fd_out, ph_error_t *err)
{
    ph_cleanup_close int out = -1;
    char esc[256];
    int fd;

    if (!ph_run_safe_name(service))
        return ph_fail(err, 0, "`%s` is no service name profharness writes a directory for",
                       ph_escape(esc, sizeof esc, service));
    if (ph_run_mkdir_p(r->opts.out_dir, err) < 0)
        return -1;
    out = open(r->opts.out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (out < 0 && errno == ENOTDIR) {
        ph_fail(err, 0, "the output directory `%s` is not a directory", r->opts.out_dir);
        return ph_error_hint(err, "point -o at a directory (it is created if missing), or move the file away");
    }
    if (out < 0)
        return ph_fail(err, errno, "open `%s`", r->opts.out_dir);
    if (mkdirat(out, service, 0755) == 0)
        ph_rundir_give_at(out, service);
    else if (errno != EEXIST)
        return ph_fail(err, errno, "mkdir `%s/%s`", r->opts.out_dir, service);
    fd = openat(out, service, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        struct stat st;
        int e = errno;

        if (fstatat(out, service, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
            ph_fail(err, 0, "`%s/%s` is a symbolic link: runs are written only into a real directory",
                    r->opts.out_dir, service);
            return ph_error_hint(err, "remove the link, or point -o at the directory it names");
        }
        return ph_fail(err, e, "open `%s/%s`", r->opts.out_dir, service);
    }
    *fd_out = fd;
    return 0;
}

/* Under the lock no other harness is collecting: every temp entry is a
 * leftover of one that died (its container was kept, so nothing is lost). */
void
ph_run_remove_stale_temps(ph_run *r, int svcfd, const char *service)
{
    DIR *d = ph_fs_opendir_at(svcfd);
    struct dirent *de;
    ph_strv stale = { 0 };

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0 && ph_strv_push(&stale, de->d_name) < 0)
            break;
    closedir(d);
    for (size_t i = 0; i < stale.n; i++) {
        ph_error_t e = NULL;
        char esc[256];

        ph_escape(esc, sizeof esc, stale.v[i]);
        if (ph_fs_remove_tree_at(svcfd, stale.v[i], &e) < 0) {
            ph_warn("%s: cannot remove `%s/%s/%s`, left by an interrupted collection: %s", service,
                    r->opts.out_dir, service, esc, e->msg);
            ph_error_free(&e);
        } else {
            ph_info("%s: removed `%s/%s/%s`, left by an interrupted collection", service, r->opts.out_dir,
                    service, esc);
        }
    }
    ph_strv_free(&stale);
}

int
ph_run_lock_service(ph_run *r, const char *service, int *svcfd_out, int *lock_out, ph_error_t *err)
{
    ph_cleanup_close int svcfd = -1;
    int fd;

    if (open_service_dir(r, service, &svcfd, err) < 0)
        return -1;
    fd = openat(svcfd, ".lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0)
        ph_rundir_give_at(svcfd, ".lock");
    else if (errno == EEXIST)
        fd = openat(svcfd, ".lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return ph_fail(err, errno, "open `%s/%s/.lock`", r->opts.out_dir, service);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK) {
            close(fd);
            return ph_fail(err, errno, "lock `%s/%s/.lock`", r->opts.out_dir, service);
        }
        ph_stage *st = ph_stage_beginf("host", 0, "wait for the other profharness (%s/.lock)", service);
        int locked, e;

        ph_info("%s: another profharness is stopping or collecting this service; waiting for it", service);
        locked = flock(fd, LOCK_EX);
        e = errno;
        if (ph_run_stage_done(st, locked, NULL) < 0) {
            close(fd);
            return ph_fail(err, e, "lock `%s/%s/.lock`", r->opts.out_dir, service);
        }
    }
    ph_run_remove_stale_temps(r, svcfd, service);
    *lock_out = fd;
    *svcfd_out = svcfd;
    svcfd = -1;
    return 0;
}
