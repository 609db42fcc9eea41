# shardlab — every entry point: deps, build, run, test, lessons, bench.
#   make deps     install missing system packages (apt-get as root, sudo otherwise)
#   make          build build/shardlab (mpicxx -O3)
#   make run      train the default model on the default corpus, data parallel over every core
#   make test     unit tests, MPI tests and every lesson
#   make lessons  every lessons/NN_*/run
#   make bench    throughput and GEMM-efficiency benchmarks

CXX       := mpicxx
CXXFLAGS  ?= -O3 -march=native -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-maybe-uninitialized
CPPFLAGS  += -Isrc -isystem /usr/include/eigen3 -I/usr/include/x86_64-linux-gnu/openblas-pthread -DEIGEN_NO_DEBUG -DOMPI_SKIP_MPICXX
LDLIBS    += -lopenblas -lcrypto -lpthread

BUILD     := build
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

.PHONY: all deps run test unit mpi-tests lessons bench clean
all: $(BUILD)/shardlab

deps: $(DEPS_OK)
$(DEPS_OK): scripts/deps.sh
	@bash scripts/deps.sh
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/%.o: %.cpp | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libshardlab.a: $(OBJ_LIB)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/shardlab: $(BUILD)/src/cli/main.o $(BUILD)/libshardlab.a
	$(CXX) $(CXXFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/unit_tests: $(OBJ_UNIT) $(BUILD)/libshardlab.a
	$(CXX) $(CXXFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/mpi_tests: $(OBJ_MPI) $(BUILD)/libshardlab.a
	$(CXX) $(CXXFLAGS) $^ $(LDLIBS) -o $@

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

test: $(BUILD)/shardlab $(BUILD)/unit_tests $(BUILD)/mpi_tests
	@bash scripts/test_all.sh

bench: $(BUILD)/shardlab
	@bash bench/run.sh

clean:
	rm -rf $(BUILD)

-include $(OBJ_LIB:.o=.d) $(OBJ_UNIT:.o=.d) $(OBJ_MPI:.o=.d) $(BUILD)/src/cli/main.d
