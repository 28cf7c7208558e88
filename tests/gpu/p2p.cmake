# Peer-to-peer on GPUs (issue 18): what one GPU proves (the same-device path, the probe of a GPU
# with itself, ordering on real streams, buffer generations); the pairs of several GPUs, where
# there are several. tests/gpu/p2p.sh builds and runs it with `mgcomm topo` in one call.
mg_test(NAME gpu_p2p EXE test_gpu_p2p SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_p2p.c
        ${CMAKE_CURRENT_LIST_DIR}/gpu_util.c ${MG_TEST_COMMON}/reference.c LABELS gpu p2p
        TIMEOUT 300 ENV ${MG_GPU_ENV})
