# The NCCL backend where no GPU is needed (issue 5): selection without a driver, unique ids,
# the loader's fault seam under mg_unique_id_create, the ncclConfig_t pass-through against the
# real nccl.h, the pointer-check decisions, dtype/op gating by version. And the public memory
# calls on the host backend. The GPU tests are in tests/gpu/ (label gpu).
set(_mg_dir ${CMAKE_CURRENT_LIST_DIR})
foreach(mode nodriver uid fault)
  mg_test(NAME nccl_select_${mode} EXE test_nccl_select SOURCES ${_mg_dir}/test_nccl_select.c
          ARGS ${mode})
endforeach()
mg_test(NAME nccl_select_env EXE test_nccl_select ARGS env ENV MGCOMM_BACKEND=nccl)
mg_test(NAME nccl_checks_buffers EXE test_nccl_checks SOURCES ${_mg_dir}/test_nccl_checks.c
        ARGS buffers)
mg_test(NAME nccl_checks_types EXE test_nccl_checks ARGS types)
# The same gates against an NCCL older than 2.24 (fp8), from the wheel loader.cmake fetches.
mg_test(NAME nccl_checks_types_old EXE test_nccl_checks ARGS types
        ENV "MGCOMM_NCCL_LIBRARY=${MGCOMM_TEST_OLD_NCCL}"
            "MG_TEST_EXPECT_VERSION=${MGCOMM_TEST_OLD_NCCL_VERSION}")
if(EXISTS "${MGCOMM_TEST_CUDA_DIR}/include/nccl.h")
  mg_test(NAME nccl_config SOURCES ${_mg_dir}/test_nccl_config.c)
  target_include_directories(nccl_config SYSTEM PRIVATE "${MGCOMM_TEST_CUDA_DIR}/include")
endif()
mg_test(NAME mem_host SOURCES ${_mg_dir}/test_mem_host.c LABELS host)
