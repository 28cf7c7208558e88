/*
 * lib_nvml.c -- NVML (libnvidia-ml.so.1): its table and the driver version it reports.
 */
#include <stdio.h>
#include <stdlib.h>

#include "loader/loader_int.h"

mg__nvml_table_t mg__nvml;
static mg__nvml_table_t mg__nvml_real;

#define X(req, form, member, sym, alt, ret, params, args) \
  MG__WRAP_##form(mg__nvml, member, sym, ret, params, args)
MG__NVML_SYMBOLS(X)
#undef X

static const mg__sym_desc_t mg__nvml_syms[] = {
#define X(req, form, member, sym, alt, ret, params, args) \
  MG__DESC_ONE(mg__nvml, mg__nvml_table_t, req, form, member, sym, alt)
    MG__NVML_SYMBOLS(X)
#undef X
};

/* NVML answers nothing before nvmlInit_v2; the loader initialises it once and leaves it
 * initialised for the process (nvmlShutdown only balances one init, so leaving it is safe). */
static int mg__nvml_probe(int *version, char *vstr, size_t vlen, char *err, size_t errlen) {
  mg__nvmlReturn_t r = mg__nvml.Init();
  if (r != MG__NVML_SUCCESS) {
    snprintf(err, errlen, "opened, but nvmlInit_v2 returned %d: %s", r, mg__nvml.ErrorString(r));
    return -1;
  }
  char driver[MG__NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
  r = mg__nvml.SystemGetDriverVersion(driver, sizeof driver);
  if (r != MG__NVML_SUCCESS) {
    snprintf(err, errlen, "opened, but nvmlSystemGetDriverVersion returned %d: %s", r,
             mg__nvml.ErrorString(r));
    /* the init above is balanced so that a later copy starts from a clean state */
    (void)mg__nvml.Shutdown(); /* its own failure would add nothing to the error above */
    return -1;
  }
  /* "580.65.06" -> 58065 */
  char *end = NULL;
  long major = strtol(driver, &end, 10);
  long minor = (end != NULL && *end == '.') ? strtol(end + 1, NULL, 10) : 0;
  *version = (int)(major * 100 + minor);
  snprintf(vstr, vlen, "%s", driver);
  return 0;
}

const mg__lib_desc_t mg__lib_desc_nvml = {
    .id = MG_LIB_NVML,
    .label = "NVML",
    .soname = "libnvidia-ml.so.1",
    .param = MG_PARAM_NVML_LIBRARY,
    .param_name = "MGCOMM_NVML_LIBRARY",
    .home_var = NULL,
    .wheel_dirs = NULL,
    .syms = mg__nvml_syms,
    .nsyms = (int)(sizeof mg__nvml_syms / sizeof mg__nvml_syms[0]),
    .table = &mg__nvml,
    .real = &mg__nvml_real,
    .table_size = sizeof(mg__nvml_table_t),
    .probe = mg__nvml_probe,
};
