#!/bin/sh
# bench_algo.sh -- `mgcomm bench --algo` on the simulated driver and NCCL (2 GPUs): with nccl,auto
# the sweep runs twice, on communicators whose config->all_reduce_algo differs (all_gather only in
# the first), its JSON and CSV rows say which all_reduce each is, and the comparison follows; the
# simulated driver cannot run mgcomm's kernels, so nccl,mgcomm fails the second sweep naming the
# config, and the comparison shows N/A; bad values are refused before anything runs.
#   bench_algo.sh <mgcomm> <sim dir> <bench_json.py>
set -u
cli=$1 sim=$2 checker=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bench() {
  MGCOMM_CUDA_LIBRARY=$sim/libcuda.so.1 MGCOMM_NCCL_LIBRARY=$sim/libnccl.so.2 MGSIM_DEVICES=2 \
    "$cli" bench -g 2 -b 8 -e 64 -f 8 -n 2 -w 1 "$@" >"$dir/out" 2>"$dir/err"
}
fail() { echo "FAIL: $*"; cat "$dir/out" "$dir/err"; exit 1; }

bench -c all_reduce,all_gather --algo nccl,auto --json "$dir/b.json" --csv "$dir/b.csv" ||
  fail "nccl,auto exited $?"
python3 "$checker" "$dir/b.json" "$dir/b.csv" || fail "the JSON or CSV does not conform"
python3 - "$dir/b.json" <<'PY' || fail "the rows are not the two sweeps'"
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
got = sorted((r["collective"], r["algo"]) for r in rows)
want = sorted([("all_reduce", "nccl")] * 4 + [("all_gather", "nccl")] * 4
              + [("all_reduce", "auto")] * 4)
sys.exit(0 if got == want else print(got) or 1)
PY
[ "$(grep -c '^# all_reduce: ' "$dir/out")" = 2 ] || fail "not one preamble line per sweep"
grep -q '^# all_reduce by implementation (--algo): time (us); ratio: each / nccl' "$dir/out" ||
  fail "no comparison"
[ "$(grep -cE '^# +(8|64) +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$dir/out")" = 4 ] ||
  fail "not 2 sizes x 2 placements in the comparison"

if bench -c all_reduce --algo nccl,mgcomm; then fail "nccl,mgcomm succeeded without kernels"; fi
grep -q 'config->all_reduce_algo = MG_ALGO_MGCOMM, but' "$dir/err" ||
  fail "the refusal is not named"
grep -qE '^# +8 +[0-9.]+ +N/A +N/A$' "$dir/out" || fail "no N/A for the failed sweep"
# The first sweep failing: the sizes the second measured are still compared.
if bench -c all_reduce --algo mgcomm,nccl; then fail "mgcomm,nccl succeeded without kernels"; fi
[ "$(grep -cE '^# +(8|64) +N/A +[0-9.]+ +N/A$' "$dir/out")" = 4 ] ||
  fail "the comparison lost the sizes that only the second sweep measured"

for bad in "--algo foo" "--algo nccl,nccl" "-c all_gather --algo nccl,auto" "--algo ,"; do
  # shellcheck disable=SC2086
  bench $bad
  rc=$?
  [ $rc = 2 ] || fail "'$bad' exited $rc, want 2"
  [ ! -s "$dir/out" ] || fail "'$bad' printed on stdout"
done
"$cli" bench -t 2 --algo nccl >/dev/null 2>"$dir/err" && fail "--algo on the host backend ran"
grep -q "algo chooses the NCCL backend's all_reduce, but the backend is host" "$dir/err" ||
  fail "--algo on the host backend: no reason"
echo "bench_algo: ok (two sweeps and their comparison; mgcomm refused by name; bad values refused)"
