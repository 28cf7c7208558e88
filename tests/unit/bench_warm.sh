#!/bin/sh
# bench_warm.sh -- `mgcomm bench -g` warms every size of a collective before it times the first,
# as nccl-tests does (tools/mgcomm/bench_gpus.c, mg_bench_gpus_warm), on the simulated driver and
# NCCL: one GPU, all_reduce of 8 and 32 bytes out of place, one warm-up and one timed iteration.
# Each size makes a checked call, its warm-up and its timed call (3), and the warm-up pass one call
# per size before them (2): 8 NCCL calls. The simulator holds the nth call of rank 0 on the host
# (MGSIM_HOST_HANG=0:n) until the watchdog's deadline (MGCOMM_TIMEOUT=1): with n = 7 the bench
# must fail, timed out (without the warm-up pass there is no 7th call), and with n = 9 succeed.
#   bench_warm.sh <mgcomm> <sim dir>
set -u
cli=$1 sim=$2
run() {
  MGCOMM_TIMEOUT=1 MGSIM_HOST_HANG=0:$1 MGCOMM_CUDA_LIBRARY=$sim/libcuda.so.1 \
    MGCOMM_NCCL_LIBRARY=$sim/libnccl.so.2 MGSIM_DEVICES=1 \
    "$cli" bench -g 1 -c all_reduce -b 8 -e 32 -f 4 -n 1 -w 1 --inplace 0 >"$out" 2>&1
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if run 7; then
  echo "FAIL: the 7th NCCL call never came: no warm-up pass"; cat "$out"; exit 1
fi
grep -q MG_ERR_TIMED_OUT "$out" || { echo "FAIL: failed, but not timed out:"; cat "$out"; exit 1; }
run 9 || { echo "FAIL: more than 8 NCCL calls, or another failure:"; cat "$out"; exit 1; }
echo "bench_warm: ok (8 NCCL calls: 2 warm-up, then 3 per size)"
