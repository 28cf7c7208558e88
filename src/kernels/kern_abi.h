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
#define MG_KERN_MAX_BLOCKS 128 /* blocks of one launch (H100 and H200 have 132 SMs) */
#define MG_KERN_THREADS 512    /* threads of a block */

/* The ops, in the kernels' names: mg_ar_<algo>_<dtype>_{sum,avg,max,min}. */
enum { MG_KERN_OP_SUM = 0, MG_KERN_OP_AVG = 1, MG_KERN_OP_MAX = 2, MG_KERN_OP_MIN = 3 };

/* The error word's values: why a kernel gave up (0: it did not). UNMAPPED: a peer lent a
 * registered buffer that this rank no longer maps (it deregistered it alone). */
enum { MG_KERN_GAVE_UP_TIMEOUT = 1, MG_KERN_GAVE_UP_ABORT = 2, MG_KERN_GAVE_UP_UNMAPPED = 3 };

/* Each rank's allocation, in this order:
 *   flags at 0: MG_KERN_PHASES barriers x MAX_BLOCKS x MAX_RANKS words: slot
 *     [phase][block][rank] holds the epoch of the call at which that rank's block arrived
 *     (phase 0: inputs ready; 1: two-shot's reduced segments ready; 2: done reading the peers'
 *     buffers, which only a rank whose own buffers were read in place waits for);
 *   counters at MG_KERN_COUNTER_OFF (only the owner touches them): the epoch of its last call,
 *     and how many blocks of the running call have finished;
 *   published pointers at MG_KERN_PTR_OFF: [parity][in, out], where the call's buffers are when
 *     this rank lends them in place (0: read my staging half instead): a 64-bit address, or a
 *     registered buffer's slot and offset (MG_KERN_PUB_REG), which each reader translates through
 *     its own table;
 *   the registration table at MG_KERN_REG_OFF (only the owner reads it): [rank][slot], the
 *     address at which this rank maps that rank's registered buffer of that slot;
 *   the push ("LL") area at MG_KERN_LL_OFF: [parity][sender rank] slots of ll_slot bytes, 16-byte
 *     lines of {data, epoch, data, epoch} that the senders store into;
 *   the staging area after it: two halves of half_bytes each. */
#define MG_KERN_PHASES 3
#define MG_KERN_FLAG_WORDS (MG_KERN_PHASES * MG_KERN_MAX_BLOCKS * MG_KERN_MAX_RANKS)
#define MG_KERN_COUNTER_OFF (MG_KERN_FLAG_WORDS * 4)
#define MG_KERN_PTR_OFF (MG_KERN_COUNTER_OFF + 64)
#define MG_KERN_LL_OFF 16384
#define MG_KERN_MAX_REGS 32 /* registered buffers of a rank that it may lend to other processes */
#define MG_KERN_REG_OFF (MG_KERN_LL_OFF - MG_KERN_MAX_RANKS * MG_KERN_MAX_REGS * 8)
/* A published value with this bit set is a registered buffer: slot in bits 56-62, the offset
 * into the registered buffer below. */
#define MG_KERN_PUB_REG (1ULL << 63)
#define MG_KERN_PUB_SLOT_SHIFT 56
#define MG_KERN_PUB_OFFSET_MASK ((1ULL << MG_KERN_PUB_SLOT_SHIFT) - 1)
enum { MG_KERN_EPOCH = 0, MG_KERN_FINISHED = 1 }; /* the counters' words */

typedef struct mg_kern_args {
  const void *send;          /* this rank's input */
  void *recv;                /* this rank's output (may be send) */
  void *stage[MG_KERN_MAX_RANKS];     /* every rank's staging area, as this rank maps it */
  unsigned *flags[MG_KERN_MAX_RANKS]; /* every rank's area (flags first), as this rank maps it */
  unsigned *counter;         /* this rank's counters (MG_KERN_EPOCH, MG_KERN_FINISHED) */
  const int *abort;          /* host-mapped: nonzero makes a waiting block give up */
  int *error;                /* host-mapped: why a block gave up (MG_KERN_GAVE_UP_*) */
  size_t count;              /* elements */
  size_t half_bytes;         /* bytes of one staging half */
  size_t ll_slot;            /* bytes of one push slot (twice the largest push message) */
  unsigned long long timeout_ns; /* how long one wait may last */
  int rank, nranks;
  int exchange;              /* alike on every rank: 1 when ranks may lend their buffers in this
                              * call, so that each publishes where they are and reads where the
                              * others' are (a round trip); 0 when none does */
  int direct;                /* pull algorithms: the peers read send and recv in place (buffers
                              * they can reach; needs exchange); 0: through the staging half */
  unsigned long long pub[2]; /* direct: what this rank publishes for send and recv (addresses,
                              * or registered slots and offsets: MG_KERN_PUB_REG) */
} mg_kern_args_t;

#endif
