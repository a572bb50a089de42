/* ph_backend_engine_int.h - what the Engine backend's files share. */
#ifndef PH_BACKEND_ENGINE_INT_H
#define PH_BACKEND_ENGINE_INT_H

#include "ph_backend_engine.h"

typedef struct ph_backend_eng {
    ph_backend base; /* first */
    ph_engine *e;
    int borrowed;    /* e is another's (ph_backend_engine_borrow): not freed */
} ph_backend_eng;

/* ph_backend_engine_create.c: on *ERR being the Engine's "port is
 * already allocated": the hint names who holds it.  Returns -1. */
int ph_backend_engine_port_hint(ph_engine *e, ph_error_t *err);

#endif
