#ifndef TRACKEDMODELS_CLIBPQ_SHIM_H
#define TRACKEDMODELS_CLIBPQ_SHIM_H

// PostgreSQL's client library (Debian's libpq-dev): the worker's connection sends a
// transaction's statements in pipeline mode, without waiting for each answer.
#include <libpq-fe.h>

#endif
