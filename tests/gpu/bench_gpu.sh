#!/usr/bin/env bash
# bench_gpu.sh CASE N -- `mgcomm bench` on N GPUs of the NCCL backend (tests/gpu/bench.cmake,
# label gpu). Exit 0 pass, 1 fail (with the reason), 77 skipped: fewer than N GPUs, or no NCCL
# (bench's own refusal says which).
#   coll   -g N: every collective over a few sizes, in and out of place, checked (#wrong 0,
#          exit 0); reductions of several dtypes and ops; a root other than 0; the JSON and CSV
#          against the schema, with backend nccl, ranks_are gpus and one machine.gpus per rank
#   world  --world -g N: the same through the world, JSON api world
#   auto   no -g: auto picks NCCL on every GPU and says so; the quick default (what `make`
#          runs) ends with #wrong total 0; -g more than present is exit 2
#   fault  an NCCL call that fails (MGCOMM_FAULT=ncclAllReduce) is named, exit 1, no hang
. "$(cd "$(dirname "$0")/../unit" && pwd)/bench_lib.sh"
case_=${1:-}
n=${2:-2}
need_python

# need_gpus N: skip unless bench can run N GPU ranks here.
need_gpus() {
  "$MGCOMM" bench -g "$1" -r 100000 >"$tmp/probe" 2>&1
  if grep -q "cannot run here\|this machine has\|no GPU\|cannot be counted" "$tmp/probe"; then
    echo "SKIP: $(cat "$tmp/probe")"
    exit 77
  fi
  grep -q "is not a rank of $1" "$tmp/probe" || fail "probe of -g $1: $(cat "$tmp/probe")"
}

# expect_ok OUT ARGS...: mgcomm bench ARGS exits 0, every line has #wrong 0, the summary is OK.
expect_ok() {
  local out=$1
  shift
  "$MGCOMM" bench "$@" >"$out" 2>"$tmp/err" ||
    fail "mgcomm bench $*: exit $?: $(cat "$tmp/err"); $(grep -v '^#' "$out" | head -5)"
  check_lines "$out" || fail "mgcomm bench $*: bad lines"
  grep -q "#wrong total 0 OK" "$out" || fail "mgcomm bench $*: $(tail -1 "$out")"
}

# json_gpus FILE N API: the JSON conforms and says nccl, gpus, N ranks, N GPU names, api API.
json_gpus() {
  python3 "$unit/bench_json.py" "$@" || fail "the JSON or CSV does not conform"
  python3 - "$1" "$n" "$api" <<'EOF' || fail "JSON content"
import json, sys
d, n, api = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
assert d["backend"] == "nccl" and d["ranks_are"] == "gpus" and d["nranks"] == n, d
assert d["api"] == api, d["api"]
g = d["machine"]["gpus"]
assert len(g) == n and all(isinstance(x, str) and x for x in g), g
assert all(r["wrong"] == 0 for r in d["results"]), d["results"]
EOF
}

case "$case_" in
coll)
  need_gpus "$n"
  api=comm
  expect_ok "$tmp/out" -g "$n" -c all -b 8 -e 4M -f 16 -n 3 -w 1 --json "$tmp/r.json" --csv "$tmp/r.csv"
  grep -q "^# mgcomm bench .*: backend nccl (" "$tmp/out" || fail "backend line: $(head -3 "$tmp/out")"
  grep -q "^# nranks $n (GPUs 0 \.\. $((n - 1)) " "$tmp/out" || fail "nranks line: $(head -3 "$tmp/out")"
  [ "$(grep -c '^#   rank [0-9]*: GPU ' "$tmp/out")" = "$n" ] || fail "GPU lines: $(head -8 "$tmp/out")"
  [ "$(grep -c '^# Collective: ' "$tmp/out")" = 9 ] || fail "not every collective ran"
  json_gpus "$tmp/r.json" "$tmp/r.csv"
  # Reductions of other types and ops, rooted collectives on the last rank.
  for d in float16 bfloat16 float64 int32 uint8; do
    for o in sum max avg; do
      [ "$o" = avg ] && [ "$d" = uint8 ] && continue
      expect_ok "$tmp/out" -g "$n" -c all_reduce,reduce_scatter,reduce -r $((n - 1)) -d $d -o $o \
        -b 96 -e 96K -f 32 -n 1 -w 0
    done
  done
  expect_ok "$tmp/out" -g "$n" -c broadcast,gather,scatter -r $((n - 1)) -b 1K -e 1M -f 32 -n 2 -w 0
  # Without the check the timed runs still run and print N/A.
  "$MGCOMM" bench -g "$n" -c all_reduce -b 1M -e 1M -n 2 -w 0 --check 0 >"$tmp/out" 2>"$tmp/err" ||
    fail "--check 0: exit $?: $(cat "$tmp/err")"
  grep -q '^ *1048576 .* N/A' "$tmp/out" || fail "--check 0: $(tail -3 "$tmp/out")"
  echo "bench gpu coll $n: ok"
  ;;

world)
  need_gpus "$n"
  api=world
  expect_ok "$tmp/out" --world -g "$n" -c all -b 8 -e 1M -f 32 -n 2 -w 1 -r $((n - 1)) \
    --json "$tmp/w.json"
  grep -q "^# nranks $n (GPUs of this process: the workers of one world" "$tmp/out" ||
    fail "nranks line: $(head -3 "$tmp/out")"
  json_gpus "$tmp/w.json"
  echo "bench gpu world $n: ok"
  ;;

auto)
  need_gpus "$n"
  expect_ok "$tmp/out" -c all_reduce -b 1K -e 64K -n 2 -w 1 --json "$tmp/a.json"
  grep -q "^# mgcomm bench .*: backend nccl (auto: " "$tmp/out" || fail "auto: $(head -3 "$tmp/out")"
  count=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nranks"])' "$tmp/a.json")
  [ "$count" -ge "$n" ] || fail "auto ran $count ranks, this machine has at least $n GPUs"
  expect_bad "-g $((count + 1)): this machine has $count GPU" -g $((count + 1))
  # The quick default, what `make` runs.
  expect_ok "$tmp/out"
  grep -q "^# mgcomm bench .*: backend nccl (auto: " "$tmp/out" || fail "default: $(head -3 "$tmp/out")"
  grep -q '^ *33554432 ' "$tmp/out" || fail "default does not reach 32 MiB"
  echo "bench gpu auto: ok"
  ;;

fault)
  need_gpus "$n"
  # The first ncclAllReduce (rank 0's part of the checked run) returns ncclInternalError (3).
  MGCOMM_TIMEOUT=60 MGCOMM_FAULT=ncclAllReduce:1:3 "$MGCOMM" bench -g "$n" -c all_reduce -b 1K -e 1K \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 1 ] || fail "exit $rc, want 1; stdout: $(cat "$tmp/out"); stderr: $(cat "$tmp/err")"
  grep -q '^mgcomm bench: gpus: all_reduce 1024 B: MG_ERR_[A-Z_]*: .*ncclAllReduce' "$tmp/err" ||
    fail "the failure is not named: $(cat "$tmp/err")"
  grep -q '^# Summary: 0 results' "$tmp/out" || fail "$(tail -1 "$tmp/out")"
  echo "bench gpu fault: ok"
  ;;

*)
  echo "usage: bench_gpu.sh coll|world|auto|fault N"
  exit 2
  ;;
esac
