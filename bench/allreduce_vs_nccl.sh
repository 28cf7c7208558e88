#!/usr/bin/env bash
# allreduce_vs_nccl.sh -- mgcomm's own all-reduce kernels (issue 20) against NCCL on 2 and 4 GPUs
# of one machine (issue 21, run 6), in one device call:
#   1. builds mgcomm (Release, test build: the GPU tests are needed) into $BUILD, and nccl-tests
#      from $NCCL_TESTS_SRC (default .peer/nccl-tests, fetched beforehand, never committed) as
#      bench/nccl_vs_nccl_tests.sh does;
#   2. per GPU count: correctness across the real GPUs, ranks as threads of one process and as
#      processes (CUDA IPC): every dtype, op, algorithm, size (tests/gpu/test_gpu_kernels.c with
#      KT_GPUS), graph capture and replay, the timeout and abort paths; and the NCCL backend's
#      harness against the host backend with the kernels chosen (MGCOMM_ALGO=auto);
#   3. per GPU count, -R times, in the same call: NCCL's plain all_reduce and ours through the
#      library (`mgcomm bench -g N -c all_reduce`, MGCOMM_ALGO=nccl then =mgcomm, float32 sum in
#      place), our kernels under CUDA graphs (test_gpu_kernels bench) and nccl-tests with
#      symmetric registration under graphs (all_reduce_perf -R 2 -G 100);
#   4. writes $OUT/allreduce-vs-nccl.md: the medians, the ratios, and the targets: ours <= 0.5 x
#      NCCL's plain time up to 256 KiB, <= 0.7 x up to 4 MiB; under a graph <= nccl-tests -R 2 -G.
#
#   bench/allreduce_vs_nccl.sh [-g "2 4"] [-R repeats]
# Environment: SOURCE_COMMIT, NCCL_LIB (default /usr/lib/x86_64-linux-gnu/libnccl.so.2), CUDA_HOME,
# JOBS (16), BUILD (build-gpu), OUT ($BUILD/kernels-out), NCCL_TESTS_SRC.
# Exit code: 0 every test passed and every target met; 1 a target missed; 2 a test failed or
# something could not run.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-gpu}
out=${OUT:-$build/kernels-out}
src=${NCCL_TESTS_SRC:-$root/.peer/nccl-tests}
nccl_lib=${NCCL_LIB:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
gpu_counts="" repeats=3
while getopts "g:R:" o; do
  case $o in
    g) gpu_counts=$OPTARG ;;
    R) repeats=$OPTARG ;;
    *) echo "usage: $0 [-g \"2 4\"] [-R repeats]" >&2; exit 2 ;;
  esac
done
mg_begin allreduce_vs_nccl 2 "$out"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ -n "$gpu_counts" ] || { gpu_counts=2; [ "$ngpu" -ge 4 ] && gpu_counts="2 4"; }
for g in $gpu_counts; do [ "$g" -le "$ngpu" ] || fail "$g GPUs asked, $ngpu present"; done

say "building mgcomm in $build"
{ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=ON &&
  cmake --build "$build" -j "${JOBS:-16}" --target test_gpu_kernels test_gpu_coll mgcomm_cli; } \
  >"$logs/build.log" 2>&1 || { tail -30 "$logs/build.log" >&2; fail "mgcomm did not build"; }
kt=$build/tests/gpu/test_gpu_kernels
nt=""
if [ -d "$src/src" ] && mg_build_nccl_tests "$src" "$build/nccl-tests" "$nccl_lib" "$logs"; then
  nt=$build/nccl-tests/all_reduce_perf
else
  say "no nccl-tests (fetch github:NVIDIA/nccl-tests into $src): the graph target is not compared"
