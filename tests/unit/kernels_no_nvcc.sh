#!/bin/sh
# kernels_no_nvcc.sh SOURCE_DIR BUILD_DIR -- the library configured with nvcc hidden
# (-DMGCOMM_NVCC=MGCOMM_NVCC-NOTFOUND: find_program keeps a cached NOTFOUND) builds with the C
# compiler alone, and a program linked to it finds the kernels not built: mg__kern_built() is 0
# and mg__kern_available says MG_ERR_NOT_SUPPORTED, "nvcc was not found" (kern_choose unbuilt).
set -eu
src=$1
build=$2
rm -rf "$build"
cmake -S "$src" -B "$build" -DMGCOMM_TESTING=ON -DMGCOMM_NVCC=MGCOMM_NVCC-NOTFOUND \
  -DCMAKE_BUILD_TYPE=Debug >"$build.log" 2>&1 || { tail -20 "$build.log"; exit 1; }
grep -q "mgcomm kernels: not built (no nvcc)" "$build.log" || { echo "configure did not say so"; exit 1; }
cmake --build "$build" -j2 --target kern_choose >>"$build.log" 2>&1 || { tail -30 "$build.log"; exit 1; }
grep -q "mg__kern_fatbin_size = 0" "$build/kern_fatbin.c"
"$build/tests/unit/kern_choose" unbuilt
"$build/tests/unit/kern_choose" table
