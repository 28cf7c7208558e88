#!/usr/bin/env bash
# p2p_vs_memcpy_peer.sh -- mgcomm's peer copies against cudaMemcpyPeerAsync (issue 18's target:
# >= 0.97x for every ordered pair, 64 KiB to 1 GiB), and `mgcomm topo` next to `nvidia-smi topo
# -m`, in one go on a GPU machine (issue 21 runs it on 2 and 4 GPUs; on one GPU it measures the
# same-device case).
#
#   bench/p2p_vs_memcpy_peer.sh [out.md]
# Environment: BUILD (default build-p2p-bench: configured and built here, Release), PAIRS
# (all|self|peers, default all), MIN_BYTES (64K), MAX_BYTES (1G), ROUNDS (7), NVCC (nvcc on PATH,
# else /usr/local/cuda/bin/nvcc). Writes the report (machine, versions, both topologies, the
# table) to out.md (default $BUILD/p2p_vs_memcpy_peer.md) and prints it.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-p2p-bench}
out=${1:-$build/p2p_vs_memcpy_peer.md}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$build" "$(dirname "$out")"

if [ ! -x "$build/mgcomm" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$build/build.log" 2>&1 &&
    cmake --build "$build" -j "${JOBS:-16}" >>"$build/build.log" 2>&1 ||
    { tail -30 "$build/build.log"; exit 1; }
fi
"$nvcc" -O2 -I"$root/include" -o "$build/p2p_vs_memcpy_peer" "$root/bench/p2p_vs_memcpy_peer.c" \
  -L"$build" -lmgcomm -Xlinker -rpath -Xlinker "$build" >"$build/nvcc.log" 2>&1 ||
  { cat "$build/nvcc.log"; exit 1; }

{
  echo "# mgcomm peer copies vs cudaMemcpyPeerAsync"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(hostname)"
  echo "- GPUs: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null |
    sort | uniq -c | sed 's/^ *//' | paste -sd ';' -)"
  echo "- nvcc: $("$nvcc" --version | tail -1); mgcomm $(mg_source_commit "$root")"
  echo "- method: bench/p2p_vs_memcpy_peer.c (copies back to back on one stream of the"
  echo "  destination, timed by CUDA events; median of ${ROUNDS:-7} rounds; GB/s = 1e9 bytes/s)"
  echo
  echo '## nvidia-smi topo -m'
  echo '```'
  nvidia-smi topo -m 2>&1
  echo '```'
  echo
  echo '## mgcomm topo'
  echo '```'
  "$build/mgcomm" topo 2>&1
  echo '```'
  echo
  echo '## Peer copies'
  echo
  "$build/p2p_vs_memcpy_peer" --pairs "${PAIRS:-all}" --min-bytes "${MIN_BYTES:-64K}" \
    --max-bytes "${MAX_BYTES:-1G}" --rounds "${ROUNDS:-7}" 2>&1
  echo
  echo "exit status of the comparison: $?"
} | tee "$out"
