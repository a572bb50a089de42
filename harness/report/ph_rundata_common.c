/* ph_rundata_common.c - what every reader of a run dir calls: the
 * problems a report shows, the artifacts of one kind, a bounded JSON
 * file.  Its own file so that ph_rundata.c (the loader, on top) and the
 * readers it calls (ph_report_flame.c, ph_report_heap.c) all call down
 * into it, and none calls back up. */
#include "ph_report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_util.h"

void
ph_rundata_problem(ph_rundata *rd, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    if (rd->n_problems == PH_RD_MAX_PROBLEMS)
        return;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) >= 0)
        rd->problems[rd->n_problems++] = s;
    va_end(ap);
}

size_t
ph_rundata_files(const ph_rundata *rd, const char *kind, const ph_artifact **out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < rd->n_arts && n < max; i++)
        if (strcmp(rd->arts[i].kind, kind) == 0)
            out[n++] = &rd->arts[i];
    return n;
}

json_t *
ph_report_load_json(const char *dir, const char *name, size_t max, char *problem, size_t len)
{
    ph_cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ph_cleanup_free char *buf = NULL;
    size_t n = 0;
    ph_error_t err = NULL;
    json_error_t je;
    json_t *j;

    if (problem != NULL && len > 0)
        problem[0] = '\0';
    if (dfd < 0)
        return NULL;
    if (ph_read_file_at(dfd, name, max, &buf, &n, &err) < 0) {
        if (problem != NULL && err->errnum != ENOENT)
            snprintf(problem, len, "%s", err->msg); /* it names the file */
        ph_error_free(&err);
        return NULL;
    }
    j = json_loadb(buf, n, 0, &je);
    if (j == NULL || !json_is_object(j)) {
        if (problem != NULL)
            snprintf(problem, len, "%s cannot be read: %s (line %d)", name, j ? "not a JSON object" : je.text,
                     j ? 0 : je.line);
        json_decref(j);
        return NULL;
    }
    return j;
}
