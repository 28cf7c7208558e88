# The NCCL backend on GPUs (issue 5). Label gpu: `make test-gpu` (or tests/gpu/run.sh, which
# builds and runs all of it in one go on a GPU machine). Every program exits 77 with the reason
# where there are not enough GPUs or no NCCL, so they also run, as skips, on CPU machines.
# Multicast stays off on the shared GPU machines (MG_GPU_ENV, CMakeLists.txt).
set(_mg_dir ${CMAKE_CURRENT_LIST_DIR})
set(MG_GPU_UTIL ${_mg_dir}/gpu_util.c ${MG_TEST_COMMON}/reference.c)

# One GPU proves every operation, dtype and op on a communicator of one rank (NCCL refuses two
# ranks on one GPU).
foreach(mode all procs world)
  mg_test(NAME gpu_coll_${mode}_1 EXE test_gpu_coll SOURCES ${_mg_dir}/test_gpu_coll.c
          ${MG_GPU_UTIL} ARGS ${mode} 1 LABELS gpu TIMEOUT 900 ENV ${MG_GPU_ENV})
endforeach()
foreach(n 2 4)
  foreach(mode all procs world)
    mg_test(NAME gpu_coll_${mode}_${n} EXE test_gpu_coll ARGS ${mode} ${n} LABELS gpu
            TIMEOUT 900 ENV ${MG_GPU_ENV})
  endforeach()
  mg_test(NAME gpu_mem_${n} EXE test_gpu_mem SOURCES ${_mg_dir}/test_gpu_mem.c ${MG_GPU_UTIL}
          ARGS ${n} LABELS gpu TIMEOUT 300 ENV ${MG_GPU_ENV})
endforeach()
# The correctness test against itself on the host backend: runs everywhere, so that its cases,
# layouts and bounds are checked before a GPU runs them.
foreach(n 2 3)
  mg_test(NAME gpu_coll_harness_host_${n} EXE test_gpu_coll ARGS host ${n} LABELS host TIMEOUT 600)
endforeach()
mg_test(NAME gpu_coll_harness_hostworld_3 EXE test_gpu_coll ARGS hostworld 3 LABELS host world
        TIMEOUT 600)
if(MGCOMM_TESTING)
  # ... and it notices a wrong element: one output byte of one call flipped (host.corrupt).
  mg_test(NAME gpu_coll_harness_catches EXE test_gpu_coll ARGS host 2 LABELS host fault
          TIMEOUT 600 ENV MGCOMM_FAULT=host.corrupt:3000:255:1)
  set_tests_properties(gpu_coll_harness_catches PROPERTIES
    PASS_REGULAR_EXPRESSION "1 wrong elements of .*results differ from the host backend")
endif()
# NCCL's failure paths: NCCL runs every all_reduce here (MGCOMM_ALGO=nccl), since on 2 GPUs with
# peer access our own kernels would take the float ones (their faults: gpu_kernels_timeout/abort).
foreach(mode pointers inject inittimeout withheld abort watchdog late revoke world)
  mg_test(NAME gpu_faults_${mode} EXE test_gpu_faults
          SOURCES ${_mg_dir}/test_gpu_faults.c ${MG_GPU_UTIL}
          ARGS ${mode} LABELS gpu TIMEOUT 300 ENV ${MG_GPU_ENV} MGCOMM_ALGO=nccl)
endforeach()
mg_test(NAME gpu_faults_nocheck EXE test_gpu_faults ARGS nocheck LABELS gpu TIMEOUT 300
        ENV ${MG_GPU_ENV} MGCOMM_CHECK_POINTERS=0 MGCOMM_ALGO=nccl)
# The collective check on 2 GPUs (tests/fault/collcheck.c, built there): a mismatch that NCCL
# would wait on for ever is refused on both ranks with the check on, and times out with it off.
mg_test(NAME gpu_collcheck_on EXE collcheck ARGS gpu on LABELS gpu TIMEOUT 120
        ENV ${MG_GPU_ENV} MGCOMM_ALGO=nccl MGCOMM_CHECK_COLLECTIVES=1)
mg_test(NAME gpu_collcheck_off EXE collcheck ARGS gpu off LABELS gpu TIMEOUT 120
        ENV ${MG_GPU_ENV} MGCOMM_ALGO=nccl MGCOMM_CHECK_COLLECTIVES=0)
foreach(t test_gpu_coll test_gpu_mem test_gpu_faults)
  target_link_libraries(${t} PRIVATE m)
endforeach()
