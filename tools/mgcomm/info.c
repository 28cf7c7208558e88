/*
 * info.c -- `mgcomm info [--json] [--config] [--help]`: what this machine offers mgcomm.
 *
 * Divisions: the snapshot (everything is gathered once, through the public API only, so that
 * the text and the JSON forms say the same thing); the JSON form (strings through json.c); the
 * text form; the command.
 *
 * Exit status: 0 whenever the report could be printed, also with no GPU, no driver and no
 * NCCL (that is a finding, not a failure); 2 for a bad option; 1 if writing stdout failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "info_comm.h"
#include "mgcomm.h"

/* ---- The snapshot. */

#define MG_INFO_MSG 2048

typedef struct {
  const char *id;    /* "cuda", as in the JSON */
  const char *label; /* "CUDA driver" */
  mg_library_info_t info;
  const char **paths, **outcomes; /* info.attempts entries each */
} lib_snap_t;

typedef struct {
  mg_status_t status;
  mg_device_info_t info;
  char error[MG_INFO_MSG];
} dev_snap_t;

typedef struct {
  lib_snap_t libs[MG_LIB_COUNT];
  mg_status_t dev_status; /* of mg_device_count */
  char dev_error[MG_INFO_MSG];
  int ndev;
  dev_snap_t *devs; /* ndev */
  int *peer;        /* ndev * ndev: 1, 0, or -1 (query failed) */
  mg_feature_info_t features[MG_FEATURE_COUNT];
  mg_status_t backend_status;
  mg_backend_t backend;
  char backend_reason[MG_INFO_MSG];
} snap_t;

static const struct {
  mg_library_t lib;
  const char *id, *label;
} lib_names[MG_LIB_COUNT] = {
    {MG_LIB_CUDA, "cuda", "CUDA driver"},
    {MG_LIB_NCCL, "nccl", "NCCL"},
    {MG_LIB_NVSHMEM, "nvshmem", "NVSHMEM"},
    {MG_LIB_NVML, "nvml", "NVML"},
};

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n == 0 ? 1 : n, size);
  if (p == NULL) {
    fprintf(stderr, "mgcomm info: out of memory\n");
    exit(1);
  }
  return p;
}

static void snap_take(snap_t *s) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < MG_LIB_COUNT; i++) {
    lib_snap_t *l = &s->libs[i];
    l->id = lib_names[i].id;
    l->label = lib_names[i].label;
    if (mg_library_info(lib_names[i].lib, &l->info) != MG_OK) continue; /* cannot fail */
    l->paths = xcalloc((size_t)l->info.attempts, sizeof *l->paths);
    l->outcomes = xcalloc((size_t)l->info.attempts, sizeof *l->outcomes);
    for (int a = 0; a < l->info.attempts; a++)
      if (mg_library_attempt(lib_names[i].lib, a, &l->paths[a], &l->outcomes[a]) != MG_OK)
        l->paths[a] = l->outcomes[a] = "?"; /* index is in range: not reached */
  }
  s->dev_status = mg_device_count(&s->ndev);
  if (s->dev_status != MG_OK) {
    s->ndev = 0;
    mg_last_error_copy(s->dev_error, sizeof s->dev_error);
  }
  s->devs = xcalloc((size_t)s->ndev, sizeof *s->devs);
  s->peer = xcalloc((size_t)s->ndev * (size_t)s->ndev, sizeof *s->peer);
  for (int d = 0; d < s->ndev; d++) {
    s->devs[d].status = mg_device_info(d, &s->devs[d].info);
    if (s->devs[d].status != MG_OK)
      mg_last_error_copy(s->devs[d].error, sizeof s->devs[d].error);
    for (int e = 0; e < s->ndev; e++) {
      int can = 0;
      s->peer[d * s->ndev + e] = mg_device_can_access_peer(d, e, &can) == MG_OK ? can : -1;
    }
  }
  for (int f = 0; f < MG_FEATURE_COUNT; f++)
    if (mg_feature_info((mg_feature_t)f, &s->features[f]) != MG_OK)
      memset(&s->features[f], 0, sizeof s->features[f]); /* every value is a feature */
  s->backend_status = mg_backend_resolve(MG_BACKEND_AUTO, &s->backend, s->backend_reason,
                                         sizeof s->backend_reason);
  if (s->backend_status != MG_OK)
    mg_last_error_copy(s->backend_reason, sizeof s->backend_reason);
}

static void snap_free(snap_t *s) {
  for (int i = 0; i < MG_LIB_COUNT; i++) {
    free(s->libs[i].paths);
    free(s->libs[i].outcomes);
  }
  free(s->devs);
  free(s->peer);
}

