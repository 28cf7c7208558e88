/*
 * host_shm.h -- the host backend's shared-memory segment: one per communicator, mapped by every
 * rank (threads and processes alike), with a control area (one cache-line block per rank, the
 * send/recv channel cursors) and the data area (two staging slots per rank, the channel rings).
 *
 * Layout, offsets from the start of the mapping (all 4096-aligned):
 *   header | rank blocks [nranks] | channel cursors [nranks * nranks] |
 *   all_to_allv counts [2][nranks] | slots [nranks][2] | channel rings [nranks * nranks]
 *
 * The segment is a memfd that no name in /dev/shm ever refers to: the first rank to arrive makes
 * it, and the others receive its descriptor at a socket that lives only until every rank has
 * attached (host_meet.c), so a job that ends in any way, at any point, leaves nothing behind.
 * Every rank maps it separately.
 */
#ifndef MG_BACKEND_HOST_SHM_H
#define MG_BACKEND_HOST_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/backend.h"
#include "mgcomm.h"

#define MG__HSHM_MAGIC 0x6d67686f73747631ull /* "mghostv1" */
#define MG__HSHM_VERSION 27u
#define MG__HSHM_NAME_MAX 64

enum { /* mg__hshm_rank_t.state */
  MG__HRANK_ABSENT = 0,
  MG__HRANK_ATTACHED = 1,
  MG__HRANK_ATTACHING = 4, /* claimed, pid not yet published */
  MG__HRANK_LEFT = 2,   /* destroyed its communicator, finalized or not (h_abort) */
  MG__HRANK_FAILED = 3  /* aborted, or its communicator broke (timeout, peer failure) */
};

typedef struct mg__hshm_header {
  _Atomic uint64_t magic;   /* MG__HSHM_MAGIC, stored last by the creator */
  uint32_t version;
  int32_t nranks;
  uint64_t slot_bytes;      /* bytes of one staging slot */
  uint64_t small_bytes;     /* all_reduce/reduce up to this size use the one-step algorithm */
  uint64_t direct_bytes;    /* data collectives from this size per rank copy once, directly, */
  uint64_t direct_threads_bytes; /* or from this size when the ranks are threads of one process */
  /* ... unless ranks in different processes would read this many in a collective of that kind
   * (mg__opkind_t; 0: no bound) */
  uint64_t readv_max_bytes[MG_OPK_COUNT];
  /* ... and a broadcast or scatter of two ranks in two processes, from this many bytes read,
   * goes through the slots when its root's call is in place (host_coll.c, mg__root_stages; 0:
   * never) */
  uint64_t root_stages_bytes;
  uint64_t lend_bytes;      /* between processes, messages of this size are read by the receiver */
  uint64_t chan_bytes;      /* bytes of one send/recv ring */
  uint64_t seg_bytes;       /* size of the whole segment */
  _Atomic uint32_t attached; /* ranks that have attached */
  _Atomic uint32_t wake;    /* futex word: bumped after every publication */
  _Atomic uint32_t sleepers; /* threads sleeping on wake */
  uint32_t paced;           /* the ranks time their stores into the slots, and while slow the
                               collectives that could read directly do (host_pace.c) */
  /* The outcome of the communicator's collectives (mg__hdec_*), in a line of its own: written
   * once per collective, read by every rank. */
  _Alignas(64) _Atomic uint64_t decision;
} mg__hshm_header_t;

/* A collective as a rank announces it before its first step (matching and the flight recorder),
 * in a cache line of its own: a peer reads it in one miss. */
