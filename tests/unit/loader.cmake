# The run-time loader, the device queries and `mgcomm info` (issue 2, "Foundation").
#
# Inputs found at configure time; every test that needs a file skips (77) when it is absent:
#   MGCOMM_TEST_CUDA_DIR     a CUDA toolkit: include/{cuda,nccl}.h for the header comparison,
#                            lib64/libnccl.so.2 (its NCCL) and lib64/stubs/libcuda.so
#   MGCOMM_TEST_OLD_NCCL     an NCCL older than 2.24, for version gating
#   MGCOMM_TEST_NVSHMEM_DIR  the lib/ folder of an unpacked NVSHMEM wheel, for the wheel layout
# Both come from PyPI (docs/loader.md; .ci/run does this):
#   pip download --no-deps --only-binary=:all: --python-version 3.11 \
#       --platform manylinux2014_x86_64 -d .whl nvidia-nccl-cu12==2.21.5 nvidia-nvshmem-cu13==3.4.5
#   unzip -o -j -q .whl/nvidia_nccl_cu12-2.21.5-*.whl 'nvidia/nccl/lib/libnccl.so.2' -d .whl/nccl-2.21.5
#   unzip -o -q .whl/nvidia_nvshmem_cu13-3.4.5-*.whl 'nvidia/nvshmem/lib/*.so*' \
#       'nvidia/nvshmem/include/*' -d .whl/nvshmem-3.4.5
# (.whl/ is ignored by git.)
set(MGCOMM_TEST_CUDA_DIR "/usr/local/cuda" CACHE PATH "CUDA toolkit used by the loader tests")
set(MGCOMM_TEST_OLD_NCCL "${PROJECT_SOURCE_DIR}/.whl/nccl-2.21.5/libnccl.so.2" CACHE FILEPATH
    "An NCCL older than 2.24 (tests/unit/loader.cmake says how to get it)")
set(MGCOMM_TEST_OLD_NCCL_VERSION 22105 CACHE STRING "Its version code")
set(MGCOMM_TEST_NVSHMEM_DIR "${PROJECT_SOURCE_DIR}/.whl/nvshmem-3.4.5/nvidia/nvshmem/lib" CACHE PATH
    "lib/ of an unpacked nvidia-nvshmem wheel")
set(MGCOMM_TEST_NVSHMEM_VERSION 30405 CACHE STRING "Its version code")

set(_mg_dir ${CMAKE_CURRENT_SOURCE_DIR})

# NCCL
mg_test(NAME loader_nccl_default SOURCES ${_mg_dir}/loader_nccl.c ARGS default)
mg_test(NAME loader_nccl_old SOURCES ${_mg_dir}/loader_nccl.c ARGS expect
        ENV "MGCOMM_NCCL_LIBRARY=${MGCOMM_TEST_OLD_NCCL}"
            "MG_TEST_EXPECT_VERSION=${MGCOMM_TEST_OLD_NCCL_VERSION}")
set(_mg_nccl_h "${MGCOMM_TEST_CUDA_DIR}/include/nccl.h")
if(EXISTS "${_mg_nccl_h}")
  file(STRINGS "${_mg_nccl_h}" _mg_code REGEX "^#define NCCL_VERSION_CODE [0-9]+")
  string(REGEX REPLACE "^#define NCCL_VERSION_CODE ([0-9]+).*" "\\1" _mg_code "${_mg_code}")
  # The toolkit's own NCCL, whose version the header states (22809 on the CPU machines).
  mg_test(NAME loader_nccl_toolkit SOURCES ${_mg_dir}/loader_nccl.c ARGS expect
          ENV "MGCOMM_NCCL_LIBRARY=${MGCOMM_TEST_CUDA_DIR}/lib64/libnccl.so.2"
              "MG_TEST_EXPECT_VERSION=${_mg_code}")
  # Our declarations of NCCL and CUDA types against the real headers.
  mg_test(NAME loader_header_compat SOURCES ${_mg_dir}/loader_header_compat.c)
  target_include_directories(loader_header_compat SYSTEM PRIVATE "${MGCOMM_TEST_CUDA_DIR}/include")
endif()
mg_test(NAME loader_nccl_home SOURCES ${_mg_dir}/loader_nccl.c ARGS home
        ENV "MG_TEST_NCCL_FILE=${MGCOMM_TEST_OLD_NCCL}")
foreach(mode missing notlib wronglib folder)
  mg_test(NAME loader_explicit_${mode} SOURCES ${_mg_dir}/loader_explicit.c ARGS ${mode})
endforeach()

# CUDA driver
mg_test(NAME loader_cuda_missing SOURCES ${_mg_dir}/loader_cuda.c ARGS missing)
foreach(mode stub-explicit stub-in-path)
  mg_test(NAME loader_cuda_${mode} SOURCES ${_mg_dir}/loader_cuda.c ARGS ${mode}
          ENV "MG_TEST_CUDA_STUB=${MGCOMM_TEST_CUDA_DIR}/lib64/stubs/libcuda.so")
endforeach()

# NVSHMEM from a Python wheel layout
mg_test(NAME loader_nvshmem_wheel SOURCES ${_mg_dir}/loader_nvshmem.c
        ENV "MG_TEST_NVSHMEM_DIR=${MGCOMM_TEST_NVSHMEM_DIR}"
            "MG_TEST_NVSHMEM_VERSION=${MGCOMM_TEST_NVSHMEM_VERSION}")

# Fault injection (test builds only, as the seam)
if(MGCOMM_TESTING)
  mg_test(NAME loader_fault_api SOURCES ${_mg_dir}/loader_fault.c ARGS api)
  mg_test(NAME loader_fault_env SOURCES ${_mg_dir}/loader_fault.c ARGS env
          ENV "MGCOMM_FAULT=not-a-rule,ncclGetVersion:1:3:0,cuInit:0:1")
endif()

mg_test(NAME loader_threads SOURCES ${_mg_dir}/loader_threads.c)
mg_test(NAME loader_diag SOURCES ${_mg_dir}/loader_diag.c)
mg_test(NAME status_table SOURCES ${_mg_dir}/status_table.c)
mg_test(NAME dtype_table SOURCES ${_mg_dir}/dtype_table.c)

# `mgcomm info`, run as a user would; the checks are in Python (json.load).
find_package(Python3 COMPONENTS Interpreter QUIET)
foreach(case json json-config json-escape explicit text help bad-option config-bad-value
             config-unknown-var config-secret)
  if(Python3_Interpreter_FOUND)
    mg_cli_test(NAME info_${case} COMMAND ${Python3_EXECUTABLE} ${_mg_dir}/info_cli_test.py ${case})
  else()
    mg_cli_test(NAME info_${case} COMMAND sh -c "echo 'SKIP: python3 not found'; exit 77")
  endif()
endforeach()
