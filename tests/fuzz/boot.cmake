# The store's codec under a fuzzer (tests/fuzz/store_fuzz.c, over src/boot/proto.c).
#
# store_fuzz_replay is always built: the target with a main() that runs its seeds and 2,000,000
# deterministic mutations of them, so every build exercises the decoder on hostile input.
#
# With -DMGCOMM_FUZZ=ON (clang only) store_fuzz links libFuzzer with ASan and UBSan, and the CTest
# `store_fuzz` writes the seed corpus and fuzzes for MGCOMM_FUZZ_SECONDS (default 30):
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DMGCOMM_FUZZ=ON
#   cmake --build build-fuzz -j2 --target store_fuzz store_fuzz_replay
#   cd build-fuzz && ctest -L fuzz --output-on-failure
# or by hand, for a bounded time:
#   build-fuzz/tests/fuzz/store_fuzz -max_total_time=30 build-fuzz/tests/fuzz/corpus-store
# A crash leaves crash-<sha1> in the working directory; replay it with store_fuzz <file>.

# clang has no -Wno-format-truncation (a GCC flag in MG_WARNINGS); these targets drop it.
set(MG_STORE_FUZZ_WARNINGS ${MG_WARNINGS})
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  list(REMOVE_ITEM MG_STORE_FUZZ_WARNINGS -Wno-format-truncation)
endif()

set(MG_STORE_FUZZ_SRC ${CMAKE_CURRENT_LIST_DIR}/store_fuzz.c ${PROJECT_SOURCE_DIR}/src/boot/proto.c)

add_executable(store_fuzz_replay ${MG_STORE_FUZZ_SRC})
target_include_directories(store_fuzz_replay PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src)
target_compile_options(store_fuzz_replay PRIVATE ${MG_STORE_FUZZ_WARNINGS})
add_test(NAME store_fuzz_replay COMMAND store_fuzz_replay)
set_tests_properties(store_fuzz_replay PROPERTIES TIMEOUT 120 LABELS "unit;fuzz")

if(MGCOMM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MGCOMM_FUZZ=ON needs clang (libFuzzer): -DCMAKE_C_COMPILER=clang")
  endif()
  set(MGCOMM_FUZZ_SECONDS 30 CACHE STRING "Seconds each fuzz target runs under CTest")
  add_executable(store_fuzz ${MG_STORE_FUZZ_SRC})
  target_include_directories(store_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/include
    ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(store_fuzz PRIVATE MG_FUZZ_LIBFUZZER)
  target_compile_options(store_fuzz PRIVATE ${MG_STORE_FUZZ_WARNINGS} -g -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined)
  target_link_options(store_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  set(MG_STORE_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/corpus-store)
  add_test(NAME store_fuzz COMMAND sh -c
    "mkdir -p '${MG_STORE_CORPUS}' && '$<TARGET_FILE:store_fuzz_replay>' --write-seeds '${MG_STORE_CORPUS}' && '$<TARGET_FILE:store_fuzz>' -max_total_time=${MGCOMM_FUZZ_SECONDS} -print_final_stats=1 '${MG_STORE_CORPUS}'")
  set_tests_properties(store_fuzz PROPERTIES TIMEOUT 600 LABELS fuzz)
endif()
