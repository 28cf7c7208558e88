/*
 * store.h -- internals of the rendezvous store shared by its server (store_server.c), its client
 * (store_client.c) and mg_comm_init_env (init_env.c). The public surface is mgcomm.h's
 * "Rendezvous" section.
 */
#ifndef MG_BOOT_STORE_H
#define MG_BOOT_STORE_H

#include "mgcomm.h"

#define MG__STORE_MAX_BYTES (256u << 20) /* keys and values a server holds (mgcomm.h says so) */
#define MG__STORE_MAX_CONNS 8192         /* connections a server keeps; more are closed at once */

typedef struct mg__store_server mg__store_server_t;

/* Starts a server on a thread named "mg-store", listening on exactly host:port, accepting only
 * clients that present token. *bound_port is the port it got (port 0 asks for a free one).
 * MG_ERR_INVALID_ARGUMENT, MG_ERR_SYSTEM, MG_ERR_OUT_OF_MEMORY; nothing is left on error. */
mg_status_t mg__store_server_start(const char *host, int port, const char *token,
                                   mg__store_server_t **out, int *bound_port);

/* Stops the server: closes every connection (their clients see the connection end) and the
 * listening socket, joins the thread and frees everything. NULL is a no-op. */
void mg__store_server_stop(mg__store_server_t *srv);

/* The token a store call uses: token itself, or MGCOMM_JOB_TOKEN when token is NULL. Checks its
 * length; MG_ERR_INVALID_ARGUMENT naming fn when there is none or it is too long. */
mg_status_t mg__store_token(const char *token, const char *fn, const char **out);

#endif
