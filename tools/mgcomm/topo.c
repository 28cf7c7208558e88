/*
 * topo.c -- `mgcomm topo [--json] [--bandwidth] [--bytes N]`: the GPUs of this machine as peers:
 * the link matrix as `nvidia-smi topo -m` prints it, peer access per ordered pair, the probe's
 * verdict per pair, the islands and, with --bandwidth, the GB/s of a timed copy per pair. The
 * JSON form's schema is fixed and documented in docs/p2p.md.
 *
 * It enables peer access and runs the probe (mg_p2p_enable_all, mg_p2p_probe): what it prints is
 * what mgcomm's copies will do in this process.
 *
 * Divisions: the snapshot; cells; the text form; the JSON form; the command.
 *
 * Exit status: 0 whenever the report could be printed, also with no GPU or no driver (one line
 * says why) and with pairs that failed (that is a finding); 1 when a call failed; 2 for a bad
 * option.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mgcomm.h"

/* ---- the snapshot ------------------------------------------------------------------------- */

typedef struct {
  int n;
  mg_device_info_t *dev;    /* [n] */
  mg_p2p_pair_info_t *pair; /* [n * n] */
  int *island, nislands;
  int nvml;                 /* links come from NVML */
  size_t bytes;             /* the probe's size */
  int timed;
} topo_t;

static const mg_p2p_pair_info_t *at(const topo_t *t, int a, int b) {
  return &t->pair[(size_t)a * (size_t)t->n + (size_t)b];
}

/* Everything, through the public API. 0, or 1 with the error printed. */
static int topo_read(topo_t *t) {
  mg_library_info_t li;
  t->nvml = mg_library_info(MG_LIB_NVML, &li) == MG_OK && li.loaded;
  t->dev = calloc((size_t)t->n, sizeof *t->dev);
  t->pair = calloc((size_t)t->n * (size_t)t->n, sizeof *t->pair);
  t->island = calloc((size_t)t->n, sizeof *t->island);
  if (t->dev == NULL || t->pair == NULL || t->island == NULL) {
    fprintf(stderr, "mgcomm topo: out of memory\n");
    return 1;
  }
  const char *step = "mg_p2p_enable_all";
  mg_status_t st = mg_p2p_enable_all(NULL);
  if (st == MG_OK) {
    step = "mg_p2p_probe";
    st = mg_p2p_probe(t->bytes, t->timed, NULL);
  }
  for (int d = 0; d < t->n && st == MG_OK; d++) {
    step = "mg_device_info";
    st = mg_device_info(d, &t->dev[d]);
    for (int e = 0; e < t->n && st == MG_OK; e++) {
      step = "mg_p2p_pair_info";
      st = mg_p2p_pair_info(d, e, &t->pair[(size_t)d * (size_t)t->n + (size_t)e]);
    }
  }
  if (st == MG_OK) {
    step = "mg_p2p_islands";
    st = mg_p2p_islands(t->island, t->n, &t->nislands);
  }
  if (st != MG_OK) {
    fprintf(stderr, "mgcomm topo: %s: %s: %s\n", step, mg_status_name(st), mg_last_error());
    return 1;
  }
  return 0;
}

/* ---- cells ------------------------------------------------------------------------------- */

