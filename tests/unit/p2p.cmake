# Peer-to-peer (docs/p2p.md) without a GPU: the simulated CUDA driver (tests/sim) gives the GPUs,
# their peer matrix and the faults of each case; NVML is kept out (links read UNKNOWN).
set(_mg_p2p ${CMAKE_CURRENT_LIST_DIR}/p2p.c)
if(MGCOMM_TESTING)
  # The copy streams mgcomm keeps for the process are streams of the simulator, each with a live
  # thread at exit, where LeakSanitizer (make asan) crashes reading that thread's dynamic TLS
  # ("Tracer caught signal 11"; a program that only makes one stream of the simulator and exits
  # crashes it the same way): the tests that copy run without the leak check (AddressSanitizer's
  # other checks stay on).
  set(_mg_nolsan "ASAN_OPTIONS=detect_leaks=0")
  set(_mg_sim "MGCOMM_CUDA_LIBRARY=$<TARGET_FILE:mgsim_cuda>"
      "MGCOMM_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1")
  mg_test(NAME p2p_topo4 EXE p2p SOURCES ${_mg_p2p} ARGS topo4 LABELS unit p2p sim
          ENV ${_mg_sim} MGSIM_DEVICES=4 "MGSIM_PEERS=0>1,1>0,2>3")
  mg_test(NAME p2p_islands8 EXE p2p ARGS islands8 LABELS unit p2p sim
          ENV ${_mg_sim} MGSIM_DEVICES=8 "MGSIM_PEERS=0>1,1>2,3>2,4>5,6>6")
  mg_test(NAME p2p_islands_enable EXE p2p ARGS islands_enable LABELS unit p2p sim
          ENV ${_mg_sim} MGSIM_DEVICES=4 "MGSIM_PEERS=0>1,1>2,2>3" "MGSIM_PEER_ENABLE_FAIL=1>2")
  mg_test(NAME p2p_enable EXE p2p ARGS enable LABELS unit p2p sim
          ENV ${_mg_sim} MGSIM_DEVICES=4 "MGSIM_PEER_ENABLE_FAIL=2>3")
  mg_test(NAME p2p_probe EXE p2p ARGS probe LABELS unit p2p sim
          ENV ${_mg_sim} ${_mg_nolsan} MGSIM_DEVICES=4 "MGSIM_PEER_CORRUPT=1>2"
          "MGSIM_PEER_COPY_FAIL=3>0")
  mg_test(NAME p2p_pair_works EXE p2p ARGS pair_works LABELS unit p2p sim
          ENV ${_mg_sim} ${_mg_nolsan} MGSIM_DEVICES=4 "MGSIM_PEERS=0>1,1>0,1>2,2>1,0>2,2>0"
          "MGSIM_PEER_CORRUPT=1>2")
  foreach(c copy_checks copy_order)
    mg_test(NAME p2p_${c} EXE p2p ARGS ${c} LABELS unit p2p sim ENV ${_mg_sim} ${_mg_nolsan}
            MGSIM_DEVICES=2)
  endforeach()
  mg_test(NAME p2p_copy_request EXE p2p ARGS copy_request LABELS unit p2p sim
          ENV ${_mg_sim} ${_mg_nolsan} MGSIM_DEVICES=2 MGCOMM_WATCHDOG_INTERVAL=0.01)
  mg_test(NAME p2p_copy_fail EXE p2p ARGS copy_fail LABELS unit p2p sim
          ENV ${_mg_sim} ${_mg_nolsan} MGSIM_DEVICES=2 "MGSIM_PEER_COPY_FAIL=0>1")
  mg_test(NAME p2p_world_writer_gpu EXE p2p ARGS world_writer_gpu LABELS unit p2p sim
          ENV ${_mg_sim} ${_mg_nolsan} "MGCOMM_NCCL_LIBRARY=$<TARGET_FILE:mgsim_nccl>"
          MGSIM_DEVICES=2 MGSIM_NEVER_COMPLETE=0:1)
  mg_test(NAME p2p_nogpu EXE p2p ARGS nogpu LABELS unit p2p sim ENV ${_mg_sim} MGSIM_DEVICES=0)
  # Links from the simulated NVML.
  set(_mg_nvml "MGCOMM_CUDA_LIBRARY=$<TARGET_FILE:mgsim_cuda>"
      "MGCOMM_NVML_LIBRARY=$<TARGET_FILE:mgsim_nvml>")
  mg_test(NAME p2p_links4 EXE p2p ARGS links4 LABELS unit p2p sim ENV ${_mg_nvml} MGSIM_DEVICES=4
          "MGSIM_NVLINKS=0-1:4,2-3:2" "MGSIM_PCIE=0-2:SYS,1-3:NODE,0-3:PIX")
  mg_test(NAME p2p_links_switch EXE p2p ARGS links_switch LABELS unit p2p sim ENV ${_mg_nvml}
          MGSIM_DEVICES=8 MGSIM_NVSWITCH_LINKS=18 "MGSIM_NVLINKS=6-7:2")
  target_link_libraries(p2p PRIVATE ${CMAKE_DL_LIBS})
  add_dependencies(p2p mgsim_cuda mgsim_nvml mgsim_nccl)
endif()
mg_test(NAME p2p_nodriver EXE p2p SOURCES ${_mg_p2p} ARGS nodriver LABELS unit p2p
        ENV "MGCOMM_CUDA_LIBRARY=/nonexistent/libcuda.so.1")
mg_test(NAME p2p_hostbuf EXE p2p ARGS hostbuf LABELS unit p2p host
        ENV "MGCOMM_CUDA_LIBRARY=/nonexistent/libcuda.so.1")
mg_test(NAME p2p_world_writer EXE p2p ARGS world_writer LABELS unit p2p host
        ENV "MGCOMM_CUDA_LIBRARY=/nonexistent/libcuda.so.1" "MGCOMM_FAULT=host.fail:3:1:2")
# `mgcomm topo`: no driver, no GPU, 4 simulated GPUs with every kind of failure, and links from
# the simulated NVML.
if(MGCOMM_TESTING)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    mg_cli_test(NAME p2p_topo_cli LABELS cli p2p sim ENV ${_mg_nolsan}
                COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/p2p_cli.py
                        $<TARGET_FILE:mgcomm_cli> $<TARGET_FILE:mgsim_cuda>
                        $<TARGET_FILE:mgsim_nvml>)
  endif()
endif()