/* ---- JSON. */

static const char *jbool(int b) { return b ? "true" : "false"; }

/* `, "key": "value"` (no comma when first). */
static void json_kv(FILE *f, int first, const char *key, const char *value) {
  fprintf(f, "%s\"%s\": ", first ? "" : ", ", key);
  mg_cli_json_str(f, value);
}

static void json_params(FILE *f) {
  fputs("  \"parameters\": [", f);
  for (int i = 0; i < mg_param_count(); i++) {
    mg_param_info_t p;
    if (mg_param_get(i, &p) != MG_OK) continue; /* i is in range: not reached */
    fputs(i ? ",\n    {" : "\n    {", f);
    json_kv(f, 1, "name", p.name);
    json_kv(f, 0, "type", p.type);
    json_kv(f, 0, "value", p.value);
    json_kv(f, 0, "default", p.default_value);
    json_kv(f, 0, "source", p.source);
    json_kv(f, 0, "allowed", p.allowed);
    json_kv(f, 0, "help", p.help);
    fputs("}", f);
  }
  fputs("\n  ]", f);
}

static void json_print(FILE *f, const snap_t *s, int config_only) {
  fputs("{\n  \"mgcomm\": {\"version\": ", f);
  mg_cli_json_str(f, mg_version_string());
  fprintf(f, ", \"version_code\": %d, \"header_version\": ", mg_version());
  mg_cli_json_str(f, MGCOMM_VERSION_STRING);
  fputs("},\n", f);
  if (config_only) {
    json_params(f);
    fputs("\n}\n", f);
    return;
  }
  fputs("  \"libraries\": [", f);
  for (int i = 0; i < MG_LIB_COUNT; i++) {
    const lib_snap_t *l = &s->libs[i];
    fputs(i ? ",\n    {" : "\n    {", f);
    json_kv(f, 1, "id", l->id);
    json_kv(f, 0, "label", l->label);
    json_kv(f, 0, "name", l->info.name);
    fprintf(f, ", \"loaded\": %s, \"path\": ", jbool(l->info.loaded));
    mg_cli_json_str(f, l->info.path);
    fprintf(f, ", \"version\": %d, \"version_string\": ", l->info.version);
    mg_cli_json_str(f, l->info.version_string);
    json_kv(f, 0, "error", l->info.error);
    json_kv(f, 0, "plugin_dir", l->info.plugin_dir);
    fputs(",\n     \"attempts\": [", f);
    for (int a = 0; a < l->info.attempts; a++) {
      fputs(a ? ",\n       {\"path\": " : "\n       {\"path\": ", f);
      mg_cli_json_str(f, l->paths[a]);
      fputs(", \"outcome\": ", f);
      mg_cli_json_str(f, l->outcomes[a]);
      fputs("}", f);
    }
    fputs("]}", f);
  }
  fputs("\n  ],\n", f);

  const mg_library_info_t *cu = &s->libs[MG_LIB_CUDA].info;
  fprintf(f, "  \"cuda\": {\"driver_loaded\": %s, \"driver_version\": %d, \"driver_version_string\": ",
          jbool(cu->loaded), cu->version);
  mg_cli_json_str(f, cu->version_string);
  fputs(", \"device_status\": ", f);
  mg_cli_json_str(f, mg_status_name(s->dev_status));
  fputs(", \"device_error\": ", f);
  mg_cli_json_str(f, s->dev_status == MG_OK ? NULL : s->dev_error);
  fprintf(f, ", \"device_count\": %d},\n", s->ndev);

  fputs("  \"devices\": [", f);
  for (int d = 0; d < s->ndev; d++) {
    const dev_snap_t *dv = &s->devs[d];
    fputs(d ? ",\n    {" : "\n    {", f);
    fprintf(f, "\"ordinal\": %d, \"status\": ", d);
    mg_cli_json_str(f, mg_status_name(dv->status));
    if (dv->status != MG_OK) {
      fputs(", \"error\": ", f);
      mg_cli_json_str(f, dv->error);
    } else {
      fputs(", \"name\": ", f);
      mg_cli_json_str(f, dv->info.name);
      fprintf(f, ", \"total_memory\": %zu, \"cc_major\": %d, \"cc_minor\": %d, \"pci_bus_id\": ",
              dv->info.total_memory, dv->info.cc_major, dv->info.cc_minor);
      mg_cli_json_str(f, dv->info.pci_bus_id);
      fprintf(f, ", \"multicast_supported\": %s", jbool(dv->info.multicast_supported));
    }
    fputs("}", f);
  }
  fputs(s->ndev ? "\n  ],\n" : "],\n", f);

  /* peer_access[i][j]: device i can access device j's memory; null when the query failed. */
  fputs("  \"peer_access\": [", f);
  for (int d = 0; d < s->ndev; d++) {
    fputs(d ? ", [" : "[", f);
    for (int e = 0; e < s->ndev; e++) {
      int v = s->peer[d * s->ndev + e];
      fprintf(f, "%s%s", e ? ", " : "", v < 0 ? "null" : jbool(v));
    }
    fputs("]", f);
  }
  fputs("],\n", f);

  fputs("  \"features\": [", f);
  for (int i = 0; i < MG_FEATURE_COUNT; i++) {
    const mg_feature_info_t *fi = &s->features[i];
    fputs(i ? ",\n    {" : "\n    {", f);
    json_kv(f, 1, "name", fi->name);
    json_kv(f, 0, "library", fi->library);
    fprintf(f, ", \"min_version\": %d, \"min_version_string\": ", fi->min_version);
    mg_cli_json_str(f, fi->min_version_string);
    fprintf(f, ", \"available\": %s}", jbool(fi->available));
  }
  fputs("\n  ],\n", f);

  fputs("  \"backend\": {\"requested\": \"auto\", \"status\": ", f);
  mg_cli_json_str(f, mg_status_name(s->backend_status));
  fputs(", \"resolved\": ", f);
  mg_cli_json_str(f, s->backend_status == MG_OK ? mg_backend_name(s->backend) : NULL);
  fputs(", \"reason\": ", f);
  mg_cli_json_str(f, s->backend_reason);
  fputs("},\n", f);
  json_params(f);
  fputs("\n}\n", f);
}

