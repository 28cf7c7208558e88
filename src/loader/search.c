/*
 * search.c -- the candidate paths of one library, in the search order documented in loader.h.
 * Pure path arithmetic and glob(3): nothing is opened here and no process is spawned.
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_int.h"

#if defined(__x86_64__)
#define MG__CUDA_TARGET "x86_64-linux"
#elif defined(__aarch64__)
#define MG__CUDA_TARGET "sbsa-linux"
#else
#define MG__CUDA_TARGET NULL
#endif

typedef struct {
  mg__candidate_t *out;
  char *real[MG__LOADER_MAX_CANDIDATES]; /* realpath of each existing candidate, else NULL */
  int n, max;
} mg__cand_list_t;

/* Adds a candidate unless it names a file already listed: the same string, or (for files that
 * exist) the same file through another folder or link (/usr/local/cuda/lib64 -> lib). */
static void mg__cand_add(mg__cand_list_t *l, const char *path, const char *outcome) {
  if (l->n >= l->max) return;
  char *real = strchr(path, '/') != NULL ? realpath(path, NULL) : NULL;
  for (int i = 0; i < l->n; i++) {
    if (strcmp(l->out[i].path, path) == 0 ||
        (real != NULL && l->real[i] != NULL && strcmp(l->real[i], real) == 0)) {
      free(real);
      return;
    }
  }
  char *p = strdup(path);
  char *o = outcome != NULL ? strdup(outcome) : NULL;
  if (p == NULL || (outcome != NULL && o == NULL)) {
    free(p); /* out of memory: the candidate is dropped, the search goes on with fewer */
    free(o);
    free(real);
    return;
  }
  l->out[l->n].path = p;
  l->out[l->n].outcome = o;
  l->real[l->n] = real;
  l->n++;
}

static void mg__cand_dir(mg__cand_list_t *l, const char *dir, const char *sub, const char *soname) {
  char path[4096];
  int k = snprintf(path, sizeof path, "%s%s%s/%s", dir, sub[0] ? "/" : "", sub, soname);
  if (k > 0 && (size_t)k < sizeof path) mg__cand_add(l, path, NULL);
}

static void mg__cand_home(mg__cand_list_t *l, const char *var, const char *soname) {
  const char *home = var != NULL ? getenv(var) : NULL;
  if (home == NULL || home[0] == '\0') return;
  mg__cand_dir(l, home, "lib", soname);
  mg__cand_dir(l, home, "lib64", soname);
}

/* Every file matching root + "/nvidia/" + dirs + "/lib/" + soname; a pattern that matches
 * nothing is recorded once, with that outcome. root NULL (its variable unset) is skipped. */
static void mg__cand_wheels(mg__cand_list_t *l, const char *root, const char *tail,
                            const char *dirs, const char *soname) {
  if (root == NULL || root[0] == '\0') return;
  /* The root comes from the environment: its glob characters are literal. */
  char pattern[4096];
  size_t k = 0;
  for (const char *c = root; *c && k + 2 < sizeof pattern; c++) {
    if (strchr("*?[]{}\\", *c) != NULL) pattern[k++] = '\\';
    pattern[k++] = *c;
  }
  pattern[k] = '\0';
  int m = snprintf(pattern + k, sizeof pattern - k, "%s/nvidia/%s/lib/%s", tail, dirs, soname);
  if (m <= 0 || (size_t)m >= sizeof pattern - k) return;
  glob_t g;
  memset(&g, 0, sizeof g);
  int rc = glob(pattern, GLOB_BRACE, NULL, &g);
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) mg__cand_add(l, g.gl_pathv[i], NULL);
  } else {
    mg__cand_add(l, pattern,
                 rc == GLOB_NOMATCH ? "no file matches this pattern" : "glob(3) failed on this pattern");
  }
  globfree(&g);
}

int mg__lib_candidates(const mg__lib_desc_t *d, mg__candidate_t *out, int max, int *is_explicit) {
  mg__cand_list_t l;
  memset(&l, 0, sizeof l);
  l.out = out;
  l.max = max < MG__LOADER_MAX_CANDIDATES ? max : MG__LOADER_MAX_CANDIDATES;
  const char *explicit_path = mg__param_str(d->param);
  *is_explicit = explicit_path[0] != '\0';
  if (*is_explicit) {
    mg__cand_add(&l, explicit_path, NULL);
    goto done;
  }
  /* 2. <LIB>_HOME, then CUDA_HOME. */
  mg__cand_home(&l, d->home_var, d->soname);
  mg__cand_home(&l, "CUDA_HOME", d->soname);
  /* 3. The dynamic linker's own search. */
  mg__cand_add(&l, d->soname, NULL);
  /* 4. The CUDA toolkit. */
  mg__cand_dir(&l, "/usr/local/cuda", "lib64", d->soname);
  mg__cand_dir(&l, "/usr/local/cuda", "lib", d->soname);
  if (MG__CUDA_TARGET != NULL)
    mg__cand_dir(&l, "/usr/local/cuda/targets/" MG__CUDA_TARGET, "lib", d->soname);
  /* 5. Python wheels. */
  if (d->wheel_dirs != NULL) {
    const char *w = d->wheel_dirs;
    mg__cand_wheels(&l, getenv("VIRTUAL_ENV"), "/lib/python3*/site-packages", w, d->soname);
    mg__cand_wheels(&l, getenv("CONDA_PREFIX"), "/lib/python3*/site-packages", w, d->soname);
    mg__cand_wheels(&l, "/opt", "/*/.venv/lib/python3*/site-packages", w, d->soname);
    mg__cand_wheels(&l, "/usr/local", "/lib/python3*/{site,dist}-packages", w, d->soname);
    mg__cand_wheels(&l, "/usr", "/lib/python3/dist-packages", w, d->soname);
    mg__cand_wheels(&l, getenv("HOME"), "/.local/lib/python3*/site-packages", w, d->soname);
  }
done:
  for (int i = 0; i < l.n; i++) free(l.real[i]);
  return l.n;
}
