#!/usr/bin/env bash
# bench_cli.sh CASE -- `mgcomm bench` end to end, one CTest entry per CASE (tests/unit/bench.cmake).
# $MGCOMM is the mgcomm binary. Exit 0 pass, 1 fail (with the reason), 77 skipped.
#   args     bad input: exit 2 and one line on stderr, for every kind of mistake
#   table    nccl-tests' columns, nothing on stderr, JSON and CSV that conform (bench_json.py)
#   factors  busbw / algbw is the collective's factor, for 2, 3 and 4 ranks
#   checks   every collective, dtype and op on real collectives: no wrong element
#   fault    a corrupted result (MGCOMM_FAULT=host.corrupt) is counted, and the exit code is 1
#   procs    ranks as processes under mgcomm launch: one table from rank 0, checked results,
#            JSON with ranks_are processes; -t still means threads there; -r against the job
#   procs_fault  a corrupted result in a process rank is counted over the job, exit 1; a failed
#            operation ends every rank with exit 1
#   mpirun   ranks as processes under Open MPI's mpirun (skipped without it)
#   world    --world: the same table shape as threads, right results, JSON with api world
#   world_fault  a failed world operation, a corrupted result and a world that cannot be
#            created: exit 1, the failure named
#   auto     --backend auto says what it chose and why (host here, NCCL on a GPU machine)
#   default  no arguments: the quick default, on the best backend, says why, within 30 s
#            ($BENCH_DEFAULT_LIMIT_S: longer for sanitizer and unoptimised builds)
#   plot     bench/plot.sh draws two runs (skipped without gnuplot)
#   scripts  bench/compare.sh and bench/host_vs_mpi.sh end to end, -I 1 too unless
#            $BENCH_SANITIZED (skipped without Open MPI)
. "$(cd "$(dirname "$0")" && pwd)/bench_lib.sh"

case "${1:-}" in
args)
  expect_bad "unknown collective 'allreduce'" -c allreduce
  expect_bad "unknown collective 'bogus'" -c all_reduce,bogus
  expect_bad "unknown data type 'float12'" -d float12
  expect_bad "unknown reduction op 'xor'" -o xor
  expect_bad "-b 1048576 is larger than -e 1024" -b 1M -e 1K
  expect_bad "the factor must be at least 2" -f 1
  expect_bad "the factor must be at least 2" -f -3
  expect_bad "-f '2.5': the factor must be an integer, from 2 to 2147483647" -f 2.5
  expect_bad "-f '1e3': the factor must be an integer" -f 1e3
  expect_bad "'abc': not a valid value" -b abc
  expect_bad "'12Q': not a valid value" -e 12Q
  expect_bad "--timing 'mean': loop or median" --timing mean
  expect_bad "-f and -i exclude each other" -f 2 -i 8
  expect_bad "more than 10000 sizes" -b 1 -e 1G -i 1
  expect_bad "sizes never grow" -b 0 -e 8
  expect_bad "'0': not a valid value" -t 0
  expect_bad "'-1': not a valid value" -n -1
  expect_bad "-r 2 is not a rank of 2" -t 2 -r 2
  expect_bad "--inplace 'x'" --inplace x
  expect_bad "unknown option '--nope'" --nope 1
  expect_bad "needs a value" -c
  expect_bad "-t and -g exclude each other" -t 2 -g 2
  expect_bad "GPUs need the nccl backend" --backend host -g 2
  expect_bad "--backend 'cuda'" --backend cuda
  expect_bad "-r 3 is not a rank of 3" --world -t 3 -r 3
  expect_bad "-r 2 is not a rank of 2" --world -r 2
  expect_bad "-t: ranks as threads run on the host backend, not nccl" -t 2 --backend nccl
  if nccl_here; then
    # More GPUs than present (tests/gpu/bench_gpu.sh runs the GPUs themselves).
    expect_bad "-g 1024: this machine has [0-9]* GPU" -g 1024
    expect_bad "-g 1024: this machine has [0-9]* GPU" --world -g 1024
  else
    # The NCCL backend is not available: mg_backend_resolve's reason, one line, exit 2, also
    # when -g or MGCOMM_BACKEND asks for it (never a silent fallback to the host).
    expect_bad "nccl backend (requested by the caller) cannot run here" --backend nccl
    expect_bad "^mgcomm bench: -g 2: the nccl backend (requested by the caller) cannot run here" -g 2
    expect_bad "^mgcomm bench: -g 1: the nccl backend" --world -g 1
    expect_bad "nccl backend (requested by the caller) cannot run here" --world --backend nccl
    MGCOMM_BACKEND=nccl expect_bad "nccl backend (MGCOMM_BACKEND) cannot run here"
    MGCOMM_BACKEND=nccl expect_bad "nccl backend (MGCOMM_BACKEND) cannot run here" --world
  fi
  # The line is one write(2): the ranks of a job share stderr, and pieces interleave there.
  if command -v python3 >/dev/null; then
    python3 "$root/tests/fault/one_write.py" 2 1 "mgcomm bench: -f '2.5': the factor must be" \
      -- "$MGCOMM" bench -f 2.5 >"$tmp/out" || fail "bad input in pieces: $(cat "$tmp/out")"
  fi
  "$MGCOMM" bench --help >"$tmp/out" 2>&1 || fail "--help: exit $?"
  grep -q "usage: mgcomm bench" "$tmp/out" || fail "--help prints no usage"
  "$MGCOMM" --help | grep -q "bench" || fail "mgcomm --help does not list bench"
  echo "bench args: ok"
  ;;

