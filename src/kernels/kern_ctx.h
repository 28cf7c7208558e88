/*
 * kern_ctx.h -- the context's layout, shared by the two files that keep it: kern_ctx.c (its
 * area, the peers' areas, the abort and error words) and kern_reg.c (the buffers registered
 * with it and lent to the ranks of other processes). Nothing else includes it.
 */
#ifndef MG_KERNELS_KERN_CTX_H
#define MG_KERNELS_KERN_CTX_H

#include "base/fdpass.h"
#include "kernels/kernels.h"

/* One registration of this rank (a slot), and every rank's buffer of the same registration as
 * this rank maps it. */
typedef struct mg__kern_reg {
  int used;                /* the slot holds a registration */
  int lendable;            /* every rank mapped this rank's buffer: the launch may lend it */
  uint64_t seq;            /* the registration's number, the same on every rank */
  uint64_t base, bytes;    /* this rank's buffer */
  int fd;                  /* this rank's export, sent to the peers; -1 once closed */
  int32_t peer_slot[MG_KERN_MAX_RANKS];           /* rank r's slot: the table's entry */
  mg__kern_map_t kind[MG_KERN_MAX_RANKS];         /* how rank r's buffer is mapped here */
  mg__CUdeviceptr map[MG_KERN_MAX_RANKS];         /* the mapping (IPC, cuMem), to undo */
  size_t map_bytes[MG_KERN_MAX_RANKS];            /* cuMem: the size mapped */
} mg__kern_reg_t;

struct mg__kern_ctx {
  int rank, nranks;
  int max_blocks;
  double timeout_s;
  size_t half_bytes;
  size_t ll_bytes, ll_slot;         /* the push algorithm's largest message, and its slots */
  size_t stage_off;                 /* where the staging area begins, after the push area */
  mg__kern_module_t mod;
  mg__CUdeviceptr area;             /* this rank's: flags, counters, table, staging */
  int *words;                       /* host-mapped: [0] abort, [1] why a kernel gave up */
  mg__CUdeviceptr words_dev;        /* the same, as the device sees it */
  mg__CUdeviceptr peer[MG_KERN_MAX_RANKS]; /* every rank's area, mapped here */
  int opened[MG_KERN_MAX_RANKS];    /* 1: peer[r] is an IPC mapping (closed by destroy) */
  int connected;
  mg__kern_peer_t rec[MG_KERN_MAX_RANKS]; /* connected: every rank's record */
  mg__fdbox_t box;                  /* where peer processes send their exports (sock -1: none) */
  uint64_t reg_seq;                 /* registrations begun */
  int next_slot;                    /* where the search for a free slot begins (round robin) */
  uint64_t table_seq[MG_KERN_MAX_RANKS][MG_KERN_MAX_REGS]; /* the registration that wrote each
                                                          * entry of the table (0: none) */
  mg__kern_reg_t reg[MG_KERN_MAX_REGS];
  _Atomic unsigned long long lent;  /* launches that lent a registered buffer */
};

/* The process token of mg__kern_peer_t.process for this process. */
uint64_t mg__kern_process(void);

#endif
