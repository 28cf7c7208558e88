/*
 * bench.c -- `mgcomm bench`: options, the choice of backend and of how ranks run, and the exit
 * code (0 all good, 1 a wrong result or a failure while running, 2 bad input: one line on
 * stderr). With no arguments it runs the quick default: all_reduce, all_gather and
 * reduce_scatter of float32 from 8 B to 64 MiB by factor 4, on the best backend available:
 * every GPU of the machine on the NCCL backend, else 2 threads on the host backend.
 *
 * Ranks are GPUs of this process (-g, and the default when auto picks NCCL), threads of this
 * process (-t, the default on the host backend), the workers of one world (--world, on either
 * backend), or, when a launcher made this process one rank of a job and neither -t, -g nor
 * --world is given, processes: one rank each, from mg_comm_init_env (host backend only).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

#define MG_BENCH_MAX_RANKS 1024  /* threads of one process */
#define MG_BENCH_MAX_SIZES 10000 /* lines of one sweep: more is a typo, not a benchmark */

static const char mg_bench_usage[] =
    "usage: mgcomm bench [-c coll[,coll...]] [-b minbytes] [-e maxbytes] [-f factor | -i increment]\n"
    "                    [-d dtype] [-o op] [-r root] [--backend auto|host|nccl] [-g ngpus | -t nthreads]\n"
    "                    [--world] [-n iters] [-w warmup] [--inplace 0|1|both] [--check 0|1]\n"
    "                    [--timing loop|median] [--algo nccl|mgcomm|auto[,...]]\n"
    "                    [--json FILE] [--csv FILE]\n"
    "\n"
    "Measures mgcomm's collectives as nccl-tests does (same columns, units and bus-bandwidth\n"
    "factors) and checks every result. With no arguments: a quick default run.\n"
    "Under a launcher (mgcomm launch, mpirun, torchrun, srun: MGCOMM_RANK, RANK,\n"
    "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID set) and without -t, -g or --world, each\n"
    "process is one rank (mg_comm_init_env) and rank 0 prints.\n"
    "\n"
    "  -c  collectives, comma-separated, or all: all_reduce all_gather reduce_scatter all_to_all\n"
    "      broadcast reduce gather scatter sendrecv (default all_reduce,all_gather,reduce_scatter)\n"
    "  -b, -e  smallest and largest size in bytes, with K, M or G (default 8 and 64M)\n"
    "  -f  multiply the size by this factor, >= 2 (default 4); -i  add this many bytes instead\n"
    "  -d  data type: float32 (default), float16, bfloat16, float64, float8_e4m3, float8_e5m2,\n"
    "      int8, uint8, int32, uint32, int64, uint64 (or nccl-tests' names: float, half, ...)\n"
    "  -o  reduction: sum (default), prod, max, min, avg\n"
    "  -r  root of broadcast, reduce, gather, scatter (default 0)\n"
    "  --backend  auto (default: NCCL when a GPU and NCCL are usable, else host; MGCOMM_BACKEND\n"
    "      overrides), host, nccl\n"
    "  -t  ranks as threads of this process on the host backend (default 2)\n"
    "  -g  ranks as GPUs 0 .. N-1 of this process on the NCCL backend (default: every GPU), all\n"
    "      posted from one thread in one group per iteration, timed with CUDA events\n"
    "  --world  run through a world (mg_world_create, mg_world_<op>, mg_request_wait) from one\n"
    "      thread; its ranks are GPUs (-g, as above) or worker threads (-t, default 2)\n"
    "  -n, -w  timed and warm-up iterations per size (default adaptive: up to 20 and 5,\n"
    "      fewer for large sizes)\n"
    "  --inplace  0 out of place only, 1 in place only, both (default)\n"
    "  --check  1 checks every result (default), 0 does not\n"
    "  --timing  -g: loop (default) times the batch between two CUDA events and divides by its\n"
    "      iterations, as nccl-tests does; median times each iteration and reports the median\n"
    "  --algo  nccl, mgcomm, auto, or a comma-separated list of them: the NCCL backend's\n"
    "      all_reduce (config->all_reduce_algo; default: MGCOMM_ALGO, else auto). With several,\n"
    "      the sweep runs once per value (all_reduce only after the first) on communicators of\n"
    "      their own, then compares all_reduce's time per size\n"
    "  --json FILE, --csv FILE  also write the results there (fields: docs/bench.md)\n"
    "\n"
    "Exit code: 0 ok, 1 a wrong result or a failure while running, 2 bad input.\n";

