#!/usr/bin/env bash
# shmem.sh -- NVSHMEM through mgcomm on the GPUs of one machine, in one call (issue 19; on 2 and
# 4 GPUs, issue 21 run 5): build; `mgcomm info`'s NVSHMEM part; the gpu_shmem tests (one PE
# through a one-rank NCCL communicator; NP PEs as processes under `mgcomm launch`, PE r on GPU
# r mod the GPUs, so two PEs share a GPU on a one-GPU machine); `mgcomm bench shmem` (put/get
# per PE to the next of the ring) with one PE, with NP PEs over a host communicator and, with a
# GPU per PE, over an NCCL one (NCCL send/recv in the same run); and `mgcomm bench -c sendrecv`
# on the machine's GPUs. Writes $OUT/shmem.md (commit it under tests/gpu/results/) and
# build.log. Exit 0 when every test passed or skipped.
#   one GPU:            NP=2 tests/gpu/shmem.sh  (two PEs share the GPU: NVSHMEM's limited MPG)
#   issue 21 run 5:     NP=2 on 2 GPUs, NP=4 on 4 GPUs: one PE per GPU, team splits across
#                       PEs, put/get beside NCCL send/recv over the same ring in one run
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/out}
np=${NP:-2}
mkdir -p "$out"
report=$out/shmem.md
say() { echo "shmem.sh: $*"; }

say "configure and build in $build"
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=ON &&
       cmake --build "$build" -j "${JOBS:-16}" --target mgcomm_cli test_gpu_shmem; } \
       >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log"
  exit 1
fi
mg=$build/mgcomm
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)

{
  echo "# NVSHMEM through mgcomm: $(date -u +%Y-%m-%dT%H:%MZ), $(hostname)"
  echo
  echo "Source: $(mg_source_commit "$root")"
  echo '```'
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1
  "$mg" info | grep -E '^  (CUDA driver|NCCL|NVSHMEM) .*from|^CUDA driver'
  "$mg" info | sed -n '/^NVSHMEM host API/,/^$/p'
  echo '```'
  echo
  echo "## Tests (ctest -L gpu -R gpu_shmem)"
  echo '```'
} >"$report"
(cd "$build" && ctest -R gpu_shmem -V --timeout 120) >"$out/ctest.log" 2>&1
rc=$?
grep -E 'Test +#|Passed|Failed|Skipped|SKIP|NVSHMEM [0-9]|init|refused|ok$|FAIL|tests passed' \
  "$out/ctest.log" | sed 's/^[0-9]*: //' | head -n 80 >>"$report"
echo '```' >>"$report"

bench() { # title, command...
  local title=$1
  shift
  { echo; echo "## $title"; echo; echo "\`$*\`"; echo '```'; } >>"$report"
  timeout 90 "$@" >>"$report" 2>&1 || echo "(exit $?)" >>"$report"
  echo '```' >>"$report"
}
bench "One PE putting to itself" "$mg" bench shmem -b 8 -e 64M -f 4 -n 20
bench "$np PEs as processes, host communicator" "$mg" launch -n "$np" -- "$mg" bench shmem \
  -b 8 -e 64M -f 4 -n 20
if [ "$ngpu" -ge "$np" ] && [ "$np" -ge 2 ]; then
  bench "$np PEs, one GPU each, NCCL communicator (NCCL send/recv beside)" "$mg" launch -n "$np" \
    -- "$mg" bench shmem -b 8 -e 64M -f 4 -n 20 --backend nccl
fi
bench "NCCL send/recv on $ngpu GPU(s) of this process (ring)" "$mg" bench -c sendrecv -g "$ngpu" \
  -b 8 -e 64M -f 4
say "wrote $report"
tail -n 60 "$report"
exit $rc
