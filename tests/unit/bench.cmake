# mgcomm bench (tools/mgcomm/bench*.c): its arithmetic without a backend, then the command line
# end to end on the host backend: ranks as threads, as processes (mgcomm launch, mpirun) and
# through the world (bench_cli.sh CASE; the JSON schema in bench_json.py).
mg_test(NAME bench_calc SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_calc_test.c
        ${PROJECT_SOURCE_DIR}/tools/mgcomm/bench_coll.c ${PROJECT_SOURCE_DIR}/tools/mgcomm/bench_check.c)
target_link_libraries(bench_calc PRIVATE m)
foreach(case args auto table factors checks procs mpirun world plot scripts)
  mg_cli_test(NAME bench_${case} COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench_cli.sh ${case})
endforeach()
# bench/mpi_paired.c links libmgcomm.so into a program built without the sanitizers' runtime.
if(MGCOMM_ASAN OR MGCOMM_TSAN)
  set_property(TEST bench_scripts APPEND PROPERTY ENVIRONMENT BENCH_SANITIZED=1)
endif()
# The 30 s promise is for an optimised build; sanitizers and -O0 get four times as long.
if(MGCOMM_ASAN OR MGCOMM_TSAN OR NOT CMAKE_BUILD_TYPE MATCHES "Rel")
  set(MG_BENCH_DEFAULT_LIMIT 120)
else()
  set(MG_BENCH_DEFAULT_LIMIT 30)
endif()
mg_cli_test(NAME bench_default COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench_cli.sh default
            TIMEOUT 180 ENV BENCH_DEFAULT_LIMIT_S=${MG_BENCH_DEFAULT_LIMIT})
set_tests_properties(bench_checks PROPERTIES TIMEOUT 120)
# The default run's 30 s limit is about the command, not about sharing 2 cores with other tests.
set_tests_properties(bench_default PROPERTIES RUN_SERIAL TRUE)
# Need the host transport's fault points "host.corrupt", "host.fail", "host.attach" (test builds).
foreach(case fault procs_fault world_fault)
  mg_cli_test(NAME bench_${case} COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench_cli.sh ${case}
              LABELS cli fault)
endforeach()
# -g warms every size before it times the first, as nccl-tests does: counted on the simulator.
if(TARGET mgsim_nccl)
  mg_cli_test(NAME bench_warm COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench_warm.sh
              $<TARGET_FILE:mgcomm_cli> $<TARGET_FILE_DIR:mgsim_nccl> LABELS cli sim)
  # --algo: one sweep per all_reduce asked for, and their comparison (config->all_reduce_algo).
  mg_cli_test(NAME bench_algo COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench_algo.sh
              $<TARGET_FILE:mgcomm_cli> $<TARGET_FILE_DIR:mgsim_nccl>
              ${CMAKE_CURRENT_LIST_DIR}/bench_json.py LABELS cli sim)
endif()
# The commit the reports name (bench/lib.sh, mg_source_commit): "-dirty" for a changed tree.
mg_cli_test(NAME source_commit COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/source_commit.sh)