/* The line goes out in one write(2): ranks of a job share stderr, and a line written in pieces
 * interleaves with theirs. */
int mg_bench_bad(const char *fmt, ...) {
  char line[1024];
  int p = snprintf(line, sizeof line, "mgcomm bench: ");
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(line + p, sizeof line - (size_t)p - 1, fmt, ap);
  va_end(ap);
  size_t n = (size_t)p + (len < 0 ? 0 : (size_t)len);
  if (n > sizeof line - 2) n = sizeof line - 2; /* cut, still one line */
  line[n++] = '\n';
  for (size_t off = 0; off < n;) {
    ssize_t w = write(2, line + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break; /* stderr is gone: the exit code still says it */
    off += (size_t)w;
  }
  return 2;
}

/* A size with an optional K, M or G (powers of 1024). 0 or -1. */
static int mg_bench_parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  if (*s < '0' || *s > '9') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0) return -1;
  unsigned shift = 0;
  switch (*end) {
    case 'k': case 'K': shift = 10, end++; break;
    case 'm': case 'M': shift = 20, end++; break;
    case 'g': case 'G': shift = 30, end++; break;
    default: break;
  }
  if (*end != '\0' || v > (SIZE_MAX >> shift)) return -1;
  *out = (size_t)v << shift;
  return 0;
}

/* An int in [lo, hi]. 0 or -1. */
static int mg_bench_parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static int mg_bench_parse_colls(const char *list, mg_bench_opts_t *o) {
  o->ncolls = 0;
  if (strcmp(list, "all") == 0) {
    for (int c = 0; c < MG_BENCH_COLL_COUNT; c++) o->colls[o->ncolls++] = c;
    return 0;
  }
  char buf[256];
  if (strlen(list) >= sizeof buf) return mg_bench_bad("-c '%.40s...': too long", list);
  strcpy(buf, list);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int c = mg_bench_coll_from_name(tok);
    if (c < 0)
      return mg_bench_bad("unknown collective '%s' (all_reduce, all_gather, reduce_scatter, "
                          "all_to_all, broadcast, reduce, gather, scatter, sendrecv, all)", tok);
    for (int i = 0; i < o->ncolls; i++)
      if (o->colls[i] == c) return mg_bench_bad("-c names %s twice", tok);
    o->colls[o->ncolls++] = c;
  }
  return o->ncolls ? 0 : mg_bench_bad("-c '%s' names no collective", list);
}

/* --algo's list into o->algos (the names of mg_bench_algo_name); 0, or 2 after one line on
 * stderr. */
static int mg_bench_parse_algos(const char *list, mg_bench_opts_t *o) {
  char buf[64];
  if (strlen(list) >= sizeof buf) return mg_bench_bad("--algo '%.40s...': too long", list);
  strcpy(buf, list);
  o->nalgos = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    mg_algo_t a = MG_ALGO_AUTO;
    while (a <= MG_ALGO_MGCOMM && strcmp(tok, mg_bench_algo_name(a)) != 0) a++;
    if (a > MG_ALGO_MGCOMM)
      return mg_bench_bad("--algo: unknown all_reduce '%s' (nccl, mgcomm, auto)", tok);
    for (int i = 0; i < o->nalgos; i++)
      if (o->algos[i] == a) return mg_bench_bad("--algo names %s twice", tok);
    o->algos[o->nalgos++] = a;
  }
  return o->nalgos ? 0 : mg_bench_bad("--algo '%s' names no all_reduce", list);
}

