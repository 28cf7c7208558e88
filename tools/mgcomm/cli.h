/*
 * cli.h -- the subcommands of the mgcomm command line. Each is a function taking the arguments
 * after its name and returning the process exit code: 0 ok, 1 runtime failure, 2 usage error.
 * The tool uses the public API (mgcomm.h) only.
 */
#ifndef MG_CLI_H
#define MG_CLI_H

#include <stdio.h>

int mg_cli_info(int argc, char **argv);
void mg_cli_info_shmem(FILE *f); /* info_shmem.c: NVSHMEM's part of `mgcomm info` */
int mg_cli_bench(int argc, char **argv);
int mg_cli_bench_shmem(int argc, char **argv); /* bench_shmem.c: `mgcomm bench shmem` */
int mg_cli_launch(int argc, char **argv);
int mg_cli_trace(int argc, char **argv);
int mg_cli_topo(int argc, char **argv);
/* json.c: s as a JSON string (NULL as null), control bytes escaped, invalid UTF-8 as U+FFFD. */
void mg_cli_json_str(FILE *f, const char *s);

#endif
