# mgcomm bench on GPUs (-g N, --world -g N, auto, a failing NCCL call): bench_gpu.sh CASE N,
# which skips (77) with bench's own reason where there are fewer than N GPUs or no NCCL.
foreach(n 2 4)
  foreach(case coll world)
    mg_cli_test(NAME bench_gpu_${case}_${n}
                COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench_gpu.sh ${case} ${n}
                LABELS gpu cli TIMEOUT 600 ENV ${MG_GPU_ENV})
  endforeach()
endforeach()
# The fault case injects failures into NCCL's all_reduce: NCCL must run it (on 2 GPUs with peer
# access our own kernels would take the float all_reduce; they have their own fault tests).
foreach(case auto fault)
  mg_cli_test(NAME bench_gpu_${case} COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench_gpu.sh ${case} 2
              LABELS gpu cli TIMEOUT 300 ENV ${MG_GPU_ENV} MGCOMM_ALGO=nccl)
endforeach()
