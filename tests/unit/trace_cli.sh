#!/bin/sh
# `mgcomm trace` on its own: usage, an empty or missing folder, files that are not dumps, a dump
# that is not valid JSON, and several communicators in one folder: one consistent, and one for
# each way the ranks can diverge (kind, count, dtype, op, root; a rank one collective behind,
# because it stopped or because it skipped one; a rank one ahead), each named with what every
# rank called there. Then input that must do no harm: dumps of one communicator that disagree
# (nranks, a duplicate rank, a rank out of range, a file named for another communicator), a
# FIFO named *.json, malformed JSON and dumps of every kind, numbers that would make the analysis
# loop for ever, and files and dump sets over the limits.
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
dump() { # comm rank nranks last_enq entries...: into $D (default $T), with $PEERS as its peers
  c=$1 r=$2 n=$3 e=$4; shift 4
  printf '{"format": "mgcomm-trace", "version": 1, "comm": "%s", "rank": %s, "nranks": %s,
  "reason": "request", "capacity": 8, "recorded": %s, "last_enqueued": %s, "last_completed": %s,
  "peers": [%s], "entries": [%s]}\n' "$c" "$r" "$n" "$#" "$e" "$e" "${PEERS:-}" \
    "$(IFS=,; echo "$*")" > "${D:-$T}/mgcomm-trace-$c-r$r.json"
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

# ---- input that must do no harm ----------------------------------------------------------------
# Each case has its own folder; mgcomm trace runs with a deadline, and neither a signal, a
# deadline nor a sanitizer's report is accepted.
trace() { # folder [options]: $rc and $T/out
  d=$1; shift
  timeout 60 "$MG" trace "$@" "$d" > "$T/out" 2>&1
  rc=$?
  [ $rc -lt 124 ] || fail "mgcomm trace $* $d: exit $rc (a hang or a crash): $(tail -c 2000 "$T/out")"
  ! grep -q "Sanitizer\|runtime error" "$T/out" || fail "mgcomm trace $* $d: $(cat "$T/out")"
}
new() { D=$T/$1; mkdir "$D" || fail "mkdir $D"; }

# Dumps of one communicator that disagree on nranks: the most common nranks is read (here a tie,
# the lowest rank's), the others are named and skipped; no index goes past the dump it is from.
for nr in 4 64 100000; do
  new n$nr
  dump cccc 0 $nr 0 "$(ar 0)"
  dump cccc 1 2 0 "$(ar 0)"
  trace "$D"
  [ $rc -eq 0 ] || fail "nranks $nr against 2: exit $rc: $(cat "$T/out")"
  expect "$D/mgcomm-trace-cccc-r1.json: rank 1 of 2 ranks, but 1 other dump of communicator cccc has $nr; skipped"
  expect "communicator cccc: $nr ranks, dumps from rank 0"
  expect "ranks 1-$((nr - 1)): no dump, and no other rank saw their progress"
  expect "no divergence: the ranks agree on every collective they recorded (#0..#0)"
done
# Two jobs whose dumps carry the same tag: the three of 4 ranks outvote the two of 2.
new jobs
for r in 0 1; do
  dump cccc $r 2 0 "$(ar 0)"
  mv "$D/mgcomm-trace-cccc-r$r.json" "$D/other-job-r$r.json" || fail "mv"
done
for r in 0 1 2; do dump cccc $r 4 0 "$(ar 0)"; done
trace "$D"
[ $rc -eq 0 ] || fail "two jobs: exit $rc: $(cat "$T/out")"
expect "$D/other-job-r0.json: rank 0 of 2 ranks, but 3 other dumps of communicator cccc have 4; skipped"
expect "$D/other-job-r1.json: rank 1 of 2 ranks, but 3 other dumps of communicator cccc have 4; skipped"
expect "communicator cccc: 4 ranks, dumps from ranks 0-2"
# The same rank twice: the first file (by name) is read.
new dup
dump dddd 0 2 0 "$(ar 0)"
dump dddd 1 2 0 "$(ar 0)"
cp "$D/mgcomm-trace-dddd-r1.json" "$D/z-copy.json" || fail "cp"
trace "$D"
[ $rc -eq 0 ] || fail "a duplicate rank: exit $rc: $(cat "$T/out")"
expect "$D/z-copy.json: rank 1 of communicator dddd again ($D/mgcomm-trace-dddd-r1.json is read); skipped"
expect "communicator dddd: 2 ranks, dumps from ranks 0,1"
# A rank out of range, and a file named for another communicator or rank than it holds.
new range
dump eeee 0 2 0 "$(ar 0)"
dump eeee 2 2 0 "$(ar 0)"
dump ffff 0 2 0 "$(ar 0)"
mv "$D/mgcomm-trace-ffff-r0.json" "$D/mgcomm-trace-eeee-r1.json" || fail "mv"
trace "$D"
[ $rc -eq 0 ] || fail "a rank out of range: exit $rc: $(cat "$T/out")"
expect "$D/mgcomm-trace-eeee-r2.json is not a valid dump: rank 2 is not below nranks 2; skipped"
expect "$D/mgcomm-trace-eeee-r1.json is not a valid dump: it is named for communicator eeee rank 1 but holds communicator ffff rank 0; skipped"
expect "communicator eeee: 2 ranks, dumps from rank 0"