/* ---- Text. */

/* dlerror() repeats the path ("path: text"); the list shows the path already. */
static const char *short_outcome(const char *path, const char *outcome) {
  size_t n = strlen(path);
  if (strncmp(outcome, path, n) == 0 && outcome[n] == ':' && outcome[n + 1] == ' ')
    return outcome + n + 2;
  return outcome;
}

static void text_params(FILE *f) {
  fprintf(f, "Parameters (environment variables; `source` says where the value came from)\n");
  for (int i = 0; i < mg_param_count(); i++) {
    mg_param_info_t p;
    if (mg_param_get(i, &p) != MG_OK) continue; /* i is in range: not reached */
    fprintf(f, "  %s=%s\n", p.name, p.value);
    fprintf(f, "      %s; %s, default '%s'%s%s; source: %s\n", p.help, p.type, p.default_value,
            p.allowed[0] ? ", allowed " : "", p.allowed, p.source);
  }
}

static void text_print(FILE *f, const snap_t *s) {
  fprintf(f, "mgcomm %s (header %s)\n\n", mg_version_string(), MGCOMM_VERSION_STRING);

  fprintf(f, "Libraries (loaded at run time; every candidate tried, in order)\n");
  for (int i = 0; i < MG_LIB_COUNT; i++) {
    const lib_snap_t *l = &s->libs[i];
    if (l->info.loaded)
      fprintf(f, "  %s (%s): %s from %s\n", l->label, l->info.name,
              l->info.version_string[0] ? l->info.version_string : "version unknown",
              l->info.path);
    else
      fprintf(f, "  %s (%s): not loaded\n", l->label, l->info.name);
    if (l->info.plugin_dir != NULL) fprintf(f, "    bootstrap plugins in %s\n", l->info.plugin_dir);
    for (int a = 0; a < l->info.attempts; a++)
      fprintf(f, "    %2d. %s\n        -> %s\n", a + 1, l->paths[a],
              short_outcome(l->paths[a], l->outcomes[a]));
  }

  if (s->libs[MG_LIB_NVSHMEM].info.loaded) mg_cli_info_shmem(f);

  const mg_library_info_t *cu = &s->libs[MG_LIB_CUDA].info;
  fprintf(f, "\nCUDA driver: %s\n", cu->loaded ? cu->version_string : "not available");
  if (s->dev_status != MG_OK && !cu->loaded) {
    fprintf(f, "GPUs: none usable (%s: no CUDA driver, see above)\n",
            mg_status_name(s->dev_status));
  } else if (s->dev_status != MG_OK) {
    fprintf(f, "GPUs: none usable (%s: %s)\n", mg_status_name(s->dev_status), s->dev_error);
  } else {
    fprintf(f, "GPUs: %d\n", s->ndev);
  }
  for (int d = 0; d < s->ndev; d++) {
    const dev_snap_t *dv = &s->devs[d];
    if (dv->status != MG_OK) {
      fprintf(f, "  [%d] error: %s\n", d, dv->error);
      continue;
    }
    fprintf(f, "  [%d] %s, %.1f GiB, compute capability %d.%d, PCI %s, multicast %s\n", d,
            dv->info.name, (double)dv->info.total_memory / (1024.0 * 1024.0 * 1024.0),
            dv->info.cc_major, dv->info.cc_minor, dv->info.pci_bus_id,
            dv->info.multicast_supported ? "supported (read-only attribute)" : "not supported");
  }
  if (s->ndev > 1) {
    fprintf(f, "Peer access (row can access column's memory):\n      ");
    for (int e = 0; e < s->ndev; e++) fprintf(f, "%4d", e);
    fputc('\n', f);
    for (int d = 0; d < s->ndev; d++) {
      fprintf(f, "  %4d", d);
      for (int e = 0; e < s->ndev; e++) {
        int v = s->peer[d * s->ndev + e];
        fprintf(f, "%4s", d == e ? "-" : v < 0 ? "?" : v ? "yes" : "no");
      }
      fputc('\n', f);
    }
  }

  fprintf(f, "\nFeatures (available = library loaded, version high enough, symbols present)\n");
  for (int i = 0; i < MG_FEATURE_COUNT; i++) {
    const mg_feature_info_t *fi = &s->features[i];
    fprintf(f, "  %-24s %-4s >= %-7s %s\n", fi->name, fi->library, fi->min_version_string,
            fi->available ? "yes" : "no");
  }

  fprintf(f, "\nBackend for MG_BACKEND_AUTO: ");
  if (s->backend_status == MG_OK)
    fprintf(f, "%s (%s)\n", mg_backend_name(s->backend), s->backend_reason);
  else
    fprintf(f, "none: %s: %s\n", mg_status_name(s->backend_status), s->backend_reason);
}

