/*
 * kern_abi.h -- what the all-reduce kernels (allreduce.cu, compiled by nvcc) and their host side
 * (C) share: the launch argument, passed by value, and the layout of each rank's peer-visible
 * allocation. Plain C, no CUDA header: both compilers read it.
 */
#ifndef MG_KERNELS_KERN_ABI_H
#define MG_KERNELS_KERN_ABI_H

#include <stddef.h>
#include <stdint.h>

#define MG_KERN_MAX_RANKS 8    /* ranks of a communicator the kernels serve */
#define MG_KERN_MAX_BLOCKS 64  /* blocks of one launch */
#define MG_KERN_THREADS 512    /* threads of a block */

/* The ops, in the kernels' names: mg_ar_<algo>_<dtype>_{sum,avg,max,min}. */
enum { MG_KERN_OP_SUM = 0, MG_KERN_OP_AVG = 1, MG_KERN_OP_MAX = 2, MG_KERN_OP_MIN = 3 };

/* The error word's values: why a kernel gave up (0: it did not). */
enum { MG_KERN_GAVE_UP_TIMEOUT = 1, MG_KERN_GAVE_UP_ABORT = 2 };

/* Each rank's allocation: the flags (2 barriers x MAX_BLOCKS x MAX_RANKS words: slot
 * [phase][block][rank] holds the epoch of the call at which that rank's block arrived), the
 * counters (only the owner touches them: the epoch of its last call, and how many blocks of the
 * running call have finished), then the staging area at MG_KERN_STAGE_OFF: two halves of
 * half_bytes each. */
#define MG_KERN_FLAG_WORDS (2 * MG_KERN_MAX_BLOCKS * MG_KERN_MAX_RANKS)
#define MG_KERN_COUNTER_OFF (MG_KERN_FLAG_WORDS * 4)
#define MG_KERN_STAGE_OFF 8192
enum { MG_KERN_EPOCH = 0, MG_KERN_FINISHED = 1 }; /* the counters' words */

typedef struct mg_kern_args {
  const void *send;          /* this rank's input */
  void *recv;                /* this rank's output (may be send) */
  void *stage[MG_KERN_MAX_RANKS];     /* every rank's staging area, as this rank maps it */
  unsigned *flags[MG_KERN_MAX_RANKS]; /* every rank's flags, as this rank maps them */
  unsigned *counter;         /* this rank's counters (MG_KERN_EPOCH, MG_KERN_FINISHED) */
  const int *abort;          /* host-mapped: nonzero makes a waiting block give up */
  int *error;                /* host-mapped: why a block gave up (MG_KERN_GAVE_UP_*) */
  size_t count;              /* elements */
  size_t half_bytes;         /* bytes of one staging half */
  unsigned long long timeout_ns; /* how long one wait may last */
  int rank, nranks;
} mg_kern_args_t;

#endif
