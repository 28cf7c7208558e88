/*
 * info_comm.c -- `mgcomm info --comm` (a communicator's properties and memory statistics, NCCL
 * 2.29+ on the NCCL backend) and `mgcomm info --nccl-params` (NCCL's own parameters, 2.30.7+).
 */
#include "info_comm.h"

#include "mgcomm.h"

static void print_cap(FILE *f, const char *name, int v) {
  if (v < 0)
    fprintf(f, "  %-18s not said by this NCCL\n", name);
  else
    fprintf(f, "  %-18s %d\n", name, v);
}

int mg_cli_info_comm(FILE *f) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.timeout_s = 60;
  cfg.device = 0;
  mg_unique_id_t id;
  mg_comm_t *comm = NULL;
  mg_status_t st = mg_unique_id_create(MG_BACKEND_AUTO, &id);
  if (st == MG_OK) st = mg_comm_init_rank(&cfg, 1, &id, 0, &comm);
  fprintf(f, "\nA communicator of one rank (MG_BACKEND_AUTO, device 0):\n");
  if (st != MG_OK) {
    fprintf(f, "  cannot be made: %s: %s\n", mg_status_name(st), mg_last_error());
    return 1;
  }
  mg_backend_t be = MG_BACKEND_AUTO;
  (void)mg_comm_backend(comm, &be); /* cannot fail on a live communicator */
  fprintf(f, "  backend            %s\n", mg_backend_name(be));
  mg_comm_properties_t p;
  st = mg_comm_properties(comm, &p);
  if (st != MG_OK) {
    fprintf(f, "  properties         %s: %s\n", mg_status_name(st), mg_last_error());
  } else {
    fprintf(f, "  device             %d (NVML %d)\n", p.device, p.nvml_device);
    print_cap(f, "device API", p.device_api);
    print_cap(f, "multimem", p.multimem);
    print_cap(f, "GIN type", p.gin_type);
    print_cap(f, "railed GIN type", p.railed_gin_type);
    print_cap(f, "LSA teams", p.lsa_teams);
    print_cap(f, "host RMA", p.host_rma);
    print_cap(f, "CFT", p.cft);
    print_cap(f, "CFT multimem", p.cft_multimem);
    fprintf(f, "  comm hash          0x%llx\n", (unsigned long long)p.comm_hash);
    if (p.nccl_version > 0)
      fprintf(f, "  answered by NCCL   %d.%d.%d\n", p.nccl_version / 10000,
              p.nccl_version / 100 % 100, p.nccl_version % 100);
  }
  mg_comm_mem_stats_t ms;
  st = mg_comm_mem_stats(comm, &ms);
  if (st != MG_OK)
    fprintf(f, "  memory             %s: %s\n", mg_status_name(st), mg_last_error());
  else
    fprintf(f, "  memory             %llu bytes (%llu suspendable, %llu persistent)\n",
            (unsigned long long)ms.total_bytes, (unsigned long long)ms.suspendable_bytes,
            (unsigned long long)ms.persistent_bytes);
  st = mg_comm_destroy(comm);
  if (st != MG_OK) fprintf(f, "  destroy: %s: %s\n", mg_status_name(st), mg_last_error());
  return 0;
}

static int print_param(const char *key, const char *value, void *arg) {
  fprintf((FILE *)arg, "  %s=%s\n", key, value);
  return 0;
}

int mg_cli_info_nccl_params(FILE *f) {
  fprintf(f, "\nNCCL's parameters (its parameter API; NCCL_PARAM_DUMP_ALL=1 lists all):\n");
  mg_status_t st = mg_nccl_params(print_param, f);
  if (st != MG_OK) fprintf(f, "  %s: %s\n", mg_status_name(st), mg_last_error());
  return 0;
}