/* ---- The command. */

static void info_usage(FILE *f) {
  fprintf(f,
          "usage: mgcomm info [--json] [--config] [--comm] [--nccl-params]\n"
          "\n"
          "Shows what mgcomm finds here: each run-time library (CUDA driver, NCCL, NVSHMEM,\n"
          "NVML) with its path and version, or why it is missing and every candidate tried;\n"
          "the CUDA driver version; every GPU (name, memory, compute capability, PCI bus id,\n"
          "multicast support) and peer access between them; the feature table; and the\n"
          "backend that MG_BACKEND_AUTO resolves to, and why.\n"
          "\n"
          "  --config   print the MGCOMM_* parameters instead: name, value, source, help\n"
          "  --json     print the same as one JSON document (with --config: the parameters;\n"
          "             without: everything, parameters included)\n"
          "  --comm     also make a communicator of one rank and print its properties and\n"
          "             memory (NCCL >= 2.29 on the NCCL backend; text only)\n"
          "  --nccl-params  also print NCCL's own parameters (NCCL >= 2.30.7; text only)\n"
          "  --help     this text\n"
          "\n"
          "Exit status 0 also when no GPU, driver or library is found; 2 for a bad option.\n");
}

int mg_cli_info(int argc, char **argv) {
  int json = 0, config = 0, comm = 0, nccl_params = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--comm") == 0) {
      comm = 1;
    } else if (strcmp(argv[i], "--nccl-params") == 0) {
      nccl_params = 1;
    } else if (strcmp(argv[i], "--config") == 0) {
      config = 1;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      info_usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "mgcomm info: unknown option '%s' (mgcomm info --help lists them)\n",
              argv[i]);
      return 2;
    }
  }
  if ((comm || nccl_params) && (json || config)) {
    fprintf(stderr, "mgcomm info: --comm and --nccl-params print text, without --json and "
            "--config\n");
    return 2;
  }
  int rc = 0;
  if (config && !json) {
    text_params(stdout);
  } else {
    snap_t s;
    if (config) {
      memset(&s, 0, sizeof s);
      json_print(stdout, &s, 1);
    } else {
      snap_take(&s);
      if (json)
        json_print(stdout, &s, 0);
      else
        text_print(stdout, &s);
      snap_free(&s);
    }
  }
  if (comm) rc = mg_cli_info_comm(stdout);
  if (nccl_params) mg_cli_info_nccl_params(stdout);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "mgcomm info: writing the report failed\n");
    return 1;
  }
  return rc;
}
