/*
 * config.c -- a caller's mg_config_t read in any released layout (contract in mgcomm.h, above
 * mg_config_t).
 *
 * Each MG_CONFIG_VERSION appended fields to the one before, so version v's layout is mg_config_t
 * up to v's last field, padded as the compiler pads a struct; its size is what MG_CONFIG_INIT set
 * in a program built against that mgcomm.h. Only the fields of the caller's version are read: the
 * rest of its struct is padding (version 4's nccl_blocking sits where version 3 has padding on
 * LP64) or not the caller's memory at all.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/config.h"

/* The end of field f: the bytes of mg_config_t that a layout ending with f holds. */
#define MG__FIELD_END(f) (offsetof(mg_config_t, f) + sizeof(((mg_config_t *)0)->f))
/* A layout's size: its fields' end rounded up to the struct's alignment. */
#define MG__LAYOUT_SIZE(end) \
  (((end) + _Alignof(mg_config_t) - 1) / _Alignof(mg_config_t) * _Alignof(mg_config_t))

/* The end of the last field of each version, by version (0 is no version). */
#define MG__CONFIG_V1_END MG__FIELD_END(device)
#define MG__CONFIG_V2_END MG__FIELD_END(nccl_nvlink_centric_sched)
#define MG__CONFIG_V3_END MG__FIELD_END(on_timeout)
#define MG__CONFIG_V4_END MG__FIELD_END(nccl_blocking)
#define MG__CONFIG_V5_END MG__FIELD_END(nccl_nvls_host_mode)
#define MG__CONFIG_V6_END MG__FIELD_END(all_reduce_algo)
static const size_t mg__config_end[] = {0, MG__CONFIG_V1_END, MG__CONFIG_V2_END,
                                        MG__CONFIG_V3_END, MG__CONFIG_V4_END, MG__CONFIG_V5_END,
                                        MG__CONFIG_V6_END};

_Static_assert(sizeof mg__config_end / sizeof *mg__config_end == MG_CONFIG_VERSION + 1,
               "a new MG_CONFIG_VERSION names its last field in mg__config_end");
_Static_assert(MG__LAYOUT_SIZE(MG__CONFIG_V6_END) == sizeof(mg_config_t),
               "a field appended to mg_config_t comes with a new MG_CONFIG_VERSION");
/* Version 1 has no pointer: its alignment is mg_config_t's only if a pointer needs no more than
 * size_t (true of every ABI mgcomm builds for), and then every layout is padded alike. */
_Static_assert(_Alignof(void *) <= _Alignof(size_t), "every layout has mg_config_t's alignment");

static size_t mg__config_size(unsigned version) {
  return MG__LAYOUT_SIZE(mg__config_end[version]);
}

/* MG_ERR_INVALID_USAGE for a size and version that are no layout of this library, saying which
 * are. */
static mg_status_t mg__config_refuse(const char *fn, size_t size, unsigned version,
                                     const char *why) {
  char accepted[128] = "";
  size_t len = 0;
  for (unsigned v = 1; v <= MG_CONFIG_VERSION && len < sizeof accepted; v++) {
    int n = snprintf(accepted + len, sizeof accepted - len, "%s%u (size %zu)", v > 1 ? ", " : "",
                     v, mg__config_size(v));
    if (n < 0) break;
    len += (size_t)n;
  }
  return mg__error(MG_ERR_INVALID_USAGE,
                   "%s: config of size %zu, version %u is refused: %s; this mgcomm accepts "
                   "version %s, as MG_CONFIG_INIT sets them in its mgcomm.h or an older one",
                   fn, size, version, why, accepted);
}

mg_status_t mg__config_read(const mg_config_t *in, const char *fn, mg_config_t *out) {
  static const mg_config_t defaults = MG_CONFIG_INIT;
  *out = defaults;
  if (in == NULL) return MG_OK;
  /* size and version open every layout. */
  const size_t size = in->size;
  const unsigned version = in->version;
  char why[160];
  if (size > sizeof(mg_config_t)) {
    snprintf(why, sizeof why, "larger than this library's mg_config_t (%zu bytes): built against "
             "a newer mgcomm.h, or not made with MG_CONFIG_INIT", sizeof(mg_config_t));
    return mg__config_refuse(fn, size, version, why);
  }
  if (version == 0)
    return mg__config_refuse(fn, size, version, "version 0 is none: not made with MG_CONFIG_INIT");
  if (version > MG_CONFIG_VERSION) {
    snprintf(why, sizeof why, "version %u is newer than this library's %u: built against a newer "
             "mgcomm.h", version, MG_CONFIG_VERSION);
    return mg__config_refuse(fn, size, version, why);
  }
  if (size != mg__config_size(version)) {
    snprintf(why, sizeof why, "version %u's layout has size %zu: not made with MG_CONFIG_INIT",
             version, mg__config_size(version));
    return mg__config_refuse(fn, size, version, why);
  }
  memcpy(out, in, mg__config_end[version]);
  out->size = sizeof(mg_config_t);
  out->version = MG_CONFIG_VERSION;

  if (!(out->timeout_s >= 0))
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->timeout_s %g is negative", fn,
                     out->timeout_s);
  if (out->trace_entries < -1)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->trace_entries %d is below -1", fn,
                     out->trace_entries);
  if ((unsigned)out->completion > MG_COMPLETION_SYNC)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->completion %d is not an "
                     "mg_completion_t", fn, (int)out->completion);
  if (!(out->poll_interval_s >= 0))
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->poll_interval_s %g is negative", fn,
                     out->poll_interval_s);
  if ((unsigned)out->on_timeout > MG_ON_TIMEOUT_REPORT)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->on_timeout %d is not an "
                     "mg_on_timeout_t", fn, (int)out->on_timeout);
  if ((unsigned)out->all_reduce_algo > MG_ALGO_MGCOMM)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->all_reduce_algo %d is not an "
                     "mg_algo_t", fn, (int)out->all_reduce_algo);
  return MG_OK;
}
