#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR CMAKE CC -- what a user does with a release of mgcomm:
# install the build into a fresh prefix, build the examples against it with find_package(mgcomm),
# run them, then (if pkg-config exists) build the example again from `pkg-config --cflags --libs
# mgcomm` alone and run that too; finally the installed `mgcomm info --json` must work.
set -eu
build=$1 src=$2 cmake=$3 cc=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mgcomm-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
prefix=$tmp/prefix

step() { printf '== %s\n' "$*"; }

# Runs an example binary; 0 when it printed the correct sum.
run_example() {
  if "$@" >"$tmp/out" 2>"$tmp/err"; then
    cat "$tmp/out"
    return 0
  fi
  cat "$tmp/out" "$tmp/err"
  return 1
}

step "install into $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log"
test -f "$prefix/include/mgcomm.h"

step "configure and build the examples with find_package(mgcomm)"
"$cmake" -S "$src/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" >"$tmp/configure.log"
"$cmake" --build "$tmp/examples" >"$tmp/build.log"

step "run the example"
run_example "$tmp/examples/info_and_allreduce"

pc=$(find "$prefix" -name mgcomm.pc | head -n 1)
if command -v pkg-config >/dev/null 2>&1; then
  step "build and run with pkg-config ($pc)"
  flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs mgcomm)
  libdir=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir mgcomm)
  # shellcheck disable=SC2086 # flags are words
  "$cc" -std=c11 -Wall -Wextra -Werror "$src/examples/info_and_allreduce.c" $flags -lpthread \
    -o "$tmp/example_pc"
  LD_LIBRARY_PATH=$libdir run_example "$tmp/example_pc"
else
  step "pkg-config not found: that check is skipped"
fi

step "the installed command line"
"$prefix/bin/mgcomm" info --json >"$tmp/info.json"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["backend"]["status"] == "MG_OK", d["backend"]' "$tmp/info.json"
fi
echo "install test passed"
