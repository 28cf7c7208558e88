# NCCL 2.29 to 2.32's host API on GPUs (issue 24): suspend/resume with the device memory it
# gives back, memory statistics, properties, the new config fields, NCCL's parameters and window
# pointers on one GPU; grow and the one-sided signals on two (and four) GPUs. Every mode exits 77
# where there are too few GPUs; an NCCL older than a feature is checked to refuse it by name.
# tests/gpu/nccl_new_api.sh runs the one-GPU mode with the 2.32.3 wheel's library.
set(_mg_dir ${CMAKE_CURRENT_LIST_DIR})
foreach(mode one grow signals)
  mg_test(NAME gpu_nccl29_${mode} EXE test_gpu_nccl29 SOURCES ${_mg_dir}/test_gpu_nccl29.c
          ${_mg_dir}/gpu_util.c ${MG_TEST_COMMON}/reference.c ARGS ${mode} LABELS gpu
          TIMEOUT 300 ENV ${MG_GPU_ENV})
endforeach()
