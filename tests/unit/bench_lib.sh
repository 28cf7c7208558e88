# bench_lib.sh -- what the end-to-end tests of `mgcomm bench` share (tests/unit/bench_cli.sh on
# the host backend, tests/gpu/bench_gpu.sh on GPUs). Sourced; sets here, root and tmp (removed
# on exit) and unsets the variables that would make the test process a rank of a job.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
unit=$root/tests/unit
: "${MGCOMM:?MGCOMM must name the mgcomm binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*"
  exit 1
}

# expect_bad WHAT ARGS...: exit code 2, exactly one line on stderr containing WHAT, no stdout.
expect_bad() {
  local what=$1
  shift
  "$MGCOMM" bench "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" = 2 ] || fail "mgcomm bench $*: exit $rc, want 2; stderr: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "mgcomm bench $*: stderr is not one line: $(cat "$tmp/err")"
  grep -q -- "$what" "$tmp/err" || fail "mgcomm bench $*: stderr lacks '$what': $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "mgcomm bench $*: printed on stdout: $(head -3 "$tmp/out")"
}

# check_lines OUT: every table line has nccl-tests' 13 columns (9 without in-place ones: numbers,
# then type, redop, root) and #wrong 0.
check_lines() {
  awk '/^ *[0-9]/ {
         if (NF != 13 && NF != 9) { print "columns " NF ": " $0; bad = 1 }
         for (i = 6; i <= NF; i++) if ($i !~ /^[0-9.e+-]+$/) { print "field " i ": " $0; bad = 1 }
         if ($9 != 0 || (NF == 13 && $13 != 0)) { print "#wrong: " $0; bad = 1 }
       } END { exit bad }' "$1"
}

# The variables that make a process one rank of a job: none, unless a case sets them.
unset MGCOMM_RANK MGCOMM_WORLD_SIZE MGCOMM_LOCAL_RANK MGCOMM_STORE MGCOMM_JOB_TOKEN RANK WORLD_SIZE \
  LOCAL_RANK OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_NTASKS

need_python() {
  command -v python3 >/dev/null || {
    echo "SKIP: python3 is needed to read the JSON"
    exit 77
  }
}

# nccl_here: whether the NCCL backend can run on this machine, asked of bench itself without
# running anything (the root is checked once the backend has been chosen).
nccl_here() {
  ! "$MGCOMM" bench --backend nccl -r 100000 2>&1 | grep -q "cannot run here"
}
