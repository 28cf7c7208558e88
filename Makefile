# Thin wrapper over CMake. `make` builds a release configuration (no fault-injection seam, as
# published numbers are measured) and runs the main job; `make test` builds the test
# configuration (seam compiled in) in $(BUILD) and runs every test.
BUILD ?= build
RELEASE ?= build-release
RELEASE_FLAGS = -DMGCOMM_TESTING=OFF -DCMAKE_BUILD_TYPE=Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

.PHONY: all build release run test test-gpu asan tsan install clean

all: run

# The test configuration: the fault-injection seam compiled in, the tests built.
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DMGCOMM_TESTING=ON $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The release configuration, shared by `make` and `make install`.
$(RELEASE)/CMakeCache.txt:
	cmake -S . -B $(RELEASE) $(RELEASE_FLAGS)

release: $(RELEASE)/CMakeCache.txt
	cmake --build $(RELEASE) -j $(JOBS)

# The main job: what a user runs first, on the build whose numbers are published.
run: release
	$(RELEASE)/mgcomm bench

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
	cmake -S . -B $(RELEASE) $(RELEASE_FLAGS) -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	cmake --build $(RELEASE) -j $(JOBS)
	cmake --install $(RELEASE)

clean:
	rm -rf $(BUILD) build-asan build-tsan $(RELEASE)
