/*
 * team.c -- teams: the predefined ones (world, shared, node) and those split here, which this
 * layer records so that a call on a team that was never made, or was destroyed, is refused
 * instead of reaching NVSHMEM, and so that destroying a predefined team is an error (NVSHMEM
 * and the seeds let it pass silently).
 */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "shmem/shmem.h"

static int mg__team_predefined(mg_shmem_team_t t) {
  return t == MG_SHMEM_TEAM_WORLD || t == MG_SHMEM_TEAM_SHARED || t == MG_SHMEM_TEAM_NODE;
}

static int mg__team_index(mg_shmem_team_t t) {
  for (int i = 0; i < mg__shmem.nteams; i++)
    if (mg__shmem.teams[i] == t) return i;
  return -1;
}

mg_status_t mg__shmem_check_team(mg_shmem_team_t team, const char *fn, const char *arg) {
  if (mg__team_predefined(team) || mg__team_index(team) >= 0) return MG_OK;
  if (team == MG_SHMEM_TEAM_NONE)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is MG_SHMEM_TEAM_NONE: this PE is in no "
                     "such team", fn, arg);
  return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s (%d) is not a live team: neither world, "
                   "shared nor node, nor a team split and not yet destroyed", fn, arg, (int)team);
}

mg_status_t mg_shmem_team_split_strided(mg_shmem_team_t parent, int start, int stride,
                                        int size, mg_shmem_team_t *team) {
  const char *fn = "mg_shmem_team_split_strided";
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t st = mg__shmem_check_team(parent, fn, "parent");
  /* NVSHMEM 3.4.5 prints "not supported with limited MPG" and exits the process here. */
  if (st == MG_OK && mg__shmem.limited_mpg)
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: NVSHMEM runs in its limited MPG mode (several PEs "
                   "share a GPU without MPS), where it cannot split teams (it would exit the "
                   "process); give each PE a GPU of its own, or run the PEs under MPS", fn);
  int psize = 0;
  if (st == MG_OK) psize = mg__nvshmem.team_n_pes(parent);
  if (st != MG_OK) {
  } else if (team == NULL) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: team is NULL", fn);
  } else if (start < 0 || start >= psize) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: start %d is out of the parent's range 0..%d",
                   fn, start, psize - 1);
  } else if (stride < 1 || size < 1) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: stride %d and size %d must both be >= 1", fn,
                   stride, size);
  } else if ((long long)start + (long long)(size - 1) * stride >= psize) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: the last member, %d + %d x %d = %lld, is past "
                   "the parent's %d PEs", fn, start, size - 1, stride,
                   (long long)start + (long long)(size - 1) * stride, psize);
  } else if (mg__shmem.nteams == mg__shmem.cap_teams) {
    int cap = mg__shmem.cap_teams ? 2 * mg__shmem.cap_teams : 8;
    mg__nvshmem_team_t *n = realloc(mg__shmem.teams, sizeof *n * (size_t)cap);
    if (n == NULL) st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    else {
      mg__shmem.teams = n;
      mg__shmem.cap_teams = cap;
    }
  }
  if (st == MG_OK) {
    mg__nvshmem_team_t t = MG__NVSHMEM_TEAM_INVALID;
    mg__CUcontext saved = NULL;
    st = mg__shmem_ctx_enter(&saved);
    if (st == MG_OK) {
      int rc = mg__nvshmem.team_split_strided(parent, start, stride, size, NULL, 0, &t);
      mg__shmem_ctx_leave(saved);
      if (rc != 0)
        st = mg__error(MG_ERR_BACKEND, "%s: nvshmem_team_split_strided failed: NVSHMEM returned "
                       "%d (out of team slots? NVSHMEM_MAX_TEAMS)", fn, rc);
    }
    if (st == MG_OK) {
      if (t != MG__NVSHMEM_TEAM_INVALID) mg__shmem.teams[mg__shmem.nteams++] = t;
      *team = t; /* MG_SHMEM_TEAM_NONE when this PE is not a member */
    }
  }
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_team_my_pe(mg_shmem_team_t team, int *pe) {
  const char *fn = "mg_shmem_team_my_pe";
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t st = mg__shmem_check_team(team, fn, "team");
  if (st == MG_OK && pe == NULL) st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: pe is NULL", fn);
  if (st == MG_OK) *pe = mg__nvshmem.team_my_pe(team);
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_team_n_pes(mg_shmem_team_t team, int *n) {
  const char *fn = "mg_shmem_team_n_pes";
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t st = mg__shmem_check_team(team, fn, "team");
  if (st == MG_OK && n == NULL) st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: n is NULL", fn);
  if (st == MG_OK) *n = mg__nvshmem.team_n_pes(team);
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_team_translate_pe(mg_shmem_team_t src, int src_pe, mg_shmem_team_t dest,
                                       int *dest_pe) {
  const char *fn = "mg_shmem_team_translate_pe";
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t st = mg__shmem_check_team(src, fn, "src");
  if (st == MG_OK) st = mg__shmem_check_team(dest, fn, "dest");
  if (st == MG_OK && dest_pe == NULL)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: dest_pe is NULL", fn);
  if (st == MG_OK) {
    int n = mg__nvshmem.team_n_pes(src);
    if (src_pe < 0 || src_pe >= n)
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: src_pe %d is out of the source team's range "
                     "0..%d", fn, src_pe, n - 1);
  }
  if (st == MG_OK) *dest_pe = mg__nvshmem.team_translate_pe(src, src_pe, dest);
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_team_destroy(mg_shmem_team_t team) {
  const char *fn = "mg_shmem_team_destroy";
  if (team == MG_SHMEM_TEAM_NONE) return MG_OK; /* destroy accepts "no team" */
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t st = MG_OK;
  int i = mg__team_index(team);
  if (mg__team_predefined(team))
    st = mg__error(MG_ERR_INVALID_USAGE, "%s: team %d is a predefined team (%s): it lives until "
                   "mg_shmem_finalize and cannot be destroyed", fn, (int)team,
                   team == MG_SHMEM_TEAM_WORLD ? "world" : team == MG_SHMEM_TEAM_SHARED ? "shared"
                                                                                      : "node");
  else if (i < 0)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: team %d is not a live team (never split, or "
                   "destroyed already)", fn, (int)team);
  mg__CUcontext saved = NULL;
  if (st == MG_OK) st = mg__shmem_ctx_enter(&saved);
  if (st == MG_OK) {
    mg__nvshmem.team_destroy(team);
    mg__shmem_ctx_leave(saved);
    mg__shmem.teams[i] = mg__shmem.teams[--mg__shmem.nteams];
  }
  mg__shmem_leave();
  return st;
}
