# The store's codec under a fuzzer (tests/fuzz/store_fuzz.c, over src/boot/proto.c).
#
# store_fuzz_replay is always built: the target with a main() that runs its seeds and 2,000,000
# deterministic mutations of them, so every build exercises the decoder on hostile input.
#
# With -DMGCOMM_FUZZ=ON (clang only) store_fuzz links libFuzzer with ASan and UBSan, and the CTest
# fuzz_store writes the seed corpus and fuzzes for MG_FUZZ_SECONDS:
#   CC=clang cmake -S . -B build-fuzz -DMGCOMM_FUZZ=ON -DMG_FUZZ_SECONDS=30
#   cmake --build build-fuzz -j2 && (cd build-fuzz && ctest -L fuzz --output-on-failure)
# or by hand, for a bounded time:
#   build-fuzz/tests/fuzz/store_fuzz -max_total_time=30 build-fuzz/tests/fuzz/corpus-store
# A crash leaves crash-<sha1> in build-fuzz/tests/fuzz/; replay it with store_fuzz <file>.

set(MG_STORE_FUZZ_SRC ${CMAKE_CURRENT_SOURCE_DIR}/store_fuzz.c ${PROJECT_SOURCE_DIR}/src/boot/proto.c)

add_executable(store_fuzz_replay ${MG_STORE_FUZZ_SRC})
target_include_directories(store_fuzz_replay PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src)
target_compile_options(store_fuzz_replay PRIVATE ${MG_WARNINGS})
add_test(NAME store_fuzz_replay COMMAND store_fuzz_replay)
set_tests_properties(store_fuzz_replay PROPERTIES TIMEOUT 120 LABELS "unit;fuzz")

if(MGCOMM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MGCOMM_FUZZ=ON needs clang (libFuzzer): CC=clang")
  endif()
  set(MG_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzz target runs under ctest -L fuzz")
  add_executable(store_fuzz ${MG_STORE_FUZZ_SRC})
  target_include_directories(store_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/include
    ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(store_fuzz PRIVATE MG_FUZZ_LIBFUZZER)
  target_compile_options(store_fuzz PRIVATE ${MG_WARNINGS} -g -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined)
  target_link_options(store_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  set(MG_STORE_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/corpus-store)
  add_test(NAME fuzz_store COMMAND sh -c
    "mkdir -p '${MG_STORE_CORPUS}' && '$<TARGET_FILE:store_fuzz_replay>' --write-seeds '${MG_STORE_CORPUS}' && '$<TARGET_FILE:store_fuzz>' -max_total_time=${MG_FUZZ_SECONDS} -timeout=10 -print_final_stats=1 -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/ '${MG_STORE_CORPUS}'")
  set_tests_properties(fuzz_store PROPERTIES TIMEOUT 600 LABELS fuzz)
endif()
