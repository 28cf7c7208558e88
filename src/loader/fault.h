/*
 * fault.h -- the fault-injection registry of test builds (MGCOMM_TESTING): make the Nth call of
 * a named function fail with a chosen code, under the real code paths (SQLite's aSyscall[]).
 *
 * Two kinds of points share one registry:
 *  - foreign functions: every RC or PTR symbol of the loader's tables (table.h). The name is the
 *    exported symbol ("ncclGetUniqueId", "cuMemAlloc_v2"); a CUDA symbol with an ABI suffix
 *    also answers to its API name ("cuMemAlloc"). A fired RC symbol returns the code without
 *    calling the library; a fired PTR symbol (nvshmem_malloc) returns NULL.
 *  - internal points, named "<area>.<what>" ("host.corrupt"): code that wants one calls
 *    MG_FAULT_POINT("host.corrupt"), which is 0 normally and the rule's code when a rule
 *    fires; the code decides what the number means. In release builds MG_FAULT_POINT is the
 *    constant 0: no internal point can fire there.
 *
 * A rule is name:nth:code[:count]: calls are counted per rule from the moment it is set; calls
 * nth .. nth+count-1 fire (count 1 when omitted; count 0 = every call from nth on). A name that
 * ends in '*' matches every name with that prefix ("nccl*", "host.*"). nth >= 1; code != 0
 * (a decimal, 0x hex or negative number). Rules come from MGCOMM_FAULT (comma-separated, read
 * once, on the first library load or the first call below; a malformed rule is a warning and
 * is ignored) and from mg__fault_set. Every fire is logged at INFO (subsystem LOAD).
 *
 * Example: MGCOMM_FAULT=ncclGetVersion:1:3 makes the loader's first ncclGetVersion call return
 * ncclInternalError, so NCCL is reported as unusable; MGCOMM_FAULT=cuMemAlloc:2:2:0 makes every
 * device allocation after the first fail with CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Thread-safe. Cost when no rule is set: one relaxed atomic load per wrapped call.
 */
#ifndef MG_LOADER_FAULT_H
#define MG_LOADER_FAULT_H

#ifdef MGCOMM_TESTING
#include <stdatomic.h>

#include "mgcomm.h"

#define MG__FAULT_MAX_RULES 16
#define MG__FAULT_NAME_LEN 64

/* Adds a rule. MG_ERR_INVALID_ARGUMENT for a NULL, empty or too long name, nth < 1, code 0 or
 * count < 0; MG_ERR_INVALID_USAGE when MG__FAULT_MAX_RULES rules are set. */
mg_status_t mg__fault_set(const char *name, int nth, int code, int count);
/* Removes the rules whose name is name (as given to mg__fault_set); NULL removes every rule. */
void mg__fault_clear(const char *name);
/* How many calls the current rules named name have failed so far. */
int mg__fault_fired(const char *name);
/* Internal point: the code of the rule that fires for this call, or 0. */
int mg__fault_point(const char *name);
/* Reads MGCOMM_FAULT, once per process (the loader calls it before resolving symbols). */
void mg__fault_init(void);

/* Slow path of mg__fault_foreign; 1 and *code when a rule fires for this call of sym. */
int mg__fault_match(const char *sym, int *code);
extern atomic_int mg__fault_nrules;

static inline int mg__fault_foreign(const char *sym, int *code) {
  if (atomic_load_explicit(&mg__fault_nrules, memory_order_relaxed) == 0) return 0;
  return mg__fault_match(sym, code);
}

#define MG_FAULT_POINT(name) mg__fault_point(name)
#else
#define MG_FAULT_POINT(name) 0
#endif

#endif