typedef struct mg__hshm_desc {
  _Alignas(64) _Atomic uint64_t seq1; /* sequence number + 1; stored last */
  _Atomic uint64_t count; /* all_to_allv: the rank's largest per-peer send count */
  _Atomic uint64_t scalar; /* PreMulSum: the bytes of this rank's scalar (its dtype), which
                              multiplies this rank's input on every rank */
  _Atomic int32_t kind;
  _Atomic int32_t dtype;
  _Atomic int32_t root;
  _Atomic int32_t redop;  /* built-in op, or -1 for a custom one */
  _Atomic uint64_t lent;  /* all_to_allv: the send buffer from which the others copy their
                             pieces (host_coll.c, mg__a2av_lends), 0 if staged */
  _Atomic int32_t staged; /* a broadcast or scatter that could go direct: 1 when its root
                             stages it instead (host_coll.c, mg__root_stages) */
  _Atomic int32_t slow;   /* the rank's stores into its slot are slow (host_pace.c) */
} mg__hshm_desc_t;
_Static_assert(sizeof(mg__hshm_desc_t) == 64, "an announcement is a cache line");

/* The data of a small collective (MG__MAIL_BYTES at most per rank), its step and a key of the
 * collective, in MG__MAIL_LINES cache lines. The first holds the step, the key and the first 48
 * bytes: a reader of up to 48 bytes takes one cache miss per peer, and a reader of more takes
 * the lines after it together, once it saw the step. 65 lines carry 4 KiB: at 2 KiB the mails
 * beat the staged one-step path by 0.08-0.30 of Open MPI's time for all_reduce, reduce and
 * gather (2 ranks on a 16-CPU Xeon; bench/results/2026-11-25-host-mail-4k.md), for 7 KiB more of
 * segment per rank than with 9 lines (560 bytes). */
#define MG__MAIL_LINES 65
#define MG__MAIL_BYTES (64 * MG__MAIL_LINES - 16)
#define MG__MAIL_LINE0_BYTES 48 /* of them in the first line */
typedef struct mg__hshm_mail {
  _Atomic uint64_t step1; /* step + 1 whose data this mail holds, set last (compare-and-swap);
                             or a poison (mg__hmail_poison), which its rank cannot replace */
  _Atomic uint64_t key;   /* hash of the collective's sequence number and shape */
  unsigned char data[MG__MAIL_BYTES];
} mg__hshm_mail_t;
_Static_assert(sizeof(mg__hshm_mail_t) == 64 * MG__MAIL_LINES, "a mail is whole cache lines");

/* One rank's published state: progress counters, the collectives it is in and the last one it
 * enqueued. Written only by its rank; read by all. Whole cache lines, so two ranks never share
 * one. */
typedef struct mg__hshm_rank {
  _Atomic uint64_t posted;   /* steps whose input this rank has placed in its slot */
  _Atomic uint64_t reduced;  /* steps whose slice this rank has reduced (two-phase steps) */
  _Atomic uint64_t released; /* steps whose reads this rank has finished */
  _Atomic int32_t state;     /* MG__HRANK_* */
  _Atomic int32_t pid;       /* process of the rank */
  uint64_t starttime;        /* the process's start time (/proc), to tell a reused pid */
  _Atomic uint64_t done_seq; /* sequence number + 1 of the last collective completed */
  _Atomic int32_t cause;     /* MG__HRANK_FAILED: the rank whose failure caused it (itself if it
                                timed out or aborted), so that survivors name the first culprit */
  _Atomic int32_t exited;    /* 1: its process called exit() with the communicator still there
                                (stored before a state of LEFT): told from a death by a signal */
  /* The collective whose first step is s goes in desc[s & 1]: when a rank checks the
   * collective it starts at step s, a peer may already have announced the next one (at step
   * s + 1, after a one-step collective), but never the one after. */
  mg__hshm_desc_t desc[2];
  /* The last collective the rank enqueued (numbered: it may still be queued on a host stream),
   * for the flight recorder and timeout messages. seq1 is stored last, and read first and again
   * last by readers, who retry when it changed in between. */
  mg__hshm_desc_t enq;
  /* Small collectives: the mail of step s is mail[s & 1] (reused, like the slots, only once
   * every rank has finished step s - 2). */
  mg__hshm_mail_t mail[2];
  /* Direct copies: the rank's buffer that peers read in the current direct step, and its
   * receive buffer, which the peers of a direct reduce write on the root (both published before
   * its posted counter); the address of a word in its process that peers read once at init to
   * learn whether they can reach its memory; and its verdict about reaching theirs. */
  _Atomic uint64_t daddr;
  _Atomic uint64_t raddr;
  _Atomic uint64_t probe_addr;
  _Atomic int32_t direct_ok; /* 0: not probed yet, 1: reads every peer, 2: cannot */
  _Atomic int32_t cpu;       /* 1 + the CPU the rank last began to wait on (host_coll.c); 0: none */
  _Atomic uint64_t reading;  /* 1 + the direct step in which this rank reads its peers' buffers
                                (a direct reduce: or writes the root's) now (stored before it
                                looks at the decision); 0 when it does not */
  char pad2_[64 - 40];
} mg__hshm_rank_t;
_Static_assert(sizeof(mg__hshm_rank_t) == 64 * (5 + 2 * MG__MAIL_LINES),
               "rank block is whole cache lines");

