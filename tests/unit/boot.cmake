# Bootstrap (src/boot/): the store's codec, the store itself, its load test (16 clients x 1,000
# operations), the environment conventions of mg_comm_init_env, progress published through the
# store.
mg_test(NAME boot_proto SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_proto.c)
mg_test(NAME boot_store SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_store.c TIMEOUT 60)
mg_test(NAME boot_store_load SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_store_load.c TIMEOUT 120)
mg_test(NAME boot_env SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_env.c)
mg_test(NAME boot_progress SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_progress.c TIMEOUT 60)
