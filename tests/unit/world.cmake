# Requests, host streams, the world, the flight recorder (docs/world.md).
set(MG_REQ_SRC ${CMAKE_CURRENT_SOURCE_DIR}/request_stream.c)
foreach(t basics sticky callbacks misuse concurrent elapsed)
  mg_test(NAME request_${t} EXE request_stream SOURCES ${MG_REQ_SRC} ARGS ${t} LABELS host world)
endforeach()
foreach(s hostfn poll sync)
  mg_test(NAME request_strategy_${s} EXE request_stream ARGS strategy ${s} LABELS host world)
endforeach()
set(MG_WORLD_SRC ${CMAKE_CURRENT_SOURCE_DIR}/world.c)
foreach(t ops groups callbacks misuse abort stale cause)
  mg_test(NAME world_${t} EXE world SOURCES ${MG_WORLD_SRC} ARGS ${t} LABELS host world)
endforeach()
# A heavy load: 8 submitting threads x 5,000 world operations (40,000; 10,000 each took 80 s of
# make test and 125 s under ASan on 2 CPUs, the longest test of CI).
mg_test(NAME world_exactly_once EXE world ARGS exactly_once 8 5000 TIMEOUT 600 LABELS host world)
# `mgcomm trace` on hand-made dumps (the fault tests run it on real ones).
mg_cli_test(NAME trace_cli COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/trace_cli.sh)
# bench/world_cost.c: what the world and the watchdog cost (bench/results/). Built with the tests
# (it measures internal functions too); the test only proves that it runs and every call works.
mg_test(NAME world_cost_smoke EXE world_cost SOURCES ${PROJECT_SOURCE_DIR}/bench/world_cost.c
        ARGS --iters 200 --runs 1 TIMEOUT 120 LABELS host world bench)