/* The messages from rank s to rank d. Each goes through the ring (bytes written / read since the
 * start), behind a header that gives its number and size (mg__hring_hdr_t), or is described in
 * the box: a message of up to MG__HSHM_BOX_BYTES is copied into it, and a lent one (host_coll.c,
 * "lent messages", which d copies straight from s's buffer) leaves its address and size there. The box begins in the line of the head and the pair's outcome,
 * which the receiver polls anyway, so that such a message (up to 32 bytes of it) crosses between
 * the CPUs in one transfer rather than a cursor's and then the ring's (host_coll.c, "the box").
 * A box holds one message at a time: d takes it out (or copies the lent message) and stores
 * box_done. */
#define MG__HSHM_BOX_BYTES 160
/* The header of a message through the ring, written with its first bytes: the receiver checks
 * the size against its own (a stream of bytes could not tell a short message from the start of
 * the next) and the number against the message it expects. */
typedef struct mg__hring_hdr {
  uint64_t id;    /* sequence number + 1 */
  uint64_t bytes; /* the message's size */
} mg__hring_hdr_t;
typedef struct mg__hshm_chan {
  _Atomic uint64_t head;     /* written by s */
  _Atomic uint64_t decision; /* settled by s or d, once per message */
  _Atomic uint64_t box_word; /* written by s: the message in the box (mg__hbox_word), 0: none */
  _Atomic uint64_t box_done; /* written by d: mg__hbox_id of the last message it took out */
  unsigned char box[MG__HSHM_BOX_BYTES]; /* its bytes, or a lent one's address and size */
  _Atomic uint64_t tail; /* written by d */
  char pad1_[56];
  /* s's own view, which no other rank reads: its head, and the tail it last loaded (at least
   * ring size - (sent - tail_seen) bytes are free), so that a send reads d's line only when
   * the ring seems full, and its own line 0 only after it took that line to settle. */
  uint64_t sent;
  uint64_t tail_seen;
  char pad2_[48];
} mg__hshm_chan_t;
_Static_assert(sizeof(mg__hshm_chan_t) == 5 * 64, "a channel is five cache lines");

/* The box word of the message of sequence number seq: its size, or MG__HBOX_LENT when the box
 * holds a lent message's address and size (two uint64_t); and the word's parts. */
#define MG__HBOX_LENT 0xffu
_Static_assert(MG__HSHM_BOX_BYTES < MG__HBOX_LENT, "a boxed size is told from a lent message");
static inline uint64_t mg__hbox_word(uint64_t seq, size_t bytes) {
  return ((seq + 1) << 8) | (uint64_t)bytes;
}
static inline uint64_t mg__hbox_id(uint64_t word) { return word >> 8; }
static inline size_t mg__hbox_bytes(uint64_t word) { return (size_t)(word & 0xff); }
/* 1 when d has taken the box's last message out: s may describe another there. */
static inline int mg__hbox_free(const struct mg__hshm_chan *ch) {
  return mg__hbox_id(atomic_load_explicit(&ch->box_word, memory_order_relaxed)) ==
         atomic_load_explicit(&ch->box_done, memory_order_acquire);
}

