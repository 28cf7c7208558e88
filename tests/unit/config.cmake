# mg_config_t's ABI: older layouts accepted with defaults for newer fields, newer ones refused, on
# every entry point that takes a config (core/config.c).
set(MG_CONFIG_ABI_SRC ${CMAKE_CURRENT_SOURCE_DIR}/config_abi.c)
foreach(t comm world env)
  mg_test(NAME config_abi_${t} EXE config_abi SOURCES ${MG_CONFIG_ABI_SRC} ARGS ${t} LABELS host)
endforeach()
