/* ph_sampler_glibc.h - the sampler loads into services on older glibcs
 * than the one it is built on: it asks for no version after GLIBC_2.28
 * (RHEL 8's), and runs on Debian bullseye's 2.31 (tests/66, python39).
 *
 * Why: the sampler is built here (bookworm, glibc 2.36) and preloaded
 * into the service's own image.  glibc 2.32 to 2.34 moved libpthread's,
 * libdl's and librt's functions into libc under new symbol versions, and
 * 2.33 made stat/fstat/lstat functions (before, inline calls of __xstat):
 * a library built on 2.36 asks for GLIBC_2.32, 2.33 and 2.34, and the
 * loader of an older glibc refuses it, and with it the service ("version
 * `GLIBC_2.33' not found (required by libphsampler.so)", measured on
 * bullseye: the service exits 1).
 *
 * How: every object of the sampler is compiled with this header first
 * (the Makefile's -include).  The moved functions are bound to the
 * versions they had before they moved, which new glibc still exports for
 * old programs (x86-64: GLIBC_2.2.5, timers GLIBC_2.3.3; aarch64: its
 * base GLIBC_2.17); an old glibc finds them in libpthread, libdl and
 * librt, which the library therefore names as needed (the Makefile's
 * SAMPLER_LIBS; on 2.34+ they are empty).  stat, fstat and lstat are the
 * system calls themselves (the kernel's struct stat is glibc's on x86-64
 * and aarch64).  The versions the library asks for are checked by
 * test_sampler_py (test_glibc_floor): none after GLIBC_2.28.
 *
 * A function of one of those libraries the sampler starts to use needs a
 * line here; the check names it.
 */
#ifndef PH_SAMPLER_GLIBC_H
#define PH_SAMPLER_GLIBC_H

#if defined(__GLIBC__) || defined(__linux__)
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define PHS_GLIBC_OLD "GLIBC_2.2.5"
#define PHS_GLIBC_OLD_RT "GLIBC_2.3.3"
#elif defined(__aarch64__)
#define PHS_GLIBC_OLD "GLIBC_2.17"
#define PHS_GLIBC_OLD_RT "GLIBC_2.17"
#endif

#ifdef PHS_GLIBC_OLD
#define PHS_GLIBC_BIND(fn, ver) __asm__(".symver " #fn "," #fn "@" ver)
PHS_GLIBC_BIND(dlopen, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(dlsym, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(dlclose, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(dladdr, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(dlerror, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(pthread_sigmask, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(pthread_getattr_np, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(pthread_detach, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(pthread_attr_getstack, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(pthread_key_create, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(pthread_setspecific, PHS_GLIBC_OLD);
PHS_GLIBC_BIND(timer_create, PHS_GLIBC_OLD_RT);
PHS_GLIBC_BIND(timer_settime, PHS_GLIBC_OLD_RT);
PHS_GLIBC_BIND(timer_delete, PHS_GLIBC_OLD_RT);
PHS_GLIBC_BIND(log, PHS_GLIBC_OLD); /* libm: 2.29 has one without the error wrapper */

/* The kernel's: newfstatat and fstat, on both architectures. */
static inline int
phs_glibc_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    return (int)syscall(SYS_newfstatat, dirfd, path, st, flags);
}
static inline int
phs_glibc_fstat(int fd, struct stat *st)
{
    return (int)syscall(SYS_fstat, fd, st);
}
#define stat(path, st) phs_glibc_fstatat(AT_FDCWD, (path), (st), 0)
#define lstat(path, st) phs_glibc_fstatat(AT_FDCWD, (path), (st), AT_SYMLINK_NOFOLLOW)
#define fstat(fd, st) phs_glibc_fstat((fd), (st))
#endif
#endif

#endif
