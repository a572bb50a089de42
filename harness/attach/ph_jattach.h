/* ph_jattach.h - HotSpot's dynamic attach, from outside the JVM: the
 * pure parts of ph-jattach (harness/attach/ph-jattach.c), bytes in and
 * structs or bytes out, unit-tested on their own (tests/unit/test_jattach.c).
 *
 * The protocol (HotSpot's attachListener_linux.cpp, as the JDK's own
 * attach client and jcmd speak it; written here from its description):
 *   1. A JVM whose attach listener is not running yet starts it when it
 *      gets SIGQUIT while a file `.attach_pid<PID>` exists in its working
 *      directory or in /tmp, owned by its effective uid or by root.  PID
 *      is the JVM's own pid, in its own PID namespace.  Without that file
 *      SIGQUIT prints a thread dump; a JVM started with -Xrs does not
 *      catch SIGQUIT at all and dies of it.
 *   2. The listener is a UNIX stream socket, /tmp/.java_pid<PID> in the
 *      JVM's mount namespace, mode 0600.  The JVM takes a connection only
 *      from a peer whose uid and gid are its own effective ones, or root
 *      (SO_PEERCRED).  -XX:+DisableAttachMechanism: no listener, ever.
 *   3. The request, one per connection: the protocol version "1", the
 *      command and exactly three arguments, each NUL-terminated.  `jcmd`
 *      takes its whole command line as the first argument.
 *   4. The reply: the result code in decimal and a newline, then the
 *      command's output, until the JVM closes the connection.  0 is
 *      success; anything else is a failure, and the output says why.
 *
 * Nothing here allocates, and nothing here makes a system call.
 */
#ifndef PH_JATTACH_H
#define PH_JATTACH_H

#include <stddef.h>
#include <sys/types.h>

#define PH_JATTACH_PROTOCOL "1"
#define PH_JATTACH_ARGS 3         /* arguments in every request */
#define PH_JATTACH_REQUEST_MAX 4096
#define PH_JATTACH_GROUPS_MAX 64  /* supplementary groups carried over */

/* The request for COMMAND with its N_ARGS arguments (at most
 * PH_JATTACH_ARGS; the missing ones are sent empty) into BUF: its length,
 * or -1 when it does not fit in LEN bytes or N_ARGS is too many. */
ssize_t ph_jattach_request(char *buf, size_t len, const char *command, const char *const *args, size_t n_args);

/* The start of a reply, BUF[0..LEN): 1 with *CODE the result code and
 * *BODY the offset of the output after its newline; 0 when no newline
 * has come yet (and LEN is under 32 bytes); -1 when it is no result code
 * (a sign, digits, a newline; at most 10 digits). */
int ph_jattach_reply_code(const char *buf, size_t len, int *code, size_t *body);

/* What /proc/PID/status says of a process. */
typedef struct ph_jattach_proc {
    char state;             /* R, S, Z... ('\0': not read) */
    uid_t uid;              /* effective */
    gid_t gid;              /* effective */
    gid_t groups[PH_JATTACH_GROUPS_MAX];
    size_t n_groups;
    int catches_quit;       /* SIGQUIT has a handler (SigCgt) */
    long nspid;             /* its pid in its own PID namespace (NSpid's last), else Pid */
} ph_jattach_proc;

/* Parse the text of /proc/PID/status (LEN bytes).  0, or -1 when a field
 * it needs (State, Uid, Gid, SigCgt, Pid) is missing or malformed. */
int ph_jattach_status_parse(const char *text, size_t len, ph_jattach_proc *out);

/* Does /proc/PID/maps text (LEN bytes) map HotSpot's libjvm.so?  1/0. */
int ph_jattach_maps_jvm(const char *text, size_t len);

/* Is -XX:+DisableAttachMechanism in force for a JVM started with the
 * NUL-separated command line CMDLINE (LEN bytes) and the environment
 * ENVIRON (NUL-separated too, ENV_LEN bytes, NULL when unread)?  HotSpot
 * reads its options from JAVA_TOOL_OPTIONS, then the launcher's
 * JDK_JAVA_OPTIONS, then the command line up to the main class or jar,
 * then _JAVA_OPTIONS; the last +/- of the flag wins.  Options in files
 * (@argfiles, -XX:Flags=, -XX:VMOptionsFile=) are not read: for those the
 * missing listener says it.  1/0. */
int ph_jattach_attach_disabled(const char *cmdline, size_t len, const char *environ, size_t env_len);

#endif
