/*
 * boot_env.c -- the launch conventions of mg_comm_init_env (src/boot/env.c), on tables of
 * variables: the order of the launchers, every kind of missing, malformed or inconsistent
 * variable (each must be named in the message), store addresses, tokens. Then the real thing:
 * mg_comm_init_env in this process with a bad environment fails before it waits for anybody.
 */
#include "boot/boot.h"
#include "test.h"

typedef struct {
  const char *vars[32]; /* "NAME=value" */
} env_t;

static const char *lookup(void *ctx, const char *name) {
  env_t *e = ctx;
  size_t n = strlen(name);
  for (int i = 0; i < 32 && e->vars[i] != NULL; i++)
    if (strncmp(e->vars[i], name, n) == 0 && e->vars[i][n] == '=')
      return e->vars[i][n + 1] != '\0' ? e->vars[i] + n + 1 : NULL;
  return NULL;
}

#define STORE_AND_TOKEN "MGCOMM_STORE=127.0.0.1:29500", "MGCOMM_JOB_TOKEN=t"

static mg__boot_env_t ok(env_t e) {
  mg__boot_env_t out;
  memset(&out, 0xab, sizeof out);
  mg_status_t st = mg__boot_env_read(lookup, &e, &out);
  if (st != MG_OK) FAIL("mg__boot_env_read: %s: %s", mg_status_name(st), mg_last_error());
  return out;
}

/* The read must fail, and the message must name each of the words. */
static void bad(env_t e, const char *w1, const char *w2) {
  mg__boot_env_t out;
  memset(&out, 0xab, sizeof out);
  mg__boot_env_t before = out;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg__boot_env_read(lookup, &e, &out));
  ASSERT_CONTAINS(mg_last_error(), w1);
  if (w2) ASSERT_CONTAINS(mg_last_error(), w2);
  ASSERT(memcmp(&out, &before, sizeof out) == 0); /* untouched */
}

