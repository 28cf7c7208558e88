/*
 * query.c -- what a program may ask: its PE and the number of PEs, NVSHMEM's release and the
 * OpenSHMEM specification it implements, and which entry points of the host API the loaded
 * library exports (the loader's table, described from the same list that declares it).
 */
#include <stddef.h>

#include "base/error.h"
#include "loader/table.h"
#include "shmem/shmem.h"

mg_status_t mg_shmem_my_pe(int *pe) {
  const char *fn = "mg_shmem_my_pe";
  if (pe == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: pe is NULL", fn);
  MG_CHECK(mg__shmem_enter(fn));
  *pe = mg__shmem.my_pe;
  mg__shmem_leave();
  return MG_OK;
}

mg_status_t mg_shmem_n_pes(int *n) {
  const char *fn = "mg_shmem_n_pes";
  if (n == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: n is NULL", fn);
  MG_CHECK(mg__shmem_enter(fn));
  *n = mg__shmem.n_pes;
  mg__shmem_leave();
  return MG_OK;
}

mg_status_t mg_shmem_version(int *release, int *spec) {
  MG_CHECK(mg__load_nvshmem());
  /* Both calls only copy constants: safe before NVSHMEM starts. */
  int major = 0, minor = 0;
  mg__nvshmem.info_get_version(&major, &minor);
  if (release != NULL) *release = mg__lib_report(MG_LIB_NVSHMEM)->version;
  if (spec != NULL) *spec = major * 100 + minor;
  return MG_OK;
}

/* The host API as the loader declares it: name, required, and where its pointer lives. */
static const struct {
  const char *name;
  int required;
  size_t offset;
} mg__shmem_symbols[] = {
#define X(req, form, member, sym, alt, ret, params, args) \
  {sym, MG__##req, offsetof(mg__nvshmem_table_t, member)},
    MG__NVSHMEM_SYMBOLS(X)
#undef X
};

int mg_shmem_symbol_count(void) {
  return (int)(sizeof mg__shmem_symbols / sizeof mg__shmem_symbols[0]);
}

mg_status_t mg_shmem_symbol(int index, const char **name, int *required, int *present) {
  const char *fn = "mg_shmem_symbol";
  if (index < 0 || index >= mg_shmem_symbol_count())
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: index %d is out of range 0..%d", fn, index,
                     mg_shmem_symbol_count() - 1);
  if (name == NULL || present == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: name and present must not be NULL", fn);
  MG_CHECK(mg__load_nvshmem());
  void *const *slot = (void *const *)((const char *)&mg__nvshmem + mg__shmem_symbols[index].offset);
  *name = mg__shmem_symbols[index].name;
  if (required != NULL) *required = mg__shmem_symbols[index].required;
  *present = *slot != NULL;
  return MG_OK;
}
