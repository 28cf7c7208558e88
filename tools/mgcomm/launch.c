/*
 * launch.c -- `mgcomm launch -n N [options] [--] program [args...]`: starts N processes of one
 * job on this machine, as `torchrun --standalone --nproc-per-node N` does, for mg_comm_init_env.
 *
 * Divisions: messages; options; the job's environment; starting a rank; output tagging; signals
 * and the supervision loop; shared memory the job left; the entry point.
 *
 * Supervision: each rank runs in its own process group (so that a terminal's Ctrl-C reaches it
 * once, through the launcher, and reaches its own children too), with stdin on /dev/null, and
 * dies with the launcher (PR_SET_PDEATHSIG). The launcher waits in poll(2) on a self-pipe that
 * its signal handlers write to, and on the ranks' output pipes when tagging. SIGINT and SIGTERM
 * are forwarded to every rank; a second one kills them. When a rank fails (non-zero exit or a
 * signal), the others get SIGTERM, and SIGKILL after the grace period. The launcher exits with
 * the first failure's status (its exit code, or 128 + its signal), else 0.
 *
 * What the launcher signals is exactly what it started: the process groups of its ranks, those
 * of ranks that already exited included (their children live on in them). A rank is forked with
 * every signal blocked and unblocks them only after it has its own group and default handlers,
 * so a signal sent to it early is never taken by the launcher's handler in the child. Once the
 * job is being stopped, the launcher returns only when every one of those groups is empty
 * (SIGKILL after the grace period for what is left). It is the subreaper of its job, so the
 * orphaned children of dead ranks are reaped here, not left as zombies.
 *
 * Shared memory needs nothing of the launcher: the host backend's segments have no name that a
 * stopped job could leave behind (src/backend/host/host_meet.c).
 *
 * Uses the public API only (mgcomm.h), and not even that much: a launcher needs no library state.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mgcomm.h"

#define MG_LAUNCH_MAX_RANKS 1024
#define MG_LAUNCH_LINE_MAX 65536 /* a longer line is cut into pieces, each tagged */

/* ---- messages ----------------------------------------------------------------------------- */

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* our own output is gone (closed pipe): nothing else to do with it */
    p += w;
    n -= (size_t)w;
  }
}

/* A message on stderr in one write(2), so that it never mixes with the ranks' lines (stderr is
 * shared with them unless tagging). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char b[1024];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  if (len < 0) return;
  if ((size_t)len >= sizeof b) { /* cut: still one line */
    len = (int)sizeof b - 1;
    b[len - 1] = '\n';
  }
  write_all(2, b, (size_t)len);
}

/* ---- options ------------------------------------------------------------------------------ */

typedef struct {
  int nproc;
  const char *store;    /* --store host:port, or NULL: 127.0.0.1 and a free port */
  int tag;              /* --tag-output */
  double grace_s;       /* --grace */
  int bind;             /* --bind core: rank r on the r-th CPU the launcher may use */
  char **argv;          /* the program and its arguments */
} mg_launch_opts_t;

static void launch_usage(FILE *f) {
  fprintf(f,
          "usage: mgcomm launch -n N [options] [--] program [args...]\n"
          "\n"
          "Starts N processes of one job on this machine (as torchrun --standalone\n"
          "--nproc-per-node N does) for programs that call mg_comm_init_env.\n"
          "\n"
          "options:\n"
          "  -n, --nproc N        number of processes (ranks), 1..%d\n"
          "  --store HOST:PORT    where rank 0 serves the job's store (default: 127.0.0.1 and a\n"
          "                       free port)\n"
          "  -t, --tag-output     prefix every line the ranks print with [rank]\n"
          "  --grace S            seconds between SIGTERM and SIGKILL when ranks are stopped\n"
          "                       (default 5)\n"
          "  --bind core|none     core: bind rank r to the r-th CPU this launcher may use (as\n"
          "                       mpirun --bind-to core), not done when the ranks outnumber\n"
          "                       the CPUs; none (default): the ranks run anywhere\n"
          "  -h, --help           this text\n"
          "\n"
          "Each process gets MGCOMM_RANK, MGCOMM_WORLD_SIZE, MGCOMM_LOCAL_RANK, MGCOMM_STORE and\n"
          "MGCOMM_JOB_TOKEN (random, unless already set), and torchrun's RANK, WORLD_SIZE,\n"
          "LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; stdin is /dev/null.\n"
          "SIGINT and SIGTERM are forwarded to every rank (a second one kills them). When a rank\n"
          "fails, the others are stopped. Exit status: 0 when every rank exits 0, else the first\n"
          "failure's exit code (128 + N for signal N); 2 for a usage error, 1 when the job cannot\n"
          "be started, 127 when the program cannot be run.\n",
          MG_LAUNCH_MAX_RANKS);
}

