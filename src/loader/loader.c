/*
 * loader.c -- finding, opening and resolving the four foreign libraries, once per process,
 * and keeping the record of how it went (loader.h).
 *
 * Divisions: per-library state; resolving one opened file; the load (pthread_once body);
 * queries.
 */
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "loader/loader_int.h"

_Static_assert(sizeof(mg__fnptr_t) == sizeof(void *), "function and data pointers differ in size");

/* ---- Per-library state. Written only inside the library's pthread_once; read afterwards. */
typedef struct mg__lib_state {
  const mg__lib_desc_t *desc;
  pthread_once_t once;
  mg_status_t status;
  mg__lib_report_t report;
  mg__lib_attempt_t attempts[MG__LOADER_MAX_CANDIDATES];
  char path[PATH_MAX];
  char version_string[MG__LOADER_TEXT];
  char plugin_dir[PATH_MAX];
  const char *error; /* heap (or a literal), for the process's lifetime */
} mg__lib_state_t;

static mg__lib_state_t mg__libs[MG_LIB_COUNT] = {
    [MG_LIB_CUDA] = {.desc = &mg__lib_desc_cuda, .once = PTHREAD_ONCE_INIT},
    [MG_LIB_NCCL] = {.desc = &mg__lib_desc_nccl, .once = PTHREAD_ONCE_INIT},
    [MG_LIB_NVSHMEM] = {.desc = &mg__lib_desc_nvshmem, .once = PTHREAD_ONCE_INIT},
    [MG_LIB_NVML] = {.desc = &mg__lib_desc_nvml, .once = PTHREAD_ONCE_INIT},
};

/* ---- Resolving one opened file. */

static void mg__store_fn(void *table, size_t offset, mg__fnptr_t fn) {
  memcpy((char *)table + offset, &fn, sizeof fn);
}

static mg__fnptr_t mg__load_fn(const void *table, size_t offset) {
  mg__fnptr_t fn;
  memcpy(&fn, (const char *)table + offset, sizeof fn);
  return fn;
}

static mg__fnptr_t mg__dlsym_fn(void *handle, const char *name) {
  void *p = dlsym(handle, name);
  mg__fnptr_t fn;
  memcpy(&fn, &p, sizeof fn); /* POSIX: a dlsym result converts to a function pointer */
  return fn;
}

/* Resolves every symbol of d into d->real and, for test builds, the wrappers into d->table.
 * Returns the number of required symbols missing; their names go to missing. */
static int mg__resolve(const mg__lib_desc_t *d, void *handle, char *missing, size_t len) {
  int nmissing = 0;
  size_t used = 0;
  missing[0] = '\0';
  memset(d->real, 0, d->table_size);
  memset(d->table, 0, d->table_size);
  for (int i = 0; i < d->nsyms; i++) {
    const mg__sym_desc_t *s = &d->syms[i];
    mg__fnptr_t fn = mg__dlsym_fn(handle, s->sym);
    if (fn == NULL && s->alt != NULL) fn = mg__dlsym_fn(handle, s->alt);
    if (fn == NULL) {
      if (s->required) {
        int k = snprintf(missing + used, len - used, "%s%s", nmissing ? ", " : "", s->sym);
        if (k > 0 && used + (size_t)k < len) used += (size_t)k;
        nmissing++;
      }
      continue;
    }
    mg__store_fn(d->real, s->offset, fn);
    mg__store_fn(d->table, s->offset, s->wrapper != NULL ? s->wrapper : fn);
  }
  return nmissing;
}

/* The path the dynamic linker actually opened (a bare soname becomes a full path). */
static void mg__opened_path(const mg__lib_desc_t *d, const char *tried, char *out, size_t len) {
  Dl_info info;
  mg__fnptr_t fn = d->nsyms > 0 ? mg__load_fn(d->real, d->syms[0].offset) : NULL;
  void *addr;
  memcpy(&addr, &fn, sizeof addr);
  if (addr != NULL && dladdr(addr, &info) != 0 && info.dli_fname != NULL && info.dli_fname[0])
    snprintf(out, len, "%s", info.dli_fname);
  else
    snprintf(out, len, "%s", tried);
}

/* NVSHMEM's bootstrap plugins (nvshmem_bootstrap_*.so*): next to the library, or in its
 * nvshmem/ subfolder as some distributions install them. */
