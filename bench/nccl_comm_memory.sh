#!/usr/bin/env bash
# nccl_comm_memory.sh -- what a rank's NCCL communicators cost in device memory, blocking mode
# (a nonblocking lifecycle communicator plus the blocking one split from it) against nonblocking
# mode (one communicator), with and without NCCL's resource sharing between a parent and the
# child split from it (NCCL_COMM_SPLIT_SHARE_RESOURCES=1, what config.nccl_split_share = 1 asks),
# for each NCCL library given. One GPU; one call.
#
#   bench/nccl_comm_memory.sh [libnccl.so.2 | libnccl.so.2.xz ...]
#       (default: /usr/lib/x86_64-linux-gnu/libnccl.so.2, and .peer/nccl-2.32.3/libnccl.so.2.xz
#        when it is there)
# Each case runs `mgcomm bench -g 1` on a few collectives with every result checked, then on 64
# MiB all_reduces long enough for nvidia-smi to read the process's device memory a few times; the table gives the largest reading,
# and the communicator memory that `mgcomm bench` prints on NCCL >= 2.29 (ncclCommMemStats).
# Environment: BUILD (build-gpu), OUT ($BUILD/memory-out), JOBS (16).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/memory-out}
mkdir -p "$out"
say() { echo "nccl_comm_memory.sh: $*"; }
libs=("$@")
if [ ${#libs[@]} -eq 0 ]; then
  libs=(/usr/lib/x86_64-linux-gnu/libnccl.so.2)
  [ -f "$root/.peer/nccl-2.32.3/libnccl.so.2.xz" ] && libs+=("$root/.peer/nccl-2.32.3/libnccl.so.2.xz")
fi
{ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build "$build" -j "${JOBS:-16}" --target mgcomm_cli; } >"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; say "build failed"; exit 2; }

# The process's device memory in MiB, the largest of the readings taken while it runs.
watch_mem() {
  local pid=$1 best=0 v
  while kill -0 "$pid" 2>/dev/null; do
    v=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
        awk -F', *' -v p="$pid" '$1 == p { print $2 }')
    [ -n "$v" ] && [ "$v" -gt "$best" ] && best=$v
    sleep 0.5
  done
  echo "$best"
}

rows=()
fail=0
for lib in "${libs[@]}"; do
  if [[ $lib == *.xz ]]; then
    mkdir -p "$build/nccl-unpacked"
    xz -dc "$lib" >"$build/nccl-unpacked/libnccl.so.2" || { say "cannot unpack $lib"; exit 2; }
    lib=$build/nccl-unpacked/libnccl.so.2
  fi
  for blocking in 1 0; do
    for share in 0 1; do
      log="$out/$(basename "$(dirname "$lib")")-b$blocking-s$share.txt"
      export MGCOMM_NCCL_LIBRARY=$lib MGCOMM_NCCL_BLOCKING=$blocking NCCL_COMM_SPLIT_SHARE_RESOURCES=$share
      "$build/mgcomm" bench -g 1 -c all_reduce,all_gather,broadcast -b 8 -e 4M -f 8 -n 20 --check 1 \
        >"$log.check" 2>&1
      rc=$?
      "$build/mgcomm" bench -g 1 -c all_reduce -b 64M -e 64M -n 60000 -w 10 --inplace 0 --check 0 \
        >"$log" 2>&1 &
      pid=$!
      mib=$(watch_mem "$pid")
      wait "$pid" || rc=$?
      [ $rc -eq 0 ] || fail=1
      ver=$(python3 -c 'import ctypes, sys; v = ctypes.c_int(); ctypes.CDLL(sys.argv[1]).ncclGetVersion(ctypes.byref(v)); print("%d.%d.%d" % (v.value // 10000, v.value // 100 % 100, v.value % 100))' "$lib" 2>/dev/null)
      stats=$(sed -n "s/^# memory, rank 0's communicator: //p" "$log" | head -1)
      rows+=("| ${ver:-?} | $([ $blocking = 1 ] && echo blocking || echo nonblocking) | $share | $mib | ${stats:-n/a} | $rc |")
      say "${ver:-?} blocking=$blocking share=$share: $mib MiB, exit $rc"
    done
  done
done
# How many channels each of a rank's NCCL communicators got (NCCL's INFO line at the end of
# each init or split), in blocking mode on the first library.
lib=${libs[0]}
[[ $lib != *.xz ]] || lib=$build/nccl-unpacked/libnccl.so.2
[ -f "$lib" ] || lib=/usr/lib/x86_64-linux-gnu/libnccl.so.2
chan=$(MGCOMM_NCCL_LIBRARY=$lib MGCOMM_NCCL_BLOCKING=1 NCCL_COMM_SPLIT_SHARE_RESOURCES=0 NCCL_DEBUG=INFO \
  "$build/mgcomm" bench -g 1 -c all_reduce -b 8 -e 8 -n 5 2>&1 | grep -o '[0-9]* coll channels.*' | sort | uniq -c)
{
  echo "# Device memory of one rank's NCCL communicators ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1))"
  echo
  echo "mgcomm bench -g 1 -c all_reduce -b 64M -e 64M after a checked run of 8 B - 4 MiB; MiB: the process's device memory"
  echo "(nvidia-smi, largest reading: CUDA context, buffers and communicators together); share:"
  echo "NCCL_COMM_SPLIT_SHARE_RESOURCES."
  echo
  echo "| NCCL | mode | share | process MiB | ncclCommMemStats (mgcomm bench) | exit (both runs) |"
  echo "| --- | --- | ---: | ---: | --- | ---: |"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Channels of each communicator made in blocking mode ($lib; NCCL_DEBUG=INFO, count of lines):"
  echo
  echo '```'
  echo "$chan"
  echo '```'
} | tee "$out/nccl-comm-memory.md"
exit $fail
