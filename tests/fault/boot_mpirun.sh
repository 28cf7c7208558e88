#!/bin/sh
# boot_mpirun.sh BOOT_JOB [MODE] -- a job of 4 processes started by Open MPI's mpirun, made with
# mg_comm_init_env (rank, size and local rank from OMPI_COMM_WORLD_*, the job token from
# PMIX_NAMESPACE, the store address from MGCOMM_STORE), running MODE of boot_job (default: all).
# Skips (77) when mpirun is not Open MPI's: apt-get install openmpi-bin.
set -u
job=$1
mode=${2:-all}
. "$(cd "$(dirname "$0")/../common" && pwd)/need_openmpi.sh"
# Only Open MPI's variables and the store address: nothing of mgcomm launch's.
unset MGCOMM_RANK MGCOMM_WORLD_SIZE MGCOMM_LOCAL_RANK MGCOMM_JOB_TOKEN RANK WORLD_SIZE LOCAL_RANK
unset MASTER_ADDR MASTER_PORT
port=$("$job" --free-port) || { echo "FAIL: no free port"; exit 1; }
export MGCOMM_STORE="127.0.0.1:$port"
# Running as root (CI containers) needs both variables; two cores need --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun --oversubscribe -np 4 --tag-output -x MGCOMM_STORE "$job" "$mode"