static const char *const link_names[] = {"?", "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};
static const char *const link_types[] = {"unknown", "self", "nvlink", "pix", "pxb",
                                         "phb", "node", "sys"};
static const char *const path_names[] = {"local", "peer", "staged"};
static const char *const probe_names[] = {"not_run", "ok", "failed"};

static void link_cell(const mg_p2p_pair_info_t *p, char *buf, size_t len) {
  if (p->link == MG_P2P_LINK_NVLINK)
    snprintf(buf, len, "NV%d", p->nvlinks);
  else
    snprintf(buf, len, "%s", link_names[p->link]);
}

/* OK enabled; off possible but not enabled; FAIL enabling failed; NS not supported. */
static const char *access_cell(const mg_p2p_pair_info_t *p) {
  if (p->from == p->to) return "X";
  if (p->enabled) return "OK";
  if (!p->can_access) return "NS";
  return p->enable_status != MG_OK ? "FAIL" : "off";
}

static const char *probe_cell(const mg_p2p_pair_info_t *p) {
  return p->probe == MG_P2P_PROBE_OK ? "OK" : p->probe == MG_P2P_PROBE_FAILED ? "FAIL" : "-";
}

/* ---- the text form ------------------------------------------------------------------------ */

typedef void (*cell_fn)(const mg_p2p_pair_info_t *p, char *buf, size_t len);

static void access_fn(const mg_p2p_pair_info_t *p, char *buf, size_t len) {
  snprintf(buf, len, "%s", access_cell(p));
}
static void probe_fn(const mg_p2p_pair_info_t *p, char *buf, size_t len) {
  snprintf(buf, len, "%s", probe_cell(p));
}
static void gbps_fn(const mg_p2p_pair_info_t *p, char *buf, size_t len) {
  if (p->gbps > 0)
    snprintf(buf, len, "%.1f", p->gbps);
  else
    snprintf(buf, len, "-");
}

static void matrix(FILE *f, const topo_t *t, const char *title, cell_fn cell) {
  fprintf(f, "%s\n%-8s", title, "");
  for (int b = 0; b < t->n; b++) fprintf(f, b + 1 < t->n ? "GPU%-5d" : "GPU%d", b);
  fputc('\n', f);
  for (int a = 0; a < t->n; a++) {
    fprintf(f, "GPU%-5d", a);
    for (int b = 0; b < t->n; b++) {
      char c[32];
      cell(at(t, a, b), c, sizeof c);
      fprintf(f, b + 1 < t->n ? "%-8s" : "%s", c);
    }
    fputc('\n', f);
  }
  fputc('\n', f);
}

static void text_print(FILE *f, const topo_t *t) {
  for (int d = 0; d < t->n; d++)
    fprintf(f, "GPU%d  %s  %s\n", d, t->dev[d].name, t->dev[d].pci_bus_id);
  fputc('\n', f);
  matrix(f, t, t->nvml ? "Links (NVML)" : "Links (NVML not loaded: unknown, see peer access)",
         link_cell);
  matrix(f, t, "Peer access (row maps column's memory)", access_fn);
  char title[128];
  snprintf(title, sizeof title, "Probe (%zu bytes copied from row to column, read back)", t->bytes);
  matrix(f, t, title, probe_fn);
  if (t->timed) matrix(f, t, "Bandwidth, GB/s (timed copy from row to column)", gbps_fn);
  fprintf(f, "Legend:\n"
          "  X    = self                       NV#  = # bonded NVLinks (direct or via NVSwitch)\n"
          "  PIX  = at most one PCIe bridge     PXB  = several PCIe bridges\n"
          "  PHB  = a PCIe host bridge          NODE = host bridges of one NUMA node\n"
          "  SYS  = across NUMA nodes           ?    = unknown (NVML not loaded)\n"
          "  OK / off / FAIL / NS = peer access enabled / possible, not enabled / enabling failed"
          " / not supported\n"
          "  probe OK / FAIL / - = bytes arrived / did not / not run (no peer access)\n\n");
  fprintf(f, "Islands: %d\n", t->nislands);
  for (int i = 0; i < t->nislands; i++) {
    fprintf(f, "  island %d:", i);
    for (int d = 0; d < t->n; d++)
      if (t->island[d] == i) fprintf(f, " GPU%d", d);
    fputc('\n', f);
  }
  int header = 0;
  for (int a = 0; a < t->n; a++)
    for (int b = 0; b < t->n; b++) {
      const mg_p2p_pair_info_t *p = at(t, a, b);
      if (p->reason[0] == '\0') continue;
      if (!header++) fprintf(f, "\nFailures (these pairs copy through the staged path):\n");
      fprintf(f, "  GPU%d -> GPU%d: %s\n", a, b, p->reason);
    }
}

/* ---- the JSON form ------------------------------------------------------------------------ */

static const char *jb(int b) { return b ? "true" : "false"; }

/* The header every form has; reason non-NULL when there is no GPU to describe. */
static void json_head(FILE *f, int n, const char *reason) {
  fprintf(f, "{\"format\": \"mgcomm-topo\", \"version\": 1, \"mgcomm\": ");
  mg_cli_json_str(f, mg_version_string());
  fprintf(f, ", \"device_count\": %d, \"reason\": ", n);
  mg_cli_json_str(f, reason);
}

static void json_print(FILE *f, const topo_t *t) {
  json_head(f, t->n, NULL);
  fprintf(f, ", \"links_from\": \"%s\", \"probe_bytes\": %zu, \"timed\": %s,\n \"devices\": [",
          t->nvml ? "nvml" : "driver", t->bytes, jb(t->timed));
  for (int d = 0; d < t->n; d++) {
    fprintf(f, "%s\n  {\"ordinal\": %d, \"name\": ", d ? "," : "", d);
    mg_cli_json_str(f, t->dev[d].name);
    fprintf(f, ", \"pci_bus_id\": ");
    mg_cli_json_str(f, t->dev[d].pci_bus_id);
    fprintf(f, ", \"island\": %d}", t->island[d]);
  }
  fprintf(f, "],\n \"pairs\": [");
  for (int a = 0; a < t->n; a++)
    for (int b = 0; b < t->n; b++) {
      const mg_p2p_pair_info_t *p = at(t, a, b);
      char link[32];
      link_cell(p, link, sizeof link);
      fprintf(f, "%s\n  {\"from\": %d, \"to\": %d, \"link\": \"%s\", \"link_type\": \"%s\", "
              "\"nvlinks\": %d, \"perf_rank\": %d, \"native_atomics\": %s, \"array_access\": %s, "
              "\"can_access\": %s, \"enabled\": %s, \"enable_status\": \"%s\", \"probe\": \"%s\", "
              "\"path\": \"%s\", \"gbps\": ",
              a || b ? "," : "", a, b, link, link_types[p->link], p->nvlinks, p->perf_rank,
              jb(p->native_atomics), jb(p->array_access), jb(p->can_access), jb(p->enabled),
              mg_status_name(p->enable_status), probe_names[p->probe], path_names[p->path]);
      if (p->gbps > 0)
        fprintf(f, "%.3f", p->gbps);
      else
        fputs("null", f);
      fprintf(f, ", \"reason\": ");
      mg_cli_json_str(f, p->reason[0] ? p->reason : NULL);
      fputc('}', f);
    }
  fprintf(f, "],\n \"islands\": [");
  for (int i = 0; i < t->nislands; i++) {
    fprintf(f, "%s[", i ? ", " : "");
    for (int d = 0, k = 0; d < t->n; d++)
      if (t->island[d] == i) fprintf(f, "%s%d", k++ ? ", " : "", d);
    fputc(']', f);
  }
  fprintf(f, "]}\n");
}

/* ---- the command -------------------------------------------------------------------------- */

static void topo_usage(FILE *f) {
  fprintf(f,
          "usage: mgcomm topo [--json] [--bandwidth] [--bytes N]\n"
          "\n"
          "The GPUs of this machine as peers: links (as nvidia-smi topo -m), peer access per\n"
          "ordered pair (enabled by this command), the functional probe's verdict per pair (a\n"
          "pattern copied through the peer path and read back) and the islands.\n"
          "\n"
          "  --json       one JSON object (schema: docs/p2p.md)\n"
          "  --bandwidth  time the probe's copy per pair and print GB/s\n"
          "  --bytes N    bytes the probe copies per pair (default 1 MiB; 64 MiB with\n"
          "               --bandwidth; at most 1 GiB; K, M, G suffixes)\n"
          "  --help       this text\n");
}

static int parse_bytes(const char *s, size_t *out) {
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || s[0] == '-') return -1;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  else if (*end == 'M' || *end == 'm') shift = 20;
  else if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) end++;
  if (*end != '\0' || v == 0 || v > (1ull << 30) >> shift) return -1;
  *out = (size_t)(v << shift);
  return 0;
}

