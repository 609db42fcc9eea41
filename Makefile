# shardlab — every entry point: deps, build, run, test, lessons, bench.
#   make deps          install missing system packages (apt-get as root, sudo otherwise)
#   make               build build/shardlab (mpicxx -O3, one compiler per core; one line per file, V=1 the commands)
#   make run           train the default model on the default corpus, data parallel over every core
#   make test          unit tests, command-line tests, MPI tests and every lesson
#   make test-kernels  the bit-identity suites under every OpenBLAS kernel this CPU can run
#   make test-two-hosts  dp 2 × tp 2 over TCP between two network namespaces (root)
#   make mutants       realistic bugs put into a copy of the tree, each against the check that must catch it
#   make lessons       every lessons/NN_*/run
#   make bench         throughput and GEMM-efficiency benchmarks
#   make format        every C++ file through clang-format (make test checks the tree against it)
#   make seam SEAM=src/… WITH=FILE   shardlab and its tests with FILE in place of one textbook piece
#   make lab-start LAB=04 DIR=D       a graded lab's starter file and README, copied into D
#   make lab LAB=04 SOLUTION=FILE     grade FILE (the student's piece): a score table and results.json
#   make lab-handout LAB=04 DIR=D     a tree to give out: the piece replaced by its starter, graded without it

# The instruction set the build targets. Every x86-64 CPU with AVX2 and FMA gets the same one (the
# x86-64-v2 base plus AVX2 and FMA), so a run computes the same bits on all of them — given the same
# GEMM kernel (core/blas_kernel.h; the tests pin OpenBLAS's Haswell kernel) — whatever wider vectors a
# CPU also has. Other CPUs build for themselves (-march=native). `make ARCH=native` builds for this CPU
# alone (a few percent faster on AVX-512 machines; the recorded reference curves then no longer apply).
ifndef ARCH
ARCH      := $(shell bash scripts/build_arch.sh)
endif
ARCHFLAGS := $(if $(filter avx2-fma,$(ARCH)),-march=x86-64-v2 -mavx2 -mfma,-march=$(ARCH))
# -ffp-contract=off: a multiply and an add stay two roundings everywhere, never fused into an FMA behind
# the code's back (where GCC fuses depends on the target's tuning and on which loops it vectorises, so
# two loops written alike would round differently). Explicit FMAs (BLAS, Eigen's packet math) remain.
CXX       := mpicxx
CXXFLAGS  ?= -O3 $(ARCHFLAGS) -ffp-contract=off -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-maybe-uninitialized
# Include paths and libraries from pkg-config (recursive '=': read after `make deps` has installed them).
PKGS       = openblas eigen3
CPPFLAGS  += -Isrc $(shell pkg-config --cflags-only-I $(PKGS) 2>/dev/null | sed 's/-I/-isystem /g') -DEIGEN_NO_DEBUG \
             -DOMPI_SKIP_MPICXX -DSHARDLAB_BUILD_ARCH=\"$(ARCH)\"
LDLIBS    += $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas) -lcrypto -lpthread

# Every build runs one compiler per core. Several actions named at once (make test bench) run one after
# the other, as written.
JOBS      ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
MAKEFLAGS += -j$(JOBS)
ACTIONS   := all run test test-kernels test-two-hosts mutants unit mpi-tests lessons bench seam lab lab-start \
             lab-handout deps format clean
ifneq ($(word 2,$(filter $(ACTIONS),$(MAKECMDGOALS))),)
.NOTPARALLEL:
endif

BUILD     := build
# One short line per file built ("  CXX src/core/ledger.cpp"); V=1 prints the whole commands. Warnings and
# errors print either way.
ifeq ($(V),1)
Q          =
say        = @true
else
Q          = @
say        = @printf '  %-4s %s\n'
endif
SRC_LIB   := $(filter-out src/cli/main.cpp,$(shell find src -name '*.cpp' | sort))
OBJ_LIB   := $(SRC_LIB:%.cpp=$(BUILD)/%.o)
SRC_UNIT  := $(shell find tests/unit -name '*.cpp' 2>/dev/null | sort)
OBJ_UNIT  := $(SRC_UNIT:%.cpp=$(BUILD)/%.o)
SRC_MPI   := $(shell find tests/mpi -name '*.cpp' 2>/dev/null | sort)
OBJ_MPI   := $(SRC_MPI:%.cpp=$(BUILD)/%.o)
DEPS_OK   := $(BUILD)/.deps-ok

