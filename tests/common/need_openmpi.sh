# need_openmpi.sh -- sourced by the test scripts that start a job with mpirun (POSIX sh): exits 77
# (skipped) with the reason unless mpirun is on PATH and is Open MPI's
# (Debian: apt-get install openmpi-bin; .ci/run installs it).
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: no mpirun on PATH (Debian: apt-get install openmpi-bin)"
  exit 77
fi
if ! mpirun --version 2>&1 | grep -q "Open MPI"; then
  echo "SKIP: mpirun is not Open MPI's: $(mpirun --version 2>&1 | head -n 1)"
  exit 77
fi
