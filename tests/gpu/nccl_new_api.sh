#!/usr/bin/env bash
# nccl_new_api.sh -- NCCL 2.29 to 2.32's host API through mgcomm (issue 24), in one call on a GPU
# machine: builds what it needs (Release, with the test seam), then, with the NCCL 2.32.3 wheel's
# library (carried as .peer/nccl-2.32.3/libnccl.so.2.xz: tests/gpu/one_arch_lib.py keeps sm_90's
# device code only, xz brings it to 44 MB):
#   1. test_gpu_nccl29 one      suspend / memory statistics / resume, properties, config fields,
#                               NCCL's parameters, grow id, window pointers (one GPU); with
#                               blocking NCCL communicators (the default), then nonblocking ones
#   2. test_gpu_nccl29 grow     grow (2 and 4 GPUs; skips, 77, on one)
#   3. test_gpu_nccl29 signals  put with signal, signal, wait (2 GPUs; skips on one)
#   4. mgcomm info --comm --nccl-params, and mgcomm bench -g <all GPUs> (memory in its preamble)
# and, with the machine's own NCCL (2.28.3 on the lent machines), test 1 again: every new call is
# refused by name there. The multi-GPU verification run (issue 21) runs this same script on 2 and
# 4 GPUs, where 2 and 3 run instead of skipping.
#
# Everything goes under $OUT (default build-gpu/out): nccl_new_api.log (every output) and
# summary.md (machine, versions, one line per step). Exit 0 when every step passed or skipped
# for want of GPUs, 1 otherwise.
#
#   tests/gpu/nccl_new_api.sh           (NCCL_XZ=path to another libnccl.so.2.xz)
#
# The library it carries, made on the development machine (tests/unit/nccl29.cmake fetches the
# wheel; the result is 44 MB, under what a device call carries):
#   tests/gpu/one_arch_lib.py .whl/nccl-2.32.3/libnccl.so.2 /tmp/n2323/libnccl.so.2 90
#   xz -T2 -6 -k /tmp/n2323/libnccl.so.2 && mkdir -p .peer/nccl-2.32.3 &&
#     cp /tmp/n2323/libnccl.so.2.xz .peer/nccl-2.32.3/
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/out}
xzlib=${NCCL_XZ:-$root/.peer/nccl-2.32.3/libnccl.so.2.xz}
mkdir -p "$out"
log=$out/nccl_new_api.log
: >"$log"
t0=$(date +%s)
say() { echo "nccl_new_api.sh: $*" | tee -a "$log"; }
results=()
failed=0
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || echo 0)

# step NAME OK_CODES COMMAND...: runs it, logs its output, records its exit code.
step() {
  local name=$1 ok=$2
  shift 2
  say "== $name: $*"
  local s=$(date +%s)
  "$@" >>"$log" 2>&1
  local rc=$?
  local verdict=failed
  case " $ok " in *" $rc "*) verdict=ok ;; esac
  [ $rc -eq 77 ] && [ "$verdict" = ok ] && verdict=skipped
  [ "$verdict" = failed ] && failed=1
  results+=("| $name | $verdict (exit $rc) | $(($(date +%s) - s)) s |")
  say "   exit $rc: $verdict"
}

lib=/tmp/mg-nccl-2.32.3/libnccl.so.2
mkdir -p "$(dirname "$lib")"
if ! xz -dc "$xzlib" >"$lib" 2>>"$log"; then
  say "cannot unpack $xzlib"
  exit 1
fi

say "configure and build in $build"
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=ON &&
       cmake --build "$build" -j "${JOBS:-16}" --target test_gpu_nccl29 mgcomm_cli; } \
     >>"$log" 2>&1; then
  say "build failed; the end of its log:"
  tail -n 40 "$log"
  exit 1
fi
t=$build/tests/gpu/test_gpu_nccl29
two=77
[ "$ngpu" -ge 2 ] && two=0 # with 2 GPUs, grow and signals must run

step "one GPU, NCCL 2.32.3" "0" env MGCOMM_NCCL_LIBRARY="$lib" "$t" one
# Nonblocking NCCL communicators: one per rank, every call waited for by mgcomm.
step "one GPU, NCCL 2.32.3, nonblocking" "0" env MGCOMM_NCCL_BLOCKING=0 MGCOMM_NCCL_LIBRARY="$lib" "$t" one
step "grow, NCCL 2.32.3" "$two" env MGCOMM_NCCL_LIBRARY="$lib" "$t" grow
step "signals, NCCL 2.32.3" "$two" env MGCOMM_NCCL_LIBRARY="$lib" "$t" signals
step "one GPU, the machine's NCCL" "0" "$t" one
step "mgcomm info --comm --nccl-params, NCCL 2.32.3" "0" \
  env MGCOMM_NCCL_LIBRARY="$lib" "$build/mgcomm" info --comm --nccl-params
step "mgcomm bench -g $ngpu, NCCL 2.32.3" "0" env MGCOMM_NCCL_LIBRARY="$lib" \
  "$build/mgcomm" bench -g "$ngpu" -c all_reduce -b 8 -e 64M -f 8

{
  echo "# mgcomm: NCCL 2.29-2.32 host API on GPUs (tests/gpu/nccl_new_api.sh)"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- host: $(hostname)"
  echo "- commit: $(mg_source_commit "$root")"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
    sed 's/^/- GPU /'
  echo "- NCCL: 2.32.3 (nvidia-nccl-cu13 wheel, sm_90 code kept) from $lib; the machine's own: $(ls /usr/lib/x86_64-linux-gnu/libnccl.so.2* 2>/dev/null | head -1)"
  echo "- environment: NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1"
  echo
  echo "| step | result | time |"
  echo "| --- | --- | --- |"
  printf '%s\n' "${results[@]}"
  echo
  echo "- wall time: $(($(date +%s) - t0)) s"
} >"$out/summary.md"
cat "$out/summary.md"
exit $failed