fi
export MGCOMM_NCCL_LIBRARY=$nccl_lib
export LD_LIBRARY_PATH=$(dirname "$nccl_lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# ---- 2. correctness -------------------------------------------------------------------------
tests_failed=0
: >"$out/tests.txt"
check() { # NAME COMMAND...: runs it, keeps its output, records PASS/FAIL
  local name=$1
  shift
  if timeout 300 "$@" >"$logs/t-$name.txt" 2>&1; then
    echo "PASS $name: $(grep -E 'cases|replays|ended|correct|queued' "$logs/t-$name.txt" | tail -1)" >>"$out/tests.txt"
  else
    echo "FAIL $name (exit $?): $(tail -3 "$logs/t-$name.txt" | tr '\n' ' ')" >>"$out/tests.txt"
    tests_failed=1
  fi
}
for g in $gpu_counts; do
  say "$g GPUs: correctness"
  for mode in correct mixed graph procs; do
    check "$mode-$g" env KT_GPUS="$g" "$kt" "$mode" "$g"
  done
  for mode in timeout abort; do # a rank that never comes needs another that waits for it
    check "$mode-$g" env KT_GPUS="$g" "$kt" "$mode" $((g < 2 ? 2 : g))
  done
  check "nccl-backend-all-$g" env MGCOMM_ALGO=auto "$build/tests/gpu/test_gpu_coll" all "$g"
  check "nccl-backend-procs-$g" env MGCOMM_ALGO=auto "$build/tests/gpu/test_gpu_coll" procs "$g"
done

# ---- 3. times -------------------------------------------------------------------------------
for g in $gpu_counts; do
  for r in $(seq 1 "$repeats"); do
    say "$g GPUs: times, run $r of $repeats"
    for algo in nccl mgcomm; do
      MGCOMM_ALGO=$algo "$build/mgcomm" bench -g "$g" -c all_reduce -b 8 -e 4M -f 2 --inplace 1 \
        --check 0 -n 200 -w 20 --csv "$logs/$algo-$g-$r.csv" >"$logs/$algo-$g-$r.txt" 2>&1 ||
        fail "mgcomm bench with MGCOMM_ALGO=$algo failed: $(tail -3 "$logs/$algo-$g-$r.txt")"
    done
    KT_GPUS=$g "$kt" bench >"$logs/kern-$g-$r.txt" 2>&1 || fail "test_gpu_kernels bench failed"
    if [ -n "$nt" ]; then
      "$nt" -g "$g" -b 8 -e 4M -f 2 -R 2 -G 100 -n 200 -w 20 -c 0 >"$logs/nt-$g-$r.txt" 2>&1 ||
        fail "nccl-tests failed: $(tail -5 "$logs/nt-$g-$r.txt")"
    fi
  done
done

# ---- 4. the report --------------------------------------------------------------------------
set +e
python3 - "$logs" "$out/allreduce-vs-nccl.md" "$repeats" "$gpu_counts" "$out/tests.txt" <<'EOF'
import csv, glob, os, re, statistics, subprocess, sys
logs, dst, R, counts, tests = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
def med(v): return statistics.median(v) if v else float("nan")
def bench_csv(path):  # bytes -> time_us of the in-place all_reduce
    with open(path) as f:
        return {int(r["bytes"]): float(r["time_us"]) for r in csv.DictReader(f) if r["inplace"] == "true"}
def kern(path, g):  # (algorithm, bytes) -> graph us, for g ranks (one per GPU)
    d = {}
    for line in open(path):
        m = re.match(r"\| *(\d+) \| (one-shot|two-shot) \| (\d+) \| [\d.]+ \| ([\d.]+) \|", line)
        if m and int(m.group(1)) == g: d[(m.group(2), int(m.group(3)))] = float(m.group(4))
    return d
def ncclt(path):  # bytes -> in-place time us
    d = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 13 and f[0].isdigit() and f[2] == "float": d[int(f[0])] = float(f[9])
    return d
def oneshot_max(g): return 1 << 20 if g <= 2 else 512 << 10 if g <= 4 else 256 << 10
try:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()
except OSError:
    smi = []
L = ["# mgcomm's all-reduce kernels against NCCL", "",
     "- machine: %d x %s" % (len(smi), smi[0] if smi else "?"),
     "- commit: %s; %d runs per figure, medians" % (os.environ.get("SOURCE_COMMIT", "?"), R),
     "- plain: `mgcomm bench -g N -c all_reduce --inplace 1` (float32 sum, one thread posts every "
     "rank), MGCOMM_ALGO=nccl against =mgcomm; graph: our kernels in CUDA graphs of 100 "
     "(test_gpu_kernels bench) against nccl-tests `all_reduce_perf -R 2 -G 100` (in place)", "",
     "## Tests", ""] + ["    " + l.rstrip() for l in open(tests)] + [""]
missed = 0
for g in map(int, counts):
    plain = {a: [bench_csv(p) for p in sorted(glob.glob("%s/%s-%d-*.csv" % (logs, a, g)))] for a in ("nccl", "mgcomm")}
    kg = [kern(p, g) for p in sorted(glob.glob("%s/kern-%d-*.txt" % (logs, g)))]
    nt = [ncclt(p) for p in sorted(glob.glob("%s/nt-%d-*.txt" % (logs, g)))]
    sizes = sorted(set(plain["nccl"][0]) if plain["nccl"] else [])
    L += ["## %d GPUs" % g, "",
          "| bytes | NCCL plain us | mgcomm plain us | ratio | target | ours in graph us (algorithm) | nccl-tests -R 2 -G us | ratio | target |",
          "|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    for b in sizes:
        n = med([d[b] for d in plain["nccl"] if b in d]); m = med([d[b] for d in plain["mgcomm"] if b in d])
        ratio = m / n
        lim = 0.5 if b <= 256 << 10 else 0.7
        ok = ratio <= lim
        missed += not ok
        algo = "one-shot" if b <= oneshot_max(g) else "two-shot"
        kv = [d[(algo, b)] for d in kg if (algo, b) in d]
        nv = [d[b] for d in nt if b in d]
        gcell = ntcell = gr = gt = ""
        if kv:
            gcell = "%.2f (%s)" % (med(kv), algo)
        if kv and nv and med(nv) > 0:  # nccl-tests prints 0.00 for a no-op (one rank in place)
            gratio = med(kv) / med(nv)
            ntcell, gr = "%.2f" % med(nv), "%.2f" % gratio
            gt = "ok" if gratio <= 1 else "MISSED (<= 1)"
            missed += gratio > 1
        L.append("| %d | %.2f | %.2f | %.2f | %s | %s | %s | %s | %s |" % (
            b, n, m, ratio, "ok" if ok else "MISSED (<= %.1f)" % lim, gcell, ntcell, gr, gt))
    L.append("")
L.append("Targets missed: %d" % missed)
open(dst, "w").write("\n".join(L) + "\n")
print("\n".join(L))
sys.exit(1 if missed else 0)
EOF
report_rc=$?
tar -czf "$out/logs.tar.gz" -C "$logs" .
[ "$tests_failed" = 0 ] || exit 2
exit $report_rc
