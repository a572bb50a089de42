/* ph_fs.h - directory trees a container filled, handled without trusting
 * them: walked at any depth with three fds at most, never through a link,
 * always relative to a directory fd; and fresh temp directories.
 *
 * What the loop collects is the container's choice: 2,000 levels deep,
 * 200,000 entries, links anywhere.  A recursive walk with a path buffer and
 * an open DIR per level dies on the stack (4 KB a level) or stops silently
 * when the fds run out; a path-based one follows a link planted between two
 * calls.  Here:
 *   - a walk is iterative: the current directory's fd is the only one held
 *     between steps (plus one DIR while it is read); it goes down with
 *     openat(O_NOFOLLOW | O_DIRECTORY) and back up with openat("..")
 *     checked against the device and inode it came from, so a tree moved
 *     while it is walked is an error, never a walk somewhere else;
 *   - directories are visited after their contents (post-order), so a tree
 *     handed to another owner is theirs only once it is complete;
 *   - memory is the names of the subdirectories still to visit.
 */
#ifndef PH_FS_H
#define PH_FS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "ph_error.h"

/* Called for every entry of the tree, NAME relative to the directory fd
 * PARENT (for the top: the DIRFD and NAME given to the walk), ST its lstat.
 * Directories come after everything in them.  Return 0 to go on, -1 (with
 * *err) to stop the walk. */
typedef int (*ph_fs_visit_cb)(int parent, const char *name, const struct stat *st, void *ud, ph_error_t *err);

/* Walk DIRFD/NAME (AT_FDCWD for a path) without following any link: NAME
 * itself may be a link or a file, then only it is visited.  A missing NAME
 * is not an error (nothing is visited).  Returns 0, or -1 and *err naming
 * the entry relative to NAME. */
int ph_fs_walk_at(int dirfd, const char *name, ph_fs_visit_cb cb, void *ud, ph_error_t *err);

/* rm -rf DIRFD/NAME: links removed, never followed.  NAME "." empties the
 * directory DIRFD and leaves it. */
int ph_fs_remove_tree_at(int dirfd, const char *name, ph_error_t *err);

/* Give every entry of DIRFD/NAME (links themselves, never their targets)
 * to UID:GID.  The first failure stops it: -1 and *err. */
int ph_fs_chown_tree_at(int dirfd, const char *name, uid_t uid, gid_t gid, ph_error_t *err);

/* Create a new directory DIRFD/PREFIX<12 random characters>, mode MODE, and
 * put its name in NAME (LEN bytes).  Never reuses an existing entry: EEXIST
 * means another name is tried.  Returns 0, or -1 and *err. */
int ph_fs_mkdtemp_at(int dirfd, const char *prefix, mode_t mode, char *name, size_t len, ph_error_t *err);

/* A DIR that reads the directory DIRFD from its start; DIRFD stays open
 * and its offset is untouched (a dup() would share it: a second reader of
 * the same fd would find the directory empty).  NULL and errno on failure. */
#include <dirent.h>
DIR *ph_fs_opendir_at(int dirfd);

/* Write DIR/NAME whole or not at all: FILL (its -1 with *err set) writes
 * into a fresh DIR/.NAME.XXXXXX (made with O_EXCL: never through an entry
 * already there), mode 0644, which is then renamed over DIR/NAME; a
 * reader sees the old file or the new one, never half.  On any failure
 * the temporary name is removed and DIR/NAME is left as it was.  Returns
 * 0, or -1 and *err naming the file. */
int ph_fs_write_atomic(const char *dir, const char *name, int (*fill)(FILE *, const void *, ph_error_t *),
                       const void *ud, ph_error_t *err);

/* ph_fs_write_atomic of the LEN bytes at DATA. */
int ph_fs_write_bytes(const char *dir, const char *name, const void *data, size_t len, ph_error_t *err);

/* The N bytes at P written whole to FD, a write interrupted by a signal
 * taken up again: 0, or -1 and errno. */
int ph_fs_write_all(int fd, const void *p, size_t n);

/* Random characters [A-Za-z0-9] into BUF (N bytes, not terminated). */
void ph_fs_random_name(char *buf, size_t n);

#endif
