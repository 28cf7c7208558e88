/*
 * kern_reg.c -- buffers registered with a kernels' context, so that the ranks of other processes
 * map them once and the pull algorithms then read them in place (kernels.h, "Registered
 * buffers"; docs/kernels.md).
 *
 * A rank's registration has a slot of its own (its index into every reader's table); the slots
 * of one registration may differ between ranks, so each record says its owner's. A reader's
 * table (kern_abi.h, in the reader's own area) holds, for [rank][slot], where that rank's buffer
 * is mapped in the reader's process; a kernel that lends publishes slot and offset instead of an
 * address, and each reader translates them. An entry is written before the registration ends,
 * so only launches after it (which alone publish the slot) read it; slots are taken round robin,
 * so that a slot freed by a release is taken again late. A release zeroes the entries of the
 * peers' buffers it unmaps (a kernel to which such a buffer is still lent gives up), unless a
 * later registration wrote them since (table_seq says whose each entry is).
 *
 * How a buffer is shared: memory of cuMemAlloc through a CUDA IPC handle (bytes, in the
 * record); a cuMem allocation (ncclMemAlloc's, mg_mem_alloc's) as a POSIX file descriptor,
 * which travels from its owner to each peer process through the peer's descriptor box
 * (base/fdpass.c), and which the peer imports, maps at an address of its own and opens to its
 * device. A rank of the same process reads the buffer at its address.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "kernels/kern_ctx.h"

/* The message that carries a descriptor: whose, of which registration. */
typedef struct mg__kern_fdmsg {
  uint64_t process;
  uint64_t seq;
  int32_t rank;
  int32_t slot;
} mg__kern_fdmsg_t;

unsigned long long mg__kern_ctx_lent(const mg__kern_ctx_t *ctx) {
  return atomic_load_explicit(&ctx->lent, memory_order_relaxed);
}

static mg__kern_reg_t *mg__kern_reg_of(mg__kern_ctx_t *c, uint64_t seq) {
  for (int i = 0; i < MG_KERN_MAX_REGS; i++)
    if (c->reg[i].used && c->reg[i].seq == seq) return &c->reg[i];
  return NULL;
}

/* A free slot, the first at or after the one after the last taken (round robin), or -1. */
static int mg__kern_reg_slot(mg__kern_ctx_t *c) {
  for (int k = 0; k < MG_KERN_MAX_REGS; k++) {
    const int i = (c->next_slot + k) % MG_KERN_MAX_REGS;
    if (!c->reg[i].used) {
      c->next_slot = (i + 1) % MG_KERN_MAX_REGS;
      return i;
    }
  }
  return -1;
}

/* Whether the driver has every call that sharing a cuMem allocation takes (optional symbols:
 * the exporter's and the importer's processes each ask their own). */
static int mg__kern_cumem_calls(void) {
  return mg__cuda.MemRetainAllocationHandle != NULL && mg__cuda.MemRelease != NULL &&
         mg__cuda.MemExportToShareableHandle != NULL &&
         mg__cuda.MemImportFromShareableHandle != NULL && mg__cuda.MemAddressReserve != NULL &&
         mg__cuda.MemAddressFree != NULL && mg__cuda.MemMap != NULL &&
         mg__cuda.MemUnmap != NULL && mg__cuda.MemSetAccess != NULL;
}

/* This rank's buffer as a record: the kind of its allocation and how a peer maps it. 1, or 0
 * with why (the rank then stages it). */
