/* ph_sampler_agent.c - the JVMTI agent's entry points, above the sampler
 * they start and stop: Agent_OnLoad (HotSpot's -agentpath, the library
 * preloaded already) and Agent_OnAttach (`load` through HotSpot's dynamic
 * attach, from `profharness attach`).  The Java frame reader they start
 * is ph_sampler_java.c's.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ph_sampler.h"
#include "ph_sampler_attach.h"
#include "ph_sampler_int.h"
#include "ph_sampler_jvmti.h"

/* The agent's entry points, exported (exports.map). */
int Agent_OnLoad(phj_vm vm, char *options, void *reserved);
int Agent_OnAttach(phj_vm vm, char *options, void *reserved);

/* The agent's start: the sampler's work on the JVM's thread. */
static int
agent_start_own(phj_vm vm, int live)
{
    int r;

    phs_own_begin();
    r = phs_java_agent_start(vm, live);
    phs_own_end();
    return r;
}

__attribute__((visibility("default"))) int
Agent_OnLoad(phj_vm vm, char *options, void *reserved)
{
    return agent_start_own(vm, 0);
}

/* Loaded into a running VM by HotSpot's dynamic attach (`load`, from the
 * tools container of `profharness attach`): OPTIONS start the sampler
 * (it was not preloaded, so nothing samples yet) and the Java frame
 * reader, or stop the sampler, the JVM running on (a JVMTI agent is
 * never unloaded: the next attach's `load` finds it here and starts it
 * again).  Empty OPTIONS: the Java frame reader alone, in a JVM that is
 * sampled already.  The result is the JVM's "return code: N"
 * (ph_sampler_attach.h); what went wrong is said on the JVM's stderr and
 * in the sampler's status. */
__attribute__((visibility("default"))) int
Agent_OnAttach(phj_vm vm, char *options, void *reserved)
{
    phs_attach_opts o;
    char why[200], line[300];
    int r = PHS_ATTACH_OK;

    if (options == NULL || options[0] == '\0')
        return agent_start_own(vm, 1);
    phs_own_begin();
    if (phs_attach_parse(options, &o, why, sizeof why) < 0) {
        snprintf(line, sizeof line, "ph-sampler: attach: %s\n", why);
        r = PHS_ATTACH_BAD;
    } else if (o.what == PHS_ATTACH_STOP) {
        if (phs_java_live())
            ph_sampler_stop(); /* the final snapshot written; the timers off */
    } else if (atomic_load(&phs.on)) {
        snprintf(line, sizeof line, "ph-sampler: attach: this JVM is sampled already\n");
        r = PHS_ATTACH_BUSY;
    } else if (phs_attach_start(&o) < 0) {
        line[0] = '\0'; /* said by the sampler, in its status too */
        r = PHS_ATTACH_FAILED;
    } else {
        phs_java_set_live();
        phs_java_agent_start(vm, 1);
    }
    if (r != PHS_ATTACH_OK && line[0] != '\0') {
        ssize_t w = write(2, line, strlen(line));
        (void)w;
    }
    phs_own_end();
    return r;
}