/* One rank's mapping of a segment. */
typedef struct mg__hshm {
  char name[MG__HSHM_NAME_MAX]; /* "/mgcomm-<hex>": the meeting socket's name, in messages */
  unsigned char *base;          /* the mapping */
  size_t len;
  mg__hshm_header_t *hdr;
  mg__hshm_rank_t *ranks;
  mg__hshm_chan_t *chans;
  _Atomic uint64_t *vcounts;    /* all_to_allv counts: [2][nranks][3 * nranks] */
  unsigned char *slots;
  unsigned char *rings;
  int nranks;
  int me;
  int fd;                       /* the segment's memfd, until every rank attached; -1 after */
  int lfd;                      /* the meeting socket (host_meet.c), as long as fd; -1 after */
  int efd;                      /* epoll at lfd while this rank waits there; -1 when none */
  int ready;                    /* its init returned: at exit, the rank leaves (MG__HRANK_LEFT) */
  int direct;                   /* every rank can read every other rank's memory (at init) */
  int processes;                /* the ranks are in more than one process (at init): a direct
                                 * copy from a peer may be a process_vm_readv */
  int paced;                    /* the ranks are processes and the creator marked the segment
                                 * paced: they follow the slot stores' state (host_pace.c) */
  int probed;                   /* this rank has published its verdict */
  int look;                     /* init: the first peer whose process the next look reads */
  uint64_t sleeps;              /* times this rank slept on the wake word (mg__hshm_sleep) */
  pid_t mypid;
  struct mg__hshm *next;        /* the process's list of mappings (the exit hook walks it) */
} mg__hshm_t;

/* Creates or opens the segment `name` for nranks ranks and attaches rank me: from a rank of this
 * process that holds it, else at the meeting socket (host_meet.c). Waits (deadline) only for a
 * rank that holds the segment to answer. local: the caller knows that every rank is in this
 * process (mg_comm_init_all, and split or shrink of such a communicator), so that the creator
 * chooses the thresholds without timing process_vm_readv (host_readv.c), which a thread-only
 * program then never calls. Errors: MG_ERR_INVALID_ARGUMENT
 * (more ranks than the backend takes), MG_ERR_OUT_OF_MEMORY (a segment larger than this process
 * can map: the message gives its parts and the parameters that size them), MG_ERR_SYSTEM,
 * MG_ERR_REMOTE (the segment was made for another number of ranks, or the rank is taken),
 * MG_ERR_TIMED_OUT, MG_ERR_ABORTED (aborting flag set). On error nothing is left mapped. */
mg_status_t mg__hshm_attach(mg__hshm_t *s, const char *name, int nranks, int me, int local,
                            double deadline, const atomic_int *aborting);
/* host_meet.c. Finds the segment of `name` at its socket, or makes it: *created = 1 when this
 * rank made it (a new memfd of `bytes`, zero-filled, and the socket bound but not listening:
 * the caller initialises the segment, then calls mg__hmeet_listen); 0 when a rank that holds it
 * handed it over. *fd is the segment, *lfd the socket, which this rank answers at
 * (mg__hmeet_serve) until every rank has attached. Errors: MG_ERR_SYSTEM, MG_ERR_REMOTE (held
 * by another user), MG_ERR_TIMED_OUT, MG_ERR_ABORTED. */
mg_status_t mg__hmeet_open(const char *name, size_t bytes, double deadline,
                           const atomic_int *aborting, int *fd, int *lfd, int *created);
mg_status_t mg__hmeet_listen(int lfd, const char *name);
/* Hands fd and lfd to every rank of the same user waiting at lfd. Never blocks. */
void mg__hmeet_serve(int lfd, int fd);
/* Waits until every rank has attached, then until every rank has said whether it can read the
 * memory of all the others (s->direct: all can). On timeout the message names the missing
 * ranks. */
mg_status_t mg__hshm_wait_all(mg__hshm_t *s, double deadline, const atomic_int *aborting,
                              const char *fn);
/* The first half of mg__hshm_wait_all: every rank attached, and this rank's verdict published.
 * One thread that drives several ranks (mg_comm_init_all) runs it for each before waiting for
 * all the verdicts. */