int mg_cli_topo(int argc, char **argv) {
  topo_t t;
  memset(&t, 0, sizeof t);
  int json = 0, have_bytes = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--bandwidth") == 0) {
      t.timed = 1;
    } else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
      if (parse_bytes(argv[++i], &t.bytes) != 0) {
        fprintf(stderr, "mgcomm topo: --bytes %s is not a size from 1 to 1G\n", argv[i]);
        return 2;
      }
      have_bytes = 1;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      topo_usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "mgcomm topo: unknown option '%s' (mgcomm topo --help lists them)\n",
              argv[i]);
      return 2;
    }
  }
  if (!have_bytes) t.bytes = t.timed ? (size_t)64 << 20 : (size_t)1 << 20;
  mg_status_t st = mg_device_count(&t.n);
  if (st != MG_OK || t.n == 0) {
    /* Not an error: a machine without a GPU is told so, on one line. */
    char why[512];
    if (st != MG_OK)
      snprintf(why, sizeof why, "%s", mg_last_error());
    else
      snprintf(why, sizeof why, "the CUDA driver reports no GPU");
    for (char *c = why; *c; c++)
      if (*c == '\n') *c = ' ';
    if (json) {
      json_head(stdout, 0, why);
      printf(", \"devices\": [], \"pairs\": [], \"islands\": []}\n");
    } else {
      printf("mgcomm topo: no GPU: %s\n", why);
    }
    return fflush(stdout) == 0 ? 0 : 1;
  }
  int rc = topo_read(&t);
  if (rc == 0) {
    if (json)
      json_print(stdout, &t);
    else
      text_print(stdout, &t);
    rc = fflush(stdout) == 0 ? 0 : 1;
  }
  free(t.dev);
  free(t.pair);
  free(t.island);
  return rc;
}