/* The launcher variable that makes this process one rank of a job (mg_comm_init_env's sets, in
 * its order: mgcomm launch, torchrun, Open MPI, PMI, Slurm), or NULL. Empty counts as unset, as
 * there. */
static const char *mg_bench_rank_var(void) {
  static const char *const vars[] = {"MGCOMM_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                     "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v != NULL && v[0] != '\0') return vars[i];
  }
  return NULL;
}

/* Parses argv into o; 0, or 2 after one line on stderr. *help is set by -h / --help. */
static int mg_bench_parse(int argc, char **argv, mg_bench_opts_t *o, mg_bench_report_t *rep,
                          int *help) {
  int threads = 0, gpus = 0, world = 0;
  size_t factor = 0, increment = 0;
  const char *backend = "auto";
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      *help = 1;
      return 0;
    }
    if (strcmp(a, "--world") == 0) {
      world = 1;
      continue;
    }
    if (i + 1 >= argc) return mg_bench_bad("%s: unknown option, or it needs a value", a);
    const char *v = argv[++i];
    int bad = 0;
    if (strcmp(a, "-c") == 0) {
      if (mg_bench_parse_colls(v, o) != 0) return 2;
    } else if (strcmp(a, "-b") == 0) {
      bad = mg_bench_parse_size(v, &o->minbytes);
    } else if (strcmp(a, "-e") == 0) {
      bad = mg_bench_parse_size(v, &o->maxbytes);
    } else if (strcmp(a, "-f") == 0) {
      int f;
      if (mg_bench_parse_int(v, INT_MIN, INT_MAX, &f) != 0)
        return mg_bench_bad("-f '%s': the factor must be an integer, from 2 to %d", v, INT_MAX);
      if (f < 2) return mg_bench_bad("-f %d: the factor must be at least 2", f);
      factor = (size_t)f;
    } else if (strcmp(a, "-i") == 0) {
      bad = mg_bench_parse_size(v, &increment) || increment == 0;
    } else if (strcmp(a, "-d") == 0) {
      if (mg_dtype_from_name(v, &o->dtype) != MG_OK)
        return mg_bench_bad("unknown data type '%s' (float32, float16, bfloat16, float64, "
                            "float8_e4m3, float8_e5m2, int8, uint8, int32, uint32, int64, uint64)", v);
    } else if (strcmp(a, "-o") == 0) {
      if (mg_op_from_name(v, &o->op) != MG_OK)
        return mg_bench_bad("unknown reduction op '%s' (sum, prod, max, min, avg)", v);
    } else if (strcmp(a, "-r") == 0) {
      bad = mg_bench_parse_int(v, 0, INT_MAX, &o->root);
    } else if (strcmp(a, "--backend") == 0) {
      if (strcmp(v, "auto") != 0 && strcmp(v, "host") != 0 && strcmp(v, "nccl") != 0)
        return mg_bench_bad("--backend '%s': auto, host or nccl", v);
      backend = v;
    } else if (strcmp(a, "-t") == 0) {
      bad = mg_bench_parse_int(v, 1, MG_BENCH_MAX_RANKS, &threads);
    } else if (strcmp(a, "-g") == 0) {
      bad = mg_bench_parse_int(v, 1, MG_BENCH_MAX_RANKS, &gpus);
    } else if (strcmp(a, "-n") == 0) {
      bad = mg_bench_parse_int(v, 1, 1000000, &o->iters);
    } else if (strcmp(a, "-w") == 0) {
      bad = mg_bench_parse_int(v, 0, 1000000, &o->warmup);
    } else if (strcmp(a, "--inplace") == 0) {
      if (strcmp(v, "0") == 0) o->inplace_modes = 1;
      else if (strcmp(v, "1") == 0) o->inplace_modes = 2;
      else if (strcmp(v, "both") == 0) o->inplace_modes = 3;
      else bad = 1;
    } else if (strcmp(a, "--timing") == 0) {
      if (strcmp(v, "loop") == 0) o->per_iter = 0;
      else if (strcmp(v, "median") == 0) o->per_iter = 1;
      else return mg_bench_bad("--timing '%s': loop or median", v);
    } else if (strcmp(a, "--check") == 0) {
      bad = mg_bench_parse_int(v, 0, 1, &o->check);
    } else if (strcmp(a, "--algo") == 0) {
      if (mg_bench_parse_algos(v, o) != 0) return 2;
    } else if (strcmp(a, "--json") == 0) {
      rep->json_path = v;
    } else if (strcmp(a, "--csv") == 0) {
      rep->csv_path = v;
    } else {
      return mg_bench_bad("unknown option '%s'", a);
    }
    if (bad) return mg_bench_bad("%s '%s': not a valid value", a, v);
  }

  if (factor && increment) return mg_bench_bad("-f and -i exclude each other");
  if (increment) o->factor = 0, o->increment = increment;
  if (factor) o->factor = factor;
  if (o->minbytes > o->maxbytes)
    return mg_bench_bad("-b %zu is larger than -e %zu", o->minbytes, o->maxbytes);
  if (o->factor && o->minbytes == 0) return mg_bench_bad("-b 0 with a factor: sizes never grow");
  if (o->increment && (o->maxbytes - o->minbytes) / o->increment >= MG_BENCH_MAX_SIZES)
    return mg_bench_bad("-b, -e and -i give more than %d sizes", MG_BENCH_MAX_SIZES);
  if (threads && gpus) return mg_bench_bad("-t and -g exclude each other");

  /* Backend and ranks. */
  mg_backend_t want = strcmp(backend, "host") == 0   ? MG_BACKEND_HOST
                      : strcmp(backend, "nccl") == 0 ? MG_BACKEND_NCCL
                                                     : MG_BACKEND_AUTO;
  if (gpus) {
    if (want == MG_BACKEND_HOST) return mg_bench_bad("-g: GPUs need the nccl backend, not host");
    want = MG_BACKEND_NCCL;
  }
  if (threads && want == MG_BACKEND_NCCL)
    return mg_bench_bad("-t: ranks as threads run on the host backend, not nccl");
  if (threads) want = MG_BACKEND_HOST;
  mg_status_t st = mg_backend_resolve(want, &o->backend, o->backend_reason,
                                      sizeof o->backend_reason);
  if (st != MG_OK) {
    if (gpus) return mg_bench_bad("-g %d: %s", gpus, mg_last_error());
    return mg_bench_bad("%s", mg_last_error());
  }
  const char *env = getenv("MGCOMM_BACKEND");
  const int asked = want != MG_BACKEND_AUTO || (env != NULL && env[0] != '\0' &&
                                                strcmp(env, "auto") != 0);
  o->rank_var = mg_bench_rank_var();
  const int procs = !world && o->rank_var != NULL && !threads && !gpus;
  if (o->backend == MG_BACKEND_NCCL && procs) {
    /* One GPU per process needs device buffers and a time rule across processes that this
     * version does not have. */
    if (asked)
      return mg_bench_bad("the nccl backend was chosen (%s), but ranks as processes (%s is set) "
                          "run on the host backend only in this version: use --backend host, or "
                          "run one process with -g", o->backend_reason, o->rank_var);
    o->backend = MG_BACKEND_HOST;
    snprintf(o->backend_reason, sizeof o->backend_reason,
             "auto would pick nccl here, but ranks as processes (%s is set) run on the host "
             "backend in this version of mgcomm bench", o->rank_var);
  }
  if (world) {
    o->ranks = MG_BENCH_WORLD;
  } else if (procs) {
    o->ranks = MG_BENCH_PROCESSES;
    return 0; /* the number of ranks, and so the root's check, come with the communicator */
  } else if (o->backend == MG_BACKEND_NCCL) {
    o->ranks = MG_BENCH_GPUS;
  }
  if (o->backend == MG_BACKEND_NCCL) {
    int count = 0;
    st = mg_device_count(&count);
    if (st != MG_OK)
      return mg_bench_bad("the nccl backend was chosen (%s), but the GPUs cannot be counted: %s",
                          o->backend_reason, mg_last_error());
    if (count < 1)
      return mg_bench_bad("the nccl backend was chosen (%s), but this machine has no GPU",
                          o->backend_reason);
    if (gpus > count)
      return mg_bench_bad("-g %d: this machine has %d GPU%s", gpus, count, count == 1 ? "" : "s");
    o->nranks = gpus ? gpus : count;
  } else {
    o->nranks = threads ? threads : 2;
  }
  if (o->root >= o->nranks)
    return mg_bench_bad("-r %d is not a rank of %d", o->root, o->nranks);
  if (o->nalgos > 0 && o->backend != MG_BACKEND_NCCL)
    return mg_bench_bad("--algo chooses the NCCL backend's all_reduce, but the backend is %s (%s)",
                        mg_backend_name(o->backend), o->backend_reason);
  int with_all_reduce = 0;
  for (int i = 0; i < o->ncolls; i++) with_all_reduce |= o->colls[i] == MG_BENCH_ALL_REDUCE;
  if (o->nalgos > 1 && !with_all_reduce)
    return mg_bench_bad("--algo with several values compares all_reduce: -c must include it");
  return 0;
}

