/*
 * nccl_params.c -- NCCL's own parameters through its parameter API (NCCL >= 2.30.7):
 * mg_nccl_param_get, mg_nccl_params.
 *
 * The key-based calls are used (ncclParamGetParameter, ncclParamGetAllParameterKeys): they
 * answer text and need no handle, whose type changed between 2.30.4 and 2.30.7, and no GPU.
 * NCCL keeps what they return in storage of the calling thread until that thread's next call of
 * the same function, so a value is copied (get) or handed to the callback before the next call.
 */
#include <string.h>

#include "base/error.h"
#include "loader/loader.h"

static mg_status_t mg__nparam_ready(const char *fn) {
  mg_status_t st = mg__load_nccl();
  if (st < 0) {
    mg__error_prefix("%s", fn);
    return st;
  }
  return mg__feature_require(MG_FEATURE_NCCL_PARAMS, fn);
}

/* The value of key as NCCL's text, or an error naming fn. */
static mg_status_t mg__nparam_value(const char *key, const char **value, int *len,
                                    const char *fn) {
  *value = NULL;
  *len = 0;
  mg__ncclResult_t r = mg__nccl.ParamGetParameter(key, value, len);
  if (r == MG__ncclInvalidArgument || r == MG__ncclInvalidUsage)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: NCCL has no parameter \"%s\"", fn, key);
  if (r != MG__ncclSuccess) {
    mg_status_t st = mg__nccl_error(r, "ncclParamGetParameter", NULL);
    mg__error_prefix("%s: \"%s\"", fn, key);
    return st;
  }
  if (*value == NULL) *len = 0;
  /* len counts the text NCCL gives; it need not end with a NUL there. */
  if (*value != NULL && *len < 0) *len = (int)strlen(*value);
  return MG_OK;
}

mg_status_t mg_nccl_param_get(const char *key, char *value, size_t value_len) {
  static const char fn[] = "mg_nccl_param_get";
  if (key == NULL || value == NULL || value_len == 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                     key == NULL ? "key is NULL" : value == NULL ? "value is NULL"
                                                                 : "value_len is 0");
  MG_CHECK(mg__nparam_ready(fn));
  const char *v;
  int len;
  MG_CHECK(mg__nparam_value(key, &v, &len, fn));
  size_t n = (size_t)len < value_len - 1 ? (size_t)len : value_len - 1;
  if (n > 0) memcpy(value, v, n);
  value[n] = '\0';
  return MG_OK;
}

mg_status_t mg_nccl_params(mg_nccl_param_fn fn_cb, void *arg) {
  static const char fn[] = "mg_nccl_params";
  if (fn_cb == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: fn is NULL", fn);
  MG_CHECK(mg__nparam_ready(fn));
  const char **keys = NULL;
  int n = 0;
  mg__ncclResult_t r = mg__nccl.ParamGetAllParameterKeys(&keys, &n);
  if (r != MG__ncclSuccess) {
    mg_status_t st = mg__nccl_error(r, "ncclParamGetAllParameterKeys", NULL);
    mg__error_prefix("%s", fn);
    return st;
  }
  /* The key table lives until this thread's next ParamGetAllParameterKeys, which the loop does
   * not make; the value of each until the next ParamGetParameter, so it is copied first. */
  for (int i = 0; i < n && keys != NULL; i++) {
    if (keys[i] == NULL) continue;
    const char *v;
    int len;
    MG_CHECK(mg__nparam_value(keys[i], &v, &len, fn));
    char text[1024];
    size_t m = (size_t)len < sizeof text - 1 ? (size_t)len : sizeof text - 1;
    if (m > 0) memcpy(text, v, m);
    text[m] = '\0';
    if (fn_cb(keys[i], text, arg) != 0) break;
  }
  return MG_OK;
}
