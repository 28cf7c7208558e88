#!/usr/bin/env bash
# compare.sh -- mgcomm bench against a peer on the same ranks, in the same call, and a table of
# ratios per size (the project measures against the peer in the same run, on the same machine).
#
#   bench/compare.sh [-t N | -g N] [-R repeats] [--keep DIR] [bench options]
#
#   -t N   host backend, N ranks: the peer is Open MPI (bench/mpi_peer.c, built here with mpicc,
#          run with mpirun -np N). Debian's openmpi-bin and libopenmpi-dev are installed when
#          absent (as root). mgcomm's ranks are threads of one process, MPI's are processes.
#   -g N   NCCL backend, N GPUs of one process: the peer is nccl-tests, from $NCCL_TESTS_DIR
#          (its build/<coll>_perf binaries, run with -g N).
#   -R     runs of each program, alternated (bench/lib.sh's mg_alternate: peer, mgcomm; then
#          mgcomm, peer; ...); the table shows medians (default 3)
#   --keep DIR   keep every run's JSON there (for bench/results/)
#   bench options: -c -b -e -f -i -d -o -r -n -w --inplace, given to both programs. Iteration
#          counts are fixed (default -n 20 -w 5) so that both do the same work.
# Ratios: time mgcomm/peer (below 1: mgcomm is faster) and busbw mgcomm/peer (above 1: faster).
# $MGCOMM names the mgcomm binary (default: build/mgcomm of this checkout); $MPIRUN_OPTS adds
# options to mpirun.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
mgcomm=${MGCOMM:-$root/build/mgcomm}
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
  sed -n "2,/^# [$]MGCOMM/p" "$0" | sed "s/^# \{0,1\}//" >&2
  exit 2
}

ranks=2 mode=host repeats=3 keep=""
colls=all_reduce,all_gather,reduce_scatter minb=8 maxb=64M step=(-f 4) dtype=float32 op=sum
rootr=0 iters=20 warmup=5 inplace=both
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
  -t) ranks=$2 mode=host ;;
  -g) ranks=$2 mode=nccl ;;
  -R) repeats=$2 ;;
  --keep) keep=$2 ;;
  -c) colls=$2 ;;
  -b) minb=$2 ;;
  -e) maxb=$2 ;;
  -f | -i) step=("$1" "$2") ;;
  -d) dtype=$2 ;;
  -o) op=$2 ;;
  -r) rootr=$2 ;;
  -n) iters=$2 ;;
  -w) warmup=$2 ;;
  --inplace) inplace=$2 ;;
  *) usage ;;
  esac
  shift 2
done
case "$ranks$repeats" in *[!0-9]*) usage ;; esac
[ "$colls" != all ] || colls=all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,reduce,gather,scatter,sendrecv
command -v python3 >/dev/null || { echo "compare.sh: needs python3" >&2; exit 1; }
[ -x "$mgcomm" ] || { echo "compare.sh: no mgcomm at $mgcomm (build it, or set MGCOMM)" >&2; exit 1; }

dir=${keep:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "$keep" ] || trap 'rm -rf "$dir"' EXIT
common=(-b "$minb" -e "$maxb" "${step[@]}" -d "$dtype" -o "$op" -r "$rootr" -n "$iters" -w "$warmup")

if [ "$mode" = host ]; then
  mg_need_openmpi compare.sh
  mg_build_mpi_peer "$dir"
  run_peer() { # OUT.json
    mg_mpirun "$ranks" "$dir/mpi_peer" -c "$colls" "${common[@]}" --inplace "$inplace" \
      --json "$1" >/dev/null
  }
  mg_ranks=(--backend host -t "$ranks")
