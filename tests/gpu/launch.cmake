# A job of one process per GPU (issue 6): `mgcomm launch -n 2` runs test_gpu_launch, whose ranks
# meet through mg_comm_init_env on the NCCL backend; a timeout on rank 0 must name what rank 1
# (another process) last enqueued, as published through the job's store. Label gpu; exits 77
# without 2 GPUs and NCCL. The environment repeats nccl.cmake's MG_GPU_ENV (this file is read
# first): multicast stays off on the shared GPU machines.
mg_test(NAME gpu_launch_progress EXE test_gpu_launch
        SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_launch.c ${CMAKE_CURRENT_LIST_DIR}/gpu_util.c
                ${MG_TEST_COMMON}/reference.c
        LABELS gpu TIMEOUT 180
        ENV NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
            MGCOMM=$<TARGET_FILE:mgcomm_cli>)
target_link_libraries(test_gpu_launch PRIVATE m)
add_dependencies(test_gpu_launch mgcomm_cli)