static void test_launchers(void) {
  mg__boot_env_t e;
  e = ok((env_t){{"MGCOMM_RANK=2", "MGCOMM_WORLD_SIZE=4", "MGCOMM_LOCAL_RANK=1", STORE_AND_TOKEN}});
  ASSERT_EQ(e.rank, 2);
  ASSERT_EQ(e.size, 4);
  ASSERT_EQ(e.local_rank, 1);
  ASSERT_STR_EQ(e.launcher, "mgcomm launch");
  ASSERT_STR_EQ(e.address, "127.0.0.1:29500");
  ASSERT_STR_EQ(e.address_from, "MGCOMM_STORE");
  ASSERT_STR_EQ(e.token, "t");
  /* each launcher's set, alone */
  e = ok((env_t){{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=0", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "torchrun");
  ASSERT(e.rank == 1 && e.size == 2 && e.local_rank == 0);
  e = ok((env_t){{"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=8",
                  "OMPI_COMM_WORLD_LOCAL_RANK=3", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "Open MPI");
  ASSERT(e.rank == 3 && e.size == 8 && e.local_rank == 3);
  e = ok((env_t){{"PMI_RANK=5", "PMI_SIZE=6", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "PMI");
  ASSERT(e.rank == 5 && e.size == 6 && e.local_rank == -1);
  ASSERT(e.local_var == NULL);
  e = ok((env_t){{"SLURM_PROCID=7", "SLURM_NTASKS=16", "SLURM_LOCALID=3", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "Slurm");
  ASSERT(e.rank == 7 && e.size == 16 && e.local_rank == 3);
  /* the order: mgcomm before torchrun before Open MPI before PMI before Slurm (mpirun inside an
   * allocation, mgcomm launch under srun...) */
  e = ok((env_t){{"SLURM_PROCID=0", "SLURM_NTASKS=1", "OMPI_COMM_WORLD_RANK=2",
                  "OMPI_COMM_WORLD_SIZE=4", "RANK=1", "WORLD_SIZE=3", "MGCOMM_RANK=0",
                  "MGCOMM_WORLD_SIZE=2", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "mgcomm launch");
  ASSERT(e.rank == 0 && e.size == 2 && e.local_rank == -1);
  e = ok((env_t){{"SLURM_PROCID=0", "SLURM_NTASKS=1", "OMPI_COMM_WORLD_RANK=2",
                  "OMPI_COMM_WORLD_SIZE=4", "RANK=1", "WORLD_SIZE=3", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "torchrun");
  e = ok((env_t){{"SLURM_PROCID=0", "SLURM_NTASKS=1", "OMPI_COMM_WORLD_RANK=2",
                  "OMPI_COMM_WORLD_SIZE=4", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "Open MPI");
  ASSERT_EQ(e.local_rank, -1); /* Open MPI's local rank absent here */
  e = ok((env_t){
      {"SLURM_PROCID=0", "SLURM_NTASKS=1", "PMI_RANK=1", "PMI_SIZE=2", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "PMI");
  /* an empty variable counts as unset */
  e = ok((env_t){{"MGCOMM_RANK=", "RANK=0", "WORLD_SIZE=1", STORE_AND_TOKEN}});
  ASSERT_STR_EQ(e.launcher, "torchrun");
}

static void test_bad_rank_size(void) {
  bad((env_t){{STORE_AND_TOKEN}}, "MGCOMM_RANK", "mgcomm launch, torchrun, mpirun or srun");
  bad((env_t){{"RANK=0", STORE_AND_TOKEN}}, "WORLD_SIZE", "RANK");
  bad((env_t){{"WORLD_SIZE=2", STORE_AND_TOKEN}}, "RANK", "WORLD_SIZE");
  bad((env_t){{"OMPI_COMM_WORLD_SIZE=2", STORE_AND_TOKEN}}, "OMPI_COMM_WORLD_RANK", NULL);
  static const char *bad_numbers[] = {"x", "-1", "1 ", " 1", "+1", "0x1", "1.0", "9999999999"};
  for (size_t i = 0; i < sizeof bad_numbers / sizeof bad_numbers[0]; i++) {
    char r[64], s[64], l[64];
    snprintf(r, sizeof r, "MGCOMM_RANK=%s", bad_numbers[i]);
    bad((env_t){{r, "MGCOMM_WORLD_SIZE=4", STORE_AND_TOKEN}}, "MGCOMM_RANK", bad_numbers[i]);
    snprintf(s, sizeof s, "SLURM_NTASKS=%s", bad_numbers[i]);
    bad((env_t){{"SLURM_PROCID=0", s, STORE_AND_TOKEN}}, "SLURM_NTASKS", bad_numbers[i]);
    snprintf(l, sizeof l, "LOCAL_RANK=%s", bad_numbers[i]);
    bad((env_t){{"RANK=0", "WORLD_SIZE=2", l, STORE_AND_TOKEN}}, "LOCAL_RANK", bad_numbers[i]);
  }
  bad((env_t){{"RANK=0", "WORLD_SIZE=0", STORE_AND_TOKEN}}, "WORLD_SIZE", NULL);
  bad((env_t){{"RANK=4", "WORLD_SIZE=4", STORE_AND_TOKEN}}, "RANK=4", "WORLD_SIZE=4");
  bad((env_t){{"PMI_RANK=9", "PMI_SIZE=2", STORE_AND_TOKEN}}, "PMI_RANK", "PMI_SIZE");
  bad((env_t){{"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=2", STORE_AND_TOKEN}}, "LOCAL_RANK=2",
      "WORLD_SIZE=2");
  /* A world larger than rank 0's store can serve (one connection per process, 8192) is refused
   * naming the variable and the limit, however many digits it has; 8192 itself is fine. */
  static const char *too_many[] = {"8193", "999999999", "2147483647", "99999999999999999999"};
  for (size_t i = 0; i < sizeof too_many / sizeof too_many[0]; i++) {
    char s[64], w[64];
    snprintf(s, sizeof s, "MGCOMM_WORLD_SIZE=%s", too_many[i]);
    snprintf(w, sizeof w, "%s is more ranks than mg_comm_init_env supports", s);
    bad((env_t){{"MGCOMM_RANK=0", s, STORE_AND_TOKEN}}, w, "at most 8192");
    snprintf(s, sizeof s, "PMI_SIZE=%s", too_many[i]);
    bad((env_t){{"PMI_RANK=0", s, STORE_AND_TOKEN}}, s, "at most 8192");
  }
  mg__boot_env_t e = ok((env_t){{"MGCOMM_RANK=8191", "MGCOMM_WORLD_SIZE=8192", STORE_AND_TOKEN}});
  ASSERT(e.rank == 8191 && e.size == 8192);
  bad((env_t){{"RANK=99999999999", "WORLD_SIZE=4", STORE_AND_TOKEN}}, "RANK=99999999999",
      "WORLD_SIZE=4");
}

#define RS "RANK=0", "WORLD_SIZE=1"

static void test_addresses(void) {
  mg__boot_env_t e;
  e = ok((env_t){{RS, "MASTER_ADDR=node01", "MASTER_PORT=29500", "MGCOMM_JOB_TOKEN=t"}});
  ASSERT_STR_EQ(e.address, "node01:29500");
  ASSERT_STR_EQ(e.address_from, "MASTER_ADDR/MASTER_PORT");
  e = ok((env_t){{RS, "MASTER_ADDR=::1", "MASTER_PORT=29500", "MGCOMM_JOB_TOKEN=t"}});
  ASSERT_STR_EQ(e.address, "[::1]:29500");
  e = ok((env_t){{RS, "MGCOMM_STORE=[fe80::1]:7", "MASTER_ADDR=x", "MASTER_PORT=1",
                  "MGCOMM_JOB_TOKEN=t"}});
  ASSERT_STR_EQ(e.address, "[fe80::1]:7");
  ASSERT_STR_EQ(e.address_from, "MGCOMM_STORE");
  bad((env_t){{RS, "MGCOMM_JOB_TOKEN=t"}}, "MGCOMM_STORE", "MASTER_ADDR");
  bad((env_t){{RS, "MASTER_ADDR=node01", "MGCOMM_JOB_TOKEN=t"}}, "MASTER_PORT", NULL);
  bad((env_t){{RS, "MASTER_PORT=29500", "MGCOMM_JOB_TOKEN=t"}}, "MASTER_ADDR", NULL);
  bad((env_t){{RS, "MASTER_ADDR=node01", "MASTER_PORT=http", "MGCOMM_JOB_TOKEN=t"}},
      "MASTER_ADDR:MASTER_PORT", "port");
  bad((env_t){{RS, "MASTER_ADDR=node01", "MASTER_PORT=0", "MGCOMM_JOB_TOKEN=t"}}, "port", NULL);
  bad((env_t){{RS, "MGCOMM_STORE=node01", "MGCOMM_JOB_TOKEN=t"}}, "MGCOMM_STORE", "port");
  bad((env_t){{RS, "MGCOMM_STORE=:29500", "MGCOMM_JOB_TOKEN=t"}}, "MGCOMM_STORE", "host");
  /* The longest address: a host of 255 bytes in brackets and a 5-digit port, 263 bytes; one
   * longer (up to far beyond the 511 bytes the parameter table holds) names the variable and
   * the limit. */
  char longest[300], longer[700];
  snprintf(longest, sizeof longest, "MGCOMM_STORE=[::%0253d]:29500", 0);
  e = ok((env_t){{RS, longest, "MGCOMM_JOB_TOKEN=t"}});
  ASSERT_EQ(strlen(e.address), (size_t)263);
  snprintf(longer, sizeof longer, "MGCOMM_STORE=[%0255d]:295000", 0);
  bad((env_t){{RS, longer, "MGCOMM_JOB_TOKEN=t"}}, "MGCOMM_STORE",
      "is 264 bytes long; a host:port is at most 263");
  snprintf(longer, sizeof longer, "MGCOMM_STORE=%0600d:29500", 0);
  bad((env_t){{RS, longer, "MGCOMM_JOB_TOKEN=t"}}, "MGCOMM_STORE",
      "is 606 bytes long; a host:port is at most 263");
  /* torchrun's agent already serves on MASTER_PORT */
  bad((env_t){{RS, "MASTER_ADDR=n", "MASTER_PORT=29500", "TORCHELASTIC_USE_AGENT_STORE=True",
               "MGCOMM_JOB_TOKEN=t"}}, "MGCOMM_STORE", "torchrun");
  e = ok((env_t){{RS, "MGCOMM_STORE=n:29600", "MASTER_ADDR=n", "MASTER_PORT=29500",
                  "TORCHELASTIC_USE_AGENT_STORE=True", "MGCOMM_JOB_TOKEN=t"}});
  ASSERT_STR_EQ(e.address, "n:29600");
}

#define RSA RS, "MGCOMM_STORE=127.0.0.1:1"

static void test_tokens(void) {
  mg__boot_env_t e;
  e = ok((env_t){{RSA, "MGCOMM_JOB_TOKEN=s3cret", "TORCHELASTIC_RUN_ID=abc"}});
  ASSERT_STR_EQ(e.token, "s3cret");
  e = ok((env_t){{RSA, "TORCHELASTIC_RUN_ID=abc", "PMIX_NAMESPACE=9"}});
  ASSERT_STR_EQ(e.token, "torchelastic:abc");
  ASSERT_STR_EQ(e.token_from, "TORCHELASTIC_RUN_ID");
  e = ok((env_t){{RSA, "PMIX_NAMESPACE=1285554177", "OMPI_MCA_ess_base_jobid=1285554177"}});
  ASSERT_STR_EQ(e.token, "pmix:1285554177");
  e = ok((env_t){{RSA, "OMPI_MCA_ess_base_jobid=77"}});
  ASSERT_STR_EQ(e.token, "ompi:77");
  e = ok((env_t){{RSA, "SLURM_JOB_ID=123", "SLURM_STEP_ID=4"}});
  ASSERT_STR_EQ(e.token, "slurm:123.4");
  e = ok((env_t){{RSA, "SLURM_JOB_ID=123"}});
  ASSERT_STR_EQ(e.token, "slurm:123");
  bad((env_t){{RSA}}, "MGCOMM_JOB_TOKEN", NULL);
  char long_token[MG_STORE_TOKEN_MAX + 40];
  snprintf(long_token, sizeof long_token, "MGCOMM_JOB_TOKEN=%0*d", MG_STORE_TOKEN_MAX + 1, 0);
  bad((env_t){{RSA, long_token}}, "MGCOMM_JOB_TOKEN", "longer");
}

/* The real call, in this process, with an environment that cannot work: it must say why at once
 * (no waiting), and write nothing. */
static void test_init_env_errors(void) {
  mg_comm_t *comm = (mg_comm_t *)&comm;
  unsetenv("MGCOMM_STORE");
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_env(NULL, &comm));
  ASSERT_CONTAINS(mg_last_error(), "mg_comm_init_env");
  ASSERT_CONTAINS(mg_last_error(), "MGCOMM_STORE");
  ASSERT(comm == (mg_comm_t *)&comm);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_env(NULL, NULL));
  mg_config_t bad_cfg = MG_CONFIG_INIT;
  bad_cfg.version = 99;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_init_env(&bad_cfg, &comm));
  mg_config_t neg = MG_CONFIG_INIT;
  neg.timeout_s = -1;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_env(&neg, &comm));
  ASSERT(comm == (mg_comm_t *)&comm);
}

int main(void) {
  test_launchers();
  test_bad_rank_size();
  test_addresses();
  test_tokens();
  test_init_env_errors();
  printf("boot_env: ok\n");
  return 0;
}
