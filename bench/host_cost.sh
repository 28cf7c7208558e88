#!/usr/bin/env bash
# host_cost.sh -- what one mgcomm call costs the calling thread over raw NCCL (the host-side
# cost of an 8-byte all_reduce), measured in one device call:
#   1. builds bench/nccl_perf of this tree as a user gets the library (Release, no test seam:
#      MGCOMM_TESTING=OFF) into $BUILD (default build-hostcost); with -A DIR, also the source
#      tree in DIR (an earlier commit, e.g. `git archive <commit> | tar -x -C DIR`, kept in a
#      git-ignored folder) with this tree's bench/nccl_perf.c, so that both are probed alike;
#   2. runs `nccl_perf overhead -g G -n CALLS -B 8` R rounds, each round every build with the
#      pointer checks off and on, the builds taking turns at going first;
#   3. writes $OUT/host-cost.md (default $BUILD/host-cost-out): per run, mgcomm's own share of
#      a call (its time less its span inside NCCL) and its parts (before and after NCCL; in the
#      CUDA driver and in mgcomm's code), raw nonblocking NCCL's own time outside NCCL (the
#      probe's floor) and the difference of medians over raw nonblocking NCCL; then the median
#      of the runs per build and check setting, and the logs in host-cost-logs.tar.gz.
#
#   bench/host_cost.sh [-g gpus] [-R rounds] [-n calls] [-A base_source_dir] [-X 0|1] [-M 0|1]
#                      [-K 0|1]
# -M 1: mgcomm's buffers from mg_mem_alloc, checked against its record (nccl_perf overhead -M 1);
# by default cuMemAlloc buffers, which the driver checks.
# -X 1: each mgcomm call starts with no current context on its thread (nccl_perf overhead -X 1),
# as every call of a program without CUDA of its own (mgcomm bench) finds it.
# -K 1: the all_reduce runs mgcomm's own kernel (MGCOMM_ALGO=mgcomm) instead of NCCL's, and the
# own share is mgcomm's cost around its cuLaunchKernel (read "the launch" for "NCCL" below).
# Environment: SOURCE_COMMIT, BASE_COMMIT (names in the report), NCCL_LIB (default
# /usr/lib/x86_64-linux-gnu/libnccl.so.2), JOBS (16), BUILD, OUT.
# Exit code: 0 when this tree's median own share is at most 1 us with the checks off and on,
# 1 when not, 2 when something could not run.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${BUILD:-$root/build-hostcost}
out=${OUT:-$build/host-cost-out}
nccl_lib=${NCCL_LIB:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
jobs=${JOBS:-16}
gpus=2 rounds=3 calls=20000 base="" noctx=0 mgmem=0 kern=0
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
  case "$1" in
  -g) gpus=$2 ;;
  -R) rounds=$2 ;;
  -n) calls=$2 ;;
  -A) base=$(cd "$2" && pwd) ;;
  -X) noctx=$2 ;;
  -M) mgmem=$2 ;;
  -K) kern=$2 ;;
  *) echo "host_cost.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
mg_begin host_cost.sh 2 "$out"
[ -f "$nccl_lib" ] || fail "no NCCL library at $nccl_lib (set NCCL_LIB)"
export MGCOMM_NCCL_LIBRARY=$nccl_lib
# The probe times mgcomm's share of a call around NCCL: the all_reduce must go to NCCL, where
# from 2 GPUs the default (MGCOMM_ALGO=auto) runs mgcomm's own kernel; or, with -K 1, around that
# kernel's launch.
algo=nccl
[ "$kern" != 1 ] || algo=mgcomm
export MGCOMM_ALGO=$algo

# ---- 1. build ---------------------------------------------------------------------------------
build_probe() { # SOURCE_DIR BUILD_DIR NAME
  { cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DMGCOMM_TESTING=OFF &&
    cmake --build "$2" -j "$jobs" --target nccl_perf; } >"$logs/build-$3.log" 2>&1 ||
    { tail -30 "$logs/build-$3.log" >&2; fail "$3 did not build"; }
}
builds="new"
say "building this tree in $build"
build_probe "$root" "$build" new
if [ -n "$base" ]; then
  say "building the base tree $base with this tree's probe"
  cp "$root/bench/nccl_perf.c" "$base/bench/nccl_perf.c"
  build_probe "$base" "$build/base" base
  builds="new base"
fi
probe() { case $1 in new) echo "$build/bench/nccl_perf" ;; base) echo "$build/base/bench/nccl_perf" ;; esac; }

