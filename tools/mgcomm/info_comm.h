/*
 * info_comm.h -- the parts of `mgcomm info` that ask a communicator or NCCL itself
 * (info_comm.c): --comm and --nccl-params.
 */
#ifndef MG_CLI_INFO_COMM_H
#define MG_CLI_INFO_COMM_H

#include <stdio.h>

/* Makes a communicator of one rank (MG_BACKEND_AUTO, device 0) and prints its properties and
 * memory statistics. 0, or 1 when the communicator cannot be made. */
int mg_cli_info_comm(FILE *f);
/* Prints NCCL's parameters through its parameter API (NCCL >= 2.30.7), or why not. Always 0:
 * an NCCL without the API is a finding, not a failure. */
int mg_cli_info_nccl_params(FILE *f);

#endif