mg_status_t mg__hshm_wait_attached(mg__hshm_t *s, double deadline, const atomic_int *aborting,
                                   const char *fn);
/* Publishes this rank's final state (unless it already failed), closes the segment's
 * descriptors if it still holds them (failed init), and unmaps. */
void mg__hshm_detach(mg__hshm_t *s, int state);

static inline mg__hshm_chan_t *mg__hshm_chan(const mg__hshm_t *s, int src, int dst) {
  return &s->chans[(size_t)src * (size_t)s->nranks + (size_t)dst];
}
static inline unsigned char *mg__hshm_ring(const mg__hshm_t *s, int src, int dst) {
  return s->rings + ((size_t)src * (size_t)s->nranks + (size_t)dst) * s->hdr->chan_bytes;
}
/* The all_to_allv counts that rank r announced for the collective whose first step is step:
 * its sendcounts [0, nranks), its recvcounts [nranks, 2 * nranks) and its sdispls [2 * nranks,
 * 3 * nranks) (where a reader of its lent buffer finds its piece). Written by r before it posts
 * that step; the parity of the step keeps them, as it keeps the announcements. */
static inline _Atomic uint64_t *mg__hshm_vcounts(const mg__hshm_t *s, int r, uint64_t step) {
  return s->vcounts + ((size_t)(step & 1) * (size_t)s->nranks + (size_t)r) * 3 * (size_t)s->nranks;
}
/* Rank's staging slot for the slot step numbered slot_step (host.h, mg__hcomm_t.slot_steps):
 * each rank has two, used in turn. */
static inline unsigned char *mg__hshm_slot(const mg__hshm_t *s, int rank, uint64_t slot_step) {
  return s->slots + ((size_t)rank * 2 + (size_t)(slot_step & 1)) * s->hdr->slot_bytes;
}

/* Sleeping and waking without a lost wake-up, and without a shared write on the hot path:
 *  - a publisher stores its counter (sequentially consistent), then calls mg__hshm_wake, which
 *    bumps the wake word and wakes sleepers only if some thread announced a sleep;
 *  - a waiter calls mg__hshm_sleep_begin (announces itself, returns the wake word), looks at
 *    the counters once more, and only if nothing changed calls mg__hshm_sleep with that word;
 *    then mg__hshm_sleep_end.
 * Either the publisher sees the announcement and bumps the word (the futex then returns at
 * once), or the waiter's second look sees the counter. */
void mg__hshm_wake(mg__hshm_t *s);
uint32_t mg__hshm_sleep_begin(mg__hshm_t *s);
void mg__hshm_sleep(mg__hshm_t *s, uint32_t seen, double timeout_s);
void mg__hshm_sleep_end(mg__hshm_t *s);

/* MG_OK when rank r of the segment is alive (or is in this process); otherwise fills why with
 * "rank 2 (pid 4711) exited (how, where known)" / "rank 2 destroyed its communicator" / "rank 2
 * aborted or lost its communicator", sets *culprit to the rank that failed first (r, or the rank
 * r's failure came from), and returns MG_ERR_REMOTE. */
mg_status_t mg__hshm_peer_status(const mg__hshm_t *s, int r, char *why, size_t len, int *culprit);
/* Marks this rank failed because of rank culprit (itself for an abort), or MG__CAUSE_TIMEOUT: a
 * rank that only timed out does not make its peers fail early; they keep to their own deadline
 * and report the rank that is really missing. */
#define MG__CAUSE_TIMEOUT (-2)
void mg__hshm_fail(mg__hshm_t *s, int culprit);

