#!/bin/sh
# `mgcomm trace` on its own: usage, an empty or missing folder, files that are not dumps, a dump
# that is not valid JSON, and two communicators in one folder (one consistent, one not).
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

# Communicator aaaa: 2 ranks that agree. Communicator bbbb: rank 1 has another count at #1.
dump() { # comm rank nranks last_enq entries...
  c=$1 r=$2 n=$3 e=$4; shift 4
  printf '{"format": "mgcomm-trace", "version": 1, "comm": "%s", "rank": %s, "nranks": %s,
  "reason": "request", "capacity": 8, "recorded": %s, "last_enqueued": %s, "last_completed": %s,
  "peers": [], "entries": [%s]}\n' "$c" "$r" "$n" "$#" "$e" "$e" "$(IFS=,; echo "$*")" \
    > "$T/mgcomm-trace-$c-r$r.json"
}
op() { # seq kind count
  printf '{"seq": %s, "kind": "%s", "collective": true, "dtype": "float32", "count": %s, "root": -1, "state": "completed"}' "$1" "$2" "$3"
}
dump aaaa 0 2 1 "$(op 0 all_reduce 4)" "$(op 1 broadcast 4)"
dump aaaa 1 2 1 "$(op 0 all_reduce 4)" "$(op 1 broadcast 4)"
dump bbbb 0 2 1 "$(op 0 all_reduce 4)" "$(op 1 all_reduce 8)"
dump bbbb 1 2 1 "$(op 0 all_reduce 4)" "$(op 1 all_reduce 16)"
"$MG" trace "$T" > "$T/out" 2>&1 || fail "dumps must be read (0)"
cat "$T/out"
grep -q "mgcomm trace: 4 dumps" "$T/out" || fail "four dumps must be counted"
grep -q "communicator aaaa: 2 ranks, dumps from ranks 0,1" "$T/out" || fail "aaaa not listed"
grep -q "no divergence: the ranks agree on every collective they recorded (#0..#1)" "$T/out" \
  || fail "aaaa must agree"
grep -q "first divergence at collective #1: all_reduce (float32 x 8) enqueued by rank 0; rank 1 enqueued all_reduce (float32 x 16)" "$T/out" \
  || fail "bbbb's count mismatch must be named"
echo "trace_cli: ok"
