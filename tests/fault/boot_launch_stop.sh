#!/bin/sh
# boot_launch_stop.sh CASE [BOOT_JOB] -- how `mgcomm launch` ($MGCOMM) stops a job: it signals
# exactly the process groups it started, those of ranks that already exited included, and returns
# only when nothing of the job is left. Each job runs in a session of its own (setsid), whose id
# the test records: after the launcher returns, no process of that session may remain.
#   orphans   ranks fork children that ignore SIGTERM and outlive their rank (one rank fails,
#             one exited 0 before, one is stopped): every child is killed after --grace
#   forward   SIGTERM to the launcher, ranks exit 0 from their handler, their children ignore
#             it: killed after --grace, the job exits 0
#   race      rank 0 exits 3 at once with -n 64, 8 times: one failure message, never a
#             forwarded or second SIGTERM (a signal taken by a rank before it could take it)
#   noexec    -- /nonexistent/program with -n 2, 30 times: exit 127, likewise
#   shm_early a rank exits while the others wait for it in mg_comm_init_rank (mgcomm bench as
#             the job): nothing of the segment they made is left once the launcher returns (no
#             entry in /dev/shm, no meeting socket, no mapping)
#   shm_sigint  SIGINT to the launcher while a rank is late: likewise
#   shm_setsid  the waiting ranks are in sessions of their own, which the launcher does not
#             stop; killed from outside after the launcher returned: likewise
#   lines     the launcher's message about a failed rank, and mgcomm's log lines in ranks whose
#             stderr is fully buffered (BOOT_JOB logline), reach the shared stderr in one write
#             each (one_write.py), so lines of several processes never interleave
set -u
: "${MGCOMM:?set MGCOMM to the mgcomm binary}"
command -v setsid >/dev/null && command -v pgrep >/dev/null ||
  { echo "SKIP: setsid and pgrep (util-linux, procps) are needed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

now() { date +%s.%N; }
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# wait_for N GLOB: until N files match $dir/GLOB (10 s at most).
wait_for() {
  i=0
  while [ "$(ls "$dir" | grep -c "$2")" -lt "$1" ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
}

# job ARGS...: runs `mgcomm launch ARGS` in the background, in a new session; sets lpid (the
# launcher, also the session's id). Output in $dir/out and $dir/err.
job() {
  rm -f "$dir/sid"
  setsid sh -c 'echo $$ > "$0/sid"; exec "$@"' "$dir" "$MGCOMM" launch "$@" \
    >"$dir/out" 2>"$dir/err" &
  spid=$!
  i=0
  while [ ! -s "$dir/sid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  lpid=$(cat "$dir/sid")
}

# finish WHAT WANT: waits for the job; its exit status must be WANT, and nothing of its session
# may be left (what is, is killed, and named).
finish() {
  wait $spid
  rc=$?
  [ "$rc" -eq "$2" ] || { fail "$1: exit status $rc, expected $2"; sed 's/^/  err: /' "$dir/err"; }
  left=$(pgrep -s "$lpid" | tr '\n' ' ')
  if [ -n "$left" ]; then
    fail "$1: processes of the job outlived the launcher: $left"
    ps -o pid,pgid,stat,args -s "$lpid" | sed 's/^/  /'
    pkill -KILL -s "$lpid"
  fi
}

# no_stray_signal WHAT: the launcher took no signal of its own.
no_stray_signal() {
  if grep -q "forwarding\|second SIG" "$dir/err"; then
    fail "$1: the launcher acted on a signal nobody sent it"
    sed 's/^/  err: /' "$dir/err" | head -n 5
  fi
}

# segments_of PID...: the names (mgcomm-<hex>) of the host backend's segments these processes
# map: a memfd (/memfd:mgcomm-<hex>), or a file in /dev/shm as the backend once made.
segments_of() {
  for p in "$@"; do
    grep -o '\(/dev/shm/\|/memfd:\)mgcomm-[0-9a-f]*' "/proc/$p/maps" 2>/dev/null
  done | sed 's,.*/,,; s,.*:,,' | sort -u
}

# wait_segments PIDFILE...: until the processes whose pids the files hold map a segment (20 s at
# most); their names in $dir/segs.
wait_segments() {
  i=0
  : >"$dir/segs"
  while [ $i -lt 200 ]; do
    pids=$(cat "$@" 2>/dev/null)
    [ -n "$pids" ] && segments_of $pids >"$dir/segs"
    [ -s "$dir/segs" ] && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

# segments_gone WHAT: nothing is left of the segments in $dir/segs: no entry in /dev/shm (then
# removed, and named), no meeting socket (@mgcomm-<hex> in /proc/net/unix), no process that
# maps one (the memory itself).
segments_gone() {
  n_job=$(wc -l <"$dir/segs")
  [ "$n_job" -ge 1 ] || { fail "$1: the ranks never made a segment"; return; }
  n_left=0 n_sock=0 n_map=0
  for s in $(cat "$dir/segs"); do
    [ -e "/dev/shm/$s" ] && { n_left=$((n_left + 1)); rm -f "/dev/shm/$s"; }
    grep -q "@$s\$" /proc/net/unix && n_sock=$((n_sock + 1))
    grep -l "$s" /proc/[0-9]*/maps 2>/dev/null | grep -q . && n_map=$((n_map + 1))
  done
  [ "$n_left" -eq 0 ] || fail "$1: $n_left of the job's $n_job segment(s) left in /dev/shm"
  [ "$n_sock" -eq 0 ] || fail "$1: the meeting socket of $n_sock segment(s) is still there"
  [ "$n_map" -eq 0 ] || fail "$1: $n_map segment(s) still mapped by some process"
  echo "   the job's segments: $n_job while it waited; after: $n_left in /dev/shm, $n_sock" \
       "meeting sockets, $n_map mapped"
}

bench_rank="exec \"$MGCOMM\" bench -c all_reduce -b 8 -e 8 -n 1 -w 0"
# A child of a rank that ignores SIGTERM and records its pid.
cat >"$dir/ignore_term.sh" <<'EOF'
trap "" TERM
echo $$ > "$1/child.$RANK"
exec sleep 60
EOF

case "${1:-}" in
orphans)
  # Every rank starts a child that ignores SIGTERM. Rank 1 then exits 0, rank 2 sleeps, rank 0
  # fails once every child runs and rank 1 is gone.
  t0=$(now)
  job -n 3 --grace 1 -- sh -c '
    sh "'"$dir"'/ignore_term.sh" "'"$dir"'" &
    case $RANK in
    0) i=0
       while [ "$(ls "'"$dir"'" | grep -c "^child\.")" -lt 3 ] || [ ! -e "'"$dir"'/gone.1" ]; do
         sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || break
       done
       exit 3 ;;
    1) while [ ! -e "'"$dir"'/child.1" ]; do sleep 0.05; done; echo > "'"$dir"'/gone.1"; exit 0 ;;
    *) sleep 60 ;;
    esac'
  finish "children ignoring SIGTERM" 3
  t=$(elapsed "$t0")
  lt "$t" 8 || fail "stopping the job took $t s"
  grep -q "still running after 1 s: SIGKILL" "$dir/err" ||
    { fail "no message about SIGKILL for the children left"; sed 's/^/  err: /' "$dir/err"; }
  for f in "$dir"/child.*; do
    p=$(cat "$f")
    [ -d "/proc/$p" ] && { fail "child $p of rank ${f##*.} survived"; kill -KILL "$p"; }
  done
  [ "$(ls "$dir" | grep -c '^child\.')" -eq 3 ] || fail "not every rank started its child"
  [ $fails -ne 0 ] || echo "ok: every child of every rank stopped, in $t s"
  ;;