/* ---- decisions ----
 * The ranks of an operation end it the same way. The outcome of each collective of a
 * communicator (mg__hshm_header_t.decision) and of each message of a pair of ranks
 * (mg__hshm_chan_t.decision) is one word that the ranks settle by compare-and-swap, the first
 * decider winning: a rank about to succeed stores "succeeded" unless the word says that the
 * operation failed; a rank that fails stores "failed" with its status unless the word says that
 * the operation succeeded. The word keeps the last operation decided. In a lane (the collectives
 * of a communicator, the messages from one rank to another) no rank starts an operation before
 * the one before it succeeded, so a word that decides a later operation means this one
 * succeeded.
 *   bits 63..24  the operation's key + 1, modulo 2^40 (a collective's first step; a message's
 *                sequence number on its pair): operations of a lane in flight together are
 *                far fewer than 2^39 keys apart, and so is the word from the key of the
 *                operation that reads it (collectives in the mails, which do not settle the
 *                word, settle it once every MG__HDEC_REFRESH steps)
 *   bits 23..16  minus its status (0: it succeeded)
 *   bits 15..0   the rank that failed it first, + 1 (0: none)
 * The rank that failed it first published its cause (mg__hshm_fail) before it settled, unless
 * it timed out. */
#define MG__HDEC_MAX_RANKS 65535
#ifdef MGCOMM_TESTING
#define MG__HDEC_REFRESH (1ull << 10) /* test builds: reached in a test (host_mail) */
#else
#define MG__HDEC_REFRESH (1ull << 28)
#endif
static inline uint64_t mg__hdec_word(uint64_t key, mg_status_t st, int who) {
  return (((key + 1) & 0xffffffffffull) << 24) | ((uint64_t)(uint8_t)(-(int)st) << 16) |
         (uint64_t)(uint16_t)(who + 1);
}
/* < 0: w decides an operation before key (key is not decided); 0: w decides key; > 0: w
 * decides a later one (key succeeded). */
static inline int mg__hdec_cmp(uint64_t w, uint64_t key) {
  uint64_t d = ((w >> 24) - (key + 1)) & 0xffffffffffull;
  return d == 0 ? 0 : d < (1ull << 39) ? 1 : -1;
}
static inline mg_status_t mg__hdec_status(uint64_t w) {
  return (mg_status_t) - (int)((w >> 16) & 0xff);
}
static inline int mg__hdec_who(uint64_t w) { return (int)(w & 0xffff) - 1; }

/* A collective in the mails (host_coll.c, "mails") is decided by the mails' step words, not by
 * the decision word: it succeeded once every rank's mail holds its step, and a rank that fails
 * it first replaces every step word that does not yet (its rank's previous step) with a poison,
 * which that rank then cannot post over. A poison has bit 63 set, the step it decides + 1
 * (modulo 2^39) in bits 62..24, and a decision word's status and rank below. */
#define MG__HMAIL_POISON (1ull << 63)
static inline uint64_t mg__hmail_poison(uint64_t step, mg_status_t st, int who) {
  return MG__HMAIL_POISON | (((step + 1) & 0x7fffffffffull) << 24) |
         (mg__hdec_word(0, st, who) & 0xffffff);
}
/* For a poison p: < 0 it decides a step before `step`, 0 `step` itself, > 0 a later one. */
static inline int mg__hmail_cmp(uint64_t p, uint64_t step) {
  uint64_t d = (((p >> 24) & 0x7fffffffffull) - (step + 1)) & 0x7fffffffffull;
  return d == 0 ? 0 : d < (1ull << 38) ? 1 : -1;
}

/* Copies bytes from address `from` in rank r's memory to dst: memcpy for a rank of this
 * process, process_vm_readv for another process. MG_OK, or MG_ERR_REMOTE naming the rank. */
mg_status_t mg__hshm_read_peer(const mg__hshm_t *s, int r, void *dst, uint64_t from, size_t bytes);

/* The CPUs of the machine that are online, at least 1 (read once per process). */
int mg__machine_cpus(void);

/* 1 when process_vm_readv copies fast enough here that data between processes is better read
 * once than staged (host_readv.c): MGCOMM_HOST_READV_FAST, or measured once per process. */
int mg__readv_fast(void);

/* Random bytes from the kernel. MG_OK or MG_ERR_SYSTEM. */
mg_status_t mg__random_bytes(void *buf, size_t len);

#endif
