# lib.sh -- pieces shared by the comparison scripts (compare.sh, host_vs_mpi.sh) and the GPU
# scripts (gpu_bench.sh, nccl_vs_nccl_tests.sh, host_cost.sh, tests/gpu/); source it.
#
#   mg_begin NAME CODE OUT    a GPU script's start: defines say MSG (to stderr as "NAME: MSG") and
#                             fail MSG (say it, exit CODE), sets t0 (the start, in seconds), makes
#                             OUT, and sets logs to a temporary folder removed at exit
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
#   mg_source_commit ROOT     the commit a report names: $SOURCE_COMMIT when set (a device's copy
#                             of the tree keeps a stale HEAD), else ROOT's short HEAD, with
#                             "-dirty" when tracked files differ from it, else "unknown"
#   mg_build_nccl_tests SRC BUILDDIR NCCL_LIB LOGDIR
#                             builds nccl-tests from the source in SRC (fetched beforehand into a
#                             git-ignored folder, never committed) into BUILDDIR with nvcc, MPI=0,
#                             for this machine's GPU architecture, against the nccl.h that matches
#                             NCCL_LIB (searched in /usr/include, $CUDA_HOME/include, wheels); sets
#                             mg_nccl_hdr and mg_nccl_hdr_code; its log goes to LOGDIR
#
# bench/medians.py reads what mg_alternate kept: per row, the median of the R runs.

mg_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

mg_begin() {
  mg_name=$1 mg_fail_code=$2
  say() { echo "$mg_name: $*" >&2; }
  fail() { say "$*"; exit "$mg_fail_code"; }
  t0=$(date +%s)
  mkdir -p "$3"
  logs=$(mktemp -d)
  trap 'rm -rf "$logs"' EXIT
}

mg_source_commit() {
  if [ -n "${SOURCE_COMMIT:-}" ]; then
    echo "$SOURCE_COMMIT"
    return
  fi
  local head
  head=$(git -C "$1" rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
  git -C "$1" diff --quiet HEAD -- 2>/dev/null || head=$head-dirty
  echo "$head"
}

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

mg_build_nccl_tests() {
  local src=$1 builddir=$2 lib=$3 logs=$4 cuda_home=${CUDA_HOME:-/usr/local/cuda} d cc home
  mg_nccl_hdr="" mg_nccl_hdr_code=""
  for d in /usr/include "$cuda_home/include" /opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/include \
           /usr/local/lib/python3*/dist-packages/nvidia/nccl/include; do
    if [ -f "$d/nccl.h" ] && [ -f "$d/nccl_device.h" ]; then mg_nccl_hdr=$d; break; fi
  done
  if [ -z "$mg_nccl_hdr" ]; then
    echo "no nccl.h with nccl_device.h found (looked in /usr/include, $cuda_home/include, wheels)" >&2
    return 1
  fi
  mg_nccl_hdr_code=$(sed -nE 's/^#define NCCL_VERSION_CODE ([0-9]+).*/\1/p' "$mg_nccl_hdr/nccl.h")
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  home="$logs/nccl-home"
  mkdir -p "$home/lib"
  ln -sfn "$mg_nccl_hdr" "$home/include"
  ln -sf "$lib" "$home/lib/libnccl.so"
  ln -sf "$lib" "$home/lib/libnccl.so.2"
  # make runs in SRC/src: a relative BUILDDIR would land there (and nvlink then missed its own
  # archive on 4 H200s); it is made absolute first.
  mkdir -p "$builddir" && builddir=$(cd "$builddir" && pwd)
  make -C "$src/src" -j "${JOBS:-16}" MPI=0 CUDA_HOME="$cuda_home" NCCL_HOME="$home" BUILDDIR="$builddir" \
    NVCC_GENCODE="-gencode=arch=compute_$cc,code=sm_$cc" >"$logs/build-nccl-tests.log" 2>&1 ||
    { tail -30 "$logs/build-nccl-tests.log" >&2; return 1; }
}