else
  : "${NCCL_TESTS_DIR:?-g compares with nccl-tests: set NCCL_TESTS_DIR to its checkout (with build/)}"
  declare -A nt_dtype=([float32]=float [float16]=half [float64]=double [bfloat16]=bfloat16
    [float8_e4m3]=f8e4m3 [float8_e5m2]=f8e5m2 [int8]=int8 [uint8]=uint8 [int32]=int32
    [uint32]=uint32 [int64]=int64 [uint64]=uint64)
  run_peer() { # OUT.json: nccl-tests' table, one binary per collective, as our JSON rows
    local c bin
    : >"$dir/nt.txt"
    for c in ${colls//,/ }; do
      bin=$NCCL_TESTS_DIR/build/${c/all_to_all/alltoall}_perf
      [ -x "$bin" ] || { echo "compare.sh: no $bin" >&2; exit 1; }
      "$bin" -g "$ranks" -b "$minb" -e "$maxb" "${step[@]}" -d "${nt_dtype[$dtype]}" -o "$op" \
        -r "$rootr" -n "$iters" -w "$warmup" -c 1 | sed "s/^/$c /" >>"$dir/nt.txt"
    done
    python3 - "$dir/nt.txt" "$1" "$ranks" "$dtype" "$inplace" <<'EOF'
import json, sys
src, out, n, dtype, inplace = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = []
for line in open(src):
    f = line.split()
    # collective, then nccl-tests' 13 columns: size count type redop root, 4 out of place, 4 in place
    if len(f) < 14 or not f[1].isdigit():
        continue
    for ip, k in ((False, 6), (True, 10)):
        if (inplace == "0" and ip) or (inplace == "1" and not ip):
            continue
        rows.append({"collective": f[0], "bytes": int(f[1]), "count": int(f[2]), "dtype": dtype,
                     "op": f[4], "root": int(f[5]), "inplace": ip, "time_us": float(f[k]),
                     "algbw_gbs": float(f[k + 1]), "busbw_gbs": float(f[k + 2]),
                     "wrong": int(float(f[k + 3])) if f[k + 3] != "N/A" else 0})
json.dump({"backend": "nccl-tests", "nranks": n, "ranks_are": "gpus",
           "machine": {"host": "", "gpus": []}, "results": rows}, open(out, "w"))
EOF
  }
  mg_ranks=(--backend nccl -g "$ranks")
fi

run_mgcomm() { # OUT.json
  "$mgcomm" bench "${mg_ranks[@]}" -c "$colls" "${common[@]}" --inplace "$inplace" \
    --json "$1" >"${1%.json}.txt" || {
    echo "compare.sh: mgcomm bench failed (exit $?); its output: ${1%.json}.txt" >&2
    tail -3 "${1%.json}.txt" >&2
    return 1
  }
}

mg_alternate "$repeats" "$dir" peer mgcomm

PYTHONPATH=$here python3 - "$dir" "$repeats" <<'EOF'
import statistics, sys
from medians import load
d, R = sys.argv[1], int(sys.argv[2])
mg_doc, mg = load(d, "mgcomm", R)
peer_doc, peer = load(d, "peer", R)
name = peer_doc.get("peer", peer_doc["backend"])
print(f"# mgcomm bench ({mg_doc['backend']}, {mg_doc['nranks']} {mg_doc['ranks_are']}) vs {name} "
      f"({peer_doc['nranks']} {peer_doc['ranks_are']}); medians of {R} alternated runs each")
print(f"# {'collective':<15} {'inplace':>7} {'size(B)':>12} {'mgcomm(us)':>11} {'peer(us)':>11} "
      f"{'time ratio':>10} {'mgcomm GB/s':>11} {'peer GB/s':>11} {'busbw ratio':>11}")
ratios = []
for key in sorted(mg, key=lambda k: (k[0], k[1], k[2])):
    if key not in peer or key[2] == 0:
        continue
    t_m, t_p = mg[key]["time_us"], peer[key]["time_us"]
    b_m, b_p = mg[key]["busbw_gbs"], peer[key]["busbw_gbs"]
    ratios.append(t_m / t_p)
    print(f"  {key[0]:<15} {int(key[1]):>7} {key[2]:>12} {t_m:>11.2f} {t_p:>11.2f} {t_m / t_p:>10.2f} "
          f"{b_m:>11.3f} {b_p:>11.3f} {(b_m / b_p if b_p else float('nan')):>11.2f}")
if ratios:
    print(f"# median time ratio mgcomm/peer over {len(ratios)} rows: {statistics.median(ratios):.2f}")
EOF