static void mg__find_plugin_dir(const char *libpath, char *out, size_t len) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", libpath);
  char *slash = strrchr(dir, '/');
  if (slash == NULL) return;
  *slash = '\0';
  static const char *const subs[] = {"", "/nvshmem"};
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s%s/nvshmem_bootstrap_*.so*", dir, subs[i]);
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob(probe, 0, NULL, &g);
    globfree(&g);
    if (rc == 0) {
      snprintf(out, len, "%s%s", dir, subs[i]);
      return;
    }
  }
}

/* ---- The load. */

static void mg__record(mg__lib_state_t *st, int i, const char *path, const char *outcome) {
  st->attempts[i].path = path;
  st->attempts[i].outcome = strdup(outcome);
  if (st->attempts[i].outcome == NULL) st->attempts[i].outcome = "(out of memory)";
}

/* "path: text" -> "text": dlerror() repeats the path, which the list already shows. */
static const char *mg__short_outcome(const char *path, const char *outcome) {
  size_t n = strlen(path);
  if (strncmp(outcome, path, n) == 0 && outcome[n] == ':' && outcome[n + 1] == ' ')
    return outcome + n + 2;
  return outcome;
}

static void mg__set_error(mg__lib_state_t *st, int is_explicit) {
  const mg__lib_desc_t *d = st->desc;
  size_t cap = 512;
  for (int i = 0; i < st->report.nattempts; i++)
    cap += strlen(st->attempts[i].path) + strlen(st->attempts[i].outcome) + 16;
  char *e = malloc(cap);
  if (e == NULL) {
    st->error = "out of memory while describing the failed search";
    return;
  }
  size_t used;
  if (is_explicit) {
    used = (size_t)snprintf(e, cap,
                            "%s (%s) could not be loaded from %s=%s: %s; no other copy was "
                            "searched because an explicit path was given (unset %s to search)",
                            d->label, d->soname, d->param_name, st->attempts[0].path,
                            mg__short_outcome(st->attempts[0].path, st->attempts[0].outcome),
                            d->param_name);
  } else {
    used = (size_t)snprintf(e, cap, "no usable %s (%s) was found; %d candidate%s tried:",
                            d->label, d->soname, st->report.nattempts,
                            st->report.nattempts == 1 ? "" : "s");
    for (int i = 0; i < st->report.nattempts && used < cap; i++) {
      const mg__lib_attempt_t *a = &st->attempts[i];
      used += (size_t)snprintf(e + used, cap - used, "%s %s (%s)", i ? ";" : "", a->path,
                               mg__short_outcome(a->path, a->outcome));
    }
  }
  st->error = e;
}

