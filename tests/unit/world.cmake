# Requests, host streams, the world, the flight recorder (docs/world.md).
set(MG_REQ_SRC ${CMAKE_CURRENT_SOURCE_DIR}/request_stream.c)
foreach(t basics sticky callbacks misuse concurrent)
  mg_test(NAME request_${t} EXE request_stream SOURCES ${MG_REQ_SRC} ARGS ${t} LABELS host world)
endforeach()
foreach(s hostfn poll sync)
  mg_test(NAME request_strategy_${s} EXE request_stream ARGS strategy ${s} LABELS host world)
endforeach()
