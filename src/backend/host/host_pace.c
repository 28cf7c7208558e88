/*
 * host_pace.c -- whether a rank's stores into its staging slot are slow now, and the choice that
 * follows: the collectives that could read their peers' buffers directly then do.
 *
 * A staged copy is two: the owner stores its data into its slot, into lines that its readers
 * read when that slot was last used, and the readers copy it out. The stores cost what the
 * machine charges to take a line back from another CPU's cache, and that can change under a
 * running program: the 2-CPU development VM's host moves its two virtual CPUs between one core,
 * two nearby cores and two far ones every few seconds, where a hand-over of 128 KiB takes 4.7,
 * 22 and 81 us (bench/results/2026-11-29-vm-cpu-pair-states.md); two sockets would be the far
 * case for good. Inside collectives the stores run at 10-40 GB/s on nearby cores and at 1.2-4.8
 * on far ones, where every staged collective between two processes takes 1.2-6x Open MPI's time
 * (whose copies at those sizes are process_vm_readv: reads only), and the same collectives read
 * directly 0.9-1.0x (bench/results/2026-11-29-host-pace.md).
 *
 * So, where reading once is slow and every rank has a CPU (host_shm.c, mg__thresholds, says
 * why only there), each rank times its stores into its slot, in steps whose slot its readers
 * read since this rank's last direct collective (a slot nobody read lately takes stores fast in
 * any state: such "cold" steps are not timed), and votes: slow once 6 of the last 8
 * collectives' warm stores ran below MGCOMM_HOST_PACE_GBPS, fast again after two in a row at or
 * above it. Its next announcement carries the vote (host_shm.h, desc.slow); at the match of
 * every collective that is not in the mails every rank reads all of them, so that all agree from
 * the next collective on: slow when any rank voted slow. While slow, a collective that could
 * read directly but that the creator's thresholds keep staged goes direct (host_coll.c,
 * mg__liftable), except the last MG__PACE_PROBES of every MG__PACE_RECHECK such collectives,
 * which stay staged so that their stores are measured again: three, so that even with one slot
 * step per collective the third fills a slot that the first's readers read. A rank that
 * measured nothing in them (a broadcast's reader stores nothing) withdraws a slow vote, keeping
 * its history: a rank that no longer measures does not hold the others on the direct path for
 * ever.
 */
#include <string.h>

#include "backend/host/host.h"
#include "base/log.h"
#include "base/params.h"

#define MG__PACE_RECHECK 128
#define MG__PACE_PROBES 3
/* Warm bytes a collective must store for its speed to count. */
#define MG__PACE_MIN_BYTES (16 * 1024)
/* A rank votes slow when 6 of its last 8 measurements were (one in 32 of them was, at 4 ranks
 * on a 32-CPU Xeon, in dips of the memory's bandwidth: bench/results/2026-11-29-host-pace.md),
 * fast again after two fast ones in a row. */
#define MG__PACE_WINDOW_MASK 0xffu
#define MG__PACE_SLOW_OF 6

static int mg__popcount(unsigned v) {
  int n = 0;
  for (; v != 0; v &= v - 1) n++;
  return n;
}

void mg__hpace_init(mg__hpace_t *p) {
  memset(p, 0, sizeof *p);
  p->gbps = mg__param_double(MG_PARAM_HOST_PACE_GBPS);
}

int mg__hpace_lift(mg__hpace_t *p) {
  if (!p->slow) return 0;
  const uint64_t i = p->lifted++ % MG__PACE_RECHECK;
  if (i < MG__PACE_RECHECK - MG__PACE_PROBES) return 1;
  if (i == MG__PACE_RECHECK - MG__PACE_PROBES) p->measured = 0; /* the probes begin */
  p->closing = i == MG__PACE_RECHECK - 1;
  return 0;
}

int mg__hpace_warm(const mg__hpace_t *p, uint64_t t) {
  return p->gbps > 0 && p->filled[t & 1] == p->directs + 1;
}

void mg__hpace_filled(mg__hpace_t *p, uint64_t t, size_t bytes, double secs) {
  p->filled[t & 1] = p->directs + 1;
  p->bytes += bytes;
  p->secs += secs;
}

void mg__hpace_ended(mg__hpace_t *p, int direct) {
  if (direct) p->directs++;
  if (p->bytes >= MG__PACE_MIN_BYTES) {
    const int slow = (double)p->bytes < p->gbps * 1e9 * p->secs;
    MG_TRACE(MG_SUBSYS_COLL, "host: stores into the slot: %zu bytes at %.2f GB/s", p->bytes,
             (double)p->bytes / p->secs * 1e-9);
    p->history = p->history << 1 | (unsigned)slow;
    p->measured = 1;
    if (!p->vote && mg__popcount(p->history & MG__PACE_WINDOW_MASK) >= MG__PACE_SLOW_OF) {
      p->vote = 1;
    } else if (p->vote && (p->history & 3u) == 0) { /* two fast in a row */
      p->vote = 0;
      p->history = 0; /* slow again only by as many new slow ones */
    }
  }
  if (p->closing && !p->measured) p->vote = 0; /* nothing to say: abstains */
  p->closing = 0;
  p->bytes = 0;
  p->secs = 0;
}

void mg__hpace_agree(mg__hpace_t *p, int any_slow) {
  if (any_slow == p->slow) return;
  MG_INFO(MG_SUBSYS_COLL, "host: stores into the staging slots are %s: collectives that could "
          "read their peers' buffers directly %s", any_slow ? "slow" : "fast again",
          any_slow ? "now do" : "go by the thresholds again");
  p->lifted = 0;
  p->slow = any_slow;
}
