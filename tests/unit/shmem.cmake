# NVSHMEM's host API (issue 19, docs/shmem.md) without a GPU: every check of src/shmem/ against
# a fake NVSHMEM whose PEs are processes sharing host memory (tests/fake/nvshmem_fake.c, loaded
# through the loader's explicit path; MG_TEST_SHMEM_HOST_PES=1 is the test builds' host-PE
# mode), and the real library of the nvidia-nvshmem wheel without a driver (loader.cmake says
# how to get it; skipped when absent).
set(_mg_dir ${CMAKE_CURRENT_SOURCE_DIR})
add_library(nvshmem_fake MODULE ${PROJECT_SOURCE_DIR}/tests/fake/nvshmem_fake.c)
target_compile_options(nvshmem_fake PRIVATE -fvisibility=hidden)
target_link_libraries(nvshmem_fake PRIVATE rt)
set(_mg_fake_env "MGCOMM_NVSHMEM_LIBRARY=$<TARGET_FILE:nvshmem_fake>" MG_TEST_SHMEM_HOST_PES=1)
if(MGCOMM_TESTING)
  foreach(mode checks mismatch timeout remote initfail env mpg threads heap)
    mg_test(NAME shmem_fake_${mode} EXE test_shmem_fake SOURCES ${_mg_dir}/test_shmem_fake.c
            ARGS ${mode} ENV ${_mg_fake_env} LABELS unit shmem TIMEOUT 120)
  endforeach()
  add_dependencies(test_shmem_fake nvshmem_fake)
endif()
mg_test(NAME shmem_wheel_nodriver SOURCES ${_mg_dir}/test_shmem_wheel.c LABELS unit shmem
        ENV "MGCOMM_NVSHMEM_LIBRARY=${MGCOMM_TEST_NVSHMEM_DIR}/libnvshmem_host.so.3"
            "MGCOMM_CUDA_LIBRARY=/nonexistent/libcuda.so.1")
# mgcomm's declaration of the init attribute and constants against the wheel's own headers, when
# they were unpacked too (add 'nvidia/nvshmem/include/*' to the unzip of loader.cmake).
set(_mg_nvshmem_inc "${MGCOMM_TEST_NVSHMEM_DIR}/../include")
if(EXISTS "${_mg_nvshmem_inc}/device_host/nvshmem_types.h")
  mg_test(NAME shmem_header_compat SOURCES ${_mg_dir}/test_shmem_header.c LABELS unit shmem)
  target_include_directories(shmem_header_compat SYSTEM PRIVATE "${_mg_nvshmem_inc}"
                             "${MGCOMM_TEST_CUDA_DIR}/include")
endif()
mg_cli_test(NAME shmem_cli COMMAND sh ${_mg_dir}/shmem_cli.sh
            ENV "FAKE_NVSHMEM=$<TARGET_FILE:nvshmem_fake>")
