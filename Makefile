# SPDX-License-Identifier: MIT
# gpuops build. `make run` walks the learning path on a GPU, `make test` checks everything that can
# be checked here (GPU tests skip, counted, without a device). See README.md.

# nvcc: from PATH, else /usr/local/cuda. Override with `make NVCC=/path/to/nvcc`.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
# The toolkit's headers, for C files built by the host compiler: beside the real nvcc (a
# /usr/local/bin/nvcc is often a link), else /usr/local/cuda. Override with `make CUDA_INC=...`.
CUDA_INC ?= $(shell d=$$(dirname "$$(readlink -f "$(NVCC)")")/../include; \
  if [ -f "$$d/cuda_runtime_api.h" ]; then echo "$$d"; else echo /usr/local/cuda/include; fi)
# The C compiler for the C99 consumers: gcc unless the user names one (make predefines CC=cc, so
# `CC ?= gcc` would never apply).
ifeq ($(origin CC),default)
CC := gcc
endif
# Target architecture: the present GPU's, else sm_90 with PTX embedded (so newer GPUs can run it).
# On a Hopper GPU (9.0) the target is sm_90a, whose wgmma and setmaxnreg the Hopper GEMM needs;
# sm_90a code runs on compute capability 9.0 only, which is the present GPU.
GPU_CC := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')
ifeq ($(GPU_CC),90)
ARCH ?= -gencode=arch=compute_90a,code=sm_90a
else ifneq ($(GPU_CC),)
ARCH ?= -arch=sm_$(GPU_CC)
else
ARCH ?= -gencode=arch=compute_90,code=[sm_90,compute_90]
endif
# The architectures `make test` compiles the library for, so that architecture guards cannot rot.
CHECK_ARCHS ?= -gencode=arch=compute_75,code=sm_75 -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90a,code=sm_90a