# One BLAS thread per rank, everywhere the Makefile starts a process.
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1

.PHONY: all deps run test test-kernels test-two-hosts mutants unit mpi-tests lessons bench seam lab lab-start lab-handout \
        format clean
all: $(BUILD)/shardlab

deps: $(DEPS_OK)
$(DEPS_OK): scripts/deps.sh
	@bash scripts/deps.sh
	@mkdir -p $(BUILD) && touch $@

# The compile command as last used: objects are rebuilt when it changes (another ARCH, other flags).
FLAGS_USED := $(BUILD)/.flags
$(FLAGS_USED): FORCE | $(DEPS_OK)
	@echo '$(CXX) $(CPPFLAGS) $(CXXFLAGS)' | cmp -s - $@ || echo '$(CXX) $(CPPFLAGS) $(CXXFLAGS)' > $@
.PHONY: FORCE
FORCE:

$(BUILD)/%.o: %.cpp $(FLAGS_USED) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(say) CXX $<
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

# The apparatus that computes no step — the command line, reports, the planner, the checks, I/O — and the tests'
# own code are built -O1: a third less compile time, and nothing there is hot (every GEMM, layer, collective and
# optimizer step is in the textbook's folders, core model comm optim parallel, and train's loop: -O3). The numbers are
# the same at any level: no -ffast-math, and -ffp-contract=off keeps every multiply and add apart.
LIGHT     := $(filter $(addprefix $(BUILD)/src/,cli/% report/% plan/% check/% io/%),$(OBJ_LIB) $(BUILD)/src/cli/main.o) \
             $(OBJ_UNIT) $(OBJ_MPI)
$(LIGHT): private CXXFLAGS += -O1
# Catch2's implementation, compiled once for both test runners (tests/common/catch_session.cpp) and -O0: it holds no
# code worth optimising, and is the largest file of the build.
CATCH_OBJ := $(BUILD)/tests/common/catch_session.o
$(CATCH_OBJ): private CXXFLAGS += -O0

# The library's sources as last archived: the library is made again when a source is added or removed (an object
# of a deleted source must not stay in it).
SOURCES_USED := $(BUILD)/.sources
$(SOURCES_USED): FORCE | $(DEPS_OK)
	@echo '$(SRC_LIB)' | cmp -s - $@ || echo '$(SRC_LIB)' > $@

$(BUILD)/libshardlab.a: $(OBJ_LIB) $(SOURCES_USED)
	@rm -f $@
	$(say) AR $@
	$(Q)ar rcs $@ $(OBJ_LIB)

$(BUILD)/shardlab: $(BUILD)/src/cli/main.o $(BUILD)/libshardlab.a
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/unit_tests: $(OBJ_UNIT) $(CATCH_OBJ) $(BUILD)/libshardlab.a
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/mpi_tests: $(OBJ_MPI) $(CATCH_OBJ) $(BUILD)/libshardlab.a
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS) $^ $(LDLIBS) -o $@

# Seams: each textbook piece that another implementation may replace sits alone in one file (the table in
# docs/architecture.md). `make seam SEAM=src/comm/ring_steps.cpp WITH=FILE` builds build/seams/NAME/ (NAME:
# FILE's name without .cpp) with shardlab, unit_tests and mpi_tests linked from FILE in place of SEAM —
# every other object shardlab's own, nothing in src/ edited. SEAM_DIR and SEAM_BINS (a subset of shardlab,
# unit_tests, mpi_tests) choose where and what; the labs build only shardlab.
SEAMS     := src/comm/ring_steps.cpp src/parallel/megatron_fg.cpp src/parallel/stage_order.cpp \
             src/model/flash_merge.cpp src/parallel/zero_step.cpp src/model/ring_merge.cpp \
             src/model/moe_dispatch.cpp
