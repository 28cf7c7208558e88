#!/bin/sh
# boot_launch.sh [BOOT_JOB] -- `mgcomm launch` ($MGCOMM): usage errors, the environment of each
# rank, output tagging, exit codes (first failure, signals, a program that cannot run), stopping
# the others after a failure within the grace period, forwarding SIGINT and SIGTERM, a second
# signal, and ranks dying with a killed launcher. With BOOT_JOB, also jobs that must fail in a
# named way: a rank claimed twice.
set -u
: "${MGCOMM:?set MGCOMM to the mgcomm binary}"
job=${1:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# expect_rc WANT DESCRIPTION -- command...
expect_rc() {
  want=$1
  what=$2
  shift 3
  "$@" >"$dir/out" 2>"$dir/err"
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$what: exit status $rc, expected $want"
    sed 's/^/  out: /' "$dir/out" | head -n 20
    sed 's/^/  err: /' "$dir/err" | head -n 20
  else
    echo "ok: $what (exit $rc)"
  fi
}

now() { date +%s.%N; }
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# ---- usage -------------------------------------------------------------------------------------
expect_rc 2 "no arguments" -- "$MGCOMM" launch
expect_rc 2 "no program" -- "$MGCOMM" launch -n 2
expect_rc 2 "no -n" -- "$MGCOMM" launch -- true
expect_rc 2 "-n 0" -- "$MGCOMM" launch -n 0 -- true
expect_rc 2 "-n abc" -- "$MGCOMM" launch -n abc -- true
expect_rc 2 "-n 100000" -- "$MGCOMM" launch -n 100000 -- true
expect_rc 2 "unknown option" -- "$MGCOMM" launch --frobnicate -n 2 -- true
expect_rc 2 "bad --grace" -- "$MGCOMM" launch --grace -1 -n 2 -- true
expect_rc 2 "bad --store" -- "$MGCOMM" launch --store nohostport -n 2 -- true
expect_rc 2 "bad --bind" -- "$MGCOMM" launch --bind socket -n 2 -- true
expect_rc 0 "--help" -- "$MGCOMM" launch --help
grep -q "mgcomm launch -n N" "$dir/out" || fail "--help does not print the usage"
expect_rc 0 "listed by mgcomm --help" -- "$MGCOMM" --help
grep -q "launch" "$dir/out" || fail "mgcomm --help does not list launch"

# ---- the environment of each rank --------------------------------------------------------------
unset MGCOMM_JOB_TOKEN
expect_rc 0 "environment of 3 ranks" -- "$MGCOMM" launch -n 3 -- sh -c \
  'echo "$MGCOMM_RANK $MGCOMM_WORLD_SIZE $MGCOMM_LOCAL_RANK $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE|$MGCOMM_STORE|$MASTER_ADDR:$MASTER_PORT|$MGCOMM_JOB_TOKEN"'
sort "$dir/out" >"$dir/sorted"
cut -d'|' -f1 "$dir/sorted" >"$dir/ids"
printf '0 3 0 0 3 0 3\n1 3 1 1 3 1 3\n2 3 2 2 3 2 3\n' | cmp -s - "$dir/ids" ||
  { fail "rank variables"; cat "$dir/sorted"; }
[ "$(cut -d'|' -f2 "$dir/sorted" | sort -u | wc -l)" = 1 ] || fail "ranks got different stores"
store=$(cut -d'|' -f2 "$dir/sorted" | head -n 1)
case $store in 127.0.0.1:[0-9]*) ;; *) fail "store '$store' is not 127.0.0.1:port" ;; esac
[ "$(cut -d'|' -f3 "$dir/sorted" | head -n 1)" = "$store" ] || fail "MASTER_ADDR:MASTER_PORT is not the store"
[ "$(cut -d'|' -f4 "$dir/sorted" | sort -u | wc -l)" = 1 ] || fail "ranks got different tokens"
token=$(cut -d'|' -f4 "$dir/sorted" | head -n 1)
[ ${#token} -eq 64 ] || fail "generated token '$token' is not 64 hex digits"
expect_rc 0 "a given MGCOMM_JOB_TOKEN and --store are kept" -- env MGCOMM_JOB_TOKEN=mine \
  "$MGCOMM" launch -n 2 --store '[::1]:45678' -- sh -c 'echo "$MGCOMM_JOB_TOKEN $MGCOMM_STORE $MASTER_ADDR $MASTER_PORT"'
[ "$(sort -u "$dir/out")" = "mine [::1]:45678 ::1 45678" ] || { fail "token/--store"; cat "$dir/out"; }
expect_rc 0 "stdin is /dev/null" -- sh -c "echo typed | '$MGCOMM' launch -n 1 -- sh -c 'cat; echo end'"
[ "$(cat "$dir/out")" = "end" ] || fail "a rank read the launcher's stdin: $(cat "$dir/out")"

# ---- binding ---------------------------------------------------------------------------------
# --bind core: each rank alone on its own CPU of the launcher's set; as many ranks as CPUs here
# (taskset gives the launcher 2 where there are 2), and more than that is refused with a message.
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  cpus=$(taskset -c -p $$ | sed 's/.*: //')
  expect_rc 0 "--bind core, 2 ranks" -- taskset -c "$cpus" "$MGCOMM" launch -n 2 --bind core -- \
    sh -c 'echo "$RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
  sort "$dir/out" >"$dir/sorted"
  [ "$(cut -d' ' -f2 "$dir/sorted" | grep -c '^[0-9]*$')" = 2 ] ||
    { fail "--bind core: a rank on more than one CPU"; cat "$dir/sorted"; }
  [ "$(cut -d' ' -f2 "$dir/sorted" | sort -u | wc -l)" = 2 ] ||
    { fail "--bind core: two ranks on one CPU"; cat "$dir/sorted"; }
  expect_rc 0 "--bind core, more ranks than CPUs" -- "$MGCOMM" launch -n "$(($(nproc) + 1))" \
    --bind core -- sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2'
  grep -q "run unbound" "$dir/err" || fail "--bind core with too few CPUs: no message"
  [ "$(sort -u "$dir/out" | wc -l)" = 1 ] || fail "--bind core with too few CPUs bound ranks"
  expect_rc 0 "--bind none" -- "$MGCOMM" launch -n 2 --bind none -- \
    sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2'
  [ "$(sort -u "$dir/out")" = "$(grep Cpus_allowed_list /proc/self/status | cut -f2)" ] ||
    fail "--bind none changed the ranks' CPUs"
else
  echo "skip: --bind (no taskset, or one CPU)"
fi

# ---- output tagging ----------------------------------------------------------------------------
expect_rc 0 "--tag-output" -- "$MGCOMM" launch -t -n 2 -- sh -c \
  'echo "out $RANK"; echo "err $RANK" >&2; printf "partial $RANK"'
sort "$dir/out" >"$dir/sorted"
printf '[0] out 0\n[0] partial 0\n[1] out 1\n[1] partial 1\n' | cmp -s - "$dir/sorted" ||
  { fail "tagged stdout"; cat "$dir/sorted"; }
sort "$dir/err" | grep -v '^mgcomm' >"$dir/sorted"
printf '[0] err 0\n[1] err 1\n' | cmp -s - "$dir/sorted" || { fail "tagged stderr"; cat "$dir/err"; }
expect_rc 0 "untagged output passes through" -- "$MGCOMM" launch -n 1 -- sh -c 'echo plain'
[ "$(cat "$dir/out")" = plain ] || fail "untagged output: $(cat "$dir/out")"

# ---- exit codes --------------------------------------------------------------------------------
expect_rc 0 "every rank exits 0" -- "$MGCOMM" launch -n 4 -- true
expect_rc 3 "rank 2 exits 3" -- "$MGCOMM" launch -n 4 -- sh -c '[ "$RANK" = 2 ] && exit 3; exit 0'
expect_rc 137 "rank 1 killed by SIGKILL" -- "$MGCOMM" launch -n 3 -- sh -c '[ "$RANK" = 1 ] && kill -9 $$; exit 0'
expect_rc 127 "program not found" -- "$MGCOMM" launch -n 2 -- /nonexistent/program
grep -q "cannot run '/nonexistent/program'" "$dir/err" || fail "no message for a program that cannot run"
# the first failure wins: rank 1 fails at once with 5, rank 0 would fail later with 7
expect_rc 5 "the first failure's status" -- "$MGCOMM" launch -n 2 --grace 10 -- sh -c \
  'if [ "$RANK" = 1 ]; then exit 5; fi; trap "exit 7" TERM; sleep 30 & wait $!; exit 7'
grep -q "rank 1 (pid [0-9]*) exited with status 5" "$dir/err" || { fail "no message naming rank 1"; cat "$dir/err"; }

# ---- a failure stops the others: SIGTERM, then SIGKILL after the grace period -------------------
t0=$(now)
expect_rc 4 "rank 0 fails, the others sleep" -- "$MGCOMM" launch -n 3 --grace 10 -- sh -c \
  '[ "$RANK" = 0 ] && exit 4; sleep 60'
t=$(elapsed "$t0")
lt "$t" 5 || fail "stopping sleeping ranks took $t s"
echo "   stopped in $t s"
t0=$(now)
expect_rc 4 "a rank ignoring SIGTERM is killed after --grace 1" -- "$MGCOMM" launch -n 2 --grace 1 -- sh -c \
  '[ "$RANK" = 0 ] && { sleep 0.3; exit 4; }; trap "" TERM; while :; do sleep 0.1; done'
t=$(elapsed "$t0")
lt "$t" 5 || fail "SIGKILL after the grace period took $t s"
lt 0.9 "$t" || fail "SIGKILL came before the grace period ($t s)"
grep -q "SIGKILL" "$dir/err" || fail "no message about SIGKILL"
echo "   killed in $t s"

# ---- signals -----------------------------------------------------------------------------------
# SIGTERM to the launcher reaches every rank, which exits 0 from its handler: the job exits 0.
"$MGCOMM" launch -n 3 -- sh -c \
  'trap "echo \$RANK > '"$dir"'/term.\$RANK; exit 0" TERM; echo > '"$dir"'/up.$RANK; sleep 60 & wait $!' \
  >"$dir/out" 2>"$dir/err" &
lpid=$!
i=0
while [ "$(ls "$dir" | grep -c '^up\.')" -lt 3 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $lpid
wait $lpid
rc=$?
[ $rc -eq 0 ] || fail "SIGTERM forwarded, ranks exit 0: launcher exit $rc"
[ "$(ls "$dir" | grep -c '^term\.')" -eq 3 ] || fail "SIGTERM did not reach every rank: $(ls "$dir")"
grep -q "forwarding SIGTERM" "$dir/err" || fail "no message about forwarding SIGTERM"
echo "ok: SIGTERM forwarded to 3 ranks"

# SIGINT: ranks die of it; the launcher exits 130.
rm -f "$dir"/up.*
"$MGCOMM" launch -n 2 -- sh -c 'echo > '"$dir"'/up.$RANK; sleep 60 & wait $!' >"$dir/out" 2>"$dir/err" &
lpid=$!
i=0
while [ "$(ls "$dir" | grep -c '^up\.')" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT $lpid
wait $lpid
rc=$?
[ $rc -eq 130 ] || fail "SIGINT forwarded: launcher exit $rc, expected 130"
echo "ok: SIGINT forwarded, exit 130"

# A second signal kills ranks that ignore the first.
rm -f "$dir"/up.*
"$MGCOMM" launch -n 2 --grace 60 -- sh -c 'trap "" TERM; echo > '"$dir"'/up.$RANK; while :; do sleep 0.1; done' \
  >"$dir/out" 2>"$dir/err" &
lpid=$!
i=0
while [ "$(ls "$dir" | grep -c '^up\.')" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
t0=$(now)
kill -TERM $lpid
sleep 0.3
kill -TERM $lpid
wait $lpid
rc=$?
t=$(elapsed "$t0")
[ $rc -eq 137 ] || fail "second SIGTERM: exit $rc, expected 137"
lt "$t" 5 || fail "second SIGTERM took $t s"
echo "ok: a second SIGTERM kills ranks that ignore the first (exit 137)"

# The launcher killed outright: its ranks do not outlive it.
rm -f "$dir"/up.* "$dir"/pid.*
"$MGCOMM" launch -n 2 -- sh -c 'echo $$ > '"$dir"'/pid.$RANK; echo > '"$dir"'/up.$RANK; while :; do sleep 0.1; done' \
  >"$dir/out" 2>"$dir/err" &
lpid=$!
i=0
while [ "$(ls "$dir" | grep -c '^up\.')" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -KILL $lpid
wait $lpid 2>/dev/null
sleep 0.5
for f in "$dir"/pid.*; do
  p=$(cat "$f")
  # Dead is gone or a zombie (state Z) waiting for PID 1 to reap it.
  state=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null || echo gone)
  if [ -n "$state" ] && [ "$state" != gone ] && [ "$state" != Z ]; then
    fail "rank pid $p outlived a killed launcher"
    kill -KILL "$p"
  fi
done
echo "ok: ranks die with a killed launcher"

# ---- jobs that must fail in a named way --------------------------------------------------------
if [ -n "$job" ]; then
  expect_rc 0 "a rank claimed twice" -- env MGCOMM_TIMEOUT=3 "$MGCOMM" launch -t -n 4 -- "$job" duprank
  n=$(grep -c "rank 1 is claimed by 2 processes" "$dir/out")
  [ "$n" -eq 1 ] || { fail "expected one 'claimed by 2 processes' message, got $n"; cat "$dir/out"; }
fi

if [ $fails -ne 0 ]; then
  echo "boot_launch: $fails failure(s)"
  exit 1
fi
echo "boot_launch: ok"
