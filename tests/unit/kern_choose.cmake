# mgcomm's own all-reduce kernels without a GPU (issue 20): the choice against NCCL, the
# variables, and a build without nvcc.
mg_test(NAME kern_choose_table EXE kern_choose SOURCES kern_choose.c ARGS table)
mg_test(NAME kern_choose_env EXE kern_choose ARGS env
        ENV MGCOMM_ALGO=mgcomm MGCOMM_KERNELS_ONESHOT_BYTES=1000 MGCOMM_KERNELS_MAX_BYTES=9000000
            MGCOMM_KERNELS_STAGING_BYTES=65536 MGCOMM_KERNELS_BLOCKS=4 MGCOMM_KERNELS_LL_BYTES=100
            MGCOMM_KERNELS_INPLACE_BYTES=0)
if(MGCOMM_NVCC AND MGCOMM_KERNELS)
  mg_test(NAME kern_choose_built EXE kern_choose ARGS built)
endif()
# bench/allreduce_report.py's copy of the table follows it.
mg_cli_test(NAME kern_table_report LABELS unit
            COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/kern_table_report.py
                    $<TARGET_FILE:kern_choose> ${PROJECT_SOURCE_DIR}/bench)
# The library configured with nvcc hidden builds with the C compiler alone and says that the
# kernels are not built (contract 9). Builds a second copy of the library: label slow.
add_test(NAME kernels_no_nvcc COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/kernels_no_nvcc.sh
         ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/no-nvcc)
set_tests_properties(kernels_no_nvcc PROPERTIES TIMEOUT 900 LABELS "unit;slow" SKIP_RETURN_CODE 77)
# MGCOMM_ALGO=mgcomm where the driver lacks what the kernels need (the simulated one).
if(TARGET mgsim_nccl)
  mg_test(NAME kern_sim_forced SOURCES kern_sim.c LABELS sim TIMEOUT 120
          ENV "MGCOMM_CUDA_LIBRARY=$<TARGET_FILE:mgsim_cuda>"
              "MGCOMM_NCCL_LIBRARY=$<TARGET_FILE:mgsim_nccl>" MGCOMM_BACKEND=nccl MGSIM_DEVICES=2
              MGCOMM_ALGO=mgcomm)
  add_dependencies(kern_sim_forced mgsim_cuda mgsim_nccl)
  # Which buffers the kernels read in place (mgcomm's record), on two simulated GPUs.
  mg_test(NAME kern_sim_inplace SOURCES kern_inplace.c LABELS sim TIMEOUT 120
          ENV "MGCOMM_CUDA_LIBRARY=$<TARGET_FILE:mgsim_cuda>"
              "MGCOMM_NCCL_LIBRARY=$<TARGET_FILE:mgsim_nccl>" MGCOMM_BACKEND=nccl MGSIM_DEVICES=2)
  add_dependencies(kern_sim_inplace mgsim_cuda mgsim_nccl)
endif()
