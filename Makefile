# Thin wrapper over CMake. `make` builds and runs the main job; `make test` runs every test.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

.PHONY: all build run test test-gpu asan tsan install clean

all: run

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The main job: what a user runs first.
run: build
	$(BUILD)/mgcomm bench

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE gpu

test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu

asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DMGCOMM_ASAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo"

tsan:
	$(MAKE) test BUILD=build-tsan CMAKE_FLAGS="-DMGCOMM_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo"

# Installs a release build (no fault-injection seam) under PREFIX.
install:
	cmake -S . -B build-release -DMGCOMM_TESTING=OFF -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	cmake --build build-release -j $(JOBS)
	cmake --install build-release

clean:
	rm -rf build build-asan build-tsan build-release