static int mg__kern_reg_share(mg__kern_reg_t *g, mg__kern_reg_rec_t *rec) {
  mg__CUdeviceptr start = 0;
  size_t size = 0;
  mg__CUresult r = mg__cuda.MemGetAddressRange(&start, &size, (mg__CUdeviceptr)rec->base);
  if (r != MG__CUDA_SUCCESS || rec->base + rec->bytes > start + size) {
    snprintf(rec->why, sizeof rec->why, "[0x%llx, +%llu) is not within one device allocation",
             (unsigned long long)rec->base, (unsigned long long)rec->bytes);
    return 0;
  }
  rec->alloc_off = rec->base - start;
  rec->alloc_bytes = size;
  int legacy = 0;
  mg__CUpointer_attribute what = MG__CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE;
  void *data = &legacy;
  if (mg__cuda.PointerGetAttributes(1, &what, &data, start) == MG__CUDA_SUCCESS && legacy) {
    r = mg__cuda.IpcGetMemHandle(&rec->ipc, start);
    rec->kind = MG__KERN_MAP_IPC;
  } else if (!mg__kern_cumem_calls()) {
    snprintf(rec->why, sizeof rec->why, "the CUDA driver cannot export cuMem allocations");
    return 0;
  } else {
    mg__CUmemGenericAllocationHandle h = 0;
    r = mg__cuda.MemRetainAllocationHandle(&h, (void *)(uintptr_t)start);
    if (r == MG__CUDA_SUCCESS) {
      int fd = -1;
      r = mg__cuda.MemExportToShareableHandle(&fd, h, MG__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                              0);
      (void)mg__cuda.MemRelease(h); /* the reference Retain took */
      g->fd = r == MG__CUDA_SUCCESS ? fd : -1;
    }
    rec->kind = MG__KERN_MAP_CUMEM;
  }
  if (r != MG__CUDA_SUCCESS) {
    mg__cu_error(r, rec->kind == MG__KERN_MAP_IPC ? "cuIpcGetMemHandle"
                                                   : "exporting the cuMem allocation as a file "
                                                     "descriptor");
    snprintf(rec->why, sizeof rec->why, "%s", mg_last_error());
    return 0;
  }
  return 1;
}

mg_status_t mg__kern_reg_export(mg__kern_ctx_t *c, const void *buf, size_t bytes,
                                mg__kern_reg_rec_t *mine) {
  if (c == NULL || buf == NULL || bytes == 0 || mine == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "a registration with the kernels: NULL or empty");
  if (!c->connected)
    return mg__error(MG_ERR_INVALID_USAGE, "rank %d: a registration with the kernels before "
                     "they are connected", c->rank);
  memset(mine, 0, sizeof *mine);
  mine->seq = ++c->reg_seq;
  mine->process = mg__kern_process();
  mine->base = (uint64_t)(uintptr_t)buf;
  mine->bytes = bytes;
  mine->slot = -1;
  const int slot = mg__kern_reg_slot(c);
  if (slot < 0) {
    snprintf(mine->why, sizeof mine->why, "rank %d has %d registrations with the kernels already",
             c->rank, MG_KERN_MAX_REGS);
    return MG_OK;
  }
  /* The slot holds the peers' mappings even when this rank's buffer cannot be lent. */
  mg__kern_reg_t *g = &c->reg[slot];
  memset(g, 0, sizeof *g);
  g->fd = -1;
  g->used = 1;
  g->seq = mine->seq;
  g->base = mine->base;
  g->bytes = bytes;
  if (mg__kern_reg_share(g, mine)) mine->slot = slot;
  return MG_OK;
}

/* Maps rank r's buffer of a registration here (from its descriptor fd for cuMem, which the
 * caller closes), at g->map[r], and writes the table's entry. MG_OK or the driver's error. */
