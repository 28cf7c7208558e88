#!/bin/sh
# `mgcomm trace` on its own: usage, an empty or missing folder, files that are not dumps, a dump
# that is not valid JSON, and several communicators in one folder: one consistent, and one for
# each way the ranks can diverge (kind, count, dtype, op, root; a rank one collective behind,
# because it stopped or because it skipped one; a rank one ahead), each named with what every
# rank called there.
set -u
MG=${MGCOMM:?MGCOMM must name the mgcomm command}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$MG" trace >/dev/null 2>&1; [ $? -eq 2 ] || fail "no argument must be a usage error (2)"
"$MG" trace a b >/dev/null 2>&1; [ $? -eq 2 ] || fail "two arguments must be a usage error (2)"
"$MG" trace --help | grep -q "first" || fail "--help must describe the command"
"$MG" trace "$T/none" >/dev/null 2>&1; [ $? -eq 1 ] || fail "a missing folder must fail (1)"
"$MG" trace "$T" >/dev/null 2>&1; [ $? -eq 1 ] || fail "an empty folder must fail (1)"

echo '{"format": "other"}' > "$T/x.json"
echo '{"format": "mgcomm-trace", "rank": 0, ' > "$T/broken.json"
echo 'not json' > "$T/notes.txt"
"$MG" trace "$T" > "$T/out" 2>&1; [ $? -eq 1 ] || fail "no dump among other files must fail (1)"
grep -q "broken.json is not valid JSON" "$T/out" || fail "an invalid dump must be named"

# Communicator aaaa: 2 ranks that agree; the others diverge at #1 (rank 1 differs).
dump() { # comm rank nranks last_enq entries...
  c=$1 r=$2 n=$3 e=$4; shift 4
  printf '{"format": "mgcomm-trace", "version": 1, "comm": "%s", "rank": %s, "nranks": %s,
  "reason": "request", "capacity": 8, "recorded": %s, "last_enqueued": %s, "last_completed": %s,
  "peers": [], "entries": [%s]}\n' "$c" "$r" "$n" "$#" "$e" "$e" "$(IFS=,; echo "$*")" \
    > "$T/mgcomm-trace-$c-r$r.json"
}
op() { # seq kind count [dtype [root [op]]]: the op as the library writes it, null when none
  printf '{"seq": %s, "kind": "%s", "collective": true, "dtype": "%s", "count": %s, "root": %s, "op": %s, "state": "completed"}' \
    "$1" "$2" "${4:-float32}" "$3" "${5:--1}" "$(if [ -n "${6:-}" ]; then echo "\"$6\""; else echo null; fi)"
}
ar() { op "$1" all_reduce "${2:-4}" "${3:-float32}" -1 "${4:-sum}"; } # seq [count [dtype [op]]]
dump aaaa 0 2 1 "$(ar 0)" "$(op 1 broadcast 4)"
dump aaaa 1 2 1 "$(ar 0)" "$(op 1 broadcast 4)"
dump bbbb 0 2 1 "$(ar 0)" "$(ar 1 8)"
dump bbbb 1 2 1 "$(ar 0)" "$(ar 1 16)"
dump kind 0 2 1 "$(ar 0)" "$(ar 1)"
dump kind 1 2 1 "$(ar 0)" "$(op 1 broadcast 4 float32 0)"
dump dtyp 0 2 1 "$(ar 0)" "$(ar 1)"
dump dtyp 1 2 1 "$(ar 0)" "$(ar 1 4 int32)"
dump opop 0 2 1 "$(ar 0)" "$(ar 1)"
dump opop 1 2 1 "$(ar 0)" "$(ar 1 4 float32 max)"
dump root 0 2 1 "$(ar 0)" "$(op 1 broadcast 4 float32 0)"
dump root 1 2 1 "$(ar 0)" "$(op 1 broadcast 4 float32 1)"
# Rank 1 stopped one collective behind: it never enqueued #2.
dump stop 0 2 2 "$(ar 0)" "$(ar 1)" "$(ar 2)"
dump stop 1 2 1 "$(ar 0)" "$(ar 1)"
# Rank 1 skipped rank 0's #1 (a broadcast): its #1 and #2 are rank 0's #2 and #3.
dump skip 0 2 3 "$(ar 0)" "$(op 1 broadcast 4 float32 0)" "$(op 2 all_gather 4)" "$(ar 3 8)"
dump skip 1 2 2 "$(ar 0)" "$(op 1 all_gather 4)" "$(ar 2 8)"
# Rank 1 called a reduce that rank 0 did not: its #2 and #3 are rank 0's #1 and #2.
dump more 0 2 2 "$(ar 0)" "$(op 1 all_gather 4)" "$(ar 2 8)"
dump more 1 2 3 "$(ar 0)" "$(op 1 reduce 4 float32 0)" "$(op 2 all_gather 4)" "$(ar 3 8)"
"$MG" trace "$T" > "$T/out" 2>&1 || fail "dumps must be read (0)"
cat "$T/out"
grep -q "mgcomm trace: 18 dumps" "$T/out" || fail "eighteen dumps must be counted"
grep -q "communicator aaaa: 2 ranks, dumps from ranks 0,1" "$T/out" || fail "aaaa not listed"
grep -q "no divergence: the ranks agree on every collective they recorded (#0..#1)" "$T/out" \
  || fail "aaaa must agree"
expect() { # what the line of one communicator's divergence must say
  grep -qF "$1" "$T/out" || fail "not found: $1"
}
expect "first divergence at collective #1: all_reduce (float32 x 8) enqueued by rank 0; rank 1 enqueued all_reduce (float32 x 16) (they differ in count)"
expect "first divergence at collective #1: all_reduce (float32 x 4) enqueued by rank 0; rank 1 enqueued broadcast (float32 x 4, root 0) (they differ in kind)"
expect "first divergence at collective #1: all_reduce (float32 x 4) enqueued by rank 0; rank 1 enqueued all_reduce (int32 x 4) (they differ in dtype)"
expect "first divergence at collective #1: all_reduce (float32 x 4, op sum) enqueued by rank 0; rank 1 enqueued all_reduce (float32 x 4, op max) (they differ in op)"
expect "first divergence at collective #1: broadcast (float32 x 4, root 0) enqueued by rank 0; rank 1 enqueued broadcast (float32 x 4, root 1) (they differ in root)"
expect "first divergence at collective #2: all_reduce (float32 x 4) enqueued by rank 0; rank 1 never enqueued it; rank 1's last is #1 (all_reduce)"
expect "first divergence at collective #1: broadcast (float32 x 4, root 0) enqueued by rank 0; rank 1 enqueued all_gather (float32 x 4) (they differ in kind); rank 1 looks one collective behind rank 0: its collectives from #1 on are rank 0's from #2 on (it did not call rank 0's #1)"
expect "first divergence at collective #1: all_gather (float32 x 4) enqueued by rank 0; rank 1 enqueued reduce (float32 x 4, root 0) (they differ in kind); rank 1 looks one collective ahead of rank 0: its collectives from #2 on are rank 0's from #1 on (it called #1, which rank 0 did not)"
echo "trace_cli: ok"
