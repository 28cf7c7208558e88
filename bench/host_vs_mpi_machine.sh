#!/usr/bin/env bash
# host_vs_mpi_machine.sh -- issue 22's side-by-side run on a machine with more CPUs than the
# 2-CPU development VM (a GPU machine's 16 host CPUs, through the device tool), in one call: 4
# ranks with a CPU each, which the VM can only run oversubscribed, and 2 ranks on another CPU.
#
#   OUT=dir bench/host_vs_mpi_machine.sh [SET...]
#
# Open MPI must be there (the H100 machine's Ubuntu 24.04 has its 4.1.6; the machines have no
# network to install it). mgcomm is built here (RelWithDebInfo, without the test seam, as on the
# VM) into $BUILD (default build-host).
#
# Each SET is ranks:mode:sizes, mode p (processes) or t (threads), sizes small (8 B-8 KiB, -n
# 3000), mid (32 KiB-8 MiB, -n 20) or large (32 KiB-128 MiB, -n 10); default: 2 and 4 ranks,
# both modes, small and large. RANGE="-b 64K -e 1M -f 2 -n 20 -w 3 -R 3" (host_vs_mpi.sh's size,
# count and turn options) replaces every set's range. Every collective (or those of COLLS, host_vs_mpi.sh's -c list),
# in place and out of place, bench/host_vs_mpi.sh -I 1 (bench/mpi_paired.c): one report per set
# in $OUT.
#
# BASE_SRC=dir (a source tree of an earlier commit, e.g. `git archive`'s, unpacked in a
# git-ignored folder) builds that mgcomm too and runs each set ROUNDS times (default 3) with each
# build in turn, the first alternating: reports $OUT/<set>-{base,new}-<round>.md (bench/mpi_paired.c
# is built against this tree's mgcomm.h for both; their reports name this tree's commit).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:?OUT: the folder for the reports}
build=${BUILD:-$root/build-host}
sets=("$@")
[ ${#sets[@]} -gt 0 ] ||
  sets=(2:p:small 2:t:small 4:p:small 4:t:small 2:p:large 2:t:large 4:p:large 4:t:large)
mkdir -p "$out"

command -v mpirun >/dev/null || { echo "host_vs_mpi_machine.sh: no Open MPI here" >&2; exit 1; }
os=$(sed -n 's/^PRETTY_NAME="\(.*\)"$/\1/p' /etc/os-release)
{ echo "host: $(hostname), $(nproc) CPUs, $os, $(ldd --version | head -n 1)"
  mpirun --version 2>&1 | head -n 1; } | tee "$out/machine.txt"
build_mgcomm() { # SRC BUILD
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMGCOMM_TESTING=OFF >/dev/null &&
    cmake --build "$2" -j "$(nproc)" --target mgcomm_cli >/dev/null
}
build_mgcomm "$root" "$build" || exit 1
runs=(new:"$build")
if [ -n "${BASE_SRC:-}" ]; then
  build_mgcomm "$BASE_SRC" "$build-base" || exit 1
  runs=()
  for ((i = 1; i <= ${ROUNDS:-3}; i++)); do
    if ((i % 2)); then runs+=("base:$build-base:$i" "new:$build:$i"); else
      runs+=("new:$build:$i" "base:$build-base:$i"); fi
  done
fi

rc=0
for set in "${sets[@]}"; do
  IFS=: read -r ranks mode sizes <<<"$set"
  case $sizes in
    small) range=(-b 8 -e 8K -f 4 -n 3000 -w 300 -R 5) ;;
    mid) range=(-b 32K -e 8M -f 4 -n 20 -w 3 -R 3) ;;
    large) range=(-b 32K -e 128M -f 4 -n 10 -w 3 -R 3) ;;
    *) echo "host_vs_mpi_machine.sh: $set: sizes are small, mid or large" >&2; exit 1 ;;
  esac
  [ -n "${RANGE:-}" ] && read -r -a range <<<"$RANGE"
  case $mode in
    p) threads=0 ;;
    t) threads=1 ;;
    *) echo "host_vs_mpi_machine.sh: $set: the mode is p or t" >&2; exit 1 ;;
  esac
  for run in "${runs[@]}"; do
    IFS=: read -r name dir round <<<"$run"
    report=$out/$ranks-$mode-$sizes.md
    [ -n "${BASE_SRC:-}" ] && report=$out/$ranks-$mode-$sizes-$name-$round.md
    MGCOMM=$dir/mgcomm timeout 300 "$root/bench/host_vs_mpi.sh" -I 1 -t "$threads" -N "$ranks" \
      -c "${COLLS:-all}" "${range[@]}" --inplace both -o "$report" || rc=1
  done
done
exit $rc
