/*
 * info_shmem.c -- the NVSHMEM part of `mgcomm info`: its release, the OpenSHMEM specification
 * it implements, and which entry points of the host API the loaded library exports (the
 * required ones, without which it is refused, and the optional ones).
 */
#include <stdio.h>

#include "cli.h"
#include "mgcomm.h"

void mg_cli_info_shmem(FILE *f) {
  int rel = 0, spec = 0;
  if (mg_shmem_version(&rel, &spec) != MG_OK) {
    fprintf(f, "\nNVSHMEM host API: not available (%s)\n", mg_status_name(MG_ERR_BACKEND_UNAVAILABLE));
    return;
  }
  fprintf(f, "\nNVSHMEM host API: release %d.%d.%d, OpenSHMEM %d.%d; entry points (* required):\n",
          rel / 10000, rel / 100 % 100, rel % 100, spec / 100, spec % 100);
  int n = mg_shmem_symbol_count(), col = 0;
  for (int i = 0; i < n; i++) {
    const char *name;
    int req = 0, present = 0;
    if (mg_shmem_symbol(i, &name, &req, &present) != MG_OK) continue; /* i is in range */
    fprintf(f, "%s%-34s %-3s", col == 0 ? "  " : "  ", name, present ? (req ? "*" : "yes") : "no");
    if (++col == 2 || i == n - 1) {
      fputc('\n', f);
      col = 0;
    }
  }
}
