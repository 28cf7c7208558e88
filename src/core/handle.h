/*
 * handle.h -- the registry of live handles. A public handle (communicator, and later requests,
 * streams, worlds) is valid only while it is registered, so a freed or foreign pointer is
 * recognised without reading the memory it points to (which may already be reused).
 */
#ifndef MG_CORE_HANDLE_H
#define MG_CORE_HANDLE_H

#include <stddef.h>

#include "mgcomm.h"

typedef enum mg__handle_kind {
  MG__HANDLE_COMM = 1,
  MG__HANDLE_STORE = 2, /* mg_store_t (src/boot/) */
  MG__HANDLE_REQUEST = 3, /* mg_request_t (src/core/request.c) */
  MG__HANDLE_STREAM = 4,  /* host streams, mg_stream_t (src/core/stream.c) */
  MG__HANDLE_WORLD = 5,   /* mg_world_t (src/world/) */
  MG__HANDLE_P2P_BUF = 6, /* mg_buf_t (src/p2p/buf.c) */
} mg__handle_kind_t;

/* Registers p with kind: MG_OK, or MG_ERR_OUT_OF_MEMORY. */
mg_status_t mg__handle_register(const void *p, mg__handle_kind_t kind);
/* Unregisters p if it is registered with this kind: 1 when this call removed it, 0 otherwise (of
 * two concurrent calls, one gets 1). */
int mg__handle_take(const void *p, mg__handle_kind_t kind);
/* 1 when p is registered with this kind. */
int mg__handle_valid(const void *p, mg__handle_kind_t kind);
/* When p is registered with this kind, calls fn(p, arg) under the registry's read lock, so that
 * p cannot be unregistered (and freed by its owner) while fn runs, and returns 1; else 0. fn is
 * short, takes no lock that is held while registering, and never registers or unregisters. */
int mg__handle_with(const void *p, mg__handle_kind_t kind, void (*fn)(void *p, void *arg),
                    void *arg);
/* The number of slots of the registry's table, which follows the number of live handles (a
 * test's view of it). */
size_t mg__handle_capacity(void);

#endif
