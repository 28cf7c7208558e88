/*
 * host_leftover.c -- nothing of a host communicator's segment outlives the processes of a job
 * that ends in init, at any point of it, without a launcher to clean up after them (mpirun,
 * torchrun, a program that calls mg_comm_init_rank itself):
 *
 *   host_leftover <rounds>
 *
 * Each round makes an id and forks ranks 0, 1 and 2 of 4 (rank 3 never comes), which call
 * mg_comm_init_rank. The parent SIGKILLs all three after a delay of 0 to 3 ms (odd rounds) or
 * 0 to 30 ms (even ones; a fixed pseudo-random sequence), from before any has made the segment
 * to long after all three wait,
 * and reaps them. Then it counts what is left of the round's segment: entries in /dev/shm, its
 * meeting socket in /proc/net/unix, processes that map it; each must be 0. Just before the kill
 * it notes how many of the three mapped the segment, and prints how many rounds killed at each
 * stage; at least one round must have killed ranks that had it mapped.
 */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "test.h"

#define RANKS 3 /* of RANKS + 1: the last never comes */

/* 1 when file `path` holds `needle` on some line. */
static int file_has(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

/* Processes (any that we may read) that map segment `name` ("mgcomm-<hex>"). */
static int mappers(const char *name, const pid_t *only, int n) {
  char path[64];
  int count = 0;
  if (only != NULL) {
    for (int i = 0; i < n; i++) {
      snprintf(path, sizeof path, "/proc/%d/maps", (int)only[i]);
      count += file_has(path, name);
    }
    return count;
  }
  FILE *ls = popen("ls /proc", "r");
  ASSERT(ls != NULL);
  char pid[64];
  while (fgets(pid, sizeof pid, ls) != NULL) {
    if (pid[0] < '1' || pid[0] > '9') continue;
    pid[strcspn(pid, "\n")] = '\0';
    snprintf(path, sizeof path, "/proc/%s/maps", pid);
    count += file_has(path, name);
  }
  pclose(ls);
  return count;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned next_rand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (unsigned)(rng >> 32);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 0;
  if (rounds < 1) FAIL("usage: host_leftover <rounds>");
  int stage[RANKS + 1] = {0};
  for (int round = 0; round < rounds; round++) {
    mg_unique_id_t uid;
    ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
    const char *name = ((const mg__hid_t *)uid.internal)->name + 1; /* "mgcomm-<hex>" */
    pid_t pids[RANKS];
    for (int r = 0; r < RANKS; r++) {
      pids[r] = fork();
      ASSERT(pids[r] >= 0);
      if (pids[r] != 0) continue;
      mg_config_t cfg = MG_CONFIG_INIT;
      cfg.backend = MG_BACKEND_HOST;
      cfg.timeout_s = 60; /* killed long before */
      mg_comm_t *comm;
      mg_status_t st = mg_comm_init_rank(&cfg, RANKS + 1, &uid, r, &comm);
      fprintf(stderr, "rank %d: init returned %s: %s\n", r, mg_status_name(st), mg_last_error());
      _exit(1);
    }
    unsigned us = next_rand() % (round % 2 ? 3000 : 30000);
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL); /* an early wake-up is one more point of init to kill at */
    stage[mappers(name, pids, RANKS)]++;
    for (int r = 0; r < RANKS; r++) ASSERT_EQ(kill(pids[r], SIGKILL), 0);
    for (int r = 0; r < RANKS; r++) {
      int status;
      ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
      if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        FAIL("round %d: rank %d ended with status 0x%x before the kill", round, r, status);
    }
    char path[128], at[80];
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    snprintf(at, sizeof at, "@%s", name);
    int in_shm = access(path, F_OK) == 0;
    int socket_left = file_has("/proc/net/unix", at);
    int mapped = mappers(name, NULL, 0);
    if (in_shm) unlink(path); /* do not leave it to the machine */
    if (in_shm || socket_left || mapped)
      FAIL("round %d (killed after %u us): left: %d entry in /dev/shm (%s), %d meeting socket, "
           "%d process(es) mapping it", round, us, in_shm, path, socket_left, mapped);
  }
  printf("%d rounds; ranks that had mapped the segment when killed:", rounds);
  for (int k = 0; k <= RANKS; k++) printf(" %d in %d round(s)%s", k, stage[k], k < RANKS ? "," : "");
  printf("; nothing left in /dev/shm, no socket, no mapping\n");
  ASSERT_GT(rounds - stage[0], 0);
  return 0;
}