table)
  need_python
  "$MGCOMM" bench -t 2 -c all_reduce,all_gather,broadcast -b 1K -e 16K -f 4 -n 3 -w 1 \
    --json "$tmp/r.json" --csv "$tmp/r.csv" >"$tmp/out" 2>"$tmp/err" || fail "exit $?: $(cat "$tmp/err")"
  [ ! -s "$tmp/err" ] || fail "stderr is not a terminal, yet something was printed: $(cat "$tmp/err")"
  grep -q "^# mgcomm bench .*: backend host (" "$tmp/out" || fail "no backend line: $(head -3 "$tmp/out")"
  # nccl-tests' header, column for column.
  hdr=$(grep -m1 '^#  *size' "$tmp/out" | tr -s ' ')
  [ "$hdr" = "# size count type redop root time algbw busbw #wrong time algbw busbw #wrong" ] ||
    fail "header: '$hdr'"
  units=$(grep -m1 '^#  *(B)' "$tmp/out" | tr -s ' ')
  [ "$units" = "# (B) (elements) (us) (GB/s) (GB/s) (us) (GB/s) (GB/s) " ] || fail "units: '$units'"
  # 3 collectives x 3 sizes; every line has 13 columns: numbers, then type, redop, root.
  rows=$(grep -c '^ *[0-9]' "$tmp/out")
  [ "$rows" = 9 ] || fail "$rows lines, want 9: $(cat "$tmp/out")"
  awk '/^ *[0-9]/ {
         if (NF != 13) { print "columns " NF ": " $0; bad = 1 }
         if ($3 != "float32") { print "type: " $0; bad = 1 }
         for (i = 6; i <= 13; i++) if ($i !~ /^[0-9.e+-]+$/) { print "field " i ": " $0; bad = 1 }
         if ($9 != 0 || $13 != 0) { print "#wrong: " $0; bad = 1 }
       } END { exit bad }' "$tmp/out" || fail "bad lines"
  grep -q '^ *1024 *256 *float32 *sum *-1 ' "$tmp/out" || fail "no all_reduce 1 KiB line"
  grep -q '^ *1024 *128 *float32 *none *-1 ' "$tmp/out" || fail "no all_gather 1 KiB line"
  grep -q '^ *1024 *256 *float32 *none *0 ' "$tmp/out" || fail "no broadcast 1 KiB line"
  grep -q '^# Out of bounds values : 0 OK' "$tmp/out" || fail "no footer"
  grep -q '^# Avg bus bandwidth *: [0-9]' "$tmp/out" || fail "no average"
  grep -q '^# Summary: 18 results, avg busbw [0-9.e+-]* GB/s, #wrong total 0 OK' "$tmp/out" ||
    fail "no summary: $(tail -2 "$tmp/out")"
  python3 "$here/bench_json.py" "$tmp/r.json" "$tmp/r.csv" || fail "the JSON or CSV does not conform"
  python3 - "$tmp/r.json" <<'EOF' || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "host" and d["nranks"] == 2 and d["ranks_are"] == "threads", d
assert d["api"] == "comm", d["api"]
assert d["machine"]["gpus"] == [], d["machine"]
rows = d["results"]
assert len(rows) == 18, len(rows)
first = rows[0]
assert (first["collective"], first["bytes"], first["count"], first["dtype"], first["op"],
        first["root"], first["inplace"]) == ("all_reduce", 1024, 256, "float32", "sum", -1, False), first
assert rows[1]["inplace"] is True
assert {r["iters"] for r in rows} == {3} and {r["warmup"] for r in rows} == {1}
EOF
  # The schema checker itself must catch a wrong factor and a missing field.
  python3 - "$tmp/r.json" "$tmp/bad.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["results"][0]["busbw_gbs"] *= 3