NVCCFLAGS ?= -O3 -std=c++17 -lineinfo -Xcompiler -Wall
CFLAGS ?= -O2 -std=c99 -pedantic -Wall -Wextra -Werror
B := build
HEADERS := gpuops.h gpuops_cuda.cuh
TEST_HEADERS := $(wildcard tests/*.h) bench/harness.h
# One test program, one bench program and one example per .cu file; each compiles only its family
# (it defines GPUOPS_ONLY_<FAMILY> itself).
TESTS := $(basename $(notdir $(wildcard tests/test_*.cu)))
EXAMPLES := $(basename $(notdir $(wildcard examples/[0-9][0-9]_*.cu)))
BENCHES := $(basename $(notdir $(wildcard bench/bench_*.cu)))
# The vendor libraries the bench and the examples compare with (CUB is header-only).
VENDOR_LIBS := -lcublas

.PHONY: all run test sanitize bench examples lib clean need-nvcc programs capi pytest sweep
all: examples

need-nvcc:
	@if [ -z "$(NVCC)" ]; then \
	  echo "gpuops: nvcc not found on PATH or in /usr/local/cuda/bin."; \
	  echo "  Install the CUDA Toolkit (https://developer.nvidia.com/cuda-downloads; on Debian/Ubuntu: nvidia-cuda-toolkit)"; \
	  echo "  or run: make NVCC=/path/to/nvcc <target>"; exit 1; fi

$(B) $(B)/examples $(B)/bench:
	@mkdir -p $@

# The implementation unit behind `make lib` and the architecture checks.
$(B)/gpuops_impl.cu: | $(B)
	@printf '#define GPUOPS_IMPLEMENTATION\n#include "gpuops.h"\n' > $@

# ---- tests ----
$(B)/test_%: tests/test_%.cu $(HEADERS) $(TEST_HEADERS) | need-nvcc $(B)
	$(NVCC) $(NVCCFLAGS) $(ARCH) -I. -Itests $< -o $@

$(B)/link_test: tests/link_main.cu tests/link_other.cu $(HEADERS) tests/harness.h | need-nvcc $(B)
	$(NVCC) $(NVCCFLAGS) $(ARCH) -I. -Itests tests/link_main.cu tests/link_other.cu -o $@

$(B)/test_c99: tests/test_c99.c tests/c99_other.c gpuops.h tests/harness.h | $(B)
	$(CC) $(CFLAGS) -I. -Itests tests/test_c99.c tests/c99_other.c -o $@ -lm

# The README's recipe: a C file built by gcc, the implementation unit by nvcc, linked by nvcc.
$(B)/gpuops_impl.o: $(B)/gpuops_impl.cu $(HEADERS) | need-nvcc
	$(NVCC) $(NVCCFLAGS) $(ARCH) -I. -c $< -o $@

$(B)/readme_example: tests/readme_example.c $(B)/gpuops_impl.o | need-nvcc
	@# CUDA's headers are not -pedantic C99. Without them at CUDA_INC, nvcc hands the C file to the host compiler.
	if [ -f "$(CUDA_INC)/cuda_runtime_api.h" ]; then \
	  $(CC) $(filter-out -pedantic,$(CFLAGS)) -I. -I$(CUDA_INC) -c $< -o $(B)/readme_example.o; \
	else $(NVCC) -x c -ccbin $(CC) -Xcompiler -std=c99,-Wall,-Wextra,-Werror -I. -c $< -o $(B)/readme_example.o; fi
	$(NVCC) $(B)/readme_example.o $(B)/gpuops_impl.o -o $@

$(B)/arch_check.o: $(B)/gpuops_impl.cu $(HEADERS) | need-nvcc
	$(NVCC) -O3 -std=c++17 $(CHECK_ARCHS) -I. -c $< -o $@

test: $(B)/test_c99 $(addprefix $(B)/,$(TESTS)) $(B)/link_test $(B)/arch_check.o $(B)/readme_example
	@tests/run.sh "$(B)/test_c99" $(addprefix $(B)/,$(TESTS)) "$(B)/link_test" \
	  "echo 'compiled for sm_75, sm_80 and sm_90a'; test -s $(B)/arch_check.o" \
	  "if nvidia-smi -L > /dev/null 2>&1; then $(B)/readme_example; else echo 'SKIP readme example: no GPU (built and linked)'; echo '0 passed, 0 failed, 1 skipped'; fi" \
	  "$(PY_CHECK) python/gen_capi.py --check" \
	  "$(PY_CHECK) -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' $(PY_SOURCES)"

# GPU tests under compute-sanitizer: memcheck, then racecheck (quick sizes: the tools are slow).
SANITIZER ?= $(shell command -v compute-sanitizer 2>/dev/null || echo /usr/local/cuda/bin/compute-sanitizer)
sanitize: $(addprefix $(B)/,$(TESTS))
	@set -e; for t in $(TESTS); do for tool in memcheck racecheck; do \
	  echo "== $$tool $$t"; GPUOPS_TEST_QUICK=1 $(SANITIZER) --tool $$tool --error-exitcode 1 $(B)/$$t; done; done

# ---- examples: the learning path ----
$(B)/examples/%: examples/%.cu $(HEADERS) tests/check.h bench/harness.h | need-nvcc $(B)/examples
	$(NVCC) $(NVCCFLAGS) $(ARCH) -I. $< -o $@ $(VENDOR_LIBS)

# The matrix-multiply steps compare with the CPU's real best: the SIMD baseline built with OpenMP
# and the host's vector instructions, on every core.
$(B)/examples/09_matmul $(B)/examples/12_tensor_cores: NVCCFLAGS += -Xcompiler -fopenmp,-march=native
$(B)/examples/09_matmul $(B)/examples/12_tensor_cores: VENDOR_LIBS += -lgomp

examples: $(addprefix $(B)/examples/,$(EXAMPLES))

# Without a GPU, says so before the build (not after it), builds the examples and exits 0;
# examples/run_all.sh, which runs them, makes the same check.
run:
	@if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then \
	  echo "make run: no NVIDIA GPU found (nvidia-smi lists none), so the examples will only be built, not run."; fi
	@$(MAKE) --no-print-directory examples
	@examples/run_all.sh $(addprefix $(B)/examples/,$(EXAMPLES))

# ---- bench ----
$(B)/bench/%: bench/%.cu $(HEADERS) $(TEST_HEADERS) | need-nvcc $(B)/bench
	$(NVCC) $(NVCCFLAGS) $(ARCH) -I. -Itests $< -o $@ $(VENDOR_LIBS)

# bench_gemm also times cuBLASLt's fused epilogues.
$(B)/bench/bench_gemm: VENDOR_LIBS += -lcublasLt

bench: $(addprefix $(B)/bench/,$(BENCHES))
	@bench/run.sh $(B)/bench $(BENCHES)

# ---- Python: the package's C API table, its tests (PyTorch and a GPU), the sweep against PyTorch ----
PYTHON ?= python3
PY_SOURCES := $(wildcard python/*.py python/gpuops/*.py python/tests/*.py bench/*.py tools/*.py)
# In `make test`: python/gpuops/_capi.py is what gpuops.h gives (python/gen_capi.py --check) and the
# Python sources parse; both skip, counted, without python3.
PY_CHECK = if ! command -v $(PYTHON) > /dev/null; then echo 'SKIP: no $(PYTHON)'; echo '0 passed, 0 failed, 1 skipped'; exit 0; fi; CC=$(CC) $(PYTHON)

# Rewrites python/gpuops/_capi.py from gpuops.h (after a change to the API or a registry).
capi:
	CC=$(CC) $(PYTHON) python/gen_capi.py

# The pytest suite (needs PyTorch with CUDA and a GPU; skips otherwise). Not part of `make test`.
pytest: $(B)/libgpuops.so
	PYTHONPATH=python $(PYTHON) -m pytest -q python/tests

# gpuops against PyTorch eager and torch.compile over sizes and shapes, then the plots in docs/sweep.
sweep: $(B)/libgpuops.so | $(B)
	$(PYTHON) bench/sweep.py --csv $(B)/sweep.csv
	$(PYTHON) bench/plot_sweep.py $(B)/sweep.csv --out docs/sweep

# ---- shared library for other languages ----
# It exports the public API (gpuops_*, every declaration marked GPUOPS_API) and nothing else: all
# symbols hidden by default, GPUOPS_API defined as the export attribute.
LIB_EXPORT := -Xcompiler -fvisibility=hidden '-DGPUOPS_API=__attribute__((visibility("default")))'
$(B)/libgpuops.so: $(B)/gpuops_impl.cu $(HEADERS) | need-nvcc
	$(NVCC) -O3 -std=c++17 $(ARCH) -I. -Xcompiler -fPIC $(LIB_EXPORT) -shared $< -o $@

lib: $(B)/libgpuops.so

# Every program, for one parallel build on a GPU machine (tools/gpu_check.sh).
programs: $(B)/test_c99 $(addprefix $(B)/,$(TESTS)) $(B)/link_test $(B)/arch_check.o $(B)/readme_example \
  $(addprefix $(B)/examples/,$(EXAMPLES)) $(addprefix $(B)/bench/,$(BENCHES))

clean:
	rm -rf $(B)
