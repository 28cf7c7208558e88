#!/bin/sh
# The NVSHMEM parts of the command line without a GPU: `mgcomm info` lists the release and the
# entry points of the NVSHMEM it loaded (the fake one, whose release no real NVSHMEM has), and
# says nothing of them when NVSHMEM is absent; `mgcomm bench shmem` describes itself, refuses
# bad options (2) and fails with a reason where there is no GPU (1).
set -u
MG=${MGCOMM:?MGCOMM must name the mgcomm command}
FAKE=${FAKE_NVSHMEM:?FAKE_NVSHMEM must name the fake NVSHMEM library}
fail() { echo "FAIL: $*"; exit 1; }

out=$(MGCOMM_NVSHMEM_LIBRARY=$FAKE "$MG" info) || fail "mgcomm info failed"
echo "$out" | grep -q "NVSHMEM host API: release 3.99.1, OpenSHMEM 1.3" ||
  fail "info must show the loaded NVSHMEM's release: $out"
echo "$out" | grep -q "nvshmemx_hostlib_init_attr  *\*" || fail "info must list the entry points"
out=$(MGCOMM_NVSHMEM_LIBRARY=/nonexistent/libnvshmem_host.so.3 "$MG" info) || fail "info failed"
echo "$out" | grep -q "NVSHMEM host API" && fail "info must not describe an NVSHMEM it did not load"

"$MG" bench shmem --help | grep -q "put/get" || fail "bench shmem --help must describe it"
"$MG" bench shmem -f 1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "-f 1 must be a usage error (2)"
"$MG" bench shmem -x 3 >/dev/null 2>&1; [ $? -eq 2 ] || fail "an unknown option must be a usage error (2)"
"$MG" bench shmem -b >/dev/null 2>&1; [ $? -eq 2 ] || fail "a missing value must be a usage error (2)"
err=$(MGCOMM_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$MG" bench shmem 2>&1 >/dev/null)
[ $? -eq 1 ] || fail "bench shmem without a driver must fail (1)"
echo "$err" | grep -q "libcuda" || fail "the failure must say why: $err"
echo "shmem cli: ok"
