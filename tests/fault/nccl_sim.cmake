# The NCCL backend's bounds (issue 16) on the simulated CUDA driver and NCCL (tests/sim/): the
# real backend, in both modes, with a call held inside NCCL on the host, a stream that never
# completes, an abort from another thread, an NCCL without revoke, and the pointer checks'
# record. Test builds only (the simulator and the fault seam are).
if(MGCOMM_TESTING)
  set(_mg_env "MGCOMM_CUDA_LIBRARY=$<TARGET_FILE:mgsim_cuda>"
      "MGCOMM_NCCL_LIBRARY=$<TARGET_FILE:mgsim_nccl>" "MGCOMM_BACKEND=nccl" "MGSIM_DEVICES=2")
  foreach(b 1 0)
    mg_test(NAME nccl_blocking_hosthang_${b} EXE nccl_blocking
            SOURCES ${CMAKE_CURRENT_LIST_DIR}/nccl_blocking.c ARGS hosthang LABELS fault sim
            TIMEOUT 60 ENV ${_mg_env} MGSIM_HOST_HANG=0:2 MGCOMM_NCCL_BLOCKING=${b})
    mg_test(NAME nccl_blocking_abort_${b} EXE nccl_blocking ARGS abort LABELS fault sim
            TIMEOUT 60 ENV ${_mg_env} MGSIM_HOST_HANG=0:2 MGCOMM_NCCL_BLOCKING=${b})
    mg_test(NAME nccl_blocking_gpuhang_${b} EXE nccl_blocking ARGS gpuhang LABELS fault sim
            TIMEOUT 60 ENV ${_mg_env} MGSIM_NEVER_COMPLETE=1:2 MGCOMM_NCCL_BLOCKING=${b})
    mg_test(NAME nccl_blocking_record_${b} EXE nccl_blocking ARGS record LABELS fault sim
            TIMEOUT 60 ENV ${_mg_env} MGCOMM_NCCL_BLOCKING=${b})
  endforeach()
  mg_test(NAME nccl_blocking_norevoke EXE nccl_blocking ARGS norevoke LABELS fault sim
          TIMEOUT 60 ENV ${_mg_env} MGSIM_HOST_HANG=0:2 MGSIM_NCCL_VERSION=22803)
  target_include_directories(nccl_blocking PRIVATE ${PROJECT_SOURCE_DIR}/tests/sim)
  add_dependencies(nccl_blocking mgsim_cuda mgsim_nccl)
  # What a rank's communicators are sized by: blocking mode's lifecycle communicator has one
  # channel (nccl_config.c, mg__nccl_config_lc).
  mg_test(NAME nccl_channels_blocking EXE nccl_channels
          SOURCES ${PROJECT_SOURCE_DIR}/tests/unit/nccl_channels.c ARGS blocking LABELS sim
          TIMEOUT 60 ENV ${_mg_env} MGCOMM_NCCL_BLOCKING=1)
  mg_test(NAME nccl_channels_nonblocking EXE nccl_channels ARGS nonblocking LABELS sim
          TIMEOUT 60 ENV ${_mg_env} MGCOMM_NCCL_BLOCKING=0)
  mg_test(NAME nccl_channels_share EXE nccl_channels ARGS share LABELS sim
          TIMEOUT 60 ENV ${_mg_env} MGCOMM_NCCL_BLOCKING=1 NCCL_COMM_SPLIT_SHARE_RESOURCES=1)
  target_include_directories(nccl_channels PRIVATE ${PROJECT_SOURCE_DIR}/tests/sim)
  add_dependencies(nccl_channels mgsim_cuda mgsim_nccl)
endif()
