#!/usr/bin/env bash
# gpu_bench.sh -- issue 7's evidence on a GPU machine, for one device call: `mgcomm bench` as the
# README's first command runs it (the quick default on the best backend), then `mgcomm bench -g N`
# next to nccl-tests on the same GPUs (bench/compare.sh -g N), for every GPU count asked.
#
#   bench/gpu_bench.sh [-g "2 4"] [-R repeats] [-c colls] [-e maxbytes] [-f factor]
#
# Builds mgcomm (Release, into $BUILD, default build-gpu; reused when there) and nccl-tests from
# $NCCL_TESTS_SRC (default .peer/nccl-tests: fetched beforehand, git-ignored, never committed),
# against the library mgcomm loads ($NCCL_LIB, default /usr/lib/x86_64-linux-gnu/libnccl.so.2).
# Writes under $OUT (default $BUILD/gpu-bench): gpu-bench.md (machine, date, the default run's
# output and one comparison table per GPU count) and gpu-bench-json.tar.gz (every run's JSON).
# Exit code: 0 when everything ran and every result was right, 1 otherwise, 2 for bad usage.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/gpu-bench}
src=${NCCL_TESTS_SRC:-$root/.peer/nccl-tests}
nccl_lib=${NCCL_LIB:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
gpu_counts="" repeats=2 colls=all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,sendrecv
maxb=1G factor=8
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
  case "$1" in
  -g) gpu_counts=$2 ;;
  -R) repeats=$2 ;;
  -c) colls=$2 ;;
  -e) maxb=$2 ;;
  -f) factor=$2 ;;
  *) echo "gpu_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
mg_begin gpu_bench.sh 1 "$out"
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: no GPU machine?"
ngpu=$(nvidia-smi -L | grep -c '^GPU')
[ -n "$gpu_counts" ] || gpu_counts=$([ "$ngpu" -ge 4 ] && echo "2 4" || echo 2)

say "building mgcomm in $build"
{ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release && cmake --build "$build" -j "${JOBS:-16}"; } \
  >"$logs/build-mgcomm.log" 2>&1 || { tail -30 "$logs/build-mgcomm.log" >&2; fail "mgcomm did not build"; }
say "building nccl-tests"
mg_build_nccl_tests "$src" "$src/build" "$nccl_lib" "$logs" || fail "nccl-tests did not build"
export MGCOMM_NCCL_LIBRARY=$nccl_lib                    # mgcomm loads exactly this file
export LD_LIBRARY_PATH=$(dirname "$nccl_lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} # so does nccl-tests

rc=0
report=$out/gpu-bench.md
{
  echo "# mgcomm bench on GPUs, and next to nccl-tests"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), host $(hostname), $ngpu x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  echo "- mgcomm $(mg_source_commit "$root") (Release); nccl-tests $(cat "$src/COMMIT" 2>/dev/null || echo '(unknown commit)') built against $mg_nccl_hdr (NCCL $mg_nccl_hdr_code); both load $nccl_lib"
  echo "- NCCL_NVLS_ENABLE=0; mgcomm's communicators are nonblocking, nccl-tests' blocking"
  echo
  echo "## \`mgcomm bench\` with no arguments (what \`make\` runs)"
  echo
  echo '```'
} >"$report"
s=$(date +%s)
"$build/mgcomm" bench >>"$report" 2>&1 || { rc=1; say "the default run failed"; }
{
  echo '```'
  echo
  echo "(took $(($(date +%s) - s)) s)"
} >>"$report"

for g in $gpu_counts; do
  say "$g GPUs: mgcomm bench -g $g and nccl-tests, $repeats alternated runs each"
  {
    echo
    echo "## $g GPUs: mgcomm bench -g $g vs nccl-tests -g $g"
    echo
    echo "\`bench/compare.sh -g $g -R $repeats -c $colls -b 8 -e $maxb -f $factor\` (-n 20 -w 5, every result checked by both)"
    echo
    echo '```'
  } >>"$report"
  MGCOMM=$build/mgcomm NCCL_TESTS_DIR=$src bash "$root/bench/compare.sh" -g "$g" -R "$repeats" \
    -c "$colls" -b 8 -e "$maxb" -f "$factor" --keep "$logs/json-g$g" >>"$report" 2>&1 ||
    { rc=1; say "$g GPUs: the comparison failed"; }
  echo '```' >>"$report"
done
tar -czf "$out/gpu-bench-json.tar.gz" -C "$logs" $(cd "$logs" && ls -d json-g* 2>/dev/null) 2>/dev/null || true
echo >>"$report"
echo "- wall time: $(($(date +%s) - t0)) s" >>"$report"
cat "$report"
exit $rc
