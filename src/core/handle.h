/*
 * handle.h -- the registry of live handles. A public handle (communicator, and later requests,
 * streams, worlds) is valid only while it is registered, so a freed or foreign pointer is
 * recognised without reading the memory it points to (which may already be reused).
 */
#ifndef MG_CORE_HANDLE_H
#define MG_CORE_HANDLE_H

#include "mgcomm.h"

typedef enum mg__handle_kind {
  MG__HANDLE_COMM = 1,
  MG__HANDLE_STORE = 2, /* mg_store_t (src/boot/) */
} mg__handle_kind_t;

/* MG_OK, or MG_ERR_OUT_OF_MEMORY. */
mg_status_t mg__handle_register(const void *p, mg__handle_kind_t kind);
void mg__handle_unregister(const void *p);
/* 1 when p is registered with this kind. */
int mg__handle_valid(const void *p, mg__handle_kind_t kind);

#endif
