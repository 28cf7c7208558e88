#!/usr/bin/env bash
# run.sh -- the GPU tests of mgcomm in one go, for one call on a GPU machine: configure and build
# (Release, with the test seam), `mgcomm info`, every test labelled gpu (2-GPU tests, and the
# 4-GPU ones where there are 4 GPUs; the others skip), the NCCL backend's unit tests, and a
# summary. Everything it writes goes under $OUT (default build-gpu/out), at most 6 files:
#   summary.md   machine, date, GPUs, libraries, one line per test, totals (for tests/gpu/results/)
#   ctest.log    the tests' output (ctest -V; each GPU test prints a few lines when it passes)
#   info.txt     `mgcomm info` and `mgcomm info --json`
#   build.log    configure and build, last 200 lines
# Exit code: 0 when every test passed or skipped, 1 otherwise. SOURCE_COMMIT names the commit in
# the summary where the copy on the GPU machine has no git history.
#
# Multicast stays off (it can take the shared machines' GPUs down): these variables are exported
# for everything below, and mgcomm never calls cuMulticastCreate.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/out}
jobs=${JOBS:-16}
mkdir -p "$out"
t0=$(date +%s)
say() { echo "run.sh: $*"; }

say "configure and build in $build (Release, -j$jobs)"
{
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=ON &&
    cmake --build "$build" -j "$jobs"
} >"$build.log.tmp" 2>&1
build_rc=$?
tail -n 200 "$build.log.tmp" >"$out/build.log"
rm -f "$build.log.tmp"
if [ $build_rc -ne 0 ]; then
  say "build failed (exit $build_rc); the end of its log:"
  tail -n 40 "$out/build.log"
  exit 1
fi

{
  echo "## mgcomm info"
  "$build/mgcomm" info
  echo
  echo "## mgcomm info --json"
  "$build/mgcomm" info --json
} >"$out/info.txt" 2>&1

say "tests labelled gpu, then the NCCL backend's unit tests"
cd "$build" || exit 1
# ctest's own per-test timeouts bound every test; this bounds the whole run.
# -V: the GPU tests print a few lines each (results, timings, refusals, why a test skipped).
timeout 540 ctest -L gpu -V >"$out/ctest.log" 2>&1
gpu_rc=$?
timeout 60 ctest -R '^(nccl_|mem_host)' --output-on-failure >>"$out/ctest.log" 2>&1
unit_rc=$?

{
  echo "# mgcomm GPU tests"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- host: $(hostname)"
  echo "- commit: $(mg_source_commit "$root")"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader |
      sed 's/^/- GPU /'
  fi
  grep -E '^  (CUDA driver|NCCL|NVSHMEM|NVML) ' "$out/info.txt" | sed 's/^  /- /' | head -4
  echo "- environment: NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1"
  echo
  echo "| test | result | time |"
  echo "| --- | --- | --- |"
  sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+ *(\*\*\*)?([A-Za-z ]+[a-z)]) +([0-9.]+ sec).*/| \1 | \3 | \4 |/p' \
    "$out/ctest.log"
  echo
  grep -E '^([0-9]+: )?(SKIP:|gpu coll|gpu mem|gpu faults|  (refused|injected|timed out|abort|symmetric|NCCL enqueued|a 4096|1 PiB)|shrink:)' \
    "$out/ctest.log" | cut -c1-400 | sed 's/^/    /' | head -100
  echo
  grep -E 'tests passed|tests failed' "$out/ctest.log" | sed 's/^/- /'
  echo "- wall time: $(($(date +%s) - t0)) s"
} >"$out/summary.md"

cat "$out/summary.md"
if [ $gpu_rc -ne 0 ] || [ $unit_rc -ne 0 ]; then
  say "FAILED (ctest exit $gpu_rc, unit $unit_rc); details in $out/ctest.log:"
  grep -E '\*\*\*Failed|\*\*\*Timeout|Exception|FAIL' "$out/ctest.log" | head -40
  exit 1
fi
say "all passed or skipped ($(($(date +%s) - t0)) s)"
