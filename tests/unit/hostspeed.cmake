# The per-call path's flight recorder: ends recorded without the ring's lock, as every dump sees
# them (tests/unit/trace_ends.c).
mg_test(NAME trace_ends SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/trace_ends.c LABELS host TIMEOUT 120)