/* The value of option `name` at argv[*i]: "--name=v", "--name v", "-xv" or "-x v". */
static const char *opt_value(int argc, char **argv, int *i, const char *lng, const char *shrt) {
  const char *a = argv[*i];
  size_t ll = lng ? strlen(lng) : 0;
  if (lng && strncmp(a, lng, ll) == 0 && a[ll] == '=') return a + ll + 1;
  if (shrt && strncmp(a, shrt, 2) == 0 && a[2] != '\0') return a + 2;
  if ((lng && strcmp(a, lng) == 0) || (shrt && strcmp(a, shrt) == 0)) {
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
  }
  return NULL;
}

static int is_opt(const char *a, const char *lng, const char *shrt) {
  size_t ll = lng ? strlen(lng) : 0;
  if (lng && strncmp(a, lng, ll) == 0 && (a[ll] == '\0' || a[ll] == '=')) return 1;
  return shrt && strncmp(a, shrt, 2) == 0;
}

/* 0, or 2 (usage) after printing why. */
static int parse_opts(int argc, char **argv, mg_launch_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->grace_s = 5.0;
  int i = 0;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-') break;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      launch_usage(stdout);
      return -1;
    }
    if (strcmp(a, "-t") == 0 || strcmp(a, "--tag-output") == 0) {
      o->tag = 1;
    } else if (is_opt(a, "--nproc", "-n") || is_opt(a, "--nproc-per-node", NULL)) {
      const char *v = opt_value(argc, argv, &i, is_opt(a, "--nproc-per-node", NULL)
                                                    ? "--nproc-per-node" : "--nproc", "-n");
      char *end = NULL;
      long n = v ? strtol(v, &end, 10) : 0;
      if (v == NULL || *v == '\0' || *end != '\0' || n < 1 || n > MG_LAUNCH_MAX_RANKS) {
        say("mgcomm launch: -n wants a number of processes in 1..%d, not '%s'\n",
            MG_LAUNCH_MAX_RANKS, v ? v : "");
        return 2;
      }
      o->nproc = (int)n;
    } else if (is_opt(a, "--store", NULL)) {
      o->store = opt_value(argc, argv, &i, "--store", NULL);
      if (o->store == NULL) {
        say("mgcomm launch: --store wants host:port\n");
        return 2;
      }
    } else if (is_opt(a, "--bind", NULL)) {
      const char *v = opt_value(argc, argv, &i, "--bind", NULL);
      if (v == NULL || (strcmp(v, "core") != 0 && strcmp(v, "none") != 0)) {
        say("mgcomm launch: --bind wants core or none, not '%s'\n", v ? v : "");
        return 2;
      }
      o->bind = strcmp(v, "core") == 0;
    } else if (is_opt(a, "--grace", NULL)) {
      const char *v = opt_value(argc, argv, &i, "--grace", NULL);
      char *end = NULL;
      double g = v ? strtod(v, &end) : -1;
      if (v == NULL || *v == '\0' || *end != '\0' || !(g >= 0 && g <= 3600)) {
        say("mgcomm launch: --grace wants seconds in 0..3600, not '%s'\n", v ? v : "");
        return 2;
      }
      o->grace_s = g;
    } else {
      say("mgcomm launch: unknown option '%s' (see mgcomm launch --help)\n", a);
      return 2;
    }
  }
  if (o->nproc == 0) {
    say("mgcomm launch: -n N is required (see mgcomm launch --help)\n");
    return 2;
  }
  if (i >= argc) {
    say("mgcomm launch: no program to run (see mgcomm launch --help)\n");
    return 2;
  }
  o->argv = argv + i;
  return 0;
}

/* ---- the job's environment ---------------------------------------------------------------- */

