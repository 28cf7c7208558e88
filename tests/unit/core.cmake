# Core services: status table, dtype table, parameters, the handle registry, the layers.
mg_test(NAME handle_registry SOURCES ${CMAKE_CURRENT_LIST_DIR}/handle_registry.c)
mg_test(NAME comm_destroy_race SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_destroy_race.c)
mg_cli_test(NAME layers COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/layers.sh ${PROJECT_SOURCE_DIR})
# The flight recorder's ends as every dump sees them while operations run (tests/unit/trace_ends.c).
mg_test(NAME trace_ends SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/trace_ends.c LABELS host TIMEOUT 120)
# A deadline taken on the coarse clock is never earlier than one taken on the precise clock
# (tests/unit/clock_coarse.c).
mg_test(NAME clock_coarse SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/clock_coarse.c)
# Descriptor boxes between two processes (tests/unit/fdpass.c).
mg_test(NAME fdpass SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fdpass.c TIMEOUT 60)
