# Host backend faults: every wait is bounded, abort always returns.
foreach(t init_timeout coll_timeout killed_rank exited_rank abort_blocked revoke_blocked)
  mg_test(NAME host_fault_${t} EXE test_host_faults
          SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_host_faults.c ARGS ${t} LABELS host fault)
endforeach()

# The ranks of an operation end it the same way, and the arguments that must agree are compared
# (tests/fault/host_agree.c). The thresholds are shrunk so that small buffers take every path.
foreach(t late_threads late_procs stopped_inside abort p2p_threads p2p_procs p2p_abort
          mismatch_threads mismatch_procs check_one_rank premul_scalars)
  mg_test(NAME host_agree_${t} EXE host_agree
          SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_agree.c ARGS ${t} LABELS host fault TIMEOUT 60
          ENV MGCOMM_HOST_SLOT_BYTES=4096 MGCOMM_HOST_SMALL_BYTES=1024
              MGCOMM_HOST_DIRECT_BYTES=65536 MGCOMM_HOST_P2P_BYTES=4096
              MGCOMM_HOST_READV_MAX_BYTES=0)
endforeach()

# A rank whose operation returned may leave at once (destroy, finalize then destroy, exit, or
# destroy right after init); no peer fails because of it, nor reports it as an abort
# (tests/fault/host_depart.c): processes 128 ranks x 8 rounds, threads 64 x 3, pinned to one
# core. The thresholds are shrunk so that 1024 floats take the two-phase and the direct paths.
foreach(t procs_128_8_destroy procs_128_8_finalize procs_128_8_exit procs_128_8_init
          threads_64_3_destroy threads_64_3_init)
  string(REPLACE "_" ";" mg_depart_args ${t})
  list(GET mg_depart_args 0 mg_depart_how)
  list(GET mg_depart_args 3 mg_depart_leave)
  mg_test(NAME host_depart_${mg_depart_how}_${mg_depart_leave} EXE host_depart
          SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_depart.c ARGS ${mg_depart_args}
          LABELS host fault TIMEOUT 120
          ENV MGCOMM_HOST_SMALL_BYTES=1024 MGCOMM_HOST_DIRECT_BYTES=4096
              MGCOMM_HOST_READV_MAX_BYTES=0)
endforeach()

# A failure on the direct path is named by the rank that failed first (tests/fault/host_blame.c).
mg_test(NAME host_blame_direct EXE host_blame SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_blame.c
        LABELS host fault TIMEOUT 60 ENV MGCOMM_HOST_DIRECT_BYTES=4096
        MGCOMM_HOST_READV_MAX_BYTES=0)

# Nothing of a segment outlives a job killed at any point of init, with no launcher to clean up
# (tests/fault/host_leftover.c): 40 rounds, each killed after 0-3 or 0-30 ms.
mg_test(NAME host_leftover_init_killed EXE host_leftover
        SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_leftover.c ARGS 40 LABELS host fault TIMEOUT 60)

# A communicator too large to make is refused at once, naming the limit or the parameters that
# size its segment (tests/fault/host_limits.c; 1 GiB staging slots make the sizes reachable).
foreach(t ranks huge rlimit_rank rlimit_all rlimit_split)
  mg_test(NAME host_limits_${t} EXE host_limits SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_limits.c
          ARGS ${t} LABELS host fault TIMEOUT 60 ENV MGCOMM_HOST_SLOT_BYTES=1073741824)
endforeach()

# A broadcast that its root staged (in place, 2 processes, 32 MiB, where process_vm_readv is
# fast) and its reader followed fails like any other when either dies in it
# (tests/fault/host_root_stages.c).
foreach(t root reader)
  mg_test(NAME host_root_stages_${t}_killed EXE host_root_stages
          SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_root_stages.c ARGS ${t} LABELS host fault
          TIMEOUT 60 ENV MGCOMM_HOST_READV_FAST=1)
endforeach()
# ... and so does a reduce whose root reads the other's input (256 KiB), the dead rank the root,
# or the other while the root waits to read it.
foreach(t root reader)
  mg_test(NAME host_root_reads_${t}_killed EXE host_root_stages ARGS ${t} reduce
          LABELS host fault TIMEOUT 60
          ENV MGCOMM_HOST_READV_FAST=1 MGCOMM_FAULT=host.direct_read:1:500)
endforeach()
