# Failures of requests, host streams and the world (docs/world.md): each one is a status on the
# right request, bounded, named, and recoverable. Each test has its own trace folder.
foreach(t never_submits watchdog watchdog_report mismatch count_mismatch killed_rank world_timeout injected comm_abort)
  mg_test(NAME world_fault_${t} EXE world_faults
          SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/world_faults.c ARGS ${t} LABELS host fault world
          ENV MGCOMM_TRACE_DIR=${CMAKE_CURRENT_BINARY_DIR}/trace-${t} MGCOMM=$<TARGET_FILE:mgcomm_cli>)
endforeach()