del d["results"][1]["wrong"]
json.dump(d, open(sys.argv[2], "w"))
EOF
  python3 "$here/bench_json.py" "$tmp/bad.json" >"$tmp/bad.out" && fail "a wrong JSON passed the schema check"
  grep -q "busbw_gbs" "$tmp/bad.out" || fail "schema check missed the factor: $(cat "$tmp/bad.out")"
  grep -q "no field 'wrong'" "$tmp/bad.out" || fail "schema check missed the field: $(cat "$tmp/bad.out")"
  # Linear steps from 0: 0, 16 and 32 bytes.
  "$MGCOMM" bench -t 2 -c all_reduce -b 0 -e 32 -i 16 -n 1 -w 0 >"$tmp/out" 2>&1 || fail "-i: exit $?"
  [ "$(awk '/^ *[0-9]/ { printf "%s ", $1 }' "$tmp/out")" = "0 16 32 " ] || fail "-i: $(cat "$tmp/out")"
  # In place only: collectives without an in-place form say so and are skipped.
  "$MGCOMM" bench -t 2 -c all_to_all,sendrecv,all_reduce --inplace 1 -b 1K -e 1K -n 1 -w 0 \
    >"$tmp/out" 2>&1 || fail "--inplace 1: exit $?: $(cat "$tmp/out")"
  [ "$(grep -c 'has no in-place form' "$tmp/out")" = 2 ] || fail "--inplace 1: $(cat "$tmp/out")"
  grep -q '^# Summary: 1 results' "$tmp/out" || fail "--inplace 1: $(tail -1 "$tmp/out")"
  echo "bench table: ok"
  ;;

factors)
  need_python
  for n in 2 3 4; do
    "$MGCOMM" bench -t $n -c all -b 4K -e 4K -n 2 -w 0 --json "$tmp/f$n.json" >"$tmp/out" 2>&1 ||
      fail "-t $n: exit $?: $(tail -5 "$tmp/out")"
    python3 "$here/bench_json.py" "$tmp/f$n.json" || fail "-t $n: factors"
    python3 - "$tmp/f$n.json" $n <<'EOF' || fail "-t $n: factor values"
import json, sys
d, n = json.load(open(sys.argv[1])), int(sys.argv[2])
want = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
        "all_to_all": (n - 1) / n, "gather": (n - 1) / n, "scatter": (n - 1) / n,
        "broadcast": 1, "reduce": 1, "sendrecv": 1}
seen = set()
for r in d["results"]:
    f = r["busbw_gbs"] / r["algbw_gbs"]
    assert abs(f - want[r["collective"]]) < 1e-4, (r, f)
    seen.add(r["collective"])
assert seen == set(want), seen
EOF
  done
  echo "bench factors: ok"
  ;;

checks)
  # Real collectives of every dtype and op, on 3 ranks (not a power of two: avg's 1/3 rounds),
  # in and out of place; then 8 ranks with the narrowest types.
  for d in int8 uint8 int32 uint32 int64 uint64 float16 float32 float64 bfloat16 float8_e4m3 float8_e5m2; do
    for o in sum prod max min avg; do
      "$MGCOMM" bench -t 3 -c all_reduce,reduce_scatter,reduce -r 2 -d $d -o $o -b 96 -e 6K -f 8 \
        -n 1 -w 0 >"$tmp/out" 2>&1 || fail "-d $d -o $o: exit $?: $(grep -v '^#' "$tmp/out" | head -5)"
    done
    "$MGCOMM" bench -t 3 -c all_gather,all_to_all,broadcast,gather,scatter,sendrecv -r 1 -d $d \
      -b 96 -e 6K -f 8 -n 1 -w 0 >"$tmp/out" 2>&1 || fail "-d $d: exit $?: $(grep -v '^#' "$tmp/out" | head -5)"
  done
  for d in float8_e5m2 float8_e4m3 bfloat16 int8; do
    for o in sum prod avg; do
      "$MGCOMM" bench -t 8 -c all_reduce,reduce_scatter -d $d -o $o -b 1K -e 1K -n 1 -w 0 \
        >"$tmp/out" 2>&1 || fail "-t 8 -d $d -o $o: exit $?: $(grep -v '^#' "$tmp/out" | head -5)"
    done
  done
  echo "bench checks: ok"
  ;;

fault)
  # The host transport's fault point flips a byte of the third operation's output in this
  # process: the two ranks' barrier before the checked run come first (they write theirs before
  # either can finish the checked run, which needs both), then the checked run of all_reduce.
  # The checker must count it and the exit code must be 1.
  MGCOMM_FAULT=host.corrupt:3:1 "$MGCOMM" bench -t 2 -c all_reduce -b 1K -e 1K >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 1 ] || fail "exit $rc, want 1; stdout: $(cat "$tmp/out"); stderr: $(cat "$tmp/err")"
  awk '/^ *1024 / { if ($9 > 0 || $13 > 0) found = 1 } END { exit !found }' "$tmp/out" ||
    fail "#wrong is 0: $(grep '^ *1024' "$tmp/out")"
  grep -q '^# Out of bounds values : [1-9][0-9]* FAILED' "$tmp/out" || fail "footer: $(tail -4 "$tmp/out")"
  echo "bench fault: ok"
  ;;