static void mg__load_one(mg__lib_state_t *st) {
  const mg__lib_desc_t *d = st->desc;
#ifdef MGCOMM_TESTING
  mg__fault_init(); /* MGCOMM_FAULT rules must be in place before the first wrapped call */
#endif
  mg__candidate_t cands[MG__LOADER_MAX_CANDIDATES];
  int is_explicit = 0;
  int n = mg__lib_candidates(d, cands, MG__LOADER_MAX_CANDIDATES, &is_explicit);
  st->report.label = d->label;
  st->report.name = d->soname;
  st->report.attempts = st->attempts;
  st->report.version_string = "";
  st->report.error = "";
  st->status = MG_ERR_BACKEND_UNAVAILABLE;
  for (int i = 0; i < n; i++) {
    st->report.nattempts = i + 1;
    if (cands[i].outcome != NULL) {
      mg__record(st, i, cands[i].path, cands[i].outcome);
      free(cands[i].outcome);
      continue;
    }
    (void)dlerror(); /* clears a stale message; the value is of no use */
    void *h = dlopen(cands[i].path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      const char *why = dlerror();
      mg__record(st, i, cands[i].path, why != NULL ? why : "dlopen failed without a message");
      MG_TRACE(MG_SUBSYS_LOAD, "%s: %s", d->label, st->attempts[i].outcome);
      continue;
    }
    char why[MG__LOADER_TEXT];
    char missing[MG__LOADER_TEXT];
    int nmissing = mg__resolve(d, h, missing, sizeof missing);
    int version = 0;
    int ok = nmissing == 0;
    if (!ok) {
      snprintf(why, sizeof why,
               "opened, but it lacks %d required symbol%s (%s): not %s, or a version older "
               "than mgcomm supports", nmissing, nmissing == 1 ? "" : "s", missing, d->label);
    } else if (d->probe(&version, st->version_string, sizeof st->version_string, why,
                        sizeof why) != 0) {
      ok = 0;
    }
    if (!ok) {
      memset(d->table, 0, d->table_size); /* nobody may call into a closed library */
      memset(d->real, 0, d->table_size);
      st->version_string[0] = '\0';
      mg__record(st, i, cands[i].path, why);
      MG_INFO(MG_SUBSYS_LOAD, "%s: %s: %s", d->label, cands[i].path, why);
      (void)dlclose(h); /* a failed unload only leaves an unused mapping behind */
      continue;
    }
    mg__record(st, i, cands[i].path, "loaded");
    mg__opened_path(d, cands[i].path, st->path, sizeof st->path);
    st->report.loaded = 1;
    st->report.path = st->path;
    st->report.version = version;
    st->report.version_string = st->version_string;
    if (d->id == MG_LIB_NVSHMEM) {
      mg__find_plugin_dir(st->path, st->plugin_dir, sizeof st->plugin_dir);
      if (st->plugin_dir[0] != '\0') st->report.plugin_dir = st->plugin_dir;
    }
    st->status = MG_OK;
    MG_INFO(MG_SUBSYS_LOAD, "%s %s loaded from %s", d->label, st->version_string, st->path);
    for (int j = i + 1; j < n; j++) { /* candidates after the winner were never tried */
      free(cands[j].path);
      free(cands[j].outcome);
    }
    return;
  }
  if (n == 0) {
    st->error = "no candidate path could be formed";
    st->report.error = st->error;
    return;
  }
  mg__set_error(st, is_explicit);
  st->report.error = st->error;
  MG_INFO(MG_SUBSYS_LOAD, "%s", st->error);
}

static void mg__once_cuda(void) { mg__load_one(&mg__libs[MG_LIB_CUDA]); }
static void mg__once_nccl(void) { mg__load_one(&mg__libs[MG_LIB_NCCL]); }
static void mg__once_nvshmem(void) { mg__load_one(&mg__libs[MG_LIB_NVSHMEM]); }
static void mg__once_nvml(void) { mg__load_one(&mg__libs[MG_LIB_NVML]); }

static mg__lib_state_t *mg__ensure(mg_library_t lib) {
  static void (*const once_fns[MG_LIB_COUNT])(void) = {
      [MG_LIB_CUDA] = mg__once_cuda,
      [MG_LIB_NCCL] = mg__once_nccl,
      [MG_LIB_NVSHMEM] = mg__once_nvshmem,
      [MG_LIB_NVML] = mg__once_nvml,
  };
  if ((unsigned)lib >= MG_LIB_COUNT) return NULL;
  pthread_once(&mg__libs[lib].once, once_fns[lib]);
  return &mg__libs[lib];
}

/* ---- Queries. */

mg_status_t mg__load(mg_library_t lib) {
  mg__lib_state_t *st = mg__ensure(lib);
  if (st == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "library %d is not a library", (int)lib);
  if (st->status != MG_OK) return mg__error(st->status, "%s", st->error);
  return MG_OK;
}

int mg__loaded(mg_library_t lib) {
  mg__lib_state_t *st = mg__ensure(lib);
  return st != NULL && st->status == MG_OK;
}

int mg__lib_version(mg_library_t lib) {
  return mg__loaded(lib) ? mg__libs[lib].report.version : 0;
}

int mg__lib_has(mg_library_t lib, const char *sym) {
  if (!mg__loaded(lib) || sym == NULL) return 0;
  const mg__lib_desc_t *d = mg__libs[lib].desc;
  for (int i = 0; i < d->nsyms; i++)
    if (strcmp(d->syms[i].sym, sym) == 0) return mg__load_fn(d->real, d->syms[i].offset) != NULL;
  return 0;
}

const mg__lib_report_t *mg__lib_report(mg_library_t lib) {
  mg__lib_state_t *st = mg__ensure(lib);
  return st != NULL ? &st->report : NULL;
}
