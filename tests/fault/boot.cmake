# Bootstrap faults: hostile and broken peers of the store, killed servers and clients, expired
# deadlines, the launcher's exit codes and signal forwarding, and whole jobs started by
# `mgcomm launch` and by mpirun.
mg_test(NAME boot_badinput SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_badinput.c LABELS fault
        TIMEOUT 90 ENV MGCOMM_STORE_FRAME_TIMEOUT=2)
mg_test(NAME boot_kill SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_kill.c LABELS fault TIMEOUT 90)

# boot_job is one rank of a job, run only under a launcher: built as mg_test builds its programs.
add_executable(boot_job ${CMAKE_CURRENT_SOURCE_DIR}/boot_job.c)
target_include_directories(boot_job PRIVATE ${PROJECT_SOURCE_DIR}/src ${MG_TEST_COMMON})
target_compile_definitions(boot_job PRIVATE _GNU_SOURCE)
target_compile_options(boot_job PRIVATE ${MG_WARNINGS} -Wno-missing-prototypes)
target_link_libraries(boot_job PRIVATE mgcomm_static)

# A job of 4 processes started by mgcomm launch, running every collective on the host backend.
add_test(NAME boot_job_launch
         COMMAND $<TARGET_FILE:mgcomm_cli> launch -n 4 --tag-output -- $<TARGET_FILE:boot_job> all)
set_tests_properties(boot_job_launch PROPERTIES TIMEOUT 180 LABELS fault
  ENVIRONMENT "MGCOMM_DEBUG=WARN")
# The same job, and one whose rank 0 never comes (the others must time out naming the store),
# started by Open MPI's mpirun (skipped without it: apt-get install openmpi-bin).
foreach(mode all norank0)
  add_test(NAME boot_job_mpirun_${mode}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/boot_mpirun.sh $<TARGET_FILE:boot_job> ${mode})
  set_tests_properties(boot_job_mpirun_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
    LABELS fault ENVIRONMENT "MGCOMM_DEBUG=WARN")
endforeach()
# Through mgcomm launch, jobs that must fail in a named way: a rank that disagrees on the world
# size, a rank 0 that never comes.
foreach(mode badsize norank0)
  add_test(NAME boot_job_launch_${mode}
           COMMAND $<TARGET_FILE:mgcomm_cli> launch -n 4 --tag-output -- $<TARGET_FILE:boot_job> ${mode})
  set_tests_properties(boot_job_launch_${mode} PROPERTIES TIMEOUT 60 LABELS fault
    ENVIRONMENT "MGCOMM_DEBUG=WARN")
endforeach()
# The launcher itself: usage, environment, tagging, exit codes, stopping, signals.
mg_cli_test(NAME boot_launch LABELS fault TIMEOUT 120
            COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/boot_launch.sh $<TARGET_FILE:boot_job>)
# How the launcher stops a job: every process group it started, exited ranks' included, and
# nothing else; no signal taken for its own; nothing left of a shared-memory segment by ranks
# stopped in init, also by ranks out of its reach (boot_launch_stop.sh CASE).
foreach(case orphans forward race noexec shm_early shm_sigint shm_setsid)
  mg_cli_test(NAME boot_launch_stop_${case} LABELS fault TIMEOUT 120
              COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/boot_launch_stop.sh ${case})
endforeach()
# The launcher's messages and mgcomm's log lines in its ranks are one write(2) each.
mg_cli_test(NAME boot_launch_stop_lines LABELS fault TIMEOUT 60
            COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/boot_launch_stop.sh lines
                    $<TARGET_FILE:boot_job>)
