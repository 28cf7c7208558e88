/*
 * host_readv.c -- whether this machine's process_vm_readv is fast enough for the host backend to
 * copy data between processes once, with it, instead of twice through the staging slots.
 *
 * A process_vm_readv pins every page it reads before it copies, a cost per page that depends on
 * the machine far more than memcpy does. On the 2-CPU development VM (AMD EPYC) this file's
 * measurement finds it at 0.29-0.37 of memcpy's speed (10-11 against 27-39 GB/s), and there the
 * staged pipeline, whose two copies overlap on two CPUs, beats it for every collective at every
 * size; on a 16-CPU Xeon (Sapphire Rapids) at 0.51-0.56 (16-20 against 32-36 GB/s), and there
 * copying once wins 2-3x from 128 KiB (bench/results/2026-11-25-host-readv-probe.md). The
 * creator of a communicator asks mg__readv_fast() which of the two it is on (host_shm.c,
 * mg__thresholds), unless every rank is known to be in its process (mg_comm_init_all, and split
 * or shrink of such a communicator), so that a thread-only program never calls process_vm_readv
 * (a sandbox may forbid it); this file times both copies once per process, at the first call
 * (about 0.7 ms on the VM).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend/host/host_shm.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/params.h"

#define MG__PROBE_BYTES (256u * 1024)
#define MG__PROBE_ROUNDS 20
/* process_vm_readv at least this fraction of memcpy's speed is fast: between the two machines
 * above. */
#define MG__PROBE_FAST 0.4

static pthread_once_t mg__probe_once = PTHREAD_ONCE_INIT;
static int mg__probe_fast;

/* Times memcpy and process_vm_readv of this process's own buffer, alternated, the best of
 * MG__PROBE_ROUNDS each. Both buffers are page-aligned: a destination 1 to 31 bytes past the
 * source modulo 4 KiB would slow both copies tenfold on AMD (host_copy.h). Slow when the call is
 * refused (seccomp, a kernel without it: then no peer process can be read anyway) or memory runs
 * out, and in sanitizer builds, whose memcpy is theirs. */
static void mg__readv_probe(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  MG_INFO(MG_SUBSYS_COLL, "host: sanitizer build: process_vm_readv taken as slow, not measured");
#else
  const size_t n = MG__PROBE_BYTES;
  unsigned char *a = mmap(NULL, 2 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a == MAP_FAILED) {
    MG_INFO(MG_SUBSYS_COLL, "host: no memory to time process_vm_readv (%s): taken as slow",
            strerror(errno));
    return;
  }
  unsigned char *b = a + n;
  memset(a, 1, 2 * n);
  double copy = 1e9, readv = 1e9;
  int ok = 1;
  for (int r = 0; r < MG__PROBE_ROUNDS && ok; r++) {
    double t0 = mg__now();
    memcpy(b, a, n);
    double t1 = mg__now();
    struct iovec local = {b, n}, remote = {a, n};
    ok = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
    double t2 = mg__now();
    if (t1 - t0 < copy) copy = t1 - t0;
    if (t2 - t1 < readv) readv = t2 - t1;
  }
  const int err = errno;
  munmap(a, 2 * n);
  if (!ok) {
    MG_INFO(MG_SUBSYS_COLL, "host: process_vm_readv refused (%s): taken as slow", strerror(err));
    return;
  }
  mg__probe_fast = copy >= MG__PROBE_FAST * readv;
  MG_INFO(MG_SUBSYS_COLL, "host: process_vm_readv of 256 KiB %.1f GB/s, memcpy %.1f GB/s: %s",
          (double)n / readv * 1e-9, (double)n / copy * 1e-9, mg__probe_fast ? "fast" : "slow");
#endif
}

int mg__readv_fast(void) {
  const int64_t forced = mg__param_int(MG_PARAM_HOST_READV_FAST);
  if (forced >= 0) return forced != 0;
  pthread_once(&mg__probe_once, mg__readv_probe);
  return mg__probe_fast;
}