int mg_cli_bench(int argc, char **argv) {
  if (argc > 0 && strcmp(argv[0], "shmem") == 0) return mg_cli_bench_shmem(argc - 1, argv + 1);
  mg_bench_opts_t o = {
      .colls = {MG_BENCH_ALL_REDUCE, MG_BENCH_ALL_GATHER, MG_BENCH_REDUCE_SCATTER},
      .ncolls = 3,
      .minbytes = 8,
      .maxbytes = (size_t)64 << 20,
      .factor = 4,
      .dtype = MG_FLOAT32,
      .op = MG_SUM,
      .iters = -1,
      .warmup = -1,
      .inplace_modes = 3,
      .check = 1,
      .quick_default = argc == 0,
  };
  mg_bench_report_t rep = {0};
  int help = 0;
  if (mg_bench_parse(argc, argv, &o, &rep, &help) != 0) return 2;
  if (help) {
    fputs(mg_bench_usage, stdout);
    return 0;
  }
  /* One sweep, or one per --algo value (only all_reduce after the first: the others do not
   * depend on it); the report's rows accumulate, so its files end with every sweep's. */
  int status = 0;
  for (int a = 0; a < (o.nalgos > 0 ? o.nalgos : 1) && status != 2; a++) {
    o.algo = o.nalgos > 0 ? o.algos[a] : MG_ALGO_DEFAULT;
    if (a == 1) {
      o.colls[0] = MG_BENCH_ALL_REDUCE;
      o.ncolls = 1;
      printf("#\n");
    }
    int st = 1;
    switch (o.ranks) {
      case MG_BENCH_THREADS: st = mg_bench_run_threads(&o, &rep); break;
      case MG_BENCH_PROCESSES: st = mg_bench_run_processes(&o, &rep); break;
      case MG_BENCH_WORLD: st = mg_bench_run_world(&o, &rep); break;
      case MG_BENCH_GPUS: st = mg_bench_run_gpus(&o, &rep); break;
    }
    if (st > status) status = st;
  }
  if (o.nalgos > 1 && status != 2) mg_bench_print_algos(stdout, &o, &rep.res);
  free(rep.res.rows);
  free(o.gpus);
  return status;
}
