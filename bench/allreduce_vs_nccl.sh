#!/usr/bin/env bash
# allreduce_vs_nccl.sh -- mgcomm's own all-reduce kernels (issue 20) against NCCL on 2 and 4 GPUs
# of one machine (issue 21, run 6), in one device call:
#   1. builds mgcomm (Release, test build: the GPU tests are needed) into $BUILD, and nccl-tests
#      from $NCCL_TESTS_SRC (default .peer/nccl-tests, fetched beforehand, never committed) as
#      bench/nccl_vs_nccl_tests.sh does;
#   2. per GPU count: correctness across the real GPUs, ranks as threads of one process and as
#      processes (CUDA IPC; registered buffers lent across processes): every dtype, op, algorithm (push, one-shot, two-shot; staged and lent
#      in place), size (tests/gpu/test_gpu_kernels.c with KT_GPUS), graph capture and replay, the
#      timeout and abort paths; and the NCCL backend's harness against the host backend with the
#      kernels chosen (MGCOMM_ALGO=auto);
#   3. per GPU count, -R times, in the same call, float32 sum:
#      plain: `mgcomm bench -g N -c all_reduce --inplace both` (buffers of mg_mem_alloc, which
#        the kernels may read in place) with MGCOMM_ALGO=nccl, with the table (auto), and with
#        each algorithm forced through the MGCOMM_KERNELS_* variables: ll, one-shot, two-shot,
#        one-shot lent, two-shot lent (buffers read in place from the first byte), and two-shot
#        with 128 blocks (staged and lent);
#      graph: our kernels in CUDA graphs (test_gpu_kernels bench: ll, one-shot, two-shot, lent
#        or not; 64 and 128 blocks) and nccl-tests with symmetric registration under graphs
#        (all_reduce_perf -R 2 -G 100);
#   4. writes $OUT/allreduce-vs-nccl.md: the medians, the ratios, and the targets (ours with the
#      table <= 0.5 x NCCL's plain time up to 256 KiB, <= 0.7 x up to 4 MiB; under a graph the
#      table's algorithm <= nccl-tests -R 2 -G); then the crossover tables (every variant's time
#      per size, the fastest of ours marked: plain in place, plain out of place, graph) and the
#      table for src/kernels/kern_choose.c that they suggest.
#
#   bench/allreduce_vs_nccl.sh [-g "2 4"] [-R repeats] [-C 0] [-V "nccl auto ..."]
# -C 0 leaves out step 2 (the correctness tests: about two minutes on 4 H200s), for a second call
# on a tree whose kernels were already tested across the GPUs. -V times only the plain variants
# named (step 3's list), e.g. -V "nccl auto" to check a new table against NCCL in less time.
# Environment: SOURCE_COMMIT, NCCL_LIB (default /usr/lib/x86_64-linux-gnu/libnccl.so.2), CUDA_HOME,
# JOBS (16), BUILD (build-gpu), OUT ($BUILD/kernels-out), NCCL_TESTS_SRC, NT_BUILD
# (where nccl-tests is built: $BUILD/nccl-tests).
# Exit code: 0 every test passed and every target met; 1 a target missed; 2 a test failed or
# something could not run.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/kernels-out}
src=${NCCL_TESTS_SRC:-$root/.peer/nccl-tests}
nccl_lib=${NCCL_LIB:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
nt_build=${NT_BUILD:-$build/nccl-tests}
gpu_counts="" repeats=3 checks=1 only=""
while getopts "g:R:C:V:" o; do
  case $o in
    g) gpu_counts=$OPTARG ;;
    R) repeats=$OPTARG ;;
    C) checks=$OPTARG ;;
    V) only=$OPTARG ;;
    *) echo "usage: $0 [-g \"2 4\"] [-R repeats] [-C 0] [-V variants]" >&2; exit 2 ;;
  esac
