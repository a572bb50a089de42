/* ph_sampler_attach.h - the options of the sampler loaded into a running
 * JVM as its agent (HotSpot's dynamic attach: `load <this library> true
 * OPTIONS`, which calls Agent_OnAttach with OPTIONS), parsed here, bytes
 * in and a struct out, with no system call: unit-tested on its own
 * (tests/unit/test_sampler_java.c).
 *
 * OPTIONS is one of
 *   start,dir=/ABS/DIR[,hz=N][,interval=S][,clock=cpu|wall][,title=TEXT]
 *   stop
 * `title=` comes last and takes the rest of the string, commas and all
 * (the harness's titles hold one).  The defaults are LD_PRELOAD's
 * (ph_sampler.h): 150 Hz, 120 s, cpu.  A JVM already sampled (the
 * sampler preloaded at start) keeps its sampler: start is refused there.
 */
#ifndef PH_SAMPLER_ATTACH_H
#define PH_SAMPLER_ATTACH_H

#include <stddef.h>

enum { PHS_ATTACH_START = 1, PHS_ATTACH_STOP = 2 };

typedef struct phs_attach_opts {
    int what;               /* PHS_ATTACH_START or PHS_ATTACH_STOP */
    char dir[1024];         /* absolute, in the JVM's own file system */
    int hz, interval_s, wall;
    char title[512];
} phs_attach_opts;

/* Parse OPTIONS (NULL is empty) into *O: 0, or -1 with the reason in WHY
 * (LEN bytes). */
int phs_attach_parse(const char *options, phs_attach_opts *o, char *why, size_t len);

/* Start sampling as O says (ph_sampler.c), the settings LD_PRELOAD reads
 * from the environment taken from O instead (the JVM's environment is
 * the service's, never read): ph_sampler_start's result. */
int phs_attach_start(const phs_attach_opts *o);

/* Agent_OnAttach's return codes, which the JVM prints as "return code: N"
 * on the attach socket: the tools container's script says what each
 * means. */
enum { PHS_ATTACH_OK = 0, PHS_ATTACH_BAD = 2, PHS_ATTACH_BUSY = 3, PHS_ATTACH_FAILED = 4 };

#endif