ifneq ($(filter seam,$(MAKECMDGOALS)),)
ifeq ($(filter $(SEAM),$(SEAMS)),)
$(error make seam: SEAM must name one of the seams: $(SEAMS) (got '$(SEAM)'))
endif
ifeq ($(wildcard $(WITH)),)
$(error make seam: WITH must name the file that replaces $(SEAM) (got '$(WITH)', which does not exist))
endif
endif
SEAM_DIR  ?= $(BUILD)/seams/$(basename $(notdir $(WITH)))
SEAM_BINS ?= shardlab unit_tests mpi_tests
SEAM_OBJS := $(filter-out $(BUILD)/$(SEAM:.cpp=.o),$(OBJ_LIB)) $(SEAM_DIR)/seam.o
$(SEAM_DIR)/seam.o: $(WITH) $(FLAGS_USED) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(say) CXX $<
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@
$(SEAM_DIR)/shardlab: $(BUILD)/src/cli/main.o $(SEAM_OBJS) $(SOURCES_USED)
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS) $(filter %.o,$^) $(LDLIBS) -o $@
$(SEAM_DIR)/unit_tests: $(OBJ_UNIT) $(CATCH_OBJ) $(SEAM_OBJS)
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS) $^ $(LDLIBS) -o $@
$(SEAM_DIR)/mpi_tests: $(OBJ_MPI) $(CATCH_OBJ) $(SEAM_OBJS)
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS) $^ $(LDLIBS) -o $@
seam: $(addprefix $(SEAM_DIR)/,$(SEAM_BINS))
	@echo "make seam: $(SEAM_DIR)/ holds $(SEAM_BINS) with $(WITH) in place of $(SEAM)"

# Graded labs (lessons/NN_*/lab/, lessons/LABS.md): scripts/lab.sh builds through `make seam`. LAB, DIR and
# SOLUTION reach it from the environment (make exports what the command line sets), never pasted into the
# recipe: a path with spaces, quotes or backticks is only a path. Taken as the command line wrote them (make would
# expand a $(…) inside them as its own).
override SOLUTION := $(value SOLUTION)
override DIR := $(value DIR)
export SOLUTION DIR
lab-start:
	@bash scripts/lab.sh start "$${LAB-}" "$${DIR-}"
lab:
	@bash scripts/lab.sh grade "$${LAB-}" "$${SOLUTION-}"
lab-handout:
	@bash scripts/lab.sh handout "$${LAB-}" "$${DIR-}"

# make run: the default model, data parallel over one rank per core — the largest count that divides
# the default global batch of 32 — each rank taking 32/N samples per step, into a new runs/ directory.
RUN_RANKS ?= $(shell n=$$(getconf _NPROCESSORS_ONLN); while [ $$((32 % n)) -ne 0 ]; do n=$$((n - 1)); done; echo $$n)
RUN_DIR   ?= runs/default-$(shell date +%Y%m%d-%H%M%S)
run: $(BUILD)/shardlab
	@echo "make run: data parallel on $(RUN_RANKS) MPI ranks (one per core), writing $(RUN_DIR)"
	@echo "  (one process: build/shardlab train --out DIR; another layout: scripts/mpirun.sh -np N build/shardlab train --zero 3 …)"
	bash scripts/mpirun.sh -np $(RUN_RANKS) $(BUILD)/shardlab train --micro-batch $$((32 / $(RUN_RANKS))) --out $(RUN_DIR) --save $(RUN_DIR)/checkpoints
	@echo; echo "A sample from the trained model (build/shardlab sample --load $(RUN_DIR)/checkpoints):"
	@$(BUILD)/shardlab sample --load $(RUN_DIR)/checkpoints --prompt "Note 7: " --tokens 400 --temperature 0.6

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests

mpi-tests: $(BUILD)/mpi_tests
	@bash scripts/mpi_tests.sh $(BUILD)/mpi_tests

lessons: $(BUILD)/shardlab
	@bash scripts/run_lessons.sh

# The test binaries are built by scripts/test_all.sh itself, beside the first suites.
test: $(BUILD)/shardlab
	@bash scripts/test_all.sh

format:
	@bash scripts/format.sh

mutants: $(BUILD)/shardlab $(BUILD)/unit_tests $(BUILD)/mpi_tests
	@bash tests/mutants.sh

test-two-hosts: $(BUILD)/shardlab
	@bash tests/cli/two_hosts.sh

test-kernels: $(BUILD)/shardlab $(BUILD)/mpi_tests
	@bash scripts/test_kernels.sh

bench: $(BUILD)/shardlab
	@bash bench/run.sh

clean:
	rm -rf $(BUILD)

-include $(OBJ_LIB:.o=.d) $(OBJ_UNIT:.o=.d) $(OBJ_MPI:.o=.d) $(BUILD)/src/cli/main.d $(CATCH_OBJ:.o=.d)