typedef struct {
  char store[300];       /* MGCOMM_STORE */
  char master_addr[280]; /* MASTER_ADDR: the host, without IPv6 brackets */
  char master_port[8];   /* MASTER_PORT */
  char token[80];        /* MGCOMM_JOB_TOKEN, when we make one */
} mg_launch_job_t;

/* A free TCP port of 127.0.0.1, from the kernel. Rank 0 binds it a moment later; another process
 * taking it in between makes rank 0's init fail with a message naming the address. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
      getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
    port = ntohs(sa.sin_port);
  close(fd); /* only probed: never connected */
  return port;
}

static int job_setup(const mg_launch_opts_t *o, mg_launch_job_t *job) {
  memset(job, 0, sizeof *job);
  if (o->store != NULL) {
    const char *colon = strrchr(o->store, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    int bracketed = o->store[0] == '[';
    size_t hlen = colon ? (size_t)(colon - o->store) : 0;
    if (colon == NULL || hlen == 0 || colon[1] == '\0' || *end != '\0' || port < 1 ||
        port > 65535 || hlen >= sizeof job->master_addr ||
        (bracketed && (hlen < 3 || o->store[hlen - 1] != ']'))) {
      say("mgcomm launch: --store '%s' is not host:port ([v6]:port for IPv6)\n", o->store);
      return 2;
    }
    snprintf(job->store, sizeof job->store, "%s", o->store);
    if (bracketed)
      snprintf(job->master_addr, sizeof job->master_addr, "%.*s", (int)(hlen - 2), o->store + 1);
    else
      snprintf(job->master_addr, sizeof job->master_addr, "%.*s", (int)hlen, o->store);
    snprintf(job->master_port, sizeof job->master_port, "%ld", port);
  } else {
    int port = free_port();
    if (port < 0) {
      say("mgcomm launch: cannot find a free port on 127.0.0.1: %s\n", strerror(errno));
      return 1;
    }
    snprintf(job->store, sizeof job->store, "127.0.0.1:%d", port);
    snprintf(job->master_addr, sizeof job->master_addr, "127.0.0.1");
    snprintf(job->master_port, sizeof job->master_port, "%d", port);
  }
  const char *have = getenv("MGCOMM_JOB_TOKEN");
  if (have == NULL || have[0] == '\0') {
    unsigned char r[32];
    size_t got = 0;
    while (got < sizeof r) {
      ssize_t n = getrandom(r + got, sizeof r - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        say("mgcomm launch: no randomness for the job token: %s\n", strerror(errno));
        return 1;
      }
      got += (size_t)n;
    }
    for (size_t k = 0; k < sizeof r; k++) snprintf(job->token + 2 * k, 3, "%02x", r[k]);
  }
  return 0;
}

/* ---- starting a rank ---------------------------------------------------------------------- */

typedef struct {
  pid_t pid;          /* 0 once reaped */
  pid_t pgid;         /* its process group (its pid), kept after it exits, for its children;
                         0 before it has one and once the group is found empty (an empty group
                         never fills again: nothing can join a group that does not exist) */
  int out_fd, err_fd; /* tagging: read ends of its stdout and stderr pipes, -1 when closed */
  char *line[2];      /* tagging: the partial line of each stream */
  size_t line_len[2];
  int status;         /* from waitpid, once reaped */
  int failed;         /* exited non-zero or by a signal */
} mg_rank_t;

/* In the child, before exec. setenv fails only for want of memory; the program then misses a
 * variable and mg_comm_init_env names it. */
static void set_env_int(const char *name, int v) {
  char b[16];
  snprintf(b, sizeof b, "%d", v);
  (void)setenv(name, b, 1);
}

/* In the child: binds it to the rank-th CPU of the set it inherited from the launcher (which
 * checked that there are enough). A failure is said, and the rank runs unbound. */
static void bind_rank(int rank) {
  cpu_set_t allowed, one;
  CPU_ZERO(&one);
  int seen = -1, cpu = -1;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
      if (CPU_ISSET(c, &allowed) && ++seen == rank) cpu = c;
  if (cpu >= 0) CPU_SET(cpu, &one);
  if (cpu < 0 || sched_setaffinity(0, sizeof one, &one) != 0)
    (void)dprintf(2, "mgcomm launch: rank %d: cannot bind to a CPU of its own (%s): unbound\n",
                  rank, cpu < 0 ? "no CPU left" : strerror(errno));
}

/* The CPUs this process may run on, or 0 when the kernel does not say. */
static int allowed_cpus(void) {
  cpu_set_t allowed;
  return sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : 0;
}

/* In the child: never returns. It starts with every signal blocked (the launcher forks so):
 * until its handlers are the defaults and it is in its own group, a signal meant for it stays
 * pending, and is taken by the default action once `mask` (the launcher's own) is restored. */
static void run_rank(const mg_launch_opts_t *o, const mg_launch_job_t *job, int rank, int out_w,
                     int err_w, pid_t launcher, const sigset_t *mask) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  int sigs[] = {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP};
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
    (void)sigaction(sigs[k], &sa, NULL); /* valid signals and a valid action: cannot fail */
  /* Also done by the parent; whichever runs second finds the group made, and either may fail
   * (the parent with EACCES once we have exec'd). */
  (void)setpgid(0, 0);
  /* Die with the launcher; if it already died (the race before prctl), go now. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != launcher) _exit(127);
  (void)sigprocmask(SIG_SETMASK, mask, NULL); /* a valid set: cannot fail */
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) (void)dup2(devnull, 0); /* failing, stdin stays the launcher's: harmless */
  if (out_w >= 0 && dup2(out_w, 1) < 0) _exit(127);
  if (err_w >= 0 && dup2(err_w, 2) < 0) _exit(127);
  if (o->bind) bind_rank(rank);
  int n = o->nproc;
  set_env_int("MGCOMM_RANK", rank);
  set_env_int("MGCOMM_WORLD_SIZE", n);
  set_env_int("MGCOMM_LOCAL_RANK", rank);
  (void)setenv("MGCOMM_STORE", job->store, 1); /* as set_env_int */
  if (job->token[0] != '\0') (void)setenv("MGCOMM_JOB_TOKEN", job->token, 1);
  set_env_int("RANK", rank);
  set_env_int("WORLD_SIZE", n);
  set_env_int("LOCAL_RANK", rank);
  set_env_int("LOCAL_WORLD_SIZE", n);
  (void)setenv("MASTER_ADDR", job->master_addr, 1); /* as set_env_int */
  (void)setenv("MASTER_PORT", job->master_port, 1);
  execvp(o->argv[0], o->argv);
  int e = errno;
  /* The exit status says it too, if stderr is gone. */
  (void)dprintf(2, "mgcomm launch: rank %d: cannot run '%s': %s\n", rank, o->argv[0], strerror(e));
  _exit(e == ENOENT ? 127 : 126);
}

