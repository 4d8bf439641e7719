# The front door: `make test` and `make run` each do the whole set-up on a fresh Debian.
DEPS := cmake g++ make libopenblas-dev doctest-dev nlohmann-json3-dev zlib1g-dev \
        dataset-fashion-mnist pkg-config
BUILD ?= build
CMAKE_FLAGS ?=
# `make run`: a small CNN before a ViT (docs/experiments.md): four 3x3 convolutions
# (two at full resolution) with a LayerNorm and GELU each, 49 tokens of dim 64, two blocks,
# 13 epochs with flips and random erasing, bf16 products where they are the faster. About
# 8 minutes on two idle cores (docs/experiments.md, "The make run recipe", has the measured
# time and accuracy). Override to try others.
RUN_ARGS ?= --preset fmnist-tiny --stem conv:32s1,32,64s1,64 --stem-norm layernorm --patch 1 \
            --dim 64 --depth 2 --mlp-ratio 4 --pool avg --epochs 13 --batch 128 --opt adamw \
            --lr 3e-3 --wd 0.05 --sched cosine --warmup 300 --label-smoothing 0.1 --no-crop \
            --reprob 0.25 --amp auto --seed 0
RUN_DIR ?= runs/make-run-$(shell date +%Y%m%d-%H%M%S)
JOBS := $(shell nproc 2>/dev/null || echo 2)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build deps test run asan fuzz fuzz-deps clean format

all: build

deps:
	@missing=""; for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# A configure that fails (a missing package: run `make deps`) leaves a cache behind that would
# pass for a configured build next time; removing it makes the next make configure again.
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) || { rm -f $@; exit 1; }

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

test: deps
	$(MAKE) build
	tests/run_all.sh $(BUILD)

# RUN_DIR is expanded once here, so training and evaluation name the same folder.
run: deps
	$(MAKE) build
	@dir="$(RUN_DIR)"; \
	./$(BUILD)/vitgrad train $(RUN_ARGS) --out "$$dir" && \
	./$(BUILD)/vitgrad eval "$$dir/last.json" && \
	./$(BUILD)/vitgrad eval "$$dir/last.json" --tta flip

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
asan: deps
	$(MAKE) build BUILD=build-asan CMAKE_FLAGS="-DSANITIZE=ON -DPORTABLE=ON"
	tests/run_all.sh build-asan

# libFuzzer harnesses (fuzz/) for the checkpoint loader, the config parser, the IDX reader and
# the safetensors reader, built with clang under ASan and UBSan, each run for FUZZ_SECONDS from
# its committed seed corpus, side by side (fuzz/run.sh). A crash, sanitizer report, leak or hang
# fails the target; the input that caused it is written to build-fuzz/crashes/ (add it to the
# bad-input corpus once fixed).
FUZZ_DEPS := clang-14 libclang-rt-14-dev libomp-14-dev
FUZZ_SECONDS ?= 60
FUZZERS := checkpoint config idx safetensors

fuzz-deps:
	@$(MAKE) --no-print-directory deps DEPS="$(DEPS) $(FUZZ_DEPS)"

fuzz: fuzz-deps
	@[ -f build-fuzz/CMakeCache.txt ] || cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_CXX_COMPILER=clang++-14 -DFUZZ=ON -DPORTABLE=ON
	cmake --build build-fuzz -j$(JOBS) --target $(addsuffix _fuzz,$(FUZZERS))
	fuzz/run.sh build-fuzz $(FUZZ_SECONDS) $(FUZZERS)

clean:
	rm -rf build build-asan build-fuzz

format:
	git ls-files '*.h' '*.cpp' | xargs clang-format -i
