/*
 * table.h -- how one X-macro list of a foreign library's symbols becomes (1) the call table the
 * backends call through, (2) the descriptors the loader resolves with dlsym, and (3) in test
 * builds, the fault-injection wrappers that sit in the table in front of the real functions.
 *
 * A symbol list is a macro taking X and expanding, per symbol, to
 *     X(req, form, member, sym, alt, ret, params, args)
 *   req     REQ: the library is unusable without it; OPT: may be missing (a feature says so)
 *   form    how a fault is injected into it: RC (returns a status code: the injected code is
 *           returned), PTR (returns a pointer: NULL is returned), NONE (not injectable: void
 *           results, plain values, strings)
 *   member  the table's field name (ncclAllReduce -> AllReduce)
 *   sym     the exported name, with its ABI suffix where the C header maps one (cuMemAlloc_v2)
 *   alt     an older exported name tried when sym is absent, or NULL
 *   ret, params, args   return type, parenthesised parameter list, parenthesised argument names
 *
 * Release builds: the table holds the dlsym results, nothing else; a call is one indirect call.
 * Test builds (MGCOMM_TESTING): for RC and PTR symbols the table holds a wrapper that asks the
 * fault registry (fault.h) whether this call is to fail, and otherwise calls the real function
 * kept in the library's "real" table. The registry's fast path is one relaxed atomic load.
 */
#ifndef MG_LOADER_TABLE_H
#define MG_LOADER_TABLE_H

#include <stddef.h>

#include "loader/fault.h"

/* Every function pointer is stored as this type and converted back at the call (POSIX
 * guarantees that dlsym's void * and function pointers convert both ways). */
typedef void (*mg__fnptr_t)(void);

typedef struct mg__sym_desc {
  const char *sym;     /* exported name, tried first */
  const char *alt;     /* older exported name, or NULL */
  int required;        /* 1: the library is unusable without it */
  size_t offset;       /* of the member in the library's table struct */
  mg__fnptr_t wrapper; /* test builds: the fault wrapper, or NULL (form NONE); else NULL */
} mg__sym_desc_t;

#define MG__REQ 1
#define MG__OPT 0

/* The table struct: one typed function pointer per symbol. */
#define MG__TABLE_MEMBER(req, form, member, sym, alt, ret, params, args) ret(*member) params;

#ifdef MGCOMM_TESTING
/* Wrappers refer to the table of real pointers, named <tab>_real in the defining file. */
#define MG__WRAP_RC(tab, member, sym, ret, params, args)                        \
  static ret mg__fw_##tab##_##member params {                                   \
    int mg__code_;                                                              \
    if (mg__fault_foreign(sym, &mg__code_)) return (ret)mg__code_;              \
    return tab##_real.member args;                                              \
  }
#define MG__WRAP_PTR(tab, member, sym, ret, params, args)                       \
  static ret mg__fw_##tab##_##member params {                                   \
    int mg__code_;                                                              \
    if (mg__fault_foreign(sym, &mg__code_)) return NULL;                        \
    return tab##_real.member args;                                              \
  }
#define MG__WRAP_NONE(tab, member, sym, ret, params, args)
#define MG__WRAPPER_RC(tab, member) ((mg__fnptr_t)mg__fw_##tab##_##member)
#define MG__WRAPPER_PTR(tab, member) ((mg__fnptr_t)mg__fw_##tab##_##member)
#else
#define MG__WRAP_RC(tab, member, sym, ret, params, args)
#define MG__WRAP_PTR(tab, member, sym, ret, params, args)
#define MG__WRAP_NONE(tab, member, sym, ret, params, args)
#define MG__WRAPPER_RC(tab, member) NULL
#define MG__WRAPPER_PTR(tab, member) NULL
#endif
#define MG__WRAPPER_NONE(tab, member) NULL

/* One descriptor, for the defining file's X adaptor:
 *   #define X(req, form, member, sym, alt, ret, params, args) \
 *     MG__DESC_ONE(mg__nccl, mg__nccl_table_t, req, form, member, sym, alt)
 * and one wrapper: MG__WRAP_##form(mg__nccl, member, sym, ret, params, args). */
#define MG__DESC_ONE(tab, tab_type, req, form, member, sym, alt) \
  {sym, alt, MG__##req, offsetof(tab_type, member), MG__WRAPPER_##form(tab, member)},

#endif
