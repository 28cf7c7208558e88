# libFuzzer target over the argument validation of every operation (MGCOMM_FUZZ=ON, clang);
# `ctest -L fuzz` runs it for a bounded time.
if(MGCOMM_FUZZ)
  add_executable(argcheck_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/argcheck_fuzz.c)
  target_compile_options(argcheck_fuzz PRIVATE -fsanitize=fuzzer,address)
  target_link_options(argcheck_fuzz PRIVATE -fsanitize=fuzzer,address)
  target_link_libraries(argcheck_fuzz PRIVATE mgcomm_static)
  set(MG_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzz target runs under ctest -L fuzz")
  add_test(NAME fuzz_argcheck COMMAND argcheck_fuzz -max_total_time=${MG_FUZZ_SECONDS} -timeout=10
           -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/)
  set_tests_properties(fuzz_argcheck PROPERTIES LABELS fuzz TIMEOUT 600)
endif()
