/*
 * libinfo.c -- the public view of the loader (mgcomm.h, Diagnostics): mg_library_info,
 * mg_library_attempt, mg_feature_info.
 */
#include "base/error.h"
#include "loader/loader.h"

static const char *const mg__lib_short_names[MG_LIB_COUNT] = {
    [MG_LIB_CUDA] = "cuda", [MG_LIB_NCCL] = "nccl", [MG_LIB_NVSHMEM] = "nvshmem",
    [MG_LIB_NVML] = "nvml"};

mg_status_t mg_library_info(mg_library_t lib, mg_library_info_t *info) {
  if (info == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_library_info: info is NULL");
  if ((unsigned)lib >= MG_LIB_COUNT)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_library_info: library %d is not a library",
                     (int)lib);
  const mg__lib_report_t *r = mg__lib_report(lib);
  info->name = r->name;
  info->loaded = r->loaded;
  info->path = r->path;
  info->version = r->version;
  info->version_string = r->version_string;
  info->error = r->error;
  info->attempts = r->nattempts;
  info->plugin_dir = r->plugin_dir;
  return MG_OK;
}

mg_status_t mg_library_attempt(mg_library_t lib, int index, const char **path,
                               const char **outcome) {
  if ((unsigned)lib >= MG_LIB_COUNT)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_library_attempt: library %d is not a library",
                     (int)lib);
  if (path == NULL || outcome == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_library_attempt: %s is NULL",
                     path == NULL ? "path" : "outcome");
  const mg__lib_report_t *r = mg__lib_report(lib);
  if (index < 0 || index >= r->nattempts)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "mg_library_attempt: index %d is out of [0, %d) for %s", index, r->nattempts,
                     r->name);
  *path = r->attempts[index].path;
  *outcome = r->attempts[index].outcome;
  return MG_OK;
}

mg_status_t mg_feature_info(mg_feature_t f, mg_feature_info_t *info) {
  const mg__feature_desc_t *fd = mg__feature_desc(f);
  if (info == NULL || fd == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_feature_info: %s",
                     info == NULL ? "info is NULL" : "not a feature");
  info->name = fd->name;
  info->library = mg__lib_short_names[fd->lib];
  info->min_version = fd->min_version;
  info->min_version_string = fd->min_version_string;
  info->available = mg__feature(f);
  return MG_OK;
}