# A FIFO named *.json is not opened for reading (that would wait for a writer for ever).
new fifo
dump gggg 0 1 0 "$(ar 0)"
mkfifo "$D/pipe.json" || fail "mkfifo"
trace "$D"
[ $rc -eq 0 ] || fail "a FIFO: exit $rc: $(cat "$T/out")"
expect "$D/pipe.json is not a regular file; skipped"
expect "communicator gggg: 1 rank, dumps from rank 0"

# Numbers that made the analysis walk every sequence number up to them.
new far
PEERS='{"rank": 1, "last_enqueued": 4000000000000000000, "kind": "all_reduce"}' dump hhhh 0 2 0 "$(ar 0)"
dump iiii 0 2 4611686018427387904 "$(ar 0)"
dump iiii 1 2 0 "$(ar 0)"
trace "$D"
[ $rc -eq 0 ] || fail "far sequence numbers: exit $rc: $(cat "$T/out")"
expect "rank 1: no dump; the others saw it last enqueue #4000000000000000000 (all_reduce)"
expect "no divergence: the ranks agree on every collective they recorded (#0..#4000000000000000000)"
expect "no divergence: the ranks agree on every collective they recorded (#0..#4611686018427387904)"

# A rank that enqueued no collective: its dump holds no entries.
new empty
dump mmmm 0 2 -1
dump mmmm 1 2 0 "$(ar 0)"
trace "$D"
[ $rc -eq 0 ] || fail "a dump without entries: exit $rc: $(cat "$T/out")"
expect "rank 0: last enqueued none, last completed none, dumped on request"
expect "first divergence at collective #0: all_reduce (float32 x 4) enqueued by rank 1; rank 0 never enqueued it; rank 0 enqueued no collective"

# Malformed JSON and malformed dumps: each one alone in its folder is named and skipped (exit 1:
# no dump was read). @H is a valid header, @E a valid entry.
H='"format": "mgcomm-trace", "version": 1, "comm": "jjjj", "rank": 0, "nranks": 2'
E='{"seq": 0, "kind": "all_reduce", "collective": true, "dtype": "float32", "count": 4, "root": -1, "op": "sum"}'
i=0
while IFS= read -r body; do
  i=$((i + 1))
  new bad$i
  printf '%s' "$body" | sed "s/@H/$H/; s/@E/$E/g" > "$D/x.json"
  trace "$D"
  [ $rc -eq 1 ] || fail "malformed input $i ($body): exit $rc, want 1: $(cat "$T/out")"
  grep -q "x.json is not valid JSON: \|x.json is not a valid dump: " "$T/out" ||
    fail "malformed input $i ($body) is not named: $(cat "$T/out")"
done <<'CASES'

