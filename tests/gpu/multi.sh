#!/usr/bin/env bash
# multi.sh -- issue 21's runs on a machine of several GPUs, as few device calls as the budget
# allows: each step is one of the scripts that own a run, bounded by its own time limit, so that
# a step that hangs costs its bound and not the call.
#
#   STEPS="build kernels nccl p2p" tests/gpu/multi.sh      (default: every step, in this order)
#
# Steps (the run of issue 21 each one makes):
#   build     configure and build once (Release, with the tests; nvcc compiles our kernels) into
#             $BUILD, which the later steps and a later call on the same machine reuse
#   kernels   run 6: bench/allreduce_vs_nccl.sh (our all-reduce across the GPUs, against NCCL),
#             KERNELS_REPEATS rounds (3); KERNELS_CHECKS=0 leaves its correctness tests out,
#             KERNELS_VARIANTS names the plain variants to time (default: all)
#   nccl      run 2: bench/nccl_vs_nccl_tests.sh -T 1 -I 1 (every collective against nccl-tests,
#             and against raw NCCL in turn in one process up to 64 MiB; NCCL_PAIRED=0 leaves
#             that out, NCCL_MAX is the largest size, 1G), in its own Release build without the
#             test seam ($BUILD-release)
#   p2p       run 4: tests/gpu/p2p.sh (gpu_p2p, mgcomm topo, copies against cudaMemcpyPeerAsync)
#   suite     run 1: every test labelled gpu (tests/gpu/run.sh's tests on the built tree), with
#             SUITE_ARGS added to ctest (e.g. SUITE_ARGS="-E ^bench_gpu_" to leave out the two
#             minutes of bench tests; -I takes the numbers of ctest -N and needs its end: with
#             `-I 293,` ctest 3.25 ran every test)
#   suitenb   run 1 again in nonblocking mode (MGCOMM_NCCL_BLOCKING=0)
#   agree     run 3: the GPU tests of agreement and of the collective check (gpu_faults_late,
#             gpu_collcheck_on/off) in both modes, then what the check costs: `mgcomm bench -g 2` of
#             all_reduce, broadcast and all_gather through NCCL with MGCOMM_CHECK_COLLECTIVES=0
#             and 1 in turn, 3 rounds (agree/check<0|1>-<round>.txt in logs.tgz)
#   shmem     run 5: NP=<GPUs> tests/gpu/shmem.sh (one PE per GPU under mgcomm launch)
#   machines  run 7: tests/gpu/two_machines.sh (two simulated machines over the store and lo)
# The kernels and nccl steps compare on GPU_COUNTS GPUs (default 2, and all of them where there
# are more; nccl-tests is built once, in $NT_BUILD).
# Reports go to $OUT (at most 8 files come back from a device call): each step's main report as
# <step>.md and everything else in logs.tgz. Limits per step: <STEP>_LIMIT seconds (defaults
# below). Exit 0 when every step ended 0 (or 77: skipped), else 1.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
export BUILD=${BUILD:-$root/build-gpu} JOBS=${JOBS:-$(nproc)}
SOURCE_COMMIT=$(mg_source_commit "$root")
export SOURCE_COMMIT
out=${OUT:-$BUILD/multi-out}
work=$BUILD/multi-work
mkdir -p "$out" "$work"
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
# The GPU counts the kernels and nccl steps compare at: 2, and every GPU where there are more.
counts=${GPU_COUNTS:-2}
[ -n "${GPU_COUNTS:-}" ] || [ "$ngpus" -le 2 ] || counts="2 $ngpus"
# nccl-tests is built once, for both steps that run it.
export NT_BUILD=${NT_BUILD:-$BUILD/nccl-tests}
steps=${STEPS:-build kernels nccl p2p suite suitenb agree shmem machines}
rc_all=0

