# Gantry's two commands, and the build they share.
#   make         build into build/ (CMake)
#   make test    install missing Debian packages, build, run the whole CTest
#                suite (two tests at a time), then run it again in build-asan/
#                under ASan+UBSan
#   make demo    install missing Debian packages, build, run the demo
#   make bench   build, run the benchmarks (CTest label bench; not part of make test)
#                and end with the table of their FIGURE lines (bench/summary.py)
#   make fuzz    build the libFuzzer targets with clang into build-fuzz/, run each
#                for FUZZ_SECONDS (default 60) or FUZZ_RUNS executions and merge
#                new coverage into tests/fuzz/corpus/ (not part of make test)
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
# tests run two at a time (RESOURCE_LOCKs keep the Ceph fixture's tests,
# the VMs and the k8s control planes one at a time each); serially:
# make test CTEST_JOBS=1
CTEST_JOBS ?= 2
CTEST_ARGS ?=

.PHONY: all build deps test test-asan demo bench fuzz clean

all: build

deps:
	@bash scripts/deps.sh

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: deps build
	cd $(BUILD) && ctest --output-on-failure -LE bench --parallel $(CTEST_JOBS) $(CTEST_ARGS)
	@$(MAKE) --no-print-directory test-asan

test-asan:
	@cmake -S . -B $(ASAN_BUILD) -DGANTRY_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -LE bench --parallel $(CTEST_JOBS) $(CTEST_ARGS)

bench: deps build
	cd $(BUILD) && ctest --output-on-failure -V -L bench -O bench.log $(CTEST_ARGS); \
	  status=$$?; python3 $(CURDIR)/bench/summary.py bench.log; exit $$status

fuzz: deps
	@bash scripts/fuzz.sh

demo: deps build
	@bash scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
