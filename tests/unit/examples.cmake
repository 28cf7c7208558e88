# examples/: installed with `cmake --install`, then built and run against that prefix with
# find_package(mgcomm) and with pkg-config, as a user would (examples/install_test.sh).
# Not in sanitizer builds: an installed sanitized library cannot serve a plain program.
if(NOT MGCOMM_ASAN AND NOT MGCOMM_TSAN)
  add_test(NAME example_install
           COMMAND sh ${PROJECT_SOURCE_DIR}/examples/install_test.sh ${PROJECT_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR} ${CMAKE_COMMAND} ${CMAKE_C_COMPILER})
  set_tests_properties(example_install PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS install)
endif()