step_build() {
  cmake -S "$root" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=ON >/dev/null &&
    cmake --build "$BUILD" -j "$JOBS" 2>&1 | tail -n 5
}
# The scripts that keep what ran when stopped at their bound (a trap on TERM) run through exec:
# timeout then waits for their trap to end before this script archives their folder (on 4 H200s
# a stopped kernels step lost its timings when the archive was made while its trap still ran).
step_kernels() {
  OUT=$work/kernels exec bench/allreduce_vs_nccl.sh -g "$counts" -R "${KERNELS_REPEATS:-3}" \
    -C "${KERNELS_CHECKS:-1}" -V "${KERNELS_VARIANTS:-}"
}
# The published numbers come from a build without the test seam, in a folder of its own, so that
# the steps after it find the test build as the build step left it.
step_nccl() {
  OUT=$work/nccl BUILD=$BUILD-release exec bench/nccl_vs_nccl_tests.sh -g "$counts" -R 1 \
    -e "${NCCL_MAX:-1G}" -T 1 -I "${NCCL_PAIRED:-1}"
}
step_p2p() { OUT=$work/p2p ROUNDS=3 tests/gpu/p2p.sh; }
step_suite() {
  # SUITE_ARGS is split on spaces on purpose: several ctest options in one variable.
  # shellcheck disable=SC2086
  (cd "$BUILD" && ctest -L gpu ${SUITE_ARGS:-} -V >"$work/suite${1:-}.log" 2>&1)
  local rc=$?
  grep -E "Test +#|tests passed|tests failed" "$work/suite${1:-}.log"
  return $rc
}
step_suitenb() { MGCOMM_NCCL_BLOCKING=0 step_suite nb; }
step_agree() {
  local rc=0 r v mode
  for mode in 1 0; do
    echo "MGCOMM_NCCL_BLOCKING=$mode"
    (cd "$BUILD" && MGCOMM_NCCL_BLOCKING=$mode ctest -R '^gpu_(faults_late|collcheck_)' -V \
      >"$work/agree$mode.log" 2>&1) || rc=1
    grep -E "Test +#|tests passed|tests failed|^[0-9]+:   " "$work/agree$mode.log"
  done
  mkdir -p "$work/agree"
  for r in 1 2 3; do
    for v in 0 1; do
      MGCOMM_ALGO=nccl MGCOMM_CHECK_COLLECTIVES=$v "$BUILD/mgcomm" bench -g 2 \
        -c all_reduce,broadcast,all_gather -b 8 -e 64M -f 4 -n 100 -w 10 --check 0 \
        --inplace 0 >"$work/agree/check$v-$r.txt" 2>&1 || rc=1
    done
  done
  return $rc
}
step_shmem() { OUT=$work/shmem NP=$ngpus tests/gpu/shmem.sh; }
step_machines() { tests/gpu/two_machines.sh "$BUILD"; }

cd "$root" || exit 1
{
  echo "# issue 21 runs, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $SOURCE_COMMIT"
  echo
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1
  echo "steps: $steps"
} >"$out/steps.md"
for s in $steps; do
  lim_var=$(echo "${s}_LIMIT" | tr '[:lower:]' '[:upper:]')
  case "$s" in build) def=300 ;; kernels) def=240 ;; nccl) def=300 ;; suite*) def=300 ;; *) def=120 ;; esac
  lim=${!lim_var:-$def}
  t0=$(date +%s)
  echo "== step $s (bound ${lim} s)"
  timeout -k 30 "$lim" bash -c "$(declare -f step_suite "step_$s");
    root=$root work=$work ngpus=$ngpus counts='$counts' step_$s" \
    >"$work/$s.out" 2>&1
  rc=$?
  tail -n 60 "$work/$s.out"
  line="- $s: exit $rc after $(($(date +%s) - t0)) s (bound $lim s)"
  [ $rc -eq 124 ] && line="$line: stopped at its bound"
  echo "$line" | tee -a "$out/steps.md"
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || rc_all=1
done
# The main reports, one file each; the rest in one archive.
for f in kernels/allreduce-vs-nccl.md nccl/nccl-vs-nccl-tests.md p2p/p2p.md shmem/shmem.md; do
  [ -f "$work/$f" ] && cp "$work/$f" "$out/$(dirname "$f").md"
done
[ -f "$work/machines.out" ] && cp "$work/machines.out" "$out/machines.md"
tar czf "$out/logs.tgz" -C "$work" . 2>/dev/null
exit $rc_all
