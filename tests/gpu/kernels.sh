#!/usr/bin/env bash
# kernels.sh -- mgcomm's own all-reduce kernels (issue 20) on a GPU machine, in one call:
# configure and build (Release, with the test seam; nvcc compiles the kernels), every test named
# gpu_kernels_* (correctness on 1, 2, 4, 8 ranks sharing one GPU, graph capture and replay, the
# timeout and abort paths, two processes through CUDA IPC), the NCCL backend's choice on a
# communicator of one rank (MGCOMM_ALGO=mgcomm; auto keeps one rank on NCCL), and the one-GPU timings beside
# NCCL's one-rank all_reduce (for information: the targets need 2 and 4 GPUs,
# bench/allreduce_vs_nccl.sh). Writes $OUT/kernels.md (summary) and $OUT/kernels.log.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/out}
mkdir -p "$out"
log=$out/kernels.log
{
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=ON &&
    cmake --build "$build" -j "${JOBS:-16}" --target test_gpu_kernels test_gpu_coll mgcomm_cli
} >"$log" 2>&1 || { tail -n 60 "$log"; exit 1; }
cd "$build" || exit 1
timeout 200 ctest -R '^gpu_kernels_' -V >>"$log" 2>&1
rc=$?
# The NCCL backend's tests of one rank against the host backend, as a program runs them (auto:
# one rank stays on NCCL; gpu_kernels_nccl above forces our kernels on one rank).
echo "== ctest gpu_coll_*_1" >>"$log"
timeout 300 ctest -R '^gpu_coll_(all|procs|world)_1$' -V >>"$log" 2>&1 || rc=1
bench=$(timeout 60 ./tests/gpu/test_gpu_kernels bench 2>&1) || rc=1
{
  echo "# mgcomm's all-reduce kernels on one GPU"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- commit: $(mg_source_commit "$root")"
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "- nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo
  echo "## Tests"
  echo
  grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed|tests failed' "$log" | sed 's/^/    /'
  echo
  echo "## What the tests printed"
  echo
  grep -E '^[0-9]+: (correct|mixed|graph|timeout|abort|procs|nccl|rank [0-9]+ ended|PASS)' "$log" | sed 's/^/    /'
  echo
  echo "## Times on one GPU (us per all_reduce, float32 sum in place; ranks share the GPU)"
  echo
  echo "$bench"
} >"$out/kernels.md"
cat "$out/kernels.md"
exit $rc
