/*
 * lib_nvshmem.c -- NVSHMEM's host library (libnvshmem_host.so.3): its table and its version.
 */
#include <stdio.h>

#include "loader/loader_int.h"

mg__nvshmem_table_t mg__nvshmem;
static mg__nvshmem_table_t mg__nvshmem_real;

#define X(req, form, member, sym, alt, ret, params, args) \
  MG__WRAP_##form(mg__nvshmem, member, sym, ret, params, args)
MG__NVSHMEM_SYMBOLS(X)
#undef X

static const mg__sym_desc_t mg__nvshmem_syms[] = {
#define X(req, form, member, sym, alt, ret, params, args) \
  MG__DESC_ONE(mg__nvshmem, mg__nvshmem_table_t, req, form, member, sym, alt)
    MG__NVSHMEM_SYMBOLS(X)
#undef X
};

/* The vendor function only copies constants: it is safe before initialisation. Without it the
 * release is unknown (version 0, ""); the library is still usable. (nvshmem_info_get_version
 * would give the OpenSHMEM specification, 1.3, not the release.) */
static int mg__nvshmem_probe(int *version, char *vstr, size_t vlen, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  if (mg__nvshmem.vendor_get_version_info == NULL) {
    *version = 0;
    vstr[0] = '\0';
    return 0;
  }
  int major = 0, minor = 0, patch = 0;
  mg__nvshmem.vendor_get_version_info(&major, &minor, &patch);
  *version = major * 10000 + minor * 100 + patch;
  snprintf(vstr, vlen, "%d.%d.%d", major, minor, patch);
  return 0;
}

const mg__lib_desc_t mg__lib_desc_nvshmem = {
    .id = MG_LIB_NVSHMEM,
    .label = "NVSHMEM",
    .soname = "libnvshmem_host.so.3",
    .param = MG_PARAM_NVSHMEM_LIBRARY,
    .param_name = "MGCOMM_NVSHMEM_LIBRARY",
    .home_var = "NVSHMEM_HOME",
    .wheel_dirs = "{nvshmem,cu13,cu12}",
    .syms = mg__nvshmem_syms,
    .nsyms = (int)(sizeof mg__nvshmem_syms / sizeof mg__nvshmem_syms[0]),
    .table = &mg__nvshmem,
    .real = &mg__nvshmem_real,
    .table_size = sizeof(mg__nvshmem_table_t),
    .probe = mg__nvshmem_probe,
};