# ---- 2. runs ----------------------------------------------------------------------------------
for r in $(seq 1 "$rounds"); do
  order=$builds
  [ $((r % 2)) = 1 ] || order=$(echo "$builds" | tr ' ' '\n' | tac | tr '\n' ' ')
  for b in $order; do
    for chk in 0 1; do
      say "round $r of $rounds: $b, pointer checks $chk"
      log="$logs/$b-$chk-$r.txt"
      MGCOMM_CHECK_POINTERS=$chk "$(probe "$b")" overhead -g "$gpus" -n "$calls" -B 8 -X "$noctx" -M "$mgmem" >"$log" 2>&1 ||
        { tail -20 "$log" >&2; fail "nccl_perf overhead ($b, checks $chk) failed"; }
    done
  done
done

# ---- 3. report --------------------------------------------------------------------------------
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo "unknown GPU")
commit=$(mg_source_commit "$root")
set +e
python3 - "$logs" "$out/host-cost.md" "$builds" "$rounds" <<EOF
import re, statistics, sys
logs, dst, builds, rounds = sys.argv[1], sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
keys = ["own_share_us", "own_code_us", "own_driver_us", "pre", "post", "raw_outside_us",
        "overhead_us_vs_nonblocking"]
rows = {"own share before NCCL": "pre", "own share after NCCL": "post"}
def read(b, chk, r):
    v = {}
    for line in open(f"{logs}/{b}-{chk}-{r}.txt"):
        m = re.match(r"(\w+) ([-\d.]+)$", line)
        if m and m.group(1) in keys: v[m.group(1)] = float(m.group(2))
        m = re.match(r"\s+(own share (?:before|after) NCCL)\s+([\d.]+)", line)
        if m: v[rows[m.group(1)]] = float(m.group(2))
    return v
names = {"new": "this tree ($commit)", "base": "base (${BASE_COMMIT:-$base})"}
doc = [f"# Host-side cost of one call: mgcomm over raw NCCL", "",
       f"- machine: $gpus x {'$gpu_name'}, NCCL {'$nccl_lib'}; date $(date -u +%Y-%m-%d\ %H:%M) UTC",
       f"- builds: Release, MGCOMM_TESTING=OFF, MGCOMM_ALGO=$algo" +
       ("" if "$algo" == "nccl" else " (our kernel: read 'its launch' for 'NCCL')") + "; " + ", ".join(names[b] for b in builds),
       f"- {rounds} rounds of \`nccl_perf overhead -g $gpus -n $calls -B 8 -X $noctx -M $mgmem\` per build and check setting, builds alternating", "",
       "All in us, medians over the $calls calls of each rank's thread. own: the call's time less its span inside NCCL; "
       "code / driver: that share in mgcomm's code and in the CUDA driver calls it makes (context, pointer checks); "
       "floor: raw nonblocking NCCL's own time outside NCCL; diff: median of mgcomm's calls less the median of raw nonblocking NCCL's; "
       "own/floor: the own share in units of the floor, which the same process measured in the same calls: a process's speed "
       "moves by up to 1.8x from one run to the next on the shared GPU machines, and this ratio moves with neither, so it is "
       "what compares two builds.", "",
       "| build | checks | round | own | code | driver | before NCCL | after NCCL | floor | diff |",
       "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
med = {}
for b in builds:
    for chk in ("0", "1"):
        runs = [read(b, chk, r) for r in range(1, rounds + 1)]
        for r, v in enumerate(runs, 1):
            doc.append(f"| {b} | {'on' if chk == '1' else 'off'} | {r} | " +
                       " | ".join(f"{v[k]:.3f}" if k in v else "-" for k in keys) + " |")
        med[(b, chk)] = {k: statistics.median(v[k] for v in runs if k in v) for k in keys}
        med[(b, chk)]["ratio"] = statistics.median(v["own_share_us"] / v["raw_outside_us"] for v in runs
                                                   if v.get("raw_outside_us"))
doc += ["", "Medians of the rounds:", "", "| build | checks | own | code | driver | before NCCL | after NCCL | floor | diff | own/floor |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
for (b, chk), v in med.items():
    doc.append(f"| {b} | {'on' if chk == '1' else 'off'} | " + " | ".join(f"{v[k]:.3f}" for k in keys) + f" | {v['ratio']:.2f} |")
miss = [chk for chk in ("0", "1") if med[("new", chk)]["own_share_us"] > 1]
doc += ["", "Target (own share <= 1 us, checks off and on): " +
        ("met." if not miss else "missed with the checks " + " and ".join("off" if c == "0" else "on" for c in miss) + "."), ""]
open(dst, "w").write("\n".join(doc))
sys.exit(1 if miss else 0)
EOF
verdict=$?
set -e
tar -czf "$out/host-cost-logs.tar.gz" -C "$logs" .
cat "$out/host-cost.md"
say "done in $(($(date +%s) - t0)) s"
exit $verdict