done
mg_begin allreduce_vs_nccl 2 "$out"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ -n "$gpu_counts" ] || { gpu_counts=2; [ "$ngpu" -ge 4 ] && gpu_counts="2 4"; }
for g in $gpu_counts; do [ "$g" -le "$ngpu" ] || fail "$g GPUs asked, $ngpu present"; done

say "building mgcomm in $build"
{ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=ON &&
  cmake --build "$build" -j "${JOBS:-16}" --target test_gpu_kernels test_gpu_coll mgcomm_cli; } \
  >"$logs/build.log" 2>&1 || { tail -30 "$logs/build.log" >&2; fail "mgcomm did not build"; }
kt=$build/tests/gpu/test_gpu_kernels
nt=""
if [ -d "$src/src" ] && mg_build_nccl_tests "$src" "$nt_build" "$nccl_lib" "$logs"; then
  nt=$nt_build/all_reduce_perf
else
  say "no nccl-tests (fetch github:NVIDIA/nccl-tests into $src): the graph target is not compared"
fi
export MGCOMM_NCCL_LIBRARY=$nccl_lib
export LD_LIBRARY_PATH=$(dirname "$nccl_lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# The variables that force each algorithm of ours (docs/kernels.md), with MGCOMM_ALGO=mgcomm.
K=MGCOMM_KERNELS
ll="${K}_LL_BYTES=4194304"
one="${K}_LL_BYTES=0 ${K}_ONESHOT_BYTES=4194304"
two="${K}_LL_BYTES=0 ${K}_ONESHOT_BYTES=0"
lent="${K}_INPLACE_BYTES=0"
staged="${K}_INPLACE_BYTES=1000000000000000000" # above any message

# A run stopped from outside (timeout sends TERM) keeps its test results and logs under $OUT, and
# a report of whatever timings ran.
# (The logs first, and the report whatever it returns: it exits 1 for a missed target, which
# set -e would take for the end of the trap.)
trap 'say "stopped: keeping what ran"
      tar -czf "$out/logs.tar.gz" -C "$logs" . || true
      python3 "$root/bench/allreduce_report.py" "$logs" "$out/allreduce-vs-nccl.md" "$repeats" \
        "$gpu_counts" "$out/tests.txt" || true
      exit 124' TERM INT

# ---- 2. correctness -------------------------------------------------------------------------
tests_failed=0
: >"$out/tests.txt"
check() { # NAME COMMAND...: runs it, keeps its output, records PASS/FAIL
  local name=$1
  shift
  if timeout 300 "$@" >"$logs/t-$name.txt" 2>&1; then
    local said
    said=$(grep -E 'cases|replays|ended|correct|queued' "$logs/t-$name.txt" | tail -1 || true)
    echo "PASS $name: ${said:-$(tail -1 "$logs/t-$name.txt")}" >>"$out/tests.txt"
  else
    echo "FAIL $name (exit $?): $(tail -3 "$logs/t-$name.txt" | tr '\n' ' ')" >>"$out/tests.txt"
    tests_failed=1
  fi
}
for g in $gpu_counts; do
  [ "$checks" = 1 ] || { echo "(correctness not run: -C 0)" >>"$out/tests.txt"; break; }
  say "$g GPUs: correctness"
  for mode in correct mixed graph procs lend; do
    check "$mode-$g" env KT_GPUS="$g" "$kt" "$mode" "$g"
  done
  # The backend's registration path between processes: buffers lent across GPUs.
  check "ncclprocs-$g" env MGCOMM_ALGO=mgcomm MGCOMM_KERNELS_INPLACE_BYTES=0 "$kt" ncclprocs "$g"
  for mode in timeout abort; do # a rank that never comes needs another that waits for it
    check "$mode-$g" env KT_GPUS="$g" "$kt" "$mode" $((g < 2 ? 2 : g))
    check "$mode-ll-$g" env KT_GPUS="$g" "$kt" "$mode" $((g < 2 ? 2 : g)) ll
  done
  # The NCCL backend with each algorithm forced, on buffers of mg_mem_alloc (lent in place from
  # the first byte, or staged), every result checked by mgcomm bench: float32 sum and bfloat16
  # max each, and two-shot lent (in place and not) with every float type and op.
  for v in "ll $ll" "one-shot-lent $one $lent" "two-shot-lent $two $lent" \
           "two-shot-staged $two $staged"; do
    read -r name vars <<<"$v"
    cases="float32:sum bfloat16:max"
    [ "$name" != two-shot-lent ] ||
      cases=$(for dt in float32 float16 bfloat16; do
                for op in sum avg max min; do echo "$dt:$op"; done
              done)
    for c in $cases; do
      # shellcheck disable=SC2086 # vars holds several VAR=value words
      check "backend-$name-${c/:/-}-$g" env MGCOMM_ALGO=mgcomm $vars "$build/mgcomm" bench -g "$g" \
        -c all_reduce -d "${c%:*}" -o "${c#*:}" -b 4 -e 4M -f 4 --inplace both --check 1 -n 2 -w 1
    done
  done
  check "nccl-backend-all-$g" env MGCOMM_ALGO=auto "$build/tests/gpu/test_gpu_coll" all "$g"
  check "nccl-backend-procs-$g" env MGCOMM_ALGO=auto "$build/tests/gpu/test_gpu_coll" procs "$g"
done

# ---- 3. times -------------------------------------------------------------------------------
# The plain variants: a name (no space: the report's column and the logs' file names) and the
# variables that force it.
m=MGCOMM_ALGO=mgcomm
variants=(
  "nccl MGCOMM_ALGO=nccl"
  "auto $m"
  "ll $m $ll"
  "one-shot $m $one $staged"
  "two-shot $m $two $staged"
  "one-shot_lent $m $one $lent"
  "two-shot_lent $m $two $lent"
  "two-shot_b128 $m $two $staged ${K}_BLOCKS=128"
  "two-shot_lent_b128 $m $two $lent ${K}_BLOCKS=128"
)
for g in $gpu_counts; do
  for r in $(seq 1 "$repeats"); do
    say "$g GPUs: times, run $r of $repeats"
    for v in "${variants[@]}"; do
      read -r name vars <<<"$v"
      [ -z "$only" ] || [[ " $only " == *" $name "* ]] || continue
      # shellcheck disable=SC2086 # vars holds several VAR=value words
      f=$logs/plain-$name-$g-$r
      env $vars "$build/mgcomm" bench -g "$g" -c all_reduce -b 8 -e 4M -f 2 --inplace both \
        --check 0 -n 200 -w 20 --csv "$f.csv" >"$f.txt" 2>&1 ||
        fail "mgcomm bench, $name ($vars), failed: $(tail -3 "$f.txt")"
    done
    for b in 64 128; do
      MGCOMM_KERNELS_BLOCKS=$b KT_GPUS=$g "$kt" bench >"$logs/kern-b$b-$g-$r.txt" 2>&1 ||
        fail "test_gpu_kernels bench ($b blocks) failed: $(tail -3 "$logs/kern-b$b-$g-$r.txt")"
    done
    if [ -n "$nt" ]; then
      "$nt" -g "$g" -b 8 -e 4M -f 2 -R 2 -G 100 -n 200 -w 20 -c 0 >"$logs/nt-$g-$r.txt" 2>&1 ||
        fail "nccl-tests failed: $(tail -5 "$logs/nt-$g-$r.txt")"
    fi
  done
done

# ---- 4. the report --------------------------------------------------------------------------
set +e
python3 "$root/bench/allreduce_report.py" "$logs" "$out/allreduce-vs-nccl.md" "$repeats" \
  "$gpu_counts" "$out/tests.txt"
report_rc=$?
tar -czf "$out/logs.tar.gz" -C "$logs" .
[ "$tests_failed" = 0 ] || exit 2
exit $report_rc
