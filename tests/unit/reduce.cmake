# Host backend reductions (src/backend/host/host_reduce.c): conversions, every dtype and op
# against an independent reference, and the documented edge cases.
mg_test(NAME reduce_convert SOURCES test_reduce_convert.c test_reduce_ref.c)
mg_test(NAME reduce_ops SOURCES test_reduce_ops.c test_reduce_ref.c)
mg_test(NAME reduce_cases SOURCES test_reduce_cases.c)
