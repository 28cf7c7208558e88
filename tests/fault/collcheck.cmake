# The collective check (MGCOMM_CHECK_COLLECTIVES): on the host backend with threads and with
# processes, and on the simulated NCCL (tests/sim/) with the check on, and off (a short timeout).
mg_test(NAME collcheck_host_threads EXE collcheck SOURCES ${CMAKE_CURRENT_LIST_DIR}/collcheck.c
        ARGS host threads LABELS host fault ENV MGCOMM_CHECK_COLLECTIVES=1)
mg_test(NAME collcheck_host_procs EXE collcheck ARGS host procs LABELS host fault
        ENV MGCOMM_CHECK_COLLECTIVES=1)
target_include_directories(collcheck PRIVATE ${PROJECT_SOURCE_DIR}/tests/sim)
if(MGCOMM_TESTING)
  set(_mg_env "MGCOMM_CUDA_LIBRARY=$<TARGET_FILE:mgsim_cuda>"
      "MGCOMM_NCCL_LIBRARY=$<TARGET_FILE:mgsim_nccl>" "MGCOMM_BACKEND=nccl" "MGSIM_DEVICES=2")
  mg_test(NAME collcheck_sim_on EXE collcheck ARGS sim on LABELS fault sim TIMEOUT 60
          ENV ${_mg_env} MGCOMM_CHECK_COLLECTIVES=1)
  mg_test(NAME collcheck_sim_off EXE collcheck ARGS sim off LABELS fault sim TIMEOUT 60
          ENV ${_mg_env} MGCOMM_CHECK_COLLECTIVES=0)
  add_dependencies(collcheck mgsim_cuda mgsim_nccl)
endif()
