# NCCL 2.29 to 2.32's host API (issue 24): version gating against the real libraries of several
# NCCL releases, their config fields and struct layouts against the 2.32.3 nccl.h, NCCL's
# parameter API; and the host backend's suspend, resume, memory statistics and grow.
#
# The libraries come from PyPI wheels (only lib/libnccl.so.2, plus nccl.h of 2.32.3, are
# unpacked; the tests need no device code and no GPU); each test skips (77) when its file is
# absent. .ci/run fetches 2.29.2, 2.30.4 and 2.32.3 (the boundaries: grow and properties
# without suspend; suspend without the parameter API, whose handle type 2.30.7 changed; all):
#   for v in 2.29.2 2.30.4 2.32.3; do     # one version per pip call (pip resolves one)
#     pip download --no-deps --only-binary=:all: --python-version 3.11 \
#         --platform manylinux_2_27_x86_64 --platform manylinux_2_18_x86_64 -d .whl \
#         nvidia-nccl-cu13==$v
#     unzip -o -j -q .whl/nvidia_nccl_cu13-$v-*.whl 'nvidia/nccl/lib/libnccl.so.2' -d .whl/nccl-$v
#   done
#   unzip -o -j -q .whl/nvidia_nccl_cu13-2.32.3-*.whl 'nvidia/nccl/include/nccl.h' -d .whl/nccl-2.32.3
# 2.29.7, 2.30.7 and 2.31.2 are tested too where they were unpacked the same way.
set(_mg_dir ${CMAKE_CURRENT_LIST_DIR})
set(MGCOMM_TEST_WHEEL_DIR "${PROJECT_SOURCE_DIR}/.whl" CACHE PATH
    "Where the NCCL wheels are unpacked, as .whl/nccl-<version>/ (tests/unit/nccl29.cmake)")

foreach(v 2.29.2 2.29.7 2.30.4 2.30.7 2.31.2 2.32.3)
  string(REPLACE "." ";" _mg_parts ${v})
  list(GET _mg_parts 1 _mg_minor)
  list(GET _mg_parts 2 _mg_patch)
  math(EXPR _mg_code "20000 + ${_mg_minor} * 100 + ${_mg_patch}")
  string(REPLACE "." "_" _mg_name ${v})
  set(_mg_lib "${MGCOMM_TEST_WHEEL_DIR}/nccl-${v}/libnccl.so.2")
  # The loader's feature table (loader_nccl.c, expect): every feature iff its version.
  mg_test(NAME loader_nccl_${_mg_name} EXE loader_nccl_default ARGS expect
          ENV "MGCOMM_NCCL_LIBRARY=${_mg_lib}" "MG_TEST_EXPECT_VERSION=${_mg_code}")
  # The public calls that need no GPU: NCCL's parameters, or NOT_SUPPORTED naming 2.30.7.
  mg_test(NAME nccl29_gating_${_mg_name} EXE test_nccl29_gating
          SOURCES ${_mg_dir}/test_nccl29_gating.c
          ENV "MGCOMM_NCCL_LIBRARY=${_mg_lib}" "MG_TEST_EXPECT_VERSION=${_mg_code}")
endforeach()

# ncclConfig_t's new fields and the new constants against the 2.32.3 nccl.h (with the toolkit's
# CUDA headers, which it includes).
set(_mg_h232 "${MGCOMM_TEST_WHEEL_DIR}/nccl-2.32.3")
if(EXISTS "${_mg_h232}/nccl.h" AND EXISTS "${MGCOMM_TEST_CUDA_DIR}/include/cuda_runtime.h")
  mg_test(NAME nccl_config_2_32 SOURCES ${_mg_dir}/test_nccl_config.c)
  target_include_directories(nccl_config_2_32 SYSTEM BEFORE PRIVATE "${_mg_h232}"
                             "${MGCOMM_TEST_CUDA_DIR}/include")
  mg_test(NAME loader_header_compat_2_32 SOURCES ${_mg_dir}/loader_header_compat.c)
  target_include_directories(loader_header_compat_2_32 SYSTEM BEFORE PRIVATE "${_mg_h232}"
                             "${MGCOMM_TEST_CUDA_DIR}/include")
else()
  mg_cli_test(NAME nccl_config_2_32
              COMMAND sh -c "echo 'SKIP: ${_mg_h232}/nccl.h is absent (tests/unit/nccl29.cmake)'; exit 77")
endif()

# The host backend: suspend, resume, statistics, grow. The single-copy path is off, so that the
# large all_reduce runs through the staging slots that suspend releases.
foreach(mode threads procs inflight args)
  mg_test(NAME host_suspend_${mode} EXE test_host_suspend SOURCES ${_mg_dir}/test_host_suspend.c
          ARGS ${mode} LABELS host TIMEOUT 120 ENV MGCOMM_HOST_DIRECT_BYTES=1000000000000)
endforeach()

# `mgcomm info --comm` and `--nccl-params`, run as a user would.
mg_cli_test(NAME info_nccl29 COMMAND sh ${_mg_dir}/info_nccl29.sh
            "${MGCOMM_TEST_WHEEL_DIR}/nccl-2.32.3/libnccl.so.2"
            "${MGCOMM_TEST_WHEEL_DIR}/nccl-2.29.2/libnccl.so.2")

# MG_CONFIG_VERSION 6 and the version-4 and -5 layouts before it.
mg_test(NAME config_abi_v6 SOURCES ${_mg_dir}/config_abi_v6.c)
