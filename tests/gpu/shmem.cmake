# NVSHMEM's host API on GPUs (issue 19, docs/shmem.md). Label gpu; exits 77 without a GPU, NCCL
# or NVSHMEM. shmem_one: one PE through a one-rank NCCL communicator. shmem_two / shmem_four:
# PEs as processes under `mgcomm launch`, GPU = rank mod the GPUs (two PEs share the GPU of a
# one-GPU machine, through NVSHMEM's unique-id bootstrap).
set(_mg_dir ${CMAKE_CURRENT_LIST_DIR})
mg_test(NAME gpu_shmem_one EXE test_gpu_shmem
        SOURCES ${_mg_dir}/test_gpu_shmem.c ${_mg_dir}/gpu_util.c ${MG_TEST_COMMON}/reference.c
        ARGS one LABELS gpu TIMEOUT 300 ENV ${MG_GPU_ENV})
target_link_libraries(test_gpu_shmem PRIVATE m)
foreach(n 2 4)
  mg_test(NAME gpu_shmem_procs_${n} EXE test_gpu_shmem ARGS two ${n} LABELS gpu TIMEOUT 300
          ENV ${MG_GPU_ENV} MGCOMM=$<TARGET_FILE:mgcomm_cli>)
endforeach()
add_dependencies(test_gpu_shmem mgcomm_cli)
