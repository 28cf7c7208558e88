# Core services: status table, dtype table, parameters.
mg_test(NAME handle_registry SOURCES ${CMAKE_CURRENT_LIST_DIR}/handle_registry.c)
mg_test(NAME comm_destroy_race SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_destroy_race.c)
