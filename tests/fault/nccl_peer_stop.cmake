# A rank of the NCCL backend learns at once that a peer rank of its process was aborted or
# revoked (nccl_progress.c), or that a peer of another process published its stop through the
# job's store (boot/progress.c), on the simulated CUDA driver and NCCL (tests/sim/).
if(MGCOMM_TESTING)
  set(_mg_env "MGCOMM_CUDA_LIBRARY=$<TARGET_FILE:mgsim_cuda>"
      "MGCOMM_NCCL_LIBRARY=$<TARGET_FILE:mgsim_nccl>" "MGCOMM_BACKEND=nccl" "MGSIM_DEVICES=2")
  foreach(m abort revoke destroyed sync finalized late)
    mg_test(NAME nccl_peer_stop_${m} EXE nccl_peer_stop
            SOURCES ${CMAKE_CURRENT_LIST_DIR}/nccl_peer_stop.c ARGS ${m} LABELS fault sim
            TIMEOUT 60 ENV ${_mg_env})
  endforeach()
  target_include_directories(nccl_peer_stop PRIVATE ${PROJECT_SOURCE_DIR}/tests/sim)
  add_dependencies(nccl_peer_stop mgsim_cuda mgsim_nccl)
  # The same for a peer of another process, through the job's store (src/boot/progress.c).
  foreach(m abort leave finalized)
    mg_test(NAME nccl_peer_stop_procs_${m} EXE nccl_peer_stop_procs
            SOURCES ${CMAKE_CURRENT_LIST_DIR}/nccl_peer_stop_procs.c ARGS ${m} LABELS fault sim
            TIMEOUT 60 ENV ${_mg_env})
  endforeach()
  add_dependencies(nccl_peer_stop_procs mgsim_cuda mgsim_nccl)
endif()
