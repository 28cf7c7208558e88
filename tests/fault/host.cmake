# Host backend faults: every wait is bounded, abort always returns.
foreach(t init_timeout coll_timeout killed_rank abort_blocked revoke_blocked)
  mg_test(NAME host_fault_${t} EXE test_host_faults
          SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_host_faults.c ARGS ${t} LABELS host fault)
endforeach()
