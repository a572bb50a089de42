/* ph_tar_stream.c - a directory as a tar, read in chunks (see ph_tar.h).
 *
 * The Engine's archive upload pulls its body through a read callback,
 * and libarchive's writer pushes through a write callback; neither can be
 * turned into the other without holding the whole archive.  So, as
 * extraction does it the other way round (ph_tar.c), the writer runs on
 * a thread of its own (every signal blocked) into one end of a socketpair
 * and the reader reads the other: memory is the socket's buffer and
 * libarchive's block, whatever the files' sizes.  A reader that stops
 * early closes its end, the writer's next send fails (EPIPE, no SIGPIPE)
 * and the thread ends; its error is read after the join.
 */
#include "ph_tar.h"

#include <archive.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ph_tar_int.h"

struct ph_tar_stream {
    int sock[2]; /* [0] the writer's end, [1] the reader's */
    pthread_t thread;
    int started;
    int ended;   /* the reader saw the end of the stream */
    int failed;  /* ... and the writer had failed by itself (not for a reader gone) */
    char *dir;
    const ph_tar_extra *extra;
    size_t n_extra;
    ph_error_t err; /* the writer's, read after the join */
    uint64_t bytes; /* handed to the reader */
};

static la_ssize_t
sock_write_cb(struct archive *a, void *ud, const void *buf, size_t n)
{
    ph_tar_stream *s = ud;
    const char *p = buf;

    for (size_t left = n; left > 0;) {
        ssize_t w = send(s->sock[0], p, left, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            archive_set_error(a, errno, "the reader stopped reading");
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    return (la_ssize_t)n;
}

static void *
writer_main(void *ud)
{
    ph_tar_stream *s = ud;
    struct archive *a = archive_write_new();

    if (a == NULL)
        ph_fail(&s->err, ENOMEM, "start the archive of `%s`", s->dir ? s->dir : "(extras)");
    else if (ph_tar_context_open(a, s, sock_write_cb, &s->err) == 0)
        ph_tar_context_write(a, s->dir, s->extra, s->n_extra, &s->err);
    archive_write_free(a);
    /* the reader sees the end (after an error too: it then asks why) */
    shutdown(s->sock[0], SHUT_WR);
    return NULL;
}

ph_tar_stream *
ph_tar_stream_new(const char *dir, const ph_tar_extra *extra, size_t n_extra, ph_error_t *err)
{
    ph_tar_stream *s = calloc(1, sizeof *s);
    sigset_t all, old;
    int r;

    if (s == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        return NULL;
    }
    s->sock[0] = s->sock[1] = -1;
    s->extra = extra;
    s->n_extra = n_extra;
    if (dir != NULL && (s->dir = strdup(dir)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto fail;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s->sock) < 0) {
        ph_fail(err, errno, "socketpair");
        goto fail;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&s->thread, NULL, writer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        ph_fail(err, r, "start the archive thread");
        goto fail;
    }
    s->started = 1;
    return s;
fail:
    ph_tar_stream_free(s);
    return NULL;
}

/* Close the reader's end (a writer still sending gets EPIPE) and wait. */
static void
join(ph_tar_stream *s)
{
    if (s->sock[1] >= 0) {
        close(s->sock[1]);
        s->sock[1] = -1;
    }
    if (s->started) {
        pthread_join(s->thread, NULL);
        s->started = 0;
    }
}

ssize_t
ph_tar_stream_read(void *ud, char *buf, size_t len)
{
    ph_tar_stream *s = ud;

    for (;;) {
        ssize_t n = s->sock[1] < 0 ? 0 : read(s->sock[1], buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0) {
            s->bytes += (uint64_t)n;
            return n;
        }
        if (n < 0)
            return -1;
        /* the end: whole only if the writer finished without an error */
        s->ended = 1;
        join(s);
        s->failed = s->err != NULL;
        return s->failed ? -1 : 0;
    }
}

int
ph_tar_stream_finish(ph_tar_stream *s, ph_error_t *err)
{
    join(s);
    if (s->failed) {
        /* the writer's error is the cause; the reader's (the upload's) a
         * consequence */
        if (err != NULL) {
            ph_error_free(err);
            *err = s->err;
            s->err = NULL;
        }
        return -1;
    }
    if (!s->ended)
        return ph_fail(err, 0, "the archive of `%s` was not read to its end", s->dir ? s->dir : "(extras)");
    return 0;
}

uint64_t
ph_tar_stream_bytes(const ph_tar_stream *s)
{
    return s->bytes;
}

void
ph_tar_stream_free(ph_tar_stream *s)
{
    if (s == NULL)
        return;
    join(s);
    if (s->sock[0] >= 0)
        close(s->sock[0]);
    ph_error_free(&s->err);
    free(s->dir);
    free(s);
}
