# mgcomm's own all-reduce kernels (issue 20) on one GPU: ranks of one process whose buffers all
# live on it, each on its own stream; two processes through CUDA IPC. Exit 77 without a GPU or
# without the kernels (built without nvcc). tests/gpu/kernels.sh builds and runs all of it.
set(_mg_kdir ${CMAKE_CURRENT_LIST_DIR})
foreach(n 1 2 4 8)
  mg_test(NAME gpu_kernels_correct_${n} EXE test_gpu_kernels
          SOURCES ${_mg_kdir}/test_gpu_kernels.c ${_mg_kdir}/gpu_util.c ${MG_TEST_COMMON}/reference.c
          ARGS correct ${n} LABELS gpu TIMEOUT 600 ENV ${MG_GPU_ENV})
endforeach()
foreach(n 2 8)
  mg_test(NAME gpu_kernels_mixed_${n} EXE test_gpu_kernels ARGS mixed ${n} LABELS gpu TIMEOUT 120
          ENV ${MG_GPU_ENV})
  mg_test(NAME gpu_kernels_graph_${n} EXE test_gpu_kernels ARGS graph ${n} LABELS gpu TIMEOUT 120
          ENV ${MG_GPU_ENV})
  mg_test(NAME gpu_kernels_timeout_${n} EXE test_gpu_kernels ARGS timeout ${n} LABELS gpu
          TIMEOUT 120 ENV ${MG_GPU_ENV})
  mg_test(NAME gpu_kernels_abort_${n} EXE test_gpu_kernels ARGS abort ${n} LABELS gpu TIMEOUT 120
          ENV ${MG_GPU_ENV})
endforeach()
# The push algorithm's bounded waits: a rank that never comes, an abort.
mg_test(NAME gpu_kernels_timeout_ll_2 EXE test_gpu_kernels ARGS timeout 2 ll LABELS gpu TIMEOUT 120
        ENV ${MG_GPU_ENV})
mg_test(NAME gpu_kernels_abort_ll_8 EXE test_gpu_kernels ARGS abort 8 ll LABELS gpu TIMEOUT 120
        ENV ${MG_GPU_ENV})
foreach(n 2 4)
  mg_test(NAME gpu_kernels_procs_${n} EXE test_gpu_kernels ARGS procs ${n} LABELS gpu TIMEOUT 120
          ENV ${MG_GPU_ENV})
  # Registered buffers lent in place across processes (cuMem descriptors, IPC handles).
  mg_test(NAME gpu_kernels_lend_${n} EXE test_gpu_kernels ARGS lend ${n} LABELS gpu TIMEOUT 180
          ENV ${MG_GPU_ENV})
endforeach()
# A registration released on one rank only, which another still lends: an error, not a fault.
mg_test(NAME gpu_kernels_unmapped EXE test_gpu_kernels ARGS unmapped 2 LABELS gpu TIMEOUT 120
        ENV ${MG_GPU_ENV})
# A registration whose peer never sends its buffer: the wait ends at the deadline, or the abort.
mg_test(NAME gpu_kernels_regwait EXE test_gpu_kernels ARGS regwait 2 LABELS gpu TIMEOUT 120
        ENV ${MG_GPU_ENV})
# The NCCL backend's registration path between processes, one per GPU (skips on one GPU).
mg_test(NAME gpu_kernels_ncclprocs_2 EXE test_gpu_kernels ARGS ncclprocs 2 LABELS gpu TIMEOUT 180
        ENV ${MG_GPU_ENV} MGCOMM_ALGO=mgcomm MGCOMM_KERNELS_INPLACE_BYTES=0)
# The NCCL backend's choice, forced to our kernels, on a communicator of one rank.
mg_test(NAME gpu_kernels_nccl EXE test_gpu_kernels ARGS nccl LABELS gpu TIMEOUT 120
        ENV ${MG_GPU_ENV} MGCOMM_ALGO=mgcomm)
