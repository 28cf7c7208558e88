#!/usr/bin/env bash
# two_machines.sh -- the multi-machine path on one host (issue 21, run 7): two groups of
# processes, each started as if on a machine of its own (its own GPUs, its own local ranks
# 0..L-1), meet only through mgcomm's TCP store on 127.0.0.1, and NCCL is forced onto its network
# transport over the loopback interface (no peer-to-peer, no shared memory between the groups or
# inside them), so that mg_comm_init_env, the store and NCCL's socket transport carry the job.
#
#   tests/gpu/two_machines.sh [BUILD]       (default: build-gpu of this checkout)
#
# Two GPUs, one per "machine". Each process runs tests/gpu/test_gpu_launch.c's rank (the program
# that `mgcomm launch` runs in the test gpu_launch_progress): mg_comm_init_env on the NCCL
# backend, one all_reduce checked, then a withheld all_reduce whose timeout must name what the
# other "machine" last enqueued, as published through the store. (`mgcomm bench` runs ranks as
# processes on the host backend only, so it cannot measure this path's bandwidth yet.) Exit 0
# when both pass, 77 with fewer than 2 GPUs (NCCL refuses two ranks on one GPU), 1 otherwise. No address other than
# 127.0.0.1 is ever a target: the store listens there and NCCL_SOCKET_IFNAME=lo.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-gpu}
prog=$build/tests/gpu/test_gpu_launch
[ -x "$prog" ] || { echo "two_machines.sh: no $prog (build with the tests)" >&2; exit 1; }

ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${ngpus:-0}" -lt 2 ]; then
  echo "SKIP: two_machines.sh needs 2 GPUs (found ${ngpus:-0}): NCCL refuses two ranks on one GPU"
  exit 77
fi
per=1 # GPUs per simulated machine: the program is a job of 2 ranks
world=2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

echo "two simulated machines of $per GPU(s) each, world of $world ranks, store 127.0.0.1:$port"
pids=()
for node in 0 1; do
  visible=$(seq -s, $((node * per)) $((node * per + per - 1)))
  for local in $(seq 0 $((per - 1))); do
    rank=$((node * per + local))
    # What a launcher on that machine would set: its own GPUs and local ranks, the job's store.
    env CUDA_VISIBLE_DEVICES="$visible" MGCOMM_RANK=$rank MGCOMM_WORLD_SIZE=$world \
      MGCOMM_LOCAL_RANK=$local MGCOMM_STORE=127.0.0.1:$port MGCOMM_JOB_TOKEN="$token" \
      NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 \
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_DEBUG_FILE="$log/nccl.$rank.%p" \
      MGCOMM_TIMEOUT=120 \
      timeout 120 "$prog" rank >"$log/rank$rank.txt" 2>&1 &
    pids+=($!)
  done
done
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "rank $i failed (exit $?)"; rc=1; }
done
echo "## rank 0 (machine 0, local rank 0)"
cat "$log/rank0.txt"
if [ $rc -ne 0 ]; then
  for f in "$log"/rank*.txt; do echo "## $(basename "$f")"; tail -n 20 "$f"; done
fi
# NCCL must really have used its network transport: its own log (in files, so that the tables
# stay readable) names the socket transport on lo, and no P2P or SHM channel.
echo "## NCCL's transport (its INFO log)"
cat "$log"/nccl.* 2>/dev/null | grep -E 'NET/Socket|Using network|via (P2P|SHM)' | sort | uniq -c | head -n 20
if cat "$log"/nccl.* 2>/dev/null | grep -qE 'via (P2P|SHM)'; then
  echo "two_machines.sh: NCCL used P2P or SHM between ranks: the network path was not exercised"
  rc=1
fi
exit $rc
