# Host backend reductions (src/backend/host/host_reduce.c): conversions, every dtype and op
# against an independent reference, and the documented edge cases.
mg_test(NAME reduce_convert SOURCES test_reduce_convert.c test_reduce_ref.c)
mg_test(NAME reduce_ops SOURCES test_reduce_ops.c test_reduce_ref.c)
mg_test(NAME reduce_cases SOURCES test_reduce_cases.c)
# mg_test adds ${CMAKE_CURRENT_SOURCE_DIR}/common, which is the caller's directory (tests/unit)
# inside a function, so test.h is not found from there; name tests/common until that is fixed.
foreach(t reduce_convert reduce_ops reduce_cases)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
endforeach()
