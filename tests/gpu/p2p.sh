#!/usr/bin/env bash
# p2p.sh -- peer-to-peer on a GPU machine in one call (issue 18): configure and build (Release,
# with the tests), the GPU test gpu_p2p (tests/gpu/test_gpu_p2p.c), `mgcomm topo`, `mgcomm topo
# --json --bandwidth`, `nvidia-smi topo -m`, and bench/p2p_vs_memcpy_peer.sh (mgcomm's copies
# against cudaMemcpyPeerAsync; on one GPU the same-device case). Writes $OUT/p2p.md (for
# tests/gpu/results/; `mgcomm topo` is in the bench's part), plus build.log, ctest.log and
# bench.md. Exit 0 when the test passed (or skipped) and every step ran.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/out}
mkdir -p "$out"
rc=0
{
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=ON &&
    cmake --build "$build" -j "${JOBS:-16}" --target mgcomm mgcomm_cli test_gpu_p2p
} >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }

report=$out/p2p.md
{
  echo "# Peer-to-peer on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l)"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(hostname)"
  echo "- driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1);" \
    "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "- mgcomm: $(mg_source_commit "$root")"
  echo "- script: tests/gpu/p2p.sh (NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1"
  echo "  TORCH_SYMM_MEM_DISABLE_MULTICAST=1)"
  echo
  echo '## ctest -R gpu_p2p -V'
  echo '```'
} >"$report"
(cd "$build" && ctest -R '^gpu_p2p$' -V --timeout 300) >"$out/ctest.log" 2>&1 || rc=1
grep -v '^ *$' "$out/ctest.log" | tail -40 >>"$report"
{
  echo '```'
  echo
  echo '## mgcomm topo --json --bandwidth'
  echo '```'
  "$build/mgcomm" topo --json --bandwidth 2>&1 || rc=1
  echo '```'
  echo
} >>"$report"
BUILD=$build bash "$root/bench/p2p_vs_memcpy_peer.sh" "$out/bench.md" >/dev/null 2>&1 || rc=1
sed 's/^# /## /; s/^## \(nvidia-smi\|mgcomm topo\|Peer\)/### \1/' "$out/bench.md" >>"$report"
echo "p2p.sh: exit $rc" >>"$report"
cat "$report"
exit $rc