forward)
  job -n 2 --grace 1 -- sh -c '
    sh "'"$dir"'/ignore_term.sh" "'"$dir"'" &
    trap "exit 0" TERM; echo > "'"$dir"'/up.$RANK"; sleep 60 & wait $!'
  wait_for 2 '^up\.'
  wait_for 2 '^child\.'
  t0=$(now)
  kill -TERM "$lpid"
  finish "SIGTERM forwarded, children ignore it" 0
  t=$(elapsed "$t0")
  lt 0.9 "$t" || fail "the children were killed before the grace period ($t s)"
  lt "$t" 8 || fail "stopping the job took $t s"
  [ $fails -ne 0 ] || echo "ok: forwarded SIGTERM, children killed after the grace period ($t s)"
  ;;

race)
  for run in 1 2 3 4 5 6 7 8; do
    job -n 64 --grace 5 -- sh -c '[ "$RANK" = 0 ] && exit 3; exec sleep 60'
    finish "-n 64, rank 0 exits 3 (run $run)" 3
    no_stray_signal "-n 64, rank 0 exits 3 (run $run)"
    grep -q "still running after" "$dir/err" && fail "run $run: $(grep "still running" "$dir/err")"
    n=$(grep -c "rank 0 (pid [0-9]*) exited with status 3; stopping the other 63 ranks" "$dir/err")
    [ "$n" -eq 1 ] ||
      { fail "run $run: $n messages about rank 0"; sed 's/^/  err: /' "$dir/err" | head; }
  done
  [ $fails -ne 0 ] || echo "ok: 8 jobs of 64 ranks stopped after rank 0 failed, no stray signal"
  ;;

