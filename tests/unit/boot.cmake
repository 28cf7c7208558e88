# Bootstrap (src/boot/): the store's codec, the store itself, its load test, the environment
# conventions of mg_comm_init_env.
#
# mg_test adds ${CMAKE_CURRENT_SOURCE_DIR}/common, which inside a function is the calling
# directory (tests/unit), not tests/; boot_test adds tests/common itself.
function(boot_test name)
  mg_test(NAME ${name} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${name}.c ${ARGN})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
endfunction()

boot_test(boot_proto)
boot_test(boot_store TIMEOUT 60)
boot_test(boot_store_load TIMEOUT 120)
boot_test(boot_env)