/* ---- output tagging ----------------------------------------------------------------------- */

/* Writes "[rank] " + line + "\n" in one write, so lines of different ranks never mix. */
static void emit_line(int fd, int rank, const char *line, size_t len) {
  char *b = malloc(len + 32);
  if (b == NULL) return; /* out of memory: the line is lost, the job goes on */
  int p = snprintf(b, 32, "[%d] ", rank);
  memcpy(b + p, line, len);
  b[(size_t)p + len] = '\n';
  write_all(fd, b, (size_t)p + len + 1);
  free(b);
}

/* Reads what stream s (0 stdout, 1 stderr) of rank r has; emits whole lines; closes the stream at
 * its end, after the last partial line. */
static void pump(mg_rank_t *r, int rank, int s) {
  int fd = s == 0 ? r->out_fd : r->err_fd;
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    if (r->line_len[s] > 0) emit_line(s == 0 ? 1 : 2, rank, r->line[s], r->line_len[s]);
    r->line_len[s] = 0;
    close(fd); /* read end of our own pipe */
    if (s == 0) r->out_fd = -1; else r->err_fd = -1;
    return;
  }
  for (ssize_t k = 0; k < n; k++) {
    if (buf[k] == '\n' || r->line_len[s] == MG_LAUNCH_LINE_MAX) {
      emit_line(s == 0 ? 1 : 2, rank, r->line[s], r->line_len[s]);
      r->line_len[s] = 0;
      if (buf[k] == '\n') continue;
    }
    r->line[s][r->line_len[s]++] = buf[k];
  }
}

