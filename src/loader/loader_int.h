/*
 * loader_int.h -- private to src/loader/: the description of one foreign library (what
 * loader.c needs to find, resolve and probe it) and the candidate search of search.c.
 */
#ifndef MG_LOADER_LOADER_INT_H
#define MG_LOADER_LOADER_INT_H

#include <stddef.h>

#include "base/params.h"
#include "loader/loader.h"

#define MG__LOADER_MAX_CANDIDATES 64
#define MG__LOADER_TEXT 512 /* bytes of a version string, a probe's error, one outcome */

typedef struct mg__lib_desc {
  mg_library_t id;
  const char *label;        /* "NCCL" */
  const char *soname;       /* "libnccl.so.2" */
  mg__param_id_t param;     /* MG_PARAM_NCCL_LIBRARY: the explicit path */
  const char *param_name;   /* "MGCOMM_NCCL_LIBRARY" */
  const char *home_var;     /* "NCCL_HOME", or NULL */
  const char *wheel_dirs;   /* glob brace list under site-packages/nvidia, "{nccl,cu13,cu12}";
                               NULL: not shipped as a wheel */
  const mg__sym_desc_t *syms;
  int nsyms;
  void *table;              /* the public table (mg__nccl) */
  void *real;               /* the table of dlsym results the wrappers call */
  size_t table_size;
  /* Called after every symbol resolved and the tables are installed: reads the version
   * through the table. 0 on success (version and vstr set); otherwise writes why the library
   * cannot be used into err. */
  int (*probe)(int *version, char *vstr, size_t vlen, char *err, size_t errlen);
} mg__lib_desc_t;

extern const mg__lib_desc_t mg__lib_desc_cuda;
extern const mg__lib_desc_t mg__lib_desc_nccl;
extern const mg__lib_desc_t mg__lib_desc_nvshmem;
extern const mg__lib_desc_t mg__lib_desc_nvml;

/* One candidate of a search. outcome is NULL for a path still to be opened, or the reason it
 * needs no opening (a glob pattern that matched nothing). Strings are heap-owned. */
typedef struct mg__candidate {
  char *path;
  char *outcome;
} mg__candidate_t;

/* Fills out[0..max) with d's candidates in search order (loader.h) and returns how many;
 * *is_explicit is 1 when MGCOMM_<LIB>_LIBRARY is set (then it is the only candidate). Never
 * more than max; duplicates are dropped. */
int mg__lib_candidates(const mg__lib_desc_t *d, mg__candidate_t *out, int max, int *is_explicit);

#endif
