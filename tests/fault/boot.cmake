# Bootstrap faults: hostile and broken peers of the store, killed servers and clients, expired
# deadlines, the launcher's exit codes and signal forwarding, and whole jobs started by
# `mgcomm launch` and by mpirun.
mg_test(NAME boot_badinput SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_badinput.c LABELS fault
        TIMEOUT 90 ENV MGCOMM_STORE_FRAME_TIMEOUT=1)
mg_test(NAME boot_kill SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/boot_kill.c LABELS fault TIMEOUT 90)
