# Core services: status table, dtype table, parameters, the handle registry, the layers.
mg_test(NAME handle_registry SOURCES ${CMAKE_CURRENT_LIST_DIR}/handle_registry.c)
mg_test(NAME comm_destroy_race SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_destroy_race.c)
mg_cli_test(NAME layers COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/layers.sh ${PROJECT_SOURCE_DIR})
