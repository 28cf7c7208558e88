/*
 * main.c -- `mgcomm <command> [args]`: dispatch to the subcommands of cli.h.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mgcomm.h"

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *help;
} mg_commands[] = {
    {"info", mg_cli_info, "libraries, devices, features and parameters ([--json] [--config])"},
    {"bench", mg_cli_bench, "nccl-tests-compatible benchmark of the collectives, with checks"},
    {"launch", mg_cli_launch, "start N processes of one job on this machine (-n N -- program)"},
    {"trace", mg_cli_trace, "merge flight-recorder dumps and name where the ranks diverge"},
    {"topo", mg_cli_topo, "GPU links, peer access, probes, islands ([--json] [--bandwidth])"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: mgcomm <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof mg_commands / sizeof mg_commands[0]; i++)
    fprintf(f, "  %-8s %s\n", mg_commands[i].name, mg_commands[i].help);
  fprintf(f, "\n`mgcomm <command> --help` describes a command. mgcomm %s\n", mg_version_string());
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("mgcomm %s\n", mg_version_string());
    return 0;
  }
  for (size_t i = 0; i < sizeof mg_commands / sizeof mg_commands[0]; i++)
    if (strcmp(argv[1], mg_commands[i].name) == 0) return mg_commands[i].run(argc - 2, argv + 2);
  fprintf(stderr, "mgcomm: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
