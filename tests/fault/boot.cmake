# Bootstrap faults: hostile and broken peers of the store, killed servers and clients, expired
# deadlines, the launcher's exit codes and signal forwarding, and whole jobs started by
# `mgcomm launch` and by mpirun.
#
# mg_test adds ${CMAKE_CURRENT_SOURCE_DIR}/common, which inside a function is the calling
# directory (tests/fault), not tests/; boot_fault_test adds tests/common itself.
function(boot_fault_test name)
  mg_test(NAME ${name} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${name}.c LABELS fault ${ARGN})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
endfunction()

boot_fault_test(boot_badinput TIMEOUT 90 ENV MGCOMM_STORE_FRAME_TIMEOUT=1)
boot_fault_test(boot_kill TIMEOUT 90)