noexec)
  run=0
  while [ $run -lt 30 ]; do
    run=$((run + 1))
    job -n 2 -- /nonexistent/program
    finish "a program that cannot run (run $run)" 127
    no_stray_signal "a program that cannot run (run $run)"
  done
  [ $fails -ne 0 ] || echo "ok: 30 jobs of a program that cannot run: exit 127, no stray signal"
  ;;

shm_early)
  # Ranks 0 and 1 wait in init for rank 2, which exits 1 once they have made the segment.
  job -n 3 --grace 2 -- sh -c '
    if [ "$RANK" != 2 ]; then echo $$ > "'"$dir"'/pid.$RANK"; '"$bench_rank"'; fi
    i=0; while [ ! -e "'"$dir"'/go" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; exit 1'
  wait_for 2 '^pid\.'
  wait_segments "$dir/pid.0" "$dir/pid.1" || fail "ranks 0 and 1 never mapped a segment"
  echo > "$dir/go"
  finish "a rank exits while the others wait in init" 1
  segments_gone "a rank exits while the others wait in init"
  [ $fails -ne 0 ] || echo "ok: a rank that exits before init leaves nothing in /dev/shm"
  ;;

shm_sigint)
  job -n 3 -- sh -c '
    if [ "$RANK" != 2 ]; then echo $$ > "'"$dir"'/pid.$RANK"; '"$bench_rank"'; fi; exec sleep 60'
  wait_for 2 '^pid\.'
  wait_segments "$dir/pid.0" "$dir/pid.1" || fail "ranks 0 and 1 never mapped a segment"
  kill -INT "$lpid"
  finish "SIGINT while a rank is late" 130
  segments_gone "SIGINT while a rank is late"
  [ $fails -ne 0 ] || echo "ok: SIGINT while a rank is late leaves nothing in /dev/shm"
  ;;

shm_setsid)
  # Ranks 0 and 1 start, each in a session of its own (out of the launcher's reach), a process
  # that waits in init for rank 2, which exits 1 once they made the segment. The launcher stops
  # the job without seeing them; then they are killed at once from outside, as a machine's
  # cleanup would: nothing of the segment may be left.
  job -n 3 --grace 2 -- sh -c '
    if [ "$RANK" != 2 ]; then
      setsid sh -c "echo \$\$ > '"$dir"'/pid.$RANK; '"$bench_rank"'" </dev/null &
    fi
    i=0; while [ ! -e "'"$dir"'/go" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; exit 1'
  wait_for 2 '^pid\.'
  wait_segments "$dir/pid.0" "$dir/pid.1" || fail "ranks 0 and 1 never mapped a segment"
  echo > "$dir/go"
  finish "a rank exits while setsid processes wait in init" 1
  kill -KILL $(cat "$dir/pid.0" "$dir/pid.1")
  i=0
  while kill -0 $(cat "$dir/pid.0" "$dir/pid.1") 2>/dev/null && [ $i -lt 100 ]; do
    sleep 0.1; i=$((i + 1))
  done
  segments_gone "setsid processes waiting in init, killed"
  [ $fails -ne 0 ] || echo "ok: processes out of the launcher's groups, killed in init, leave nothing"
  ;;

lines)
  command -v python3 >/dev/null || { echo "SKIP: python3 is needed"; exit 77; }
  ow="python3 $(dirname "$0")/one_write.py"
  $ow 3 1 'mgcomm launch: rank 0 \(pid [0-9]+\) exited with status 3; stopping the other 1 rank' \
    -- "$MGCOMM" launch -n 2 -- sh -c '[ "$RANK" = 0 ] && exit 3; exec sleep 60' >"$dir/out" ||
    { fail "the launcher's message about a failed rank:"; cat "$dir/out"; }
  if [ -n "${2:-}" ]; then
    MGCOMM_NOT_A_PARAM=1 $ow 0 2 '[^ ]+ mgcomm WARN .*unknown variable MGCOMM_NOT_A_PARAM' \
      -- "$MGCOMM" launch -n 2 -- "$2" logline >"$dir/out" ||
      { fail "log lines of ranks with a buffered stderr:"; cat "$dir/out"; }
  fi
  [ $fails -ne 0 ] || echo "ok: the launcher's messages and mgcomm's log lines are one write each"
  ;;

*)
  echo "usage: boot_launch_stop.sh orphans|forward|race|noexec|shm_early|shm_sigint|shm_setsid|lines"
  exit 2
  ;;
esac

if [ $fails -ne 0 ]; then
  echo "boot_launch_stop $1: $fails failure(s)"
  exit 1
fi
echo "boot_launch_stop $1: ok"