{
{@H
{@H}}
{@H} trailing
{@H, "x": 01}
{@H, "x": 1.}
{@H, "x": -}
{@H, "x": 1e}
{@H, "x": "\x"}
{@H, "x": "\u12"}
{@H, "x": "	tab"}
{@H, "x": tru}
{@H, "x" 1}
{@H,}
{@H, "x": [1,]}
{"format": "mgcomm-trace", "comm": "jjjj", "rank": 0, "nranks": 1e400}
{"format": "mgcomm-trace", "comm": "jjjj", "rank": 0, "nranks": 2147483648}
{"format": "mgcomm-trace", "comm": "jjjj", "rank": 0, "nranks": 1.5}
{"format": "mgcomm-trace", "comm": "jjjj", "rank": 0, "nranks": "2"}
{"format": "mgcomm-trace", "comm": "jjjj", "rank": 0.5, "nranks": 2}
{"format": "mgcomm-trace", "comm": "jjjj", "rank": -1, "nranks": 2}
{"format": "mgcomm-trace", "comm": "jjjj", "nranks": 2}
{"format": "mgcomm-trace", "comm": "", "rank": 0, "nranks": 2}
{"format": "mgcomm-trace", "comm": "a b", "rank": 0, "nranks": 2}
{"format": "mgcomm-trace", "rank": 0, "nranks": 2}
{"format": "mgcomm-trace", "version": 2, "comm": "jjjj", "rank": 0, "nranks": 2}
{@H, "entries": [1, 2]}
{@H, "entries": {}}
{@H, "entries": [{"seq": 0, "collective": "yes"}]}
{@H, "entries": [{"seq": -1, "kind": "all_reduce", "collective": true}]}
{@H, "entries": [{"seq": 1e300, "kind": "all_reduce", "collective": true}]}
{@H, "entries": [{"seq": 4611686018427387905, "kind": "all_reduce", "collective": true}]}
{@H, "entries": [{"seq": 9223372036854775808, "kind": "all_reduce", "collective": true}]}
{@H, "entries": [{"kind": "all_reduce", "collective": true}]}
{@H, "entries": [@E, @E]}
{@H, "entries": [{"seq": 0, "kind": "all_reduce_with_a_name_longer_than_31_bytes", "collective": true}]}
{@H, "entries": [{"seq": 0, "kind": "all_reduce", "collective": true, "count": -4}]}
{@H, "entries": [{"seq": 0, "kind": "all_reduce", "collective": true, "root": -2}]}
{@H, "peers": [{"rank": 2, "last_enqueued": 0}]}
{@H, "peers": [{"rank": 1, "last_enqueued": -2}]}
{@H, "peers": [7]}
{@H, "last_enqueued": 99999999999999999999}
CASES
# A NUL byte, and nesting deeper than any dump.
new nul
printf '{"format": "mgcomm-trace",\0 "comm": "jjjj", "rank": 0, "nranks": 1}' > "$D/x.json"
trace "$D"
[ $rc -eq 1 ] && grep -q "x.json is not valid JSON: " "$T/out" || fail "a NUL byte: exit $rc: $(cat "$T/out")"
new deep
{ printf '{"format": "mgcomm-trace", "x": '; head -c 200000 /dev/zero | tr '\0' '['; } > "$D/x.json"
trace "$D"
[ $rc -eq 1 ] && grep -q "x.json is not valid JSON: .*deeper than" "$T/out" ||
  fail "deep nesting: exit $rc: $(cat "$T/out")"

# Limits: a file over the size limit is not read (a sparse 300 MB file here), a dump set over the
# limit on records stops with a message naming it; both make the exit status 1, and what was read
# is still analysed.
new big
dump kkkk 0 1 0 "$(ar 0)"
truncate -s 300M "$D/big.json" || fail "truncate"
trace "$D"
[ $rc -eq 1 ] || fail "a 300 MB file: exit $rc: $(cat "$T/out")"
expect "$D/big.json is 314572800 bytes, more than the limit of 256 MiB per dump (--max-file-mb); skipped"
expect "communicator kkkk: 1 rank, dumps from rank 0"
new small
dump kkkk 0 1 0 "$(ar 0)"
{ printf '{%s, "entries": [' "$H"; yes '{},' | head -c 2000000; printf '{}]}'; } > "$D/padded.json"
trace "$D" --max-file-mb 1
[ $rc -eq 1 ] || fail "--max-file-mb 1: exit $rc: $(cat "$T/out")"
expect "$D/padded.json is 2000"
expect "bytes, more than the limit of 1 MiB per dump (--max-file-mb); skipped"
new many
dump llll 0 2 10 "$(ar 0)" "$(ar 1)" "$(ar 2)" "$(ar 3)" "$(ar 4)" "$(ar 5)" "$(ar 6)" "$(ar 7)" "$(ar 8)" "$(ar 9)" "$(ar 10)"
dump llll 1 2 0 "$(ar 0)"
# A dump counts 16 records, a collective 1: rank 0's 27 fit in 40, rank 1's 17 more do not.
trace "$D" --max-entries 40
[ $rc -eq 1 ] || fail "--max-entries 40: exit $rc: $(cat "$T/out")"
expect "$D/mgcomm-trace-llll-r1.json would make more than 40 records in all (16 for a dump, 1 for a collective or a rank that dumps saw; the limit of --max-entries): it and the 0 files after it are not read"
expect "communicator llll: 2 ranks, dumps from rank 0"
# More files than --max-entries holds dumps: the first by name are read.
trace "$D" --max-entries 31
[ $rc -eq 1 ] || fail "--max-entries 31: exit $rc: $(cat "$T/out")"
expect "2 files named *.json, more than --max-entries holds as dumps (1); the first 1 by name are read"
expect "communicator llll: 2 ranks, dumps from rank 0"
for bad in "--max-entries 0" "--max-entries x" "--max-file-mb 0" "--max-file-mb 1x" "--max-file-mb"; do
  "$MG" trace $bad "$T" >/dev/null 2>&1; [ $? -eq 2 ] || fail "$bad must be a usage error (2)"
done
# Memory: a 64 MB dump padded with empty entries is read within 768 MB of address space, where
# building its tree took gigabytes (not checked under a sanitizer, which reserves terabytes).
new padded
{ printf '{%s, "entries": [' "$H"; yes '{},' | head -c 64000000; printf '%s]}' "$E"; } > "$D/x.json"
if (ulimit -v 786432 && "$MG" trace --help) >/dev/null 2>&1; then
  (ulimit -v 786432; exec timeout 60 "$MG" trace "$D") > "$T/out" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail "a 64 MB padded dump in 768 MB: exit $rc: $(cat "$T/out")"
  expect "communicator jjjj: 2 ranks, dumps from rank 0"
else
  echo "(the memory check is skipped: this build cannot run within 768 MB of address space)"
fi
echo "trace_cli: ok"
