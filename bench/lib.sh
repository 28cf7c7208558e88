# lib.sh -- pieces shared by the comparison scripts (compare.sh, host_vs_mpi.sh); source it.
#
#   mg_need_openmpi WHO       Open MPI's mpicc and mpirun, Debian's openmpi-bin libopenmpi-dev
#                             installed when absent (as root); WHO names the script in messages
#   mg_build_mpi_peer DIR     builds bench/mpi_peer.c into DIR/mpi_peer
#   mg_mpirun N PROGRAM...    mpirun -np N PROGRAM..., as root too, with more ranks than cores,
#                             with $MPIRUN_OPTS added (e.g. "--bind-to none")
#   mg_alternate R DIR NAME...
#                             the repetition: R rounds, each running every program once, so that
#                             all programs see the same conditions of the machine. Program NAME
#                             is the caller's function run_NAME OUT.json; its run of round r
#                             writes DIR/NAME-r.json. Each round starts one program further along
#                             the list, so that none always runs first, or always after the same
#                             one. Stops at the first failure (its run_NAME says why).
#
# bench/medians.py reads what mg_alternate kept: per row, the median of the R runs.

mg_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

mg_need_openmpi() {
  command -v mpicc >/dev/null && command -v mpirun >/dev/null && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "$1: needs Open MPI (Debian: apt-get install openmpi-bin libopenmpi-dev)" >&2
    return 1
  fi
  echo "$1: installing openmpi-bin libopenmpi-dev" >&2
  apt-get update -qq >&2 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >&2
}

mg_build_mpi_peer() {
  mpicc -O2 -std=c11 -Wall -Wextra -Werror -o "$1/mpi_peer" "$mg_lib_dir/mpi_peer.c"
}

mg_mpirun() {
  local n=$1
  shift
  local opts=(-np "$n" --oversubscribe)
  [ "$(id -u)" != 0 ] || opts+=(--allow-run-as-root)
  # MPIRUN_OPTS is split on spaces on purpose: several options in one variable.
  # shellcheck disable=SC2086
  mpirun "${opts[@]}" ${MPIRUN_OPTS:-} "$@"
}

mg_alternate() {
  local repeats=$1 dir=$2
  shift 2
  local names=("$@") k=$# r i name
  for r in $(seq 1 "$repeats"); do
    for i in $(seq 0 $((k - 1))); do
      name=${names[$(((r - 1 + i) % k))]}
      "run_$name" "$dir/$name-$r.json" || {
        echo "${0##*/}: $name failed in round $r of $repeats" >&2
        return 1
      }
    done
  done
}