static mg_status_t mg__kern_reg_map(mg__kern_ctx_t *c, mg__kern_reg_t *g, int r,
                                    const mg__kern_reg_rec_t *rec, int fd) {
  mg__CUdeviceptr at = 0;
  mg__CUresult res = MG__CUDA_SUCCESS;
  const char *what = "cuIpcOpenMemHandle";
  if (rec->process == c->rec[c->rank].process) {
    g->kind[r] = MG__KERN_MAP_SAME; /* one address space */
    at = rec->base - rec->alloc_off;
  } else if (rec->kind == MG__KERN_MAP_IPC) {
    res = mg__cuda.IpcOpenMemHandle(&at, rec->ipc, MG__CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (res == MG__CUDA_SUCCESS) g->kind[r] = MG__KERN_MAP_IPC;
  } else if (!mg__kern_cumem_calls()) {
    return mg__error(MG_ERR_NOT_SUPPORTED, "the CUDA driver cannot import cuMem allocations");
  } else {
    mg__CUmemGenericAllocationHandle h = 0;
    mg__CUdevice dev = 0;
    const size_t n = rec->alloc_bytes;
    what = "cuMemImportFromShareableHandle";
    res = mg__cuda.MemImportFromShareableHandle(&h, (void *)(uintptr_t)fd,
                                                MG__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (res == MG__CUDA_SUCCESS) {
      what = "mapping the imported allocation";
      res = mg__cuda.CtxGetDevice(&dev);
      if (res == MG__CUDA_SUCCESS) res = mg__cuda.MemAddressReserve(&at, n, 0, 0, 0);
      if (res == MG__CUDA_SUCCESS && (res = mg__cuda.MemMap(at, n, 0, h, 0)) != MG__CUDA_SUCCESS) {
        (void)mg__cuda.MemAddressFree(at, n);
        at = 0;
      }
      (void)mg__cuda.MemRelease(h); /* the mapping holds the allocation from now on */
    }
    if (res == MG__CUDA_SUCCESS) {
      g->kind[r] = MG__KERN_MAP_CUMEM; /* unmapped by release from here on */
      g->map_bytes[r] = n;
      const mg__CUmemAccessDesc access = {{MG__CU_MEM_LOCATION_TYPE_DEVICE, dev},
                                          MG__CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
      res = mg__cuda.MemSetAccess(at, n, &access, 1);
    }
  }
  g->map[r] = at;
  if (res == MG__CUDA_SUCCESS) {
    const uint64_t entry = at + rec->alloc_off;
    res = mg__cuda.MemcpyHtoD(c->area + MG_KERN_REG_OFF +
                                  ((size_t)r * MG_KERN_MAX_REGS + (size_t)rec->slot) * 8,
                              &entry, sizeof entry);
    what = "writing the kernels' table";
    if (res == MG__CUDA_SUCCESS) c->table_seq[r][rec->slot] = g->seq;
  }
  return res == MG__CUDA_SUCCESS ? MG_OK : mg__cu_error(res, what);
}

/* Undoes g->map[r], its table entry zeroed first: a kernel that a peer still lends the buffer
 * to gives up with an error rather than read unmapped memory. Each call fails only for a
 * context already gone. */
static void mg__kern_reg_unmap(mg__kern_ctx_t *c, mg__kern_reg_t *g, int r) {
  if (g->kind[r] == MG__KERN_MAP_NONE) return;
  const int slot = g->peer_slot[r];
  if (c->table_seq[r][slot] == g->seq) { /* not yet another registration's entry */
    const uint64_t zero = 0;
    (void)mg__cuda.MemcpyHtoD(c->area + MG_KERN_REG_OFF +
                                  ((size_t)r * MG_KERN_MAX_REGS + (size_t)slot) * 8,
                              &zero, sizeof zero);
    c->table_seq[r][slot] = 0;
  }
  if (g->kind[r] == MG__KERN_MAP_IPC) (void)mg__cuda.IpcCloseMemHandle(g->map[r]);
  if (g->kind[r] == MG__KERN_MAP_CUMEM) {
    (void)mg__cuda.MemUnmap(g->map[r], g->map_bytes[r]);
    (void)mg__cuda.MemAddressFree(g->map[r], g->map_bytes[r]);
  }
  g->kind[r] = MG__KERN_MAP_NONE;
  g->map[r] = 0;
}

/* Whether a record is lendable, and its buffer needs its descriptor to be mapped here (a
 * cuMem allocation of another process). */
static int mg__kern_reg_needs_fd(const mg__kern_ctx_t *c, const mg__kern_reg_rec_t *rec) {
  return rec->slot >= 0 && rec->slot < MG_KERN_MAX_REGS && rec->kind == MG__KERN_MAP_CUMEM &&
         rec->process != c->rec[c->rank].process;
}

/* The end of the next step of a wait of the exchange (a tenth of a second at most, so that an
 * abort ends it soon), in *step. MG_ERR_ABORTED once the context was aborted (its abort word);
 * MG_ERR_TIMED_OUT once deadline has passed. */
static mg_status_t mg__kern_reg_step(const mg__kern_ctx_t *c, double deadline, double *step) {
  if (atomic_load((_Atomic int *)&c->words[0]))
    return mg__error(MG_ERR_ABORTED, "the communicator was aborted");
  const double now = mg__now();
  if (now > deadline) return mg__error(MG_ERR_TIMED_OUT, "the deadline passed");
  *step = now + 0.1 < deadline ? now + 0.1 : deadline;
  return MG_OK;
}

/* Sends this rank's descriptor to every peer of another process. */
static mg_status_t mg__kern_reg_send(mg__kern_ctx_t *c, const mg__kern_reg_t *g,
                                     const mg__kern_reg_rec_t *mine, double deadline) {
  const mg__kern_fdmsg_t msg = {mine->process, mine->seq, c->rank, mine->slot};
  for (int q = 0; q < c->nranks; q++) {
    if (c->rec[q].process == mine->process) continue;
    if (c->rec[q].box[0] == '\0') continue; /* it has no box: it cannot map this buffer */
    mg_status_t st;
    for (;;) {
      double step = deadline; /* stays so when the step itself fails */
      st = mg__kern_reg_step(c, deadline, &step);
      if (st == MG_OK) st = mg__fdbox_send(c->rec[q].box, &msg, sizeof msg, g->fd, step);
      if (st != MG_ERR_TIMED_OUT || step >= deadline) break; /* else the step's end: again */
    }
    if (st != MG_OK) {
      mg__error_prefix("rank %d sending its buffer of registration %llu to rank %d", c->rank,
                       (unsigned long long)mine->seq, q);
      return st;
    }
  }
  return MG_OK;
}

/* Receives the descriptor of every rank whose buffer comes through this rank's box, into
 * fds[r] (-1 for the others). A message of another registration or process is dropped. */
static mg_status_t mg__kern_reg_recv(mg__kern_ctx_t *c, const mg__kern_reg_rec_t *all, int *fds,
                                     double deadline) {
  int wanted = 0;
  for (int r = 0; r < c->nranks; r++) wanted += mg__kern_reg_needs_fd(c, &all[r]);
  while (wanted > 0) {
    mg__kern_fdmsg_t msg;
    size_t got = 0;
    int fd = -1;
    double step = deadline; /* stays so when the step itself fails */
    mg_status_t st = mg__kern_reg_step(c, deadline, &step);
    if (st == MG_OK) st = mg__fdbox_recv(&c->box, &msg, sizeof msg, &got, &fd, step);
    if (st == MG_ERR_TIMED_OUT && step < deadline) continue; /* the step's end: look again */
    if (st != MG_OK) {
      mg__error_prefix("rank %d waiting for %d peers' buffers of registration %llu", c->rank,
                       wanted, (unsigned long long)all[c->rank].seq);
      return st;
    }
    const int r = msg.rank;
    if (got == sizeof msg && fd >= 0 && r >= 0 && r < c->nranks && fds[r] < 0 &&
        mg__kern_reg_needs_fd(c, &all[r]) && msg.process == all[r].process &&
        msg.seq == all[r].seq && msg.slot == all[r].slot) {
      fds[r] = fd;
      wanted--;
    } else if (fd >= 0) {
      close(fd); /* stale: a registration that failed before */
    }
  }
  return MG_OK;
}

mg_status_t mg__kern_reg_import(mg__kern_ctx_t *c, const mg__kern_reg_rec_t *all,
                                double deadline, uint32_t *mapped) {
  *mapped = 0;
  const mg__kern_reg_rec_t *mine = &all[c->rank];
  for (int r = 0; r < c->nranks; r++)
    if (all[r].seq != mine->seq)
      return mg__error(MG_ERR_INVALID_USAGE,
                       "rank %d: rank %d's registration with the kernels is its number %llu, "
                       "this rank's %llu: the ranks did not register in the same order", c->rank,
                       r, (unsigned long long)all[r].seq, (unsigned long long)mine->seq);
  mg__kern_reg_t *g = mg__kern_reg_of(c, mine->seq);
  int fds[MG_KERN_MAX_RANKS];
  for (int r = 0; r < MG_KERN_MAX_RANKS; r++) fds[r] = -1;
  mg_status_t st = MG_OK;
  if (g != NULL && g->fd >= 0) st = mg__kern_reg_send(c, g, mine, deadline);
  if (st == MG_OK && c->box.sock >= 0) st = mg__kern_reg_recv(c, all, fds, deadline);
  if (g != NULL && g->fd >= 0) { /* sent: the peers hold their own copies */
    close(g->fd);
    g->fd = -1;
  }
  if (mine->slot < 0)
    MG_INFO(MG_SUBSYS_COLL, "rank %d stages its buffer of registration %llu: %s", c->rank,
            (unsigned long long)mine->seq, mine->why);
  for (int r = 0; r < c->nranks && st == MG_OK && g != NULL; r++) {
    if (all[r].slot < 0 || all[r].slot >= MG_KERN_MAX_REGS) continue; /* not lendable */
    if (mg__kern_reg_needs_fd(c, &all[r]) && fds[r] < 0) continue; /* no box here */
    g->peer_slot[r] = all[r].slot;
    if (mg__kern_reg_map(c, g, r, &all[r], fds[r]) == MG_OK) {
      *mapped |= 1u << r;
    } else {
      MG_WARN("rank %d: rank %d's buffer of registration %llu does not map "
              "here (%s): it stages it", c->rank, r, (unsigned long long)mine->seq,
              mg_last_error());
      mg__kern_reg_unmap(c, g, r);
    }
  }
  for (int r = 0; r < MG_KERN_MAX_RANKS; r++)
    if (fds[r] >= 0) close(fds[r]); /* imported (the driver holds its own reference) or not */
  return st;
}

int mg__kern_reg_commit(mg__kern_ctx_t *c, const mg__kern_reg_rec_t *all, const uint32_t *masks) {
  mg__kern_reg_t *g = mg__kern_reg_of(c, all[c->rank].seq);
  if (g == NULL) return 0;
  int every = 1;
  for (int r = 0; r < c->nranks; r++) every = every && (masks[r] >> c->rank & 1u);
  g->lendable = every;
  return every;
}

void mg__kern_reg_release(mg__kern_ctx_t *c, uint64_t seq) {
  mg__kern_reg_t *g = c == NULL ? NULL : mg__kern_reg_of(c, seq);
  if (g == NULL) return;
  for (int r = 0; r < MG_KERN_MAX_RANKS; r++) mg__kern_reg_unmap(c, g, r);
  if (g->fd >= 0) close(g->fd);
  memset(g, 0, sizeof *g);
  g->fd = -1;
}

/* The published value for [p, p + bytes) when it lies in a lendable registration; 0 if not. */
static unsigned long long mg__kern_reg_pub(const mg__kern_ctx_t *c, const void *p, size_t bytes) {
  const uint64_t a = (uint64_t)(uintptr_t)p;
  for (int i = 0; i < MG_KERN_MAX_REGS; i++) {
    const mg__kern_reg_t *g = &c->reg[i];
    if (g->lendable && a >= g->base && a + bytes <= g->base + g->bytes)
      return MG_KERN_PUB_REG | (unsigned long long)i << MG_KERN_PUB_SLOT_SHIFT | (a - g->base);
  }
  return 0;
}

int mg__kern_reg_lend(mg__kern_ctx_t *c, const void *send, const void *recv, size_t bytes,
                      unsigned long long pub[2]) {
  const unsigned long long s = mg__kern_reg_pub(c, send, bytes);
  const unsigned long long r = recv == send ? s : mg__kern_reg_pub(c, recv, bytes);
  if (s == 0 || r == 0) return 0;
  pub[0] = s;
  pub[1] = r;
  atomic_fetch_add_explicit(&c->lent, 1, memory_order_relaxed);
  return 1;
}