auto)
  # --backend auto (the default) says what it chose and why: NCCL on every GPU where it can run
  # (rank i on GPU i), else 2 threads of the host backend; -t keeps the host whatever the machine.
  need_python
  "$MGCOMM" bench -c all_reduce -b 1K -e 1K -n 1 -w 0 --json "$tmp/a.json" >"$tmp/out" 2>"$tmp/err" ||
    fail "exit $?: $(cat "$tmp/err")"
  if nccl_here; then
    grep -q "^# mgcomm bench .*: backend nccl (auto: " "$tmp/out" || fail "auto: $(head -3 "$tmp/out")"
    grep -q "^# nranks [1-9][0-9]* (GPUs 0 \.\. " "$tmp/out" || fail "auto: $(head -3 "$tmp/out")"
    want=gpus
  else
    grep -q "^# mgcomm bench .*: backend host (auto: no usable NCCL backend (.*); using host)" \
      "$tmp/out" || fail "auto does not say why it took the host: $(head -3 "$tmp/out")"
    grep -q "^# nranks 2 (threads of this process)" "$tmp/out" || fail "auto: $(head -3 "$tmp/out")"
    want=threads
  fi
  python3 "$here/bench_json.py" "$tmp/a.json" || fail "auto: the JSON does not conform"
  python3 - "$tmp/a.json" "$want" <<'EOF' || fail "auto: JSON content"
import json, sys
d, want = json.load(open(sys.argv[1])), sys.argv[2]
assert d["ranks_are"] == want, d["ranks_are"]
assert d["backend"] == ("nccl" if want == "gpus" else "host"), d["backend"]
assert len(d["machine"]["gpus"]) == (d["nranks"] if want == "gpus" else 0), d["machine"]
EOF
  "$MGCOMM" bench -t 2 -c all_reduce -b 1K -e 1K -n 1 -w 0 >"$tmp/out" 2>&1 || fail "-t 2: exit $?"
  grep -q "^# mgcomm bench .*: backend host (" "$tmp/out" || fail "-t 2: $(head -3 "$tmp/out")"
  echo "bench auto: ok"
  ;;

default)
  start=$(date +%s%N)
  "$MGCOMM" bench >"$tmp/out" 2>"$tmp/err" || fail "exit $?: $(cat "$tmp/err")"
  ms=$((($(date +%s%N) - start) / 1000000))
  limit=${BENCH_DEFAULT_LIMIT_S:-30}
  echo "default run: $ms ms (limit $limit s)"
  [ "$ms" -lt $((limit * 1000)) ] || fail "the default run took $ms ms, more than $limit s"
  grep -q "^# mgcomm bench .*: backend [a-z]* (auto: " "$tmp/out" ||
    fail "does not say which backend and why: $(head -3 "$tmp/out")"
  for c in all_reduce all_gather reduce_scatter; do
    grep -q "^# Collective: $c" "$tmp/out" || fail "no $c"
  done
  grep -q '^ *33554432 ' "$tmp/out" || fail "does not reach 32 MiB"
  grep -q '^ *8 *2 *float32 *sum' "$tmp/out" || fail "does not start at 8 B"
  grep -q "#wrong total 0 OK" "$tmp/out" || fail "summary: $(tail -1 "$tmp/out")"
  echo "bench default: ok"
  ;;

procs)
  need_python
  "$MGCOMM" launch -n 2 -- "$MGCOMM" bench -c all_reduce,all_gather,broadcast,sendrecv -b 1K \
    -e 16K -f 4 -n 3 -w 1 --json "$tmp/p.json" --csv "$tmp/p.csv" >"$tmp/out" 2>"$tmp/err" ||
    fail "launch -n 2: exit $?: $(cat "$tmp/err")"
  [ ! -s "$tmp/err" ] || fail "launch -n 2: something on stderr: $(cat "$tmp/err")"
  [ "$(grep -c '^# mgcomm bench ' "$tmp/out")" = 1 ] || fail "not one preamble: $(cat "$tmp/out")"
  grep -q '^# nranks 2 (processes, one rank each, from mg_comm_init_env: MGCOMM_RANK is set)' \
    "$tmp/out" || fail "ranks: $(grep '^# nranks' "$tmp/out")"
  grep -q '^# time: .*(one machine); each iteration starts after an all_reduce' "$tmp/out" ||
    fail "time rule: $(grep '^# time' "$tmp/out")"
  rows=$(grep -c '^ *[0-9]' "$tmp/out")
  [ "$rows" = 12 ] || fail "$rows lines, want 12: $(cat "$tmp/out")"
  check_lines "$tmp/out" || fail "bad lines"
  grep -q '^# Summary: 21 results, avg busbw [0-9.e+-]* GB/s, #wrong total 0 OK' "$tmp/out" ||
    fail "summary: $(tail -1 "$tmp/out")"
  python3 "$here/bench_json.py" "$tmp/p.json" "$tmp/p.csv" || fail "the JSON or CSV does not conform"
  python3 - "$tmp/p.json" <<'EOF' || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["ranks_are"], d["api"], d["nranks"]) == ("processes", "comm", 2), d
