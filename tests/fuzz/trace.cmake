# `mgcomm trace`'s reader and report under a fuzzer (tests/fuzz/trace_fuzz.c, over
# tools/mgcomm/trace_parse.c and tools/mgcomm/trace.c).
#
# trace_fuzz_replay is always built: the target with a main() that runs the seed corpus committed
# in tests/fuzz/trace-seeds/ (real dumps, and the inconsistent, malformed and hostile inputs that
# once hung or crashed the tool) and 100,000 deterministic mutations of it, so every build
# exercises the reader on hostile input.
#
# With -DMGCOMM_FUZZ=ON (clang only) trace_fuzz links libFuzzer with ASan and UBSan, and the CTest
# fuzz_trace copies the seeds and fuzzes for MG_FUZZ_SECONDS:
#   CC=clang cmake -S . -B build-fuzz -DMGCOMM_FUZZ=ON -DMG_FUZZ_SECONDS=30
#   cmake --build build-fuzz -j2 && (cd build-fuzz && ctest -L fuzz --output-on-failure)
# A crash leaves crash-<sha1> in build-fuzz/tests/fuzz/; replay it with trace_fuzz <file>.

set(MG_TRACE_FUZZ_SRC ${CMAKE_CURRENT_SOURCE_DIR}/trace_fuzz.c
    ${PROJECT_SOURCE_DIR}/tools/mgcomm/trace_parse.c ${PROJECT_SOURCE_DIR}/tools/mgcomm/trace.c)
set(MG_TRACE_SEEDS ${CMAKE_CURRENT_SOURCE_DIR}/trace-seeds)

add_executable(trace_fuzz_replay ${MG_TRACE_FUZZ_SRC})
target_include_directories(trace_fuzz_replay PRIVATE ${PROJECT_SOURCE_DIR}/tools/mgcomm)
target_compile_definitions(trace_fuzz_replay PRIVATE _GNU_SOURCE)
target_compile_options(trace_fuzz_replay PRIVATE ${MG_WARNINGS})
add_test(NAME trace_fuzz_replay COMMAND trace_fuzz_replay ${MG_TRACE_SEEDS})
set_tests_properties(trace_fuzz_replay PROPERTIES TIMEOUT 120 LABELS "unit;fuzz")

if(MGCOMM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MGCOMM_FUZZ=ON needs clang (libFuzzer): CC=clang")
  endif()
  set(MG_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzz target runs under ctest -L fuzz")
  add_executable(trace_fuzz ${MG_TRACE_FUZZ_SRC})
  target_include_directories(trace_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/tools/mgcomm)
  target_compile_definitions(trace_fuzz PRIVATE _GNU_SOURCE MG_FUZZ_LIBFUZZER)
  target_compile_options(trace_fuzz PRIVATE ${MG_WARNINGS} -g -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined)
  target_link_options(trace_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  set(MG_TRACE_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/corpus-trace)
  add_test(NAME fuzz_trace COMMAND sh -c
    "mkdir -p '${MG_TRACE_CORPUS}' && cp '${MG_TRACE_SEEDS}'/* '${MG_TRACE_CORPUS}' && '$<TARGET_FILE:trace_fuzz>' -max_total_time=${MG_FUZZ_SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -dict='${CMAKE_CURRENT_SOURCE_DIR}/trace.dict' -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/ '${MG_TRACE_CORPUS}'")
  set_tests_properties(fuzz_trace PROPERTIES TIMEOUT 600 LABELS fuzz)
endif()
