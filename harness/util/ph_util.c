/* ph_util.c - cleanup helpers (see ph_util.h). */
#include "ph_util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
ph_freep(void *p)
{
    free(*(void **)p);
}

void
ph_closep(int *fd)
{
    if (*fd >= 0)
        close(*fd);
}

void
ph_fclosep(FILE **f)
{
    if (*f != NULL)
        fclose(*f);
}

char *
ph_strdup0(const char *s)
{
    return s == NULL ? NULL : strdup(s);
}