assert len(d["results"]) == 21 and {r["iters"] for r in d["results"]} == {3}, d["results"]
EOF
  # Three processes, a root that is not rank 0, another dtype and op.
  "$MGCOMM" launch -n 3 -- "$MGCOMM" bench -c reduce,gather,scatter,reduce_scatter,all_to_all \
    -r 2 -d int32 -o max -b 96 -e 6K -f 8 -n 1 -w 0 >"$tmp/out" 2>"$tmp/err" ||
    fail "launch -n 3: exit $?: $(cat "$tmp/err")"
  grep -q '^# nranks 3 (processes' "$tmp/out" || fail "launch -n 3: $(grep '^# nranks' "$tmp/out")"
  check_lines "$tmp/out" || fail "launch -n 3: bad lines"
  grep -q '#wrong total 0 OK' "$tmp/out" || fail "launch -n 3: $(tail -1 "$tmp/out")"
  # Under a launcher -t still means threads: no communicator is made from the environment.
  MGCOMM_RANK=0 MGCOMM_WORLD_SIZE=2 "$MGCOMM" bench -t 2 -c all_reduce -b 1K -e 1K -n 1 -w 0 \
    >"$tmp/out" 2>&1 || fail "-t under MGCOMM_RANK: exit $?: $(cat "$tmp/out")"
  grep -q '^# nranks 2 (threads of this process)' "$tmp/out" ||
    fail "-t under MGCOMM_RANK: $(head -3 "$tmp/out")"
  # The root is checked against the job's size, once the communicator tells it.
  "$MGCOMM" launch -n 2 -- "$MGCOMM" bench -r 2 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 2 ] || fail "-r 2 of 2 processes: exit $rc, want 2: $(cat "$tmp/err")"
  grep -q -- "-r 2 is not a rank of 2" "$tmp/err" || fail "-r 2 of 2 processes: $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "-r 2 of 2 processes: printed on stdout: $(head -3 "$tmp/out")"
  # Each message reaches the shared stderr in one write (one datagram here), never in pieces
  # that interleave with the other rank's ("mgcomm bench: mgcomm bench: -r 2 ...-r 2 ...").
  python3 "$root/tests/fault/one_write.py" 2 1+ "mgcomm bench: -r 2 is not a rank of 2$" \
    -- "$MGCOMM" launch -n 2 -- "$MGCOMM" bench -r 2 >"$tmp/out" ||
    fail "-r 2 of 2 processes, in pieces: $(cat "$tmp/out")"
  # A world size or a store address that mg_comm_init_env cannot serve: the variable and the
  # limit are named, before anything is served or mapped.
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
  for size in 999999999 2147483647 8193; do
    MGCOMM_RANK=0 MGCOMM_WORLD_SIZE=$size MGCOMM_STORE=127.0.0.1:$port MGCOMM_JOB_TOKEN=t \
      MGCOMM_TIMEOUT=10 "$MGCOMM" bench -c all_reduce -b 8 -e 8 -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" = 1 ] || fail "MGCOMM_WORLD_SIZE=$size: exit $rc, want 1: $(cat "$tmp/err")"
    grep -q "MGCOMM_WORLD_SIZE=$size is more ranks than mg_comm_init_env supports: at most 8192" \
      "$tmp/err" || fail "MGCOMM_WORLD_SIZE=$size: $(cat "$tmp/err")"
  done
  # Longer than the parameter table holds (511 bytes): still MGCOMM_STORE, and its limit.
  long=$(printf '%0600d' 0):$port
  MGCOMM_RANK=0 MGCOMM_WORLD_SIZE=1 MGCOMM_STORE=$long MGCOMM_JOB_TOKEN=t MGCOMM_TIMEOUT=10 \
    "$MGCOMM" bench -c all_reduce -b 8 -e 8 -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 1 ] || fail "a 606-byte MGCOMM_STORE: exit $rc, want 1: $(cat "$tmp/err")"
  grep -q "MGCOMM_STORE (.*) is 606 bytes long; a host:port is at most 263" "$tmp/err" ||
    fail "a 606-byte MGCOMM_STORE: $(cat "$tmp/err")"
  echo "bench procs: ok"
  ;;