/* ---- signals and the supervision loop ----------------------------------------------------- */

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig) {
  int saved = errno;
  unsigned char b = (unsigned char)sig;
  ssize_t w = write(sig_pipe[1], &b, 1); /* a full pipe already holds a wake-up */
  (void)w;
  errno = saved;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

/* Sends sig to the process group of every rank, exited ranks' included (sig 0 sends nothing);
 * returns how many groups still have members. */
static int signal_groups(mg_rank_t *ranks, int n, int sig) {
  int left = 0;
  for (int i = 0; i < n; i++) {
    if (ranks[i].pgid <= 0) continue;
    if (kill(-ranks[i].pgid, sig) == 0 || errno != ESRCH)
      left++; /* EPERM: members that changed their credentials; they are still there */
    else
      ranks[i].pgid = 0;
  }
  return left;
}

/* The group of a rank that exited stays the job's while it has members (their children); once
 * empty, its number is free for an unrelated group to take. It is checked after each reap and
 * every second, and forgotten once empty, so that a stop never reaches a stranger. Returns how
 * many such groups still have members. */
static int check_exited_groups(mg_rank_t *ranks, int n) {
  int left = 0;
  for (int i = 0; i < n; i++) {
    if (ranks[i].pid != 0 || ranks[i].pgid <= 0) continue;
    if (kill(-ranks[i].pgid, 0) == 0 || errno != ESRCH)
      left++;
    else
      ranks[i].pgid = 0;
  }
  return left;
}

#define MG_LAUNCH_REAP_S 2.0 /* after SIGKILL: how long to wait for the groups to empty */

/* Sends sig, which may end the job, to every group. */
static void stop_groups(mg_rank_t *ranks, int n, int sig) {
  (void)signal_groups(ranks, n, sig); /* how many are left matters only to the loop's checks */
}

static int supervise(const mg_launch_opts_t *o, mg_rank_t *ranks) {
  int n = o->nproc, live = n, first = -1;
  int forwarded = 0;         /* SIGINT/SIGTERM received and forwarded */
  int stopping = 0;          /* the job is being stopped: return only once its groups are empty */
  double kill_at = 0;        /* when what is left gets SIGKILL; 0 = not pending */
  double killed_at = 0;      /* when SIGKILL was sent; 0 = not yet */
  double drain_until = 0;    /* after the last exit: how long to wait for output to end */
  double groups_check = 0;   /* next check_exited_groups; 0 = none has members */
  struct pollfd *pfds = calloc((size_t)(1 + 2 * n), sizeof *pfds);
  int *who = calloc((size_t)(1 + 2 * n), sizeof *who);
  if (pfds == NULL || who == NULL) {
    say("mgcomm launch: out of memory\n");
    stop_groups(ranks, n, SIGKILL);
    free(pfds);
    free(who);
    return 1;
  }
  for (;;) {
    int open_pipes = 0;
    size_t np = 0;
    pfds[np++] = (struct pollfd){sig_pipe[0], POLLIN, 0};
    for (int i = 0; i < n; i++) {
      for (int k = 0; k < 2; k++) {
        int fd = k == 0 ? ranks[i].out_fd : ranks[i].err_fd;
        if (fd < 0) continue;
        who[np] = 2 * i + k;
        pfds[np++] = (struct pollfd){fd, POLLIN, 0};
      }
    }
    open_pipes = (int)np - 1;
    double now = now_s();
    int groups_wait = 0; /* every rank exited, but a stopped job's groups still have members */
    if (live == 0 && stopping) {
      int left = signal_groups(ranks, n, 0);
      if (left > 0 && (killed_at == 0 || now < killed_at + MG_LAUNCH_REAP_S)) {
        groups_wait = 1;
      } else if (left > 0) {
        say("mgcomm launch: %d process group%s of the job still not empty %g s after SIGKILL\n",
            left, left == 1 ? "" : "s", MG_LAUNCH_REAP_S);
        stopping = 0;
      }
    }
    if (live == 0 && !groups_wait) {
      /* Everybody exited: pass on what they printed last (a grandchild may hold a pipe open, so
       * not for ever). */
      if (open_pipes == 0) break;
      if (drain_until == 0) drain_until = now + 1.0;
      if (now >= drain_until) break;
    }
    double wake = kill_at > 0 ? kill_at : drain_until > 0 ? drain_until : 0;
    if (groups_wait && (wake == 0 || wake > now + 0.05)) wake = now + 0.05; /* no SIGCHLD for
                                                     members that are not our children */
    if (groups_check > 0 && (wake == 0 || wake > groups_check)) wake = groups_check;
    int timeout = wake > 0 ? (int)((wake - now) * 1000) + 1 : -1;
    if (wake > 0 && timeout < 0) timeout = 0;
    int rc = poll(pfds, np, timeout);
    if (rc < 0 && errno != EINTR) {
      say("mgcomm launch: poll: %s\n", strerror(errno));
      stop_groups(ranks, n, SIGKILL);
      stopping = 1;
      kill_at = 0;
      if (killed_at == 0) killed_at = now_s();
    }
    if (rc > 0 && (pfds[0].revents & POLLIN)) {
      unsigned char sigs[64];
      ssize_t got = read(sig_pipe[0], sigs, sizeof sigs);
      for (ssize_t k = 0; k < got; k++) {
        if (sigs[k] != SIGINT && sigs[k] != SIGTERM) continue; /* SIGCHLD: reaped below */
        const char *name = sigs[k] == SIGINT ? "SIGINT" : "SIGTERM";
        if (forwarded) {
          say("mgcomm launch: second %s: killing every rank\n", name);
          stop_groups(ranks, n, SIGKILL);
          kill_at = 0;
          if (killed_at == 0) killed_at = now_s();
          continue;
        }
        forwarded = 1;
        stopping = 1;
        say("mgcomm launch: forwarding %s to %d rank%s\n", name, live, live == 1 ? "" : "s");
        stop_groups(ranks, n, sigs[k]);
        if (kill_at == 0 && killed_at == 0) kill_at = now_s() + o->grace_s;
      }
    }
    for (size_t k = 1; rc > 0 && k < np; k++)
      if (pfds[k].revents) pump(&ranks[who[k] / 2], who[k] / 2, who[k] % 2);
    /* reap: ranks, and the orphans of the job that come to us as its subreaper */
    int reaped = 0;
    for (;;) {
      int status;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      for (int i = 0; i < n; i++) {
        if (ranks[i].pid != pid) continue;
        ranks[i].pid = 0;
        ranks[i].status = status;
        live--;
        reaped = 1;
        if (exit_code_of(status) == 0) break;
        ranks[i].failed = 1;
        if (first >= 0) break;
        first = i;
        char what[96];
        if (WIFSIGNALED(status))
          snprintf(what, sizeof what, "was killed by signal %d (%s)", WTERMSIG(status),
                   strsignal(WTERMSIG(status)));
        else
          snprintf(what, sizeof what, "exited with status %d", WEXITSTATUS(status));
        if (live > 0 && !stopping)
          say("mgcomm launch: rank %d (pid %d) %s; stopping the other %d rank%s (SIGTERM, then "
              "SIGKILL after %g s)\n", i, (int)pid, what, live, live == 1 ? "" : "s", o->grace_s);
        else
          say("mgcomm launch: rank %d (pid %d) %s\n", i, (int)pid, what);
        if (!stopping) {
          /* Also the groups of ranks that exited: their children are part of the job. */
          stopping = 1;
          stop_groups(ranks, n, SIGTERM);
          if (kill_at == 0 && killed_at == 0) kill_at = now_s() + o->grace_s;
        }
        break;
      }
    }
    if (reaped || (groups_check > 0 && now_s() >= groups_check))
      groups_check = check_exited_groups(ranks, n) > 0 ? now_s() + 1.0 : 0;
    if (kill_at > 0 && now_s() >= kill_at) {
      kill_at = 0;
      if (signal_groups(ranks, n, 0) > 0) {
        if (live > 0)
          say("mgcomm launch: %d rank%s still running after %g s: SIGKILL\n", live,
              live == 1 ? "" : "s", o->grace_s);
        else
          say("mgcomm launch: processes the ranks started still running after %g s: SIGKILL\n",
              o->grace_s);
        stop_groups(ranks, n, SIGKILL);
        killed_at = now_s();
      }
    }
  }
  for (int i = 0; i < n; i++) {
    if (ranks[i].out_fd >= 0) close(ranks[i].out_fd); /* our pipe; a grandchild keeps writing */
    if (ranks[i].err_fd >= 0) close(ranks[i].err_fd); /* our pipe; likewise */
  }
  free(pfds);
  free(who);
  return first >= 0 ? exit_code_of(ranks[first].status) : 0;
}

/* ---- the entry point ---------------------------------------------------------------------- */

int mg_cli_launch(int argc, char **argv) {
  mg_launch_opts_t o;
  int rc = parse_opts(argc, argv, &o);
  if (rc != 0) return rc < 0 ? 0 : rc;
  mg_launch_job_t job;
  if ((rc = job_setup(&o, &job)) != 0) return rc;
  if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    say("mgcomm launch: pipe: %s\n", strerror(errno));
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  /* sigaction cannot fail for these valid signals and actions. */
  (void)sigaction(SIGINT, &sa, NULL);
  (void)sigaction(SIGTERM, &sa, NULL);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  (void)sigaction(SIGCHLD, &sa, NULL);
  sa.sa_handler = SIG_IGN;
  sa.sa_flags = 0;
  (void)sigaction(SIGPIPE, &sa, NULL); /* a closed stdout of ours must not kill the job */
  /* The job's orphans (children of ranks that died) come to us, to be reaped in supervise()
   * rather than left as zombies to an init that may not reap. Failing (a kernel without it),
   * they go to init as before. */
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1);

  const int cpus = o.bind ? allowed_cpus() : 0;
  if (o.bind && cpus < o.nproc) {
    say("mgcomm launch: --bind core: %d ranks, %d CPUs to run on: the ranks run unbound\n",
        o.nproc, cpus);
    o.bind = 0;
  }
  mg_rank_t *ranks = calloc((size_t)o.nproc, sizeof *ranks);
  if (ranks == NULL) {
    say("mgcomm launch: out of memory\n");
    return 1;
  }
  (void)fflush(NULL); /* so children do not repeat our buffered output; nothing is buffered yet */
  pid_t self = getpid();
  int total = o.nproc, started = 0;
  for (int r = 0; r < total; r++) {
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    ranks[r].out_fd = ranks[r].err_fd = -1;
    if (o.tag) {
      ranks[r].line[0] = malloc(MG_LAUNCH_LINE_MAX);
      ranks[r].line[1] = malloc(MG_LAUNCH_LINE_MAX);
      if (ranks[r].line[0] == NULL || ranks[r].line[1] == NULL || pipe2(out, O_CLOEXEC) != 0 ||
          pipe2(err, O_CLOEXEC) != 0) {
        say("mgcomm launch: cannot set up output of rank %d: %s\n", r, strerror(errno));
        for (int k = 0; k < 2; k++) {
          if (out[k] >= 0) close(out[k]); /* unused pipe */
          if (err[k] >= 0) close(err[k]); /* unused pipe */
        }
        break;
      }
    }
    /* Forked with every signal blocked: run_rank unblocks once it can take them itself. */
    sigset_t all, mask;
    sigfillset(&all);
    (void)sigprocmask(SIG_SETMASK, &all, &mask); /* a valid set: cannot fail */
    pid_t pid = fork();
    if (pid == 0) run_rank(&o, &job, r, out[1], err[1], self, &mask);
    int fork_errno = errno;
    /* The child does the same; once it has exec'd this fails with EACCES, and the group exists
     * either way, before anything here can signal it. */
    if (pid > 0) (void)setpgid(pid, pid);
    (void)sigprocmask(SIG_SETMASK, &mask, NULL); /* as above */
    if (pid < 0) {
      say("mgcomm launch: cannot start rank %d: %s\n", r, strerror(fork_errno));
      break;
    }
    ranks[r].pid = pid;
    ranks[r].pgid = pid;
    if (o.tag) {
      close(out[1]); /* write ends: the child's copies are the ones that matter */
      close(err[1]);
      ranks[r].out_fd = out[0];
      ranks[r].err_fd = err[0];
    }
    started++;
  }
  if (started < o.nproc) {
    /* Could not start the whole job: stop the part that runs. */
    stop_groups(ranks, o.nproc, SIGKILL);
    o.nproc = started;
    supervise(&o, ranks);
    rc = 1;
  } else {
    rc = supervise(&o, ranks);
  }
  for (int r = 0; r < total; r++) {
    free(ranks[r].line[0]);
    free(ranks[r].line[1]);
  }
  free(ranks);
  return rc;
}
