/* ph_inroot.h - a running service's files, reached from the tools
 * container that joined its PID namespace, without its symlinks leading
 * out of its own root.
 *
 * The tools container reaches the service's files through
 * /proc/PID/root, but a symlink in the service's tree is read by the
 * kernel from there as this container's: `/tmp/.profharness-attach ->
 * /opt/profharness/bin`, planted by the service, would have a root
 * `mkdir`, `cp` or `rm -rf` of that path act on the tools container's own
 * files, which run as root beside SYS_PTRACE and no seccomp.  Every path
 * here is resolved with openat2(RESOLVE_IN_ROOT) under a descriptor of
 * /proc/PID/root: `/` and absolute symlinks mean the service's root, `..`
 * stops there, and /proc's magic links (RESOLVE_NO_MAGICLINKS) are not
 * followed.  What is read back (the sampler's files, written by the
 * service's user) is taken only as regular files opened without
 * following a last symlink, at most a byte budget in all, into a
 * directory of this container's.
 *
 * Each function returns 0, or -1 with WHY (WHY_LEN bytes) saying what
 * went wrong; nothing here allocates on the heap or exits.
 */
#ifndef PH_INROOT_H
#define PH_INROOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Open PATH (absolute or not: either is under ROOT) with FLAGS (and MODE
 * for O_CREAT) as the service sees it: a descriptor, or -1 and errno. */
int ph_inroot_open(int root, const char *path, int flags, mode_t mode);

/* Make every missing directory of DIR (mode 0755), then make sure DIR is
 * ours (this process's euid: root in the tools
 * container) and writable by nobody else (a directory of the service's user
 * there would let it swap what is put in it): refused otherwise. */
int ph_inroot_mkdirs(int root, const char *dir, char *why, size_t why_len);

/* Put the file SRC of this container into DIR (ph_inroot_mkdirs) as
 * NAME-<hash>.so... : BASE with its content's 64-bit FNV-1a hash before
 * its last dot, mode 0644, written beside and renamed; a file already of
 * that name with the same content is left as it is (a JVM may map it:
 * an agent is never unloaded, and the next attach loads the same path).
 * The path, as the service sees it, into INSTALLED (LEN bytes). */
int ph_inroot_install(int root, const char *src, const char *dir, const char *base, char *installed, size_t len,
                      char *why, size_t why_len);

/* A fresh, empty directory DIR (its parent must be ph_inroot_mkdirs'),
 * owned by UID:GID, mode 0700: where the service's user writes.  What a
 * last attach left there is taken away first (ph_inroot_take's removal). */
int ph_inroot_mkout(int root, const char *dir, uid_t uid, gid_t gid, char *why, size_t why_len);

/* The bounds of one take: the files copied (a sampler writes a handful
 * per snapshot) and the entries of DIR looked at (the service's user may
 * fill it: what is past this is left there, unread). */
#define PH_INROOT_TAKE_FILES 256u
#define PH_INROOT_TAKE_ENTRIES 4096u

/* What ph_inroot_take did. */
typedef struct ph_inroot_taken {
    unsigned files;     /* copied whole */
    unsigned skipped;   /* not regular, not a sampler's name, holes, past the bound */
    unsigned truncated; /* cut at the budget */
    unsigned left;      /* 1: DIR held more than PH_INROOT_TAKE_ENTRIES */
    uint64_t bytes;
} ph_inroot_taken;

/* Copy the sampler's files of DIR (ph_inroot_sampler_name; regular files,
 * looked at before they are opened, so a FIFO or a device there is never
 * opened, no last symlink followed) into OUT, a directory of this
 * container (made if missing): at most PH_INROOT_TAKE_FILES of them and
 * MAX bytes in all, what passes the budget cut.  What is left out is
 * counted in one line on stderr (no name of the service's is printed
 * there).  Then each entry and DIR itself are removed from the service's
 * tree.  *TAKEN (may be NULL) counts it. */
int ph_inroot_take(int root, const char *dir, const char *out, uint64_t max, ph_inroot_taken *taken, char *why,
                   size_t why_len);

/* Is NAME plain (a file name the sampler writes: letters, digits, `.`,
 * `_`, `-`, not `.` or `..`, at most 255 bytes)?  1/0. */
int ph_inroot_plain_name(const char *name);

/* Is NAME one the sampler writes its files under: plain, a letter first,
 * ending in .folded, .svg, .pb.gz or .json (harness/sampler: stacks-,
 * profile-, flamegraph-, offcpu-, heap-..., sampler-status-...)?  1/0. */
int ph_inroot_sampler_name(const char *name);

/* Copy the service's file PATH (what it maps: a program, a library) to
 * DEST, a path of this container that must not exist yet, for perf's
 * symbols (images/tools/ph-attach's --copy-mapped): PATH resolved in ROOT,
 * looked at before it is opened (a FIFO or a device is never opened),
 * taken only when it is a regular ELF file, not mostly holes, of at most
 * LEFT bytes.  1: copied, its size into *SIZE; 0: left out, why into WHY
 * (said on its own, no path in it; empty when PATH is not there); -1:
 * failed, WHY. */
int ph_inroot_copy_mapped(int root, const char *path, const char *dest, uint64_t left, uint64_t *size, char *why,
                          size_t why_len);

/* Which sampler library a process maps, read from its /proc/PID/maps
 * (MAPS): a file whose name starts with `libphsampler` and ends in `.so`,
 * at any path.  0: none; 1: INSTALLED only (the copy ph_inroot_install
 * just placed or left, content checked, that an earlier attach of this
 * version loaded: a `load` of its path finds it loaded, by name);
 * -1: another one (an earlier attach's of another version, one the
 * service put there itself, the start mode's LD_PRELOAD, or INSTALLED's
 * name on a file since deleted), its path into OTHER (OTHER_LEN bytes,
 * every byte but letters, digits and `/._-` shown as `?`: the service's
 * text).  A `load` of that path would run its Agent_OnAttach, and one of
 * ours beside it would take the same signals: the caller refuses. */
int ph_inroot_sampler_mapped(FILE *maps, const char *installed, char *other, size_t other_len);

/* `ph-jattach files PID ...` (harness/attach/ph-jattach-files.c): the
 * above on /proc/PID/root, for images/tools/ph-attach-sampler.  The exit
 * status: 0 done, 1 refused or failed (one line on stderr), 2 usage. */
int ph_jattach_files_main(int argc, char **argv);

#endif