procs_fault)
  # Each process counts its host operations itself: 1 compares the ranks' clocks, 2 is the
  # sweep's first agreement, 3 the barrier before the checked run, 4 the checked run of
  # all_reduce. Corrupting it on both ranks gives one wrong element each, summed by rank 0.
  MGCOMM_FAULT=host.corrupt:4:1 "$MGCOMM" launch -n 2 -- "$MGCOMM" bench -c all_reduce -b 1K \
    -e 1K >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 1 ] || fail "corrupt: exit $rc, want 1; stdout: $(cat "$tmp/out"); stderr: $(cat "$tmp/err")"
  awk '/^ *1024 / { found = $9 == 2 } END { exit !found }' "$tmp/out" ||
    fail "corrupt: #wrong is not 2: $(grep '^ *1024' "$tmp/out")"
  grep -q '^# Out of bounds values : 2 FAILED' "$tmp/out" || fail "corrupt: footer: $(tail -4 "$tmp/out")"
  # A failed operation (the checked run): the ranks say so, and the job ends with exit 1.
  MGCOMM_FAULT=host.fail:4:1 "$MGCOMM" launch -n 2 -- "$MGCOMM" bench -c all_reduce -b 1K -e 1K \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 1 ] || fail "fail: exit $rc, want 1; stderr: $(cat "$tmp/err")"
  grep -q '^mgcomm bench: rank [01]: all_reduce 1024 B: MG_ERR_BACKEND: .*injected failure' "$tmp/err" ||
    fail "fail: the failure is not named: $(cat "$tmp/err")"
  echo "bench procs_fault: ok"
  ;;

mpirun)
  need_python
  # shellcheck source=tests/common/need_openmpi.sh
  . "$root/tests/common/need_openmpi.sh"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # Running as root (CI containers) needs both variables; two cores may need --oversubscribe.
  MGCOMM_STORE=127.0.0.1:$port OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --oversubscribe -np 2 -x MGCOMM_STORE "$MGCOMM" bench -c all_reduce,reduce_scatter \
    -b 1K -e 16K -n 3 -w 1 --json "$tmp/m.json" >"$tmp/out" 2>"$tmp/err" ||
    fail "mpirun -np 2: exit $?: $(cat "$tmp/err")"
  [ "$(grep -c '^# mgcomm bench ' "$tmp/out")" = 1 ] || fail "not one preamble: $(cat "$tmp/out")"
  grep -q '^# nranks 2 (processes, one rank each, from mg_comm_init_env: OMPI_COMM_WORLD_RANK is set)' \
    "$tmp/out" || fail "ranks: $(grep '^# nranks' "$tmp/out")"
  check_lines "$tmp/out" || fail "bad lines"
  grep -q '^# Summary: 12 results, .*#wrong total 0 OK' "$tmp/out" || fail "summary: $(tail -1 "$tmp/out")"
  python3 "$here/bench_json.py" "$tmp/m.json" || fail "the JSON does not conform"
  python3 - "$tmp/m.json" <<'EOF' || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["ranks_are"], d["api"], d["nranks"], len(d["results"])) == ("processes", "comm", 2, 12), d
EOF
  echo "bench mpirun: ok"
  ;;

world)
  need_python
  # The same sweep directly and through the world: the same lines, columns and labels.
  args=(-t 3 -c all -b 96 -e 6K -f 8 -n 2 -w 1)
  "$MGCOMM" bench "${args[@]}" >"$tmp/direct" 2>&1 || fail "direct: exit $?: $(tail -5 "$tmp/direct")"
  "$MGCOMM" bench --world "${args[@]}" --json "$tmp/w.json" --csv "$tmp/w.csv" >"$tmp/out" \
    2>"$tmp/err" || fail "--world: exit $?: $(cat "$tmp/err")"
  [ ! -s "$tmp/err" ] || fail "--world: something on stderr: $(cat "$tmp/err")"
  grep -q '^# nranks 3 (threads of this process: the workers of one world' "$tmp/out" ||
    fail "--world: $(grep '^# nranks' "$tmp/out")"
  grep -q '^# time: median over iterations of (mg_request_wait returned - mg_world_<op> called)' \
    "$tmp/out" || fail "--world: $(grep '^# time' "$tmp/out")"
  # Comment lines other than the preamble and the averages, and the first five columns and the
  # number of columns of every line. (The world's communicators are its own: no memory line.)
  shape() {
    awk '/^#/ { if ($0 !~ /^# (mgcomm|nranks|time|Avg|Summary|memory)/) print; next }
         /^ *[0-9]/ { print NF, $1, $2, $3, $4, $5 }' "$1"
  }
  shape "$tmp/direct" >"$tmp/direct.shape"
  shape "$tmp/out" >"$tmp/world.shape"
  cmp -s "$tmp/direct.shape" "$tmp/world.shape" ||
    fail "--world: not the direct table's shape: $(diff "$tmp/direct.shape" "$tmp/world.shape")"
  [ "$(grep -c '^ *[0-9]' "$tmp/out")" = 27 ] || fail "--world: $(grep -c '^ *[0-9]' "$tmp/out") lines, want 27"
  check_lines "$tmp/out" || fail "--world: bad lines"
  python3 "$here/bench_json.py" "$tmp/w.json" "$tmp/w.csv" || fail "--world: the JSON or CSV does not conform"
  python3 - "$tmp/w.json" <<'EOF' || fail "--world: JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["ranks_are"], d["api"], d["nranks"]) == ("threads", "world", 3), d
