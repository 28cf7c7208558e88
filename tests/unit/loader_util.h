/*
 * loader_util.h -- helpers of the loader tests: temporary folders, links, and lookups in a
 * library's record of candidates.
 */
#ifndef MG_TEST_LOADER_UTIL_H
#define MG_TEST_LOADER_UTIL_H

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/loader.h"
#include "test.h"

/* A fresh folder under TMPDIR (or /tmp); the test's process owns it. */
static inline void lt_tempdir(char *out, size_t len) {
  const char *base = getenv("TMPDIR");
  snprintf(out, len, "%s/mgcomm-loader-XXXXXX", base != NULL && base[0] ? base : "/tmp");
  if (mkdtemp(out) == NULL) FAIL("mkdtemp(%s) failed", out);
}

/* mkdir -p */
static inline void lt_mkdirs(const char *path) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0700) != 0 && access(buf, F_OK) != 0) FAIL("mkdir %s failed", buf);
    *p = '/';
  }
  if (mkdir(buf, 0700) != 0 && access(buf, F_OK) != 0) FAIL("mkdir %s failed", buf);
}

static inline void lt_symlink(const char *target, const char *link) {
  if (symlink(target, link) != 0) FAIL("symlink %s -> %s failed", link, target);
}

static inline int lt_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* rm -r path (links are removed, not followed). A library loaded from there stays mapped. */
static inline void lt_rmtree(const char *path) {
  if (nftw(path, lt_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) FAIL("cannot remove %s", path);
}

static inline int lt_exists(const char *path) { return path != NULL && access(path, F_OK) == 0; }

/* The index of the attempt of lib whose path is path, or -1. */
static inline int lt_attempt_index(mg_library_t lib, const char *path) {
  const mg__lib_report_t *r = mg__lib_report(lib);
  for (int i = 0; i < r->nattempts; i++)
    if (strcmp(r->attempts[i].path, path) == 0) return i;
  return -1;
}

/* Prints lib's record: what a failing assertion needs next to it. */
static inline void lt_dump(mg_library_t lib) {
  const mg__lib_report_t *r = mg__lib_report(lib);
  printf("%s (%s): loaded=%d path=%s version=%d '%s'\n", r->label, r->name, r->loaded,
         r->path ? r->path : "(null)", r->version, r->version_string);
  for (int i = 0; i < r->nattempts; i++)
    printf("  %d. %s -> %s\n", i + 1, r->attempts[i].path, r->attempts[i].outcome);
  if (r->error[0]) printf("  error: %s\n", r->error);
  fflush(stdout);
}

#endif
