# The flight recorder's ends as every dump sees them while operations run (tests/unit/trace_ends.c).
mg_test(NAME trace_ends SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/trace_ends.c LABELS host TIMEOUT 120)
# Two thread ranks on one CPU: a waiting rank that finds its peer on its CPU yields at once
# (tests/unit/host_shared_cpu.c).
mg_test(NAME host_shared_cpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_shared_cpu.c LABELS host
        TIMEOUT 120)