assert len(d["results"]) == 48 and {r["iters"] for r in d["results"]} == {2}, len(d["results"])
EOF
  # Reductions whose exactness is narrow, on 3 world ranks.
  for d in float16 bfloat16 float8_e4m3 int8; do
    for o in sum prod avg; do
      "$MGCOMM" bench --world -t 3 -c all_reduce,reduce_scatter,reduce -r 1 -d $d -o $o -b 96 \
        -e 768 -f 8 -n 1 -w 0 >"$tmp/out" 2>&1 ||
        fail "--world -d $d -o $o: exit $?: $(grep -v '^#' "$tmp/out" | head -5)"
    done
  done
  echo "bench world: ok"
  ;;

world_fault)
  # A world operation that fails (the first host operation of any rank): named, exit 1.
  MGCOMM_FAULT=host.fail:1:1 "$MGCOMM" bench --world -t 2 -c all_reduce -b 1K -e 1K \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 1 ] || fail "fail: exit $rc, want 1; stderr: $(cat "$tmp/err")"
  grep -q '^mgcomm bench: world: all_reduce 1024 B: MG_ERR_BACKEND: rank [01]: .*injected failure' \
    "$tmp/err" || fail "fail: the failure is not named: $(cat "$tmp/err")"
  grep -q '^# Summary: 0 results' "$tmp/out" || fail "fail: $(tail -1 "$tmp/out")"
  # A corrupted result of one world rank is counted.
  MGCOMM_FAULT=host.corrupt:1:1 "$MGCOMM" bench --world -t 2 -c all_reduce -b 1K -e 1K \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 1 ] || fail "corrupt: exit $rc, want 1; stdout: $(cat "$tmp/out"); stderr: $(cat "$tmp/err")"
  awk '/^ *1024 / { found = $9 == 1 } END { exit !found }' "$tmp/out" ||
    fail "corrupt: #wrong is not 1: $(grep '^ *1024' "$tmp/out")"
  # A world whose communicators cannot be made: one rank's attach fails, and mg_world_create
  # returns when the others have given up waiting for it (MGCOMM_TIMEOUT).
  MGCOMM_TIMEOUT=2 MGCOMM_FAULT=host.attach:1:1 "$MGCOMM" bench --world -t 2 -c all_reduce -b 1K -e 1K \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 1 ] || fail "attach: exit $rc, want 1; stderr: $(cat "$tmp/err")"
  grep -q '^mgcomm bench: cannot create a world of 2 ranks on the host backend: .*injected failure' \
    "$tmp/err" || fail "attach: $(cat "$tmp/err")"
  echo "bench world_fault: ok"
  ;;

scripts)
  # bench/compare.sh and bench/host_vs_mpi.sh, as small as they go (they need Open MPI, which
  # they would install as root; the test does not).
  need_python
  if ! command -v mpicc >/dev/null 2>&1 || ! mpirun --version 2>&1 | grep -q "Open MPI"; then
    echo "SKIP: Open MPI's mpicc and mpirun are needed (Debian: apt-get install openmpi-bin libopenmpi-dev)"
    exit 77
  fi
  "$root/bench/compare.sh" -t 2 -R 2 -c all_reduce,broadcast -b 1K -e 4K -n 2 -w 0 --inplace 0 \
    --keep "$tmp/c" >"$tmp/out" 2>&1 || fail "compare.sh: exit $?: $(cat "$tmp/out")"
  [ "$(grep -c '^  \(all_reduce\|broadcast\) ' "$tmp/out")" = 4 ] || fail "compare.sh: $(cat "$tmp/out")"
  [ "$(ls "$tmp/c"/*.json | wc -l)" = 4 ] || fail "compare.sh kept $(ls "$tmp/c")"
  "$root/bench/host_vs_mpi.sh" -R 2 -c all_reduce,all_gather -b 8 -e 4K -f 8 -n 2 -w 0 \
    -o "$tmp/r.md" --keep "$tmp/h" >"$tmp/out" 2>&1 || fail "host_vs_mpi.sh: exit $?: $(cat "$tmp/out")"
  # 8, 64, 512, 4096 B of all_reduce; all_gather has no 8 B row (each rank's part would be 0).
  [ "$(grep -c '^| all_reduce | no | ' "$tmp/r.md")" = 4 ] || fail "host_vs_mpi.sh: $(cat "$tmp/r.md")"
  [ "$(grep -c '^| all_gather | no | ' "$tmp/r.md")" = 3 ] || fail "host_vs_mpi.sh: $(cat "$tmp/r.md")"
  [ "$(ls "$tmp/h"/*.json | wc -l)" = 6 ] || fail "host_vs_mpi.sh kept $(ls "$tmp/h")"
  for what in "^\*\*Machine\*\*: " "^\*\*Load average\*\* .*before .*, after " \
    "^- busbw >= 1.0x Open MPI at every size >= 1 MiB, mgcomm processes: not evaluated" \
    "^- latency <= 1.5x Open MPI .*mgcomm threads: \*\*\(met\|missed\)\*\*" \
    "^- thread ranks at least as fast as process ranks .*: \*\*\(met\|missed\)\*\* .*7"; do
    grep -q "$what" "$tmp/r.md" || fail "host_vs_mpi.sh: no line '$what': $(cat "$tmp/r.md")"
  done
  # -I 1: both libraries in turn in one MPI program (bench/mpi_paired.c), both timing rules, and
  # mgcomm's ranks as threads (-t 1); not in a sanitized build ($BENCH_SANITIZED), whose
  # libmgcomm.so needs the sanitizers' runtime loaded first.
  for opts in "-B 0" "-B 1" "-B 0 -t 1" "-B 1 -t 1"; do
    [ "${BENCH_SANITIZED:-0}" = 0 ] || break
    # shellcheck disable=SC2086 # opts: two options
    "$root/bench/host_vs_mpi.sh" -I 1 $opts -R 2 -c all_reduce,all_gather -b 8 -e 4K -f 8 \
      -n 3 -w 1 --inplace both -o "$tmp/p.md" >"$tmp/out" 2>&1 ||
      fail "host_vs_mpi.sh -I 1 $opts: exit $?: $(cat "$tmp/out")"
    case "$opts" in
    *"-t 1") grep -q "^# .*mgcomm's as threads" "$tmp/p.md" || fail "-t 1: $(cat "$tmp/p.md")" ;;
    *) grep -q "^# .*mgcomm's as processes" "$tmp/p.md" || fail "$opts: $(cat "$tmp/p.md")" ;;
    esac
    [ "$(grep -c '^| all_reduce | \(no\|yes\) | [0-9]* | [0-9.]* | [0-9.]* | [0-9.]* | ' "$tmp/p.md")" = 8 ] ||
      fail "host_vs_mpi.sh -I 1: $(cat "$tmp/p.md")"
    [ "$(grep -c '^| all_gather | ' "$tmp/p.md")" = 8 ] || fail "host_vs_mpi.sh -I 1: $(cat "$tmp/p.md")"
    # Each turn's ratio with the probe's speed of stores into the other CPU's lines (-P 1).
    [ "$(grep -c '^| all_reduce | .* | [0-9.]* ([0-9.]*), [0-9.]* ([0-9.]*) |$' "$tmp/p.md")" = 8 ] ||
      fail "host_vs_mpi.sh -I 1: no probe column: $(cat "$tmp/p.md")"
    grep -q "^- mgcomm time <= 1.0x Open MPI at every size: \*\*\(met\|missed\)\*\* .*16 rows" "$tmp/p.md" ||
      fail "host_vs_mpi.sh -I 1: no target line: $(cat "$tmp/p.md")"
  done
  # Every collective of mpi_paired.c, both placements where it has one: 17 rows.
  if [ "${BENCH_SANITIZED:-0}" = 0 ]; then
    "$root/bench/host_vs_mpi.sh" -I 1 -t 1 -R 1 -c all -b 64 -e 64 -n 3 -w 1 --inplace both \
      -o "$tmp/p.md" >"$tmp/out" 2>&1 || fail "host_vs_mpi.sh -I 1 -c all: exit $?: $(cat "$tmp/out")"
    [ "$(grep -c '^| [a-z_]* | \(no\|yes\) | 64 | ' "$tmp/p.md")" = 17 ] ||
      fail "host_vs_mpi.sh -I 1 -c all: $(cat "$tmp/p.md")"
  fi
  echo "bench scripts: ok"
  ;;

plot)
  need_python
  command -v gnuplot >/dev/null || {
    echo "SKIP: gnuplot is not installed (bench/plot.sh installs it; the test does not)"
    exit 77
  }
  for n in 2 3; do
    "$MGCOMM" bench -t $n -c all_reduce -b 1K -e 64K -n 2 -w 0 --json "$tmp/p$n.json" >/dev/null 2>&1 ||
      fail "bench -t $n"
  done
  "$root/bench/plot.sh" "$tmp/p2.json" "$tmp/p3.json" "$tmp/plot.png" >"$tmp/out" 2>&1 ||
    fail "plot.sh: $(cat "$tmp/out")"
  [ "$(head -c 4 "$tmp/plot.png" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "not a PNG"
  echo "bench plot: ok"
  ;;

*)
  echo "usage: bench_cli.sh args|auto|table|factors|checks|fault|procs|procs_fault|mpirun|world|world_fault|default|plot|scripts"
  exit 2
  ;;
esac
